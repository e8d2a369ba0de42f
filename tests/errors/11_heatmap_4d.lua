-- a heatmap shows one matrix (or one per head): not [B,H,N,N]
local w = tt.randn(2, 4, 5, 5):named("B", "H", "Nq", "Nk"):softmax(-1)
tt.heatmap(w, "images/weights.png")
