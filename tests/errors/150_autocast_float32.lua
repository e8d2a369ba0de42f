-- autocast is for the 16-bit dtypes: float32 is what runs outside it
local x, w = tt.randn(4, 8), tt.randn(8, 3)
local y = tt.autocast("float32", function() return x:matmul(w) end)
