-- only size-1 dims can be expanded
local bias = tt.randn(2, 5, 16)
local big = bias:expand(2, 5, 32)
