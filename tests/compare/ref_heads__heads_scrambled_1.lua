-- reference: ref_heads
-- expect: heads_scrambled
-- the reference: split into heads and merge back
tt.manual_seed(9)
local B, N, H, Dh = 2, 3, 4, 2
local x = tt.randn(B, N, H * Dh)
-- ===== your code below =====
local heads = x:view(B, N, H, Dh):transpose(2, 3):label("heads")
local y = (heads * 2):label("y")
local merged = y:reshape(B, N, H * Dh):label("merged")
