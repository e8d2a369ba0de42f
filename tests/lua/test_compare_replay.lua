-- test_compare_replay.lua — the checker replays the reference's ops from
-- their arguments as values (issue 40, item 1): a mistake upstream of an
-- op is still named when the op's arguments are long (an einops pattern
-- past the trace's 63 characters), options (sdpa's window, sinks, alibi;
-- rope's, cross_entropy's), a tensor (index_select's indices) or a dim
-- that the old text did not carry.
local T = dofile("tests/lua/check.lua")
local check = T.check_out

local dir = T.tmpdir()
local function write(name, text) return T.write(dir, name, text) end
local function run(args) return T.run(dir, args) end
local has = function(s, pat) return s ~= nil and s:find(pat, 1, true) ~= nil end

-- weights over the keys, then an op on them, and only the op's result is
-- labelled: a softmax over the queries in MINE is found by replaying the
-- op on REF's weights normalised the other way
local BASE = [[
tt.manual_seed(3)
local q = tt.randn(2, 3, 4, 8)
local k = tt.randn(2, 3, 4, 8)
local w = (q:matmul(k:mT()) / math.sqrt(8)):softmax(4)
]]
local downstream = {
  { "reduce, a pattern of 72 characters",
    'tt.reduce(w, "batch heads queries keys_of_the_sequence -> batch queries keys_of_the_sequence", "mean")' },
  { "repeat, a pattern of 75 characters and a size",
    'tt["repeat"](w, "batch heads queries keys -> batch heads queries keys repeated_copies_of_it", {repeated_copies_of_it = 3})' },
  { "rearrange with a size", 'tt.rearrange(w:reshape(2, 3, 16), "b h (q k) -> b q h k", {q = 4})' },
  { "index_select: its dim and its indices", 'w:index_select(3, tt.tensor({4, 1, 1}):long())' },
  { "gather on dim 4", 'w:gather(4, tt.tensor({2, 1}):long():view(1, 1, 1, 2):expand(2, 3, 4, 2):contiguous())' },
  { "norm: p, dim and keepdim", 'w:norm(1.5, 3, true)' },
  { "narrow, then permute", 'w:narrow(4, 2, 3):permute(4, 1, 3, 2)' },
  { "rope with its options", 'tt.rope(w, tt.arange(4), {interleaved = true, base = 100})' },
  { "cross_entropy with its options",
    'tt.cross_entropy(w:reshape(24, 4), tt.tensor({1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}):long(), '
      .. '{reduction = "none", ignore_index = 2})' },
  { "where with a number", 'tt.where(w:gt(0.2), w, 0.5)' },
  { "tril with its k", 'w:tril(-1)' },
  { "squeeze of a dim", 'w:narrow(2, 2, 1):squeeze(2)' },
}
for i, case in ipairs(downstream) do
  local what, expr = case[1], case[2]
  local body = BASE .. "local out = " .. expr .. "\nout = out:label(\"out\")\n"
  local ref = write("ref_" .. i .. ".lua", body)
  local mine = write("mine_" .. i .. ".lua", (body:gsub(":softmax%(4%)", ":softmax(3)")))
  local out, err, code = run("--compare " .. ref .. " " .. mine)
  check("a mistake before " .. what .. ": still named (the op replayed from its values)",
        code == 1 and has(out, "softmax_dim: your softmax normalises over dim 3"), out .. err)
end

-- sdpa: every option replayed, so a missing 1/sqrt(Dh) is the scale mistake
-- with a window, sinks and ALiBi, and with a bias; with window and sinks of
-- 13 digits the trace's text cuts "alibi" off, the values keep it
local SDPA = [[
tt.manual_seed(4)
local q = tt.randn(2, 2, 6, 16)
local k = tt.randn(2, 2, 6, 16)
local v = tt.randn(2, 2, 6, 16)
local out = tt.sdpa(q, k, v, {OPTS}):label("out")
]]
for _, opts in ipairs({ "window = 2, sinks = 1, alibi = true", "window = 1000000000000, sinks = 1000000000000, alibi = true",
                        "causal = true, bias = tt.randn(6, 6)",
                        "window = 3, mask = tt.causal_mask(6), bias = tt.randn(6, 6)" }) do
  local body = SDPA:gsub("OPTS", opts)
  local ref = write("sdpa_ref.lua", body)
  local mine = write("sdpa_mine.lua", (SDPA:gsub("OPTS", opts .. ", scale = 1")))
  local out, err, code = run("--compare " .. ref .. " " .. mine)
  check("tt.sdpa{" .. opts .. "} without 1/sqrt(Dh): the scale mistake", code == 1 and has(out, "scale_missing"), out .. err)
  local right = write("sdpa_right.lua", (SDPA:gsub("OPTS", opts .. ", scale = 0.25")))
  out, err, code = run("--compare " .. ref .. " " .. right)
  check("... and the same call with the scale 1/sqrt(16) written out matches", code == 0, out .. err)
end

-- the causal mask's sizes and alignment are values: the alignment mistake
-- names them
local CM = [[
tt.manual_seed(5)
local s = tt.randn(3, 7)
local w = s:masked_fill(~tt.causal_mask(3, 7ALIGN), -math.huge):softmax(2):label("w")
]]
local ref = write("cm_ref.lua", (CM:gsub("ALIGN", "")))
local mine = write("cm_mine.lua", (CM:gsub("ALIGN", ', "upper_left"')))
local out, err, code = run("--compare " .. ref .. " " .. mine)
check("causal_mask(3, 7) aligned upper-left: the alignment mistake with the sizes",
      code == 1 and has(out, "causal_alignment") and has(out, "tt.causal_mask(3, 7)"), out .. err)

-- the line of an op made inside a coroutine is the coroutine's line
local REF = [[
tt.manual_seed(1)
local q = tt.randn(4, 4)
local scores = q:matmul(q:mT()):label("scores")
local w = scores:softmax(2):label("weights")
]]
local ref_co = write("co_ref.lua", REF)
local mine_co = write("co_mine.lua", (REF:gsub("local w = scores:softmax%(2%)", [[
local w
coroutine.wrap(function()
  local hidden = scores:masked_fill(tt.causal_mask(4, 4):mT(), -math.huge)
  w = hidden:softmax(2)
end)()
w = w]])))
out, err, code = run("--compare " .. ref_co .. " " .. mine_co)
check("an op made in a coroutine: the verdict names its line, not the line that ran the coroutine",
      code == 1 and has(out, "made on line 7") and not has(out, "made on line 5"), out .. err)

T.report()
