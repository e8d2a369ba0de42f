-- every row needs the same length
local x = tt.tensor{{1, 2, 3}, {4, 5}}
