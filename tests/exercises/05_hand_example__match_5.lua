-- exercise: 05_hand_example
-- expect: match
-- Query 3's softmax written by hand: exp, divided by the total.
-- (a copy of the solution written another way; it keeps its checks, which still pass)

local Q = tt.tensor{{1, 0}, {0, 1}, {1, 1}}:named("Nq", "Dh"):label("Q")
local K = tt.tensor{{1, 0}, {0, 1}, {1, 1}}:named("Nk", "Dh"):label("K")
local V = tt.tensor{{1, 0}, {0, 2}, {1, 1}}:named("Nk", "Dv"):label("V")
local Dh = 2
-- ===== your code below =====

-- Query 3 = [1, 1], one step at a time.
local q3 = Q[3]
local dots = q3:matmul(K:mT()):label("dots")
local s3 = (dots / math.sqrt(Dh)):label("scaled")
local e3 = s3:exp()
local a3 = (e3 / e3:sum()):label("a3")
local z3 = a3:matmul(V):label("z3")

-- All three queries at once.
local S = (Q:matmul(K:mT()) / math.sqrt(Dh)):label("scores")
local A = S:softmax("Nk"):label("weights")
local Z = A:matmul(V):label("Z")

-- ===== checks =====
-- by hand, in float64 with Lua's math library
local r2 = math.sqrt(2)
local e = {math.exp(1 / r2), math.exp(1 / r2), math.exp(r2)}
local total = e[1] + e[2] + e[3]
local ref_a = {e[1] / total, e[2] / total, e[3] / total}
tt.assert_close(dots, {1, 1, 2}, 0, 0, "q3 . k_j = 1, 1, 2")
tt.assert_close(s3, {1 / r2, 1 / r2, r2}, 1e-6, 0, "scaled scores 0.7071, 0.7071, 1.4142")
tt.assert_close(a3, ref_a, 1e-6, 0, "weights 0.2483, 0.2483, 0.5035")
tt.assert_close(z3, {ref_a[1] + ref_a[3], 2 * ref_a[2] + ref_a[3]}, 1e-6, 0, "z3 = [0.7517, 1.0000]")
tt.assert_close(A[3], a3, 1e-6, 1e-7, "row 3 of weights is query 3's")
tt.assert_close(Z, tt.sdpa(Q, K, V), 1e-6, 1e-6, "Z equals tt.sdpa(Q, K, V)")
print("Exercise 05: every check passed.")
