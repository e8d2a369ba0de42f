-- Exercise 12, solution — the online softmax of one query tile (follows lessons/12_flash_attention.lua).
-- The reference that `./tensortrace --exercise 12` compares your copy with.
-- recheck: H = 3, seed = 10; Dh = 4

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
  local m_new = m:maximum(s:max(-1, true)):label("m_" .. jt)
  local alpha = (m - m_new):exp()                                        -- rescales the old sums
  local p = (s - m_new):exp()
  l = (alpha * l + p:sum(-1, true)):label("l_" .. jt)
  acc = (alpha * acc + p:matmul(v:narrow(3, j0, Bc))):label("acc_" .. jt)
  m = m_new
end
local out_tile = (acc / l):label("out_tile")

-- ===== checks =====
local scores = (q:matmul(k:mT()) * scale):masked_fill(~tt.causal_mask(N), -math.huge)
local reference = scores:softmax(-1):matmul(v)
tt.assert_close(out_tile, reference:narrow(3, i0, Br), 1e-5, 1e-5, "the tile equals rows 5..8 of standard attention")
tt.assert_close(out_tile, tt.sdpa(q, k, v, {causal = true}):narrow(3, i0, Br), 1e-5, 1e-5, "and tt.sdpa's")
local row_max = scores:narrow(3, i0, Br):max(-1, true)
tt.assert_close(m, row_max, 0, 0, "the running max is the max of each whole row")
tt.assert_close(l, (scores:narrow(3, i0, Br) - row_max):exp():sum(-1, true), 1e-5, 1e-6, "the running sum is the row's sum")
print("Exercise 12: every check passed.")
