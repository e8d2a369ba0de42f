-- 05_hand_example.lua — attention small enough to check with pencil and paper.
--
-- Three tokens, head size 2, hand-picked numbers (not trained weights):
--   Q = K = [[1,0],[0,1],[1,1]]      V = [[1,0],[0,2],[1,1]]
-- We follow query 3 through dot products, scaling, softmax and the weighted
-- sum of values, printing every number, then do all three queries at once.
-- Finally we explain why the source article (README.md, Sources) prints [0.751, 0.999]
-- for the output while the exact answer is [0.7517, 1.0000].
--
-- Run it:   ./tensortrace lessons/05_hand_example.lua
--           ./tensortrace -q lessons/05_hand_example.lua   (numbers only, no trace)
-- Figures:  images/05_attend.png  images/05_scores.png  images/05_weights.png

local function untraced(fn, ...)
  tt.trace.off(); fn(...); tt.trace.on()
end
local function vec(t, f)
  local out = {}
  for i, x in ipairs(t) do out[i] = string.format(f or "%.4f", x) end
  return "[" .. table.concat(out, ", ") .. "]"
end

-- The reference numbers, computed independently in float64 with Lua's math
-- library: the tensors below compute in float32, and must agree to 1e-6 relative.
local r2 = math.sqrt(2)
local ref_s = {1 / r2, 1 / r2, r2}                         -- q3 . k_j / sqrt(2)
local ref_e, ref_total = {}, 0
for j = 1, 3 do ref_e[j] = math.exp(ref_s[j]); ref_total = ref_total + ref_e[j] end
local ref_a = {}
for j = 1, 3 do ref_a[j] = ref_e[j] / ref_total end
local ref_z = {ref_a[1] * 1 + ref_a[2] * 0 + ref_a[3] * 1, ref_a[1] * 0 + ref_a[2] * 2 + ref_a[3] * 1}
local RTOL = 1e-6

local tokens = {"t1", "t2", "t3"}
tt.trace.section("0. The example")
print("Three tokens t1, t2, t3 with hand-picked queries, keys and values (Dh = 2).")
print("Q and K are the same matrix here, to keep the arithmetic short:")
print("  Q = K = [[1,0],[0,1],[1,1]]     V = [[1,0],[0,2],[1,1]]")
local Q = tt.tensor{{1, 0}, {0, 1}, {1, 1}}:named("Nq", "Dh"):label("Q")
local K = tt.tensor{{1, 0}, {0, 1}, {1, 1}}:named("Nk", "Dh"):label("K")
local V = tt.tensor{{1, 0}, {0, 2}, {1, 1}}:named("Nk", "Dv"):label("V")
local Dh = K:size(2)

tt.trace.section("1. Query 3 = [1, 1], one step at a time")
local q3 = Q[3]
print("Step 1: dot product of q3 with each key.")
local dots = q3:matmul(K:mT()):label("dots")
untraced(function()
  local k = K:totable()
  for j = 1, 3 do
    print(string.format("  q3 . k%d = 1*%d + 1*%d = %d", j, k[j][1], k[j][2], dots[j]:item()))
  end
end)
tt.assert_close(dots, {1, 1, 2}, 0, 0, "dot products of q3 are 1, 1, 2")

print(string.format("Step 2: divide by sqrt(Dh) = sqrt(%d) = %.4f.", Dh, math.sqrt(Dh)))
local s3 = (dots / math.sqrt(Dh)):label("scaled")
untraced(function() print("  scaled scores " .. vec(s3:totable())) end)
tt.assert_close(s3, ref_s, RTOL, 0, "scaled 1/sqrt(2), 1/sqrt(2), sqrt(2)")

print("Step 3: softmax: exponentiate, divide by the total.")
local e3 = s3:exp():label("exp")
local total = e3:sum()
local a3 = s3:softmax(-1):label("weights")
untraced(function()
  print("  exp(scores)   " .. vec(e3:totable()) .. string.format("   total %.4f", total:item()))
  print("  weights       " .. vec(a3:totable()))
  print("  to 8 digits   " .. vec(a3:totable(), "%.8f") .. "   (float32, as computed)")
  print("  by hand       " .. vec(ref_a, "%.8f") .. "   (float64, Lua's math)")
  local a = a3:totable()
  print(string.format("  (to 3 decimals, as the article prints them: %.3f, %.3f, %.3f)", a[1], a[2], a[3]))
end)
tt.assert_close(e3, ref_e, RTOL, 0, "exp of the scores")
tt.assert_close(total, ref_total, RTOL, 0, "total of the exps")
tt.assert_close(a3, e3 / total, 1e-6, 1e-7, "softmax is exp / sum of exp")
tt.assert_close(a3, ref_a, RTOL, 0, "weights 0.24825508, 0.24825508, 0.50348984")
print("  The float32 weights agree with the float64 ones to 1e-6 relative (checked).")
print(string.format("  Key 3 matches q3 best (score 2 against 1) and gets e^(1/sqrt 2) = %.3f", ref_e[1]))
print("  times the weight of key 1 or key 2.")

print("Step 4: the output is the weighted sum of the value rows.")
local z3 = a3:matmul(V):label("z3")
untraced(function()
  local a = a3:totable()
  print(string.format("  z3 = %.4f*[1,0] + %.4f*[0,2] + %.4f*[1,1] = %s",
    a[1], a[2], a[3], vec(z3:totable())))
  print("  to 8 digits: " .. vec(z3:totable(), "%.8f") .. " (float32); by hand "
    .. vec(ref_z, "%.8f") .. " (float64)")
end)
tt.assert_close(z3, ref_z, RTOL, 0, "z3 = [0.75174492, 1]")
print("  The second number is exactly 1: it is 0*a1 + 2*a2 + 1*a3 and a1 = a2,")
print("  so it equals a1 + a2 + a3, the sum of the weights.")
tt.assert_close(z3[2], a3:sum(), 1e-6, 1e-6, "z3[2] equals the sum of the weights")
print("  z3 is not a copy of v3 = [1,1]: attention mixes all three values.")
if tt.allclose(z3, V[3], 0, 1e-3) then error("z3 should differ from v3") end
tt.attend_figure(q3, K, V, "images/05_attend.png", {
  labels = tokens, query = "t3", title = "Hand example: one query's attention, step by step" })
print("Figure: " .. tt.figure_path("images/05_attend.png") .. " draws the four steps for query t3, one row a key:")
print("its dot product with q3 (1, 1, 2), its score, its weight, its value row, that")
print("row times the weight, and under them their sum, the output z3 = [0.752, 1.000].")

tt.trace.section("2. All three queries at once")
print("The same four steps as matrix operations: S = QK^T/sqrt(Dh), A = softmax(S), Z = AV.")
local S = (Q:matmul(K:mT()) / math.sqrt(Dh)):label("scores")
local A = S:softmax("Nk"):label("weights")
local Z = A:matmul(V):label("Z")
untraced(function()
  local s, a, z = S:totable(), A:totable(), Z:totable()
  print("  query   scaled scores               weights                     output")
  for i = 1, 3 do
    print(string.format("  q%d      %-27s %-27s %s", i, vec(s[i]), vec(a[i]), vec(z[i])))
  end
end)
tt.assert_close(A[3], a3, 1e-6, 1e-7, "row 3 of the matrix form equals the step-by-step query 3")
tt.assert_close(Z[3], z3, 1e-6, 1e-7, "output row 3 equals z3")
tt.assert_close(A:sum(-1), {1, 1, 1}, 1e-6, 1e-6, "every row of weights sums to 1")
print("Each row sums to 1. The matrix is not symmetric even though Q = K: softmax")
untraced(function()
  print(string.format("normalises rows, so A[1][3] = %.4f but A[3][1] = %.4f.",
    A[1][3]:item(), A[3][1]:item()))
end)
if tt.allclose(A, A:mT(), 0, 1e-3) then error("weights should not be symmetric") end
tt.assert_close(S, S:mT(), 0, 0, "the scores ARE symmetric, since Q = K")
local fused = tt.sdpa(Q, K, V)
tt.assert_close(fused, Z, 1e-6, 1e-6, "tt.sdpa gives the same output")
print("tt.sdpa(Q, K, V) gives the same three outputs: checked.")
tt.heatmap(S, "images/05_scores.png", {
  title = "Hand example: scaled scores QK^T/sqrt(2)", xlabels = tokens, ylabels = tokens,
  xtitle = "Key", ytitle = "Query",
  annotate = true, decimals = 3, cmap = "diverging" })
tt.heatmap(A, "images/05_weights.png", {
  title = "Hand example: attention weights", xlabels = tokens, ylabels = tokens,
  xtitle = "Key", ytitle = "Query",
  annotate = true, decimals = 3, cmap = "viridis", vmin = 0, vmax = 1 })
print("Figures: " .. tt.figure_path("images/05_scores.png") .. " and " .. tt.figure_path("images/05_weights.png"))

tt.trace.section("3. Why the article prints [0.751, 0.999]")
print("The article rounds the weights to 3 decimals first, [0.248, 0.248, 0.503],")
print("and then multiplies by V. Rounding before the last step loses a little:")
local rounded = {}
untraced(function()
  for j, a in ipairs(a3:totable()) do rounded[j] = math.floor(a * 1000 + 0.5) / 1000 end
end)
local a3_rounded = tt.tensor(rounded):label("weights_rounded")
local z3_rounded = a3_rounded:matmul(V):label("z3_rounded")
untraced(function()
  print("  rounded weights " .. vec(a3_rounded:totable()) ..
    string.format("   sum %.3f (not 1)", a3_rounded:sum():item()))
  print(string.format("  0.248*[1,0] + 0.248*[0,2] + 0.503*[1,1] = [%.3f, %.3f]",
    z3_rounded[1]:item(), z3_rounded[2]:item()))
  print("  exact weights give                        " .. vec(z3:totable()))
end)
tt.assert_close(a3_rounded, {0.248, 0.248, 0.503}, 0, 1e-6, "rounded weights are the article's")
tt.assert_close(z3_rounded, {0.751, 0.999}, 0, 1e-6, "rounded weights reproduce [0.751, 0.999]")
untraced(function()
  local zr = z3_rounded:totable()
  print(string.format("The rounded weights sum to 0.999, so the output comes out short, by %.5f", ref_z[1] - zr[1]))
  print(string.format("and %.5f. Nothing is wrong with the method; keep full precision until", ref_z[2] - zr[2]))
  print("the end, as the tensor code does.")
end)
