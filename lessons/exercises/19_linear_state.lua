-- Exercise 19 — linear attention's running state (follows lessons/19_linear_attention.lua).
--
-- Linear attention replaces exp(q.k) by phi(q).phi(k), phi = elu + 1 (given
-- as elu1 below). Causal, row i is sum_{j<=i} (phi(q_i).phi(k_j)) v_j over
-- sum_{j<=i} phi(q_i).phi(k_j). Computed token by token, that is a state
-- S = sum_j phi(k_j) v_j^T [Dh,Dh] and z = sum_j phi(k_j) [Dh], both updated
-- with token t before token t's query reads them: row t = phi(q_t) S / phi(q_t).z.
-- Labels to produce:
--   fq, fk [N,Dh]  out_parallel [N,Dh] (the N x N form: masked, each row over its sum)
--   S [Dh,Dh] and z [Dh] after the last token  out_rec [N,Dh] (the rows of the loop, stacked)
-- Check your work:  ./tensortrace --exercise 19
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/19_linear_state.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(19)
local N, Dh = 6, 4
local q = tt.randn(N, Dh):label("q")
local k = tt.randn(N, Dh):label("k")
local v = tt.randn(N, Dh):label("v")
local function elu1(x) return x:relu() + (-(-x):relu()):exp() end   -- elu(x) + 1: x + 1 above 0, exp(x) below
-- ===== your code below =====

-- TODO(fq, fk): phi of q and of k.

-- TODO(out_parallel): fq fk^T with the future set to 0 (not -inf: there is no
-- softmax), times v, each row divided by its own sum.

-- TODO(S, z, out_rec): a loop over t = 1..N: add phi(k_t) v_t^T to S and
-- phi(k_t) to z, then row t = fq[t] S / (fq[t] * z):sum(); label S and z after the
-- loop, and stack the rows (tt.stack(rows, 1)).
