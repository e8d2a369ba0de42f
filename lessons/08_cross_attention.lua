-- 08_cross_attention.lua — cross-attention: decoder queries over encoder keys/values.
--
-- Self- and cross-attention use the same formula; only the source of Q, K, V
-- differs. In an encoder-decoder translator the decoder (French, Nq tokens)
-- asks the questions and the encoder (English, Nk tokens) holds the keys and
-- values, so the score matrix is Nq x Nk: rectangular. Padding in the English
-- batch is hidden with a mask on the key columns.
--
-- Run:  ./tensortrace lessons/08_cross_attention.lua      (trace of every shape)
--       ./tensortrace -q lessons/08_cross_attention.lua   (narrative only)
-- Figures: images/08_scores.png, images/08_weights.png,
--          images/08_masked_scores.png, images/08_weights_padded.png

tt.manual_seed(0)

local D, Dh = 32, 32          -- model width, width of the query/key/value space

-- Two sentence pairs. English goes into the encoder, French into the decoder.
local en = {
  {"the", "black", "cat", "sleeps", ".", "<pad>"},
  {"the", "dog", "runs", ".", "<pad>", "<pad>"},
}
local en_len = {5, 4}
local fr = {
  {"<s>", "le", "chat", "noir", "dort"},
  {"<s>", "le", "chien", "court", "."},
}
local B, Nk, Nq = #en, #en[1], #fr[1]

tt.trace.section("A hand-built example: translations share a meaning")
print("With random, untrained weights the attention pattern would be noise. So we")
print("build it by hand, in the spirit of what training would learn: each word has")
print("a meaning vector, a French word's embedding is the meaning of its English")
print("translation plus a little noise, and W_Q = W_K (one shared random projection,")
print("which keeps dot products roughly in proportion: on average it scales them by")
print("Dh/(3 D) = 1/3). '<s>' and '<pad>' mean nothing in particular.")
local meaning_of = {the = 1, le = 1, black = 2, noir = 2, cat = 3, chat = 3, sleeps = 4, dort = 4,
                    ["."] = 5, dog = 6, chien = 6, runs = 7, court = 7, ["<s>"] = 8, ["<pad>"] = 9}
tt.trace.off()   -- building the embedding tables is bookkeeping, not attention
local meanings = tt.randn(9, D) * 1.5
local function embed(sentences)
  local rows = {}
  for b, words in ipairs(sentences) do
    local vecs = {}
    for i, w in ipairs(words) do vecs[i] = meanings[meaning_of[w]] + tt.randn(D) * 0.3 end
    rows[b] = tt.stack(vecs, 1)
  end
  return tt.stack(rows, 1)
end
local x_enc = embed(en):named("B", "Nk", "D"):label("encoder states")
local y_dec = embed(fr):named("B", "Nq", "D"):label("decoder states")
tt.trace.on()
print(string.format("Encoder states [B=%d, Nk=%d, D=%d] (English), decoder states [B=%d, Nq=%d, D=%d] (French).",
                    B, Nk, D, B, Nq, D))

tt.trace.section("Q from the decoder, K and V from the encoder")
print("Same formula as self-attention; only the inputs differ: Q = Y W_Q, K = X_enc W_K,")
print("V = X_enc W_V. Note the two lengths: queries have Nq, keys and values have Nk.")
local W_qk = tt.nn.Linear(D, Dh, {bias = false})
local W_v = tt.nn.Linear(D, Dh, {bias = false})
local q = W_qk(y_dec):named("B", "Nq", "Dh"):label("Q")
local k = W_qk(x_enc):named("B", "Nk", "Dh"):label("K")
local v = W_v(x_enc):named("B", "Nk", "Dh"):label("V")

tt.trace.section("A rectangular score matrix: Nq x Nk")
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
assert(scores:size("Nq") == Nq and scores:size("Nk") == Nk, "scores are [B, Nq, Nk]")
print(string.format("Each of the %d French queries is compared with each of the %d English keys.", Nq, Nk))
tt.heatmap(scores:select(1, 1), "images/08_scores.png", {
  title = "Cross-attention scores: French queries x English keys",
  xlabels = en[1], ylabels = fr[1], xtitle = "encoder key (English)",
  ytitle = "decoder query (French)", cmap = "diverging", decimals = 1 })
print("Figure: " .. tt.figure_path("images/08_scores.png"))

tt.trace.section("No causal mask, but a padding mask on the encoder side")
print("The whole English sentence is known before decoding starts, so every French")
print("query may read every English token: cross-attention needs no causal mask")
print("(the decoder's own self-attention is the causal one). But the shorter English")
print("sentence is padded, and no query may read a <pad> key: we hide those columns.")
local pos = tt.arange(1, Nk + 1):view(1, 1, Nk)
local lens = tt.tensor(en_len):view(B, 1, 1)
local pad = pos:gt(lens):label("key is padding")   -- [B, 1, Nk], true = hide
tt.trace.off()
for b = 1, B do
  for j = 1, Nk do
    if pad[b][1][j]:item() ~= (en[b][j] == "<pad>") then
      error(string.format("padding mask wrong at batch %d, key %d (%s)", b, j, en[b][j]))
    end
  end
end
tt.trace.on()
print("Checked: the mask is true exactly on the <pad> columns of each sentence.")
local masked = scores:masked_fill(pad, -math.huge):label("masked scores")
local weights = masked:softmax("Nk"):label("weights")
local z = weights:matmul(v):label("Z")                 -- [B, Nq, Dh]

tt.assert_close(weights:sum("Nk"), tt.ones(B, Nq), 1e-6, 1e-6, "every query's weights sum to 1")
local pad_weight = weights:masked_fill(~pad, 0):abs():max():item()
if pad_weight ~= 0 then error("a query gave weight to a <pad> key: " .. pad_weight) end
print("Checked: each row sums to 1 and every <pad> column has weight exactly 0.")
local leak = scores:softmax("Nk"):masked_fill(~pad, 0):sum("Nk"):max():item()
if leak <= 0 then error("without the mask some weight should land on <pad>") end
print(string.format("Without the mask, up to %.1f%% of a query's weight would land on <pad> keys.",
                    100 * leak))

tt.trace.section("What the weights show")
print("In sentence 1 each French word puts most weight on its English translation")
print("('<s>' has none). Word order differs ('chat noir' vs 'black cat'), and")
print("cross-attention follows the meaning, not the position: row 'noir' peaks at")
print("column 'black', row 'chat' at 'cat'.")
local _, best = weights:max("Nk")
local expect = {{"le", "the"}, {"chat", "cat"}, {"noir", "black"}, {"dort", "sleeps"}}
tt.trace.off()
for _, pair in ipairs(expect) do
  local i
  for r, w in ipairs(fr[1]) do if w == pair[1] then i = r end end
  local j = best[1][i]:item()                   -- int64 indices: a Lua integer, 1-based
  print(string.format("  %-5s -> %-6s (weight %.2f)", pair[1], en[1][j], weights[1][i][j]:item()))
  if en[1][j] ~= pair[2] then error(pair[1] .. " should attend most to " .. pair[2]) end
end
tt.trace.on()
tt.heatmap(weights:select(1, 1), "images/08_weights.png", {
  title = "Cross-attention weights: each French word finds its English word",
  xlabels = en[1], ylabels = fr[1], xtitle = "encoder key (English)", ytitle = "decoder query (French)",
  mask = {["<pad> key: exactly 0"] = pad:select(1, 1)}, cmap = "viridis", vmin = 0, vmax = 1, decimals = 2 })
local pad2 = pad:select(1, 2)                        -- [1, Nk]: hatches whole columns
tt.heatmap(masked:select(1, 2), "images/08_masked_scores.png", {
  title = "Masked scores, sentence 2: <pad> keys are -inf",
  xlabels = en[2], ylabels = fr[2], xtitle = "encoder key (English)",
  ytitle = "decoder query (French)", mask = {["<pad> key: -inf"] = pad2},
  cmap = "diverging", decimals = 1 })
tt.heatmap(weights:select(1, 2), "images/08_weights_padded.png", {
  title = "Weights, sentence 2: <pad> columns get exactly 0",
  xlabels = en[2], ylabels = fr[2], xtitle = "encoder key (English)",
  ytitle = "decoder query (French)", mask = {["<pad> key: exactly 0"] = pad2},
  row_sums = true, cmap = "viridis", vmin = 0, vmax = 1, decimals = 2 })
print("Figures: " .. tt.figure_path("images/08_weights.png") .. ", " .. tt.figure_path("images/08_masked_scores.png") .. ", " .. tt.figure_path("images/08_weights_padded.png"))

tt.trace.section("The same with tt.sdpa")
print("tt.sdpa wants a head dim and a mask that says what to KEEP (the opposite of")
print("masked_fill's). So we add a head dim of 1 and pass ~pad.")
local keep = (~pad):unsqueeze(2)                       -- [B, 1, 1, Nk]
local z_fused = tt.sdpa(q:unsqueeze(2), k:unsqueeze(2), v:unsqueeze(2), {mask = keep})
tt.assert_close(z_fused:squeeze(2), z, 1e-5, 1e-5, "sdpa cross-attention == step by step")
print("Checked: same [B, Nq, Dh] output.")

tt.trace.section("While decoding, the encoder side stays fixed")
print("When the decoder generates one French word at a time, only Q grows; K and V")
print("come from the finished English sentence, are computed once and reused at every")
print("step. The newest query alone gives the last row of the full computation:")
local z_last = tt.sdpa(q:narrow("Nq", Nq, 1):unsqueeze(2), k:unsqueeze(2), v:unsqueeze(2), {mask = keep})
tt.assert_close(z_last:squeeze(2), z:narrow("Nq", Nq, 1), 1e-5, 1e-5, "one query == last row")
print("Checked: one new query over the same encoder K/V equals the last row of Z.")
