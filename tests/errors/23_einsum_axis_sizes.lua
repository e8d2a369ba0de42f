-- the shared axis d must have one length
local q = tt.randn(5, 8)
local k = tt.randn(5, 4)
local s = tt.einsum("i d, j d -> i j", q, k)
