-- Exercise 01, solution — Q, K and V from the tokens (follows lessons/01_qkv_projection.lua).
-- The reference that `./tensortrace --exercise 01` compares your copy with.
-- recheck: N = 7, seed = 11; Dk = 8, Dv = 3; M = 1

tt.manual_seed(1)
local B, N, D = 2, 5, 12        -- 2 sentences of 5 tokens, 12 features per token
local Dk, Dv = 4, 6             -- query/key width and value width (Dv need not be Dk)
local M = 3                     -- decoder tokens, for the cross-attention part
local X = tt.randn(B, N, D):named("B", "N", "D"):label("X")
local W_Q, W_K, W_V = tt.nn.Linear(D, Dk), tt.nn.Linear(D, Dk), tt.nn.Linear(D, Dv)
local Y = tt.randn(B, M, D):named("B", "M", "D"):label("Y_decoder")
local W_Qc, W_Kc, W_Vc = tt.nn.Linear(D, Dk), tt.nn.Linear(D, Dk), tt.nn.Linear(D, Dv)
-- ===== your code below =====

-- Self-attention: Q, K and V all come from X.
local Q = W_Q(X):named("B", "Nq", "Dk"):label("Q")
local K = W_K(X):named("B", "Nk", "Dk"):label("K")
local V = W_V(X):named("B", "Nk", "Dv"):label("V")
local scores = (Q:matmul(K:mT()) / math.sqrt(Dk)):label("Scores")
local weights = scores:softmax("Nk"):label("Weights")
local Z = weights:matmul(V):label("Z")

-- Cross-attention: queries from the decoder's Y, keys and values from X.
local Qc = W_Qc(Y):named("B", "Nq", "Dk"):label("Q_cross")
local Kc = W_Kc(X):named("B", "Nk", "Dk"):label("K_enc")
local Vc = W_Vc(X):named("B", "Nk", "Dv"):label("V_enc")
local weights_c = (Qc:matmul(Kc:mT()) / math.sqrt(Dk)):softmax("Nk"):label("Weights_cross")
local Zc = weights_c:matmul(Vc):label("Z_cross")

-- ===== checks =====
tt.assert_close(Q, X:matmul(W_Q.weight:mT()) + W_Q.bias, 1e-5, 1e-5, "W_Q(X) = X W^T + b")
tt.assert_close(weights:sum("Nk"), tt.ones(B, N), 1e-6, 1e-6, "every row of Weights sums to 1")
tt.assert_close(Z, tt.sdpa(Q, K, V), 1e-5, 1e-5, "Z equals tt.sdpa(Q, K, V)")
tt.assert_close(Zc, tt.sdpa(Qc, Kc, Vc), 1e-5, 1e-5, "Z_cross equals tt.sdpa(Q_cross, K_enc, V_enc)")
if Zc:size(2) ~= M or Zc:size(3) ~= Dv then error("Z_cross should be [B, M, Dv]") end
print("Exercise 01: every check passed.")
