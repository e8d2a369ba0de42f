-- alternatives.lua — correct answers other than the solution's, one list
-- per exercise: each is the solution without its checks with the given
-- replacements (plain text, each found once), and must match the solution.
-- Read by catalogue.lua. The ways: einsum, tt.sdpa where the exercise
-- allows it, einops, an additive -inf or -1e9 mask, names instead of
-- numbers (or numbers instead of names), a loop.
return {
  { "00_views", "names", { 'x:transpose(2, 3)', 'x:transpose("R", "C")' }, { 'x:select(2, 3)', 'x:select("R", 3)' } },
  { "00_views", "einops", { 'x_T:reshape(24)', 'tt.rearrange(x_T, "b c r -> (b c r)")' } },
  { "01_projections", "einsum", { 'Q:matmul(K:mT())', 'tt.einsum("B Nq Dk, B Nk Dk -> B Nq Nk", Q, K)' } },
  { "01_projections", "sdpa", { 'local Zc = weights_c:matmul(Vc)', 'local Zc = tt.sdpa(Qc, Kc, Vc)' } },
  { "02_scaling", "numbers", { 'raw:softmax("Nk")', 'raw:softmax(-1)' }, { 'scaled:softmax("Nk")', 'scaled:softmax(2)' } },
  { "02_scaling", "multiply", { 'raw / math.sqrt(Dh)', 'raw * (1 / math.sqrt(Dh))' } },
  { "03_causal_mask", "einsum", { 'q:matmul(k:mT())', 'tt.einsum("B Nq Dh, B Nk Dh -> B Nq Nk", q, k)' } },
  { "03_causal_mask", "named_mask", { 'tt.causal_mask(N)', 'tt.causal_mask(N):named("Nq", "Nk")' } },
  { "03_causal_mask", "additive_inf", { 'scores:masked_fill(~allowed, -math.huge)', '(scores + tt.zeros(N, N):masked_fill(~allowed, -math.huge))' } },
  { "03_causal_mask", "additive_1e9", { 'scores:masked_fill(~allowed, -math.huge)', '(scores + (~allowed):float() * -1e9)' } },
  { "03_causal_mask", "sdpa", { 'local out = weights:matmul(v)', 'local out = tt.sdpa(q, k, v, {causal = true})' } },
  { "04_padding_causal", "additive", { 'scores:masked_fill(hide, -math.huge)', '(scores + hide:float() * -1e9)' } },
  { "04_padding_causal", "names", { 'is_pad:unsqueeze(2)', 'is_pad:view(B, 1, N)' } },
  { "05_hand_example", "loop", { 'local S = (Q:matmul(K:mT()) / math.sqrt(Dh))',
      'local rows = {}\nfor i = 1, Q:size(1) do rows[i] = Q[i]:matmul(K:mT()) / math.sqrt(Dh) end\nlocal S = tt.stack(rows, 1):named("Nq", "Nk")' } },
  { "05_hand_example", "einsum", { 'q3:matmul(K:mT())', 'tt.einsum("d, n d -> n", q3, K):named("Nk")' } },
  { "06_heads", "einops", { 'heads:transpose("Nq", "H"):reshape(B, N, D)', 'tt.rearrange(heads, "B H Nq Dh -> B Nq (H Dh)")' } },
  { "06_heads", "einops_split", { 'W_Q(X):view(B, N, H, Dh):transpose(2, 3)', 'tt.rearrange(W_Q(X), "b n (h d) -> b h n d", {h = H})' } },
  { "06_heads", "einsum", { 'Q:matmul(K:mT())', 'tt.einsum("B H Nq Dh, B H Nk Dh -> B H Nq Nk", Q, K)' } },
  { "06_heads", "loop", { 'local heads = weights:matmul(V)',
      'local hs = {}\nfor h = 1, H do hs[h] = weights:select(2, h):matmul(V:select(2, h)) end\nlocal heads = tt.stack(hs, 2):named("B", "H", "Nq", "Dh")' } },
  { "07_gqa", "einops", { 'k:repeat_interleave(R, "G")', 'tt.einrepeat(k, "B G Nk Dh -> B (G r) Nk Dh", {r = R})' } },
  { "07_gqa", "additive", { 'scores:masked_fill(~tt.causal_mask(N), -math.huge)', '(scores + (~tt.causal_mask(N)):float() * -1e9)' } },
  { "08_cross_attention", "sdpa", { 'local z = weights:matmul(v)', 'local z = tt.sdpa(q, k, v, {mask = ~pad})' } },
  { "08_cross_attention", "additive", { 'scores:masked_fill(pad, -math.huge)', '(scores + pad:float() * -1e9)' } },
  { "09_kv_cache_step", "numbers", { 'tt.cat({k_past, k_new}, "Nk")', 'tt.cat({k_past, k_new}, 3)' } },
  { "09_kv_cache_step", "sdpa", { 'local out = weights:matmul(v_rep)', 'local out = tt.sdpa(q_new, k_rep, v_rep, {causal = true})' } },
  { "10_flops", "loop", { 'local linear = (8 * D * D * N)', 'local linear = N * 0\nfor _ = 1, 8 do linear = linear + D * D * N end\nlinear = (linear)' } },
  { "11_stable_softmax", "numbers", { 'scores:max("Nk", true)', 'scores:max(2, true)' } },
  { "11_stable_softmax", "softmax", { 'local weights = (exps / exps:sum("Nk", true))', 'local weights = scores:softmax("Nk")' } },
  { "12_online_softmax", "names", { 'p:sum(-1, true)', 'p:sum(4, true)' } },
  { "13_softmax_backward", "einsum", { 'P:mT():matmul(g_out)', 'tt.einsum("Nq Nk, Nq Dh -> Nk Dh", P, g_out)' } },
  { "14_induction_head", "einops", { 'qkv:narrow(3, first, D):view(b, N, H, Dh):transpose(2, 3)',
      'tt.rearrange(qkv:narrow(3, first, D), "b n (h d) -> b h n d", {h = H})' } },
  { "14_induction_head", "sdpa", { 'local head_out = weights:matmul(v:select(2, HEAD))',
      'local head_out = tt.sdpa(q:select(2, HEAD), k:select(2, HEAD), v:select(2, HEAD), {causal = true})' } },
}
