-- the colormaps are viridis, diverging and gray
local w = tt.randn(5, 5):softmax(-1)
tt.heatmap(w, "images/w.png", {cmap = "jet"})
