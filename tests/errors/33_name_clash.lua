-- the same position cannot be both N and T
local a = tt.randn(2, 5, 16):named("B", "N", "D")
local b = tt.randn(2, 5, 16):named("B", "T", "D")
local c = a + b
