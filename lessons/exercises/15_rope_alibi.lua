-- Exercise 15 — RoPE and ALiBi by hand (follows lessons/15_positions.lua).
--
-- RoPE turns each pair of coordinates of q and k by an angle p * theta_i that
-- grows with the token's position p = 0 .. N-1. tt.rope pairs x_i with
-- x_(i + Dh/2) ("half-split"); theta_i = 10000^(-2i/Dh), i = 0 .. Dh/2 - 1.
-- A pair (a, b) turned by an angle t becomes (a cos t - b sin t, a sin t + b cos t).
-- ALiBi turns nothing: it adds -slope_h * (i - j) to head h's score of query
-- i on key j, with slope_h = 2^(-8h/H) for heads h = 1 .. H.
-- Labels to produce:
--   theta [Dh/2]  angles [N, Dh/2] (row p: p * theta)  q_rot, k_rot [B,H,N,Dh]
--   scores_rope [B,H,N,N] (q_rot against k_rot, divided by sqrt(Dh))
--   alibi_bias [H,N,N]  weights_alibi [B,H,N,N] (q.k / sqrt(Dh) + the bias, causal, softmax)
-- Check your work:  ./tensortrace --exercise 15
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/15_rope_alibi.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(15)
local B, H, N, Dh = 1, 2, 6, 8   -- 1 sequence, 2 heads, 6 tokens, head width 8
local q = tt.randn(B, H, N, Dh):label("q")
local k = tt.randn(B, H, N, Dh):label("k")
local v = tt.randn(B, H, N, Dh):label("v")
-- ===== your code below =====

-- TODO(theta): the Dh/2 frequencies 10000^(-2i/Dh), i = 0 .. Dh/2 - 1.

-- TODO(angles): [N, Dh/2], position p (from 0) times each theta.

-- TODO(q_rot, k_rot): turn the pairs (first half, second half) of the last
-- dim by the angles (narrow, cos, sin, cat).

-- TODO(scores_rope): q_rot against k_rot transposed, divided by sqrt(Dh).

-- TODO(alibi_bias): [H,N,N], -slope_h * (i - j).

-- TODO(weights_alibi): q against k (not turned) over sqrt(Dh), plus the
-- bias, the future hidden, softmax over the keys.
