-- masks are bool: a float 0/1 matrix is not a mask
local scores = tt.randn(5, 5)
local mask = tt.ones(5, 5):tril()
local masked = scores:masked_fill(mask, -math.huge)
