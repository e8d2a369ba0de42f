-- the reference: tt.sdpa with the causal flag, 2 queries over 5 keys
tt.manual_seed(21)
local q = tt.randn(1, 2, 2, 4)
local k = tt.randn(1, 2, 5, 4)
local v = tt.randn(1, 2, 5, 4)
-- ===== your code below =====
local out = tt.sdpa(q, k, v, {causal = true}):label("out")
