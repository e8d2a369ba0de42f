-- Exercise 13, solution — softmax's backward by hand, against backward() (follows lessons/13_gradients.lua).
-- The reference that `./tensortrace --exercise 13` compares your copy with.
-- recheck: N = 4, seed = 23; Dh = 9

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
local g_K = (g_S:mT():matmul(Q) * scale):label("g_K")

-- ===== checks =====
tt.assert_close(g_S, S.grad, 1e-5, 1e-7, "p * (g - <g,p>) equals backward()'s S.grad")
local Qg, Kg, Vg = Q:clone():requires_grad_(), K:clone():requires_grad_(), V:clone():requires_grad_()
local w = (Qg:matmul(Kg:mT()) * scale):masked_fill(hidden, -math.huge):softmax("Nk")
local loss2 = ((w:matmul(Vg) - target) ^ 2):mean()
loss2:backward()
tt.assert_close(g_V, Vg.grad, 1e-5, 1e-7, "g_V equals V.grad")
tt.assert_close(g_Q, Qg.grad, 1e-5, 1e-7, "g_Q equals Q.grad")
tt.assert_close(g_K, Kg.grad, 1e-5, 1e-7, "g_K equals K.grad")
if (g_S:ne(0) & hidden):float():sum():item() ~= 0 then error("masked scores should get exactly 0") end
print("Exercise 13: every check passed.")
