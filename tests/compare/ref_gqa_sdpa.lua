tt.manual_seed(12)
local q = tt.randn(1, 6, 3, 4)
local k = tt.randn(1, 2, 3, 4)
local v = tt.randn(1, 2, 3, 4)
-- ===== your code below =====
local out = tt.sdpa(q, k, v):label("out")
