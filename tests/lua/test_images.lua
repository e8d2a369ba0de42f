-- test_images.lua — where figures go: --images DIR (or TT_IMAGES) takes
-- every figure a script draws to "images/...", from any folder, with or
-- without --sandbox, and nothing lands anywhere else (not in the repo's
-- images/); the folder is checked before the script starts; without it,
-- paths are written as they are.
local T = dofile("tests/lua/check.lua")
local check = T.check
local has = function(s, pat) return s ~= nil and s:find(pat, 1, true) ~= nil end

local repo = io.popen("pwd"):read("l")
local tt_bin = repo .. "/tensortrace"
local dir = T.tmpdir()

-- Runs tensortrace from folder cwd with args; stdout, stderr, exit code.
local function run_in(cwd, args, env)
  local out, err = dir .. "/out", dir .. "/err"
  local _, _, code = os.execute("cd '" .. cwd .. "' && " .. (env or "") .. " '" .. tt_bin .. "' " .. args
                                .. " >" .. out .. " 2>" .. err .. " </dev/null")
  return T.slurp(out), T.slurp(err), code
end
local function ls(folder)
  local names = {}
  for name in io.popen("ls -A '" .. folder .. "'"):lines() do names[#names + 1] = name end
  table.sort(names)
  return table.concat(names, " ")
end
local function fresh(name)
  local d = dir .. "/" .. name
  assert(os.execute("rm -rf '" .. d .. "' && mkdir -p '" .. d .. "'"))
  return d
end

-- The figures a lesson names in its source ("images/NAME.png", and lesson
-- 04's string.format pattern with its stems and batches).
local function figures_of(path)
  local src, names = T.slurp(path), {}
  for code in src:gmatch("[^\n]+") do
    if not code:match("^%s*%-%-") and not code:find("print(", 1, true) then
      for name in code:gmatch('"images/([%w_]+%.png)"') do names[name] = true end
    end
  end
  if src:find('"images/04_%s_b%d.png"', 1, true) then
    for _, stem in ipairs{"masked_scores", "weights"} do
      for b = 1, 2 do names[string.format("04_%s_b%d.png", stem, b)] = true end
    end
  end
  local list = {}
  for name in pairs(names) do list[#list + 1] = name end
  table.sort(list)
  return table.concat(list, " ")
end

-- ===== every lesson, from another folder, under --sandbox, --images X =====
local marker = dir .. "/marker"
T.write(dir, "marker", "")
os.execute("sleep 1")     -- mtimes have one-second resolution on some file systems
local lessons = {}
for f in io.popen("ls lessons/*.lua"):lines() do lessons[#lessons + 1] = f end
check("the lessons are found", #lessons >= 15)
for _, f in ipairs(lessons) do
  local cwd, x = fresh("cwd"), fresh("x")
  local out, err, code = run_in(cwd, "-q --sandbox --images '" .. x .. "' '" .. repo .. "/" .. f .. "'")
  check(f .. " runs from another folder under --sandbox --images: " .. err, code == 0)
  local want = figures_of(f)
  check(f .. ": its figures are in the --images folder (" .. ls(x) .. " vs " .. want .. ")", ls(x) == want)
  check(f .. ": nothing is written in the folder it ran from (" .. ls(cwd) .. ")", ls(cwd) == "")
  check(f .. ": the figures it names are where it wrote them", not out:find("Figures?: images/")
        and (want == "" or out:find("Figures?: " .. x:gsub("%p", "%%%0") .. "/%d%d_")))
end
local touched = io.popen("find images -newer '" .. marker .. "'"):read("a")
check("the repository's images/ is untouched: " .. touched, touched == "")

-- ===== tt.figure_path: where a figure written to a path lands =====
local cwd0, x0 = fresh("cwd"), fresh("x")
local out0 = run_in(cwd0, "-q --images '" .. x0 .. "' -e 'print(tt.figure_path(\"images/a.png\"), "
                    .. "tt.figure_path(\"./images/b.png\"), tt.figure_path(\"out/c.png\"))'")
check("figure_path maps images/ to --images and leaves other paths: " .. out0,
      out0 == x0 .. "/a.png\t" .. x0 .. "/b.png\tout/c.png\n")
out0 = run_in(cwd0, "-q -e 'print(tt.figure_path(\"images/a.png\"))'")
check("figure_path without --images: the path as written", out0 == "images/a.png\n")

-- ===== without --sandbox, and through TT_IMAGES =====
local cwd, x = fresh("cwd"), fresh("x")
local _, err, code = run_in(cwd, "-q --images '" .. x .. "/' '" .. repo .. "/lessons/05_hand_example.lua'")
check("without --sandbox, from another folder: " .. err, code == 0)
check("the figures go to --images (a trailing slash is one folder)",
      ls(x) == "05_attend.png 05_scores.png 05_weights.png" and ls(cwd) == "")
x = fresh("x")
_, err, code = run_in(cwd, "-q '" .. repo .. "/lessons/03_causal_mask.lua'", "TT_IMAGES='" .. x .. "'")
check("TT_IMAGES does what --images does: " .. err,
      code == 0 and ls(x) == "03_masked_scores.png 03_scores.png 03_weights.png 03_wrong_way.png" and ls(cwd) == "")
local x2 = fresh("x2")
x = fresh("x")
run_in(cwd, "-q --images '" .. x2 .. "' '" .. repo .. "/lessons/05_hand_example.lua'", "TT_IMAGES='" .. x .. "'")
check("--images wins over TT_IMAGES", ls(x) == "" and ls(x2) == "05_attend.png 05_scores.png 05_weights.png")

-- ===== which paths move, and what the figure functions return =====
x = fresh("x")
T.write(cwd, "paths.lua", [[
print(tt.heatmap(tt.ones(2, 3), "images/a.png"))
print(tt.bars(tt.ones(3), "./images/b.png"))
print(tt.heatmap(tt.ones(2, 3), "c.png"))
print(tt.heatmap(tt.ones(2, 3), "notimages/d.png") == nil)
]])
assert(os.execute("mkdir -p '" .. cwd .. "/notimages'"))
local out
out, err, code = run_in(cwd, "-q --images '" .. x .. "' paths.lua")
check("a script's images/ paths go to --images: " .. err,
      code == 0 and has(out, x .. "/a.png\n" .. x .. "/b.png\nc.png\nfalse\n") and ls(x) == "a.png b.png")
check("other paths are written where they say", ls(cwd) == "c.png notimages paths.lua" and ls(cwd .. "/notimages") == "d.png")

-- ===== the folder is checked before the script starts =====
T.write(cwd, "hello.lua", 'print("started")\n')
out, err, code = run_in(cwd, "--images '" .. dir .. "/missing' hello.lua")
check("a missing --images folder is a usage error before the script runs",
      code == 2 and out == "" and has(err, "tensortrace: --images '" .. dir .. "/missing': the folder does not exist"))
out, err, code = run_in(cwd, "--images hello.lua hello.lua")
check("an --images that is a file is a usage error", code == 2 and out == "" and has(err, "--images 'hello.lua': not a folder"))
out, err, code = run_in(cwd, "hello.lua", "TT_IMAGES='" .. dir .. "/missing'")
check("a missing TT_IMAGES folder names the variable",
      code == 2 and out == "" and has(err, "tensortrace: TT_IMAGES '" .. dir .. "/missing': the folder does not exist"))
out, err, code = run_in(cwd, "hello.lua", "TT_IMAGES=")
check("an empty TT_IMAGES is no setting", code == 0 and out == "started\n")
if io.popen("id -u"):read("l") ~= "0" then          -- root may write anywhere
  local ro = fresh("ro")
  os.execute("chmod 555 '" .. ro .. "'")
  out, err, code = run_in(cwd, "--images '" .. ro .. "' hello.lua")
  check("a folder that cannot be written is a usage error", code == 2 and has(err, "the folder cannot be written"))
  os.execute("chmod 755 '" .. ro .. "'")
end

-- ===== without --images: as before, and a hint where images/ is missing =====
local plain = fresh("plain")
T.write(plain, "fig.lua", 'print("before")\ntt.heatmap(tt.ones(2, 2), "images/f.png")\n')
out, err, code = run_in(plain, "-q fig.lua")
check("no images/ here: the error says what to do",
      code == 1 and has(out, "before") and has(err, "fig.lua:2: heatmap: cannot write 'images/f.png': there is no folder 'images' here; "
      .. "hint: run from the folder that holds images/, or pass --images DIR (or set TT_IMAGES=DIR)"))
assert(os.execute("mkdir -p '" .. plain .. "/images'"))
_, err, code = run_in(plain, "-q fig.lua")
check("with images/ here the path is written as it is: " .. err, code == 0 and ls(plain .. "/images") == "f.png")

-- ===== the report of a lesson drawn elsewhere: every check, every figure =====
x = fresh("x")
local html = dir .. "/03.html"
_, err, code = run_in(fresh("cwd"), "-q --images '" .. x .. "' --report '" .. html .. "' '" .. repo .. "/lessons/03_causal_mask.lua'")
local page = code == 0 and T.slurp(html) or ""
check("lesson 03's page counts its 8 checks: " .. err, has(page, "8 checks passed"))
check("and embeds its 4 figures", has(page, "4 figures") and select(2, page:gsub("<img ", "")) == 4)

T.report()
