-- Exercise 02 — scale the scores by 1/sqrt(Dh) (follows lessons/02_scaling.lua).
--
-- Lesson 02 showed that q.k grows like sqrt(Dh) and that big scores make
-- softmax nearly one-hot. Compute the raw scores, the scaled scores, and the
-- weights of each, as in its section 4 (here 6 queries against 16 keys).
-- Labels to produce, with these dim names:
--   raw_scores [Nq,Nk]  scaled_scores [Nq,Nk]  raw_weights [Nq,Nk]  scaled_weights [Nq,Nk]
-- Check your work:  ./tensortrace --exercise 02
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/02_scaling.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(2)
local Nq, Nk, Dh = 6, 16, 16    -- 6 queries, 16 keys, head width 16
local q = tt.randn(Nq, Dh):named("Nq", "Dh"):label("q")
local k = tt.randn(Nk, Dh):named("Nk", "Dh"):label("k")
-- ===== your code below =====

-- TODO(raw_scores): every query dotted with every key, q against k transposed.

-- TODO(scaled_scores): the raw scores divided by sqrt(Dh).

-- TODO(raw_weights, scaled_weights): softmax of each along the keys (Nk).
