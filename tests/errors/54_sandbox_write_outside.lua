-- options: --sandbox
-- the sandbox writes only under images/
local f = io.open("notes.txt", "w")
