-- test_compare_runs.lua — --compare on long runs and repeated labels, and
-- under --sandbox: every checkpoint and the ops behind it are kept however
-- many ops the script runs before, between and after its labels (past the
-- old 1024-op ring); a label given several times is compared occurrence by
-- occurrence; each of a teacher's untrusted submissions runs under the
-- sandbox's rules and limits and gets its own verdict line, whatever the
-- others do.
local T = dofile("tests/lua/check.lua")
local json = dofile("tests/lua/json.lua")
-- check(), and what the command printed when it fails
local function check(descr, cond, output)
  if not cond and output then io.stderr:write(output, "\n") end
  T.check(descr, cond, 2)
end

local dir = T.tmpdir()
local function write(name, text) return T.write(dir, name, text) end
local function run(args) return T.run(dir, args) end
local has = function(s, pat) return s:find(pat, 1, true) ~= nil end
local function verdicts(path)
  local list = {}
  for line in io.lines(path) do list[#list + 1] = json.decode(line) end
  return list
end

-- ===== long runs: 1100 ops before, between and after the labels =====
local LONG = [[
tt.manual_seed(3)
local N, Dh = 5, 4
local q = tt.randn(N, Dh):named("Nq", "Dh")
local k = tt.randn(N, Dh):named("Nk", "Dh")
local x = tt.zeros(2)
for i = 1, 1100 do x = x + 1 end
local scores = (q:matmul(k:mT()) / math.sqrt(Dh))
for i = 1, 1100 do x = x + 1 end
scores:label("scores")
local weights = scores:softmax("Nk"):label("weights")
for i = 1, 1100 do x = x + 1 end
]]
local ref = write("long_ref.lua", LONG)
local mine = write("long_mine.lua", (LONG:gsub(" / math.sqrt%(Dh%)", "")))
local jpath = dir .. "/long.json"
local out, err, code = run("--compare " .. ref .. " " .. mine .. " --compare-json " .. jpath)
local v = verdicts(jpath)[1]
check("1100 ops between an op and its label: the op that made `scores` is found (line 7, not the label's 9)",
      code == 1 and v.first.label == "scores" and v.first.line == 7)
check("... and its ops replayed: scale_missing, not values",
      #v.diagnosis == 1 and v.diagnosis[1].kind == "scale_missing", out .. err)
out, err, code = run("--compare " .. ref .. " " .. ref)
check("the long reference matches itself", code == 0 and has(out, "✓ all 2 checkpoints match"), out .. err)

-- labels in a loop of 3000 ops, each kept
local LOOP = [[
tt.manual_seed(5)
local x = tt.randn(3, 3)
for i = 1, 3000 do
  x = (x * 0.999):named("r", "c")
  if i % 1000 == 0 then x:label("x" .. i) end
end
]]
ref = write("loop_ref.lua", LOOP)
mine = write("loop_mine.lua", (LOOP:gsub("i %% 1000 == 0 then", "i %% 1000 == 0 then if i == 3000 then x = x + 1e-3 end")))
out, err, code = run("--compare " .. ref .. " " .. mine)
check("three labels in 3000 ops: the first two match, the third differs",
      code == 1 and has(out, "✓ x1000") and has(out, "✓ x2000") and has(out, "✗ x3000"), out .. err)

-- the records' budget: half of --max-memory; past it the oldest go, and the verdict says so
local BIG = [[
tt.manual_seed(7)
local q = tt.randn(4, 4):named("Nq", "Dh")
local k = tt.randn(4, 4):named("Nk", "Dh")
local scores = q:matmul(k:mT()) / 2
local hold = {}
for i = 1, 20 do hold[i] = tt.randn(256, 1024) end   -- 20 x 1 MB, all still reachable
scores:label("scores")
local weights = scores:softmax("Nk"):label("weights")
]]
ref = write("big_ref.lua", BIG)
mine = write("big_mine.lua", (BIG:gsub(" / 2\n", "\n")))
out, err, code = run("--max-memory 32M --compare " .. ref .. " " .. mine)
check("past the records' budget (16 MB of 32M): still a verdict, and it says the ops behind were let go",
      code == 1 and has(out, "✗ scores") and has(out, "held more than 16 MB of tensors at once"), out .. err)
out, err, code = run("--compare " .. ref .. " " .. mine)
check("within the budget the same script is diagnosed", code == 1 and has(out, "scale_missing"), out .. err)

-- ===== a label given more than once: k-th against k-th =====
local DECODE = [[
-- decoding 3 steps, each step's scores and weights labelled
tt.manual_seed(11)
local Dh, steps = 4, 3
local ks = tt.randn(steps, Dh):named("Nk", "Dh")
local qs = tt.randn(steps, Dh):named("Nq", "Dh")
for t = 1, steps do
  local q = qs:narrow("Nq", t, 1)
  local k = ks:narrow("Nk", 1, t)
  local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
  local weights = scores:softmax("Nk"):label("weights")
end
]]
ref = write("dec_ref.lua", DECODE)
jpath = dir .. "/dec.json"
out, err, code = run("--compare " .. ref .. " " .. ref .. " --compare-json " .. jpath)
v = verdicts(jpath)[1]
check("each step's label is a checkpoint of its own: 6, in the order they came",
      code == 0 and has(out, "✓ all 6 checkpoints match") and has(out, "✓ scores #3") and #v.checkpoints == 6
      and v.checkpoints[3].label == "scores" and v.checkpoints[3].occurrence == 2, out)

-- step 2 alone unscaled: the 2nd `scores` is the first mismatch, diagnosed; steps 1 and 3 match
mine = write("dec_wrong2.lua", (DECODE:gsub("/ math.sqrt%(Dh%)", "/ (t == 2 and 1 or math.sqrt(Dh))")))
out, err, code = run("--compare " .. ref .. " " .. mine .. " --compare-json " .. jpath)
v = verdicts(jpath)[1]
check("k-th against k-th: step 2's scores fail, step 1's and 3's pass",
      code == 1 and v.first.label == "scores" and v.first.occurrence == 2 and v.diagnosis[1].kind == "scale_missing"
      and v.checkpoints[1].ok and not v.checkpoints[3].ok and v.checkpoints[5].ok, out)
check("the text names the occurrence", has(out, "✗ `scores #2` does not match"), out)

-- fewer: one step short
mine = write("dec_fewer.lua", (DECODE:gsub("for t = 1, steps do", "for t = 1, steps - 1 do")))
out, err, code = run("--compare " .. ref .. " " .. mine .. " --compare-json " .. jpath)
v = verdicts(jpath)[1]
check("labelled fewer times: said so, with both counts",
      code == 1 and v.first.occurrence == 3 and v.diagnosis[1].kind == "count"
      and has(out, "you labelled `scores` twice, the reference 3 times: your 3rd is missing"), out)

-- more: an extra `scores` in step 2 shifts the rest; the mismatch says the counts differ too
mine = write("dec_more.lua", (DECODE:gsub('(:label%("weights"%)\n)', '%1  if t == 2 then scores:label("scores") end\n')))
out, err, code = run("--compare " .. ref .. " " .. mine .. " --compare-json " .. jpath)
v = verdicts(jpath)[1]
check("labelled more times: the 3rd (shifted) differs and the note gives both counts",
      code == 1 and v.first.occurrence == 3 and v.diagnosis[1].kind == "shape"
      and has(out, "note: you labelled `scores` 4 times, the reference 3 times"), out)
check("... and the extra one is listed", has(out, "✗ scores #4   line 9 (the reference labels it 3 times)"), out)

-- more, everything else equal: the extra label alone is the mismatch
mine = write("dec_extra.lua", DECODE .. 'tt.zeros(1):label("scores")\n')
out, err, code = run("--compare " .. ref .. " " .. mine .. " --compare-json " .. jpath)
v = verdicts(jpath)[1]
check("an extra label at the end: count, naming the line that gave it",
      code == 1 and v.first.occurrence == 4 and v.diagnosis[1].kind == "count" and v.first.line == 12
      and has(out, "you labelled `scores` 4 times, the reference 3 times: the reference has no 4th `scores` (line 12 gave it)"), out)

-- a teacher's one line each says it too
out, err, code = run("--compare " .. ref .. " " .. ref .. " " .. write("dec_more2.lua", (DECODE:gsub('(:label%("weights"%)\n)', '%1  if t == 2 then scores:label("scores") end\n'))))
check("one line per file: the count note on the line", has(out, "dec_more2.lua: ✗ scores #3 (line 9): shape — ")
      and has(out, "you labelled `scores` 4 times, the reference 3 times"), out)

T.report()
