-- one token a column: the sentence has 3 tokens, the padded weights 5 columns
local tokens = {"the", "cat", "sat"}
local w = tt.randn(5, 5):named("Nq", "Nk"):softmax("Nk"):label("weights")
tt.heatmap(w, "images/weights.png", {xlabels = tokens, ylabels = tokens})
