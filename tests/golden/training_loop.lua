-- A training loop's trace folds: step 1 is shown in full (the forward's
-- lines inside forward(), the backward, the optimizer's step), then the
-- steps whose groups repeat it (same lines, ops and shapes) are counted.
-- The loss is printed after steps 3 and 7, so: step 1 in full, "×2 more"
-- (steps 2 and 3) before the first print, "×4 more" (steps 4 to 7) before
-- the second. The JSON trace is never folded (test_trace.lua checks it).
tt.manual_seed(0)
local lin1, lin2 = tt.nn.Linear(4, 8), tt.nn.Linear(8, 2)
local params = lin1:parameters()
for _, p in ipairs(lin2:parameters()) do params[#params + 1] = p end
local opt = tt.optim.AdamW(params, {lr = 0.01})
local x, y = tt.randn(16, 4), tt.randn(16, 2)

local function forward(inp)
  local h = lin1(inp):relu()
  return lin2(h)
end

for step = 1, 7 do
  opt:zero_grad()
  local loss = ((forward(x) - y) ^ 2):mean()
  loss:backward()
  opt:step()
  if step == 3 or step == 7 then print(string.format("step %d  loss %.4f", step, loss:item())) end
end
local last = forward(x)
