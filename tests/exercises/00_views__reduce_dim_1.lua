-- exercise: 00_views
-- expect: reduce_dim
-- centered subtracts the mean over the rows (R) instead of over each row (C): the reduction over another dim.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)
local x = tt.arange(24):view(2, 3, 4):named("B", "R", "C"):label("x")
local bias = tt.tensor{100, 200, 300, 400}:named("C"):label("bias")
-- ===== your code below =====

local x_T = x:transpose(2, 3):label("x_T")                  -- [B,C,R]: the strides swap, nothing is copied
local x_row3 = x:select(2, 3):label("x_row3")               -- [B,C]: row 3 of each block
local x_cols = x:narrow(3, 2, 2):label("x_cols")            -- [B,R,2]: columns 2 and 3
local x_T_flat = x_T:reshape(24):label("x_T_flat")          -- view refuses (x_T is not contiguous): reshape copies
local shifted = (x + bias):label("shifted")                 -- [B,R,C] + [C]: the bias stretched over B and R
local centered = (x - x:mean("R", true)):label("centered")  -- the mean of each column, not of each row

