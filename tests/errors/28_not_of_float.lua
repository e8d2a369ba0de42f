-- ~ negates bool masks only
local scores = tt.randn(4, 4)
local inv = ~scores
