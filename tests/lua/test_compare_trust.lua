-- test_compare_trust.lua — a checker a teacher can trust with a class
-- (issue 40): whatever one submission does, it gets its own verdict line
-- and the next one is graded; NaN and inf get a diagnosis of their own;
-- JSON lines stay valid UTF-8 and the terminal gets no control character
-- from a script.
local T = dofile("tests/lua/check.lua")
local json = dofile("tests/lua/json.lua")
local check = T.check_out

local dir = T.tmpdir()
local function write(name, text) return T.write(dir, name, text) end
local function run(args) return T.run(dir, args) end
local has = function(s, pat) return s ~= nil and s:find(pat, 1, true) ~= nil end
local function lines_of(path)
  local list = {}
  if not io.open(path) then return list end
  for line in io.lines(path) do list[#list + 1] = line end
  return list
end
-- the JSON verdict in path (nil when the checker wrote none)
local function verdict(path)
  local ok, v = pcall(json.decode, lines_of(path)[1] or "")
  return ok and v or nil
end

local REF = [[
tt.manual_seed(1)
local N, Dh = 4, 4
local q = tt.randn(N, Dh):named("Nq", "Dh")
local k = tt.randn(N, Dh):named("Nk", "Dh")
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
local w = scores:softmax("Nk"):label("weights")
]]
local ref = write("ref.lua", REF)
os.execute("mkdir -p " .. dir .. "/subs")
local function sub(name, text) return write("subs/" .. name, text) end

-- ===== A. never crash, never stop the batch =====
-- the first query row's keys all hidden: a softmax over -inf only is NaN
local nan = sub("a_nan.lua", (REF:gsub('local w = scores', 'local w = scores:masked_fill(tt.causal_mask(N, N):mT(), -math.huge)')))
local out, err, code = run("--compare " .. ref .. " " .. nan .. " --compare-json " .. dir .. "/nan.json")
local v = verdict(dir .. "/nan.json")
check("NaN in a student's tensor: a diagnosis of its own, not an engine error",
      code == 1 and v and v.diagnosis and v.diagnosis[1].kind == "nan" and not has(err, "table index is NaN"), out .. err)
check("... naming the row and the fully masked row as its likely cause",
      has(out, "has NaN in 1 row ([1])") and has(out, "every key of such a row is masked"), out)
-- exp overflow: inf, and the cause said
local inf = sub("a_inf.lua", (REF:gsub('local w = scores:softmax%("Nk"%)',
  'local e = (scores * 100):exp()\nlocal w = (e / e:sum("Nk", true))')))
out, err, code = run("--compare " .. ref .. " " .. inf)
check("inf from an exp: its own diagnosis, with the overflow as cause",
      code == 1 and has(out, "nan: your `weights` has") and has(out, "exp of a number above 88"), out .. err)

-- a batch under --sandbox: each of these gets its own line, and the good one after them is graded
local subs = {
  nan,
  sub("b_bigline.lua", 'error("x.lua:99999999999999999999: boom", 0)\n'),
  sub("c_bytes.lua", 'error("bad \\xff\\xfe bytes \\27[2J\\27[31mred\\7")\n'),
  sub("d_labels.lua", 'local x = tt.randn(2, 2)\nfor i = 1, 1e9 do x:label("l") end\n'),
  sub("e_huge_error.lua", 'error(string.rep("x", 25 * 2^20))\n'),
  sub("f_todo.lua", (REF:gsub('local w = .*', '-- ' .. string.rep("TODO(a ", 17000) .. '\n'))),
  sub("g_good.lua", REF),
}
local jpath = dir .. "/class.json"
local took
out, err, code, took = run("--sandbox --timeout 3 --max-memory 64M --compare " .. ref .. " "
                           .. table.concat(subs, " ") .. " --compare-json " .. jpath)
local lines = {}
for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
local function line_of(name) for _, l in ipairs(lines) do if has(l, "/" .. name .. ":") then return l end end return "" end
check("one verdict line per submission, whatever each did", #lines >= #subs, out .. err)
check("the NaN one: its diagnosis, and the batch goes on", has(line_of("a_nan.lua"), "✗ weights (line 6): nan — "), out)
check("a line number of 1e20 in an error: an error verdict (no format error)",
      has(line_of("b_bigline.lua"), "✗ error at line ?: x.lua:99999999999999999999: boom"), out .. err)
check("invalid UTF-8 and ESC in an error: shown escaped",
      has(line_of("c_bytes.lua"), "bad \\xff\\xfe bytes \\x1b[2J\\x1b[31mred\\x07"), out)
check("the terminal gets no control character from a script", not out:find("[\0-\9\11-\31\127]"), out)
check("a loop of x:label(): a timeout verdict (the engine's state is not filled)",
      has(line_of("d_labels.lua"), "✗ timeout at line 2: the script ran longer than 3 s"), out .. err)
check("a 25 MiB error message under --max-memory 64M: an error verdict, cut",
      has(line_of("e_huge_error.lua"), "... (the first 2000 of 262144") and #line_of("e_huge_error.lua") < 2300, out .. err)
check("a 120 KB line of TODO( in a submission: graded at once",
      has(line_of("f_todo.lua"), "✗ weights (line ?): not yet"), out)
check("the good one after them all matches", has(line_of("g_good.lua"), "✓ all 2 checkpoints match"), out .. err)
check("the batch in a few seconds (" .. string.format("%.1f", took) .. " s; the TODO line alone took 60 s)", took < 15)
local jl = lines_of(jpath)
local all_utf8, all_json = true, true
for _, l in ipairs(jl) do
  if not utf8.len(l) then all_utf8 = false end
  if not pcall(json.decode, l) then all_json = false end
end
check("--compare-json: one line per submission", #jl == #subs, table.concat(jl, "\n"))
check("... each valid UTF-8 and valid JSON", all_utf8 and all_json, table.concat(jl, "\n"))
local vs = {}
for i, l in ipairs(jl) do vs[i] = json.decode(l) end
check("... the stray bytes as U+FFFD, the ESC escaped",
      vs[3] and has(vs[3].error.message, "bad \u{FFFD}\u{FFFD} bytes \27[2J"), table.concat(jl, "\n"))
check("... the error kinds: error, timeout", vs[2] and vs[2].error.kind == "error" and vs[4] and vs[4].error.kind == "timeout"
      and vs[4].diagnosis[1].kind == "timeout", table.concat(jl, "\n"))

-- the line named is the one that made the first wrong value: an unlabelled
-- op two lines above the checkpoint, no known mistake to explain it
local upstream = write("upstream.lua", [[
tt.manual_seed(1)
local N, Dh = 4, 4
local q = tt.randn(N, Dh):named("Nq", "Dh")
local k = tt.randn(N, Dh):named("Nk", "Dh")
local raw = q:matmul(k:mT())
local bent = raw:abs()
local scores = (bent / math.sqrt(Dh)):label("scores")
local w = scores:softmax("Nk"):label("weights")
]])
out, err, code = run("--compare " .. ref .. " " .. upstream)
check("a wrong value made upstream of the checkpoint: its line is the one named",
      code == 1 and has(out, "✗ `scores` does not match (" .. upstream .. ":6)\n     6 | local bent = raw:abs()")
      and has(out, "first differ from every one of the reference's at line 6 (abs), before `scores` (line 7)"), out .. err)
-- a right value in another layout (k transposed first) is no wrong value
local layout = write("layout.lua", (REF:gsub("local scores = %(q:matmul%(k:mT%(%)%) / math.sqrt%(Dh%)%)",
  "local kt = k:mT()\nlocal s = q:matmul(kt)\nlocal scores = (s:abs() / math.sqrt(Dh))")))
out, err, code = run("--compare " .. ref .. " " .. layout)
check("... nothing added when it is made on the checkpoint's own line (a transposed k before it is right)", code == 1
      and not has(out, "first differ from") and has(out, "(" .. layout .. ":7)"), out .. err)

-- ===== B. isolation in grading =====
-- the reference writes a figure beside the submissions (a teacher running from their folder)
local REF_FIG = REF .. 'tt.heatmap(w, "' .. dir .. '/subs/ref_weights.png")\n'
local ref_fig = write("ref_fig.lua", REF_FIG)
local function attack(name, code) return sub(name, REF .. code .. "\n") end
local good = sub("k_good.lua", REF)
local bsubs = {
  attack("l_copy.lua", 'dofile("' .. good .. '")'),
  attack("m_ref.lua", 'io.open("' .. ref_fig .. '"):read("a")'),
  attack("n_fig1.lua", 'io.open("' .. dir .. '/subs/ref_weights.png")'),
  attack("o_fig2.lua", 'io.open("' .. dir .. '/subs/ref_weights.png")'),
  attack("p_forge.lua", 'print("' .. good .. ': ✓ all 2 checkpoints match")\nio.stdout:write("\\27[2J")'),
  attack("q_memory.lua", 'local t = {} for i = 1, 1e9 do t[i] = tt.zeros(1024, 1024) end'),
  good,
}
out, err, code = run("--sandbox --timeout 5 --max-memory 64M --read " .. dir .. " --compare " .. ref_fig .. " "
                     .. table.concat(bsubs, " ") .. " --compare-json " .. dir .. "/b.json")
lines = {}
for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
check("a classmate's file: refused, even inside --read", has(line_of("l_copy.lua"), "another file of this check"), out .. err)
check("the reference, inside --read: refused", has(line_of("m_ref.lua"), "cannot read '" .. ref_fig .. "'"), out)
check("the reference's figure written during the grading: refused",
      has(line_of("o_fig2.lua"), "it was written while the submissions are graded"), out)
check("printed verdict lines are no verdict lines: one line per submission, the forged one not among them",
      #lines == #bsubs + 1 and not has(out, "\n" .. good .. ": ✓ all 2 checkpoints match\n" .. good), out)
check("... the printer's own line is its verdict", has(line_of("p_forge.lua"), "✓ all 2 checkpoints match")
      and lines[5] and lines[5]:sub(1, #bsubs[5]) == bsubs[5], out)
check("the memory cap: a memory verdict", has(line_of("q_memory.lua"), "✗ memory at line 7:"), out)
check("the good one matches", has(line_of("k_good.lua"), "✓ all 2 checkpoints match"), out)
-- one script: its output quoted under the verdict
out, err, code = run("--sandbox --compare " .. ref .. " " .. bsubs[5])
check("one script: what it printed is quoted, never a verdict line",
      has(out, "your script printed:\n  | " .. good .. ": ✓ all 2 checkpoints match\n  | \\x1b[2J") and code == 0, out .. err)
-- its standard error too: quoted with its output, never raw on the teacher's terminal
local to_err = attack("p_stderr.lua", 'io.stderr:write("' .. good .. ': ✓ forged\\n\\27[2J")\nwarn("@on")\nwarn("a warning")')
out, err, code = run("--sandbox --compare " .. ref .. " " .. to_err .. " " .. good)
check("a batch: a submission's stderr reaches neither the terminal's stderr nor a verdict line",
      err == "" and not has(out, "forged") and code == 0, out .. "\n--- stderr:\n" .. err)
out, err, code = run("--compare " .. ref .. " " .. to_err)
check("one script: its stderr and warnings are quoted under the verdict, control characters shown",
      err == "" and has(out, "  | " .. good .. ": ✓ forged\n  | \\x1b[2J") and has(out, "\\x1b[2JLua warning: a warning"),
      out .. "\n--- stderr:\n" .. err)
-- nor does a setting MINE changes reach REF, which runs after it in the same process
do
  local sref = write("settings_ref.lua", 'local s = tostring(tt.tensor({1 / 3}))\n'
    .. 'if not s:find("0.3333", 1, true) then error("print precision leaked: " .. s) end\n'
    .. 'if tt.kernel_path() ~= "' .. tt.kernel_path() .. '" then error("kernel path leaked: " .. tt.kernel_path()) end\n'
    .. 'local x = tt.ones(2):label("x")\n')
  local setter = sub("s_settings.lua", 'tt.set_printoptions({precision = 1})\ntt.kernel_path("scalar")\nlocal x = tt.ones(2):label("x")\n')
  out, err, code = run("--sandbox --compare " .. sref .. " " .. setter .. " " .. setter)
  check("tt.set_printoptions and tt.kernel_path in MINE: REF runs as it would alone, the batch goes on",
        code == 0 and select(2, out:gsub("✓ all 1 checkpoints match", "")) == 2, out .. err)
end

-- the data files the reference declares ("-- reads:", found beside it or in a
-- folder above it) are the only other files a submission may read
do
  os.execute("mkdir -p " .. dir .. "/course/exercises/solutions " .. dir .. "/course/data")
  write("course/data/table.txt", "3\n")
  write("course/data/secret.txt", "42\n")
  local body = 'local n = tonumber(io.open("' .. dir .. '/course/data/table.txt"):read("l"))\n'
    .. 'local x = (tt.ones(2, 2) * n):label("x")\n'
  local dref = write("course/exercises/solutions/dref.lua", "-- reads: data/table.txt\n" .. body)
  local d_ok = sub("s_data.lua", body)
  local d_other = sub("s_other.lua", body .. 'io.open("' .. dir .. '/course/data/secret.txt")\n')
  local d_decl = sub("s_decl.lua", "-- reads: data/secret.txt\n" .. body .. 'io.open("' .. dir .. '/course/data/secret.txt")\n')
  out, err, code = run("--sandbox --compare " .. dref .. " " .. d_ok .. " " .. d_other .. " " .. d_decl)
  local dl = {}
  for l in out:gmatch("[^\n]+") do dl[#dl + 1] = l end
  check("a declared data file (in a folder above the reference): a submission reads it",
        dl[1] and has(dl[1], "s_data.lua: ✓ all 1 checkpoints match"), out .. err)
  check("... an undeclared file beside it: refused, saying what may be read", dl[2] and has(dl[2], "cannot read '"
        .. dir .. "/course/data/secret.txt': a checked script reads only its own file, the data files the reference declares"), out)
  check("... a submission's own '-- reads:' declares nothing", dl[3] and has(dl[3], "s_decl.lua: ✗ error")
        and has(dl[3], "secret.txt"), out)
  local bad = write("course/exercises/solutions/dbad.lua", "-- reads: data/nowhere.txt\n" .. body)
  out, err, code = run("--sandbox --compare " .. bad .. " " .. d_ok)
  check("a declared file found nowhere: a usage error before any grading", code == 2 and has(err, bad
        .. " declares 'data/nowhere.txt' ('-- reads:'), which is neither beside it nor in a folder above it"), out .. err)
end
-- the watchdog's own message stays the teacher's while the script's stderr is captured
do
  local fifo = os.tmpname()
  os.remove(fifo)
  assert(os.execute("mkfifo " .. fifo))
  local blocked = attack("p_fifo.lua", 'io.open("' .. fifo .. '")')
  out, err, code = run("--timeout 0.3 --compare " .. ref .. " " .. blocked)
  check("a script the watchdog stops: its message on the checker's stderr",
        code == 1 and has(err, "tensortrace: timeout: the script ran longer than 0.3 s (--timeout) and was stopped"), out .. err)
  os.remove(fifo)
end

-- nothing of the reference's run reaches the submission's, and a graded run looks like a normal one
local probe = sub("r_probe.lua", REF .. [[
local calls = 0
for _, s in pairs(tt.trace.summary({ print = false })) do calls = calls + s.calls end
local ok, why = pcall(tt.flow, "]] .. dir .. [[/flow.svg")
error(string.format("calls=%d flow=%s io.write=%s", calls, tostring(ok), io.type(io.write())), 0)
]])
local normal = select(2, run("-q " .. probe))
out, err, code = run("--compare " .. ref .. " " .. probe)
local graded = out:match("(calls=%d+ flow=%a+ io.write=[%a ]+)")
check("the submission sees its own trace (summary, flow) and io.write as in a normal run",
      graded and has(normal, graded) and has(graded, "io.write=file"), out .. "\n" .. normal)

-- --compare-json: refused inside --images and on an input
os.execute("mkdir -p " .. dir .. "/figs")
out, err, code = run("--sandbox --images " .. dir .. "/figs --compare " .. ref .. " " .. good .. " --compare-json " .. dir .. "/figs/g.json")
check("--compare-json inside --images: refused", code == 2 and has(err, "is inside --images") and not io.open(dir .. "/figs/g.json"), err)
out, err, code = run("--compare " .. ref .. " " .. good .. " --compare-json " .. ref)
check("--compare-json naming the reference: refused, the reference intact",
      code == 2 and has(err, "is one of the scripts being checked") and T.slurp(ref) == REF, err)

-- a label given inside a coroutine counts
local co = sub("s_coroutine.lua", (REF:gsub('local w = (.-)\n', 'local w\ncoroutine.wrap(function() w = %1 end)()\n')))
out, err, code = run("--compare " .. ref .. " " .. co)
check("a label given inside a coroutine is a checkpoint", code == 0 and has(out, "✓ all 2 checkpoints match"), out .. err)

-- ===== C. every correct answer accepted: "_" is no name =====
local UNNAMED = REF:gsub(':named%("N[qk]", "Dh"%)', ""):gsub('softmax%("Nk"%)', "softmax(2)")
local uref = write("unnamed_ref.lua", UNNAMED)
out, err, code = run("--compare " .. uref .. " " .. sub("t_named.lua", (UNNAMED:gsub('%):label%("scores"%)', '):named("Nq", "Nk"):label("scores")'))))
check("names where the reference has none: a match", code == 0 and has(out, "✓ all 2 checkpoints match"), out .. err)
out, err, code = run("--compare " .. uref .. " " .. sub("u_dim.lua", (UNNAMED:gsub("softmax%(2%)", "softmax(1)"))))
check("unnamed dims print as the trace prints them, and the hint names a number",
      code == 1 and has(out, "expected [4,4] float32") and has(out, "call softmax(2)") and not has(out, "_="), out .. err)

-- ===== D. for the teacher: a summary, each score, a CSV =====
local csv = dir .. "/grades.csv"
out, err, code = run("--sandbox --timeout 3 --compare " .. ref .. " " .. good .. " " .. nan .. " " .. subs[2] .. " "
                     .. subs[4] .. " --compare-csv " .. csv .. " --compare-json " .. dir .. "/d.json")
lines = {}
for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
check("the batch ends with its summary line",
      lines[#lines] == "graded 4: 1 matched, 1 failed, 1 errors, 1 timeouts, 0 out of memory", out .. err)
check("each line ends with the student's score", has(lines[1], "✓ all 2 checkpoints match [2/2]")
      and (lines[2] or ""):sub(-6) == " [1/2]" and (lines[3] or ""):sub(-6) == " [0/2]", out)
local rows = lines_of(csv)
check("--compare-csv: a header and a row per submission", #rows == 5 and rows[1] == "file,verdict,score,total,label,line,kind,message", table.concat(rows, "\n"))
check("... the rows: verdict, score, label, line, kind", rows[2] == '"' .. good .. '","match",2,2,,,,'
      and has(rows[3], '"fail",1,2,"weights",6,"nan","your `weights` has NaN') and has(rows[5], '"timeout",0,2,'), table.concat(rows, "\n"))
local dv = json.decode(lines_of(dir .. "/d.json")[2] or "{}")
check("--compare-json: verdict, score and total", dv.verdict == "fail" and dv.score == 1 and dv.total == 2)
out, err, code = run("--sandbox --images " .. dir .. "/figs --compare " .. ref .. " " .. good .. " --compare-csv " .. dir .. "/figs/g.csv")
check("--compare-csv inside --images: refused", code == 2 and has(err, "--compare-csv") and has(err, "is inside --images"), err)

-- ===== D. for the student: the exercise named in a header =====
local function ex(args)
  local o, e = dir .. "/ex.out", dir .. "/ex.err"
  local _, _, c = os.execute("XDG_STATE_HOME=" .. dir .. "/state ./tensortrace " .. args .. " >" .. o .. " 2>" .. e .. " </dev/null")
  return T.slurp(o), T.slurp(e), c
end
local SOL03 = T.slurp("lessons/exercises/solutions/03_causal_mask.lua")
local week = write("week2_05.lua", "-- exercise: 03\n" .. SOL03)
out, err, code = ex("--exercise " .. week)
check("week2_05.lua whose header says 03: checked against 03, and told so",
      code == 0 and has(out, "✓ all 4 checkpoints match") and has(err, "checked against 03_causal_mask.lua, as its header says (not 05_hand_example.lua"), out .. err)
local anon = write("attention.lua", "-- my answer\n-- exercise: causal_mask\n" .. SOL03)
out, err, code = ex("--exercise " .. anon)
check("a file whose name says nothing: its header names the exercise", code == 0 and has(out, "✓ all 4 checkpoints match"), out .. err)
out, err, code = ex("--exercise " .. write("bad_header.lua", "-- exercise: 99\n" .. SOL03))
check("a header naming no exercise: refused, said", code == 2 and has(err, "says '-- exercise: 99', which is no exercise"), err)

-- ===== D. --watch: a separator with the time, saves through a symlink, a deleted folder =====
os.execute("mkdir -p " .. dir .. "/real " .. dir .. "/work")
local STARTER = T.slurp("lessons/exercises/03_causal_mask.lua")
write("real/answer.lua", STARTER)
os.execute("ln -s ../real/answer.lua " .. dir .. "/work/my_03.lua")
local log, pidf = dir .. "/watch.log", dir .. "/watch.pid"
os.execute("(XDG_STATE_HOME=" .. dir .. "/state ./tensortrace --exercise " .. dir .. "/work/my_03.lua --watch >" .. log
           .. " 2>&1 & echo $! >" .. pidf .. "; wait $!; echo exit=$? >>" .. log .. ") &")
local function read_log() local f = io.open(log) if not f then return "" end local t = f:read("a") f:close() return t end
local function wait_for(text)
  local t0 = tt.clock()
  while tt.clock() - t0 < 10 do
    if has(read_log(), text) then break end
    os.execute("sleep 0.1")
  end
  return read_log()
end
local w = wait_for("watching")
check("--watch: a separator with the time before the check", w:find("^──────── %d%d:%d%d:%d%d ────────\n") ~= nil, w)
write("work/my_03.lua", SOL03)               -- an editor saving through the symlink writes the file it points to
w = wait_for("✓ all 4 checkpoints match")
check("--watch: a save through a symlink is seen", has(w, "✓ all 4 checkpoints match"), w)
local _, seps = w:gsub("──────── %d%d:%d%d:%d%d ────────", "")
check("--watch: a separator before each check", seps == 2, w)
os.execute("rm -rf " .. dir .. "/work")
w = wait_for("exit=")
check("--watch: the folder deleted: said, and the watch ends",
      has(w, "--watch: the folder '" .. dir .. "/work' was deleted or moved; stopped watching") and has(w, "exit=2"), w)
os.execute("kill " .. (T.slurp(pidf):match("%d+") or "") .. " 2>/dev/null")   -- a watch that did not end

-- ===== F. re-checked on other inputs =====
local SOL = "lessons/exercises/solutions/03_causal_mask.lua"
local bare = write("bare_03.lua", SOL03:sub(1, (SOL03:find("\n%-%- ===== checks ====="))))
local lucky = write("lucky_03.lua", (T.slurp(bare):gsub("tt%.causal_mask%(N%)", "tt.causal_mask(5)")))
out, err, code = run("--compare " .. SOL .. " " .. bare .. " " .. lucky .. " --compare-json " .. dir .. "/f.json")
local fv = {}
for i, l in ipairs(lines_of(dir .. "/f.json")) do fv[i] = json.decode(l) end
check("a correct answer: re-checked on the declared inputs, each matching",
      fv[1] and fv[1].match == true and #(fv[1].rechecks or {}) == 3 and fv[1].rechecks[1].variant == "N = 7, seed = 30"
      and fv[1].rechecks[1].sizes.N == 7 and fv[1].rechecks[1].seed == 30 and fv[1].rechecks[3].match == true, out)
check("a size written as a number: no lucky pass, the line and the replay command given",
      fv[2] and fv[2].match == false and fv[2].diagnosis and fv[2].diagnosis[1].kind == "other_inputs" and fv[2].first.line == 12
      and has(fv[2].diagnosis[1].message, "not for N = 7, seed = 30") and has(fv[2].diagnosis[1].message, "on line 12 you wrote 5")
      and fv[2].rechecks[1].match == false, out)
local replay = fv[2] and fv[2].diagnosis and fv[2].diagnosis[1].replay or ""
check("... the replay command", replay == "tensortrace --compare " .. SOL .. " " .. lucky .. " --recheck 'N = 7, seed = 30'", replay)
out, err, code = run((replay:gsub("^tensortrace ", "")))
check("... which shows that input's mismatch", code == 1 and has(out, "your `allowed` is [7,7]") == false
      and has(out, "your `allowed` is [5,5], the reference's [7,7]"), out .. err)
out, err, code = run("--compare lessons/exercises/solutions/21_pipeline.lua tests/exercises/21_pipeline__other_inputs_10.lua")
check("a size no variant names (Dh = D // H) written as 4: no hint from a number the reference writes too (three = 3)",
      code == 1 and has(out, "not for H = 2") and has(out, "you wrote 3") == false and has(out, "  17 | local scores"), out .. err)

-- ===== E. words that fit =====
local MASKED = [[
tt.manual_seed(2)
local N = 4
local q = tt.randn(N, 3):named("Nq", "Dh")
local k = tt.randn(N, 3):named("Nk", "Dh")
local allowed = tt.causal_mask(N)
local scores = (q:matmul(k:mT()) / math.sqrt(3)):label("scores")
local w = scores:masked_fill(~allowed, -math.huge):softmax("Nk"):label("weights")
]]
local mref = write("masked_ref.lua", MASKED)
out, err, code = run("--compare " .. mref .. " " .. sub("v_band.lua", (MASKED:gsub("tt%.causal_mask%(N%)", "tt.causal_mask(N):float():triu(-1):bool()"))))
check("a wrong mask: which cells differ, and the line that built it",
      code == 1 and has(out, "values: cells the reference shows are hidden in yours (row [3]: keys 1); your mask is made on line 7"), out .. err)
out, err, code = run("--compare " .. mref .. " " .. sub("v_sdpa.lua", (MASKED:gsub("local w = [^\n]*",
  'local _, w = tt.sdpa(q, k:abs(), k, {causal = true, weights = true})\nw:named("Nq", "Nk"):label("weights")'))))
check("tt.sdpa's weights, other values under the same mask: its zeros are hidden cells, no mask said to differ",
      code == 1 and has(out, "your `weights`") == false and has(out, "values: ") and has(out, "hides are visible") == false
      and has(out, "no known mistake explains it"), out .. err)
out, err, code = run("--compare " .. mref .. " " .. sub("v_sdpa_window.lua", (MASKED:gsub("local w = [^\n]*",
  'local _, w = tt.sdpa(q, k, k, {window = 2, weights = true})\nw:named("Nq", "Nk"):label("weights")'))))
check("... and a window of 2 in its place: the cells it hides are said",
      code == 1 and has(out, "values: cells the reference shows are hidden in yours (row [3]: keys 1)"), out .. err)
local KEEP = [[
tt.manual_seed(4)
local p = tt.randn(4, 4)
local s = (p - p:sum(2, true)):label("s")
]]
out, err, code = run("--compare " .. write("keep_ref.lua", KEEP) .. " " .. sub("w_keep.lua", (KEEP:gsub("sum%(2, true%)", "sum(2)"))))
check("a sum without keepdim, broadcast along the other dim: said, with PyTorch's name for it",
      code == 1 and has(out, "keepdim_missing: your sum drops the dim it reduces") and has(out, "keepdim=True"), out .. err)
out, err, code = run("--compare " .. write("keep_ref.lua", KEEP) .. " " .. sub("x_dim.lua", (KEEP:gsub("sum%(2, true%)", "sum(1, true)"))))
check("a 0-based dim: said", code == 1 and has(out, "reduce_dim: your sum reduces dim 1; the reference reduces dim 2 (dims count from 1 here: PyTorch's dim=1 is 2)"), out .. err)

-- ===== G. one op list: every op of the core's table is replayed or says why not =====
local engine = loadfile("lua/compare.lua")
local known, skipped = {}, {}
if engine then
  local ok, a, b = pcall(engine, nil, nil, { mode = "replayable", out = function() end })
  if ok then known, skipped = a, b else engine = nil end
end
check("lua/compare.lua answers which ops it replays", engine ~= nil and type(skipped) == "table")
skipped = type(skipped) == "table" and skipped or {}
local ops, missing, both = {}, {}, {}
for name in T.slurp("core/ops/optable.c"):gmatch('%[TT_OP_[%w_]+%] = { %.name = "([^"]+)"') do
  ops[name] = true
  if not known[name] and not (skipped[name] and #skipped[name] > 0) then missing[#missing + 1] = name end
  if known[name] and skipped[name] then both[#both + 1] = name end
end
local stale = {}
for name in pairs(skipped) do if not ops[name] then stale[#stale + 1] = name end end
check("the op table read (" .. #missing .. " missing)", next(ops) ~= nil)
check("every op of core/ops/optable.c is replayed by compare.lua or listed as not, with why: " .. table.concat(missing, ", "), #missing == 0)
check("none is both: " .. table.concat(both, ", "), #both == 0)
check("no op listed that the table lacks: " .. table.concat(stale, ", "), #stale == 0)

-- a scramble where nothing splits heads: no advice about heads
out, err, code = run("--compare lessons/exercises/solutions/00_views.lua tests/exercises/00_views__heads_scrambled_4.lua")
check("values moved where no heads are split: the advice names view and transpose, not heads",
      code == 1 and has(out, "heads_scrambled: your values are the reference's, in other places: a view or reshape")
      and not has(out, "view(B, N, H, Dh)"), out .. err)
-- √ of an unnamed size: the number, not "√_"
local ROOT = "tt.manual_seed(5)\nlocal q = tt.randn(4, 9)\nlocal k = tt.randn(4, 9)\n"
  .. "local s = (q:matmul(k:mT()) / math.sqrt(9)):label(\"scores\")\nlocal w = s:softmax(2):label(\"weights\")\n"
out, err, code = run("--compare " .. write("root_ref.lua", ROOT) .. " " .. sub("y_root.lua", (ROOT:gsub("math%.sqrt%(9%)", "math.sqrt(4)"))))
check("a scale by the √ of an unnamed size: its number", code == 1 and has(out, "you divided by √4 = 2") and not has(out, "√_"), out .. err)

T.report()
