tt.manual_seed(13)
local N, Dh = 4, 4
local q = tt.randn(N, Dh)
local k = tt.randn(N, Dh)
-- ===== your code below =====
local scores = (q:matmul(k:transpose(1, 2)) / math.sqrt(Dh)):label("scores")
