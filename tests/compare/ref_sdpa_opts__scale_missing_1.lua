-- reference: ref_sdpa_opts
-- expect: scale_missing
-- scale = 1 beside a bias (no mask): the bias is replayed as the bias, not as a mask
tt.manual_seed(1)
local q = tt.randn(1, 2, 5, 4):named("B", "H", "Nq", "Dh")
local k = tt.randn(1, 2, 5, 4):named("B", "H", "Nk", "Dh")
local v = tt.randn(1, 2, 5, 4):named("B", "H", "Nk", "Dh")
local b = tt.randn(5, 5)
local out = tt.sdpa(q, k, v, {causal = true, bias = b, scale = 1}):label("out")
local win = tt.sdpa(q, k, v, {window = 2}):label("win")
