-- train.lua — `make bench`'s training step: one AdamW step (forward,
-- backward, step) of the lesson-sized model next to the same model in
-- PyTorch (tests/bench/bench_torch.py train), at 1 and 2 threads.
-- Model: vocab 64, D 64, token + position embedding, 2 layers of causal
-- multi-head attention (4 heads, Q/K/V/O Linear without bias, residual),
-- unembedding, cross-entropy over the next tokens; batch 32, N 64.
-- Run: ./tensortrace -q tests/bench/train.lua [train] [quick]
-- (no section named, or train: the comparison; only other sections: nothing;
-- quick: one short round, no PyTorch).

local TARGET = 3.0                     -- at least 3x PyTorch 1.13
local BUDGET = 0.7                     -- seconds of timed steps a side, a round
local ROUNDS = 3                       -- ours and torch take turns: a noisy spell hits both
local WARMUP = 30                      -- untimed steps first, both sides (bench_torch.py too): the
                                       -- steady state of a long run, not its first collection cycles

local want, quick = {}, false
for _, a in ipairs(arg) do if a == "quick" then quick = true else want[a] = true end end
if quick then BUDGET, ROUNDS = 0.1, 1 end

-- ===== the model and one step (what the child process times) =====

local V, D, L, H, B, N = 64, 64, 2, 4, 32, 64

local function model()
  tt.manual_seed(0)
  local m = {tok = tt.nn.Embedding(V, D), pos = tt.nn.Embedding(N, D), layers = {}}
  for i = 1, L do
    local lin = function() return tt.nn.Linear(D, D, {bias = false}) end
    m.layers[i] = {q = lin(), k = lin(), v = lin(), o = lin()}
  end
  m.unembed = tt.nn.Linear(D, V, {bias = false})
  local params = {m.tok.weight, m.pos.weight}
  for _, l in ipairs(m.layers) do
    for _, p in ipairs({l.q, l.k, l.v, l.o}) do params[#params + 1] = p.weight end
  end
  params[#params + 1] = m.unembed.weight
  return m, params
end

local function forward(m, ids, positions, targets)
  local x = m.tok(ids) + m.pos(positions)
  local function split(t) return t:view(B, N, H, D // H):transpose(2, 3) end
  for _, l in ipairs(m.layers) do
    local y = tt.sdpa(split(l.q(x)), split(l.k(x)), split(l.v(x)), {causal = true})
    x = x + l.o(y:transpose(2, 3):reshape(B, N, D))
  end
  return tt.cross_entropy(m.unembed(x):reshape(B * N, V), targets:reshape(B * N))
end

local lib = dofile((arg[0]:match("^(.*/)") or "./") .. "benchlib.lua")
local median_min_max, sh_quote, read_cmd, interpreter = lib.median_min_max, lib.sh_quote, lib.read_cmd, lib.interpreter

-- "train <med_ms> <min_ms> <max_ms> <loss>", as bench_torch.py prints it
local function child()
  tt.trace.off()
  local m, params = model()
  local opt = tt.optim.AdamW(params, {lr = 1e-3})
  local ids = tt.randint(1, V + 1, B, N + 1)
  local x_ids, targets = ids:narrow(2, 1, N), ids:narrow(2, 2, N)
  local positions = tt.arange(1, N + 1):long()
  local loss
  local function step()
    opt:zero_grad()
    loss = forward(m, x_ids, positions, targets)
    loss:backward()
    opt:step()
  end
  -- warm-up: tensors die a collection cycle at a time, and the buffers of
  -- the first cycles come from malloc as fresh pages (a step that faults
  -- them in takes 3-4x as long); after a few cycles the storage cache holds
  -- them all and no step faults (core/kernel/README.md, Memory)
  for _ = 1, WARMUP - 1 do step() end
  local t0 = tt.clock()
  step()
  local reps = math.max(3, math.min(9, math.floor(BUDGET / math.max(tt.clock() - t0, 1e-6))))
  local ts = {}
  for r = 1, reps do
    t0 = tt.clock()
    step()
    ts[r] = (tt.clock() - t0) * 1e3
  end
  local med, lo, hi = median_min_max(ts)
  print(string.format("train %.3f %.3f %.3f %.4f", med, lo, hi, loss:item()))
end

-- ===== the comparison =====

-- median, min, max (ms) from a "train ..." line, or nil
local function parse(out)
  local med, lo, hi = out:match("train (%S+) (%S+) (%S+)")
  if med then return tonumber(med), tonumber(lo), tonumber(hi) end
end

-- the median of the rounds' medians, the lowest min and the highest max
local function pool(rounds)
  local meds, lo, hi = {}, math.huge, 0
  for i, r in ipairs(rounds) do meds[i], lo, hi = r[1], math.min(lo, r[2]), math.max(hi, r[3]) end
  local med = median_min_max(meds)
  return med, string.format("%.1f (%.1f-%.1f) ms", med, lo, hi)
end

local function compare()
  local has_torch = not quick and os.execute("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1")
  print("\n== one AdamW training step (forward + backward + step): vocab 64, D 64, 2 layers x 4 heads,"
        .. "\n   batch 32, N 64 (ms: median of " .. ROUNDS .. " rounds' medians (min-max), ours and torch"
        .. "\n   taking turns; speed-up = torch / ours; target " .. string.format("%.0fx)", TARGET))
  print(string.format("  %-3s %-28s%-28s%-10s%s", "th", "ours", "torch (same model)", "speed-up", "verdict"))
  for th = 1, 2 do
    local ours, torch = {}, {}
    for r = 1, ROUNDS do
      local out = read_cmd(sh_quote(interpreter()) .. " -q --threads " .. th .. " " .. sh_quote(arg[0])
                           .. " child 2>&1")
      ours[r] = {parse(out)}
      if not ours[r][1] then error("train.lua: the child failed:\n" .. out) end
      if has_torch then
        torch[#torch + 1] = {parse(read_cmd("/usr/bin/python3 tests/bench/bench_torch.py " .. th .. " train "
                                            .. BUDGET .. " 2>&1"))}
        if not torch[#torch][1] then torch[#torch] = nil end
      end
    end
    local med, shown = pool(ours)
    local row = string.format("  %-3d %-28s", th, shown)
    if #torch > 0 then
      local tmed, tshown = pool(torch)
      local r = tmed / med
      row = row .. string.format("%-28s%-10s%s", tshown, string.format("%.1fx", r), r >= TARGET and "ok" or "UNDER")
    end
    print(row)
    io.stdout:flush()
  end
  if quick then print("  torch: left out (quick)")
  elseif not has_torch then print("  torch: not found (apt-get install python3-torch)") end
end

if want.child then child()
elseif not next(want) or want.train then compare() end
