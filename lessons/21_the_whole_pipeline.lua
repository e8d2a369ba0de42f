-- 21_the_whole_pipeline.lua — the course in one page: the pipeline traced once, eight questions for every variant.
--
-- The source article (大模型基础（二）：Self-Attention 从张量到多头机制, README's
-- Sources) ends with the whole of self-attention as a chain of tensors:
--   X [B,N,D] -> Q/K/V [B,H,N,Dh] -> Scores [B,H,N,N] -> Weights [B,H,N,N]
--     -> Heads [B,H,N,Dh] -> concat + W_O -> Output [B,N,D]
-- and with eight questions to ask of any new attention variant. This lesson
-- traces that chain once, checks it against tt.sdpa and a float64 loop,
-- answers the eight questions for every variant the course teaches, maps
-- each answer to the lesson that shows it, and ends with what to read next.
--
-- Run it:   ./tensortrace lessons/21_the_whole_pipeline.lua       (the pipeline's trace + the recap)
--           ./tensortrace -q lessons/21_the_whole_pipeline.lua    (the recap alone)
-- Figure:   images/21_pipeline.png

tt.manual_seed(21)
local B, N, D, H = 2, 5, 12, 3
local Dh = D // H

tt.trace.section("1. The pipeline, traced once")
print(string.format("B = %d sequences of N = %d tokens, D = %d, H = %d heads of Dh = %d; causal.", B, N, D, H, Dh))
tt.trace.off()
local Wq, Wk, Wv, Wo = tt.nn.Linear(D, D, {bias = false}), tt.nn.Linear(D, D, {bias = false}),
                       tt.nn.Linear(D, D, {bias = false}), tt.nn.Linear(D, D, {bias = false})
tt.trace.on()
local X = tt.randn(B, N, D):named("B", "N", "D"):label("X")
print("Projections (lesson 01), then D split into H heads of Dh, a view (lessons 00, 06):")
local function split(t) return tt.rearrange(t, "B N (H Dh) -> B H N Dh", {H = H}) end
local Q = split(Wq(X)):label("Q")
local K = split(Wk(X)):label("K")
local V = split(Wv(X)):label("V")
print("Every query against every key, scaled by 1/sqrt(Dh) (lessons 02, 05):")
local scores = (Q:matmul(K:mT()) / math.sqrt(Dh)):label("Scores")
print("The future hidden before the softmax (lesson 03), each row normalised over the keys:")
local weights = scores:masked_fill(~tt.causal_mask(N), -math.huge):softmax(-1):label("Weights")
print("Each query's weighted mix of the values, then the heads merged and W_O (lesson 06):")
local heads = weights:matmul(V):label("Heads")
local out = Wo(tt.rearrange(heads, "B H N Dh -> B N (H Dh)")):label("Output")
tt.flow("images/21_pipeline.png", {title = "The whole pipeline: X -> Q, K, V -> Scores -> Weights -> Heads -> W_O"})
tt.assert_close(heads, tt.sdpa(Q, K, V, {causal = true}), 1e-5, 1e-6, "the heads equal tt.sdpa's fused kernel")
-- an independent reference: the same chain in float64 Lua loops, batch 1
tt.trace.off()
local x, wq, wk, wv, wo = X[1]:totable(), Wq.weight:totable(), Wk.weight:totable(), Wv.weight:totable(),
                          Wo.weight:totable()
local function project(w, i)            -- row i of x @ w^T
  local r = {}
  for o = 1, D do
    local s = 0
    for c = 1, D do s = s + x[i][c] * w[o][c] end
    r[o] = s
  end
  return r
end
local q64, k64, v64 = {}, {}, {}
for i = 1, N do q64[i], k64[i], v64[i] = project(wq, i), project(wk, i), project(wv, i) end
local merged = {}
for i = 1, N do
  merged[i] = {}
  for h = 0, H - 1 do
    local s, top, z = {}, -math.huge, 0
    for j = 1, i do                     -- causal: keys 1..i
      local dot = 0
      for d = 1, Dh do dot = dot + q64[i][h * Dh + d] * k64[j][h * Dh + d] end
      s[j] = dot / math.sqrt(Dh)
      top = math.max(top, s[j])
    end
    for j = 1, i do s[j] = math.exp(s[j] - top); z = z + s[j] end
    for d = 1, Dh do
      local acc = 0
      for j = 1, i do acc = acc + s[j] / z * v64[j][h * Dh + d] end
      merged[i][h * Dh + d] = acc
    end
  end
end
local ref = {}
for i = 1, N do
  ref[i] = {}
  for o = 1, D do
    local acc = 0
    for c = 1, D do acc = acc + merged[i][c] * wo[o][c] end
    ref[i][o] = acc
  end
end
tt.trace.on()
tt.assert_close(out[1], tt.tensor(ref), 1e-5, 1e-5, "the output equals the chain computed in float64 loops")
print("Checked: the heads equal tt.sdpa's fused kernel, and the output of sequence 1")
print("equals the whole chain written as float64 loops.")
print("Figure: " .. tt.figure_path("images/21_pipeline.png") .. ", the chain drawn from what ran.")

tt.trace.section("2. Eight questions for every variant")
print("The source article's section 14 asks eight questions of any new attention")
print("variant. Each answer below is shown, measured or checked in the lesson named")
print("in brackets; \"as MHA\" means the variant does not change that part.")
local VARIANTS = {"MHA", "MQA/GQA", "cross-attention", "KV cache", "MLA", "window + sinks", "linear", "flash",
                  "16-bit"}
local ANSWERS = {
  {"1. Where do Q, K, V come from?",
   {"one X, three projections (01, 06)", "Q as MHA; K, V with G < H heads (07)",
    "Q from the decoder, K, V from the encoder (08)", "K, V of past tokens, kept (09)",
    "K, V made back from a cached latent c (17)", "as MHA (18)", "as MHA, then phi = elu + 1 (19)", "as MHA (12)",
    "as MHA, stored in 16 bits (20)"}},
  {"2. Which keys may a query read?",
   {"all, or the past under a mask (03, 04)", "as MHA (07)", "every encoder key but pads (08)",
    "every cached key (09)", "as MHA (17)", "the last W, plus S sinks (18)", "all, or the past (19)", "as MHA (12)",
    "as MHA (20)"}},
  {"3. Is an N x N score matrix built?",
   {"yes, [B,H,N,N] (05, 10)", "yes, unless the kernel is fused (07)", "Nq x Nk (08)", "1 x N a step (09)",
    "yes, each score d_c + d_r wide (17)", "N x W in the fused kernel (18)", "no: a [Dh,Dh] state (19)",
    "no: tiles only (12)", "as MHA, in 16 bits (20)"}},
  {"4. Still softmax of dot products?",
   {"yes (02)", "yes (07)", "yes (08)", "yes (09)", "yes (17)", "yes (18)", "no: phi(q).phi(k) (19)",
    "yes, exactly (12)", "yes, rounded (20)"}},
  {"5. Does the normalisation change?",
   {"row softmax, max subtracted (11)", "no (07)", "no (08)", "no (09)", "no (17)", "over the visible keys (18)",
    "yes: over phi(q).z (19)", "online softmax (12)", "no; sums in float32 (20)"}},
  {"6. How is history kept when decoding?",
   {"the causal mask (03)", "a G-head K/V cache (07)", "none needed: the source is fixed (08)",
    "the K/V cache, one row a token (09)", "a cache of c and k_rope (17)", "a rolling buffer of W (+ S) (18)",
    "a running state S, z (19)", "as MHA (12)", "a 16-bit cache (20)"}},
  {"7. What does it save?",
   {"nothing: the baseline (10)", "K/V cache, by H / G (07)", "nothing new (08)", "FLOPs a step (09)",
    "K/V cache, 57x in DeepSeek-V2 (17)", "FLOPs ~ N W, cache W (18)", "FLOPs ~ N, a fixed state (19)",
    "memory traffic, N x N memory (12)", "memory, and time where kernels allow (20)"}},
  {"8. Exact, an approximation, or new?",
   {"the definition (05)", "a new model (07)", "exact: the same formula (08)", "exact (09)",
    "a new model; absorption exact (17)", "a new model (18)", "a new definition (19)", "exact (12)",
    "rounded: u = 2^-8 in bfloat16 (20)"}},
}
local widest = 0
for _, v in ipairs(VARIANTS) do widest = math.max(widest, #v) end
for _, q in ipairs(ANSWERS) do
  print("")
  print(q[1])
  for i, v in ipairs(VARIANTS) do
    print(string.format("  %-" .. widest .. "s  %s", v, q[2][i]))
  end
end
print("")
print("The article sorts the names by what each changes: sparse attention (here the")
print("window, 18) changes the connection graph; linear attention the algebra or the")
print("similarity; FlashAttention how exact attention is executed; MQA/GQA how query")
print("heads map to K/V heads; cross-attention where Q and K/V come from. MLA (17)")
print("changes what is cached; 16 bits (20) how each number is stored.")

tt.trace.section("3. A map: which lesson answers which question")
for _, q in ipairs(ANSWERS) do
  local seen, list = {}, {}
  for _, a in ipairs(q[2]) do
    for n in a:gmatch("%((%d%d)[,%)]") do seen[n] = true end
    for n in a:gmatch(", (%d%d)%)") do seen[n] = true end
  end
  for n in pairs(seen) do list[#list + 1] = n end
  table.sort(list)
  print(string.format("  %-38s %s", q[1], table.concat(list, " ")))
end
print("Not in the map: 13 (gradients), 14 (a trained model and its heads), 15")
print("(positions), 16 (the block around attention): what attention learns and")
print("where it sits, not how a variant works.")

tt.trace.section("4. What to read next")
print("The papers each lesson relies on are in README.md, Sources. Beyond the course:")
print("  - Vaswani et al. 2017, \"Attention Is All You Need\", and Rush's \"The Annotated")
print("    Transformer\": the whole model, read with this course's shapes in mind.")
print("  - Dao 2023, \"FlashAttention-2\", and Shah et al. 2024, \"FlashAttention-3\": how")
print("    lesson 12's tiles are scheduled on a GPU.")
print("  - Kwon et al. 2023, \"Efficient Memory Management for Large Language Model")
print("    Serving with PagedAttention\" (vLLM): the KV cache of lesson 09 in pages, and")
print("    KV-cache quantization, the serving side the article names.")
print("  - Peng et al. 2023, \"YaRN\": how RoPE models are stretched past their")
print("    training length, the practical sequel to lesson 15.")
print("  - Dai et al. 2024, \"DeepSeekMoE\", and the DeepSeek-V3 report: the mixture-of-")
print("    experts feed-forward that replaces lesson 16's FFN, and FP8 training.")
print("  - Gu and Dao 2023, \"Mamba\", and Dao and Gu 2024, \"Transformers are SSMs\"")
print("    (Mamba-2): state-space models, the gated answer to lesson 19's fixed state.")
print("  - Holtzman et al. 2020, \"The Curious Case of Neural Text Degeneration\":")
print("    top-k and top-p sampling, beyond lesson 16's temperature.")
print("  - Devlin et al. 2019, \"BERT\": an encoder, with bidirectional attention and")
print("    padding masks only (lesson 04 without lesson 03).")
print("  - Jain and Wallace 2019, \"Attention is not Explanation\": why the weight maps")
print("    of lessons 06, 14 and 16 describe a computation, not a reason.")
