-- 19_linear_attention.lua — attention without the N x N matrix, by changing the algebra.
--
-- Softmax attention computes softmax(Q K^T) V: the N x N scores come first,
-- so its cost grows like N^2. Linear attention (Katharopoulos et al., 2020)
-- replaces exp(q . k) by a product of feature maps phi(q) . phi(k), here
-- phi = elu + 1 (positive, so the weights stay positive). Then the
-- product can be bracketed the other way, phi(Q) (phi(K)^T V): a [Dh, Dh]
-- matrix instead of [N, N], and the cost grows like N. Under a causal mask
-- that matrix becomes a running state, updated once per token, as an RNN's.
-- This lesson checks the algebra (the three forms agree), counts the cost
-- against tt.sdpa, and measures what it gives up: trained on lesson 14's
-- repeated-token task beside softmax attention, with the same start.
--
-- Run it:   ./tensortrace lessons/19_linear_attention.lua            (loads the checkpoint)
--           ./tensortrace lessons/19_linear_attention.lua --retrain  (trains the linear model: under a minute on 2 cores)
-- Checkpoint: lessons/data/linear_attention.safetensors (written by --retrain);
--             the softmax model is lesson 14's (lessons/data/induction.safetensors)
-- Figures:  images/19_cost.png  images/19_loss.png

local args = {...}
local retrain = false
for _, a in ipairs(args) do if a == "--retrain" then retrain = true end end
local M = dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/induction_model.lua")
local here = arg[0]:match("^(.*)/") or "."
local CHECKPOINT = here .. "/data/linear_attention.safetensors"
local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end
if not exists(CHECKPOINT) then retrain = true end

-- phi(x) = elu(x) + 1: x + 1 above 0, exp(x) below, written relu(x) + exp(min(x, 0))
-- with min(x, 0) = -relu(-x) (the exp never overflows; relu's gradient is the cheapest)
-- (in the trace: relu, neg, relu, neg, exp, add; given a name, the result is
-- labelled "phi(name) = elu + 1")
local function phi(x, name)
  local f = x:relu() + (-(-x):relu()):exp() if name then f:label("phi(" .. name .. ") = elu + 1") end   -- one line: the add's row shows the label
  return f
end

-- The three forms of linear attention, for q, k, v [..., N, Dh].
-- 1. quadratic: the N x N weights phi(q) phi(k)^T, masked, each row over its sum
local function linear_quadratic(q, k, v, causal)
  local a = phi(q, "q"):matmul(phi(k, "k"):mT())
  if causal then a = a:masked_fill(~tt.causal_mask(q:size(-2), k:size(-2)), 0) end
  return a:matmul(v) / a:sum(-1, true)
end
-- 2. linear (not causal): phi(q) (phi(k)^T v), over phi(q) (phi(k)^T 1); no N x N anywhere
local function linear_global(q, k, v)
  local fk = phi(k, "k")
  local kv = fk:mT():matmul(v)                    -- [..., Dh, Dh]
  local z = fk:sum(-2, true):mT()                 -- [..., Dh, 1]
  local fq = phi(q, "q")
  return fq:matmul(kv) / fq:matmul(z)
end
-- 3. recurrent (causal): a state S = sum phi(k_j) v_j^T and z = sum phi(k_j)
--    over the tokens so far, updated token by token; out_i = phi(q_i) S / phi(q_i) z
local function linear_recurrent(q, k, v)
  local n, dh = q:size(-2), q:size(-1)
  local lead = q:shape()
  local S = tt.zeros(table.unpack(lead, 1, #lead - 2), dh, v:size(-1))
  local z = tt.zeros(table.unpack(lead, 1, #lead - 2), dh, 1)
  local fq, fk, outs = phi(q, "q"), phi(k, "k"), {}
  for i = 1, n do
    local ki = fk:narrow(-2, i, 1)                 -- [..., 1, Dh]
    S = S + ki:mT():matmul(v:narrow(-2, i, 1))
    z = z + ki:mT()
    local qi = fq:narrow(-2, i, 1)
    outs[i] = qi:matmul(S) / qi:matmul(z)
  end
  return tt.cat(outs, -2)
end

tt.manual_seed(19)
local B, H, N, Dh = 1, 2, 12, 8

tt.trace.section("1. The algebra: bracket the product the other way")
print("Softmax attention: out_i = sum_j exp(q_i.k_j) v_j / sum_j exp(q_i.k_j). The")
print("exp of a dot product does not split into a part of q times a part of k, so")
print("every pair (i, j) is computed: the N x N scores. Linear attention uses")
print("phi(q_i).phi(k_j) instead, phi(x) = elu(x) + 1 > 0 elementwise, and then")
print("  sum_j (phi(q_i).phi(k_j)) v_j = phi(q_i) . (sum_j phi(k_j) v_j^T)")
print("the sum over j no longer depends on i: compute phi(K)^T V once, [Dh, Dh].")
tt.trace.off()
local q, k, v = tt.randn(B, H, N, Dh), tt.randn(B, H, N, Dh), tt.randn(B, H, N, Dh)
tt.trace.on()
local quad = linear_quadratic(q, k, v, false):label("quadratic form")
local lin = linear_global(q, k, v):label("linear form")
tt.assert_close(lin, quad, 1e-5, 1e-6, "(phi(Q) phi(K)^T) V = phi(Q) (phi(K)^T V)")
-- the largest tensor each form makes, from the trace's counters (bytes)
local function largest_made(f)
  tt.trace.off()
  tt.trace.reset()
  f(q, k, v)
  local most = 0
  for _, op in pairs(tt.trace.summary{print = false}) do most = math.max(most, op.largest_bytes) end
  tt.trace.reset()
  tt.trace.on()
  return most
end
local big_quad, big_lin = largest_made(linear_quadratic), largest_made(linear_global)
if big_lin > 4 * B * H * N * Dh or big_quad < 4 * B * H * N * N then error("the linear form should make no N x N") end
print(string.format("Checked: both bracketings agree on [%d,%d,%d,%d]. The largest tensor the", B, H, N, Dh))
print(string.format("quadratic form makes is %d bytes (the [%d,%d,%d,%d] weights); the linear form's is", big_quad, B, H, N, N))
print(string.format("%d bytes, the size of q itself: its only square is phi(K)^T V, [Dh, Dh] whatever N is.", big_lin))

tt.trace.section("2. Causal: a running state, as an RNN")
print("With a causal mask, query i sums over j <= i only. Keep the running sums")
print("  S_i = S_(i-1) + phi(k_i) v_i^T   [Dh, Dh]     z_i = z_(i-1) + phi(k_i)   [Dh]")
print("and out_i = phi(q_i) S_i / phi(q_i) z_i. Decoding keeps S and z, a fixed size,")
print("where softmax attention keeps a KV cache that grows with every token.")
local causal_quad = linear_quadratic(q, k, v, true):label("causal, quadratic")
tt.trace.off()
local rec = linear_recurrent(q, k, v)
tt.trace.on()
tt.assert_close(rec, causal_quad, 1e-5, 1e-6, "the recurrent form equals the masked parallel form")
print(string.format("Checked: the recurrent form (%d steps, traced off) equals the masked quadratic form.", N))
local state_floats = Dh * Dh + Dh
print(string.format("Per head the state is %d floats (S and z) at any length; a KV cache holds", state_floats))
print(string.format("2 Dh = %d floats a token: at N = %d it is %d, at 4096 it is %d.", 2 * Dh, N, 2 * Dh * N, 2 * Dh * 4096))

tt.trace.section("3. Cost vs N, counted by the trace")
print("FLOPs of one head (Dh = 64) as the trace counts them, not causal, for")
print("N = 16 .. 4096: softmax attention through tt.sdpa against the linear form.")
-- FLOPs the trace counted since the last tt.trace.reset(): the sum of the flops
-- column of tt.trace.summary{print = false} (lessons/lib/flops.lua, shared with
-- lessons 09, 10 and 18)
local counted_flops =
  dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/flops.lua").counted_flops
local Ns, soft_cost, lin_cost = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096}, {}, {}
tt.trace.off()
for i, n in ipairs(Ns) do
  local qq, kk, vv = tt.randn(1, 1, n, 64), tt.randn(1, 1, n, 64), tt.randn(1, 1, n, 64)
  tt.trace.reset()
  tt.sdpa(qq, kk, vv)
  soft_cost[i] = counted_flops()
  tt.trace.reset()
  linear_global(qq, kk, vv)
  lin_cost[i] = counted_flops()
end
tt.trace.reset()
tt.trace.on()
print("      N     sdpa FLOPs   linear FLOPs   ratio")
for i, n in ipairs(Ns) do
  print(string.format("  %5d  %13.3g  %13.3g  %6.1f", n, soft_cost[i], lin_cost[i], soft_cost[i] / lin_cost[i]))
end
local function slope(c) return math.log(c[#c] / c[#c - 1]) / math.log(Ns[#Ns] / Ns[#Ns - 1]) end
local s_soft, s_lin = slope(soft_cost), slope(lin_cost)
print(string.format("Log-log slopes between the last two N: sdpa %.2f, linear %.2f.", s_soft, s_lin))
if math.abs(s_soft - 2) > 0.05 or math.abs(s_lin - 1) > 0.05 then error("the slopes should be 2 and 1") end
print("Checked: softmax attention grows like N^2 (slope 2), linear attention like N (slope 1).")
local cross
for i = 1, #Ns do if soft_cost[i] > lin_cost[i] and not cross then cross = Ns[i] end end
if not cross or cross > 128 then error("the linear form should be cheaper from some N <= 128 on") end
print(string.format("At Dh = 64 the linear form is cheaper from N = %d on. Below, its Dh x Dh work", cross))
print("a token costs more than a row of N scores: the crossover sits near N = Dh.")
tt.plot({
  {name = "softmax (tt.sdpa)", x = Ns, y = soft_cost},
  {name = "linear", x = Ns, y = lin_cost},
}, "images/19_cost.png", {title = "FLOPs of one head (Dh = 64) vs N, as the trace counts them",
  xtitle = "N (tokens)", ytitle = "FLOPs", xlog = true, ylog = true, markers = true})
print("Figure: " .. tt.figure_path("images/19_cost.png") .. " (log-log).")

tt.trace.section("4. What it gives up: lesson 14's task, trained both ways")
print("Lesson 14's two-layer attention-only model learns to copy a repeated")
print("sequence: an induction head must find ONE earlier key, the token after the")
print("last occurrence, and put nearly all its weight there. Here the same model is")
print("trained with linear attention instead of softmax: the same initial weights,")
print("the same batches, the same 1000 AdamW steps (lesson 14's seed and draws);")
print("only the attention differs. It trains in the quadratic causal form, which")
print("equals the recurrent one (section 2), phi taken of q and k in one call (the")
print("same numbers to float rounding: checked). The softmax run is lesson 14's own.")
local V = M.V
local STEPS, TB, LR = 1000, 32, 1e-3

-- lesson 14's forward pass with the attention swapped in
local function forward(model, x, attend)
  local h = M.embed(model, x)
  for l = 1, 2 do
    local qq, kk, vv = M.qkv(model, l, h)
    h = M.add_heads(model, l, h, attend(qq, kk, vv))
  end
  return M.unembed(model, h)
end
local function softmax_attend(qq, kk, vv) return tt.sdpa(qq, kk, vv, {causal = true}) end
local function linear_attend(qq, kk, vv) return linear_quadratic(qq, kk, vv, true) end
-- the same linear model with fewer ops, for training: phi of q and k in one
-- call on the qkv projection, the causal mask made once
local hide = ~tt.causal_mask(M.N)
local function forward_linear(model, x)
  local h = M.embed(model, x)
  for l = 1, 2 do
    local b, n = h:size(1), h:size(2)
    local qkv = h:matmul(model["layer" .. l .. ".qkv"]:mT()):view(b, n, 3, M.H, M.Dh):permute(3, 1, 4, 2, 5)
    local fqk = phi(qkv:narrow(1, 1, 2))
    local a = fqk[1]:matmul(fqk[2]:mT()):masked_fill(hide, 0)
    h = M.add_heads(model, l, h, a:matmul(qkv[3]) / a:sum(-1, true))
  end
  return M.unembed(model, h)
end
local function token_losses(logits, x)
  local b = x:size(1)
  local rows = logits:narrow(2, 1, M.N - 1):reshape(b * (M.N - 1), V)
  local targets = x:narrow(2, 2, M.N - 1):reshape(b * (M.N - 1))
  return tt.cross_entropy(rows, targets, {reduction = "none"}):view(b, M.N - 1)
end
-- mean loss on the repeated tokens (P+2..N) and the first occurrences (2..P)
local function split_losses(losses, P)
  return losses:narrow(2, 1, P - 1):mean(), losses:narrow(2, P + 1, M.N - 1 - P):mean()
end

-- lesson 14's random stream, draw for draw: its example, its init, its evaluation set
tt.trace.off()
tt.manual_seed(14)
M.repeated_batch(1, 11)
local model = M.init()
local eval_set = {}
for P = M.N // 4, M.N // 2 do eval_set[#eval_set + 1] = {P = P, x = M.repeated_batch(TB, P):narrow(1, 1, 8)} end
local curve = {first = {}, repeated = {}}
if retrain then
  local params = {}
  for i, name in ipairs(M.NAMES) do params[i] = model[name] end
  local opt = tt.optim.AdamW(params, {lr = LR, weight_decay = 0.01})
  local t0 = tt.clock()
  for step = 1, STEPS do
    local P = tt.randint(M.N // 4, M.N // 2 + 1, 1):item()
    local x = M.repeated_batch(TB, P)
    local losses = token_losses(forward_linear(model, x), x)
    local loss = losses:mean()
    opt:zero_grad()
    loss:backward()
    opt:step()
    local first, rep = split_losses(losses:detach(), P)
    curve.first[step], curve.repeated[step] = first:item(), rep:item()
  end
  print(string.format("Trained the linear model %d steps in %.1f s.", STEPS, tt.clock() - t0))
  local tensors = {["curve.first"] = tt.tensor(curve.first), ["curve.repeated"] = tt.tensor(curve.repeated)}
  for _, name in ipairs(M.NAMES) do tensors[name] = model[name]:detach() end
  tt.save(CHECKPOINT, tensors, {steps = tostring(STEPS), seed = "14", lr = tostring(LR), attention = "linear"})
  print("Saved " .. CHECKPOINT .. ".")
else
  local loaded
  model, loaded = M.load(CHECKPOINT)
  curve.first, curve.repeated = loaded["curve.first"]:totable(), loaded["curve.repeated"]:totable()
end
tt.assert_close(forward_linear(model, eval_set[1].x), forward(model, eval_set[1].x, linear_attend), 1e-5, 1e-5,
  "the training form is the lesson's linear attention")
local soft_model, soft_loaded = M.load()
local soft_curve = soft_loaded["curve.repeated"]:totable()
if #soft_curve ~= STEPS or #curve.repeated ~= STEPS then error("the curves should have " .. STEPS .. " steps") end
-- both models on lesson 14's evaluation set
local function evaluate(m, attend)
  local rep, first, acc = 0, 0, 0
  tt.no_grad(function()
    for _, e in ipairs(eval_set) do
      local logits = forward(m, e.x, attend)
      local f, r = split_losses(token_losses(logits, e.x), e.P)
      first, rep = first + f:item() / #eval_set, rep + r:item() / #eval_set
      -- accuracy on the repeated tokens: predictions at positions P+1..N-1 of tokens P+2..N
      local n = M.N - 1 - e.P
      local hit = logits:narrow(2, e.P + 1, n):argmax(-1):eq(e.x:narrow(2, e.P + 2, n)):float():mean():item()
      acc = acc + hit / #eval_set
    end
  end)
  return first, rep, acc
end
local soft_first, soft_rep, soft_acc = evaluate(soft_model, softmax_attend)
local lin_first, lin_rep, lin_acc = evaluate(model, linear_attend)
tt.trace.on()
print("Loss on lesson 14's evaluation set (72 sequences, P = 8..16), nats per token:")
print("                      first occurrences   repeated part")
print(string.format("  uniform guess           %.3f            %.3f", math.log(V), math.log(V)))
print(string.format("  softmax (lesson 14)     %.3f            %.3f", soft_first, soft_rep))
print(string.format("  linear, phi = elu + 1   %.3f            %.3f", lin_first, lin_rep))
if not (soft_rep < 1.0) then error("the softmax model should copy the repeated part") end
if not (lin_rep > soft_rep + 1.0) then error("the linear model should copy clearly worse") end
print(string.format("Checked: on the repeated part linear attention's loss is %.2f nats above softmax's", lin_rep - soft_rep))
print(string.format("after the same 1000 steps; its top guess is right on %.0f%% of the repeated tokens,", 100 * lin_acc))
print(string.format("softmax's on %.0f%%. On the first occurrences, which nothing can predict, both do", 100 * soft_acc))
print("no better than the uniform guess. (The run reuses lesson 14's learning rate,")
print("which was chosen for softmax; one seed.)")
-- measured: layer 2's weights of both models, lesson 14's induction score
-- (mean weight a repeated token puts on the token after its earlier occurrence)
local function layer2_weights(m, x, linear)
  local hh, w = M.embed(m, x), nil
  for l = 1, 2 do
    local qq, kk, vv = M.qkv(m, l, hh)
    local o
    if linear then
      local a = phi(qq):matmul(phi(kk):mT()):masked_fill(hide, 0)
      w = a / a:sum(-1, true)
      o = w:matmul(vv)
    else
      o, w = tt.sdpa(qq, kk, vv, {causal = true, weights = true})
    end
    hh = M.add_heads(m, l, hh, o)
  end
  return w
end
local function best_induction(m, linear)
  local sum = {}
  tt.trace.off()
  tt.no_grad(function()
    for _, e in ipairs(eval_set) do
      for hd, v in ipairs(M.head_scores(layer2_weights(m, e.x, linear), e.P).ind) do
        sum[hd] = (sum[hd] or 0) + v / #eval_set
      end
    end
  end)
  tt.trace.on()
  return math.max(table.unpack(sum))
end
local soft_ind, lin_ind = best_induction(soft_model, false), best_induction(model, true)
print(string.format("Measured: the best layer-2 head's induction score is %.2f with softmax and %.2f", soft_ind, lin_ind))
local uniform = 0                  -- the same score for weights spread evenly over each row's keys
for _, e in ipairs(eval_set) do
  for i = e.P + 1, M.N do uniform = uniform + 1 / i / (M.N - e.P) / #eval_set end
end
print(string.format("with linear attention (weights spread evenly over each row's keys give %.2f).", uniform))
if not (lin_ind < soft_ind / 2) then error("the linear heads should pick the copied token far less sharply") end
print("Checked: linear attention's sharpest head puts less than half the weight there.")
print("")
print("Why, in the literature's terms (Schlag et al. 2021, \"Linear Transformers Are")
print("Secretly Fast Weight Programmers\"; Arora et al. 2023, \"Zoology\"; Jelassi et")
print("al. 2024, \"Repeat After Me\"): the causal state S = sum_j phi(k_j) v_j^T is a")
print(string.format("fixed [Dh, Dh] = [%d, %d] memory, written once per token. Reading it with phi(q)", M.Dh, M.Dh))
print("returns sum_j (phi(q).phi(k_j)) v_j: exact recall of one pair needs phi(q)")
print("orthogonal to every other key's features. Features of elu + 1 are all")
print("positive, so no two are ever orthogonal, and every stored pair leaks into")
print("every read; with up to 16 pairs to recall in a 16-dim state there is no room")
print("to keep them apart. (A single weight can still be near 0: elu + 1 is exp(x)")
print("for x < 0. What is missing is exp's contrast: softmax's weight ratio grows")
print("exponentially with the score gap, phi(q).phi(k) only linearly in each")
print("feature once the features are positive.)")
tt.trace.off()
local cos_sum, cos_n = 0, 0
tt.no_grad(function()
  for _, e in ipairs(eval_set) do
    local hh = M.embed(model, e.x)
    local qq, kk, vv = M.qkv(model, 1, hh)
    hh = M.add_heads(model, 1, hh, linear_attend(qq, kk, vv))
    local _, k2 = M.qkv(model, 2, hh)
    local fk = phi(k2)
    local unit = fk / (fk * fk):sum(-1, true):sqrt()
    local cos = unit:matmul(unit:mT())                  -- [b, H, N, N], diagonal 1
    local n = M.N
    cos_sum = cos_sum + (cos:sum():item() - cos:size(1) * cos:size(2) * n) / (cos:size(1) * cos:size(2) * n * (n - 1))
    cos_n = cos_n + 1
  end
end)
tt.trace.on()
local mean_cos = cos_sum / cos_n
print(string.format("Measured on the trained model: two different keys' layer-2 features have a mean"))
print(string.format("cosine of %.2f (orthogonal would be 0; every pair is above 0 by construction).", mean_cos))
print("The remedies in current models add a decay or a gate to the state, so old")
print("pairs fade and make room: RetNet (Sun et al. 2023), gated linear attention")
print("(Yang et al. 2023), Mamba-2 (Dao and Gu 2024).")
-- the two curves, in windows of 20 steps
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
local wx, soft_w = windowed(soft_curve)
local _, lin_w = windowed(curve.repeated)
local guess = {}
for i = 1, #wx do guess[i] = math.log(V) end
tt.plot({
  {name = "softmax (lesson 14)", x = wx, y = soft_w},
  {name = "linear, elu + 1", x = wx, y = lin_w},
  {name = "uniform guess", x = wx, y = guess},
}, "images/19_loss.png", {
  title = string.format("Training loss on the repeated part, mean over %d steps", WINDOW),
  xtitle = "step", ytitle = "loss (nats per token)", ymin = 0 })
print("Figure: " .. tt.figure_path("images/19_loss.png") .. ", the repeated part's training loss, both runs.")
local function drop_at(ys)        -- the first window below ln V / 2, as lesson 14 reads it
  for i, y in ipairs(ys) do if y < math.log(V) / 2 then return wx[i] end end
end
local soft_drop, lin_drop = drop_at(soft_w), drop_at(lin_w)
if not soft_drop or lin_drop then error("softmax should cross ln V / 2 and linear should not") end
print(string.format("Last %d steps: softmax %.2f, linear %.2f. Both start alike (the same weights and", WINDOW, soft_w[#soft_w], lin_w[#lin_w]))
print(string.format("batches); softmax falls below ln %d / 2 at step %d, as in lesson 14, while the linear", V, soft_drop))
print("curve falls slowly and is still falling at step 1000: this measures 1000 steps,")
print("not the best a linear model could reach with more.")

print("")
print("Lesson 21 puts linear attention beside every other variant of the course,")
print("question by question.")
