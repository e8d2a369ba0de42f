-- the causal mask must cover the 5x5 scores, not 4x4
local scores = tt.randn(2, 4, 5, 5):named("B", "H", "Nq", "Nk")
local mask = tt.causal_mask(4)
local masked = scores:masked_fill(~mask, -math.huge)
