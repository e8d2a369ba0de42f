-- test_lesson_figures.lua — what the lessons' figures show, read from what
-- each lesson passes to the figure functions (recorded here, not drawn):
-- every hidden weight hatched, a bool mask drawn as two named colours,
-- panel titles that name what the panels hold. How those options look is
-- tested by pixels in tests/test_figure.c; test_golden.sh checks that the
-- committed PNGs are what the lessons draw.
local T = dofile("tests/lua/check.lua")
local check = T.check

-- every figure function records its call by path and draws nothing
local calls = {}
local path_arg = {heatmap = 2, bars = 2, plot = 2, flow = 1, head_groups = 1, attend_figure = 4}
for name, k in pairs(path_arg) do
  tt[name] = function(...)
    local args = table.pack(...)
    calls[args[k]] = {fn = name, args = args, opts = args[k + 1] or {}}
    return args[k]
  end
end

local function run(lesson)
  local quiet, saved_arg = print, arg
  print = function() end
  arg = {[0] = lesson}
  tt.manual_seed(0)                 -- as a fresh run of the lesson
  local ok, err = pcall(dofile, lesson)
  print, arg = quiet, saved_arg
  check(lesson .. " runs: " .. tostring(err), ok)
end

-- The union of a heatmap's masks (one bool tensor or a table of them), or nil.
local function mask_union(opts)
  local m = opts.mask
  if m == nil then return nil end
  if type(m) ~= "table" then return m end
  local u
  for _, t in pairs(m) do u = u and (u | t) or t end
  return u
end

-- Weights that are exactly 0 or NaN are hidden ones: each must be hatched
-- (and, when both_ways, each hatched cell must be one).
local function hidden_hatched(path, both_ways)
  local c = calls[path]
  if not check(path .. " was drawn", c ~= nil) then return end
  local x = c.args[1]
  local hidden = (x:eq(0) | x:ne(x)):float()
  local u = mask_union(c.opts)
  if not check(path .. ": a mask is given", u ~= nil) then return end
  local covered = u:float()
  local bare = (hidden * (1 - covered)):sum():item()   -- broadcasts the mask over x
  check(string.format("%s: every weight of exactly 0 or NaN is hatched (%d are not)", path, bare), bare == 0)
  if both_ways then
    local extra = (covered * (1 - hidden)):sum():item()
    check(string.format("%s: every hatched cell holds 0 or NaN (%d do not)", path, extra), extra == 0)
  end
end

run("lessons/04_padding_mask.lua")
hidden_hatched("images/04_weights_b1.png", true)
hidden_hatched("images/04_weights_b2.png", true)
hidden_hatched("images/04_nan_weights_b2.png", true)

run("lessons/08_cross_attention.lua")
hidden_hatched("images/08_weights.png", true)
hidden_hatched("images/08_weights_padded.png", true)

run("lessons/11_numerics.lua")
hidden_hatched("images/11_fully_masked_row.png", false)   -- -1e9 leaves 0.25 under the mask

run("lessons/09_kv_cache.lua")
local al = calls["images/09_alignment.png"]
if check("09_alignment was drawn", al ~= nil) then
  check("09_alignment: the masks go in as bool, two colours and a legend", al.args[1]:dtype() == "bool")
  check("09_alignment: no colour map", al.opts.cmap == nil and al.opts.vmin == nil)
  local cats = al.opts.categories or {}
  check("09_alignment: the legend says hidden / may attend",
        cats[1] == "hidden" and cats[2] == "may attend")
end

run("lessons/02_scaling.lua")
local sv = calls["images/02_scaled_vs_raw.png"]
if check("02_scaled_vs_raw was drawn", sv ~= nil) then
  local t = sv.opts.panel_titles or {}
  check("02_scaled_vs_raw: two panel titles", #t == 2)
  for i, s in ipairs(t) do
    check("02_scaled_vs_raw: panel " .. i .. " says weights (softmax), not scores: " .. s,
          s:find("softmax", 1, true) ~= nil and not s:find("scores", 1, true))
  end
end

run("lessons/15_positions.lua")
local ab = calls["images/15_alibi.png"]
if check("15_alibi was drawn", ab ~= nil) then
  -- one line per head: its name gives the slope 2^(-8h/H) and every point
  -- is (d, slope_h * d), the penalty ALiBi subtracts at distance d
  local series = ab.args[1]
  check("15_alibi: a line chart of 4 heads", ab.fn == "plot" and #series == 4)
  for h, sr in ipairs(series) do
    local slope = 2 ^ (-8 * h / #series)
    check(string.format("15_alibi: line %d names slope %.4g: %s", h, slope, sr.name or "none"),
          (sr.name or ""):find(string.format("slope %.4g", slope), 1, true) ~= nil)
    local ok = #sr.x == #sr.y and #sr.x > 0
    for i = 1, #sr.x do
      if math.abs(sr.y[i] - slope * sr.x[i]) > 1e-9 * sr.x[i] then ok = false end
    end
    check(string.format("15_alibi: line %d is slope * distance at every point", h), ok)
  end
  check("15_alibi: both axes on log scales (slopes differ 64-fold)", ab.opts.xlog and ab.opts.ylog)
end

run("lessons/18_sliding_window.lua")
local sk = calls["images/18_sinks.png"]
if check("18_sinks was drawn", sk ~= nil) then
  -- one line a model, its standard errors as bars of the same length, not
  -- extra lines for mean - SE and mean + SE
  local series, ok = sk.args[1], true
  for _, sr in ipairs(series) do
    if (sr.name or ""):find("SE", 1, true) or not sr.yerr or #sr.yerr ~= #sr.y then ok = false end
    for i = 1, sr.yerr and #sr.yerr or 0 do if not (sr.yerr[i] > 0) then ok = false end end
  end
  check("18_sinks: one line a model (2), each with a standard error > 0 at every point", #series == 2 and ok)
end
-- a loss or an error, which starts at 0, drawn on an axis that starts at 0
for _, f in ipairs({{"lessons/14_induction_heads.lua", "images/14_loss.png"},
                    {"lessons/19_linear_attention.lua", "images/19_loss.png"},
                    {"lessons/20_precision.lua", "images/20_bf16_error.png"}}) do
  run(f[1])
  local c = calls[f[2]]
  check(f[2] .. ": the y axis starts at 0", c ~= nil and c.opts.ymin == 0)
end

T.report()
