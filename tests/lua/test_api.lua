-- test_api.lua — every function of the `tt` module from Lua, against
-- values computed here by hand or with plain Lua loops.
local T = dofile("tests/lua/check.lua")
local check, close, checkerror = T.check, T.close, T.checkerror
local tt = require "tt"

check("global tt is require 'tt'", tt == _G.tt)

-- ===== creation =====
local a = tt.tensor{{1, 2, 3}, {4, 5, 6}}
check("tensor shape", table.concat(a:shape(), ",") == "2,3")
check("tensor dtype", a:dtype() == "float32")
close("tensor values", a, {{1, 2, 3}, {4, 5, 6}})
check("zeros(2,3) == zeros{2,3}", tt.allclose(tt.zeros(2, 3), tt.zeros{2, 3}))
close("ones", tt.ones(2), {1, 1})
close("full varargs", tt.full(2, 2, 0.5), {{0.5, 0.5}, {0.5, 0.5}})
close("full table", tt.full({3}, -2), {-2, -2, -2})
close("arange(n)", tt.arange(4), {0, 1, 2, 3})
close("arange(a,b,step)", tt.arange(1, 2, 0.25), {1, 1.25, 1.5, 1.75})
close("eye", tt.eye(2, 3), {{1, 0, 0}, {0, 1, 0}})
check("bool inferred", tt.tensor{true, false}:dtype() == "bool")
check("bool dtype arg", tt.tensor({1, 0}, "bool"):totable()[1] == true)
check("zeros bool", tt.zeros(2, "bool"):dtype() == "bool")
check("0-d tensor", tt.tensor(3.5):dim() == 0 and tt.tensor(3.5):item() == 3.5)
check("empty tensor", tt.zeros(0, 5):numel() == 0)

tt.manual_seed(7)
local r1 = tt.randn(3, 4)
tt.manual_seed(7)
local r2 = tt.randn(3, 4)
check("seeded randn repeats", tt.allclose(r1, r2, 0, 0))
local big = tt.randn(20000)
check("randn mean ~ 0", math.abs(big:mean():item()) < 0.03)
check("randn std ~ 1", math.abs(big:std():item() - 1) < 0.03)
local u = tt.rand(20000)
check("rand in [0,1)", u:min():item() >= 0 and u:max():item() < 1)
check("rand mean ~ 0.5", math.abs(u:mean():item() - 0.5) < 0.01)

-- ===== inspection =====
check("size(d)", a:size(2) == 3 and a:size(-1) == 3)
check("dim/numel", a:dim() == 2 and a:numel() == 6)
check("stride", table.concat(a:stride(), ",") == "3,1")
check("offset", a:offset() == 0)
check("is_contiguous", a:is_contiguous() and not a:mT():is_contiguous())
check("#x", #a == 2)
check("item", tt.tensor{{7}}:item() == 7)
check("tostring header", tostring(a):find("[2,3] float32", 1, true) ~= nil)
check("tostring values", tostring(a):find("[[1., 2., 3.],", 1, true) ~= nil)

-- long rows wrap at 80 columns between numbers, as PyTorch's linewidth does
do
  local x = tt.randn(5, 64)
  local text = tostring(x)
  local widest, nums = 0, {}
  for line in text:gmatch("[^\n]+") do widest = math.max(widest, utf8.len(line)) end
  for v in text:match("\n(.*)"):gmatch("[-%d.e+]+") do nums[#nums + 1] = tonumber(v) end
  local want, same = x:view(-1):totable(), #nums == 320
  for i = 1, 320 do same = same and math.abs(nums[i] - want[i]) <= 5.1e-5 * math.max(1, math.abs(want[i])) end
  check("a [5,64] tensor prints in lines of at most 80 columns (" .. widest .. ")", widest <= 80)
  check("every number whole on its line, in order", same)
  check("rows of a 1-D tensor wrap under the first number",
        tostring(tt.arange(20)) == "tensor [20] float32\n[ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13., 14., 15.,\n"
                                  .. " 16., 17., 18., 19.]")
  check("a wrapped row of a matrix continues under its first number",
        tostring(tt.ones(2, 20)):find("1., 1.,\n  1.],\n [1.,", 1, true) ~= nil)
  check("a big tensor is summarised as PyTorch does", tostring(tt.ones(2, 1200)) ==
        "tensor [2,1200] float32\n[[1., 1., 1., ..., 1., 1., 1.],\n [1., 1., 1., ..., 1., 1., 1.]]")
  local wide = tostring(tt.full({3, 40}, -123456.5):view(1, 120) * 1e30)
  local w2 = 0
  for line in wide:gmatch("[^\n]+") do w2 = math.max(w2, #line) end
  check("scientific numbers wrap too (" .. w2 .. ")", w2 <= 80)
end

-- ===== views =====
local x = tt.arange(24):view(2, 3, 4)
local xt = x:transpose(1, 3)
check("transpose shares storage", xt:shares_storage(x))
check("transpose shape", table.concat(xt:shape(), ",") == "4,3,2")
check("transpose strides", table.concat(xt:stride(), ",") == "1,4,12")
check("transpose value", xt[4][3][2]:item() == x[2][3][4]:item())
check("mT", table.concat(x:mT():shape(), ",") == "2,4,3")
local p = x:permute(3, 1, 2)
check("permute", table.concat(p:shape(), ",") == "4,2,3" and p[2][1][3]:item() == x[1][3][2]:item())
local n = x:narrow(3, 2, 2)
check("narrow view", n:shares_storage(x) and n:offset() == 1 and n[1][1][1]:item() == 1)
local s = x:select(2, 3)
check("select", table.concat(s:shape(), ",") == "2,4" and s[2][1]:item() == 20)
check("x[i] is select(1,i)", x[2][1][1]:item() == 12 and x[-1][1][1]:item() == 12)
local e = tt.tensor{{1}, {2}}:expand(2, 3)
check("expand stride 0", e:stride()[2] == 0)
close("expand values", e, {{1, 1, 1}, {2, 2, 2}})
check("expand -1", table.concat(tt.ones(3, 1):expand(-1, 4):shape(), ",") == "3,4")
check("unsqueeze", table.concat(a:unsqueeze(1):shape(), ",") == "1,2,3")
check("unsqueeze -1 appends", table.concat(a:unsqueeze(-1):shape(), ",") == "2,3,1")
check("squeeze all", table.concat(tt.zeros(1, 3, 1):squeeze():shape(), ",") == "3")
check("squeeze d", table.concat(tt.zeros(1, 3, 1):squeeze(1):shape(), ",") == "3,1")
local c = xt:contiguous()
check("contiguous copies when needed", not c:shares_storage(xt) and c:is_contiguous())
check("contiguous is a view when already", a:contiguous():shares_storage(a))
check("clone copies", not a:clone():shares_storage(a))
check("reshape is a view when possible", x:reshape(6, 4):shares_storage(x))
check("reshape copies when not", not xt:reshape(24):shares_storage(xt))
close("reshape of transposed keeps order", xt:reshape(24):narrow(1, 1, 3), {0, 12, 4})
check("view -1", table.concat(x:view(-1, 4):shape(), ",") == "6,4")
-- a transposed copy bigger than one 32x32 tile, checked element by element
local big3 = tt.arange(3 * 37 * 45):view(3, 37, 45)
local tc = big3:transpose(2, 3):contiguous()
local tcok, tct, bt = true, tc:totable(), big3:totable()
for b = 1, 3 do for i = 1, 45 do for j = 1, 37 do
  tcok = tcok and tct[b][i][j] == bt[b][j][i]
end end end
check("contiguous of a transposed view (tiled copy)", tcok and tc:is_contiguous())
local bt2 = tt.tensor({{true, false, true}}):expand(40, 3):mT():contiguous()
check("tiled copy of bool", bt2:size(1) == 3 and bt2[2][40]:item() == false and bt2[3][1]:item() == true)
local parts = tt.arange(10):chunk(3)
check("chunk sizes", #parts == 3 and parts[1]:numel() == 4 and parts[3]:numel() == 2)
local sp = tt.arange(10):split(4)
check("split sizes", #sp == 3 and sp[3]:numel() == 2 and sp[2][1]:item() == 4)
check("chunk on dim 2", #x:chunk(2, 3) == 2 and x:chunk(2, 3)[2]:size(3) == 2)

-- ===== arithmetic and broadcasting =====
local b = tt.tensor{10, 20, 30}
close("add broadcast", a + b, {{11, 22, 33}, {14, 25, 36}})
close("scalar left", 1 - a, {{0, -1, -2}, {-3, -4, -5}})
close("div scalar", a / 2, {{0.5, 1, 1.5}, {2, 2.5, 3}})
close("mul", a * a, {{1, 4, 9}, {16, 25, 36}})
close("pow", a ^ 2, {{1, 4, 9}, {16, 25, 36}})
close("unm", -b, {-10, -20, -30})
close("exp/log", tt.tensor{1, 2}:exp():log(), {1, 2})
close("sqrt", tt.tensor{4, 9}:sqrt(), {2, 3})
close("abs", tt.tensor{-1, 2}:abs(), {1, 2})
close("maximum", tt.tensor{1, 5}:maximum(tt.tensor{3, 2}), {3, 5})
close("minimum scalar", tt.tensor{1, 5}:minimum(2), {1, 2})
close("column broadcast", tt.tensor{{1}, {2}} * tt.tensor{1, 10}, {{1, 10}, {2, 20}})
local m = a:gt(2)
check("gt gives bool", m:dtype() == "bool")
close("comparisons", a:gt(2):float(), {{0, 0, 1}, {1, 1, 1}})
close("eq", a:eq(tt.tensor{1, 0, 3}):float(), {{1, 0, 1}, {0, 0, 0}})
close("ne/lt/le/ge", a:ne(2):float() + a:lt(2):float() + a:le(2):float() + a:ge(5):float(),
      {{3, 1, 1}, {1, 2, 2}})
close("not", (~m):float(), {{1, 1, 0}, {0, 0, 0}})
close("and/or/xor", ((m & a:lt(5)):float() * 4 + (m | a:lt(2)):float() * 2 + (m ~ a:lt(5)):float()),
      {{3, 1, 6}, {6, 3, 3}})
check("bool() of floats", tt.tensor{0, 2}:bool():totable()[2] == true)

-- ===== reductions =====
close("sum all", a:sum(), 21)
close("sum dim", a:sum(1), {5, 7, 9})
close("sum keepdim", a:sum(2, true), {{6}, {15}})
close("mean", a:mean(2), {2, 5})
local mv, mi = a:max(2)
close("max values", mv, {3, 6})
close("max indices 1-based", mi, {3, 3})
local nv, ni = tt.tensor{{3, 1, 2}}:min(2)
close("min values/indices", nv, {1}); close("min index", ni, {2})
close("argmax", tt.tensor{{1, 9, 3}, {7, 2, 7}}:argmax(2), {2, 1})
close("std (unbiased)", tt.tensor{1, 2, 3, 4}:std(), math.sqrt(5 / 3))
close("var", tt.tensor{1, 2, 3, 4}:var(), 5 / 3)
close("max all", a:max(), 6)
close("sum of empty is 0", tt.zeros(0, 3):sum(), 0)

-- ===== matmul =====
local A = tt.tensor{{1, 2}, {3, 4}, {5, 6}}
local B = tt.tensor{{1, 0, 2}, {0, 1, 3}}
close("matmul", A:matmul(B), {{1, 2, 8}, {3, 4, 18}, {5, 6, 28}})
close("tt.matmul", tt.matmul(A, B), {{1, 2, 8}, {3, 4, 18}, {5, 6, 28}})
close("matmul transposed view", A:matmul(A:mT()), {{5, 11, 17}, {11, 25, 39}, {17, 39, 61}})
close("matvec 1-D", A:matmul(tt.tensor{1, 1}), {3, 7, 11})
close("vecmat 1-D", tt.tensor{1, 1, 1}:matmul(A), {9, 12})
close("dot 1-D", tt.tensor{1, 2}:matmul(tt.tensor{3, 4}), 11)
local Bt = tt.stack({A, A * 2}, 1)
check("batched matmul broadcast", table.concat(Bt:matmul(B):shape(), ",") == "2,3,3")
close("batched values", Bt:matmul(B)[2], {{2, 4, 16}, {6, 8, 36}, {10, 12, 56}})

-- ===== attention pieces =====
local sm = tt.tensor{{1, 2, 3}, {0, 0, 0}}:softmax(2)
local e1, e2, e3 = math.exp(1), math.exp(2), math.exp(3)
close("softmax", sm, {{e1 / (e1 + e2 + e3), e2 / (e1 + e2 + e3), e3 / (e1 + e2 + e3)}, {1 / 3, 1 / 3, 1 / 3}})
close("softmax dim 1", tt.tensor{{0, 0}, {0, 0}}:softmax(1), {{0.5, 0.5}, {0.5, 0.5}})
close("softmax of large values is stable", tt.tensor{1000, 1000}:softmax(1), {0.5, 0.5})
local ninf = -math.huge
close("softmax with -inf", tt.tensor{0, ninf}:softmax(1), {1, 0})
local nan = tt.tensor{ninf, ninf}:softmax(1):totable()
check("all -inf row gives NaN", nan[1] ~= nan[1] and nan[2] ~= nan[2])
local cm = tt.causal_mask(3)
close("causal_mask", cm:float(), {{1, 0, 0}, {1, 1, 0}, {1, 1, 1}})
close("causal_mask lower_right", tt.causal_mask(2, 4):float(), {{1, 1, 1, 0}, {1, 1, 1, 1}})
close("causal_mask upper_left", tt.causal_mask(2, 4, "upper_left"):float(), {{1, 0, 0, 0}, {1, 1, 0, 0}})
close("masked_fill", tt.zeros(3, 3):masked_fill(~cm, ninf),
      {{0, ninf, ninf}, {0, 0, ninf}, {0, 0, 0}})
close("tril", tt.ones(3, 3):tril(), {{1, 0, 0}, {1, 1, 0}, {1, 1, 1}})
close("triu k=1", tt.ones(3, 3):triu(1), {{0, 1, 1}, {0, 0, 1}, {0, 0, 0}})
close("repeat_interleave", tt.tensor{{1, 2}}:repeat_interleave(2, 2), {{1, 1, 2, 2}})
close("repeat_interleave flat", tt.tensor{{1, 2}}:repeat_interleave(2), {1, 1, 2, 2})
close("cat", tt.cat({tt.ones(1, 2), tt.zeros(2, 2)}, 1), {{1, 1}, {0, 0}, {0, 0}})
close("cat dim 2", tt.cat({tt.ones(1, 1), tt.zeros(1, 2)}, 2), {{1, 0, 0}})
close("stack", tt.stack({tt.tensor{1, 2}, tt.tensor{3, 4}}, 2), {{1, 3}, {2, 4}})

-- the articles' 3-token hand example, through the formula and through sdpa
local Q = tt.tensor{{1, 0}, {0, 1}, {1, 1}}
local V = tt.tensor{{1, 0}, {0, 2}, {1, 1}}
local S = Q:matmul(Q:mT()) / math.sqrt(2)
close("hand example scores q3", S[3], {0.70710678, 0.70710678, 1.41421356})
local W = S:softmax(2)
close("hand example weights q3", W[3], {0.24825, 0.24825, 0.50350}, 1e-4)
close("hand example output q3", W:matmul(V)[3], {0.75175, 1.00000}, 1e-4)
local O, Ws = tt.sdpa(Q:view(1, 3, 2), Q:view(1, 3, 2), V:view(1, 3, 2), {weights = true})
close("sdpa hand example", O[1][3], {0.75175, 1.00000}, 1e-4)
close("sdpa weights", Ws[1], W:totable(), 1e-5)

-- sdpa: causal, mask polarity, GQA, empty rows
tt.manual_seed(1)
local q, k, v = tt.randn(1, 4, 5, 8), tt.randn(1, 2, 5, 8), tt.randn(1, 2, 5, 8)
local kr, vr = k:repeat_interleave(2, 2), v:repeat_interleave(2, 2)
local ref = (q:matmul(kr:mT()) / math.sqrt(8)):masked_fill(~tt.causal_mask(5), ninf):softmax(-1):matmul(vr)
tt.assert_close(tt.sdpa(q, k, v, {causal = true}), ref, 1e-5, 1e-5, "sdpa GQA causal")
tt.assert_close(tt.sdpa(q, k, v, {mask = tt.causal_mask(5)}), ref, 1e-5, 1e-5, "sdpa mask keeps true")
local scale = 0.3
local ref2 = (q:matmul(kr:mT()) * scale):softmax(-1):matmul(vr)
tt.assert_close(tt.sdpa(q, k, v, {scale = scale}), ref2, 1e-5, 1e-5, "sdpa scale")
local none = tt.zeros(5, 5, "bool")
close("sdpa fully masked rows give zeros", tt.sdpa(q, k, v, {mask = none})[1][1], tt.zeros(5, 8):totable())
check("assert_close passes", pcall(tt.assert_close, tt.ones(2), {1, 1}))

-- ===== nn.Linear =====
tt.manual_seed(3)
local proj = tt.nn.Linear(4, 3)
check("Linear weight shape", table.concat(proj.weight:shape(), ",") == "3,4")
check("Linear bias shape", table.concat(proj.bias:shape(), ",") == "3")
check("Linear init bound", proj.weight:abs():max():item() <= 0.5)
local xin = tt.randn(2, 5, 4)
tt.assert_close(proj(xin), xin:matmul(proj.weight:mT()) + proj.bias, 1e-6, 1e-6, "Linear forward")
check("Linear without bias", tt.nn.Linear(4, 3, {bias = false}).bias == nil)

-- ===== allclose / assert_close / clock =====
check("allclose true", tt.allclose(tt.tensor{1, 2}, tt.tensor{1, 2.000001}))
check("allclose false", not tt.allclose(tt.tensor{1, 2}, tt.tensor{1, 2.1}))
check("allclose number", tt.allclose(tt.ones(3), 1))
local t0 = tt.clock()
check("clock monotonic", type(t0) == "number" and tt.clock() >= t0)
-- isatty: run.sh sends this script's output to a file, so 1 and 2 are no terminal
check("isatty(1) of a file", tt.isatty(1) == false)
check("isatty(2) of a file", tt.isatty(2) == false)
check("isatty of a closed descriptor", tt.isatty(987) == false)
-- kernel_path: one of the four, and one this CPU can run (test_kernels checks it follows a forced path)
do
  local path = tt.kernel_path()
  check("kernel_path is a path name", path == "avx512_bf16" or path == "avx512" or path == "avx2" or path == "scalar")
  local f = io.open("/proc/cpuinfo")
  if f then
    local flags = f:read("a"); f:close()
    check("kernel_path avx512 needs avx512f", path ~= "avx512" or flags:find("avx512f", 1, true) ~= nil)
    check("kernel_path avx512_bf16 needs avx512_bf16", path ~= "avx512_bf16" or flags:find("avx512_bf16", 1, true) ~= nil)
    -- a build without SIMD (make scalar) can force no SIMD path and runs scalar
    local simd = pcall(tt.kernel_path, "avx512_bf16") or pcall(tt.kernel_path, "avx2")
    tt.kernel_path("auto")
    check("a SIMD build on a CPU with avx512_bf16 takes that path",
          flags:find("avx512_bf16", 1, true) == nil or not simd or path == "avx512_bf16")
    check("a build that can force no SIMD path runs scalar", simd or path == "scalar")
    check("kernel_path avx2 needs avx2 and fma", path ~= "avx2" or (flags:find(" avx2", 1, true) and flags:find(" fma", 1, true)) ~= nil)
  end
  -- forcing a path: the ops follow it (a matmul's bits are those of the path)
  -- until "auto" gives the CPU's choice back
  local a, b = tt.randn(67, 45), tt.randn(45, 83)
  check("kernel_path('scalar') returns scalar", tt.kernel_path("scalar") == "scalar")
  check("kernel_path() says scalar after it", tt.kernel_path() == "scalar")
  local on_scalar = a:matmul(b)
  check("kernel_path('auto') returns the CPU's choice", tt.kernel_path("auto") == path)
  check("the same product on the scalar path twice", tt.kernel_path("scalar") and a:matmul(b):eq(on_scalar):all():item())
  tt.kernel_path(path)
  check("kernel_path(path) sets it back", tt.kernel_path() == path)
  tt.assert_close(a:matmul(b), on_scalar, 1e-5, 1e-5, "each path's product is the same to rounding")
  checkerror({"kernel_path: unknown path 'avx9' (paths: avx512_bf16, avx512, avx2, scalar, auto)"}, tt.kernel_path, "avx9")
  if path == "scalar" then
    checkerror({"kernel_path: this machine (or build) cannot run the avx2 path; it runs scalar",
                'hint: "scalar" runs everywhere'}, tt.kernel_path, "avx2")
  end
  check("a refused path leaves the path as it was", tt.kernel_path() == path)
end
checkerror({"bad argument #1 to 'isatty'", "must be >= 0"}, function() tt.isatty(-1) end)
checkerror({"bad argument #1 to 'isatty'", "number expected"}, function() tt.isatty("stderr") end)
-- under script(1) (util-linux) stdout and stderr are a pseudo-terminal
if os.execute("command -v script >/dev/null 2>&1") then
  local p = io.popen("script -qec \"./tensortrace -q -e 'print(tt.isatty(1), tt.isatty(2))'\" /dev/null </dev/null")
  local got = p:read("a"); p:close()
  check("isatty(1), isatty(2) of a terminal", got:match("^true\ttrue") ~= nil)
end
-- a nested table that does not convert: the error names the script line
local x22 = tt.tensor{{1, 2}, {3, 4}}
local line = debug.getinfo(1, "l").currentline
checkerror({"test_api.lua:" .. (line + 2) .. ": tensor: ragged nested table: t[2] has 1 elements where 2 "
            .. "were expected"}, function() tt.assert_close(x22, {{1, 2}, {3}}) end)
checkerror({"test_api.lua:" .. (line + 4) .. ": tensor: t[2][2] is a string, expected a number"},
           function() tt.allclose({{1, 2}, {3, "4"}}, x22) end)

-- ===== labels =====
check("label chains", a:label("scores") == a and a:label() == "scores")

-- ===== long lists (cat/stack held every element on the C stack: heap corruption) =====
do
  local function list(n, r, c)
    local s = {}
    for i = 1, n do s[i] = tt.full(r, c, i) end
    return s
  end
  check("cat of 64 tensors", table.concat(tt.cat(list(64, 1, 8), 1):shape(), ",") == "64,8")
  check("stack of 64 tensors", table.concat(tt.stack(list(64, 1, 8), 1):shape(), ",") == "64,1,8")
  local t0 = tt.clock()
  local big = tt.cat(list(10000, 1, 2), 1)
  check("cat of 10000 tensors: shape", table.concat(big:shape(), ",") == "10000,2")
  check("cat of 10000 tensors: order", big[1][1]:item() == 1 and big[10000][2]:item() == 10000)
  check("stack of 100000 tensors", tt.stack(list(100000, 1, 1), 2):size(2) == 100000)
  check("cat/stack of 10000 and 100000 tensors are fast (linear)", tt.clock() - t0 < 5)
  -- a list whose __index closes an element it already gave: an error, not a crash
  local s = list(3, 1, 2)
  local evil = setmetatable({}, {__len = function() return 3 end,
                                 __index = function(_, i)
                                   if i == 3 then local c <close> = s[1] end
                                   return s[i]
                                 end})
  checkerror({"cat: tensor was closed during the call (input 1"}, tt.cat, evil, 1)
  -- chunk and split into many pieces
  local pieces = tt.arange(5000):chunk(5000)
  check("chunk into 5000 views", #pieces == 5000 and pieces[5000]:item() == 4999)
  check("chunk plans fewer pieces than asked", #tt.arange(6):chunk(4) == 3)
  check("split into 2500 views", #tt.arange(5000):split(2) == 2500)
end

-- ===== integral floats are integers (math.tointeger's rule) =====
check("sizes 2.0, 3.0", table.concat(tt.zeros(2.0, 3.0):shape(), ",") == "2,3")
check("a table of float sizes", table.concat(tt.ones{4 / 2, 2^1}:shape(), ",") == "2,2")
check("dim 2.0", tt.ones(2, 3):sum(2.0):numel() == 2)
check("view(-1.0)", tt.ones(2, 3):view(-1.0):numel() == 6)
check("index 2.0", tt.arange(3)[2.0]:item() == 1)
check("rearrange sizes {h = 2.0}", tt.rearrange(tt.zeros(4), "(h d) -> h d", {h = 2.0}):size(1) == 2)

-- ===== sdpa scale: any finite number, as PyTorch =====
do
  local q, k, v = tt.randn(1, 3, 4), tt.randn(1, 5, 4), tt.randn(1, 5, 4)
  local _, w0 = tt.sdpa(q, k, v, {scale = 0, weights = true})
  close("scale = 0 gives uniform weights", w0, tt.full(1, 3, 5, 0.2):totable(), 1e-6)
  local _, wn = tt.sdpa(q, k, v, {scale = -1, weights = true})
  close("scale = -1 is softmax(-q k^T)", wn, (q:matmul(k:mT()) * -1):softmax(-1):totable(), 1e-5)
  local _, wd = tt.sdpa(q, k, v, {weights = true})
  close("no scale: 1/sqrt(Dh)", wd, (q:matmul(k:mT()) / 2):softmax(-1):totable(), 1e-5)
end

-- ===== tensors closed while an op holds them =====
do
  local q = tt.randn(1, 2, 4, 8)
  -- an options table whose __index closes q: read before q is used
  local opts = setmetatable({}, {__index = function() local c <close> = q end})
  checkerror({"bad argument #1 to 'tt.sdpa' (tensor was closed)"}, tt.sdpa, q, q, q, opts)
  -- a finalizer that closes A, run by the collection that making A + 1's
  -- result starts (tensor memory past the collector's threshold)
  local A = tt.ones(3)
  local ballast = tt.zeros(17 * 2^20)       -- 68 MB: the next allocation collects
  -- (the trap is made in a coroutine: no stale register keeps it alive)
  coroutine.wrap(function() setmetatable({}, {__gc = function() local c <close> = A end}) end)()
  checkerror({"add: tensor was closed during the call (input 1, by a metamethod or a finalizer)"},
             function() return A + 1 end)
  ballast = nil
  collectgarbage()
  -- and in totable, whose tables are allocations too
  local B = tt.ones(200, 200)
  ballast = tt.zeros(17 * 2^20)
  coroutine.wrap(function() setmetatable({}, {__gc = function() local c <close> = B end}) end)()
  local ok, e = pcall(function() return B:totable() end)
  check("totable of a tensor closed meanwhile", ok or tostring(e):find("totable: tensor was closed", 1, true))
  ballast = nil
  collectgarbage()
end

-- ===== the metatable is not the script's to change =====
do
  local x = tt.ones(2)
  check("getmetatable(x) is a name", getmetatable(x) == "tt.Tensor")
  check("getmetatable(Linear) is a name", getmetatable(tt.nn.Linear(1, 1)) == "tt.Linear")
  -- debug reaches the real one: __gc and __close stay safe twice and on closed tensors
  local mt = debug.getregistry()["tt.Tensor"]
  mt.__gc(x)
  mt.__gc(x)
  mt.__close(x)
  check("a tensor closed twice by hand", tostring(x) == "tensor (closed)")
  checkerror({"bad argument #1", "tt.Tensor expected, got table"}, mt.__gc, {})
  -- a foreign userdata given the tensor metatable is still not a tensor
  local f = io.tmpfile()
  local fmt = debug.getmetatable(f)
  debug.setmetatable(f, mt)
  checkerror({"tt.Tensor expected"}, function() return f:exp() end)
  checkerror({"add: expects a tensor operand"}, function() return f + 1 end)
  checkerror({"tt.Tensor expected"}, mt.__gc, f)
  check("tostring of a foreign userdata", not pcall(tostring, f))
  debug.setmetatable(f, fmt)
  f:close()
end

T.report()
