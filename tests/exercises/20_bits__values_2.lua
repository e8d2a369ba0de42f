-- exercise: 20_bits
-- expect: values
-- rounded once where every add should round: the running sum kept in float32.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

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
local acc32 = tt.zeros({1})
for i = 1, L do acc32 = acc32 + products:narrow(1, i, 1) end
acc = acc32:bfloat16()
local sum_bf16_running = acc:label("sum_bf16_running")
local sum_once = a:matmul(b):view(1):label("sum_once")
