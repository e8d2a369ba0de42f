-- transpose(1, 2) swaps batch and heads, not the last two dims
local q = tt.randn(2, 4, 5, 16):named("B", "H", "N", "Dh")
local k = tt.randn(2, 4, 5, 16):named("B", "H", "N", "Dh")
local scores = q:matmul(k:transpose(1, 2))
