-- test_gradcheck.lua — tt.gradcheck on every op with a gradient (lua/README.md,
-- Gradients), at awkward shapes, strided and broadcast inputs; that it
-- catches a wrong gradient; and every error it raises (fn failing,
-- returning a non-tensor or another shape, bad inputs and options).
local T = dofile("tests/lua/check.lua")
local check, checkerror = T.check, T.checkerror

tt.manual_seed(3)
local function leaf(t) return t:requires_grad_() end
local function randn(...) return leaf(tt.randn(...)) end
local function positive(...) return leaf(tt.rand(...) + 0.5) end
-- a strided leaf: the transpose of a contiguous tensor
local function strided(a, b) return leaf(tt.randn(b, a):mT()) end
-- values at least 0.1 apart (for ops with a kink: maximum, abs, max)
local function spaced(rows, cols, shift)
  local t = {}
  for i = 1, rows do
    t[i] = {}
    for j = 1, cols do t[i][j] = ((i * 7 + j * 5 + (shift or 0)) % (rows * cols + 1)) * 0.1 - 0.55 end
  end
  return leaf(tt.tensor(t))
end

local function gc(name, fn, inputs, opts)
  local ok, err = pcall(tt.gradcheck, fn, inputs, opts)
  if not ok then print("  " .. name .. ": " .. tostring(err)) end
  check("gradcheck " .. name, ok and err == true, 2)
end

-- elementwise, with broadcasting and numbers on either side
local a, b, row = strided(3, 5), randn(3, 5), randn(1, 5)
local p, q = positive(3, 5), positive(5)
gc("add broadcast", function(x, y) return x + y end, {a, row})
gc("sub", function(x, y) return x - y end, {a, b})
gc("number - x", function(x) return 2 - x end, {a})
gc("mul broadcast", function(x, y) return x * y end, {a, row})
gc("div", function(x, y) return x / y end, {a, p})
gc("number / x", function(x) return 3 / x end, {p})
gc("x / number", function(x) return x / 4 end, {a})
gc("pow", function(x, y) return x ^ y end, {p, q})
gc("x ^ number", function(x) return x ^ 2.5 end, {p})
gc("number ^ x", function(x) return 1.7 ^ x end, {a})
gc("neg", function(x) return -x end, {a})
gc("exp", function(x) return x:exp() end, {a})
gc("log", function(x) return x:log() end, {p})
gc("sqrt", function(x) return x:sqrt() end, {p})
gc("sin", function(x) return x:sin() end, {a})
gc("cos", function(x) return x:cos() end, {a})
gc("x:pow(y)", function(x, y) return x:pow(y) end, {p, q})
gc("where broadcast", function(x, y) return tt.where(a:gt(0), x, y) end, {b, row})
gc("norm", function(x) return x:norm() end, {a})
gc("norm 3 over dim 1", function(x) return x:norm(3, 1) end, {a})
gc("norm inf, keepdim", function(x) return x:norm(math.huge, 2, true) end, {spaced(3, 5)})
gc("flatten", function(x) return x:flatten() end, {a})
gc("unbind", function(x) return x:unbind(2)[4] end, {a})
gc("t", function(x) return x:t() end, {a})
gc("einops reduce mean", function(x) return tt.reduce(x, "(h n) d -> d n", "mean", {h = 1}) end, {a})
gc("einops reduce max", function(x) return tt.reduce(x, "n d -> n", "max") end, {spaced(3, 5)})
gc("einops repeat", function(x) return tt["repeat"](x, "n d -> d (r n)", {r = 2}) end, {a})
local s1, s2 = spaced(3, 4), spaced(3, 4, 3)
gc("abs", function(x) return x:abs() end, {s1})
gc("maximum", function(x, y) return x:maximum(y) end, {s1, s2})
gc("minimum", function(x, y) return x:minimum(y) end, {s1, s2})
gc("maximum with a number", function(x) return x:maximum(0.05) end, {s1})

-- reductions
local c3 = randn(2, 3, 4)
gc("sum", function(x) return x:sum() end, {c3})
gc("sum dim", function(x) return x:sum(2) end, {c3})
gc("mean dim keepdim", function(x) return x:mean(-1, true) end, {c3})
gc("mean", function(x) return x:mean() end, {a})
gc("max over a dim", function(x) local v = x:max(2); return v end, {s1})
gc("min over a dim, keepdim", function(x) local v = x:min(1, true); return v end, {s1})
gc("max", function(x) return x:max() end, {s1})
gc("std", function(x) return x:std() end, {c3})
gc("std dim", function(x) return x:std(2) end, {c3})
gc("var dim keepdim", function(x) return x:var(3, true) end, {c3})

-- linear algebra and attention pieces
gc("matmul", function(x, y) return x:matmul(y) end, {strided(3, 4), randn(4, 5)})
gc("matmul batched, broadcast", function(x, y) return x:matmul(y) end, {randn(2, 3, 4), strided(4, 2)})
gc("matmul 1-D @ 3-D", function(x, y) return x:matmul(y) end, {randn(4), randn(2, 4, 3)})
gc("softmax", function(x) return x:softmax(-1) end, {a})
gc("softmax dim 1", function(x) return x:softmax(1) end, {c3})
gc("masked_fill", function(x) return x:masked_fill(tt.causal_mask(3, 5), -2) end, {a})
gc("tril", function(x) return x:tril(-1) end, {a})
gc("triu", function(x) return x:triu(1) end, {c3})
gc("repeat_interleave", function(x) return x:repeat_interleave(3, 2) end, {c3})
gc("cat", function(x, y) return tt.cat({x, y, x}, 1) end, {a, randn(2, 5)})
gc("stack", function(x, y) return tt.stack({x, y}, 2) end, {a, b})
local sq, sk, sv = randn(2, 4, 3, 4), strided(5, 4), randn(5, 3)
gc("sdpa", function(x, y, z) return tt.sdpa(x, y, z) end, {randn(3, 4), sk, sv})
gc("sdpa causal GQA", function(x, y, z) return tt.sdpa(x, y, z, {causal = true}) end,
   {sq, randn(2, 2, 5, 4), randn(2, 2, 5, 3)})
gc("sdpa mask", function(x, y, z) return tt.sdpa(x, y, z, {mask = tt.causal_mask(3, 5, "upper_left"), scale = 0.7}) end,
   {randn(3, 4), sk, sv})

-- views, copies and patterns
gc("view", function(x) return x:contiguous():view(4, 6) * x:view(4, 6) end, {c3})
gc("reshape of a strided leaf", function(x) return x:reshape(15) * 2 end, {a})
gc("transpose, mT", function(x) return x:transpose(1, 3):mT() * 3 end, {c3})
gc("permute", function(x) return x:permute(3, 1, 2):exp() end, {c3})
gc("unsqueeze, expand", function(x) return x:unsqueeze(1):expand(4, 3, 5):exp() end, {a})
gc("squeeze", function(x) return x:squeeze(1):exp() end, {randn(1, 4)})
gc("narrow", function(x) return x:narrow(2, 2, 3):exp() end, {a})
gc("select, x[i]", function(x) return x:select(2, 3):exp() + x[2]:sum() end, {c3})
gc("chunk, some pieces unused", function(x)
  local parts = x:chunk(3, 2)
  return parts[1] * parts[3]
end, {leaf(tt.randn(7, 2):mT())})
gc("split, a piece used twice", function(x)
  local parts = x:split(2, 2)
  return tt.cat({parts[4], parts[1], parts[1]}, 2):exp()
end, {strided(3, 7)})
gc("named", function(x) return x:named("B", "N", "D"):softmax("N") end, {c3})
gc("contiguous, clone", function(x) return x:contiguous():clone():exp() end, {a})
gc("rearrange split, permute", function(x) return tt.rearrange(x, "b s (h d) -> b h s d", {h = 2}):exp() end, {c3})
gc("rearrange merge", function(x) return tt.rearrange(x, "b s d -> (d b) s") * x:sum() end, {c3})
gc("einsum attention", function(x, y) return tt.einsum("b i d, b j d -> b i j", x, y) end,
   {randn(2, 3, 4), leaf(tt.randn(2, 4, 5):mT())})
gc("einsum '...' broadcast", function(x, y) return tt.einsum("... i d, ... j d -> ... i j", x, y) end,
   {randn(2, 1, 3, 4), randn(3, 5, 4)})
gc("einsum trace", function(x) return tt.einsum("i i ->", x) end, {randn(4, 4)})
gc("einsum letters, three operands", function(x, y, z) return tt.einsum("ij,jk,kl->li", x, y, z) end,
   {randn(3, 4), strided(4, 2), randn(2, 5)})
gc("a chain: attention by hand", function(x, y, z)
  local scores = x:matmul(y:mT()) / 2
  return scores:masked_fill(~tt.causal_mask(3, 5), -1e9):softmax(-1):matmul(z)
end, {randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 3)})

-- non-tensor arguments of fn pass through; int64/bool inputs never require grad
gc("a mask among the inputs", function(x, m) return x:masked_fill(m, 0) end, {a, tt.causal_mask(3, 5)})

-- options, and what gradcheck leaves behind
check("options", tt.gradcheck(function(x) return x:exp() end, {a}, {eps = 1e-3, atol = 1e-2, rtol = 0}))
local g0 = tt.ones(3, 5)
a.grad = g0
local before = a:detach():clone()
tt.manual_seed(9)
local r1 = tt.randn(4)
tt.manual_seed(9)
tt.gradcheck(function(x) return x * x end, {a})
local r2 = tt.randn(4)
check("the inputs' grad left as they were", a.grad ~= nil and tt.allclose(a.grad, g0))
check("the inputs' values left as they were", tt.allclose(a:detach(), before, 0, 0))
check("tt.randn's stream untouched", tt.allclose(r1, r2, 0, 0))
a.grad = nil

-- a wrong gradient: x * x:detach() has analytic gradient x, numeric 2x
local w = leaf(tt.tensor({{0.5, 1.0}, {-1.5, 2.0}}))
local msg = checkerror({"gradcheck: input 1 [2,2], element 1 [1,1]: analytic ", " vs numeric ",
                        "atol 0.01 + rtol 0.01 * |numeric|", "eps 0.01"},
                       function() return tt.gradcheck(function(x) return x * x:detach() end, {w}) end)
-- both are of sum(y * weights): their ratio is the rule's, 1/2
local ana, num = msg:match("analytic (%S+) vs numeric (%S+)")
check("the values named are analytic and numeric", ana and math.abs(tonumber(ana) / tonumber(num) - 0.5) < 1e-3)
check("a failing check restores the input", tt.allclose(w:detach(), tt.tensor({{0.5, 1.0}, {-1.5, 2.0}}), 0, 0))
checkerror({"gradcheck: input 2 [2,2], element 3 [2,1]"},
           function() return tt.gradcheck(function(x, y) return x + y * y:detach() end,
                                          {randn(2, 2), leaf(tt.tensor({{0, 0}, {3, 0}}))}) end)

-- errors: fn's failures, bad inputs and options; none may crash
checkerror({"gradcheck: fn raised an error:", "boom"},
           function() return tt.gradcheck(function() error("boom") end, {a}) end)
checkerror({"gradcheck: fn raised an error:", "matmul"},
           function() return tt.gradcheck(function(x) return x:matmul(x) end, {a}) end)
local calls = 0
checkerror({"gradcheck: fn raised an error:", "late"},
           function() return tt.gradcheck(function(x) calls = calls + 1; if calls > 3 then error("late") end; return x * 2 end, {a}) end)
check("fn failing mid-way restores the input", tt.allclose(a:detach(), before, 0, 0))
checkerror({"gradcheck: fn must return a tensor, got number"},
           function() return tt.gradcheck(function() return 3 end, {a}) end)
checkerror({"gradcheck: fn must return a tensor, got nil"},
           function() return tt.gradcheck(function() end, {a}) end)
checkerror({"gradcheck: fn returned a bool tensor [3,5]; gradients need float32"},
           function() return tt.gradcheck(function(x) return x:gt(0) end, {a}) end)
local n = 0
checkerror({"gradcheck: fn returned [3,5] on the first call but [15] on a later one", "hint:"},
           function() return tt.gradcheck(function(x) n = n + 1; return n == 1 and x * 1 or x:reshape(15) end, {a}) end)
checkerror({"gradcheck: fn's result [3,5] does not require grad"},
           function() return tt.gradcheck(function(x) return x:detach() * 2 end, {a}) end)
checkerror({"gradcheck: fn's result [3,5] does not require grad"},
           function() return tt.no_grad(tt.gradcheck, function(x) return x * 2 end, {a}) end)
check("grad mode back on after an error", (a * 2).requires_grad)
checkerror({"gradcheck: no input requires grad", "hint: x:requires_grad_()"},
           function() return tt.gradcheck(function(x) return x * 2 end, {tt.ones(2)}) end)
checkerror({"gradcheck: inputs[2] is a string, not a tensor"},
           function() return tt.gradcheck(function(x) return x end, {a, "b"}) end)
checkerror({"gradcheck: inputs is an empty list"},
           function() return tt.gradcheck(function() return a end, {}) end)
checkerror({"bad argument #2 to 'gradcheck' (table expected, got tt.Tensor)"},
           function() return tt.gradcheck(function(x) return x end, a) end)
checkerror({"bad argument #1 to 'gradcheck' (function expected, got nil)"},
           function() return tt.gradcheck(nil, {a}) end)
checkerror({"gradcheck: input 1 [4,3] has elements that share memory (an expand)", "hint:"},
           function() return tt.gradcheck(function(x) return x end, {tt.ones(3):expand(4, 3):requires_grad_()}) end)
checkerror({"gradcheck: input 1 was closed by fn"},
           function() local u = randn(2); return tt.gradcheck(function(x) local c <close> = x; return u * 1 end, {u}) end)
checkerror({"gradcheck: fn raised an error:", "tensor was closed"},
           function() local k = 0
             return tt.gradcheck(function(x) k = k + 1; if k == 3 then local c <close> = x end; return x * 2 end, {randn(2)}) end)
checkerror({"gradcheck: fn returned a closed tensor"},
           function() return tt.gradcheck(function(x) local r = x * 1; local c <close> = r; return r end, {a}) end)
checkerror({"gradcheck: opts.eps must be a positive number, got 0"},
           function() return tt.gradcheck(function(x) return x end, {a}, {eps = 0}) end)
checkerror({"gradcheck: opts.atol must be a non-negative number, got -1"},
           function() return tt.gradcheck(function(x) return x end, {a}, {atol = -1}) end)
checkerror({"gradcheck", "epsilon"},
           function() return tt.gradcheck(function(x) return x end, {a}, {epsilon = 1e-3}) end)

T.report()
