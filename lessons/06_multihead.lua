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
-- Section 5 loads the model lesson 14 trained (lessons/lib/induction_model.lua,
-- weights in lessons/data/induction.safetensors) to show heads that specialise.

tt.manual_seed(6)
-- lesson 14's trained model (section 5), from the file next to this one
local M = dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/induction_model.lua")
local PERIOD = 11                 -- section 5's sequences repeat every 11 tokens
local ROLE_MIN = 0.3              -- a score this high names a head's role

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
print("Figure: " .. tt.figure_path("images/06_flow.png"))
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

tt.trace.section("5. What the heads look at: a trained model")
print("(This section uses the model lesson 14 trains and explains; read it now for")
print("the pictures, or come back to it after lesson 14.)")
print("Random weights (sections 1-4) are enough to follow the shapes, but their")
print("heads differ only by noise. Trained heads specialise. Lesson 14 trains a")
print(string.format("small model on random tokens that repeat with a period P: %d layers of", 2))
print(string.format("causal multi-head attention, each H = %d heads of Dh = %d (D = %d), split,", M.H, M.Dh, M.D))
print("attended and merged exactly as above (with tt.sdpa). Its weights are in")
print("lessons/data/induction.safetensors; here they are loaded and run on")
print(string.format("sequences of period P = %d. (Model untraced: the trace above has the shapes.)", PERIOD))
tt.trace.off()
local model = M.load()
local batch = M.repeated_batch(32, PERIOD)           -- measured on 32 sequences
local _, w_batch = tt.no_grad(M.forward, model, batch, {weights = true})
local scores_of = {M.head_scores(w_batch[1], PERIOD), M.head_scores(w_batch[2], PERIOD)}
local seq = batch:narrow(1, 1, 1)                    -- the drawn one: the first of them
local _, w_seq = tt.no_grad(M.forward, model, seq, {weights = true})
tt.trace.on()
print("Three scores say what a head does, each a mean over the 32 sequences of the")
print("weight a query puts on one key:")
print("  current:  the query's own token (key i)")
print("  previous: the token just before it (key i - 1)")
print("  induction: for a repeated token, the token that followed its earlier")
print("             occurrence (key i - P + 1): the copying pattern of lesson 14")
print(string.format("Rule: a head is named by its highest score when that is at least %.1f;", ROLE_MIN))
print(string.format("when none is, no one of these keys gets %.1f of its weight: \"diffuse\" here.", ROLE_MIN))
local ROLES = {{"current", "current token"}, {"prev", "previous token"}, {"ind", "induction"}}
local titles, roles_seen, n_roles, n_diffuse, in_layer = {}, {}, 0, 0, {{}, {}}
print("  head      current  previous  induction   role")
for l = 1, 2 do
  for h = 1, M.H do
    local s, role, best = scores_of[l], "diffuse", ROLE_MIN
    for _, r in ipairs(ROLES) do
      if s[r[1]][h] >= best then role, best = r[2], s[r[1]][h] end
    end
    print(string.format("  L%d H%d   %7.2f  %8.2f  %9.2f   %s", l, h, s.current[h], s.prev[h], s.ind[h], role))
    titles[#titles + 1] = string.format("L%d H%d: %s", l, h, role)
    in_layer[l][role] = true
    if role == "diffuse" then n_diffuse = n_diffuse + 1   -- no role: not counted as one
    elseif not roles_seen[role] then roles_seen[role], n_roles = true, n_roles + 1 end
  end
end
if n_roles < 3 then error("the trained heads should play all 3 roles") end
if not (in_layer[1]["current token"] and in_layer[1]["previous token"] and in_layer[2]["induction"]) then
  error("the trained model should have current- and previous-token heads in layer 1, induction heads in layer 2")
end
print(string.format("Checked: the heads play all %d roles: a current-token and a previous-token head", n_roles))
print(string.format("in layer 1, induction heads in layer 2; %d of the 8 heads are diffuse (no role).", n_diffuse))
local seq_tokens = M.chars(seq[1]:totable())
tt.trace.off()
tt.heatmap(tt.cat({w_seq[1][1], w_seq[2][1]}, 1), "images/06_heads.png", {
  title = string.format("Trained heads (lesson 14's model), one sequence repeating with period %d", PERIOD),
  panel_titles = titles, xlabels = seq_tokens, ylabels = seq_tokens, xtitle = "Key", ytitle = "Query",
  mask = {["masked: exactly 0"] = ~tt.causal_mask(M.N)},
  cmap = "viridis", vmin = 0, vmax = 1, annotate = false })
tt.trace.on()
print("Figure: " .. tt.figure_path("images/06_heads.png") .. ", every head of both layers on the first sequence")
print("(a row is a query's weights; hatched: the masked future). Same split, same")
print("batched matmul, same merge: only the weights differ, and with them what each")
print("head reads. Be careful reading meaning into a map, though: layer 2's four")
print("heads all learned the same stripe (redundant), and a weight map alone explains")
print("no decision (lesson 14 switches a head off to show what it is for).")
