-- Exercise 03, solution — the causal mask, before softmax (follows lessons/03_causal_mask.lua).
-- The reference that `./tensortrace --exercise 03` compares your copy with.

-- recheck: N = 7, seed = 30; N = 1, B = 1; Dh = 9
tt.manual_seed(3)
local B, N, Dh = 2, 5, 4        -- 2 sentences of 5 tokens, head width 4
local q = tt.randn(B, N, Dh):named("B", "Nq", "Dh"):label("q")
local k = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("k")
local v = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("v")
-- ===== your code below =====

local allowed = tt.causal_mask(N):label("allowed")
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
local weights = scores:masked_fill(~allowed, -math.huge):softmax("Nk"):label("weights")
local out = weights:matmul(v):label("out")

-- ===== checks =====
tt.assert_close(allowed:float(), tt.ones(N, N):tril(), 0, 0, "allowed is the lower triangle")
tt.assert_close(weights:sum("Nk"), tt.ones(B, N), 1e-6, 1e-6, "every row of weights sums to 1")
tt.assert_close(weights:triu(1), tt.zeros(B, N, N), 0, 0, "the future gets exactly 0")
tt.assert_close(out, tt.sdpa(q, k, v, {causal = true}), 1e-5, 1e-5, "out equals tt.sdpa(causal = true)")
print("Exercise 03: every check passed.")
