-- A 20-line attention block whose text trace is pinned byte for byte in
-- attention.trace: every op, shape, dim name, view stride and FLOP count.
tt.manual_seed(0)
local B, N, D, H = 2, 5, 16, 4
local Dh = D // H
local x = tt.randn(B, N, D):named("B", "N", "D"):label("X")
local wq, wk, wv = tt.nn.Linear(D, D), tt.nn.Linear(D, D), tt.nn.Linear(D, D)
tt.trace.section("project and split heads")
local q = tt.rearrange(wq(x), "b n (h d) -> b h n d", {h = H}):label("Q")
local k = wk(x):reshape(B, N, H, Dh):transpose(2, 3):named("B", "H", "Nk", "Dh"):label("K")
local v = tt.rearrange(wv(x), "b n (h d) -> b h n d", {h = H}):label("V")
tt.trace.section("scores, mask, weights")
local scores = tt.einsum("b h i d, b h j d -> b h i j", q, k) / math.sqrt(Dh)
scores:label("scores")
local weights = scores:masked_fill(~tt.causal_mask(N), -math.huge):softmax(-1):label("weights")
local heads = weights:matmul(v):label("heads")
local out = tt.rearrange(heads, "b h n d -> b n (h d)"):label("out")
tt.trace.section("the fused kernel agrees")
local fused = tt.sdpa(q, k, v, {causal = true})
tt.assert_close(fused, heads, 1e-5, 1e-5)
print(out:shape()[3] == D)
tt.trace.summary{times = false}
