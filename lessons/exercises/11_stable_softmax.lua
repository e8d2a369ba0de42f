-- Exercise 11 — softmax by hand, without overflow (follows lessons/11_numerics.lua).
--
-- These unscaled scores reach a few hundred, and float32's exp overflows
-- above 88.7: exp(x) / sum(exp(x)) gives inf / inf = NaN. Write softmax over
-- the keys by hand in its stable form: subtract each row's max first (the
-- answer does not change; every exponent is then <= 0).
-- Labels to produce, with these dim names:
--   row_max [Nq,1] (keep the reduced dim)  exps [Nq,Nk]  weights [Nq,Nk]
-- Check your work:  ./tensortrace --exercise 11
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/11_stable_softmax.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(0)
local Nq, Nk, Dh = 4, 8, 128
local q = (tt.randn(Nq, Dh) * 3):named("Nq", "Dh"):label("q")     -- entries of std 3: no norm layer before them
local k = (tt.randn(Nk, Dh) * 3):named("Nk", "Dh"):label("k")
local scores = q:matmul(k:mT()):label("scores")                  -- unscaled: std about 3*3*sqrt(128) = 102
-- ===== your code below =====

-- TODO(row_max): each query's largest score, the key dim kept (size 1) so it broadcasts.

-- TODO(exps): exp of the scores minus their row's max.

-- TODO(weights): the exps divided by their row's sum.
