-- tt.where takes a bool condition, as torch.where does
local x = tt.randn(3, 4)
local y = tt.where(x, x, 0)
