-- Exercise 07, solution — grouped-query attention, two ways (follows lessons/07_gqa.lua).
-- The reference that `./tensortrace --exercise 07` compares your copy with.
-- recheck: N = 7, seed = 10; H = 6, G = 3; B = 1, N = 1

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
local k_rep = k:repeat_interleave(R, "G"):named("B", "H", "Nk", "Dh"):label("K_repeated")
local v_rep = v:repeat_interleave(R, "G"):named("B", "H", "Nk", "Dh"):label("V_repeated")
local scores = (q:matmul(k_rep:mT()) / math.sqrt(Dh)):label("scores")
local weights = scores:masked_fill(~tt.causal_mask(N), -math.huge):softmax("Nk"):label("weights")
local heads = weights:matmul(v_rep):label("heads")
local heads_sdpa = tt.sdpa(q, k, v, {causal = true}):label("heads_sdpa")

-- ===== checks =====
for h = 1, H do
  tt.assert_close(k_rep:select(2, h), k:select(2, math.ceil(h / R)), 0, 0, "copy " .. h .. " is K/V head ceil(h/R)")
end
tt.assert_close(heads_sdpa, heads, 1e-5, 1e-5, "tt.sdpa on G = 2 K/V heads equals the repeat_interleave version")
print("Exercise 07: every check passed.")
