-- test_limits.lua — resource limits: memory cap (tensors and the Lua heap),
-- overflowing shapes, the dims limit, --timeout and --max-instructions
-- (also against pcall loops and coroutines, and inside a long C op),
-- zero-size dims as in PyTorch, and the usage errors of the limit options.
local T = dofile("tests/lua/check.lua")
local check, close, checkerror = T.check, T.close, T.checkerror
local tt = require "tt"

local dir = T.tmpdir()
local function write(name, text) return T.write(dir, name, text) end
-- Runs ./tensortrace with args; returns stdout, stderr, exit code, seconds.
local function run(args, stdin_path) return T.run(dir, args, stdin_path) end

local has = function(s, pat) return s:find(pat, 1, true) ~= nil end

-- ===== memory =====
local out, err, code = run("-q --max-memory 1M -e 'local x = tt.zeros(1000, 1000)'")
check("tensor past --max-memory: exit 1", code == 1)
check("... names the op, the shape and the bytes asked for",
      has(err, "(command line):1: zeros: cannot allocate float32 [1000,1000]: 3.8 MiB needed but the memory cap is 1.0 MiB"))
check("... and the hint", has(err, "hint: raise it with --max-memory"))

out, err, code = run("-q --max-memory 64M -e 'local t = {} for i = 1, 1e9 do t[i] = i end'")
check("Lua heap past the cap: exit 1, not an OOM kill", code == 1)
check("... says which cap and the option", has(err, "would pass the cap of 64.0 MiB (Lua data ") and has(err, "; hint: raise it with --max-memory"))
check("... the line and what was being allocated", has(err, "tensortrace: (command line):1: not enough memory: growing a Lua block"))

out, err, code = run("-q --max-memory 64M -e 'local ok = pcall(function() local t = {} for i = 1, 1e9 do t[i] = i end end) collectgarbage() print(ok, tt.zeros(10):sum():item())'")
check("after a caught memory error the script goes on", code == 0 and has(out, "false\t0.0"))

out, err, code = run("-q -e 'print(pcall(tt.zeros, 1 << 40))'")
check("the default cap stops a 4 TiB tensor with an error", code == 0 and has(out, "false") and has(out, "memory cap"))

-- Graph nodes count against the cap: a loop of recorded ops without a
-- backward stays under a small one (each node is freed with its result),
-- and a chain kept alive by its last result meets it naming the op (an
-- uncounted graph grew past 600 MB in silence there).
out, err, code = run("-q --max-memory 4M -e 'local x = tt.randn(2, 3):requires_grad_() "
                     .. "for i = 1, 100000 do local z = (x:transpose(1, 2) * 2):softmax(1) end print(\"bounded\")'")
check("100000 recorded ops without backward under a 4M cap", code == 0 and has(out, "bounded"))
out, err, code = run("-q --max-memory 4M -e 'local x = tt.randn(2, 3):requires_grad_() local y = x "
                     .. "for i = 1, 1e6 do y = y:transpose(1, 2) end'")
check("a graph kept alive meets the cap: exit 1", code == 1)
check("... naming the op and the cap", has(err, "(command line):1: transpose: recording its gradient: ")
      and has(err, "needed but the memory cap is 4.0 MiB") and has(err, "hint: raise it with --max-memory"))

-- A 16-bit matmul whose K passes one cache block goes through a float32
-- copy of its result, twice the result's bytes: that copy counts too (it
-- was a bare malloc). Here 8 MiB of input and a 32 MiB result fit under
-- 64M, the 64 MiB copy does not; the error comes before any arithmetic.
-- (float16: K = 1024 passes a block on every path; bfloat16 pairs on
-- avx512_bf16 take K up to 2048 in one and need no copy.)
out, err, code = run("-q --max-memory 64M -e 'local a = tt.ones(4096, 1024, \"float16\") "
                     .. "local y = a:matmul(a:mT()) print(\"computed\")'")
check("a float16 matmul's float32 copy past the cap: exit 1", code == 1 and not has(out, "computed"))
check("... naming the op, the copy and the cap: " .. err,
      has(err, "(command line):1: matmul: no memory for a float32 copy of the 4096 x 4096 result: 64.0 MiB needed")
      and has(err, "the memory cap is 64.0 MiB") and has(err, "hint: raise it with --max-memory"))

out, err, code = run("-q --max-memory 0 -e 'print(pcall(tt.zeros, 1 << 50))'")
check("--max-memory 0 lifts the cap (malloc still fails cleanly)", code == 0 and has(out, "false") and has(out, "out of memory"))

-- The process stays near the cap, whatever the script frees and allocates:
-- freed buffers kept for reuse count (they yield first), and so does a
-- figure's canvas and its SVG shapes. The child reads its own peak resident
-- memory; peaks are taken over an empty run's (a sanitizer build has a larger
-- base and, with its quarantine off, the same growth give or take its shadow).
local hwm_tail = [[ local st = io.open("/proc/self/status"):read("a") print("VmHWM " .. st:match("VmHWM:%s*(%d+)"))]]
local asan = "ASAN_OPTIONS=" .. (os.getenv("ASAN_OPTIONS") or "") .. ":quarantine_size_mb=0 "
local function peak(name, text, cap)  -- kB over an empty run's, and the child's stdout
  local function hwm(script)
    local o = dir .. "/peak.out"
    os.execute(asan .. "./tensortrace -q --max-memory " .. cap .. " " .. script .. " >" .. o .. " 2>&1")
    local res = T.slurp(o)
    return tonumber(res:match("VmHWM (%d+)")), res
  end
  local base = hwm(write("empty.lua", hwm_tail))
  local h, res = hwm(write(name, text .. hwm_tail))
  return h and base and h - base, res
end
local grew, res = peak("cache.lua", "for i = 1, 12 do local x = tt.randn(i * 1000, 1000); x = nil; collectgarbage() end", "64M")
check("freed buffers kept for reuse stay under the cap: +" .. tostring(grew) .. " kB (was +226 MB)",
      grew and grew < 80000)
grew, res = peak("canvas.lua", "local x = tt.randn(64, 3000, 64) print(pcall(tt.heatmap, x, '" .. dir .. "/c.png', {annotate = true}))", "64M")
check("a figure's canvas counts against the cap: " .. res, has(res, "false")
      and has(res, "image: ") and has(res, "needed but the memory cap is 64.0 MiB"))
check("... and the peak stays near it: +" .. tostring(grew) .. " kB (was +131 MB)", grew and grew < 80000)
grew, res = peak("bigpng.lua", "tt.heatmap(tt.randn(2048, 3000), '" .. dir .. "/b.png')", "64M")
check("a PNG figure records no SVG shapes: +" .. tostring(grew) .. " kB (was +68 MB)", grew and grew < 50000)
grew, res = peak("bigsvg.lua", "print(pcall(tt.heatmap, tt.randn(2048, 3000), '" .. dir .. "/b.svg'))", "40M")
check("an SVG's shapes count against the cap: " .. res, has(res, "false") and has(res, "past --max-memory"))
check("... and the peak stays near it: +" .. tostring(grew) .. " kB", grew and grew < 60000)

-- ===== shapes =====
checkerror({"zeros", "[1099511627776,1099511627776]", "too large"}, tt.zeros, 1 << 40, 1 << 40)
checkerror({"ones", "too large"}, tt.ones, {1 << 31, 1 << 31, 1 << 31})
checkerror({"zeros", "too large"}, tt.zeros, 0, 1 << 62, 1000)     -- strides would overflow
checkerror({"expand", "too large"}, function() return tt.zeros(1, 1):expand(1 << 40, 1 << 40) end)
checkerror({"view", "too large"}, function() return tt.zeros(0):view(0, 1 << 62, 1000) end)
checkerror({"tensor", "too large"}, tt.tensor, setmetatable({}, {__len = function() return 1 << 62 end}))
checkerror({"tensor", "negative length"}, tt.tensor, setmetatable({}, {__len = function() return -1 end}))
checkerror({"chunk"}, function() return tt.zeros(3):chunk(0) end)
check("chunk into maxinteger pieces", #tt.zeros(3):chunk(math.maxinteger) == 3)
check("split by maxinteger", #tt.zeros(3):split(math.maxinteger) == 1)
checkerror({"arange", "too many"}, tt.arange, 0, 1e30)
checkerror({"zeros", "9 dims given, at most 8"}, tt.zeros, {1, 1, 1, 1, 1, 1, 1, 1, 1})
checkerror({"zeros", "more than 8 dims"}, tt.zeros, 1, 1, 1, 1, 1, 1, 1, 1, 1)
checkerror({"unsqueeze", "at most 8 dims"}, function() return tt.zeros(1, 1, 1, 1, 1, 1, 1, 1):unsqueeze(1) end)
checkerror({"tensor", "deeper than 8"}, tt.tensor, {{{{{{{{{1}}}}}}}}})
checkerror({"zeros", "negative"}, tt.zeros, 2, -1)
local big = tt.zeros(1):expand(1 << 40)
check("a huge expanded view prints summarised, at once", has(tostring(big), "[0., 0., 0., ..., 0., 0., 0.]"))
check("an empty tensor with a huge dim prints at once", has(tostring(tt.zeros(1, 1 << 40, 0)), "[]"))

out, err, code = run("--timeout 20 --trace=values -e 'local x = tt.tensor(1.5):expand(3, 1 << 31)'")
check("--trace=values of a huge expanded view is quick", code == 0 and has(out, "mean 1.5") and has(out, "of the first"))

-- ===== zero-size dims, as in PyTorch =====
local e = tt.zeros(0, 5)
check("[0,5] is legal", e:numel() == 0 and e:size(2) == 5)
close("sum of empty is 0", e:sum(), 0)
close("sum over the empty dim: zeros", e:sum(1), {0, 0, 0, 0, 0})
check("sum over the other dim: [0]", e:sum(2):numel() == 0 and e:sum(2):dim() == 1)
checkerror({"max", "empty"}, function() return e:max() end)
checkerror({"max"}, function() return e:max(1) end)
check("mean of empty is NaN", e:mean():item() ~= e:mean():item())
local mm = tt.zeros(2, 0):matmul(tt.zeros(0, 3))
check("[2,0] @ [0,3] is [2,3] zeros", mm:size(1) == 2 and mm:size(2) == 3)
close("... of zeros", mm, {{0, 0, 0}, {0, 0, 0}})
check("softmax of [0,5]", e:softmax(-1):numel() == 0)
check("cat with an empty part", tt.cat({tt.ones(2, 3), tt.zeros(0, 3)}, 1):size(1) == 2)
check("narrow to length 0", tt.ones(4):narrow(1, 3, 0):numel() == 0)
check("view of [0,5] as [5,0]", e:view(5, 0):size(1) == 5)
checkerror({"cannot infer -1"}, function() return e:reshape(0, -1) end)  -- ambiguous, as PyTorch
checkerror({"cannot infer -1"}, function() return e:reshape(-1, 0) end)
check("sdpa with no keys gives zeros",
      tt.sdpa(tt.ones(1, 2, 4), tt.zeros(1, 0, 4), tt.zeros(1, 0, 4)):sum():item() == 0)
check("empty causal mask", tt.causal_mask(0):numel() == 0)

-- ===== timeout and instruction budget =====
out, err, code = run("-q --timeout 0.3 -e 'while true do end'")
check("--timeout stops a loop: exit 1", code == 1)
check("... with file:line and the option", has(err, "(command line):1: timeout: the script ran longer than 0.3 s (--timeout)"))

out, err, code = run("-q --timeout 0.3 -e 'while true do pcall(function() while true do end end) end'")
check("pcall in a loop cannot swallow the timeout", code == 1 and has(err, "timeout"))

out, err, code = run("-q --timeout 0.3 -e 'local f = coroutine.wrap(function() while true do pcall(function() while true do end end) end end) f()'")
check("nor can a coroutine", code == 1 and has(err, "timeout"))

-- Lua runs message handlers and finalizers with hooks off: the watchdog
-- stops them and says where the time went. (Bounded by `timeout` when the
-- system has it, so that a regression fails rather than hangs.)
local bounded = os.execute("command -v timeout >/dev/null 2>&1") and "timeout 20 " or ""
local function run_bounded(args)
  local t0 = tt.clock()
  local _, _, c = os.execute(bounded .. "./tensortrace " .. args .. " >" .. dir .. "/out 2>" .. dir .. "/err </dev/null")
  return T.slurp(dir .. "/out"), T.slurp(dir .. "/err"), c, tt.clock() - t0
end
local t
local handler = "xpcall(function() while true do end end, function() while true do end end)"
out, err, code, t = run_bounded("-q --timeout 0.3 -e '" .. handler .. "'")
check("a looping message handler is stopped (exit " .. tostring(code) .. ", " .. string.format("%.1f", t) .. " s)",
      code == 1 and t < 6)
check("... saying where", has(err, "tensortrace: timeout: the script ran longer than 0.3 s (--timeout) and was stopped in an error handler or __gc finalizer that ran on after the error"))
out, err, code, t = run_bounded("-q --max-instructions 100000 -e '" .. handler .. "'")
check("--max-instructions stops a looping message handler too (exit " .. tostring(code) .. ")", code == 1 and t < 6)
check("... saying which limit", has(err, "instruction limit: the script ran more than 100000 Lua instructions (--max-instructions) and was stopped in an error handler"))

local gc_loop = "setmetatable({}, {__gc = function() while true do end end})"
out, err, code, t = run_bounded("-q --timeout 0.3 -e '" .. gc_loop .. " print(\"done\")'")
check("a finalizer looping at exit is stopped (exit " .. tostring(code) .. ", " .. string.format("%.1f", t) .. " s)",
      code == 1 and t < 6 and has(out, "done"))
check("... saying it was the exit", has(err, "timeout: the script ran longer than 0.3 s (--timeout) and was stopped in a __gc finalizer run at exit"))
out, err, code, t = run_bounded("-q --timeout 0.3 -e '" .. gc_loop .. " collectgarbage() print(\"after\")'")
check("a finalizer looping mid-script is stopped", code == 1 and t < 6 and not has(out, "after"))
check("... saying where", has(err, "and was stopped in a __gc finalizer or a long or blocked Lua library call"))
-- an io.open waiting on a FIFO (no --sandbox, which refuses it): the
-- watchdog's message names the blocked call, not only a finalizer
do
  local fifo = os.tmpname()
  os.remove(fifo)
  assert(os.execute("mkfifo " .. fifo))
  out, err, code, t = run_bounded("-q --timeout 0.3 -e 'io.open(\"" .. fifo .. "\")'")
  check("an open blocked on a FIFO is stopped (exit " .. tostring(code) .. ")", code == 1 and t < 6)
  check("... naming the blocked call", has(err, "an open or read waiting on a FIFO, pipe or terminal"))
  os.remove(fifo)
end
out, err, code, t = run_bounded("-q --sandbox --timeout 0.3 -e '" .. gc_loop .. "'")
check("... and under --sandbox", code == 1 and t < 6 and has(err, "__gc finalizer run at exit"))

-- a figure being written when the watchdog stops the script leaves no
-- temporary file; nor does SIGKILL; a leftover of a dead process goes
local figs = dir .. "/figs"
os.execute("mkdir -p " .. figs)
local function leftovers()
  local p = io.popen("ls -A " .. figs)
  local names = {}
  for n in p:lines() do if n ~= "h.png" then names[#names + 1] = n end end
  p:close()
  return table.concat(names, " ")
end
local figloop = write("figloop.lua", "local x = tt.rand(64, 100, 100)\nfor i = 1, 1000 do tt.heatmap(x, '" .. figs .. "/h.png') end\n")
out, err, code, t = run_bounded("-q --timeout 0.1 " .. figloop)
check("watchdog stop during figures: exit 1", code == 1)
check("... says which figure", has(err, "figure '" .. figs .. "/h.png'"))
check("... no temporary file left (" .. leftovers() .. ")", leftovers() == "")
-- SIGKILL: a figure is written unnamed (O_TMPFILE) and only a finished one
-- gets a temporary name, for the instant before its rename; so a kill
-- leaves nothing, or a whole figure that the next write removes (below)
local p = io.popen(bounded .. "sh -c './tensortrace -q " .. figloop .. " >/dev/null 2>&1 & p=$!; echo $p; sleep 1.5; kill -9 $p; wait $p' 2>/dev/null")
local killed = p:read("l")
p:close()
local left = leftovers()
check("SIGKILL during figures: no half-written file left (" .. left .. ")",
      left == "" or (left == ".h.png.tt-tmp-" .. killed and
                     T.slurp(figs .. "/" .. left) == T.slurp(figs .. "/h.png")))
p = io.popen("sh -c 'echo $$'")
local dead = p:read("l")
p:close()
T.write(figs, ".h.png.tt-tmp-" .. dead, "half a figure")
T.write(figs, ".k.png.tt-tmp-1", "pid 1 is alive")
run("-q -e 'tt.heatmap(tt.ones(2, 2), \"" .. figs .. "/h.png\")'")
check("a later write removes a dead process's temporary", leftovers() == ".k.png.tt-tmp-1")

local script = write("loop.lua", "local n = 0\nwhile true do\n  n = n + 1\nend\n")
out, err, code = run("-q --max-instructions 100000 " .. script)
check("--max-instructions stops a loop", code == 1)
check("... naming the line and the option",
      has(err, "loop.lua:3: instruction limit: the script ran more than 100000 Lua instructions (--max-instructions)")
      or has(err, "loop.lua:2: instruction limit"))

out, err, code = run("-q --max-instructions 1e6 -e 'local s = 0 for i = 1, 1000 do s = s + i end print(s)'")
check("a short script runs under the budget", code == 0 and has(out, "500500"))

out, err, code, t = run("-q --timeout 1 -e 'local x = tt.ones(1, 1):expand(1 << 14, 1 << 14) print(x:matmul(x))'")
check("a C operation past the timeout is stopped", code == 1)
check("... by the watchdog, with a message", has(err, "timeout: the script ran longer than 1 s (--timeout) and was stopped inside a tensor operation"))
check("... within the grace period (" .. string.format("%.1f", t) .. " s)", t < 6)

out, err, code = run("-q --timeout 5 -e 'print(tt.ones(3):sum():item())'")
check("a quick script with --timeout exits at once", code == 0 and has(out, "3.0"))

-- REPL: each chunk has its own clock
out, err, code = run("--timeout 0.5", write("repl.lua", "while true do end\nprint('next' .. 1)\n"))
check("REPL: a runaway line times out, the next one runs", has(err, "timeout") and has(out, "next1"))

-- ===== usage errors =====
for _, a in ipairs{"--timeout -1", "--timeout abc", "--timeout 0", "--max-memory abc", "--max-memory -5",
                   "--max-memory 5X", "--max-instructions 0", "--max-instructions x", "--max-instructions",
                   "--images out -e 1", "--images"} do
  out, err, code = run(a)
  check("usage error (exit 2): " .. a, code == 2 and has(err, "tensortrace: "))
end
-- below 1M the interpreter would PANIC setting itself up: a usage error
for _, size in ipairs{"20K", "16K", "512k", "1000"} do
  out, err, code = run("-q --max-memory " .. size .. " -e 'print(1)'")
  check("--max-memory " .. size .. ": usage error, not a PANIC (exit " .. tostring(code) .. ")",
        code == 2 and has(err, "is below the minimum of 1M") and not has(err, "PANIC"))
end
out, err, code = run("--max-memory 1M -q -e 'print(tt.ones(3):sum():item())'")
check("--max-memory 1M is accepted", code == 0 and has(out, "3.0"))
out = run("--help")
check("--help states the minimum", has(out, "at least 1M"))

os.execute("rm -rf " .. dir)
T.report()
