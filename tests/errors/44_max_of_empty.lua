-- nothing to take the max of
local scores = tt.zeros(0, 5)
local m = scores:max()
