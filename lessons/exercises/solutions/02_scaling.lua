-- Exercise 02, solution — scale the scores by 1/sqrt(Dh) (follows lessons/02_scaling.lua).
-- The reference that `./tensortrace --exercise 02` compares your copy with.
-- recheck: Nq = 3, Nk = 9, seed = 12; Dh = 9

tt.manual_seed(2)
local Nq, Nk, Dh = 6, 16, 16    -- 6 queries, 16 keys, head width 16
local q = tt.randn(Nq, Dh):named("Nq", "Dh"):label("q")
local k = tt.randn(Nk, Dh):named("Nk", "Dh"):label("k")
-- ===== your code below =====

local raw = q:matmul(k:mT()):label("raw_scores")
local scaled = (raw / math.sqrt(Dh)):label("scaled_scores")
local P_raw = raw:softmax("Nk"):label("raw_weights")
local P_scaled = scaled:softmax("Nk"):label("scaled_weights")

-- ===== checks =====
tt.assert_close(raw:std() / scaled:std(), math.sqrt(Dh), 1e-5, 0, "scaling divides the spread by sqrt(Dh)")
tt.assert_close(P_raw:argmax(-1), P_scaled:argmax(-1), 0, 0, "scaling never changes which key wins")
if P_scaled:max(-1):mean():item() >= P_raw:max(-1):mean():item() then
  error("the scaled weights should be less peaked than the raw ones")
end
local _, w_sdpa = tt.sdpa(q:unsqueeze(1), k:unsqueeze(1), k:unsqueeze(1), {weights = true})
tt.assert_close(P_scaled, w_sdpa:squeeze(1), 1e-5, 1e-6, "scaled_weights are tt.sdpa's weights")
print("Exercise 02: every check passed.")
