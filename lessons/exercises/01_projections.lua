-- Exercise 01 — Q, K and V from the tokens (follows lessons/01_qkv_projection.lua).
--
-- Run the attention pipeline of lesson 01 yourself: three Linear layers make
-- Q, K and V from the same tokens X; scores are Q K^T / sqrt(Dk); softmax over
-- the keys gives the weights; the weighted sum of the values is Z. Then the
-- same with queries from a decoder's tokens Y (cross-attention).
-- Labels to produce (x:label("...")), with these dim names (x:named(...)):
--   Q [B,Nq,Dk]  K [B,Nk,Dk]  V [B,Nk,Dv]  Scores [B,Nq,Nk]  Weights [B,Nq,Nk]  Z [B,Nq,Dv]
--   Q_cross [B,Nq,Dk]  K_enc [B,Nk,Dk]  V_enc [B,Nk,Dv]  Weights_cross [B,Nq,Nk]  Z_cross [B,Nq,Dv]
-- Check your work:  ./tensortrace --exercise 01
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/01_projections.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(1)
local B, N, D = 2, 5, 12        -- 2 sentences of 5 tokens, 12 features per token
local Dk, Dv = 4, 6             -- query/key width and value width (Dv need not be Dk)
local M = 3                     -- decoder tokens, for the cross-attention part
local X = tt.randn(B, N, D):named("B", "N", "D"):label("X")
local W_Q, W_K, W_V = tt.nn.Linear(D, Dk), tt.nn.Linear(D, Dk), tt.nn.Linear(D, Dv)
local Y = tt.randn(B, M, D):named("B", "M", "D"):label("Y_decoder")
local W_Qc, W_Kc, W_Vc = tt.nn.Linear(D, Dk), tt.nn.Linear(D, Dk), tt.nn.Linear(D, Dv)
-- ===== your code below =====

-- TODO(Q, K, V): project X with W_Q, W_K and W_V (a Linear is called: W_Q(X)),
-- and name the token dim by its role: Nq for Q, Nk for K and V.

-- TODO(Scores): every query against every key, divided by sqrt(Dk).

-- TODO(Weights): softmax along the key dim.

-- TODO(Z): each query's weighted mix of the values.

-- TODO(Q_cross, K_enc, V_enc): cross-attention's projections: W_Qc of the
-- decoder's Y for the queries; W_Kc and W_Vc of X for the keys and values.

-- TODO(Weights_cross, Z_cross): the same attention on Q_cross, K_enc, V_enc.
