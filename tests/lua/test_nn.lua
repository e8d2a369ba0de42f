-- test_nn.lua — tt.nn and tt.optim from Lua: parameters and their order,
-- LayerNorm and RMSNorm against a float64 reference (forward, and gradients
-- against central differences of that reference), small regressions
-- trained with SGD and AdamW, AdamW's first steps by hand, clip_grad_norm,
-- the one trace row a step, and every error a script can cause.
local T = dofile("tests/lua/check.lua")
local check, close, checkerror = T.check, T.close, T.checkerror

-- ===== parameters and named_parameters =====
local lin = tt.nn.Linear(4, 3)
local ps = lin:parameters()
check("Linear: 2 parameters", #ps == 2)
check("Linear: weight first, then bias", rawequal(ps[1], lin.weight) and rawequal(ps[2], lin.bias))
check("Linear: they require grad", lin.weight.requires_grad and lin.bias.requires_grad)
local np = lin:named_parameters()
check("named_parameters: {name, tensor} pairs in order",
      #np == 2 and np[1][1] == "weight" and rawequal(np[1][2], lin.weight) and np[2][1] == "bias"
      and rawequal(np[2][2], lin.bias))
local nobias = tt.nn.Linear(4, 3, {bias = false})
check("Linear without bias: weight only", #nobias:parameters() == 1 and nobias:named_parameters()[1][1] == "weight")
local ln = tt.nn.LayerNorm(5)
np = ln:named_parameters()
check("LayerNorm: weight, bias", #np == 2 and np[1][1] == "weight" and np[2][1] == "bias")
close("LayerNorm: weight ones", ln.weight, {1, 1, 1, 1, 1})
close("LayerNorm: bias zeros", ln.bias, {0, 0, 0, 0, 0})
check("LayerNorm: eps", ln.eps == 1e-5 and ln.normalized_shape == 5)
check("LayerNorm without bias", #tt.nn.LayerNorm(5, {bias = false}):parameters() == 1)
check("LayerNorm without affine: none", #tt.nn.LayerNorm(5, {elementwise_affine = false}):parameters() == 0)
local rms = tt.nn.RMSNorm(5)
np = rms:named_parameters()
check("RMSNorm: weight only", #np == 1 and np[1][1] == "weight")
check("RMSNorm: eps is float32's machine epsilon (PyTorch's eps=None)", rms.eps == 2.0 ^ -23)
check("RMSNorm: eps given", tt.nn.RMSNorm(5, {eps = 1e-6}).eps == 1e-6)
check("tostring", tostring(ln) == "LayerNorm(5, eps=1e-05, elementwise_affine=true, bias=true)"
      and tostring(rms):find("RMSNorm(5, eps=1.19209e-07", 1, true) ~= nil)

-- ===== LayerNorm, RMSNorm against a float64 reference =====
-- y = norm(x) * w (+ b) over the last dim, x a table of rows.
local function norm_ref(layer, x, w, b, eps)
  local y = {}
  for i, row in ipairs(x) do
    local n, mu, s = #row, 0, 0
    if layer then
      for _, v in ipairs(row) do mu = mu + v end
      mu = mu / n
    end
    for _, v in ipairs(row) do s = s + (v - mu) ^ 2 end
    local d = math.sqrt(s / n + eps)
    y[i] = {}
    for j, v in ipairs(row) do y[i][j] = (v - mu) / d * w[j] + (b and b[j] or 0) end
  end
  return y
end

-- sum(y * r): a loss whose gradient says something (sum(y) alone has none
-- through LayerNorm's x).
local function weighted(y, r)
  local s = 0
  for i = 1, #y do for j = 1, #y[i] do s = s + y[i][j] * r[i][j] end end
  return s
end

-- Central differences of f at every element of the table t (rows or a vector).
local function numgrad(f, t)
  local h, g = 1e-6, {}
  local function bump(i, j, d)
    if j then t[i][j] = t[i][j] + d else t[i] = t[i] + d end
  end
  for i = 1, #t do
    if type(t[i]) == "table" then
      g[i] = {}
      for j = 1, #t[i] do
        bump(i, j, h); local up = f(); bump(i, j, -2 * h); local down = f(); bump(i, j, h)
        g[i][j] = (up - down) / (2 * h)
      end
    else
      bump(i, nil, h); local up = f(); bump(i, nil, -2 * h); local down = f(); bump(i, nil, h)
      g[i] = (up - down) / (2 * h)
    end
  end
  return g
end

tt.manual_seed(7)
for _, case in ipairs({{"LayerNorm", true, tt.nn.LayerNorm(7)}, {"RMSNorm", false, tt.nn.RMSNorm(7, {eps = 1e-5})}}) do
  local name, layer, m = case[1], case[2], case[3]
  for round = 1, 2 do
    local x = (tt.randn(3, 7) * 2 + 0.5):requires_grad_()
    local r = tt.randn(3, 7)
    local y = m(x)
    local xt, rt, wt = x:totable(), r:totable(), m.weight:totable()
    local bt = layer and m.bias:totable() or nil
    close(name .. " forward, round " .. round, y, norm_ref(layer, xt, wt, bt, m.eps), 1e-5)
    for _, p in ipairs(m:parameters()) do p.grad = nil end
    ;(y * r):sum():backward()
    local f = function() return weighted(norm_ref(layer, xt, wt, bt, m.eps), rt) end
    close(name .. " grad of x vs central differences", x.grad, numgrad(f, xt), 2e-4)
    close(name .. " grad of weight", m.weight.grad, numgrad(f, wt), 2e-4)
    if layer then close(name .. " grad of bias", m.bias.grad, numgrad(f, bt), 2e-4) end
    -- a step moves the weights away from ones and zeros for round 2
    tt.optim.SGD(m:parameters(), {lr = 0.3}):step()
  end
end
-- a batch of rows in more dims: the norm is over the last dim only
local x3 = tt.randn(2, 3, 4)
local y3 = tt.nn.LayerNorm(4, {elementwise_affine = false})(x3)
close("LayerNorm over [2,3,4]", y3:reshape(6, 4), norm_ref(true, x3:reshape(6, 4):totable(), {1, 1, 1, 1}, nil, 1e-5))

-- ===== regressions: y = 2x + 1 =====
local xs = tt.arange(-8, 8):reshape(16, 1) / 8
local ys = xs * 2 + 1
local function fit(make_opt, steps)
  tt.manual_seed(3)
  local model = tt.nn.Linear(1, 1)
  local opt = make_opt(model:parameters())
  local loss
  for _ = 1, steps do
    opt:zero_grad()
    loss = ((model(xs) - ys) ^ 2):mean()
    loss:backward()
    opt:step()
  end
  return loss:item(), model
end
local loss, model = fit(function(p) return tt.optim.SGD(p, {lr = 0.2}) end, 150)
check("SGD fits y = 2x + 1 (loss " .. loss .. ")", loss < 1e-6)
close("SGD: weight 2, bias 1", tt.cat({model.weight:reshape(1), model.bias}, 1), {2, 1}, 1e-3)
loss = fit(function(p) return tt.optim.SGD(p, {lr = 0.05, momentum = 0.9}) end, 150)
check("SGD with momentum fits (loss " .. loss .. ")", loss < 1e-6)
loss, model = fit(function(p) return tt.optim.AdamW(p, {lr = 0.05, weight_decay = 0}) end, 300)
check("AdamW fits y = 2x + 1 (loss " .. loss .. ")", loss < 1e-4)
loss = fit(function(p) return tt.optim.AdamW(p, {lr = 0.05}) end, 300)
check("AdamW with its default weight decay gets close (loss " .. loss .. ")", loss < 1e-3)

-- ===== AdamW's first three steps by hand =====
-- A constant gradient g makes m_t = (1 - b1^t) g and v_t = (1 - b2^t) g^2,
-- so the bias-corrected step is lr * g / (|g| + eps) and each step is
-- p <- p (1 - lr wd) - lr g / (|g| + eps). With lr 0.1, wd 0.01, p0 = {1, 2},
-- g = {3, -0.5}:
--   p1 = {0.999 - 0.09999999967, 1.998 + 0.09999999800} = {0.89900000033, 2.09799999800}
--   p2 = {0.89810100033 - 0.09999999967, 2.09590199800 + 0.09999999800} = {0.79810100066, 2.19590199600}
--   p3 = {0.79730289966 - 0.09999999967, 2.19370609400 + 0.09999999800} = {0.69730289999, 2.29370609200}
local p = tt.tensor({1, 2}):requires_grad_()
local c = tt.tensor({3, -0.5})
local adam = tt.optim.AdamW({p}, {lr = 0.1, weight_decay = 0.01})
local want = {{0.89900000033, 2.09799999800}, {0.79810100066, 2.19590199600}, {0.69730289999, 2.29370609200}}
for s = 1, 3 do
  adam:zero_grad()
  ;(p * c):sum():backward()
  adam:step()
  close("AdamW step " .. s .. " by hand", p, want[s], 1e-6)
end
-- a gradient that changes (g = 2p), betas and decay away from the defaults,
-- against the update written out in float64
local q = tt.tensor({0.5, -1.5, 3}):requires_grad_()
local o2 = tt.optim.AdamW({q}, {lr = 0.05, betas = {0.8, 0.95}, eps = 1e-6, weight_decay = 0.1})
local qr, m, v = {0.5, -1.5, 3}, {0, 0, 0}, {0, 0, 0}
for t = 1, 4 do
  o2:zero_grad()
  ;(q * q):sum():backward()
  o2:step()
  for i = 1, 3 do
    local g = 2 * qr[i]
    qr[i] = qr[i] * (1 - 0.05 * 0.1)
    m[i] = 0.8 * m[i] + 0.2 * g
    v[i] = 0.95 * v[i] + 0.05 * g * g
    qr[i] = qr[i] - 0.05 / (1 - 0.8 ^ t) * m[i] / (math.sqrt(v[i]) / math.sqrt(1 - 0.95 ^ t) + 1e-6)
  end
  close("AdamW step " .. t .. " vs float64 (g = 2p)", q, qr, 1e-6)
end

-- parameters without a gradient are skipped; zero_grad sets grads to nil
local a, b = tt.tensor({1, 1}):requires_grad_(), tt.tensor({5}):requires_grad_()
local sgd = tt.optim.SGD({a, b}, {lr = 0.5})
;(a * 2):sum():backward()
sgd:step()
close("SGD: a moved", a, {0, 0})
close("SGD: b without grad unchanged", b, {5})
sgd:zero_grad()
check("zero_grad: grad nil", a.grad == nil and b.grad == nil)
check("opt.lr reads", sgd.lr == 0.5)
sgd.lr = 0.25
check("opt.lr = x sets it", sgd.lr == 0.25)
check("tostring(optimizer)", tostring(sgd) == "SGD(2 params, lr=0.25, momentum=0, weight_decay=0)")

-- ===== clip_grad_norm =====
local g1, g2 = tt.tensor({3, 0}):requires_grad_(), tt.tensor({{0, 4}}):requires_grad_()
local function set_grads()
  g1.grad = tt.tensor({3, 0})
  g2.grad = tt.tensor({{0, 4}})
end
set_grads()
check("norm returned, unchanged below max_norm", tt.nn.clip_grad_norm({g1, g2}, 10) == 5)
close("grads unchanged", g1.grad, {3, 0})
local n = tt.nn.clip_grad_norm({g1, g2, tt.zeros(1):requires_grad_()}, 1)
check("norm before clipping, a parameter without grad skipped", n == 5)
local k = 1 / (5 + 1e-6)
close("clipped to max_norm (PyTorch's 1e-6)", g1.grad, {3 * k, 0}, 1e-7)
close("clipped second", g2.grad, {{0, 4 * k}}, 1e-7)

-- ===== the trace: one row a step =====
local dir = T.tmpdir()
local script = T.write(dir, "train.lua", [[
local m = tt.nn.Linear(4, 3)
local opt = tt.optim.AdamW(m:parameters())
local x = tt.randn(2, 4)
for _ = 1, 3 do
  opt:zero_grad()
  m(x):sum():backward()
  opt:step()
end
local s = tt.optim.SGD(m:parameters(), {lr = 0.1, momentum = 0.9, weight_decay = 0.1})
s:step()
tt.nn.clip_grad_norm(m:parameters(), 0.01)
]])
local out, err, code = T.run(dir, script)
check("trace run ok " .. err, code == 0)
local _, rows = out:gsub("adamw%.step  2 params, 15 elements   210 FLOP", "")
check("one adamw row a step, with its FLOPs (14 an element)", rows == 3)
check("sgd row: 6 FLOPs an element with momentum and decay", out:find("sgd.step    2 params, 15 elements   90 FLOP", 1, true))
check("clip row", out:find("clip_grad_norm 2 grads, norm", 1, true) and out:find("> 0.01: scaled by", 1, true))

-- ===== errors =====
local w = tt.ones(3):requires_grad_()
checkerror({"SGD: parameter 2 [2] does not require grad", "hint: p:requires_grad_()"},
           tt.optim.SGD, {w, tt.ones(2)}, {lr = 0.1})
checkerror("AdamW: parameter 1 [3] is the result of MulBackward, not a leaf", tt.optim.AdamW, {w * 2})
checkerror("SGD: lr must be >= 0, got -0.1", tt.optim.SGD, {w}, {lr = -0.1})
checkerror("AdamW: lr must be >= 0", tt.optim.AdamW, {w}, {lr = -1})
checkerror("AdamW: betas[1] must be in [0, 1), got 1", tt.optim.AdamW, {w}, {betas = {1, 0.999}})
checkerror("AdamW: betas[2] must be in [0, 1), got -0.5", tt.optim.AdamW, {w}, {betas = {0.9, -0.5}})
checkerror("AdamW: option 'betas' must be a list of two numbers", tt.optim.AdamW, {w}, {betas = 0.9})
checkerror("AdamW: eps must be >= 0", tt.optim.AdamW, {w}, {eps = -1})
checkerror("SGD: momentum must be >= 0", tt.optim.SGD, {w}, {momentum = -0.9})
checkerror("SGD: weight_decay must be >= 0", tt.optim.SGD, {w}, {weight_decay = -1})
checkerror({"SGD: unknown option 'betas'", "lr, momentum, weight_decay"}, tt.optim.SGD, {w}, {betas = {0.9, 0.9}})
checkerror({"AdamW: unknown option 'momentum'"}, tt.optim.AdamW, {w}, {momentum = 0.9})
checkerror("AdamW: option 'lr' must be a number, not a string", tt.optim.AdamW, {w}, {lr = "fast"})
checkerror("SGD: params is an empty list; hint: pass m:parameters()", tt.optim.SGD, {})
checkerror({"SGD: params must be a list of tensors, got a tt.Linear", "hint: m:parameters()"}, tt.optim.SGD, tt.nn.Linear(2, 2))
checkerror("AdamW: params[2] is a number, not a tensor", tt.optim.AdamW, {w, 3})
checkerror("SGD: parameter 2 [3] is parameter 1 again", tt.optim.SGD, {w, w})
checkerror("optimizer: only 'lr' can be set, not 'momentum'", function() sgd.momentum = 0 end)
checkerror("optimizer: lr must be >= 0", function() sgd.lr = -1 end)
checkerror("optimizer: no field 'stepp'", function() return sgd.stepp end)
checkerror("LayerNorm: input [2,3] does not end in normalized_shape=4", function() return tt.nn.LayerNorm(4)(tt.ones(2, 3)) end)
checkerror("RMSNorm: normalized_shape must be positive, got 0", tt.nn.RMSNorm, 0)
checkerror("LayerNorm: unknown option 'epsilon'", tt.nn.LayerNorm, 4, {epsilon = 1e-6})
checkerror("LayerNorm: eps must be >= 0", tt.nn.LayerNorm, 4, {eps = -1})
checkerror("RMSNorm: unknown option 'bias'", tt.nn.RMSNorm, 4, {bias = false})
checkerror("clip_grad_norm: max_norm must be >= 0", tt.nn.clip_grad_norm, {w}, -1)
checkerror("test_nn.lua:252: SGD: lr must be >= 0", function() return tt.optim.SGD({w}, {lr = -1}) end)

-- Embedding: weight [num, dim] N(0,1) from the seeded generator, rows by
-- 1-based int64 ids of any shape, gradients scatter-added
tt.manual_seed(11)
local emb = tt.nn.Embedding(16, 8)
tt.manual_seed(11)
local same = tt.randn(16, 8)
check("Embedding: weight is tt.randn(num, dim) from the seed", tt.allclose(emb.weight, same, 0, 0))
check("Embedding: sizes", emb.num_embeddings == 16 and emb.embedding_dim == 8)
check("Embedding: weight [16,8] requires grad", emb.weight.requires_grad and emb.weight:size(1) == 16
      and emb.weight:size(2) == 8)
check("Embedding: one parameter", #emb:parameters() == 1 and rawequal(emb:parameters()[1], emb.weight))
check("Embedding: named weight", emb:named_parameters()[1][1] == "weight"
      and rawequal(emb:named_parameters()[1][2], emb.weight))
check("Embedding: no bias", emb.bias == nil)
check("Embedding: tostring", tostring(emb) == "Embedding(16, 8)")
local big = tt.nn.Embedding(1000, 100).weight
local mean, sd = big:mean():item(), big:std():item()
check("Embedding: init mean ~0 (" .. mean .. ")", math.abs(mean) < 0.01)
check("Embedding: init std ~1 (" .. sd .. ")", math.abs(sd - 1) < 0.01)

local W = emb.weight:totable()
local id_list = {{3, 16, 3}, {1, 3, 7}}
local ids = tt.tensor(id_list, "int64")
local out = emb(ids)
check("Embedding: ids [2,3] give [2,3,8]", out:dim() == 3 and out:size(1) == 2 and out:size(3) == 8)
local want = {}
for i = 1, 2 do
  want[i] = {}
  for j = 1, 3 do want[i][j] = W[id_list[i][j]] end
end
close("Embedding: rows of the weight", out, want, 0)
close("Embedding: 0-d id gives [dim]", emb(tt.tensor(16, "int64")), W[16], 0)
check("Embedding: ids [1,1,2] give [1,1,2,8]", emb(tt.ones(1, 1, 2):long()):dim() == 4)
check("Embedding: no ids give [0,8]", emb(tt.zeros(0):long()):size(1) == 0)
-- repeated ids: each weight row's gradient is the sum of g over its uses
local g = tt.randn(2, 3, 8)
out:backward(g)
local G, wantg = g:totable(), {}
for r = 1, 16 do
  wantg[r] = {}
  for c = 1, 8 do wantg[r][c] = 0 end
end
for i = 1, 2 do
  for j = 1, 3 do
    local r = id_list[i][j]
    for c = 1, 8 do wantg[r][c] = wantg[r][c] + G[i][j][c] end
  end
end
close("Embedding: gradient accumulates over repeated ids", emb.weight.grad, wantg, 1e-6)
emb(tt.tensor({3}, "int64")):sum():backward()
for c = 1, 8 do wantg[3][c] = wantg[3][c] + 1 end
close("Embedding: a second backward adds to .grad", emb.weight.grad, wantg, 1e-6)
checkerror({"Embedding: id 17 out of range 1..16 (num_embeddings) in ids [2]", "test_nn.lua:"},
           function() return emb(tt.tensor({1, 17}, "int64")) end)
checkerror({"Embedding: id 0 out of range 1..16", "hint: ids count from 1"},
           function() return emb(tt.tensor({0}, "int64")) end)
checkerror({"Embedding: ids must be int64, got float32 [2]", "hint: ids:long()"},
           function() return emb(tt.tensor({1, 2})) end)
checkerror("Embedding: num_embeddings and embedding_dim must be positive, got 0, 4",
           function() return tt.nn.Embedding(0, 4) end)

T.report()
