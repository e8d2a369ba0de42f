-- exercise: 02_scaling
-- expect: scale_wrong
-- Divided by Dh instead of sqrt(Dh).
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

tt.manual_seed(2)
local Nq, Nk, Dh = 6, 16, 16    -- 6 queries, 16 keys, head width 16
local q = tt.randn(Nq, Dh):named("Nq", "Dh"):label("q")
local k = tt.randn(Nk, Dh):named("Nk", "Dh"):label("k")
-- ===== your code below =====

local raw = q:matmul(k:mT()):label("raw_scores")
local scaled = (raw / Dh):label("scaled_scores")
local P_raw = raw:softmax("Nk"):label("raw_weights")
local P_scaled = scaled:softmax("Nk"):label("scaled_weights")
