-- reference: ref_padding_causal
-- expect: padding_on_queries
-- the reference: padding and causal masks together
tt.manual_seed(8)
local B, N, Dh = 2, 4, 3
local q = tt.randn(B, N, Dh)
local k = tt.randn(B, N, Dh)
local pad = tt.tensor({{false, false, false, false}, {false, false, true, true}}, "bool")
-- ===== your code below =====
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
local hide = (~tt.causal_mask(N)) | pad:view(B, N, 1)
local weights = scores:masked_fill(hide, -math.huge):softmax(-1):label("weights")
