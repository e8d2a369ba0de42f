-- a bool tensor says which keys to keep: that is a mask, not a bias
local q = tt.randn(2, 5, 8)
local out = tt.sdpa(q, q, q, {bias = tt.causal_mask(5)})
