-- test_habits.lua — what a PyTorch user writes first (issue 30): x.shape,
-- comparison operators, x[{i, j}], names() without holes, and the functions
-- tt.where, sin, cos, pow, flatten, unbind, t, any, all, isnan, norm,
-- tt.softmax, each against float64 references on non-contiguous inputs of
-- awkward sizes, with gradients checked against finite differences.
local T = dofile("tests/lua/check.lua")
local check, close, checkerror = T.check, T.close, T.checkerror

-- Plain Lua values of x, flat and row-major (the float64 side).
local function flat(x)
  local out = {}
  local function walk(v)
    if type(v) == "table" then for i = 1, #v do walk(v[i]) end else out[#out + 1] = v end
  end
  walk(x:totable())
  return out
end

-- A nested table of the shape given, from a flat list.
local function nest(list, shape)
  local pos = 0
  local function build(d)
    if d > #shape then pos = pos + 1; return list[pos] end
    local t = {}
    for i = 1, shape[d] do t[i] = build(d + 1) end
    return t
  end
  return build(1)
end

local function map(x, f)
  local v = flat(x)
  for i = 1, #v do v[i] = f(v[i]) end
  return nest(v, x:shape())
end

-- A non-contiguous [5,7] view (a transpose of [7,5]) and a [3,1,17] one
-- (every other column of [3,1,34]).
tt.manual_seed(3)
local A = tt.randn(7, 5):mT()
local B = tt.randn(3, 1, 34):narrow(3, 1, 17)
check("inputs are not contiguous", not A:is_contiguous())

-- ===== x.shape =====
check("x.shape is the sizes", A.shape[1] == 5 and A.shape[2] == 7 and #A.shape == 2)
check("x.shape prints as [5,7]", tostring(A.shape) == "[5,7]")
check("x:shape() prints as [5,7]", tostring(A:shape()) == "[5,7]")
check("x.shape() is the same", tostring(A.shape()) == "[5,7]")
check("x:size() is the shape", tostring(A:size()) == "[5,7]" and A:size(2) == 7)
check("0-d shape prints as []", tostring(tt.tensor(1).shape) == "[]")
check("shapes compare by value", A.shape == tt.zeros(5, 7).shape and A.shape == {5, 7})
check("different shapes differ", A.shape ~= B.shape and A.shape ~= {7, 5} and A.shape ~= {5})
check(".. joins a shape", "q " .. A.shape == "q [5,7]" and A.shape .. "!" == "[5,7]!")
checkerror({"x.T is PyTorch's", "x:t()", "x:mT()"}, function() return A.T end)
checkerror({"x.ndim is PyTorch's", "x:dim()"}, function() return A.ndim end)
check("other unknown fields stay nil", A.foo == nil)
check("table.concat still works", table.concat(A:shape(), "x") == "5x7")
check("tt.zeros takes a shape", tt.zeros(A.shape).shape == A.shape)
-- ===== comparison operators =====
checkerror({"lt:", "[5,7] < [5,7]", "one boolean", "x:lt(y) for x < y"}, function() return A < A end)
checkerror({"le:", "[5,7] <= number", "x:le(y) for x <= y", "x:ge(y) for x >= y"}, function() return A <= 0 end)
-- a > b is Lua's b < a: the message shows the operands in that order, and says so
checkerror({"lt:", "number < [5,7]", "x:gt(y) for x > y", "Lua runs x > y as y < x"}, function() return A > 0 end)
checkerror({"le:", "[3,1,17] <= [5,7]", "Lua runs x >= y as y <= x"}, function() return A >= B end)
check("== on tensors is identity", A == A and not (A == A:view(5, 7)))

-- ===== x[{...}] =====
local At = A:totable()
check("x[{i, j}] is the element", A[{2, 3}]:item() == At[2][3])
check("x[{i, j}] is 0-d", A[{2, 3}]:dim() == 0)
check("x[{-1, -1}] counts from the end", A[{-1, -1}]:item() == At[5][7])
close("x[{i}] is x[i]", A[{4}], At[4], 0)
close("x[{{2, 4}, 7}] ranges then selects", A[{{2, 4}, 7}], {At[2][7], At[3][7], At[4][7]}, 0)
close("x[{{}, 2}] keeps a whole dim", A[{{}, 2}], {At[1][2], At[2][2], At[3][2], At[4][2], At[5][2]}, 0)
close("x[{{4}, {-2, -1}}]: from 4 on, the last two", A[{{4}, {-2, -1}}], {{At[4][6], At[4][7]}, {At[5][6], At[5][7]}}, 0)
check("x[{...}] is a view", A[{{2, 4}, 7}]:shares_storage(A))
check("x[{}] is x", A[{}].shape == A.shape)
check("an empty range", A[{{3, 2}}].shape == {0, 7})
checkerror({"index", "entry 2: index 0 is outside dim 2 of [5,7]", "Lua counts from 1"}, function() return A[{1, 0}] end)
checkerror({"index", "entry 2: index 8 is outside dim 2 of [5,7] (valid 1..7 or -7..-1)"}, function() return A[{1, 8}] end)
checkerror({"index", "entry 1: index -6 is outside dim 1 of [5,7]"}, function() return A[{-6}] end)
checkerror({"index", "range {1, 9} is outside dim 2 of [5,7] (size 7)"}, function() return A[{{2, 3}, {1, 9}}] end)
checkerror({"index", "3 indices for [5,7]"}, function() return A[{1, 1, 1}] end)
checkerror({"index", "range {0, 2}", "dim 1", "Lua counts from 1"}, function() return A[{{0, 2}}] end)
checkerror({"index", "range {2, 6}", "size 5"}, function() return A[{{2, 6}}] end)
checkerror({"index", "entry 2", "integer or a range", "string"}, function() return A[{1, "x"}] end)
checkerror({"index", "entry 1", "1.5"}, function() return A[{1.5}] end)
checkerror({"index", "x[t]", "index_select", "tt.where"}, function() return A[A:gt(0)] end)
checkerror({"index", "x[...] = v is not supported", "tt.where(mask, v, x)"}, function() A[{1, 2}] = 0 end)
checkerror({"index", "x[...] = v is not supported"}, function() A[1] = 0 end)
checkerror({"cannot set field 'foo'"}, function() A.foo = 0 end)

-- ===== names() =====
local named = tt.zeros(2, 3, 4):named("B", nil, "D")
check("names() has no holes", table.concat(named:names(), ",") == "B,_,D")
check("names() keeps n", named:names().n == 3)
check("named takes '_' as unnamed", table.concat(named:named("_", "N", "_"):names(), ",") == "_,N,_")
check("names round-trip through named", table.concat(named:named(named:names()):names(), ",") == "B,_,D")

-- ===== elementwise: sin, cos, pow, isnan =====
close("x:add, x:sub, x:mul, x:div, x:neg", A:add(B:narrow(3, 1, 7):select(1, 1)):sub(1):mul(2):div(4):neg(),
  (function()
    local a, b, out = flat(A), flat(B:narrow(3, 1, 7):select(1, 1)), {}
    for i = 1, 35 do out[i] = -(((a[i] + b[(i - 1) % 7 + 1]) - 1) * 2 / 4) end
    return nest(out, {5, 7})
  end)(), 1e-6)
check("x:mul(y) is x * y (one row, the same op)", A:mul(3).grad_fn == nil and tt.allclose(A:mul(A), A * A, 0, 0))
close("sin", A:sin(), map(A, math.sin), 2e-7)
close("cos", B:cos(), map(B, math.cos), 2e-7)
close("pow (method)", A:abs():pow(1.5), map(A, function(v) return math.abs(v) ^ 1.5 end), 1e-6)
close("pow with a tensor exponent", A:abs():pow(A), nest((function()
  local a, out = flat(A), {}
  for i = 1, #a do out[i] = math.abs(a[i]) ^ a[i] end
  return out
end)(), {5, 7}), 1e-6)
local specials = tt.tensor({0 / 0, 1, math.huge, -math.huge, 0, -(0 / 0)})
close("isnan", specials:isnan():float(), {1, 0, 0, 0, 0, 1}, 0)
check("isnan of a view", A:isnan():any():item() == false)
check("isnan of int64 and bool", tt.tensor({1, 2}, "int64"):isnan():dtype() == "bool"
  and not tt.tensor({true}):isnan():any():item())
checkerror({"sin", "expects float32", "bool"}, function() return A:gt(0):sin() end)

-- ===== tt.where =====
local cond = B:gt(0)
local C = tt.randn(17) * 3
local function where_ref(c, a, b)
  local cf, af, bf = flat(c), flat(a), flat(b)
  local out = {}
  for i = 1, #cf do out[i] = cf[i] and af[i] or bf[i] end
  return out
end
local Cx = C:view(1, 1, 17):expand(3, 1, 17)
close("where broadcasts cond [3,1,17], a [3,1,17], b [17]", tt.where(cond, B, C),
  nest(where_ref(cond, B, Cx), {3, 1, 17}), 0)
close("where with a number", tt.where(cond, B, 0), nest(where_ref(cond, B, B * 0), {3, 1, 17}), 0)
close("where with the number first", tt.where(cond, -1, B), nest(where_ref(cond, (B * 0 - 1), B), {3, 1, 17}), 0)
local keeps = tt.where(tt.tensor({true, false, true, false}), tt.tensor({-0.0, 1, 0 / 0, 2}),
  tt.tensor({5, -0.0, 7, math.huge}))
local kt = keeps:totable()
check("where passes -0.0, NaN and inf exactly", 1 / kt[1] == -math.huge and 1 / kt[2] == -math.huge
  and kt[3] ~= kt[3] and kt[4] == math.huge)
check("where of bools", table.concat((function()
  local r = tt.where(tt.tensor({true, false}), tt.tensor({false, false}), tt.tensor({true, true})):totable()
  return {tostring(r[1]), tostring(r[2])}
end)(), ",") == "false,true")
check("where of int64", tt.where(tt.tensor({true, false}), tt.tensor({3, 4}, "int64"), 9):dtype() == "int64")
check("where's shape is the broadcast of all three",
  tt.where(tt.zeros(4, 1):bool(), tt.zeros(1, 3), tt.zeros(2, 1, 1)).shape == {2, 4, 3})
checkerror({"where", "condition must be bool", "float32"}, function() return tt.where(A, A, A) end)
checkerror({"where", "dtypes differ", "float32", "int64"}, function()
  return tt.where(A:gt(0), A, tt.zeros(5, 7, "int64")) end)
checkerror({"where", "argument 3", "string"}, function() return tt.where(A:gt(0), A, "x") end)
checkerror({"where", "[5,7]", "[3,1,17]"}, function() return tt.where(A:gt(0), A, B) end)

-- ===== any, all =====
local bits = tt.tensor({{false, false, false}, {true, false, true}, {true, true, true}}):mT()
close("any over dim 2 (of a transpose)", bits:any(2):float(), {1, 1, 1}, 0)
close("all over dim 1", bits:all(1):float(), {0, 0, 1}, 0)
close("any over dim 1, keepdim", bits:any(1, true):float(), {{0, 1, 1}}, 0)
check("any and all of everything", bits:any():item() and not bits:all():item() and bits:any():dim() == 0)
check("any/all of floats: nonzero, NaN included", specials:any():item() and not specials:all():item()
  and tt.tensor({0 / 0, 1}):all():item())
check("any of nothing is false, all of nothing true", not tt.zeros(0):any():item() and tt.zeros(0):all():item())
check("all over an empty dim", tt.zeros(2, 0):all(2):float():sum():item() == 2)

-- ===== norm =====
local function norm_ref(x, p)
  local v, s = flat(x), 0
  for i = 1, #v do
    if p == math.huge then s = math.max(s, math.abs(v[i])) else s = s + math.abs(v[i]) ^ p end
  end
  return p == math.huge and s or s ^ (1 / p)
end
close("norm (2)", A:norm(), norm_ref(A, 2), 2e-6)
close("norm 'fro'", A:norm("fro"), norm_ref(A, 2), 2e-6)
close("norm 1", B:norm(1), norm_ref(B, 1), 2e-6)
close("norm 3", B:norm(3), norm_ref(B, 3), 2e-6)
close("norm inf", A:norm(math.huge), norm_ref(A, math.huge), 0)
close("norm inf as 'inf'", A:norm("inf"), norm_ref(A, math.huge), 0)
local rows = {}
for i = 1, 5 do rows[i] = norm_ref(A[i], 2) end
close("norm over dim 2", A:norm(2, 2), rows, 2e-6)
close("norm over dim 2, keepdim", A:norm(2, -1, true), nest(rows, {5, 1}), 2e-6)
close("norm of int64", tt.tensor({3, 4}, "int64"):norm(), 5, 0)
checkerror({"norm", "p must be positive", "-1"}, function() return A:norm(-1) end)
checkerror({"norm", "p must be positive", "nan"}, function() return A:norm(0 / 0) end)
checkerror({"norm", "\"nuc\""}, function() return A:norm("nuc") end)
checkerror({"norm", "expects float32", "bool"}, function() return bits:norm() end)

-- ===== flatten, unbind, t =====
local F = tt.randn(2, 3, 4, 5):permute(4, 2, 1, 3)     -- [5,3,2,4], not contiguous
close("flatten (all)", F:flatten(), flat(F), 0)
check("flatten(2, 3)", F:flatten(2, 3).shape == {5, 6, 4})
close("flatten(2, 3) values", F:flatten(2, 3), nest(flat(F), {5, 6, 4}), 0)
check("flatten(-2)", F:flatten(-2).shape == {5, 3, 8})
check("flatten of 0-d is [1]", tt.tensor(2):flatten().shape == {1})
check("flatten is a view when it can be", tt.zeros(2, 3, 4):flatten(2):shares_storage(tt.zeros(1)) == false
  and (function() local z = tt.zeros(2, 3, 4); return z:flatten(2):shares_storage(z) end)())
checkerror({"flatten", "dims 3..2"}, function() return F:flatten(3, 2) end)
checkerror({"flatten", "dim 5 out of range"}, function() return F:flatten(5) end)
local U = A:unbind(2)
check("unbind gives a list of size(d) views", #U == 7 and U[3]:shares_storage(A) and U[3].shape == {5})
for j = 1, 7 do close("unbind piece " .. j, U[j], A:select(2, j):totable(), 0) end
check("unbind defaults to dim 1", #A:unbind() == 5 and A:unbind()[2].shape == {7})
check("unbind of an empty dim", #tt.zeros(0, 3):unbind() == 0)
close("t of 2-D", A:t(), A:mT():totable(), 0)
check("t of 1-D and 0-d", tt.zeros(3):t().shape == {3} and tt.tensor(1):t():dim() == 0)
checkerror({"t:", "at most 2 dims", "[3,1,17]", "x:mT()"}, function() return B:t() end)

-- ===== tt.softmax, tt.log_softmax =====
close("tt.softmax(x, d) is x:softmax(d)", tt.softmax(A, 2), A:softmax(2):totable(), 0)
close("tt.log_softmax(x, d)", tt.log_softmax(A, 1), A:log_softmax(1):totable(), 0)
checkerror({"softmax", "dim is required"}, function() return tt.softmax(A) end)

-- ===== dim names through the new ops =====
local NX = tt.randn(2, 3, 4):named("B", "N", "D")
local function nm(x) return table.concat(x:names(), ",") end
check("sin, cos, isnan keep names", nm(NX:sin()) == "B,N,D" and nm(NX:cos()) == "B,N,D" and nm(NX:isnan()) == "B,N,D")
check("where unifies names", nm(tt.where(NX:gt(0), NX, tt.zeros(4):named("D"))) == "B,N,D")
checkerror({"where", "'D'", "'K'"}, function() return tt.where(NX:gt(0), NX, tt.zeros(4):named("K")) end)
check("any, all, norm drop the reduced dim", nm(NX:gt(0):any("N")) == "B,D" and nm(NX:gt(0):all(3)) == "B,N"
  and nm(NX:norm(2, "D")) == "B,N" and nm(NX:norm(2, "N", true)) == "B,_,D")
check("flatten keeps the dims it leaves alone", nm(NX:flatten(2)) == "B,_")
check("unbind drops its dim", nm(NX:unbind("N")[2]) == "B,D" and #NX:unbind("N") == 3)
check("t moves names", nm(NX[1]:t()) == "D,N")
check("reduce and repeat name from the pattern", nm(tt.reduce(NX, "b n d -> d b", "sum")) == "d,b"
  and nm(tt["repeat"](NX, "b n d -> b n d r", {r = 2})) == "b,n,d,r")

-- ===== gradients =====
local function leaf(x) return x:detach():requires_grad_() end
local a5, b17 = leaf(A), leaf(B)
check("gradcheck sin", tt.gradcheck(function(x) return x:sin() end, {a5}))
check("gradcheck cos", tt.gradcheck(function(x) return x:cos() end, {b17}))
check("gradcheck pow", tt.gradcheck(function(x) return (x:abs() + 0.5):pow(1.7) end, {a5}))
local c3 = leaf(C)
check("gradcheck where (both sides, broadcast)", tt.gradcheck(function(x, y) return tt.where(cond, x, y) end, {b17, c3}))
check("gradcheck where with a number", tt.gradcheck(function(x) return tt.where(cond, x, 0) end, {b17}))
check("gradcheck norm 2", tt.gradcheck(function(x) return x:norm() end, {a5}))
check("gradcheck norm 2 over a dim", tt.gradcheck(function(x) return x:norm(2, 2) end, {a5}))
check("gradcheck norm 3 keepdim", tt.gradcheck(function(x) return x:norm(3, 1, true) end, {a5}))
check("gradcheck norm 1", tt.gradcheck(function(x) return x:norm(1, 3) end, {b17}))
check("gradcheck norm inf", tt.gradcheck(function(x) return x:norm(math.huge, 2) end, {a5}))
check("gradcheck flatten", tt.gradcheck(function(x) return x:flatten() * tt.arange(35) end, {a5}))
check("gradcheck unbind", tt.gradcheck(function(x) return x:unbind(2)[3] * 2 + x:unbind(2)[5] end, {a5}))
check("gradcheck t", tt.gradcheck(function(x) return x:t() * tt.arange(5) end, {a5}))
check("gradcheck t of 1-D", tt.gradcheck(function(x) return x:t() * tt.arange(17) end, {c3}))
check("gradcheck softmax", tt.gradcheck(function(x) return tt.softmax(x, 1) end, {a5}))

-- where: exactly g on the chosen side, 0 on the other
local x, y = leaf(tt.tensor({1, 2, 3})), leaf(tt.tensor({4}))
tt.where(tt.tensor({true, false, false}), x, y):backward(tt.tensor({10, 20, 30}))
close("where's gradient to a", x.grad, {10, 0, 0}, 0)
close("where's gradient to b, summed over the broadcast", y.grad, {50}, 0)
-- norm: 0 at the origin (PyTorch's subgradient), ties split at inf
local z = leaf(tt.zeros(3))
z:norm():backward()
close("norm's gradient at 0 is 0", z.grad, {0, 0, 0}, 0)
local tie = leaf(tt.tensor({-2, 1, 2}))
tie:norm(math.huge):backward()
close("inf norm's gradient split among the ties", tie.grad, {-0.5, 0, 0.5}, 0)
check("grad_fn names", a5:sin().grad_fn == "SinBackward" and tt.where(cond, b17, 0).grad_fn == "WhereBackward"
  and a5:norm().grad_fn == "NormBackward" and a5:t().grad_fn == "TBackward")
check("isnan, any, all need no gradient", not a5:isnan().requires_grad and not a5:gt(0):any().requires_grad)

-- ===== einops: tt.reduce, tt["repeat"] =====
local X = tt.randn(4, 3, 2, 5):permute(2, 4, 1, 3)   -- [3,5,4,2], not contiguous
local Xv = X:totable()
-- float64 reference: "b d (h w) k -> b w", over d, h and k (h = 2, w = 2)
local function red_ref(op)
  local out = {}
  for b = 1, 3 do
    out[b] = {}
    for w = 1, 2 do
      local acc, n = nil, 0
      for d = 1, 5 do for h = 1, 2 do for k = 1, 2 do
        local v = Xv[b][d][(h - 1) * 2 + w][k]
        n = n + 1
        if acc == nil then acc = v
        elseif op == "max" then acc = math.max(acc, v)
        elseif op == "min" then acc = math.min(acc, v)
        else acc = acc + v end
      end end end
      out[b][w] = op == "mean" and acc / n or acc
    end
  end
  return out
end
for _, op in ipairs({"sum", "mean", "max", "min"}) do
  close("reduce " .. op .. " over a split axis, of a permuted input",
    tt.reduce(X, "b d (h w) k -> b w", op, {h = 2}), red_ref(op), op == "sum" and 1e-5 or 2e-6)
end
local rt = tt.reduce(X, "b d (h w) k -> w () b", "sum", {w = 2})
check("reduce names its dims from the pattern, units stay", tostring(rt.shape) == "[2,1,3]"
  and table.concat(rt:names(), ",") == "w,_,b")
close("reduce with reordering and ()", rt:select(2, 1), (function()
  local r, t = red_ref("sum"), {}
  for w = 1, 2 do t[w] = {r[1][w], r[2][w], r[3][w]} end
  return t
end)(), 1e-5)
close("reduce with nothing reduced is rearrange", tt.reduce(X, "b d n k -> k b d n", "max"),
  tt.rearrange(X, "b d n k -> k b d n"):totable(), 0)
close("reduce with '...'", tt.reduce(X, "b ... k -> ...", "mean"), X:mean(1):mean(3):totable(), 2e-6)
close("reduce everything", tt.reduce(X, "b d n k -> ", "sum"), X:sum():item(), 1e-5)
close("reduce any/all", tt.reduce(X:gt(0), "b d n k -> b", "all"):float(), X:gt(0):all(4):all(3):all(2):float():totable(), 0)
check("reduce over an empty axis: sum is 0", tt.reduce(tt.zeros(2, 0), "a b -> a", "sum").shape == {2}
  and tt.reduce(tt.zeros(2, 0), "a b -> a", "sum"):sum():item() == 0)

local rep = tt["repeat"](A, "n d -> n c d", {c = 3})
check("repeat adds an axis as a view", rep.shape == {5, 3, 7} and rep:shares_storage(A))
for c = 1, 3 do close("repeat copy " .. c, rep:select(2, c), At, 0) end
local rep2 = tt.einrepeat(A, "n d -> (r n) (d s)", {r = 2, s = 3})
check("tt.einrepeat is tt[\"repeat\"]", tt.einrepeat == tt["repeat"] and rep2.shape == {10, 21})
local ok = true
for i = 1, 10 do for j = 1, 21 do
  if rep2[{i, j}]:item() ~= At[(i - 1) % 5 + 1][(j - 1) // 3 + 1] then ok = false end
end end
check("repeat (r n) tiles, (d s) repeats each element, as einops", ok)
check("repeat with '...'", tt["repeat"](B, "... k -> ... k two", {two = 2}).shape == {3, 1, 17, 2})
check("repeat with a unit on the left", tt["repeat"](B, "a 1 k -> a k r", {r = 4}).shape == {3, 17, 4})
check("repeat names its dims", table.concat(rep2:names(), ",") == "r*n,d*s")

checkerror({"reduce", "unknown reduction 'prod'", "\"sum\""}, function() return tt.reduce(X, "b d n k -> b", "prod") end)
checkerror({"reduce", "needs a reduction"}, function() return tt.reduce(X, "b d n k -> b") end)
checkerror({"reduce", "axis 'z' is missing on the left", "tt.repeat"}, function() return tt.reduce(X, "b d n k -> z", "sum") end)
checkerror({"reduce", "'...' is on the left but not on the right"}, function() return tt.reduce(X, "b ... -> b", "sum") end)
checkerror({"reduce", "\"b d (h w) k -> b\"", "[3,5,4,2]"}, function() return tt.reduce(X, "b d (h w) k -> b", "sum", {h = 3}) end)
checkerror({"reduce", "pattern has 2 axes", "4 dims"}, function() return tt.reduce(X, "a b -> a", "sum") end)
checkerror({"repeat", "axis 'c' is new on the right", "{c = 2}"}, function() return tt["repeat"](A, "n d -> n d c") end)
checkerror({"repeat", "axis 'd' is missing on the right", "tt.reduce"}, function() return tt["repeat"](A, "n d -> n") end)
checkerror({"repeat", "'z'", "not in the pattern"}, function() return tt["repeat"](A, "n d -> n d c", {c = 2, z = 1}) end)
checkerror({"repeat", "c=-1", "negative"}, function() return tt["repeat"](A, "n d -> n d c", {c = -1}) end)

local x5 = leaf(X)
for _, op in ipairs({"sum", "mean", "max", "min"}) do
  check("gradcheck reduce " .. op, tt.gradcheck(function(x) return tt.reduce(x, "b d (h w) k -> w b", op, {h = 2}) end, {x5}))
end
check("gradcheck repeat", tt.gradcheck(function(x) return tt["repeat"](x, "n d -> (r n) d s", {r = 2, s = 3}) end, {a5}))
check("gradcheck repeat with '...'", tt.gradcheck(function(x) return tt["repeat"](x, "... k -> k ... two", {two = 2}) end, {b17}))
local ties = leaf(tt.tensor({{1, 3, 3}, {2, 0, 2}}))
tt.reduce(ties, "a b -> a", "max"):backward(tt.tensor({1, 10}))
close("reduce max splits the gradient among ties, as x:max()", ties.grad, {{0, 0.5, 0.5}, {5, 0, 5}}, 0)
check("reduce any needs no gradient", not tt.reduce(x5:gt(0), "b d n k -> b", "any").requires_grad)
check("grad_fn of reduce and repeat", tt.reduce(x5, "b d n k -> b", "sum").grad_fn == "ReduceBackward"
  and tt["repeat"](a5, "n d -> n d c", {c = 2}).grad_fn == "RepeatBackward")

-- backward values against float64 formulas (on the non-contiguous A)
local gA = leaf(A)
gA:sin():sum():backward()
close("sin's gradient is cos(x)", gA.grad, map(A, math.cos), 2e-7)
gA.grad = nil
gA:cos():sum():backward()
close("cos's gradient is -sin(x)", gA.grad, map(A, function(v) return -math.sin(v) end), 2e-7)
gA.grad = nil
gA:norm():backward()
local nrm = norm_ref(A, 2)
close("norm's gradient is x / |x|", gA.grad, map(A, function(v) return v / nrm end), 2e-6)
gA.grad = nil
gA:norm(3):backward()
local n3 = norm_ref(A, 3)
close("norm 3's gradient is sign(x) |x|^2 / |x|_3^2", gA.grad, map(A, function(v)
  return (v > 0 and 1 or -1) * v * v / (n3 * n3) end), 2e-6)
gA.grad = nil
tt.reduce(gA, "n d -> d", "mean"):backward(tt.arange(7) + 1)
close("reduce mean's gradient is g / n, repeated", gA.grad, nest((function()
  local t = {}
  for i = 1, 5 do for j = 1, 7 do t[#t + 1] = j / 5 end end
  return t
end)(), {5, 7}), 1e-7)
gA.grad = nil
tt["repeat"](gA, "n d -> (r n) d", {r = 3}):backward(tt.ones(15, 7))
close("repeat's gradient is the sum over the copies", gA.grad, map(A, function() return 3 end), 0)

-- ===== the 0-based habit: a note on the trace row =====
local dir = T.tmpdir()
local script = T.write(dir, "habit.lua", [[
local B, N, H, Dh = 2, 5, 8, 4
local x = tt.randn(B, N, H * Dh)
local q = x:view(B, N, H, Dh):transpose(1, 2)
local heads = x:view(B, N, H, Dh):transpose(2, 3)
local merged = heads:transpose(1, 2):contiguous():view(B, N, H * Dh)
local merged2 = heads:transpose(1, 2):reshape(B, N, H * Dh)
local ok1 = heads:transpose(2, 3):contiguous():view(B, N, H * Dh)
local ok2 = heads:transpose(2, 3):reshape(B, N, H * Dh)
local ok3 = tt.randn(N, H * Dh):view(N, H, Dh):transpose(1, 2)
local ok4 = tt.randn(3, 4, 5, 6):transpose(1, 2):reshape(4, 3, 30)
local ok5 = x:view(B, N, H, Dh):transpose(1, 3)
]])
local out = T.run(dir, script)
local lines = {}
for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
local function noted(src_line)
  local n, inside = 0, false
  for _, l in ipairs(lines) do
    if l:match("^%S") then inside = l:find("habit.lua:" .. src_line .. " ", 1, true) ~= nil
    elseif inside and l:find("dims count from 1 here: PyTorch's transpose(1, 2) is transpose(2, 3)", 1, true) then
      n = n + 1
    end
  end
  return n
end
check("a head split transposed at (1, 2) is noted", noted(3) == 1 and out:find("swaps dims 1 and 2 of the head split [2,5,8,4]", 1, true))
check("heads merged after transpose(1, 2) are noted (via contiguous)", noted(5) == 1
  and out:find("mixes dims: transpose(1, 2) swapped dims 1 and 2 of [2,8,5,4]", 1, true))
check("heads merged after transpose(1, 2) are noted (reshape)", noted(6) == 1)
for l = 7, 11 do check("no note on correct code, line " .. l, noted(l) == 0) end
check("the note is once per mistake", select(2, out:gsub("dims count from 1 here", "")) == 3)
local json_path = dir .. "/t.json"
T.run(dir, "-q --trace-json " .. json_path .. " " .. script)
check("the note is in the JSON trace", T.slurp(json_path):find('"note":"swaps dims 1 and 2 of the head split', 1, true) ~= nil)

-- tt.where with a number is one row, the number as written
local wscript = T.write(dir, "where.lua", "local x = tt.randn(2, 3)\nlocal y = tt.where(x:gt(0), x, 0)\nlocal z = tt.where(x:gt(0), -1, x)\n")
local wout = T.run(dir, wscript)
check("where(c, x, 0) shows the number", wout:find("where       [2,3] bool, [2,3], 0.0 -> [2,3]", 1, true) ~= nil)
check("a number becomes no row of its own", not wout:find("full", 1, true) and select(2, wout:gsub("\n    ", "")) == 5)

T.report()
