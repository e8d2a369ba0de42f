-- mT swaps the last two dims of a matrix
local v = tt.randn(4)
local t = v:mT()
