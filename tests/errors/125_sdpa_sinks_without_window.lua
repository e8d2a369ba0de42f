-- sinks are the first keys kept beside a sliding window: alone they mean nothing
local q = tt.randn(2, 5, 8)
local out = tt.sdpa(q, q, q, {sinks = 4})
