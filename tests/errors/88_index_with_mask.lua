-- PyTorch's x[mask] is not here: masks select through where or masked_fill
local x = tt.randn(3, 4)
local pos = x[x:gt(0)]
