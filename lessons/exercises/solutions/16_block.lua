-- Exercise 16, solution — RMSNorm, SwiGLU and a pre-norm block by hand (follows lessons/16_the_block.lua).
-- The reference that `./tensortrace --exercise 16` compares your copy with.
-- recheck: N = 7, seed = 30; D = 24, H = 3; B = 2; N = 1

tt.manual_seed(16)
local B, N, D, H = 1, 5, 16, 2
local blk = tt.nn.Block(D, H, {rope = true})   -- its parts: attn_norm, attn, ffn_norm, ffn
local x = tt.randn(B, N, D):label("x")
local eps = blk.attn_norm.eps                 -- 2^-23, as PyTorch's RMSNorm
-- ===== your code below =====

local function rmsnorm(t, g) return t / ((t * t):mean(-1, true) + eps):sqrt() * g end
local normed1 = rmsnorm(x, blk.attn_norm.weight):label("normed1")
local attn_out = blk.attn(normed1):label("attn_out")
local h = (x + attn_out):label("h")
local normed2 = rmsnorm(h, blk.ffn_norm.weight):label("normed2")
local gate = normed2:matmul(blk.ffn.gate_proj.weight:mT())
local up = normed2:matmul(blk.ffn.up_proj.weight:mT())
local ffn_out = ((gate * gate:sigmoid()) * up):matmul(blk.ffn.down_proj.weight:mT()):label("ffn_out")
local out = (h + ffn_out):label("out")

-- ===== checks =====
tt.assert_close(normed1, blk.attn_norm(x), 1e-5, 1e-6, "normed1 equals the block's RMSNorm")
tt.assert_close(ffn_out, blk.ffn(normed2), 1e-5, 1e-6, "ffn_out equals the block's SwiGLU")
tt.assert_close(out, blk(x), 1e-5, 1e-5, "out equals the block")
print("Exercise 16: every check passed.")
