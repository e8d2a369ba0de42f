-- Exercise 07 — grouped-query attention, two ways (follows lessons/07_gqa.lua).
--
-- H = 8 query heads, G = 2 key/value heads: query head h reads K/V head
-- g(h) = ceil(h / R), R = H / G = 4 (heads 1-4 read K/V head 1, heads 5-8
-- K/V head 2). First copy each K/V head for the query heads that read it and
-- run causal attention step by step; then let tt.sdpa share K/V without a copy.
-- Labels to produce, with these dim names:
--   K_repeated [B,H,Nk,Dh]  V_repeated [B,H,Nk,Dh]  scores [B,H,Nq,Nk]
--   weights [B,H,Nq,Nk]  heads [B,H,Nq,Dh]  heads_sdpa [B,H,Nq,Dh]
-- Check your work:  ./tensortrace --exercise 07
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/07_gqa.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(0)
local B, N, D = 2, 5, 16        -- batch, tokens, model width
local H, G = 8, 2               -- 8 query heads, 2 key/value heads
local Dh = 4                    -- numbers per head
local R = H // G                -- 4 query heads share each K/V head
local x = tt.randn(B, N, D):named("B", "N", "D"):label("X")
local q_proj = tt.nn.Linear(D, H * Dh, {bias = false})
local k_proj = tt.nn.Linear(D, G * Dh, {bias = false})
local v_proj = tt.nn.Linear(D, G * Dh, {bias = false})
local q = tt.rearrange(q_proj(x), "B Nq (H Dh) -> B H Nq Dh", {H = H}):label("Q")
local k = tt.rearrange(k_proj(x), "B Nk (G Dh) -> B G Nk Dh", {G = G}):label("K")
local v = tt.rearrange(v_proj(x), "B Nk (G Dh) -> B G Nk Dh", {G = G}):label("V")
-- ===== your code below =====

-- TODO(K_repeated, V_repeated): copy K/V head g to query heads (g-1)*R+1 .. g*R,
-- giving [B,H,Nk,Dh]; the head dim then has H entries: name it H.

-- TODO(scores): q against the repeated keys, divided by sqrt(Dh).

-- TODO(weights): hide the future, softmax over the keys.

-- TODO(heads): the weighted sum of the repeated values.

-- TODO(heads_sdpa): the same causal attention in one call, tt.sdpa on q, k, v
-- as they are (it shares each K/V head without copying).
