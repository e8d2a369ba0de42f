-- 07_gqa.lua — MHA, MQA and GQA: how many key/value heads serve the query heads.
--
-- Multi-head attention gives every query head its own K and V head. MQA lets
-- all query heads share one K/V head; GQA sits in between: H query heads are
-- split into G groups and each group shares one K/V head. This lesson builds
-- the H = 8, G = 2 example, runs it twice (copying K/V with repeat_interleave,
-- and with tt.sdpa, which shares without copying), checks both agree, and
-- measures how much smaller the K/V cache gets. Then it loads a GQA version
-- of lesson 14's model (4 query heads sharing 2 K/V heads per layer, trained
-- the same way) and measures what each query head learned to do.
--
-- Run:  ./tensortrace lessons/07_gqa.lua              (trace of every shape)
--       ./tensortrace -q lessons/07_gqa.lua           (narrative only)
--       ./tensortrace lessons/07_gqa.lua --retrain    (trains the GQA model again)
--       ./tensortrace -q lessons/07_gqa.lua --retrain --steps 30
--             (trains 30 steps and prints their losses only: the test's short re-train)
-- Checkpoint: lessons/data/induction_gqa.safetensors (written by --retrain)
-- Figures: images/07_head_groups.png, images/07_gqa_heads.png

local args = {...}
local retrain, prefix_steps = false, nil
for i, a in ipairs(args) do
  if a == "--retrain" then retrain = true end
  if a == "--steps" then prefix_steps = math.tointeger(tonumber(args[i + 1])) end
end
-- lesson 14's model, with the kv_heads option (the last section)
local M = dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/induction_model.lua")

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
print("Figure: " .. tt.figure_path("images/07_head_groups.png") .. " (a line from each query head to the K/V head it reads)")

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
print("With random weights that is no surprise; the end of the lesson asks it")
print("again of a trained model.")
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

-- ===== A trained GQA model =====
local TH, TG = M.H, 2                -- the trained model: 4 query heads, 2 K/V heads
local TR = TH // TG
local TN, TV, TDh = M.N, M.V, M.Dh
local TB, STEPS, LR = 32, 1000, 1e-3 -- lesson 14's batch, steps and learning rate
local EVAL_B = 8                     -- sequences per period in the evaluation set, as lesson 14's
local ROLE_MIN = 0.3                 -- a score this high names a head's role
local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end
if prefix_steps or not exists(M.CHECKPOINT_GQA) then retrain = true end

tt.trace.section("A trained GQA model: which heads share, and what each learned")
print("(This section and the next use lesson 14's model and its words, \"induction\"")
print("and \"previous-token\" heads: come back to them after lesson 14.)")
print("Random weights show the mechanism, not what sharing does to a model. Lesson 14")
print(string.format("trains a 2-layer attention-only model (H = %d heads of Dh = %d per layer) to", TH, TDh))
print("copy: random tokens that repeat with a period P. Here the same model is trained")
print(string.format("the same way (same task, AdamW, lr %g, %d steps of %d sequences), but each", LR, STEPS, TB))
print(string.format("layer has only G = %d K/V heads for its H = %d query heads:", TG, TH))
for h = 1, TH do
  print(string.format("  query head %d reads K/V head %d", h, math.ceil(h / TR)))
end
print(string.format("Its qkv weight makes D + 2*G*Dh = %d numbers per token instead of 3*D = %d,",
  M.D + 2 * TG * TDh, 3 * M.D))
print("and tt.sdpa takes the [b,G,N,Dh] keys and values as they are.")

tt.trace.off()                          -- random init and training: not part of the math
local model, opt
if retrain then
  tt.manual_seed(7)
  model = M.init({kv_heads = TG})
  local params = {}
  for i, name in ipairs(M.NAMES) do params[i] = model[name] end
  opt = tt.optim.AdamW(params, {lr = LR, weight_decay = 0.01})
end
-- one AdamW step on a fresh batch, as in lesson 14: the mean of -log p(next token)
local function train_step()
  local P = tt.randint(TN // 4, TN // 2 + 1, 1):item()
  local x = M.repeated_batch(TB, P)
  local logits = M.forward(model, x)
  local loss = tt.cross_entropy(logits:narrow(2, 1, TN - 1):reshape(TB * (TN - 1), TV),
                                x:narrow(2, 2, TN - 1):reshape(TB * (TN - 1)))
  opt:zero_grad()
  loss:backward()
  opt:step()
  return loss:item()
end
if prefix_steps then
  -- the test's short re-train: the losses of the first steps, to 9 digits
  for step = 1, prefix_steps do print(string.format("step %d loss %.9g", step, train_step())) end
  return
end
local progress = tt.isatty(2)           -- a line for a person watching, never into a file
if retrain then
  local t0 = tt.clock()
  for step = 1, STEPS do
    local loss = train_step()
    if progress and (step % 10 == 0 or step == STEPS) then
      io.stderr:write(string.format("\rstep %4d/%d  loss %.3f ", step, STEPS, loss))
    end
  end
  if progress then io.stderr:write("\n") end
  tt.trace.on()
  print(string.format("Trained %d steps in %.1f s.", STEPS, tt.clock() - t0))
  local tensors = {}
  for _, name in ipairs(M.NAMES) do tensors[name] = model[name]:detach() end
  tt.save(M.CHECKPOINT_GQA, tensors, {steps = tostring(STEPS), seed = "7", lr = tostring(LR), kv_heads = tostring(TG)})
  print("Saved " .. M.CHECKPOINT_GQA .. ".")
  tt.trace.off()
else
  local meta
  model, _, meta = M.load(M.CHECKPOINT_GQA)
  if meta.kv_heads ~= tostring(TG) or meta.steps ~= tostring(STEPS) then
    error(M.CHECKPOINT_GQA .. " is not this lesson's GQA model (retrain with --retrain)")
  end
end
if M.kv_heads(model) ~= TG then error("the trained model should have " .. TG .. " K/V heads") end
tt.trace.on()
print(string.format("The weights come from %s unless the", M.CHECKPOINT_GQA))
print("lesson runs with --retrain, which trains again from the same seed and writes")
print("the same bytes for any thread count.")
-- the sequence of the figure at the end, P random tokens repeated
local EXAMPLE_P = 11
tt.trace.off()
tt.manual_seed(11)
local example = M.repeated_batch(1, EXAMPLE_P)
tt.trace.on()
print("")
print("Layer 1 on one sequence of N = 32 tokens, traced: one matmul makes the 4 query")
print("heads and the 2 K/V heads, and tt.sdpa pairs query heads 1, 2 with K/V head 1")
print("and 3, 4 with K/V head 2.")
local q1, k1, v1 = tt.no_grad(M.qkv_grouped, model, 1, M.embed(model, example))
local heads1 = tt.no_grad(tt.sdpa, q1, k1, v1, {causal = true})
if q1:size(2) ~= TH or k1:size(2) ~= TG or heads1:size(2) ~= TH then
  error("layer 1 should have " .. TH .. " query heads on " .. TG .. " K/V heads")
end
if not (k1:shares_storage(q1) and v1:shares_storage(q1)) then error("Q, K and V should be views of one matmul") end
print("Q [1,4,32,16], K and V [1,2,32,16] are views of the one matmul's output (no")
print("copy), and tt.sdpa reads K and V with their 2 heads as they are.")

tt.trace.section("What each query head does, by K/V group")
-- A fixed evaluation set, as lesson 14's: EVAL_B sequences for every period
-- 8..16, each drawn as a batch of TB and cut (lesson 14's way of drawing them).
tt.trace.off()                          -- 18 forward passes: measured, not traced
tt.manual_seed(70)
local eval_set = {}
for P = TN // 4, TN // 2 do eval_set[#eval_set + 1] = {P = P, x = M.repeated_batch(TB, P):narrow(1, 1, EVAL_B)} end
-- Over the evaluation set: every head's three scores (M.head_scores), how far
-- apart the weights of every two heads of a layer are, and the loss on the
-- repeated tokens (P+2..N: predictable by copying) of any model.
local scores, apart, repeated_loss = {}, {}, {}
for l = 1, 2 do
  scores[l] = {current = {}, prev = {}, ind = {}}
  for h = 1, TH do scores[l].current[h], scores[l].prev[h], scores[l].ind[h] = 0, 0, 0 end
  apart[l] = {}
  for a = 1, TH do
    apart[l][a] = {}
    for b = 1, TH do apart[l][a][b] = 0 end
  end
end
local function measure(m, with_scores)
  local loss = 0
  tt.no_grad(function()
    for _, e in ipairs(eval_set) do
      local logits, w = M.forward(m, e.x, {weights = with_scores})
      local rows = logits:narrow(2, e.P + 1, TN - 1 - e.P)
      local targets = e.x:narrow(2, e.P + 2, TN - 1 - e.P)
      loss = loss + tt.cross_entropy(rows:reshape(EVAL_B * (TN - 1 - e.P), TV),
                                     targets:reshape(EVAL_B * (TN - 1 - e.P))):item() / #eval_set
      if with_scores then
        for l = 1, 2 do
          local s = M.head_scores(w[l], e.P)
          for _, k in ipairs{"current", "prev", "ind"} do
            for h = 1, TH do scores[l][k][h] = scores[l][k][h] + s[k][h] / #eval_set end
          end
          -- half the summed |difference| of two rows of weights: 0 = the same
          -- row, 1 = no key in common; a mean over queries and sequences, for
          -- every pair of heads at once ([b,H,1,N,N] - [b,1,H,N,N])
          local wl = w[l]
          local d = ((wl:unsqueeze(3) - wl:unsqueeze(2)):abs():sum(5) / 2):mean(4):mean(1):totable()
          for a = 1, TH do
            for b = 1, TH do apart[l][a][b] = apart[l][a][b] + d[a][b] / #eval_set end
          end
        end
      end
      collectgarbage()                  -- free this batch's tensors: fresh memory costs a page fault per 4 KiB
    end
  end)
  return loss
end
local mha = M.load()                    -- lesson 14's model, on the same evaluation set
repeated_loss.gqa = measure(model, true)
repeated_loss.mha = measure(mha, false)
tt.trace.on()
print(string.format("The same three scores as lesson 06, over %d sequences (%d for each P = %d..%d),", EVAL_B * #eval_set, EVAL_B, TN // 4, TN // 2))
print("each the mean weight a query puts on one key:")
print("  current:  the query's own token (key i)")
print("  previous: the token just before it (key i - 1)")
print("  induction: for a repeated token, the token that followed its earlier")
print("             occurrence (key i - P + 1)")
print(string.format("A head is named by its highest score when that is at least %.1f.", ROLE_MIN))
local ROLES = {{"current", "current token"}, {"prev", "previous token"}, {"ind", "induction"}}
local role_of, titles = {{}, {}}, {}
print("  head  K/V head   current  previous  induction   role")
for l = 1, 2 do
  for h = 1, TH do
    local s, role, best = scores[l], "diffuse", ROLE_MIN
    for _, r in ipairs(ROLES) do
      if s[r[1]][h] >= best then role, best = r[2], s[r[1]][h] end
    end
    role_of[l][h] = role
    local g = math.ceil(h / TR)
    print(string.format("  L%d h%d     %d       %7.2f  %8.2f  %9.2f   %s", l, h, g, s.current[h], s.prev[h], s.ind[h], role))
    -- a panel title fits 24 characters: the role's first word and its score
    titles[#titles + 1] = role == "diffuse" and string.format("L%d h%d kv%d: diffuse", l, h, g)
                          or string.format("L%d h%d kv%d: %s %.2f", l, h, g, role:match("^%a+"), best)
  end
end
local function shares(a, b) return math.ceil(a / TR) == math.ceil(b / TR) end
-- the pairs of heads of layer l that pass keep(a, b), as "h1-h2 0.73, ...", and their range
local function pairs_where(l, keep)
  local out, lo, hi = {}, math.huge, -math.huge
  for a = 1, TH do
    for b = a + 1, TH do
      if keep(a, b) then
        out[#out + 1] = string.format("h%d-h%d %.2f", a, b, apart[l][a][b])
        lo, hi = math.min(lo, apart[l][a][b]), math.max(hi, apart[l][a][b])
      end
    end
  end
  return table.concat(out, ", "), lo, hi
end
-- thresholds of the checks, with margin under what the trained model measured
-- (layer 1 pairs sharing K/V 0.73 and 0.71 apart, layer 2 pairs 0.33 and 0.34,
-- repeated-token loss 0.48)
local L1_APART_MIN, L2_APART_MIN, LOSS_MAX = 0.6, 0.25, 1.0

print("")
print("How far apart two heads' weights are: half the summed |difference| of their")
print("weight rows, a mean over queries and sequences (0 = the same weights, 1 = no")
print("key in common).")
local function same_role(a, b) return role_of[1][a] == role_of[1][b] end
local l1_same, same_lo, same_hi = pairs_where(1, same_role)
local l1_diff, diff_lo, diff_hi = pairs_where(1, function(a, b) return not same_role(a, b) end)
local l2_shared, shared_lo, shared_hi = pairs_where(2, shares)
local l2_other, other_lo, other_hi = pairs_where(2, function(a, b) return not shares(a, b) end)
print("  layer 1, same role:       " .. l1_same)
print("  layer 1, different roles: " .. l1_diff)
print("  layer 2, sharing a K/V head:  " .. l2_shared)
print("  layer 2, different K/V heads: " .. l2_other)
for g = 1, TG do
  local a, b = (g - 1) * TR + 1, g * TR
  if role_of[1][a] == role_of[1][b] or role_of[1][a] == "diffuse" or role_of[1][b] == "diffuse" then
    error("the two layer-1 heads sharing K/V head " .. g .. " should play two different roles")
  end
  if apart[1][a][b] < L1_APART_MIN then error("layer-1 heads sharing a K/V head should attend differently") end
  if apart[2][a][b] < L2_APART_MIN then error("layer-2 heads sharing a K/V head should not be copies") end
end
if same_hi >= diff_lo then error("in layer 1, heads with the same role should be the closest pairs") end
for h = 1, TH do
  if role_of[2][h] ~= "induction" then error("every layer-2 head should be an induction head") end
end
if shared_lo < other_lo - 0.05 then error("layer-2 heads sharing K/V should be no closer than the others") end
print("Layer 1: each K/V group holds one current-token head and one previous-token")
print("head. The two read the same keys, but their queries pick different ones.")
print(string.format("What sets how far apart two heads are is their role: %.2f-%.2f for different", diff_lo, diff_hi))
print(string.format("roles, whether they share K/V or not, %.2f-%.2f for the same role in different", same_lo, same_hi))
print("groups. Sharing K/V did not stop the heads of a group specialising.")
print("Layer 2: all four heads became induction heads, as all four did in lesson 14's")
print(string.format("model. Pairs sharing a K/V head are %.2f-%.2f apart, the other pairs %.2f-%.2f:", shared_lo, shared_hi, other_lo, other_hi))
print("the same role, not copies (a third of their weight falls on different keys),")
print("and sharing K/V made them no more alike than heads that do not share.")
print(string.format("Checked: in layer 1 the heads of each group play different roles, are more than %.1f", L1_APART_MIN))
print("apart, and same-role pairs are the closest; in layer 2 every head is an")
print(string.format("induction head, and the pairs sharing K/V are more than %.2f apart and no", L2_APART_MIN))
print("closer than the closest pair that does not share, by more than 0.05.")

print("")
local function count(m)
  local n = 0
  for _, name in ipairs(M.NAMES) do n = n + m[name]:numel() end
  return n
end
print(string.format("What sharing cost here: the loss on the repeated tokens (the ones an induction"))
print(string.format("head can predict), same evaluation set, ln %d = %.2f for a uniform guess:", TV, math.log(TV)))
print(string.format("  lesson 14's MHA model  %d parameters, K/V cache per token and layer %d floats:  %.3f",
  count(mha), 2 * M.kv_heads(mha) * TDh, repeated_loss.mha))
print(string.format("  this GQA model         %d parameters, K/V cache per token and layer %d floats:  %.3f",
  count(model), 2 * M.kv_heads(model) * TDh, repeated_loss.gqa))
if repeated_loss.gqa > LOSS_MAX then error("the GQA model should predict the repeated tokens") end
print(string.format("Checked: the GQA model copies too (loss below %.1f). Half the K/V cache (and fewer", LOSS_MAX))
print(string.format("parameters) cost %.2f nats per repeated token here. One training run of each:", repeated_loss.gqa - repeated_loss.mha))
print("the size of the gap is this pair of runs, not a law.")

-- Every head of both layers on one sequence: [2H, N, N].
tt.trace.off()
local example_tokens = M.chars(example[1]:totable())
local _, w_example = tt.no_grad(M.forward, model, example, {weights = true})
tt.heatmap(tt.cat({w_example[1][1], w_example[2][1]}, 1), "images/07_gqa_heads.png", {
  title = string.format("Trained GQA model, P = %d: h1, h2 share K/V head 1; h3, h4 share K/V head 2", EXAMPLE_P),
  panel_titles = titles, xlabels = example_tokens, ylabels = example_tokens, xtitle = "Key", ytitle = "Query",
  mask = {["masked: exactly 0"] = ~tt.causal_mask(TN)},
  cmap = "viridis", vmin = 0, vmax = 1, annotate = false })
tt.trace.on()
print("")
print("Figure: " .. tt.figure_path("images/07_gqa_heads.png") .. ", every head of both layers on one sequence of")
print(string.format("period %d (%s), each panel titled with its K/V head (kv1, kv2) and", EXAMPLE_P, table.concat(example_tokens):sub(1, EXAMPLE_P)))
print("its role and score from the table above; the axes label every token.")
print("Layer 1, each group side by side: a current-token head (the diagonal, bright")
print("over the first tokens, fainter later) and a previous-token head (the line")
print("just below the diagonal). Layer 2: every panel has the induction stripe,")
print(string.format("P - 1 = %d keys left of the diagonal.", EXAMPLE_P - 1))
