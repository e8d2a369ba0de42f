-- Exercise 14, solution — one head of the trained induction model (follows lessons/14_induction_heads.lua).
-- The reference that `./tensortrace --exercise 14` compares your copy with.
-- recheck: b = 2, P = 7, seed = 24; b = 1, P = 16

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

local qkv = h:matmul(W:mT())                     -- [b,N,3D]
local function heads(first)                      -- D columns from `first` as [b,H,N,Dh]
  return qkv:narrow(3, first, D):view(b, N, H, Dh):transpose(2, 3)
end
local q = heads(1):named("b", "H", "Nq", "Dh"):label("q")
local k = heads(D + 1):named("b", "H", "Nk", "Dh"):label("k")
local v = heads(2 * D + 1):named("b", "H", "Nk", "Dh"):label("v")
local scores = (q:select(2, HEAD):matmul(k:select(2, HEAD):mT()) / math.sqrt(Dh)):label("scores")
local weights = scores:masked_fill(~tt.causal_mask(N), -math.huge):softmax("Nk"):label("weights")
local head_out = weights:matmul(v:select(2, HEAD)):label("head_out")

-- ===== checks =====
local q_ref, k_ref, v_ref = M.qkv(model, 1, h)
tt.assert_close(q, q_ref, 0, 0, "q equals the model's own split (M.qkv)")
local heads_ref, w_ref = tt.sdpa(q_ref, k_ref, v_ref, {causal = true, weights = true})
tt.assert_close(weights, w_ref:select(2, HEAD), 1e-5, 1e-6, "weights equal tt.sdpa's for head 3")
tt.assert_close(head_out, heads_ref:select(2, HEAD), 1e-5, 1e-5, "head_out equals tt.sdpa's head 3")
-- a previous-token head: query i puts most of its weight on key i - 1
local prev = weights:narrow("Nq", 2, N - 1):narrow("Nk", 1, N - 1)
local on_prev = (prev * tt.eye(N - 1)):sum():item() / (b * (N - 1))
if on_prev < 0.4 then error(string.format("head 3 should look at the previous token (%.2f)", on_prev)) end
print(string.format("Exercise 14: every check passed (head 3 puts %.2f on the previous token).", on_prev))
