-- exercise: 17_mla_absorb
-- expect: values
-- W_UK's rows split into heads the wrong way round ([Dh, H, d_c]): head h gets every H-th row.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

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
local q_abs = q:matmul(W_uk:view(Dh, H, DC):transpose(1, 2)):label("q_abs")
local scores_abs = (q_abs:matmul(c:unsqueeze(2):mT()) / math.sqrt(Dh)):label("scores_abs")
local weights = scores_abs:masked_fill(~causal, -math.huge):softmax(-1):label("weights")
local out_abs = weights:matmul(c:unsqueeze(2)):matmul(W_uv:view(H, Dh, DC):mT()):label("out_abs")
local cache_deepseek = tt.tensor({512 + 64, 2 * 128 * 128}):label("cache_deepseek")
