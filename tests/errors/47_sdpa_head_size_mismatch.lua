-- q and k must share the head size
local q = tt.randn(2, 4, 5, 8):named("B", "H", "N", "Dh")
local k = tt.randn(2, 4, 5, 16)
local out = tt.sdpa(q, k, k)
