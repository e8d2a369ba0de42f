-- catalogue.lua — the verdicts of --compare on the catalogues of wrong
-- solutions, run by tests/test_exercises.sh (./tensortrace -q this file):
--   tests/exercises/<exercise>__<kind>_<n>.lua   against lessons/exercises/solutions/<exercise>.lua
--   tests/compare/<ref>__<kind>_<n>.lua          against tests/compare/<ref>.lua
-- Each file starts with "-- exercise: NAME" (or "-- reference: NAME") and one
-- or more "-- expect: KIND" lines ("match" for a solution that differs only
-- by rounding). Beside it, NAME.expected.json holds the part of the
-- --compare-json verdict that must hold, written by hand: every key there
-- must be in the verdict with that value; "diagnosis" must name exactly
-- those kinds. Also: every reference matches itself, every exercise's
-- starter runs as a script and gets "not yet" naming one of its TODO lines.
local T = dofile("tests/lua/check.lua")
local json = dofile("tests/lua/json.lua")
local check = T.check

local dir = T.tmpdir()
local verdict_path = dir .. "/verdict.json"

local function ls(pattern)
  local list = {}
  local p = io.popen("ls " .. pattern .. " 2>/dev/null")
  for l in p:lines() do list[#list + 1] = l end
  p:close()
  table.sort(list)
  return list
end

local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

local function compare(ref, mine)
  local _, err, code = T.run(dir, "--compare " .. ref .. " " .. mine .. " --compare-json " .. verdict_path)
  local ok, v = pcall(function() return json.decode(T.slurp(verdict_path)) end)
  os.remove(verdict_path)
  return ok and v or nil, code, err
end

local function header(path)
  local h = { expect = {} }
  for l in io.lines(path) do
    if not l:match("^%-%-") then break end
    h.exercise = h.exercise or l:match("^%-%- exercise: *([%w_]+)")
    h.reference = h.reference or l:match("^%-%- reference: *([%w_]+)")
    local k = l:match("^%-%- expect: *([%w_]+)")
    if k then h.expect[#h.expect + 1] = k end
  end
  return h
end

-- every key of want in got with the same value (diagnosis: the same kinds)
local function subset(want, got, path)
  if type(want) ~= "table" then
    if want == got then return true end
    return false, string.format("%s is %s, expected %s", path, tostring(got), tostring(want))
  end
  if type(got) ~= "table" then return false, path .. " is missing" end
  for k, w in pairs(want) do
    if k == "diagnosis" then
      local a, b = {}, {}
      for _, d in ipairs(w) do a[#a + 1] = d.kind end
      for _, d in ipairs(got.diagnosis or {}) do b[#b + 1] = d.kind end
      table.sort(a)
      table.sort(b)
      if table.concat(a, ",") ~= table.concat(b, ",") then
        return false, string.format("diagnosis is {%s}, expected {%s}", table.concat(b, ","), table.concat(a, ","))
      end
    else
      local ok, why = subset(w, got[k], path .. "." .. tostring(k))
      if not ok then return false, why end
    end
  end
  return true
end

local function kinds_of(v)
  local k = {}
  for _, d in ipairs(v and v.diagnosis or {}) do k[#k + 1] = d.kind end
  table.sort(k)
  return table.concat(k, ",")
end

local count_by_kind = {}

local function run_catalogue(files, ref_of)
  for _, w in ipairs(files) do
    local h = header(w)
    local ref = ref_of(h)
    local name = w:match("[^/]+$")
    if not ref or not exists(ref) then
      check(name .. ": its reference exists (" .. tostring(ref) .. ")", false)
    else
      local v, code, err = compare(ref, w)
      local expect = table.concat(h.expect, ",")
      if expect == "match" then
        check(name .. ": matches (rounding only)", v and v.match == true and code == 0,
              nil)
        if not (v and v.match) then print("    got: " .. kinds_of(v) .. " " .. err) end
      else
        table.sort(h.expect)
        local got = kinds_of(v)
        check(name .. ": exit 1", code == 1)
        check(name .. ": diagnosis {" .. table.concat(h.expect, ",") .. "}" .. (got ~= table.concat(h.expect, ",") and (" (got {" .. got .. "})") or ""),
              v and got == table.concat(h.expect, ","))
      end
      for _, k in ipairs(h.expect) do count_by_kind[k] = (count_by_kind[k] or 0) + 1 end
      local want_path = w:gsub("%.lua$", ".expected.json")
      if exists(want_path) then
        local want = json.decode(T.slurp(want_path))
        local ok, why = subset(want, v, "verdict")
        check(name .. ": " .. want_path:match("[^/]+$") .. (ok and "" or (": " .. why)), ok)
      else
        check(name .. ": has its .expected.json", false)
      end
    end
  end
end

-- ===== the engine's own pairs (tests/compare) =====
run_catalogue(ls("tests/compare/*__*.lua"), function(h) return h.reference and ("tests/compare/" .. h.reference .. ".lua") end)
for _, ref in ipairs(ls("tests/compare/ref_*.lua")) do
  if not ref:find("__", 1, true) then
    local v, code = compare(ref, ref)
    check(ref .. " matches itself", v and v.match == true and code == 0)
  end
end

-- ===== the exercises (lessons/exercises) and their catalogue =====
local solutions = ls("lessons/exercises/solutions/[0-9][0-9]_*.lua")
for _, sol in ipairs(solutions) do
  local name = sol:match("([^/]+)%.lua$")
  local starter = "lessons/exercises/" .. name .. ".lua"
  local _, _, code = T.run(dir, "-q " .. sol)
  check(name .. ": the solution runs", code == 0)
  local v, c2 = compare(sol, sol)
  check(name .. ": the solution matches itself", v and v.match == true and c2 == 0)
  -- a learner's copy has no checks: the solution without them still matches
  local text = T.slurp(sol)
  local cut = text:find("\n%-%- ===== checks =====")
  local bare = T.write(dir, name .. ".lua", cut and text:sub(1, cut) or text)
  local bv, c4 = compare(sol, bare)
  check(name .. ": the solution without its checks matches" .. (bv and bv.diagnosis and (": " .. bv.diagnosis[1].message) or ""),
        cut and bv and bv.match == true and c4 == 0)
  -- the inputs it declares to re-check on (none where its inputs are written out by hand)
  local declared = text:match("\n%-%- recheck: ([^\n]*)")
  local tried, skipped = bv and bv.rechecks and #bv.rechecks or 0, 0
  for _, r in ipairs(bv and bv.rechecks or {}) do if r.skipped ~= json.null or r.match ~= true then skipped = skipped + 1 end end
  check(name .. ": re-checked on the inputs it declares, all matching", (declared == nil and tried == 0)
        or (declared and tried >= 2 and skipped == 0) or (name:find("^00_") or name:find("^05_")) ~= nil and tried == 0)
  check(name .. ": has a starter", exists(starter))
  if exists(starter) then
    local _, err, c3 = T.run(dir, "-q " .. starter)
    check(name .. ": the starter runs as is" .. (c3 ~= 0 and (": " .. err) or ""), c3 == 0)
    local sv = compare(sol, starter)
    local d = sv and sv.diagnosis and sv.diagnosis[1]
    local line = sv and sv.first and sv.first.line
    local src = {}
    for l in io.lines(starter) do src[#src + 1] = l end
    check(name .. ": the starter gets \"not yet\" naming a TODO line",
          sv and sv.match == false and d and d.kind == "missing" and d.message:find("not yet", 1, true)
          and line and src[line] and src[line]:find("TODO(", 1, true) ~= nil)
  end
end
-- correct answers written other ways (tests/compare/alternatives.lua): all match
local with_alternative = {}
for _, a in ipairs(dofile("tests/compare/alternatives.lua")) do
  local sol = "lessons/exercises/solutions/" .. a[1] .. ".lua"
  local src = T.slurp(sol)
  src = src:sub(1, (src:find("\n%-%- ===== checks =====")))
  local found = true
  for i = 3, #a do
    local s, e = src:find(a[i][1], 1, true)
    found = found and s ~= nil
    if s then src = src:sub(1, s - 1) .. a[i][2] .. src:sub(e + 1) end
  end
  local v, code = compare(sol, T.write(dir, a[1] .. "__" .. a[2] .. ".lua", src))
  check(a[1] .. " written with " .. a[2] .. ": matches" .. (v and v.diagnosis and (": " .. v.diagnosis[1].message) or ""),
        found and v and v.match == true and code == 0)
  with_alternative[a[1]] = true
end
for _, sol in ipairs(solutions) do
  local name = sol:match("([^/]+)%.lua$")
  check(name .. ": has correct alternatives in tests/compare/alternatives.lua", with_alternative[name])
end

run_catalogue(ls("tests/exercises/*__*.lua"), function(h)
  return h.exercise and ("lessons/exercises/solutions/" .. h.exercise .. ".lua")
end)

local kinds = { "softmax_dim", "scale_missing", "scale_wrong", "mask_inverted", "mask_after_softmax", "causal_alignment",
  "padding_on_queries", "heads_scrambled", "gqa_grouping", "transpose_missing", "kv_source", "sign", "off_by_one", "shape", "names", "values" }
for _, k in ipairs(kinds) do
  check(string.format("kind %s has at least two wrong solutions (%d)", k, count_by_kind[k] or 0), (count_by_kind[k] or 0) >= 2)
end
check("at least two solutions that differ only by rounding", (count_by_kind.match or 0) >= 2)
T.report()
