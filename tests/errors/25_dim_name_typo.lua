-- there is no dim named "K"
local x = tt.randn(2, 5, 8):named("B", "N", "D")
local y = x:transpose("N", "K")
