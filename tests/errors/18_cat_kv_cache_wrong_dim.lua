-- the KV cache grows along the sequence dim (3), not the head dim (4)
local cache = tt.randn(2, 4, 5, 8):named("B", "H", "N", "Dh")
local new = tt.randn(2, 4, 1, 8)
local k = tt.cat({cache, new}, 4)
