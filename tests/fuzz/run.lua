-- run.lua — runs a batch of generated programs (tests/fuzz/gen.lua) in one
-- process, each under pcall. A program may raise Lua errors; the process
-- must not crash, trip a sanitizer, leak or hang (make fuzz-batch runs it
-- under ASan+UBSan). Usage:
--   tensortrace -q tests/fuzz/run.lua [--seed S] [--n N] [--from I]
--   tensortrace -q tests/fuzz/run.lua --seed S --dump I > prog.lua   (one program)
--   tensortrace -q tests/fuzz/run.lua --seed S --dump-big I > big.lua (one of huge shapes)
-- Before each program its source is written to <tmp>/current.lua, so after
-- a crash that file is the reproducer (the path is printed at the start).
-- Memory: every 100th program also runs a program of huge shapes
-- (gen.big_program) in a child `BIN -q --max-memory 64M`, whose peak RSS
-- must stay within the cap plus a fixed slack over an empty run's:
--   --rss BIN   the child binary (default ./tensortrace, an uninstrumented
--               build: ASan's shadow and quarantine would swamp the RSS);
--               --rss none skips the check.
local here = arg and arg[0] and arg[0]:match("^(.*)/") or "tests/fuzz"
local gen = dofile(here .. "/gen.lua")

local seed, n, from, dump, dump_big, slow, rss_bin = 1, 1000, 1, nil, nil, 10, "./tensortrace"
local i = 1
while arg[i] do
  local a, b = arg[i], arg[i + 1]
  if a == "--seed" then seed = math.tointeger(tonumber(b)) or error("--seed needs an integer")
  elseif a == "--n" then n = math.tointeger(tonumber(b)) or error("--n needs an integer")
  elseif a == "--from" then from = math.tointeger(tonumber(b)) or error("--from needs an integer")
  elseif a == "--dump" then dump = math.tointeger(tonumber(b)) or error("--dump needs an integer")
  elseif a == "--dump-big" then dump_big = math.tointeger(tonumber(b)) or error("--dump-big needs an integer")
  elseif a == "--slow" then slow = tonumber(b) or error("--slow needs seconds")
  elseif a == "--rss" then rss_bin = b or error("--rss needs a binary or 'none'")
  else error("unknown argument " .. a) end
  i = i + 2
end

local tmp = os.tmpname()
os.remove(tmp)
assert(os.execute("mkdir -p '" .. tmp .. "'"), "cannot create " .. tmp)

if dump or dump_big then
  io.stdout:write(dump and gen.program(seed, dump, "/tmp") or gen.big_program(seed, dump_big, "/tmp"))
  os.execute("rm -rf '" .. tmp .. "'")
  return
end

local err = io.stderr
local errors, kinds, odd, unlocated = 0, {}, {}, {}
local cur_name
-- Every error message must be a non-empty string that says where it happened.
FUZZ_ERR = function(e)
  errors = errors + 1
  if type(e) ~= "string" or e == "" or e:find("(null)", 1, true) then
    odd[#odd + 1] = cur_name .. ": " .. tostring(e)
    return
  end
  local rest = e:match("^" .. cur_name .. ":%d+: (.*)")
  if not rest then
    local kind = e:match("^([%w_ ]+):") or e:sub(1, 30)
    if not unlocated[kind] then
      unlocated[kind] = cur_name .. ": " .. e
      unlocated[#unlocated + 1] = kind
    end
    rest = e
  end
  local kind = rest:match("^([%w_ .']+):") or rest:sub(1, 30)
  kinds[kind] = (kinds[kind] or 0) + 1
end

-- ===== peak RSS of a child run under a small cap =====
local RSS_CAP_MB, RSS_SLACK_MB = 64, 32
local function child_hwm(path)
  local p = io.popen(string.format("%s -q --max-memory %dM '%s' 2>&1", rss_bin, RSS_CAP_MB, path))
  local out = p:read("a")
  local ok, how, code = p:close()
  return tonumber(out:match("VmHWM (%d+)")), out, ok, how, code
end
local rss_base
if rss_bin ~= "none" then
  local f = io.open(rss_bin)
  if f and io.open("/proc/self/status") then
    f:close()
    local probe = tmp .. "/empty.lua"
    local g = assert(io.open(probe, "w"))
    g:write("local f = io.open('/proc/self/status'); print('VmHWM ' .. f:read('a'):match('VmHWM:%s*(%d+)'))\n")
    g:close()
    rss_base = child_hwm(probe)
  end
  if not rss_base then io.stderr:write("fuzz: no RSS check (no " .. rss_bin .. " or no /proc)\n") end
end
local rss_worst, rss_worst_i, rss_runs = 0, nil, 0
local function check_rss(k)
  local path = tmp .. "/big" .. k .. ".lua"
  local g = assert(io.open(path, "w"))
  g:write(gen.big_program(seed, k, tmp))
  g:close()
  local hwm, out, ok, how, code = child_hwm(path)
  rss_runs = rss_runs + 1
  if not hwm then
    -- a crash or a kill is a failure; a Lua error only ends the program early
    if how == "signal" or (code and code > 1) then
      io.stderr:write(string.format("FAIL big program %d (reproduce: --seed %d --dump-big %d) ended by %s %s:\n%s\n",
                                    k, seed, k, how, tostring(code), out:sub(1, 2000)))
      return false
    end
    return true
  end
  local over = (hwm - rss_base) / 1024
  if over > rss_worst then rss_worst, rss_worst_i = over, k end
  if over > RSS_CAP_MB + RSS_SLACK_MB then
    io.stderr:write(string.format("FAIL big program %d: peak RSS %.0f MB over an empty run's, cap %d MB + slack %d MB "
                                  .. "(reproduce: --seed %d --dump-big %d > big.lua; tensortrace --max-memory %dM big.lua)\n",
                                  k, over, RSS_CAP_MB, RSS_SLACK_MB, seed, k, RSS_CAP_MB))
    return false
  end
  os.remove(path)
  return true
end

local current = tmp .. "/current.lua"
err:write(string.format("fuzz: seed %d, programs %d..%d; the running program is kept in %s\n",
                        seed, from, from + n - 1, current))
local failed, t0, slowest, slowest_i = 0, os.clock(), 0, nil
for k = from, from + n - 1 do
  local src = gen.program(seed, k, tmp)
  local f = assert(io.open(current, "w"))
  f:write(src)
  f:close()
  cur_name = "fuzz" .. k
  local chunk, msg = load(src, "=" .. cur_name)
  if not chunk then
    failed = failed + 1
    err:write("FAIL the generator made invalid Lua (program " .. k .. "): " .. msg .. "\n")
  else
    local t = os.clock()
    local ok, e = pcall(chunk)
    if not ok then
      failed = failed + 1
      err:write("FAIL program " .. k .. " raised outside P: " .. tostring(e) .. "\n")
    end
    t = os.clock() - t
    if t > slowest then slowest, slowest_i = t, k end
    if t > slow then
      failed = failed + 1
      err:write(string.format("FAIL program %d took %.1f s (reproduce: --dump %d)\n", k, t, k))
    end
  end
  if k % 10 == 0 then collectgarbage() end
  if rss_base and k % 100 == 0 and not check_rss(k) then failed = failed + 1 end
  if k % 1000 == 0 then err:write(string.format("fuzz: %d programs, %.0f s\n", k - from + 1, os.clock() - t0)) end
end
tt.trace.on()
collectgarbage()

local list = {}
for kind, c in pairs(kinds) do list[#list + 1] = {kind, c} end
if rss_base then
  err:write(string.format("fuzz: %d big programs under --max-memory %dM; highest peak RSS %.0f MB over an empty run's%s\n",
                          rss_runs, RSS_CAP_MB, rss_worst, rss_worst_i and " (program " .. rss_worst_i .. ")" or ""))
end
table.sort(list, function(a, b) return a[2] > b[2] end)
err:write(string.format("fuzz: %d programs in %.1f s CPU (slowest: program %s, %.2f s); %d Lua errors raised, by kind:\n",
                        n, os.clock() - t0, tostring(slowest_i), slowest, errors))
for j = 1, math.min(#list, 40) do err:write(string.format("  %6d  %s\n", list[j][2], list[j][1])) end
for _, kind in ipairs(unlocated) do err:write("  note: a message without file:line: " .. unlocated[kind] .. "\n") end
for _, o in ipairs(odd) do
  failed = failed + 1
  err:write("FAIL odd error object: " .. o .. "\n")
end
os.execute("rm -rf '" .. tmp .. "'")
err:write(string.format("%d passed, %d failed\n", n - failed, failed))
if failed > 0 then os.exit(1) end
