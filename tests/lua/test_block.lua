-- test_block.lua — the transformer block's pieces from Lua: tt.rope
-- (against check.lua's float64 rotation, relative positions, gradcheck,
-- errors), tt.dropout and nn.Dropout (statistics with a fixed seed, the
-- same mask in backward, p = 0 and 1, eval), nn.FeedForward, nn.Attention
-- and nn.Block against a float64 reference written here for a tiny config,
-- gradcheck through the block, and every error a script can cause.
local T = dofile("tests/lua/check.lua")
local check, close, checkerror = T.check, T.close, T.checkerror

-- ===== rope =====
-- x [2, 3, 6] (non-contiguous: a transpose), positions 4, -1, 17
local rope_ref = T.rope_ref
tt.manual_seed(3)
local xt = tt.randn(2, 6, 3):transpose(2, 3)
check("rope input is strided", not xt:is_contiguous())
local pos = {4, -1, 17}
for _, il in ipairs({false, true}) do
  for _, base in ipairs({10000, 50}) do
    local y = tt.rope(xt, tt.tensor(pos):long(), {interleaved = il, base = base})
    close(string.format("rope interleaved=%s base=%d against float64", il, base), y,
          rope_ref(xt:totable(), pos, base, il), 1e-6)
  end
end
-- float positions, broadcast per batch [2, 1]
local yf = tt.rope(xt, tt.tensor({{0.5}, {-3.25}}))
local rf = rope_ref(xt:narrow(1, 1, 1):totable(), {0.5, 0.5, 0.5}, 10000, false)
close("rope float positions [2,1], batch 1", yf:narrow(1, 1, 1), rf, 1e-6)
-- the score of rotated q and k depends on m - n alone
local q, k = tt.randn(1, 8), tt.randn(1, 8)
local function score(m, n)
  return (tt.rope(q, tt.tensor({m})) * tt.rope(k, tt.tensor({n}))):sum():item()
end
check("rope: q_m . k_n depends on m - n (5-2 vs 103-100)", math.abs(score(5, 2) - score(103, 100)) < 1e-4)
check("rope: position 0 is the identity", tt.allclose(tt.rope(q, tt.tensor({0})), q, 0, 0))
-- gradients: a rotation's transpose, checked against finite differences
local xg = tt.randn(2, 4, 6):requires_grad_()
check("rope gradcheck half-split", tt.gradcheck(function(x) return tt.rope(x, tt.tensor({3, -2, 9, 40})) end, {xg}))
check("rope gradcheck interleaved",
      tt.gradcheck(function(x) return tt.rope(x, tt.tensor({3, -2, 9, 40}), {interleaved = true, base = 7}) end, {xg}))
local yg = tt.rope(xg, tt.arange(4))
check("rope grad_fn", yg.grad_fn == "RopeBackward")
-- errors
checkerror({"rope: the last dim of x [2,3,5] must be even", "got 5"}, tt.rope, tt.randn(2, 3, 5), tt.arange(3))
checkerror({"rope: positions [4] do not fit x [2,3,6]", "broadcast to [2,3]"}, tt.rope, tt.randn(2, 3, 6), tt.arange(4))
checkerror({"rope: positions must be int64 or float32, got bool"}, tt.rope, tt.randn(3, 6), tt.ones(3):bool())
checkerror({"rope: positions must be a tensor", "got a number"}, tt.rope, tt.randn(3, 6), 3)
checkerror({"rope: base must be a positive number, got -1"}, tt.rope, tt.randn(3, 6), tt.arange(3), {base = -1})
checkerror({"rope: unknown option 'layout'"}, tt.rope, tt.randn(3, 6), tt.arange(3), {layout = "half"})
checkerror({"rope: positions [3] require grad", "positions:detach()"}, tt.rope, tt.randn(3, 6),
           tt.arange(3):float():requires_grad_())

-- ===== dropout =====
tt.manual_seed(11)
local ones = tt.ones(200, 100)
local d = tt.dropout(ones, 0.3)
local kept = d:gt(0):float():mean():item()
check("dropout keeps about 1 - p (0.7): " .. kept, math.abs(kept - 0.7) < 0.01)
check("dropout scales the kept by 1/(1-p)", tt.allclose(d:masked_fill(d:eq(0), 1 / 0.7), tt.full(200, 100, 1 / 0.7)))
close("dropout keeps the mean in expectation", d:mean(), 1, 0.01)
tt.manual_seed(11)
check("dropout: the same seed gives the same mask", tt.allclose(tt.dropout(ones, 0.3), d, 0, 0))
local x = (tt.rand(7, 9) + 0.5):requires_grad_()
local y = tt.dropout(x, 0.5)
y:backward(tt.ones(7, 9) * 3)
check("dropout backward: the forward's mask (grad = 3 * y / x)", tt.allclose(x.grad, y:detach() / x:detach() * 3, 1e-6, 0))
check("dropout p = 0 is x", tt.allclose(tt.dropout(x, 0), x, 0, 0))
check("dropout p = 1 is 0", tt.dropout(x, 1):abs():sum():item() == 0)
check("dropout train = false gives x itself", tt.dropout(x, 0.5, false) == x)
checkerror({"dropout: p must be a probability in [0, 1], got 1.5"}, tt.dropout, x, 1.5)
checkerror({"dropout: p must be a probability in [0, 1], got -0.1"}, tt.dropout, x, -0.1, false)
checkerror({"dropout: x must be a float tensor (float32, bfloat16, float16), got int64"}, tt.dropout, tt.arange(3):long(), 0.5)
local drop = tt.nn.Dropout(0.25)
check("nn.Dropout p and tostring", drop.p == 0.25 and tostring(drop) == "Dropout(p=0.25)")
check("nn.Dropout trains by default", drop.training == true and drop(ones):eq(0):any():item())
check("nn.Dropout :eval() is the identity (and returns the module)", drop:eval() == drop and drop(ones) == ones)
check("nn.Dropout :train() again", drop:train().training and drop(ones):eq(0):any():item())
check("nn.Dropout has no parameters", #drop:parameters() == 0)
checkerror({"Dropout: p must be a probability in [0, 1], got 2"}, tt.nn.Dropout, 2)

-- ===== FeedForward, Attention, Block against float64 =====
-- plain Lua matrices: rows of numbers
local function linear(xs, w)        -- xs [n][in], w [out][in] -> [n][out]
  local out = {}
  for i, r in ipairs(xs) do
    out[i] = {}
    for o, wr in ipairs(w) do
      local s = 0
      for j = 1, #r do s = s + r[j] * wr[j] end
      out[i][o] = s
    end
  end
  return out
end
local function map2(a, b, f)
  local out = {}
  for i = 1, #a do out[i] = {}; for j = 1, #a[i] do out[i][j] = f(a[i][j], b[i][j]) end end
  return out
end
local function erf(z)                -- Taylor series: float64-exact for |z| < 4
  local s, term, n = 0, z, 0
  repeat
    s = s + term / (2 * n + 1)
    n = n + 1
    term = -term * z * z / n
  until math.abs(term) < 1e-17 * math.abs(s) + 1e-300 or n > 200
  return 2 / math.sqrt(math.pi) * s
end
local function rmsnorm(xs, w, eps)
  local out = {}
  for i, r in ipairs(xs) do
    local ms = 0
    for _, v in ipairs(r) do ms = ms + v * v / #r end
    out[i] = {}
    for j, v in ipairs(r) do out[i][j] = v / math.sqrt(ms + eps) * w[j] end
  end
  return out
end
local function layernorm(xs, w, b, eps)
  local out = {}
  for i, r in ipairs(xs) do
    local m, var = 0, 0
    for _, v in ipairs(r) do m = m + v / #r end
    for _, v in ipairs(r) do var = var + (v - m) ^ 2 / #r end
    out[i] = {}
    for j, v in ipairs(r) do out[i][j] = (v - m) / math.sqrt(var + eps) * w[j] + b[j] end
  end
  return out
end
local function ffn_ref(f, xs)
  local up = linear(xs, f.up_proj.weight:totable())
  local hid
  if f.activation == "swiglu" then
    hid = map2(linear(xs, f.gate_proj.weight:totable()), up, function(g, u) return g / (1 + math.exp(-g)) * u end)
  else
    hid = map2(up, up, function(u) return 0.5 * u * (1 + erf(u / math.sqrt(2))) end)
  end
  return linear(hid, f.down_proj.weight:totable())
end
-- causal attention, H heads sharing kv_heads K/V heads, optional rope
local function attn_ref(a, xs, rope)
  local n, H, G = #xs, a.heads, a.kv_heads
  local dh = a.dim // H
  local q, k, v = linear(xs, a.q_proj.weight:totable()), linear(xs, a.k_proj.weight:totable()),
                  linear(xs, a.v_proj.weight:totable())
  local function head(m, h, turn)     -- rows of head h's columns (turned by rope: q and k)
    local out = {}
    for i = 1, n do out[i] = {}; for j = 1, dh do out[i][j] = m[i][(h - 1) * dh + j] end end
    if rope and turn then
      local pos = {}
      for i = 1, n do pos[i] = i - 1 end
      out = rope_ref({out}, pos, 10000, false)[1]
    end
    return out
  end
  local merged = {}
  for i = 1, n do merged[i] = {} end
  for h = 1, H do
    local g = (h - 1) // (H // G) + 1
    local qh, kh, vh = head(q, h, true), head(k, g, true), head(v, g, false)
    for i = 1, n do
      local s, mx = {}, -math.huge
      for j = 1, i do
        s[j] = 0
        for e = 1, dh do s[j] = s[j] + qh[i][e] * kh[j][e] end
        s[j] = s[j] / math.sqrt(dh)
        mx = math.max(mx, s[j])
      end
      local z = 0
      for j = 1, i do s[j] = math.exp(s[j] - mx); z = z + s[j] end
      for e = 1, dh do
        local o = 0
        for j = 1, i do o = o + s[j] / z * vh[j][e] end
        merged[i][(h - 1) * dh + e] = o
      end
    end
  end
  return linear(merged, a.o_proj.weight:totable())
end
local function block_ref(b, xs, layer, rope)
  local function norm(m, t)
    if layer then return layernorm(t, m.weight:totable(), m.bias:totable(), m.eps) end
    return rmsnorm(t, m.weight:totable(), m.eps)
  end
  local h = map2(xs, attn_ref(b.attn, norm(b.attn_norm, xs), rope), function(p, r) return p + r end)
  return map2(h, ffn_ref(b.ffn, norm(b.ffn_norm, h)), function(p, r) return p + r end)
end

tt.manual_seed(5)
for _, act in ipairs({"gelu", "swiglu"}) do
  local f = tt.nn.FeedForward(6, {activation = act, hidden = 10})
  local xs = tt.randn(5, 6) * 2
  close("FeedForward " .. act .. " against float64", f(xs), ffn_ref(f, xs:totable()), 2e-5)
end
check("FeedForward defaults: gelu, hidden 4 dim", tt.nn.FeedForward(8).hidden == 32 and tt.nn.FeedForward(8).activation == "gelu")
check("FeedForward swiglu: hidden 2/3 of 4 dim up to a multiple of 8", tt.nn.FeedForward(8, {activation = "swiglu"}).hidden == 24)
check("FeedForward gelu parameters: up_proj, down_proj", #tt.nn.FeedForward(4):parameters() == 2)
local fb = tt.nn.FeedForward(4, {bias = true, activation = "swiglu"})
check("FeedForward bias: 6 parameters", #fb:parameters() == 6 and fb.gate_proj.bias ~= nil)

local configs = {
  {name = "RMSNorm, SwiGLU, GQA 4/2", D = 8, H = 4, opts = {kv_heads = 2}},
  {name = "LayerNorm, GELU, MHA, rope", D = 8, H = 2, opts = {norm = "layernorm", activation = "gelu", rope = true}, layer = true, rope = true},
  {name = "RMSNorm, SwiGLU, MQA, rope", D = 12, H = 3, opts = {kv_heads = 1, rope = true, hidden = 7}, rope = true},
}
for _, c in ipairs(configs) do
  local blk = tt.nn.Block(c.D, c.H, c.opts)
  local xs = tt.randn(2, 5, c.D)
  local y = blk(xs)
  for b = 1, 2 do
    close("Block " .. c.name .. " against float64, batch " .. b, y[b], block_ref(blk, xs[b]:totable(), c.layer, c.rope), 2e-5)
  end
  local attn_y = blk.attn(xs)
  close("Attention " .. c.name .. " against float64", attn_y[1], attn_ref(blk.attn, xs[1]:totable(), c.rope), 2e-5)
end
-- parameters in order, with their names
local blk = tt.nn.Block(8, 4, {kv_heads = 2})
local names = {}
for i, np in ipairs(blk:named_parameters()) do
  names[i] = np[1]
  check("named_parameters gives the tensor of parameters() " .. np[1], np[2] == blk:parameters()[i])
end
check("Block parameter names: " .. table.concat(names, " "), table.concat(names, " ") ==
  "attn_norm.weight attn.q_proj.weight attn.k_proj.weight attn.v_proj.weight attn.o_proj.weight " ..
  "ffn_norm.weight ffn.gate_proj.weight ffn.up_proj.weight ffn.down_proj.weight")
check("GQA: k_proj makes kv_heads * head_dim", blk.attn.k_proj.weight:size(1) == 4 and blk.attn.kv_heads == 2)
local y2, w = blk(tt.randn(1, 6, 8), {weights = true})
check("Block weights: [1,4,6,6], causal", w.shape == tt.shape and true or (w:size(2) == 4 and w:size(4) == 6))
check("Block weights: rows sum to 1, nothing above the diagonal",
      tt.allclose(w:sum(-1), tt.ones(1, 4, 6)) and w:masked_fill(tt.causal_mask(6), 0):abs():sum():item() == 0)
check("Block output shape", y2:size(3) == 8)
-- gradients through the block: input and a weight of every part, against finite differences
local gblk = tt.nn.Block(4, 2, {kv_heads = 1, rope = true, hidden = 6})
local gx = tt.randn(1, 3, 4):requires_grad_()
check("gradcheck through the block (x, q_proj, k_proj, gate_proj, down_proj, norms)",
      tt.gradcheck(function(xx) return gblk(xx) end,
                   {gx, gblk.attn.q_proj.weight, gblk.attn.k_proj.weight, gblk.ffn.gate_proj.weight,
                    gblk.ffn.down_proj.weight, gblk.attn_norm.weight, gblk.ffn_norm.weight}))
-- dropout inside: train vs eval
tt.manual_seed(9)
local dblk = tt.nn.Block(8, 2, {dropout = 0.5})
local dx = tt.randn(2, 4, 8)
check("Block with dropout: two training passes differ", not tt.allclose(dblk(dx), dblk(dx)))
dblk:eval()
check("Block :eval() reaches its parts", dblk.dropout.training == false and dblk.attn.training == false)
check("Block :eval(): two passes agree", tt.allclose(dblk(dx), dblk(dx), 0, 0))
check("tostring(Block) names its parts", tostring(dblk):find("^Block%(RMSNorm%(8") and tostring(dblk):find("Dropout%(p=0.5%)"))
-- errors
checkerror({"Block: input [2,3,5] does not end in dim=8"}, blk, tt.randn(2, 3, 5))
checkerror({"Attention: kv_heads 3 must divide heads 4"}, tt.nn.Attention, 8, 4, {kv_heads = 3})
checkerror({"Attention: dim 10 must be a positive multiple of heads 4"}, tt.nn.Attention, 10, 4)
checkerror({"Attention: rope needs an even head dim, got 3"}, tt.nn.Attention, 9, 3, {rope = true})
checkerror({"Attention: input [8] must be [..., N, 8]"}, tt.nn.Attention(8, 2), tt.randn(8))
checkerror({"Block: option 'norm' must be \"rmsnorm\" or \"layernorm\", got batchnorm"}, tt.nn.Block, 8, 2, {norm = "batchnorm"})
checkerror({"FeedForward: option 'activation' must be \"gelu\" or \"swiglu\", got relu"}, tt.nn.FeedForward, 8, {activation = "relu"})
checkerror({"FeedForward: input [3,5] does not end in dim=8"}, tt.nn.FeedForward(8), tt.randn(3, 5))
checkerror({"Block: unknown option 'heads'"}, tt.nn.Block, 8, 2, {heads = 2})
checkerror({"Block: dropout must be a probability in [0, 1], got 2"}, tt.nn.Block, 8, 2, {dropout = 2})
checkerror({"FeedForward: option 'hidden' must be an integer"}, tt.nn.FeedForward, 8, {hidden = 2.5})

T.report()
