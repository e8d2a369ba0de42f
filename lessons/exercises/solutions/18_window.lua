-- Exercise 18, solution — the band mask and the rolling buffer (follows lessons/18_sliding_window.lua).
-- The reference that `./tensortrace --exercise 18` compares your copy with.
-- recheck: N = 12, seed = 30; W = 3; H = 1, Dh = 8

tt.manual_seed(18)
local H, N, Dh, W = 2, 10, 4, 4     -- heads, tokens, head width, window (keys a query sees, itself included)
local q = tt.randn(1, H, N, Dh):label("q")
local k = tt.randn(1, H, N, Dh):label("k")
local v = tt.randn(1, H, N, Dh):label("v")
-- ===== your code below =====

local i = tt.arange(1, N + 1):view(N, 1)
local j = tt.arange(1, N + 1):view(1, N)
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

-- ===== checks =====
tt.assert_close(out, tt.sdpa(q, k, v, {window = W}), 1e-5, 1e-6, "out equals tt.sdpa{window = W}")
tt.assert_close(out_t, out:narrow(3, t, 1), 1e-5, 1e-6, "the buffer's answer for token t is row t of the window")
print("Exercise 18: every check passed.")
