-- the reference: a rearrange whose pattern is longer than the trace's 63 characters of arguments
tt.manual_seed(1)
local q = tt.randn(2, 3, 4, 8)
local k = tt.randn(2, 3, 4, 8)
local v = tt.randn(2, 3, 4, 8)
local w = (q:matmul(k:mT()) / math.sqrt(8)):softmax(4)
local out = tt.rearrange(w:matmul(v), "batch heads sequence headdim -> batch sequence (heads headdim)"):label("out")
