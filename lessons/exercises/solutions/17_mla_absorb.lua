-- Exercise 17, solution — MLA: the latent cache and absorbing W_UK (follows lessons/17_mla.lua).
-- The reference that `./tensortrace --exercise 17` compares your copy with.
-- recheck: N = 9, seed = 30; H = 2; DC = 8; N = 1

tt.manual_seed(17)
local N, D, H, DC = 6, 32, 4, 12    -- tokens, width, heads, latent width
local Dh = D // H                   -- 8
local function W(o, i) return tt.randn(o, i) / math.sqrt(i) end
local h = tt.randn(1, N, D):label("h")
local W_q, W_dkv, W_uk, W_uv = W(D, D), W(DC, D), W(D, DC), W(D, DC)   -- weights [out, in]
local causal = tt.causal_mask(N)    -- true = may attend
-- ===== your code below =====

local c = h:matmul(W_dkv:mT()):label("c")
local q = tt.rearrange(h:matmul(W_q:mT()), "B N (H Dh) -> B H N Dh", {H = H}):label("q")
local q_abs = q:matmul(W_uk:view(H, Dh, DC)):label("q_abs")
local scores_abs = (q_abs:matmul(c:unsqueeze(2):mT()) / math.sqrt(Dh)):label("scores_abs")
local weights = scores_abs:masked_fill(~causal, -math.huge):softmax(-1):label("weights")
local out_abs = weights:matmul(c:unsqueeze(2)):matmul(W_uv:view(H, Dh, DC):mT()):label("out_abs")
local cache_deepseek = tt.tensor({512 + 64, 2 * 128 * 128}):label("cache_deepseek")

-- ===== checks =====
local k = tt.rearrange(c:matmul(W_uk:mT()), "B N (H Dh) -> B H N Dh", {H = H})
local v = tt.rearrange(c:matmul(W_uv:mT()), "B N (H Dh) -> B H N Dh", {H = H})
tt.assert_close(out_abs, tt.sdpa(q, k, v, {causal = true}), 1e-5, 1e-5, "out_abs equals attention over the keys and values made back")
print("Exercise 17: every check passed.")
