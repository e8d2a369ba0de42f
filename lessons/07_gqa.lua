-- 07_gqa.lua — MHA, MQA and GQA: how many key/value heads serve the query heads.
--
-- Multi-head attention gives every query head its own K and V head. MQA lets
-- all query heads share one K/V head; GQA sits in between: H query heads are
-- split into G groups and each group shares one K/V head. This lesson builds
-- the H = 8, G = 2 example, runs it twice (copying K/V with repeat_interleave,
-- and with tt.sdpa, which shares without copying), checks both agree, and
-- measures how much smaller the K/V cache gets.
--
-- Run:  ./tensortrace lessons/07_gqa.lua          (trace of every shape)
--       ./tensortrace -q lessons/07_gqa.lua       (narrative only)
-- Figures: images/07_head_groups.png, images/07_gqa_weights.png

tt.manual_seed(0)

local B, N, D = 2, 5, 128     -- batch, tokens, model width
local H, G = 8, 2             -- query heads, key/value heads
local Dh = D // H             -- 16 numbers per head
local R = H // G              -- query heads per group
assert(H % G == 0, "H must be a multiple of G")

tt.trace.section("Three ways to pair query heads with K/V heads")
print("Every variant keeps H query heads. What changes is G, the number of K/V heads:")
print("  MHA  (multi-head)     G = H        each query head has its own K and V")
print("  MQA  (multi-query)    G = 1        all query heads share one K and one V")
print("  GQA  (grouped-query)  1 < G < H    each group of R = H/G query heads shares one K/V head")
print("Query head h (1-based) reads K/V head g(h) = ceil(h / R).")

tt.trace.section(string.format("GQA with H = %d, G = %d: %d query heads per group", H, G, R))
local group_of = {}
print("  query head   K/V head")
for h = 1, H do
  group_of[h] = math.ceil(h / R)
  print(string.format("      %d           %d", h, group_of[h]))
end

-- The same table as a tensor: repeat_interleave copies each group id R times.
local groups = tt.arange(1, G + 1):repeat_interleave(R, 1):label("g(h)")
tt.assert_close(groups, group_of, 0, 0, "repeat_interleave reproduces g(h) = ceil(h/R)")
-- One-hot assignment matrix [H, G]: row h has a 1 in the column of its K/V head.
local assign = groups:view(H, 1):eq(tt.arange(1, G + 1):view(1, G)):float():label("assignment")
tt.assert_close(assign:sum(2), tt.ones(H), 0, 0, "every query head reads exactly one K/V head")
tt.assert_close(assign:sum(1), tt.full({G}, R), 0, 0, "every K/V head serves R query heads")

tt.head_groups("images/07_head_groups.png", {
  q_heads = H, kv_heads = {H, G, 1}, titles = {"MHA", "GQA", "MQA"},
  title = "Which K/V head each query head reads" })
print("Figure: images/07_head_groups.png (a line from each query head to the K/V head it reads)")

tt.trace.section("Projections: 8 query heads but only 2 K/V heads")
print("Q is projected to H*Dh numbers per token, K and V only to G*Dh.")
local x = tt.randn(B, N, D):named("B", "N", "D"):label("X")
local q_proj = tt.nn.Linear(D, H * Dh, {bias = false})
local k_proj = tt.nn.Linear(D, G * Dh, {bias = false})
local v_proj = tt.nn.Linear(D, G * Dh, {bias = false})
local o_proj = tt.nn.Linear(H * Dh, D, {bias = false})
-- The same N tokens, named by role: Nq as queries, Nk as keys and values.
local q = tt.rearrange(q_proj(x), "B Nq (H Dh) -> B H Nq Dh", {H = H}):label("Q")
local k = tt.rearrange(k_proj(x), "B Nk (G Dh) -> B G Nk Dh", {G = G}):label("K")
local v = tt.rearrange(v_proj(x), "B Nk (G Dh) -> B G Nk Dh", {G = G}):label("V")

tt.trace.section("Teaching version: copy each K/V head R times")
print("repeat_interleave along the head dim turns [B,G,N,Dh] into [B,H,N,Dh],")
print("so ordinary batched matmuls can pair query head h with K/V head g(h).")
-- After the copy the head dim has H entries, so we rename it H.
local k_rep = k:repeat_interleave(R, "G"):named("B", "H", "Nk", "Dh"):label("K repeated")
local v_rep = v:repeat_interleave(R, "G"):named("B", "H", "Nk", "Dh"):label("V repeated")
tt.trace.off()   -- 16 small checks; their views would flood the trace
for h = 1, H do
  tt.assert_close(k_rep:select(2, h), k:select(2, group_of[h]), 0, 0,
                  "copy " .. h .. " is K/V head g(" .. h .. ")")
end
tt.trace.on()
print("Checked: copy h of the repeated K is exactly K/V head g(h), for h = 1..8.")
assert(not k_rep:shares_storage(k), "repeat_interleave makes a real copy")
print(string.format("K repeated holds %d floats, K itself %d: the copy is %dx bigger.",
                    k_rep:numel(), k:numel(), k_rep:numel() // k:numel()))

local scores = (q:matmul(k_rep:mT()) / math.sqrt(Dh)):label("scores")
local future = ~tt.causal_mask(N)                 -- true above the diagonal: hide
local weights = scores:masked_fill(future, -math.huge):softmax("Nk"):label("weights")
local heads = weights:matmul(v_rep):label("heads")          -- [B, H, N, Dh]

tt.trace.section("Production version: tt.sdpa shares K/V without copying")
print("tt.sdpa takes K/V with G heads directly and lets each group of R query")
print("heads read the same K/V memory. No [B,H,N,Dh] copy is made.")
local heads_fused, weights_fused = tt.sdpa(q, k, v, {causal = true, weights = true})
heads_fused:label("heads (sdpa)")
tt.assert_close(heads_fused, heads, 1e-5, 1e-5, "sdpa on G=2 K/V heads == repeat_interleave version")
tt.assert_close(weights_fused, weights, 1e-5, 1e-6, "same weights too")
print("Checked: both give the same [B,H,N,Dh] output, to float32 rounding.")

tt.trace.section("A group shares K/V, not its answers")
print("The 4 query heads of a group read the same keys and values, but each asks its")
print("own question, so their weights (and outputs) differ. Nothing is averaged:")
print("all 8 heads are concatenated and mixed by W_O, exactly as in MHA.")
tt.trace.off()
for h = 2, R do
  local diff = (weights:select(2, h) - weights:select(2, 1)):abs():max():item()
  if diff < 1e-3 then error("query heads 1 and " .. h .. " should attend differently") end
  print(string.format("  max |weights(head %d) - weights(head 1)| = %.3f", h, diff))
end
tt.trace.on()
local merged = heads_fused:transpose(2, 3):reshape(B, N, H * Dh):label("concat heads")
local y = o_proj(merged):label("Y")
assert(y:size(3) == D, "the output has the model width again")

local panel_titles = {}
for h = 1, H do panel_titles[h] = string.format("q head %d -> kv %d", h, group_of[h]) end
local tok = {"t1", "t2", "t3", "t4", "t5"}
tt.heatmap(weights_fused:select(1, 1), "images/07_gqa_weights.png", {
  title = "GQA causal weights, batch 1: heads 1-4 share kv 1, heads 5-8 share kv 2",
  panel_titles = panel_titles, xlabels = tok, ylabels = tok, xtitle = "Key", ytitle = "Query",
  mask = {["masked: exactly 0"] = future}, cmap = "viridis", vmin = 0, vmax = 1, decimals = 2 })
print("Figure: images/07_gqa_weights.png (one panel per query head, titled with its K/V head)")

tt.trace.section("How big is the K/V cache? G/H of MHA's")
print("During decoding every layer keeps K and V of all past tokens. Their size is")
print("set by the number of K/V heads, so we project K and V for G = 8, 2, 1 and count.")
local kv_numel = {}
for _, cfg in ipairs{{"MHA", H}, {"GQA", G}, {"MQA", 1}} do
  local name, g = cfg[1], cfg[2]
  local kp = tt.nn.Linear(D, g * Dh, {bias = false})
  local vp = tt.nn.Linear(D, g * Dh, {bias = false})
  local kc = tt.rearrange(kp(x), "B Nk (G Dh) -> B G Nk Dh", {G = g})
  local vc = tt.rearrange(vp(x), "B Nk (G Dh) -> B G Nk Dh", {G = g})
  kv_numel[name] = kc:numel() + vc:numel()
  print(string.format("  %s  G=%d  K %-14s V %-14s %6d floats = %7d bytes (float32)",
        name, g, "[" .. table.concat(kc:shape(), ",") .. "]", "[" .. table.concat(vc:shape(), ",") .. "]",
        kv_numel[name], kv_numel[name] * 4))
end
local ratio = kv_numel.GQA / kv_numel.MHA
if ratio ~= G / H then error("GQA cache / MHA cache should be G/H, got " .. ratio) end
if kv_numel.MQA * H ~= kv_numel.MHA then error("MQA cache should be 1/H of MHA's") end
print(string.format("GQA keeps %.2f of MHA's K/V (G/H = %d/%d); MQA keeps 1/%d.", ratio, G, H, H))
print("Less cache means less memory and less to read per generated token. The price:")
print("more query heads share one K/V view of the context, a quality/speed trade-off.")
