-- test_compare_runs.lua — --compare on long runs and repeated labels, and
-- under --sandbox: every checkpoint and the ops behind it are kept however
-- many ops the script runs before, between and after its labels (past the
-- old 1024-op ring); a label given several times is compared occurrence by
-- occurrence; each of a teacher's untrusted submissions runs under the
-- sandbox's rules and limits and gets its own verdict line, whatever the
-- others do.
local T = dofile("tests/lua/check.lua")
local json = dofile("tests/lua/json.lua")
local check = T.check_out

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

-- ===== --sandbox: a teacher grading untrusted submissions =====
local REFC = "tests/compare/ref_causal.lua"
local src = T.slurp(REFC)
local last = 'local out = weights:matmul(v):label("out")'
check("the reference's last line is where the submissions add their attack", has(src, last))
local function sub(name, extra)
  return write("subs/" .. name, (src:gsub(last:gsub("%p", "%%%0"), function() return last .. "\n" .. extra end)))
end
os.execute("mkdir -p " .. dir .. "/subs " .. dir .. "/figs")
local subs = {
  sub("a_good.lua", ""),
  write("subs/b_softmax.lua", T.slurp("tests/compare/ref_causal__softmax_dim_1.lua")),
  sub("c_loop.lua", "while true do end"),
  sub("d_execute.lua", 'os.execute("touch ' .. dir .. '/pwned")'),
  sub("e_memory.lua", "local t = {} for i = 1, 1e9 do t[i] = tt.zeros(1024, 1024) end"),
  sub("f_gc_loop.lua", "setmetatable({}, {__gc = function() while true do end end})"),
  sub("g_read.lua", 'local f = io.open("/etc/passwd") print(f:read("a"))'),
  sub("h_write.lua", 'local f = assert(io.open("' .. dir .. '/written", "w")) f:write("x") f:close()'),
  sub("i_figure.lua", 'tt.heatmap(out[1][1], "' .. dir .. '/figs/ok.png")'),
  sub("j_good.lua", ""),
}
jpath = dir .. "/sbx.json"
local t0 = tt.clock()
out, err, code = run("--sandbox --timeout 2 --max-memory 128M --images " .. dir .. "/figs --compare " .. REFC .. " "
                     .. table.concat(subs, " ") .. " --compare-json " .. jpath)
local took = tt.clock() - t0
local lines = {}
for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
check("one verdict line per submission, in order, whatever each did, and the summary",
      #lines == #subs + 1 and lines[#lines] == "graded 10: 3 matched, 1 failed, 4 errors, 1 timeouts, 1 out of memory", out .. err)
for i, path in ipairs(subs) do
  check("line " .. i .. " is " .. path:match("[^/]+$") .. "'s", lines[i] and lines[i]:sub(1, #path + 1) == path .. ":", out)
end
local function line_of(name) for _, l in ipairs(lines) do if has(l, "/" .. name .. ":") then return l end end return "" end
check("the good one matches", has(line_of("a_good.lua"), "✓ all 4 checkpoints match"), out)
check("the wrong one is diagnosed", has(line_of("b_softmax.lua"), "softmax_dim"), out)
check("a loop forever: the timeout, as its verdict", has(line_of("c_loop.lua"), "✗ timeout at line 13: the script ran longer than 2 s"), out)
check("os.execute: refused, as its verdict", has(line_of("d_execute.lua"), "'os.execute' is not available with --sandbox"), out)
check("... and nothing ran", not io.open(dir .. "/pwned"))
check("memory exhausted: the cap, as its verdict", has(line_of("e_memory.lua"), "the memory cap is 128.0 MiB"), out)
check("a loop in a __gc finalizer (no hooks there): the watchdog ends its process, not the grading",
      has(line_of("f_gc_loop.lua"), "✗ no verdict: the watchdog stopped it"), out)
check("a read outside its folder: refused", has(line_of("g_read.lua"), "cannot read '/etc/passwd'"), out)
check("a write outside --images: refused", has(line_of("h_write.lua"), "sandbox: cannot write"), out)
check("... and nothing written", not io.open(dir .. "/written"))
check("a figure under --images is allowed, and it still matches", has(line_of("i_figure.lua"), "✓ all 4 checkpoints match")
      and io.open(dir .. "/figs/ok.png") ~= nil, out)
check("the ones after the attacks are still graded", has(line_of("j_good.lua"), "✓ all 4 checkpoints match"), out)
check("exit 1: not all match", code == 1)
check("the whole class in well under the limits' sum (" .. string.format("%.1f", took) .. " s)", took < 20)
local vs = verdicts(jpath)
check("--compare-json: one verdict per submission, the dead one too", #vs == #subs and vs[1].match == true
      and vs[6].match == false and vs[6].error and has(vs[6].error.message, "watchdog"), T.slurp(jpath))
-- one submission alone: the full verdict, under the sandbox
out, err, code = run("--sandbox --compare " .. REFC .. " " .. subs[2])
check("--sandbox with one script: the full verdict", code == 1 and has(out, "✗ `weights` does not match") and has(out, "softmax_dim:"), out .. err)
out, err, code = run("--sandbox --compare " .. REFC .. " " .. subs[4])
check("--sandbox with one script: an attack is an error verdict", code == 1 and has(out, "'os.execute' is not available"), out .. err)
-- without --sandbox the reference's rules are the script's: os.execute runs (for contrast)
out, err, code = run("--compare " .. REFC .. " " .. subs[4])
check("without --sandbox the same script runs os.execute", code == 0 and io.open(dir .. "/pwned") ~= nil, out .. err)

-- exercise 14 loads lessons/lib and lessons/data, which its solution
-- declares ("-- reads:"): under --sandbox a copy elsewhere reads those two
-- files, and nothing else of lessons/ without --read
local REF14 = "lessons/exercises/solutions/14_induction_head.lua"
local copy14 = write("sub14.lua", T.slurp(REF14))
out, err, code = run("--sandbox --compare " .. REF14 .. " " .. copy14)
check("exercise 14 under --sandbox: the declared files are read, all checkpoints match", code == 0 and has(out, "✓ all"), out .. err)
local peek14 = write("peek14.lua", T.slurp(REF14) .. '\nio.open("lessons/14_induction_heads.lua")\n')
out, err, code = run("--sandbox --compare " .. REF14 .. " " .. peek14)
check("... a lesson file it does not declare: refused, with the hint",
      code == 1 and has(out, "hint: --read DIR allows one more folder"), out .. err)
out, err, code = run("--sandbox --read lessons --compare " .. REF14 .. " " .. peek14)
check("... which --read lessons allows", code == 0 and has(out, "✓ all"), out .. err)

T.report()
