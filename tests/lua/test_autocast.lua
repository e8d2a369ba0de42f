-- test_autocast.lua — tt.autocast(dtype, fn, ...), torch.autocast's rules:
-- matmul, nn.Linear, einsum and sdpa cast their float inputs to the dtype
-- and give it; softmax, losses, norms, exp, log, pow, sum, mean give float32
-- from 16-bit inputs; the rest follow promotion. Values against float64
-- references (inputs rounded to the dtype from the definition, check.lua),
-- gradients to float32 parameters, nesting, errors, coroutines, the trace.
local T = dofile("tests/lua/check.lua")
local check, checkerror = T.check, T.checkerror

-- ===== The reference rounding (check.lua's, shared with test_half.lua) =====
-- near(descr, x, want, ulps, dt): x within ulps of the spacing at want rounded to dt
local FMT, round16, near = T.FMT16, T.round16, T.near16

-- float64 helpers on nested tables
local function rounded(dt, t)
  local r = {}
  for i, row in ipairs(t) do
    r[i] = {}
    for j, v in ipairs(row) do r[i][j] = round16(dt, v) end
  end
  return r
end
local function mm(a, b)
  local c = {}
  for i = 1, #a do
    c[i] = {}
    for j = 1, #b[1] do
      local s = 0.0
      for k = 1, #b do s = s + a[i][k] * b[k][j] end
      c[i][j] = s
    end
  end
  return c
end
local function transpose(a)
  local t = {}
  for j = 1, #a[1] do
    t[j] = {}
    for i = 1, #a do t[j][i] = a[i][j] end
  end
  return t
end

local function is32(x) return x:matmul(x:mT()):dtype() end   -- what a matmul gives now

-- ===== matmul at awkward sizes, b a transposed view =====
tt.manual_seed(7)
local A = tt.randn(5, 7)
local Bt = tt.randn(3, 7)
local a64, b64 = A:totable(), transpose(Bt:totable())
for _, dt in ipairs({"bfloat16", "float16"}) do
  local y = tt.autocast(dt, function(a, b) return a:matmul(b) end, A, Bt:mT())
  check(dt .. ": matmul gives " .. dt, y:dtype() == dt)
  near(dt .. ": matmul of [5,7] @ [7,3] (a view) against float64 of the rounded inputs, one rounding",
       y, mm(rounded(dt, a64), rounded(dt, b64)), 1, dt)
  check(dt .. ": tt.matmul too", tt.autocast(dt, tt.matmul, A, Bt:mT()):dtype() == dt)
end
-- the cast really happens: 1 + 2^-10 is 1 in bfloat16
local one = tt.tensor({{1 + 2^-10}})
check("matmul outside autocast keeps 1 + 2^-10", one:matmul(tt.ones(1, 1)):item() == 1 + 2^-10)
check("matmul inside bfloat16 autocast rounds it to 1",
      tt.autocast("bfloat16", function() return one:matmul(tt.ones(1, 1)) end):item() == 1)
check("matmul inside float16 autocast keeps it (float16 has 10 fraction bits)",
      tt.autocast("float16", function() return one:matmul(tt.ones(1, 1)) end):item() == 1 + 2^-10)
-- a float16 input under bfloat16 autocast is cast too, as torch casts every float input
check("float16 @ float32 under bfloat16 autocast gives bfloat16",
      tt.autocast("bfloat16", tt.matmul, tt.ones(2, 2, "float16"), tt.ones(2, 2)):dtype() == "bfloat16")
-- int64 and bool are not float: matmul of int64 is the op's own error
checkerror({"matmul"}, function() return tt.autocast("bfloat16", tt.matmul, tt.ones(2, 2, "int64"), tt.ones(2, 2)) end)

-- ===== nn.Linear: weight and bias cast, the result in the dtype =====
local lin = tt.nn.Linear(7, 3)
local W, Bv = lin.weight:totable(), lin.bias:totable()
local y = tt.autocast("bfloat16", lin, A)
check("Linear gives bfloat16 (its bias cast too)", y:dtype() == "bfloat16")
local xw = mm(rounded("bfloat16", a64), rounded("bfloat16", transpose(W)))
local want = {}
for i = 1, #xw do
  want[i] = {}
  for j = 1, #xw[i] do want[i][j] = round16("bfloat16", xw[i][j]) + round16("bfloat16", Bv[j]) end
end
near("Linear against float64: x@w rounded, plus the rounded bias, rounded", y, want, 1, "bfloat16")
check("Linear without a bias", tt.autocast("float16", tt.nn.Linear(7, 2, {bias = false}), A):dtype() == "float16")

-- ===== einsum's products =====
local e = tt.autocast("bfloat16", tt.einsum, "i k, k j -> i j", A, Bt:mT())
check("einsum gives bfloat16", e:dtype() == "bfloat16")
near("einsum against float64", e, mm(rounded("bfloat16", a64), rounded("bfloat16", b64)), 1, "bfloat16")

-- ===== sdpa =====
local q, k, v = tt.randn(1, 2, 5, 4), tt.randn(1, 2, 6, 4), tt.randn(1, 2, 6, 4)
for _, dt in ipairs({"bfloat16", "float16"}) do
  local o = tt.autocast(dt, tt.sdpa, q, k, v)
  check(dt .. ": sdpa gives " .. dt, o:dtype() == dt)
  local qt, kt, vt, ot = q:totable()[1], k:totable()[1], v:totable()[1], o:totable()[1]
  local bad
  for h = 1, 2 do
    local qh, kh, vh = rounded(dt, qt[h]), rounded(dt, kt[h]), rounded(dt, vt[h])
    for i = 1, 5 do
      local s, m = {}, -math.huge
      for j = 1, 6 do
        local d = 0.0
        for c = 1, 4 do d = d + qh[i][c] * kh[j][c] end
        s[j] = d / 2
        m = math.max(m, s[j])
      end
      local z = 0.0
      for j = 1, 6 do s[j] = math.exp(s[j] - m); z = z + s[j] end
      for c = 1, 4 do
        local r = 0.0
        for j = 1, 6 do r = r + s[j] / z * vh[j][c] end
        -- the fused 16-bit kernel rounds P to the dtype before P.V, as FlashAttention
        -- does: within 2 units of rounding of max|v| (test_half.lua's bound)
        local w, vmax = r, 0.0
        for j = 1, 6 do vmax = math.max(vmax, math.abs(vh[j][c])) end
        if math.abs(ot[h][i][c] - w) > 2 * 2.0^-FMT[dt].p * vmax and not bad then
          bad = string.format("[%d][%d][%d] got %.8g want %.8g", h, i, c, ot[h][i][c], w)
        end
      end
    end
  end
  check(dt .. ": sdpa against float64 of the rounded q, k, v within 2 u max|v|" .. (bad and (" " .. bad) or ""), bad == nil)
end

-- ===== the float32 list: 16-bit inputs give float32 =====
local xs = tt.randn(4, 6)
local xb = xs:bfloat16()
local x64 = xb:totable()           -- the exact values of the bfloat16 input
local sm = tt.autocast("bfloat16", function() return xb:softmax(-1) end)
check("softmax of bfloat16 gives float32", sm:dtype() == "float32")
local smw = {}
for i = 1, 4 do
  local m, z = -math.huge, 0.0
  for j = 1, 6 do m = math.max(m, x64[i][j]) end
  smw[i] = {}
  for j = 1, 6 do smw[i][j] = math.exp(x64[i][j] - m); z = z + smw[i][j] end
  for j = 1, 6 do smw[i][j] = smw[i][j] / z end
end
T.close("softmax of bfloat16 against float64 (float32 accuracy, no bfloat16 rounding)", sm, smw, 1e-6)
check("outside autocast softmax of bfloat16 stays bfloat16", xb:softmax(-1):dtype() == "bfloat16")
local ls = tt.autocast("float16", function() return xs:half():log_softmax(-1) end)
check("log_softmax of float16 gives float32", ls:dtype() == "float32")
local ops = {
  exp = function(x) return x:exp() end, log = function(x) return x:abs():log() end,
  pow = function(x) return x ^ 2 end, powt = function(x) return x ^ x end,
  sum = function(x) return x:sum() end, sumd = function(x) return x:sum(2) end,
  mean = function(x) return x:mean(1) end, norm = function(x) return x:norm() end,
}
for name, f in pairs(ops) do
  check(name .. " of bfloat16 gives float32 under autocast",
        tt.autocast("bfloat16", f, xb):dtype() == "float32")
end
check("exp of bfloat16 against float64", math.abs(tt.autocast("bfloat16", function() return xb:exp() end):totable()[2][3]
      - math.exp(x64[2][3])) <= 1e-6 * math.exp(x64[2][3]))
local tgt = tt.tensor({1, 3, 6, 2}, "int64")
local ce = tt.autocast("bfloat16", tt.cross_entropy, xb, tgt)
check("cross_entropy of bfloat16 logits gives float32", ce:dtype() == "float32")
local cew = 0.0
for i = 1, 4 do
  local m, z = -math.huge, 0.0
  for j = 1, 6 do m = math.max(m, x64[i][j]) end
  for j = 1, 6 do z = z + math.exp(x64[i][j] - m) end
  cew = cew + (math.log(z) + m - x64[i][tgt:totable()[i]]) / 4
end
check("cross_entropy against float64", math.abs(ce:item() - cew) <= 1e-6 * math.abs(cew))
-- LayerNorm runs in float32: without autocast its steps round to bfloat16
local ln = tt.nn.LayerNorm(6)
local lo = tt.autocast("bfloat16", ln, xb)
check("LayerNorm of bfloat16 gives float32", lo:dtype() == "float32")
local lnw = {}
for i = 1, 4 do
  local mu, var = 0.0, 0.0
  for j = 1, 6 do mu = mu + x64[i][j] / 6 end
  for j = 1, 6 do var = var + (x64[i][j] - mu)^2 / 6 end
  lnw[i] = {}
  for j = 1, 6 do lnw[i][j] = (x64[i][j] - mu) / math.sqrt(var + 1e-5) end
end
T.close("LayerNorm of bfloat16 against float64 at float32 accuracy", lo, lnw, 1e-5)
check("RMSNorm of float16 gives float32", tt.autocast("float16", tt.nn.RMSNorm(6), xs:half()):dtype() == "float32")
-- float32 inputs of the float32 list: untouched
check("softmax of float32 under autocast stays float32", tt.autocast("bfloat16", function() return xs:softmax(1) end):dtype() == "float32")

-- ===== the other ops follow promotion =====
tt.autocast("bfloat16", function()
  check("bfloat16 + float32 gives float32", (xb + xs):dtype() == "float32")
  check("bfloat16 * bfloat16 stays bfloat16", (xb * xb):dtype() == "bfloat16")
  check("relu of bfloat16 stays bfloat16", xb:relu():dtype() == "bfloat16")
  check("max of bfloat16 stays bfloat16", xb:max():dtype() == "bfloat16")
  check("float32 + float32 stays float32", (xs + xs):dtype() == "float32")
end)

-- ===== results, arguments, nesting, enabled = false =====
local r1, r2, r3 = tt.autocast("bfloat16", function(a, b, c) return a, b + 1, c end, 1, 2, nil)
check("fn's results come back (all of them)", r1 == 1 and r2 == 3 and r3 == nil)
check("zero results", select("#", tt.autocast("bfloat16", function() end)) == 0)
local m = tt.ones(2, 2)
tt.autocast("bfloat16", function()
  check("outer: bfloat16", is32(m) == "bfloat16")
  tt.autocast("float16", function() check("nested: the inner dtype wins", is32(m) == "float16") end)
  check("outer again after the inner returns", is32(m) == "bfloat16")
  tt.autocast({enabled = false}, function() check("enabled = false: float32 inside", is32(m) == "float32") end)
  check("outer again after enabled = false", is32(m) == "bfloat16")
end)
check("after autocast: float32", is32(m) == "float32")
check("{dtype = 'float16'} as a table", tt.autocast({dtype = "float16"}, is32, m) == "float16")
check("{enabled = true} defaults to bfloat16 (torch's CPU default)", tt.autocast({enabled = true}, is32, m) == "bfloat16")
check("{dtype = 'float16', enabled = false}", tt.autocast({dtype = "float16", enabled = false}, is32, m) == "float32")

-- ===== an error inside fn: the setting comes back =====
local ok, msg = pcall(tt.autocast, "bfloat16", function() error("boom") end)
check("an error in fn comes out", not ok and tostring(msg):find("boom", 1, true) ~= nil)
check("after an error: float32 again", is32(m) == "float32")
ok, msg = pcall(tt.autocast, "float16", function() return tt.ones(2, 3):matmul(tt.ones(2, 3)) end)
check("an op's error inside fn comes out with its message", not ok and tostring(msg):find("inner sizes differ", 1, true) ~= nil)
check("after an op's error: float32 again", is32(m) == "float32")
ok = pcall(tt.autocast, "bfloat16", function()
  tt.autocast("float16", function() error("inner") end)
end)
check("after a nested error: float32 again", not ok and is32(m) == "float32")

-- ===== coroutines =====
local co = coroutine.wrap(function()
  return tt.autocast("bfloat16", function() coroutine.yield(1); return 2 end)
end)
checkerror({"autocast: fn yielded", "hint: yield outside tt.autocast"}, co)
check("after the refused yield: float32", is32(m) == "float32")
-- a coroutine resumed inside fn runs under it (the setting is dynamic, as torch's)
local inner = coroutine.wrap(function() coroutine.yield(is32(m)); return is32(m) end)
check("a coroutine resumed inside autocast sees it", tt.autocast("float16", inner) == "float16")
check("and resumed outside, float32", inner() == "float32")
-- autocast inside a coroutine, between yields, is fine
local gen = coroutine.wrap(function()
  coroutine.yield(tt.autocast("bfloat16", is32, m))
  return is32(m)
end)
check("autocast within a coroutine", gen() == "bfloat16")
check("the coroutine after its autocast", gen() == "float32")

-- ===== gradients reach float32 parameters in float32 =====
local x = tt.randn(3, 5):requires_grad_()
local w = tt.randn(5, 4):requires_grad_()
local loss = tt.autocast("bfloat16", function() return x:matmul(w):sum() end)
check("the loss of bfloat16 products is float32 (sum is in the float32 list)", loss:dtype() == "float32")
loss:backward()
check("w.grad is float32", w.grad:dtype() == "float32")
check("x.grad is float32", x.grad:dtype() == "float32")
-- d sum(xb @ wb) / dw[k][j] = sum_i xb[i][k], rounded once to bfloat16 (matmul's backward gives
-- the gradient in its input's dtype), then the cast's backward gives it back as float32
local xr, wr = rounded("bfloat16", x:detach():totable()), rounded("bfloat16", w:detach():totable())
local gw, gx = {}, {}
for kk = 1, 5 do
  gw[kk] = {}
  local s = 0.0
  for i = 1, 3 do s = s + xr[i][kk] end
  for j = 1, 4 do gw[kk][j] = s end
end
for i = 1, 3 do
  gx[i] = {}
  for kk = 1, 5 do
    local s = 0.0
    for j = 1, 4 do s = s + wr[kk][j] end
    gx[i][kk] = s
  end
end
near("w.grad against float64", w.grad, gw, 1, "bfloat16")
near("x.grad against float64", x.grad, gx, 1, "bfloat16")
-- through softmax and a Linear
local lin2 = tt.nn.Linear(5, 4)
local l2 = tt.autocast("float16", function() return lin2(x):softmax(-1):mul(tt.arange(4)):sum() end)
l2:backward()
check("Linear's weight.grad is float32", lin2.weight.grad:dtype() == "float32")
check("Linear's bias.grad is float32", lin2.bias.grad:dtype() == "float32")

-- ===== errors =====
checkerror({"autocast: dtype must be \"bfloat16\" or \"float16\", got 'float32'", "tt.autocast({enabled = false}, fn)"},
           function() return tt.autocast("float32", is32, m) end)
checkerror({"autocast: dtype must be \"bfloat16\" or \"float16\", got 'int64'", "hint:"},
           function() return tt.autocast("int64", is32, m) end)
local m64 = checkerror({"got 'float64'; hint: autocast runs matmul and sdpa in one of the 16-bit dtypes"},
                       function() return tt.autocast("float64", is32, m) end)
check("float64's hint is not float32's", not m64:find("outside tt.autocast", 1, true))
checkerror({"autocast: expects a dtype", "got number"}, function() return tt.autocast(16, is32, m) end)
checkerror({"autocast", "enable"}, function() return tt.autocast({dtype = "bfloat16", enable = false}, is32, m) end)
checkerror({"autocast: expects the function to run after the dtype, got number"}, function() return tt.autocast("bfloat16", 5) end)
checkerror({"autocast: expects the function to run, got a tensor", "hint: tt.autocast(dtype, model, x)"},
           function() return tt.autocast("bfloat16", tt.ones(2)) end)
checkerror({"did you mean \"bfloat16\"?"}, function() return tt.autocast("bf16", is32, m) end)
checkerror({"did you mean \"float16\"?"}, function() return tt.autocast("fp16", is32, m) end)
check("after the argument errors: float32", is32(m) == "float32")

-- ===== the trace: each cast a row marked (autocast); the JSON carries it =====
local dir = T.tmpdir()
local script = T.write(dir, "ac.lua", [[
local x, w = tt.ones(3, 4), tt.ones(4, 5)
local p = tt.autocast("bfloat16", function() return x:matmul(w):softmax(-1) end)
local v = tt.ones(4, 5):requires_grad_()
local l = tt.autocast("bfloat16", function() return x:matmul(v):mul(2):sum() end)
l:backward()
]])
local out = T.run(dir, "--trace-json " .. dir .. "/ac.json " .. script)
check("trace: the cast of x to bfloat16 is a row", out:find("    bfloat16    [3,4] (autocast) -> [3,4] bfloat16\n", 1, true) ~= nil)
check("trace: the matmul row shows bfloat16", out:find("matmul      [3,4] bfloat16 @ [4,5] bfloat16 -> [3,5] bfloat16", 1, true) ~= nil)
check("trace: the cast back to float32 before softmax", out:find("    float       [3,5] bfloat16 (autocast) -> [3,5]\n", 1, true) ~= nil)
check("trace: softmax in float32", out:find("softmax     [3,5] (dim=2) -> [3,5]", 1, true) ~= nil)
check("trace: a backward row shows its 16-bit gradients' dtype",
      out:find("grad matmul      grad[3,5] bfloat16 -> grad[4,5] bfloat16   120 FLOP", 1, true) ~= nil)
check("trace: the cast's backward gives float32 back",
      out:find("grad bfloat16    grad[4,5] bfloat16 -> grad[4,5]\n", 1, true) ~= nil)
local json = T.slurp(dir .. "/ac.json")
check("json: the backward's gradient of the cast input is bfloat16",
      json:find('"op":"mul","phase":"backward"[^\n]*"grads":%[{[^}]*"dtype":"bfloat16"') ~= nil)
check("json: the cast's args say autocast", json:find('"op":"bfloat16"[^\n]*"args":"autocast"') ~= nil)
check("json: the matmul's output dtype", json:find('"op":"matmul"[^\n]*"output":{[^}]*"dtype":"bfloat16"') ~= nil)

T.report()
