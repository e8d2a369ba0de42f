-- exercise: 19_linear_state
-- expect: other_inputs
-- The state S made as 4 x 4, Dh's value here: right for these inputs only.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

tt.manual_seed(19)
local N, Dh = 6, 4
local q = tt.randn(N, Dh):label("q")
local k = tt.randn(N, Dh):label("k")
local v = tt.randn(N, Dh):label("v")
local function elu1(x) return x:relu() + (-(-x):relu()):exp() end   -- elu(x) + 1: x + 1 above 0, exp(x) below
-- ===== your code below =====

local fq = elu1(q):label("fq")
local fk = elu1(k):label("fk")
local a = fq:matmul(fk:mT()):masked_fill(~tt.causal_mask(N), 0)
local out_parallel = (a:matmul(v) / a:sum(-1, true)):label("out_parallel")
local S, z, rows = tt.zeros(4, 4), tt.zeros(Dh), {}
for t = 1, N do
  S = S + fk[t]:view(Dh, 1) * v[t]:view(1, Dh)      -- write token t first: it reads itself
  z = z + fk[t]
  rows[t] = fq[t]:matmul(S) / (fq[t] * z):sum()
end
S:label("S")
z:label("z")
local out_rec = tt.stack(rows, 1):label("out_rec")
