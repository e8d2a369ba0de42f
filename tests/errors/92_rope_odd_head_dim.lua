-- rope turns the last dim in pairs: a head dim of 5 has no pairs
local q = tt.randn(1, 2, 4, 5):named("B", "H", "N", "Dh")
local qr = tt.rope(q, tt.arange(4))
