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

T.report()
