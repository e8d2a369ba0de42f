-- 2^40 is a float in Lua 5.4 but an integral one: the size overflows
local x = tt.zeros{2^40, 2^40}
