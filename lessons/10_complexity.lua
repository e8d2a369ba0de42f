-- 10_complexity.lua — what attention costs, step by step, as N grows.
--
-- "Attention is O(N^2)" is only half the story. Two steps grow with N^2 (the
-- scores and the value aggregation, plus the softmax over the N x N matrix);
-- the projections grow with N * D^2. This lesson runs one multi-head attention
-- layer at N = 64, 256 and 1024 (D = 64), reads the floating-point operations
-- of each step from the trace's counters, prints them next to the formulas,
-- finds where the N^2 part takes over, and measures the N x N memory.
--
-- Counting convention (the trace's too): a matmul [M,K] @ [K,N] costs 2*M*K*N
-- FLOPs (a multiply and an add each), an elementwise op 1 per element, a
-- softmax 5 per element (max, subtract, exp, sum, divide).
--
-- Run:  ./tensortrace lessons/10_complexity.lua      (trace of the N = 64 run)
--       ./tensortrace -q lessons/10_complexity.lua   (narrative only)
-- Figure: images/10_flops.png (FLOPs of each part vs N, log-log: slopes 1 and 2)

tt.manual_seed(0)

local D, H = 64, 4
local Dh = D // H
local Ns = {64, 256, 1024}

local Wq = tt.nn.Linear(D, D, {bias = false})
local Wk = tt.nn.Linear(D, D, {bias = false})
local Wv = tt.nn.Linear(D, D, {bias = false})
local Wo = tt.nn.Linear(D, D, {bias = false})

-- All FLOPs the trace has counted since the last tt.trace.reset(), over every op kind:
-- the sum of the flops column of tt.trace.summary{print = false}, as each op's row
-- counts them (the convention above). Lessons 09, 18 and 19 count the same way,
-- with the same function, from lessons/lib/flops.lua.
local counted_flops =
  dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/flops.lua").counted_flops

-- One attention layer. Returns the q and scores tensors (for the memory table)
-- and `cost`: the FLOPs of each step, as the trace counted them.
local function attention(x)
  local cost, before = {}, counted_flops()
  local function step_done(step)                 -- FLOPs counted since the last step
    local now = counted_flops()
    cost[step], before = now - before, now
  end
  -- The same N tokens, named by role: Nq as queries, Nk as keys and values.
  local q = tt.rearrange(Wq(x), "B Nq (H Dh) -> B H Nq Dh", {H = H}):label("Q")
  local k = tt.rearrange(Wk(x), "B Nk (H Dh) -> B H Nk Dh", {H = H}):label("K")
  local v = tt.rearrange(Wv(x), "B Nk (H Dh) -> B H Nk Dh", {H = H}):label("V")
  step_done("proj")
  local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
  step_done("scores")
  local weights = scores:softmax("Nk"):label("weights")
  step_done("softmax")
  local heads = weights:matmul(v):label("heads")
  step_done("agg")
  local y = Wo(tt.rearrange(heads, "B H Nq Dh -> B Nq (H Dh)")):label("Y")
  step_done("out")
  return {q = q, scores = scores, cost = cost}
end
local function measured(run) return run.cost end

-- The same from the formulas.
local function formula(N)
  return {
    proj    = 6 * N * D * D,                 -- O(N D^2)
    scores  = 2 * N * N * D + H * N * N,     -- O(N^2 D)
    softmax = 5 * H * N * N,                 -- O(H N^2)
    agg     = 2 * N * N * D,                 -- O(N^2 D)
    out     = 2 * N * D * D,                 -- O(N D^2)
  }
end
local steps = {"proj", "scores", "softmax", "agg", "out"}
local step_name = {proj = "Q/K/V projection", scores = "scores QK^T/sqrt", softmax = "softmax",
                   agg = "value aggregation", out = "output projection"}
local step_formula = {proj = "6 N D^2", scores = "2 N^2 D + H N^2", softmax = "5 H N^2",
                      agg = "2 N^2 D", out = "2 N D^2"}

tt.trace.section("One attention layer at N = 64 (the shapes)")
print(string.format("D = %d, H = %d heads of Dh = %d, no mask (a mask does not change", D, H, Dh))
print("the work of a dense kernel). Watch which shapes carry N twice.")
local runs = {}
runs[64] = attention(tt.randn(1, 64, D):named("B", "N", "D"):label("X"))

tt.trace.section("The same layer at N = 256 and N = 1024 (trace paused)")
tt.trace.off()
runs[256] = attention(tt.randn(1, 256, D):named("B", "N", "D"))
tt.trace.on()
print("For N = 1024 we zero the trace's counters first, so its summary below")
print("covers exactly one layer.")
tt.trace.reset()
tt.trace.off()
runs[1024] = attention(tt.randn(1, 1024, D):named("B", "N", "D"))
tt.trace.on()
local summary = tt.trace.summary()
print("Read the FLOPs column: matmul holds the projections, the scores and the")
print("aggregation; div is the 1/sqrt(Dh) scaling; softmax is 5 FLOPs per score.")
local f = formula(1024)
print(string.format("Formulas for N = 1024: matmul %.2f MFLOP, div %.2f MFLOP, softmax %.2f MFLOP.",
      (f.proj + f.out + 4 * 1024 * 1024 * D) / 1e6, H * 1024 * 1024 / 1e6, f.softmax / 1e6))
if summary.matmul.flops ~= f.proj + f.out + 4 * 1024 * 1024 * D or summary.div.flops ~= H * 1024 * 1024
   or summary.softmax.flops ~= f.softmax then
  error("the trace's FLOP counts for N = 1024 differ from the formulas")
end
print("Checked: the summary's FLOP counts equal the formulas.")
print("(The time column varies from run to run and machine to machine; FLOPs do not.)")
local nn_bytes = runs[1024].scores:numel() * 4
print(string.format("Bytes: softmax reads and writes the N x N matrix, 2 x %.2f MB, for %.2f MFLOP:",
      nn_bytes / 1e6, f.softmax / 1e6))
print(string.format("%.1f FLOP per byte, while the scores matmul does %.0f. Elementwise passes over", 
      f.softmax / (2 * nn_bytes), 2 * 1024 * 1024 * D / ((2 * 1024 * D + H * 1024 * 1024) * 4)))
print("N x N are limited by memory traffic, not arithmetic: fusing them pays (lesson 12).")

tt.trace.section("The cost table: counted vs formula")
print(string.format("%-19s %-16s %14s %14s %14s", "step", "formula", "N = 64", "N = 256", "N = 1024"))
local totals = {}
for _, s in ipairs(steps) do
  local cells = {}
  for i, N in ipairs(Ns) do
    local got, want = measured(runs[N])[s], formula(N)[s]
    if got ~= want then
      error(string.format("%s at N=%d: counted %d FLOPs, formula says %d", s, N, got, want))
    end
    cells[i] = string.format("%14.0f", got)
    totals[N] = (totals[N] or 0) + got
  end
  print(string.format("%-19s %-16s %s", step_name[s], step_formula[s], table.concat(cells, " ")))
end
print(string.format("%-19s %-16s %14.0f %14.0f %14.0f", "total", "", totals[64], totals[256], totals[1024]))
print("Checked: for every step and every N the trace's count equals the formula.")
print("N x4 -> projections x4, but scores, softmax and aggregation x16.")
for _, s in ipairs{"scores", "softmax", "agg"} do
  if measured(runs[1024])[s] ~= 16 * measured(runs[256])[s] then error(s .. " should grow x16") end
end
if measured(runs[1024]).proj ~= 4 * measured(runs[256]).proj then error("proj should grow x4") end

tt.trace.section("FLOPs against N on a log-log plot")
print("Three more sizes, N = 32, 128 and 512 (trace paused), give six points a step.")
tt.trace.off()
for _, N in ipairs{32, 128, 512} do runs[N] = attention(tt.randn(1, N, D):named("B", "N", "D")) end
tt.trace.on()
local plotNs = {32, 64, 128, 256, 512, 1024}
local linear, quadratic, total = {}, {}, {}
for i, N in ipairs(plotNs) do
  local m, want = measured(runs[N]), formula(N)
  for _, s in ipairs(steps) do
    if m[s] ~= want[s] then error(string.format("%s at N=%d: counted %d FLOPs, formula says %d", s, N, m[s], want[s])) end
  end
  linear[i] = m.proj + m.out
  quadratic[i] = m.scores + m.softmax + m.agg
  total[i] = linear[i] + quadratic[i]
end
tt.plot({
  {name = "projections ~ N", x = plotNs, y = linear},
  {name = "scores+softmax+AV ~ N²", x = plotNs, y = quadratic},
  {name = "total", x = plotNs, y = total},
}, "images/10_flops.png", {
  title = "Attention FLOPs vs N (D = 64, H = 4)",
  xtitle = "N (tokens)", ytitle = "FLOPs", xlog = true, ylog = true })
-- slope between two points on log-log axes: how many decades y rises per decade of N
local function slope(y, i, j) return math.log(y[j] / y[i]) / math.log(plotNs[j] / plotNs[i]) end
local n = #plotNs
print("On log-log axes a cost proportional to N^k is a straight line of slope k")
print("(log y = k log N + constant). The slopes of the counted FLOPs, N = 32 to 1024:")
print(string.format("  projections %.3f (cost grows as N), N x N steps %.3f (cost grows as N^2),",
      slope(linear, 1, n), slope(quadratic, 1, n)))
for i = 1, n - 1 do
  if math.abs(slope(linear, i, i + 1) - 1) > 1e-9 or math.abs(slope(quadratic, i, i + 1) - 2) > 1e-9 then
    error("every segment should have slope 1 (projections) and 2 (N x N steps)")
  end
end
local bends = {}
for i = 1, n - 1 do
  bends[i] = string.format("%.2f", slope(total, i, i + 1))
  if i > 1 and slope(total, i, i + 1) <= slope(total, i - 1, i) then error("the total's slope should grow") end
end
print("  and the total bends from one to the other: its slope per doubling of N is")
print("  " .. table.concat(bends, ", ") .. ". The two straight lines cross where the N^2 part")
print("  takes over (next section).")
print("Checked: every segment has slope 1 or 2 to 1e-9; the total's slope grows.")
print("Figure: " .. tt.figure_path("images/10_flops.png") .. " (FLOPs vs N, log-log)")

tt.trace.section("Where does N^2 take over?")
print("Linear in N:    projections        6 N D^2 + 2 N D^2          = 8 N D^2")
print("Quadratic in N: scores, softmax, AV 4 N^2 D + H N^2 + 5 H N^2   = N^2 (4 D + 6 H)")
local crossover = 8 * D * D / (4 * D + 6 * H)
print(string.format("They are equal at N = 8 D^2 / (4 D + 6 H) = %.1f for D = %d, H = %d.", crossover, D, H))
print("Roughly N = 2D: below it the projections cost more; above it the N x N part")
print("dominates, and it keeps growing 4x per doubling. (In a full transformer block")
print("the feed-forward layer adds about 16 N D^2 more linear work, which moves the")
print("crossover to about N = 6D.)")
for _, N in ipairs(Ns) do
  local m = measured(runs[N])
  local lin, quad = m.proj + m.out, m.scores + m.softmax + m.agg
  print(string.format("  N = %4d: linear part %6.2f MFLOP, quadratic part %7.2f MFLOP  -> %s",
        N, lin / 1e6, quad / 1e6, quad > lin and "N^2 dominates" or "projections dominate"))
  if (quad > lin) ~= (N > crossover) then error("the crossover formula disagrees with the counts") end
end
print("Checked: the side of the crossover predicts which part is bigger at every N.")

tt.trace.section("The N x N memory")
print("FLOPs are one cost; memory is another. The scores and the weights are")
print("[B, H, N, N] each, while Q, K, V and the output are only [B, N, D].")
print(string.format("%8s %16s %16s", "N", "scores [H,N,N]", "Q [N,D]"))
for _, N in ipairs(Ns) do
  local sb, qb = runs[N].scores:numel() * 4, runs[N].q:numel() * 4
  print(string.format("%8d %13.2f MiB %13.3f MiB", N, sb / 2^20, qb / 2^20))
  if sb ~= H * N * N * 4 then error("scores should take H*N*N*4 bytes") end
end
for _, N in ipairs{8192, 32768} do
  print(string.format("%8d %13.0f MiB %13.3f MiB   (computed, not run)", N, H * N * N * 4 / 2^20, N * D * 4 / 2^20))
end
print("At 32k tokens one layer's scores alone would take 16 GiB with only 4 heads.")
print("Keep apart: compute (FLOPs), activation memory (is N x N ever stored?),")
print("memory traffic (how often data moves between slow and fast memory), and the")
print("K/V cache kept for inference (lesson 09). FlashAttention (lesson 12) keeps the")
print("FLOPs but never stores N x N; linear attention changes the formula itself.")
