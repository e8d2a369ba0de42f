-- Exercise 21, solution — the whole pipeline, from X to the output (follows lessons/21_the_whole_pipeline.lua).
-- The reference that `./tensortrace --exercise 21` compares your copy with.
-- recheck: seed = 30; D = 16, H = 4; H = 2

tt.manual_seed(21)
local B, N, D, H = 2, 5, 12, 3
local Dh = D // H
local X = tt.randn(B, N, D):label("X")
local W_qkv = tt.randn(3 * D, D) / math.sqrt(D)    -- Q's, K's and V's weights stacked: rows 1..D make Q
local W_O = tt.randn(D, D) / math.sqrt(D)
local pad = tt.tensor({{false, false, false, false, false}, {false, false, false, true, true}}, "bool")   -- [B,N]: true = a pad key
-- ===== your code below =====

local qkv = tt.rearrange(X:matmul(W_qkv:mT()), "B N (three H Dh) -> three B H N Dh", {three = 3, H = H})
local Q, K, V = qkv[1]:label("Q"), qkv[2]:label("K"), qkv[3]:label("V")
local scores = (Q:matmul(K:mT()) / math.sqrt(Dh)):label("scores")
local allowed = (tt.causal_mask(N) & ~pad:view(B, 1, 1, N)):label("allowed")        -- [B,1,N,N]
local weights = scores:masked_fill(~allowed, -math.huge):softmax(-1):label("weights")
local heads = weights:matmul(V):label("heads")
local merged = tt.rearrange(heads, "B H N Dh -> B N (H Dh)"):named("B", "N", "D"):label("merged")
local out = merged:matmul(W_O:mT()):label("out")

-- ===== checks =====
tt.assert_close(heads, tt.sdpa(Q, K, V, {mask = allowed}), 1e-5, 1e-6, "heads equal tt.sdpa with the same mask")
tt.assert_close(Q:select(2, 2), X:matmul(W_qkv:narrow(1, Dh + 1, Dh):mT()), 1e-5, 1e-5, "head 2 of Q is rows Dh+1..2Dh of W_qkv")
tt.assert_close(weights:narrow(4, 4, 2):select(1, 2), tt.zeros(H, N, 2), 0, 0, "sequence 2's pad keys get 0")
print("Exercise 21: every check passed.")
