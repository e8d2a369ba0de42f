-- reference: ref_square_heads
-- expect: transpose_missing
tt.manual_seed(15)
local q = tt.randn(2, 3, 6, 6):named("B", "H", "Nq", "Dh")
local k = tt.randn(2, 3, 6, 6):named("B", "H", "Nk", "Dh")
-- ===== your code below =====
local scores = q:matmul(k):label("scores")
local weights = (scores / math.sqrt(6)):softmax(-1):label("weights")
