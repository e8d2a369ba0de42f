-- test_sdpa_options.lua — tt.sdpa's options bias, alibi, window, sinks and
-- dropout through the binding: each against the same attention written out
-- with ops (an explicit bias or band mask), their gradients (the bias's
-- summed over its broadcast dims) against those of the written-out form,
-- gradcheck, the trace's row, and no N x N buffer at N = 32768 with a window.
local T = dofile("tests/lua/check.lua")
local check, checkerror = T.check, T.checkerror
local ninf = -math.huge

-- attention written out: softmax(q k^T * scale + bias, hidden -inf) v, GQA by repeating k and v
local function explicit(q, k, v, scale, bias, keep)
  local G = q:shape()[q:dim() - 2] // k:shape()[k:dim() - 2]
  if G > 1 then k, v = k:repeat_interleave(G, k:dim() - 2), v:repeat_interleave(G, v:dim() - 2) end
  local s = q:matmul(k:mT()) * scale
  if bias then s = s + bias end
  if keep then s = s:masked_fill(~keep, ninf) end
  return s:softmax(-1):matmul(v)
end

-- the band: query i (at position i + nk - nq) sees the last w keys up to itself, and the first s keys
local function band(nq, nk, w, s)
  local t = {}
  for i = 1, nq do
    t[i] = {}
    local pos = i + nk - nq
    for j = 1, nk do t[i][j] = j <= pos and (pos - j < w or j <= (s or 0)) end
  end
  return tt.tensor(t)
end

-- Press et al.'s slopes, as their code lists them, and the bias -m |i + off - j| per head
local function slopes(H)
  local function pow2(n)
    local r = {}
    for h = 1, n do r[h] = 2 ^ (-8 * h / n) end
    return r
  end
  local n = 1
  while n * 2 <= H do n = n * 2 end
  local r, more = pow2(n), pow2(2 * n)
  for h = 1, H - n do r[n + h] = more[2 * h - 1] end
  return r
end
local function alibi_bias(H, nq, nk)
  local m, t = slopes(H), {}
  for h = 1, H do
    t[h] = {}
    for i = 1, nq do
      t[h][i] = {}
      for j = 1, nk do t[h][i][j] = -m[h] * math.abs(i + nk - nq - j) end
    end
  end
  return tt.tensor(t)
end

tt.manual_seed(11)
local q, k, v = tt.randn(2, 4, 7, 8), tt.randn(2, 2, 9, 8), tt.randn(2, 2, 9, 5)
local sc = 1 / math.sqrt(8)

-- ===== bias =====
for _, shape in ipairs({{2, 4, 7, 9}, {4, 7, 9}, {1, 4, 1, 9}, {9}, {7, 1}}) do
  local b = tt.randn(table.unpack(shape))
  tt.assert_close(tt.sdpa(q, k, v, {bias = b}), explicit(q, k, v, sc, b), 1e-5, 1e-5,
                  "bias [" .. table.concat(shape, ",") .. "]")
end
local b = tt.randn(4, 7, 9)
local cm = tt.causal_mask(7, 9)
tt.assert_close(tt.sdpa(q, k, v, {bias = b, causal = true, mask = cm}), explicit(q, k, v, sc, b, cm), 1e-5, 1e-5,
                "bias with causal and a mask")
-- a -inf bias is a score, not a hidden key: a row of them is NaN, as PyTorch's float mask
local nb = tt.zeros(7, 9):masked_fill(~tt.causal_mask(7, 9), ninf)
tt.assert_close(tt.sdpa(q, k, v, {bias = nb}), tt.sdpa(q, k, v, {causal = true}), 1e-6, 1e-6,
                "a -inf bias where causal hides equals causal")

-- the gradients: q, k, v and the bias (summed over batch and queries for [1, 4, 1, 9])
local function grads(fused, shape)
  tt.manual_seed(5)
  local x, y, z = tt.randn(2, 4, 7, 8):requires_grad_(), tt.randn(2, 2, 9, 8):requires_grad_(),
                  tt.randn(2, 2, 9, 5):requires_grad_()
  local bb = tt.randn(table.unpack(shape)):requires_grad_()
  local w = tt.randn(2, 4, 7, 5)
  local out = fused and tt.sdpa(x, y, z, {bias = bb, causal = true})
                    or explicit(x, y, z, sc, bb, tt.causal_mask(7, 9))
  ;(out * w):sum():backward()
  return {x.grad, y.grad, z.grad, bb.grad}
end
for _, shape in ipairs({{2, 4, 7, 9}, {1, 4, 1, 9}, {9}}) do
  local f, e = grads(true, shape), grads(false, shape)
  for i, name in ipairs({"dq", "dk", "dv", "dbias"}) do
    tt.assert_close(f[i], e[i], 1e-4, 1e-5, "bias [" .. table.concat(shape, ",") .. "] causal: " .. name)
  end
  check("d bias has the bias's shape", table.concat(f[4]:shape(), ",") == table.concat(shape, ","))
end

-- ===== alibi =====
for _, H in ipairs({4, 6, 1}) do
  local qa, ka, va = tt.randn(H, 6, 4), tt.randn(H, 10, 4), tt.randn(H, 10, 3)
  tt.assert_close(tt.sdpa(qa, ka, va, {alibi = true, causal = true}),
                  explicit(qa, ka, va, 0.5, alibi_bias(H, 6, 10), tt.causal_mask(6, 10)), 1e-5, 1e-5,
                  "alibi causal, H = " .. H)
  tt.assert_close(tt.sdpa(qa, ka, va, {alibi = true}), explicit(qa, ka, va, 0.5, alibi_bias(H, 6, 10)), 1e-5, 1e-5,
                  "alibi both ways |i - j|, H = " .. H)
end
check("alibi slopes of 8 heads: 1/2 ... 1/256",
      math.abs(slopes(8)[1] - 0.5) < 1e-12 and math.abs(slopes(8)[8] - 1 / 256) < 1e-12)

-- ===== window and sinks =====
local qw, kw, vw = tt.randn(2, 2, 40, 8), tt.randn(2, 1, 50, 8), tt.randn(2, 1, 50, 8)
for _, ws in ipairs({{1, 0}, {3, 0}, {16, 0}, {50, 0}, {200, 0}, {4, 2}, {3, 10}, {7, 1}}) do
  local w, s = ws[1], ws[2]
  local opts = {window = w, sinks = s > 0 and s or nil}
  tt.assert_close(tt.sdpa(qw, kw, vw, opts), explicit(qw, kw, vw, sc, nil, band(40, 50, w, s)), 1e-5, 1e-5,
                  ("window %d sinks %d"):format(w, s))
  tt.assert_close(tt.sdpa(qw, kw, vw, opts), tt.sdpa(qw, kw, vw, {mask = band(40, 50, w, s)}), 1e-5, 1e-5,
                  ("window %d sinks %d equals its band mask"):format(w, s))
end
tt.assert_close(tt.sdpa(qw, kw, vw, {window = 50}), tt.sdpa(qw, kw, vw, {causal = true}), 1e-6, 1e-6,
                "a window as long as the keys is causal")
-- window with a mask and a bias at once
local padt = {}
for j = 1, 50 do padt[j] = j ~= 2 and j ~= 45 end   -- two padded keys, one a sink, one in the last band
local pad = tt.tensor(padt)
local bw = tt.randn(2, 1, 40, 50)
tt.assert_close(tt.sdpa(qw, kw, vw, {window = 6, sinks = 2, mask = pad, bias = bw}),
                explicit(qw, kw, vw, sc, bw, (band(40, 50, 6, 2) & pad)), 1e-5, 1e-5,
                "window, sinks, a mask and a bias together (GQA)")

-- gradients of window + sinks against the explicit band
local function wgrads(fused)
  tt.manual_seed(9)
  local x, y, z = tt.randn(2, 30, 4):requires_grad_(), tt.randn(2, 30, 4):requires_grad_(),
                  tt.randn(2, 30, 4):requires_grad_()
  local out = fused and tt.sdpa(x, y, z, {window = 5, sinks = 3}) or explicit(x, y, z, 0.5, nil, band(30, 30, 5, 3))
  ;(out * tt.randn(2, 30, 4)):sum():backward()
  return {x.grad, y.grad, z.grad}
end
local fw, ew = wgrads(true), wgrads(false)
for i, name in ipairs({"dq", "dk", "dv"}) do tt.assert_close(fw[i], ew[i], 1e-4, 1e-5, "window 5 sinks 3: " .. name) end

-- ===== dropout =====
local qd, kd, vd = tt.randn(2, 3, 20, 8), tt.randn(2, 3, 30, 8), tt.randn(2, 3, 30, 8)
tt.assert_close(tt.sdpa(qd, kd, vd, {dropout = 0}), tt.sdpa(qd, kd, vd), 0, 0, "dropout 0 is the identity")
tt.manual_seed(4)
local d1, w1 = tt.sdpa(qd, kd, vd, {dropout = 0.25, weights = true})
tt.manual_seed(4)
local d2 = tt.sdpa(qd, kd, vd, {dropout = 0.25})
tt.assert_close(d1, d2, 0, 0, "dropout: the same seed, the same draws")
check("dropout: another draw differs", not tt.allclose(tt.sdpa(qd, kd, vd, {dropout = 0.25}), d1))
tt.assert_close(w1:matmul(vd), d1, 1e-5, 1e-5, "dropout: the weights returned are those V is multiplied by")
local _, w0 = tt.sdpa(qd, kd, vd, {weights = true})
local kept = (w1 / w0):masked_fill(w1:eq(0), 0)
check("dropout: a kept weight is scaled by 1/(1-p)", (kept - 1 / 0.75):abs():masked_fill(w1:eq(0), 0):max():item() < 1e-4)
local zeros = w1:eq(0):float():mean():item()
check(("dropout: about p of the weights dropped (%.3f of 3600)"):format(zeros), math.abs(zeros - 0.25) < 0.03)
-- rows sum to 1/(1-p) in expectation: the mean over 120 rows
check("dropout: rows sum to 1 on average", math.abs(w1:sum(-1):mean():item() - 1) < 0.05)
-- backward: the same mask (gradcheck reseeds inside fn)

-- ===== gradcheck =====
local function leaf(t) return t:requires_grad_() end
tt.manual_seed(2)
local gq, gk, gv = leaf(tt.randn(2, 5, 3)), leaf(tt.randn(1, 7, 3)), leaf(tt.randn(1, 7, 2))
check("gradcheck bias [2,5,7] and [7]", tt.gradcheck(function(x, y, z, bb, bk)
  return tt.sdpa(x, y, z, {bias = bb + bk}) end, {gq, gk, gv, leaf(tt.randn(2, 5, 7)), leaf(tt.randn(7))}))
check("gradcheck alibi causal GQA", tt.gradcheck(function(x, y, z)
  return tt.sdpa(x, y, z, {alibi = true, causal = true}) end, {gq, gk, gv}))
check("gradcheck window 2 sinks 1", tt.gradcheck(function(x, y, z)
  return tt.sdpa(x, y, z, {window = 2, sinks = 1}) end, {gq, gk, gv}))
check("gradcheck dropout 0.3 (reseeded)", tt.gradcheck(function(x, y, z, bb)
  tt.manual_seed(8)
  return tt.sdpa(x, y, z, {dropout = 0.3, bias = bb, window = 3}) end, {gq, gk, gv, leaf(tt.randn(5, 7))}))

-- ===== errors =====
checkerror("sdpa: bias [4,7,8] does not broadcast to the scores [2,4,7,9] (dim -1: 8 vs 9)", function() tt.sdpa(q, k, v, {bias = tt.randn(4, 7, 8)}) end)
checkerror("a bool tensor is a mask", function() tt.sdpa(q, k, v, {bias = cm}) end)
checkerror("sdpa: bias must be a float tensor, got number", function() tt.sdpa(q, k, v, {bias = 1}) end)
checkerror("sdpa: alibi and bias both given", function() tt.sdpa(q, k, v, {bias = b, alibi = true}) end)
checkerror("alibi", function() tt.sdpa(q, k, v, {alibi = 1}) end)
checkerror("sdpa: window must be at least 1", function() tt.sdpa(q, k, v, {window = 0}) end)
checkerror("got -3", function() tt.sdpa(q, k, v, {window = -3}) end)
checkerror("sdpa: window must be a whole number", function() tt.sdpa(q, k, v, {window = 2.5}) end)
checkerror("got string", function() tt.sdpa(q, k, v, {window = "4"}) end)
checkerror("sdpa: sinks must be at least 0", function() tt.sdpa(q, k, v, {window = 3, sinks = -1}) end)
checkerror("sdpa: sinks = 4 needs a window", function() tt.sdpa(q, k, v, {sinks = 4}) end)
checkerror("sdpa: dropout must be in [0, 1)", function() tt.sdpa(q, k, v, {dropout = 1}) end)
checkerror("got -0.1", function() tt.sdpa(q, k, v, {dropout = -0.1}) end)
checkerror("sdpa: dropout must be in [0, 1)", function() tt.sdpa(q, k, v, {dropout = 0 / 0}) end)
checkerror("dropout", function() tt.sdpa(q, k, v, {dropout = "0.1"}) end)

-- ===== N = 32768 with a window: no N x N buffer (4 GiB) under a 32 MiB cap =====
-- Forward and fused backward, GQA (2 query heads on 1 K/V head); the tensors
-- the script holds (q, k, v, o and their gradients, [.., 32768, 16]) take
-- about 20 MiB. The control: the same call asking for the weights needs the
-- [2, 32768, 32768] weights and must hit the cap, so the cap does bite.
local dir = T.tmpdir()
local script = dir .. "/long.lua"
local f = assert(io.open(script, "w"))
f:write([[
local N = 32768
local q = tt.randn(2, N, 16):requires_grad_()
local k, v = tt.randn(1, N, 16):requires_grad_(), tt.randn(1, N, 16):requires_grad_()
local o = tt.sdpa(q, k, v, {window = 64, sinks = 4})
-- the last query of head 2 against its band and the sinks written out
local ks = tt.cat({k:narrow(2, 1, 4), k:narrow(2, N - 63, 64)}, 2):detach()
local vs = tt.cat({v:narrow(2, 1, 4), v:narrow(2, N - 63, 64)}, 2):detach()
local s = (q:detach():narrow(1, 2, 1):narrow(2, N, 1):matmul(ks:mT()) * 0.25):softmax(-1):matmul(vs)
tt.assert_close(o:detach():narrow(1, 2, 1):narrow(2, N, 1), s, 1e-5, 1e-5, "the last row")
o:sum():backward()
-- every row of dq and dv finite, and a key in the middle (in 64 queries' bands) has a gradient
for _, g in ipairs({q.grad, k.grad, v.grad}) do
  if g:ne(g):any():item() or g:abs():max():item() == math.huge then error("a gradient is not finite") end
end
if not (v.grad:narrow(2, N // 2, 1):abs():sum():item() > 0) then error("the middle key has no gradient") end
print("ok")
if arg[1] == "weights" then tt.sdpa(q, k, v, {window = 64, weights = true}) end
]])
f:close()
local out, err, code = T.run(dir, "-q --max-memory 32M " .. script)
check("window 64 at N = 32768, GQA, forward and backward under a 32M cap: runs, the last row right (" .. err .. ")",
      code == 0 and out == "ok\n")
out, err, code = T.run(dir, "-q --max-memory 32M " .. script .. " weights")
check("control: asking for the N x N weights at N = 32768 hits the 32M cap (" .. err .. ")",
      code == 1 and err:find("sdpa", 1, true) ~= nil and err:find("[2,32768,32768]", 1, true) ~= nil
      and err:find("memory cap", 1, true) ~= nil)
-- ===== the trace's rows show the options =====
f = assert(io.open(script, "w"))
f:write([[
local q = tt.randn(2, 6, 4):requires_grad_()
local o = tt.sdpa(q, q, q, {window = 3, sinks = 1, alibi = true, dropout = 0.1})
local p = tt.sdpa(q, q, q, {bias = tt.zeros(6, 6), causal = true})
o:sum():backward()
]])
f:close()
out, err, code = T.run(dir, script)
check("trace: window, sinks, alibi and dropout on the row (" .. err .. ")",
      code == 0 and out:find("(causal, scale=0.5, window=3, sinks=1, alibi, dropout=0.1)", 1, true) ~= nil)
check("trace: the bias is an input, and named on the row",
      out:find("[2,6,4], [2,6,4], [2,6,4], [6,6] (causal, scale=0.5, bias)", 1, true) ~= nil)
-- FLOPs: a window of 3 with one sink over 6 keys sees 1 + 2 + 3 + 4 + 4 + 4 = 18 of the
-- 21 causal pairs per head: 2 FLOPs * 2 heads * 18 pairs * (Dh + Dv = 8)
check("trace: the window's FLOPs count its pairs only (576)", out:find("-> [2,6,4]   576 FLOP", 1, true) ~= nil)
os.remove(script)
os.remove(dir .. "/out")
os.remove(dir .. "/err")
os.remove(dir)

T.report()
