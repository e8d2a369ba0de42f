-- x[{{first, last}, j}]: ranges are 1-based and inclusive, as in Torch7
local x = tt.randn(4, 6)
local rows = x[{{2, 5}, 1}]
