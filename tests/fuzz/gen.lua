-- gen.lua — random Lua programs over the whole tt API, for the fuzz runner
-- (tests/fuzz/run.lua). gen.program(seed, i, tmpdir) returns the source of
-- program i: a self-contained script (it runs alone through ./tensortrace)
-- of 10..40 statements, each `v[k] = P(function() return <call> end)`, so a
-- Lua error in one call does not stop the others. Arguments are drawn from
-- earlier results and from lists of awkward values: dims 0, 1, negative and
-- out of range, sizes from 0 to 2^62, NaN and ±inf, wrong types, nil, bool
-- tensors where floats are expected, bad einops patterns, bad figure options,
-- long lists (cat/stack of 30..3000 tensors, shape tables of hundreds of
-- entries), tables whose metamethods close tensors, collect garbage, raise
-- or answer nonsense in the middle of a call, finalizers that close tensors
-- while an op allocates, zero-size dims everywhere. gen.big_program makes
-- programs of huge shapes for a run under a small memory cap (run.lua
-- checks the peak RSS of such a run against the cap).
local M = {}

-- Known bugs in code owned by others, kept out of the programs until fixed
-- so that the CI batch stays green (TT_FUZZ_ALL=1 generates them anyway).
-- Each entry is a reproducer; delete the entry once it passes.
M.known = {}
local known = os.getenv("TT_FUZZ_ALL") ~= "1" and M.known or {}

local rnd = math.random
local function pick(t) return t[rnd(#t)] end
local function chance(p) return rnd() < p end

-- ===== leaves =====

local NUMBERS = {"0", "1", "2", "3", "-1", "-2", "0.5", "-0.0", "1e-3", "1e30", "-1e30", "(0/0)",
                 "math.huge", "-math.huge", "math.maxinteger", "math.mininteger", "2^31", "2^53",
                 "7", "1e-45", "3.4e38", "-3.4e38"}
local DIMS = {"1", "2", "3", "-1", "-2", "1", "2", "-1", "0", "4", "5", "-3", "-5", "9", "100",
              "-100", "'N'", "'B'", "'H'", "'x'", "1.5", "nil", "math.mininteger", "math.maxinteger",
              "true", "{}", "(0/0)"}
local SIZES = {"0", "1", "1", "2", "2", "3", "3", "4", "5", "8", "1", "2", "3", "17", "-1", "-3",
               "(1<<31)", "(1<<40)", "(1<<62)", "math.maxinteger", "math.mininteger", "2.5", "(0/0)",
               "1000", "64"}
local STRINGS = {"''", "'N'", "'B'", "'scores'", "'x y'", "'%s%d%n'", "'\\0'", "string.rep('a', 300)",
                 "'\\xff\\xfe'", "'float32'", "'bool'", "'int8'", "'...'", "'->'", "'lower_right'",
                 "'upper_left'", "'viridis'", "'diverging'"}
local NAMES = {"'B'", "'H'", "'N'", "'Nq'", "'Nk'", "'D'", "'Dh'", "nil", "'N'", "''", "'a b'", "1", "false"}

local function num() return pick(NUMBERS) end
local function size() return chance(0.8) and tostring(rnd(0, 5)) or pick(SIZES) end
local function dim() return chance(0.6) and tostring(pick({1, 2, -1, -2, 3})) or pick(DIMS) end

local function shape_list(n)
  local t = {}
  for i = 1, n do t[i] = size() end
  return table.concat(t, ", ")
end

local function shape_args()
  local n = chance(0.05) and rnd(7, 10) or rnd(0, 4)
  local s = shape_list(n)
  if chance(0.3) then return "{" .. s .. "}" end
  if chance(0.03) then return "setmetatable({}, {__len = function() return " .. pick(SIZES) .. " end})" end
  return s
end

-- a slot holding an earlier result (maybe nil or not a tensor)
-- (t(j): the latest tensor among v[1..j], so that most calls get one)
local function slot(k)
  local j = rnd(math.max(1, k - 1))
  return chance(0.8) and "t(" .. j .. ")" or "v[" .. j .. "]"
end

local ZERO_SIZE = {"tt.zeros(0, 3)", "tt.randn(2, 0, 3)", "tt.zeros(0)", "tt.ones(3, 0):bool()",
                   "tt.randn(0, 0)", "tt.randn(1, 2, 0, 4)", "tt.zeros(2, 3, 0)"}

local function tensor(k)
  if k > 1 and chance(0.85) then return slot(k) end
  if chance(0.1) then return pick(ZERO_SIZE) end
  local r = rnd(6)
  if r == 1 then return "tt.randn(" .. rnd(0, 4) .. ", " .. rnd(0, 5) .. ")" end
  if r == 2 then return "tt.tensor{{1, 2, 3}, {4, 5, 6}}" end
  if r == 3 then return "tt.causal_mask(" .. rnd(0, 4) .. ")" end
  if r == 4 then return "tt.randn(2, 3, 4, 5)" end
  if r == 5 then return "tt.tensor(" .. num() .. ")" end
  return "tt.zeros(0, 3)"
end

local function anyval(k)
  local r = rnd(14)
  if r <= 6 then return tensor(k) end
  if r == 7 then return num() end
  if r == 8 then return pick(STRINGS) end
  if r == 9 then return "nil" end
  if r == 10 then return pick({"true", "false"}) end
  if r == 11 then return "{}" end
  if r == 12 then return "{" .. tensor(k) .. ", " .. tensor(k) .. "}" end
  if r == 13 then return "print" end
  return "tt.nn.Linear(2, 3)"
end

-- a nested table literal of at most about `budget` leaves
local function nested(depth, budget)
  depth, budget = depth or 0, budget or 2000
  local r = rnd(12)
  if depth > 0 and r <= 4 then
    return pick({num(), "true", "false", "'x'", "nil", "{}", "print"})
  end
  if depth >= 9 or r == 5 or budget < 2 then return num() end
  local n = math.min(chance(0.1) and rnd(0, 40) or rnd(0, 4), budget)
  budget = budget // math.max(n, 1)
  local items = {}
  local inner = nil
  for i = 1, n do
    if chance(0.9) and inner then items[i] = inner
    else
      inner = nested(depth + 1, budget)
      items[i] = inner
    end
  end
  if chance(0.04) then
    return "setmetatable({" .. table.concat(items, ", ") .. "}, {__len = function() return " ..
           pick(SIZES) .. " end, __index = function() return 1 end})"
  end
  if chance(0.03) then
    return "setmetatable({}, {__len = function() return 2 end, __index = function() error('boom') end})"
  end
  return "{" .. table.concat(items, ", ") .. "}"
end

-- ===== tables that run code in the middle of a call =====

-- what an __index (or __len) function does before it answers
local function meddle(k, no_close)
  local j = rnd(math.max(1, k - 1))
  if no_close then return pick({"collectgarbage()", "error('meddle')", "for i = 1, 50 do local g = tt.zeros(64) end", ""}) end
  return pick({
    "local c <close> = t(" .. j .. ")",
    "collectgarbage()",
    "collectgarbage('step')",
    "error('meddle')",
    "for i = 1, 50 do local g = tt.zeros(64) end",
    "local c <close> = v[" .. j .. "]",
    "",
  })
end

local ODD = {"nil", "1", "0", "-1", "true", "'x'", "{}", "(0/0)", "math.huge", "2^40", "1.5",
             "tt.zeros(1)", "print", "'\\0'"}

-- `base` (a table constructor) with a metatable whose __index meddles then
-- answers an odd value (the keys it was given stay raw, as options must)
-- (a huge __len only where the call refuses it before walking: a nested
-- table claiming 1e9 elements makes tt.tensor call __index 1e9 times)
local function evil(k, base, huge_len, no_close)
  local lens = {"1", "2", "3", "0", "-1", "1.5", "'x'"}
  if huge_len then lens[#lens + 1] = pick({"2^31", "1e9", "math.maxinteger"}) end
  return "setmetatable(" .. base .. ", {__index = function() " .. meddle(k, no_close) .. "; return " ..
         pick(ODD) .. " end" .. (chance(0.3) and ", __len = function() " .. meddle(k, no_close) .. "; return " ..
         pick(lens) .. " end" or "") .. "})"
end

-- a finalizer armed to run at some later allocation, made in a coroutine
-- so that no stale register keeps the trap alive
local function trap(k)
  return "coroutine.wrap(function() setmetatable({}, {__gc = function() " .. meddle(k) .. " end}) end)()"
end

-- a list of n elements built at run time: the same tensor, distinct views,
-- or one odd element somewhere
local function long_list(k, n)
  local r = rnd(4)
  if r == 1 then return "L(" .. n .. ", " .. tensor(k) .. ")" end
  if r == 2 then return "LV(" .. n .. ", " .. tensor(k) .. ")" end
  if r == 3 then return "LX(" .. n .. ", " .. tensor(k) .. ", " .. rnd(n) .. ", " .. anyval(k) .. ")" end
  return evil(k, "L(" .. n .. ", " .. tensor(k) .. ")", true)
end

local function list_len() return chance(0.5) and rnd(30, 300) or pick({30, 40, 41, 64, 100, 1000, 3000}) end

-- ===== einops patterns =====

local AXES = {"b", "h", "n", "d", "s", "x", "y", "k", "b", "h", "n", "d", "head", "1", "2", "..."}

local function side(n)
  local parts = {}
  for i = 1, n do
    if chance(0.2) then
      local g = {}
      for j = 1, rnd(0, 3) do g[j] = pick(AXES) end
      parts[i] = "(" .. table.concat(g, " ") .. ")"
    else
      parts[i] = pick(AXES)
    end
  end
  return table.concat(parts, " ")
end

local PATTERNS = {
  "'b s (h d) -> b h s d'", "'b h s d -> b s (h d)'", "'... i d, ... j d -> ... i j'",
  "'b n d -> n b d'", "'i j -> j i'", "'i j, j k -> i k'", "'(a b) c -> a b c'", "'a b -> (a b)'",
  "'... -> ...'", "'a ... b -> b ... a'", "'i i -> i'", "'i, i ->'", "'a b c d -> (a c) (b d)'",
  "'b h n d, b h m d -> b h n m'", "'a (b c) -> a b c'",
}

local function pattern()
  local r = rnd(10)
  if r <= 4 then return pick(PATTERNS) end
  local s = side(rnd(0, 5)) .. (chance(0.9) and " -> " or " ") .. side(rnd(0, 5))
  if chance(0.15) then
    local pos = rnd(#s + 1)
    local junk = pick({"(", ")", "->", ",", ".", "..", "....", " ", "\0", "é", "1", "0", "_", "=", "(("})
    s = s:sub(1, pos - 1) .. junk .. s:sub(pos)
  end
  if chance(0.3) then s = side(rnd(1, 3)) .. ", " .. s end
  return string.format("%q", s)
end

local SIZE_NAMES = {"b", "h", "n", "d", "s", "x", "head", "h", "d"}

local function sizes_table()
  if chance(0.5) then return "nil" end
  local t = {}
  for i = 1, rnd(0, 3) do t[i] = pick(SIZE_NAMES) .. " = " .. size() end
  if chance(0.1) then return pick({"{h = 'x'}", "{[1] = 2}", "{h = 2.5}", "5", "'h=2'", "{[tt] = 1}"}) end
  return "{" .. table.concat(t, ", ") .. "}"
end

-- ===== options =====

local function figure_opts(k)
  if chance(0.3) then return "nil" end
  local keys = {
    function() return "title = " .. pick({"'t'", "string.rep('W', 500)", "'a\\nb'", "'\\xff'", "5", "{}"}) end,
    function() return "xlabels = " .. pick({"{'a', 'b', 'c'}", "{}", "{1, 2}", "{'x'}", "'abc'",
                                            "{string.rep('y', 200)}"}) end,
    function() return "ylabels = " .. pick({"{'a', 'b'}", "{}", "{nil, 'x'}", "{true}"}) end,
    function() return "xtitle = " .. pick({"'Key'", "''", "string.rep('k', 400)"}) end,
    function() return "ytitle = " .. pick({"'Query'", "7"}) end,
    function() return "annotate = " .. pick({"true", "false", "'yes'"}) end,
    function() return "cmap = " .. pick({"'viridis'", "'diverging'", "'gray'", "''", "3"}) end,
    function() return "vmin = " .. num() end,
    function() return "vmax = " .. num() end,
    function() return "colorbar = " .. pick({"true", "false"}) end,
    function() return "decimals = " .. num() end,
    function() return "panel_titles = " .. pick({"{'a'}", "{}", "{'a', 'b', 'c', 'd', 'e'}"}) end,
    function() return "labels = " .. pick({"{'a', 'b'}", "{}"}) end,
    function() return "row_scale = " .. pick({"true", "false"}) end,
    function() return "downsample = " .. pick({"'mean'", "'max'", "'x'", "1"}) end,
    function() return pick({"bogus = 1", "[1] = 2", "[tt] = 1"}) end,
  }
  local t = {}
  for i = 1, rnd(0, 4) do t[i] = pick(keys)() end
  local o = "{" .. table.concat(t, ", ") .. "}"
  return chance(0.15) and evil(k, o, false, known.figure_opts_close) or o
end

local function sdpa_opts(k)
  if chance(0.3) then return "nil" end
  local keys = {
    function() return "causal = " .. pick({"true", "false", "1"}) end,
    function() return "mask = " .. pick({tensor(k), tensor(k), "tt.causal_mask(" .. rnd(0, 5) .. ", " .. rnd(0, 5) .. ")", "5"}) end,
    function() return "scale = " .. num() end,
    function() return "weights = " .. pick({"true", "false"}) end,
    function() return pick({"casual = true", "[1] = 1"}) end,
    function() return "bias = " .. pick({tensor(k), tensor(k), "tt.causal_mask(3)", "0.5"}) end,
    function() return "alibi = " .. pick({"true", "false", "1"}) end,
    function() return "window = " .. pick({tostring(rnd(-1, 6)), "2.5", "math.huge", "'3'"}) end,
    function() return "sinks = " .. pick({tostring(rnd(-1, 6)), "0.5"}) end,
    function() return "dropout = " .. pick({"0", "0.1", "0.5", "0.99", "1", "-0.1", num()}) end,
  }
  local t = {}
  for i = 1, rnd(0, 3) do t[i] = pick(keys)() end
  local o = "{" .. table.concat(t, ", ") .. "}"
  return chance(0.15) and evil(k, o) or o
end

local function path(tmp)
  return pick({
    string.format("%q", tmp .. "/f" .. rnd(3) .. ".png"),
    string.format("%q", tmp .. "/f" .. rnd(3) .. ".png"),
    string.format("%q", tmp .. "/no_such_dir/x.png"),
    string.format("%q", tmp), "''", "nil", "{}",   -- (a number would write ./5)
    string.format("%q", tmp .. "/" .. string.rep("n", 300) .. ".png"),
  })
end

-- ===== calls =====

local T, A, D, S, N = tensor, anyval, dim, size, num

local CALLS = {
  -- creation
  function(k) return "tt.tensor(" .. nested() .. (chance(0.2) and ", " .. pick(STRINGS) or "") .. ")" end,
  function(k) local s = shape_args(); return pick({"tt.zeros", "tt.ones", "tt.rand", "tt.randn"}) .. "(" .. s ..
                     (chance(0.15) and (s == "" and "" or ", ") .. pick({"'bool'", "'float32'", "'int8'", "3", "nil"}) or "") .. ")" end,
  function(k) local s = shape_args(); return "tt.full(" .. s .. (s == "" and "" or ", ") .. N() .. ")" end,
  function(k) return chance(0.5) and "tt.arange(" .. N() .. ")" or "tt.arange(" .. N() .. ", " .. N() .. ", " .. N() .. ")" end,
  function(k) return "tt.arange(" .. rnd(-3, 20) .. ")" end,
  function(k) return "tt.eye(" .. S() .. (chance(0.5) and ", " .. S() or "") .. ")" end,
  function(k)
    local nq, nk = S(), S()
    if known.causal_mask_huge_empty and (nk == "0" or nq == "0") then nq, nk = "3", "0" end
    return "tt.causal_mask(" .. nq .. ", " .. nk .. (chance(0.3) and ", " .. pick(STRINGS) or "") .. ")"
  end,
  function(k) return "tt.manual_seed(" .. N() .. ")" end,
  function(k) return "tt.randn(" .. rnd(1, 3) .. ", " .. rnd(1, 4) .. ", " .. rnd(0, 6) .. ", " .. rnd(1, 8) .. ")" end,
  -- inspection
  function(k) return T(k) .. ":" .. pick({"shape", "dim", "numel", "offset", "dtype", "is_contiguous",
                                           "names", "item", "totable", "stride", "label"}) .. "()" end,
  function(k) return T(k) .. ":" .. pick({"size", "stride"}) .. "(" .. D() .. ")" end,
  function(k) return T(k) .. ":shares_storage(" .. A(k) .. ")" end,
  function(k) return "tostring(" .. T(k) .. ")" end,
  function(k) return "#" .. T(k) end,
  function(k) return T(k) .. "[" .. pick({"1", "2", "-1", "0", "100", "1.5", "'x'", "nil", "math.mininteger"}) .. "]" end,
  function(k) return T(k) .. ":label(" .. pick(STRINGS) .. ")" end,
  function(k) return T(k) .. ":named(" .. pick(NAMES) .. ", " .. pick(NAMES) .. (chance(0.5) and ", " .. pick(NAMES) or "") ..
                     (chance(0.3) and ", " .. pick(NAMES) or "") .. ")" end,
  function(k) return T(k) .. ":named{" .. pick(NAMES) .. ", " .. pick(NAMES) .. ", n = " .. rnd(0, 4) .. "}" end,
  -- views
  function(k) return T(k) .. ":" .. pick({"view", "reshape", "expand"}) .. "(" .. shape_args() .. ")" end,
  function(k) return T(k) .. ":transpose(" .. D() .. ", " .. D() .. ")" end,
  function(k) return T(k) .. ":mT()" end,
  function(k) return T(k) .. ":permute(" .. D() .. ", " .. D() .. (chance(0.6) and ", " .. D() or "") ..
                     (chance(0.4) and ", " .. D() or "") .. ")" end,
  function(k) return T(k) .. ":narrow(" .. D() .. ", " .. pick({"1", "2", "-1", "0", "5", N()}) .. ", " .. S() .. ")" end,
  function(k) return T(k) .. ":select(" .. D() .. ", " .. pick({"1", "2", "-1", "0", "3", N()}) .. ")" end,
  function(k) return T(k) .. ":" .. pick({"unsqueeze", "squeeze"}) .. "(" .. D() .. ")" end,
  function(k) return T(k) .. ":squeeze()" end,
  function(k) return T(k) .. ":" .. pick({"contiguous", "clone", "float", "bool"}) .. "()" end,
  function(k) return T(k) .. ":" .. pick({"chunk", "split"}) .. "(" .. S() .. (chance(0.7) and ", " .. D() or "") .. ")[" ..
                     pick({"1", "2", "#_ENV"}) .. "]" end,
  function(k) return "(" .. T(k) .. ":chunk(" .. S() .. ", " .. D() .. "))" end,
  -- arithmetic
  function(k) return A(k) .. " " .. pick({"+", "-", "*", "/", "^", "&", "|", "~"}) .. " " .. A(k) end,
  function(k) return T(k) .. " " .. pick({"+", "-", "*", "/", "^"}) .. " " .. N() end,
  function(k) return pick({"-", "~"}) .. T(k) end,
  function(k) return T(k) .. ":" .. pick({"exp", "log", "sqrt", "abs"}) .. "()" end,
  function(k) return T(k) .. ":" .. pick({"maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"}) .. "(" .. A(k) .. ")" end,
  -- reductions
  function(k) return T(k) .. ":" .. pick({"sum", "mean", "std", "var", "max", "min", "argmax", "argmin"}) .. "(" ..
                     (chance(0.7) and D() .. (chance(0.4) and ", " .. pick({"true", "false", "1"}) or "") or "") .. ")" end,
  function(k) return "select(2, " .. T(k) .. ":" .. pick({"max", "min"}) .. "(" .. D() .. "))" end,
  -- linear algebra and attention
  function(k) return T(k) .. ":matmul(" .. A(k) .. ")" end,
  function(k) return "tt.matmul(" .. T(k) .. ", " .. T(k) .. ")" end,
  function(k) return "tt.matmul(" .. T(k) .. ", " .. T(k) .. ":mT())" end,
  function(k) return T(k) .. ":softmax(" .. (chance(0.9) and D() or "") .. ")" end,
  function(k) return T(k) .. ":masked_fill(" .. A(k) .. ", " .. N() .. ")" end,
  function(k) return T(k) .. ":masked_fill(" .. T(k) .. ":bool(), -math.huge)" end,
  function(k) return T(k) .. ":" .. pick({"tril", "triu"}) .. "(" .. (chance(0.5) and pick({"0", "1", "-1", "100", N()}) or "") .. ")" end,
  function(k) return T(k) .. ":repeat_interleave(" .. S() .. (chance(0.7) and ", " .. D() or "") .. ")" end,
  function(k) return "tt." .. pick({"cat", "stack"}) .. "({" .. T(k) .. (chance(0.8) and ", " .. T(k) or "") ..
                     (chance(0.3) and ", " .. A(k) or "") .. "}" .. (chance(0.7) and ", " .. D() or "") .. ")" end,
  function(k) return "tt.rearrange(" .. T(k) .. ", " .. pattern() .. ", " .. sizes_table() .. ")" end,
  function(k)
    local n = rnd(0, 3)
    local args = {}
    for i = 1, n do args[i] = T(k) end
    return "tt.einsum(" .. pattern() .. (n > 0 and ", " .. table.concat(args, ", ") or "") .. ")"
  end,
  function(k) return "tt.sdpa(" .. T(k) .. ", " .. T(k) .. ", " .. T(k) .. ", " .. sdpa_opts(k) .. ")" end,
  function(k)       -- a well-formed attention call, so that the kernels run on odd shapes
    local b, hkv, g, nq, nk, dh = rnd(0, 2), rnd(chance(0.1) and 0 or 1, 3), rnd(1, 3), rnd(0, 7), rnd(0, 7),
                                  rnd(chance(0.15) and 0 or 1, 9)
    return string.format("tt.sdpa(tt.randn(%d, %d, %d, %d), tt.randn(%d, %d, %d, %d), tt.randn(%d, %d, %d, %d), %s)",
                         b, hkv * g, nq, dh, b, hkv, nk, dh, b, hkv, nk, dh, sdpa_opts(k))
  end,
  function(k) return "tt.randn(" .. rnd(0, 9) .. ", " .. rnd(0, 40) .. "):matmul(tt.randn(" .. rnd(0, 40) .. ", " .. rnd(0, 9) .. "))" end,
  -- building blocks and checks
  function(k) return "tt.nn.Linear(" .. S() .. ", " .. S() .. (chance(0.3) and ", {bias = " .. pick({"false", "true", "1"}) .. "}" or "") .. ")" end,
  function(k) return "tt.nn.Linear(" .. rnd(1, 5) .. ", " .. rnd(1, 5) .. ")(" .. A(k) .. ")" end,
  function(k) return "tt.allclose(" .. A(k) .. ", " .. A(k) .. (chance(0.3) and ", " .. N() .. ", " .. N() or "") .. ")" end,
  function(k) return "tt.assert_close(" .. A(k) .. ", " .. A(k) .. (chance(0.3) and ", " .. N() .. ", " .. N() .. ", " .. pick(STRINGS) or "") .. ")" end,
  -- trace
  function(k) return "tt.trace.section(" .. pick(STRINGS) .. ")" end,
  function(k) return "tt.trace." .. pick({"off", "on", "summary", "on"}) .. "()" end,
  -- figures
  function(k) return "tt.heatmap(" .. T(k) .. ", " .. path(M.tmp) .. ", " .. figure_opts(k) .. ")" end,
  function(k) return "tt.heatmap(tt.randn(" .. rnd(1, 3) .. ", " .. rnd(0, 9) .. ", " .. rnd(0, 9) .. "), " .. path(M.tmp) .. ", " .. figure_opts(k) .. ")" end,
  function(k) return "tt.bars(" .. T(k) .. ", " .. path(M.tmp) .. ", " .. figure_opts(k) .. ")" end,
  function(k) return "tt.flow(" .. path(M.tmp) .. ", " .. figure_opts(k) .. ")" end,
  -- long lists and long shape tables
  function(k) return "tt." .. pick({"cat", "stack"}) .. "(" .. long_list(k, list_len()) .. (chance(0.8) and ", " .. D() or "") .. ")" end,
  function(k) return "tt.cat(LV(" .. list_len() .. ", tt.randn(" .. rnd(0, 3) .. ", " .. rnd(0, 4) .. ")), " .. pick({"1", "2", "-1"}) .. ")" end,
  function(k) return T(k) .. ":" .. pick({"view", "reshape", "expand", "permute", "named"}) .. "(" ..
                     pick({"N1(", "N1(", "NS("}) .. pick({"9", "30", "300", "3000"}) .. "))" end,
  function(k) return pick({"tt.zeros", "tt.ones", "tt.randn"}) .. "(table.unpack(N1(" .. pick({"9", "40", "200"}) .. ")))" end,
  function(k) return T(k) .. ":" .. pick({"chunk", "split"}) .. "(" .. pick({"1", "2", "1000", "100000"}) .. ")" end,
  function(k) return "#tt.arange(" .. pick({"3000", "40000"}) .. "):chunk(" .. pick({"3000", "40000"}) .. ")" end,
  -- tables that meddle: as shapes, lists, options, nested data
  function(k) return T(k) .. ":" .. pick({"view", "reshape", "expand", "permute", "named"}) .. "(" .. evil(k, "{}") .. ")" end,
  function(k) return pick({"tt.zeros", "tt.ones", "tt.full"}) .. "(" .. evil(k, "{2, 3}") .. (chance(0.5) and ", 1" or "") .. ")" end,
  function(k) return "tt.tensor(" .. evil(k, "{1, 2}") .. ")" end,
  function(k) return "tt.allclose(" .. T(k) .. ", " .. evil(k, "{{1, 2, 3}, {4, 5, 6}}") .. ")" end,
  function(k) return "tt.nn.Linear(2, 3, " .. evil(k, "{}") .. ")" end,
  function(k) return "tt.trace.summary(" .. evil(k, "{}") .. ")" end,
  function(k) return "tt.rearrange(" .. T(k) .. ", 'a b -> b a', " .. evil(k, "{}") .. ")" end,
  -- finalizers that run while an op allocates
  function(k) return trap(k) end,
  function(k) return "(function() " .. trap(k) .. "; local g = tt.zeros(" .. pick({"1", "1000", "1e6"}) .. "); return " ..
                     T(k) .. " + 1 end)()" end,
  -- zero-size attention and figures of nothing
  function(k)
    local nq, nk = rnd(0, 2), rnd(0, 2)
    return string.format("tt.sdpa(tt.randn(%d, %d, %d), tt.randn(%d, %d, %d), tt.randn(%d, %d, %d), {causal = %s, weights = %s%s})",
                         rnd(0, 2), nq, rnd(0, 3), rnd(0, 2), nk, rnd(0, 3), rnd(0, 2), nk, rnd(0, 3),
                         pick({"true", "false"}), pick({"true", "false"}),
                         chance(0.3) and ", mask = tt.causal_mask(" .. nq .. ", " .. nk .. ")" or "")
  end,
  function(k) return pick({"tt.heatmap", "tt.bars"}) .. "(" .. pick(ZERO_SIZE) .. ", " .. path(M.tmp) .. ", " .. figure_opts(k) .. ")" end,
  -- the metatable and the debug library
  function(k) return "getmetatable(" .. T(k) .. ")" end,
  function(k) return "debug.getregistry()['tt.Tensor']." .. pick({"__gc", "__close"}) .. "(" .. T(k) .. ")" end,
  function(k) return "debug.getregistry()['tt.Tensor'].__gc(" .. A(k) .. ")" end,
  function(k) return "debug.getregistry()['tt.Tensor']." .. pick({"__index", "__add", "__len", "__tostring", "__unm"}) ..
                     "(" .. A(k) .. ", " .. A(k) .. ")" end,
  -- closing a tensor that is still referenced
  function(k) return "(function() local c <close> = " .. T(k) .. " end)()" end,
  function(k) return "collectgarbage()" end,
}

local PROLOGUE = [[
-- fuzz program %d of seed %d (tests/fuzz/gen.lua)
local tt = require "tt"
local v = {}
local FUZZ_ERR = FUZZ_ERR or function() end
local function P(f) local ok, r = pcall(f); if ok then return r end; FUZZ_ERR(r); return nil end
local TM = getmetatable(tt.zeros(1))
local function t(j)
  for i = j, 1, -1 do if getmetatable(v[i]) == TM then return v[i] end end
  return tt.randn(2, 3)
end
-- lists for cat/stack: n times x; n views of x; n times x but e at i
local function L(n, x) local s = {} for i = 1, n do s[i] = x end return s end
local function LV(n, x)
  local s = {}
  for i = 1, n do s[i] = getmetatable(x) == TM and x:view(x:shape()) or x end
  return s
end
local function LX(n, x, i, e) local s = L(n, x); s[i] = e; return s end
-- shape tables: n ones; n strings
local function N1(n) local s = {} for i = 1, n do s[i] = 1 end return s end
local function NS(n) local s = {} for i = 1, n do s[i] = "d" .. i end return s end
]]

-- ===== huge shapes under a small memory cap =====

local BIG = {"1000", "1024", "2048", "3000", "4096", "5000", "8192", "(1<<16)", "(1<<20)", "(1<<31)", "0", "1"}
local function big() return pick(BIG) end
local function fig() return known.figure_memory_outside_cap and pick({"1", "64", "256"}) or big() end
local function mid() return pick({"256", "512", "1000", "1024"}) end

local BIG_CALLS = {
  function() return "tt." .. pick({"zeros", "ones", "randn", "rand"}) .. "(" .. big() .. ", " .. big() .. ")" end,
  function() return "tt.full(" .. big() .. ", " .. big() .. ", 1)" end,
  function() return "tt.randn(" .. mid() .. ", " .. mid() .. "):matmul(tt.randn(" .. mid() .. ", " .. mid() .. "))" end,
  function() return "tt.sdpa(tt.randn(1, 2, " .. big() .. ", 16), tt.randn(1, 2, " .. big() .. ", 16), tt.randn(1, 2, " ..
                    big() .. ", 16), {causal = " .. pick({"true", "false"}) .. ", weights = " .. pick({"true", "false"}) .. "})" end,
  function() return "tt.causal_mask(" .. big() .. ", " .. big() .. ")" end,
  function() return "tt.heatmap(tt.randn(" .. fig() .. ", " .. fig() .. "), %q)" end,
  function() return "tt.heatmap(tt.randn(" .. (known.figure_memory_outside_cap and pick({"1", "16"}) or pick({"1", "64", "1000"})) ..
                    ", " .. fig() .. ", " .. pick({"1", "64"}) .. "), %q, {annotate = true})" end,
  function() return "tt.bars(tt.randn(" .. pick({"1", "64"}) .. ", " .. fig() .. "), %q)" end,
  function() return "#tt.randn(" .. big() .. "):totable()" end,
  function() return "#tostring(tt.randn(" .. big() .. ", " .. big() .. "))" end,
  function() return "tt.cat(L(" .. pick({"100", "1000", "3000"}) .. ", tt.randn(" .. mid() .. ", 16)), 1)" end,
  function() return "tt.stack(L(" .. pick({"100", "1000"}) .. ", tt.randn(" .. mid() .. ", 32)), 1)" end,
  function() return "tt.einsum('i j, j k -> i k', tt.randn(" .. mid() .. ", " .. mid() .. "), tt.randn(" .. mid() .. ", " .. mid() .. "))" end,
  function() return "tt.randn(" .. mid() .. ", 64):repeat_interleave(" .. big() .. ", 1)" end,
  function() return "tt.randn(" .. mid() .. ", 1):expand(" .. mid() .. ", " .. big() .. "):contiguous()" end,
  function() return "tt.rearrange(tt.randn(" .. mid() .. ", " .. mid() .. "), 'a b -> b a'):contiguous()" end,
  function() return "#tt.arange(" .. big() .. "):chunk(" .. big() .. ")" end,
  function() return "tt.randn(" .. mid() .. ", " .. big() .. "):softmax(-1):sum()" end,
  function() return "tt.tensor(N1(" .. pick({"1000", "100000", "1000000"}) .. "))" end,
}

-- Program i of huge shapes, to run alone under a small --max-memory (see
-- run.lua --rss): its last line prints the process's peak RSS ("VmHWM n"
-- in kB), so the runner can check it against the cap.
function M.big_program(seed, i, tmp)
  math.randomseed(seed, -i)
  local out = {string.format(PROLOGUE, i, seed)}
  for k = 1, rnd(6, 14) do
    local call = pick(BIG_CALLS)()
    if call:find("%q", 1, true) then call = string.format(call, tmp .. "/big" .. rnd(3) .. ".png") end
    out[#out + 1] = string.format("v[%d] = P(function() return %s end)", k, call)
    if chance(0.5) then out[#out + 1] = "collectgarbage()" end
  end
  out[#out + 1] = "local f = io.open('/proc/self/status')"
  out[#out + 1] = "if f then print('VmHWM ' .. (f:read('a'):match('VmHWM:%s*(%d+)') or '?')); f:close() end"
  return table.concat(out, "\n") .. "\n"
end

function M.program(seed, i, tmp)
  M.tmp = tmp
  math.randomseed(seed, i)
  local out = {string.format(PROLOGUE, i, seed)}
  local n = rnd(10, 40)
  for k = 1, n do
    out[#out + 1] = string.format("v[%d] = P(function() return %s end)", k, pick(CALLS)(k))
  end
  return table.concat(out, "\n") .. "\n"
end

return M
