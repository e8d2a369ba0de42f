-- cat of a long list (once a heap overflow past ~40 tensors): element 77
-- has two rows where the others have one
local rows = {}
for i = 1, 100 do rows[i] = tt.randn(i == 77 and 2 or 1, 8) end
local all = tt.cat(rows, 2)
