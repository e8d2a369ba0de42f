-- Exercise 14 — one head of the trained induction model (follows lessons/14_induction_heads.lua).
--
-- Lesson 14 trained a two-layer attention-only model and found, by
-- measurement, a previous-token head: layer 1 head 3. Take the model's
-- embeddings h of 4 repeated sequences and compute that head yourself: one
-- matmul with the layer's qkv weight W gives [b,N,3D], whose columns hold Q,
-- then K, then V, each D = H*Dh wide with head 1's Dh columns first. Then the
-- causal attention of head 3 alone. Its weights should sit just below the
-- diagonal: each token looks at the one before it.
-- Labels to produce, with these dim names:
--   q [b,H,Nq,Dh]  k [b,H,Nk,Dh]  v [b,H,Nk,Dh]      (all 4 heads)
--   scores [b,Nq,Nk]  weights [b,Nq,Nk]  head_out [b,Nq,Dh]   (head 3 only)
-- Check your work:  ./tensortrace --exercise 14
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/14_induction_head.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

-- lesson 14's model and its trained weights, from lessons/ (run from the repository's top);
-- what a graded copy may read besides itself (--sandbox):
-- reads: lib/induction_model.lua data/induction.safetensors
local LESSONS = arg[0]:match("^(.*lessons)/exercises/") or "lessons"
local M = dofile(LESSONS .. "/lib/induction_model.lua")
local model = M.load(LESSONS .. "/data/induction.safetensors")
local D, H, N, Dh = M.D, M.H, M.N, M.Dh          -- 64 wide, 4 heads of 16, 32 positions
local HEAD = 3                                   -- layer 1 head 3: lesson 14's previous-token head
tt.manual_seed(14)
local b, P = 4, 11                               -- 4 sequences of 11 random tokens, repeated
local x = M.repeated_batch(b, P):label("tokens")
local h = M.embed(model, x):named("b", "N", "D"):label("h")   -- token + position embeddings
local W = model["layer1.qkv"]                    -- [3D, D]: rows 1..D make Q, D+1..2D K, 2D+1..3D V
-- ===== your code below =====

-- TODO(q, k, v): h @ W^T, then Q's, K's and V's D columns each split into
-- heads [b,H,N,Dh] (head h = columns (h-1)*Dh+1 .. h*Dh of its block).

-- TODO(scores): head HEAD's queries against its keys, divided by sqrt(Dh).

-- TODO(weights): the causal mask, then softmax over the keys.

-- TODO(head_out): the weighted sum of head HEAD's values.
