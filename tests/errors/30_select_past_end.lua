-- token 6 of 5
local x = tt.randn(2, 5, 16):named("B", "N", "D")
local t = x:select(2, 6)
