-- Exercise 10, solution — the cost of attention from the formulas (follows lessons/10_complexity.lua).
-- The reference that `./tensortrace --exercise 10` compares your copy with.
-- recheck: D = 128; H = 8

local D, H = 64, 4                                  -- model width and heads, as in lesson 10
local N = tt.tensor{16, 32, 64, 128, 256, 512, 1024}:named("N"):label("N")
-- ===== your code below =====

local linear = (8 * D * D * N):label("linear")                       -- projections 6 N D^2 + output 2 N D^2
local quadratic = ((4 * D + 6 * H) * N * N):label("quadratic")       -- scores, softmax, A.V: N^2 (4 D + 6 H)
local share = (quadratic / (linear + quadratic)):label("share")      -- the N x N part's share of the FLOPs
local dominates = quadratic:gt(linear):label("dominates")            -- true from the crossover on

-- ===== checks =====
local crossover = 8 * D * D / (4 * D + 6 * H)       -- 117 for D = 64, H = 4
local n = N:totable()
local dom = dominates:totable()
for i = 1, #n do
  if dom[i] ~= (n[i] > crossover) then error("dominates should flip at N = " .. crossover) end
end
tt.assert_close(linear:narrow("N", 2, 6) / linear:narrow("N", 1, 6), tt.full({6}, 2), 0, 0, "linear doubles with N")
tt.assert_close(quadratic:narrow("N", 2, 6) / quadratic:narrow("N", 1, 6), tt.full({6}, 4), 0, 0, "quadratic grows 4x")
if share:max():item() < 0.8 then error("at N = 1024 the N x N part is most of the cost") end
print("Exercise 10: every check passed.")
