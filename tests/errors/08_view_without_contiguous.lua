-- after transpose the heads are interleaved in memory: view cannot merge them
local B, H, N, Dh = 2, 4, 5, 8
local out = tt.randn(B, H, N, Dh):named("B", "H", "N", "Dh")
local merged = out:transpose(2, 3):view(B, N, H * Dh)
