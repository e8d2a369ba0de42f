-- exercise: 05_hand_example
-- expect: values
-- z3 from the article's weights rounded to 3 decimals, [0.248, 0.248, 0.503]: [0.751, 0.999] instead of [0.7517, 1.0000].
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

local Q = tt.tensor{{1, 0}, {0, 1}, {1, 1}}:named("Nq", "Dh"):label("Q")
local K = tt.tensor{{1, 0}, {0, 1}, {1, 1}}:named("Nk", "Dh"):label("K")
local V = tt.tensor{{1, 0}, {0, 2}, {1, 1}}:named("Nk", "Dv"):label("V")
local Dh = 2
-- ===== your code below =====

-- Query 3 = [1, 1], one step at a time.
local q3 = Q[3]
local dots = q3:matmul(K:mT()):label("dots")
local s3 = (dots / math.sqrt(Dh)):label("scaled")
local a3 = s3:softmax("Nk"):label("a3")
local z3 = tt.tensor{0.248, 0.248, 0.503}:matmul(V):label("z3")

-- All three queries at once.
local S = (Q:matmul(K:mT()) / math.sqrt(Dh)):label("scores")
local A = S:softmax("Nk"):label("weights")
local Z = A:matmul(V):label("Z")
