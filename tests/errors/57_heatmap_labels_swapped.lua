-- cross-attention: the columns are the 6 English keys, the rows the 4 French queries
local en = {"the", "black", "cat", "sleeps", "now", "."}
local fr = {"le", "chat", "noir", "dort"}
local scores = tt.randn(4, 6):named("Nq", "Nk"):label("scores")
tt.heatmap(scores, "images/scores.png", {xlabels = fr, ylabels = en})
