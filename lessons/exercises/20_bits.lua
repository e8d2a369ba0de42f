-- Exercise 20 — where the bits go in 16-bit attention (follows lessons/20_precision.lua).
--
-- float16 overflows past 65504 (from 65520 up a result rounds to inf);
-- bfloat16 keeps float32's range but 8 significant bits: a relative rounding
-- error of at most u = 2^-8, half of tt.finfo("bfloat16").eps.
-- Labels to produce:
--   s16 [N,N] float16: the raw scores (q0 * sigma) @ (k0 * sigma)^T, with q0
--     and k0 scaled, stored in float16 (x:half()) and multiplied in float16
--   sigma_star [1]: the smallest sigma at which some score reaches 65520,
--     sqrt(65520 / max|q0 . k0|) (computed in float32)
--   u [1]: bfloat16's unit roundoff
--   w_masked [1,4] bfloat16: the row stored in bfloat16, keys 3 and 4 hidden
--     with -inf, softmax
--   sum_bf16_running [1] bfloat16: the sum of a_i * b_i, rounded to bfloat16
--     after every add (the products themselves are exact in float32)
--   sum_once [1] bfloat16: a:matmul(b), summed in float32 and rounded once
-- Check your work:  ./tensortrace --exercise 20
--   (a copy elsewhere: ./tensortrace --compare lessons/exercises/solutions/20_bits.lua COPY.lua)
-- Leave everything above the marked line as it is: the check builds the same inputs.

tt.manual_seed(20)
local N, Dh, sigma = 8, 64, 40
local q0, k0 = tt.randn(N, Dh), tt.randn(N, Dh)          -- entries of variance 1
local row = tt.tensor({{2.0, 1.0, 0.5, 3.0}})
local hide = tt.tensor({{false, false, true, true}}, "bool")
local L = 512
local a, b = tt.randn(L):bfloat16(), tt.randn(L):bfloat16()
-- ===== your code below =====

-- TODO(s16): the raw scores in float16.

-- TODO(sigma_star): tt.tensor({ ... }).

-- TODO(u): tt.tensor({ ... }).

-- TODO(w_masked): row:bfloat16(), masked, softmax over the keys.

-- TODO(sum_bf16_running): start from tt.zeros({1}, "bfloat16"); for each i add
-- the float32 product (a:float() * b:float()):narrow(1, i, 1) and round back
-- with :bfloat16().

-- TODO(sum_once): a:matmul(b), viewed as [1].
