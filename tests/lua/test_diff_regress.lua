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

T.report()
