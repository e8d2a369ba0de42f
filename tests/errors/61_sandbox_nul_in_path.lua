-- options: --sandbox
-- a NUL byte would cut the name short in C: refused, not truncated
local f = io.open("images/attn\0weights.txt", "w")
