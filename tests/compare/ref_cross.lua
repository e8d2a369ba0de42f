-- the reference: cross-attention, Q from the decoder, K and V from the encoder
tt.manual_seed(14)
local D = 8
local dec = tt.randn(1, 3, D):label("dec")
local enc = tt.randn(1, 5, D):label("enc")
local Wq, Wk = tt.nn.Linear(D, D), tt.nn.Linear(D, D)
-- ===== your code below =====
local q = Wq(dec):label("q")
local k = Wk(enc):label("k")
local scores = q:matmul(k:mT()):label("scores")
