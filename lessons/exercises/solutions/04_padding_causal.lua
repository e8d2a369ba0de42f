-- Exercise 04, solution — padding and causal masks together (follows lessons/04_padding_mask.lua).
-- The reference that `./tensortrace --exercise 04` compares your copy with.
-- recheck: N = 6, seed = 14; Dh = 8

tt.manual_seed(4)
local lengths = {5, 3}          -- sentence 2 is "Dogs bark loudly <pad> <pad>"
local B, N, Dh = #lengths, 5, 4
local is_pad = tt.arange(N):view(1, N):ge(tt.tensor(lengths):view(B, 1)):label("is_pad")   -- [B,N]
local q = tt.randn(B, N, Dh):named("B", "Nq", "Dh"):label("q")
local k = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("k")
local v = tt.randn(B, N, Dh):named("B", "Nk", "Dh"):label("v")
-- ===== your code below =====

local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
local pad_keys = is_pad:unsqueeze(2)                      -- [B,1,N]: whole key columns
local weights_pad = scores:masked_fill(pad_keys, -math.huge):softmax("Nk"):label("weights_pad")
local hide = ~tt.causal_mask(N) | pad_keys                -- the future OR a pad key: [B,N,N]
local weights = scores:masked_fill(hide, -math.huge):softmax("Nk"):label("weights")
local Z = weights:matmul(v):label("Z")

-- ===== checks =====
tt.assert_close(weights_pad:sum("Nk"), tt.ones(B, N), 1e-6, 1e-6, "rows of weights_pad sum to 1")
tt.assert_close(weights:sum("Nk"), tt.ones(B, N), 1e-6, 1e-6, "rows of weights sum to 1")
local leak = (weights_pad * pad_keys:float()):sum():item() + (weights * hide:float()):sum():item()
if leak ~= 0 then error("hidden cells should get exactly 0, got " .. leak) end
tt.assert_close(Z, tt.sdpa(q, k, v, {mask = ~hide}), 1e-5, 1e-5, "Z equals tt.sdpa with mask = ~hide")
print("Exercise 04: every check passed.")
