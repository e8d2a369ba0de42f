-- Exercise 21 — the whole pipeline, from X to the output (follows lessons/21_the_whole_pipeline.lua).
--
-- X [B,N,D] -> Q, K, V [B,H,N,Dh] -> scores [B,H,N,N] -> weights -> heads
-- [B,H,N,Dh] -> merged [B,N,D] -> W_O. Here one weight W_qkv [3D, D] makes
-- Q, K and V at once (as lesson 14's model does): of each token's 3D numbers
-- the first D are its query, the next D its key, the last D its value, and
-- each D is H heads of Dh, head 1 first. Attention is causal, and sequence 2
-- ends in two pad tokens that no query may read.
-- Labels to produce, with these dim names (tt.rearrange gives them; after
-- view and transpose add :named("B", "H", "N", "Dh")):
--   Q, K, V [B,H,N,Dh]  scores [B,H,N,N] (divided by sqrt(Dh))
--   allowed [B,1,N,N] bool (true = may attend: not the future, not a pad key)
--   weights [B,H,N,N]  heads [B,H,N,Dh]
--   merged [B,N,D] (head 1's features first; end with :named("B", "N", "D"))  out [B,N,D] (merged @ W_O^T)
-- Check your work:  ./tensortrace --exercise 21
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/21_pipeline.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(21)
local B, N, D, H = 2, 5, 12, 3
local Dh = D // H
local X = tt.randn(B, N, D):label("X")
local W_qkv = tt.randn(3 * D, D) / math.sqrt(D)    -- Q's, K's and V's weights stacked: rows 1..D make Q
local W_O = tt.randn(D, D) / math.sqrt(D)
local pad = tt.tensor({{false, false, false, false, false}, {false, false, false, true, true}}, "bool")   -- [B,N]: true = a pad key
-- ===== your code below =====

-- TODO(Q, K, V): X @ W_qkv^T [B,N,3D], cut into Q, K and V and each split
-- into heads (tt.rearrange with "(three H Dh)", or narrow + view + transpose).

-- TODO(scores): every head's scores at once.

-- TODO(allowed): the causal mask AND not a pad key; pad is [B,N], so view it
-- as [B,1,1,N] to hide key columns.

-- TODO(weights): hide what is not allowed, softmax over the keys.

-- TODO(heads): the weighted sum of the values.

-- TODO(merged): the heads back into [B,N,D], named B, N, D.

-- TODO(out): merged times W_O transposed.
