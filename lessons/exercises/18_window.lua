-- Exercise 18 — the band mask and the rolling buffer (follows lessons/18_sliding_window.lua).
--
-- With a window of W keys, query i reads keys j with j <= i and i - j < W:
-- itself and the W - 1 before it (tt.sdpa{window = W}; Mistral's paper counts
-- W keys before the query, one more). Decoding keeps only W keys in a
-- buffer: token t goes to slot ((t - 1) mod W) + 1, overwriting token t - W.
-- Labels to produce:
--   band [N,N] bool (true = may attend)  scores [1,H,N,N] (q.k / sqrt(Dh))
--   weights [1,H,N,N] (outside the band hidden, softmax)  out [1,H,N,Dh]
--   then, decoding token t = W + 1 with the buffer holding tokens 1..W:
--   slot [1] (the slot token t goes to)  kbuf [1,H,W,Dh] (the K buffer after
--   the write)  out_t [1,H,1,Dh] (token t's query over the buffer, tt.sdpa)
-- Check your work:  ./tensortrace --exercise 18
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/18_window.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(18)
local H, N, Dh, W = 2, 10, 4, 4     -- heads, tokens, head width, window (keys a query sees, itself included)
local q = tt.randn(1, H, N, Dh):label("q")
local k = tt.randn(1, H, N, Dh):label("k")
local v = tt.randn(1, H, N, Dh):label("v")
-- ===== your code below =====

-- TODO(band): from the positions i (a column) and j (a row), tt.arange(1, N + 1);
-- & combines two bool tensors.

-- TODO(scores): q against k transposed, divided by sqrt(Dh).

-- TODO(weights): hide what is outside the band, softmax over the keys.

-- TODO(out): the weighted sum of the values.

-- TODO(slot): t = W + 1; tt.tensor({its slot}).

-- TODO(kbuf): a buffer holding k's tokens 1..W (k:narrow(3, 1, W):clone()),
-- token t's key copied into its slot (narrow + copy_); the same for v.

-- TODO(out_t): token t's query (q:narrow(3, t, 1)) over the two buffers.
