-- numbers only in a float tensor
local x = tt.tensor{{1, 2}, {3, "4"}}
