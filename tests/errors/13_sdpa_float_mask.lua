-- sdpa's mask is bool (true = may attend), not an additive float mask
local q = tt.randn(1, 2, 5, 8)
local mask = tt.causal_mask(5):float()
local out = tt.sdpa(q, q, q, {mask = mask})
