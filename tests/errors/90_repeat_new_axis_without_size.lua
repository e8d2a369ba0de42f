-- einops' repeat needs the length of every new axis
local k = tt.randn(2, 4, 16)
local kr = tt["repeat"](k, "b n d -> b g n d")
