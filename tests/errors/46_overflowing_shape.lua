-- 2^40 x 2^40 elements cannot exist
local x = tt.zeros(1 << 40, 1 << 40)
