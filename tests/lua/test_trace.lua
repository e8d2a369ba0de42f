-- test_trace.lua — the text trace tells the truth and stays bounded: labels,
-- call sites, check rows, precision, values of views, memory of held-back
-- rows and chunk sources, and JSON Lines that parse whatever the script does.
local T = dofile("tests/lua/check.lua")
local json = dofile("tests/lua/json.lua")
local check, checkerror = T.check, T.checkerror

local dir = T.tmpdir()
local function write(name, text) return T.write(dir, name, text) end
local function run(args) return T.run(dir, args) end
local has = function(s, pat) return s:find(pat, 1, true) ~= nil end
local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end
-- Peak resident memory of the tensortrace run (the script prints it last);
-- nil where /proc is missing or a sanitizer inflates it.
local peak_kb_code = [[
local f = io.open("/proc/self/status")
if f then print("PEAK " .. f:read("a"):match("VmHWM:%s*(%d+)")) f:close() end]]
local function peak_kb(out)
  if os.getenv("ASAN_OPTIONS") then return nil end
  return tonumber(out:match("PEAK (%d+)"))
end

-- ===== held-back rows are bounded =====
-- One line, many ops (a while loop: no pass of a for loop to fold): rows
-- come out while the line still runs, and memory stays flat (it grew by
-- ~1.5 KB a row before).
local out_path = dir .. "/out"
local script = write("loop.lua", string.format([[
local x = tt.ones(2)
local i = 0 while i < 100000 do local y = x + 1 i = i + 1 end local f = io.open(%q) SEEN = select(2, f:read("a"):gsub("\n    add ", "")) f:close()
print("seen while the line ran: " .. SEEN)
]], out_path) .. peak_kb_code)
local out, err, code = run(script)
check("one-line loop runs", code == 0, 1)
local seen = tonumber(out:match("seen while the line ran: (%d+)"))
check("rows of a long line are printed while it runs (" .. tostring(seen) .. ")", seen and seen >= 100000 - 64)
check("every row is printed once", count(out, "\n    add ") == 100000)
check("the header is printed once", count(out, "loop.lua:2 ") == 1)
check("a while loop on one line does not fold", not has(out, "more (same shapes)"))
local kb = peak_kb(out)
check("held-back rows use bounded memory (" .. tostring(kb) .. " KB)", kb == nil or kb < 64 * 1024)

-- ===== chunk sources are bounded =====
script = write("loads.lua", [[
local body = string.rep("a = 1 ", 3000)
for i = 1, 2000 do assert(load(body .. "-- " .. i .. "\nreturn tt.ones(1)"))() end
local z = tt.zeros(1)
]] .. peak_kb_code)
out, err, code = run(script)
check("a loop of load() runs", code == 0)
kb = peak_kb(out)
check("the text of loaded chunks uses bounded memory (" .. tostring(kb) .. " KB)", kb == nil or kb < 48 * 1024)
check("a loaded chunk's line still shows", has(out, "(string):2  return tt.ones(1)"))
check("the script's own lines still show after many chunks", has(out, "loads.lua:3  local z = tt.zeros(1)"))

-- ===== JSON Lines stay valid =====
local jpath = dir .. "/trace.json"
script = write("json.lua", [[
local x = tt.ones(2, 3):label(string.rep("\xc3\xa9", 20000))        -- 40 KB of valid UTF-8
local y = (x + 1):label("bad \xff\xfe \xc0\x80 \xed\xa0\x80 cut \xe2\x82")  -- invalid UTF-8
local z = y:named(string.rep("N", 5000), "q\"uo\\te\n\1\127")                  -- long and control names
local w = (z * 2):label(string.rep("x", 16384) .. "\"")
]])
out, err, code = run("-q --trace-json " .. jpath .. " " .. script)
check("json script runs", code == 0, 1)
local n, bad = 0, nil
for line in io.lines(jpath) do
  n = n + 1
  local ok, ev = pcall(json.decode, line)
  if not ok then bad = bad or ("line " .. n .. ": " .. tostring(ev)) end
  if ok and not utf8.len(line) then bad = bad or ("line " .. n .. ": not UTF-8") end
  if ok and ev.op == "ones" then
    check("a long label is cut with a marker", ev.output.label:sub(-3) == "..." and #ev.output.label < 1024)
    check("a long label keeps its text", ev.output.label:sub(1, 4) == "\xc3\xa9\xc3\xa9")
  elseif ok and ev.op == "add" then
    check("invalid UTF-8 becomes U+FFFD", ev.output.label:find("bad \u{FFFD}\u{FFFD} ", 1, true) == 1,
          1)
    check("a cut sequence at the end becomes U+FFFD", ev.output.label:sub(-3) == "\u{FFFD}")
  elseif ok and ev.op == "named" then
    check("control characters survive as escapes", ev.output.names[2] == "q\"uo\\te\n\1\127")
  end
end
check("every JSON line parses and is UTF-8: " .. tostring(bad), n == 4 and bad == nil)

-- ===== labels: the one the tensor had when the op ran =====
script = write("labels.lua", [[
local function project(x)
  return (x * 2):label("v new")
end
local v = project(tt.ones(2))
local cache = v:label("V cache")
local a = (tt.ones(3) + 1):label("same line")
local b = tt.ones(4)
b:label("later line")
local function attend(q) return q:exp() end
local z = attend(tt.ones(5)):label("Z at the call")
]])
out = run(script)
check("a row keeps the label given on its own line", has(out, "mul         [2] * 2.0 -> v new[2]"))
check("a label given on a later line does not rewrite a row", not has(out, "V cache"))
check("a label later on the same line shows", has(out, "-> same line[3]"))
check("later line: not shown", has(out, "ones        -> [4]") and not has(out, "later line"))
check("a label at the call site shows on the function's row", has(out, "exp         [5] -> Z at the call[5]"))

-- a label moved to a newer tensor: the older one is "(previous)"
-- (two calls from two lines: a loop's second pass would fold)
script = write("previous.lua", [[
local m = tt.zeros(2):label("m")
local function pass(i)
  local m_new = m:maximum(tt.ones(2) * i):label("m_new")
  local alpha = (m - m_new):exp():label("alpha")
  m = m_new
end
pass(1)
pass(2)
]])
out = run(script)
check("first pass: the old m", has(out, "sub         m[2] - m_new[2] -> [2]"))
check("second pass: the tensor that kept the old label says so",
      has(out, "sub         m_new (previous)[2] - m_new[2] -> [2]"))
check("an op on the same line that moves the label marks its input",
      has(out, "maximum     m_new (previous)[2], [2] -> m_new[2]"))
-- detach() keeps the label and the values: the same tensor, never "(previous)"
local detach_script = write("previous_detach.lua", [[
local out = tt.ones(2):label("out")
local O = out:detach()
local d = O - 1
local s = out:detach() + 2; out:label("out")
local old = out:detach()
local new = tt.zeros(2):label("out")
local e = old * 3
]])
out = run(detach_script)
check("a detached tensor is its own label's current tensor", has(out, "sub         out[2] - 1.0 -> [2]"))
check("relabelling on the same line leaves its detached view current", has(out, "add         out[2] + 2.0 -> [2]"))
check("a detached view of a tensor whose label moved on is previous", has(out, "mul         out (previous)[2] * 3.0 -> [2]"))
local j2 = dir .. "/prev.json"
run("-q --trace-json " .. j2 .. " " .. script)
local labels = {}
for line in io.lines(j2) do
  local ev = json.decode(line)
  if ev.op == "sub" then labels[#labels + 1] = ev.inputs[1].label end
end
check("JSON keeps the true label", labels[2] == "m_new")

-- ===== call sites =====
script = write("calls.lua", [[
local function inner(x)
  return x + 1
end
local function outer(x)
  return inner(x) * 2
end
local a = inner(tt.ones(2))
local b = inner(tt.ones(3))
local c = outer(tt.ones(4))
local d = (function(x) return x - 1 end)(tt.ones(5))
]])
out = run(script)
check("a function's row shows its caller", has(out, "calls.lua:2 \u{2190} line 7  return x + 1"))
check("a second call is a second group", has(out, "calls.lua:2 \u{2190} line 8  return x + 1"))
check("callers nest outwards", has(out, "calls.lua:2 \u{2190} line 5 \u{2190} line 9  return x + 1"))
check("a function called on its own line names no caller", has(out, "calls.lua:10  local d ="))
script = write("lib.lua", "local M = {}\nfunction M.f(x)\n  return x:exp()\nend\nreturn M\n")
local main = write("usesLib.lua", "package.path = '" .. dir .. "/?.lua;' .. package.path\n"
                   .. "local lib = require 'lib'\nlocal y = lib.f(tt.ones(2))\n")
out = run(main)
check("a caller in another file is named with its file", has(out, "lib.lua:3 \u{2190} " .. main .. ":3  return x:exp()"))

-- -e: the relevant line of the chunk, not the whole chunk
out = run([[-e 'local x = tt.ones(2)
local y = x + 1
print("done")']])
check("-e shows the line that ran", has(out, "(command line):2  local y = x + 1\n"))
check("-e does not echo the whole chunk", not has(out, "x + 1\nprint"))

-- ===== checks fold into one row =====
script = write("checks.lua", [[
local w = tt.ones(3):label("w")
tt.assert_close(w, {1, 1, 1.0000001}, 1e-5, 0, "ones")
local big = tt.zeros(3, 4)
tt.assert_close(big:exp(), tt.ones(3, 4):totable(), 0, 0)
if tt.allclose(w, {1, 2, 3}) then error("not close") end
tt.assert_close(w, w)
tt.assert_close(w[1], 1)
tt.assert_close(w:exp() / math.exp(1), tt.ones(3))
]])
local jc = dir .. "/checks.json"
out, err, code = run("--trace-json " .. jc .. " " .. script)
check("checks script runs", code == 0, 1)
check("a table literal folds into one check row",
      has(out, "checks.lua:2  tt.assert_close(w, {1, 1, 1.0000001}, 1e-5, 0, \"ones\")\n    \u{2713} checked   w[3] \u{2248} {1, 1, 1} (rtol 1e-5)\n"))
check("no row for the literal", not has(out, "tensor      ->"))
check("a large table shows by shape", has(out, "\u{2713} checked   [3,4] \u{2248} table[3,4] (exactly)"))
check("allclose shows its answer", has(out, "allclose    w[3] \u{2248} {1, 2, 3} (rtol 1e-5, atol 1e-8) -> false"))
check("a check with no rows of its own shows under its own line",
      has(out, "checks.lua:6  tt.assert_close(w, w)\n    \u{2713} checked   w[3] \u{2248} w[3] (rtol 1.3e-6, atol 1e-5)\n"))
check("a scalar operand", has(out, "\u{2713} checked   [] \u{2248} 1 (rtol 1.3e-6, atol 1e-5)"))
check("a constant built as the argument folds too",
      has(out, "    div         [3] / 2.71828 -> [3]   3 FLOP\n    \u{2713} checked   [3] \u{2248} ones[3] (rtol 1.3e-6, atol 1e-5)\n"))
local tensors = 0
for line in io.lines(jc) do if json.decode(line).op == "tensor" then tensors = tensors + 1 end end
check("the JSON still has the literal's event", tensors == 4)
out = run("-q " .. script)
check("-q: no check rows", not has(out, "checked"))
script = write("failing.lua", "tt.assert_close(tt.ones(2), {1, 2})\n")
out, err, code = run(script)
check("a failing check shows no check row", code == 1 and not has(out, "checked") and has(err, "assert_close"))

-- ===== precision =====
script = write("prec.lua", [[
local x = tt.tensor{1, 2, 3} / 3
print(x)
tt.set_printoptions{precision = 8}
print(x)
print(tostring(x / 1e6))
]])
out = run("-q " .. script)
check("4 decimals by default", has(out, "[0.3333, 0.6667, 1.0000]"))
check("set_printoptions changes print", has(out, "[0.33333334, 0.66666669, 1.00000000]"))
check("and the scientific format", has(out, "[3.33333332e-07, 6.66666665e-07, 9.99999997e-07]"))
out = run("-q --precision 6 -e 'print(tt.tensor{1, 2} / 3)'")
check("--precision sets the digits", has(out, "[0.333333, 0.666667]"))
out = run("--precision 7 --trace=values -e 'local x = tt.tensor{1, 2} / 3'")
check("--trace=values uses the precision", has(out, "[0.3333333, 0.6666667]") and has(out, "max 0.6666667"))
out, err, code = run("--precision 40 -e ''")
check("--precision out of range is a usage error", code == 2 and has(err, "'--precision' needs a number of digits"))
checkerror({"set_printoptions", "precision", "0 to 16", "-1"}, tt.set_printoptions, {precision = -1})
checkerror({"set_printoptions", "unknown option 'precison'"}, tt.set_printoptions, {precison = 3})
checkerror({"set_printoptions", "table expected"}, tt.set_printoptions, 3)

-- ===== --trace=values does not repeat a view's values =====
out = run([[--trace=values -e 'local x = tt.tensor{{1, 2}, {3, 4}}:named("a", "b")
local t = x:mT()']])
check("a view of the values just shown refers to them",
      has(out, "named       [2,2] -> [a=2,b=2]   view, strides (2,1)\n        (a view of the values above)\n"))
check("the values show once", count(out, "%[%[1%., 2%.%]") == 1)
check("a view that reorders shows its values", has(out, "[[1., 3.],"))

-- ===== the backward pass =====
-- x = {3, 4}: the gradient of sum(x*x) is 2x = {6, 8}, norm 10.
script = write("bw_values.lua", [[
local x = tt.tensor{3, 4}:requires_grad_():label("x")
local loss = (x * x):sum()
loss:backward()
]])
out, err, code = run("--trace=values " .. script)
check("backward runs with --trace=values", code == 0, err)
check("backward rows sit under the line that called backward()",
      has(out, "bw_values.lua:3  loss:backward()\n    grad sum         grad[] -> grad[2]\n"))
check("a gradient's row names the tensor it flows to", has(out, "    grad mul         grad[2] -> grad of x[2], grad of x[2]   4 FLOP\n"))
-- d(x*x)/dx through mul gives g*x to each operand: {3, 4} twice, norm 5
check("--trace=values: each gradient's norm, min and max", count(out, "        grad of x: norm 5  min 3  max 4\n") == 2)
check("no NaN flag when every gradient is finite", not has(out, "!!"))

-- sqrt at 0: an infinite gradient made by sqrt's backward from a finite one
script = write("bw_inf.lua", [[
local z = tt.tensor{0, 1, 4}:requires_grad_():label("z")
z:sqrt():sum():backward()
]])
out = run("--trace=values " .. script)
check("an inf gradient is counted", has(out, "        grad of z: norm 0.559  min 0.25  max 0.5  +inf 1\n"))
check("and flagged with the op whose backward made it",
      has(out, "        !! the gradient turns inf here: the backward of sqrt made it from a finite gradient " ..
               "(sqrt's derivative 1/(2 sqrt(x)) is inf at x = 0)\n"))

-- log of a negative number is NaN in the forward: the first gradient that
-- turns NaN is mul's (it multiplies by the NaN it saved); the gradients
-- after it were NaN already and are not flagged again
script = write("bw_nan.lua", [[
local n = tt.tensor{-1, 2}:requires_grad_():label("n")
local y = n:log():label("y")
local loss = (y * y):sum()
loss:backward()
]])
out = run("--trace=values " .. script)
check("a NaN gradient is flagged once", count(out, "!! the gradient turns") == 1)
check("at the op that made it", has(out, "grad of y: norm 0.6931  min 0.6931  max 0.6931  NaN 1\n" ..
      "        grad of y: norm 0.6931  min 0.6931  max 0.6931  NaN 1\n" ..
      "        !! the gradient turns NaN here: the backward of mul made it"))
-- y's gradient adds up to 2y = {NaN, 2 log 2}; log's backward divides by n = 2
check("the gradient of n counts its NaN", has(out, "        grad of n: norm 0.6931  min 0.6931  max 0.6931  NaN 1\n"))

-- JSON: phase on every event; a backward row lists its gradients
local jb = dir .. "/bw.json"
out, err, code = run("-q --trace-json " .. jb .. " " .. script)
local phases, grads = {}, nil
for line in io.lines(jb) do
  local ev = json.decode(line)
  phases[#phases + 1] = ev.phase .. " " .. ev.op
  if ev.phase == "backward" and ev.op == "mul" then grads = ev.grads end
end
check("JSON: forward then backward events in order",
      table.concat(phases, ",") == "forward tensor,forward log,forward mul,forward sum," ..
                                   "backward sum,backward mul,backward log", table.concat(phases, ","))
check("JSON: a backward row's gradients carry the label they flow to",
      grads and #grads == 2 and grads[1].label == "y" and grads[2].label == "y")

-- summary: per-op rows of each phase, a total per phase; the returned table
-- keys a backward row "grad <op>"
script = write("bw_summary.lua", [[
local a = tt.ones(2, 3):requires_grad_()
local b = tt.ones(3, 4):requires_grad_()
local loss = a:matmul(b):sum()
loss:backward()
local s = tt.trace.summary{times = false}
print("ROWS", s.matmul.phase, s.matmul.flops, s["grad matmul"].phase, s["grad matmul"].calls, s["grad matmul"].flops)
]])
out = run("-q " .. script)
-- forward: 2*2*3*4 = 48 FLOP; backward: dA = g[2,4] @ B^T (2*2*3*4) and dB = A^T @ g (2*3*4*2)
check("summary: the table splits the phases", has(out, "ROWS\tforward\t48.0\tbackward\t1\t96.0"), out)
check("summary: a forward total", has(out, "forward total           4"))
check("summary: the backward's rows and total",
      has(out, "\ngrad matmul             1      96 FLOP") and has(out, "backward total          2      96 FLOP"))
out = run("-q -e 'tt.ones(2):sum() tt.trace.summary{times = false}'")
check("summary: forward only, no total line", not has(out, "total"))

-- the flow figure draws the forward pipeline: a backward adds nothing to it
script = write("flow_bw.lua", string.format([[
local x = tt.ones(2, 3):requires_grad_():label("X")
local w = tt.ones(3, 4):requires_grad_():label("W")
local y = x:matmul(w):label("Y")
local loss = y:sum():label("loss")
if arg[1] == "backward" then loss:backward() end
tt.flow(%q .. arg[1] .. ".svg")
]], dir .. "/"))
run("-q " .. script .. " forward")
run("-q " .. script .. " backward")
local function slurp(p) local f = io.open(p, "rb") if not f then return nil end local t = f:read("a") f:close() return t end
local fa, fb = slurp(dir .. "/forward.svg"), slurp(dir .. "/backward.svg")
check("flow: a backward leaves the figure as it was", fa ~= nil and fa == fb)

-- a list op's backward shows five gradients (TT_TRACE_MAX_INPUTS) and counts the rest
out = run("-e 'local xs = {} for i = 1, 6 do xs[i] = tt.ones(2):requires_grad_():label(\"x\" .. i) end " ..
          "tt.cat(xs, 1):sum():backward()'")
check("backward: more gradients than shown are counted",
      has(out, "grad cat         grad[12] -> grad of x1[2], grad of x2[2], grad of x3[2], grad of x4[2], grad of x5[2], ... (6 gradients)\n"))

-- ===== a loop's repeated groups fold =====
local function fcheck(descr, cond, shown)
  if not check(descr, cond, 2) and shown then print(shown) end
end
-- one group a pass (line 3): the first shown, the other 4 counted
script = write("fold1.lua", [[
local x = tt.ones(2, 3)
for i = 1, 5 do
  local y = x * i
end
local z = x:sum()
]])
out = run(script)
fcheck("fold: one line repeated shows once", count(out, "\n    mul ") == 1, out)
fcheck("fold: the count of the others", has(out, "    mul         [2,3] * 1.0 -> [2,3]   6 FLOP\n    \u{2026} \u{d7}4 more (same shapes)\n"), out)
fcheck("fold: the next line after it", has(out, "more (same shapes)\n" .. dir .. "/fold1.lua:5"), out)
-- JSON keeps every event
local jf = dir .. "/fold.json"
run("-q --trace-json " .. jf .. " " .. script)
local nmul = 0
for line in io.lines(jf) do if json.decode(line).op == "mul" then nmul = nmul + 1 end end
fcheck("fold: the JSON trace has every pass", nmul == 5, nmul)
-- the training loop of tests/golden/training_loop.lua: 7 steps in the JSON
run("-q --trace-json " .. jf .. " tests/golden/training_loop.lua")
local nstep = 0
for line in io.lines(jf) do if json.decode(line).phase == "step" then nstep = nstep + 1 end end
fcheck("fold: the JSON of the training loop has all 7 optimizer steps", nstep == 7, tostring(nstep))
-- --trace=values: the first pass's values, the rest counted and said so
out = run("--trace=values " .. script)
fcheck("fold: values shown once, the count says they are not", count(out, "min ") == 3
      and has(out, "\u{d7}4 more (same shapes, values not shown)"), out)

-- a body of two lines repeats as a block; an odd pass with another shape
-- ends the run, and is shown
script = write("fold2.lua", [[
for i = 1, 6 do
  local n = i == 4 and 3 or 2
  local a = tt.ones(n)
  local b = a + 1
end
]])
out = run(script)
local want = table.concat({
  dir .. "/fold2.lua:3  local a = tt.ones(n)", "    ones        -> [2]",
  dir .. "/fold2.lua:4  local b = a + 1", "    add         [2] + 1.0 -> [2]   2 FLOP",
  "    \u{2026} \u{d7}2 more of the rows since line 3 (same shapes)",
  dir .. "/fold2.lua:3  local a = tt.ones(n)", "    ones        -> [3]",
  dir .. "/fold2.lua:4  local b = a + 1", "    add         [3] + 1.0 -> [3]   3 FLOP",
  dir .. "/fold2.lua:3  local a = tt.ones(n)", "    ones        -> [2]",
  dir .. "/fold2.lua:4  local b = a + 1", "    add         [2] + 1.0 -> [2]   2 FLOP",
  "    \u{2026} \u{d7}1 more of the rows since line 3 (same shapes)", ""}, "\n")
fcheck("fold: a two-line body folds as a block, a different pass ends it", out == want, out)

-- the script's prints stay in order: the count so far comes before each
-- print, and the run goes on counting after it
script = write("fold3.lua", [[
local x = tt.ones(2)
for i = 1, 9 do
  local y = x + i
  if i % 3 == 0 then print("printed at " .. i) end
end
]])
out = run(script)
fcheck("fold: prints in order with the counts", has(out, "2 FLOP\n    \u{2026} \u{d7}2 more (same shapes)\nprinted at 3\n"
      .. "    \u{2026} \u{d7}3 more (same shapes)\nprinted at 6\n    \u{2026} \u{d7}3 more (same shapes)\nprinted at 9\n"), out)

-- a warning is never folded away: a pass that warns differs
script = write("fold4.lua", [[
for i = 1, 3 do
  local m = tt.zeros(2, 2):bool()
  if i == 3 then m = tt.ones(2, 2):bool() end
  local w = tt.zeros(2, 2):masked_fill(m, -math.huge):softmax(2)
end
]])
out = run(script)
fcheck("fold: a row with a warning is shown", count(out, "!! ") >= 1, out)

-- a section ends a run (its count comes before the heading), as does the
-- end of the script
script = write("fold5.lua", [[
for i = 1, 3 do
  local a = tt.ones(2)
end
tt.trace.section("next")
for i = 1, 3 do
  local a = tt.ones(2)
end
]])
out = run(script)
fcheck("fold: a section ends the run and starts afresh", has(out, "\u{d7}2 more (same shapes)\n\n=== next ===\n" .. dir
      .. "/fold5.lua:6  local a = tt.ones(2)\n    ones        -> [2]\n    \u{2026} \u{d7}2 more (same shapes)\n"), out)

-- memory stays flat over a long loop of several lines, and the count is exact
script = write("fold6.lua", [[
local x = tt.ones(2)
for i = 1, 50000 do
  local a = x + 1
  local b = a * 2
end
]] .. peak_kb_code)
local out6 = run(script)
fcheck("fold: a long two-line loop is one count", has(out6, "\u{d7}49999 more of the rows since line 3 (same shapes)"), out6:sub(1, 400))
local k6, kq = peak_kb(out6), peak_kb(run("-q " .. script))
fcheck("fold: folding holds no memory per pass (" .. tostring(k6) .. " KB traced, " .. tostring(kq) .. " KB with -q)",
      k6 == nil or kq == nil or k6 < kq + 2048)

-- ===== every check shows, also on a line with no other row =====
-- (before: a check whose line made no row was dropped from the trace and
-- from the report's count)
script = write("checks_alone.lua", [[
local a = tt.ones(2, 3):label("a")
local b = tt.ones(2, 3):label("b")
tt.assert_close(a, b)
tt.assert_close(a, b, 0, 0)
print("between")
tt.assert_close(a, b)
local c = tt.allclose(a, b)
for i = 1, 2 do tt.assert_close(a, b) end
local g = tt.gradcheck(function(x) return (x * x):sum() end, {tt.ones(2, 2):requires_grad_()})
]])
out = run(script)
fcheck("a row of the line before is not folded into a check", has(out, "checks_alone.lua:2  local b = tt.ones(2, 3):label(\"b\")\n    ones        -> b[2,3]\n"), out)
fcheck("a check alone on its line gets the line's header and a row",
      has(out, dir .. "/checks_alone.lua:3  tt.assert_close(a, b)\n    \u{2713} checked   a[2,3] \u{2248} b[2,3] (rtol 1.3e-6, atol 1e-5)\n"), out)
check("the next line's check gets its own header",
      has(out, dir .. "/checks_alone.lua:4  tt.assert_close(a, b, 0, 0)\n    \u{2713} checked   a[2,3] \u{2248} b[2,3] (exactly)\n"))
check("a check after the script's output shows", has(out, "between\n" .. dir .. "/checks_alone.lua:6  tt.assert_close(a, b)\n    \u{2713} checked"))
check("allclose alone on its line shows its answer", has(out, "checks_alone.lua:7  local c = tt.allclose(a, b)\n    allclose    a[2,3] \u{2248} b[2,3]"))
fcheck("five passed checks, five check marks", count(out, "\u{2713} checked") + count(out, "\u{d7}1 more") == 5, out)
fcheck("a passing gradcheck shows as a check row", has(out, "checks_alone.lua:9  local g = tt.gradcheck(function(x) return (x * x):sum() end, {tt.ones(2, 2):requires_grad_()})\n"
      .. "    ones        -> [2,2]\n    \u{2713} gradcheck   4 elements of 1 input against central differences (eps 0.01, rtol 0.01, atol 0.01)\n"), out)
local html = dir .. "/checks_alone.html"
run("--report " .. html .. " " .. script)
check("the report counts every check", has(T.slurp(html), "6 checks passed"))
run("-q --report " .. html .. " " .. script)
check("the report counts every check also with -q", has(T.slurp(html), "6 checks passed"))

-- ===== ops inside a coroutine: under the coroutine's line =====
script = write("co.lua", [[
local x = tt.randn(2, 3)
local function inner()
  local a = x:exp()
  coroutine.yield(a)
end
local outer = coroutine.create(function()
  local w = coroutine.wrap(inner)
  local a = w()
  local b = x:relu()
  coroutine.yield(b)
end)
local ok, b = coroutine.resume(outer)
local c = x:abs()
local d = coroutine.resume(outer)
local e = x:neg()
]])
out = run(script)
fcheck("an op in a coroutine (coroutine.wrap, resumed by another coroutine) is under its own line",
       has(out, "co.lua:3  local a = x:exp()\n    exp ") and not has(out, "co.lua:8  "), out)
fcheck("an op in a coroutine.create one is under its line, not the resume's",
       has(out, "co.lua:9  local b = x:relu()\n    relu ") and not has(out, "co.lua:12  "), out)
fcheck("after the coroutine yields, the main thread's ops are under their lines",
       has(out, "co.lua:13  local c = x:abs()\n    abs ") and has(out, "co.lua:15  local e = x:neg()\n    neg "), out)

T.report()
