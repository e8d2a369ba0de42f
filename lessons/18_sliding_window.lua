-- 18_sliding_window.lua — each query sees only the last W keys: a band, not a triangle.
--
-- Causal attention lets query i read all i keys before it, so the cost of a
-- sequence grows like N^2 and the KV cache grows with every token. Sliding-
-- window attention (Longformer, Mistral) keeps only the last W keys: the
-- mask is a band of width W under the diagonal (as in Mistral's decoder;
-- Longformer's encoder window is two-sided, w/2 each side, with dilation and
-- global tokens), the cost grows like N W and
-- the cache is a rolling buffer of W entries. Information still travels
-- further than W, one window per layer. This lesson builds the band by
-- hand, checks tt.sdpa's fused `window` option against it (with GQA too),
-- counts the cost against full causal attention, decodes with a rolling
-- buffer, measures how far information travels through L layers, and tests
-- StreamingLLM's attention sinks on lesson 16's trained character model and
-- on a twin trained with a start token.
--
-- Run it:   ./tensortrace lessons/18_sliding_window.lua            (loads both checkpoints)
--           ./tensortrace lessons/18_sliding_window.lua --retrain  (trains the twin again: under a minute on 2 cores)
-- Models:   lesson 16's, lessons/data/the_block.safetensors (loaded, never trained here);
--           the twin with a start token, lessons/data/sliding_window_bos.safetensors (written by --retrain)
-- Figures:  images/18_band.png  images/18_cost.png  images/18_sinks.png

tt.manual_seed(18)

tt.trace.section("1. The band mask, by hand")
print("Query i may read key j when j <= i (causal) and i - j < W: itself and the")
print("W - 1 keys before it. Built from the positions, for N = 12 and W = 4:")
local N, W = 12, 4
local i_pos = tt.arange(N):view(N, 1):label("query position")
local j_pos = tt.arange(N):view(1, N):label("key position")
local band = (j_pos:le(i_pos) & (i_pos - j_pos):lt(W)):label("band")
-- attention sinks (section 5): the first S keys stay visible as well
local S = 2
local band_sinks = (band | (j_pos:lt(S) & j_pos:le(i_pos))):label("band + sinks")
local per_row = band:long():sum(2):totable()
print(string.format("  keys each query sees: %s", table.concat(per_row, " ")))
for i = 1, N do if per_row[i] ~= math.min(i, W) then error("row " .. i .. " should see min(i, W) keys") end end
print(string.format("Checked: query i sees min(i, %d) keys; the causal triangle would give i.", W))
local names = {}
for i = 1, N do names[i] = "t" .. i end
tt.heatmap(tt.stack({band, band_sinks}, 1), "images/18_band.png", {
  title = string.format("Which keys each query reads, N = %d", N),
  panel_titles = {string.format("sliding window, W = %d", W), string.format("window W = %d + %d sinks", W, S)},
  xlabels = names, ylabels = names, xtitle = "key", ytitle = "query", categories = {"hidden", "may attend"} })
print("Figure: " .. tt.figure_path("images/18_band.png") .. ", the band and the band with 2 attention sinks.")

tt.trace.section("2. The fused option equals the explicit mask")
print("tt.sdpa(q, k, v, {window = W}) applies the band inside the kernel (it implies")
print("causal) and skips the key tiles entirely outside it. Against the band as a")
print("mask, on 4 query heads sharing 2 K/V heads (GQA, lesson 07):")
local q = tt.randn(1, 4, N, 8):label("q")
local k = tt.randn(1, 2, N, 8):label("k")
local v = tt.randn(1, 2, N, 8):label("v")
local fused = tt.sdpa(q, k, v, {window = W}):label("window = 4")
local masked = tt.sdpa(q, k, v, {mask = band}):label("mask = band")
tt.assert_close(fused, masked, 1e-6, 1e-6, "window = W equals mask = band (GQA)")
local with_causal = tt.sdpa(q, k, v, {window = W, causal = true})
tt.assert_close(with_causal, fused, 0, 0, "causal = true adds nothing to a window")
local fused_s = tt.sdpa(q, k, v, {window = W, sinks = S})
tt.assert_close(fused_s, tt.sdpa(q, k, v, {mask = band_sinks}), 1e-6, 1e-6, "window + sinks equals its mask")
-- and step by step, with the heads repeated (lesson 07) and -inf outside the band
tt.trace.off()
local kr, vr = k:repeat_interleave(2, 2), v:repeat_interleave(2, 2)
local by_hand = (q:matmul(kr:mT()) / math.sqrt(8)):masked_fill(~band, -math.huge):softmax(-1):matmul(vr)
tt.trace.on()
tt.assert_close(fused, by_hand, 1e-5, 1e-6, "window = W equals the written-out formula")
print("Checked: {window = 4} equals {mask = band} and the formula written out with")
print("-inf outside the band; adding causal = true changes nothing (bit for bit);")
print("{window = 4, sinks = 2} equals the second mask of the figure.")

tt.trace.section("3. The cost: N W instead of N^2")
print("The trace counts 2 (Dh + Dv) FLOPs for every (query, key) pair the kernel")
print("computes: N (N + 1) / 2 pairs under causal, about N W with {window = W}.")
print("Section 2's {mask = band} was counted at all N^2 pairs: with an arbitrary")
print("boolean mask a dense kernel cannot know which tiles are empty, so it computes")
print("every score and throws the hidden ones away. The fused window skips them. One")
print("head, Dh = 16, W = 64, N = 64 .. 2048 (trace paused):")
-- FLOPs the trace counted since the last tt.trace.reset(): the sum of the flops
-- column of tt.trace.summary{print = false} (lessons/lib/flops.lua, shared with
-- lessons 09, 10 and 19)
local counted_flops =
  dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/flops.lua").counted_flops
local WC = 64
local Ns, causal_cost, window_cost = {64, 128, 256, 512, 1024, 2048}, {}, {}
tt.trace.off()
for idx, n in ipairs(Ns) do
  local qq, kk, vv = tt.randn(1, 1, n, 16), tt.randn(1, 1, n, 16), tt.randn(1, 1, n, 16)
  tt.trace.reset()
  tt.sdpa(qq, kk, vv, {causal = true})
  causal_cost[idx] = counted_flops()
  tt.trace.reset()
  tt.sdpa(qq, kk, vv, {window = WC})
  window_cost[idx] = counted_flops()
end
tt.trace.reset()
tt.trace.on()
print("      N   causal FLOPs   window FLOPs   ratio")
for idx, n in ipairs(Ns) do
  print(string.format("  %5d  %13.4g  %13.4g  %6.1f", n, causal_cost[idx], window_cost[idx], causal_cost[idx] / window_cost[idx]))
  local pairs_w = n <= WC and n * (n + 1) / 2 or WC * (WC + 1) / 2 + (n - WC) * WC
  if causal_cost[idx] ~= 2 * 32 * n * (n + 1) / 2 or window_cost[idx] ~= 2 * 32 * pairs_w then
    error("the counts should be 64 FLOPs a visible pair")
  end
end
print("Checked: every count is 2 x 32 FLOPs times the visible pairs, N (N + 1) / 2 and")
print("W (W + 1) / 2 + (N - W) W; at N = W = 64 the two are the same.")
local function slope(c) return math.log(c[#c] / c[#c - 1]) / math.log(Ns[#Ns] / Ns[#Ns - 1]) end
local s_causal, s_window = slope(causal_cost), slope(window_cost)
print(string.format("Log-log slopes between the last two N: causal %.2f, window %.2f.", s_causal, s_window))
if math.abs(s_causal - 2) > 0.01 or math.abs(s_window - 1) > 0.03 then error("the slopes should be 2 and 1") end
print("Checked: causal grows like N^2 (slope 2), the window like N (slope 1; the pairs")
print("the first W rows lack, a fixed W (W - 1) / 2, keep it a little above 1).")
tt.plot({
  {name = string.format("causal, slope %.2f", s_causal), x = Ns, y = causal_cost},
  {name = string.format("W = %d, slope %.2f", WC, s_window), x = Ns, y = window_cost},
}, "images/18_cost.png", {title = "FLOPs of one head (Dh = 16): causal vs a window of 64",
  xtitle = "N (tokens)", ytitle = "FLOPs", xlog = true, ylog = true, markers = true})
print("Figure: " .. tt.figure_path("images/18_cost.png") .. " (log-log). `make bench`'s sdpawindow section times")
print("both kernels; core/README.md has a run.")

-- Lesson 16's character model, loaded from its checkpoint: the same modules
-- and names as there, and its forward pass written out here so that the
-- attention call can take any tt.sdpa options (tt.nn.Block's is causal).
local here = arg[0]:match("^(.*)/") or "."
local CORPUS, CHECKPOINT = here .. "/data/prose.txt", here .. "/data/the_block.safetensors"
local TWIN_CHECKPOINT = here .. "/data/sliding_window_bos.safetensors"
local retrain = false
for _, a in ipairs({...}) do if a == "--retrain" then retrain = true end end
do
  local f = io.open(TWIN_CHECKPOINT, "rb")
  if f then f:close() else retrain = true end
end
tt.trace.off()
local text
do
  local f = assert(io.open(CORPUS, "rb"))
  text = f:read("a")
  f:close()
end
local seen, vocab, ids = {}, {}, {}
for c in text:gmatch(".") do if not seen[c] then seen[c] = true; vocab[#vocab + 1] = c end end
table.sort(vocab)
for i, c in ipairs(vocab) do ids[c] = i end
local V = #vocab
local D, H, LAYERS, NCTX = 48, 4, 2, 48   -- lesson 16's width, heads, blocks and context
local all = {}
for i = 1, #text do all[i] = ids[text:sub(i, i)] end
local split = math.floor(#all * 0.9)
local val_ids = tt.tensor({table.unpack(all, split + 1, #all)}, "int64")
-- lesson 16's model over a vocabulary of vsize tokens, and its parameters by the checkpoint's names
local function new_lm(vsize)
  local m = {embed = tt.nn.Embedding(vsize, D), norm = tt.nn.RMSNorm(D), head = tt.nn.Linear(D, vsize, {bias = false}),
             blocks = {}, named = {}}
  for l = 1, LAYERS do m.blocks[l] = tt.nn.Block(D, H, {rope = true}) end
  local function add(prefix, mod)
    for _, p in ipairs(mod:named_parameters()) do m.named[#m.named + 1] = {prefix .. p[1], p[2]} end
  end
  add("embed.", m.embed)
  for l = 1, LAYERS do add("blocks." .. l .. ".", m.blocks[l]) end
  add("norm.", m.norm)
  add("head.", m.head)
  return m
end
local function load_into(m, path)
  local loaded, meta = tt.load(path)
  for _, np in ipairs(m.named) do
    local t = loaded[np[1]] or error(path .. " has no tensor '" .. np[1] .. "'")
    tt.no_grad(function() np[2]:copy_(t) end)
  end
  return meta
end
local lm = new_lm(V)
load_into(lm, CHECKPOINT)
local Dh = D // H
local function split_heads(x) return tt.rearrange(x, "b t (h d) -> b h t d", {h = H}) end
-- one block's attention sublayer input -> q, k (RoPE at the positions pos) and v [b, H, n, Dh]
local function qkv(blk, h, pos)
  local a = blk.attn_norm(h)
  return tt.rope(split_heads(blk.attn.q_proj(a)), pos), tt.rope(split_heads(blk.attn.k_proj(a)), pos),
         split_heads(blk.attn.v_proj(a))
end
-- the rest of the block once the heads are attended: o_proj, residual, FFN, residual
local function finish(blk, h, heads)
  h = h + blk.attn.o_proj(tt.rearrange(heads, "b h t d -> b t (h d)"))
  return h + blk.ffn(blk.ffn_norm(h))
end
-- hidden states [b, n, D] through the given blocks, every attention with the sdpa options opts
local function through(blocks, h, opts)
  local pos = tt.arange(h:size(2))
  for _, blk in ipairs(blocks) do
    local qq, kk, vv = qkv(blk, h, pos)
    h = finish(blk, h, tt.sdpa(qq, kk, vv, opts))
  end
  return h
end
local function logits_of(ids_, opts, m)
  m = m or lm
  return m.head(m.norm(through(m.blocks, m.embed(ids_), opts)))
end
-- EVAL held-out windows of NCTX + 1 characters: inputs and next-character targets
local EVAL = 96
local starts = (tt.arange(0, EVAL) * ((val_ids:size(1) - NCTX - 1) // EVAL) + 1):long()
local win = val_ids:index_select(1, (starts:view(EVAL, 1) + tt.arange(0, NCTX + 1):long():view(1, NCTX + 1))
                                :reshape(EVAL * (NCTX + 1))):view(EVAL, NCTX + 1)
local X, Y = win:narrow(2, 1, NCTX), win:narrow(2, 2, NCTX)
tt.no_grad(function()
  local ref = X:narrow(1, 1, 4)
  local h = lm.embed(ref)
  for l = 1, LAYERS do h = lm.blocks[l](h) end
  tt.assert_close(logits_of(ref, {causal = true}), lm.head(lm.norm(h)), 1e-5, 1e-5, "the written-out forward is lesson 16's")
end)
tt.trace.on()

tt.trace.section("4. Decoding with a rolling buffer of W entries")
print("With a window, step t needs the keys and values of the last W tokens only:")
print("the cache is a buffer of W slots, and token t goes to slot ((t - 1) mod W) + 1;")
print("from t = W + 1 on that is the slot of token t - W, which no query from t on may")
print("read. The order of the slots does not matter (attention sums over its keys),")
print("and each key keeps the RoPE turn of its own position. Lesson 16's model")
print("(2 blocks, " .. CHECKPOINT .. ") decodes 48 held-out")
print("characters with W = 8, one buffer per block; then with 4 sinks, a buffer of")
print("4 + 8 that never overwrites slots 1..4. Nothing inside the model is traced;")
print("the slot map shows the buffer where it starts to roll.")
local WD, SD = 8, 4
local function decode(w, s, slot_map)
  tt.trace.off()
  local seq = X:narrow(1, 1, 1)
  local slots = s + w
  local kbuf, vbuf, logits = {}, {}, {}
  for l = 1, LAYERS do kbuf[l], vbuf[l] = tt.zeros(1, H, slots, Dh), tt.zeros(1, H, slots, Dh) end
  tt.no_grad(function()
    for t = 1, NCTX do
      local slot = t <= s and t or s + (t - s - 1) % w + 1
      if slot_map then slot_map[slot] = t end
      if slot_map and t >= w and t <= w + 2 then
        local line = string.format("  t = %2d: token %2d -> slot %d;  slots 1..%d hold tokens", t, t, slot, w)
        for i = 1, w do line = line .. string.format(" %2d", slot_map[i]) end
        print(line)
      end
      local h = lm.embed(seq:narrow(2, t, 1))
      for l = 1, LAYERS do
        local qq, kk, vv = qkv(lm.blocks[l], h, tt.tensor({t - 1}))
        kbuf[l]:narrow(3, slot, 1):copy_(kk)
        vbuf[l]:narrow(3, slot, 1):copy_(vv)
        local filled = math.min(t, slots)
        h = finish(lm.blocks[l], h, tt.sdpa(qq, kbuf[l]:narrow(3, 1, filled), vbuf[l]:narrow(3, 1, filled)))
      end
      logits[t] = lm.head(lm.norm(h))
    end
  end)
  tt.trace.on()
  return tt.cat(logits, 2), kbuf[1]:shape()
end
local rolled, buf_shape = decode(WD, 0, {})
tt.trace.off()
local windowed = tt.no_grad(logits_of, X:narrow(1, 1, 1), {window = WD})
local full = tt.no_grad(logits_of, X:narrow(1, 1, 1), {causal = true})
tt.trace.on()
tt.assert_close(rolled, windowed, 1e-4, 1e-4, "the rolling buffer decodes as tt.sdpa with window = 8")
local rolled_s = decode(WD, SD, false)
tt.trace.off()
local windowed_s = tt.no_grad(logits_of, X:narrow(1, 1, 1), {window = WD, sinks = SD})
tt.trace.on()
tt.assert_close(rolled_s, windowed_s, 1e-4, 1e-4, "4 sinks + 8 rolling slots decode as window = 8, sinks = 4")
local gap = (rolled - full):abs():max():item()
if not (gap > 1e-2) then error("the window should change the logits once t > W") end
print(string.format("Checked: the %d steps' logits from a K and a V buffer of [%s] per block (%d", NCTX, table.concat(buf_shape, ","), buf_shape[3]))
print("slots) equal one forward pass with {window = 8}; the sink buffer's equal")
print(string.format("{window = 8, sinks = 4}; full causal attention gives other logits (largest"))
print(string.format("difference %.2f).", gap))
print(string.format("The cache stays at %d entries however long the text; lesson 09's grows by one a token.", WD))

tt.trace.section("5. How far information travels: one window per layer")
print("One layer lets position i read positions i - (W - 1) .. i. The next layer")
print("reads those, each of which read W - 1 further back: after L layers the last")
print("position depends on the last L (W - 1) + 1 inputs. (Mistral's paper says L x W:")
print("its window counts W keys before the query, ours W keys with the query.)")
print("Measured by the gradient of the last position's output with respect to every")
print("input position: exactly 0 where no path leads. First on lesson 16's model run")
print("with W = 4 (1 block, then both), then on a stack of 1 to 6 freshly initialised")
print("blocks of the same kind (D = 48, 4 heads, RoPE, SwiGLU), N = 32, W = 4.")
local WR, NR = 4, 32
-- the input positions (1-based) whose gradient is nonzero, for blocks run over [1, NR, D]
local function reach(blocks)
  local h0 = tt.randn(1, NR, D):requires_grad_()
  local out = through(blocks, h0, {window = WR})
  local last = out:narrow(2, NR, 1) * tt.randn(D)   -- a random direction of the last output
  last:sum():backward()
  local g = h0.grad:abs():sum(3):view(NR):totable()
  local first, count = nil, 0
  for p = 1, NR do
    if g[p] > 0 then count = count + 1; first = first or p end
  end
  return first, count
end
tt.trace.off()
local rows = {}
rows[1] = {"lesson 16, block 1", 1, reach({lm.blocks[1]})}
rows[2] = {"lesson 16, blocks 1-2", 2, reach(lm.blocks)}
local fresh = {}
for l = 1, 6 do
  fresh[l] = tt.nn.Block(D, H, {rope = true})
  rows[#rows + 1] = {string.format("%d fresh block%s", l, l > 1 and "s" or ""), l, reach(fresh)}
end
tt.trace.on()
print("  model                   L   inputs that reach position 32   L (W - 1) + 1")
for _, r in ipairs(rows) do
  local name, L, first, count = table.unpack(r)
  print(string.format("  %-22s  %d   %2d .. 32 (%2d positions)          %2d", name, L, first, count, L * (WR - 1) + 1))
  if count ~= L * (WR - 1) + 1 or first ~= NR - L * (WR - 1) then error(name .. ": the reach should be L (W - 1) + 1") end
end
print("Checked: every row reaches exactly L (W - 1) + 1 positions, the last ones, and")
print("no gradient at all flows from earlier positions. The window bounds one layer's")
print("reach, not the model's: Mistral 7B's 32 layers with W = 4096 reach about 131k")
print("tokens back in theory (its paper's \"theoretical attention span\"), but only")
print("through the hidden states between; how much really travels that far is")
print("another question.")

tt.trace.section("6. Attention sinks: what evicting the first tokens costs")
print("StreamingLLM (Xiao et al., 2023) found that language models put a large part")
print("of their attention on the first few tokens whatever they are, so a window")
print("cache that evicts them makes the loss blow up, and keeping S = 4 of them")
print("(the sinks) beside the window restores it. Measured here on lesson 16's model:")
print(string.format("the mean loss on the characters at positions 21..48 of %d held-out windows", EVAL))
print("of 48 (the widest window below has 20 keys, so from position 21 on every query")
print("has lost key 1 at least; the sink settings keep keys 1..4), for")
print("windows of W keys, W keys + 4 sinks, and the 4 slots given to the window instead:")
local FIRST, SS = 21, 4
-- per held-out window, the mean loss on positions FIRST..48 of model m on
-- inputs xs, targets ys, under the sdpa options opts: a Lua list of EVAL numbers
local function tail_loss(m, xs, ys, opts)
  tt.trace.off()
  local l = tt.no_grad(function()
    local lg = logits_of(xs, opts, m)
    local n = NCTX - FIRST + 1
    return tt.cross_entropy(lg:narrow(2, FIRST, n):reshape(EVAL * n, lg:size(3)), ys:narrow(2, FIRST, n):reshape(EVAL * n),
                            {reduction = "none"}):view(EVAL, n):mean(2):totable()
  end)
  tt.trace.on()
  return l
end
-- mean and standard error of a list, and of the paired differences a - b (lessons/lib/stats.lua)
local mean_se = dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/stats.lua").mean_se
-- the table: full causal, then per W the window, W + SS sinks and a window of
-- W + SS; then the two paired differences with their standard errors
local function sink_table(m, xs, ys)
  local full = tail_loss(m, xs, ys, {causal = true})
  local full_loss, rows = mean_se(full), {}
  print("     W   window W   W + 4 sinks   window W + 4   window - sinks     sinks - window W + 4")
  for _, w in ipairs({4, 8, 16}) do
    local r = {w = w, l_win = tail_loss(m, xs, ys, {window = w}), l_sinks = tail_loss(m, xs, ys, {window = w, sinks = SS}),
               l_wider = tail_loss(m, xs, ys, {window = w + SS})}
    r.win, r.sinks, r.wider = mean_se(r.l_win), mean_se(r.l_sinks), mean_se(r.l_wider)
    r.cost, r.cost_se = mean_se(r.l_win, full)                -- what evicting costs
    r.evict, r.evict_se = mean_se(r.l_win, r.l_sinks)         -- what keeping keys 1..4 wins back
    r.near, r.near_se = mean_se(r.l_sinks, r.l_wider)         -- sinks against 4 nearer keys
    rows[#rows + 1] = r
    print(string.format("  %4d   %8.3f   %11.3f   %12.3f   %+.3f ± %.3f     %+.3f ± %.3f", w, r.win, r.sinks, r.wider,
      r.evict, r.evict_se, r.near, r.near_se))
  end
  print(string.format("  (full causal: %.3f; differences: mean ± standard error over the %d windows)", full_loss, EVAL))
  return full_loss, rows
end
-- how many standard errors a paired difference is from 0
local function t_of(mean, se) return mean / se end
-- the mean weight the queries at positions 17..48 put on key 1, per block (full causal)
local function weight_on_first(m, xs)
  local on_first = {}
  tt.trace.off()
  tt.no_grad(function()
    local h, pos = m.embed(xs), tt.arange(NCTX)
    for l = 1, LAYERS do
      local qq, kk, vv = qkv(m.blocks[l], h, pos)
      local heads, w = tt.sdpa(qq, kk, vv, {causal = true, weights = true})
      on_first[l] = w:narrow(3, 17, NCTX - 16):narrow(4, 1, 1):mean():item()
      h = finish(m.blocks[l], h, heads)
    end
  end)
  tt.trace.on()
  return on_first
end
local uniform = 0                  -- the same mean for weights spread evenly over each query's keys
for t = 17, NCTX do uniform = uniform + 1 / t / (NCTX - 16) end
local full_loss, sink_rows = sink_table(lm, X, Y)
local r4 = sink_rows[1]
if not (t_of(r4.cost, r4.cost_se) > 3) then error("a window of 4 should cost loss by more than 3 SE") end
if not (t_of(r4.near, r4.near_se) > 3) then error("at W = 4 nearer keys should beat the sinks by more than 3 SE") end
print(string.format("Measured, one model, one seed, %d windows: a window of 4 costs %.3f ± %.3f nats", EVAL, r4.cost, r4.cost_se))
print(string.format("over full causal attention (W = 8: %.3f ± %.3f; W = 16: %.3f ± %.3f, within", sink_rows[2].cost,
  sink_rows[2].cost_se, sink_rows[3].cost, sink_rows[3].cost_se))
print("two standard errors of nothing). At W = 4 the 4 nearer keys beat the sinks by")
print(string.format("%.3f ± %.3f nats. Keeping keys 1..4 wins back %+.3f ± %.3f at W = 4, %+.3f ± %.3f", r4.near,
  r4.near_se, r4.evict, r4.evict_se, sink_rows[2].evict, sink_rows[2].evict_se))
print(string.format("at W = 8 and %+.3f ± %.3f at W = 16: each about one standard error from 0, so", sink_rows[3].evict,
  sink_rows[3].evict_se))
print("on this model the sinks may win nothing at all.")
print("Checked: at W = 4 the window costs, and the nearer keys beat the sinks, each")
print("by more than 3 standard errors. The first characters are worth no more than")
print("the nearest ones here.")
local on_first = weight_on_first(lm, X)
print(string.format("The weights agree: no sink formed. Under full causal attention the queries at 17..48"))
print(string.format("put a mean weight of %.4f (block 1) and %.4f (block 2) on key 1, less than the", on_first[1], on_first[2]))
print(string.format("%.4f an even spread over their keys would give.", uniform))
if not (on_first[1] < uniform and on_first[2] < uniform) then error("key 1 should get less than an even share") end
print("Checked: below an even share in both blocks. Why it may differ from StreamingLLM:")
print("their models have billions of parameters and contexts of thousands of tokens,")
print("and their explanation is that a head with nothing to read must still put its")
print("weight somewhere (the weights sum to 1); the first tokens, seen by every query,")
print("became that place. Lesson 16 trains on 48-character windows cut at random")
print("points, so its first key is an arbitrary character, different in every window.")
print("(Their test also runs past the training length; this one stays within lesson")
print("16's 48, where its RoPE has seen every distance.)")

tt.trace.section("7. A twin with a start token: now the sinks matter")
print("LLMs see a start token (BOS) first in every sequence. The same architecture,")
print("trained here as lesson 16 trains (AdamW, lr 0.004, batches of 16 windows) but")
print("for 1200 steps and with every window a BOS token followed by 47 characters,")
print("then measured as above (BOS + the first 47 characters of the same held-out")
print("windows, the same 48 targets):")
local BOS = V + 1
local twin = new_lm(V + 1)
local TWIN_STEPS, TWIN_B, TWIN_LR = 1200, 16, 4e-3
local function bos_windows(data, starts_)
  local b = starts_:size(1)
  local w = data:index_select(1, (starts_:view(b, 1) + tt.arange(0, NCTX):long():view(1, NCTX)):reshape(b * NCTX)):view(b, NCTX)
  return tt.cat({tt.full({b, 1}, BOS):long(), w:narrow(2, 1, NCTX - 1)}, 2), w
end
tt.trace.off()
if retrain then
  tt.manual_seed(18)
  twin = new_lm(V + 1)
  local train_ids = tt.tensor({table.unpack(all, 1, split)}, "int64")
  local params = {}
  for i, np in ipairs(twin.named) do params[i] = np[2] end
  local opt = tt.optim.AdamW(params, {lr = TWIN_LR, weight_decay = 0.01})
  local t0 = tt.clock()
  for _ = 1, TWIN_STEPS do
    local xs, ys = bos_windows(train_ids, tt.randint(1, split - NCTX, TWIN_B))
    local loss = tt.cross_entropy(logits_of(xs, {causal = true}, twin):reshape(TWIN_B * NCTX, V + 1),
                                  ys:reshape(TWIN_B * NCTX))
    opt:zero_grad()
    loss:backward()
    opt:step()
  end
  print(string.format("Trained the twin %d steps of %d windows in %.1f s.", TWIN_STEPS, TWIN_B, tt.clock() - t0))
  local tensors = {}
  for _, np in ipairs(twin.named) do tensors[np[1]] = np[2]:detach() end
  tt.save(TWIN_CHECKPOINT, tensors, {steps = tostring(TWIN_STEPS), seed = "18", bos = "true"})
  print("Saved " .. TWIN_CHECKPOINT .. ".")
else
  local meta = load_into(twin, TWIN_CHECKPOINT)
  if meta.steps ~= tostring(TWIN_STEPS) then error(TWIN_CHECKPOINT .. " is not from this lesson") end
end
tt.trace.on()
print("(Its weights come from " .. TWIN_CHECKPOINT .. " unless the")
print("lesson runs with --retrain, which trains it again from the same seed, under a")
print("minute on 2 cores, and writes the same bytes.)")
tt.trace.off()
local XB, YB = bos_windows(val_ids, starts)
tt.trace.on()
local twin_full, twin_rows = sink_table(twin, XB, YB)
local t8, t16 = twin_rows[2], twin_rows[3]
if not (t_of(t8.evict, t8.evict_se) > 3) then error("the twin at W = 8: keys 1..4 should be worth more than 3 SE") end
print(string.format("Measured, one model, one seed: at W = 8, evicting BOS and the next 3 keys costs"))
print(string.format("the twin %.3f ± %.3f nats (%.1f standard errors); on lesson 16's model the", t8.evict, t8.evict_se,
  t_of(t8.evict, t8.evict_se)))
print(string.format("same eviction cost %+.3f ± %.3f. Against 4 nearer keys the sinks come out ahead", sink_rows[2].evict,
  sink_rows[2].evict_se))
print(string.format("by %.3f ± %.3f at W = 8 and %.3f ± %.3f at W = 16: 1 to 2 standard errors, one", -t8.near, t8.near_se,
  -t16.near, t16.near_se))
print("seed, so not a finding this lesson can state.")
print("Checked: at W = 8 the twin's first four keys are worth more than 3 standard")
print("errors of loss.")
local twin_first = weight_on_first(twin, XB)
print(string.format("Block 1 now puts a mean weight of %.4f on the BOS key (%.4f an even spread;", twin_first[1], uniform))
print(string.format("lesson 16's model: %.4f on its first key); block 2 %.4f.", on_first[1], twin_first[2]))
if not (twin_first[1] > uniform and twin_first[1] > 2 * on_first[1]) then
  error("the twin's block 1 should weigh the BOS key above an even share")
end
print("Checked: above an even share, more than twice lesson 16's. A fixed first token")
print("that every query sees became a place where block 1 puts weight, and losing it")
print("costs loss, though the BOS key holds no text. This is a small echo of")
print("StreamingLLM, not its pattern: here only the bottom block leans on BOS (1.6x an")
print("even share; block 2 barely looks at it), where StreamingLLM reports a large")
print("part of the weight on the first tokens in the layers above the bottom two;")
print("and StreamingLLM numbers positions inside the cache, where this lesson keeps")
print("each token's own position.")
-- the figure: what keeping keys 1..4 wins back (window - sinks) against W,
-- one line a model, with a bar of one standard error either side; to 1e-4
-- nats (under a pixel), so every kernel path draws the same picture
local ws, series = {}, {}
local function nats(v) return math.floor(v * 1e4 + 0.5) / 1e4 end
for i, r in ipairs(sink_rows) do ws[i] = r.w end
for _, mdl in ipairs({{"twin (BOS)", twin_rows}, {"lesson 16", sink_rows}}) do
  local mid, se = {}, {}
  for i, r in ipairs(mdl[2]) do mid[i], se[i] = nats(r.evict), nats(r.evict_se) end
  series[#series + 1] = {name = mdl[1], x = ws, y = mid, yerr = se}
end
tt.plot(series, "images/18_sinks.png", {
  title = "What 4 sinks win back: loss(window W) - loss(W + 4 sinks), 96 windows, one seed",
  xtitle = "window W (keys)", ytitle = "nats won back (mean +/- 1 SE)" })
print("Figure: " .. tt.figure_path("images/18_sinks.png") .. ": what the sinks win back against W, both models,")
print("with a bar of one standard error either side.")
