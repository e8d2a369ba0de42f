-- x:t() is for matrices; a batch of them wants x:mT()
local k = tt.randn(2, 5, 64)
local kt = k:t()
