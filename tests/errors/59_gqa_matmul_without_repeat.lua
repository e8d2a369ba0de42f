-- GQA by hand: 8 query heads over 2 K/V heads do not broadcast in a matmul
local q = tt.randn(1, 8, 5, 16):named("B", "H", "N", "Dh")
local k = tt.randn(1, 2, 5, 16):named("B", "H", "N", "Dh")
local scores = q:matmul(k:mT())
