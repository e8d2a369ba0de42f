-- exercise: 14_induction_head
-- expect: shape
-- Head 3 taken with narrow instead of select: the head dim stays, [b,1,Nq,Nk] instead of [b,Nq,Nk].
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

-- lesson 14's model and its trained weights, from lessons/ (run from the repository's top)
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
local scores = (q:narrow(2, HEAD, 1):matmul(k:narrow(2, HEAD, 1):mT()) / math.sqrt(Dh)):label("scores")
local weights = scores:masked_fill(~tt.causal_mask(N), -math.huge):softmax("Nk"):label("weights")
local head_out = weights:matmul(v:narrow(2, HEAD, 1)):label("head_out")
