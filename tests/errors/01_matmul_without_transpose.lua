-- scores need K transposed: q @ k^T, not q @ k
local q = tt.randn(5, 64)
local k = tt.randn(5, 64)
local scores = q:matmul(k)
