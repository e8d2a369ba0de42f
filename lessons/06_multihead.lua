-- 06_multihead.lua — multi-head attention: split D into H heads, attend, merge.
--
-- Multi-head attention does not copy the model H times. It cuts each token's
-- D features into H slices of Dh = D/H, runs attention on every slice
-- independently (the head dim is just one more batch dim), glues the H
-- outputs back together and mixes them with an output projection W_O:
--   Q,K,V [B,N,D] -> [B,H,N,Dh] -> scores, weights [B,H,N,N] -> heads [B,H,N,Dh]
--   -> concat [B,N,D] -> W_O -> Y [B,N,D]
-- The split is a view (no copy: the trace shows the strides), the per-head
-- loop and the batched form agree, and so do the einops forms.
--
-- Run it:   ./tensortrace lessons/06_multihead.lua       (every shape and stride)
--           ./tensortrace -q lessons/06_multihead.lua    (narrative only)
-- Figures:  images/06_flow.png  images/06_heads.png

tt.manual_seed(6)

local function untraced(fn, ...)
  tt.trace.off(); fn(...); tt.trace.on()
end
local function list(t) return "(" .. table.concat(t, ",") .. ")" end

local tokens = {"The", "cat", "sat", "on", "the", "mat"}
local B, N, D, H = 2, #tokens, 64, 4
local Dh = D // H
tt.trace.section("0. Setup")
print(string.format("B = %d sentences of N = %d tokens, D = %d features, H = %d heads.", B, N, D, H))
print("Four Linear layers: W_Q, W_K, W_V (D -> D, all heads at once) and W_O.")
local X = tt.randn(B, N, D):named("B", "N", "D"):label("X")
local W_Q, W_K, W_V = tt.nn.Linear(D, D), tt.nn.Linear(D, D), tt.nn.Linear(D, D)
local W_O = tt.nn.Linear(D, D)
local causal = tt.causal_mask(N)

tt.trace.section("1. Splitting D into heads is only a view")
print(string.format("D = %d features per token become H = %d heads of Dh = %d.", D, H, Dh))
print("One Linear makes the queries of all heads at once: [B,N,D].")
local q_flat = W_Q(X):named("B", "N", "D"):label("q_flat")
print("view cuts the last dim into [H, Dh]; transpose moves H in front of N:")
local q_split = q_flat:view(B, N, H, Dh):named("B", "N", "H", "Dh")
local q = q_split:transpose("N", "H"):label("q_heads")
untraced(function()
  print("  q_flat        shape " .. list(q_flat:shape()) .. "    strides " .. list(q_flat:stride()))
  print("  view          shape " .. list(q_split:shape()) .. "  strides " .. list(q_split:stride()))
  print("  transpose     shape " .. list(q:shape()) .. "  strides " .. list(q:stride())
    .. "  contiguous " .. tostring(q:is_contiguous()))
end)
if not q:shares_storage(q_flat) then error("splitting heads should not copy") end
print("Both steps share q_flat's storage: no number moved. Head h is simply")
print(string.format("features (h-1)*%d+1 .. h*%d of every token:", Dh, Dh))
tt.trace.off()
for h = 1, H do
  tt.assert_close(q:select(2, h), q_flat:narrow(3, (h - 1) * Dh + 1, Dh), 0, 0,
    "head " .. h .. " is a slice of the features")
end
tt.trace.on()
print(string.format("  checked for all %d heads.", H))

tt.trace.section("2. The whole multi-head layer, batched")
print("Split Q, K and V, then one batched matmul computes the scores of every")
print("head of every sentence: [B,H,Nq,Dh] @ [B,H,Dh,Nk] -> [B,H,Nq,Nk].")
print("(Nq and Nk are the same N tokens, named by role: asking, and being asked.)")
local Q = W_Q(X):view(B, N, H, Dh):transpose(2, 3):named("B", "H", "Nq", "Dh"):label("Q")
local K = W_K(X):view(B, N, H, Dh):transpose(2, 3):named("B", "H", "Nk", "Dh"):label("K")
local V = W_V(X):view(B, N, H, Dh):transpose(2, 3):named("B", "H", "Nk", "Dh"):label("V")
local scores = (Q:matmul(K:mT()) / math.sqrt(Dh)):label("Scores")
print("A causal mask [Nq,Nk] broadcasts over B and H; softmax runs over the keys.")
local weights = scores:masked_fill(~causal, -math.huge):softmax("Nk"):label("Weights")
local heads = weights:matmul(V):label("Heads")
print("Merge: move H back next to Dh and flatten [H,Dh] into D. After the")
print("transpose the memory is not in order, so reshape has to copy here.")
local concat = heads:transpose("Nq", "H"):reshape(B, N, D):label("Concat")
print("W_O then mixes the heads' features: the only place where heads interact.")
local Y = W_O(concat):label("Y")
tt.flow("images/06_flow.png", {title = "Multi-head attention: split, attend per head, merge, W_O"})
print("Figure: images/06_flow.png")
if concat:shares_storage(heads) then error("merging transposed heads should copy") end
tt.assert_close(weights:sum(-1), tt.ones(B, H, N), 1e-6, 1e-6, "every head's rows sum to 1")
print("Checked: every row of every head sums to 1.")

tt.trace.section("3. The same, one head at a time")
print("The textbook form: for each head take its slice of Q, K, V, attend,")
print("then concatenate the H outputs. The trace shows head 1 only.")
-- [B,Nq,D] and [B,Nk,D]: every head side by side, tokens named by role
local q_all = q_flat:named("B", "Nq", "D")
local k_all, v_all = W_K(X):named("B", "Nk", "D"), W_V(X):named("B", "Nk", "D")
local outs = {}
for h = 1, H do
  if h == 2 then tt.trace.off() end
  local cols = (h - 1) * Dh + 1
  local qh = q_all:narrow(3, cols, Dh)                  -- [B,Nq,Dh], a view
  local kh = k_all:narrow(3, cols, Dh)
  local vh = v_all:narrow(3, cols, Dh)
  local sh = qh:matmul(kh:mT()) / math.sqrt(Dh)         -- [B,Nq,Nk]
  local wh = sh:masked_fill(~causal, -math.huge):softmax("Nk")
  outs[h] = wh:matmul(vh)                               -- [B,Nq,Dh]
end
tt.trace.on()
local concat_loop = tt.cat(outs, 3):label("Concat_loop")
local Y_loop = W_O(concat_loop):label("Y_loop")
tt.assert_close(concat_loop, concat, 1e-5, 1e-6, "per-head loop concat equals batched concat")
tt.assert_close(Y_loop, Y, 1e-5, 1e-6, "per-head loop output equals batched output")
print(string.format("Checked: %d small attentions + cat give the batched result. The batched", H))
print("form does the same arithmetic in one matmul per step instead of H.")

tt.trace.section("4. The einops way")
print("rearrange writes the split as a pattern: \"(h d)\" says the last dim is")
print("h blocks of d, and the pattern moves h in front of s. einsum names every")
print("index of the product; the ones missing on the right (d, then j) are summed.")
local qr = tt.rearrange(q_all, "b s (h d) -> b h s d", {h = H})
local kr = tt.rearrange(k_all, "b s (h d) -> b h s d", {h = H})
local vr = tt.rearrange(v_all, "b s (h d) -> b h s d", {h = H})
tt.assert_close(qr, Q, 0, 0, "rearrange equals view + transpose")
if not qr:shares_storage(q_all) then error("rearrange of a split should be a view") end
local se = tt.einsum("b h i d, b h j d -> b h i j", qr, kr) / math.sqrt(Dh)
tt.assert_close(se, scores, 1e-5, 1e-6, "einsum scores equal matmul scores")
local we = se:masked_fill(~causal, -math.huge):softmax(-1)
local oe = tt.einsum("b h i j, b h j d -> b h i d", we, vr)
local merged = tt.rearrange(oe, "b h s d -> b s (h d)")
tt.assert_close(merged, concat, 1e-5, 1e-6, "einsum + rearrange merge equals transpose + reshape")
local qe = tt.rearrange(q_all, "... s (h d) -> ... h s d", {h = H})
tt.assert_close(qe, Q, 0, 0, "the \"...\" form of the pattern gives the same split")
print("Checked: rearrange equals view + transpose (also a view), einsum equals")
print("matmul with mT, and the merge pattern \"b h s d -> b s (h d)\" equals")
print("transpose + reshape.")

tt.trace.section("5. What the heads look at")
print("Each head has its own slice of W_Q, W_K, W_V, so each makes its own")
print("pattern of weights. Sentence 1, all heads:")
local w1 = weights[1]:label("Weights_sentence1")          -- [H, N, N]
local future = ~causal                                    -- [N, N] hatched in every panel
tt.heatmap(w1, "images/06_heads.png", {
  title = "Causal attention weights of each head (sentence 1)",
  xlabels = tokens, ylabels = tokens, xtitle = "Key", ytitle = "Query",
  mask = {["masked: exactly 0"] = future},
  cmap = "viridis", vmin = 0, vmax = 1, decimals = 1 })
print("Figure: images/06_heads.png, one panel per head (hatched: the masked future).")
untraced(function()
  local best = w1:argmax(-1):totable()
  for h = 1, H do
    local picks = {}
    for i = 1, N do picks[i] = tokens[best[h][i]] end
    print(string.format("  head %d: each query's favourite key: %s", h, table.concat(picks, " ")))
  end
end)
local spread = (w1:select(1, 1) - w1:select(1, 2)):abs():max():item()
if spread < 0.05 then error("heads 1 and 2 should attend differently") end
print("These projections are random, not trained, and still each head weighs the")
print("keys its own way (checked: heads 1 and 2 differ by more than 0.05 somewhere).")
print("Trained heads often differ far more. Be careful reading meaning into them,")
print("though: heads can be redundant, and a weight map alone explains no decision.")
