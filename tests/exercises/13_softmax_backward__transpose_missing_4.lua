-- exercise: 13_softmax_backward
-- expect: transpose_missing
-- g_K without the transpose of g_S: transpose_missing alone (no kv_source: the exercise has one source).
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

tt.manual_seed(13)
local N, Dh = 6, 6
local scale = 1 / math.sqrt(Dh)
local hidden = ~tt.causal_mask(N)                  -- true = the future, masked_fill's polarity
local Q = tt.randn(N, Dh):named("Nq", "Dh"):label("Q")
local K = tt.randn(N, Dh):named("Nk", "Dh"):label("K")
local V = tt.randn(N, Dh):named("Nk", "Dh"):label("V")
local target = tt.randn(N, Dh):named("Nq", "Dh"):label("target")
-- the forward pass from the scores, made a leaf so that backward() fills S.grad
local S = (Q:matmul(K:mT()) * scale):requires_grad_():label("S")
local P = S:masked_fill(hidden, -math.huge):softmax("Nk")
local out = P:matmul(V)
local loss = ((out - target) ^ 2):mean()
loss:backward()
P, out = P:detach():label("p"), out:detach():label("out")
-- ===== your code below =====

local g_out = (2 * (out - target) / (N * Dh)):label("g_out")
local g_V = P:mT():matmul(g_out):label("g_V")
local g_p = g_out:matmul(V:mT()):label("g_p")
local g_S = (P * (g_p - (g_p * P):sum("Nk", true))):label("g_scores")
local g_Q = (g_S:matmul(K) * scale):label("g_Q")
local g_K = (g_S:matmul(Q) * scale):label("g_K")

