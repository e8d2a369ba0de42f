-- a tensor made by hand is a constant until it asks for gradients
local proj = tt.nn.Linear(4, 4)
local scale = tt.ones(4)
local opt = tt.optim.AdamW({proj.weight, proj.bias, scale}, {lr = 1e-2})
