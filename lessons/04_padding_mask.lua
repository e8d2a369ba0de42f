-- 04_padding_mask.lua — batches of different lengths: hide the padding.
--
-- Sentences in a batch have different lengths, so the short ones are filled
-- up with <pad> tokens. No real token should read a pad, so the pad KEYS (the
-- columns of the score matrix) are hidden. In a decoder the padding mask is
-- combined with the causal mask: hide = future OR pad. With left padding, a
-- query row with nothing left to see turns into NaN; we show it and fix it two ways.
--
-- Run it:   ./tensortrace lessons/04_padding_mask.lua         (narrative + shapes)
--           ./tensortrace -q lessons/04_padding_mask.lua      (narrative only)
-- Figures:  images/04_masked_scores_b1.png  04_masked_scores_b2.png
--           images/04_weights_b1.png  04_weights_b2.png  images/04_nan_weights_b2.png

tt.manual_seed(4)
local NEG_INF = -math.huge

local function untraced(fn, ...)
  tt.trace.off(); fn(...); tt.trace.on()
end

local sentences = {
  {"The", "cat", "sat", "on", "it"},
  {"Dogs", "bark", "loudly", "<pad>", "<pad>"},
}
local lengths = {5, 3}
local B, N, Dh = #sentences, #sentences[1], 8

-- ✓/× table of what each query of sentence b may read (hidden: bool [N,N], true = hidden).
local function visibility_table(hidden, words)
  untraced(function()
    local line = "          "
    for _, w in ipairs(words) do line = line .. string.format("%-8s", w) end
    print((line:gsub("%s+$", "")))
    for i, row in ipairs(hidden:totable()) do
      line = string.format("  %-8s", words[i])
      for _, h in ipairs(row) do line = line .. (h and "×" or "✓") .. "       " end
      print((line:gsub("%s+$", "")))
    end
  end)
end
local function print_rows(x, words)
  untraced(function()
    for i, row in ipairs(x:totable()) do
      local cells = {}
      for j, w in ipairs(row) do cells[j] = string.format("%7.4f", w) end
      print(string.format("  %-7s [%s]", words[i], table.concat(cells, ", ")))
    end
  end)
end
-- One figure per sentence b; kinds(b) names its masks ({name = bool
-- tensor}, true = hidden), each kind hatched its own way.
local function heatmaps(x, stem, what, hidden, cmap, kinds)
  for b = 1, B do
    tt.heatmap(x[b], string.format("images/04_%s_b%d.png", stem, b), {
      title = string.format("%s, sentence %d (length %d): hidden = %s", what, b, lengths[b], hidden),
      xlabels = sentences[b], ylabels = sentences[b], xtitle = "Key", ytitle = "Query",
      mask = kinds(b), cmap = cmap, decimals = 2 })
  end
end

tt.trace.section("1. Padding a batch to one length")
print("Sentence 1 has 5 tokens, sentence 2 only 3, so it gets 2 <pad> tokens.")
print("Which positions are padding? Compare each position with the length:")
local positions = tt.arange(N):view(1, N)                 -- 0 .. N-1
local len = tt.tensor(lengths):view(B, 1)
local is_pad = positions:ge(len):label("is_pad")          -- [B, N], true = <pad>
untraced(function()
  for b, row in ipairs(is_pad:totable()) do
    local marks = {}
    for j, p in ipairs(row) do marks[j] = p and "pad" or "real" end
    print(string.format("  sentence %d: %s", b, table.concat(marks, " ")))
  end
end)
tt.assert_close(is_pad:float(), {{0, 0, 0, 0, 0}, {0, 0, 0, 1, 1}}, 0, 0, "pad positions")

tt.trace.section("2. The padding mask hides key columns")
local q = tt.randn(B, N, Dh):named("B", "Nq", "Dh"):label("q")
local k = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("k")
local v = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("v")
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
print("A pad must not be READ by anyone: hide its column for every query.")
print("is_pad is [B, N]; as [B, 1, N] it broadcasts over the query rows.")
local pad_keys = is_pad:unsqueeze(2):label("pad_keys")    -- [B, 1, N]
local w_pad = scores:masked_fill(pad_keys, NEG_INF):softmax(-1):label("weights_pad")
print("Sentence 2 (× = hidden):")
visibility_table(pad_keys[2]:expand(N, N), sentences[2])
tt.assert_close(w_pad:sum(-1), tt.ones(B, N), 1e-6, 1e-6, "rows sum to 1")
local leak = (w_pad * pad_keys:float()):sum():item()
if leak ~= 0 then error("pad columns should get exactly 0 weight, got " .. leak) end
print("Checked: the pad columns get exactly 0 weight and every row still sums to 1.")
print("The pad rows themselves still produce output; it is ignored downstream.")

tt.trace.section("3. Padding and causal together")
print("A decoder needs both rules: hide a key if it is in the future OR a pad.")
local future = ~tt.causal_mask(N)                         -- [N, N], true = future
local hide = (future | pad_keys):label("hide")            -- [N,N] | [B,1,N] -> [B,N,N]
print("Sentence 2:")
visibility_table(hide[2], sentences[2])
local masked = scores:masked_fill(hide, NEG_INF):label("masked_scores")
local weights = masked:softmax("Nk"):label("weights")
local Z = weights:matmul(v):label("Z")
tt.assert_close(weights:sum(-1), tt.ones(B, N), 1e-6, 1e-6, "rows sum to 1")
local hidden_total = (weights * hide:float()):sum():item()
if hidden_total ~= 0 then error("hidden cells should get exactly 0, got " .. hidden_total) end
print("Checked: every hidden cell is exactly 0 and every row sums to 1.")
local Z_sdpa = tt.sdpa(q, k, v, {mask = ~hide})           -- sdpa's mask says what to KEEP
tt.assert_close(Z_sdpa, Z, 1e-5, 1e-5, "tt.sdpa with mask = ~hide equals the step-by-step output")
print("tt.sdpa(q, k, v, {mask = ~hide}) agrees (its mask marks what to KEEP).")
-- the two reasons to hide a cell, hatched differently in the figures
local function kinds(b)
  return {["causal (future key)"] = future, ["padding (<pad> key)"] = pad_keys[b]}
end
heatmaps(masked, "masked_scores", "Masked scores", "-inf", "diverging", kinds)
heatmaps(weights, "weights", "Weights", "exactly 0", "viridis", kinds)
print("Figures: " .. tt.figure_path("images/04_masked_scores_b1.png") .. ", _b2.png and 04_weights_b1.png, _b2.png")
print("(hatched: the hidden cells, the causal ones and the pad keys each their own way)")

tt.trace.section("4. Left padding: a query that sees nothing gives NaN")
print("A decoder that generates for a whole batch usually pads on the LEFT, so that")
print("every sentence ends in the last position, where the next token is read.")
print("Same tokens, same q, k, v, with sentence 2's pads moved to the front:")
-- Moves each sentence's pad positions (right padding) to the front, along dim 2.
local function to_left_padding(x)
  local rows = {}
  for b = 1, B do
    local n_pad = N - lengths[b]
    rows[b] = n_pad == 0 and x[b]
      or tt.cat({x[b]:narrow(1, lengths[b] + 1, n_pad), x[b]:narrow(1, 1, lengths[b])}, 1)
  end
  return tt.stack(rows, 1)
end
local sentences_left = {}
for b = 1, B do
  sentences_left[b] = {}
  local n_pad = N - lengths[b]
  for i = 1, N do sentences_left[b][i] = sentences[b][(i - n_pad - 1) % N + 1] end
end
local q_left = to_left_padding(q):named("B", "Nq", "Dh"):label("q_left")
local k_left = to_left_padding(k):named("B", "Nk", "Dh"):label("k_left")
local v_left = to_left_padding(v):named("B", "Nk", "Dh"):label("v_left")
local is_pad_left = positions:lt(N - len):label("is_pad_left")   -- the first N - length positions
local hide_left = (future | is_pad_left:unsqueeze(2)):label("hide_left")
visibility_table(hide_left[2], sentences_left[2])
print("Under the causal mask a query may only look back, and behind the two pads")
print("there are only pads: their rows have every key hidden. Softmax of a row of")
print("-inf is NaN (its max is -inf too, and -inf - (-inf) is NaN; written naively,")
print("exp/sum is 0/0).")
local scores_left = (q_left:matmul(k_left:mT()) / math.sqrt(Dh)):label("scores_left")
local w_nan = scores_left:masked_fill(hide_left, NEG_INF):softmax("Nk"):label("weights_nan")
print("Sentence 2 weights:")
print_rows(w_nan[2], sentences_left[2])
local nan_rows = w_nan:ne(w_nan):float():sum(-1)          -- NaN count per row
tt.assert_close(nan_rows, {{0, 0, 0, 0, 0}, {N, N, 0, 0, 0}}, 0, 0, "exactly the left pad query rows are NaN")
local Z_nan = w_nan:matmul(v_left):label("Z_nan")
local total = Z_nan:sum():item()
if total == total then error("a loss over Z should be NaN once a row is NaN") end
print("Checked: the two pad rows are all NaN, and only they. One NaN row is enough")
print(string.format("to poison a loss: the sum over the whole output is %s.", tostring(total)))
local pad_queries = is_pad_left:unsqueeze(3)                -- [B, N, 1], true = pad query
local Z_real = Z_nan:masked_fill(pad_queries, 0)            -- the real rows, pad rows set to 0
tt.assert_close(Z_real, to_left_padding(Z):masked_fill(pad_queries, 0), 1e-5, 1e-5,
  "real queries get the same output with left padding as with right padding")
print("The real tokens' rows are fine: they equal section 3's output, moved with")
print("their tokens (checked).")
tt.heatmap(w_nan[2], "images/04_nan_weights_b2.png", {
  title = "Left padding + causal: NaN rows, sentence 2",
  xlabels = sentences_left[2], ylabels = sentences_left[2], xtitle = "Key", ytitle = "Query",
  mask = {["causal (future key)"] = future, ["padding (<pad> key)"] = is_pad_left[2]},
  cmap = "viridis", decimals = 2 })

tt.trace.section("5. Two fixes")
print("Fix 1: tt.sdpa returns zeros for a row with no visible key (as PyTorch's")
print("SDPA and FlashAttention do) and the trace warns about it.")
local Z_fix1 = tt.sdpa(q_left, k_left, v_left, {mask = ~hide_left}):label("Z_fix1")
tt.assert_close(Z_fix1, Z_real, 1e-5, 1e-5, "sdpa: real rows as before, pad rows zero")
print("  checked: real queries get the same output as in section 4, pad rows are 0.")

print("Fix 2: make sure every query keeps one visible key, here itself, and")
print("zero the pad rows' output afterwards.")
local self_key = tt.eye(N):bool()
local hide_fixed = (hide_left & ~self_key):label("hide_fixed")
local w_fix2 = scores_left:masked_fill(hide_fixed, NEG_INF):softmax("Nk"):label("weights_fix2")
local Z_fix2 = w_fix2:matmul(v_left):masked_fill(pad_queries, 0):label("Z_fix2")
local nans = w_fix2:ne(w_fix2):float():sum():item()
if nans ~= 0 then error("fix 2 should leave no NaN, found " .. nans) end
tt.assert_close(Z_fix2, Z_fix1, 1e-5, 1e-5, "keeping a visible key, then zeroing pad rows, equals sdpa")
print("  checked: no NaN, and the result equals fix 1.")
print("Either way: every query row needs at least one visible key, or its")
print("output must be defined some other way before it reaches the loss.")
