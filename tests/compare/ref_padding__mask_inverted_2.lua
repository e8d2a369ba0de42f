-- reference: ref_padding
-- expect: mask_inverted
-- the reference: key padding (the last 2 of 5 tokens of batch 2 are padding)
tt.manual_seed(7)
local B, N, Dh = 2, 5, 4
local q = tt.randn(B, N, Dh):named("B", "Nq", "Dh")
local k = tt.randn(B, N, Dh):named("B", "Nk", "Dh")
local pad = tt.tensor({{false, false, false, false, false}, {false, false, false, true, true}}, "bool")
-- ===== your code below =====
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
local hide = pad:view(B, 1, N)
local weights = scores:masked_fill(~hide, -math.huge):softmax(-1):label("weights")
