-- test_compare.lua — the command line of checking: --compare (one script,
-- a teacher's several, an error in MINE, --compare-tol, --compare-json's
-- schema, --compare-figure, --report, the scripts' arguments), --exercise,
-- --exercises with the progress file, and --watch with a file rewritten
-- under it. The verdicts of each diagnosis kind are tests/test_exercises.sh's.
local T = dofile("tests/lua/check.lua")
local json = dofile("tests/lua/json.lua")
local check = T.check

local dir = T.tmpdir()
local function write(name, text) return T.write(dir, name, text) end
local function run(args) return T.run(dir, args) end
local has = function(s, pat) return s:find(pat, 1, true) ~= nil end
local C = "tests/compare/"
local REF = C .. "ref_causal.lua"

-- ===== usage =====
local out, err, code = run("--compare " .. REF)
check("--compare needs two scripts", code == 2 and has(err, "needs a reference and at least one script"))
out, err, code = run("--compare " .. REF .. " " .. REF .. " --compare-tol 1e-4")
check("--compare-tol needs RTOL,ATOL", code == 2 and has(err, "RTOL,ATOL"))
out, err, code = run("--compare " .. REF .. " " .. REF .. " --compare-tol x,1")
check("--compare-tol rejects a non-number", code == 2)
out, err, code = run("--watch " .. REF)
check("--watch goes with --compare", code == 2 and has(err, "goes with --compare or --exercise"))
out, err, code = run("--compare-json x.json " .. REF)
check("--compare-json goes with --compare", code == 2)
out, err, code = run("--compare " .. REF .. " " .. REF .. " --max-write 1M")
check("--max-write with --compare needs --sandbox", code == 2 and has(err, "only applies with --sandbox"))
out, err, code = run("--exercises " .. REF)
check("--exercises takes no script", code == 2)
out = run("--help")
for _, o in ipairs { "--compare", "--compare-tol", "--compare-json", "--compare-figure", "--exercise", "--exercises", "--watch" } do
  check("--help lists " .. o, has(out, o))
end
check("--help says where the progress is kept", has(out, "~/.local/state/tensortrace/progress"))

-- ===== one script =====
out, err, code = run("--compare " .. REF .. " " .. REF)
check("the reference matches itself: exit 0", code == 0 and has(out, "✓ all 4 checkpoints match"))
check("each checkpoint listed", has(out, "✓ scores") and has(out, "✓ out"))

local SD = C .. "ref_causal__softmax_dim_1.lua"
out, err, code = run("--compare " .. REF .. " " .. SD)
check("a mismatch exits 1", code == 1)
check("the first mismatch is marked", has(out, "✗ weights  line 13   <- first mismatch"))
check("later checkpoints still listed", has(out, "✗ out      line 14") and has(out, "✓ masked"))
check("MINE's file:line", has(out, "`weights` does not match (" .. SD .. ":13)"))
check("MINE's source line", has(out, '13 | local weights = masked:softmax("Nq"):label("weights")'))
check("both shapes with names", has(out, "expected [B=1,H=2,Nq=5,Nk=5] float32   yours [B=1,H=2,Nq=5,Nk=5] float32"))
check("max |diff| and where", has(out, "max |diff| 0.8309 at [1,1,1,1] (expected 1, yours 0.1691)"))
check("one sentence of diagnosis with the hint",
      has(out, 'softmax_dim: your softmax normalises over Nq (dim 3); the reference normalises over Nk (dim 4): call softmax("Nk")'))

-- ===== --compare-json: the schema =====
local jpath = dir .. "/v.json"
run("--compare " .. REF .. " " .. SD .. " --compare-json " .. jpath)
local v = json.decode(T.slurp(jpath))
check("json: match is false", v.match == false)
check("json: checkpoints in REF's order", #v.checkpoints == 4 and v.checkpoints[1].label == "scores" and v.checkpoints[4].label == "out")
local typed = true
for _, c in ipairs(v.checkpoints) do
  typed = typed and type(c.label) == "string" and type(c.ok) == "boolean" and math.type(c.line) == "integer"
end
check("json: each checkpoint has label, ok, line", typed)
check("json: ok flags", v.checkpoints[2].ok == true and v.checkpoints[3].ok == false)
local f = v.first
check("json: first", f.label == "weights" and f.file == SD and f.line == 13)
check("json: shapes", table.concat(f.expected_shape, ",") == "1,2,5,5" and table.concat(f.got_shape, ",") == "1,2,5,5")
check("json: max_abs_diff and index", math.abs(f.max_abs_diff - 0.8309) < 1e-3 and table.concat(f.index, ",") == "1,1,1,1")
check("json: diagnosis kind and message", #v.diagnosis == 1 and v.diagnosis[1].kind == "softmax_dim"
      and type(v.diagnosis[1].message) == "string" and has(v.diagnosis[1].message, "Nk (dim 4)"))
run("--compare " .. REF .. " " .. REF .. " --compare-json " .. jpath)
v = json.decode(T.slurp(jpath))
check("json of a match: no first, no diagnosis", v.match == true and v.first == nil and v.diagnosis == nil)

-- ===== an error in MINE =====
local ER = C .. "ref_causal__error_1.lua"
out, err, code = run("--compare " .. REF .. " " .. ER .. " --compare-json " .. jpath)
check("an error in MINE exits 1", code == 1)
check("the error at its line", has(out, "your script stopped with an error at " .. ER .. ":14") and has(out, "matmul: inner sizes differ"))
check("the checkpoints reached before it", has(out, "(3 of 4 checkpoints matched before it)") and has(out, "✓ weights"))
v = json.decode(T.slurp(jpath))
check("json: the error as the diagnosis", v.match == false and v.diagnosis[1].kind == "error" and v.first.line == 14
      and v.first.label == "out")

-- an error in the reference is a usage problem
local bad = write("bad_ref.lua", "local x = tt.randn(2):label('x')\nerror('boom')\n")
out, err, code = run("--compare " .. bad .. " " .. REF)
check("an error in REF exits 2 and says so", code == 2 and has(out, "the reference " .. bad .. " failed") and has(out, "boom"))
local nolabel = write("nolabel.lua", "local x = tt.randn(2)\n")
out, err, code = run("--compare " .. nolabel .. " " .. REF)
check("a reference without labels exits 2", code == 2 and has(out, "labels no tensor"))

-- ===== --compare-tol =====
local TOL = C .. "ref_causal__match_2.lua"   -- out * (1 + 5e-5)
out, err, code = run("--compare " .. REF .. " " .. TOL)
check("within the default tolerance: a match", code == 0)
out, err, code = run("--compare " .. REF .. " " .. TOL .. " --compare-tol 1e-6,1e-7")
check("a tighter --compare-tol: values, no hypothesis", code == 1 and has(out, "values: no known mistake explains it")
      and not has(out, "heads_scrambled"))
out, err, code = run("--compare " .. REF .. " " .. C .. "ref_causal__values_1.lua --compare-tol 0,0.02")
check("a looser --compare-tol: a match", code == 0)

-- ===== a teacher's folder: several scripts, one line each =====
local MI = C .. "ref_causal__mask_inverted_1.lua"
out, err, code = run("--compare " .. REF .. " " .. REF .. " " .. SD .. " " .. MI .. " " .. ER .. " --compare-json " .. jpath)
local lines = {}
for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
check("one verdict line per file, and the batch's summary", #lines == 5
      and lines[5] == "graded 4: 1 matched, 2 failed, 1 errors, 0 timeouts, 0 out of memory", out)
check("the matching one, with its score", lines[1] == REF .. ": ✓ all 4 checkpoints match [4/4]")
check("the wrong ones with label, line and kind", has(lines[2], SD .. ": ✗ weights (line 13): softmax_dim — ")
      and has(lines[3], MI .. ": ✗ masked (line 12): mask_inverted — "))
check("the error one", has(lines[4], ER .. ": ✗ error at line 14: matmul: inner sizes differ"))
check("exit 1 when one does not match", code == 1)
local n = 0
for l in T.slurp(jpath):gmatch("[^\n]+") do n = n + 1; check("json line " .. n .. " parses", pcall(json.decode, l)) end
check("--compare-json: one object per file", n == 4)
out, err, code = run("--compare " .. REF .. " " .. REF .. " " .. C .. "ref_causal__match_1.lua")
check("all matching: exit 0", code == 0)

-- ===== the scripts' arguments and seed =====
local argref = write("arg_ref.lua", "local n = tonumber(arg[1])\nlocal x = tt.randn(n):label('x')\n")
local argmine = write("arg_mine.lua", "local n = tonumber(...)\nlocal x = tt.randn(n):label('x')\n")
out, err, code = run("--seed 7 --compare " .. argref .. " " .. argmine .. " -- 6")
check("both get the same arguments and seed", code == 0 and has(out, "✓ all 1 checkpoints match"))
local other = write("arg_other.lua", "tt.manual_seed(99)\nlocal x = tt.randn(tonumber(arg[1])):label('x')\n")
out, err, code = run("--compare " .. argref .. " " .. other .. " -- 6")
check("other inputs: a mismatch", code == 1)

-- ===== --compare-figure and --report =====
local fig = dir .. "/check.png"
out, err, code = run("--compare " .. REF .. " " .. MI .. " --compare-figure " .. fig)
check("the figure is named", has(out, "figure: " .. fig))
local png = T.slurp(fig)
check("the figure is a PNG", png:sub(1, 8) == "\137PNG\r\n\26\n")
local w = string.unpack(">I4", png, 17)
local h = string.unpack(">I4", png, 21)
check("three panels side by side (wide)", w > 2 * h)
check("its text chunk names the checkpoint", has(png, "masked[1,1,:,:]: expected | yours | difference"))
check("... and your line that made it", has(png, "Source\0" .. MI .. ":12"))
os.remove(fig)
out, err, code = run("--compare " .. REF .. " " .. MI .. " --compare-figure " .. dir .. "/no/such/check.png")
check("--compare-figure into a missing folder: exit 2, said without a script line", code == 2 and
      has(err, "tensortrace: --compare-figure: heatmap: cannot write '" .. dir .. "/no/such/check.png': folder '" .. dir .. "/no/such' does not exist"))
os.remove(fig)
out, err, code = run("--compare " .. REF .. " " .. REF .. " --compare-figure " .. fig)
check("no figure for a match", code == 0 and not io.open(fig))
out, err, code = run("--compare " .. REF .. " " .. C .. "ref_causal__shape_1.lua --compare-figure " .. fig)
check("no figure when the shapes differ, said", has(out, "no figure: the shapes differ"))
-- the README's figure is what the README's command draws now
local readme_fig = dir .. "/check_your_work.png"
out, err, code = run("--exercise tests/compare/my_03.lua --compare-figure " .. readme_fig)
check("the README's check: softmax_dim", code == 1 and has(out, "softmax_dim: your softmax normalises over Nq (dim 2)"))
local current
if io.open("build/tests/pngcmp") then   -- make test builds it: pixels and text, as test_golden.sh compares
  local _, _, c = os.execute("build/tests/pngcmp --text images/check_your_work.png " .. readme_fig)
  current = c == 0
else
  current = T.slurp("images/check_your_work.png") == T.slurp(readme_fig)
end
check("images/check_your_work.png is current (make figures)", current)
-- and README.md shows what that command prints
local readme = T.slurp("README.md")
local shown = readme:match("%$ %./tensortrace %-%-exercise tests/compare/my_03%.lua %-%-compare%-figure images/check_your_work%.png\n(.-)```")
check("README's Check your work shows the real output",
      shown and shown == out:gsub("figure: [^\n]*", "figure: images/check_your_work.png"))
local html = dir .. "/r.html"
out, err, code = run("--compare " .. REF .. " " .. SD .. " --report " .. html)
local page = T.slurp(html)
check("--report: the verdict", code == 1 and has(page, "softmax_dim: your softmax normalises over Nq") and has(page, "first mismatch"))
check("--report: the figure embedded", has(page, "data:image/png;base64,") and has(page, "weights[1,1,:,:]: expected | yours"))
check("--report: the header says the check failed", has(page, "the check failed at `weights` (line 13): softmax_dim"))

-- ===== --exercise, --exercises, the progress file =====
local tt_bin = os.getenv("PWD") .. "/tensortrace"
local home = T.tmpdir()
assert(os.execute("mkdir -p " .. home .. "/lessons/exercises/solutions " .. home .. "/state"))
local body = T.slurp(REF)
T.write(home, "lessons/exercises/solutions/01_attention.lua", body)
T.write(home, "lessons/exercises/solutions/02_again.lua", body)
local starter = T.slurp(C .. "ref_causal__missing_1.lua")
T.write(home, "lessons/exercises/01_attention.lua", starter)
T.write(home, "lessons/exercises/02_again.lua", starter)
local function ex(args)
  local o, e = home .. "/out", home .. "/err"
  local _, _, c = os.execute("cd " .. home .. " && XDG_STATE_HOME=" .. home .. "/state " .. tt_bin .. " " .. args
                             .. " >" .. o .. " 2>" .. e .. " </dev/null")
  return T.slurp(o), T.slurp(e), c
end
local progress = home .. "/state/tensortrace/progress"
out, err, code = ex("--exercise 1")
check("--exercise N: the starter is not yet done", code == 1 and has(out, "not yet: `masked` is missing — the TODO at line 12"))
check("the progress file records it, with the verdict",
      T.slurp(progress) == "01_attention fail - the check failed at `masked` (line 12): missing\n", T.slurp(progress))
out = ex("--exercises")
check("--exercises: ✗ for a failed one, · for one not tried", has(out, "✗ 01_attention") and has(out, "· 02_again"))
check("--exercises: the last verdict", has(out, "last check: ✗ the check failed at `masked` (line 12): missing"), out)
check("--exercises: the next one", has(out, "0 of 2 done; next: 01_attention"))
check("--exercises: where the progress is", has(out, progress))
T.write(home, "mine.lua", body)
out, err, code = ex("--exercise attention")
check("--exercise NAME", code == 1)
out, err, code = ex("--exercise " .. home .. "/lessons/exercises/01_attention.lua")
check("--exercise PATH of the exercise", code == 1)
T.write(home, "my_copies/01_mine.lua", (assert(os.execute("mkdir -p " .. home .. "/my_copies")) and body))
out, err, code = ex("--exercise my_copies/01_mine.lua")
check("--exercise PATH of the learner's copy (by its number)", code == 0 and has(out, "✓ all 4 checkpoints match"))
check("a pass replaces the record", T.slurp(progress) == "01_attention pass done all checkpoints match\n", T.slurp(progress))
out = ex("--exercises")
check("--exercises: ✓ and the next", has(out, "✓ 01_attention") and has(out, "1 of 2 done; next: 02_again"))
-- done once: ✓ stays when a later check fails, and the list says how the last one went
ex("--exercise 1")
out = ex("--exercises")
check("--exercises: ✓ kept after a later failed check, with that check's verdict",
      has(out, "✓ 01_attention") and has(out, "last check: ✗ the check failed at `masked`") and has(out, "1 of 2 done"), out)
out, err, code = ex("--exercise 7")
check("an unknown exercise: exit 2 and the list", code == 2 and has(err, "no exercise '7'") and has(err, "02_again"))
os.remove(progress)
out = ex("--exercises")
check("deleting the progress file starts over", has(out, "· 01_attention") and has(out, "0 of 2 done"))

-- ===== --watch: the verdict again when the file is saved =====
local learner = home .. "/lessons/exercises/02_again.lua"
local log = home .. "/watch.log"
local pidfile = home .. "/watch.pid"
os.execute("cd " .. home .. " && (XDG_STATE_HOME=" .. home .. "/state " .. tt_bin .. " --exercise 2 --watch >" .. log
           .. " 2>&1 & echo $! >" .. pidfile .. ")")
local pid = T.slurp(pidfile):match("%d+")
-- The background shell may not have opened the log yet: missing reads as empty.
local function read_log()
  local f = io.open(log)
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end
local function wait_for(text, seconds)
  local t0 = tt.clock()
  while tt.clock() - t0 < seconds do
    local s = read_log()
    if has(s, text) then return s end
    os.execute("sleep 0.1")
  end
  return read_log()
end
local s = wait_for("watching", 10)
check("--watch: the first verdict, then watching", has(s, "not yet: `masked` is missing") and has(s, "watching " .. "lessons/exercises/02_again.lua"))
T.write(home, "lessons/exercises/02_again.lua", body)        -- the learner saves the solved file
s = wait_for("✓ all 4 checkpoints match", 10)
check("--watch: checked again after the save", has(s, "✓ all 4 checkpoints match"))
-- an editor that saves by renaming a new file over the old one
T.write(home, "lessons/exercises/.02_again.lua.swp", (T.slurp(C .. "ref_causal__softmax_dim_1.lua")))
os.rename(home .. "/lessons/exercises/.02_again.lua.swp", learner)
s = wait_for("softmax_dim:", 10)
check("--watch: a save by rename is seen too", has(s, "softmax_dim: your softmax normalises over Nq"))
check("--watch: the progress follows", has(T.slurp(progress), "02_again fail"))
os.execute("kill " .. pid)

os.execute("rm -rf '" .. dir .. "' '" .. home .. "'")
T.report()
