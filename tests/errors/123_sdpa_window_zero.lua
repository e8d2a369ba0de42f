-- a window of 0 keys would hide every key; the smallest window is 1 (the query itself)
local q = tt.randn(2, 5, 8)
local out = tt.sdpa(q, q, q, {window = 0})
