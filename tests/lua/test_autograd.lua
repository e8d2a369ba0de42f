-- test_autograd.lua — the Lua face of gradients: requires_grad_, the
-- fields requires_grad, grad and grad_fn, backward, detach, tt.no_grad,
-- and every error a script can cause (op, shapes, line and hint).
local T = dofile("tests/lua/check.lua")
local check, close, checkerror = T.check, T.close, T.checkerror

-- fields and a first backward
local x = tt.tensor({{1, 2, 3}, {4, 5, 6}})
check("requires_grad: false at first", x.requires_grad == false)
check("requires_grad_ returns x", x:requires_grad_() == x)
check("requires_grad: true", x.requires_grad == true)
check("grad: nil until backward", x.grad == nil)
check("grad_fn: nil for a leaf", x.grad_fn == nil)
local y = (x * x):sum()
check("grad_fn: a name", y.grad_fn == "SumBackward")
check("grad_fn of mul", (x * 2).grad_fn == "MulBackward")
y:backward()
close("grad of sum(x*x)", x.grad, {{2, 4, 6}, {8, 10, 12}})

-- accumulation across backwards, then cleared by assignment
local y2 = (x * 3):sum()
y2:backward()
close("grads accumulate", x.grad, {{5, 7, 9}, {11, 13, 15}})
x.grad = nil
check("grad assigned nil", x.grad == nil)
x.grad = tt.ones(2, 3)
close("grad assigned a tensor", x.grad, {{1, 1, 1}, {1, 1, 1}})
x.grad = nil

-- backward with an explicit gradient; broadcasting reduced back
local b = tt.tensor({10, 20, 30}):requires_grad_()
local z = x * b
z:backward(tt.ones(2, 3))
close("broadcast grad of b", b.grad, {5, 7, 9})
close("grad of x", x.grad, {{10, 20, 30}, {10, 20, 30}})
x.grad = nil

-- views, matmul, softmax through the chain
local w = tt.tensor({{1, 0}, {0, 1}, {1, 1}}):requires_grad_()
local out = x:mT():mT():matmul(w):softmax(2):sum()
out:backward()
close("softmax rows sum to 1: zero grad", w.grad, {{0, 0}, {0, 0}, {0, 0}}, 1e-5)

-- detach and no_grad
check("detach: outside the graph", x:detach().requires_grad == false)
local r, n = tt.no_grad(function(a) return a * 2, 5 end, x)
check("no_grad: not recorded", r.requires_grad == false and r.grad_fn == nil)
check("no_grad: results returned", n == 5)
checkerror({"boom"}, tt.no_grad, function() error("boom") end)
check("no_grad: mode restored after an error", (x * 2).requires_grad == true)

-- comparisons give bool, never requiring grad
check("bool result", (x:gt(0)).requires_grad == false)

-- errors
checkerror({"backward: grad can be implicitly created only for scalar outputs; got [2,3]",
            "hint: y:sum():backward() or y:backward(g)", "test_autograd.lua:"},
           function() (x * 2):backward() end)
local once = (x * x):sum()
once:backward()
checkerror({"backward: trying to backward through the graph a second time", "mul's saved tensors were freed",
            "hint: y:backward(nil, {retain_graph = true}) the first time keeps them, or run the forward again"},
           function() once:backward() end)
checkerror({"requires_grad_: only float tensors (float32, bfloat16, float16) can require gradients, got bool [2]", "hint: x:float()"},
           function() tt.tensor({true, false}):requires_grad_() end)
checkerror({"backward: [] does not require grad and has no grad_fn", "hint: x:requires_grad_()"},
           function() tt.tensor({1, 2}):sum():backward() end)
checkerror({"backward: grad must be float32 shaped as the output [2,3], got float32 [3]"},
           function() (x * 2):backward(tt.ones(3)) end)
checkerror({"grad: expects float32 [2,3]", "got float32 [3]"}, function() x.grad = tt.ones(3) end)
checkerror({"tensor: cannot set field 'foo'", "hint: only x.grad can be assigned"}, function() x.foo = 1 end)
local q = tt.randn(1, 2, 4):requires_grad_()
local both = tt.einsum("b i d, b j d -> b i j", q, q)
check("einsum: grad_fn", both.grad_fn == "EinsumBackward")
both:sum():backward()
close("einsum of one tensor twice: 2 * sum of the rows", q.grad, (q:detach():sum(2, true) * 2):expand(1, 2, 4):totable())

-- sdpa: the fused backward fills every input's grad; its weights have none
local kq, kk, kv = tt.randn(2, 4, 5, 8):requires_grad_(), tt.randn(2, 2, 6, 8):requires_grad_(),
                   tt.randn(2, 2, 6, 3):requires_grad_()
tt.sdpa(kq, kk, kv, {causal = true}):sum():backward()
check("sdpa: q.grad", kq.grad ~= nil and table.concat(kq.grad:shape(), ",") == table.concat(kq:shape(), ","))
check("sdpa: k.grad (summed over its 2 query heads)", kk.grad ~= nil and table.concat(kk.grad:shape(), ",") == table.concat(kk:shape(), ","))
check("sdpa: v.grad", kv.grad ~= nil and table.concat(kv.grad:shape(), ",") == table.concat(kv:shape(), ","))
-- v.grad sums the weights of every row that sees a key: 2 batches x 2 kv
-- heads x (2 query heads x 5 rows) x 3 columns
check("sdpa: v.grad sums the weights", math.abs(kv.grad:sum():item() - 120) < 1e-3)
local _, w = tt.sdpa(kq, kk, kv, {weights = true})
checkerror({"backward: sdpa's weights output has no gradient in tensortrace", "hint:"},
           function() w:sum():backward() end)

-- the activations and log_softmax: values and gradients against Lua's own
-- float64 formulas, on a transposed (strided) input; gelu against central
-- differences of the op (erf is no Lua function)
local xs = {{-6, -2.5, -0.75, -0.01}, {0.02, 0.4, 1.5, 7}, {-1, 3, -3.5, 2}}
local xt = tt.tensor(xs):mT()                      -- [4,3], strided
local wv = {{0.5, -1, 2}, {1, 0.25, -0.5}, {-2, 1, 1}, {0.75, -0.3, 1.5}}
local function sig(v) return 1 / (1 + math.exp(-v)) end
local function th(v) return 2 * sig(2 * v) - 1 end
local function gelu_t(v) return 0.5 * v * (1 + th(0.7978845608028654 * (v + 0.044715 * v ^ 3))) end
local function map(f) local r = {} for i = 1, 4 do r[i] = {} for j = 1, 3 do r[i][j] = f(xs[j][i], wv[i][j]) end end return r end
local acts = {
  {"relu", function(v) return v > 0 and v or 0 end, function(v) return v > 0 and 1 or 0 end, "ReluBackward"},
  {"tanh", th, function(v) return 1 - th(v) ^ 2 end, "TanhBackward"},
  {"sigmoid", sig, function(v) return sig(v) * (1 - sig(v)) end, "SigmoidBackward"},
  {"gelu", gelu_t, nil, "GeluTanhBackward", "tanh"},
}
for _, a in ipairs(acts) do
  local name, f, df, fn, form = a[1], a[2], a[3], a[4], a[5]
  local x0 = xt:detach():requires_grad_()
  local y = form and x0:gelu(form) or x0[name](x0)
  close(name .. (form or "") .. ": values", y, map(function(v) return f(v) end), 2e-6)
  check(name .. ": grad_fn " .. fn, y.grad_fn == fn)
  y:backward(tt.tensor(wv))
  if df then close(name .. ": gradient", x0.grad, map(function(v, g) return g * df(v) end), 2e-6) end
end
close("gelu exact: values", tt.tensor({-1, 0, 1, 2, -3}):gelu(),
      {-0.15865525393145707, 0, 0.8413447460685429, 1.9544997361036416, -0.0040496940948904}, 2e-7)
close("gelu 'none' is the exact form", tt.tensor({0.3}):gelu("none"), {0.3 * 0.6179114221889526}, 1e-6)
-- both gelu forms and gelu tanh's gradient: central differences of the op
for _, form in ipairs({"none", "tanh"}) do
  local x0 = xt:detach():requires_grad_()
  x0:gelu(form):backward(tt.tensor(wv))
  local want = map(function(v, g)
    local h = 1e-2
    local up, dn = tt.tensor({v + h}):gelu(form):item(), tt.tensor({v - h}):gelu(form):item()
    return g * (up - dn) / (2 * h)
  end)
  close("gelu " .. form .. ": gradient vs central differences", x0.grad, want, 2e-3)
end
local r0 = tt.tensor({0, -0.5, 0.5}):requires_grad_()
r0:relu():sum():backward()
close("relu: gradient 0 at 0 (PyTorch)", r0.grad, {0, 0, 1})

-- log_softmax over each dim of the strided input: values, gradient
-- g - softmax * sum(g); a row of all -inf is NaN, as softmax
for _, d in ipairs({1, 2, -1}) do
  local x0 = xt:detach():requires_grad_()
  local y = x0:log_softmax(d)
  check("log_softmax: grad_fn", y.grad_fn == "LogSoftmaxBackward")
  local dd = d < 0 and 2 or d
  local function row(i, j) -- the entries sharing (i, j)'s line along dd
    local r = {}
    for k = 1, (dd == 1 and 4 or 3) do r[k] = dd == 1 and {k, j} or {i, k} end
    return r
  end
  local vals, grads = {}, {}
  for i = 1, 4 do
    vals[i], grads[i] = {}, {}
    for j = 1, 3 do
      local m, s, sg = -math.huge, 0, 0
      for _, p in ipairs(row(i, j)) do m = math.max(m, xs[p[2]][p[1]]) end
      for _, p in ipairs(row(i, j)) do s = s + math.exp(xs[p[2]][p[1]] - m); sg = sg + wv[p[1]][p[2]] end
      vals[i][j] = xs[j][i] - m - math.log(s)
      grads[i][j] = wv[i][j] - math.exp(vals[i][j]) * sg
    end
  end
  close("log_softmax dim " .. d .. ": values", y, vals, 2e-6)
  y:backward(tt.tensor(wv))
  close("log_softmax dim " .. d .. ": gradient", x0.grad, grads, 2e-6)
end
local ninf = -math.huge
close("log_softmax: -inf stays -inf, an all -inf row is NaN, huge stays finite",
      tt.tensor({{ninf, 0, ninf}, {ninf, ninf, ninf}, {3e38, -3e38, 3e38}}):log_softmax(2),
      {{ninf, 0, ninf}, {0 / 0, 0 / 0, 0 / 0}, {-math.log(2), ninf, -math.log(2)}})

-- their errors
checkerror({"bad argument #1 to 'gelu' (approximate must be 'none' or 'tanh', got 'fast')", "test_autograd.lua:"},
           function() return xt:gelu("fast") end)
checkerror({"relu: expects float32, got bool [2]", "hint: x:float()"}, function() return tt.tensor({true, false}):relu() end)
checkerror({"gelu_tanh: expects float32, got bool [2]"}, function() return tt.tensor({true, false}):gelu("tanh") end)
checkerror({"sigmoid: expects float32, got bool [2]"}, function() return tt.tensor({true, false}):sigmoid() end)
checkerror({"tanh: expects float32, got bool [2]"}, function() return tt.tensor({true, false}):tanh() end)
checkerror({"log_softmax: expects float32, got bool [2]", "hint: x:float()"},
           function() return tt.tensor({true, false}):log_softmax(1) end)
checkerror({"log_softmax: dim is required for [4,3]", "hint: attention normalises over the keys, x:log_softmax(-1)"},
           function() return xt:log_softmax() end)
checkerror({"log_softmax: dim 3 out of range for [4,3] (expected 1..2 or -2..-1)", "test_autograd.lua:"},
           function() return xt:log_softmax(3) end)

T.report()
