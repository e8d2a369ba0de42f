-- 01_qkv_projection.lua — from token vectors X to queries, keys and values.
--
-- Self-attention starts with three learned projections of the same input:
--   Q = X W_Q,  K = X W_K,  V = X W_V
--   scores = Q K^T / sqrt(Dk),  weights = softmax(scores) over the keys,  Z = weights V
-- This lesson runs that pipeline once with every shape in the trace, checks
-- each piece, explains why Q, K and V are three different things, and shows
-- that cross-attention is the same formula with Q taken from another sequence
-- (through its own projection weights).
--
-- Run it:   ./tensortrace lessons/01_qkv_projection.lua      (every shape, line by line)
--           ./tensortrace -q lessons/01_qkv_projection.lua   (narrative only)
-- Figures:  images/01_pipeline.png  images/01_cross_attention.png

tt.manual_seed(1)

local function untraced(fn, ...)
  tt.trace.off(); fn(...); tt.trace.on()
end

local tokens = {"The", "cat", "sat", "on", "the", "mat"}
local B, N, D = 2, #tokens, 32   -- 2 sentences of 6 tokens, 32 features per token
local Dk, Dv = 16, 24            -- query/key width and value width (see section 4)

tt.trace.section("1. The input: one vector per token")
print(string.format("X holds B=%d sentences of N=%d tokens, each token a vector of D=%d numbers", B, N, D))
print("(in a real model: embeddings plus position, or the previous layer's output).")
local X = tt.randn(B, N, D):named("B", "N", "D"):label("X")

tt.trace.section("2. Self-attention, step by step")
print("Three Linear layers map each token's D numbers to a query, a key and a value.")
local W_Q = tt.nn.Linear(D, Dk)
local W_K = tt.nn.Linear(D, Dk)
local W_V = tt.nn.Linear(D, Dv)
-- Linear keeps the B and N names; we name the new last dim, and give the
-- token dim its role: Nq for tokens asking, Nk for tokens being asked.
local Q = W_Q(X):named("B", "Nq", "Dk"):label("Q")
local K = W_K(X):named("B", "Nk", "Dk"):label("K")
local V = W_V(X):named("B", "Nk", "Dv"):label("V")
print("Every query is compared with every key by a dot product: [Nq,Dk] @ [Dk,Nk] -> [Nq,Nk].")
local scores = (Q:matmul(K:mT()) / math.sqrt(Dk)):label("Scores")
print("Softmax along the key dim turns each query's row of scores into weights.")
local weights = scores:softmax("Nk"):label("Weights")
print("Each query's output is its weighted mix of the value vectors.")
local Z = weights:matmul(V):label("Z")
untraced(function()
  local function shp(t) return "[" .. table.concat(t:shape(), ",") .. "]" end
  print("The shapes (B = " .. B .. " sentences go through together):")
  print("  X       " .. shp(X) .. "    input tokens")
  print("  Q, K    " .. shp(Q) .. "    what each token looks for / how it can be found")
  print("  V       " .. shp(V) .. "    what each token hands over")
  print("  Scores  " .. shp(scores) .. "     one score per (query, key) pair: the N x N part")
  print("  Weights " .. shp(weights) .. "     same shape, each row sums to 1")
  print("  Z       " .. shp(Z) .. "    one new vector per token, Dv wide")
end)
tt.flow("images/01_pipeline.png", {title = "Self-attention: X -> Q, K, V -> Scores -> Weights -> Z"})
print("Figure: " .. tt.figure_path("images/01_pipeline.png") .. " draws this pipeline from what actually ran.")

tt.trace.section("3. Checking the pieces")
print("A Linear layer is x W^T + b, with W stored as [out, in] (PyTorch's layout):")
untraced(function()
  print("  W_Q.weight is [" .. table.concat(W_Q.weight:shape(), ",") .. "], W_Q.bias is ["
    .. table.concat(W_Q.bias:shape(), ",") .. "]")
end)
tt.assert_close(Q, X:matmul(W_Q.weight:mT()) + W_Q.bias, 1e-5, 1e-5, "W_Q(X) = X W^T + b")
print("Softmax ran along the keys, so every ROW sums to 1; the columns do not:")
local row_sums = weights:sum("Nk")
local col_sums = weights:sum("Nq")
tt.assert_close(row_sums, tt.ones(B, N), 1e-6, 1e-6, "rows of weights sum to 1")
if tt.allclose(col_sums, tt.ones(B, N), 0, 1e-3) then error("columns should not all sum to 1") end
untraced(function()
  local c = col_sums[1]:totable()
  for j = 1, N do c[j] = string.format("%.3f", c[j]) end
  print("  column sums, sentence 1: " .. table.concat(c, "  "))
end)
print("A column sum says how much attention a key receives in total; nothing")
print("forces that to be 1.")
print("Output row i is sum over j of weights[i][j] * V[j]. Token 3 (\"sat\") by hand:")
local z_by_hand = tt.zeros(Dv)
tt.trace.off()
for j = 1, N do
  z_by_hand = z_by_hand + V[1][j] * weights[1][3][j]:item()
end
tt.trace.on()
tt.assert_close(Z[1][3], z_by_hand, 1e-5, 1e-6, "Z[1][3] equals the weighted sum of the values")
print("  matches Z[1][3]: checked.")

tt.trace.section("4. Why three projections and not X itself?")
print("Think of a search engine:")
print("  query (Q)  the search you type      what this token is looking for")
print("  key   (K)  the index entry          how this token can be found")
print("  value (V)  the document returned    what this token hands over once found")
print("Matching (Q against K) and content (V) live in separate learned spaces. A")
print("pronoun can look for nouns in Q/K space and still fetch the noun's meaning")
print("from V. Q and K must have the same width (Dk) to be dotted; V need not:")
print(string.format("here Dk = %d but Dv = %d, and Z comes out Dv wide.", Dk, Dv))
print("Without projections, scores would be X X^T: symmetric, so token i would")
print("match token j exactly as much as j matches i. With W_Q and W_K it need not.")
-- X plays both roles here, so its token dim gets both names: Nq as rows, Nk as columns.
local XXt = X:named("B", "Nq", "D"):matmul(X:named("B", "Nk", "D"):mT())
tt.assert_close(XXt, XXt:mT(), 1e-5, 1e-5, "X X^T is symmetric")
local QKt = Q:matmul(K:mT())
if tt.allclose(QKt, QKt:mT(), 0, 1e-2) then error("Q K^T should not be symmetric") end
print("Checked: X X^T equals its transpose; Q K^T does not.")

tt.trace.section("5. Cross-attention: same formula, queries from elsewhere")
print("\"Self\" means Q, K and V all come from the same sequence. In a translation")
print("model the decoder asks the questions (Q from its own tokens) and the")
print("encoder's tokens answer (K and V from the source sentence).")
local function attention(q, k, v)
  local s = (q:matmul(k:mT()) / math.sqrt(q:size(-1))):label("Scores")
  local w = s:softmax(-1):label("Weights")
  return w:matmul(v)
end
print("A decoder layer has its own cross-attention projections, separate from its")
print("self-attention ones, so this block gets three new Linear layers.")
local W_Qc, W_Kc, W_Vc = tt.nn.Linear(D, Dk), tt.nn.Linear(D, Dk), tt.nn.Linear(D, Dv)
local target = {"Le", "chat", "est", "assis"}
local Y = tt.randn(B, #target, D):named("B", "M", "D"):label("Y_decoder")
local Qc = W_Qc(Y):named("B", "Nq", "Dk"):label("Q_cross")
local Kc = W_Kc(X):named("B", "Nk", "Dk"):label("K_enc")
local Vc = W_Vc(X):named("B", "Nk", "Dv"):label("V_enc")
local Zc = attention(Qc, Kc, Vc):label("Z_cross")
tt.flow("images/01_cross_attention.png", {title = "Cross-attention: Q from the decoder, K and V from the encoder"})
print("Figure: " .. tt.figure_path("images/01_cross_attention.png"))
untraced(function()
  print(string.format("  Q from %d decoder tokens, K and V from %d encoder tokens:", #target, N))
  print("  scores are [" .. #target .. "," .. N .. "] per sentence, the output Z is ["
    .. table.concat(Zc:shape(), ",") .. "]: one vector per decoder token.")
end)
local Zself = attention(Q, K, V)
tt.assert_close(Zself, Z, 1e-6, 1e-6, "the same attention() on X, X, X is the self-attention above")
if Zc:size(2) ~= #target or Zc:size(3) ~= Dv then error("cross-attention output should be [B, M, Dv]") end
print("The same attention() function gives self-attention when all three come from X")
print("(checked against section 2). Cross-attention changes only where Q, K and V")
print("come from, and which weights project them.")
