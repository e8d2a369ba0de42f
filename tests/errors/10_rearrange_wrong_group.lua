-- 16 features cannot be split into 3 heads
local x = tt.randn(2, 5, 16):named("B", "N", "D")
local heads = tt.rearrange(x, "b n (h d) -> b h n d", {h = 3})
