-- Exercise 12 — the online softmax of one query tile (follows lessons/12_flash_attention.lua).
--
-- FlashAttention walks over key tiles keeping, per query row, a running max m,
-- a running sum l and an accumulator acc. For query tile 2 (queries 5..8) the
-- loop below gives you each key tile's masked scores s; write the update:
--   m_new = max(m, row max of s)          alpha = exp(m - m_new)
--   l     = alpha * l   + row sum of exp(s - m_new)
--   acc   = alpha * acc + exp(s - m_new) @ V_tile
-- and after the loop the tile's output acc / l (causal attention's rows 5..8).
-- Labels to produce, inside the loop with the tile number jt = 1, 2:
--   m_1 l_1 acc_1 m_2 l_2 acc_2   (e.g. :label("m_" .. jt));  after it: out_tile
-- Shapes: m and l [B,H,Br,1] (keep the reduced dim), acc and out_tile [B,H,Br,Dh].
-- Check your work:  ./tensortrace --exercise 12
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/12_online_softmax.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(0)
local B, H, N, Dh = 1, 2, 16, 8
local Br, Bc = 4, 4                 -- query rows and key columns per tile
local scale = 1 / math.sqrt(Dh)
local q = tt.randn(B, H, N, Dh):label("Q")
local k = tt.randn(B, H, N, Dh):label("K")
local v = tt.randn(B, H, N, Dh):label("V")
local i0 = 5                        -- query tile 2: queries 5..8
local qi = q:narrow(3, i0, Br):label("q_tile")
local m = tt.full({B, H, Br, 1}, -math.huge)   -- running max of each query row
local l = tt.zeros(B, H, Br, 1)                -- running sum of exp(score - m)
local acc = tt.zeros(B, H, Br, Dh)             -- running sum of exp(score - m) * value
-- ===== your code below =====

-- Key tiles 1 (keys 1-4, all visible) and 2 (keys 5-8, the diagonal);
-- tiles 3 and 4 lie in the future of every query of this tile: skipped.
for jt = 1, 2 do
  local j0 = (jt - 1) * Bc + 1
  local s = qi:matmul(k:narrow(3, j0, Bc):mT()) * scale                  -- [B,H,Br,Bc]
  local allowed = tt.causal_mask(N):narrow(1, i0, Br):narrow(2, j0, Bc)
  s = s:masked_fill(~allowed, -math.huge)
  -- TODO(m_1, l_1, acc_1, m_2, l_2, acc_2): the update above, with V's tile
  -- v:narrow(3, j0, Bc); label each new m, l and acc with the tile number jt.
end

-- TODO(out_tile): the tile's output.
