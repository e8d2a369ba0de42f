-- exercise: 21_pipeline
-- expect: other_inputs
-- The scale written as sqrt(4), Dh's value here (Dh = D // H, no name the re-check sets): the verdict names that line, not line 15's "three = 3", which the solution has too.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

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
local scores = (Q:matmul(K:mT()) / math.sqrt(4)):label("scores")
local allowed = (tt.causal_mask(N) & ~pad:view(B, 1, 1, N)):label("allowed")        -- [B,1,N,N]
local weights = scores:masked_fill(~allowed, -math.huge):softmax(-1):label("weights")
local heads = weights:matmul(V):label("heads")
local merged = tt.rearrange(heads, "B H N Dh -> B N (H Dh)"):named("B", "N", "D"):label("merged")
local out = merged:matmul(W_O:mT()):label("out")
