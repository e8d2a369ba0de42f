-- test_diff_regress.lua — the failure classes the differential test against
-- PyTorch (tests/diff/) found, each as a plain case. The expected numbers
-- come from float64 references written here in Lua, never from tt.
local T = dofile("tests/lua/check.lua")
local check, close = T.check, T.close

-- std's gradient in float64: d std / d a_i = (a_i - mean) / ((N - 1) std),
-- and 0 where std is 0 (PyTorch's std_backward)
local function std_grad(row)
  local n, mean = #row, 0
  for _, v in ipairs(row) do mean = mean + v end
  mean = mean / n
  local ss = 0
  for _, v in ipairs(row) do ss = ss + (v - mean) ^ 2 end
  local sd = math.sqrt(ss / (n - 1))
  local g = {}
  for i, v in ipairs(row) do g[i] = sd == 0 and 0 or (v - mean) / ((n - 1) * sd) end
  return g, sd
end

-- std of a constant: 0, and a gradient of 0 (was NaN everywhere)
do
  local x = tt.tensor{1, 1, 1}:requires_grad_()
  local y = x:std()
  close("std of a constant is 0", y, 0)
  y:backward()
  close("std of a constant: gradient 0, as PyTorch", x.grad, std_grad{1, 1, 1})
end

-- one flat row and one spread row over a dim: the flat row's 0 stays local
do
  local rows = {{2, 2, 2, 2}, {1, 3, 0.5, 4}}
  local x = tt.tensor(rows):requires_grad_()
  x:std(2):sum():backward()
  close("std(2): the flat row gets 0, the other its gradient", x.grad, {(std_grad(rows[1])), (std_grad(rows[2]))}, 1e-6)
end

-- the NaN no longer reaches an upstream leaf: std(w * c) with c constant
do
  local w = tt.tensor{0.5, -2, 3}:requires_grad_()
  local c = tt.zeros(3)
  local loss = (w * c):std() + w:sum()
  loss:backward()
  close("upstream of a flat std: only the other path's gradient", w.grad, {1, 1, 1})
end

-- keepdim and a dim given as a name go through the same backward
do
  local x = tt.tensor{{5, 5}, {1, 2}}:named("R", "C"):requires_grad_()
  x:std("C", true):sum():backward()
  local g2 = std_grad{1, 2}
  close("std(C, keepdim)", x.grad, {{0, 0}, g2}, 1e-6)
end

-- ===== maximum, minimum, max, min: the gradient is selected, never
-- multiplied by a 0, so an inf gradient reaches the winner alone (it was
-- inf * 0 = NaN on the losing side, which spread to every upstream leaf)

-- elementwise min/max in float64: each side's share 1, 1/2 at a tie, 0
local function minmax_grad(a, b, g, is_max)
  local ga, gb = {}, {}
  for i = 1, #a do
    local wa = a[i] == b[i] and 0.5 or ((is_max and a[i] > b[i]) or (not is_max and a[i] < b[i])) and 1 or 0
    ga[i] = wa == 0 and 0 or g[i] * wa
    gb[i] = wa == 1 and 0 or g[i] * (1 - wa)
  end
  return ga, gb
end

do
  local inf = math.huge
  local w = {-inf, 0.5, -3, -1.25}
  local c = tt.tensor(-1.25):requires_grad_()
  local v = tt.tensor(w):requires_grad_()
  local m = c:minimum(v)
  ;(m * m):sum():backward()
  local y, g = {}, {}
  for i = 1, #w do y[i] = math.min(-1.25, w[i]); g[i] = 2 * y[i] end
  local gc, gv = minmax_grad({-1.25, -1.25, -1.25, -1.25}, w, g, false)
  close("minimum: the scalar side gets only where it won (and half the tie)", c.grad, gc[1] + gc[2] + gc[3] + gc[4])
  close("minimum: -inf's gradient stays on -inf", v.grad, gv)
end

do
  local inf = math.huge
  local a, b = {inf, 2, -1}, {1, inf, -1}
  local x, z = tt.tensor(a):requires_grad_(), tt.tensor(b):requires_grad_()
  local m = x:maximum(z)
  ;(m * m):sum():backward()
  local g = {}
  for i = 1, 3 do g[i] = 2 * math.max(a[i], b[i]) end
  local ga, gb = minmax_grad(a, b, g, true)
  close("maximum: inf gradient to the winner, 0 to the loser (a)", x.grad, ga)
  close("maximum: inf gradient to the winner, 0 to the loser (b)", z.grad, gb)
end

do   -- over a dim, with indices: all to the index chosen
  local x = tt.tensor{{1, math.huge, 2}, {4, 3, -1}}:requires_grad_()
  local v = x:max(2)
  ;(v * v):sum():backward()
  close("max(2): inf to the chosen element, 0 to the rest", x.grad, {{0, math.huge, 0}, {8, 0, 0}})
end

do   -- plain max: split among the ties; a NaN maximum belongs to the NaN
  local x = tt.tensor{1, 0 / 0, 3}:requires_grad_()
  x:max():backward()
  close("max() of a NaN: the gradient goes to the NaN element (PyTorch)", x.grad, {0, 1, 0})
  local z = tt.tensor{3, math.huge, math.huge}:requires_grad_()
  local m = z:min()
  ;(m * m):backward()
  close("min() with an inf elsewhere: inf * 0 is not made", z.grad, {6, 0, 0})
end

-- ===== a memory cap hit inside a backward's sum over broadcast dims is the
-- cap's error (it was a NULL dereference in sum_to: a segfault)
do
  local dir = T.tmpdir()
  local script = T.write(dir, "cap.lua", [[
local a = tt.randn(1, 100000):requires_grad_()
local b = tt.randn(8, 1):requires_grad_()
local y = (a + b):sum()
y:backward()
]])
  local worst, msg_ok = 0, true
  for kib = 4800, 5800, 50 do
    local _, err, code = T.run(dir, "-q --max-memory " .. kib .. "K " .. script)
    if code ~= 0 and code ~= 1 then worst = code end
    if code == 1 and not err:find("memory cap", 1, true) then msg_ok = false end
  end
  check("backward under a tight --max-memory: exit 0 or 1 at every cap, never a signal (got " .. worst .. ")", worst == 0)
  check("... and a failure is the cap's error", msg_ok)
end

-- ===== gelu at +-inf (difftest seed 29, program 80979): the derivative is
-- its limit, 0 at -inf and 1 at +inf, where torch's x * pdf(x) gives NaN
-- (inf * 0). Kept on purpose (tests/README.md): a masked position's gelu
-- gets a 0 upstream gradient, and 0 * NaN in torch makes every earlier
-- leaf's gradient NaN; here it stays 0.
do
  local inf = math.huge
  for _, approx in ipairs{"none", "tanh"} do
    local x = tt.tensor{-inf, inf, 0}:requires_grad_()
    x:gelu(approx):sum():backward()
    -- float64 reference: gelu'(0) = 0.5 (Phi(0) + 0 * pdf(0)) for both forms
    close("gelu(" .. approx .. ")'s gradient at -inf, +inf, 0: the limits 0, 1 and 0.5", x.grad, {0, 1, 0.5})
  end
  -- the difftest's program: masked log_softmax -> gelu -> masked softmax
  local c = tt.tensor{0.23739494383335114, -2.5390329360961914, 0.3921720087528229}:requires_grad_()
  local m = tt.tensor({true, true, false}, "bool")
  local w = tt.tensor{-1.5478566884994507, 0.2568829655647278, -0.706740140914917}
  local v = c:masked_fill(m, -inf):log_softmax(-1):gelu():masked_fill(m, -inf):softmax(-1)
  local loss = (v * w):sum()
  loss:backward()
  -- float64: log_softmax gives {-inf, -inf, 0}, gelu {nan, nan, 0}, the
  -- masked softmax {0, 0, 1}: the loss is w[3] and no path reaches c
  close("masked gelu chain: the loss is w[3]", loss, -0.706740140914917, 1e-6)
  close("masked gelu chain: c's gradient 0 (torch: NaN at c[3])", c.grad, {0, 0, 0})
end

-- ===== pow at exponent 0 and base 0 (difftest seed 30, program 67275):
-- PyTorch's pow_backward_self gives the base 0 where the exponent is 0
-- (a^0 is constant in a), and pow_backward_exponent gives the exponent 0
-- where the base is 0 and the exponent >= 0, each a selection, so a NaN
-- upstream gradient stops there. tt multiplied: NaN * 0 * a^-1 = NaN, and
-- 0 * log(0) = 0 * -inf = NaN.
do
  local nan, inf = 0 / 0, math.huge
  -- a^b, both tensors: g = {NaN, 1, 1}; the exponent 0 stops the NaN
  local a = tt.tensor{2, 3, 0.5}:requires_grad_()
  local b = tt.tensor{0, 1.5, 0}
  ;((a ^ b) * tt.tensor{nan, 1, 1}):sum():backward()
  -- float64: d/da = g b a^(b-1): {0 (exponent 0), 1.5 sqrt(3), 0}
  close("pow: the base's gradient is 0 where the exponent is 0, even for a NaN g", a.grad,
        {0, 1.5 * math.sqrt(3), 0}, 1e-6)
  -- the exponent's gradient at base 0: 0 for b >= 0; inf * log(0) for b < 0
  local x = tt.tensor{0, 0, 2, 0}
  local e = tt.tensor{2, 0, 1, -1}:requires_grad_()
  ;(x ^ e):sum():backward()
  -- float64: d/de = out log(x): 0^2 log 0 -> 0, 0^0 log 0 -> 0, 2 log 2, inf * -inf = -inf
  close("pow: the exponent's gradient at base 0 is 0 for exponent >= 0", e.grad, {0, 0, 2 * math.log(2), -inf}, 1e-6)
  -- a tensor to the scalar 0: a constant, the gradient 0 under a NaN g
  local c = tt.tensor{2, -1}:requires_grad_()
  ;((c ^ 0) * tt.tensor{nan, 1}):sum():backward()
  close("pow: a ^ 0's gradient is 0, even for a NaN g", c.grad, {0, 0})
  -- the scalar 0 to a tensor: 0^e is flat in e for e >= 0
  local f = tt.tensor{2, 0}:requires_grad_()
  ;(0 ^ f):sum():backward()
  close("pow: 0 ^ e's gradient is 0 for e >= 0", f.grad, {0, 0})
  -- the difftest's chain, reduced: a -inf masked log_softmax row {-inf, 0},
  -- a matmul that makes it inf, 1 / (v^2 + 0.5) whose backward is 0 * inf =
  -- NaN there (in torch too), then a power with exponent 0 in front
  local q = tt.tensor{{0.7, 0}}:requires_grad_()
  local m = tt.tensor({{true, false}}, "bool")
  local v = ((q * q + 0.5) ^ tt.tensor{{1, 0}}):masked_fill(m, -inf):log_softmax(-1)
  local u = tt.matmul(v, tt.tensor{{-1}, {2}})
  ;(1 / (u * u + 0.5)):sum():backward()
  -- float64: u = inf, so the gradient into log_softmax is NaN; the masked
  -- fill sends 0 to q[1], the exponent 0 sends 0 to q[2]
  close("masked log_softmax -> matmul -> pow^0 chain: q's gradient 0, as torch", q.grad, {{0, 0}})
end

T.report()
