-- test_figures.lua — tt.heatmap, tt.bars and tt.flow from Lua: option
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
                        "panel_titles", "downsample)"},
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
ok, err = pcall(tt.heatmap, x, tmp("nil_opts.png"), nil)
check("nil options are fine: " .. tostring(err), ok and exists(tmp("nil_opts.png")))
ok, err = pcall(tt.heatmap, x, tmp("empty_opts.png"), {})
check("empty options are fine: " .. tostring(err), ok and exists(tmp("empty_opts.png")))

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
print(tt.heatmap(x, "images/ok.png"))
]])
f:close()
local out = io.popen("cd " .. dir .. " && " .. os.getenv("PWD") .. "/tensortrace -q --sandbox sbx.lua 2>&1"):read("a")
check("sandbox: heatmap outside --images refused", out:find("sandbox: cannot write '/tmp/tt_sandbox_escape.png'", 1, true) ~= nil)
check("sandbox: bars outside --images refused", out:find("sandbox: cannot write '../bars_escape.png'", 1, true) ~= nil)
check("sandbox: no escaped file", not exists("/tmp/tt_sandbox_escape.png") and not exists(dir .. "/../bars_escape.png"))
check("sandbox: heatmap under --images written", out:find("images/ok.png", 1, true) ~= nil and exists(images .. "/ok.png"))

os.execute("rm -rf " .. dir)
T.report()
