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
checkerror({"sdpa: scale must be a finite float32, got nan"}, tt.sdpa, x4, x4, x4, {scale = 0 / 0})
-- boolean options take booleans only: "no" would otherwise count as true
checkerror({"sdpa: option 'causal' must be true or false, not a string"}, tt.sdpa, x4, x4, x4, {causal = "no"})
checkerror({"sdpa: option 'weights' must be true or false, not a number"}, tt.sdpa, x4, x4, x4, {weights = 1})
checkerror({"Linear: option 'bias' must be true or false, not a string"}, tt.nn.Linear, 2, 3, {bias = "false"})
checkerror({"trace.summary: option 'times' must be true or false, not a number"}, tt.trace.summary, {times = 0})
checkerror({"trace.summary: option 'print' must be true or false, not a string"}, tt.trace.summary, {print = "no"})

-- sdpa: every message names the op and the shapes, with a hint where one helps
local qn = tt.zeros(2, 4, 5, 8):named("B", "H", "Nq", "Dh")
local kn = tt.zeros(2, 4, 6, 8):named("B", "H", "Nk", "Dh")
-- a square mask of the right shape and the wrong meaning: names catch it
local qs = tt.zeros(2, 4, 8):named("B", "Nq", "Dh")
local ks = tt.zeros(2, 4, 8):named("B", "Nk", "Dh")
checkerror({"sdpa: dim names differ: 'Nq' vs 'Nk' at dim -1 of mask [Nk=4,Nq=4] and the scores [B=2,Nq=4,Nk=4]; "
            .. "hint: the mask is [keys, queries]; mask:mT() swaps them"},
           tt.sdpa, qs, ks, ks, {mask = tt.causal_mask(4):named("Nk", "Nq")})
checkerror({"sdpa: dim names differ: 'T' vs 'Nk' at dim -1 of mask [Nq=4,T=4] and the scores [B=2,Nq=4,Nk=4]; "
            .. "hint: rename with x:named(...)"},
           tt.sdpa, qs, ks, ks, {mask = tt.causal_mask(4):named("Nq", "T")})
check("sdpa: a mask named like the scores is fine",
      pcall(tt.sdpa, qs, ks, ks, {mask = tt.causal_mask(4):named("Nq", "Nk")}))
checkerror({"sdpa: mask [4,4] does not broadcast to the scores [B=2,H=4,Nq=5,Nk=6] (dim -1: 4 vs 6); "
            .. "hint: the mask's last two dims are Nq = 5 queries and Nk = 6 keys (or 1 to broadcast)"},
           tt.sdpa, qn, kn, kn, {mask = tt.causal_mask(4)})
checkerror({"sdpa: mask [2,6] does not broadcast to the scores [B=2,H=4,Nq=5,Nk=6] (dim -2: 2 vs 5); "
            .. "hint: a padding mask [B, Nk] needs mask:reshape(2, 1, 1, 6) to broadcast over the heads and queries"},
           tt.sdpa, qn, kn, kn, {mask = tt.ones(2, 6):bool()})
checkerror({"sdpa: mask [6,5] does not broadcast to the scores [B=2,H=4,Nq=5,Nk=6] (dim -1: 5 vs 6); "
            .. "hint: the mask is [Nk, Nq]; mask:mT() puts the 5 queries first"},
           tt.sdpa, qn, kn, kn, {mask = tt.causal_mask(6, 5)})
checkerror({"sdpa: mask [1,2,4,5,6] has more dims than the scores [B=2,H=4,Nq=5,Nk=6] (5 vs 4); "
            .. "hint: the mask is [..., Nq, Nk], Nq = 5 queries and Nk = 6 keys"},
           tt.sdpa, qn, kn, kn, {mask = tt.ones(1, 2, 4, 5, 6):bool()})
-- unnamed inputs: the scores without names; names from k alone show too
checkerror({"sdpa: mask [3,6] does not broadcast to the scores [3,5,6] (dim -2: 3 vs 5); "
            .. "hint: a padding mask [B, Nk] needs mask:reshape(3, 1, 6) to broadcast over the queries"},
           tt.sdpa, tt.zeros(3, 5, 8), tt.zeros(3, 6, 8), tt.zeros(3, 6, 8), {mask = tt.ones(3, 6):bool()})
checkerror({"sdpa: mask [4,4] does not broadcast to the scores [B=2,H=4,5,Nk=6]"},
           tt.sdpa, tt.zeros(2, 4, 5, 8), kn, kn, {mask = tt.causal_mask(4)})
checkerror({"sdpa: mask must be bool (true = may attend), got float32 [5,5]; hint: mask:bool()"},
           tt.sdpa, x4, x4, x4, {mask = tt.zeros(5, 5)})
checkerror({"sdpa: q must be float32, bfloat16 or float16, got bool [1,4,5,8]; hint: x:float()"}, tt.sdpa, x4:bool(), x4, x4)
checkerror({"sdpa: q, k and v need the same number of dims (at least 2): q [B=2,H=4,Nq=5,Dh=8], k [2,6,8], "
            .. "v [B=2,H=4,Nk=6,Dh=8]; hint: k:unsqueeze(-3) gives k a head dim of size 1"},
           tt.sdpa, qn, tt.zeros(2, 6, 8), kn)
checkerror({"sdpa: q, k and v need the same number of dims (at least 2): q [8], k [5,8], v [5,8]; "
            .. "hint: one position is a row, q:unsqueeze(1)"}, tt.sdpa, tt.zeros(8), tt.zeros(5, 8), tt.zeros(5, 8))
checkerror({"sdpa: batch dims differ: q [B=2,H=4,Nq=5,Dh=8], k [1,4,6,8], v [B=2,H=4,Nk=6,Dh=8] (dim 1: 2, 1, 2); "
            .. "hint: sdpa does not broadcast them: k:expand(2, 4, 6, 8)"}, tt.sdpa, qn, tt.zeros(1, 4, 6, 8), kn)
checkerror({"k:expand(2, 4, 6, 8), and v likewise"}, tt.sdpa, qn, tt.zeros(1, 4, 6, 8), tt.zeros(1, 4, 6, 8))
checkerror({"sdpa: batch dims differ: q [B=2,H=4,Nq=5,Dh=8], k [3,4,6,8], v [3,4,6,8] (dim 1: 2, 3, 3); "
            .. "hint: q, k and v need the same batch dims"}, tt.sdpa, qn, tt.zeros(3, 4, 6, 8), tt.zeros(3, 4, 6, 8))
checkerror({"sdpa: q and k head sizes differ: q [B=2,H=4,Nq=5,Dh=8], k [2,4,6,16] (8 vs 16)"},
           tt.sdpa, qn, tt.zeros(2, 4, 6, 16), tt.zeros(2, 4, 6, 16))
checkerror({"sdpa: k and v lengths differ: k [B=2,H=4,Nk=6,Dh=8], v [2,4,7,8] (6 vs 7)"},
           tt.sdpa, qn, kn, tt.zeros(2, 4, 7, 8))
checkerror({"sdpa: k and v head counts differ: k [1,2,5,8], v [1,4,5,8] (2 vs 4)"},
           tt.sdpa, x4, tt.zeros(1, 2, 5, 8), x4)
checkerror({"sdpa: query heads (4) are not a multiple of kv heads (3): q [1,4,5,8], k [1,3,5,8]"},
           tt.sdpa, x4, tt.zeros(1, 3, 5, 8), tt.zeros(1, 3, 5, 8))
checkerror({"sdpa: mask must be a bool tensor, got number"}, tt.sdpa, x4, x4, x4, {mask = 3})
checkerror({"sdpa: scale must be a number, got string"}, tt.sdpa, x4, x4, x4, {scale = "a"})
checkerror({"sdpa: scale must be a finite float32, got inf"}, tt.sdpa, x4, x4, x4, {scale = math.huge})
checkerror({"sdpa: scale must be a finite float32, got -inf"}, tt.sdpa, x4, x4, x4, {scale = -math.huge})

-- matmul: dtypes, scalars, batch dims (GQA by hand gets a hint)
checkerror({"matmul: expects float32, got bool [2,3] @ float32 [3,2]; hint: x:float()"},
           tt.matmul, tt.zeros(2, 3):bool(), tt.zeros(3, 2))
checkerror({"matmul: both arguments need at least 1 dim, got [] @ [2]; hint: use * for a scalar"},
           tt.matmul, tt.tensor(1), tt.zeros(2))
checkerror({"matmul: inner sizes differ: [5,64] @ [5,64] (64 vs 5); did you mean k:mT()?"},
           function() return q:matmul(q) end)
checkerror({"matmul: inner sizes differ: [2,3] @ [4,5] (3 vs 4)"}, tt.matmul, tt.zeros(2, 3), tt.zeros(4, 5))
checkerror({"matmul: batch dims cannot broadcast: [B=1,H=8,N=5,Dh=4] @ [1,2,4,5] (batch dim 2: 8 vs 2); "
            .. "hint: x:repeat_interleave(4, 2) repeats the right operand's 2 into 8 (as in GQA; "
            .. "tt.sdpa shares K/V heads without a copy)"},
           tt.matmul, tt.zeros(1, 8, 5, 4):named("B", "H", "N", "Dh"), tt.zeros(1, 2, 4, 5))
checkerror({"batch dim 1: 2 vs 6); hint: x:repeat_interleave(3, 1) repeats the left operand's 2 into 6"},
           tt.matmul, tt.zeros(2, 5, 4), tt.zeros(6, 4, 5))
local bmsg = checkerror({"matmul: batch dims cannot broadcast: [3,5,4] @ [2,4,5] (batch dim 1: 3 vs 2)"},
                        tt.matmul, tt.zeros(3, 5, 4), tt.zeros(2, 4, 5))
check("no hint when no dim is a multiple of the other", not bmsg:find("hint", 1, true))

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

-- indices and ranges: the message quotes what the script wrote, and the valid range
checkerror({"select: index -5 out of range for dim 1 of [4] (valid 1..4 or -4..-1)"},
           function() return tt.zeros(4)[-5] end)
checkerror({"select: index -3 out of range for dim 2 of [2,2] (valid 1..2 or -2..-1)"},
           function() return tt.zeros(2, 2):select(2, -3) end)
checkerror({"select: index 5 out of range for dim 1 of [4] (valid 1..4)"}, function() return tt.zeros(4)[5] end)
checkerror({"narrow: range start -10, length 2 is outside dim 1 of [4] (size 4); -1 is the last position"},
           function() return tt.zeros(4):narrow(1, -10, 2) end)
checkerror({"narrow: range start -2, length 5 is outside dim 1 of [4] (size 4); -1 is the last position"},
           function() return tt.zeros(4):narrow(1, -2, 5) end)
checkerror({"narrow: range start 0, length 2 is outside dim 1 of [4] (size 4); Lua counts from 1"},
           function() return tt.zeros(4):narrow(1, 0, 2) end)

-- integral floats are integers (as math.tointeger says): the overflow check then speaks
checkerror({"zeros: shape [1099511627776,1099511627776] is too large (its element count overflows)"},
           tt.zeros, {2^40, 2^40})
checkerror({"zeros: shape [1099511627776,1099511627776] is too large"}, tt.zeros, 2^40, 2^40)
-- no elements, nothing to overflow: only the strides must fit (as PyTorch)
do
  local z = tt.zeros(0, math.maxinteger)
  check("zeros(0, maxinteger): 0 elements", z:numel() == 0 and z:shape()[2] == math.maxinteger)
  check("zeros(0, maxinteger): strides fit", z:stride()[1] == math.maxinteger and z:stride()[2] == 1)
  check("zeros(0, maxinteger):sum(2) is [0]", z:sum(2):numel() == 0 and z:sum():item() == 0)
  check("zeros(maxinteger, 0):transpose", tt.zeros(math.maxinteger, 0):transpose(1, 2):numel() == 0)
end
checkerror({"sum: shape [9223372036854775807] is too large (its element count overflows)"},
           function() return tt.zeros(0, math.maxinteger):sum(1) end)
checkerror({"zeros: shape [0,1099511627776,1099511627776] is too large (its element count overflows)"},
           tt.zeros, 0, 2^40, 2^40)
checkerror({"zeros: size 1 must be an integer, got 1.5"}, tt.zeros, 1.5)
checkerror({"zeros: size 2 must be an integer, got 1.5"}, tt.zeros, {2, 1.5})
checkerror({"sum: dim must be an integer, got 1.5"}, function() return q:sum(1.5) end)
checkerror({"zeros: size 1 must be an integer, got 9.2233720368548e+18"}, tt.zeros, 2^63)
checkerror({"rearrange: sizes must map axis names to integers"}, tt.rearrange, tt.zeros(4), "(h d) -> h d", {h = 1.5})
checkerror({"named: field 'n' must be a count of names from 0 to 8, got 1.5"},
           function() return tt.zeros(2):named{"a", n = 1.5} end)

-- NUL bytes would cut a name short in silence
checkerror({"named: a name contains a NUL byte (\\0)"}, function() return tt.zeros(2):named("a\0b") end)
checkerror({"named: a name contains a NUL byte"}, function() return tt.zeros(2):named{"a\0b"} end)
checkerror({"label: the label contains a NUL byte"}, function() return tt.zeros(2):label("x\0y") end)
checkerror({"rearrange: the pattern contains a NUL byte"}, tt.rearrange, tt.zeros(2, 3), "a b -> b a\0 junk")
checkerror({"rearrange: an axis name in sizes contains a NUL byte"}, tt.rearrange, tt.zeros(4), "(h d) -> h d",
           {["h\0x"] = 2})
checkerror({"einsum: the pattern contains a NUL byte"}, tt.einsum, "i j -> j i\0", tt.zeros(2, 3))
checkerror({"zeros: dtype contains a NUL byte"}, tt.zeros, 2, "bool\0x")
checkerror({"tensor: dtype contains a NUL byte"}, tt.tensor, {1, 2}, "float32\0")
checkerror({"causal_mask: align contains a NUL byte"}, tt.causal_mask, 3, 3, "upper_left\0")
checkerror({"softmax: dim name contains a NUL byte"}, function() return q:named("N", "D"):softmax("D\0x") end)

-- closed tensors: an error naming the op, never a crash
local closed = tt.zeros(2, 3)
do local c <close> = closed end
checkerror({"calling 'exp' on bad self (tensor was closed)"}, function() return closed:exp() end)
checkerror({"add: tensor was closed (argument 1)"}, function() return closed + 1 end)
checkerror({"mul: tensor was closed (argument 2)"}, function() return 2 * closed end)
checkerror({"cat: element 2 of the list is a closed tensor"}, tt.cat, {tt.zeros(2, 3), closed})
checkerror({"sdpa: the mask tensor was closed"}, tt.sdpa, x4, x4, x4, {mask = closed})
checkerror({"allclose: tensor was closed (argument 2)"}, tt.allclose, tt.zeros(2, 3), closed)
check("tostring of a closed tensor", tostring(closed) == "tensor (closed)")

T.report()
