-- a checkpoint is saved by name: a list has no names to save under
local w, b = tt.randn(4, 4), tt.zeros(4)
tt.save("weights.safetensors", {w, b})
