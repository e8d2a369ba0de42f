-- the model is called first, outside autocast, and its result handed over
local proj = tt.nn.Linear(8, 3)
local x = tt.randn(4, 8)
local y = tt.autocast("bfloat16", proj(x))
