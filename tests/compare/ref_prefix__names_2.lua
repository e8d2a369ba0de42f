-- reference: ref_prefix
-- expect: names
-- the reference: 3 new queries over 6 keys (a cache), causal lower-right
tt.manual_seed(5)
local Nq, Nk, Dh = 3, 6, 4
local q = tt.randn(1, Nq, Dh):named("B", "Nq", "Dh")
local k = tt.randn(1, Nk, Dh):named("B", "N", "Dh")
local v = tt.randn(1, Nk, Dh):named("B", "N", "Dh")
-- ===== your code below =====
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
local weights = scores:masked_fill(~tt.causal_mask(Nq, Nk), -math.huge):softmax(-1):label("weights")
local out = weights:matmul(v):label("out")
