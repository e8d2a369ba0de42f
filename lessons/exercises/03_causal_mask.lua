-- Exercise 03 — the causal mask, before softmax (follows lessons/03_causal_mask.lua).
--
-- Token i may look at keys 1..i only. Build that rule as a bool matrix, hide
-- the future in the scores with -inf BEFORE softmax, and mix the values.
-- Labels to produce, with these dim names:
--   allowed [N,N] bool (true = may attend)  scores [B,Nq,Nk]  weights [B,Nq,Nk]  out [B,Nq,Dh]
-- Check your work:  ./tensortrace --exercise 03
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/03_causal_mask.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(3)
local B, N, Dh = 2, 5, 4        -- 2 sentences of 5 tokens, head width 4
local q = tt.randn(B, N, Dh):named("B", "Nq", "Dh"):label("q")
local k = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("k")
local v = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("v")
-- ===== your code below =====

-- TODO(allowed): an [N,N] bool matrix, true where query i may read key j (j <= i).

-- TODO(scores): q against k transposed, divided by sqrt(Dh).

-- TODO(weights): hide the future (masked_fill's mask says what to HIDE), then
-- softmax over the keys.

-- TODO(out): the weighted sum of the values.
