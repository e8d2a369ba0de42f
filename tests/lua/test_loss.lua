-- test_loss.lua — tt.cross_entropy from Lua: values against a plain-Lua
-- reference, each reduction, ignore_index, [C] logits, tt.gradcheck
-- (strided logits, each reduction), the trace row, and every error with
-- its message (the float64 kernel tests are tests/test_loss.c).
local T = dofile("tests/lua/check.lua")
local check, close, checkerror = T.check, T.close, T.checkerror

tt.manual_seed(5)
-- the loss of one row in plain Lua: log-sum-exp - x[t]
local function row_loss(row, t)
  local m = -math.huge
  for _, v in ipairs(row) do m = math.max(m, v) end
  local s = 0
  for _, v in ipairs(row) do s = s + math.exp(v - m) end
  return m + math.log(s) - row[t]
end

local logits = tt.randn(4, 5)
local rows = logits:totable()
local targets = tt.tensor({2, 5, 1, 3}, "int64")
local want, total = {}, 0
for i, t in ipairs({2, 5, 1, 3}) do want[i] = row_loss(rows[i], t); total = total + want[i] end
close("reduction none", tt.cross_entropy(logits, targets, {reduction = "none"}), want)
close("reduction sum", tt.cross_entropy(logits, targets, {reduction = "sum"}), total)
close("reduction mean (default)", tt.cross_entropy(logits, targets), total / 4)
check("mean is 0-d", tt.cross_entropy(logits, targets):dim() == 0)

-- ignore_index: the row counts nowhere; mean over the other three
local ign = tt.tensor({2, -100, 1, 3}, "int64")
close("ignore_index -100 (default)", tt.cross_entropy(logits, ign), (total - want[2]) / 3)
close("ignore_index given", tt.cross_entropy(logits, targets, {ignore_index = 5}), (total - want[2]) / 3)
close("none: ignored row is 0", tt.cross_entropy(logits, ign, {reduction = "none"}), {want[1], 0, want[3], want[4]})
local nan = tt.cross_entropy(logits, tt.full({4}, -100):long()):item()
check("all ignored with mean: NaN", nan ~= nan)

-- [C] logits with one target, as PyTorch
close("[C] logits, 0-d target", tt.cross_entropy(logits[1], tt.tensor(2, "int64")), want[1])
close("[C] logits, [1] target", tt.cross_entropy(logits[1], tt.tensor({2}, "int64")), want[1])

-- the usual [B, T, C] -> [B*T, C] reshape
local lm = tt.randn(2, 3, 7)
local next_tok = tt.randint(1, 8, 2, 3)
local flat = tt.cross_entropy(lm:reshape(-1, 7), next_tok:reshape(-1))
check("reshaped [B,T,C] logits", flat:dim() == 0 and flat:item() > 0)

-- gradients: tt.gradcheck on strided logits, each reduction, an ignored row
local x = tt.randn(6, 4):mT():requires_grad_()           -- [4, 6], transposed
local t4 = tt.tensor({6, 1, -100, 3}, "int64")
for _, red in ipairs({"mean", "sum", "none"}) do
  local ok, err = pcall(tt.gradcheck, function(a) return tt.cross_entropy(a, t4, {reduction = red}) end, {x})
  if not ok then print("  " .. tostring(err)) end
  check("gradcheck cross_entropy " .. red, ok and err == true)
end
local v = tt.randn(9):requires_grad_()
check("gradcheck cross_entropy [C]", tt.gradcheck(function(a) return tt.cross_entropy(a, tt.tensor(9, "int64")) end, {v}))

-- the backward's formula: (softmax - onehot) / count, zero where ignored
local y = tt.tensor({{1, 2, 3}, {0.5, -1, 4}}):requires_grad_()
local loss = tt.cross_entropy(y, tt.tensor({3, -100}, "int64"))
check("grad_fn name", loss.grad_fn == "CrossEntropyBackward")
loss:backward()
local e = {math.exp(1), math.exp(2), math.exp(3)}
local s = e[1] + e[2] + e[3]
close("gradient", y.grad, {{e[1] / s, e[2] / s, e[3] / s - 1}, {0, 0, 0}})

-- huge logits stay exact; -inf elsewhere is fine
close("huge logits", tt.cross_entropy(tt.tensor({{1e30, -1e30, -math.huge, 1e30}}), tt.tensor({1}, "int64")), math.log(2))

-- errors, each naming the op and what is wrong
local here = "test_loss.lua:"
checkerror({"cross_entropy: targets must be int64 class indices, got float32 [4]", "hint: targets:long()", here},
           function() return tt.cross_entropy(logits, tt.tensor({1, 2, 3, 4})) end)
checkerror({"cross_entropy: logits [2,3,7] must be [N, C] or [C]",
            "hint: with the classes last, logits:reshape(-1, C), targets:reshape(-1)"},
           function() return tt.cross_entropy(lm, next_tok) end)
checkerror({"cross_entropy: target 0 out of range 1..5 (row 2; ignore_index is -100)",
            "hint: class indices count from 1"},
           function() return tt.cross_entropy(logits, tt.tensor({1, 0, 1, 1}, "int64")) end)
checkerror({"cross_entropy: target 6 out of range 1..5 (row 4"},
           function() return tt.cross_entropy(logits, tt.tensor({1, 1, 1, 6}, "int64")) end)
checkerror({"cross_entropy: targets [3] do not match logits [4,5]"},
           function() return tt.cross_entropy(logits, tt.tensor({1, 1, 1}, "int64")) end)
checkerror({"cross_entropy: logits must be float32, got int64 [4]", "hint: logits:float()"},
           function() return tt.cross_entropy(targets, tt.tensor(1, "int64")) end)
checkerror({'cross_entropy: reduction must be "mean", "sum" or "none", got "avg"'},
           function() return tt.cross_entropy(logits, targets, {reduction = "avg"}) end)
checkerror({"cross_entropy: ignore_index must be an integer, got string"},
           function() return tt.cross_entropy(logits, targets, {ignore_index = "x"}) end)
checkerror({"cross_entropy", "reductio"},
           function() return tt.cross_entropy(logits, targets, {reductio = "sum"}) end)

T.report()
