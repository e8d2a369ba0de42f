-- the folder of the figure must exist
local w = tt.randn(5, 5):softmax(-1)
tt.heatmap(w, "no_such_folder/weights.png")
