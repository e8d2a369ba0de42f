-- 13_gradients.lua — backprop through one attention head, op by op.
--
-- Training moves Q, K and V (and the weights that make them) against the
-- gradient of a loss. This lesson runs one causal head forward, calls
-- backward(), and then rebuilds every gradient by hand with the chain rule:
-- through the value sum, through softmax (first with its full Jacobian
-- diag(p) - p p^T, then with the cheap form p * (g - <g,p>)), through the
-- scaled dot product. It checks them against backward() and against finite
-- differences, shows that masked scores get exactly zero gradient, measures
-- lesson 02's claim about scaling, and checks tt.sdpa's fused backward.
--
-- Run it:   ./tensortrace lessons/13_gradients.lua                  (narrative + every shape)
--           ./tensortrace --trace=values lessons/13_gradients.lua   (also the numbers and gradient norms)
--           ./tensortrace -q lessons/13_gradients.lua               (narrative only)
-- Figures:  images/13_scores_grad.png  images/13_grad_vs_dh.png

tt.manual_seed(13)
local NEG_INF = -math.huge

local tokens = {"The", "cat", "sat", "on", "the", "mat"}
local N, Dh = #tokens, 8
local scale = 1 / math.sqrt(Dh)
local hidden = ~tt.causal_mask(N)                -- true = the future, masked_fill's polarity

local function untraced(fn, ...)
  tt.trace.off(); fn(...); tt.trace.on()
end
local function fmt_row(t, f)
  local out = {}
  -- a zero prints as 0, never -0 (p * (g - <g,p>) gives -0 where p = 0 and g < <g,p>)
  for i, x in ipairs(t) do out[i] = string.format(f or "%8.4f", x == 0 and 0.0 or x) end
  return "[" .. table.concat(out, ", ") .. "]"
end
local function norm(x) return (x * x):sum():sqrt():item() end

tt.trace.section("1. One head, a loss, and backward()")
print("Q, K and V are random leaves that require grad (lesson 01 shows where")
print("they come from). The loss is a stand-in for a real one: the mean squared")
print("error between the head's output and a random target.")
local Q = tt.randn(N, Dh):named("Nq", "Dh"):requires_grad_():label("Q")
local K = tt.randn(N, Dh):named("Nk", "Dh"):requires_grad_():label("K")
local V = tt.randn(N, Dh):named("Nk", "Dh"):requires_grad_():label("V")
local target = tt.randn(N, Dh):named("Nq", "Dh"):label("target")

-- scores -> mask -> softmax -> weights @ V -> loss. Returns the loss and the
-- tensors on the way, for the hand computation below.
local function loss_from_scores(s, v)
  local w = s:masked_fill(hidden, NEG_INF):softmax("Nk"):label("weights")
  local out = w:matmul(v):label("out")
  return ((out - target) ^ 2):mean():label("loss"), w, out
end
local function head_loss(q, k, v)
  return loss_from_scores((q:matmul(k:mT()) * scale):label("scores"), v)
end

local loss, weights, out = head_loss(Q, K, V)
untraced(function() print(string.format("loss = %.4f", loss:item())) end)
print("backward() walks the graph from the loss back to the leaves. Each row")
print("under it is one op of the forward pass, differentiated:")
loss:backward()
print("Q.grad, K.grad and V.grad now hold d loss / d Q, d loss / d K, d loss / d V.")

tt.trace.section("2. The chain rule by hand, one op at a time")
print("Walk the forward pass backwards. Each step turns the gradient at an op's")
print("output into the gradient at its inputs. The hand computation reads the")
print("forward pass's tensors as plain values (detach), so it builds no graph.")
local P = weights:detach():label("p")
local O = out:detach()
print("loss = mean((out - target)^2) over N*Dh numbers, so the gradient at the")
print("output is g_out = 2 * (out - target) / (N*Dh).")
local g_out = (2 * (O - target) / (N * Dh)):label("g_out")
print("out = p @ V (p: the weights), so d loss / d V = p^T @ g_out, which must equal")
print("V.grad, and the gradient at the weights is g_p = g_out @ V^T.")
local g_V = P:mT():matmul(g_out):label("g_V")
tt.assert_close(g_V, V.grad, 1e-5, 1e-7, "p^T @ g_out == V.grad")
print("Checked: p^T @ g_out equals V.grad.")
local g_p = g_out:matmul(V:detach():mT()):label("g_p")

print("Softmax is where attention's gradient is interesting. To compare with")
print("backward(), run the graph again from the scores, made a leaf of their own:")
local S = (Q:matmul(K:mT()) * scale):detach():requires_grad_():label("scores")
local loss_s = loss_from_scores(S, V:detach())
loss_s:backward()
local i = 4
print(string.format("Take query %d (%q): it sees keys 1..%d. Its weights p:", i, tokens[i], i))
local p = P[i]:label("p_row")
untraced(function() print("  p   = " .. fmt_row(p:totable())) end)
print("Each weight depends on every score of its row: dp_a / ds_b = p_a*(1[a=b] - p_b).")
print("As a matrix, the Jacobian J = diag(p) - p p^T:")
local J = (tt.eye(N) * p:unsqueeze(-1) - p:unsqueeze(-1):matmul(p:unsqueeze(-2))):label("J")
untraced(function()
  for a, row in ipairs(J:totable()) do print(string.format("  %-4s %s", tokens[a], fmt_row(row))) end
end)
tt.assert_close(J, J:mT(), 0, 0, "J is symmetric")
print("J is symmetric (checked), so the gradient at the row's scores is J @ g_p[i]:")
local g_row_J = J:matmul(g_p[i]):label("g_scores_row (Jacobian)")
tt.assert_close(g_row_J, S.grad[i], 1e-5, 1e-7, "J @ g_p[i] == scores.grad[i]")
print("The cheap form never builds J: with g = g_p[i],")
print("J @ g = p * g - p * <p,g> = p * (g - <g,p>).")
local g = g_p[i]
local g_row_cheap = (p * (g - (g * p):sum())):label("g_scores_row (cheap)")
tt.assert_close(g_row_cheap, S.grad[i], 1e-5, 1e-7, "p * (g - <g,p>) == scores.grad[i]")
untraced(function()
  print("  J @ g           = " .. fmt_row(g_row_J:totable()))
  print("  p * (g - <g,p>) = " .. fmt_row(g_row_cheap:totable()))
  print("  backward()      = " .. fmt_row(S.grad[i]:totable()))
end)
print("Checked: both equal backward()'s row. J has N*N entries for each of the N")
print("rows; the cheap form needs four operations per score. Applied to all rows at")
print("once it gives the whole of d loss / d scores (checked against backward()).")
local g_S = (P * (g_p - (g_p * P):sum("Nk", true))):label("g_scores")
tt.assert_close(g_S, S.grad, 1e-5, 1e-7, "p * (g - <g,p>) for every row == scores.grad")

print("scores = Q @ K^T * scale, so d loss / d Q = g_scores @ K * scale and")
print("d loss / d K = g_scores^T @ Q * scale:")
local g_Q = (g_S:matmul(K:detach()) * scale):label("g_Q")
local g_K = (g_S:mT():matmul(Q:detach()) * scale):label("g_K")
tt.assert_close(g_Q, Q.grad, 1e-5, 1e-7, "g_scores @ K * scale == Q.grad")
tt.assert_close(g_K, K.grad, 1e-5, 1e-7, "g_scores^T @ Q * scale == K.grad")
print("Checked: the hand-made gradients of Q, K and V equal backward()'s.")

tt.trace.section("3. tt.gradcheck: the gradients against finite differences")
print("backward() and the hand computation could share a mistake. Finite")
print("differences cannot: nudge one element of Q, K or V by +-eps, run the head")
print("again, and divide the change in the loss by 2*eps. tt.gradcheck does this")
print("for every element and compares with backward():")
local ok = tt.gradcheck(function(q, k, v) return (head_loss(q, k, v)) end, {Q, K, V})
if ok ~= true then error("gradcheck should return true") end
print(string.format("  tt.gradcheck(head_loss, {Q, K, V}) -> %s (%d elements, each moved both ways)",
      tostring(ok), 3 * N * Dh))

tt.trace.section("4. Masked scores get exactly zero gradient")
print("masked_fill's backward passes no gradient where it filled: a hidden score")
print("had no effect on the loss, so its gradient is exactly 0, not just small.")
local masked_cells = N * (N - 1) // 2
local nonzero_hidden = (S.grad:ne(0) & hidden):float():sum():item()
if nonzero_hidden ~= 0 then error(nonzero_hidden .. " masked scores got a nonzero gradient") end
print(string.format("Checked: all %d masked cells of d loss / d scores are exactly 0.", masked_cells))
print("The gradient arriving at the weights, g_out @ V^T, is not zero there:")
local g_p_hidden = (g_p:ne(0) & hidden):float():sum():item()
if g_p_hidden ~= masked_cells then error("g_p should be nonzero at every masked cell") end
print(string.format("all %d masked cells of g_p are nonzero. The softmax backward multiplies", masked_cells))
print("them by p = 0 (the hand-made g_scores of section 2 is exactly 0 there too),")
print("and masked_fill's backward zeroes them again.")
local g_S_hidden = (g_S:ne(0) & hidden):float():sum():item()
if g_S_hidden ~= 0 then error("p * (g - <g,p>) should be exactly 0 where p = 0") end
print("One visible cell is exactly 0 as well: the first query sees only itself, so")
print("its weight is 1 whatever its score, and p * (g - <g,p>) = 1 * (g - g) = 0.")
untraced(function()
  if S.grad[1][1]:item() ~= 0 then error("the first query's gradient should be exactly 0") end
end)
print("And every row of d loss / d scores sums to 0 (to 1e-7): adding the same")
print("number to a whole row of scores leaves softmax unchanged, so that direction")
print("has no slope.")
tt.assert_close(S.grad:sum(-1), tt.zeros(N), 0, 1e-7, "each row of scores.grad sums to 0")
tt.heatmap(S.grad, "images/13_scores_grad.png", {
  title = "d loss / d scores (causal head)", xlabels = tokens, ylabels = tokens, row_sums = true,
  xtitle = "Key", ytitle = "Query", mask = {["masked: exactly 0"] = hidden},
  cmap = "diverging", decimals = 3 })
print("Figure: " .. tt.figure_path("images/13_scores_grad.png"))

tt.trace.section("5. Lesson 02's claim, measured: unscaled scores starve the gradient")
print("As in lesson 02, random queries against 8 random keys (256 queries here),")
print("entries of variance 1. The same random gradient G arrives at the weights")
print("(the loss is sum(softmax(s) * G)). How much of it reaches the scores s, for")
print("s = q.k and for s = q.k / sqrt(Dh)? We count a query as starved when its")
print("row of d loss / d s has norm below 1e-3.")
local M, Nk, STARVED = 256, 8, 1e-3
local G = tt.randn(M, Nk):label("G")
local function grad_at_scores(s)
  local leaf = s:detach():requires_grad_():label("s")
  local l = (leaf:softmax(-1) * G):sum():label("loss")
  l:backward()
  return leaf.grad
end
-- The norm of the whole gradient, and how many query rows are starved
-- (reading numbers out, untraced).
local function measure(grad)
  tt.trace.off()
  local rows = (grad * grad):sum(-1):sqrt()
  local total, starved = norm(grad), rows:lt(STARVED):float():sum():item()
  tt.trace.on()
  return total, starved
end
local widths, raw_norms, scaled_norms, raw_starved, scaled_starved = {4, 16, 64, 256, 1024}, {}, {}, {}, {}
print("Five widths; the trace shows the first.")
for n, d in ipairs(widths) do
  if n == 2 then tt.trace.off() end
  local q = tt.randn(M, d)
  local k = tt.randn(Nk, d)
  local raw = q:matmul(k:mT()):label("raw scores")
  raw_norms[n], raw_starved[n] = measure(grad_at_scores(raw))
  scaled_norms[n], scaled_starved[n] = measure(grad_at_scores(raw / math.sqrt(d)))
  untraced(function()
    if n == 1 then print("     Dh   std(q.k)   ||grad|| unscaled  scaled   starved unscaled  scaled") end
    print(string.format("  %5d   %8.2f   %17.3f  %6.3f   %16s  %6s", d, raw:std():item(),
          raw_norms[n], scaled_norms[n], string.format("%d/%d", raw_starved[n], M), string.format("%d/%d", scaled_starved[n], M)))
  end)
end
tt.trace.on()
for n = 2, #widths do
  if not (raw_norms[n] < raw_norms[n - 1] and raw_starved[n] >= raw_starved[n - 1]) then
    error("unscaled, the gradient should shrink and starve more queries as Dh grows")
  end
  if not (raw_norms[n] < scaled_norms[n]) then
    error("from Dh=16 on, the scaled scores should pass more gradient")
  end
end
local lo, hi = math.min(table.unpack(scaled_norms)), math.max(table.unpack(scaled_norms))
if hi > 1.25 * lo or math.max(table.unpack(scaled_starved)) ~= 0 then
  error("scaled, the gradient should not depend on Dh and no query should starve")
end
if raw_starved[4] < M // 4 then error("at Dh=256 at least a quarter of the unscaled queries should starve") end
print("Checked: unscaled, the gradient shrinks as Dh grows and more and more")
print(string.format("queries are starved (%d of %d at Dh = 256, %d at 1024). Scaled, no query", raw_starved[4], M, raw_starved[5]))
print(string.format("starves and the largest norm is %.3f times the smallest.", hi / lo))
local function share(counts)
  local r = {}
  for i, c in ipairs(counts) do r[i] = c / M end
  return r
end
tt.plot({ { name = "unscaled q·k", x = widths, y = share(raw_starved) },
          { name = "scaled q·k / √Dh", x = widths, y = share(scaled_starved) } },
  "images/13_grad_vs_dh.png", {
  title = "Share of the 256 queries starved (their row of d loss / d s below 1e-3)",
  xtitle = "head size Dh", ytitle = "starved queries (share of 256)", xlog = true })
print("Figure: " .. tt.figure_path("images/13_grad_vs_dh.png") .. ": the share of starved queries against Dh, the")
print("count the check is about. The total norm in the table flattens from 256 to")
print("1024 because the queries not yet starved carry it: each of those still passes")
print("a gradient of ordinary size, and fewer of them are left.")

print("The saturated case of lesson 02: one query whose scores are [0.2, 0.5, 0.8],")
print("[2, 5, 8] or [20, 50, 80], and a target that says key 1 is right:")
print("loss = sum((softmax(s) - [1, 0, 0])^2).")
local rows = tt.tensor{{0.2, 0.5, 0.8}, {2, 5, 8}, {20, 50, 80}}:requires_grad_():label("s")
local want = tt.tensor{{1, 0, 0}, {1, 0, 0}, {1, 0, 0}}
local sat_loss = ((rows:softmax(-1) - want) ^ 2):sum():label("loss")
sat_loss:backward()
local names = {"[0.2, 0.5, 0.8]", "[2, 5, 8]", "[20, 50, 80]"}
local gsat = rows.grad:totable()
untraced(function()
  local probs = rows:detach():softmax(-1):totable()
  for r = 1, 3 do
    print(string.format("  %-15s  p = %s", names[r], fmt_row(probs[r], "%.3g")))
    print(string.format("  %-15s  d loss / d s = %s", "", fmt_row(gsat[r], "%.3g")))
  end
end)
-- The exact gradient at [20, 50, 80], in float64 (Lua numbers): ds = p * (g - <g,p>)
-- with g = 2 (p - target); key 3's entry from the row's sum, which is exactly 0
-- (softmax ignores a shift of the whole row), so no difference of two numbers near 2.
local sat = gsat[3]
local ex = {}
do
  local e = {math.exp(20 - 80), math.exp(50 - 80), 1}
  local z = e[1] + e[2] + e[3]
  local p = {e[1] / z, e[2] / z, e[3] / z}
  local g = {2 * (p[1] - 1), 2 * p[2], 2 * p[3]}
  local dot = g[1] * p[1] + g[2] * p[2] + g[3] * p[3]
  ex[1], ex[2] = p[1] * (g[1] - dot), p[2] * (g[2] - dot)
  ex[3] = -(ex[1] + ex[2])
end
local F32_SPACING_AT_2 = 2 ^ -22      -- the gap between float32 numbers in [2, 4)
if not (math.abs(sat[1] - ex[1]) <= 1e-3 * math.abs(ex[1]) and math.abs(sat[2] - ex[2]) <= 1e-3 * math.abs(ex[2])
        and math.abs(ex[3]) < 1e-12 and math.abs(sat[3]) <= 2 * F32_SPACING_AT_2) then
  error("keys 1 and 2 should match the exact gradient; key 3's should be lost to float32 rounding")
end
print(string.format("Exactly (float64) it is [%.3g, %.3g, %.3g]: keys 1 and 2 as", ex[1], ex[2], ex[3]))
print("measured, and key 3's the opposite of key 2's (a row of this gradient sums to")
print(string.format("0: softmax ignores a shift of the whole row). float32 gives %.3g there by", sat[3]))
print("rounding: p_3 = 1 - 9.4e-14 rounds to 1, and g_3 - <g,p> is the difference of")
print("two numbers near 2, which float32 spaces about 1e-7 apart, so 1.9e-13 is lost.")
print("Keys 1 and 2 survive because p_1 = e^-60 and p_2 = e^-30 are tiny, not zero.")
print("Key 3 takes all the weight while the target wants key 1, yet almost no")
print("gradient reaches the scores to fix it: learning stalls.")

tt.trace.section("6. The fused tt.sdpa backward equals the explicit one")
print("tt.sdpa runs scale, mask, softmax and the value sum in one kernel, and its")
print("backward recomputes the weights tile by tile instead of storing them.")
print("Two heads, 8 tokens, Dh = 16, causal; the same leaves go through both:")
local H, T, D = 2, 8, 16
local q = tt.randn(H, T, D):requires_grad_():label("q")
local k = tt.randn(H, T, D):requires_grad_():label("k")
local v = tt.randn(H, T, D):requires_grad_():label("v")
local Gout = tt.randn(H, T, D):label("G")
local fused_loss = (tt.sdpa(q, k, v, {causal = true}) * Gout):sum():label("loss")
fused_loss:backward()
local fused = {q.grad, k.grad, v.grad}
q.grad, k.grad, v.grad = nil, nil, nil
local s = (q:matmul(k:mT()) / math.sqrt(D)):masked_fill(~tt.causal_mask(T), NEG_INF)
local explicit_loss = (s:softmax(-1):matmul(v) * Gout):sum():label("loss")
explicit_loss:backward()
tt.assert_close(fused[1], q.grad, 1e-4, 1e-5, "sdpa's q.grad == the explicit formula's")
tt.assert_close(fused[2], k.grad, 1e-4, 1e-5, "sdpa's k.grad == the explicit formula's")
tt.assert_close(fused[3], v.grad, 1e-4, 1e-5, "sdpa's v.grad == the explicit formula's")
local worst = 0
untraced(function()
  for n, x in ipairs{q, k, v} do worst = math.max(worst, (fused[n] - x.grad):abs():max():item()) end
end)
if worst >= 1e-5 then error("sdpa's gradients differ from the explicit ones by " .. worst) end
print("Checked: the gradients of q, k and v agree to 1e-4 relative, 1e-5 absolute. The fused")
print("backward is one row in the trace; the explicit one is a row per op.")
