-- 02_scaling.lua — why attention divides the scores by sqrt(Dh).
--
-- A dot product of two Dh-long vectors adds up Dh products, so its spread
-- grows with Dh. Big scores make softmax nearly one-hot, and a nearly one-hot
-- softmax passes back almost no gradient. Dividing by sqrt(Dh) puts the scores
-- back on a scale of about 1 for every head size, without changing which key
-- scores highest.
--
-- Run it:   ./tensortrace lessons/02_scaling.lua        (narrative + shapes)
--           ./tensortrace -q lessons/02_scaling.lua     (narrative only)
-- Figures:  images/02_softmax_sharpness.png  images/02_scaled_vs_raw.png

tt.manual_seed(2)

local function untraced(fn, ...)
  tt.trace.off(); fn(...); tt.trace.on()
end
local function fmt_row(t, f)
  local out = {}
  for i, x in ipairs(t) do out[i] = string.format(f or "%.4f", x) end
  return "[" .. table.concat(out, ", ") .. "]"
end

tt.trace.section("1. The spread of q.k grows like sqrt(Dh)")
print("Draw random q and k whose entries have mean 0 and variance 1. Each product")
print("q_r*k_r then has variance 1, and q.k adds Dh of them: variance Dh, std sqrt(Dh).")
local S = 4096
print(string.format("Measured over %d random pairs: drawn once at the largest width, each width", S))
print("uses their first Dh entries (the trace shows the first width).")
print("A std measured from n samples is itself uncertain: its standard error is")
print("about std/sqrt(2(n-1)) for Gaussian data. q.k is not quite Gaussian at small")
print("Dh (its excess kurtosis is 6/Dh), which widens the error to")
print("std/2 * sqrt(2/(n-1) + (6/Dh)/n). We check that sqrt(Dh) lies within 4 of")
print("these standard errors of the measured std:")
local widths = {4, 8, 16, 32, 64, 128, 256}
local measured = {}
print("     Dh   std(q.k)   sqrt(Dh)   std. error   (std - sqrt(Dh)) / error")
local q_all = tt.randn(S, widths[#widths])
local k_all = tt.randn(S, widths[#widths])
for i, Dh in ipairs(widths) do
  if i == 2 then tt.trace.off() end
  local q = q_all:narrow(2, 1, Dh)
  local k = k_all:narrow(2, 1, Dh)
  local dots = (q * k):sum(-1)                 -- S dot products
  local sd = dots:std():item()
  local se = math.sqrt(Dh) / 2 * math.sqrt(2 / (S - 1) + 6 / Dh / S)
  local z = (sd - math.sqrt(Dh)) / se
  measured[i] = sd
  print(string.format("  %5d   %8.3f   %8.3f   %10.3f   %+6.2f", Dh, sd, math.sqrt(Dh), se, z))
  if math.abs(z) > 4 then
    error(string.format("std of q.k at Dh=%d is %.3f, %.1f standard errors from sqrt(Dh)=%.3f",
          Dh, sd, z, math.sqrt(Dh)))
  end
end
tt.trace.on()
print("Checked: at every width the measured std is within 4 standard errors of")
print(string.format("sqrt(Dh). From Dh=4 to 256 the spread grew %.2fx (sqrt(256/4) = 8).",
      measured[#widths] / measured[1]))
print("Dividing by sqrt(Dh) therefore brings the std of the scores to about 1 at")
print("every width.")

tt.trace.section("2. Big scores make softmax nearly one-hot")
print("The same pattern of scores at three scales:")
local logits = tt.tensor{{0.2, 0.5, 0.8}, {2, 5, 8}, {20, 50, 80}}:label("logits")
local P = logits:softmax(-1):label("weights")
local names = {"[0.2, 0.5, 0.8]", "[2, 5, 8]", "[20, 50, 80]"}
untraced(function()
  for i, row in ipairs(P:totable()) do
    print(string.format("  softmax(%-15s) = %s", names[i], fmt_row(row, "%.4g")))
  end
end)
tt.bars(P, "images/02_softmax_sharpness.png", {
  title = "softmax of the same scores at three scales",
  xlabels = {"key 1", "key 2", "key 3"}, labels = names })
print("Figure: " .. tt.figure_path("images/02_softmax_sharpness.png"))
local top = P:max(-1):totable()
print(string.format("Largest weight: %.4f (smooth), %.4f (sharp), %.10f (saturated).", top[1], top[2], top[3]))
if not (top[1] < 0.5 and top[2] > 0.95 and top[3] > 0.999999) then
  error("expected a smooth, a sharp and a saturated softmax")
end

tt.trace.section("3. A saturated softmax passes back almost no gradient")
print("How much do the weights move when a score moves? That is the Jacobian of")
print("softmax, J[i][j] = d p_i / d s_j = p_i*(1[i=j] - p_j), or diag(p) - p p^T.")
-- J for every row of P at once: [3 rows, 3, 3].
local function softmax_jacobian(p)
  local n = p:size(-1)
  local diag = tt.eye(n) * p:unsqueeze(-1)                 -- diag(p) per row
  local outer = p:unsqueeze(-1):matmul(p:unsqueeze(-2))    -- p p^T per row
  return diag - outer
end
local J = softmax_jacobian(P):label("jacobian")
local frob = (J * J):sum(-1):sum(-1):sqrt():label("frobenius")
local maxabs = J:abs():reshape(3, 9):max(-1)
local f, m = frob:totable(), maxabs:totable()
print("  scores             ||J|| (Frobenius)   largest |J| entry")
for i = 1, 3 do print(string.format("  %-17s  %14.3g   %14.3g", names[i], f[i], m[i])) end
if not (f[1] > f[2] and f[2] > f[3]) then error("the Jacobian should shrink as the softmax saturates") end
if m[3] >= 1e-13 then error("the saturated Jacobian should be below 1e-13") end
-- ||J|| at [20, 50, 80] exactly, in float64 (Lua numbers): J's entries are
-- p_i (1[i=j] - p_j), and p_3 (1 - p_3) is written p_3 (p_1 + p_2), with no
-- difference of two numbers near 1
local exact_frob
do
  local e = {math.exp(20 - 80), math.exp(50 - 80), 1}
  local z = e[1] + e[2] + e[3]
  local p = {e[1] / z, e[2] / z, e[3] / z}
  local sq = 0
  for i = 1, 3 do
    for j = 1, 3 do
      local entry = i ~= j and -p[i] * p[j] or p[i] * (i == 3 and p[1] + p[2] or 1 - p[i])
      sq = sq + entry * entry
    end
  end
  exact_frob = math.sqrt(sq)
end
print(string.format("(These are float32's numbers. Exactly, ||J|| at [20, 50, 80] is %.3g: there", exact_frob))
print("float32 rounds p_3 to 1, so its diagonal entry p_3(1 - p_3), 9.4e-14, becomes 0.)")
if not (math.abs(exact_frob - 2 * math.exp(-30)) < 1e-3 * exact_frob and f[3] < exact_frob) then
  error("the exact ||J|| at [20, 50, 80] should be about 2 e^-30, above float32's")
end
print("The gradient that reaches the scores (and from there W_Q and W_K) is J times")
print("the gradient arriving at the weights. At [20, 50, 80] no entry of J reaches")
print("1e-13: almost nothing gets through, and learning stalls.")

print("Is the formula right? Nudge each score by +-h and watch the weights move:")
local h = 1e-2
local s0 = logits[1]                                       -- [0.2, 0.5, 0.8]
local nudge = tt.eye(3) * h                                -- row j nudges score j
local up = (s0 + nudge):softmax(-1)
local down = (s0 - nudge):softmax(-1)
local J_numeric = ((up - down) / (2 * h)):label("jacobian_numeric")  -- row j = d p / d s_j
tt.assert_close(J_numeric, J[1]:mT(), 0, 1e-3, "finite differences match diag(p) - p p^T")
print("  the central differences match diag(p) - p p^T to 1e-3: checked.")

tt.trace.section("4. Real widths: raw vs scaled scores at Dh = 256")
print("32 random queries against 8 random keys, Dh = 256, entries of variance 1.")
local Dh = 256
local q = tt.randn(32, Dh):named("Nq", "Dh")
local k = tt.randn(8, Dh):named("Nk", "Dh")
local raw = q:matmul(k:mT()):label("raw_scores")
local scaled = (raw / math.sqrt(Dh)):label("scaled_scores")
local P_raw = raw:softmax("Nk"):label("raw_weights")
local P_scaled = scaled:softmax("Nk"):label("scaled_weights")
local both = tt.stack({P_raw, P_scaled}, 1)               -- [2, 32, 8]: raw, scaled
local top = both:max(-1)                                   -- [2, 32]: each query's largest weight
local top_mean = top:mean(-1):totable()
local near_one_hot = top:gt(0.9):float():sum(-1):totable()  -- queries with a weight above 0.9
-- J's last two dims are both keys (weight i, score j): one name cannot serve
-- both, so they go unnamed here.
local J2 = softmax_jacobian(both:named(nil, "Nq", nil))    -- [2, 32, 8, 8]
local J_mean = (J2 * J2):sum(-1):sum(-1):sqrt():mean(-1):totable()
local top_raw, top_scaled, g_raw, g_scaled = top_mean[1], top_mean[2], J_mean[1], J_mean[2]
untraced(function()
  print(string.format("  std of the scores:       raw %6.2f   scaled %6.2f", raw:std():item(), scaled:std():item()))
  print(string.format("  mean largest weight:     raw %6.3f   scaled %6.3f", top_raw, top_scaled))
  print(string.format("  largest weight > 0.9:    raw %3d/32   scaled %3d/32", near_one_hot[1], near_one_hot[2]))
  print(string.format("  mean ||J|| per query:    raw %6.3f   scaled %6.3f", g_raw, g_scaled))
end)
if not (near_one_hot[1] > 16 and near_one_hot[2] < near_one_hot[1] and top_scaled < top_raw) then
  error("raw scores at Dh=256 should give nearly one-hot weights, scaled ones should not")
end
if not (g_scaled > 2 * g_raw) then error("scaling should give a clearly larger Jacobian") end
print("Unscaled, most queries put over 90% of their weight on one key and the")
print(string.format("Jacobian is small; scaled, the weights stay spread and ||J|| is %.1fx larger.",
      g_scaled / g_raw))
tt.heatmap(tt.stack({P_raw:narrow(1, 1, 8), P_scaled:narrow(1, 1, 8)}, 1),
  "images/02_scaled_vs_raw.png", {
  title = "Weights of 8 queries over 8 keys at Dh = 256",
  panel_titles = {"softmax(q·k): raw", "softmax(q·k / √Dh): scaled"},
  xtitle = "Key", ytitle = "Query", cmap = "viridis", vmin = 0, vmax = 1, annotate = false })
print("Figure: " .. tt.figure_path("images/02_scaled_vs_raw.png") .. " (first 8 queries, raw vs scaled)")

tt.trace.section("5. Scaling never changes which key wins")
print("Dividing every score of a row by the same positive number keeps their order,")
print("so each query's top key is the same; only how sharply it wins changes.")
local best_raw = raw:argmax(-1)
local best_scaled = scaled:argmax(-1)
tt.assert_close(best_raw, best_scaled, 0, 0, "argmax of raw and scaled scores agree for every query")
tt.assert_close(P_raw:argmax(-1), P_scaled:argmax(-1), 0, 0, "and so do the argmax of the weights")
print("Checked for all 32 queries.")
