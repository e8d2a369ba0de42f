-- k and v must have the same number of positions
local q = tt.randn(2, 4, 5, 8)
local k = tt.randn(2, 4, 5, 8)
local v = tt.randn(2, 4, 4, 8)
local out = tt.sdpa(q, k, v)
