-- test_docs.lua — the documentation tells the truth: every function the `tt`
-- module registers (found at run time) has its row in lua/README.md, every
-- example there (`code --> result`, `code --> error: message`) gives what
-- it says, README.md stays a short page whose transcript is what lesson 03
-- prints, and the counts the pages give are the real ones. (That every
-- option of --help is in the man page is checked by tests/test_install.sh.)
local T = dofile("tests/lua/check.lua")
local check = T.check

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local reference = slurp("lua/README.md")
local readme = slurp("README.md")

-- ===== every registered function has a row with an example =====

-- The rows of the reference's tables whose last column is "example" (a
-- table's first line is its header), in the order written.
local example_rows = {}
do
  local in_table, with_examples = false, false
  for line in (reference .. "\n"):gmatch("([^\n]*)\n") do
    if not line:match("^|") then
      in_table = false
    elseif not in_table then
      in_table, with_examples = true, line:match("| example |$") ~= nil
    elseif with_examples and not line:match("^|%-") then
      example_rows[#example_rows + 1] = line
    end
  end
end

-- Their first cells, and whether the last holds an example.
local rows = {}
for _, line in ipairs(example_rows) do
  local first = line:match("^| (.-) | ")
  local last = line:match(" | ([^|]*`[^|]*) |$")
  if first and last then rows[#rows + 1] = first end
end

local function documented(needle)
  for _, first in ipairs(rows) do
    if first:find(needle, 1, true) then return true end
  end
  return false
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

-- What a script can call, walked from the module itself: tt, tt.nn, tt.optim,
-- tt.trace, the tensor methods, and the optimizer's fields (which its
-- error for an unknown field lists).
local wanted = {}
for _, prefix in ipairs({"tt", "tt.nn", "tt.optim", "tt.trace"}) do
  local t = load("return " .. prefix)()
  for _, k in ipairs(sorted_keys(t)) do
    if type(t[k]) ~= "table" then wanted[#wanted + 1] = prefix .. "." .. k end
  end
end
local methods = debug.getmetatable(tt.zeros(1)).methods
check("the tensor methods are found", type(methods) == "table" and methods.softmax ~= nil)
for _, k in ipairs(sorted_keys(methods)) do wanted[#wanted + 1] = "x:" .. k end
local opt = tt.optim.SGD({tt.zeros(1):requires_grad_()})
local _, msg = pcall(function() return opt.no_such_field end)
local fields = tostring(msg):match("%(fields: (.-)%)")
check("the optimizer's fields are found: " .. tostring(msg), fields ~= nil)
for f in (fields or ""):gmatch("[%w_]+") do
  wanted[#wanted + 1] = type(opt[f]) == "function" and ("opt:" .. f) or ("opt." .. f)
end
check("the walk finds the module's functions (" .. #wanted .. ")", #wanted > 100)

for _, name in ipairs(wanted) do
  -- a call is documented as `tt.name(`, `x:name(` or `opt.lr` in a row's first cell
  local ok = documented(name .. "(") or documented(name .. "{") or documented(name .. "`")
  if not ok and name:match("^x:") then ok = documented(name:gsub("^x:", "y:") .. "(") end
  check(name .. " has a row with an example in lua/README.md", ok)
end

-- ===== every example gives what it says =====

-- How an example's results are written after "-->": numbers to 4
-- significant digits (integers as such), strings quoted, lists in braces,
-- tensors of up to 12 elements by their values, larger ones by shape and dtype.
local function render(v)
  local ty = type(v)
  if ty == "number" then
    if math.type(v) == "integer" then return string.format("%d", v) end
    if v ~= v then return "nan" end
    if v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
    return (string.format("%.4g", v))
  elseif ty == "string" then
    return string.format("%q", v)
  elseif ty == "table" then
    local parts, n = {}, #v
    for i = 1, n do parts[i] = render(v[i]) end
    local keys = {}
    for k in pairs(v) do
      if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
    end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. " = " .. render(v[k]) end
    return "{" .. table.concat(parts, ", ") .. "}"
  elseif ty == "userdata" and getmetatable(v) == "tt.Tensor" then
    if v:numel() <= 12 then return render(v:totable()) end
    return "[" .. table.concat(v:shape(), ",") .. "] " .. v:dtype()
  end
  return tostring(v)
end

-- Figures and files of the examples go to a temporary folder, not images/.
local dir = T.tmpdir()
local function to_tmp(s) return (s:gsub('"images/', '"' .. dir .. '/')) end
local function from_tmp(s) return (s:gsub(dir:gsub("%p", "%%%0") .. "/", "images/")) end

-- An example is an expression, a chunk, or statements ending in
-- `return expr`; each runs in its own environment.
local function compile(code)
  local env = setmetatable({}, {__index = _G})
  code = to_tmp(code)
  return load("return " .. code, "=example", "t", env) or load(code, "=example", "t", env)
end

local function run_example(code, expect)
  local f, err = compile(code)
  if not check("example compiles: " .. code .. (err and (": " .. err) or ""), f) then return end
  local r = table.pack(pcall(f))
  if expect and expect:match("^error: ") then
    local want = expect:sub(8)
    local got = from_tmp(tostring(r[2])):gsub("^example:%d+: ", "")
    check(code .. " raises '" .. want .. "', got " .. (r[1] and "no error" or ("'" .. got .. "'")),
          not r[1] and got:find(want, 1, true) ~= nil)
    return
  end
  if not check(code .. " runs: " .. tostring(r[2]), r[1]) then return end
  if expect then
    local parts = {}
    for i = 2, r.n do parts[#parts + 1] = render(r[i]) end
    local got = from_tmp(table.concat(parts, ", "))
    check(code .. " --> " .. expect .. ", got " .. got, got == expect)
  end
end

-- The examples in the last cell of those rows and every `code --> ...` in
-- them, in the order written (a checkpoint is saved before it is loaded).
tt.trace.off()
tt.manual_seed(0)
local examples = 0
for _, line in ipairs(example_rows) do
  local last = line:match("^|.* | ([^|]*`[^|]*) |$")
  local spans = {}
  for s in line:gmatch("`([^`]+ %-%-> [^`]+)`") do spans[s] = true end
  if last then
    for s in last:gmatch("`([^`]+)`") do spans[s] = true end
  end
  -- a table cell escapes its pipes
  local ordered = {}
  for s in line:gmatch("`([^`]+)`") do
    if spans[s] then ordered[#ordered + 1] = s; spans[s] = nil end
  end
  for _, s in ipairs(ordered) do
    s = s:gsub("\\|", "|")
    local code, expect = s:match("^(.-) %-%-> (.*)$")
    run_example(code or s, expect)
    examples = examples + 1
  end
end
tt.trace.on()
check("the examples are found (" .. examples .. ")", examples > 150)

-- ===== README.md: short, and its transcript and counts true =====

local nlines = select(2, readme:gsub("\n", ""))
check("README.md is a short page: " .. nlines .. " lines, at most 300", nlines <= 300)

-- The first code block: `$ ./tensortrace lessons/...` and runs of lines the
-- lesson prints, each run contiguous in its real output, separated by "...".
local block = readme:match("```\n(%$ %./tensortrace [^\n]+\n.-)```")
check("README.md opens with a transcript", block ~= nil)
if block then
  local cmd = block:match("^%$ %./(tensortrace [^\n]+)")
  local p = assert(io.popen("./" .. cmd .. " 2>&1"))
  local out = p:read("a")
  p:close()
  local run = {}
  local function flush()
    if #run > 0 then
      local text = table.concat(run, "\n") .. "\n"
      check("the README's transcript is what `" .. cmd .. "` prints:\n" .. text,
            out:find(text, 1, true) ~= nil)
    end
    run = {}
  end
  for l in block:gmatch("([^\n]*)\n") do
    if l:match("^%$ ") or l == "..." then flush() else run[#run + 1] = l end
  end
  flush()
end

-- tests/README.md counts the error catalogue's mistakes.
local n = 0
for f in io.popen("ls tests/errors"):lines() do
  if f:match("%.lua$") then n = n + 1 end
end
local said = slurp("tests/README.md"):match("the exact message of (%d+) mistakes")
check("tests/README.md counts " .. tostring(said) .. " mistakes; tests/errors has " .. n,
      tonumber(said) == n)

-- The pages link each other by paths that exist.
for _, page in ipairs({"README.md", "lua/README.md", "core/README.md", "tests/README.md"}) do
  local base = page:match("^(.-)[^/]*$")
  for target in slurp(page):gmatch("%]%(([^)#]+)[^)]*%)") do
    if not target:match("^https?:") then
      local f = io.open(base .. target)
      check(page .. " links to " .. target .. ", which exists", f ~= nil)
      if f then f:close() end
    end
  end
end

os.execute("rm -rf '" .. dir .. "'")
T.report()
