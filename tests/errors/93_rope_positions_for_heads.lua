-- positions must broadcast to x without its last dim: one per token (N = 6), not one per head
local q = tt.randn(1, 4, 6, 8):named("B", "H", "N", "Dh")
local qr = tt.rope(q, tt.arange(4))
