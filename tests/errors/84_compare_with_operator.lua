-- PyTorch habit: scores < 0 gives a mask there; Lua's < must give one boolean
local scores = tt.randn(2, 5, 5)
local negative = scores < 0
