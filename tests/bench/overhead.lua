-- overhead.lua — the interpreter's side of `make bench`: what a tiny op
-- costs from Lua with the trace off (target: at most 1 us), and the wall
-- time of every lesson as a learner runs it (target: under 100 ms); each
-- tiny op also with recording for backward on (target: at most 1.5x off).
-- Run: ./tensortrace -q tests/bench/overhead.lua [ops] [lessons] [quick]
-- (no section named: both; only bench.c's sections named: neither; quick:
-- few short runs).

local OP_TARGET_US, LESSON_TARGET_MS = 1.0, 100
local REC_TARGET = 1.5                 -- a tiny op recording for backward: at most 1.5x its cost off
local RUNS, CALLS = 15, 50000          -- per tiny op: runs of CALLS calls, after a warm-up
local LESSON_RUNS = 7                  -- per lesson, after one untimed run (disk cache, page cache of the binary)

local want = {}
for _, a in ipairs(arg) do if a == "quick" then RUNS, CALLS, LESSON_RUNS = 3, 5000, 1 else want[a] = true end end
local any = next(want) ~= nil
local known = want.ops or want.lessons or want.overhead
if any and not known then return end  -- `make bench BENCH_ARGS=gemm`: not ours
local all = not any or want.overhead

local lib = dofile((arg[0]:match("^(.*/)") or "./") .. "benchlib.lua")
local median_min_max, sh_quote, read_cmd, interpreter = lib.median_min_max, lib.sh_quote, lib.read_cmd, lib.interpreter

local function verdict(med, target)
  return med <= target and string.format("ok (%.0f%%)", 100 * med / target)
                        or string.format("OVER (%.1fx)", med / target)
end

-- ===== tiny ops =====

-- us per call of loop: median, min, max of RUNS runs of CALLS calls. Each
-- run starts from a full collection (not timed), so no run inherits the
-- garbage of the one before, and ends with one (timed): a run pays for
-- freeing all it made, not for a share that depends on where the
-- collector's cycle happened to stop. The first runs of a loop without
-- that spread from 0.3 to 7 us for the same op.
local function time_loop(loop)
  loop(CALLS // 5)                     -- warm-up: caches, free lists, the collector's pace
  local ts = {}
  for r = 1, RUNS do
    collectgarbage()
    local t0 = tt.clock()
    loop(CALLS)
    collectgarbage()
    ts[r] = (tt.clock() - t0) / CALLS * 1e6
  end
  return median_min_max(ts)
end

-- Each op twice: on inputs that do not require grad (recording off), then
-- on the same values requiring grad (each call records a node of the graph,
-- which the collector frees with its result).
local function bench_ops()
  tt.trace.off()                       -- also when run with the trace on
  local function inputs(grad)
    tt.manual_seed(0)
    local t = {x = tt.randn(4), y = tt.randn(4), m = tt.randn(2, 3), a = tt.randn(2, 2), b = tt.randn(2, 2)}
    if grad then for _, v in pairs(t) do v:requires_grad_() end end
    return t
  end
  local cases = {
    {"add [4] + [4]", function(t, n) local x, y = t.x, t.y for _ = 1, n do local _ = x + y end end},
    {"transpose [2,3] (view)", function(t, n) local m = t.m for _ = 1, n do local _ = m:transpose(1, 2) end end},
    {"matmul [2,2] @ [2,2]", function(t, n) local a, b = t.a, t.b for _ = 1, n do local _ = a:matmul(b) end end},
    {"softmax [4]", function(t, n) local x = t.x for _ = 1, n do local _ = x:softmax(1) end end},
  }
  local off, on = inputs(false), inputs(true)
  print(string.format("\n== tiny ops from Lua, trace off (us per op: median (min-max) of %d runs of %d calls"
                      .. " after a warm-up;\n   recording on: the inputs require grad; ratio = on / off,"
                      .. " target %.1fx)", RUNS, CALLS, REC_TARGET))
  print(string.format("  %-24s %-24s%-14s%-24s%-7s%s", "op", "recording off", "verdict",
                      "recording on", "ratio", "verdict"))
  for _, c in ipairs(cases) do
    local name, loop = c[1], c[2]
    local med, lo, hi = time_loop(function(n) loop(off, n) end)
    local rmed, rlo, rhi = time_loop(function(n) loop(on, n) end)
    local ratio = rmed / med
    print(string.format("  %-24s %-24s%-14s%-24s%-7s%s", name, string.format("%.2f (%.2f-%.2f) us", med, lo, hi),
                        verdict(med, OP_TARGET_US), string.format("%.2f (%.2f-%.2f) us", rmed, rlo, rhi),
                        string.format("%.2fx", ratio), ratio <= REC_TARGET and "ok" or "OVER"))
    io.stdout:flush()
  end
  tt.trace.on()
end

-- ===== lessons =====

local function bench_lessons()
  local cwd = read_cmd("pwd"):gsub("%s+$", "")
  local exe = interpreter(cwd)
  -- lessons write their figures to images/: run them in a scratch folder
  -- so the committed ones are never touched (as tests/test_golden.sh does)
  local tmp = os.tmpname()
  os.remove(tmp)
  assert(os.execute("mkdir -p " .. sh_quote(tmp .. "/images") .. " && ln -s " .. sh_quote(cwd .. "/lessons")
                    .. " " .. sh_quote(tmp .. "/lessons")))
  print(string.format("\n== lessons: ./tensortrace lessons/NN.lua > /dev/null, trace on, figures written, default"
                      .. " threads\n   (wall ms of the whole process: median (min-max) of %d runs after an untimed one)", LESSON_RUNS))
  print(string.format("  %-24s %-28s%-10s%s", "lesson", "ours", "target", "verdict"))
  local worst = 0
  for path in read_cmd("ls lessons/*.lua"):gmatch("[^\n]+") do
    local name = path:match("([^/]+)%.lua$")
    local cmd = "cd " .. sh_quote(tmp) .. " && " .. sh_quote(exe) .. " " .. sh_quote(path) .. " >/dev/null 2>&1"
    local failed = not os.execute(cmd)   -- untimed: the first run reads the lesson, its data and libraries from disk
    local ts = {}
    for r = 1, LESSON_RUNS do
      local t0 = tt.clock()
      local ok = os.execute(cmd)
      ts[r] = (tt.clock() - t0) * 1e3
      failed = failed or not ok
    end
    local med, lo, hi = median_min_max(ts)
    worst = math.max(worst, med)
    print(string.format("  %-24s %-28s%-10s%s", name, string.format("%.1f (%.1f-%.1f) ms", med, lo, hi),
                        string.format("%d ms", LESSON_TARGET_MS),
                        failed and "FAILED (the lesson raised an error)" or verdict(med, LESSON_TARGET_MS)))
    io.stdout:flush()
  end
  os.execute("rm -rf " .. sh_quote(tmp))
  print(string.format("  slowest lesson: %.1f ms (target %d ms)", worst, LESSON_TARGET_MS))
end

if all or want.ops then bench_ops() end
if all or want.lessons then bench_lessons() end
