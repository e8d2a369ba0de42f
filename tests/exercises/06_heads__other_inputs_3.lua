-- exercise: 06_heads
-- expect: other_inputs
-- The head split with the sizes as numbers: right for these inputs only.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

tt.manual_seed(6)
local B, N, D, H = 2, 5, 12, 3  -- 2 sentences of 5 tokens, 12 features, 3 heads
local Dh = D // H               -- 4 features per head
local X = tt.randn(B, N, D):named("B", "N", "D"):label("X")
local W_Q, W_K, W_V = tt.nn.Linear(D, D), tt.nn.Linear(D, D), tt.nn.Linear(D, D)
local W_O = tt.nn.Linear(D, D)
local causal = tt.causal_mask(N)   -- true = may attend
-- ===== your code below =====

local Q = W_Q(X):view(2, 5, 3, 4):transpose(2, 3):named("B", "H", "Nq", "Dh"):label("Q")
local K = W_K(X):view(B, N, H, Dh):transpose(2, 3):named("B", "H", "Nk", "Dh"):label("K")
local V = W_V(X):view(B, N, H, Dh):transpose(2, 3):named("B", "H", "Nk", "Dh"):label("V")
local scores = (Q:matmul(K:mT()) / math.sqrt(Dh)):label("Scores")
local weights = scores:masked_fill(~causal, -math.huge):softmax("Nk"):label("Weights")
local heads = weights:matmul(V):label("Heads")
local concat = heads:transpose("Nq", "H"):reshape(B, N, D):named("B", "Nq", "D"):label("Concat")
local Y = W_O(concat):label("Y")

