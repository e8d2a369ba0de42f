-- betas are decay rates in [0, 1), not percentages
local proj = tt.nn.Linear(4, 4)
local opt = tt.optim.AdamW(proj:parameters(), {lr = 1e-2, betas = {90, 99.9}})
