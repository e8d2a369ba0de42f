-- token ids are int64: a negative integer power has no integer answer
local ids = tt.tensor({{3, 1, 4}, {1, 5, 9}}, "int64")
local inv = ids ^ -1
