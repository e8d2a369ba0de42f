-- induction_model.lua — lesson 14's two-layer attention-only transformer,
-- shared with lessons 06 and 09 (which draw and decode its trained heads).
--
-- A lesson loads it from its own folder, which works from any directory and
-- under --sandbox (a script may read below its folder):
--   local M = dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/induction_model.lua")
-- M.load() reads the weights lesson 14 trained (lessons/data/induction.safetensors);
-- M.forward runs the model; M.head_scores says what each head does. GQA: at the end.
local M = {}
M.V, M.D, M.H, M.N = 64, 64, 4, 32         -- vocabulary, width, heads, positions
M.Dh = M.D // M.H
M.NAMES = {"tok_embed", "pos_embed", "layer1.qkv", "layer1.out", "layer2.qkv", "layer2.out", "unembed"}
local V, D, H, N, Dh = M.V, M.D, M.H, M.N, M.Dh
local here = (arg and arg[0] and arg[0]:match("^(.*)/")) or "."
M.CHECKPOINT = here .. "/data/induction.safetensors"

-- one character per token id, so a sequence prints as a short string
local ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+*"
function M.char(id) return ALPHABET:sub(id, id) end
function M.chars(ids)                      -- Lua list of ids -> list of characters
  local out = {}
  for i, id in ipairs(ids) do out[i] = M.char(id) end
  return out
end

-- P random tokens, repeated: a [b, N] int64 tensor of ids 1..V
function M.repeated_batch(b, P)
  local a = tt.randint(1, V + 1, b, P)
  local copies = {}
  for c = 1, (N + P - 1) // P do copies[c] = a end
  return tt.cat(copies, 2):narrow(2, 1, N)
end

-- Random weights, as lesson 14 starts training from (opts: the GQA variant, below).
-- Linear-style init: uniform(-1/sqrt(in), 1/sqrt(in)), weight [out, in].
local function linear_weight(out, in_)
  return ((tt.rand(out, in_) * 2 - 1) / math.sqrt(in_)):requires_grad_()
end
function M.init(opts)
  return M.labelled{
    tok_embed = tt.randn(V, D):requires_grad_(),            -- one row per token id
    pos_embed = tt.randn(N, D):requires_grad_(),            -- one row per position
    ["layer1.qkv"] = linear_weight(M.qkv_rows(opts), D), ["layer1.out"] = linear_weight(D, D),
    ["layer2.qkv"] = linear_weight(M.qkv_rows(opts), D), ["layer2.out"] = linear_weight(D, D),
    unembed = linear_weight(V, D),
  }
end

-- The trained weights (and the training curves) from the checkpoint.
function M.load(path)
  path = path or M.CHECKPOINT
  local loaded, meta = tt.load(path)
  local model = {}
  for _, name in ipairs(M.NAMES) do
    if not loaded[name] then error(path .. " has no tensor '" .. name .. "' (lesson 14 writes it)") end
    model[name] = loaded[name]
  end
  return M.labelled(model), loaded, meta
end

-- Each weight labelled with its name, so the trace says "layer1.qkv", and
-- "grad of layer1.qkv" in the backward pass.
function M.labelled(model)
  for _, name in ipairs(M.NAMES) do model[name]:label(name) end
  return model
end

-- The pieces of the forward pass, separate so lesson 09 can run them one
-- token at a time. Token ids x [b, n] at positions first..first+n-1 -> h [b, n, D].
-- Each piece names its result's dims (B, N, D; H heads of Dh) and labels
-- it, so a traced pass reads as the model: h (embedded), Q1, K1, V1,
-- heads1, h (after layer 1), ..., logits.
function M.embed(model, x, first)
  local b, n = x:size(1), x:size(2)
  local tok = model.tok_embed:index_select(1, x:reshape(b * n)):view(b, n, D):named("B", "N", "D")
  return (tok + model.pos_embed:narrow(1, first or 1, n)):label("h (embedded)")
end
-- one matmul makes Q, K and V of all heads: h [b,n,D] -> q, k, v [b,H,n,Dh]
function M.qkv(model, l, h)
  local b, n = h:size(1), h:size(2)
  local qkv = h:matmul(model["layer" .. l .. ".qkv"]:mT()):view(b, n, 3, H, Dh):permute(3, 1, 4, 2, 5)
  local function part(i, name) return qkv[i]:named("B", "H", "N", "Dh"):label(name .. l) end
  return part(1, "Q"), part(2, "K"), part(3, "V")
end
-- the heads' outputs [b,H,n,Dh] merged, through W_O, added to the residual stream h
function M.add_heads(model, l, h, heads)
  local b, n = h:size(1), h:size(2)
  heads:label("heads" .. l)
  local merged = heads:transpose(2, 3):reshape(b, n, D)
  return (h + merged:matmul(model["layer" .. l .. ".out"]:mT())):label("h (after layer " .. l .. ")")
end
function M.unembed(model, h) return h:matmul(model.unembed:mT()):label("logits") end

-- The whole forward pass. x [b, N] ids -> logits [b, N, V]. opts.weights: also
-- return each layer's attention weights [b, H, N, N]; opts.ablate = {layer,
-- head}: that head's output is multiplied by 0 before W_O.
function M.forward(model, x, opts)
  opts = opts or {}
  local h = M.embed(model, x)
  local weights = {}
  for l = 1, 2 do
    local q, k, v = (M.kv_heads(model) < H and M.qkv_grouped or M.qkv)(model, l, h)
    local heads
    heads, weights[l] = tt.sdpa(q, k, v, {causal = true, weights = opts.weights}); heads:label("heads" .. l)
    if opts.ablate and opts.ablate[1] == l then
      local keep = {}
      for j = 1, H do keep[j] = {{j == opts.ablate[2] and 0 or 1}} end
      heads = heads * tt.tensor({keep})                    -- [1,H,1,1]
    end
    h = M.add_heads(model, l, h, heads)                     -- the residual stream
  end
  return M.unembed(model, h), weights
end

-- ===== What a head does, measured =====
-- The expected keys as positions in a flattened [N*N] weight matrix: query i
-- looks at key i - offset, for queries first_query..N. Kept per (offset,
-- first_query): the lessons ask for the same few again and again.
local key_index = {}
local function expected_keys(offset, first_query)       -- key = query - offset
  local id = offset .. ":" .. first_query
  if not key_index[id] then
    local flat = {}
    for i = first_query, N do flat[#flat + 1] = (i - 1) * N + (i - offset) end
    key_index[id] = tt.tensor(flat):long()
  end
  return key_index[id]
end
-- mean weight on the expected key, per head: [b,H,N,N] -> Lua list of H numbers
-- (only the expected keys are read: a multiply by a 0/1 mask would read all N*N)
local function mean_weight_on(w, keys, queries)
  local picked = w:reshape(w:size(1), w:size(2), N * N):index_select(3, keys)   -- [b,H,queries]
  return (picked:sum(3) / queries):mean(1):totable()
end
-- Three scores of every head of one layer's weights w [b,H,N,N] on sequences
-- of period P: current = mean weight a query puts on itself; prev = on the
-- token just before it; ind = mean weight a repeated token puts on the token
-- that followed its earlier occurrence (key i - P + 1 for query i).
function M.head_scores(w, P)
  return {current = mean_weight_on(w, expected_keys(0, 1), N),
          prev = mean_weight_on(w, expected_keys(1, 2), N - 1),
          ind = mean_weight_on(w, expected_keys(P - 1, P + 1), N - P)}
end

-- ===== The GQA variant (lesson 07) =====
-- M.init{kv_heads = G} gives each layer H query heads but only G key/value
-- heads, K/V head g serving query heads (g-1)*H/G+1 .. g*H/G: its qkv weight
-- makes D + 2*G*Dh numbers per token instead of 3*D. M.forward runs it
-- through tt.sdpa, which shares each K/V head without copying it. Lesson 07
-- trains it as lesson 14 trains the MHA model and saves it to CHECKPOINT_GQA.
M.CHECKPOINT_GQA = here .. "/data/induction_gqa.safetensors"
function M.qkv_rows(opts)
  local G = opts and opts.kv_heads or H
  if H % G ~= 0 then error("induction model: kv_heads = " .. G .. " does not divide the " .. H .. " query heads") end
  return D + 2 * G * Dh
end
-- the number of K/V heads of a model: H, or G for the GQA variant
function M.kv_heads(model) return (model["layer1.qkv"]:size(1) - D) // (2 * Dh) end
-- one matmul makes Q of all H heads and K, V of the G K/V heads:
-- h [b,n,D] -> q [b,H,n,Dh], k, v [b,G,n,Dh]
function M.qkv_grouped(model, l, h)
  local b, n, G = h:size(1), h:size(2), M.kv_heads(model)
  local all = h:matmul(model["layer" .. l .. ".qkv"]:mT())
  local function heads(first, count, name, hdim)   -- columns first.. of all, as [b,count,n,Dh]
    return all:narrow(3, first, count * Dh):reshape(b, n, count, Dh):transpose(2, 3)
              :named("B", hdim, "N", "Dh"):label(name .. l)
  end
  return heads(1, H, "Q", "H"), heads(D + 1, G, "K", "G"), heads(D + G * Dh + 1, G, "V", "G")
end

return M
