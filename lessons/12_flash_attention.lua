-- 12_flash_attention.lua — exact attention without the N x N matrix.
--
-- Standard attention stores the whole [N, N] score matrix, then the whole
-- weight matrix. FlashAttention computes the SAME result tile by tile: it
-- walks over blocks of keys and keeps, for every query, only a running max m,
-- a running sum l and a rescaled output accumulator (the "online softmax").
-- This lesson writes that algorithm in Lua with narrow views, checks it
-- against the standard formula, then checks tt.sdpa's fused C kernel, which
-- does the same, compares peak memory, and ends with how to read other
-- attention variants.
--
-- Run:  ./tensortrace lessons/12_flash_attention.lua      (trace of every shape)
--       ./tensortrace -q lessons/12_flash_attention.lua   (narrative only)
-- Figure: images/12_tiles.png

tt.manual_seed(0)

local B, H, N, Dh = 1, 2, 16, 8
local Br, Bc = 4, 4                   -- query rows and key columns per tile
local scale = 1 / math.sqrt(Dh)
tt.trace.section("The standard way: the whole N x N matrix at once")
-- Plain [B, H, N, Dh] tensors, labelled but without dim names, so the tile
-- arithmetic below (narrow, keepdim max, broadcasts) reads as plain shapes.
local q = tt.randn(B, H, N, Dh):label("Q")
local k = tt.randn(B, H, N, Dh):label("K")
local v = tt.randn(B, H, N, Dh):label("V")
local scores = (q:matmul(k:mT()) * scale):masked_fill(~tt.causal_mask(N), -math.huge):label("scores")
local weights = scores:softmax(-1):label("weights")
local reference = weights:matmul(v):label("reference output")
print(string.format("Causal attention, N = %d: scores and weights are [%d, %d] per head.", N, N, N))

tt.trace.section("The idea: softmax one block of keys at a time")
print("softmax needs the row max and the row sum, which seem to need the whole row.")
print("The trick: keep a running max m and a running sum l. When a new block of")
print("scores s arrives, m_new = max(m, max(s)); everything summed so far was")
print("computed relative to the old max, so it is rescaled by alpha = exp(m - m_new):")
print("    l   = alpha * l   + sum(exp(s - m_new))")
print("    acc = alpha * acc + exp(s - m_new) @ V_block")
print("After the last block, output = acc / l. Every step is exact algebra: no")
print("approximation, only float rounding.")

-- Online-softmax attention over tiles. Returns the output and a table per
-- (query tile, key tile): 1 = full tile, 0.5 = diagonal tile (masked inside),
-- 0 = skipped (all its keys are in the future of all its queries).
local function flash(q_, k_, v_, trace_tile)
  local nq, nk = q_:size(3), k_:size(3)
  local out_tiles, done = {}, {}
  for i0 = 1, nq, Br do
    local it = (i0 - 1) // Br + 1
    done[it] = {}
    local show = it == trace_tile           -- trace one query tile, not all of them
    if not show then tt.trace.off() end
    local qi = q_:narrow(3, i0, Br):label("Q tile")                     -- a view, no copy
    local m = tt.full({B, H, Br, 1}, -math.huge):label("m (running max)")
    local l = tt.zeros(B, H, Br, 1):label("l (running sum)")
    local acc = tt.zeros(B, H, Br, Dh):label("acc")
    for j0 = 1, nk, Bc do
      local jt = (j0 - 1) // Bc + 1
      if j0 > i0 + Br - 1 then                -- every key of this tile is after every query
        done[it][jt] = 0                        -- causal: skip the tile entirely
      else
        local kj = k_:narrow(3, j0, Bc):label("K tile")
        local vj = v_:narrow(3, j0, Bc):label("V tile")
        local s = (qi:matmul(kj:mT()) * scale):label("s (tile scores)")            -- [B,H,Br,Bc]
        if j0 + Bc - 1 <= i0 then               -- every key at or before every query:
          done[it][jt] = 1                      -- a full tile, no mask needed
        else                                    -- on the diagonal: mask inside the tile
          done[it][jt] = 0.5
          local allowed = tt.causal_mask(nq, nk):narrow(1, i0, Br):narrow(2, j0, Bc)
          s = s:masked_fill(~allowed, -math.huge)
        end
        local m_new = m:maximum(s:max(-1, true)):label("m_new")
        local alpha = (m - m_new):exp():label("alpha")
        local p = (s - m_new):exp():label("p")
        l = (alpha * l + p:sum(-1, true)):label("l (running sum)")
        acc = (alpha * acc + p:matmul(vj)):label("acc")
        m = m_new:label("m (running max)")      -- carried to the next key tile under its own name
      end
    end
    out_tiles[it] = (acc / l):label("output tile " .. it)
    if not show then tt.trace.on() end
  end
  return tt.cat(out_tiles, 3), done
end

tt.trace.section("Online softmax in Lua, tile by tile (query tile 2 traced)")
print(string.format("Tiles of %d queries x %d keys. Query tile 2 (queries 5-8) reads key tile 1", Br, Bc))
print("in full (no mask needed), key tile 2 with the causal mask inside the tile;")
print("key tiles 3 and 4 lie entirely in its future and are skipped.")
local out, done = flash(q, k, v, 2)
out:label("tiled output")
tt.assert_close(out, reference, 1e-5, 1e-5, "tiled online softmax == standard attention")
print("Checked: the tiled result equals the standard one, to float32 rounding.")

local full, diag, total = 0, 0, 0
for it = 1, #done do
  for jt = 1, #done[it] do
    total = total + 1
    if done[it][jt] == 1 then full = full + 1 elseif done[it][jt] == 0.5 then diag = diag + 1 end
  end
end
print(string.format("Causal skipping: of %d tiles, %d are full, %d sit on the diagonal and need", total, full, diag))
print(string.format("the mask, and %d are never touched.", total - full - diag))
if full ~= 6 or diag ~= 4 or total ~= 16 then error("16 tiles: 6 below the diagonal, 4 on it") end
-- The figure shows every (query, key) element: what the tiled loop did with it.
local COMPUTED, MASKED, SKIPPED = 1, 2, 3
local what = {}
for i = 1, N do
  what[i] = {}
  for j = 1, N do
    local tile = done[(i - 1) // Br + 1][(j - 1) // Bc + 1]
    what[i][j] = tile == 0 and SKIPPED or (tile == 0.5 and j > i) and MASKED or COMPUTED
  end
end
tt.heatmap(tt.tensor(what), "images/12_tiles.png", {
  title = string.format("Causal attention in %dx%d tiles: what happens to each score", Br, Bc),
  categories = {"computed", "masked (diagonal tile)", "skipped (future tile)"},
  tiles = {Br, Bc}, annotate = false, xtitle = "key", ytitle = "query" })
print("Figure: " .. tt.figure_path("images/12_tiles.png") .. " (every query x key element; thick lines: the tiles)")

tt.trace.section("Watching one row: query 8, head 1")
print("Key tile 1 gives a first max and sum (alpha = exp(-inf) = 0: nothing to rescale")
print("yet). Key tile 2 raises the max, so the old sum is rescaled by")
print("alpha = exp(m_old - m_new) before the new terms are added.")
local row = scores:totable()[1][1][8]   -- query 8's 16 scores (keys 9..16 are -inf)
local m_run, l_run = -math.huge, 0
for t = 1, 2 do
  local mx = -math.huge
  for j = (t - 1) * Bc + 1, t * Bc do mx = math.max(mx, row[j]) end
  local m_new = math.max(m_run, mx)
  local alpha = math.exp(m_run - m_new)
  local add = 0
  for j = (t - 1) * Bc + 1, t * Bc do add = add + math.exp(row[j] - m_new) end
  l_run = alpha * l_run + add
  print(string.format("  after key tile %d: m = %7.4f   alpha = %.4f   l = %.4f", t, m_new, alpha, l_run))
  m_run = m_new
end
local full_sum = 0
for j = 1, 8 do full_sum = full_sum + math.exp(row[j] - m_run) end
print(string.format("  softmax over all 8 visible keys at once: max %7.4f, sum %.4f", m_run, full_sum))
if math.abs(full_sum - l_run) > 1e-5 * full_sum then error("the running sum should equal the full sum") end
print("Checked: the running max and sum equal the max and sum of the whole row.")

tt.trace.section("tt.sdpa does the same in C")
print("tt.sdpa is a fused kernel built on this algorithm: it never stores the N x N")
print("matrix (unless you ask for the weights). Same inputs, one op in the trace:")
local fused = tt.sdpa(q, k, v, {causal = true}):label("sdpa output")
tt.assert_close(fused, reference, 1e-5, 1e-5, "tt.sdpa == standard attention")
tt.assert_close(fused, out, 1e-5, 1e-5, "tt.sdpa == our tiled Lua version")
print("Checked: tt.sdpa, the Lua tiles and the standard formula all agree.")

tt.trace.section("Peak memory: N x N against O(N * Dh)")
print("At a longer sequence (N = 1024, 2 heads of 64) we let the trace measure the")
print("largest tensor each way. First the standard formula, then tt.sdpa.")
local N2, H2, Dh2 = 1024, 2, 64
tt.trace.off()
local q2, k2, v2 = tt.randn(1, H2, N2, Dh2), tt.randn(1, H2, N2, Dh2), tt.randn(1, H2, N2, Dh2)
tt.trace.on()
tt.trace.reset()
local s2 = (q2:matmul(k2:mT()) / math.sqrt(Dh2)):masked_fill(~tt.causal_mask(N2), -math.huge)
local ref2 = s2:softmax(-1):matmul(v2)
local standard_counts = tt.trace.summary()
tt.trace.reset()
local fused2 = tt.sdpa(q2, k2, v2, {causal = true})
local fused_counts = tt.trace.summary()
local flop_ratio = fused_counts.sdpa.flops / standard_counts.matmul.flops
tt.assert_close(fused2, ref2, 1e-4, 1e-5, "sdpa == standard at N = 1024")
local nn_bytes = s2:numel() * 4
local out_bytes = fused2:numel() * 4
-- the running state per query row: m and l (1 number each) and acc (Dh numbers)
local state_bytes = H2 * N2 * (2 + Dh2) * 4
print(string.format("  standard: scores [1,%d,%d,%d] = %.2f MB, and the weights as much again", H2, N2, N2, nn_bytes / 1e6))
print(string.format("  flash:    running state m, l, acc = %.2f MB; output [1,%d,%d,%d] = %.2f MB",
      state_bytes / 1e6, H2, N2, Dh2, out_bytes / 1e6))
print(string.format("  ratio N x N / state = %.1f, and it grows linearly with N.", nn_bytes / state_bytes))
if not (nn_bytes > 10 * state_bytes) then error("the N x N matrix should dwarf the running state") end
print(string.format("Compare the two summaries: the standard path writes and re-reads %.2f MB", nn_bytes / 1e6))
print("several times (div, masked_fill, softmax, matmul); sdpa moves only its inputs")
print(string.format("and output. Its FLOPs are %.3f of the two matmuls': the trace counts only", flop_ratio))
print("the (query, key) pairs the causal mask leaves visible, N(N+1)/2 of N^2, and like")
print("our Lua version the kernel skips key tiles that lie entirely in the future.")
print("Without a mask the FLOPs would be the same: FlashAttention saves memory and")
print("memory traffic, and still computes exact attention, not an approximation.")
if math.abs(flop_ratio - 0.5) > 0.01 then error("causal sdpa should do about half the FLOPs") end

tt.trace.section("How to read any attention variant")
print("Ask: where do Q, K, V come from? Which keys may each query read? Is an N x N")
print("score matrix still built? Is it still softmax of dot products? How is history")
print("kept when decoding? What is saved: FLOPs, activation memory, K/V cache, or")
print("memory traffic? Is the result exact, a controlled approximation, or a new")
print("definition of attention? With those questions the common names sort out:")
print("")
print(string.format("  %-17s %-47s %-21s %s", "variant", "what it changes", "N x N stored?", "result"))
local variants = {
  {"Sparse attention", "the connection graph: which keys a query reads", "only allowed pairs", "new definition"},
  {"Linear attention", "the algebra / similarity: phi(Q) (phi(K)^T V)", "no", "new definition"},
  {"FlashAttention", "how exact attention is executed (tiles)", "no, tiles only", "exact"},
  {"MQA / GQA", "how query heads map to K/V heads", "up to the kernel", "new model, smaller cache"},
  {"Cross-attention", "where Q and K/V come from", "up to the kernel", "same formula"},
}
for _, r in ipairs(variants) do
  print(string.format("  %-17s %-47s %-21s %s", r[1], r[2], r[3], r[4]))
end
print("")
print("MQA/GQA and cross-attention say nothing about how the scores are computed:")
print("the step-by-step formula stores them ([Nq, Nk] per query head), a fused")
print("kernel does not (lesson 07 runs GQA through tt.sdpa without them).")
print("FlashAttention and linear attention are both 'faster attention', but one runs")
print("the same math differently and the other changes the math: not the same kind.")
print("Lesson 21 answers all eight questions for every variant of the course.")
