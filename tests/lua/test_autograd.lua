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
local once = (x * 2):sum()
once:backward()
checkerror({"backward: the graph was freed by an earlier backward()", "hint: run the forward again"},
           function() once:backward() end)
checkerror({"requires_grad_: only float32 tensors can require gradients, got bool [2]", "hint: x:float()"},
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

T.report()
