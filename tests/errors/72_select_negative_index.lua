-- -1 is the last row; -5 is past the first of 4
local x = tt.zeros(4, 3)
local row = x[-5]
