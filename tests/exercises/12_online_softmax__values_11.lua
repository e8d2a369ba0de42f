-- exercise: 12_online_softmax
-- expect: values
-- The last division by l left out: out_tile is acc_2 unchanged; the verdict names out_tile's line, not acc_2's.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

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
local out_tile = (acc):label("out_tile")

