-- 09_kv_cache.lua — autoregressive decoding with a growing K/V cache.
--
-- Training sees the whole sequence at once and hides the future with a causal
-- mask. Generation makes one token at a time: each step has ONE new query, and
-- the keys and values of all earlier tokens are kept in a cache instead of
-- being recomputed. This lesson decodes step by step, checks every step
-- against full causal attention, reads from the trace's FLOP counters what the
-- cache saves at each step, measures the cache per token for MHA, GQA and MQA,
-- and shows why a single new query needs lower-right causal alignment.
--
-- Run:  ./tensortrace lessons/09_kv_cache.lua      (trace of every shape)
--       ./tensortrace -q lessons/09_kv_cache.lua   (narrative only)
-- The last section decodes with the model lesson 14 trained (shared code in
-- lessons/lib/induction_model.lua): its induction heads predict a repeat.
-- Figures: images/09_decode_weights.png, images/09_alignment.png,
--          images/09_trained_decode.png

tt.manual_seed(0)

local B, N, D = 1, 6, 32      -- one sequence of 6 tokens, model width 32
local H, Hkv = 4, 2           -- 4 query heads share 2 K/V heads (GQA, lesson 07)
local Dh = D // H             -- 8

tt.trace.section("Training: all 6 positions at once, future hidden by the causal mask")
print("With the whole sequence known (teacher forcing), one pass computes every")
print("position; the causal mask keeps position i from reading positions after i.")
local x = tt.randn(B, N, D):named("B", "N", "D"):label("X")
local Wq = tt.nn.Linear(D, H * Dh, {bias = false})
local Wk = tt.nn.Linear(D, Hkv * Dh, {bias = false})
local Wv = tt.nn.Linear(D, Hkv * Dh, {bias = false})
-- xs: [B, n, D] -> q [B,H,Nq,Dh], k and v [B,Hkv,Nk,Dh]; `tag` names them in the
-- trace. The same tokens are named by role: Nq as queries, Nk as keys and values.
local function project(xs, tag)
  return tt.rearrange(Wq(xs), "B Nq (H Dh) -> B H Nq Dh", {H = H}):label("q" .. tag),
         tt.rearrange(Wk(xs), "B Nk (G Dh) -> B G Nk Dh", {G = Hkv}):label("k" .. tag),
         tt.rearrange(Wv(xs), "B Nk (G Dh) -> B G Nk Dh", {G = Hkv}):label("v" .. tag)
end
-- Total FLOPs the trace counted since the last tt.trace.reset(): the sum of
-- the flops column of tt.trace.summary{print = false} over every op kind.
-- Lessons 10, 18 and 19 count the same way, with the same function, from
-- lessons/lib/flops.lua.
local counted_flops =
  dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/flops.lua").counted_flops
local q, k, v = project(x, "")
local full, full_w = tt.sdpa(q, k, v, {causal = true, weights = true})
full:label("full causal output")

tt.trace.section("Decoding: one token per step, K and V appended to a cache")
print("Now pretend the tokens arrive one by one. At step t we project only token t:")
print("one query [B,H,1,Dh], one key and one value [B,Hkv,1,Dh]. The key and value")
print("are appended to the cache along the sequence dim (tt.cat on Nk), and the new")
print("query attends over the whole cache. Earlier K/V are never recomputed.")
local k_cache, v_cache
local step_rows = {}          -- each step's weights, padded to N columns (for the figure)
local flops_cached = {}       -- FLOPs of each decode step, as the trace counted them
for t = 1, N do
  tt.trace.reset()
  if t == 3 then
    tt.trace.off()
    print("(trace paused for steps 3..6: the same ops, only the cache length grows)")
  end
  local q_t, k_t, v_t = project(x:narrow("N", t, 1), " new")
  if k_cache == nil then
    k_cache, v_cache = k_t:label("K cache"), v_t:label("V cache")   -- token 1 starts the cache
  else
    k_cache = tt.cat({k_cache, k_t}, "Nk"):label("K cache")
    v_cache = tt.cat({v_cache, v_t}, "Nk"):label("V cache")
  end
  local out_t, w_t = tt.sdpa(q_t, k_cache, v_cache, {causal = true, weights = true})
  flops_cached[t] = counted_flops()
  print(string.format("step %d: query [%s]  K cache [%s]  V cache [%s]  weights [%s]", t,
        table.concat(q_t:shape(), ","), table.concat(k_cache:shape(), ","),
        table.concat(v_cache:shape(), ","), table.concat(w_t:shape(), ",")))
  if t < 3 then tt.trace.off() end   -- checks and figure bookkeeping: not traced
  tt.assert_close(out_t, full:narrow("Nq", t, 1), 1e-5, 1e-5,
                  "decode step " .. t .. " == row " .. t .. " of full causal attention")
  -- keys t+1..N do not exist yet at step t: their weight is 0 by construction
  step_rows[t] = t < N and tt.cat({w_t, tt.zeros(B, H, 1, N - t)}, -1) or w_t
  if t < 3 then tt.trace.on() end
end
tt.trace.on()
print("Checked: every step's output equals the matching row of full causal attention.")
tt.assert_close(k_cache, k, 0, 0, "the finished K cache is exactly K of the full pass")
tt.assert_close(v_cache, v, 0, 0, "the finished V cache is exactly V of the full pass")
print("Checked: the final cache holds exactly the K and V the training pass computed.")

local stacked = tt.cat(step_rows, -2):label("weights, row by row")
tt.assert_close(stacked, full_w, 1e-5, 1e-6, "decode weights, stacked, == full causal weights")
print("Stacking the 6 one-row weight vectors rebuilds the full causal weight matrix.")
local tok = {"t1", "t2", "t3", "t4", "t5", "t6"}
local two_heads = tt.stack({stacked[1][1], stacked[1][3]}, 1)   -- one head from each K/V group
local not_yet = ~tt.causal_mask(N)          -- at step t, keys t+1..N are not in the cache
tt.heatmap(two_heads, "images/09_decode_weights.png", {
  title = "Decode steps stacked: row t = weights of step t",
  panel_titles = {"head 1 (K/V head 1)", "head 3 (K/V head 2)"},
  xlabels = tok, ylabels = {"step 1", "step 2", "step 3", "step 4", "step 5", "step 6"},
  xtitle = "cached key", ytitle = "decode step", mask = {["key not in the cache yet"] = not_yet},
  cmap = "viridis", vmin = 0, vmax = 1, decimals = 2 })
print("Figure: " .. tt.figure_path("images/09_decode_weights.png"))

tt.trace.section("What the cache saves: FLOPs per decode step, from the trace")
print("Without a cache, step t would project the keys and values of all t tokens")
print("again. We run that too (trace paused) and read both costs from the trace's")
print("FLOP counters (tt.trace.reset() before a step, tt.trace.summary{print = false}")
print("after it):")
tt.trace.off()
local flops_recomputed = {}
for t = 1, N do
  tt.trace.reset()
  local x_all = x:narrow("N", 1, t)
  local q_t = tt.rearrange(Wq(x:narrow("N", t, 1)), "B Nq (H Dh) -> B H Nq Dh", {H = H})
  local k_all = tt.rearrange(Wk(x_all), "B Nk (G Dh) -> B G Nk Dh", {G = Hkv})
  local v_all = tt.rearrange(Wv(x_all), "B Nk (G Dh) -> B G Nk Dh", {G = Hkv})
  tt.sdpa(q_t, k_all, v_all, {causal = true})
  flops_recomputed[t] = counted_flops()
end
tt.trace.on()
-- Projecting one token's key or value: [1, D] @ [D, Hkv*Dh], 2 FLOPs per multiply-add.
local kv_proj_flops = 2 * (2 * D * Hkv * Dh)
print("  step   keys   with cache   recomputing K,V   saved")
for t = 1, N do
  local saved = flops_recomputed[t] - flops_cached[t]
  print(string.format("  %4d   %4d   %10d   %15d   %5d", t, t, flops_cached[t], flops_recomputed[t], saved))
  -- the cache must save exactly the K and V projections of the t-1 earlier tokens
  if saved ~= (t - 1) * kv_proj_flops then
    error(string.format("step %d saves %d FLOPs, expected (t-1) * %d", t, saved, kv_proj_flops))
  end
end
print(string.format("Checked: step t saves exactly (t-1) x %d FLOPs, the K and V projections", kv_proj_flops))
print(string.format("of the t-1 earlier tokens (2 x 2 x D x Hkv x Dh = %d per token).", kv_proj_flops))
print("The saving grows with every step. In a real model it is larger still: the")
print("keys and values of layer 2 are computed from layer 1's outputs, so without a")
print("cache every layer would be recomputed for every earlier token.")

tt.trace.section("How much memory does the cache take per token?")
print("Per layer and per token the cache stores one key and one value for each K/V")
print("head: 2 * Hkv * Dh numbers. Real caches hold them in fp16 or bf16, 2 bytes")
print("each (half of float32); this lesson computes in float32 but counts what an")
print("fp16 cache would store. Our cache:")
local BYTES = 2                                   -- fp16 / bf16
local bytes_now = (k_cache:numel() + v_cache:numel()) * BYTES
print(string.format("  K and V caches, [%s] each: %d bytes together for %d tokens = %d bytes per token",
      table.concat(k_cache:shape(), ","), bytes_now, N, bytes_now // N))
if bytes_now // N ~= 2 * Hkv * Dh * BYTES then error("cache bytes per token should be 2*Hkv*Dh*2") end
print("For a 4096-wide model with 32 query heads of 128 (one new token's K and V, fp16):")
local Hbig, Dhbig = 32, 128
local per_token = {}
for _, cfg in ipairs{{"MHA", 32}, {"GQA", 8}, {"MQA", 1}} do
  local name, g = cfg[1], cfg[2]
  local k1, v1 = tt.zeros(1, g, 1, Dhbig), tt.zeros(1, g, 1, Dhbig)   -- one token's K and V
  per_token[name] = (k1:numel() + v1:numel()) * BYTES
  print(string.format("  %s  Hkv=%2d  %6d bytes per token per layer; 32 layers x 4096 tokens: %7.0f MiB",
        name, g, per_token[name], per_token[name] * 32 * 4096 / 2^20))
end
if per_token.GQA * Hbig ~= per_token.MHA * 8 then error("GQA/MHA cache ratio should be G/H = 8/32") end
if per_token.MQA * Hbig ~= per_token.MHA then error("MQA/MHA cache ratio should be 1/H") end
print("The cache grows linearly with the context. GQA (8 K/V heads) needs 1/4 of")
print("MHA's, MQA 1/32: that is why they matter for inference, not for the formula.")

tt.trace.section("Why one new query needs lower-right causal alignment")
print("At the last step there is 1 query but 6 keys. The query IS the newest token,")
print("position 6, so it may see all 6 keys. A causal mask for 1 x 6 must therefore")
print("line up with the bottom row of the full 6 x 6 triangle (lower-right).")
print("PyTorch's is_causal lines it up with the TOP row instead (upper-left), which")
print("lets the new token see only key 1. Both masks as tables:")
local lower_right = tt.causal_mask(1, N)
local upper_left = tt.causal_mask(1, N, "upper_left")
local function row_str(m)
  local s = {}
  for j, ok in ipairs(m:totable()[1]) do s[j] = ok and "v" or "x" end
  return table.concat(s, "  ")
end
print("                keys:  1  2  3  4  5  6")
print("  lower-right (right):  " .. row_str(lower_right))
print("  upper-left  (trap):   " .. row_str(upper_left))
local q_last = q:narrow("Nq", N, 1)
local right = tt.sdpa(q_last, k_cache, v_cache, {mask = lower_right}):label("lower-right output")
local wrong = tt.sdpa(q_last, k_cache, v_cache, {mask = upper_left}):label("upper-left output")
tt.assert_close(right, full:narrow("Nq", N, 1), 1e-5, 1e-5, "lower-right mask == correct last row")
-- seeing only key 1, each query head just copies value 1 of its K/V head
local v1 = v_cache:narrow("Nk", 1, 1):repeat_interleave(H // Hkv, 2)
tt.assert_close(wrong, v1, 1e-6, 1e-6, "upper-left: the new token only sees token 1")
local gap = (wrong - right):abs():max():item()
if gap < 1e-3 then error("the upper-left output should differ from the correct one") end
print(string.format("Checked: lower-right gives the correct row; upper-left just copies token 1's"))
print(string.format("value (max difference from the correct output: %.3f). A silent bug: no error.", gap))

tt.trace.section("Several new tokens at once: the same rule")
print("A prompt chunk or a speculative batch feeds several new queries at once.")
print("Here tokens 5 and 6 arrive together while tokens 1..4 are cached: 2 queries")
print("over 6 keys. Lower-right alignment makes query 1 of the chunk position 5.")
local q_chunk = q:narrow("Nq", 5, 2)
local out_chunk = tt.sdpa(q_chunk, k_cache, v_cache, {causal = true})
tt.assert_close(out_chunk, full:narrow("Nq", 5, 2), 1e-5, 1e-5, "2-token chunk == rows 5..6")
local wrong_chunk = tt.sdpa(q_chunk, k_cache, v_cache, {mask = tt.causal_mask(2, N, "upper_left")})
if tt.allclose(wrong_chunk, out_chunk, 1e-3, 1e-3) then error("upper-left should be wrong here too") end
print("Checked: causal = true (lower-right) gives rows 5 and 6; upper-left does not.")
local masks = tt.stack({tt.causal_mask(2, N), tt.causal_mask(2, N, "upper_left")}, 1)
tt.heatmap(masks, "images/09_alignment.png", {
  title = "2 new queries over 6 cached keys: which keys each may attend",
  panel_titles = {"lower-right (correct for a cache)", "upper-left (the trap)"},
  xlabels = tok, ylabels = {"t5", "t6"}, xtitle = "key", ytitle = "new query",
  categories = {"hidden", "may attend"} })
print("Figure: " .. tt.figure_path("images/09_alignment.png"))

tt.trace.section("A trained model decodes with a cache: the induction heads predict the repeat")
print("(This section uses lesson 14's trained model and its induction heads: come")
print("back to it after lesson 14 if they are new to you.)")
local IM = dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/induction_model.lua")
local SEQS, PERIOD = 16, IM.N // 2
local ACC_MIN, FIRST_MAX = 0.8, 0.2   -- measured: 0.93 on the repeat, 0.03 on first occurrences
print(string.format("Lesson 14 trained a 2-layer attention-only model (H = %d heads of Dh = %d per", IM.H, IM.Dh))
print("layer) on random tokens that repeat; its weights are in lessons/data/")
print(string.format("induction.safetensors. Feed it %d sequences of N = %d tokens whose second", SEQS, IM.N))
print(string.format("half repeats the first (P = %d), one token per step. Each layer keeps its own", PERIOD))
print("K and V cache: at step t the new token is embedded at position t, and in each")
print("layer its one query attends over that layer's cache. The logits of step t")
print("predict token t + 1. Step 1 is traced; the rest only grow the caches.")
tt.trace.off()
local trained = IM.load()
local seqs = IM.repeated_batch(SEQS, PERIOD)          -- [16, 32] token ids
tt.trace.on()
local cache = {{}, {}}                                 -- per layer: k, v [b,H,t,Dh]
local step_logits, induction_rows = {}, {}
print("  step  reads  predicts  next   K and V cache, each layer")
for t = 1, IM.N do
  local h = IM.embed(trained, seqs:narrow(2, t, 1), t)           -- [b,1,D] at position t
  for l = 1, 2 do
    local q_t, k_t, v_t = IM.qkv(trained, l, h)                  -- [b,H,1,Dh] each
    local c = cache[l]
    c.k = c.k and tt.cat({c.k, k_t}, 3) or k_t
    c.v = c.v and tt.cat({c.v, v_t}, 3) or v_t
    local heads, w_t = tt.sdpa(q_t, c.k, c.v, {causal = true, weights = l == 2})
    if l == 2 then induction_rows[t] = w_t end
    h = IM.add_heads(trained, l, h, heads)
  end
  step_logits[t] = IM.unembed(trained, h):label("logits " .. t)   -- [b,1,V]
  if t == 1 then tt.trace.off() end
  local reads, guess = seqs[1][t]:item(), step_logits[t][1][1]:argmax():item()
  local next_id = t < IM.N and seqs[1][t + 1]:item()
  print(string.format("  %4d    %s       %s       %s     [%s]%s", t, IM.char(reads), IM.char(guess),
    next_id and IM.char(next_id) or "-", table.concat(cache[1].k:shape(), ","),
    t == PERIOD + 1 and "  <- the repeat starts" or ""))
end
tt.trace.on()
local cached = tt.cat(step_logits, 2)                   -- [b, N, V]
local full_logits = tt.no_grad(IM.forward, trained, seqs)
tt.assert_close(cached, full_logits, 1e-4, 1e-4, "cached decoding == full causal forward")
print("Checked: the logits of the 32 cached steps equal one full causal forward pass.")
tt.trace.off()
-- accuracy of argmax(logits of step t) == token t+1, over all sequences:
-- first occurrences are tokens 2..P, the predictable repeat tokens P+2..N
local hits = cached:narrow(2, 1, IM.N - 1):argmax(3):eq(seqs:narrow(2, 2, IM.N - 1)):float()
local first_acc = hits:narrow(2, 1, PERIOD - 1):mean():item()
local repeat_acc = hits:narrow(2, PERIOD + 1, IM.N - 1 - PERIOD):mean():item()
tt.trace.on()
print(string.format("Accuracy over the %d sequences: first occurrences (tokens 2..%d) %.2f (a guess:", SEQS, PERIOD, first_acc))
print(string.format("1/%d = %.2f); the repeat (tokens %d..%d) %.2f.", IM.V, 1 / IM.V, PERIOD + 2, IM.N, repeat_acc))
if repeat_acc < ACC_MIN then error("the induction heads should predict the repeated tokens") end
if first_acc > FIRST_MAX then error("first occurrences are random: they cannot be predicted") end
print(string.format("Checked: above %.1f on the repeat, below %.1f on first occurrences. Token P + 1", ACC_MIN, FIRST_MAX))
print("starts the repeat and no model can know the period in advance; from then on")
print("each step finds, in the cache, the token after the earlier occurrence of the")
print("token it reads, and predicts it. The cache is what makes looking back cheap.")
-- the misses of sequence 1 in the repeat: a token seen more than once before
local ids = seqs[1]:totable()
for t = PERIOD + 1, IM.N - 1 do
  local guess = step_logits[t][1][1]:argmax():item()
  if guess ~= ids[t + 1] then
    local after = {}
    for j = 1, t - 1 do if ids[j] == ids[t] then after[#after + 1] = IM.char(ids[j + 1]) end end
    print(string.format("Step %d misses: '%s' occurred %d times before, followed by %s; the model", t,
      IM.char(ids[t]), #after, table.concat(after, ", ")))
    print("copied the wrong one. Induction copies what followed; it cannot tell which")
    print("earlier occurrence is the right one when there are several.")
  end
end
tt.trace.off()
local ind_head = 3                                      -- lesson 14's strongest induction head
local rows = {}
for t = 1, IM.N do
  local w = induction_rows[t][1][ind_head]             -- [1, t]
  rows[t] = t < IM.N and tt.cat({w, tt.zeros(1, IM.N - t)}, 2) or w
end
local seq_chars = IM.chars(seqs[1]:totable())
tt.heatmap(tt.cat(rows, 1), "images/09_trained_decode.png", {
  title = string.format("Decoding from the KV cache\nlayer 2 head %d, P = %d", ind_head, PERIOD),
  xlabels = seq_chars, ylabels = seq_chars, xtitle = "cached key", ytitle = "decode step (token read)",
  mask = {["key not in the cache yet"] = ~tt.causal_mask(IM.N)},
  cmap = "viridis", vmin = 0, vmax = 1, annotate = false })
tt.trace.on()
print(string.format("Figure: %s, row t = the weights of step t in layer 2 head %d", tt.figure_path("images/09_trained_decode.png"), ind_head))
print("over the cache as it was then: from step P + 1 a stripe P - 1 keys left of the")
print("diagonal, the token after the earlier occurrence.")
