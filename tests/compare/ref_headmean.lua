-- the reference: 4 heads of attention, averaged over the heads, then projected.
-- The mean divides by H = 4 = √Dh (Dh = 16) and the projection sums over Dh
-- cells, yet neither is the attention scale: only the scores' 1/√Dh is.
tt.manual_seed(21)
local B, H, N, Dh = 1, 4, 5, 16
local q = tt.randn(B, H, N, Dh):named("B", "H", "Nq", "Dh")
local k = tt.randn(B, H, N, Dh):named("B", "H", "Nk", "Dh")
local v = tt.randn(B, H, N, Dh):named("B", "H", "Nk", "Dh")
local w_o = tt.randn(Dh, Dh)
-- ===== your code below =====
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
local weights = scores:softmax("Nk"):label("weights")
local out = weights:matmul(v):label("out")
local mean = (out:sum(2) / H):label("mean")
local y = mean:matmul(w_o):label("y")
