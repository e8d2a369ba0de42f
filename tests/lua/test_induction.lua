-- test_induction.lua — lesson 14's training and its committed checkpoint:
-- a short re-train reproduces the golden losses for any thread count, and
-- the checkpoint still holds a previous-token head and an induction head,
-- measured here with explicit attention (not tt.sdpa, which the lesson uses).
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
local function prefix(threads)
  -- run from a scratch folder: the lesson draws its "before" figure there
  local p = io.popen("cd " .. dir .. " && " .. repo .. "/tensortrace -q --threads " .. threads
                     .. " lessons/14_induction_heads.lua --retrain --steps 30 2>&1")
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
os.execute("rm -rf " .. dir)

-- ===== the committed checkpoint =====
local w = tt.load("lessons/data/induction.safetensors")
local V, D, H, N = 64, 64, 4, 32
local Dh = D // H
tt.manual_seed(1)
local future = ~tt.causal_mask(N)
-- explicit attention: weights [b,H,N,N] and the layer's output added to h
local function layer(h, l)
  local b = h:size(1)
  local qkv = h:matmul(w["layer" .. l .. ".qkv"]:mT())
  local function part(i) return qkv:narrow(3, (i - 1) * D + 1, D):reshape(b, N, H, Dh):permute(1, 3, 2, 4) end
  local q, k, v = part(1), part(2), part(3)
  local a = (q:matmul(k:mT()) / math.sqrt(Dh)):masked_fill(future, -math.huge):softmax(4)
  local o = a:matmul(v):permute(1, 3, 2, 4):reshape(b, N, D)
  return h + o:matmul(w["layer" .. l .. ".out"]:mT()), a:totable()
end
local best_prev, best_ind = 0, 0
for P = 8, 16 do
  local seq = tt.randint(1, V + 1, 16, P)
  local x = tt.cat({seq, seq, seq, seq}, 2):narrow(2, 1, N)
  local h = w.tok_embed:index_select(1, x:reshape(16 * N)):view(16, N, D) + w.pos_embed
  local h1, a1 = layer(h, 1)
  local _, a2 = layer(h1, 2)
  for hd = 1, H do
    local prev, ind = 0, 0
    for b = 1, 16 do
      for i = 2, N do prev = prev + a1[b][hd][i][i - 1] / (16 * (N - 1)) end
      for i = P + 1, N do ind = ind + a2[b][hd][i][i - P + 1] / (16 * (N - P)) end
    end
    best_prev = math.max(best_prev, prev)
    best_ind = math.max(best_ind, ind)
  end
end
check("checkpoint: a layer-1 head puts > 0.4 on the previous token", best_prev > 0.4)
check("checkpoint: a layer-2 head puts > 0.4 on the token after the earlier occurrence", best_ind > 0.4)
T.report()
