-- token ids count from 1: a 0-based id 0 (or one past the vocabulary) is out of range
local embeddings = tt.randn(5, 4)
local ids = tt.tensor({0, 2, 4}, "int64")
local x = embeddings:index_select(1, ids)
