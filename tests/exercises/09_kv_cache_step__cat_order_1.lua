-- exercise: 09_kv_cache_step
-- expect: cat_order
-- The new key appended before the cached ones: the values of the reference, in another order along Nk.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

tt.manual_seed(0)
local B, N, D = 1, 6, 32        -- one sequence of 6 tokens, model width 32
local H, Hkv = 4, 2             -- 4 query heads share 2 K/V heads (GQA, exercise 07)
local Dh = D // H               -- 8
local R = H // Hkv
local x = tt.randn(B, N, D):named("B", "N", "D"):label("X")
local Wq = tt.nn.Linear(D, H * Dh, {bias = false})
local Wk = tt.nn.Linear(D, Hkv * Dh, {bias = false})
local Wv = tt.nn.Linear(D, Hkv * Dh, {bias = false})
local function project(xs)   -- [B,n,D] -> q [B,H,Nq,Dh], k and v [B,Hkv,Nk,Dh]
  return tt.rearrange(Wq(xs), "B Nq (H Dh) -> B H Nq Dh", {H = H}),
         tt.rearrange(Wk(xs), "B Nk (G Dh) -> B G Nk Dh", {G = Hkv}),
         tt.rearrange(Wv(xs), "B Nk (G Dh) -> B G Nk Dh", {G = Hkv})
end
local _, k_past, v_past = project(x:narrow("N", 1, N - 1))     -- the cache of tokens 1..5
k_past:label("k_past"); v_past:label("v_past")
local q_new, k_new, v_new = project(x:narrow("N", N, 1))       -- token 6 arrives
q_new:label("q_new"); k_new:label("k_new"); v_new:label("v_new")
local q_chunk = project(x:narrow("N", N - 1, 2)):label("q_chunk")   -- queries of tokens 5 and 6
-- ===== your code below =====

-- Step 6: append the new key and value, then one query over all 6 cached keys.
local k_cache = tt.cat({k_new, k_past}, "Nk"):label("k_cache")
local v_cache = tt.cat({v_past, v_new}, "Nk"):label("v_cache")
local k_rep = k_cache:repeat_interleave(R, "G"):named("B", "H", "Nk", "Dh")
local v_rep = v_cache:repeat_interleave(R, "G"):named("B", "H", "Nk", "Dh")
local scores = (q_new:matmul(k_rep:mT()) / math.sqrt(Dh)):label("scores")          -- [B,H,1,6]
local weights = scores:masked_fill(~tt.causal_mask(1, N), -math.huge):softmax("Nk"):label("weights")
local out = weights:matmul(v_rep):label("out")

-- Tokens 5 and 6 together: 2 queries over the same 6 keys, lower-right aligned.
local chunk_scores = (q_chunk:matmul(k_rep:mT()) / math.sqrt(Dh)):label("chunk_scores")   -- [B,H,2,6]
local chunk_weights = chunk_scores:masked_fill(~tt.causal_mask(2, N), -math.huge):softmax("Nk"):label("chunk_weights")
local chunk_out = chunk_weights:matmul(v_rep):label("chunk_out")

