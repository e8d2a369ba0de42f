-- dropout p is the probability of zeroing a weight: p = 1 drops them all (and 1/(1-p) is infinite)
local q = tt.randn(2, 5, 8)
local out = tt.sdpa(q, q, q, {dropout = 1})
