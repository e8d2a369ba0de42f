-- Exercise 16 — RMSNorm, SwiGLU and a pre-norm block by hand (follows lessons/16_the_block.lua).
--
-- A pre-norm block: h = x + attn(RMSNorm(x)), out = h + FFN(RMSNorm(h)).
-- RMSNorm(t) = t / sqrt(mean(t^2) + eps) * g over the last dim (no mean
-- subtracted, no bias; g is the norm's weight). The FFN is SwiGLU:
-- down(silu(gate(t)) * up(t)), silu(z) = z * sigmoid(z); gate, up and down are
-- Linear layers without bias (t @ W^T). Use the block's own weights and its
-- attention module (blk.attn) as they are.
-- Labels to produce:
--   normed1 [B,N,D]  attn_out [B,N,D]  h [B,N,D]  normed2 [B,N,D]  ffn_out [B,N,D]  out [B,N,D]
-- Check your work:  ./tensortrace --exercise 16
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/16_block.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(16)
local B, N, D, H = 1, 5, 16, 2
local blk = tt.nn.Block(D, H, {rope = true})   -- its parts: attn_norm, attn, ffn_norm, ffn
local x = tt.randn(B, N, D):label("x")
local eps = blk.attn_norm.eps                 -- 2^-23, as PyTorch's RMSNorm
-- ===== your code below =====

-- TODO(normed1): RMSNorm of x with blk.attn_norm.weight, written out.

-- TODO(attn_out): blk.attn of normed1.

-- TODO(h): the first residual add.

-- TODO(normed2): RMSNorm of h with blk.ffn_norm.weight.

-- TODO(ffn_out): SwiGLU of normed2 with blk.ffn.gate_proj.weight,
-- blk.ffn.up_proj.weight and blk.ffn.down_proj.weight, written out.

-- TODO(out): the second residual add.
