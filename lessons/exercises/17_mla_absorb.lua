-- Exercise 17 — MLA: the latent cache and absorbing W_UK (follows lessons/17_mla.lua).
--
-- MLA caches one latent per token, c = h W_DKV^T [1,N,d_c], and makes each
-- head's key and value back from it: k_h = c W_UK,h^T, v_h = c W_UV,h^T, where
-- W_UK,h is rows (h-1)*Dh+1 .. h*Dh of W_UK [D, d_c]. Absorbed, the keys are
-- never made: q_h . (W_UK,h c_j) = (q_h W_UK,h) . c_j. Write the absorbed form.
-- Labels to produce:
--   c [1,N,d_c]  q [1,H,N,Dh] (head h: features (h-1)*Dh+1 .. h*Dh of h W_q^T)
--   q_abs [1,H,N,d_c] (each head's query times its W_UK,h, as W_UK viewed [H,Dh,d_c])
--   scores_abs [1,H,N,N] (q_abs against c, divided by sqrt(Dh): the head size, not d_c)
--   weights [1,H,N,N] (causal, softmax)  out_abs [1,H,N,Dh] (the weights mix c, then W_UV,h)
--   cache_deepseek [2]: DeepSeek-V2's cached values per token and layer, MLA then
--     MHA (d_c = 512, d_h^R = 64, 128 heads of d_h = 128; MHA keeps K and V)
-- Check your work:  ./tensortrace --exercise 17
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/17_mla_absorb.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(17)
local N, D, H, DC = 6, 32, 4, 12    -- tokens, width, heads, latent width
local Dh = D // H                   -- 8
local function W(o, i) return tt.randn(o, i) / math.sqrt(i) end
local h = tt.randn(1, N, D):label("h")
local W_q, W_dkv, W_uk, W_uv = W(D, D), W(DC, D), W(D, DC), W(D, DC)   -- weights [out, in]
local causal = tt.causal_mask(N)    -- true = may attend
-- ===== your code below =====

-- TODO(c): the latent of every token.

-- TODO(q): the queries, split into H heads (tt.rearrange or view + transpose).

-- TODO(q_abs): each head's query times W_UK,h (W_uk:view(H, Dh, DC)).

-- TODO(scores_abs): q_abs against the latents (c:unsqueeze(2) gives [1,1,N,d_c]).

-- TODO(weights): the future hidden, softmax over the keys.

-- TODO(out_abs): the weights mix the latents; then each head's W_UV,h^T.

-- TODO(cache_deepseek): tt.tensor({MLA's count, MHA's count}).
