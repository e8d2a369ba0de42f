-- 11_numerics.lua — the numerical traps of attention, and what the weights are not.
--
-- 1. softmax written as exp(x) / sum(exp(x)) overflows for large scores; the
--    stable form subtracts the row max first and gives the same answer.
-- 2. masking with -inf and with a large negative number (-1e9) agree on normal
--    rows but disagree on a row where every key is hidden: uniform weights
--    (-1e9), NaN (-inf), or zeros (tt.sdpa).
-- 3. attention weights are coefficients of a weighted average of values, not
--    the probability of anything.
-- 4. attention dropout scales the kept weights by 1/(1 - p): each row sums to
--    1 on average over the draws, not in any one draw.
--
-- Run:  ./tensortrace lessons/11_numerics.lua                  (trace of every shape)
--       ./tensortrace --trace=values lessons/11_numerics.lua   (also every value: NaNs flagged)
-- Figure: images/11_fully_masked_row.png

tt.manual_seed(0)

local function isnan(x) return x ~= x end
-- a 1-D tensor or Lua list as "[a, b, ...]" (totable reads values without a trace line)
local function fmt(t)
  local s = {}
  for i, x in ipairs(type(t) == "table" and t or t:totable()) do
    s[i] = isnan(x) and "nan" or string.format("%.4f", x)
  end
  return "[" .. table.concat(s, ", ") .. "]"
end

tt.trace.section("Naive softmax overflows")
print("float32 can hold numbers up to about 3.4e38, so exp(x) overflows for x > 88.72.")
local edge = tt.tensor{88, 89}:exp():label("exp([88, 89])")
local ev = edge:totable()
print(string.format("exp(88) = %.4g,  exp(89) = %s", ev[1], ev[2]))
if ev[2] ~= math.huge then error("exp(89) should overflow float32") end
print("How large do scores get? With entries of variance 1, q.k has std sqrt(Dh)")
print("(lesson 02): about 11 at Dh = 128, far below 88. Inputs that are not")
print("normalised get there: if the entries of q and k have std 3 (activations with")
print("no norm layer before them, or projection weights grown large), q.k has std")
print("3 * 3 * sqrt(128) = 102. One such query against 8 keys, unscaled:")
local Dh = 128
local q_big = (tt.randn(1, Dh) * 3):label("q (std 3)")
local k_big = (tt.randn(8, Dh) * 3):label("keys (std 3)")
local x = q_big:matmul(k_big:mT()):reshape(8):label("scores")
local e = x:exp():label("exp(scores)")
local naive = (e / e:sum()):label("naive softmax")
local function fmt_g(t, f)
  local out = {}
  for i, val in ipairs(t:totable()) do out[i] = isnan(val) and "nan" or string.format(f, val) end
  return "[" .. table.concat(out, ", ") .. "]"
end
local n_inf = e:eq(math.huge):float():sum():item()
local n_nan = naive:ne(naive):float():sum():item()
print("  scores          = " .. fmt_g(x, "%.1f"))
print("  exp(scores)     = " .. fmt_g(e, "%.3g"))
print("  naive softmax   = " .. fmt_g(naive, "%.3g"))
print(string.format("%d of the 8 exps overflow to inf, so the sum is inf; exp(x) / sum(exp(x))", n_inf))
print(string.format("is then inf / inf = NaN for those keys and 0 for the others: %d NaN.", n_nan))
if not (n_inf >= 1 and n_nan == n_inf) then error("naive softmax should overflow here") end
print("Very negative scores fail the other way: exp underflows to 0, and 0 / 0 = NaN.")
local xneg = tt.tensor{-1000, -1001}
local eneg = xneg:exp()
local naive_neg = eneg / eneg:sum()
print("  naive softmax of [-1000, -1001] = " .. fmt(naive_neg))
if not isnan(naive_neg:totable()[1]) then error("underflow should give NaN") end

tt.trace.section("Stable softmax: subtract the row max first")
print("softmax(x) = softmax(x - c) for any constant c (the factor exp(-c) cancels).")
print("With c = max(x) the largest exponent is exp(0) = 1: no overflow, and the sum")
print("is at least 1: no division by zero. The same 8 scores:")
local shifted = (x - x:max()):label("scores - max")
local es = shifted:exp()
local stable = (es / es:sum()):label("stable softmax")
print("  x - max(x)      = " .. fmt_g(shifted, "%.1f"))
print("  stable softmax  = " .. fmt_g(stable, "%.3g"))
if stable:ne(stable):float():sum():item() ~= 0 then error("stable softmax should give no NaN") end
tt.assert_close(stable:sum(), 1, 1e-6, 0, "the stable weights sum to 1")
tt.assert_close(x:softmax(1), stable, 1e-6, 1e-7, "tt's softmax already subtracts the max")
local eneg_s = (xneg - xneg:max()):exp()
tt.assert_close(eneg_s / eneg_s:sum(), xneg:softmax(1), 1e-6, 1e-7, "and it fixes the underflow too")
print("Checked: no NaN, the weights sum to 1, and tt's x:softmax(d) gives the same;")
print("it subtracts the max for you, and fixes [-1000, -1001] too.")

tt.trace.section("-inf or -1e9 for masked scores?")
print("A masked key should get weight exactly 0. exp(-inf) = 0 exactly; exp(-1e9 - max)")
print("also rounds to 0 in float32. On a row that still sees some key, both agree:")
local row = tt.tensor{{2.0, 1.0, 0.5, 3.0}}
local hide = tt.tensor({{false, false, true, true}}, "bool")
local w_inf = row:masked_fill(hide, -math.huge):softmax(-1)
local w_big = row:masked_fill(hide, -1e9):softmax(-1)
print("  with -inf: " .. fmt(w_inf:totable()[1]) .. "    with -1e9: " .. fmt(w_big:totable()[1]))
tt.assert_close(w_inf, w_big, 0, 0, "-inf and -1e9 give identical weights on a normal row")
print("Checked: identical, and the hidden keys get exactly 0.")
print("(In float16, whose largest number is 65504, -1e9 cannot be stored: converted")
print("it becomes -inf, and PyTorch's masked_fill refuses it as an overflow. Code")
print("uses the dtype's lowest value or -inf instead, and exp() must still give 0.)")

tt.trace.section("A row where every key is hidden")
print("A pad query under left padding and a causal mask (lesson 04), or any mask")
print("built by hand, can leave a query with no visible key.")
print("Three queries over four keys: query 1 sees keys 1-3, query 2 sees nothing,")
print("query 3 sees keys 1-2.")
local q = tt.randn(1, 1, 3, 4):label("Q")
local k = tt.randn(1, 1, 4, 4):label("K")
local v = tt.randn(1, 1, 4, 4):label("V")
local keep = tt.tensor({{true, true, true, false},
                        {false, false, false, false},
                        {true, true, false, false}}, "bool"):label("may attend")
local scores = (q:matmul(k:mT()) / math.sqrt(4)):label("scores")
local w_big3 = scores:masked_fill(~keep, -1e9):softmax(-1):label("weights (-1e9)")
local w_inf3 = scores:masked_fill(~keep, -math.huge):softmax(-1):label("weights (-inf)")
local out_big = w_big3:matmul(v):label("output (-1e9)")
local out_inf = w_inf3:matmul(v):label("output (-inf)")
local out_sdpa, w_sdpa = tt.sdpa(q, k, v, {mask = keep, weights = true})
out_sdpa:label("output (sdpa)")

local function row_of(t, i) return t:totable()[1][1][i] end   -- query i's numbers
print("  weights of query 2 with -1e9: " .. fmt(row_of(w_big3, 2)))
print("  weights of query 2 with -inf: " .. fmt(row_of(w_inf3, 2)))
print("  weights of query 2 in sdpa:   " .. fmt(row_of(w_sdpa, 2)))
tt.trace.off()   -- the checks below select rows; their views would flood the trace
local function r(t, i) return t:select(-2, i) end
tt.assert_close(r(w_big3, 2), tt.full({1, 1, 4}, 0.25), 0, 1e-7, "-1e9: all scores equal -> uniform 1/4")
tt.assert_close(r(out_big, 2), v:mean(-2), 1e-6, 1e-6, "-1e9: the output is the plain mean of ALL values")
local nan_w, nan_o = row_of(w_inf3, 2), row_of(out_inf, 2)
for i = 1, 4 do
  if not (isnan(nan_w[i]) and isnan(nan_o[i])) then error("-inf: a fully masked row should be NaN") end
end
tt.assert_close(r(out_sdpa, 2), tt.zeros(1, 1, 4), 0, 0, "sdpa: a query with no key gets zeros")
for _, i in ipairs{1, 3} do
  tt.assert_close(r(out_big, i), r(out_sdpa, i), 1e-5, 1e-6, "row " .. i .. ": -1e9 == sdpa")
  tt.assert_close(r(out_inf, i), r(out_sdpa, i), 1e-5, 1e-6, "row " .. i .. ": -inf == sdpa")
end
tt.trace.on()
print("Checked: rows 1 and 3 agree three ways. Row 2 differs:")
print("  -1e9  uniform weights: the query silently averages the keys it must not see;")
print("  -inf  NaN (the row max is -inf, and -inf - (-inf) = NaN): loud, and it spreads;")
print("  sdpa  zeros, with a warning in the trace: the PyTorch >= 2.5 / FlashAttention rule.")

local panels = tt.stack({w_big3:reshape(3, 4), w_inf3:reshape(3, 4), w_sdpa:reshape(3, 4)}, 1)
tt.heatmap(panels, "images/11_fully_masked_row.png", {
  title = "Query 2 sees no key: three different answers",
  panel_titles = {"masked with -1e9", "masked with -inf", "tt.sdpa (q2: zeros)"},
  xlabels = {"k1", "k2", "k3", "k4"}, ylabels = {"q1", "q2", "q3"},
  mask = {["masked key"] = ~keep}, cmap = "viridis", vmin = 0, vmax = 1, decimals = 2 })
print("Figure: images/11_fully_masked_row.png (hatched: masked; a hatched cell with")
print("no number holds exactly 0). Row q2 is masked throughout: 0.25, NaN, or zeros.")

tt.trace.section("NaN spreads")
print("In the next layer every query that reads position 2 mixes a NaN into its sum,")
print("and x + NaN = NaN. One empty row can poison a whole sequence:")
local next_w = tt.full({3, 3}, 1 / 3):label("next layer's weights")
local next_out = next_w:matmul(out_inf:reshape(3, 4)):label("next layer's output")
local bad = 0
for _, row_vals in ipairs(next_out:totable()) do
  for _, val in ipairs(row_vals) do if isnan(val) then bad = bad + 1 end end
end
print(string.format("  %d of %d numbers in the next layer's output are NaN.", bad, next_out:numel()))
if bad ~= next_out:numel() then error("every output that reads the NaN row should be NaN") end
print("So guarantee every real query at least one visible key, or handle empty rows")
print("explicitly (as tt.sdpa does), and never let padding queries leak into the loss.")

tt.trace.section("What the weights are, and what they are not")
print("Each row of weights is >= 0 and sums to 1. That makes the output a weighted")
print("average of value vectors: the weights are mixing coefficients. They are not")
print("the probability of a next word, not the model's confidence, and not by")
print("themselves an explanation of its decision. A large weight on a key whose")
print("value is small moves the output less than a small weight on a big value:")
local w = tt.tensor{0.7, 0.3}:label("weights")
local vals = tt.tensor{{0.01, 0.0, 0.02}, {3.0, -2.0, 1.0}}:label("values")
local z = w:matmul(vals):label("output")
local contrib = (w:view(2, 1) * vals):label("weight * value")
local vsize = vals:abs():sum(2):totable()        -- size of each value vector (sum of |.|)
local csize = contrib:abs():sum(2):totable()     -- size of what each key adds to the output
print(string.format("  key 1: weight 0.70, value size %.2f -> contributes %.3f", vsize[1], csize[1]))
print(string.format("  key 2: weight 0.30, value size %.2f -> contributes %.3f", vsize[2], csize[2]))
print("  output = " .. fmt(z))
if not (csize[2] > 50 * csize[1]) then error("key 2 should dominate the output") end
tt.assert_close(z, contrib:sum(1), 1e-6, 1e-7, "the output is the sum of the weighted values")
print("Checked: key 2, with less than half key 1's weight, supplies almost all of")
print("the output. Read attention maps as routing of information, with care.")

tt.trace.section("Attention dropout: each row sums to 1 only on average")
print("Training often drops attention weights (PyTorch's dropout_p, tt.sdpa's")
print("dropout = p): each weight is zeroed with probability p and the kept ones are")
print("divided by 1 - p, so that each weight, and so each row's sum, keeps its")
print("expected value. One draw, p = 0.25, 4 heads of 64 queries over 32 keys:")
local P, HD, NQ, NK = 0.25, 4, 64, 32
local qd, kd, vd = tt.randn(1, HD, NQ, 8), tt.randn(1, HD, NK, 8), tt.randn(1, HD, NK, 8)
local _, w_plain = tt.sdpa(qd, kd, vd, {weights = true})
tt.manual_seed(11)
local out_drop, w_drop = tt.sdpa(qd, kd, vd, {dropout = P, weights = true})
w_drop:label("dropped weights")
tt.trace.off()
local kept = w_drop:ne(0)
tt.assert_close(w_drop, w_plain:masked_fill(~kept, 0) / (1 - P), 1e-6, 1e-7, "kept weights are w / (1 - p)")
tt.assert_close(out_drop, w_drop:matmul(vd), 1e-5, 1e-6, "the output is the dropped weights times V")
local dropped_frac = 1 - kept:float():mean():item()
tt.trace.on()
print(string.format("Checked: %.1f%% of the weights are 0 (p = 25%%); every other one is its", 100 * dropped_frac))
print("undropped value / 0.75 (to 1e-6), and the output is these weights times V.")
-- the row sums over 8 seeds: 8 x 4 x 64 = 2048 rows
local sums, rows = {}, 0
tt.trace.off()
for seed = 1, 8 do
  tt.manual_seed(seed)
  local _, wd = tt.sdpa(qd, kd, vd, {dropout = P, weights = true})
  for _, s in ipairs(wd:sum(-1):reshape(HD * NQ):totable()) do rows = rows + 1; sums[rows] = s end
end
-- a row's sum is sum_j w_j m_j / (1 - p), m_j kept with probability 1 - p: mean 1,
-- variance p / (1 - p) sum_j w_j^2; the standard error of the mean of all rows
local var_rows = (w_plain * w_plain):sum(-1):sum():item() * P / (1 - P)
tt.trace.on()
local mean, near = 0, 0
for _, s in ipairs(sums) do
  mean = mean + s / rows
  if math.abs(s - 1) < 0.01 then near = near + 1 end
end
local se = math.sqrt(8 * var_rows) / rows
local lo, hi = math.huge, -math.huge
for _, s in ipairs(sums) do lo, hi = math.min(lo, s), math.max(hi, s) end
print(string.format("Row sums of %d rows (8 seeds): mean %.4f, smallest %.3f, largest %.3f.", rows, mean, lo, hi))
print(string.format("Only %d rows (%.1f%%) sum to 1 within 0.01.", near, 100 * near / rows))
if not (math.abs(mean - 1) < 4 * se) then error("the mean row sum should be 1 within 4 standard errors") end
if not (near < rows / 10 and hi - lo > 0.5) then error("single rows should not sum to 1") end
print(string.format("Checked: the mean is 1 within 4 standard errors (the standard error, %.4f, is", se))
print("from each row's variance p / (1 - p) sum_j w_j^2), while fewer than 1 row in 10")
print("sums to 1 within 0.01. During training the output is a sum of values with")
print("weights that do not sum to 1; at evaluation p = 0, dropout is the identity,")
print("and each row sums to 1.")
tt.trace.off()
local _, w_eval = tt.sdpa(qd, kd, vd, {dropout = 0, weights = true})
tt.assert_close(w_eval, w_plain, 0, 0, "dropout = 0 is the identity")
tt.assert_close(w_eval:sum(-1), tt.ones(1, HD, NQ), 1e-6, 1e-6, "without dropout each row sums to 1")
tt.trace.on()
