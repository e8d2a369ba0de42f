-- test_half_nn.lua — tt.rope and tt.dropout on bfloat16 and float16 (float32
-- inside, one rounding, the input's dtype out; their backward likewise)
-- against float64 references, and every tt.nn module forward and backward
-- under tt.autocast against the same module in float32.
local T = dofile("tests/lua/check.lua")
local check, checkerror, round16, flat = T.check, T.checkerror, T.round16, T.flat

local once = T.once16

local function f32(v) return (string.unpack("f", string.pack("f", v))) end

local rope_ref = T.rope_ref

for dt in pairs(T.FMT16) do
  -- ===== rope: turned in float32, rounded once =====
  tt.manual_seed(10)
  local pos = {0, 1, 7, 300, -2}
  for _, il in ipairs{false, true} do
    local x = (tt.randn(2, 5, 8) * 3):to(dt):requires_grad_()
    local y = tt.rope(x, tt.tensor(pos):long(), {interleaved = il})
    check(dt .. ": rope gives " .. dt, y:dtype() == dt)
    once(string.format("%s: rope interleaved=%s against float64", dt, il), y,
         rope_ref(x:float():totable(), pos, 10000, il), 2^-21 * 8, dt)
    -- the gradient turns g back: the rotation by -angle
    local c = (tt.randn(2, 5, 8) * 2):to(dt):float()
    local loss = (y:float() * c):sum()
    loss:backward()
    local back = {}
    for i, p in ipairs(pos) do back[i] = -p end
    once(string.format("%s: rope interleaved=%s backward against float64", dt, il), x.grad,
         rope_ref(c:totable(), back, 10000, il), 2^-21 * 8, dt)
  end
  local e = tt.rope(tt.zeros(0, 4, dt), tt.arange(0))
  check(dt .. ": rope of no rows", e:dtype() == dt and e:numel() == 0)

  -- ===== dropout: x * mask in float32, rounded once; the mask float32 =====
  local p, keep = 0.3, f32(1 / 0.7)
  local x = (tt.randn(40, 50) * 4):to(dt):requires_grad_()
  tt.manual_seed(77)
  local y = tt.dropout(x, p)
  tt.manual_seed(77)
  local kept = tt.dropout(tt.ones(40, 50), p):ne(0)   -- the same draws: which elements stay
  check(dt .. ": dropout gives " .. dt, y:dtype() == dt)
  local xs, ks, want, zeros = flat(x:float():totable()), flat(kept:totable()), {}, 0
  for i = 1, #xs do
    want[i] = ks[i] and round16(dt, f32(xs[i] * keep)) or 0
    if not ks[i] then zeros = zeros + 1 end
  end
  once(dt .. ": dropout against float64 (x * f32(1/(1-p)) in float32, rounded once)", y, want, 0, dt)
  local sd = math.sqrt(#xs * p * (1 - p))
  check(string.format("%s: dropout zeroes %d of %d (p = %.1f, within 4 sd)", dt, zeros, #xs, p),
        math.abs(zeros - #xs * p) < 4 * sd)
  local c = (tt.randn(40, 50) * 2):to(dt):float()
  local loss = (y:float() * c):sum()
  loss:backward()
  local cs, gwant = flat(c:totable()), {}
  for i = 1, #cs do gwant[i] = ks[i] and round16(dt, f32(cs[i] * keep)) or 0 end
  once(dt .. ": dropout backward: g * the same mask, rounded once", x.grad, gwant, 0, dt)
  check(dt .. ": dropout of 0 elements", tt.dropout(tt.zeros(0, dt), 0.5):dtype() == dt)
  check(dt .. ": dropout p = 1 gives zeros", tt.dropout(tt.ones(3, dt), 1):abs():sum():item() == 0)
end
checkerror({"rope: x must be a float tensor (float32, bfloat16, float16), got int64"}, tt.rope,
           tt.ones(2, 4, "int64"), tt.arange(2))

-- ===== every tt.nn module under autocast, forward and backward =====
-- The same module and input in float32 are the yardstick: under autocast
-- the matmuls take 16-bit operands, so results stay within a few roundings
-- (relative to the output's largest value; bfloat16 2^-8, float16 2^-11).
local D, H, N = 16, 4, 6
local ids = tt.tensor({{3, 1, 7, 7, 2, 9}}, "int64")
local modules = {
  {"Linear", function() return tt.nn.Linear(D, 12) end},
  {"Embedding", function() return tt.nn.Embedding(10, D) end, ids},
  {"LayerNorm", function() return tt.nn.LayerNorm(D) end},
  {"RMSNorm", function() return tt.nn.RMSNorm(D) end},
  {"Dropout", function() return tt.nn.Dropout(0.25) end, "half"},
  {"FeedForward", function() return tt.nn.FeedForward(D) end},
  {"FeedForward swiglu", function() return tt.nn.FeedForward(D, {activation = "swiglu"}) end},
  {"Attention", function() return tt.nn.Attention(D, H, {kv_heads = 2}) end},
  {"Attention rope", function() return tt.nn.Attention(D, H, {rope = true}) end},
  {"Block", function() return tt.nn.Block(D, H) end},
  {"Block rope dropout", function() return tt.nn.Block(D, H, {rope = true, dropout = 0.1}) end},
  {"Block layernorm gelu rope", function() return tt.nn.Block(D, H, {norm = "layernorm", activation = "gelu",
                                                                      rope = true, dropout = 0.2}) end},
}

local function gap(a, b)
  local d = (a:float() - b:float()):abs():max():item()
  return d / math.max(b:float():abs():max():item(), 1e-30)
end

for dt, fmt in pairs(T.FMT16) do
  local u = 2.0 ^ (1 - fmt.p)
  for _, m in ipairs(modules) do
    for _, n in ipairs{N, 1} do
      local name = string.format("%s: %s (N = %d)", dt, m[1], n)
      tt.manual_seed(5)
      local mod = m[2]()
      local input = m[3] == ids and ids:narrow(2, 1, n) or tt.randn(2, n, D)
      if m[3] == "half" then input = input:to(dt):float() end   -- values a 16-bit input holds exactly
      local x16, x32 = input, input
      if m[3] ~= ids then
        x16 = (m[3] == "half" and input:to(dt) or input:clone()):requires_grad_()
        x32 = input:clone():requires_grad_()
      end
      tt.manual_seed(9)
      local ok, y16 = pcall(tt.autocast, dt, mod, x16)
      check(name .. " runs under autocast" .. (ok and "" or (": " .. tostring(y16))), ok)
      if ok then
        tt.manual_seed(9)
        local y32 = mod(x32)
        -- the float32 gradients, then the autocast ones, each parameter's pair
        local c = tt.randn(y32:shape())
        local l32 = (y32 * c):sum()
        l32:backward()
        local g32 = {}
        for i, prm in ipairs(mod:parameters()) do g32[i] = prm.grad; prm.grad = nil end
        local l16 = (y16:float() * c):sum()
        l16:backward()
        local yg = gap(y16, y32)
        check(string.format("%s forward within 4 u of float32's (%.3g u)", name, yg / u), yg <= 4 * u)
        -- relative to the module's largest gradient: with one key (N = 1)
        -- q's and k's are 0 but for rounding
        local worst, scale, dtypes = 0, 1e-30, true
        for i, prm in ipairs(mod:parameters()) do
          dtypes = dtypes and prm.grad ~= nil and prm.grad:dtype() == "float32"
          scale = math.max(scale, g32[i]:abs():max():item())
          if prm.grad then worst = math.max(worst, (prm.grad - g32[i]):abs():max():item()) end
        end
        check(string.format("%s: parameters' gradients float32, within 8 u of float32's (%.3g u)", name,
                            worst / scale / u), dtypes and worst <= 8 * u * scale)
        if m[3] == "half" then
          check(name .. ": a 16-bit input's gradient in " .. dt, x16.grad and x16.grad:dtype() == dt)
        elseif m[3] ~= ids then
          local xg = gap(x16.grad, x32.grad)
          check(string.format("%s: the input's gradient within 8 u of float32's (%.3g u)", name, xg / u),
                x16.grad:dtype() == "float32" and xg <= 8 * u)
        end
      end
    end
  end
end

T.report()
