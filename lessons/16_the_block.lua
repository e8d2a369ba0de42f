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
-- Corpus:   lessons/data/prose.txt (the comment lines and print strings of lessons 00-14, ASCII)
-- Checkpoint: lessons/data/the_block.safetensors (written by --retrain)
-- Figures:  images/16_loss.png  images/16_heads.png

local args = {...}
local retrain, temperature = false, 0.6
for i, a in ipairs(args) do
  if a == "--retrain" then retrain = true end
  if a == "--temperature" then temperature = tonumber(args[i + 1]) or error("--temperature needs a number") end
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

-- What simpler models get on the same held-out text: a uniform guess, the
-- character frequencies (unigram) and the previous character (bigram), both
-- counted on the training part (add-one smoothing).
local uni, bi = {}, {}
for c = 1, V do uni[c] = 1; bi[c] = {}; for d = 1, V do bi[c][d] = 1 end end
for i = 1, split do
  uni[all[i]] = uni[all[i]] + 1
  if i > 1 then bi[all[i - 1]][all[i]] = bi[all[i - 1]][all[i]] + 1 end
end
local function rowsum(r) local s = 0; for _, v in ipairs(r) do s = s + v end; return s end
local uni_total, bi_total = rowsum(uni), {}
for c = 1, V do bi_total[c] = rowsum(bi[c]) end
local uni_loss, bi_loss = 0, 0
for i = split + 1, #all do
  uni_loss = uni_loss - math.log(uni[all[i]] / uni_total) / (#all - split)
  bi_loss = bi_loss - math.log(bi[all[i - 1]][all[i]] / bi_total[all[i - 1]]) / (#all - split)
end
local final_val = val_loss()
if math.abs(final_val - curve.val[#curve.val]) > 1e-5 then error("the loaded model should give the saved validation loss") end

tt.trace.section("4. How well it predicts the next character")
print(string.format("Held-out loss (nats per character):"))
print(string.format("  uniform guess over V = %d    %.3f", V, math.log(V)))
print(string.format("  character frequencies         %.3f", uni_loss))
print(string.format("  previous character (bigram)   %.3f", bi_loss))
print(string.format("  the two-block model           %.3f  (%.2f bits per character)", final_val, final_val / math.log(2)))
if not (final_val < bi_loss - 0.2) then error("the model should beat the bigram counts") end
print("Checked: the model beats the bigram counts by more than 0.2 nats: it uses more")
print(string.format("than the previous character (it sees up to %d).", N))
local xs_plot = {}
for i = 1, #curve.train do xs_plot[i] = i end
local smooth = {}
for i = 1, #curve.train do
  local lo, s = math.max(1, i - 24), 0
  for j = lo, i do s = s + curve.train[j] end
  smooth[i] = s / (i - lo + 1)
end
local flat_bi = {}
for i = 1, #curve.val_step do flat_bi[i] = bi_loss end
tt.plot({
  {name = "train (mean of 25 steps)", x = xs_plot, y = smooth},
  {name = "held-out", x = curve.val_step, y = curve.val},
  {name = "bigram counts, held-out", x = curve.val_step, y = flat_bi},
}, "images/16_loss.png", {
  title = "A two-block character model on the lessons' own prose", xtitle = "step", ytitle = "loss (nats per character)" })
print("Figure: " .. tt.figure_path("images/16_loss.png") .. ", the training and held-out loss.")

tt.trace.section("5. Sampling with a temperature")
print("To generate, feed the text so far (its last N characters), take the logits of")
print("the last position, divide them by a temperature T, softmax, and draw. T < 1")
print("sharpens the distribution (T -> 0 is always the likeliest character), T > 1")
print("flattens it. --temperature sets T (default 0.6).")
local function encode(s)
  local t = {}
  for i = 1, #s do t[i] = ids[s:sub(i, i)] or error("no character '" .. s:sub(i, i) .. "' in the corpus") end
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
local prompt = "The attention weights"
local text_t, ent_t = sample(prompt, 120, temperature)
local text_hot, ent_hot = sample(prompt, 120, 1.5)
print(string.format("T = %g:", temperature))
print("  " .. text_t:gsub("\n", "\n  "))
print("T = 1.5:")
print("  " .. text_hot:gsub("\n", "\n  "))
print(string.format("Mean entropy of the distribution drawn from: %.2f nats at T = %g, %.2f at T = 1.5.",
  ent_t, temperature, ent_hot))
if temperature < 1.5 and not (ent_t < ent_hot) then error("a lower temperature should give a sharper distribution") end
if temperature < 1.5 then print("Checked: the lower temperature draws from a sharper distribution.") end
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
tt.assert_close(both:sum(-1), tt.ones(2 * H, n), 1e-5, 1e-5, "every row sums to 1")
if both:masked_fill(tt.causal_mask(n), 0):abs():sum():item() ~= 0 then error("no weight on a future key") end
print("Checked: every row sums to 1 and no query looks at a later character.")
-- what each head does, measured: the mean weight on the query itself and on the character before
local prev_keys, self_keys = {}, {}
for i = 2, n do prev_keys[#prev_keys + 1] = (i - 1) * n + (i - 1) end
for i = 1, n do self_keys[#self_keys + 1] = (i - 1) * n + i end
local flat = both:reshape(2 * H, n * n)
local on_prev = flat:index_select(2, tt.tensor(prev_keys, "int64")):mean(2):totable()
local on_self = flat:index_select(2, tt.tensor(self_keys, "int64")):mean(2):totable()
print("Mean weight on the previous character / on itself, per head:")
for i = 1, 2 * H do
  print(string.format("  %-16s %.2f / %.2f", titles[i], on_prev[i], on_self[i]))
end
