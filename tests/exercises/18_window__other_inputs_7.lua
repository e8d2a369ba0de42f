-- exercise: 18_window
-- expect: other_inputs
-- The positions written as 1..10, N's value here: right for these inputs only.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

tt.manual_seed(18)
local H, N, Dh, W = 2, 10, 4, 4     -- heads, tokens, head width, window (keys a query sees, itself included)
local q = tt.randn(1, H, N, Dh):label("q")
local k = tt.randn(1, H, N, Dh):label("k")
local v = tt.randn(1, H, N, Dh):label("v")
-- ===== your code below =====

local i = tt.arange(1, 11):view(10, 1)
local j = tt.arange(1, 11):view(1, 10)
local band = (j:le(i) & (i - j):lt(W)):label("band")
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
local weights = scores:masked_fill(~band, -math.huge):softmax(-1):label("weights")
local out = weights:matmul(v):label("out")
-- decoding token t = W + 1 with a buffer of W slots: tokens 1..W fill slots 1..W
local t = W + 1
local slot = tt.tensor({(t - 1) % W + 1}):label("slot")
local kbuf = k:narrow(3, 1, W):clone()
local vbuf = v:narrow(3, 1, W):clone()
kbuf:narrow(3, slot:item(), 1):copy_(k:narrow(3, t, 1))
vbuf:narrow(3, slot:item(), 1):copy_(v:narrow(3, t, 1))
kbuf:label("kbuf")
local out_t = tt.sdpa(q:narrow(3, t, 1), kbuf, vbuf):label("out_t")
