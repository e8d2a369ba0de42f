-- which dim does softmax normalise? it must be said
local scores = tt.randn(2, 5, 5):named("B", "Nq", "Nk")
local weights = scores:softmax()
