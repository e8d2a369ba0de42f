-- Exercise 06, solution — split into heads, attend, merge (follows lessons/06_multihead.lua).
-- The reference that `./tensortrace --exercise 06` compares your copy with.
-- recheck: N = 7, seed = 16; H = 4; B = 1, N = 1

tt.manual_seed(6)
local B, N, D, H = 2, 5, 12, 3  -- 2 sentences of 5 tokens, 12 features, 3 heads
local Dh = D // H               -- 4 features per head
local X = tt.randn(B, N, D):named("B", "N", "D"):label("X")
local W_Q, W_K, W_V = tt.nn.Linear(D, D), tt.nn.Linear(D, D), tt.nn.Linear(D, D)
local W_O = tt.nn.Linear(D, D)
local causal = tt.causal_mask(N)   -- true = may attend
-- ===== your code below =====

local Q = W_Q(X):view(B, N, H, Dh):transpose(2, 3):named("B", "H", "Nq", "Dh"):label("Q")
local K = W_K(X):view(B, N, H, Dh):transpose(2, 3):named("B", "H", "Nk", "Dh"):label("K")
local V = W_V(X):view(B, N, H, Dh):transpose(2, 3):named("B", "H", "Nk", "Dh"):label("V")
local scores = (Q:matmul(K:mT()) / math.sqrt(Dh)):label("Scores")
local weights = scores:masked_fill(~causal, -math.huge):softmax("Nk"):label("Weights")
local heads = weights:matmul(V):label("Heads")
local concat = heads:transpose("Nq", "H"):reshape(B, N, D):named("B", "Nq", "D"):label("Concat")
local Y = W_O(concat):label("Y")

-- ===== checks =====
for h = 1, H do   -- head h is features (h-1)*Dh+1 .. h*Dh of every token
  tt.assert_close(Q:select(2, h), W_Q(X):narrow(3, (h - 1) * Dh + 1, Dh), 0, 0, "head " .. h .. " of Q")
end
tt.assert_close(heads, tt.sdpa(Q, K, V, {causal = true}), 1e-5, 1e-5, "Heads equal tt.sdpa(causal = true)")
tt.assert_close(concat:narrow(3, Dh + 1, Dh), heads:select(2, 2), 0, 0, "head 2 fills features 5..8 of Concat")
tt.assert_close(concat, tt.rearrange(heads, "B H Nq Dh -> B Nq (H Dh)"), 0, 0, "Concat equals the einops merge")
print("Exercise 06: every check passed.")
