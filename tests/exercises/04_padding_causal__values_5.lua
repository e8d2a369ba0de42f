-- exercise: 04_padding_causal
-- expect: values
-- The two reasons combined with AND instead of OR: only a key that is both in the future and a pad is hidden.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

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
local hide = ~tt.causal_mask(N) & pad_keys                -- the future OR a pad key: [B,N,N]
local weights = scores:masked_fill(hide, -math.huge):softmax("Nk"):label("weights")
local Z = weights:matmul(v):label("Z")
