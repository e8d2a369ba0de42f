-- reference: ref_causal
-- expect: scale_wrong
-- the reference: one causal attention step, every step labelled
tt.manual_seed(3)
local B, H, N, Dh = 1, 2, 5, 4
local q = tt.randn(B, H, N, Dh):named("B", "H", "Nq", "Dh")
local k = tt.randn(B, H, N, Dh):named("B", "H", "Nk", "Dh")
local v = tt.randn(B, H, N, Dh):named("B", "H", "Nk", "Dh")
-- ===== your code below =====
local scores = (q:matmul(k:mT()) / Dh):label("scores")
local hide = ~tt.causal_mask(N)
local masked = scores:masked_fill(hide, -math.huge):label("masked")
local weights = masked:softmax("Nk"):label("weights")
local out = weights:matmul(v):label("out")
