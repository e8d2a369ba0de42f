-- test_half.lua — bfloat16 and float16 tensors from Lua: creation and
-- conversions, finfo, promotion, the ops (float32 inside, one rounding)
-- against float64 references rounded to the dtype (check.lua), at awkward sizes
-- and strides, autograd (gradients in the parameter's dtype), printing and
-- the trace, and the errors a script can cause.
local T = dofile("tests/lua/check.lua")
local check, checkerror = T.check, T.checkerror

-- ===== The reference rounding (check.lua's, shared with test_autocast.lua) =====
-- near(descr, x, want, ulps, dt): every element of x within ulps of the spacing
-- at want rounded to dt (default x's dtype); NaN and inf exactly
local FMT, round16, flat, near = T.FMT16, T.round16, T.flat, T.near16

-- ===== Creation, conversions, values =====
for dt, f in pairs(FMT) do
  local vals = {0, -0.0, 1, 1/3, -2.5, 1 + 2^-8, 1 + 3 * 2^-8, 65504, 65519, 65520, 1e-5, 2^-24, 2^-25, 3 * 2^-25,
                1e30, -1e-40, math.huge, -math.huge}
  local x = tt.tensor(vals, dt)
  check(dt .. ": dtype", x:dtype() == dt)
  local got = x:totable()
  local bad
  for i, v in ipairs(vals) do
    local w = round16(dt, v)   -- PyTorch goes through float32: no value here rounds differently twice
    if got[i] ~= w and not bad then bad = string.format("%.10g -> %.10g, want %.10g", v, got[i], w) end
  end
  check(dt .. ": tt.tensor rounds each value to nearest even" .. (bad and (": " .. bad) or ""), bad == nil)
  check(dt .. ": NaN stays NaN", tt.tensor({0 / 0}, dt):item() ~= tt.tensor({0 / 0}, dt):item())
  check(dt .. ": -0 keeps its sign", 1 / tt.tensor({-0.0}, dt):item() == -math.huge)
  local y = tt.randn(9, 5)
  check(dt .. ": x:to(dt) is x:" .. (dt == "bfloat16" and "bfloat16" or "half") .. "()",
        tt.allclose(y:to(dt):float(), (dt == "bfloat16" and y:bfloat16() or y:half()):float(), 0, 0))
  near(dt .. ": float32 -> 16 bits of a transposed view", y:t():to(dt), flat(y:t():totable()), 0)
  check(dt .. ": back to float32 exactly", tt.allclose(y:to(dt):float():to(dt):float(), y:to(dt):float(), 0, 0))
  check(dt .. ": zeros", tt.zeros(2, 3, dt):dtype() == dt and tt.zeros(2, 3, dt):sum():item() == 0)
  check(dt .. ": ones", tt.ones({4}, dt):totable()[4] == 1)
  check(dt .. ": full rounds its value", tt.full(2, 2, 1/3, dt):totable()[2][2] == round16(dt, 1/3))
  check(dt .. ": full with a table shape", tt.full({3}, 2, dt):dtype() == dt)
  check(dt .. ": to int64 truncates", tt.tensor({-2.5, 3.75}, dt):long():totable()[1] == -2)
  check(dt .. ": to bool", tt.tensor({0, 0.5}, dt):bool():totable()[2] == true)
  check(dt .. ": from int64", tt.tensor({257, -3}, "int64"):to(dt):totable()[1] == round16(dt, 257))
  check(dt .. ": from bool", tt.tensor({true, false}):to(dt):totable()[1] == 1)
  check(dt .. ": same dtype is a view", x:to(dt):shares_storage(x))
  check(dt .. ": tostring header", tostring(tt.ones(2, dt)):find("tensor [2] " .. dt, 1, true) == 1)
  check(dt .. ": tostring values", tostring(tt.tensor({0.5, -1.5}, dt)):find("0.5000, -1.5000", 1, true) ~= nil)
end
check("bfloat16 <-> float16 (through float32)", tt.tensor({70000}):bfloat16():half():item() == math.huge)
check("float16 keeps 65504", tt.tensor({65504}, "float16"):item() == 65504)
check("bfloat16 keeps float32's range", tt.tensor({1e38}, "bfloat16"):item() == round16("bfloat16", 1e38))
check("\"half\" names float16", tt.zeros(1, "half"):dtype() == "float16")
tt.manual_seed(7)
local r32 = tt.randn(5, 6)
tt.manual_seed(7)
local r16 = tt.randn(5, 6, "bfloat16")
check("randn in bfloat16: the float32 draw, rounded", r16:dtype() == "bfloat16"
      and tt.allclose(r16:float(), r32:bfloat16():float(), 0, 0))
tt.manual_seed(7)
local u16 = tt.rand({5, 6}, "float16")
tt.manual_seed(7)
local want16 = {}   -- the float32 draw's first 11 bits: torch.rand's precision in float16
for i, u in ipairs(flat(tt.rand(5, 6):totable())) do want16[i] = math.floor(u * 2048) / 2048 end
check("rand in float16: the float32 draw cut to 11 bits", u16:dtype() == "float16")
near("rand in float16: the float32 draw cut to 11 bits", u16, want16, 0)
checkerror({"randn: draws floats, not int64", "hint: tt.randint"}, tt.randn, 2, "int64")
checkerror("rand: unknown dtype 'f8'", tt.rand, 2, "f8")

-- ===== finfo: torch.finfo's numbers, written down =====
local fi = tt.finfo("float32")
check("finfo float32", fi.bits == 32 and fi.eps == 2^-23 and fi.max == 3.4028234663852886e+38
      and fi.min == -3.4028234663852886e+38 and fi.tiny == 1.1754943508222875e-38 and fi.resolution == 1e-06
      and fi.smallest_normal == fi.tiny and fi.dtype == "float32")
fi = tt.finfo("bfloat16")
check("finfo bfloat16", fi.bits == 16 and fi.eps == 0.0078125 and fi.max == 3.3895313892515355e+38
      and fi.min == -3.3895313892515355e+38 and fi.tiny == 1.1754943508222875e-38 and fi.resolution == 0.01)
fi = tt.finfo("float16")
check("finfo float16", fi.bits == 16 and fi.eps == 0.0009765625 and fi.max == 65504 and fi.min == -65504
      and fi.tiny == 6.103515625e-05 and fi.resolution == 0.001)
check("finfo default is float32", tt.finfo().bits == 32)
check("finfo max is the largest value", tt.tensor({tt.finfo("bfloat16").max}, "bfloat16"):item() == tt.finfo("bfloat16").max)
checkerror({"finfo: int64 is not a float dtype", "hint"}, tt.finfo, "int64")
checkerror("finfo: unknown dtype 'f8'", tt.finfo, "f8")
checkerror({"to: expects a dtype name", "got number"}, function() return tt.ones(2):to(3) end)
checkerror("to: unknown dtype 'int8'", function() return tt.ones(2):to("int8") end)

-- ===== Promotion, as PyTorch =====
local b, h, f = tt.ones(3, "bfloat16"), tt.ones(3, "float16"), tt.ones(3)
check("bfloat16 + float16 -> float32", (b + h):dtype() == "float32")
check("float32 + bfloat16 -> float32", (f + b):dtype() == "float32" and (b + f):dtype() == "float32")
check("bfloat16 + bfloat16 -> bfloat16", (b + b):dtype() == "bfloat16")
check("int64 * float16 -> float16", (tt.ones(3, "int64") * h):dtype() == "float16")
check("a Lua number keeps bfloat16", (b * 0.1):dtype() == "bfloat16" and (2.5 - b):dtype() == "bfloat16")
check("a Lua number is rounded with the op: b * 0.1", (b * 0.1):totable()[1] == round16("bfloat16", 0.1))
check("comparisons give bool", (b:lt(h)):dtype() == "bool" and (b:eq(f)):dtype() == "bool")
check("matmul bfloat16 @ float32 -> float32", b:view(1, 3):matmul(f:view(3, 1)):dtype() == "float32")
check("matmul float16 @ float16 -> float16", h:view(1, 3):matmul(h:view(3, 1)):dtype() == "float16")
check("where(bf16, f16) -> float32", tt.where(b:gt(0), b, h):dtype() == "float32")
check("where(bf16, number) -> bfloat16", tt.where(b:gt(0), b, 0):dtype() == "bfloat16")
checkerror({"add", "bool"}, function() return b + tt.ones(3):bool() end)

-- ===== Elementwise: one rounding of the float64 value =====
tt.manual_seed(25)
for dt in pairs(FMT) do
  local base = tt.randn(13, 7):to(dt)
  local x = base:t()                         -- [7, 13], strided
  local y = tt.randn(13):to(dt)              -- broadcast along rows
  local xs, ys = x:totable(), y:totable()
  local function ref2(fn)
    local r = {}
    for i = 1, 7 do for j = 1, 13 do r[#r + 1] = fn(xs[i][j], ys[j]) end end
    return r
  end
  local function ref1(fn) return ref2(function(a) return fn(a) end) end
  -- +, -, *, / and the unary ops compute in float32, exact or one float32
  -- rounding before the 16-bit one: within one 16-bit ulp of the rounded reference
  near(dt .. ": x + y", x + y, ref2(function(a, c) return a + c end), 0)
  near(dt .. ": x - y", x - y, ref2(function(a, c) return a - c end), 0)
  near(dt .. ": x * y", x * y, ref2(function(a, c) return a * c end), 0)
  near(dt .. ": x / y", x / y, ref2(function(a, c) return a / c end), 1)
  near(dt .. ": x * 0.3", x * 0.3, ref1(function(a) return a * 0.3 end), 1)
  near(dt .. ": 1 - x", 1 - x, ref1(function(a) return 1 - a end), 0)
  near(dt .. ": x:maximum(y)", x:maximum(y), ref2(math.max), 0)
  near(dt .. ": exp", x:exp(), ref1(math.exp), 1)
  near(dt .. ": log |x|", x:abs():log(), ref1(function(a) return math.log(math.abs(a)) end), 1)
  near(dt .. ": sqrt |x|", x:abs():sqrt(), ref1(function(a) return math.sqrt(math.abs(a)) end), 1)
  near(dt .. ": tanh", x:tanh(), ref1(function(a) return (math.exp(2 * a) - 1) / (math.exp(2 * a) + 1) end), 1)
  near(dt .. ": sigmoid", x:sigmoid(), ref1(function(a) return 1 / (1 + math.exp(-a)) end), 1)
  near(dt .. ": relu", x:relu(), ref1(function(a) return math.max(a, 0) end), 0)
  near(dt .. ": sin", x:sin(), ref1(math.sin), 1)
  near(dt .. ": x ^ 2", x ^ 2, ref1(function(a) return a * a end), 1)
  near(dt .. ": -x", -x, ref1(function(a) return -a end), 0)
  check(dt .. ": results keep the dtype", (x + y):dtype() == dt and x:exp():dtype() == dt and (-x):dtype() == dt)
  local z = x:clone()
  z:mul_(y)
  near(dt .. ": in place x *= y", z, ref2(function(a, c) return a * c end), 0)
  z:add_(1.5)
  check(dt .. ": in place keeps the dtype", z:dtype() == dt)
  local m = x:gt(0)
  near(dt .. ": masked_fill with finfo.min", x:masked_fill(m, tt.finfo(dt).min),
       ref1(function(a) return a > 0 and -FMT[dt].max or a end), 0)
  near(dt .. ": where", tt.where(m, x, y), ref2(function(a, c) return a > 0 and a or c end), 0)
  near(dt .. ": contiguous copy of a transpose", x:contiguous(), ref1(function(a) return a end), 0)
  near(dt .. ": narrow + clone", x:narrow(2, 3, 5):clone(), flat(x:float():narrow(2, 3, 5):totable()), 0)
  near(dt .. ": cat", tt.cat({x, x}, 1), flat(tt.cat({x:float(), x:float()}, 1):totable()), 0)
  near(dt .. ": index_select", x:index_select(2, tt.tensor({13, 1, 4}, "int64")),
       flat(x:float():index_select(2, tt.tensor({13, 1, 4}, "int64")):totable()), 0)
end
-- fp16 overflows where float32 does not: 300 * 300 = 90000 > 65504
check("float16 300 * 300 is inf", (tt.tensor({300}, "float16") * 300):item() == math.huge)
check("bfloat16 300 * 300 is finite", (tt.tensor({300}, "bfloat16") * 300):item() == round16("bfloat16", 90000))

-- ===== Reductions: float32 accumulation, one rounding =====
for dt in pairs(FMT) do
  local x = tt.rand(300, 11):to(dt):t()        -- [11, 300], strided
  local xs = x:totable()
  local sums, means, maxs, vars = {}, {}, {}, {}
  local total = 0
  for i = 1, 11 do
    local s, mx = 0, -math.huge
    for j = 1, 300 do s = s + xs[i][j]; mx = math.max(mx, xs[i][j]) end
    local mean, v = s / 300, 0
    for j = 1, 300 do v = v + (xs[i][j] - mean) ^ 2 end
    sums[i], means[i], maxs[i], vars[i] = s, mean, mx, v / 299
    total = total + s
  end
  near(dt .. ": sum(2)", x:sum(2), sums, 1)
  near(dt .. ": mean(2)", x:mean(2), means, 1)
  near(dt .. ": max(2)", x:max(2), maxs, 0)
  near(dt .. ": var(2)", x:var(2), vars, 1)
  near(dt .. ": sum()", x:sum(), {total}, 1)
  check(dt .. ": sum keeps the dtype", x:sum(2):dtype() == dt and x:sum():dtype() == dt)
  local v, i = x:max(2)
  check(dt .. ": max values and int64 indices", v:dtype() == dt and i:dtype() == "int64")
  check(dt .. ": argmax", x:argmax(2):totable()[1] == x:float():argmax(2):totable()[1])
  -- in the dtype itself, 256 + 1 rounds back to 256 (bf16) or 2048 + 1 to 2048 (fp16)
  check(dt .. ": 4096 ones sum to 4096 (accumulated in float32)", tt.ones(4096, dt):sum():item() == 4096)
  near(dt .. ": norm", x:norm(), {math.sqrt((function() local s = 0
    for a = 1, 11 do for c = 1, 300 do s = s + xs[a][c] ^ 2 end end return s end)())}, 1)
end

-- ===== softmax, log_softmax: float32 inside =====
for dt in pairs(FMT) do
  local x = (tt.randn(33, 5) * 3):to(dt):t()    -- [5, 33], strided
  local xs = x:totable()
  local sm, lsm = {}, {}
  for i = 1, 5 do
    local mx, s = -math.huge, 0
    for j = 1, 33 do mx = math.max(mx, xs[i][j]) end
    for j = 1, 33 do s = s + math.exp(xs[i][j] - mx) end
    for j = 1, 33 do
      sm[#sm + 1] = math.exp(xs[i][j] - mx) / s
      lsm[#lsm + 1] = xs[i][j] - mx - math.log(s)
    end
  end
  near(dt .. ": softmax", x:softmax(2), sm, 1)
  near(dt .. ": log_softmax", x:log_softmax(2), lsm, 1)
  check(dt .. ": softmax keeps the dtype", x:softmax(2):dtype() == dt)
  -- masking with the dtype's least value gives exactly 0 after softmax
  local masked = x:masked_fill(tt.arange(33):gt(2), tt.finfo(dt).min)   -- keys 4.. hidden
  local p = masked:softmax(2)
  check(dt .. ": finfo.min masks to exact zeros", p[1][33]:item() == 0 and p[5][4]:item() == 0)
  near(dt .. ": the visible keys' weights", p:narrow(2, 1, 3):sum(2), {1, 1, 1, 1, 1}, 1)
end

-- ===== matmul: float32 accumulation, one rounding =====
for dt in pairs(FMT) do
  local a = tt.randn(17, 70):to(dt)
  local bt = tt.randn(9, 70):to(dt)
  local c = a:matmul(bt:mT())                  -- B transposed: strided
  local as, bs = a:totable(), bt:totable()
  local ref, bound = {}, {}
  for i = 1, 17 do
    for j = 1, 9 do
      local s, sa = 0, 0
      for k = 1, 70 do s = s + as[i][k] * bs[j][k]; sa = sa + math.abs(as[i][k] * bs[j][k]) end
      ref[#ref + 1], bound[#bound + 1] = s, sa
    end
  end
  check(dt .. ": matmul keeps the dtype", c:dtype() == dt)
  -- the float32 sum's error (70 * 2^-24 of the sum of |products|) may move a
  -- value across one 16-bit rounding boundary: one ulp
  near(dt .. ": matmul [17,70] @ [70,9]", c, ref, 1)
  near(dt .. ": batched matmul", a:view(1, 17, 70):expand(2, 17, 70):matmul(bt:mT()), (function()
    local r = {} for _ = 1, 2 do for _, v in ipairs(ref) do r[#r + 1] = v end end return r end)(), 1)
  near(dt .. ": einsum", tt.einsum("i k, j k -> i j", a, bt), ref, 1)
  -- both operands batched, one permuted (the batch walk, 16-bit read in
  -- place): the bits of the float32 matmul of float32 copies, rounded once
  local q, k = tt.randn(3, 2, 13, 40):to(dt), tt.randn(2, 3, 11, 40):to(dt)
  local s = q:matmul(k:permute(2, 1, 4, 3))
  local s32 = q:float():matmul(k:float():permute(2, 1, 4, 3)):to(dt)
  check(dt .. ": batched permuted matmul, float32's bits rounded once",
        s:dtype() == dt and (s:float() - s32:float()):abs():max():item() == 0)
end

-- ===== Autograd: gradients in the parameter's dtype =====
for dt in pairs(FMT) do
  local w = tt.randn(4, 6):to(dt):requires_grad_()
  local loss = (w * w):sum()
  loss:backward()
  check(dt .. ": grad dtype", w.grad:dtype() == dt)
  near(dt .. ": d sum(w*w) = 2w", w.grad, flat((w:detach():float() * 2):totable()), 0)
  -- through matmul, softmax and a float32 input: the gradient of the float32
  -- computation on the same values, rounded once per node
  local x = tt.randn(6, 5)
  local w2 = tt.randn(4, 6):to(dt):requires_grad_()
  local l2 = w2:matmul(x):softmax(2):log():mean()
  check(dt .. ": bf16 @ f32 promotes", w2:matmul(x):dtype() == "float32")
  l2:backward()
  local w3 = w2:detach():float():requires_grad_()
  w3:matmul(x):softmax(2):log():mean():backward()
  check(dt .. ": grad through matmul/softmax in " .. dt, w2.grad:dtype() == dt)
  near(dt .. ": grad matches float32's, rounded", w2.grad, flat(w3.grad:totable()), 1)
  -- a conversion's gradient goes back in the source dtype
  local p = tt.randn(3):to(dt):requires_grad_()
  p:float():sum():backward()
  check(dt .. ": grad through x:float()", p.grad:dtype() == dt and p.grad:totable()[1] == 1)
  -- 16-bit all the way: matmul, softmax, a loss
  local q = tt.randn(5, 8):to(dt):requires_grad_()
  local k = tt.randn(7, 8):to(dt):requires_grad_()
  local s = q:matmul(k:mT()):softmax(2)
  check(dt .. ": weights in " .. dt, s:dtype() == dt)
  s:sum(1):pow(2):sum():backward()
  check(dt .. ": q, k grads in " .. dt, q.grad:dtype() == dt and k.grad:dtype() == dt)
  local qf = q:detach():float():requires_grad_()
  local kf = k:detach():float():requires_grad_()
  qf:matmul(kf:mT()):softmax(2):sum(1):pow(2):sum():backward()
  -- a few 16-bit roundings inside the forward and the backward
  local gq, gf = flat(q.grad:float():totable()), flat(qf.grad:totable())
  local worst = 0
  for i = 1, #gf do worst = math.max(worst, math.abs(gq[i] - gf[i]) / (math.abs(gf[i]) + 0.05)) end
  check(dt .. ": q grad near float32's (" .. string.format("%.3g", worst) .. ")",
        worst < (dt == "bfloat16" and 0.1 or 0.02))
  -- sdpa runs the fused 16-bit kernel: P rounded to the dtype before P V
  -- and out rounded once, so |out - float32's| <= u (sum p|v| + |out|)
  -- <= 2 u max|v| (u = 2^-8 bfloat16, 2^-11 float16; tests/test_sdpa_backward.c
  -- checks the full bound); cross_entropy converts at its boundary
  local qq = tt.randn(1, 2, 6, 8):to(dt):requires_grad_()
  local o = tt.sdpa(qq, qq, qq, {causal = true})
  check(dt .. ": sdpa gives " .. dt, o:dtype() == dt)
  local of = tt.sdpa(qq:detach():float(), qq:detach():float(), qq:detach():float(), {causal = true})
  local u = dt == "bfloat16" and 2^-8 or 2^-11
  local gap, vmax = (o:float() - of):abs():max():item(), qq:detach():float():abs():max():item()
  check(dt .. ": sdpa within 2 u max|v| of float32's (" .. string.format("%.3g", gap) .. ")",
        gap <= 2 * u * vmax + 1e-6)
  o:sum():backward()
  check(dt .. ": sdpa grad in " .. dt, qq.grad:dtype() == dt)
  -- the options in 16 bits: the same bound against float32 on the same
  -- values, gradients in the dtype and near float32's
  local mask = tt.rand(7, 9):lt(0.7)
  local bias = tt.randn(2, 7, 9)
  for _, c in ipairs{{name = "mask", o = {mask = mask}}, {name = "window, sinks", o = {window = 3, sinks = 1}},
                     {name = "alibi", o = {alibi = true}}, {name = dt .. " bias", o = {bias = bias:to(dt)}},
                     {name = "dropout", o = {dropout = 0.3}}, {name = "GQA", kv = 1, o = {causal = true}}} do
    local qh = tt.randn(1, 2, 7, 5):to(dt):requires_grad_()
    local kh = tt.randn(1, c.kv or 2, 9, 5):to(dt):requires_grad_()
    local vh = tt.randn(1, c.kv or 2, 9, 3):to(dt):requires_grad_()
    local qf, kf, vf = qh:detach():float():requires_grad_(), kh:detach():float():requires_grad_(),
                       vh:detach():float():requires_grad_()
    local of_opts = {}
    for key, val in pairs(c.o) do of_opts[key] = key == "bias" and val:float() or val end
    if c.o.dropout then tt.manual_seed(5) end
    local oh = tt.sdpa(qh, kh, vh, c.o)
    if c.o.dropout then tt.manual_seed(5) end
    local ofl = tt.sdpa(qf, kf, vf, of_opts)
    local gap = (oh:float() - ofl):abs():max():item()
    local vmax = vf:abs():max():item() * (c.o.dropout and 1 / 0.7 or 1)
    check(string.format("%s: sdpa %s within 2 u max|v| of float32's (%.3g)", dt, c.name, gap),
          oh:dtype() == dt and gap <= 2 * u * vmax + 1e-6)
    oh:float():pow(2):sum():backward()
    ofl:pow(2):sum():backward()
    local worst = 0
    for _, pr in ipairs{{qh, qf}, {kh, kf}, {vh, vf}} do
      local gh, gf = flat(pr[1].grad:float():totable()), flat(pr[2].grad:totable())
      for i = 1, #gf do worst = math.max(worst, math.abs(gh[i] - gf[i]) / (math.abs(gf[i]) + 0.1)) end
      check(dt .. ": sdpa " .. c.name .. " grad in " .. dt, pr[1].grad:dtype() == dt)
    end
    check(string.format("%s: sdpa %s grads near float32's (%.3g)", dt, c.name, worst),
          worst < (dt == "bfloat16" and 0.1 or 0.02))
  end
  local logits = tt.randn(4, 10):to(dt):requires_grad_()
  local ce = tt.cross_entropy(logits, tt.tensor({1, 10, 3, 3}, "int64"))
  check(dt .. ": cross_entropy gives " .. dt, ce:dtype() == dt)
  near(dt .. ": cross_entropy matches float32's, rounded", ce,
       {tt.cross_entropy(logits:detach():float(), tt.tensor({1, 10, 3, 3}, "int64")):item()}, 1)
  ce:backward()
  check(dt .. ": cross_entropy grad in " .. dt, logits.grad:dtype() == dt)
  checkerror({"backward: grad must be " .. dt}, function() o:backward(tt.ones(o:shape())) end)
end

-- ===== Optimizers on 16-bit parameters =====
-- The state is kept in the parameter's dtype (PyTorch's zeros_like(p));
-- each step is float32 math on the stored values, p and the new state
-- rounded once as they are stored. The reference: the same update in
-- float64, p, buf, m, v rounded to the dtype as they are stored. 300 elements cross the 256-element chunks of the C loop.
local function ref_step(kind, o, dt, s, g, t)
  for i = 1, #s.p do
    local p, gi = s.p[i], g[i]
    if kind == "SGD" then
      local d = gi + o.weight_decay * p
      if o.momentum ~= 0 then
        d = t == 1 and d or o.momentum * s.buf[i] + d
        s.buf[i] = round16(dt, d)              -- stored rounded; the step uses d as computed
      end
      s.p[i] = round16(dt, p - o.lr * d)
    else
      p = p * (1 - o.lr * o.weight_decay)
      local m = s.m[i] + (1 - 0.9) * (gi - s.m[i])
      local v = s.v[i] * 0.999 + (1 - 0.999) * gi * gi
      local denom = math.sqrt(v) / math.sqrt(1 - 0.999 ^ t) + 1e-8
      s.p[i] = round16(dt, p - o.lr / (1 - 0.9 ^ t) * (m / denom))
      s.m[i], s.v[i] = round16(dt, m), round16(dt, v)
    end
  end
end

for _, dt in ipairs({"bfloat16", "float16"}) do
  for _, case in ipairs({
    {"SGD", {lr = 0.05, momentum = 0.9, weight_decay = 0.01}},
    {"SGD", {lr = 0.05, momentum = 0, weight_decay = 0}},
    {"AdamW", {lr = 0.01, weight_decay = 0.1}},
  }) do
    local kind, o = case[1], case[2]
    local w = (tt.randn(300) * 2):to(dt):requires_grad_()
    local s = {p = flat(w:totable()), buf = {}, m = {}, v = {}}
    for i = 1, 300 do s.m[i], s.v[i] = 0, 0 end
    local opt = tt.optim[kind]({w}, o)
    for t = 1, 3 do
      ((w * w):sum() + w:sum()):backward()      -- grad 2w + 1, in dt
      check(dt .. " " .. kind .. ": grad in " .. dt, w.grad:dtype() == dt)
      local g = flat(w.grad:totable())
      opt:step(); opt:zero_grad()
      ref_step(kind, {lr = o.lr, momentum = o.momentum or 0, weight_decay = o.weight_decay}, dt, s, g, t)
      check(dt .. " " .. kind .. ": p stays " .. dt, w:dtype() == dt)
      near(string.format("%s %s(momentum %s) step %d vs float64 rounded", dt, kind, tostring(o.momentum), t),
           w, s.p, 1)
    end
  end
  -- An update below half a unit in the last place is lost: 1 - 1e-3 rounds
  -- back to 1 in bfloat16 (its spacing below 1 is 2^-8), not in float32.
  local p16, p32 = tt.ones(4, dt):requires_grad_(), tt.ones(4):requires_grad_()
  local o16, o32 = tt.optim.SGD({p16}, {lr = 1e-3}), tt.optim.SGD({p32}, {lr = 1e-3})
  for _ = 1, 10 do
    p16:sum():backward(); p32:sum():backward()
    o16:step(); o32:step(); o16:zero_grad(); o32:zero_grad()
  end
  local stuck = dt == "bfloat16"               -- float16's spacing below 1 is 2^-11 < 1e-3
  check(dt .. ": ten steps of 1e-3 from 1 " .. (stuck and "are all lost" or "move p"),
        (p16:max():item() == 1) == stuck)
  check(dt .. ": float32 moves the same p to 0.99", math.abs(p32:max():item() - 0.99) < 1e-6)
  -- clip_grad_norm reads 16-bit gradients as values
  local p = tt.zeros(2, dt):requires_grad_()
  p.grad = tt.tensor({3, 4}):to(dt)
  check(dt .. ": clip_grad_norm of a 16-bit {3, 4} is 5", tt.nn.clip_grad_norm({p}, 1) == 5)
  near(dt .. ": clipped to norm 1", p.grad, {0.6 / (1 + 5e-6 / 5) , 0.8 / (1 + 5e-6 / 5)}, 1)
end
checkerror({"SGD: parameter 1 [3] is int64; only float tensors (float32, bfloat16, float16) can be optimized"},
           tt.optim.SGD, {tt.ones(3, "int64")}, {lr = 0.1})

-- ===== What takes float32 only, with a message =====
checkerror({"gradcheck: input 1 [3] is bfloat16", "hint: pass x:float()"}, tt.gradcheck,
           function(a) return (a * 2):float() end, {tt.randn(3):bfloat16():requires_grad_()})
checkerror({"requires_grad_: only float tensors (float32, bfloat16, float16)", "got int64"},
           function() return tt.ones(2, "int64"):requires_grad_() end)
checkerror({"grad: expects bfloat16 [2]"}, function()
  local p = tt.ones(2, "bfloat16"):requires_grad_(); p.grad = tt.ones(2) end)

-- ===== The trace shows each op's dtype =====
local dir = T.tmpdir()
local script = T.write(dir, "half.lua", [[
local x = tt.ones(2, 3, "bfloat16")
local y = x:float() + x
local z = x:matmul(x:mT())
local q = tt.ones(1, 2, 5, 4, "bfloat16")
local o, w = tt.sdpa(q, q, q, {causal = true, weights = true})
print("weights " .. w:dtype())
]])
local out = T.run(dir, "--trace=values " .. script)
check("trace: creation row shows bfloat16", out:find("ones        -> [2,3] bfloat16", 1, true) ~= nil)
check("trace: mixed add row shows both dtypes", out:find("[2,3] + [2,3] bfloat16 -> [2,3]", 1, true) ~= nil)
check("trace: matmul row shows bfloat16", out:find("[2,3] bfloat16 @ [3,2] bfloat16 -> [2,2] bfloat16", 1, true) ~= nil)
check("trace: values of a bfloat16 result", out:find("[[3., 3.],", 1, true) ~= nil)
-- 16-bit sdpa is one fused row: no conversion rows around it
local block, rows = "", {}
local after = out:match("local o, w = tt%.sdpa[^\n]*\n(.*)$") or ""
for line in after:gmatch("[^\n]+") do   -- the rows up to the next unindented line
  if not line:find("^ ") then break end
  block = block .. line .. "\n"
  local r = line:match("^    (%a+) ")
  if r then rows[#rows + 1] = r end
end
check("trace: bfloat16 sdpa is one row, in bfloat16 (rows: " .. table.concat(rows, ", ") .. ")",
      #rows == 1 and rows[1] == "sdpa" and block:find("-> [1,2,5,4] bfloat16", 1, true) ~= nil)
check("trace: sdpa's weights in bfloat16", out:find("weights bfloat16", 1, true) ~= nil)

T.report()
