-- a bar chart takes a vector or a matrix
local w = tt.randn(4, 5, 5):softmax(-1)
tt.bars(w, "images/bars.png")
