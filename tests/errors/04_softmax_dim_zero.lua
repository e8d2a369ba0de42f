-- Lua counts dims from 1: dim 0 does not exist
local scores = tt.randn(5, 5)
local weights = scores:softmax(0)
