-- test_figures.lua — tt.heatmap, tt.bars, tt.flow and tt.head_groups from Lua: option
-- names and types are checked (a typo is an error that lists the valid
-- options), valid calls write their PNG, and --sandbox guards the path.
-- Pixels are tested in tests/test_figure.c.
local T = dofile("tests/lua/check.lua")
local check, checkerror = T.check, T.checkerror

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
local function tmp(name) return dir .. "/" .. name end
local function exists(p) local f = io.open(p, "rb"); if f then f:close() end; return f ~= nil end

local x = tt.tensor({{0.1, 0.7, 0.2}, {0.5, 0.25, 0.25}})
local x3 = tt.rand(2, 3, 4)

-- ===== unknown options =====
local msg = checkerror({"heatmap: unknown option 'colour'", "(options: title, xlabels, ylabels",
                        "panel_titles", "downsample, mask, row_sums, categories, tiles)"},
                       function() tt.heatmap(x, tmp("h.png"), {colour = "red"}) end)
check("the error names the calling line", msg:find("test_figures.lua:%d+: heatmap") ~= nil)
checkerror({"bars: unknown option 'series'", "(options: title, xlabels, labels, decimals)"},
           tt.bars, x, tmp("b.png"), {series = {"a", "b"}})
checkerror({"flow: unknown option 'titel'", "(options: title)"}, tt.flow, tmp("f.png"), {titel = "x"})
checkerror({"heatmap: option keys must be strings"}, tt.heatmap, x, tmp("h.png"), {"title"})
checkerror({"bad argument #3 to", "heatmap'", "table expected"}, tt.heatmap, x, tmp("h.png"), "title")
checkerror({"bad argument #2 to", "flow'", "table expected"}, tt.flow, tmp("f.png"), 5)
check("no file after an option error", not exists(tmp("h.png")) and not exists(tmp("b.png")))

-- ===== option types, each error naming its option =====
local bad = {
  {"title", 5, "option 'title' must be a string, not a number"},
  {"xtitle", {}, "option 'xtitle' must be a string, not a table"},
  {"ytitle", true, "option 'ytitle' must be a string, not a boolean"},
  {"cmap", 1, "option 'cmap' must be a string, not a number"},
  {"downsample", 2, "option 'downsample' must be a string, not a number"},
  {"xlabels", "abc", "option 'xlabels' must be a list of strings, not a string"},
  {"ylabels", {"a", true}, "option 'ylabels' must be a list of strings (entry 2 is a boolean)"},
  {"panel_titles", {{}}, "option 'panel_titles' must be a list of strings (entry 1 is a table)"},
  {"vmin", "0", "option 'vmin' must be a number, not a string"},
  {"vmax", false, "option 'vmax' must be a number, not a boolean"},
  {"decimals", "2", "option 'decimals' must be a number, not a string"},
  {"decimals", 2.5, "option 'decimals' must be a whole number from 0 to 8, not 2.5"},
  {"decimals", -1, "option 'decimals' must be a whole number from 0 to 8"},
  {"decimals", 9, "option 'decimals' must be a whole number from 0 to 8"},
  {"annotate", "yes", "option 'annotate' must be true or false, not a string"},
  {"colorbar", 1, "option 'colorbar' must be true or false, not a number"},
  {"row_scale", "no", "option 'row_scale' must be true or false, not a string"},
}
for _, b in ipairs(bad) do
  checkerror({"heatmap: " .. b[3]}, tt.heatmap, x3, tmp("h.png"), {[b[1]] = b[2]})
end
checkerror({"bars: option 'labels' must be a list of strings (entry 1 is a boolean)"},
           tt.bars, x, tmp("b.png"), {labels = {false}})
checkerror({"bars: option 'xlabels' must be a list of strings, not a number"},
           tt.bars, x, tmp("b.png"), {xlabels = 3})
checkerror({"bars: option 'decimals' must be a whole number from 0 to 8"},
           tt.bars, x, tmp("b.png"), {decimals = 0.5})
checkerror({"bars: option 'title' must be a string, not a table"}, tt.bars, x, tmp("b.png"), {title = {}})
checkerror({"flow: option 'title' must be a string, not a number"}, tt.flow, tmp("f.png"), {title = 1})
-- values the core rejects keep their messages
checkerror({"heatmap: unknown cmap 'rainbow'"}, tt.heatmap, x, tmp("h.png"), {cmap = "rainbow"})
checkerror({"heatmap: vmin (1) must be less than vmax (0)"}, tt.heatmap, x, tmp("h.png"), {vmin = 1, vmax = 0})
check("no file after a type error", not exists(tmp("h.png")) and not exists(tmp("b.png")))

-- ===== label lists: one entry a column, row, panel or bar =====
-- (a short list used to end in numbers, a long one lost its tail silently)
local sq = tt.rand(4, 4):named("Nq", "Nk"):label("scores")
checkerror({"heatmap: 3 xlabels for the 4 columns of scores [Nq=4,Nk=4]; hint: one label a column (\"\" for a blank one)"},
           tt.heatmap, sq, tmp("h.png"), {xlabels = {"a", "b", "c"}})
checkerror({"heatmap: 5 xlabels for the 4 columns of scores [Nq=4,Nk=4]"},
           tt.heatmap, sq, tmp("h.png"), {xlabels = {"a", "b", "c", "d", "e"}})
checkerror({"heatmap: 1 xlabel for the 4 columns of scores"}, tt.heatmap, sq, tmp("h.png"), {xlabels = {"a"}})
checkerror({"heatmap: 0 xlabels for the 4 columns of scores"}, tt.heatmap, sq, tmp("h.png"), {xlabels = {}})
checkerror({"heatmap: 2 ylabels for the 4 rows of scores [Nq=4,Nk=4]; hint: one label a row (\"\" for a blank one)"},
           tt.heatmap, sq, tmp("h.png"), {ylabels = {"a", "b"}})
msg = checkerror({"heatmap: 3 ylabels"}, function() tt.heatmap(sq, tmp("h.png"), {ylabels = {"a", "b", "c"}}) end)
check("a label count error names the calling line", msg:find("test_figures.lua:%d+: heatmap") ~= nil)
-- rectangular cross-attention scores with the token lists swapped
local rect = tt.rand(4, 6):named("Nq", "Nk"):label("scores")
local en, fr = {"the", "black", "cat", "sleeps", "now", "."}, {"le", "chat", "noir", "dort"}
checkerror({"heatmap: 4 xlabels for the 6 columns of scores [Nq=4,Nk=6]; hint: xlabels name the columns (keys), ylabels the rows (queries)"},
           tt.heatmap, rect, tmp("h.png"), {xlabels = fr, ylabels = en})
checkerror({"heatmap: 6 ylabels for the 4 rows of scores [Nq=4,Nk=6]; hint: ylabels name the rows (queries), xlabels the columns (keys)"},
           tt.heatmap, rect, tmp("h.png"), {xlabels = en, ylabels = en})
-- 3-D: the lists serve every panel; panel_titles one a panel
checkerror({"heatmap: 2 xlabels for the 4 columns of each panel of [2,3,4]; hint: one label a column"},
           tt.heatmap, x3, tmp("h.png"), {xlabels = {"a", "b"}})
checkerror({"heatmap: 4 ylabels for the 3 rows of each panel of [2,3,4]"},
           tt.heatmap, x3, tmp("h.png"), {ylabels = {"a", "b", "c", "d"}})
checkerror({"heatmap: 1 panel_title for the 2 panels of [2,3,4]; hint: one title a panel (dim 1); title names the whole figure"},
           tt.heatmap, x3, tmp("h.png"), {panel_titles = {"only"}})
checkerror({"heatmap: 3 panel_titles for the 2 panels of [2,3,4]"},
           tt.heatmap, x3, tmp("h.png"), {panel_titles = {"a", "b", "c"}})
checkerror({"heatmap: panel_titles are for a 3-D tensor (one title a panel), got scores [Nq=4,Nk=4]; hint: title names a single matrix"},
           tt.heatmap, sq, tmp("h.png"), {panel_titles = {"a"}})
checkerror({"heatmap: option 'xlabels' must be a list of strings (entry 1 is a table); hint: one list serves every panel",
            "draw each panel alone, e.g. x[1]"},
           tt.heatmap, x3, tmp("h.png"), {xlabels = {{"a", "b", "c", "d"}, {"e", "f", "g", "h"}}})
-- 1-D: one row
local v5 = tt.rand(5)
checkerror({"heatmap: 5 ylabels for the 1 row of [5]; hint: this is one row; xlabels name its 5 columns"},
           tt.heatmap, v5, tmp("h.png"), {ylabels = {"a", "b", "c", "d", "e"}})
-- downsampled: the labels still count the data columns, not the blocks
local wide = tt.rand(3, 1030)
local many = {}
for i = 1, 1029 do many[i] = "t" .. i end
checkerror({"heatmap: 1029 xlabels for the 1030 columns of [3,1030]"}, tt.heatmap, wide, tmp("h.png"), {xlabels = many})
check("no file after a label count error", not exists(tmp("h.png")))
many[1030] = "t1030"
ok, err = pcall(tt.heatmap, wide, tmp("wide.png"), {xlabels = many})
check("downsampled heatmap with one label a data column: " .. tostring(err), ok and exists(tmp("wide.png")))
-- a nil hole or "" keeps the count; 1-D with one label a column; one ylabel
ok, err = pcall(tt.heatmap, sq, tmp("holes.png"), {xlabels = {"a", nil, "", "d"}, ylabels = {"q1", "q2", "q3", "q4"}})
check("nil and \"\" entries count as labels: " .. tostring(err), ok and exists(tmp("holes.png")))
ok, err = pcall(tt.heatmap, v5, tmp("v5.png"), {xlabels = {"a", "b", "c", "d", "e"}, ylabels = {"p"}})
check("1-D heatmap with 5 xlabels and 1 ylabel: " .. tostring(err), ok and exists(tmp("v5.png")))

-- bars: xlabels one a bar, labels one a row
local p3 = tt.rand(3):label("p")
checkerror({"bars: 4 xlabels for the 3 bars of p [3]; hint: one label a bar (\"\" for a blank one)"},
           tt.bars, p3, tmp("b.png"), {xlabels = {"a", "b", "c", "d"}})
checkerror({"bars: 2 xlabels for the 3 bars of each row of [2,3]; hint: xlabels name the bars (columns), labels the rows"},
           tt.bars, x, tmp("b.png"), {xlabels = {"a", "b"}})
checkerror({"bars: 1 xlabel for the 3 bars of each row of [2,3]; hint: one label a bar"},
           tt.bars, x, tmp("b.png"), {xlabels = {"a"}})
checkerror({"bars: 3 labels for the 2 rows of [2,3]; hint: labels name the rows (one title a panel), xlabels the bars"},
           tt.bars, x, tmp("b.png"), {labels = {"a", "b", "c"}})
checkerror({"bars: 1 label for the 2 rows of [2,3]; hint: one label a row, the title of its panel"},
           tt.bars, x, tmp("b.png"), {labels = {"a"}})
checkerror({"bars: 2 labels for the 1 row of p [3]; hint: this is one row; xlabels name its 3 bars"},
           tt.bars, p3, tmp("b.png"), {labels = {"a", "b"}})
check("no file after a bars label count error", not exists(tmp("b.png")))
ok, err = pcall(tt.bars, p3, tmp("p3.png"), {xlabels = {"a", "b", "c"}, labels = {"softmax"}})
check("bars of a vector with its labels: " .. tostring(err), ok and exists(tmp("p3.png")))

-- ===== the other messages of the figures =====
checkerror({"heatmap: expected a 2-D tensor (or 1-D: one row; 3-D: a grid of panels), got [2,2,2,2]; draw one slice, e.g. x[1]"},
           tt.heatmap, tt.rand(2, 2, 2, 2), tmp("h.png"))
checkerror({"heatmap: expected a 2-D tensor (or 1-D: one row; 3-D: a grid of panels), got []"},
           tt.heatmap, tt.tensor(1), tmp("h.png"))
checkerror({"heatmap: nothing to draw: the tensor scores [Nq=0,Nk=4] is empty"},
           tt.heatmap, tt.zeros(0, 4):named("Nq", "Nk"):label("scores"), tmp("h.png"))
checkerror({"heatmap: [65,2,2] has 65 panels, too many for one figure (at most 64); hint: draw a slice such as x[1]"},
           tt.heatmap, tt.rand(65, 2, 2), tmp("h.png"))
checkerror({"heatmap: vmin must be a finite number (got -inf)"}, tt.heatmap, x, tmp("h.png"), {vmin = -math.huge})
checkerror({"heatmap: vmax must be a finite number (got NaN)"}, tt.heatmap, x, tmp("h.png"), {vmax = 0 / 0})
checkerror({"heatmap: unknown downsample 'median' (use 'mean' or 'max')"}, tt.heatmap, x, tmp("h.png"), {downsample = "median"})
checkerror({"heatmap: cannot write '" .. dir .. "/no/h.png': folder '" .. dir .. "/no' does not exist"},
           tt.heatmap, x, dir .. "/no/h.png")
checkerror({"bars: expected a vector or a matrix (one group of bars a row), got [2,3,4]; hint: draw one slice, e.g. x[1], or use tt.heatmap"},
           tt.bars, x3, tmp("b.png"))
checkerror({"bars: nothing to draw: the tensor [0] is empty"}, tt.bars, tt.zeros(0), tmp("b.png"))
checkerror({"bars: [100] is too big for a bar chart (at most 16 rows of 64 values); hint: tt.heatmap draws it"},
           tt.bars, tt.rand(100), tmp("b.png"))
checkerror({"bars: scores [Nq=20,Nk=3] is too big for a bar chart"},
           tt.bars, tt.rand(20, 3):named("Nq", "Nk"):label("scores"), tmp("b.png"))
checkerror({"bars: cannot write '" .. dir .. "/no/b.png': folder '" .. dir .. "/no' does not exist"},
           tt.bars, x, dir .. "/no/b.png")
check("no file after a figure error", not exists(tmp("h.png")) and not exists(tmp("b.png")))

-- ===== every documented option is accepted =====
local ok, err = pcall(tt.heatmap, x3, tmp("all.png"), {
  title = "every option", xlabels = {"a", "b", "c", 4}, ylabels = {"r1", nil, "r3"},
  xtitle = "Key", ytitle = "Query", panel_titles = {"first", "second"}, annotate = true,
  decimals = 1, cmap = "viridis", vmin = 0, vmax = 1, colorbar = false, row_scale = false,
  downsample = "max"})
check("heatmap with every option: " .. tostring(err), ok and err == tmp("all.png") and exists(tmp("all.png")))
ok, err = pcall(tt.bars, x, tmp("bars.png"), {title = "t", xlabels = {"Q/K/V proj", "scores", "softmax"},
                                              labels = {"one", "two"}, decimals = 2})
check("bars with every option: " .. tostring(err), ok and exists(tmp("bars.png")))
tt.trace.section("figures")
local q = tt.randn(2, 3, 4):label("Q")
local s = q:matmul(q:mT()):label("scores")
ok, err = pcall(tt.flow, tmp("flow.png"), {title = "a flow"})
check("flow with its option: " .. tostring(err), ok and exists(tmp("flow.png")))
checkerror({"flow: cannot write '" .. dir .. "/no/f.png': folder '" .. dir .. "/no' does not exist"},
           tt.flow, dir .. "/no/f.png")
tt.trace.section("nothing labelled")
local _ = tt.rand(2) + 1
checkerror({"flow: nothing to draw: no labelled tensor since the last tt.trace.section",
            "(name one with x:label(\"scores\"))"}, tt.flow, tmp("f0.png"))
check("no file after a flow error", not exists(tmp("f0.png")))
tt.trace.section("too many boxes")
local chain = tt.randn(2, 2):label("x0")
for i = 1, 40 do chain = (chain * 2):label("x" .. i) end   -- 41 labelled tensors
checkerror({"flow: more than 40 labelled tensors since the last tt.trace.section, too many for one figure; "
            .. "hint: start a tt.trace.section(\"...\") just before the part to draw"}, tt.flow, tmp("f41.png"))
tt.trace.section("forty fit")
chain = tt.randn(2, 2):label("y0")
for i = 1, 39 do chain = (chain * 2):label("y" .. i) end
ok, err = pcall(tt.flow, tmp("f40.png"))
check("flow draws 40 boxes: " .. tostring(err), ok and exists(tmp("f40.png")))
ok, err = pcall(tt.heatmap, x, tmp("nil_opts.png"), nil)
check("nil options are fine: " .. tostring(err), ok and exists(tmp("nil_opts.png")))
ok, err = pcall(tt.heatmap, x, tmp("empty_opts.png"), {})
check("empty options are fine: " .. tostring(err), ok and exists(tmp("empty_opts.png")))

-- ===== hostile options: read all of them before the tensor's data =====
-- an __index that closes the tensor mid-call used to crash (NULL data);
-- getmetatable no longer gives the metatable, but debug's registry does
local tensor_mt = debug.getregistry()["tt.Tensor"]
for _, fig in ipairs({{"heatmap", tt.heatmap}, {"bars", tt.bars}}) do
  local t = tt.rand(3, 4)
  local sneaky = setmetatable({}, {__index = function(_, k)
    if k == "decimals" then tensor_mt.__gc(t) end
  end})
  checkerror({"tensor was closed"}, fig[2], t, tmp("closed.png"), sneaky)
  t = tt.rand(3, 4)
  sneaky = setmetatable({}, {__index = function(_, k)
    if k == "title" then tensor_mt.__close(t) end
  end})
  checkerror({"tensor was closed"}, fig[2], t, tmp("closed.png"), sneaky)
end
check("no file after a closed tensor", not exists(tmp("closed.png")))
-- a mask closed by a later option's code is caught too
do
  local m = tt.eye(3):gt(0)
  local sneaky = setmetatable({mask = m}, {__index = function(_, k)
    if k == "row_sums" then tensor_mt.__gc(m) end
  end})
  checkerror({"heatmap: option 'mask' is a closed tensor"}, tt.heatmap, tt.rand(3, 3), tmp("closed.png"), sneaky)
end
-- a title that only the __index call holds must survive the later options
-- (it was freed by the collector and the PNG got another string)
do
  local seed = tostring(os.time() % 97)
  local opts = setmetatable({}, {__index = function(_, k)
    -- a fresh long string, held by nothing but this return value
    if k == "title" then return string.rep("kept alive ", 12) .. "#" .. seed end
    collectgarbage(); collectgarbage()
    local junk = {}
    for i = 1, 200 do junk[i] = string.rep(string.char(65 + i % 26), 133 + #seed) end
  end})
  local wantcopy = string.rep("kept alive ", 12) .. "#" .. seed
  tt.heatmap(tt.rand(3, 5), tmp("title_gc.png"), opts)
  local png = assert(io.open(tmp("title_gc.png"), "rb")):read("a")
  check("a title from __index reaches the PNG intact", png:find(wantcopy, 1, true) ~= nil)
end

-- ===== NUL bytes: refused, naming the option (C would stop at them) =====
checkerror({"heatmap: option 'title' contains a NUL byte"}, tt.heatmap, x, tmp("n.png"), {title = "a\0b"})
checkerror({"heatmap: option 'xlabels' (entry 2) contains a NUL byte"}, tt.heatmap, x, tmp("n.png"),
           {xlabels = {"a", "b\0c", "d"}})
checkerror({"heatmap: the path contains a NUL byte"}, tt.heatmap, x, tmp("n.png\0.txt"))
checkerror({"bars: the path contains a NUL byte"}, tt.bars, x, tmp("n\0.png"))
checkerror({"bars: option 'labels' (entry 1) contains a NUL byte"}, tt.bars, x, tmp("n.png"), {labels = {"\0", "b"}})
checkerror({"flow: option 'title' contains a NUL byte"}, tt.flow, tmp("n.png"), {title = "x\0"})
checkerror({"flow: the path contains a NUL byte"}, tt.flow, tmp("n\0.png"))
checkerror({"heatmap: option 'ytitle' contains a NUL byte"}, tt.heatmap, x, tmp("n.png"), {ytitle = "\0"})
check("no file after a NUL", not exists(tmp("n.png")) and not exists(tmp("n")))

-- ===== huge ranges and huge tensors =====
ok, err = pcall(tt.heatmap, tt.eye(3), tmp("huge_range.png"), {vmin = -1e308, vmax = 1e308})
check("vmin/vmax at the ends of the doubles: " .. tostring(err), ok and exists(tmp("huge_range.png")))
-- a big figure is read in one bounded pass, never copied: 3000x30000 bool
-- and 5x2e7 float views (360 and 400 MB as float copies): the child's peak
-- resident memory (VmHWM, read by the child itself) stays far below that.
-- (Not an address-space ulimit: AddressSanitizer reserves terabytes of it.)
do
  local script2 = tmp("big.lua")
  local g = assert(io.open(script2, "w"))
  g:write(string.format([[
tt.heatmap(tt.ones(1, 1):gt(0):expand(3000, 30000), %q)
tt.heatmap(tt.ones(1, 1):expand(5, 20000000), %q, {downsample = "max"})
local ok, err = pcall(tt.bars, tt.ones(1, 1):expand(20, 10000000), %q)
print(err)
local st = io.open("/proc/self/status"):read("a")
print("VmHWM " .. st:match("VmHWM:%%s*(%%d+)"))
]], tmp("big1.png"), tmp("big2.png"), tmp("big3.png")))
  g:close()
  local res = io.popen(os.getenv("PWD") .. "/tensortrace -q --max-memory 64M "
                       .. script2 .. " 2>&1"):read("a")
  local hwm = tonumber(res:match("VmHWM (%d+)"))
  check("huge heatmaps drawn within bounded memory: " .. res, exists(tmp("big1.png")) and exists(tmp("big2.png")))
  check("peak resident memory under 250 MB (a float copy alone is 360 MB): " .. tostring(hwm) .. " kB",
        hwm ~= nil and hwm < 250000)
  check("a huge bar chart is refused without a copy: " .. res,
        res:find("bars: [20,10000000] is too big for a bar chart", 1, true) ~= nil)
end

-- ===== tt.head_groups: the MHA / GQA / MQA diagram =====
do
  local hg = {q_heads = 8, kv_heads = {8, 2, 1}, titles = {"MHA", "GQA", "MQA"}, title = "Heads"}
  check("head_groups returns its path", tt.head_groups(tmp("hg.png"), hg) == tmp("hg.png"))
  local png = assert(io.open(tmp("hg.png"), "rb")):read("a")
  check("head_groups writes a PNG with its source line",
        png:sub(2, 4) == "PNG" and png:find("test_figures.lua:", 1, true) ~= nil)
  check("head_groups: titles and title are optional",
        tt.head_groups(tmp("hg2.png"), {q_heads = 4, kv_heads = {2}}) and exists(tmp("hg2.png")))
  local function hg_with(k, v)
    local o = {q_heads = 8, kv_heads = {8, 2, 1}}
    o[k] = v
    return o
  end
  checkerror({"head_groups: unknown option 'heads'", "(options: title, q_heads, kv_heads, titles)"},
             tt.head_groups, tmp("e.png"), hg_with("heads", 8))
  checkerror({"head_groups: option 'q_heads' is missing"}, tt.head_groups, tmp("e.png"), {kv_heads = {1}})
  checkerror({"head_groups: option 'kv_heads' is missing", "e.g. {8, 2, 1}"}, tt.head_groups, tmp("e.png"),
             {q_heads = 8})
  checkerror({"head_groups: option 'q_heads' must be a positive whole number, not 2.5"},
             tt.head_groups, tmp("e.png"), hg_with("q_heads", 2.5))
  checkerror({"head_groups: option 'q_heads' must be a positive whole number, not string"},
             tt.head_groups, tmp("e.png"), hg_with("q_heads", "8"))
  checkerror({"head_groups: option 'q_heads' must be a positive whole number, not 0"},
             tt.head_groups, tmp("e.png"), hg_with("q_heads", 0))
  checkerror({"head_groups: q_heads must be a whole number from 1 to 64, got 128"},
             tt.head_groups, tmp("e.png"), {q_heads = 128, kv_heads = {1}})
  checkerror({"head_groups: kv_heads[2] = 3 does not divide q_heads = 8", "hint:"},
             tt.head_groups, tmp("e.png"), hg_with("kv_heads", {8, 3}))
  checkerror({"head_groups: kv_heads[1] = 16 does not divide q_heads = 8"},
             tt.head_groups, tmp("e.png"), hg_with("kv_heads", {16}))
  checkerror({"head_groups: option 'kv_heads' (entry 2) must be a positive whole number, not boolean"},
             tt.head_groups, tmp("e.png"), hg_with("kv_heads", {8, true}))
  checkerror({"head_groups: option 'kv_heads' must be a list of whole numbers, not a number"},
             tt.head_groups, tmp("e.png"), hg_with("kv_heads", 2))
  checkerror({"head_groups: kv_heads must list 1 to 8 variants", "got 0"},
             tt.head_groups, tmp("e.png"), hg_with("kv_heads", {}))
  checkerror({"head_groups: 2 titles for the 3 variants in kv_heads"},
             tt.head_groups, tmp("e.png"), hg_with("titles", {"MHA", "GQA"}))
  checkerror({"head_groups: option 'title' must be a string, not a number"},
             tt.head_groups, tmp("e.png"), hg_with("title", 5))
  checkerror({"bad argument #2 to", "head_groups'", "table expected"}, tt.head_groups, tmp("e.png"))
  check("no file after a head_groups error", not exists(tmp("e.png")))
end

-- ===== --sandbox: figures only under --images =====
local images = tmp("images")
assert(os.execute("mkdir -p " .. images))
local script = tmp("sbx.lua")
local f = assert(io.open(script, "w"))
f:write([[
local x = tt.rand(3, 4)
print(select(2, pcall(tt.heatmap, x, "/tmp/tt_sandbox_escape.png")))
print(select(2, pcall(tt.bars, tt.rand(3), "../bars_escape.png")))
print(select(2, pcall(tt.flow, "/tmp/tt_sandbox_escape.png")))
print(select(2, pcall(tt.head_groups, "/tmp/tt_sandbox_hg.png", {q_heads = 2, kv_heads = {1}})))
print(select(2, pcall(tt.plot, {y = {1, 2}}, "/tmp/tt_sandbox_plot.png")))
print(select(2, pcall(tt.attend_figure, tt.ones(2), tt.ones(3, 2), tt.ones(3, 2), "../att_escape.png")))
print(tt.plot({y = {1, 2}}, "images/plot_ok.png"))
print(tt.heatmap(x, "images/ok.png"))
]])
f:close()
local out = io.popen("cd " .. dir .. " && " .. os.getenv("PWD") .. "/tensortrace -q --sandbox sbx.lua 2>&1"):read("a")
check("sandbox: heatmap outside --images refused", out:find("sandbox: cannot write '/tmp/tt_sandbox_escape.png'", 1, true) ~= nil)
check("sandbox: bars outside --images refused", out:find("sandbox: cannot write '../bars_escape.png'", 1, true) ~= nil)
check("sandbox: plot and attend_figure outside --images refused",
      out:find("sandbox: cannot write '/tmp/tt_sandbox_plot.png'", 1, true) ~= nil and
      out:find("sandbox: cannot write '../att_escape.png'", 1, true) ~= nil and
      not exists("/tmp/tt_sandbox_plot.png") and not exists(dir .. "/../att_escape.png"))
check("sandbox: plot under --images written", exists(images .. "/plot_ok.png"))
check("sandbox: head_groups outside --images refused",
      out:find("sandbox: cannot write '/tmp/tt_sandbox_hg.png'", 1, true) ~= nil and not exists("/tmp/tt_sandbox_hg.png"))
check("sandbox: no escaped file", not exists("/tmp/tt_sandbox_escape.png") and not exists(dir .. "/../bars_escape.png"))
check("sandbox: heatmap under --images written", out:find("images/ok.png", 1, true) ~= nil and exists(images .. "/ok.png"))

-- ===== SVG: a path ending in .svg (any case) gives an SVG =====
-- A strict XML well-formedness check (our own, so the test never skips):
-- UTF-8, no control characters, one root, nesting, unique quoted
-- attributes, only the predefined or numeric entity references.
local function xml_check(s)
  if not utf8.len(s) then return nil, "not UTF-8" end
  if s:find("[%z\1-\8\11\12\14-\31\127]") then return nil, "control character" end
  local NAME = "[%a_:][%w_:%.%-]*"
  local function chars(t, where)
    if t:find("<", 1, true) then return nil, "'<' in " .. where end
    if t:find("]]>", 1, true) then return nil, "']]>' in " .. where end
    local i = 1
    while true do
      local a = t:find("&", i, true)
      if not a then return true end
      local ref = t:match("^&(#?%w+);", a)
      if not (ref == "lt" or ref == "gt" or ref == "amp" or ref == "quot" or ref == "apos"
              or (ref and (ref:match("^#%d+$") or ref:match("^#x%x+$")))) then
        return nil, "bad '&' in " .. where
      end
      i = a + 1
    end
  end
  local pos, stack, roots = 1, {}, 0
  local decl = s:match("^<%?xml [^?]*%?>")
  if decl then pos = #decl + 1 end
  while pos <= #s do
    local lt = s:find("<", pos, true)
    local text = s:sub(pos, (lt or #s + 1) - 1)
    if #stack == 0 and text:find("%S") then return nil, "text outside the root" end
    local ok, why = chars(text, "text")
    if not ok then return nil, why end
    if not lt then break end
    if s:sub(lt, lt + 3) == "<!--" then
      local e = s:find("-->", lt + 4, true)
      if not e or s:sub(lt + 4, e - 1):find("--", 1, true) then return nil, "bad comment" end
      pos = e + 3
    elseif s:sub(lt, lt + 1) == "</" then
      local name, e = s:match("^</(" .. NAME .. ")%s*>()", lt)
      if not name or stack[#stack] ~= name then return nil, "mismatched </" .. tostring(name) .. ">" end
      stack[#stack] = nil
      pos = e
    else
      local name, p = s:match("^<(" .. NAME .. ")()", lt)
      if not name then return nil, "bad tag at byte " .. lt end
      if #stack == 0 then roots = roots + 1 end
      if roots > 1 then return nil, "two roots" end
      local seen = {}
      while true do
        local ws, q = s:match("^(%s*)()", p)
        p = q
        if s:sub(p, p + 1) == "/>" then pos = p + 2; break end
        if s:sub(p, p) == ">" then stack[#stack + 1] = name; pos = p + 1; break end
        local an, val, e = s:match("^(" .. NAME .. ")%s*=%s*([\"'])", p), nil, nil
        if not an or ws == "" then return nil, "bad attribute in <" .. name .. ">" end
        local quote
        an, quote, val, e = s:match("^(" .. NAME .. ")%s*=%s*([\"'])(.-)%2()", p)
        if not an then return nil, "unterminated attribute in <" .. name .. ">" end
        if seen[an] then return nil, "attribute " .. an .. " twice" end
        seen[an] = true
        ok, why = chars(val, "attribute " .. an)
        if not ok then return nil, why end
        p = e
      end
    end
  end
  if #stack > 0 then return nil, "unclosed <" .. stack[#stack] .. ">" end
  if roots ~= 1 then return nil, "no root" end
  return true
end
-- the checker itself can fail
for _, bad in ipairs{"<a><b></a></b>", "<a x='1' x='2'/>", "<a>a & b</a>", "<a/><b/>", "<a>",
                     "<a>\1</a>", "<a>\xff</a>", "<a x=1/>", "<a x='<'/>", "<a>&foo;</a>", "x<a/>"} do
  check("xml_check refuses " .. bad, not xml_check(bad))
end
check("xml_check accepts", xml_check('<?xml version="1.0"?>\n<a x="1&amp;2"><b/>t&#39;&lt;<!-- c --></a>\n'))

local function slurp(p) local f = assert(io.open(p, "rb")); local d = f:read("a"); f:close(); return d end
-- the PNG's size from its IHDR
local function png_size(p)
  local d = slurp(p)
  return string.unpack(">I4I4", d, 17)
end

tt.manual_seed(7)
local sw = tt.rand(2, 5, 6):softmax(-1)
local sm = tt.causal_mask(5, 6)
local scores = tt.tensor({{0.1, -0.7, 0.2}, {0.5, -1/0, 0.25}, {0/0, 2, 1}})
local kinds = {
  {"heatmap", function(p) return tt.heatmap(scores, p, {title = "scores <script>alert(1)</script> & co",
                                                      xlabels = {"a&b", "<i>", "naïve"}}) end},
  {"heatmap3", function(p) return tt.heatmap(sw, p, {mask = {causal = ~sm, pad = sm:narrow(2, 1, 1)},
                                                    row_sums = true, tiles = {2, 3}}) end},
  {"categories", function(p) return tt.heatmap(tt.tensor({{1, 2}, {3, 1}}), p, {categories = {"x", "y", "z"}}) end},
  {"downsampled", function(p) return tt.heatmap(tt.arange(1200 * 1100):view(1200, 1100), p) end},
  {"bars", function(p) return tt.bars(tt.tensor({{0.2, 0.5, 0.8}, {2, -5, 8}}), p, {labels = {"small", "big & <b>"}}) end},
  {"plot", function(p) return tt.plot({{name = "N² & <b>", x = {1, 10, 100}, y = {1, 100, 1e4}}, {y = {1, 0 / 0, 3}}}, p,
                                      {xlog = true, ylog = true, title = "a × b"}) end},
  {"attend", function(p) return tt.attend_figure(tt.ones(2), tt.eye(2), tt.ones(2, 3), p, {labels = {"<a>", "b"}}) end},
  {"flow", function(p)
    tt.trace.section("svg flow")
    local a = tt.randn(2, 3):label("A")
    local b = (a * 2):label("B")
    return tt.flow(p, {title = "flow & <friends>"})
  end},
}
for _, k in ipairs(kinds) do
  local name, draw = k[1], k[2]
  local p = tmp(name .. ".svg")
  check(name .. ": returns the path", draw(p) == p)
  local d = slurp(p)
  local ok, why = xml_check(d)
  check(name .. ": well-formed XML" .. (why and (": " .. why) or ""), ok)
  check(name .. ": an svg root", d:find('^<%?xml[^>]*>\n<svg xmlns="http://www.w3.org/2000/svg"') ~= nil)
  check(name .. ": text as <text>", d:find("<text ", 1, true) ~= nil)
  check(name .. ": the script's line in desc", d:find("Source: tests/lua/test_figures.lua:%d+") ~= nil)
  check(name .. ": no <script>", not d:find("<script", 1, true))
  draw(tmp(name .. "2.svg"))
  check(name .. ": same input, same bytes", slurp(tmp(name .. "2.svg")) == d)
  draw(tmp(name .. ".png"))
  local pw, ph = png_size(tmp(name .. ".png"))
  local w, h = d:match('<svg [^>]*width="(%d+)" height="(%d+)"')
  check(name .. ": the PNG's size", tonumber(w) == pw and tonumber(h) == ph)
  check(name .. ": no temporary left", not exists(p .. ".tmp"))
end
local d = slurp(tmp("heatmap.svg"))
check("svg: title escaped", d:find("<title>scores &lt;script&gt;alert(1)&lt;/script&gt; &amp; co</title>", 1, true)
      and d:find(">&lt;script&gt;alert(1)&lt;/script&gt; &amp; co</text>", 1, true))
check("svg: labels escaped, UTF-8 kept", d:find(">a&amp;b</text>", 1, true) and d:find(">&lt;i&gt;</text>", 1, true)
      and d:find(">naïve</text>", 1, true))
check("svg: -inf hatched with a pattern", d:find('fill="url(#tt-hatch)"', 1, true) ~= nil)
check("svg: mask kinds as patterns", slurp(tmp("heatmap3.svg")):find('fill="url(#tt-mask1)"', 1, true) ~= nil)
-- a bool tensor: two colours with a legend, named by categories (false, true)
local cm = tt.causal_mask(2, 3)
check("bool heatmap with two names", tt.heatmap(cm, tmp("bool.svg"), {categories = {"hidden", "may attend"}}) == tmp("bool.svg"))
local bs = slurp(tmp("bool.svg"))
check("bool heatmap: its legend names, no colour bar ticks",
      bs:find(">hidden</text>", 1, true) and bs:find(">may attend</text>", 1, true) and not bs:find(">0.5</text>", 1, true))
checkerror({"heatmap: 1 category for the bool tensor [2,3]; hint: it takes two, the names of false and true"},
           tt.heatmap, cm, tmp("bool.png"), {categories = {"hidden"}})
-- a NaN under a mask keeps its colour, the mask's strokes in white over it
tt.heatmap(tt.tensor({{0 / 0, 0.5}, {0.2, 0.8}}), tmp("masked_nan.svg"),
           {mask = tt.tensor({{true, false}, {false, false}}, "bool")})
local mn = slurp(tmp("masked_nan.svg"))
check("svg: a masked NaN: white strokes as a pattern over the NaN colour",
      mn:find('<pattern id="tt%-mask0w"[^>]*><path d="[^"]*" fill="#ffffff"/>') ~= nil and
      mn:find('fill="#e8198c"/>\n<rect [^>]*fill="url%(#tt%-mask0w%)"') ~= nil)
check("svg: flow boxes rounded", slurp(tmp("flow.svg")):find(' rx="', 1, true) ~= nil)
tt.heatmap(scores, tmp("upper.SVG"))
check("svg: .SVG is SVG too", slurp(tmp("upper.SVG")):sub(1, 5) == "<?xml")
tt.heatmap(scores, tmp("plain.png"))
check("svg: .png stays PNG", slurp(tmp("plain.png")):sub(2, 4) == "PNG")
checkerror({"heatmap: cannot write '" .. tmp("nodir/x.svg") .. "': folder", "does not exist"},
           tt.heatmap, scores, tmp("nodir/x.svg"))
check("svg: a failed write leaves no file", not exists(tmp("nodir/x.svg")) and not exists(tmp("nodir/x.svg.tmp")))

-- --sandbox: an .svg outside --images is refused like a .png
local script3 = tmp("sbx_svg.lua")
f = assert(io.open(script3, "w"))
f:write([[
local x = tt.rand(3, 4)
print(select(2, pcall(tt.heatmap, x, "/tmp/tt_sandbox_escape.svg")))
print(select(2, pcall(tt.bars, tt.rand(3), "../bars_escape.SVG")))
print(tt.heatmap(x, "images/ok.svg"))
]])
f:close()
out = io.popen("cd " .. dir .. " && " .. os.getenv("PWD") .. "/tensortrace -q --sandbox sbx_svg.lua 2>&1"):read("a")
check("sandbox: svg outside --images refused",
      out:find("sandbox: cannot write '/tmp/tt_sandbox_escape.svg'", 1, true) ~= nil and
      out:find("sandbox: cannot write '../bars_escape.SVG'", 1, true) ~= nil)
check("sandbox: no escaped svg", not exists("/tmp/tt_sandbox_escape.svg") and not exists(dir .. "/../bars_escape.SVG"))
check("sandbox: svg under --images written", exists(images .. "/ok.svg") and xml_check(slurp(images .. "/ok.svg")))

-- ===== tt.plot =====
local function png_wh(p)
  local b = slurp(p)
  return b:sub(2, 4) == "PNG" and string.unpack(">I4>I4", b, 17)
end
local steps, loss = {}, {}
for i = 1, 30 do steps[i] = i; loss[i] = 3 * math.exp(-i / 8) end
local function two_series()   -- one call site: the PNG's Source chunk names the line
  return tt.plot({{name = "loss", x = steps, y = loss}, {name = "half", x = steps, y = tt.tensor(loss) / 2}},
                 tmp("plot.png"), {title = "Loss", xtitle = "step", ytitle = "loss", legend = true, markers = false})
end
check("plot: a list of series writes a PNG", two_series() == tmp("plot.png") and png_wh(tmp("plot.png")))
check("plot: one series alone, x defaults to 1, 2, ...", tt.plot({y = {3, 1, 2}}, tmp("plot1.png")) and
      png_wh(tmp("plot1.png")))
check("plot: log axes", tt.plot({{x = {16, 64, 256}, y = {256, 4096, 65536}}}, tmp("plot2.png"),
                                {xlog = true, ylog = true}))
check("plot: .svg", not exists(tmp("plot_one.svg")) and tt.plot({y = {1, 2}}, tmp("plot_one.svg")) and
      slurp(tmp("plot_one.svg")):sub(1, 5) == "<?xml")
local a1 = slurp(tmp("plot.png"))
two_series()
check("plot: the same bytes twice", slurp(tmp("plot.png")) == a1)
check("plot: a NaN point is skipped, not an error", tt.plot({y = {1, 0 / 0, 3}}, tmp("plot3.png")))
-- errors, each naming the series and the point
checkerror({"plot: unknown option 'log'", "(options: title, xtitle, ytitle, xlog, ylog, legend, markers, ymin, ymax)"},
           tt.plot, {y = {1}}, tmp("e.png"), {log = true})
checkerror({"plot: option 'xlog' must be true or false, not a string"}, tt.plot, {y = {1}}, tmp("e.png"), {xlog = "yes"})
checkerror({"plot: nothing to draw: no series"}, tt.plot, {}, tmp("e.png"))
checkerror({"plot: series 'loss' is empty"}, tt.plot, {{name = "loss", y = {}}}, tmp("e.png"))
checkerror({"plot: series 'b' has 3 x values and 2 y values"}, tt.plot,
           {{name = "a", y = {1, 2}}, {name = "b", x = {1, 2, 3}, y = {1, 2}}}, tmp("e.png"))
checkerror({"plot: series 'flops' has y = 0 at point 2, which a log y axis cannot show"}, tt.plot,
           {{name = "flops", y = {1, 0, 3}}}, tmp("e.png"), {ylog = true})
checkerror({"plot: series 2 has x = -1 at point 1, which a log x axis cannot show"}, tt.plot,
           {{y = {1}}, {x = {-1}, y = {2}}}, tmp("e.png"), {xlog = true})
checkerror({"plot: series 1 has no y"}, tt.plot, {{x = {1, 2}}}, tmp("e.png"))
checkerror({"plot: series 1's y must hold numbers (entry 2 is a string)"}, tt.plot, {{y = {1, "2"}}}, tmp("e.png"))
checkerror({"plot: series 1's x must be a 1-D tensor or a list of numbers, got [2,2]"}, tt.plot,
           {{x = tt.zeros(2, 2), y = {1, 2}}}, tmp("e.png"))
do   -- a closed tensor, or one closed by an __index while the series are read
  local closed = tt.ones(3)
  tensor_mt.__close(closed)
  checkerror({"plot: series 1's y is a closed tensor"}, tt.plot, {{y = closed}}, tmp("e.png"))
  local live = tt.ones(3)
  local sneaky = setmetatable({}, {__index = function(_, k)
    if k == "y" then return live end
    if k == "x" then tensor_mt.__close(live) end
  end})
  checkerror({"plot: series 1's y is a closed tensor"}, tt.plot, {sneaky}, tmp("e.png"))
end
checkerror({"plot: series 2 must be a table"}, tt.plot, {{y = {1}}, 5}, tmp("e.png"))
checkerror({"plot (a series): unknown option 'ys'"}, tt.plot, {{ys = {1}}}, tmp("e.png"))
checkerror({"plot: 9 series, at most 8 fit one chart"}, tt.plot,
           {{y = {1}}, {y = {1}}, {y = {1}}, {y = {1}}, {y = {1}}, {y = {1}}, {y = {1}}, {y = {1}}, {y = {1}}}, tmp("e.png"))
checkerror({"plot: nothing to draw: no series has a finite point"}, tt.plot, {y = {0 / 0}}, tmp("e.png"))
-- error bars and a fixed y range
check("plot: yerr (a list or a tensor) and ymin, ymax", tt.plot({{name = "m", y = {1, 2}, yerr = {0.1, 0.3}},
      {y = {2, 1}, yerr = tt.tensor{0, 0.2}}}, tmp("plot_err.png"), {ymin = 0, ymax = 3}))
checkerror({"plot: series 'm' has 1 yerr values and 2 y values"}, tt.plot, {name = "m", y = {1, 2}, yerr = {0.1}}, tmp("e.png"))
checkerror({"plot: series 'm' has yerr = -0.1 at point 2; yerr is the half-width of an error bar, a number >= 0"},
           tt.plot, {name = "m", y = {1, 2}, yerr = {0.1, -0.1}}, tmp("e.png"))
checkerror({"plot: series 1 has yerr = nan at point 1"}, tt.plot, {y = {1}, yerr = {0 / 0}}, tmp("e.png"))
checkerror({"plot: series 1's yerr must hold numbers (entry 1 is a string)"}, tt.plot, {y = {1}, yerr = {"0.1"}}, tmp("e.png"))
checkerror({"plot: option 'ymin' must be a number, not a string"}, tt.plot, {y = {1}}, tmp("e.png"), {ymin = "0"})
checkerror({"plot: option 'ymax' must be a finite number, not inf"}, tt.plot, {y = {1}}, tmp("e.png"), {ymax = math.huge})
checkerror({"plot: ymin = 2 is not below ymax = 1"}, tt.plot, {y = {1}}, tmp("e.png"), {ymin = 2, ymax = 1})
checkerror({"plot: ymin = 0, which a log y axis cannot show"}, tt.plot, {y = {1}}, tmp("e.png"), {ymin = 0, ylog = true})
checkerror({"plot: series 'm' has y = -1 at point 2, outside the y axis fixed by ymin = 0; hint: widen ymin, or drop it"},
           tt.plot, {name = "m", y = {1, -1}}, tmp("e.png"), {ymin = 0})
checkerror({"plot: series 1 has y = 5 at point 1, outside the y axis fixed by ymax = 4"}, tt.plot, {y = {5}}, tmp("e.png"), {ymax = 4})
check("plot: no file after an error", not exists(tmp("e.png")))

-- ===== tt.attend_figure =====
local Qh = tt.tensor{{1, 0}, {0, 1}, {1, 1}}
local Vh = tt.tensor{{1, 0}, {0, 2}, {1, 1}}
check("attend_figure: the hand example writes a PNG",
      tt.attend_figure(Qh[3], Qh, Vh, tmp("att.png"), {labels = {"t1", "t2", "t3"}, query = "t3", title = "q3", decimals = 4})
      == tmp("att.png") and png_wh(tmp("att.png")))
check("attend_figure: q as [1, Dh], a scale, K a transposed view", tt.attend_figure(Qh:narrow(1, 3, 1),
      Qh:mT():contiguous():mT(), Vh, tmp("att2.svg"), {scale = 0.5}) and slurp(tmp("att2.svg")):sub(1, 5) == "<?xml")
checkerror({"attend_figure: expected one query q [Dh] (or [1,Dh]), keys K [Nk,Dh] and values V [Nk,Dv], got q [3,2]",
            "hint: one query row, e.g. Q[3]"}, tt.attend_figure, Qh, Qh, Vh, tmp("e.png"))
checkerror({"attend_figure: q [3] and K [3,2] differ in Dh (3 vs 2)"}, tt.attend_figure, tt.ones(3), Qh, Vh, tmp("e.png"))
checkerror({"attend_figure: K [3,2] and V [2,2] differ in the number of keys (3 vs 2)"}, tt.attend_figure,
           Qh[1], Qh, Vh:narrow(1, 1, 2), tmp("e.png"))
checkerror({"attend_figure: 2 labels for the 3 keys"}, tt.attend_figure, Qh[1], Qh, Vh, tmp("e.png"), {labels = {"a", "b"}})
checkerror({"attend_figure: 40 keys, at most 32 fit one figure", "K:narrow(1, 1, 32)"}, tt.attend_figure,
           tt.ones(2), tt.ones(40, 2), tt.ones(40, 2), tmp("e.png"))
checkerror({"attend_figure: values of size 20, at most 16 columns"}, tt.attend_figure,
           tt.ones(2), tt.ones(3, 2), tt.ones(3, 20), tmp("e.png"))
checkerror({"attend_figure: unknown option 'tokens'", "(options: title, labels, query, scale, decimals)"},
           tt.attend_figure, Qh[1], Qh, Vh, tmp("e.png"), {tokens = {}})
checkerror({"attend_figure: option 'query' must be a string, not a number"},
           tt.attend_figure, Qh[1], Qh, Vh, tmp("e.png"), {query = 3})
checkerror({"attend_figure: option 'scale' must be a number, not a string"},
           tt.attend_figure, Qh[1], Qh, Vh, tmp("e.png"), {scale = "1"})
checkerror({"attend_figure: scale must be a finite number, not inf"},
           tt.attend_figure, Qh[1], Qh, Vh, tmp("e.png"), {scale = math.huge})
check("attend_figure: no file after an error", not exists(tmp("e.png")))

os.execute("rm -rf " .. dir)
T.report()
