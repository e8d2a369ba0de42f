-- torch's keyword is enabled, not enable
local x, w = tt.randn(4, 8), tt.randn(8, 3)
local y = tt.autocast({dtype = "bfloat16", enable = false}, function() return x:matmul(w) end)
