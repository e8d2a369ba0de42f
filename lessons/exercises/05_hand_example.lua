-- Exercise 05 — the hand example, number by number (follows lessons/05_hand_example.lua).
--
-- Q = K = [[1,0],[0,1],[1,1]], V = [[1,0],[0,2],[1,1]], Dh = 2. Follow query
-- 3 = [1, 1] through the four steps, then do all three queries at once.
-- Work it out on paper first: z3 should come out [0.7517, 1.0000].
-- Labels to produce, with these dim names:
--   dots [Nk]  scaled [Nk]  a3 [Nk]  z3 [Dv]   (query 3 alone)
--   scores [Nq,Nk]  weights [Nq,Nk]  Z [Nq,Dv]   (all three queries)
-- Check your work:  ./tensortrace --exercise 05
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/05_hand_example.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

local Q = tt.tensor{{1, 0}, {0, 1}, {1, 1}}:named("Nq", "Dh"):label("Q")
local K = tt.tensor{{1, 0}, {0, 1}, {1, 1}}:named("Nk", "Dh"):label("K")
local V = tt.tensor{{1, 0}, {0, 2}, {1, 1}}:named("Nk", "Dv"):label("V")
local Dh = 2
-- ===== your code below =====

-- TODO(dots): query 3 (Q[3]) dotted with every key: three numbers.

-- TODO(scaled): the dots divided by sqrt(Dh).

-- TODO(a3): softmax of the scaled dots: query 3's weights.

-- TODO(z3): the weighted sum of the value rows.

-- TODO(scores, weights, Z): the same four steps for all three queries at once,
-- as matrix operations.
