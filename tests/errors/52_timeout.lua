-- options: --timeout 0.2
-- a loop that never ends
local n = 0
while true do n = n + 1 end
