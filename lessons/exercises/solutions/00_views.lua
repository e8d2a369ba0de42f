-- Exercise 00, solution — views, reshape and broadcasting (follows lessons/00_tensors_and_views.lua).
-- The reference that `./tensortrace --exercise 00` compares your copy with.

local x = tt.arange(24):view(2, 3, 4):named("B", "R", "C"):label("x")
local bias = tt.tensor{100, 200, 300, 400}:named("C"):label("bias")
-- ===== your code below =====

local x_T = x:transpose(2, 3):label("x_T")                  -- [B,C,R]: the strides swap, nothing is copied
local x_row3 = x:select(2, 3):label("x_row3")               -- [B,C]: row 3 of each block
local x_cols = x:narrow(3, 2, 2):label("x_cols")            -- [B,R,2]: columns 2 and 3
local x_T_flat = x_T:reshape(24):label("x_T_flat")          -- view refuses (x_T is not contiguous): reshape copies
local shifted = (x + bias):label("shifted")                 -- [B,R,C] + [C]: the bias stretched over B and R
local centered = (x - x:mean("C", true)):label("centered")  -- [B,R,C] - [B,R,1]: each row minus its mean

-- ===== checks =====
if not (x_T:shares_storage(x) and x_row3:shares_storage(x) and x_cols:shares_storage(x)) then
  error("transpose, select and narrow are views of x: they copy nothing")
end
if x_T_flat:shares_storage(x) then error("x_T in row order is not x's storage order: reshape had to copy") end
tt.assert_close(x_cols:stride(), {12, 4, 1}, 0, 0, "narrow keeps x's strides")
if x_cols:offset() ~= 1 then error("x_cols starts at storage position 1") end
tt.assert_close(x_T_flat:narrow(1, 1, 4), {0, 4, 8, 1}, 0, 0, "x_T row by row: down x's first column first")
tt.assert_close(centered:sum("C"), tt.zeros(2, 3), 0, 1e-5, "each centered row sums to 0")
print("Exercise 00: every check passed.")
