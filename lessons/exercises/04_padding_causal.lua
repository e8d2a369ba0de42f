-- Exercise 04 — padding and causal masks together (follows lessons/04_padding_mask.lua).
--
-- Sentence 2 has 3 real tokens and 2 <pad>s. No query may read a pad: hide
-- the pad KEYS (whole columns of the scores). Then, as a decoder must, hide
-- a key when it is in the future OR a pad.
-- Labels to produce, with these dim names:
--   scores [B,Nq,Nk]  weights_pad [B,Nq,Nk] (pad keys hidden)
--   weights [B,Nq,Nk] (future or pad hidden)  Z [B,Nq,Dh]
-- Check your work:  ./tensortrace --exercise 04
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/04_padding_causal.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(4)
local lengths = {5, 3}          -- sentence 2 is "Dogs bark loudly <pad> <pad>"
local B, N, Dh = #lengths, 5, 4
local is_pad = tt.arange(N):view(1, N):ge(tt.tensor(lengths):view(B, 1)):label("is_pad")   -- [B,N]
local q = tt.randn(B, N, Dh):named("B", "Nq", "Dh"):label("q")
local k = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("k")
local v = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("v")
-- ===== your code below =====

-- TODO(scores): q against k transposed, divided by sqrt(Dh).

-- TODO(weights_pad): hide the pad keys (is_pad is [B,N]; give it the shape that
-- broadcasts over the query rows), then softmax over the keys.

-- TODO(weights): hide a key if it is in the future OR a pad, then softmax.

-- TODO(Z): the weighted sum of the values, with those weights.
