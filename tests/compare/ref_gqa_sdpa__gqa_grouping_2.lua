-- reference: ref_gqa_sdpa
-- expect: gqa_grouping
tt.manual_seed(12)
local q = tt.randn(1, 6, 3, 4)
local k = tt.randn(1, 2, 3, 4)
local v = tt.randn(1, 2, 3, 4)
-- ===== your code below =====
local out = tt.sdpa(q, tt.cat({k, k, k}, 2), tt.cat({v, v, v}, 2)):label("out")
