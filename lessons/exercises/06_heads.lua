-- Exercise 06 — split into heads, attend, merge (follows lessons/06_multihead.lua).
--
-- D = 12 features per token become H = 3 heads of Dh = 4. Split each of
-- W_Q(X), W_K(X), W_V(X) into [B,H,N,Dh] (head h = features (h-1)*Dh+1 ..
-- h*Dh), run causal attention on every head at once, merge the heads back
-- into [B,N,D] and apply W_O.
-- Labels to produce, with these dim names:
--   Q [B,H,Nq,Dh]  K [B,H,Nk,Dh]  V [B,H,Nk,Dh]  Scores [B,H,Nq,Nk]  Weights [B,H,Nq,Nk]
--   Heads [B,H,Nq,Dh]  Concat [B,Nq,D]  Y [B,Nq,D]
-- Check your work:  ./tensortrace --exercise 06
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/06_heads.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(6)
local B, N, D, H = 2, 5, 12, 3  -- 2 sentences of 5 tokens, 12 features, 3 heads
local Dh = D // H               -- 4 features per head
local X = tt.randn(B, N, D):named("B", "N", "D"):label("X")
local W_Q, W_K, W_V = tt.nn.Linear(D, D), tt.nn.Linear(D, D), tt.nn.Linear(D, D)
local W_O = tt.nn.Linear(D, D)
local causal = tt.causal_mask(N)   -- true = may attend
-- ===== your code below =====

-- TODO(Q, K, V): split W_Q(X), W_K(X), W_V(X) [B,N,D] into heads [B,H,N,Dh].

-- TODO(Scores): every head's scores at once, divided by sqrt(Dh).

-- TODO(Weights): hide the future (causal says what to KEEP), softmax over the keys.

-- TODO(Heads): every head's weighted sum of its values.

-- TODO(Concat): merge the heads back into [B,Nq,D], head 1's features first.

-- TODO(Y): W_O of the merged heads.
