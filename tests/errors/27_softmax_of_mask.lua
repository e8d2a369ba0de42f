-- softmax needs float scores, not the bool mask
local mask = tt.causal_mask(4)
local w = mask:softmax(-1)
