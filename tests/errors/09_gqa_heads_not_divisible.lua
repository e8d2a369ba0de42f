-- GQA: query heads must be a multiple of the key/value heads
local q = tt.randn(1, 6, 5, 8)
local k = tt.randn(1, 4, 5, 8)
local v = tt.randn(1, 4, 5, 8)
local out = tt.sdpa(q, k, v)
