-- the reference: cross-attention output, V from the encoder
tt.manual_seed(16)
local D = 4
local dec = tt.randn(2, 4, D)
local enc = tt.randn(2, 4, D)
local Wq, Wk, Wv = tt.randn(D, D), tt.randn(D, D), tt.randn(D, D)
-- ===== your code below =====
local q = dec:matmul(Wq):label("q")
local k = enc:matmul(Wk):label("k")
local v = enc:matmul(Wv):label("v")
local out = (q:matmul(k:mT()) / 2):softmax(-1):matmul(v):label("out")
