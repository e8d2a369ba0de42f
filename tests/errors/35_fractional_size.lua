-- sizes are integers: D / H is a float in Lua 5.4, use D // H
local D, H = 16, 3
local x = tt.zeros(H, D / H)
