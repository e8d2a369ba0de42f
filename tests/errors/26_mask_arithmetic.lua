-- a bool mask is not a number matrix: convert it first
local mask = tt.causal_mask(3)
local additive = mask * -1e9
