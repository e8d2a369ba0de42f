-- test_int64.lua — the int64 dtype from Lua: creation (tt.tensor,
-- zeros/ones, randint), conversions (long, float, bool), values as Lua
-- integers, printing, and the errors a script can cause.
local T = dofile("tests/lua/check.lua")
local check, close, checkerror = T.check, T.close, T.checkerror

-- creation and values
local x = tt.tensor({{1, -2, 3}, {4, 5, 2^53}}, "int64")
check("dtype int64", x:dtype() == "int64")
check("item is a Lua integer", math.type(x[1][2]:item()) == "integer" and x[1][2]:item() == -2)
check("2^53 round-trips", x[2][3]:item() == 9007199254740992 and math.type(x[2][3]:item()) == "integer")
check("totable gives integers", math.type(x:totable()[2][1]) == "integer")
check("\"long\" is int64 too", tt.tensor({1}, "long"):dtype() == "int64")
check("floats truncate toward zero (PyTorch)", tt.tensor({1.9, -1.9}, "int64"):totable()[2] == -1)
check("zeros int64", tt.zeros(2, 3, "int64"):dtype() == "int64" and tt.zeros(2, "int64"):totable()[1] == 0)
check("ones int64", tt.ones({2}, "int64"):totable()[2] == 1)
check("tostring shows integers", tostring(tt.tensor({3, -10}, "int64")):find("[  3, -10]", 1, true) ~= nil)
check("tostring header", tostring(x):find("tensor [2,3] int64", 1, true) == 1)
check("tostring of a big value exactly",
      tostring(tt.tensor({2^53}, "int64")):find("9007199254740992", 1, true) ~= nil)
checkerror({"tensor", "t[2]", "9007199254740994", "2^53"}, tt.tensor, {1, 2^53 + 2}, "int64")
checkerror({"tensor", "t[1]", "2^53"}, tt.tensor, {0/0}, "int64")
checkerror({"unknown dtype 'int32'", "int64"}, tt.tensor, {1}, "int32")

-- randint: lo..hi-1, seeded
tt.manual_seed(7)
local r = tt.randint(-2, 3, 40, 5)
check("randint dtype and shape", r:dtype() == "int64" and r:size(1) == 40 and r:size(2) == 5)
local seen, inrange = {}, true
for _, row in ipairs(r:totable()) do
  for _, v in ipairs(row) do
    inrange = inrange and math.type(v) == "integer" and v >= -2 and v <= 2
    seen[v] = true
  end
end
check("randint values in [lo, hi)", inrange)
check("randint reaches lo and hi-1", seen[-2] and seen[2])
tt.manual_seed(7)
local r2 = tt.randint(-2, 3, {40, 5})
local same = true
for i, row in ipairs(r2:totable()) do
  for j, v in ipairs(row) do same = same and v == r:totable()[i][j] end
end
check("randint: same seed, same numbers (table shape too)", same)
check("randint: one value range", tt.randint(4, 5, 3):totable()[3] == 4)
checkerror({"randint", "[3, 3)"}, tt.randint, 3, 3, 2)
checkerror({"randint", "integers"}, tt.randint, 0.5, 3, 2)

-- conversions
local f = tt.tensor({1.7, -1.7, 0, -0.2})
local l = f:long()
check("long: dtype", l:dtype() == "int64")
check("long truncates toward zero", l:totable()[1] == 1 and l:totable()[2] == -1 and l:totable()[4] == 0)
check("long of a strided view", tt.tensor({{1.5, 2.5}, {3.5, 4.5}}):mT():long():totable()[1][2] == 3)
local bl = tt.tensor({true, false, true}):long()
check("bool:long is 0/1", bl:totable()[1] == 1 and bl:totable()[2] == 0)
close("int64:float", tt.tensor({-3, 7}, "int64"):float(), {-3, 7})
check("int64:float dtype", tt.tensor({1}, "int64"):float():dtype() == "float32")
local b = tt.tensor({0, 5, -1}, "int64"):bool()
check("int64:bool nonzero", b:dtype() == "bool" and b:totable()[1] == false and b:totable()[3] == true)
check("long of int64 is a view", x:long():shares_storage(x))
check("views keep int64", x:mT():contiguous():dtype() == "int64" and x:mT():contiguous():totable()[3][2] == 9007199254740992)

-- no gradients for int64
checkerror({"requires_grad_", "int64 [2,3]", "hint"}, function() return x:requires_grad_() end)
local w = tt.tensor({1.5, 2.5}):requires_grad_()
local wl = w:long()
check("long of a grad tensor does not require grad", wl.requires_grad == false)

-- arithmetic as PyTorch: int64 op int64 stays int64, / is true division,
-- a float32 tensor or a non-integer Lua number promotes to float32
local a = tt.tensor({{1, 2, 3}, {4, 5, 6}}, "int64")
local c = tt.tensor({10, -20, 30}, "int64")
local function is(descr, t, dtype, want)
  check(descr .. ": dtype " .. dtype, t:dtype() == dtype)
  if dtype == "bool" then
    local same = true
    for i, row in ipairs(t:totable()) do
      for j, v in ipairs(row) do same = same and v == want[i][j] end
    end
    check(descr .. ": values", same)
  else
    close(descr, t, want)
  end
end
is("int64 + int64", a + c, "int64", {{11, -18, 33}, {14, -15, 36}})
is("int64 - int64", a - c, "int64", {{-9, 22, -27}, {-6, 25, -24}})
is("int64 * int64", a * c, "int64", {{10, -40, 90}, {40, -100, 180}})
is("int64 / int64 is true division", a / c, "float32", {{0.1, -0.1, 0.1}, {0.4, -0.25, 0.2}})
is("int64 ^ 2", a ^ 2, "int64", {{1, 4, 9}, {16, 25, 36}})
is("int64 + 2", a + 2, "int64", {{3, 4, 5}, {6, 7, 8}})
is("int64 * 2.0 (a float, as Python's 2.0)", a * 2.0, "float32", {{2, 4, 6}, {8, 10, 12}})
is("int64 * 2 (an integer)", a * 2, "int64", {{2, 4, 6}, {8, 10, 12}})
is("int64 + 0.5", a + 0.5, "float32", {{1.5, 2.5, 3.5}, {4.5, 5.5, 6.5}})
is("10 - int64", 10 - a, "int64", {{9, 8, 7}, {6, 5, 4}})
is("int64 * float32", a * tt.tensor({0.5, 1, 2}), "float32", {{0.5, 2, 6}, {2, 5, 12}})
is("-int64", -a, "int64", {{-1, -2, -3}, {-4, -5, -6}})
is("abs", (-a):abs(), "int64", {{1, 2, 3}, {4, 5, 6}})
is("maximum", a:maximum(c), "int64", {{10, 2, 30}, {10, 5, 30}})
is("exp of int64 is float32", tt.tensor({0, 1}, "int64"):exp(), "float32", {1, math.exp(1)})
is("eq", a:eq(tt.tensor({1, 5, 0}, "int64")), "bool", {{true, false, false}, {false, true, false}})
is("lt 3", a:lt(3), "bool", {{true, true, false}, {false, false, false}})
is("gt 2.5 (float compare)", a:gt(2.5), "bool", {{false, false, true}, {true, true, true}})
is("masked_fill", a:masked_fill(a:gt(4), -1), "int64", {{1, 2, 3}, {4, -1, -1}})
check("int64 + wraps around (two's complement)",
      (tt.tensor({2^52}, "int64") * 2048):item() == math.mininteger)
checkerror({"add", "int64 [2,3] and bool [3]", "hint"}, function() return a + tt.tensor({true, false, true}) end)
checkerror({"matmul", "int64"}, function() return a:matmul(a:mT()) end)

-- Integers stay integers: a Lua integer meeting int64 never goes through
-- double (exact past 2^53, wrapping as two's complement like PyTorch).
-- Every expected value is a Lua integer computed here with Lua's own
-- integer arithmetic, which wraps the same way (the manual, 3.4.1).
local mi, ma = math.mininteger, math.maxinteger
local function exact(descr, t, want, dtype)
  dtype = dtype or "int64"
  local got, ok, why = t:totable(), t:dtype() == dtype, "dtype " .. t:dtype()
  local function walk(g, w, path)
    if not ok then return end
    if type(w) == "table" then
      if type(g) ~= "table" or #g ~= #w then ok, why = false, path .. ": length differs"; return end
      for i = 1, #w do walk(g[i], w[i], path .. "[" .. i .. "]") end
    elseif (dtype == "int64" and math.type(g) ~= "integer") or g ~= w then
      ok, why = false, path .. ": want " .. tostring(w) .. ", got " .. tostring(g)
    end
  end
  walk(got, want, "")
  local r = check(descr .. (ok and "" or " (" .. why .. ")"), ok, 2)  -- not a tail call: keeps the line
  return r
end
-- the issue's cases
exact("int64 + 9007199254740993 (2^53 + 1)", tt.tensor({1}, "int64") + 9007199254740993, {9007199254740994})
exact("int64 * 4611686018427387905 wraps", tt.tensor({1, 4}, "int64") * 4611686018427387905,
      {4611686018427387905, 4})
exact("int64 + math.maxinteger stays int64 and wraps", tt.tensor({1, -1}, "int64") + ma, {mi, ma - 1})
exact("tt.tensor keeps an integer past 2^53", tt.tensor({9007199254740993, mi, ma}, "int64"),
      {9007199254740993, mi, ma})

-- values over the whole range from a Lua integer generator (an LCG, wrapping)
local seed = 31
local function big()
  seed = seed * 6364136223846793005 + 1442695040888963407
  return seed
end
local function nest(shape, gen, d)
  d = d or 1
  local t = {}
  for i = 1, shape[d] do t[i] = d == #shape and gen() or nest(shape, gen, d + 1) end
  return t
end
-- f over the elements of nested table x with y (a number, or a table of x's shape)
local function map2(x, y, f)
  if type(x) ~= "table" then return f(x, y) end
  local r = {}
  for i = 1, #x do r[i] = map2(x[i], type(y) == "table" and y[i] or y, f) end
  return r
end
local function map1(x, f) return map2(x, 0, function(u) return f(u) end) end
local function ipow(u, w)                     -- u^w by repeated wrapping *, as PyTorch's integer pow
  if w < 0 then return (u == 1 and 1) or (u == -1 and (w % 2 == 0 and 1 or -1)) or 0 end
  local r = 1
  for _ = 1, w do r = r * u end
  return r
end
local OPS = {
  add = function(u, w) return u + w end, sub = function(u, w) return u - w end,
  mul = function(u, w) return u * w end,
  maximum = function(u, w) return u > w and u or w end, minimum = function(u, w) return u < w and u or w end,
  eq = function(u, w) return u == w end, ne = function(u, w) return u ~= w end,
  lt = function(u, w) return u < w end, le = function(u, w) return u <= w end,
  gt = function(u, w) return u > w end, ge = function(u, w) return u >= w end,
}
local ORDER = {"add", "sub", "mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"}
local CMP = {eq = true, ne = true, lt = true, le = true, gt = true, ge = true}
local rows = nest({7, 5, 3}, big)             -- [7,5,3]; a transpose of it is strided
local A = tt.tensor(rows, "int64")
local At = A:transpose(1, 3)                  -- [3,5,7], strides (1,3,15)
local at = {}                                 -- its values by hand
for i = 1, 3 do at[i] = {}; for j = 1, 5 do at[i][j] = {}; for k = 1, 7 do at[i][j][k] = rows[k][j][i] end end end
local SCALARS = {9007199254740993, 4611686018427387905, ma, mi, -3, 0, 1}
for _, s in ipairs(SCALARS) do
  for _, name in ipairs(ORDER) do
    local dt = CMP[name] and "bool" or "int64"
    exact(("%s, [7,5,3] with %d"):format(name, s), A[name](A, s), map2(rows, s, OPS[name]), dt)
    exact(("%s, a transposed view with %d"):format(name, s), At[name](At, s), map2(at, s, OPS[name]), dt)
  end
  exact(("%d - x (the number first)"):format(s), s - At, map2(at, s, function(u, w) return w - u end))
  exact(("%d * x (the number first)"):format(s), s * A, map2(rows, s, function(u, w) return w * u end))
  exact(("%d + x (the number first)"):format(s), s + A, map2(rows, s, function(u, w) return w + u end))
end
-- tensor with tensor, broadcast [3,5,7] with [5,1], both over the whole range
local brows = nest({5, 1}, big)
local B = tt.tensor(brows, "int64")
local bwide = {}                              -- brows broadcast to [3,5,7] by hand
for i = 1, 3 do bwide[i] = {}; for j = 1, 5 do bwide[i][j] = {}; for k = 1, 7 do bwide[i][j][k] = brows[j][1] end end end
for _, name in ipairs(ORDER) do
  exact(name .. ", [3,5,7] view with [5,1]", At[name](At, B), map2(at, bwide, OPS[name]), CMP[name] and "bool" or "int64")
  exact(name .. ", [5,1] with a [3,5,7] view", B[name](B, At), map2(bwide, at, OPS[name]), CMP[name] and "bool" or "int64")
end
-- pow: wrapping integer powers by a scalar and by a tensor (negative
-- exponents in a tensor give PyTorch's 0, 1 or -1; a negative scalar is an error)
for _, e in ipairs({0, 1, 2, 3, 7}) do
  exact("int64 ^ " .. e .. " wraps", At ^ e, map1(at, function(u) return ipow(u, e) end))
end
local ex = tt.tensor({{-2}, {-1}, {0}, {3}, {5}}, "int64")
local bases = {{1, -1, 2, 0, -7, 3037000500, mi}}
local want_pow = {}
for i = 1, 5 do
  want_pow[i] = {}
  for j, u in ipairs(bases[1]) do want_pow[i][j] = ipow(u, ({-2, -1, 0, 3, 5})[i]) end
end
exact("int64 ^ int64 [1,7] with [5,1], negative exponents included", tt.tensor(bases, "int64") ^ ex, want_pow)
exact("2 ^ int64 (the number first)", 2 ^ tt.tensor({-1, 0, 62, 63, 64}, "int64"), {0, 1, 1 << 62, mi, 0})
checkerror({"pow", "Integers to negative integer powers are not allowed.", "int64 [2,3] ^ -1", "test_int64.lua",
            "x:float() ^ -1"}, function() return a ^ -1 end)
checkerror({"pow", "Integers to negative integer powers are not allowed.", "int64 [3,5,7] ^ " .. mi},
           function() return At ^ mi end)
close("int64 ^ -1.0 (a float) is float32", a[1] ^ -1.0, {1, 0.5, 1 / 3})
-- floats with int64 promote to float32, as PyTorch
check("int64 + 0.5 is float32", (A + 0.5):dtype() == "float32")
check("int64 * 1.0 is float32", (tt.tensor({3}, "int64") * 1.0):dtype() == "float32")
check("2^53 + 1 compares to the float 2^53 in float32 (PyTorch: False)",
      tt.tensor({9007199254740993}, "int64"):gt(9007199254740992.0):item() == false)
check("... and to the integer 2^53 exactly (PyTorch: True)",
      tt.tensor({9007199254740993}, "int64"):gt(9007199254740992):item() == true)
check("float32 + a huge integer is float32", (tt.tensor({1}) + 4611686018427387905):dtype() == "float32")

-- in place, fill, masked_fill, full, where: integers exact
local ip = tt.tensor(rows, "int64")
local ipt = ip:transpose(1, 3)
ipt:add_(4611686018427387905)
exact("add_ with a huge integer, through a transposed view", ip, map2(rows, 4611686018427387905, OPS.add))
ipt:mul_(-3):sub_(ma)
exact("mul_ then sub_", ip, map2(map2(rows, 4611686018427387905, OPS.add), 0,
                                 function(u) return u * -3 - ma end))
ip:add_(B:view(1, 5, 1))
check("add_ int64 with a broadcast int64 tensor", ip:totable()[4][2][3] ==
      (rows[4][2][3] + 4611686018427387905) * -3 - ma + brows[2][1])
checkerror({"add_", "result type float32 can't be cast", "int64"}, function() return ip:add_(0.5) end)
exact("fill_ with 2^62 + 1", tt.zeros(2, 3, "int64"):fill_(4611686018427387905),
      {{4611686018427387905, 4611686018427387905, 4611686018427387905},
       {4611686018427387905, 4611686018427387905, 4611686018427387905}})
local mask = tt.tensor({{true, false, true}})
exact("masked_fill with math.maxinteger, broadcast mask", tt.tensor({{1, 2, 3}, {4, 5, 6}}, "int64"):masked_fill(mask, ma),
      {{ma, 2, ma}, {ma, 5, ma}})
exact("masked_fill_ with math.mininteger + 1", tt.tensor({{1, 2, 3}}, "int64"):masked_fill_(mask, mi + 1), {{mi + 1, 2, mi + 1}})
exact("masked_fill with 2.7 truncates (PyTorch)", tt.tensor({1, 2}, "int64"):masked_fill(tt.tensor({true, false}), 2.7), {2, 2})
exact("tt.full with an int64 dtype", tt.full(2, 2, 9007199254740993, "int64"), {{9007199254740993, 9007199254740993},
                                                                                 {9007199254740993, 9007199254740993}})
exact("tt.full({3}, v, \"int64\")", tt.full({3}, mi, "int64"), {mi, mi, mi})
check("tt.full keeps float32 by default", tt.full(2, 7):dtype() == "float32")
local cond = tt.tensor({{true, false}, {false, true}})
exact("where(c, huge integer, int64)", tt.where(cond, 4611686018427387905, tt.tensor({10, ma}, "int64")),
      {{4611686018427387905, ma}, {10, 4611686018427387905}})
exact("where(c, int64, huge integer)", tt.where(cond, tt.tensor({{mi}, {-1}}, "int64"), 9007199254740993),
      {{mi, 9007199254740993}, {9007199254740993, -1}})
is("where(c, int64, 7.5) promotes to float32", tt.where(cond, tt.tensor({1, 2}, "int64"), 7.5), "float32",
   {{1, 7.5}, {7.5, 2}})

-- arange counts in integers
exact("arange(mi, mi + 5, \"int64\")", tt.arange(mi, mi + 5, "int64"), {mi, mi + 1, mi + 2, mi + 3, mi + 4})
check("arange(mi, mi + 5) has 5 elements (float32)", tt.arange(mi, mi + 5):numel() == 5
      and tt.arange(mi, mi + 5):dtype() == "float32")
exact("arange(ma - 3, ma, \"int64\")", tt.arange(ma - 3, ma, "int64"), {ma - 3, ma - 2, ma - 1})
exact("arange(ma, mi, mi) (a negative step the size of the range)", tt.arange(ma, mi, mi, "int64"), {ma, -1})
exact("arange(5, 0, -2)", tt.arange(5, 0, -2, "int64"), {5, 3, 1})
exact("arange(4, \"int64\")", tt.arange(4, "int64"), {0, 1, 2, 3})
exact("arange(mi, ma, 1 << 62): steps across the whole range", tt.arange(mi, ma, 1 << 62, "int64"),
      {mi, mi + (1 << 62), 0, 1 << 62})
check("arange(3, 3) is empty", tt.arange(3, 3, "int64"):numel() == 0 and tt.arange(3, 1):numel() == 0)
checkerror({"arange", "18446744073709551615 elements", "is too many"}, tt.arange, mi, ma)
checkerror({"arange", "4611686018427387904 elements", "is too many"}, tt.arange, 0, 1 << 62, "int64")
checkerror({"arange", "nonzero step"}, tt.arange, 1, 5, 0, "int64")
checkerror({"arange", "int64 counts from integer bounds", "0.5"}, tt.arange, 0.5, 3, "int64")
checkerror({"arange", "unknown dtype 'int8'"}, tt.arange, 3, "int8")
-- the trace shows an integer past 2^53 as it is
local p = io.popen("./tensortrace -e 'local x = tt.tensor({1}, \"int64\") + 9007199254740993' 2>&1")
local out = p:read("a")
p:close()
check("the trace shows the exact integer", out:find("int64 + 9007199254740993 -> [1] int64", 1, true) ~= nil)
local jdir = T.tmpdir()
os.execute("./tensortrace -q --trace-json " .. jdir .. "/t.json -e 'local x = tt.tensor({1}, \"int64\") * math.maxinteger'")
check("the JSON trace gives the exact integer", T.slurp(jdir .. "/t.json"):find('"scalar":9223372036854775807', 1, true) ~= nil)
os.execute("rm -rf '" .. jdir .. "'")

-- a float weight times int64 values keeps its gradient
local wgt = tt.tensor({1.5, -2, 0.5}):requires_grad_()
local y = (wgt * a):sum()
y:backward()
close("gradient of w * int64 is the int64 values (as float)", wgt.grad, {5, 7, 9})
check("int64 results never require grad", (a + 1).requires_grad == false)

-- argmax, argmin and the indices of max/min are int64, 1-based
local sc = tt.tensor({{3, 9, 1}, {7, 2, 7}})
local am = sc:argmax(2)
check("argmax is int64", am:dtype() == "int64" and am:totable()[1] == 2 and am:totable()[2] == 1)
check("argmin of everything: a 0-d int64", sc:argmin():dtype() == "int64" and sc:argmin():item() == 3)
local mv, mi = sc:max(2)
check("max over a dim: float values, int64 indices", mv:dtype() == "float32" and mi:dtype() == "int64"
      and math.type(mi:totable()[2]) == "integer" and mi:totable()[2] == 1)
local nv, ni = sc:min(1, true)
check("min keepdim indices", ni:dtype() == "int64" and ni:totable()[1][2] == 2)
check("an argmax indexes directly", sc[1][am[1]:item()]:item() == 9)
-- reductions of int64
check("sum of int64 is int64", a:sum():dtype() == "int64" and a:sum():item() == 21)
check("sum over a dim", a:sum(1):totable()[3] == 9 and a:sum(2, true):totable()[2][1] == 15)
check("max of int64", a:max():item() == 6 and a:max():dtype() == "int64")
local iv, ii = a:min(2)
check("min over a dim of int64: int64 values and indices", iv:dtype() == "int64" and ii:totable()[2] == 1)
check("argmax of int64", a:mT():argmax(2):totable()[1] == 2)
checkerror({"mean", "int64 [2,3]", "x:float()"}, function() return a:mean() end)

-- index_select and gather: int64 indices from 1, PyTorch's semantics,
-- differentiable (repeated indices accumulate)
local emb = tt.tensor({{1, 2}, {3, 4}, {5, 6}}):requires_grad_()
local tok = tt.tensor({3, 1, 3, 3}, "int64")
local rows = emb:index_select(1, tok)
close("index_select rows", rows, {{5, 6}, {1, 2}, {5, 6}, {5, 6}})
check("index_select keeps the input's dtype", tt.tensor({7, 8, 9}, "int64"):index_select(1, tok):totable()[2] == 7)
close("index_select of columns", emb:index_select(2, tt.tensor({2}, "int64")), {{2}, {4}, {6}})
close("index_select with a strided index", emb:index_select(1, tt.tensor({{2, 9}, {1, 9}}, "int64"):select(2, 1)),
      {{3, 4}, {1, 2}})
check("index_select records a node", rows.requires_grad and rows.grad_fn:find("Backward") ~= nil)
rows:sum():backward()
close("index_select backward: repeated rows accumulate", emb.grad, {{1, 1}, {0, 0}, {3, 3}})
emb.grad = nil
local logits = tt.tensor({{0.1, 0.7, 0.2}, {0.5, 0.3, 0.2}}):requires_grad_()
local picked = logits:gather(2, tt.tensor({{2, 2}, {1, 3}}, "int64"))
close("gather picks along dim 2", picked, {{0.7, 0.7}, {0.5, 0.2}})
local weighted = picked * tt.tensor({{1, 10}, {100, 1000}})
weighted:sum():backward()
close("gather backward scatter-adds", logits.grad, {{0, 11, 0}, {100, 0, 1000}})
close("gather along dim 1", tt.tensor({{1, 2}, {3, 4}}):gather(1, tt.tensor({{2, 1}}, "int64")), {{3, 2}})
checkerror({"index_select", "index 4 out of range for dim 1 of [3,2] (1..3)", "test_int64.lua"},
           function() return emb:index_select(1, tt.tensor({1, 4}, "int64")) end)
checkerror({"index_select", "index 0", "hint: indices count from 1"},
           function() return emb:index_select(1, tt.tensor({0}, "int64")) end)
checkerror({"index_select", "index must be int64, got float32 [2]", "index:long()"},
           function() return emb:index_select(1, tt.tensor({1, 2})) end)
checkerror({"index_select", "1-D"}, function() return emb:index_select(1, tt.tensor({{1}}, "int64")) end)
checkerror({"gather", "index [2] and input [3,2] must have as many dims"},
           function() return emb:gather(1, tt.tensor({1, 2}, "int64")) end)
checkerror({"gather", "index 3 out of range for dim 2 of [3,2] (1..2)"},
           function() return emb:gather(2, tt.tensor({{3}}, "int64")) end)
checkerror({"gather", "dim 3 out of range"}, function() return emb:gather(3, tt.tensor({{1}}, "int64")) end)

-- figures take int64 (ids, counts) as their values
local dir = T.tmpdir()
local ids = tt.tensor({{1, 2, 3}, {40, 5, 6}}, "int64")
check("heatmap of int64", tt.heatmap(ids, dir .. "/ids.png") == dir .. "/ids.png")
check("heatmap of a transposed int64 view (svg)", tt.heatmap(ids:mT(), dir .. "/ids.svg") == dir .. "/ids.svg")
check("bars of int64", tt.bars(ids[1], dir .. "/bars.png") == dir .. "/bars.png")
check("heatmap svg shows the int64 values", T.slurp(dir .. "/ids.svg"):find(">40<", 1, true) ~= nil)
-- checkpoints: int64 as safetensors I64, values exact
local big = tt.tensor({{-2^53, 3}, {0, 2^53}}, "int64")
tt.save(dir .. "/ids.safetensors", {ids = big:mT(), w = tt.ones(2)})
local back = tt.load(dir .. "/ids.safetensors")
check("I64 loads as int64", back.ids:dtype() == "int64")
check("I64 values exact", back.ids:totable()[1][1] == -9007199254740992 and back.ids:totable()[2][2] == 9007199254740992
      and back.ids:totable()[1][2] == 0 and back.ids:totable()[2][1] == 3)
check("the file names I64", T.slurp(dir .. "/ids.safetensors"):find('"dtype":"I64"', 1, true) ~= nil)
os.execute("rm -rf '" .. dir .. "'")

-- a transposed int64 copy big enough for the tiled path (rows and columns
-- >= 8): the tiles hold 4-byte elements, so int64 takes the plain walk
do
  local x = tt.randint(0, 1000, {40, 300})
  local y = x:t():contiguous()
  local xs, ys, bad = x:totable(), y:totable(), 0
  for i = 1, 40 do for j = 1, 300 do if xs[i][j] ~= ys[j][i] then bad = bad + 1 end end end
  check("int64 transpose copied (" .. bad .. " elements wrong)", bad == 0)
  local z = x:t() + tt.zeros(300, 40, "int64")      -- an elementwise op over the transpose
  check("int64 add over a transpose", z:totable()[250][33] == xs[33][250] and z:totable()[9][2] == xs[2][9])
end

T.report()
