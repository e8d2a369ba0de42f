-- Exercise 10 — the cost of attention from the formulas (follows lessons/10_complexity.lua).
--
-- Lesson 10 counted the FLOPs of one attention layer (D = 64, H = 4) from
-- the trace: the projections cost 6 N D^2 and the output 2 N D^2, linear in
-- N; the scores 2 N^2 D + H N^2, the softmax 5 H N^2 and the aggregation
-- 2 N^2 D, quadratic. Compute both parts for each N at once, as tensors.
-- Labels to produce, each over the dim N:
--   linear [N]  quadratic [N]  share [N]  dominates [N] (bool)
-- Check your work:  ./tensortrace --exercise 10
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/10_flops.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

local D, H = 64, 4                                  -- model width and heads, as in lesson 10
local N = tt.tensor{16, 32, 64, 128, 256, 512, 1024}:named("N"):label("N")
-- ===== your code below =====

-- TODO(linear): the linear part, 6 N D^2 + 2 N D^2, for every N (a number times the tensor N).

-- TODO(quadratic): the quadratic part, 2 N^2 D + H N^2 + 5 H N^2 + 2 N^2 D.

-- TODO(share): the quadratic part's share of all the FLOPs, between 0 and 1.

-- TODO(dominates): a bool tensor, true where the quadratic part costs more than the linear one.
