-- 15_positions.lua — how attention learns where a token is, and which way of telling it lasts past training length.
--
-- Attention by itself does not see order: shuffle the tokens and the outputs
-- are the same rows, shuffled the same way. A transformer gets order from a
-- position scheme. This lesson puts the four the articles name side by side:
-- sinusoidal and learned embeddings (added to the tokens), RoPE (q and k
-- turned by an angle that grows with the position) and ALiBi (a bias on the
-- scores that grows with the distance). It checks what each one promises,
-- then trains the same tiny model with each (and with none) on a task that
-- needs relative position, at length 32, and measures it at 32, 64 and 128.
--
-- Run it:   ./tensortrace lessons/15_positions.lua            (loads the checkpoint)
--           ./tensortrace lessons/15_positions.lua --retrain  (trains the five models again: under a minute on 2 cores)
-- Checkpoint: lessons/data/positions.safetensors (written by --retrain)
-- Figures:  images/15_alibi.png  images/15_extrapolation.png

local args = {...}
local retrain = false
for _, a in ipairs(args) do if a == "--retrain" then retrain = true end end
local here = arg[0]:match("^(.*)/") or "."
local CHECKPOINT = here .. "/data/positions.safetensors"
local found = io.open(CHECKPOINT, "rb")
if found then found:close() else retrain = true end

tt.manual_seed(15)
local V, D, H, LAYERS = 16, 32, 4, 2   -- vocabulary, width, heads, layers
local Dh = D // H
local TRAIN_N, EVAL_NS = 32, {32, 64, 128}
local B, STEPS, LR = 32, 300, 3e-3
local BACK = 1                         -- the task: at position i, output the token at i - BACK

tt.trace.section("1. Attention alone does not see order")
print("Self-attention mixes the rows of X by weights computed from the rows alone:")
print("nothing in softmax(QK^T / sqrt(Dh)) V says which row came first. Shuffle the")
print("tokens and every token meets the same keys and values, in another order.")
tt.trace.off()
local X = tt.randn(6, D):named("N", "D"):label("X")
local Wq, Wk, Wv = tt.randn(D, Dh) / math.sqrt(D), tt.randn(D, Dh) / math.sqrt(D), tt.randn(D, Dh) / math.sqrt(D)
local perm = tt.tensor({3, 6, 1, 5, 2, 4}, "int64")
tt.trace.on()
local function attend(x, opts) return tt.sdpa(x:matmul(Wq), x:matmul(Wk), x:matmul(Wv), opts) end
local out = attend(X):label("out")
local out_shuffled = attend(X:index_select(1, perm)):label("out of the shuffled X")
tt.assert_close(out_shuffled, out:index_select(1, perm), 1e-5, 1e-6, "shuffled in, shuffled out")
print("Checked: attention of the shuffled tokens (order 3 6 1 5 2 4) is the shuffled")
print("attention, to float rounding. It is permutation-equivariant: to it, a")
print("sentence is a bag of tokens.")
tt.trace.off()
local causal_gap = (attend(X:index_select(1, perm), {causal = true})
                    - attend(X, {causal = true}):index_select(1, perm)):abs():max():item()
tt.trace.on()
if not (causal_gap > 0.01) then error("a causal mask should break the symmetry") end
print(string.format("A causal mask breaks the symmetry (the same check is off by %.2f): a token", causal_gap))
print("sees how many keys come before it. That is some position information, but")
print("only a count; the model \"none\" of section 5 shows how far it goes.")

tt.trace.section("2. Four ways to tell attention where a token is")
print("  sinusoidal (Vaswani et al., 2017): add PE(p) to token p's embedding,")
print("      PE(p, 2i) = sin(p / 10000^(2i/D)), PE(p, 2i+1) = cos(p / 10000^(2i/D)); fixed, any p")
print("  learned (BERT, GPT-2): add row p of a trained table [N, D]; only positions 1..N exist")
print("  RoPE (Su et al., 2021): turn each pair of q's and k's coordinates by p * theta_i")
print("      (tt.rope); nothing is added to the tokens")
print("  ALiBi (Press et al., 2021): add -slope_h * (i - j) to head h's score of query i,")
print("      key j (tt.sdpa{alibi = true}); nothing is added, nothing turned")
-- the sinusoidal table [n, D]: sin in the even columns, cos in the odd ones (counting from 0)
local function sinusoidal(n)
  local freq = (tt.arange(0, D, 2) * (-math.log(10000) / D)):exp():view(1, D // 2)
  local angle = tt.arange(n):view(n, 1) * freq
  return tt.stack({angle:sin(), angle:cos()}, 3):reshape(n, D)
end

print("")
print("Added embeddings mix position into the content: the score of (x + PE(m)) and")
print("(y + PE(n)) has a term x.PE(n), which depends on n itself, not on m - n.")
print("RoPE turns q at position m by m * theta and k at n by n * theta; a dot product")
print("of two turned vectors sees only the angle between them, (m - n) * theta.")
tt.trace.off()
local qv, kv = tt.randn(1, Dh):label("q"), tt.randn(1, Dh):label("k")
local pe = sinusoidal(1100)
tt.trace.on()
local function rope_score(m, n)
  return (tt.rope(qv, tt.tensor({m})) * tt.rope(kv, tt.tensor({n}))):sum()
end
local function added_score(m, n)
  local qx, kx = qv + pe:narrow(1, m + 1, 1):narrow(2, 1, Dh), kv + pe:narrow(1, n + 1, 1):narrow(2, 1, Dh)
  return (qx * kx):sum()
end
local base_rope, base_added = rope_score(7, 3), added_score(7, 3)
print("Score of the same q and k at positions (m, n), m - n = 4, shifted by t:")
print("      t    RoPE       sinusoidal, added (first Dh columns of PE)")
for _, t in ipairs({0, 1, 10, 100, 1000}) do
  tt.trace.off()
  local r, a = rope_score(7 + t, 3 + t), added_score(7 + t, 3 + t)
  tt.trace.on()
  print(string.format("  %5d  %9.6f  %9.6f", t, r:item(), a:item()))
  tt.assert_close(r, base_rope, 1e-5, 1e-5, "RoPE's score depends on m - n only")
end
print(string.format("Checked: RoPE's score is %.6f at every shift, to float precision (rtol 1e-5),", base_rope:item()))
print("while the added embedding's score moves with the shift. A different distance")
tt.trace.off()
local other = rope_score(8, 3):item()
tt.trace.on()
if math.abs(other - base_rope:item()) < 1e-3 then error("RoPE's score should change with the distance") end
print(string.format("gives a different score: %.6f at m - n = 5.", other))

print("")
tt.trace.off()
local slopes = {}
for h = 1, H do slopes[h] = 2 ^ (-8 * h / H) end
local FIG_N = 10
local i_minus_j = tt.arange(FIG_N):view(FIG_N, 1) - tt.arange(FIG_N):view(1, FIG_N)   -- [N, N]
local bias = tt.tensor(slopes):view(H, 1, 1) * -i_minus_j                               -- [H, N, N]
local future = ~tt.causal_mask(FIG_N)
local zeros = tt.zeros(H, FIG_N, Dh)
tt.trace.on()
print(string.format("ALiBi with H = %d heads: slopes 2^(-8h/H) = %.4g, %.4g, %.4g, %.4g.", H, table.unpack(slopes)))
print("Head h's score of query i on key j <= i gets -slope_h * (i - j): the farther")
print("back, the lower; steeply in head 1 (a local head), gently in head 4 (it can")
print("read far back).")
local _, w = tt.sdpa(zeros, zeros, zeros, {alibi = true, causal = true, weights = true})
tt.assert_close(w, bias:masked_fill(future, -math.huge):softmax(3), 1e-5, 1e-6,
  "tt.sdpa's ALiBi is softmax of that bias when q.k = 0")
print("Checked: with q.k = 0 everywhere, tt.sdpa{alibi = true}'s weights are softmax of")
print("that bias: the kernel computes it from i and j (the [H, N, N] tensor here is")
print("made only for this check and the figure).")
tt.trace.off()
local titles = {}
for h = 1, H do titles[h] = string.format("head %d: slope %.4g", h, slopes[h]) end
local labels = {}
for p = 1, FIG_N do labels[p] = tostring(p) end
tt.heatmap(bias:masked_fill(future, 0), "images/15_alibi.png", {   -- the future: hatched, no number
  title = "ALiBi: the bias -slope * (i - j) added to each head's scores",
  panel_titles = titles, xlabels = labels, ylabels = labels, xtitle = "Key j", ytitle = "Query i",
  mask = {["future: masked"] = future}, cmap = "viridis", vmin = -slopes[1] * (FIG_N - 1), vmax = 0, decimals = 2 })
tt.trace.on()
print("Figure: images/15_alibi.png, the bias of every head (the future hatched).")

tt.trace.section("3. The task and the model")
print(string.format("Random tokens (V = %d); at each position i the answer is the token at i - %d,", V, BACK))
print("the one just before. It needs relative position: which token stood one step")
print(string.format("back, wherever the query is. A uniform guess scores ln %d = %.3f nats and", V, math.log(V)))
print(string.format("1/%d = %.2f%% accuracy.", V, 100 / V))
print(string.format("The model: a token embedding [V, D], %d causal attention layers of %d heads", LAYERS, H))
print(string.format("(D = %d), each added to the residual stream, and a Linear to V logits:", D))
print("lesson 14's design, smaller. Five copies differ only in how they get positions:")
local SCHEMES = {"none", "sinusoidal", "learned", "rope", "alibi"}
print("  none (the causal mask alone), sinusoidal, learned, rope, alibi.")
print(string.format("Each trains %d AdamW steps (lr %g) on batches of %d sequences of N = %d,", STEPS, LR, B, TRAIN_N))
print("all five from the same initial weights and on the same batches.")
print(string.format("Learned positions have rows 1..%d only. At evaluation, a position past %d", TRAIN_N, TRAIN_N))
print(string.format("reuses row %d (clamped), so the model still runs; its scores there are", TRAIN_N))
print("measured, not assumed, below.")

local NAMES = {"tok_embed", "layer1.qkv", "layer1.out", "layer2.qkv", "layer2.out", "unembed"}
local function linear_weight(o, i) return ((tt.rand(o, i) * 2 - 1) / math.sqrt(i)):requires_grad_() end
local function init(scheme)
  tt.manual_seed(15)                     -- the same start for every scheme
  local m = {scheme = scheme, tok_embed = (tt.randn(V, D) * 0.5):requires_grad_()}
  for l = 1, LAYERS do
    m["layer" .. l .. ".qkv"], m["layer" .. l .. ".out"] = linear_weight(3 * D, D), linear_weight(D, D)
  end
  m.unembed = linear_weight(V, D)
  if scheme == "learned" then m.pos_embed = (tt.randn(TRAIN_N, D) * 0.5):requires_grad_() end
  return m
end
local function names_of(scheme)        -- the weights of one scheme's model
  local list = {table.unpack(NAMES)}
  if scheme == "learned" then list[#list + 1] = "pos_embed" end
  return list
end
-- ids x [b, n] -> logits [b, n, V]
local function forward(m, x)
  local b, n = x:size(1), x:size(2)
  local h = m.tok_embed:index_select(1, x:reshape(b * n)):view(b, n, D)
  if m.scheme == "sinusoidal" then h = h + sinusoidal(n) end
  if m.scheme == "learned" then                    -- positions past TRAIN_N reuse the last row
    local rows = {}
    for p = 1, n do rows[p] = math.min(p, TRAIN_N) end
    h = h + m.pos_embed:index_select(1, tt.tensor(rows, "int64"))
  end
  local positions = tt.arange(n)
  for l = 1, LAYERS do
    local qkv = h:matmul(m["layer" .. l .. ".qkv"]:mT()):view(b, n, 3, H, Dh):permute(3, 1, 4, 2, 5)
    local q, k, v = qkv[1], qkv[2], qkv[3]        -- [b, H, n, Dh]
    if m.scheme == "rope" then q, k = tt.rope(q, positions), tt.rope(k, positions) end
    local heads = tt.sdpa(q, k, v, {causal = true, alibi = m.scheme == "alibi"})
    h = h + heads:transpose(2, 3):reshape(b, n, D):matmul(m["layer" .. l .. ".out"]:mT())
  end
  return h:matmul(m.unembed:mT())
end
-- per-position loss and hit (1 when the top logit is the answer), [b, n - BACK]:
-- row i answers the token at i - BACK
local function score(m, x)
  local b, n = x:size(1), x:size(2)
  local logits = forward(m, x):narrow(2, BACK + 1, n - BACK):reshape(b * (n - BACK), V)
  local targets = x:narrow(2, 1, n - BACK):reshape(b * (n - BACK))
  local losses = tt.cross_entropy(logits, targets, {reduction = "none"}):view(b, n - BACK)
  return losses, logits:argmax(2):eq(targets):float():view(b, n - BACK)
end

tt.trace.section("4. Training (the loop is not traced)")
tt.trace.off()
local models = {}
if retrain then
  local t_all = tt.clock()
  local tensors = {}
  for _, scheme in ipairs(SCHEMES) do
    local m = init(scheme)
    local params = {}
    for i, name in ipairs(names_of(scheme)) do params[i] = m[name] end
    local opt = tt.optim.AdamW(params, {lr = LR, weight_decay = 0.01})
    tt.manual_seed(1500)                 -- the same batches for every scheme
    local t0 = tt.clock()
    for _ = 1, STEPS do
      local loss = score(m, tt.randint(1, V + 1, B, TRAIN_N)):mean()
      opt:zero_grad()
      loss:backward()
      opt:step()
    end
    print(string.format("Trained %-10s %d steps in %.1f s.", scheme, STEPS, tt.clock() - t0))
    for _, name in ipairs(names_of(scheme)) do tensors[scheme .. "." .. name] = m[name]:detach() end
    models[scheme] = m
  end
  print(string.format("All five in %.1f s.", tt.clock() - t_all))
  tt.save(CHECKPOINT, tensors, {steps = tostring(STEPS), seed = "15", lr = tostring(LR)})
  print("Saved " .. CHECKPOINT .. ".")
else
  local loaded, meta = tt.load(CHECKPOINT)
  if meta.steps ~= tostring(STEPS) then error(CHECKPOINT .. " is not from this lesson") end
  for _, scheme in ipairs(SCHEMES) do
    local m = {scheme = scheme}
    for _, name in ipairs(names_of(scheme)) do
      m[name] = loaded[scheme .. "." .. name] or error(CHECKPOINT .. " has no tensor '" .. scheme .. "." .. name .. "'")
    end
    models[scheme] = m
  end
end
tt.trace.on()
print("The weights come from " .. CHECKPOINT .. " unless the script runs")
print("with --retrain, which trains the five again from the same seed and writes")
print("the same bytes.")

tt.trace.section("5. Measured: trained at 32, evaluated at 32, 64 and 128")
-- a fixed evaluation set: 64 fresh sequences at each length
tt.trace.off()
tt.manual_seed(150)
local eval_x = {}
for i, n in ipairs(EVAL_NS) do eval_x[i] = tt.randint(1, V + 1, 64, n) end
local result = {}
tt.no_grad(function()
  for _, scheme in ipairs(SCHEMES) do
    result[scheme] = {loss = {}, acc = {}, past = {}}
    for i, n in ipairs(EVAL_NS) do
      local losses, hits = score(models[scheme], eval_x[i])
      result[scheme].loss[i], result[scheme].acc[i] = losses:mean():item(), hits:mean():item()
      -- the answers of queries at positions TRAIN_N + 1 .. n: columns TRAIN_N + 1 - BACK ..
      if n > TRAIN_N then
        result[scheme].past[i] = hits:narrow(2, TRAIN_N + 1 - BACK, n - TRAIN_N):mean():item()
      end
    end
  end
end)
tt.trace.on()
print(string.format("64 fresh sequences at each length; loss (nats) and accuracy over every query"))
print(string.format("with an answer (positions 2..N); \"past %d\" is the accuracy of queries at", TRAIN_N))
print(string.format("positions %d..N alone, which no model saw in training.", TRAIN_N + 1))
print("               N = 32            N = 64                    N = 128")
print("  scheme      loss   acc      loss   acc   past 32     loss   acc   past 32")
for _, scheme in ipairs(SCHEMES) do
  local r = result[scheme]
  print(string.format("  %-10s %6.3f %5.3f    %6.3f %5.3f   %5.3f     %6.3f %5.3f   %5.3f", scheme,
    r.loss[1], r.acc[1], r.loss[2], r.acc[2], r.past[2], r.loss[3], r.acc[3], r.past[3]))
end
local series = {}
for _, scheme in ipairs(SCHEMES) do
  series[#series + 1] = {name = scheme, x = EVAL_NS, y = result[scheme].acc}
end
series[#series + 1] = {name = string.format("chance, 1/%d", V), x = EVAL_NS, y = {1 / V, 1 / V, 1 / V}}
tt.plot(series, "images/15_extrapolation.png", {
  title = string.format("Trained at N = %d: accuracy of \"output the previous token\" at longer N", TRAIN_N),
  xtitle = "evaluation length N", ytitle = "accuracy (every query)", markers = true })
print("Figure: images/15_extrapolation.png, the accuracy of each scheme by length.")

-- the checks, with margin under what the trained models measured (see the table)
local FIT_MIN, HOLD_MIN, LOST_MAX = 0.95, 0.9, 0.3
for _, scheme in ipairs({"sinusoidal", "learned", "rope", "alibi"}) do
  if result[scheme].acc[1] < FIT_MIN then error(scheme .. " should learn the task at the training length") end
end
if not (result.none.acc[1] < FIT_MIN - 0.3) then error("without positions the task should stay hard") end
for i = 2, 3 do
  if result.alibi.past[i] < HOLD_MIN then error("alibi should keep its accuracy past the training length") end
  for _, scheme in ipairs({"sinusoidal", "learned", "rope"}) do
    if result[scheme].past[i] > LOST_MAX then error(scheme .. " should lose the task past the training length") end
  end
end
print(string.format("Checked: at N = 32 every model with positions is right on more than %.0f%% of", 100 * FIT_MIN))
print(string.format("the queries; \"none\" on %.0f%% (the causal count alone helps it some).", 100 * result.none.acc[1]))
print(string.format("Past position 32, at N = 64 and 128: alibi stays above %.0f%%; sinusoidal,", 100 * HOLD_MIN))
print(string.format("learned and rope fall below %.0f%% there (chance is %.2f%%).", 100 * LOST_MAX, 100 / V))

tt.trace.section("6. What was measured, and what the papers found")
print("Measured here, on this task and these tiny models: ALiBi extrapolates.")
print(string.format("Trained at N = 32, it answers %.1f%% of the queries past 32 at N = 128.", 100 * result.alibi.past[3]))
local fit_lo, fit_hi, lost_lo, lost_hi = 1, 0, 1, 0
for _, scheme in ipairs({"sinusoidal", "learned", "rope"}) do
  fit_lo, fit_hi = math.min(fit_lo, result[scheme].acc[1]), math.max(fit_hi, result[scheme].acc[1])
  for i = 2, 3 do
    lost_lo, lost_hi = math.min(lost_lo, result[scheme].past[i]), math.max(lost_hi, result[scheme].past[i])
  end
end
local pct = function(x) return string.format("%.1f%%", 100 * x) end
print(string.format("Sinusoidal, learned and RoPE fit the training length (%s-%s) and lose", pct(fit_lo), pct(fit_hi)))
print(string.format("the task past it: %s-%s of the queries past 32, where \"none\", with no", pct(lost_lo), pct(lost_hi)))
print(string.format("positions at all, gets %s-%s. Learned positions past 32 all read row 32",
  pct(math.min(result.none.past[2], result.none.past[3])), pct(math.max(result.none.past[2], result.none.past[3]))))
print("(clamped), so failing there is expected. Sinusoidal and RoPE have values for")
print("every position and fail too: a query past 32 sits at a position, and looks")
print("over distances (up to 127 at N = 128), that training never showed (it had")
print("positions up to 32, distances up to 31), so nothing fixed what its scores")
print("should be there. ALiBi's score for distance d is the learned content score")
print("plus -slope * d, the same rule at every d: a farther key only loses more.")
print(string.format("ALiBi is a little behind at N = 32 (%s against %s-%s): its bias favours", pct(result.alibi.acc[1]), pct(fit_lo), pct(fit_hi)))
print("the query's own token over the one before it, so the content scores must")
print("outweigh it, which may be why. And the task was chosen so that ALiBi can")
print("learn it: asked for the token 3 back, a prototype of this model with ALiBi")
print("stayed near 30% accuracy after 800 steps, while RoPE learned it (100% at")
print("N = 32) and lost it past 32 again. A bias that only falls with distance")
print("ranks the keys by nearness; by itself it does not point at one distance.")
print("")
print("What the papers found, on language models (quoted, not measured here):")
print("  Press, Smith and Lewis (ALiBi, \"Train Short, Test Long\", ICLR 2022): a 1.3B")
print("    model trained on 1024 tokens extrapolates to 2048 with the perplexity of a")
print("    sinusoidal model trained on 2048, training 11% faster with 11% less memory;")
print("    their Figure 1 shows sinusoidal, rotary (RoPE) and T5-bias models, trained")
print("    on WikiText-103 at 512 or 1024 tokens, getting worse as the input grows")
print("    past that length, and ALiBi not.")
print("  RoPE's known weakness: beyond its training length the rotations reach angles")
print("    the model never saw; Chen et al. (2023, position interpolation) report that")
print("    running a RoPE model (LLaMA) straight past its length makes perplexity")
print("    blow up, and squeeze the positions back into the trained range instead.")
print("The measurement agrees with both, at a far smaller scale: 2 layers, 16 tokens,")
print("one task; it says nothing about which scheme makes the better language model.")
