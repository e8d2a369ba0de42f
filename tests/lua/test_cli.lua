-- test_cli.lua — the command line, the text trace, --trace=values,
-- --trace-json, exit codes, limits and the REPL, by running ./tensortrace.
local T = dofile("tests/lua/check.lua")
local json = dofile("tests/lua/json.lua")
local check, checkerror = T.check, T.checkerror

local dir = T.tmpdir()
local function write(name, text) return T.write(dir, name, text) end

-- Runs the command; returns stdout, stderr, exit code.
local function run(args, stdin)
  return T.run(dir, args, stdin and write("stdin", stdin))
end

local has = function(s, pat) return s:find(pat, 1, true) ~= nil end

-- ===== the text trace =====
local script = write("attn.lua", [[
local x = tt.randn(2, 5, 16):named("B", "N", "D")
local q = x:reshape(2, 5, 2, 8):transpose(2, 3)
local s = q:matmul(q:mT()):label("scores")
print("between")
local w = s:softmax(-1)
]])
local out, err, code = run(script)
check("script exits 0", code == 0)
check("header names file:line and source", has(out, "attn.lua:2  local q = x:reshape(2, 5, 2, 8):transpose(2, 3)"))
check("chained calls get a row each", has(out, "reshape") and has(out, "transpose   [B=2,N=5,2,8] (2, 3) -> [B=2,2,N=5,8]"))
check("views show strides", has(out, "view, strides (80,8,16,1)"))
check("matmul shows FLOPs", has(out, "matmul      [B=2,2,N=5,8] @ [B=2,2,8,N=5] -> scores[B=2,2,5,5]   1.6 kFLOP"))
check("label given on the same line shows", has(out, "-> scores[B=2,2,5,5]"))
check("label shows on later inputs", has(out, "softmax     scores[B=2,2,5,5] (dim=4)"))
local p_between, p_soft = out:find("between", 1, true), out:find("softmax", 1, true)
check("script output stays in order", p_between and p_soft and p_between < p_soft)
check("no timings in the text trace", not out:find("%d+ ns") and not out:find("%d ms"))

out = run("-q " .. script)
check("-q prints no trace", not has(out, "matmul") and has(out, "between"))
out = run("--trace=off " .. script)
check("--trace=off is -q", not has(out, "matmul"))

-- tt.trace.summary{print = false} returns the counters without printing them
local summ = write("summ.lua", [[
local a = tt.randn(3, 4):matmul(tt.randn(4, 2))
local s = tt.trace.summary{print = false}
print(string.format("matmul %d FLOP, randn %d calls", s.matmul.flops, s.randn.calls))
]])
out = run("-q " .. summ)
check("summary{print = false} returns the counters", has(out, "matmul 48 FLOP, randn 2 calls"))
check("summary{print = false} prints no table", not has(out, "largest result"))
out = run("-q " .. write("summ_printed.lua", "tt.randn(2)\ntt.trace.summary()\n"))
check("summary() prints its table", has(out, "largest result") and has(out, "randn"))

-- ===== values =====
local vals = write("vals.lua", [[
local m = tt.tensor{{0, 1}, {2, 3}}
local w = m:masked_fill(tt.tensor({{true, true}, {false, false}}), -math.huge):softmax(2)
]])
out = run("--trace=values " .. vals)
check("values: summary line", has(out, "min 0  max 3  mean 1.5"))
check("values: small tensors shown whole", has(out, "[[0., 1.],"))
check("values: -inf counted", has(out, "-inf 2"))
check("values: NaN flagged where it first appears", has(out, "NaN appears here"))

out = run(vals)
check("shapes trace notes an all -inf softmax row", has(out, "!! 1 row is all -inf: softmax gives NaN there"))
check("bool ops count no FLOPs", not out:find("bool %-> [^\n]*FLOP"))

-- ===== JSON Lines =====
local jpath = dir .. "/trace.jsonl"
out, err, code = run("-q --trace-json " .. jpath .. " " .. script)
check("json run exits 0", code == 0)
local n, lines_ok, keys_ok = 0, true, true
local seen_lines = {}
for line in io.lines(jpath) do
  n = n + 1
  local ok, ev = pcall(json.decode, line)
  if not ok then lines_ok = false; print("bad json: " .. line .. " -- " .. ev) else
    for _, k in ipairs{"seq", "op", "file", "line", "inputs", "output", "flops", "bytes", "ns"} do
      if ev[k] == nil then keys_ok = false; print("missing key " .. k .. " in " .. line) end
    end
    keys_ok = keys_ok and type(ev.seq) == "number" and ev.seq == n and type(ev.op) == "string"
      and type(ev.output.shape) == "table" and type(ev.output.view) == "boolean"
      and type(ev.output.dtype) == "string" and ev.file:find("attn.lua", 1, true)
    seen_lines[ev.op] = ev.line
    if ev.op == "matmul" then
      keys_ok = keys_ok and ev.flops == 1600 and ev.output.label == "scores" and ev.output.names[1] == "B"
        and ev.output.names[2] == json.null and ev.output.view == false
    end
    if ev.op == "transpose" then keys_ok = keys_ok and ev.output.view == true end
  end
end
check("json: one object per event", n == 7)
check("json: every line parses", lines_ok)
check("json: keys and types", keys_ok)
check("json: line numbers match the script", seen_lines.randn == 1 and seen_lines.transpose == 2
  and seen_lines.matmul == 3 and seen_lines.softmax == 5)
local weird = write("weird.lua", 'local x = tt.ones(2):label("a \\"quoted\\"\\n label") + 1\nlocal y = x / 0\nlocal z = x * (-math.huge)\n')
run("-q --trace-json " .. jpath .. " " .. weird)
local all_ok = true
for line in io.lines(jpath) do all_ok = all_ok and pcall(json.decode, line) end
check("json: escapes strings, no bare inf/nan", all_ok)

-- ===== errors and exit codes =====
local bad = write("bad.lua", "local q = tt.zeros(5, 64)\nlocal s = q:matmul(q)\n")
out, err, code = run(bad)
check("script error exits 1", code == 1)
check("error names file:line, op, shapes and hint", has(err, "bad.lua:2: matmul: inner sizes differ: [5,64] @ [5,64] (64 vs 5); did you mean k:mT()?"))
check("error has a traceback", has(err, "stack traceback:"))
out, err, code = run("--no-such-option x.lua")
check("bad option exits 2", code == 2 and has(err, "unknown option '--no-such-option'"))
out, err, code = run(dir .. "/missing.lua")
check("missing script exits 2", code == 2 and has(err, "missing.lua"))
out, err, code = run("--trace=loud " .. script)
check("bad trace level exits 2", code == 2 and has(err, "loud"))
out, err, code = run("--help")
check("--help", code == 0 and has(out, "usage:") and has(out, "--trace-json"))
out, err, code = run("--version")
check("--version", code == 0 and has(out, "tensortrace"))

-- ===== -e, --seed, args =====
out, err, code = run("-q -e \"print(tt.ones(2):sum():item())\"")
check("-e runs a chunk", code == 0 and has(out, "2.0"))
local a1 = run("-q --seed 1 -e \"print(tt.randn(1):item())\"")
local a2 = run("-q --seed 2 -e \"print(tt.randn(1):item())\"")
local a3 = run("-q --seed 1 -e \"print(tt.randn(1):item())\"")
check("--seed changes and repeats the numbers", a1 ~= a2 and a1 == a3)
local argscript = write("args.lua", "print(select('#', ...), table.concat({...}, ','), arg[0] ~= nil)")
out = run("-q " .. argscript .. " one two")
check("script args reach the script", has(out, "2\tone,two\ttrue"))

-- ===== limits =====
out, err, code = run("-q --timeout 0.2 -e \"while true do end\"")
check("--timeout stops a runaway loop", code == 1 and has(err, "timeout"))
out, err, code = run("-q --max-memory 1M -e \"local x = tt.zeros(1000, 1000)\"")
check("--max-memory is an error naming the shape", code == 1 and has(err, "zeros") and has(err, "[1000,1000]") and has(err, "memory cap"))

-- ===== the REPL =====
out, err, code = run("", "x = tt.ones(2, 3)\nx:sum(2)\nfor i = 1, 2 do\nprint(i)\nend\nerror('boom')\n1 + 1\n")
check("repl exits 0 at end of input", code == 0)
check("repl prints expression values with shape", has(out, "tensor [2] float32"))
check("repl shows the trace", has(out, "sum"))
check("repl reads multi-line input", has(out, "1\n2"))
check("repl survives errors", has(err, "boom") and has(out, "2"))

os.execute("rm -rf " .. dir)
T.report()
