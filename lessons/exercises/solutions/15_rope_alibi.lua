-- Exercise 15, solution — RoPE and ALiBi by hand (follows lessons/15_positions.lua).
-- The reference that `./tensortrace --exercise 15` compares your copy with.
-- recheck: N = 9, seed = 30; Dh = 4, H = 4; B = 2; N = 1

tt.manual_seed(15)
local B, H, N, Dh = 1, 2, 6, 8   -- 1 sequence, 2 heads, 6 tokens, head width 8
local q = tt.randn(B, H, N, Dh):label("q")
local k = tt.randn(B, H, N, Dh):label("k")
local v = tt.randn(B, H, N, Dh):label("v")
-- ===== your code below =====

local theta = (tt.arange(0, Dh // 2) * (-2 * math.log(10000) / Dh)):exp():label("theta")
local angles = (tt.arange(0, N):view(N, 1) * theta:view(1, Dh // 2)):label("angles")
local function rotate(x)   -- half-split pairs: (x_i, x_(i + Dh/2))
  local x1, x2 = x:narrow(4, 1, Dh // 2), x:narrow(4, Dh // 2 + 1, Dh // 2)
  local c, s = angles:cos(), angles:sin()
  return tt.cat({x1 * c - x2 * s, x1 * s + x2 * c}, 4)
end
local q_rot = rotate(q):label("q_rot")
local k_rot = rotate(k):label("k_rot")
local scores_rope = (q_rot:matmul(k_rot:mT()) / math.sqrt(Dh)):label("scores_rope")
local slopes = {}
for h = 1, H do slopes[h] = 2 ^ (-8 * h / H) end
local distance = tt.arange(0, N):view(N, 1) - tt.arange(0, N):view(1, N)          -- i - j
local alibi_bias = (tt.tensor(slopes):view(H, 1, 1) * -distance):label("alibi_bias")
local scores = q:matmul(k:mT()) / math.sqrt(Dh) + alibi_bias
local weights_alibi = scores:masked_fill(~tt.causal_mask(N), -math.huge):softmax(-1):label("weights_alibi")

-- ===== checks =====
tt.assert_close(q_rot, tt.rope(q, tt.arange(0, N)), 1e-5, 1e-5, "q_rot equals tt.rope")
tt.assert_close(k_rot, tt.rope(k, tt.arange(0, N)), 1e-5, 1e-5, "k_rot equals tt.rope")
local shifted = tt.rope(q, tt.arange(3, N + 3)):matmul(tt.rope(k, tt.arange(3, N + 3)):mT()) / math.sqrt(Dh)
tt.assert_close(scores_rope, shifted, 1e-4, 1e-4, "RoPE's scores do not move when every position shifts by 3")
local _, w = tt.sdpa(q, k, v, {causal = true, alibi = true, weights = true})
tt.assert_close(weights_alibi, w, 1e-5, 1e-6, "weights_alibi equals tt.sdpa{alibi = true, causal = true}")
print("Exercise 15: every check passed.")
