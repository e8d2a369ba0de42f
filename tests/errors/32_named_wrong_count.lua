-- three dims need three names
local x = tt.randn(2, 5, 16)
local y = x:named("B", "N")
