-- the new key has lost its sequence dim
local cache = tt.randn(2, 4, 5, 8)
local new = tt.randn(2, 4, 8)
local k = tt.cat({cache, new}, 3)
