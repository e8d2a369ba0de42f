-- (h d) of length 16: give h or d
local x = tt.randn(2, 5, 16):named("B", "N", "D")
local y = tt.rearrange(x, "b n (h d) -> b h n d")
