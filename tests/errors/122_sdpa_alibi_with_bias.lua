-- alibi = true is a bias computed in the kernel; a second bias beside it is refused
local q = tt.randn(4, 5, 8)
local out = tt.sdpa(q, q, q, {alibi = true, bias = tt.zeros(5, 5)})
