-- at most 8 dims
local x = tt.zeros(1, 1, 1, 1, 1, 1, 1, 1, 1)
