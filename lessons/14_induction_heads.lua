-- 14_induction_heads.lua — train a two-layer transformer and watch it learn to copy.
--
-- Every attention figure so far came from random weights. Here a tiny
-- attention-only transformer (2 layers, 4 heads each) is trained on
-- sequences that repeat themselves, and two kinds of heads form that real
-- language models have too: a layer-1 "previous-token head" (each token
-- looks one step back) and a layer-2 "induction head" (the current token
-- finds where it occurred before and looks at the token that came NEXT
-- there, which it then predicts). The loss on the repeated tokens drops
-- suddenly when they form. The lesson finds both heads by measurement,
-- checks them, and switches the first one off to show the second needs it.
--
-- Run it:   ./tensortrace lessons/14_induction_heads.lua            (loads the checkpoint)
--           ./tensortrace lessons/14_induction_heads.lua --retrain  (trains: under a minute on 2 cores)
--           ./tensortrace -q lessons/14_induction_heads.lua --retrain --steps 30
--                 (trains 30 steps and prints their losses only: the test's short re-train)
-- Checkpoint: lessons/data/induction.safetensors (written by --retrain)
-- Figures:  images/14_heads_before.png  images/14_heads_after.png
--           images/14_loss.png  images/14_ablation.png

local args = {...}
local retrain, prefix_steps = false, nil
for i, a in ipairs(args) do
  if a == "--retrain" then retrain = true end
  if a == "--steps" then prefix_steps = math.tointeger(tonumber(args[i + 1])) end
end
-- the model (weights, forward pass, head scores) is shared with lessons 06 and 09
local M = dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/induction_model.lua")
local CHECKPOINT = M.CHECKPOINT
local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end
if prefix_steps or not exists(CHECKPOINT) then retrain = true end

tt.manual_seed(14)
local V, D, H, N, Dh = M.V, M.D, M.H, M.N, M.Dh   -- vocabulary, width, heads, length
local B = 32                                       -- batch
local EVAL_B = 8                                   -- sequences per period in the evaluation set
local STEPS, LR = 1000, 1e-3
-- thresholds the checks use, with margin under what the trained model measured
-- (previous-token 0.50, induction 0.57, ablation +3.06 nats, stripe 0.11 without it)
local PREV_MIN, IND_MIN, ABLATE_MIN, STRIPE_GONE = 0.4, 0.4, 2.0, 0.25

tt.trace.section("1. The task: random tokens, then the same tokens again")
print(string.format("Each sequence is P random tokens (of V = %d) repeated until it is N = %d long.", V, N))
print("The first P tokens are noise: nothing predicts them, the best loss there is")
print(string.format("ln %d = %.3f (a uniform guess). Every later token is a copy: at position i the", V, math.log(V)))
print("answer is the token that followed the same token P steps earlier. Only a")
print("model that looks back can get the repeated part right.")
local repeated_batch = M.repeated_batch     -- P random tokens, repeated: [b, N] ids
local function draw_period() return tt.randint(N // 4, N // 2 + 1, 1):item() end
print("")
print(string.format("The period P is drawn anew for each batch, uniformly in %d..%d. Why not", N // 4, N // 2))
print("always \"the second half repeats the first\" (P = N/2)? Then the answer at")
print("position i always sits at position i - P + 1, a fixed offset, and a head can")
print("find it from the position embeddings alone, without reading any token: a")
print("prototype trained that way solved the task with no previous-token head at")
print("all. A model takes whatever shortcut the data allows. With a varying period")
print("the only way to the answer is through the tokens themselves.")
tt.trace.off()
local example_P = 11
local example = repeated_batch(1, example_P)
tt.trace.on()
local example_tokens = M.chars(example[1]:totable())
print(string.format("Example, P = %d:  %s", example_P, table.concat(example_tokens)))

tt.trace.section("2. The model: embeddings, two attention layers, unembedding")
print("h = token embedding + position embedding, then two layers of causal")
print("multi-head attention, each adding its output to h (the residual stream),")
print("then a Linear to V logits. No MLP, no LayerNorm: attention only.")
print("The weights are plain tensors in one table, by name (not tt.nn modules), so")
print("the checkpoint loads straight into the same table.")
print("The model's code is in lessons/lib/induction_model.lua: lessons 06 and 09")
print("load it too, with the weights trained here.")
tt.trace.off()                            -- random init: not part of the math
local model = M.init()
tt.trace.on()
local NAMES = M.NAMES
local count = 0
for _, name in ipairs(NAMES) do count = count + model[name]:numel() end
print(string.format("%d parameters: D = %d, H = %d heads of Dh = %d, N = %d positions.", count, D, H, Dh, N))

-- The forward pass (M.forward): x [b, N] ids -> logits [b, N, V], and with
-- opts.weights each layer's attention weights; opts.ablate = {layer, head}.
local function forward(x, opts) return M.forward(model, x, opts) end

-- Per-token loss: -log p(next token), [b, N-1]; column i predicts token i+1.
local function token_losses(logits, x)
  local b = x:size(1)
  local rows = logits:narrow(2, 1, N - 1):reshape(b * (N - 1), V)
  local targets = x:narrow(2, 2, N - 1):reshape(b * (N - 1))
  return tt.cross_entropy(rows, targets, {reduction = "none"}):view(b, N - 1)
end
-- The two parts for period P: first occurrences (tokens 2..P) and the
-- repeated tokens an induction head can predict (tokens P+2..N; token P+1
-- starts the repeat and no model can know the period in advance).
local function split_losses(losses, P)
  return losses:narrow(2, 1, P - 1):mean(), losses:narrow(2, P + 1, N - 1 - P):mean()
end

-- ===== Measuring what a head does =====
-- A fixed evaluation set: EVAL_B sequences for every period, 8..16 (72 in
-- all, enough for the scores' two decimals). Each is drawn as a batch of B and
-- cut, so the random stream, and with it the training, stays the same.
local eval_set, eval_x = {}, {}
tt.trace.off()
for P = N // 4, N // 2 do eval_set[#eval_set + 1] = {P = P, x = repeated_batch(B, P):narrow(1, 1, EVAL_B)} end
for k, e in ipairs(eval_set) do eval_x[k] = e.x end
eval_x = tt.cat(eval_x, 1)              -- the 72 as one batch: the forward pass does not depend on P
tt.trace.on()
-- Over the whole evaluation set: previous-token score of every layer-1 head,
-- induction score of every layer-2 head, and the repeated-token loss.
local function measure(opts)
  local prev, ind, rep = {}, {}, 0
  for h = 1, H do prev[h], ind[h] = 0, 0 end
  tt.trace.off()                        -- one forward pass over all 9 batches: measured, not traced
  tt.no_grad(function()
    local logits, w = forward(eval_x, {weights = true, ablate = opts and opts.ablate})
    local losses = token_losses(logits, eval_x)
    for k, e in ipairs(eval_set) do
      local first = (k - 1) * EVAL_B + 1 -- this period's sequences in the batch
      local p1 = M.head_scores(w[1]:narrow(1, first, EVAL_B), e.P).prev
      local p2 = M.head_scores(w[2]:narrow(1, first, EVAL_B), e.P).ind
      for h = 1, H do prev[h], ind[h] = prev[h] + p1[h] / #eval_set, ind[h] + p2[h] / #eval_set end
      local _, r = split_losses(losses:narrow(1, first, EVAL_B), e.P)
      rep = rep + r:item() / #eval_set
    end
  end)
  tt.trace.on()
  return {prev = prev, ind = ind, repeated = rep}
end
local function argmax(list)
  local best = 1
  for i = 2, #list do if list[i] > list[best] then best = i end end
  return best
end
local function fmt_list(list)
  local s = {}
  for i, v in ipairs(list) do s[i] = string.format("%.2f", v) end
  return table.concat(s, "  ")
end

-- Every head of both layers on the example sequence: [2H, N, N].
local function draw_heads(path, title, titles)
  tt.trace.off()
  local _, w = tt.no_grad(forward, example, {weights = true})
  local all = tt.cat({w[1][1], w[2][1]}, 1)
  tt.heatmap(all, path, {
    title = title, panel_titles = titles, xlabels = example_tokens, ylabels = example_tokens,
    xtitle = "Key", ytitle = "Query", mask = {["masked: exactly 0"] = ~tt.causal_mask(N)},
    cmap = "viridis", vmin = 0, vmax = 1, annotate = false })
  tt.trace.on()
end
local plain_titles = {}
for l = 1, 2 do for h = 1, H do plain_titles[#plain_titles + 1] = string.format("layer %d head %d", l, h) end end

tt.trace.section("3. Before training")
local before = measure()
print(string.format("Two numbers say what a head does, measured over 9 batches of %d sequences (P = 8..16):", EVAL_B))
print("  previous-token score (layer 1): mean weight a query puts on the token just before it")
print("  induction score (layer 2): mean weight a repeated token puts on the token that")
print("    followed its earlier occurrence (key i - P + 1 for query i)")
print("  layer 1 previous-token scores: " .. fmt_list(before.prev))
print("  layer 2 induction scores:      " .. fmt_list(before.ind))
print(string.format("  loss on the repeated tokens:   %.3f (ln %d = %.3f)", before.repeated, V, math.log(V)))
draw_heads("images/14_heads_before.png",
  string.format("Before training: every head, P = %d (a row is a query's weights)", example_P), plain_titles)
print("Figure: " .. tt.figure_path("images/14_heads_before.png") .. ", every head of both layers, random weights.")
local untrained_max = math.max(math.max(table.unpack(before.prev)), math.max(table.unpack(before.ind)))
if untrained_max > 0.25 then error("untrained heads should spread their weight") end
print(string.format("Checked: untrained, no head puts more than %.2f on its expected key.", 0.25))

tt.trace.section("4. One training step, traced")
print(string.format("AdamW, lr %g, weight decay 0.01; each step a batch of B = %d sequences with", LR, B))
print("a fresh period P. The loss is the mean of -log p(next token) over every")
print("position; the trace shows the whole step once: forward, loss, backward, update.")
local params = {}
for i, name in ipairs(NAMES) do params[i] = model[name] end
local opt = tt.optim.AdamW(params, {lr = LR, weight_decay = 0.01})
local curve = {first = {}, repeated = {}}
local function train_step()
  local P = draw_period()
  local x = repeated_batch(B, P)
  local losses = token_losses(forward(x), x)
  local loss = losses:mean()
  opt:zero_grad()
  loss:backward()
  opt:step()
  local first, rep = split_losses(losses:detach(), P)
  curve.first[#curve.first + 1] = first:item()
  curve.repeated[#curve.repeated + 1] = rep:item()
  return loss:item()
end
local step1_loss = train_step()
print(string.format("Step 1: loss %.4f.", step1_loss))

tt.trace.section("5. Training (the loop is not traced)")
tt.trace.off()
if prefix_steps then
  -- the test's short re-train: the losses of the first steps, to 9 digits
  print(string.format("step 1 loss %.9g", step1_loss))
  for step = 2, prefix_steps do print(string.format("step %d loss %.9g", step, train_step())) end
  return
end
local progress = tt.isatty(2)              -- a line for a person watching, never into a file
if retrain then
  local t0 = tt.clock()
  for step = 2, STEPS do
    local loss = train_step()
    if progress and (step % 10 == 0 or step == STEPS) then
      local elapsed = tt.clock() - t0
      io.stderr:write(string.format("\rstep %4d/%d  loss %.3f  repeated %.3f  %6.0f tokens/s ",
        step, STEPS, loss, curve.repeated[step], step * B * N / elapsed))
    end
  end
  if progress then io.stderr:write("\n") end
  local seconds = tt.clock() - t0
  print(string.format("Trained %d steps in %.1f s (%.0f tokens/s).", STEPS, seconds, STEPS * B * N / seconds))
  local tensors = {["curve.first"] = tt.tensor(curve.first), ["curve.repeated"] = tt.tensor(curve.repeated)}
  for _, name in ipairs(NAMES) do tensors[name] = model[name]:detach() end
  tt.save(CHECKPOINT, tensors, {steps = tostring(STEPS), seed = "14", lr = tostring(LR)})
  print("Saved " .. CHECKPOINT .. ".")
else
  local loaded, meta
  model, loaded, meta = M.load()
  curve.first, curve.repeated = loaded["curve.first"]:totable(), loaded["curve.repeated"]:totable()
  if #curve.first ~= STEPS or meta.steps ~= tostring(STEPS) then error(CHECKPOINT .. " is not from this lesson") end
end
tt.trace.on()
print(string.format("%d steps of %d tokens each. The weights come from", STEPS, B * N))
print(CHECKPOINT .. " unless the script runs with --retrain,")
print("which trains again from the same seed and writes the same bytes: the")
print("training is deterministic for any thread count.")

tt.trace.section("6. The phase change")
-- means over windows of 20 steps: one point per window, at its last step
local WINDOW = 20
local function windowed(list)
  local xs, ys = {}, {}
  for s = WINDOW, #list, WINDOW do
    local sum = 0
    for i = s - WINDOW + 1, s do sum = sum + list[i] end
    xs[#xs + 1], ys[#ys + 1] = s, sum / WINDOW
  end
  return xs, ys
end
local xs, first_w = windowed(curve.first)
local _, rep_w = windowed(curve.repeated)
local guess = {}
for i = 1, #xs do guess[i] = math.log(V) end
tt.plot({
  {name = "first occurrence", x = xs, y = first_w},
  {name = "repeated part", x = xs, y = rep_w},
  {name = string.format("ln %d: a uniform guess", V), x = xs, y = guess},
}, "images/14_loss.png", {
  title = string.format("Training loss, mean over %d steps: the repeated part drops suddenly", WINDOW),
  xtitle = "step", ytitle = "loss (nats per token)", ymin = 0 })
print("Figure: " .. tt.figure_path("images/14_loss.png") .. ", the loss of the two parts during training.")
-- the step where the repeated-token loss first falls below half the uniform guess
local drop_at
for i, y in ipairs(rep_w) do
  if y < math.log(V) / 2 then drop_at = xs[i]; break end
end
print(string.format("Repeated part: %.2f over steps 1-%d, %.2f over the last %d steps; it first", rep_w[1], WINDOW, rep_w[#rep_w], WINDOW))
print(string.format("falls below ln %d / 2 in the window ending at step %d.", V, drop_at or -1))
print(string.format("First occurrences: %.2f at the end, at or above the uniform guess ln %d = %.2f:", first_w[#first_w], V, math.log(V)))
print("random tokens cannot be predicted, and the trained model even does a little")
print("worse than a uniform guess there, betting on copies that are not there.")

tt.trace.section("7. Finding the two heads by measurement")
local after = measure()
print("The same two scores on the trained model:")
print("  layer 1 previous-token scores: " .. fmt_list(after.prev))
print("  layer 2 induction scores:      " .. fmt_list(after.ind))
print(string.format("  loss on the repeated tokens:   %.3f (was %.3f)", after.repeated, before.repeated))
local prev_head, ind_head = argmax(after.prev), argmax(after.ind)
print(string.format("Previous-token head: layer 1 head %d (%.2f on the token just before).", prev_head, after.prev[prev_head]))
print(string.format("Induction head: layer 2 head %d (%.2f on the token after the earlier occurrence).", ind_head, after.ind[ind_head]))
print("Here every layer-2 head learned the same stripe; the lesson names the")
print("strongest. One previous-token head, and four heads with the induction stripe.")
if math.min(table.unpack(after.ind)) < IND_MIN then error("every layer-2 head should be an induction head") end
if after.prev[prev_head] < PREV_MIN then error("a layer-1 head should attend to the previous token") end
if after.ind[ind_head] < IND_MIN then error("a layer-2 head should attend after the earlier occurrence") end
print(string.format("Checked: previous-token score above %.2f, induction score above %.2f", PREV_MIN, IND_MIN))
print(string.format("(untrained, every score was at most %.2f).", untrained_max))
-- every head titled by its measured score, named where it clears the check's
-- threshold (as lesson 06 names the heads of this same model)
local titles = {}
for l = 1, 2 do
  for h = 1, H do
    local score, min, name = l == 1 and after.prev[h] or after.ind[h], l == 1 and PREV_MIN or IND_MIN,
                             l == 1 and "previous token" or "induction"
    titles[#titles + 1] = string.format("L%d H%d: %s %.2f", l, h, score >= min and name or (l == 1 and "prev." or "ind."), score)
  end
end
draw_heads("images/14_heads_after.png",
  string.format("After training: every head, P = %d (a row is a query's weights)", example_P), titles)
print("Figure: " .. tt.figure_path("images/14_heads_after.png") .. ". The previous-token head is a line just")
print("below the diagonal. Each induction head is a stripe P - 1 = 10 keys left of")
print("the diagonal, starting at query P + 1 = 12: each repeated token looks at")
print("the token that followed its earlier occurrence.")
print("How the two work together: the previous-token head copies into position j")
print("what token stood at j - 1. A repeated token at i then searches, with its")
print("query, for a position whose previous token equals itself: that is j = i - P + 1,")
print("the token after its earlier occurrence, whose value it copies to the output.")

tt.trace.section("8. Ablation: switch the previous-token head off")
print(string.format("Multiply layer 1 head %d's output by 0 (before W_O) and measure again.", prev_head))
print("If the induction head needs it, the repeated-token loss goes back up.")
local ablated = {}
local losses_by_head = {}
for h = 1, H do
  ablated[h] = measure({ablate = {1, h}})
  losses_by_head[h] = ablated[h].repeated
  print(string.format("  without layer 1 head %d: repeated-token loss %.3f, induction score %.2f",
    h, ablated[h].repeated, ablated[h].ind[ind_head]))
end
local without = ablated[prev_head]
if without.repeated < after.repeated + ABLATE_MIN then
  error("removing the previous-token head should raise the repeated-token loss")
end
if without.ind[ind_head] > STRIPE_GONE then error("without its input the induction stripe should fade") end
print(string.format("Checked: without the previous-token head the repeated-token loss rises by more"))
print(string.format("than %.1f nats (%.3f -> %.3f) and the induction head's score falls below %.2f.",
  ABLATE_MIN, after.repeated, without.repeated, STRIPE_GONE))
for h = 1, H do
  if h ~= prev_head and losses_by_head[h] > after.repeated + 0.5 then error("another layer-1 head matters too") end
end
print("Switching off any other layer-1 head raises it by less than 0.5, if at all (the figure).")
local bar_labels, bar_values = {"trained"}, {after.repeated}
for h = 1, H do
  bar_labels[#bar_labels + 1] = string.format("no L1 H%d", h)
  bar_values[#bar_values + 1] = losses_by_head[h]
end
tt.bars(tt.tensor(bar_values), "images/14_ablation.png", {
  title = "Repeated-token loss with one layer-1 head switched off", xlabels = bar_labels })
print("Figure: " .. tt.figure_path("images/14_ablation.png") .. ".")
