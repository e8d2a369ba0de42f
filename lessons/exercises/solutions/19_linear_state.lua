-- Exercise 19, solution — linear attention's running state (follows lessons/19_linear_attention.lua).
-- The reference that `./tensortrace --exercise 19` compares your copy with.
-- recheck: N = 9, seed = 30; Dh = 7; N = 1

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
local S, z, rows = tt.zeros(Dh, Dh), tt.zeros(Dh), {}
for t = 1, N do
  S = S + fk[t]:view(Dh, 1) * v[t]:view(1, Dh)      -- write token t first: it reads itself
  z = z + fk[t]
  rows[t] = fq[t]:matmul(S) / (fq[t] * z):sum()
end
S:label("S")
z:label("z")
local out_rec = tt.stack(rows, 1):label("out_rec")

-- ===== checks =====
tt.assert_close(out_rec, out_parallel, 1e-5, 1e-6, "the running state gives the parallel form's rows")
tt.assert_close(S, fk:mT():matmul(v), 1e-5, 1e-6, "the final S is phi(K)^T V")
print("Exercise 19: every check passed.")
