-- reference: ref_square
-- expect: transpose_missing
tt.manual_seed(13)
local N, Dh = 4, 4
local q = tt.randn(N, Dh)
local k = tt.randn(N, Dh)
-- ===== your code below =====
local scores = (q:matmul(k) / math.sqrt(Dh)):label("scores")
