-- the reference: GQA, 4 query heads over 2 K/V groups
tt.manual_seed(11)
local B, Hq, G, N, Dh = 1, 4, 2, 3, 4
local q = tt.randn(B, Hq, N, Dh)
local k = tt.randn(B, G, N, Dh)
local v = tt.randn(B, G, N, Dh)
-- ===== your code below =====
local kr = k:repeat_interleave(Hq // G, 2):label("k_rep")
local vr = v:repeat_interleave(Hq // G, 2):label("v_rep")
local out = tt.sdpa(q, kr, vr):label("out")
