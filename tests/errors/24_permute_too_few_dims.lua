-- permute needs every dim
local x = tt.randn(2, 4, 5, 8)
local y = x:permute(1, 3, 2)
