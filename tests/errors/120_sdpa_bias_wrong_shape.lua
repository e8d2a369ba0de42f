-- a relative-position bias is [Nq, Nk] (or [H, Nq, Nk]); this one has a key too few
local q, k = tt.randn(2, 4, 6, 8), tt.randn(2, 4, 7, 8)
local bias = tt.randn(4, 6, 6)
local out = tt.sdpa(q, k, k, {bias = bias})
