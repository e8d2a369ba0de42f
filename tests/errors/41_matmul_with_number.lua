-- scaling is division, not matmul
local s = tt.randn(5, 5)
local scaled = s:matmul(8)
