-- Forward and backward of a tiny attention-score path, pinned byte for
-- byte: the text trace in backward.trace, the JSON Lines (timings left out)
-- in backward.jsonl. One row per graph node under the backward() line.
tt.manual_seed(0)
local x = tt.randn(3, 4):named("N", "D"):requires_grad_():label("X")
local w = tt.randn(4, 4):requires_grad_():label("W")
local q = x:matmul(w):label("Q")
local k = x:named("Nk", "D"):label("K")
local scores = (q:matmul(k:mT()) / 2):label("scores")
local weights = scores:softmax("Nk"):label("weights")
local loss = (weights * weights):sum():label("loss")
loss:backward()
print(x.grad:shape()[1], w.grad:shape()[2])
tt.trace.summary{times = false}
