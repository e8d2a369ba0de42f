-- exercise: 03_causal_mask
-- expect: other_inputs
-- The mask's size written as the default N = 5: right for these inputs only.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

-- recheck: N = 7, seed = 30; N = 1, B = 1; Dh = 9
tt.manual_seed(3)
local B, N, Dh = 2, 5, 4        -- 2 sentences of 5 tokens, head width 4
local q = tt.randn(B, N, Dh):named("B", "Nq", "Dh"):label("q")
local k = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("k")
local v = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("v")
-- ===== your code below =====

local allowed = tt.causal_mask(5):label("allowed")
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
local weights = scores:masked_fill(~allowed, -math.huge):softmax("Nk"):label("weights")
local out = weights:matmul(v):label("out")

