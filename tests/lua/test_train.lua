-- test_train.lua — a tiny model learns: token and position embeddings,
-- two causal attention layers (2 heads, residual), an unembedding, and
-- tt.cross_entropy on the next token, trained 50 AdamW steps (lr 1e-2) on
-- a fixed batch whose second half repeats the first. The loss must fall
-- below half its start (measured: 3.04 -> 1.12, 0.37 of it; the first
-- half's random tokens keep it above about 15/31 log 16 = 1.34 unless
-- memorised; a batch of 64 learns slower: 3.12 -> 1.90). Batch 32 of 31
-- positions: 992 rows, enough that matmul and sdpa share their work among
-- threads. It prints the 50 losses as hex floats: the shell test
-- tests/test_train.sh runs it with --threads 1, 2, 3 and compares them.
local T = dofile("tests/lua/check.lua")
local check = T.check

local V, D, H, B, HALF = 16, 16, 2, 32, 16
local N = 2 * HALF - 1                      -- inputs: all tokens but the last
tt.manual_seed(2024)
local first = tt.randint(1, V + 1, B, HALF)
local seq = tt.cat({first, first}, 2)       -- [B, 2*HALF]: the second half repeats the first
local ids, targets = seq:narrow(2, 1, N), seq:narrow(2, 2, N)

local tok, pos = tt.nn.Embedding(V, D), tt.nn.Embedding(N, D)
local layers = {}
for l = 1, 2 do
  layers[l] = {}
  for _, w in ipairs({"q", "k", "v", "o"}) do layers[l][w] = tt.nn.Linear(D, D, {bias = false}) end
end
local unembed = tt.nn.Linear(D, V)
local params = {}
local function add(m) for _, p in ipairs(m:parameters()) do params[#params + 1] = p end end
add(tok); add(pos); add(unembed)
for _, layer in ipairs(layers) do for _, m in pairs(layer) do add(m) end end
local positions = tt.arange(1, N + 1):long()

-- x [B, N, D] as [B, H, N, D/H] and back
local function heads(x) return x:reshape(B, N, H, D // H):transpose(2, 3) end
local function merge(x) return x:transpose(2, 3):reshape(B, N, D) end

local function forward()
  local x = tok(ids) + pos(positions)
  for _, a in ipairs(layers) do
    x = x + a.o(merge(tt.sdpa(heads(a.q(x)), heads(a.k(x)), heads(a.v(x)), {causal = true})))
  end
  return tt.cross_entropy(unembed(x):reshape(-1, V), targets:reshape(-1))
end

local opt = tt.optim.AdamW(params, {lr = 1e-2})
local losses, hex = {}, {}
for step = 1, 50 do
  opt:zero_grad()
  local loss = forward()
  loss:backward()
  opt:step()
  losses[step] = loss:item()
  hex[step] = string.format("%a", losses[step])
end
print("losses: " .. table.concat(hex, " "))
check(string.format("loss falls below half its start (%.4f -> %.4f)", losses[1], losses[50]),
      losses[50] < 0.5 * losses[1])
check("every loss is finite", (function()
  for _, l in ipairs(losses) do if l ~= l or l == math.huge then return false end end
  return true
end)())
T.report()
