-- 16_the_block.lua — the whole transformer block, and a tiny language model made of it.
--
-- Attention is one half of a transformer block. The other half is a small
-- MLP (the feed-forward network), and the two are tied together by
-- normalisation and residual connections. This lesson traces one
-- pre-norm block (RMSNorm, causal multi-head attention with RoPE, SwiGLU,
-- two residual adds), checks that it is exactly those pieces, then stacks
-- two of them into a character-level language model trained on a corpus
-- the project wrote itself: the comments and narration of lessons 00-14.
-- The model samples text at a temperature, and its heads are drawn on a
-- sentence of that corpus.
--
-- Run it:   ./tensortrace lessons/16_the_block.lua                  (loads the checkpoint)
--           ./tensortrace lessons/16_the_block.lua --retrain        (trains again: under a minute on 2 cores)
--           ./tensortrace lessons/16_the_block.lua --temperature 0.8  (samples at that temperature)
--           ./tensortrace lessons/16_the_block.lua --prompt "The mask"  (the text it continues)
-- Corpus:   lessons/data/prose.txt (the comment lines and print strings of lessons 00-14, ASCII)
-- Checkpoint: lessons/data/the_block.safetensors (written by --retrain)
-- Figures:  images/16_loss.png  images/16_heads.png

local args = {...}
local retrain, temperature, prompt = false, 0.6, "The attention weights"
for i, a in ipairs(args) do
  if a == "--retrain" then retrain = true end
  if a == "--temperature" then temperature = tonumber(args[i + 1]) or error("--temperature needs a number") end
  if a == "--prompt" then prompt = args[i + 1] ~= "" and args[i + 1] or error("--prompt needs a text") end
end
if not (temperature > 0) then error("--temperature must be positive") end
local here = arg[0]:match("^(.*)/") or "."
local CORPUS, CHECKPOINT = here .. "/data/prose.txt", here .. "/data/the_block.safetensors"
local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end
local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end
if not exists(CHECKPOINT) then retrain = true end

tt.manual_seed(16)
local D, H, LAYERS, N = 48, 4, 2, 48     -- width, heads, blocks, context length
local B, STEPS, LR = 16, 700, 4e-3

tt.trace.section("1. One pre-norm block, traced")
print("A block maps [B, N, D] to [B, N, D], so blocks stack. Pre-norm (GPT-2 onward,")
print("LLaMA) normalises the input of each part, never the residual stream itself:")
print("  h   = x + Attention(RMSNorm(x))")
print("  out = h + FFN(RMSNorm(h))")
print("Here attention is causal with 4 heads and RoPE on q and k (no position")
print("embedding anywhere), and the FFN is LLaMA's SwiGLU: down(silu(gate(x)) * up(x)).")
tt.trace.off()
local blk = tt.nn.Block(D, H, {rope = true})
local x = tt.randn(1, 6, D):named("B", "N", "D"):label("x")
tt.trace.on()
local out = blk(x):label("out")
print(string.format("tt.nn.Block(%d, %d, {rope = true}): %s", D, H, tostring(blk)))
-- the block is exactly its pieces
tt.trace.off()
local a = blk.attn(blk.attn_norm(x))
local h = x + a
local f = blk.ffn(blk.ffn_norm(h))
tt.trace.on()
tt.assert_close(out, h + f, 0, 0, "the block is x + attention + FFN")
print("Checked: out equals x + attn(norm(x)) + ffn(norm(h)), bit for bit.")
print("")
print("The two new pieces, written out in tt ops and checked against the block's own:")
print(string.format("  RMSNorm(x) = x / sqrt(mean(x^2) + eps) * g, eps = %g (2^-23, float32's", blk.attn_norm.eps))
print("      machine epsilon: PyTorch's default; LLaMA uses 1e-5 or 1e-6)")
print("  SwiGLU(x)  = down(silu(gate(x)) * up(x)), silu(z) = z * sigmoid(z)")
local function rmsnorm(t, g, eps) return t / ((t * t):mean(-1, true) + eps):sqrt() * g end
local normed = rmsnorm(x, blk.attn_norm.weight, blk.attn_norm.eps):label("attn_norm, by hand")
tt.assert_close(normed, blk.attn_norm(x), 1e-6, 1e-6, "RMSNorm by hand")
local ffn = blk.ffn
local z = h:matmul(ffn.gate_proj.weight:mT())
local swiglu = ((z * z:sigmoid()) * h:matmul(ffn.up_proj.weight:mT())):matmul(ffn.down_proj.weight:mT()):label("ffn, by hand")
tt.assert_close(swiglu, ffn(h), 1e-5, 1e-6, "SwiGLU by hand")
print("Checked: both match the block's modules (to float rounding).")
print("Why these choices (from the papers, not measured here):")
print("  - Pre-norm (Xiong et al. 2020, \"On Layer Normalization in the Transformer")
print("    Architecture\"): the original post-norm, x = Norm(x + f(x)) (Vaswani et al.")
print("    2017), normalises the residual stream itself; pre-norm leaves it an")
print("    identity path from the input to the output, so gradients reach every")
print("    layer undamped and deep stacks train without a learning-rate warm-up.")
print("  - RMSNorm (Zhang and Sennrich 2019) is LayerNorm without subtracting the")
print("    mean and without a bias: it only rescales, costs less, and trains as well.")
print("  - SwiGLU (Shazeer 2020, \"GLU Variants Improve Transformer\"): a gated FFN with")
print("    three matrices instead of two; the hidden size 2/3 of 4D keeps the")
print("    parameter count of the 4D two-matrix FFN it replaces.")
local count, hidden = 0, blk.ffn.hidden
for _, p in ipairs(blk:parameters()) do count = count + p:numel() end
local formula = 2 * D + 4 * D * D + 3 * D * hidden
if count ~= formula then error("parameter count") end
print(string.format("Parameters: 2 norms (%d each) + q, k, v, o (%d x %d each) + gate, up, down", D, D, D))
print(string.format("(%d x %d each, hidden = %d: 2/3 of 4D, rounded up to a multiple of 8) = %d;", D, hidden, hidden, count))
print(string.format("checked against 2D + 4D^2 + 3D*hidden. The FFN holds %.0f%% of them.",
  100 * 3 * D * hidden / count))
print(string.format("Attention mixes tokens (rows of [N, N] weights); the FFN works on each token alone."))

tt.trace.section("2. The corpus and the model")
tt.trace.off()
local text = slurp(CORPUS)
local chars, ids = {}, {}
for c in text:gmatch(".") do chars[c] = true end
local vocab = {}
for c in pairs(chars) do vocab[#vocab + 1] = c end
table.sort(vocab)
local V = #vocab
for i, c in ipairs(vocab) do ids[c] = i end
local all = {}
for i = 1, #text do all[i] = ids[text:sub(i, i)] end
local split = math.floor(#all * 0.9)
local train_ids = tt.tensor({table.unpack(all, 1, split)}, "int64")
local val_ids = tt.tensor({table.unpack(all, split + 1, #all)}, "int64")
tt.trace.on()
print(string.format("%s: %d characters, %d distinct (the vocabulary V), one token each.", CORPUS, #text, V))
print(string.format("The first 90%% (%d) train; the last 10%% (%d) is held out for validation.", split, #all - split))
print(string.format("Model: an embedding [V, D], %d blocks like the one above, RMSNorm, a Linear to", LAYERS))
print(string.format("V logits. D = %d, %d heads of %d, context N = %d characters.", D, H, D // H, N))

tt.trace.off()
local model = {embed = tt.nn.Embedding(V, D), norm = tt.nn.RMSNorm(D), head = tt.nn.Linear(D, V, {bias = false})}
model.blocks = {}
for l = 1, LAYERS do model.blocks[l] = tt.nn.Block(D, H, {rope = true}) end
-- every parameter by a name: the checkpoint's keys
local named = {}
local function add(prefix, m)
  for _, p in ipairs(m:named_parameters()) do named[#named + 1] = {prefix .. p[1], p[2]} end
end
add("embed.", model.embed)
for l = 1, LAYERS do add("blocks." .. l .. ".", model.blocks[l]) end
add("norm.", model.norm)
add("head.", model.head)
local params, nparams = {}, 0
for i, np in ipairs(named) do params[i] = np[2]; nparams = nparams + np[2]:numel() end
tt.trace.on()
print(string.format("%d parameters in %d tensors.", nparams, #params))

-- ids [b, n] -> logits [b, n, V] (and each block's weights when asked)
local function forward(xs, want_w)
  local hh, ws = model.embed(xs), {}
  for l = 1, LAYERS do hh, ws[l] = model.blocks[l](hh, {weights = want_w}) end
  return model.head(model.norm(hh)), ws
end
-- b windows of n + 1 tokens starting at the given 1-based offsets: inputs and next-token targets
local function windows(data, starts, n)
  local b = starts:size(1)
  local idx = starts:view(b, 1) + tt.arange(0, n + 1):long():view(1, n + 1)
  local w = data:index_select(1, idx:reshape(b * (n + 1))):view(b, n + 1)
  return w:narrow(2, 1, n), w:narrow(2, 2, n)
end
local function loss_of(xs, ys)
  local b, n = xs:size(1), xs:size(2)
  return tt.cross_entropy(forward(xs):reshape(b * n, V), ys:reshape(b * n))
end
-- validation: 64 fixed windows of the held-out text, their mean loss (untraced)
tt.trace.off()
local val_starts = (tt.arange(0, 64) * ((val_ids:size(1) - N - 1) // 64) + 1):long()
tt.trace.on()
local function val_loss()
  tt.trace.off()
  local l = tt.no_grad(function() return loss_of(windows(val_ids, val_starts, N)):item() end)
  tt.trace.on()
  return l
end

tt.trace.section("3. Training (the loop is not traced)")
local curve = {train = {}, val = {}, val_step = {}}
local opt = tt.optim.AdamW(params, {lr = LR, weight_decay = 0.01})
tt.trace.off()
if retrain then
  local progress = tt.isatty(2)
  local t0 = tt.clock()
  for step = 1, STEPS do
    local xs, ys = windows(train_ids, tt.randint(1, split - N, B), N)
    local loss = loss_of(xs, ys)
    opt:zero_grad()
    loss:backward()
    opt:step()
    curve.train[step] = loss:item()
    if step % 50 == 0 then
      curve.val[#curve.val + 1], curve.val_step[#curve.val_step + 1] = val_loss(), step
    end
    if progress and step % 10 == 0 then
      io.stderr:write(string.format("\rstep %4d/%d  loss %.3f ", step, STEPS, curve.train[step]))
    end
  end
  if progress then io.stderr:write("\n") end
  local seconds = tt.clock() - t0
  print(string.format("Trained %d steps of %d tokens in %.1f s.", STEPS, B * N, seconds))
  local tensors = {["curve.train"] = tt.tensor(curve.train), ["curve.val"] = tt.tensor(curve.val),
                   ["curve.val_step"] = tt.tensor(curve.val_step)}
  for _, np in ipairs(named) do tensors[np[1]] = np[2]:detach() end
  tt.save(CHECKPOINT, tensors, {steps = tostring(STEPS), seed = "16", lr = tostring(LR)})
  print("Saved " .. CHECKPOINT .. ".")
else
  local loaded, meta = tt.load(CHECKPOINT)
  if meta.steps ~= tostring(STEPS) then error(CHECKPOINT .. " is not from this lesson") end
  tt.no_grad(function()
    for _, np in ipairs(named) do
      local t = loaded[np[1]] or error(CHECKPOINT .. " has no tensor '" .. np[1] .. "'")
      np[2]:copy_(t)
    end
  end)
  curve.train, curve.val, curve.val_step = loaded["curve.train"]:totable(), loaded["curve.val"]:totable(),
                                           loaded["curve.val_step"]:totable()
end
tt.trace.on()
print(string.format("AdamW, lr %g, %d steps of B = %d windows of N = %d characters. The weights", LR, STEPS, B, N))
print("come from " .. CHECKPOINT .. " unless the script runs with")
print("--retrain, which trains again from the same seed and writes the same bytes.")

-- What count-based models get on the same held-out text: an n-gram predicts
-- a character from the n - 1 before it, by counts on the training part,
-- interpolated down to shorter contexts (p_n(c | h) = (count(h c) + BETA *
-- p_(n-1)(c | h minus its first character)) / (count(h) + BETA), p_0 = 1/V);
-- BETA is fixed, not tuned on the held-out text.
local BETA, MAX_ORDER = 2, 5
local ngram_counts = {}            -- [order][context string] = {total = n, [c] = n}
for order = 1, MAX_ORDER do
  local t = {}
  for i = order, split do
    local h = table.concat({table.unpack(all, i - order + 1, i - 1)}, ",")
    local e = t[h]
    if not e then e = {total = 0}; t[h] = e end
    e.total, e[all[i]] = e.total + 1, (e[all[i]] or 0) + 1
  end
  ngram_counts[order] = t
end
local function ngram_p(order, i)   -- p(all[i] | the order - 1 characters before it)
  if order == 0 then return 1 / V end
  local lower = ngram_p(order - 1, i)
  local e = ngram_counts[order][table.concat({table.unpack(all, i - order + 1, i - 1)}, ",")]
  if not e then return lower end
  return ((e[all[i]] or 0) + BETA * lower) / (e.total + BETA)
end
local ngram_loss = {}
for order = 1, MAX_ORDER do
  local sum = 0
  for i = split + 1, #all do sum = sum - math.log(ngram_p(order, i)) end
  ngram_loss[order] = sum / (#all - split)
end
local final_val = val_loss()
if math.abs(final_val - curve.val[#curve.val]) > 1e-5 then error("the loaded model should give the saved validation loss") end

tt.trace.section("4. How well it predicts the next character")
print(string.format("Held-out loss (nats per character):"))
print(string.format("  uniform guess over V = %d    %.3f", V, math.log(V)))
local NGRAM_NAMES = {"character frequencies", "previous character (2-gram)", "2 before (3-gram)", "3 before (4-gram)",
                     "4 before (5-gram)"}
for order = 1, MAX_ORDER do print(string.format("  %-29s %.3f", NGRAM_NAMES[order], ngram_loss[order])) end
print(string.format("  the two-block model           %.3f  (%.2f bits per character)", final_val, final_val / math.log(2)))
local best_ngram = math.min(table.unpack(ngram_loss))
print(string.format("(The n-grams on the whole held-out part, the model on %d windows of it; both", val_starts:size(1)))
print("on text it never trained on.)")
if not (final_val < ngram_loss[2] - 0.5) then error("the model should beat the 2-gram counts by far") end
print(string.format("Checked: the model beats the 2-gram counts by more than 0.5 nats (%.3f): it", ngram_loss[2] - final_val))
print("uses more than the previous character. But a 4-gram count table, three")
print(string.format("characters of context, is as good: the model is %+.3f nats from the best", final_val - best_ngram))
print("n-gram, on one seed. Does it use more than a few characters? Its loss by")
print("position in the window answers that: the prediction at position p sees p")
print("characters, so the loss falls with p as long as more context helps.")
tt.trace.off()
local pos_loss = tt.no_grad(function()
  local xs, ys = windows(val_ids, val_starts, N)
  local b = xs:size(1)
  return tt.cross_entropy(forward(xs):reshape(b * N, V), ys:reshape(b * N), {reduction = "none"}):view(b, N)
end)
-- per window, the mean loss over positions lo..hi: a Lua list
local function band(lo, hi) return pos_loss:narrow(2, lo, hi - lo + 1):mean(2):totable() end
-- mean and standard error of a list, and of the paired differences a - b (lessons/lib/stats.lua)
local mean_se = dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/stats.lua").mean_se
print("  context (characters seen)   loss, mean ± SE over the 64 windows")
local BANDS = {{1, 1}, {2, 2}, {3, 4}, {5, 8}, {9, 16}, {17, 32}, {33, 48}}
for _, r in ipairs(BANDS) do
  local m, se = mean_se(band(r[1], r[2]))
  print(string.format("  %2d..%-2d                      %.3f ± %.3f", r[1], r[2], m, se))
end
local gain, gain_se = mean_se(band(5, 8), band(33, 48))
tt.trace.on()
print(string.format("From 5..8 characters of context to 33..48 the loss moves by %.3f ± %.3f nats", -gain, gain_se))
print("(paired by window): no gain 64 windows can show, and no loss either. On this")
print("evidence the model does as well as a 4-gram, and its 48-character context is")
print("room it has, not reach it was shown to use. (The loss of a position also")
print("depends on which characters sit there, so the bands compare different text.)")
local xs_plot = {}
for i = 1, #curve.train do xs_plot[i] = i end
local smooth = {}
for i = 1, #curve.train do
  local lo, s = math.max(1, i - 24), 0
  for j = lo, i do s = s + curve.train[j] end
  smooth[i] = s / (i - lo + 1)
end
local flat_bi, flat_four = {}, {}
for i = 1, #curve.val_step do flat_bi[i], flat_four[i] = ngram_loss[2], ngram_loss[4] end
tt.plot({
  {name = "train (mean of 25 steps)", x = xs_plot, y = smooth},
  {name = "held-out", x = curve.val_step, y = curve.val},
  {name = "2-gram counts, held-out", x = curve.val_step, y = flat_bi},
  {name = "4-gram counts, held-out", x = curve.val_step, y = flat_four},
}, "images/16_loss.png", {
  title = "A two-block character model on the lessons' own prose", xtitle = "step", ytitle = "loss (nats per character)" })
print("Figure: " .. tt.figure_path("images/16_loss.png") .. ", the training and held-out loss.")

tt.trace.section("5. Sampling with a temperature")
print("To generate, feed the text so far (its last N characters), take the logits of")
print("the last position, divide them by a temperature T, softmax, and draw. T < 1")
print("sharpens the distribution (T -> 0 is always the likeliest character), T > 1")
print("flattens it. --temperature sets T (default 0.6), --prompt the text to continue.")
local function encode(s)
  local t = {}
  for i = 1, #s do t[i] = ids[s:sub(i, i)] or error(string.format("no character %q in the corpus (the lessons' prose is ASCII)", s:sub(i, i))) end
  return t
end
local function sample(prompt, count, T)
  local seq, entropy = encode(prompt), 0
  tt.trace.off()
  tt.no_grad(function()
    for _ = 1, count do
      local first = math.max(1, #seq - N + 1)
      local ctx = tt.tensor({{table.unpack(seq, first, #seq)}}, "int64")
      local logits = forward(ctx)[1][ctx:size(2)]
      local p = (logits / T):softmax(1)
      entropy = entropy - (p * (p + 1e-30):log()):sum():item() / count
      local u, acc, pick = tt.rand(1):item(), 0, V
      local probs = p:totable()
      for c = 1, V do
        acc = acc + probs[c]
        if u < acc then pick = c; break end
      end
      seq[#seq + 1] = pick
    end
  end)
  tt.trace.on()
  local out = {}
  for i = 1, #seq do out[i] = vocab[seq[i]] end
  return table.concat(out), entropy
end
tt.manual_seed(160)
local text_t, ent_t = sample(prompt, 120, temperature)
local text_hot, ent_hot = sample(prompt, 120, 1.5)
print(string.format("T = %g:", temperature))
print("  " .. text_t:gsub("\n", "\n  "))
print("T = 1.5:")
print("  " .. text_hot:gsub("\n", "\n  "))
print(string.format("Mean entropy of the distribution drawn from: %.2f nats at T = %g, %.2f at T = 1.5.",
  ent_t, temperature, ent_hot))
print("(A lower T always gives a sharper distribution for the same logits; these two")
print("means are over different sampled texts, so they show the size, not a test.)")
print(string.format("Words, shapes and punctuation of the lessons come out; meaning does not: %dk", nparams // 1000))
print(string.format("parameters and %dk characters of text.", #text // 1000))

tt.trace.section("6. The heads on a real sentence")
local sentence = "The saving grows with every step."
if not text:find(sentence, 1, true) then error("the sentence should be in the corpus") end
local sent = tt.tensor({encode(sentence)}, "int64")
tt.trace.off()
local _, ws = tt.no_grad(forward, sent, true)
tt.trace.on()
local labels = {}
for i = 1, #sentence do
  local c = sentence:sub(i, i)
  labels[i] = c == " " and "_" or c
end
local n = #sentence
local both = tt.cat({ws[1][1], ws[2][1]}, 1)
local titles = {}
for l = 1, LAYERS do for hd = 1, H do titles[#titles + 1] = string.format("block %d head %d", l, hd) end end
tt.heatmap(both, "images/16_heads.png", {
  title = string.format("Every head on \"%s\" (a row is a query's weights)", sentence),
  panel_titles = titles, xlabels = labels, ylabels = labels, xtitle = "Key", ytitle = "Query",
  mask = {["masked: exactly 0"] = ~tt.causal_mask(n)}, cmap = "viridis", vmin = 0, vmax = 1, annotate = false })
print("Figure: " .. tt.figure_path("images/16_heads.png") .. ", all 8 heads (spaces drawn as _).")

-- what each head does, measured: the mean weight of queries 2..n on the
-- character before and on themselves (query 1 left out: it has only itself)
local prev_keys, self_keys = {}, {}
for i = 2, n do prev_keys[#prev_keys + 1] = (i - 1) * n + (i - 1) end
for i = 2, n do self_keys[#self_keys + 1] = (i - 1) * n + i end
local flat = both:reshape(2 * H, n * n)
local on_prev = flat:index_select(2, tt.tensor(prev_keys, "int64")):mean(2):totable()
local on_self = flat:index_select(2, tt.tensor(self_keys, "int64")):mean(2):totable()
print(string.format("Mean weight of queries 2..%d on the previous character / on themselves (an", n))
print(string.format("even spread would give each key 1/i, %.2f on average):", (function()
  local u = 0
  for i = 2, n do u = u + 1 / i / (n - 1) end
  return u
end)()))
local prev_heads = {}
for i = 1, 2 * H do
  local tag = on_prev[i] >= 0.5 and "   <- mostly the previous character" or ""
  if on_prev[i] >= 0.5 then prev_heads[#prev_heads + 1] = titles[i] end
  print(string.format("  %-16s %.2f / %.2f%s", titles[i], on_prev[i], on_self[i], tag))
end
print(string.format("On this one sentence, %s put more than half their weight on", table.concat(prev_heads, " and ")))
print("the character just before: previous-character heads, the bright line under")
print("the diagonal in those panels of the figure (lesson 14's previous-token head,")
print("found again in a language model). No head here mostly reads itself; the")
print("others spread their weight over recent characters. One sentence of 33")
print("characters: read these as a description of the figure, not a measurement.")
