-- reduce's reductions are einops' names
local x = tt.randn(2, 8, 16)
local pooled = tt.reduce(x, "b n d -> b d", "average")
