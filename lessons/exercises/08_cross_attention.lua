-- Exercise 08 — cross-attention over a padded encoder (follows lessons/08_cross_attention.lua).
--
-- The French decoder asks (queries from y_dec, Nq = 5 tokens); the English
-- encoder answers (keys and values from x_enc, Nk = 6 tokens, padded). The
-- scores are Nq x Nk; no causal mask, but no query may read a <pad> key.
-- Labels to produce, with these dim names:
--   Q [B,Nq,Dh]  K [B,Nk,Dh]  V [B,Nk,Dh]  scores [B,Nq,Nk]  weights [B,Nq,Nk]  Z [B,Nq,Dh]
-- Check your work:  ./tensortrace --exercise 08
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/08_cross_attention.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(0)
local D, Dh = 16, 8
local en = {{"the", "black", "cat", "sleeps", ".", "<pad>"}, {"the", "dog", "runs", ".", "<pad>", "<pad>"}}
local en_len = {5, 4}
local fr = {{"<s>", "le", "chat", "noir", "dort"}, {"<s>", "le", "chien", "court", "."}}
local B, Nk, Nq = #en, #en[1], #fr[1]
-- as in lesson 08: a French word's embedding is its English translation's meaning plus noise
local meaning_of = {the = 1, le = 1, black = 2, noir = 2, cat = 3, chat = 3, sleeps = 4, dort = 4,
                    ["."] = 5, dog = 6, chien = 6, runs = 7, court = 7, ["<s>"] = 8, ["<pad>"] = 9}
local meanings = tt.randn(9, D) * 1.5
local function embed(sentences)
  local rows = {}
  for b, words in ipairs(sentences) do
    local vecs = {}
    for i, w in ipairs(words) do vecs[i] = meanings[meaning_of[w]] + tt.randn(D) * 0.3 end
    rows[b] = tt.stack(vecs, 1)
  end
  return tt.stack(rows, 1)
end
local x_enc = embed(en):named("B", "Nk", "D"):label("x_enc")      -- the encoder's English states
local y_dec = embed(fr):named("B", "Nq", "D"):label("y_dec")      -- the decoder's French states
local W_qk = tt.nn.Linear(D, Dh, {bias = false})   -- shared by queries and keys, as in lesson 08
local W_v = tt.nn.Linear(D, Dh, {bias = false})
local pad = tt.arange(1, Nk + 1):view(1, 1, Nk):gt(tt.tensor(en_len):view(B, 1, 1)):label("pad")  -- [B,1,Nk]
-- ===== your code below =====

-- TODO(Q, K, V): the queries through W_qk, the keys through W_qk, the values
-- through W_v: each from the right side (decoder or encoder).

-- TODO(scores): Q against K transposed, divided by sqrt(Dh): [B,Nq,Nk].

-- TODO(weights): hide the <pad> keys (pad is true on them), softmax over the keys.

-- TODO(Z): the weighted sum of the values.
