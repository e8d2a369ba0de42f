-- Exercise 20, solution — where the bits go in 16-bit attention (follows lessons/20_precision.lua).
-- The reference that `./tensortrace --exercise 20` compares your copy with.
-- recheck: N = 5, seed = 30; Dh = 32, sigma = 60; L = 100

tt.manual_seed(20)
local N, Dh, sigma = 8, 64, 40
local q0, k0 = tt.randn(N, Dh), tt.randn(N, Dh)          -- entries of variance 1
local row = tt.tensor({{2.0, 1.0, 0.5, 3.0}})
local hide = tt.tensor({{false, false, true, true}}, "bool")
local L = 512
local a, b = tt.randn(L):bfloat16(), tt.randn(L):bfloat16()
-- ===== your code below =====

local s16 = (q0 * sigma):half():matmul((k0 * sigma):half():mT()):label("s16")
local sigma_star = tt.tensor({math.sqrt(65520 / q0:matmul(k0:mT()):abs():max():item())}):label("sigma_star")
local u = tt.tensor({2 ^ -8}):label("u")
local w_masked = row:bfloat16():masked_fill(hide, -math.huge):softmax(-1):label("w_masked")
local acc = tt.zeros({1}, "bfloat16")
local products = a:float() * b:float()                    -- each exact in float32
for i = 1, L do acc = (acc:float() + products:narrow(1, i, 1)):bfloat16() end
local sum_bf16_running = acc:label("sum_bf16_running")
local sum_once = a:matmul(b):view(1):label("sum_once")

-- ===== checks =====
local inf = s16:abs():eq(math.huge):float():sum():item()
local expect = (q0:matmul(k0:mT()) * sigma * sigma):abs():ge(65520):float():sum():item()
if math.abs(inf - expect) > 1 then error("s16 should overflow where |q.k| sigma^2 passes 65520") end
tt.assert_close(u, tt.tensor({tt.finfo("bfloat16").eps / 2}), 0, 0, "u is half finfo's eps")
tt.assert_close(w_masked:float(), tt.tensor({{0.7310586, 0.2689414, 0, 0}}):float(), 1e-2, 0, "w_masked, to bfloat16's precision")
print("Exercise 20: every check passed.")
