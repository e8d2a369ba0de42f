-- test_induction.lua — lesson 14's training and its committed checkpoint:
-- a short re-train reproduces the golden losses for any thread count, and
-- the checkpoint still holds a previous-token head and an induction head,
-- measured here with explicit attention (not tt.sdpa, which the lesson uses).
-- The same for lesson 07's GQA variant (2 K/V heads for 4 query heads),
-- whose K/V heads are copied here with repeat_interleave.
local T = dofile("tests/lua/check.lua")
local check = T.check

-- ===== the first 30 steps, re-trained =====
-- GOLDEN: printed once by `./tensortrace -q lessons/14_induction_heads.lua
-- --retrain --steps 30` (commit of the lesson); float32 sums may round
-- differently on another CPU's kernels, hence the tolerance.
local GOLDEN = {
  4.55945539, 4.51161671, 4.44705534, 4.45483828, 4.46548033,
  4.53440285, 4.45692873, 4.39665031, 4.4400506, 4.4043479,
  4.47872162, 4.39655018, 4.45991802, 4.41562796, 4.43740177,
  4.43977165, 4.34198904, 4.4012413, 4.4371171, 4.37607622,
  4.40603161, 4.34009695, 4.38023472, 4.39316797, 4.38523006,
  4.35046244, 4.37968254, 4.3272233, 4.34127378, 4.34774351,
}
local repo = io.popen("pwd"):read("l")
local dir = os.tmpname()
os.remove(dir)
os.execute("mkdir -p " .. dir .. "/images && ln -s " .. repo .. "/lessons " .. dir .. "/lessons")
local function prefix(threads, lesson)
  -- run from a scratch folder: the lesson draws its first figures there
  local p = io.popen("cd " .. dir .. " && " .. repo .. "/tensortrace -q --threads " .. threads
                     .. " " .. (lesson or "lessons/14_induction_heads.lua") .. " --retrain --steps 30 2>&1")
  local out = p:read("a"); p:close()
  local losses = {}
  for step, loss in out:gmatch("step (%d+) loss (%S+)") do losses[tonumber(step)] = tonumber(loss) end
  return losses, out
end
local one, out1 = prefix(1)
local two = prefix(2)
check("30 losses printed", #one == 30 or print(out1))
local same = #one == #two
for i = 1, #one do same = same and one[i] == two[i] end
check("same losses, bit for bit, with 1 and 2 threads", same)
local near = #one == #GOLDEN
for i = 1, #GOLDEN do near = near and math.abs(one[i] - GOLDEN[i]) <= 1e-4 * GOLDEN[i] end
check("losses match the golden ones", near)
check("the loss goes down in 30 steps", one[30] < one[1] - 0.1)

-- GOLDEN_GQA: printed once by `./tensortrace -q lessons/07_gqa.lua --retrain
-- --steps 30` (commit of the GQA model)
local GOLDEN_GQA = {
  4.49570751, 4.49424028, 4.5242672, 4.45452118, 4.47297096,
  4.50178862, 4.43661451, 4.4874258, 4.44629288, 4.49168539,
  4.39246893, 4.42490149, 4.42551184, 4.45077753, 4.40437794,
  4.47093344, 4.40645075, 4.37558937, 4.42246866, 4.4045496,
  4.42967081, 4.39364433, 4.35670328, 4.39500046, 4.38064241,
  4.4157548, 4.37248516, 4.35950279, 4.32710457, 4.31988955,
}
local gone, gout1 = prefix(1, "lessons/07_gqa.lua")
local gtwo = prefix(2, "lessons/07_gqa.lua")
check("GQA: 30 losses printed", #gone == 30 or print(gout1))
same = #gone == #gtwo
for i = 1, #gone do same = same and gone[i] == gtwo[i] end
check("GQA: same losses, bit for bit, with 1 and 2 threads", same)
near = #gone == #GOLDEN_GQA
for i = 1, #GOLDEN_GQA do near = near and math.abs(gone[i] - GOLDEN_GQA[i]) <= 1e-4 * GOLDEN_GQA[i] end
check("GQA: losses match the golden ones", near)
check("GQA: the loss goes down in 30 steps", gone[30] < gone[1] - 0.1)
os.execute("rm -rf " .. dir)

-- ===== the committed checkpoints =====
local V, D, H, N = 64, 64, 4, 32
local Dh = D // H
tt.manual_seed(1)
local future = ~tt.causal_mask(N)
-- The mean previous-token score of every layer-1 head and induction score of
-- every layer-2 head, over 16 sequences for each period 8..16, of the model
-- in file path with G K/V heads per layer.
local function head_scores(path, G)
  local w = tt.load(path)
  check(path .. ": qkv makes D + 2*G*Dh numbers per token",
        w["layer1.qkv"]:size(1) == D + 2 * G * Dh and w["layer2.qkv"]:size(1) == D + 2 * G * Dh)
  -- explicit attention: weights [b,H,N,N] and the layer's output added to h
  local function layer(h, l)
    local b = h:size(1)
    local qkv = h:matmul(w["layer" .. l .. ".qkv"]:mT())
    local function part(first, heads)
      return qkv:narrow(3, first, heads * Dh):reshape(b, N, heads, Dh):permute(1, 3, 2, 4)
    end
    local q, k, v = part(1, H), part(D + 1, G), part(D + G * Dh + 1, G)
    k, v = k:repeat_interleave(H // G, 2), v:repeat_interleave(H // G, 2)   -- K/V head g serves H/G query heads
    local a = (q:matmul(k:mT()) / math.sqrt(Dh)):masked_fill(future, -math.huge):softmax(4)
    local o = a:matmul(v):permute(1, 3, 2, 4):reshape(b, N, D)
    return h + o:matmul(w["layer" .. l .. ".out"]:mT()), a:totable()
  end
  local cur, prev, ind = {}, {}, {}
  for hd = 1, H do cur[hd], prev[hd], ind[hd] = 0, 0, 0 end
  for P = 8, 16 do
    local seq = tt.randint(1, V + 1, 16, P)
    local x = tt.cat({seq, seq, seq, seq}, 2):narrow(2, 1, N)
    local h = w.tok_embed:index_select(1, x:reshape(16 * N)):view(16, N, D) + w.pos_embed
    local h1, a1 = layer(h, 1)
    local _, a2 = layer(h1, 2)
    for hd = 1, H do
      for b = 1, 16 do
        for i = 1, N do cur[hd] = cur[hd] + a1[b][hd][i][i] / (16 * N * 9) end
        for i = 2, N do prev[hd] = prev[hd] + a1[b][hd][i][i - 1] / (16 * (N - 1) * 9) end
        for i = P + 1, N do ind[hd] = ind[hd] + a2[b][hd][i][i - P + 1] / (16 * (N - P) * 9) end
      end
    end
  end
  return cur, prev, ind
end

local _, prev, ind = head_scores("lessons/data/induction.safetensors", H)
check("checkpoint: a layer-1 head puts > 0.4 on the previous token", math.max(table.unpack(prev)) > 0.4)
check("checkpoint: a layer-2 head puts > 0.4 on the token after the earlier occurrence", math.max(table.unpack(ind)) > 0.4)

-- the GQA model: query heads 1, 2 share K/V head 1, heads 3, 4 K/V head 2
local cur
cur, prev, ind = head_scores("lessons/data/induction_gqa.safetensors", 2)
local split = true
for g = 0, 1 do
  local a, b = 2 * g + 1, 2 * g + 2      -- one current-token and one previous-token head, either order
  split = split and ((cur[a] > 0.35 and prev[b] > 0.35) or (prev[a] > 0.35 and cur[b] > 0.35))
end
check("GQA checkpoint: each layer-1 K/V group holds a current-token and a previous-token head (> 0.35)", split)
check("GQA checkpoint: every layer-2 head puts > 0.4 on the token after the earlier occurrence",
      math.min(table.unpack(ind)) > 0.4)
-- ===== a traced step names the model's tensors =====
-- (before: ~100 rows of anonymous [32,32,64] tensors in lesson 14's section 4)
local sdir = T.tmpdir()
local step = io.open(sdir .. "/step.lua", "w")
step:write([[
local M = dofile("lessons/lib/induction_model.lua")
local model = M.load("lessons/data/induction.safetensors")
for _, w in pairs(model) do w:requires_grad_() end
local x = M.repeated_batch(2, 8)
local logits = M.forward(model, x)
tt.cross_entropy(logits:reshape(2 * M.N, M.V), x:reshape(2 * M.N)):backward()
]])
step:close()
local p = io.popen("cd " .. repo .. " && ./tensortrace " .. sdir .. "/step.lua 2>&1")
local trace = p:read("a"); p:close()
local function has(s) return trace:find(s, 1, true) ~= nil end
check("the embedding is named and labelled", has("-> h (embedded)[B=2,N=32,D=64]"))
check("Q, K, V of layer 1 are labelled and named", has("-> Q1[B=2,H=4,N=32,Dh=16]") and has("-> K1[B=2,H=4,N=32,Dh=16]")
      and has("-> V1[B=2,H=4,N=32,Dh=16]"))
check("the heads' output is labelled on the sdpa row", has("(causal, scale=0.25) -> heads1[B=2,H=4,N=32,Dh=16]"))
check("the residual stream after each layer", has("-> h (after layer 1)[B=2,N=32,D=64]"))
check("the logits", has("-> logits[B=2,N=32,64]"))
check("the weights by their names", has("mT          layer1.qkv[192,64]") and has("index_select tok_embed[64,64]"))
check("the backward pass names the gradients", has("grad of Q1[B=2,H=4,N=32,Dh=16]") and has("grad of layer1.qkv[192,64]"))
local anonymous = 0
for op in trace:gmatch("\n    (%a+) +[^\n]*%-> %[2,32,64%]") do
  if op ~= "view" then anonymous = anonymous + 1 end   -- the embedding's view, named on the same line
end
check("no anonymous [2,32,64] activation in the forward pass (" .. anonymous .. ")", anonymous == 0)
T.report()
