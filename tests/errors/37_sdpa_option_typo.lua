-- a misspelt option is an error, not silently ignored
local q = tt.randn(1, 2, 5, 8)
local out = tt.sdpa(q, q, q, {casual = true})
