-- a window counts keys: a whole number
local q = tt.randn(2, 5, 8)
local out = tt.sdpa(q, q, q, {window = 2.5})
