-- test_errors.lua — every misuse raises a Lua error naming the op, the
-- shapes, the script line, and a hint where one helps.
local T = dofile("tests/lua/check.lua")
local check, checkerror = T.check, T.checkerror
local tt = require "tt"

local q = tt.zeros(5, 64)
local here = "test_errors.lua:"

-- matmul with the classic missing transpose, and the line of the script
local msg = checkerror({"matmul", "[5,64]", "did you mean", "mT()"}, function() return q:matmul(q) end)
check("error carries file:line of the script", msg:find(here, 1, true) ~= nil)
checkerror({"matmul", "[2,3]", "[4,5]"}, tt.matmul, tt.zeros(2, 3), tt.zeros(4, 5))
checkerror({"matmul", "[] @ [2]"}, tt.matmul, tt.tensor(1), tt.zeros(2))

-- broadcasting names both shapes
checkerror({"add", "[2,3]", "[4]"}, function() return tt.zeros(2, 3) + tt.zeros(4) end)
checkerror({"mul", "[2,3]", "[3,2]"}, function() return tt.zeros(2, 3) * tt.zeros(3, 2) end)

-- dims out of range
checkerror({"transpose", "dim 3", "[5,64]"}, function() return q:transpose(1, 3) end)
checkerror({"softmax", "dim -3", "[5,64]"}, function() return q:softmax(-3) end)
checkerror({"softmax", "dim is required", "x:softmax(-1)"}, function() return q:softmax() end)
checkerror({"sum", "dim 0"}, function() return q:sum(0) end)
checkerror({"select", "index 6", "[5,64]"}, function() return q:select(1, 6) end)
checkerror({"select", "Lua counts from 1"}, function() return q[0] end)
checkerror({"narrow", "[5,64]"}, function() return q:narrow(1, 4, 5) end)
checkerror({"permute", "[5,64]"}, function() return q:permute(1, 1) end)
checkerror({"permute", "3 dims given"}, function() return q:permute(1, 2, 3) end)

-- view on a non-contiguous tensor suggests reshape/contiguous
checkerror({"view", "[64,5]", "reshape", "contiguous"}, function() return q:mT():view(320) end)
checkerror({"view", "[5,64]", "[7]"}, function() return q:view(7) end)
checkerror({"reshape", "-1"}, function() return q:reshape(-1, -1) end)
checkerror({"expand", "[5,64]", "[5,3]"}, function() return q:expand(5, 3) end)

-- ragged nested tables and wrong types
checkerror({"tensor", "ragged", "t[2]"}, tt.tensor, {{1, 2}, {3}})
checkerror({"tensor", "t[1][2]", "string"}, tt.tensor, {{1, "x"}})
checkerror({"tensor", "ragged"}, tt.tensor, {{1, 2}, 3})
checkerror({"bad argument #1", "tensor"}, tt.tensor, "abc")
checkerror({"zeros", "negative"}, tt.zeros, 2, -3)
checkerror({"zeros", "integer"}, tt.zeros, 2.5)
checkerror({"zeros", "unknown dtype"}, tt.zeros, 2, "int8")
checkerror({"tt.Tensor expected"}, function() return q:matmul(3) end)
checkerror({"add", "string"}, function() return q + "a" end)
checkerror({"item", "[5,64]"}, function() return q:item() end)

-- dtypes
checkerror({"softmax", "bool", "x:float()"}, function() return tt.zeros(2, "bool"):softmax(1) end)
checkerror({"masked_fill", "bool"}, function() return q:masked_fill(tt.zeros(5, 64), 0) end)
checkerror({"not", "float32", "x:bool()"}, function() return ~q end)

-- masks of the wrong shape
checkerror({"masked_fill", "[5,64]", "[3,3]"}, function() return q:masked_fill(tt.causal_mask(3), 0) end)
local x4 = tt.zeros(1, 4, 5, 8)
checkerror({"sdpa", "[1,3,5,8]", "[1,4,5,8]"}, tt.sdpa, x4, tt.zeros(1, 3, 5, 8), tt.zeros(1, 3, 5, 8))
checkerror({"sdpa", "mask"}, tt.sdpa, x4, x4, x4, {mask = tt.causal_mask(3)})
checkerror({"sdpa", "unknown option 'casual'"}, tt.sdpa, x4, x4, x4, {casual = true})
checkerror({"sdpa", "scale"}, tt.sdpa, x4, x4, x4, {scale = -1})

-- cat/stack
checkerror({"cat", "[2,3]", "[2,4]"}, tt.cat, {tt.zeros(2, 3), tt.zeros(2, 4)}, 1)
checkerror({"stack", "[2,3]", "[3,2]"}, tt.stack, {tt.zeros(2, 3), tt.zeros(3, 2)})
checkerror({"cat", "element 2"}, tt.cat, {tt.zeros(2), 5})
checkerror({"cat", "non-empty"}, tt.cat, {})

-- misc
checkerror({"causal_mask", "align"}, tt.causal_mask, 3, 3, "diagonal")
checkerror({"Linear", "in_features"}, function() return tt.nn.Linear(4, 2)(tt.zeros(3, 5)) end)
checkerror({"assert_close", "differ", "[2]"}, tt.assert_close, tt.tensor{1, 2}, tt.tensor{1, 3})
checkerror({"assert_close", "shapes differ"}, tt.assert_close, tt.zeros(2), tt.zeros(3))
checkerror({"no dim named 'K'"}, function() return q:softmax("K") end)
checkerror({"arange", "step"}, tt.arange, 0, 1, 0)

T.report()
