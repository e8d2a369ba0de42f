-- grading.lua — `make bench`'s grading: a class's submissions checked as a
-- teacher checks them, `--sandbox --compare SOLUTION class/NN/*.lua`, one
-- command per exercise, re-checks on other inputs included (target: a class
-- of 120 in under a minute). The class is every exercise's solution and
-- its submissions in tests/exercises (right ones in other forms, and the
-- classic mistakes), each exercise's in one folder, as handed in.
-- Run: ./tensortrace -q tests/bench/grading.lua [grading] [quick]
-- (no section named: this one; other sections named: nothing; quick: one run).

local TARGET_S = 60                    -- for a class of 120
local RUNS = 3                         -- timed runs of the whole class, after an untimed one

local want = {}
for _, a in ipairs(arg) do if a == "quick" then RUNS = 1 else want[a] = true end end
if next(want) ~= nil and not want.grading then return end

local lib = dofile((arg[0]:match("^(.*/)") or "./") .. "benchlib.lua")
local median_min_max, sh_quote, read_cmd, interpreter = lib.median_min_max, lib.sh_quote, lib.read_cmd, lib.interpreter

local cwd = read_cmd("pwd"):gsub("%s+$", "")
local exe = interpreter(cwd)
local tmp = os.tmpname()
os.remove(tmp)

-- the class: class/NN_name/ holds the solution's copy and each submission
local exercises, size = {}, 0
for sol in read_cmd("ls lessons/exercises/solutions/*.lua"):gmatch("[^\n]+") do
  local name = sol:match("([^/]+)%.lua$")
  local folder = tmp .. "/class/" .. name
  assert(os.execute("mkdir -p " .. sh_quote(folder) .. " && cp " .. sh_quote(sol) .. " " .. sh_quote(folder .. "/solution_copy.lua")))
  local n = 1
  for sub in read_cmd("ls tests/exercises/" .. name .. "__*.lua 2>/dev/null"):gmatch("[^\n]+") do
    assert(os.execute("cp " .. sh_quote(sub) .. " " .. sh_quote(folder .. "/")))
    n = n + 1
  end
  exercises[#exercises + 1] = { sol = cwd .. "/" .. sol, folder = folder, n = n }
  size = size + n
end

-- one round: every exercise's folder graded; the summary lines' counts
local function grade_class()
  local graded, matched = 0, 0
  for _, e in ipairs(exercises) do
    local cmd = "cd " .. sh_quote(cwd) .. " && " .. sh_quote(exe) .. " --sandbox --compare " .. sh_quote(e.sol) .. " "
      .. sh_quote(e.folder) .. "/*.lua --compare-json " .. sh_quote(tmp .. "/grades.jsonl") .. " 2>&1"
    local out = read_cmd(cmd)
    local g, m = out:match("\ngraded (%d+): (%d+) matched")
    graded, matched = graded + (tonumber(g) or 0), matched + (tonumber(m) or 0)
  end
  return graded, matched
end

print(string.format("\n== grading: a class of %d submissions over %d exercises, --sandbox --compare per exercise,"
                    .. " re-checks included\n   (wall s of the whole class: median (min-max) of %d runs after an untimed one)",
                    size, #exercises, RUNS))
local graded, matched = grade_class()
local ts = {}
for r = 1, RUNS do
  local t0 = tt.clock()
  grade_class()
  ts[r] = tt.clock() - t0
end
os.execute("rm -rf " .. sh_quote(tmp))
local med, lo, hi = median_min_max(ts)
local per120 = med * 120 / size
print(string.format("  graded %d of %d (%d matched); %.1f s (%.1f-%.1f), %.0f ms a submission", graded, size, matched,
                    med, lo, hi, 1000 * med / size))
print(string.format("  a class of 120 at that rate: %.1f s (target %d s): %s%s", per120, TARGET_S,
                    per120 <= TARGET_S and string.format("ok (%.0f%%)", 100 * per120 / TARGET_S)
                      or string.format("OVER (%.1fx)", per120 / TARGET_S),
                    graded == size and "" or "  (FAILED: not every submission got a verdict)"))
