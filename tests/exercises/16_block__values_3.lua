-- exercise: 16_block
-- expect: values
-- the second residual forgotten: out is the FFN's output alone; the verdict names out's line (21), where h is not added, not ffn_out's.
-- (a copy of the solution with this one mistake; its checks are left out, as a learner's copy has none)

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
local out = ffn_out:label("out")
