-- test_did_you_mean.lua — a misspelt method or tt function: Lua's "attempt to
-- call a nil value (method 'sofmax')" gets "; did you mean softmax?", from
-- the CLI and from --compare (the page shows the same messages). Names far
-- from every method, and tables that are not tt's, get no guess.
local T = dofile("tests/lua/check.lua")
local check = T.check

local dir = T.tmpdir()

-- The first line of stderr of a script run through ./tensortrace -q.
local function first_error(name, text)
  local _, err, code = T.run(dir, "-q " .. T.write(dir, name, text))
  return (err:match("^[^\n]*") or ""), code
end

local function says(descr, text, want)
  local line, code = first_error("s.lua", "local x = tt.ones(2, 3)\n" .. text .. "\n")
  local ok = code ~= 0 and line:sub(-#want) == want
  check(descr .. ": " .. line, ok)
end

says("a method one letter short", "x:sofmax(2)",
     "s.lua:2: attempt to call a nil value (method 'sofmax'); did you mean softmax?")
says("two letters swapped", "x:sfotmax(2)", "(method 'sfotmax'); did you mean softmax?")
says("a letter left out", "x:tranpose(1, 2)", "(method 'tranpose'); did you mean transpose?")
says("a tt function", "tt.sofmax(x, 2)", "(field 'sofmax'); did you mean tt.softmax?")
says("a tt.nn class", "local l = tt.nn.Linaer(3, 4)", "(field 'Linaer'); did you mean tt.nn.Linear?")
says("a tt.trace function", "tt.trace.sction('a')", "(field 'sction'); did you mean tt.trace.section?")
says("no method near it", "x:frobnicate()", "attempt to call a nil value (method 'frobnicate')")
says("a string's method is not a tensor's", "local s = 'abc'; s:uper()", "attempt to call a nil value (method 'uper')")
says("a script's own table is not tt", "local t = {}; t.sofmax(x)", "attempt to call a nil value (field 'sofmax')")
says("the last miss must be the name called", "local _ = x.sofmax; local t = {}; t.sum(x)",
     "attempt to call a nil value (field 'sum')")

-- what a script sees is unchanged: a missing name is nil, tt's keys are the same
local nkeys = 0
for _ in pairs(tt) do nkeys = nkeys + 1 end
local x = tt.ones(2)
check("a missing method is nil", x.sofmax == nil and tt.sofmax == nil and tt.nn.Linaer == nil)
check("tt's own names are found", tt.softmax ~= nil and tt.nn.Linear ~= nil and x.softmax ~= nil)
check("pairs(tt) lists tt's names", nkeys > 20 and rawget(tt, "softmax") == tt.softmax)

-- --compare (an exercise's check, also in the page) says it in its verdict
local sol = T.write(dir, "sol.lua", 'local x = tt.ones(2, 3):label("x")\nlocal y = x:softmax(2):label("y")\n')
local mine = T.write(dir, "mine.lua", 'local x = tt.ones(2, 3):label("x")\nlocal y = x:sofmax(2):label("y")\n')
local out, err = T.run(dir, "--compare " .. sol .. " " .. mine)
check("--compare: the verdict guesses the method",
      (out .. err):find("attempt to call a nil value (method 'sofmax'); did you mean softmax?", 1, true) ~= nil)

os.execute("rm -rf " .. dir)
T.report()
