-- * is elementwise: the projection is a matmul
local x = tt.randn(2, 5, 16):named("B", "N", "D")
local W = tt.randn(16, 16)
local q = x * W
