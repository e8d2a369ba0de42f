-- exercise: 11_stable_softmax
-- expect: nan
-- The max never subtracted: exp of scores in the hundreds overflows to inf (and the weights become inf / inf = NaN).
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

tt.manual_seed(0)
local Nq, Nk, Dh = 4, 8, 128
local q = (tt.randn(Nq, Dh) * 3):named("Nq", "Dh"):label("q")     -- entries of std 3: no norm layer before them
local k = (tt.randn(Nk, Dh) * 3):named("Nk", "Dh"):label("k")
local scores = q:matmul(k:mT()):label("scores")                  -- unscaled: std about 3*3*sqrt(128) = 102
-- ===== your code below =====

local row_max = scores:max("Nk", true):label("row_max")          -- [Nq,1]
local exps = scores:exp():label("exps")              -- every exponent <= 0: no overflow
local weights = (exps / exps:sum("Nk", true)):label("weights")
