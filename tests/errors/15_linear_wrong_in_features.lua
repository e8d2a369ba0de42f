-- the projection expects 8 input features; x has 16
local x = tt.randn(2, 5, 16):named("B", "N", "D")
local proj = tt.nn.Linear(8, 16)
local q = proj(x)
