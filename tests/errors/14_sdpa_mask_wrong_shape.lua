-- the mask must broadcast to the [.., Nq, Nk] scores
local q = tt.randn(2, 4, 5, 8):named("B", "H", "N", "Dh")
local out = tt.sdpa(q, q, q, {mask = tt.causal_mask(4)})
