-- a file that is not a checkpoint (this script itself) is refused, not guessed at
local weights = tt.load("tests/errors/78_load_not_safetensors.lua")
