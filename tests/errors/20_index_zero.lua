-- Lua indices start at 1
local x = tt.randn(3, 4)
local first = x[0]
