-- test_half_backward.lua — 16-bit backward formulas compute in float32 and
-- round once: each gradient against a float64 reference of the same formula
-- (on the forward's 16-bit result where the formula reads it), rounded once.
local T = dofile("tests/lua/check.lua")
local check, round16, flat = T.check, T.round16, T.flat

local once = T.once16

local R, C = 6, 37
-- weights for the loss sum(y * c): multiples of 1/8, exact in both dtypes,
-- so the gradient reaching y is c itself
local function weights(n)
  local c = {}
  for i = 1, n do c[i] = ((i * 7) % 17 - 8) / 8 end
  return c
end

for dt in pairs(T.FMT16) do
  tt.manual_seed(39)
  local x = (tt.randn(R, C) * 2):to(dt)
  local xs = flat(x:float():totable())
  local function at(i, j) return xs[(i - 1) * C + j] end
  local function grad_of(f)
    local xg = x:detach():requires_grad_()
    local y = f(xg)
    local c = weights(y:numel())
    local loss = (y:float() * tt.tensor(c):view(y:shape())):sum()
    loss:backward()
    return xg.grad, c
  end

  -- log_softmax: g - exp(y) * sum(g), y its 16-bit result
  local g, c = grad_of(function(t) return t:log_softmax(2) end)
  local want = {}
  for i = 1, R do
    local m, s, sc = -math.huge, 0, 0
    for j = 1, C do m = math.max(m, at(i, j)) end
    for j = 1, C do s = s + math.exp(at(i, j) - m) end
    for j = 1, C do sc = sc + c[(i - 1) * C + j] end
    for j = 1, C do
      local y = round16(dt, at(i, j) - m - math.log(s))
      want[#want + 1] = c[(i - 1) * C + j] - math.exp(y) * sc
    end
  end
  once(dt .. ": log_softmax backward", g, want, 2^-22 * 8)
  -- the issue's case: a confident, correct prediction
  local xi = tt.tensor({-2.46875, 2.859375}, dt):requires_grad_();
  (xi:log_softmax(1):float() * tt.tensor({0, 1})):sum():backward()
  local y2 = round16(dt, 2.859375 - math.log(math.exp(-2.46875) + math.exp(2.859375)))
  local y1 = round16(dt, -2.46875 - math.log(math.exp(-2.46875) + math.exp(2.859375)))
  once(dt .. ": log_softmax backward of {-2.47, 2.86} weighted {0, 1}", xi.grad, {-math.exp(y1), 1 - math.exp(y2)}, 0)

  -- var and std over dim 2, and over everything: the mean in float32
  local mean, var = {}, {}
  for i = 1, R do
    local s, v = 0, 0
    for j = 1, C do s = s + at(i, j) end
    mean[i] = s / C
    for j = 1, C do v = v + (at(i, j) - mean[i]) ^ 2 end
    var[i] = v / (C - 1)
  end
  g, c = grad_of(function(t) return t:var(2) end)
  want = {}
  for i = 1, R do for j = 1, C do want[#want + 1] = c[i] * 2 * (at(i, j) - mean[i]) / (C - 1) end end
  once(dt .. ": var(2) backward", g, want, 2^-22)
  g, c = grad_of(function(t) return t:std(2) end)
  want = {}
  for i = 1, R do
    local y = round16(dt, math.sqrt(var[i]))
    for j = 1, C do want[#want + 1] = c[i] * (at(i, j) - mean[i]) / ((C - 1) * y) end
  end
  once(dt .. ": std(2) backward", g, want, 2^-22)
  -- values whose mean 1.00390625 is halfway between two bfloat16s: rounded
  -- to 1, it zeroed the first element's gradient
  local v4 = tt.tensor({1.0, 1.0078125, 1.015625, 0.9921875}, dt):requires_grad_()
  v4:var():float():backward()
  local m4 = (1.0 + 1.0078125 + 1.015625 + 0.9921875) / 4
  once(dt .. ": var() backward around a mean between two " .. dt .. "s", v4.grad,
       {2 * (1 - m4) / 3, 2 * (1.0078125 - m4) / 3, 2 * (1.015625 - m4) / 3, 2 * (0.9921875 - m4) / 3}, 0)

  -- elementwise: the derivative is not rounded before g multiplies it
  local elementwise = {
    {"tanh", function(t) return t:tanh() end, function(v) local y = round16(dt, math.tanh(v)); return 1 - y * y end},
    {"sigmoid", function(t) return t:sigmoid() end,
     function(v) local y = round16(dt, 1 / (1 + math.exp(-v))); return y * (1 - y) end},
    {"sin", function(t) return t:sin() end, math.cos},
    {"cos", function(t) return t:cos() end, function(v) return -math.sin(v) end},
    {"x^3", function(t) return t ^ 3 end, function(v) return 3 * v * v end},
  }
  for _, e in ipairs(elementwise) do
    g, c = grad_of(e[2])
    want = {}
    for k = 1, #xs do want[k] = c[k] * e[3](xs[k]) end
    once(dt .. ": " .. e[1] .. " backward", g, want, 2^-22 * 8)
  end

  -- norm(3, 2): g sign(x) |x|^2 / y^2, y its 16-bit result
  g, c = grad_of(function(t) return t:norm(3, 2) end)
  want = {}
  for i = 1, R do
    local s = 0
    for j = 1, C do s = s + math.abs(at(i, j)) ^ 3 end
    local y = round16(dt, s ^ (1 / 3))
    for j = 1, C do
      local v = at(i, j)
      want[#want + 1] = c[i] * (v > 0 and 1 or v < 0 and -1 or 0) * v * v / (y * y)
    end
  end
  once(dt .. ": norm(3, 2) backward", g, want, 2^-22 * 8)
  -- norm(2, 2): g x / y
  g, c = grad_of(function(t) return t:norm(2, 2) end)
  want = {}
  for i = 1, R do
    local s = 0
    for j = 1, C do s = s + at(i, j) ^ 2 end
    local y = round16(dt, math.sqrt(s))
    for j = 1, C do want[#want + 1] = c[i] * at(i, j) / y end
  end
  once(dt .. ": norm(2, 2) backward", g, want, 2^-22 * 8)

  -- 1.5^x: g y log(1.5), y its 16-bit result
  g, c = grad_of(function(t) return 1.5 ^ t end)
  want = {}
  for k = 1, #xs do want[k] = c[k] * round16(dt, 1.5 ^ xs[k]) * math.log(1.5) end
  once(dt .. ": 1.5^x backward", g, want, 2^-22 * 8)
  -- a^b of two tensors: g b a^(b-1) to a, g y log(a) to b
  local pa = (x:detach():abs() + 0.5):requires_grad_()
  local pb = (x:detach():mT():contiguous():view(R, C) * 0.5):requires_grad_()
  local y = pa ^ pb
  c = weights(y:numel())
  local loss = (y:float() * tt.tensor(c):view(y:shape())):sum()
  loss:backward()
  local as, bs = flat(pa:float():totable()), flat(pb:float():totable())
  local wa, wb = {}, {}
  for k = 1, #as do
    wa[k] = c[k] * bs[k] * as[k] ^ (bs[k] - 1)
    wb[k] = c[k] * round16(dt, as[k] ^ bs[k]) * math.log(as[k])
  end
  once(dt .. ": a^b backward to a", pa.grad, wa, 2^-22 * 8)
  once(dt .. ": a^b backward to b", pb.grad, wb, 2^-22 * 8)

  -- einsum of three 16-bit operands: the gradient of the first is g
  -- contracted with the other two, in float32, rounded once
  local a = (tt.randn(4, 5) * 2):to(dt):requires_grad_()
  local b, d = (tt.randn(5, 6) * 2):to(dt), (tt.randn(6, 3) * 2):to(dt)
  tt.einsum("i j, j k, k l -> i l", a, b, d):float():sum():backward()
  local bs, ds = b:float():totable(), d:float():totable()
  want = {}
  for i = 1, 4 do
    for j = 1, 5 do
      local s = 0
      for k = 1, 6 do for l = 1, 3 do s = s + bs[j][k] * ds[k][l] end end
      want[#want + 1] = s
    end
  end
  once(dt .. ": einsum backward through three operands", a.grad, want, 2^-20)
end

T.report()
