-- test_half_edges.lua — 16-bit creation (arange, rand), isnan, einsum's
-- reductions, promotion with 0-d tensors, sdpa with no keys and a window
-- wider than the keys: each against float64 references written here (the
-- 16-bit rounding modelled by check.lua's round16), at sizes 0 and 1 too.
local T = dofile("tests/lua/check.lua")
local check, close, checkerror = T.check, T.close, T.checkerror
local round16, near, flat = T.round16, T.near16, T.flat
local DTS = {"bfloat16", "float16"}

-- ===== arange: counts in float32, one rounding to the dtype =====
for _, dt in ipairs(DTS) do
  local x = tt.arange(3, dt)
  check(dt .. ": arange(3) is " .. dt, x:dtype() == dt)
  near(dt .. ": arange(3) is 0, 1, 2", x, {0, 1, 2}, 0)
  near(dt .. ": arange(10, 0, -3)", tt.arange(10, 0, -3, dt), {10, 7, 4, 1}, 0)
  local want = {}
  for v = 2049, 2060 do want[#want + 1] = v end    -- float16 spaces these by 2, bfloat16 by 8 or 16
  near(dt .. ": arange(2049, 2061) rounds each count to nearest even", tt.arange(2049, 2061, dt), want, 0)
  check(dt .. ": arange(0) is empty", tt.arange(0, dt):numel() == 0 and tt.arange(0, dt):dtype() == dt)
  near(dt .. ": arange(1)", tt.arange(1, dt), {0}, 0)
  -- the buffers around stay intact (the count once wrote float32 into 16-bit storage)
  local before = tt.full(3, 7, dt)
  for n = 1, 40 do tt.arange(n, dt) end
  near(dt .. ": a neighbouring tensor is untouched", before, {7, 7, 7}, 0)
end

-- ===== rand: in [0, 1) at the dtype's precision, as torch.rand =====
for _, c in ipairs({{"bfloat16", 8}, {"float16", 11}}) do
  local dt, bits = c[1], c[2]
  tt.manual_seed(3)
  local n = 100000
  local r = tt.rand(n, dt)
  local v = r:totable()
  local lo, hi, ones, offgrid, sum, seen, distinct = math.huge, -math.huge, 0, 0, 0, {}, 0
  for i = 1, n do
    local x = v[i]
    lo, hi, sum = math.min(lo, x), math.max(hi, x), sum + x
    if x == 1 then ones = ones + 1 end
    local k = x * 2 ^ bits
    if k ~= math.floor(k) then offgrid = offgrid + 1 end
    if not seen[k] then seen[k], distinct = true, distinct + 1 end
  end
  check(dt .. ": rand is never 1 (" .. ones .. " of " .. n .. ")", ones == 0 and hi < 1)
  check(dt .. ": rand is never below 0", lo >= 0)
  check(dt .. ": rand draws multiples of 2^-" .. bits .. " (" .. offgrid .. " off)", offgrid == 0)
  -- k / 2^bits with k uniform in [0, 2^bits): mean (2^bits - 1) / 2^(bits+1), sd of the mean 0.29 / sqrt(n)
  local mean = (2 ^ bits - 1) / 2 ^ (bits + 1)
  check(dt .. ": rand's mean " .. sum / n .. " near " .. mean, math.abs(sum / n - mean) < 5 * 0.29 / math.sqrt(n))
  local want_distinct = math.min(2 ^ bits, n)
  check(dt .. ": rand reaches " .. distinct .. " of the " .. want_distinct .. " values",
        distinct >= 0.95 * (2 ^ bits) * (1 - math.exp(-n / 2 ^ bits)))
  check(dt .. ": rand(0) is empty", tt.rand(0, dt):numel() == 0 and tt.rand(0, dt):dtype() == dt)
  local one = tt.rand(1, dt):item()
  check(dt .. ": rand(1) in [0, 1)", one >= 0 and one < 1)
end
do  -- float32 keeps its 24-bit draws (the same numbers as before for a seed)
  tt.manual_seed(3)
  local v, off = tt.rand(1000):totable(), 0
  for i = 1, #v do
    local k = v[i] * 2 ^ 24
    if k ~= math.floor(k) or v[i] >= 1 then off = off + 1 end
  end
  check("float32: rand draws multiples of 2^-24 in [0, 1)", off == 0)
end

-- ===== isnan on 16-bit tensors =====
for _, dt in ipairs(DTS) do
  local x = tt.tensor({0 / 0, 1, math.huge, -math.huge, -0.0}, dt)
  local m = x:isnan()
  check(dt .. ": isnan gives bool", m:dtype() == "bool")
  local got = m:totable()
  check(dt .. ": isnan finds the NaN and only it",
        got[1] == true and got[2] == false and got[3] == false and got[4] == false and got[5] == false)
  check(dt .. ": isnan of a strided view", x:view(5, 1):expand(5, 2):t():isnan():totable()[2][1] == true)
  check(dt .. ": isnan of an empty tensor", tt.zeros(0, dt):isnan():numel() == 0)
end

-- ===== einsum: several axes of a 16-bit operand summed in float32, rounded once =====
for _, dt in ipairs(DTS) do
  local q = dt == "bfloat16" and 2 ^ -8 or 2 ^ -11     -- half the spacing at 1: lost if rounded twice
  local x = tt.tensor({{1, q}, {q, 0}}, dt)
  near(dt .. ": einsum('ij->') rounds once (1 + 2q)", tt.einsum("ij->", x), {1 + 2 * q}, 0)
  check(dt .. ": einsum('ij->') equals x:sum()", tt.einsum("ij->", x):item() == x:sum():item())
  tt.manual_seed(4)
  local y = tt.randn(3, 4, 5):to(dt)
  local v = y:totable()
  local want = {}
  for j = 1, 4 do
    local s = 0
    for i = 1, 3 do for k = 1, 5 do s = s + v[i][j][k] end end
    want[j] = s
  end
  near(dt .. ": einsum('ijk->j') in float32, one rounding", tt.einsum("ijk->j", y), want, 1)
  local all = 0
  for _, e in ipairs(flat(v)) do all = all + e end
  near(dt .. ": einsum('...->') over three axes", tt.einsum("... ->", y), {all}, 1)
  near(dt .. ": einsum('ij->') of a 0 x 3 tensor is 0", tt.einsum("ij->", tt.zeros(0, 3, dt)), {0}, 0)
  near(dt .. ": einsum('ij->') of a 1 x 1 tensor", tt.einsum("ij->", tt.full(1, 1, 1.5, dt)), {1.5}, 0)
  check(dt .. ": einsum keeps the dtype", tt.einsum("ij->", x):dtype() == dt)
end

-- ===== promotion with 0-d tensors =====
-- PyTorch's rules (torch.result_type): categories bool < integer < float. A
-- dimensioned operand's dtype decides over a 0-d operand of the same or a
-- lower category; a 0-d operand of a higher category gives its own dtype;
-- operands of the same kind (both 0-d, or both dimensioned) promote as
-- dtypes do: float32 over 16 bits, bfloat16 with float16 is float32.
local function make(dt, zero_d, v)
  if zero_d then return tt.tensor(v, dt) end
  return tt.full(2, v, dt)
end
local B, H, F, L = "bfloat16", "float16", "float32", "int64"
local cases = {   -- a dtype, a 0-d?, b dtype, b 0-d?, the result's dtype (each checked against torch by hand)
  {B, false, F, true, B}, {H, false, F, true, H}, {F, false, B, true, F}, {B, false, H, true, B},
  {H, true, B, false, B}, {F, true, B, false, B}, {B, true, F, true, F}, {B, true, H, true, F},
  {L, false, B, true, B}, {L, false, F, true, F}, {B, false, L, true, B}, {L, true, B, false, B},
  {B, false, F, false, F}, {B, false, H, false, F},
}
for _, c in ipairs(cases) do
  local ad, az, bd, bz, want = table.unpack(c)
  local av, bv = 1, 1 + 2 ^ -8 + 2 ^ -9           -- bv is not a bfloat16 or float16 value when float32
  if bd == L then bv = 3 end
  local a, b = make(ad, az, av), make(bd, bz, bv)
  local what = string.format("%s%s + %s%s", ad, az and " 0-d" or " [2]", bd, bz and " 0-d" or " [2]")
  for _, op in ipairs({{"+", function(x, y) return x + y end, function(x, y) return x + y end},
                       {"*", function(x, y) return x * y end, function(x, y) return x * y end},
                       {"-", function(x, y) return x - y end, function(x, y) return x - y end}}) do
    local r = op[2](a, b)
    local name = what:gsub(" %+ ", " " .. op[1] .. " ")
    check(name .. " is " .. want .. " (got " .. r:dtype() .. ")", r:dtype() == want)
    -- the operands' values exactly as stored, combined in float64 and rounded once
    local x, y = flat({a:totable()})[1], flat({b:totable()})[1]
    local exact = {}
    for i = 1, r:numel() do exact[i] = op[3](x, y) end
    if want ~= F then near(name .. ": rounded once", r, exact, 0, want)
    else close(name .. ": value", r:reshape(-1), exact, 1e-7) end
  end
  if ad ~= L and bd ~= L then
    local w = tt.where(tt.tensor({true, false}), a, b)
    check(what .. ": where gives " .. want .. " (got " .. w:dtype() .. ")", w:dtype() == want)
  end
end
do  -- a comparison with a 0-d float32 sees its exact value
  local m = tt.ones(2, B):lt(tt.tensor(1 + 2 ^ -9))
  check("bfloat16 [2] < 0-d float32 compares the float32 value", m:dtype() == "bool" and m:totable()[1] == true)
end
do  -- gradients keep each operand's dtype
  local a = tt.ones(2, B):requires_grad_()
  local b = tt.tensor(1.5):requires_grad_()
  local y = a * b
  y:sum():backward()
  check("bfloat16 [2] * 0-d float32: a.grad is bfloat16", a.grad:dtype() == B)
  check("bfloat16 [2] * 0-d float32: b.grad is float32", b.grad:dtype() == F)
  close("bfloat16 [2] * 0-d float32: the gradients", b.grad, 2)
  near("bfloat16 [2] * 0-d float32: a's gradient", a.grad, {1.5, 1.5}, 0)
end

-- ===== sdpa with no keys: zeros in the dtype, and nothing written past them =====
for _, dt in ipairs(DTS) do
  for _, shape in ipairs({{1, 2, 3, 4}, {2, 1, 1, 8}, {1, 1, 700, 64}}) do
    local q = tt.ones(shape[1], shape[2], shape[3], shape[4]):to(dt)
    local k = tt.ones(shape[1], shape[2], 0, shape[4]):to(dt)
    local guard = {}
    for i = 1, 8 do guard[i] = tt.full(shape[1], shape[2], shape[3], shape[4], 5, dt) end
    local o = tt.sdpa(q, k, k)
    check(dt .. ": sdpa with no keys gives " .. dt, o:dtype() == dt)
    check(dt .. ": sdpa with no keys gives zeros", o:abs():sum():item() == 0 and o:numel() == q:numel())
    local ok = true
    for i = 1, 8 do ok = ok and guard[i]:eq(5):all():item() end
    check(dt .. ": sdpa with no keys leaves other tensors alone", ok)
  end
end
do  -- float32 under autocast runs the 16-bit path
  local q, k = tt.ones(1, 2, 5, 4), tt.ones(1, 2, 0, 4)
  local o = tt.autocast("bfloat16", tt.sdpa, q, k, k)
  check("autocast: sdpa with no keys gives bfloat16 zeros", o:dtype() == "bfloat16" and o:abs():sum():item() == 0)
end

-- ===== sdpa's window wider than the keys: causal, forward and backward =====
-- the step-by-step formula: softmax(q k^T / sqrt(D) where the lower-right causal mask keeps) v
local function causal_attention(q, k, v)
  local nq, nk = q:size(-2), k:size(-2)
  local s = q:matmul(k:mT()) / math.sqrt(q:size(-1))
  return s:masked_fill(~tt.causal_mask(nq, nk), -math.huge):softmax(-1):matmul(v)
end
for _, c in ipairs({{5, 5}, {3, 7}, {1, 4}, {6, 6}}) do
  for _, w in ipairs({math.maxinteger, c[2], c[2] + 1, 1 << 40}) do
    tt.manual_seed(8)
    local function leaves()
      return tt.randn(1, 2, c[1], 4):requires_grad_(), tt.randn(1, 2, c[2], 4):requires_grad_(),
             tt.randn(1, 2, c[2], 3):requires_grad_()
    end
    local q, k, v = leaves()
    local g = tt.randn(1, 2, c[1], 3)
    local o = tt.sdpa(q, k, v, {window = w})
    tt.manual_seed(8)
    local q2, k2, v2 = leaves()
    local o2 = causal_attention(q2, k2, v2)
    local what = string.format("window = %d, Nq = %d, Nk = %d", w, c[1], c[2])
    check(what .. ": forward is causal", tt.allclose(o, o2, 1e-5, 1e-6))
    o:backward(g)
    o2:backward(g)
    check(what .. ": dq as the formula's", tt.allclose(q.grad, q2.grad, 1e-4, 1e-5))
    check(what .. ": dk as the formula's", tt.allclose(k.grad, k2.grad, 1e-4, 1e-5))
    check(what .. ": dv as the formula's", tt.allclose(v.grad, v2.grad, 1e-4, 1e-5))
  end
end
checkerror({"sdpa", "window"}, tt.sdpa, tt.ones(1, 2, 4), tt.ones(1, 2, 4), tt.ones(1, 2, 4), {window = 0})

T.report()
