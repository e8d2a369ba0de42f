-- 03_causal_mask.lua — the causal mask: hide the future BEFORE softmax.
--
-- A language model predicts the next token, so token i may look at tokens
-- 1..i and never at the ones after it. This lesson builds that rule into
-- attention: scores -> mask -> softmax -> weights, checks that the result is
-- a proper set of weights, and shows the tempting wrong way (softmax first,
-- zero out the future afterwards) and why it breaks.
--
-- Run it:   ./tensortrace lessons/03_causal_mask.lua              (narrative + every shape)
--           ./tensortrace --trace=values lessons/03_causal_mask.lua   (also the numbers)
--           ./tensortrace -q lessons/03_causal_mask.lua           (narrative only)
-- Figures:  images/03_scores.png  03_masked_scores.png  03_weights.png  03_wrong_way.png

tt.manual_seed(3)
local NEG_INF = -math.huge

local tokens = {"The", "cat", "sat", "down"}
local B, N, Dh = 2, #tokens, 8

-- Printing helpers. They pause the trace: reading numbers out of a tensor is
-- not part of the math, and the trace should show only the math.
local function untraced(fn, ...)
  tt.trace.off(); fn(...); tt.trace.on()
end

-- A query-by-key table of ✓ (may look) and × (hidden) from a bool matrix.
local function visibility_table(allowed, names)
  untraced(function()
    local line = "          "
    for _, k in ipairs(names) do line = line .. string.format("%-7s", k) end
    print((line:gsub("%s+$", "")))
    for i, row in ipairs(allowed:totable()) do
      line = string.format("  %-8s", names[i])
      for _, ok in ipairs(row) do line = line .. (ok and "✓" or "×") .. "      " end
      print((line:gsub("%s+$", "")))
    end
  end)
end

-- One line per row of a 2-D tensor, labelled with the query token.
local function print_rows(x, names)
  untraced(function()
    for i, row in ipairs(x:totable()) do
      local cells = {}
      for j, w in ipairs(row) do cells[j] = string.format("%7.4f", w) end
      print(string.format("  %-5s [%s]", names[i], table.concat(cells, ", ")))
    end
  end)
end

tt.trace.section("1. The rule: each token sees itself and the past")
print("Rows are queries (the token that is looking), columns are keys (what it")
print("may look at). Token i may read keys 1..i: a lower triangle.")
local allowed = tt.causal_mask(N):label("allowed")
visibility_table(allowed, tokens)
-- The same pattern built by hand, as the second source article does (README.md, Sources): tril of ones.
local by_hand = tt.ones(N, N):tril():bool()
tt.assert_close(allowed:float(), by_hand:float(), 0, 0, "causal_mask(N) is tril(ones(N,N))")
print("(tt.causal_mask(4) equals tril(ones(4,4)) as a bool matrix: checked.)")

tt.trace.section("2. Scores: every query against every key")
print("To keep the focus on masking, queries, keys and values are random here")
print("(lesson 01 shows how they are projected from the tokens).")
print("The same tokens play two roles, so their dims get two names: Nq (as")
print("queries, the rows) and Nk (as keys, the columns).")
local q = tt.randn(B, N, Dh):named("B", "Nq", "Dh"):label("q")
local k = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("k")
local v = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("v")
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
print("scores[b][i][j] = q_i . k_j / sqrt(Dh): one row per query, one column per key.")
print("Right now every query still sees every key, the future included.")
tt.heatmap(scores[1], "images/03_scores.png", {
  title = "Scores q.k/sqrt(Dh) (no mask yet)", xlabels = tokens, ylabels = tokens,
  xtitle = "Key", ytitle = "Query",
  cmap = "diverging", decimals = 2 })

tt.trace.section("3. The right way: mask the scores, then softmax")
print("Hidden cells get -inf. Softmax turns exp(-inf) into exactly 0, so the")
print("future takes no share and the visible keys split the whole weight of 1.")
local future = ~allowed                       -- true = hidden, masked_fill's polarity
local masked = scores:masked_fill(future, NEG_INF):label("masked_scores")
print("Masked scores of the first sentence:")
print_rows(masked[1], tokens)
print("Softmax runs along each row (over the keys, dim Nk):")
local weights = masked:softmax("Nk"):label("weights")
tt.heatmap(masked[1], "images/03_masked_scores.png", {
  title = "Masked scores (future = -inf)", xlabels = tokens, ylabels = tokens,
  xtitle = "Key", ytitle = "Query", mask = {["masked: -inf"] = future},
  cmap = "diverging", decimals = 2 })
tt.heatmap(weights[1], "images/03_weights.png", {
  title = "Causal attention weights (rows sum to 1)", xlabels = tokens, ylabels = tokens,
  xtitle = "Key", ytitle = "Query", mask = {["masked: exactly 0"] = future},
  row_sums = true, cmap = "viridis", decimals = 2, vmin = 0, vmax = 1 })

print("Weights of the first sentence (row = query, column = key):")
print_rows(weights[1], tokens)

-- Claim 1: each row is a complete distribution over the visible keys.
tt.assert_close(weights:sum(-1), tt.ones(B, N), 1e-6, 1e-6, "every row of weights sums to 1")
-- Claim 2: the future gets exactly zero, not just something small.
local future_total = (weights * future:float()):abs():sum():item()
if future_total ~= 0 then error("future weights should be exactly 0, got " .. future_total) end
tt.assert_close(weights:triu(1), tt.zeros(B, N, N), 0, 0, "upper triangle is exactly 0")
print("Checked: every row sums to 1, and every weight above the diagonal is exactly 0.")
print("The first token can only look at itself, so its row is [1, 0, 0, 0].")
tt.assert_close(weights[1][1], {1, 0, 0, 0}, 0, 0, "first query attends only to itself")

tt.trace.section("4. The wrong way: softmax first, zero the future afterwards")
print("The article's example: a row of weights [0.2, 0.3, 0.5] from which the")
print("third key must be hidden. Multiplying it by the 0/1 mask [1, 1, 0] leaves:")
local row = tt.tensor{0.2, 0.3, 0.5}
local cut = row * tt.tensor{1, 1, 0}
local cut_sum = cut:sum()
untraced(function()
  local c = cut:totable()
  print(string.format("  [%.1f, %.1f, %.1f]   sum = %.1f", c[1], c[2], c[3], cut_sum:item()))
end)
tt.assert_close(cut_sum, 0.5, 1e-6, 1e-6, "[0.2,0.3,0.5] * [1,1,0] sums to 0.5")
print("Half of the weight has vanished: the row is no longer a distribution.")

print("The same mistake on our scores:")
local wrong = (scores:softmax(-1) * allowed:float()):label("wrong_weights")
local wrong_sums = wrong:sum(-1):label("wrong_row_sums")
print("Weights of the first sentence, the wrong way, and their row sums:")
untraced(function()
  local rows, sums = wrong[1]:totable(), wrong_sums[1]:totable()
  for i, r in ipairs(rows) do
    print(string.format("  %-5s [%.4f, %.4f, %.4f, %.4f]   sum = %.4f", tokens[i],
      r[1], r[2], r[3], r[4], sums[i]))
  end
end)
-- Only the last row (which sees everything) keeps a sum of 1.
local short = wrong_sums:lt(1 - 1e-4):float():sum():item()
if short ~= B * (N - 1) then
  error("expected every row but the last to sum to less than 1, got " .. short .. " short rows")
end
print("Every row except the last sums to less than 1: checked.")
tt.heatmap(wrong[1], "images/03_wrong_way.png", {
  title = "WRONG: softmax, then x mask (rows sum < 1)", xlabels = tokens, ylabels = tokens,
  xtitle = "Key", ytitle = "Query", mask = {["zeroed after softmax"] = future},
  row_sums = true, cmap = "viridis", decimals = 2, vmin = 0, vmax = 1 })

print("Dividing each row by its sum repairs it and gives the right weights again,")
print("but that is a second normalisation pass; the -inf mask gets it in one.")
local repaired = wrong / wrong_sums:unsqueeze(-1)
tt.assert_close(repaired, weights, 1e-5, 1e-6, "renormalised wrong way equals masked softmax")

tt.trace.section("5. The same mask as an additive matrix")
print("Papers often write softmax(S + M) with M = 0 where a key is visible and")
print("-inf where it is hidden. That is masked_fill in another form.")
local M = tt.zeros(N, N):masked_fill(~allowed, NEG_INF):label("M")
local weights_add = (scores + M):softmax(-1):label("weights_additive")
tt.assert_close(weights_add, weights, 0, 0, "additive 0/-inf mask equals boolean masked_fill")
print("Checked: the two give identical weights, bit for bit.")
print("Mind the polarity: masked_fill's mask says what to HIDE (we passed ~allowed).")

tt.trace.section("6. Weights times values, and the fused kernel")
local out = weights:matmul(v):label("out")
print("Each output row mixes only the values of the visible tokens.")
-- tt.sdpa does scale, mask, softmax and the value sum in one kernel; its mask
-- option says what to KEEP (PyTorch's polarity), and causal = true builds it.
local fused = tt.sdpa(q, k, v, {causal = true}):label("sdpa_out")
tt.assert_close(fused, out, 1e-5, 1e-5, "tt.sdpa(causal=true) equals the step-by-step result")
print("tt.sdpa(q, k, v, {causal = true}) gives the same output: checked.")
print("Figures: " .. tt.figure_path("images/03_scores.png") .. ", 03_masked_scores.png, 03_weights.png, 03_wrong_way.png")
