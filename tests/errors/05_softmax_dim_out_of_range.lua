-- a 3-D tensor has no dim 4
local scores = tt.randn(2, 5, 5)
local weights = scores:softmax(4)
