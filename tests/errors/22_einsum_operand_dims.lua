-- the spec says 4 axes for each operand; k has 3
local q = tt.randn(2, 4, 5, 8)
local k = tt.randn(2, 5, 8)
local s = tt.einsum("b h i d, b h j d -> b h i j", q, k)
