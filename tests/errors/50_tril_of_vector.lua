-- tril needs a matrix
local v = tt.randn(4)
local t = v:tril()
