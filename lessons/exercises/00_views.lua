-- Exercise 00 — views, reshape and broadcasting (follows lessons/00_tensors_and_views.lua).
--
-- Lesson 00 showed that a tensor is storage read through a shape, strides
-- and an offset, that transpose, select and narrow only change that recipe,
-- that reshape copies when view cannot, and how smaller shapes broadcast.
-- x holds 0..23 as a [2,3,4] block, so each value is its storage position.
-- Labels to produce, with these dim names (x's own names follow each op):
--   x_T [B,C,R]  x_row3 [B,C]  x_cols [B,R,C=2]  x_T_flat [24]
--   shifted [B,R,C]  centered [B,R,C]
-- Check your work:  ./tensortrace --exercise 00
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/00_views.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

local x = tt.arange(24):view(2, 3, 4):named("B", "R", "C"):label("x")
local bias = tt.tensor{100, 200, 300, 400}:named("C"):label("bias")
-- ===== your code below =====

-- TODO(x_T): x with its last two dims swapped (a view: no copy).

-- TODO(x_row3): row 3 of each of the two blocks (that dim goes away).

-- TODO(x_cols): columns 2 and 3 of every row (narrow: the offset moves).

-- TODO(x_T_flat): x_T as 24 numbers in its own row order; view refuses here, so reshape.

-- TODO(shifted): x plus bias, one bias per column (broadcasting [C] over [B,R,C]).

-- TODO(centered): x minus the mean of each row (a mean over C kept as a size-1 dim).
