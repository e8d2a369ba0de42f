-- 17_mla.lua — multi-head latent attention (DeepSeek-V2): cache a small latent, not K and V.
--
-- MQA and GQA shrink the KV cache by sharing K/V heads (lesson 07). MLA
-- (DeepSeek-V2, 2024) caches instead one low-rank latent per token,
-- c = W_DKV h, from which each head's key and value are made back
-- (k = W_UK c, v = W_UV c). This lesson measures the cache of MHA, GQA, MQA
-- and MLA from the tensors each really keeps, and gives DeepSeek-V2's own
-- numbers; checks the "absorption" trick (W_UK folded into the query side,
-- W_UV into W_O, so keys and values are never made back) equal to the plain
-- form, and what it costs; illustrates why RoPE breaks that trick; and checks
-- the fix DeepSeek-V2 uses: a separate, decoupled RoPE key.
--
-- Run it:   ./tensortrace lessons/17_mla.lua
-- Figures:  images/17_kv_cache.png  images/17_kv_cache_deepseek.png

tt.manual_seed(17)
local N, D, H = 10, 128, 8          -- tokens, width, query heads
local Dh = D // H                   -- 16
local G = 2                         -- GQA's K/V heads
local DC, DR = 32, 8                -- MLA: latent width, decoupled RoPE width

local function W(out, in_) return tt.randn(out, in_) / math.sqrt(in_) end   -- a weight [out, in]
local h = tt.randn(1, N, D):label("h")
-- [B, N, n*Dh] -> [B, n, N, Dh]: n heads
local function heads(x, n) return tt.rearrange(x, "B N (H Dh) -> B H N Dh", {H = n}) end

tt.trace.section("1. What each variant caches, per token")
print("Decoding (lesson 09) keeps, for every past token, whatever the next query")
print("needs to attend. Each variant below is built, run on the same h [1, N, D],")
print("and its cache is the tensors it keeps; bytes per token are counted from them")
print(string.format("(float32). D = %d, H = %d heads of Dh = %d; GQA with %d K/V heads; MLA with a", D, H, Dh, G))
print(string.format("latent of d_c = %d and a decoupled RoPE key of d_r = %d.", DC, DR))
tt.trace.off()
local Wq, Wk, Wv = W(D, D), W(D, D), W(D, D)
local Wk_g, Wv_g = W(G * Dh, D), W(G * Dh, D)
local Wk_1, Wv_1 = W(Dh, D), W(Dh, D)
local W_dkv, W_uk, W_uv, W_kr = W(DC, D), W(D, DC), W(D, DC), W(DR, D)
tt.trace.on()
local caches = {
  {"MHA", {heads(h:matmul(Wk:mT()), H), heads(h:matmul(Wv:mT()), H)}},
  {"GQA (2 K/V heads)", {heads(h:matmul(Wk_g:mT()), G), heads(h:matmul(Wv_g:mT()), G)}},
  {"MQA", {heads(h:matmul(Wk_1:mT()), 1), heads(h:matmul(Wv_1:mT()), 1)}},
  {"MLA (c and k_rope)", {h:matmul(W_dkv:mT()):label("c (latent)"), tt.rope(h:matmul(W_kr:mT()), tt.arange(N))}},
}
local bytes, labels = {}, {}
print("  variant               cached tensors                      bytes a token")
for i, c in ipairs(caches) do
  local numel, shapes = 0, {}
  for j, t in ipairs(c[2]) do numel = numel + t:numel(); shapes[j] = tostring(t.shape) end
  bytes[i], labels[i] = numel * 4 // N, c[1]
  print(string.format("  %-20s  %-34s  %5d", c[1], table.concat(shapes, " + "), bytes[i]))
end
local want = {2 * H * Dh * 4, 2 * G * Dh * 4, 2 * Dh * 4, (DC + DR) * 4}
for i = 1, 4 do if bytes[i] ~= want[i] then error("cache of " .. labels[i]) end end
print(string.format("That is 2 H Dh, 2 G Dh, 2 Dh and d_c + d_r floats a token (x4 bytes). MLA keeps"))
print(string.format("%.1fx less than MHA here and less than GQA; MQA keeps less still (%d bytes).", bytes[1] / bytes[4], bytes[3]))
print("Each MLA head does get its own key and value, W_UK,h c and W_UV,h c, but all")
print(string.format("of them are made from the same %d-wide latent: together the heads' keys span", DC))
print(string.format("at most d_c = %d of the %d dimensions MHA's keys can span.", DC, D))
print("")
print("DeepSeek-V2's own sizes (its paper, section 2.1): n_h = 128 heads of d_h = 128,")
print("d_c = 512, d_h^R = 64. Per token and layer, in elements (bf16: x2 bytes):")
local DS = {H = 128, Dh = 128, DC = 512, DR = 64, G = 8}
local ds_elems = {2 * DS.H * DS.Dh, 2 * DS.G * DS.Dh, 2 * DS.Dh, DS.DC + DS.DR}
local ds_labels = {"MHA: 2 n_h d_h", string.format("GQA, %d K/V heads: 2 G d_h", DS.G), "MQA: 2 d_h", "MLA: d_c + d_h^R"}
for i = 1, 4 do
  print(string.format("  %-28s %6d elements  %7d bytes   %s", ds_labels[i], ds_elems[i], 2 * ds_elems[i],
    i == 1 and "" or string.format("%5.1fx less than MHA", ds_elems[1] / ds_elems[i])))
end
print(string.format("MLA's %d equals GQA with %.2f groups (%d / (2 d_h)), as the paper puts it.", ds_elems[4],
  ds_elems[4] / (2 * DS.Dh), ds_elems[4]))
tt.bars(tt.tensor(bytes), "images/17_kv_cache.png", {
  title = string.format("KV cache, bytes per token per layer (float32): D = %d, H = %d, d_c = %d, d_r = %d", D, H, DC, DR),
  xlabels = {"MHA", "GQA (2 K/V heads)", "MQA", "MLA"} })
tt.bars(tt.tensor({2 * ds_elems[1], 2 * ds_elems[2], 2 * ds_elems[3], 2 * ds_elems[4]}), "images/17_kv_cache_deepseek.png", {
  title = "DeepSeek-V2's sizes: KV cache, bytes per token per layer (bf16): 128 heads of 128, d_c = 512, d_r = 64",
  xlabels = {"MHA", "GQA (8 K/V heads)", "MQA", "MLA"} })
print("Figures: " .. tt.figure_path("images/17_kv_cache.png") .. " (this lesson's sizes) and")
print(tt.figure_path("images/17_kv_cache_deepseek.png") .. " (DeepSeek-V2's).")

tt.trace.section("2. Absorption: never make the keys back")
print("Plain MLA makes K and V of every head from the cached latent, then attends:")
print("  k_h = W_UK,h c,  v_h = W_UV,h c,  score = q_h . k_h")
print("But q_h . (W_UK,h c) = (W_UK,h^T q_h) . c: fold W_UK into the query once, and")
print("each head's query meets the cached latents directly (d_c wide). On the value")
print("side, sum_j w_j W_UV,h c_j = W_UV,h (sum_j w_j c_j): W_UV is applied after.")
local c = caches[4][2][1]
local q = heads(h:matmul(Wq:mT()), H):label("q")                         -- [1,H,N,Dh]
local k_plain = heads(c:matmul(W_uk:mT()), H):label("k (made back)")      -- [1,H,N,Dh]
local v_plain = heads(c:matmul(W_uv:mT()), H):label("v (made back)")
local plain = tt.sdpa(q, k_plain, v_plain, {causal = true}):label("plain")
-- W_UK as [H, Dh, d_c]: q_h [N, Dh] @ W_UK,h [Dh, d_c] -> the absorbed query [N, d_c]
local Wuk_h = W_uk:view(H, Dh, DC)
local Wuv_h = W_uv:view(H, Dh, DC)
local q_abs = q:matmul(Wuk_h):label("q absorbed")                         -- [1,H,N,d_c]
local scores = q_abs:matmul(c:unsqueeze(2):mT()) / math.sqrt(Dh)          -- [1,H,N,N]
local weights = scores:masked_fill(~tt.causal_mask(N), -math.huge):softmax(-1)
local absorbed = weights:matmul(c:unsqueeze(2)):matmul(Wuv_h:mT()):label("absorbed")   -- [1,H,N,Dh]
tt.assert_close(absorbed, plain, 1e-5, 1e-5, "absorbed = plain MLA")
print("Checked: the absorbed form equals the plain one; no k or v of any head is made.")
print("W_UV goes further: the heads' outputs are merged and multiplied by W_O, so")
print("W_O,h W_UV,h is one [D, d_c] matrix a head, computed once (DeepSeek-V2 2.1.2):")
tt.trace.off()
local Wo = W(D, D)
local merged = tt.rearrange(absorbed, "B H N Dh -> B N (H Dh)"):matmul(Wo:mT())   -- lesson 06's merge and W_O
local Wo_h = Wo:view(D, H, Dh):permute(2, 1, 3)                                    -- [H, D, Dh]: W_O's columns of head h
local Wov = Wo_h:matmul(Wuv_h)                                                      -- [H, D, d_c], once, offline
tt.trace.on()
local mixed = weights:matmul(c:unsqueeze(2))                                         -- [1,H,N,d_c]: latents mixed per head
local folded_out = mixed:matmul(Wov:mT()):sum(2):label("W_UV folded into W_O")      -- sum over heads
tt.assert_close(folded_out, merged, 1e-4, 1e-5, "W_UV folded into W_O")
print("Checked: the same output, with W_UV never applied on its own.")
print("")
print("What absorption costs: each head's query now meets a d_c-wide latent, not a")
print(string.format("Dh-wide key, so a score is a dot product of %d, not %d: %dx the score FLOPs", DC, Dh, DC // Dh))
print("(the trace: the absorbed scores, q absorbed @ c, count 51.2 kFLOP, where plain")
print("q @ k^T is 25.6). DeepSeek-V2: 512 + 64 = 576 wide")
print("against d_h + d_h^R = 192 if the keys were made back. The trade is compute")
print("for memory traffic: at decode time reading the cache, not arithmetic, is the")
print("bottleneck. Seen from the cache, absorbed MLA is MQA with one wide key: every")
print("head reads the same cached [c, k_rope] (d_c + d_r wide) as its key and the same")
print("c as its value. (DeepSeek-V2 also compresses the queries through a latent,")
print("c_Q, to save activation memory in training; it does not touch the cache.)")

tt.trace.section("3. Why RoPE blocks the absorption")
print("RoPE turns q_i and k_j by angles of their positions i and j (tt.rope). Then")
print("  score = (R_i q)^T (R_j W_UK c_j) = q^T R_(j-i) W_UK c_j")
print("and the matrix between q and c_j depends on j - i: there is no single matrix")
print("to fold into the query. Illustrated: apply RoPE to q and to the made-back")
print("keys, and try the fold anyway (turn the query, then fold W_UK into it).")
local pos = tt.arange(N)
local qr = tt.rope(q, pos)
local kr = tt.rope(k_plain, pos)
local plain_rope = qr:matmul(kr:mT()) / math.sqrt(Dh)
local folded_try = qr:matmul(Wuk_h):matmul(c:unsqueeze(2):mT()) / math.sqrt(Dh)
local gap = (plain_rope - folded_try):abs():max():item()
local scale = plain_rope:abs():max():item()
print(string.format("  largest score difference: %.3f (scores reach %.3f)", gap, scale))
local no_rope = (q:matmul(k_plain:mT()) - q_abs:matmul(c:unsqueeze(2):mT())):abs():max():item()
print(string.format("  the same fold without RoPE:  %s", no_rope < 1e-4 and "under 1e-4" or string.format("%.2g", no_rope)))
local first_key = (plain_rope - folded_try):narrow(-1, 1, 1):abs():max():item()
if not (no_rope < 1e-4 and first_key < 1e-4) then error("without RoPE, and at key position 0, the fold should match") end
print("Without RoPE the fold agrees to float rounding, and so does the first key's")
print("column (under 1e-4) with it: position 0 is not turned, R_0 = I. Checked.")
print("A correct fold exists, but it needs R_(j-i) between q_i and W_UK: one matrix")
print("for every (query, key) pair. Done that way, key by key (turn each query back")
print("by the key's position, then fold W_UK):")
tt.trace.off()
local cols = {}
for j = 1, N do
  local back = tt.rope(qr, tt.full({N}, -(j - 1)))                       -- R_(-j) R_i q: [1,H,N,Dh]
  cols[j] = back:matmul(Wuk_h):matmul(c:narrow(2, j, 1):unsqueeze(2):mT()) / math.sqrt(Dh)   -- [1,H,N,1]
end
local per_pair = tt.cat(cols, -1)
tt.trace.on()
tt.assert_close(per_pair, plain_rope, 1e-4, 1e-4, "a fold per (query, key) pair")
print("Checked: it gives RoPE's scores, at N matrix products a query instead of one:")
print("the saving is gone.")

tt.trace.section("4. The fix: a decoupled RoPE key")
print("DeepSeek-V2 splits each head's query and key in two: a part without RoPE,")
print("made back from the latent (so it absorbs), and a small RoPE part of d_r")
print("dims whose key k_rope = RoPE(W_KR h) is shared by all heads and cached:")
print("  score = q_nope . (W_UK c) + RoPE(q_rope) . k_rope")
tt.trace.off()
local Wq_r = W(H * DR, D)
tt.trace.on()
local q_rope = tt.rope(heads(h:matmul(Wq_r:mT()), H), pos)           -- [1,H,N,d_r]
local k_rope = caches[4][2][2]:unsqueeze(2)                           -- [1,1,N,d_r], the cached one
local sc = 1 / math.sqrt(Dh + DR)
-- plain: concatenate the two parts of q and of k, attend
local q_full = tt.cat({q, q_rope}, -1)
local k_full = tt.cat({k_plain, k_rope:expand(1, H, N, DR)}, -1)
local plain_dec = tt.sdpa(q_full, k_full, v_plain, {causal = true, scale = sc}):label("plain, decoupled")
-- absorbed: the no-RoPE part through the fold, the RoPE part against the cached k_rope
local s_abs = (q_abs:matmul(c:unsqueeze(2):mT()) + q_rope:matmul(k_rope:mT())) * sc
local w_abs = s_abs:masked_fill(~tt.causal_mask(N), -math.huge):softmax(-1)
local absorbed_dec = w_abs:matmul(c:unsqueeze(2)):matmul(Wuv_h:mT()):label("absorbed, decoupled")
tt.assert_close(absorbed_dec, plain_dec, 1e-5, 1e-5, "decoupled RoPE: absorbed = plain")
print("Checked: with the decoupled RoPE key the absorbed form equals the plain one")
print(string.format("again, and the cache is c and k_rope: %d + %d floats a token (section 1).", DC, DR))
print("The price: every head's RoPE part reads the same k_rope (an MQA-like key),")
print("and the scores gain d_r dims of position.")
print("")
print(string.format("Decoding with the latent cache: the cache holds tokens 1..%d (c and k_rope);", N - 1))
print(string.format("token %d arrives, its c and k_rope are made and appended, as lesson 09 appends", N))
print("K and V, and its one query reads the whole cache, absorbed:")
local h_new = h:narrow(2, N, 1)
local c_cache = tt.cat({c:narrow(2, 1, N - 1), h_new:matmul(W_dkv:mT())}, 2):label("c cache")            -- [1,N,d_c]
local kr_cache = tt.cat({k_rope:narrow(3, 1, N - 1),
                         tt.rope(h_new:matmul(W_kr:mT()), tt.tensor({N - 1})):unsqueeze(2)}, 3)       -- [1,1,N,d_r]
local q_new = heads(h_new:matmul(Wq:mT()), H)                                                          -- [1,H,1,Dh]
local qr_new = tt.rope(heads(h_new:matmul(Wq_r:mT()), H), tt.tensor({N - 1}))
local s_new = (q_new:matmul(Wuk_h):matmul(c_cache:unsqueeze(2):mT()) + qr_new:matmul(kr_cache:mT())) * sc
local out_new = s_new:softmax(-1):matmul(c_cache:unsqueeze(2)):matmul(Wuv_h:mT()):label("decoded token")
tt.assert_close(out_new, plain_dec:narrow(3, N, 1), 1e-5, 1e-5, "one decode step from the latent cache")
print(string.format("Checked: token %d's output from the cache equals row %d of the plain form; the", N, N))
print(string.format("cache grew by %d + %d floats, and no key or value was made.", DC, DR))
