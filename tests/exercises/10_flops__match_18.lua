-- exercise: 10_flops
-- expect: match
-- the quadratic part term by term, in the lesson's order: the same numbers.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)
local D, H = 64, 4                                  -- model width and heads, as in lesson 10
local N = tt.tensor{16, 32, 64, 128, 256, 512, 1024}:named("N"):label("N")
-- ===== your code below =====

local linear = (8 * D * D * N):label("linear")                       -- projections 6 N D^2 + output 2 N D^2
local quadratic = (2 * N * N * D + H * N * N + 5 * H * N * N + 2 * N * N * D):label("quadratic")
local share = (quadratic / (linear + quadratic)):label("share")      -- the N x N part's share of the FLOPs
local dominates = quadratic:gt(linear):label("dominates")            -- true from the crossover on

