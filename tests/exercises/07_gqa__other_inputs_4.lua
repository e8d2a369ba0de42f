-- exercise: 07_gqa
-- expect: other_inputs
-- R = H / G written as 4: right for these inputs only.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

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

-- query head h reads K/V head ceil(h / R): each K/V head copied R times in a row
local k_rep = k:repeat_interleave(4, "G"):named("B", "H", "Nk", "Dh"):label("K_repeated")
local v_rep = v:repeat_interleave(R, "G"):named("B", "H", "Nk", "Dh"):label("V_repeated")
local scores = (q:matmul(k_rep:mT()) / math.sqrt(Dh)):label("scores")
local weights = scores:masked_fill(~tt.causal_mask(N), -math.huge):softmax("Nk"):label("weights")
local heads = weights:matmul(v_rep):label("heads")
local heads_sdpa = tt.sdpa(q, k, v, {causal = true}):label("heads_sdpa")

