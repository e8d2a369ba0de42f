-- Exercise 08, solution — cross-attention over a padded encoder (follows lessons/08_cross_attention.lua).
-- The reference that `./tensortrace --exercise 08` compares your copy with.
-- recheck: Dh = 4, seed = 10; D = 12

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

local q = W_qk(y_dec):named("B", "Nq", "Dh"):label("Q")
local k = W_qk(x_enc):named("B", "Nk", "Dh"):label("K")
local v = W_v(x_enc):named("B", "Nk", "Dh"):label("V")
local scores = (q:matmul(k:mT()) / math.sqrt(Dh)):label("scores")
local weights = scores:masked_fill(pad, -math.huge):softmax("Nk"):label("weights")
local z = weights:matmul(v):label("Z")

-- ===== checks =====
tt.assert_close(weights:sum("Nk"), tt.ones(B, Nq), 1e-6, 1e-6, "every query's weights sum to 1")
if weights:masked_fill(~pad, 0):abs():max():item() ~= 0 then error("a <pad> key got weight") end
local _, best = weights:max("Nk")
local expect = {[2] = 1, [3] = 3, [4] = 2, [5] = 4}   -- le -> the, chat -> cat, noir -> black, dort -> sleeps
for i, j in pairs(expect) do
  if best[1][i]:item() ~= j then error(fr[1][i] .. " should attend most to " .. en[1][j]) end
end
local z_sdpa = tt.sdpa(q:unsqueeze(2), k:unsqueeze(2), v:unsqueeze(2), {mask = (~pad):unsqueeze(2)})
tt.assert_close(z_sdpa:squeeze(2), z, 1e-5, 1e-5, "Z equals tt.sdpa with mask = ~pad")
print("Exercise 08: every check passed.")
