-- rearrange moves axes; it cannot invent h
local x = tt.randn(2, 5, 16):named("B", "N", "D")
local y = tt.rearrange(x, "b n d -> b h n d")
