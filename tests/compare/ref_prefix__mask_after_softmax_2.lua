-- reference: ref_prefix
-- expect: mask_after_softmax
-- the reference: 3 new queries over 6 keys (a cache), causal lower-right
tt.manual_seed(5)
local Nq, Nk, Dh = 3, 6, 4
local q = tt.randn(1, Nq, Dh):named("B", "Nq", "Dh")
local k = tt.randn(1, Nk, Dh):named("B", "Nk", "Dh")
local v = tt.randn(1, Nk, Dh):named("B", "Nk", "Dh")
-- ===== your code below =====
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
local weights = scores:softmax(-1):masked_fill(~tt.causal_mask(Nq, Nk), 0):label("weights")
local out = weights:matmul(v):label("out")
