-- exercise: 02_scaling
-- expect: transpose_missing
-- q @ k instead of q @ k^T: it runs because Nk = Dh = 16, and dots each query with a column of k.
-- (The softmaxes use dim -1, as a learner whose names no longer say Nk would.)
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

tt.manual_seed(2)
local Nq, Nk, Dh = 6, 16, 16    -- 6 queries, 16 keys, head width 16
local q = tt.randn(Nq, Dh):named("Nq", "Dh"):label("q")
local k = tt.randn(Nk, Dh):named("Nk", "Dh"):label("k")
-- ===== your code below =====

local raw = q:matmul(k):label("raw_scores")
local scaled = (raw / math.sqrt(Dh)):label("scaled_scores")
local P_raw = raw:softmax(-1):label("raw_weights")
local P_scaled = scaled:softmax(-1):label("scaled_weights")
