-- test_exercise_files.lua — the exercises keep their promises to a learner:
-- every solution runs and checks itself; its starter builds the very same
-- inputs (the lines above `-- ===== your code below =====` are equal); every
-- label the solution makes below that line has a TODO(label) in the starter
-- and is named in the starter's header, every TODO names a label the
-- solution makes, and the starter, run as it is, exits 0 and makes none of
-- them. (The --compare verdicts themselves: tests/test_exercises.sh.)
local T = dofile("tests/lua/check.lua")
local json = dofile("tests/lua/json.lua")
local check = T.check
local dir = T.tmpdir()
local MARK = "-- ===== your code below ====="

local function lines(path)
  local out = {}
  for l in (T.slurp(path) .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = l end
  return out
end
local function mark_line(ls)
  for i, l in ipairs(ls) do if l == MARK then return i end end
end
-- The input lines: from the first line of code to the mark.
local function inputs(ls)
  local first = 1
  while ls[first] and (ls[first] == "" or ls[first]:match("^%-%-")) do first = first + 1 end
  local out = {}
  for i = first, (mark_line(ls) or 0) - 1 do out[#out + 1] = ls[i] end
  return table.concat(out, "\n")
end
-- Runs a script with the JSON trace: exit code, stdout, and the set of
-- labels its tensors got on lines after `after`, in this file.
local function labels_of(path, after)
  local trace = dir .. "/trace.jsonl"
  local out, err, code = T.run(dir, "-q --trace-json " .. trace .. " " .. path)
  local set = {}
  for l in io.lines(trace) do
    local e = json.decode(l)
    local label = e.output and e.output.label
    if label and label ~= json.null and e.file == path and e.line > after then set[label] = true end
  end
  return code, out, set, err
end

-- The labels the solution makes below its line, as --compare counts its
-- checkpoints. The trace is no guide: it puts a label on the row that made
-- the tensor, which may lie above the line (exercise 19's fq, made in elu1)
-- or be printed before the label comes (S, labelled after its loop).
local function checkpoints_of(solution)
  local path = dir .. "/verdict.json"
  T.run(dir, "--compare " .. solution .. " " .. solution .. " --compare-json " .. path)
  local set = {}
  local ok, v = pcall(function() return json.decode(T.slurp(path)) end)
  for _, c in ipairs(ok and v.checkpoints or {}) do set[c.label] = true end
  os.remove(path)
  return set
end

local names = {}
for f in io.popen("ls lessons/exercises"):lines() do
  if f:match("^%d%d_.*%.lua$") then names[#names + 1] = f end
end
check("at least 12 exercises (" .. #names .. ")", #names >= 12)

for _, name in ipairs(names) do
  local starter, solution = "lessons/exercises/" .. name, "lessons/exercises/solutions/" .. name
  local sl, rl = lines(starter), lines(solution)
  local smark, rmark = mark_line(sl), mark_line(rl)
  check(name .. ": both files have the marked line", smark ~= nil and rmark ~= nil)
  if smark and rmark then
    check(name .. ": the starter builds the solution's inputs, line for line", inputs(sl) == inputs(rl))
    local rcode, rout, _, rerr = labels_of(solution, rmark)
    local want = checkpoints_of(solution)
    local ok = rcode == 0 and rout:find("every check passed") ~= nil
    check(name .. ": the solution runs and passes its checks" .. (ok and "" or ": " .. rerr), ok)
    -- the TODOs of the starter, and its header (the comment lines at its top)
    local todo, header = {}, {}
    for i, l in ipairs(sl) do
      local list = l:match("TODO%(([^)]*)%)")
      if list then for label in list:gmatch("[^,%s]+") do todo[label] = i end end
    end
    for _, l in ipairs(sl) do
      if not l:match("^%-%-") then break end
      header[#header + 1] = l
    end
    header = table.concat(header, "\n")
    local n = 0
    for label in pairs(want) do
      n = n + 1
      check(name .. ": `" .. label .. "` has its TODO in the starter", todo[label] ~= nil)
      local plain = label:gsub("%p", "%%%0")
      local loop = label:match("^(.-_)%d+$")   -- m_1, m_2: named in the header as m_1 or as "m_" .. jt
      check(name .. ": the header names `" .. label .. "`",
            header:find("%f[%w_]" .. plain .. "%f[^%w_]") ~= nil or (loop and header:find(loop, 1, true) ~= nil))
    end
    check(name .. ": the solution makes labels below the line (" .. n .. ")", n > 0)
    for label in pairs(todo) do
      check(name .. ": TODO(" .. label .. ") names a label of the solution", want[label] ~= nil)
    end
    local scode, _, made, serr = labels_of(starter, smark)
    check(name .. ": the starter runs as it is" .. (scode == 0 and "" or ": " .. serr), scode == 0)
    for label in pairs(made) do
      check(name .. ": the starter does not already make `" .. label .. "`", todo[label] == nil)
    end
  end
end

T.report()
