-- align is "lower_right" or "upper_left"
local m = tt.causal_mask(3, 5, "right")
