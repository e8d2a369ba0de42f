-- 4 heads of 3 is 12 features, not 16
local x = tt.randn(2, 5, 16):named("B", "N", "D")
local heads = x:reshape(2, 5, 4, 3)
