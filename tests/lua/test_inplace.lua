-- test_inplace.lua — in-place ops and PyTorch's safety rules around them:
-- each in-place op's values against plain Lua arithmetic (into views,
-- broadcast, converted); the version counter (every in-place op, and the
-- optimizers' steps, against every op that saves a tensor for backward:
-- backward() raises PyTorch's message, never a wrong gradient);
-- backward() twice with and without retain_graph; a million-op chain.
local T = dofile("tests/lua/check.lua")
local check, checkerror = T.check, T.checkerror

local function flat(t)
  local out = {}
  local function walk(v) if type(v) == "table" then for _, e in ipairs(v) do walk(e) end else out[#out + 1] = v end end
  walk(t:totable())
  return out
end
local function same_values(descr, t, want)
  local got, ok = flat(t), true
  if #got ~= #want then ok = false end
  for i = 1, #want do if got[i] ~= want[i] then ok = false end end
  check(descr .. " (got " .. table.concat(got, ",") .. ")", ok)
end

-- ===== Values (exact: small integers and halves, every op is exact) =====
local base = {1, 2, 3, 4, 5, 6}                   -- [2,3], row major
local function x23() return tt.tensor{{1, 2, 3}, {4, 5, 6}} end
local function map(f) local r = {} for i, v in ipairs(base) do r[i] = f(v, (i - 1) % 3 + 1, (i - 1) // 3 + 1) end return r end
local row = {10, 20, 30}

local x = x23()
check("add_ returns x itself", rawequal(x:add_(1), x))
same_values("add_ scalar", x, map(function(v) return v + 1 end))
same_values("sub_ broadcast row", x23():sub_(tt.tensor(row)), map(function(v, c) return v - row[c] end))
same_values("mul_ broadcast column", x23():mul_(tt.tensor{{2}, {-1}}), map(function(v, _, r) return v * (r == 1 and 2 or -1) end))
same_values("div_ scalar", x23():div_(2), map(function(v) return v / 2 end))
same_values("div_ by itself", (function() local t = x23(); return t:div_(t) end)(), map(function() return 1 end))
same_values("fill_", x23():fill_(-2.5), map(function() return -2.5 end))
same_values("zero_", x23():zero_(), map(function() return 0 end))
same_values("copy_ broadcast and int64 converted", x23():copy_(tt.tensor{7, 8, 9}:long()), map(function(_, c) return 6 + c end))
same_values("masked_fill_", x23():masked_fill_(tt.tensor{true, false, true}, 0), map(function(v, c) return c == 2 and v or 0 end))

-- into views: the base changes where the view looks, nowhere else
x = x23()
x:narrow(2, 2, 2):masked_fill_(tt.tensor{{true, false}, {false, true}}, -1)
same_values("masked_fill_ into a narrowed view", x, {1, -1, 3, 4, 5, -1})
x = x23()
x:transpose(1, 2):add_(tt.tensor{100, 200})   -- [3,2] view: column j of it is row j of x
same_values("add_ into a transposed view", x, map(function(v, _, r) return v + 100 * r end))
x = x23()
x[2]:mul_(10)
same_values("mul_ into x[2]", x, map(function(v, _, r) return r == 2 and v * 10 or v end))
x = tt.zeros(3, 4)
x:narrow(2, 2, 2):copy_(tt.tensor{{1, 2}, {3, 4}, {5, 6}})
same_values("copy_ into a narrowed view", x, {0, 1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0})
x = tt.zeros(2, 3):long()
x:fill_(7):add_(tt.tensor{1, 2, 3}:long())
same_values("int64 fill_ and add_ stay int64", x, {8, 9, 10, 8, 9, 10})
check("... dtype int64", x:dtype() == "int64")
local m = tt.zeros(4):gt(0)
m:narrow(1, 2, 2):fill_(1)
same_values("bool fill_ into a view", m:long(), {0, 1, 1, 0})

-- errors
checkerror({"add_: output with shape [3] doesn't match the broadcast shape [2,3]"},
           function() return tt.zeros(3):add_(tt.zeros(2, 3)) end)
checkerror({"masked_fill_: output with shape [3] doesn't match the broadcast shape [2,3]"},
           function() return tt.zeros(3):masked_fill_(tt.zeros(2, 3):gt(0), 1) end)
checkerror({"copy_: the source [4] does not broadcast to [3]"}, function() return tt.zeros(3):copy_(tt.zeros(4)) end)
checkerror({"fill_: [3] has more than one element at one memory location (an expand)", "x:clone()"},
           function() return tt.zeros(1):expand(3):fill_(2) end)
checkerror({"add_: result type float32 can't be cast to the desired output type int64"},
           function() return tt.zeros(3):long():add_(1.5) end)
checkerror({"mul_: expects a tensor or a number, got string"}, function() return tt.zeros(3):mul_("2") end)
local w = tt.tensor{1, 2, 3}:requires_grad_()
checkerror({"add_: a leaf tensor that requires grad ([3]) is being used in an in-place operation",
            "tt.no_grad(function() ... end)", "y = x + y"}, function() return w:add_(1) end)
checkerror({"zero_: [3] is the result of MulBackward, in the autograd graph", "y = tt.zeros(shape)"},
           function() return (w * w):zero_() end)
checkerror({"copy_: the operand requires grad but the in-place result would not be recorded"},
           function() return tt.zeros(3):copy_(w) end)
tt.no_grad(function() w:sub_(1) end)              -- an update by hand
same_values("sub_ under no_grad updates a leaf", w, {0, 1, 2})
check("... which still requires grad", w.requires_grad and w.grad_fn == nil)

-- ===== Issue 31, item 2: a tensor saved for backward, then a step =====
do
  local v = tt.tensor{1, 2, 3}:requires_grad_()
  local opt = tt.optim.SGD({v}, {lr = 1})
  ;(v * 10):sum():backward()
  local y = (v * v):sum()
  opt:step()
  opt:zero_grad()
  checkerror({"backward: one of the variables needed for gradient computation has been modified by an inplace "
              .. "operation: [3] float32, input 1 of mul (MulBackward), is at version 1; expected version 0 instead",
              "an optimizer step"}, function() y:backward() end)
  check("... and no gradient was written", v.grad == nil)
end

-- ===== Every in-place op against every op that saves a tensor =====
-- An op: make(x) gives the loss from the leaf x and names the tensors
-- its backward saves (any of "x", "c" a constant operand, "y" its
-- result, "i" an int64 index, "m" a bool mask); the in-place ops are
-- then run on each of them in turn.
local function leaf(shape, lo) return tt.rand(table.unpack(shape)):add_(lo or 0.5):requires_grad_() end
local function consts(shape) return tt.rand(table.unpack(shape)):add_(0.5) end
local ops = {
  {"mul", {"x", "c"}, function(x, s) s.c = consts{3, 4}; return x * s.c end},
  {"div", {"x", "c", "y"}, function(x, s) s.c = consts{3, 4}; s.y = x / s.c; return s.y end},
  {"rdiv", {"x", "y"}, function(x, s) s.y = 2 / x; return s.y end},
  {"pow", {"x", "c", "y"}, function(x, s) s.c = consts{3, 4}; s.y = x ^ s.c; return s.y end},
  {"pow scalar", {"x"}, function(x) return x ^ 3 end},
  {"maximum", {"x", "c"}, function(x, s) s.c = consts{3, 4}; return x:maximum(s.c) end},
  {"exp", {"y"}, function(x, s) s.y = x:exp(); return s.y end},
  {"log", {"x"}, function(x) return x:log() end},
  {"sqrt", {"y"}, function(x, s) s.y = x:sqrt(); return s.y end},
  {"abs", {"x"}, function(x) return x:abs() end},
  {"relu", {"x"}, function(x) return x:relu() end},
  {"gelu", {"x"}, function(x) return x:gelu() end},
  {"tanh", {"y"}, function(x, s) s.y = x:tanh(); return s.y end},
  {"sigmoid", {"y"}, function(x, s) s.y = x:sigmoid(); return s.y end},
  {"max", {"x", "y", "i"}, function(x, s) s.y, s.i = x:max(2); return s.y end},
  {"min", {"x", "y", "i"}, function(x, s) s.y, s.i = x:min(2); return s.y end},
  {"std", {"x", "y"}, function(x, s) s.y = x:std(2); return s.y end},
  {"var", {"x", "y"}, function(x, s) s.y = x:var(2); return s.y end},
  {"softmax", {"y"}, function(x, s) s.y = x:softmax(2); return s.y end},
  {"log_softmax", {"y"}, function(x, s) s.y = x:log_softmax(2); return s.y end},
  {"masked_fill", {"m"}, function(x, s) s.m = tt.tensor{true, false, false, true}; return x:masked_fill(s.m, 0) end},
  {"matmul", {"x", "c"}, function(x, s) s.c = consts{4, 2}; return x:matmul(s.c) end},
  {"einsum", {"x", "c"}, function(x, s) s.c = consts{4, 2}; return tt.einsum("i j, j k -> i k", x, s.c) end},
  {"index_select", {"i"}, function(x, s) s.i = tt.tensor{3, 1}:long(); return x:index_select(1, s.i) end},
  {"gather", {"i"}, function(x, s) s.i = tt.tensor{{1}, {4}, {2}}:long(); return x:gather(2, s.i) end},
  -- (its targets are saved as a zero-based copy: a later write to them
  -- cannot reach the backward, tested below)
  {"cross_entropy", {"x"}, function(x, s) s.i = tt.tensor{1, 4, 2}:long(); return tt.cross_entropy(x, s.i) end},
  {"sdpa", {"x", "c", "y"}, function(x, s)
     s.c = consts{3, 4}
     s.y = tt.sdpa(x:unsqueeze(1), s.c:unsqueeze(1), s.c:unsqueeze(1))
     return s.y
   end},
  {"sdpa mask", {"m"}, function(x, s)
     s.m = tt.tensor{{true, true, false}, {true, true, true}, {false, true, true}}
     return tt.sdpa(x:unsqueeze(1), x:unsqueeze(1), x:unsqueeze(1), {mask = s.m})
   end},
}
-- each writes into t (t's values are any); float ones need a float t
local writes = {
  {"add_", true, function(t) t:add_(1) end},
  {"sub_", true, function(t) t:sub_(t) end},
  {"mul_", true, function(t) t:mul_(2) end},
  {"div_", true, function(t) t:div_(2) end},
  {"masked_fill_ into a view", false, function(t) t:narrow(1, 1, 1):masked_fill_(tt.tensor{true}, 0) end},
  {"fill_", false, function(t) t:fill_(1) end},
  {"zero_", false, function(t) t:zero_() end},
  {"copy_", false, function(t) t:copy_(t:clone()) end},
  {"SGD step", true, "sgd"}, {"AdamW step", true, "adamw"},
}
local pairs_tested, silent = 0, {}
for _, op in ipairs(ops) do
  local name, targets, make = op[1], op[2], op[3]
  -- the control: unchanged, the backward runs
  local x0 = leaf{3, 4}
  local ok, why = pcall(function() make(x0, {}):sum():backward() end)
  check(name .. ": backward runs when nothing changed" .. (ok and "" or (": " .. tostring(why))), ok and x0.grad ~= nil)
  for _, target in ipairs(targets) do
    for _, wr in ipairs(writes) do
      local wname, float_only, write = wr[1], wr[2], wr[3]
      local is_float = target ~= "i" and target ~= "m"
      local optimizer = type(write) == "string"
      if (is_float or not float_only) and (not optimizer or target == "x") then
        local xl, s = leaf{3, 4}, {}
        local loss = make(xl, s):sum()
        local t = target == "x" and xl or s[target]
        if optimizer then
          xl.grad = tt.ones(3, 4)
          local opt = write == "sgd" and tt.optim.SGD({xl}, {lr = 0.1}) or tt.optim.AdamW({xl}, {lr = 0.1})
          opt:step()
          xl.grad = nil
        else
          tt.no_grad(write, t)                -- x and y require grad: only under no_grad
        end
        local okb, msg = pcall(loss.backward, loss)
        msg = tostring(msg)
        pairs_tested = pairs_tested + 1
        local good = not okb and msg:find("one of the variables needed for gradient computation has been "
                                          .. "modified by an inplace operation", 1, true) ~= nil
                     and msg:find("expected version", 1, true) ~= nil
        if not good then silent[#silent + 1] = name .. " / " .. target .. " / " .. wname .. ": " .. msg end
        check(name .. ": " .. wname .. " on its saved '" .. target .. "' makes backward raise", good)
      end
    end
  end
end
print(string.format("version counter: %d (op, saved tensor, in-place write) triples", pairs_tested))
check("the matrix is not empty", pairs_tested > 200)

-- a write into a tensor nobody saved is fine (x * 2 saves nothing: the
-- backward reads the 2 alone, as PyTorch's)
do
  local xl = leaf{3}
  local loss = (xl * 2):sum()
  tt.no_grad(function() xl:fill_(5) end)
  loss:backward()
  same_values("x * 2 saves no x: a later write is harmless", xl.grad, {2, 2, 2})
end

-- the message names the op, the shapes and the role of what changed
do
  local xl, c = leaf{2, 5}, consts{5, 3}
  local loss = xl:matmul(c):sum()
  c:mul_(3)
  checkerror({"backward: one of the variables needed for gradient computation", "[5,3] float32, input 2 of matmul "
              .. "(MatmulBackward), is at version 2; expected version 1 instead"}, loss.backward, loss)
  local yl = leaf{4}
  local e = yl:exp()
  local l2 = e:sum()
  tt.no_grad(function() e:add_(1) end)
  checkerror({"[4] float32, the result of exp (ExpBackward), is at version 1; expected version 0"}, l2.backward, l2)
  local ix = tt.tensor{2, 1}:long()
  local l3 = leaf{3, 2}:index_select(1, ix):sum()
  ix:fill_(3)
  checkerror({"[2] int64, input 2 of index_select (IndexSelectBackward), is at version 1"}, l3.backward, l3)
  local mx = leaf{2, 3}
  local vals, idx = mx:max(2)
  local l4 = vals:sum()
  idx:zero_()
  checkerror({"[2] int64, the indices of max (MaxBackward)"}, l4.backward, l4)
  -- cross_entropy keeps its own zero-based copy of the targets: a write
  -- to them after the forward changes nothing (the gradient is the
  -- forward's: softmax - onehot of the targets as they were)
  local logits = tt.tensor{{0, 0}}:requires_grad_()
  local tg = tt.tensor{1}:long()
  local l5 = tt.cross_entropy(logits, tg)
  tg:fill_(2)
  l5:backward()
  same_values("cross_entropy: targets changed after the forward do not reach its backward", logits.grad, {-0.5, 0.5})
end

-- ===== backward() twice =====
do
  local xl = tt.tensor{1, 2, 3}:requires_grad_()
  local y = (xl * xl):sum()
  y:backward()
  checkerror({"backward: trying to backward through the graph a second time (or directly access saved tensors "
              .. "after they have already been freed)", "retain_graph = true"}, y.backward, y)
  -- retained: the second adds to the first, as PyTorch: 2x + 2x
  local xr = tt.tensor{1, 2, 3}:requires_grad_()
  local yr = (xr * xr):sum()
  yr:backward(nil, {retain_graph = true})
  same_values("retain_graph: first backward", xr.grad, {2, 4, 6})
  yr:backward()
  same_values("retain_graph: the second accumulates", xr.grad, {4, 8, 12})
  checkerror({"backward: trying to backward through the graph a second time"}, yr.backward, yr)
  -- PyTorch's positional form, and the table as the only argument
  local xp = tt.tensor{1, 2}:requires_grad_()
  local yp = (xp:exp()):sum()
  yp:backward(nil, true)
  yp:backward{retain_graph = true}
  yp:backward()
  local e1, e2 = math.exp(1), math.exp(2)
  T.close("retain_graph: three backwards of exp", xp.grad, {3 * e1, 3 * e2}, 1e-6)
  -- a graph whose nodes saved nothing runs again, as in PyTorch
  local xs = tt.tensor{1, 2}:requires_grad_()
  local ys = (xs + 1):sum()
  ys:backward()
  ys:backward()
  same_values("no saved tensors: backward twice accumulates", xs.grad, {2, 2})
  checkerror({"backward: unknown option 'retain' (options: retain_graph)"}, function() yr:backward(nil, {retain = true}) end)
  checkerror({"backward: options must be a table such as {retain_graph = true}, got a number"},
             function() yr:backward(nil, 1) end)
  checkerror({"backward: option 'retain_graph' must be true or false, not a number"},
             function() yr:backward{retain_graph = 1} end)
end

-- ===== Deep graphs: an explicit stack, and the engine within the cap =====
local dir = T.tmpdir()
local chain = T.write(dir, "chain.lua", [[
local n = tonumber(arg[1])
local x = tt.tensor{1.5}:requires_grad_()
local y = x
for i = 1, n do y = y + 1e-6 end
collectgarbage()
print("forward done")
y:sum():backward()
print(x.grad:item())
]])
local out, err, code, secs = T.run(dir, "-q " .. chain .. " 1000000")
check("a million-op chain: backward finishes (" .. string.format("%.1f", secs) .. " s)",
      code == 0 and out:find("forward done\n1.0", 1, true) ~= nil)
print(string.format("a million-op chain, forward and backward: %.1f s", secs))
-- 200000 ops: the graph (~75 MB) fits in 100M, the engine's lists
-- (~46 MB more) do not: the cap's error, not memory past the cap
out, err, code = T.run(dir, "-q --max-memory 100M " .. chain .. " 200000")
check("a chain past the cap in backward: the cap's error (exit " .. tostring(code) .. ")",
      code == 1 and out:find("forward done", 1, true) ~= nil
      and err:find("backward: the engine's lists for this graph: ", 1, true) ~= nil
      and err:find("hint: raise it with --max-memory", 1, true) ~= nil)
out, err, code = T.run(dir, "-q --max-memory 300M " .. chain .. " 200000")
check("... and within a cap that holds it", code == 0 and out:find("forward done\n1.0", 1, true) ~= nil)
os.execute("rm -rf '" .. dir .. "'")

T.report()
