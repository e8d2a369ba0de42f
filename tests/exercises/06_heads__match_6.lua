-- exercise: 06_heads
-- expect: match
-- The einops way: rearrange to split and merge, einsum for both products.
-- (a copy of the solution written another way; it keeps its checks, which still pass)

tt.manual_seed(6)
local B, N, D, H = 2, 5, 12, 3  -- 2 sentences of 5 tokens, 12 features, 3 heads
local Dh = D // H               -- 4 features per head
local X = tt.randn(B, N, D):named("B", "N", "D"):label("X")
local W_Q, W_K, W_V = tt.nn.Linear(D, D), tt.nn.Linear(D, D), tt.nn.Linear(D, D)
local W_O = tt.nn.Linear(D, D)
local causal = tt.causal_mask(N)   -- true = may attend
-- ===== your code below =====

local Q = tt.rearrange(W_Q(X), "B Nq (H Dh) -> B H Nq Dh", {H = H}):label("Q")
local K = tt.rearrange(W_K(X), "B Nk (H Dh) -> B H Nk Dh", {H = H}):label("K")
local V = tt.rearrange(W_V(X), "B Nk (H Dh) -> B H Nk Dh", {H = H}):label("V")
local scores = (tt.einsum("B H Nq Dh, B H Nk Dh -> B H Nq Nk", Q, K) / math.sqrt(Dh)):label("Scores")
local weights = scores:masked_fill(~causal, -math.huge):softmax("Nk"):label("Weights")
local heads = tt.einsum("B H Nq Nk, B H Nk Dh -> B H Nq Dh", weights, V):label("Heads")
local concat = tt.rearrange(heads, "B H Nq Dh -> B Nq (H Dh)"):named("B", "Nq", "D"):label("Concat")
local Y = W_O(concat):label("Y")

-- ===== checks =====
for h = 1, H do   -- head h is features (h-1)*Dh+1 .. h*Dh of every token
  tt.assert_close(Q:select(2, h), W_Q(X):narrow(3, (h - 1) * Dh + 1, Dh), 0, 0, "head " .. h .. " of Q")
end
tt.assert_close(heads, tt.sdpa(Q, K, V, {causal = true}), 1e-5, 1e-5, "Heads equal tt.sdpa(causal = true)")
tt.assert_close(concat:narrow(3, Dh + 1, Dh), heads:select(2, 2), 0, 0, "head 2 fills features 5..8 of Concat")
tt.assert_close(concat, tt.rearrange(heads, "B H Nq Dh -> B Nq (H Dh)"), 0, 0, "Concat equals the einops merge")
print("Exercise 06: every check passed.")
