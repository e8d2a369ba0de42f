-- Exercise 09 — one decode step with a K/V cache (follows lessons/09_kv_cache.lua).
--
-- Tokens 1..5 are decoded: their keys and values sit in the cache (k_past,
-- v_past, [B,Hkv,5,Dh]). Token 6 arrives. Append its key and value to the
-- cache, then let its one query attend over all 6 cached keys (4 query heads
-- on 2 K/V heads: copy each K/V head as in exercise 07). Then feed tokens 5
-- and 6 together: 2 queries over the same 6 keys. A query must see every key
-- up to its own position: the causal mask lines up lower-right.
-- Labels to produce, with these dim names:
--   k_cache [B,G,Nk,Dh]  v_cache [B,G,Nk,Dh]
--   scores [B,H,Nq,Nk]  weights [B,H,Nq,Nk]  out [B,H,Nq,Dh]      (Nq = 1)
--   chunk_scores  chunk_weights  chunk_out                        (Nq = 2)
-- Check your work:  ./tensortrace --exercise 09
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/09_kv_cache_step.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

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

-- TODO(k_cache, v_cache): append token 6's key and value to the cache (along Nk).

-- TODO(scores): q_new against the cached keys (each K/V head copied for its
-- R query heads, as in exercise 07), divided by sqrt(Dh).

-- TODO(weights): the causal mask for 1 query over 6 keys, then softmax over the keys.

-- TODO(out): the weighted sum of the cached values.

-- TODO(chunk_scores, chunk_weights, chunk_out): the same for q_chunk, the
-- queries of tokens 5 and 6, over the same 6 cached keys.
