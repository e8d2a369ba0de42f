-- the last 3 tokens of 5 start at 3, not 4
local x = tt.randn(2, 5, 16)
local tail = x:narrow(2, 4, 3)
