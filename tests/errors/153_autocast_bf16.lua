-- "bf16" is the short name other libraries use; the dtype is "bfloat16"
local x, w = tt.randn(4, 8), tt.randn(8, 3)
local y = tt.autocast("bf16", function() return x:matmul(w) end)
