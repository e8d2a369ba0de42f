-- norm's p must be positive
local x = tt.randn(3, 4)
local n = x:norm(-2)
