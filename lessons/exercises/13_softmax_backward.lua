-- Exercise 13 — softmax's backward by hand, against backward() (follows lessons/13_gradients.lua).
--
-- Above the line one causal head runs forward from its scores S to a mean
-- squared error loss, and loss:backward() fills S.grad. Walk the chain rule
-- back by hand, one op at a time, as lesson 13 does:
--   loss = mean((out - target)^2)    out = p @ V    p = softmax(masked S)
--   S = Q @ K^T * scale
-- softmax's backward, row by row: g_scores = p * (g_p - <g_p, p>).
-- Labels to produce, with these dim names:
--   g_out [Nq,Dh]  g_V [Nk,Dh]  g_p [Nq,Nk]  g_scores [Nq,Nk]  g_Q [Nq,Dh]  g_K [Nk,Dh]
-- Check your work:  ./tensortrace --exercise 13   (your g_scores should equal S.grad)
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/13_softmax_backward.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(13)
local N, Dh = 6, 6
local scale = 1 / math.sqrt(Dh)
local hidden = ~tt.causal_mask(N)                  -- true = the future, masked_fill's polarity
local Q = tt.randn(N, Dh):named("Nq", "Dh"):label("Q")
local K = tt.randn(N, Dh):named("Nk", "Dh"):label("K")
local V = tt.randn(N, Dh):named("Nk", "Dh"):label("V")
local target = tt.randn(N, Dh):named("Nq", "Dh"):label("target")
-- the forward pass from the scores, made a leaf so that backward() fills S.grad
local S = (Q:matmul(K:mT()) * scale):requires_grad_():label("S")
local P = S:masked_fill(hidden, -math.huge):softmax("Nk")
local out = P:matmul(V)
local loss = ((out - target) ^ 2):mean()
loss:backward()
P, out = P:detach():label("p"), out:detach():label("out")
-- ===== your code below =====

-- TODO(g_out): d loss / d out for loss = mean((out - target)^2) over N*Dh numbers.

-- TODO(g_V): d loss / d V, from out = P @ V.

-- TODO(g_p): d loss / d P, the gradient arriving at the weights.

-- TODO(g_scores): through softmax, every row at once: p * (g_p - <g_p, p>),
-- the inner product taken along the keys (keep that dim to broadcast).

-- TODO(g_Q, g_K): through S = Q @ K^T * scale.
