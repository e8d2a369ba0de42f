-- 20_precision.lua — attention in 16 bits: what float16 and bfloat16 break, and what they keep.
--
-- Production attention runs in 16-bit floats: half the memory and, on
-- hardware with 16-bit matrix units, far more arithmetic per second (an
-- NVIDIA A100: 312 TFLOP/s in bf16 on its tensor cores, against 19.5 in plain
-- fp32, and 156 in TF32). The two formats split their 16 bits
-- differently. float16 keeps 10 fraction bits but overflows past 65504;
-- bfloat16 keeps float32's range but only 7 fraction bits (8 with the
-- implicit one). This lesson measures what that means for attention:
-- 1. lesson 02's scores overflow in float16 once q.k passes 65504;
-- 2. -inf, tt.finfo(dtype).min and -1e4 as mask values: when each gives an
--    exact 0, and the traps of the "smallest number";
-- 3. bfloat16's error in the weights, and why sums must be accumulated in
--    float32;
-- 4. lesson 14's trained model in bfloat16: how close its loss and heads stay;
--    training in bfloat16: updates smaller than half a step vanish, and
--    float32 master weights (tt.autocast) or stochastic rounding bring them
--    back; float16 training
--    and its loss scaling;
-- 5. how fast each dtype is on this machine, measured now.
-- Lesson 11 asked the same mask question in float32 (-inf or -1e9); section 2
-- asks it again where the range and the step are 16 bits'.
--
-- Run it:   ./tensortrace lessons/20_precision.lua        (narrative + shapes)
--           ./tensortrace -q lessons/20_precision.lua     (narrative only)
-- Figures:  images/20_bf16_error.png, images/20_bf16_training.png

tt.manual_seed(20)

local F16, BF16 = tt.finfo("float16"), tt.finfo("bfloat16")
local function isnan(x) return x ~= x end
local function count(mask) return mask:float():sum():item() end       -- true entries of a bool tensor
local function maxabs(t) return t:float():abs():max():item() end

tt.trace.section("1. float16 scores overflow past 65504")
print(string.format("float16's largest number is %g. A result is rounded to the nearest float16,", F16.max))
print("and the next step after 65504 would be 65536, so everything from 65520 up")
print("rounds to inf. By lesson 02, with entries of std sigma, q.k has std")
print("sigma^2 * sqrt(Dh): at sigma = 1 and Dh = 128 about 11, far from 65504.")
print("Activations with outliers (no norm layer before them, or a few huge")
print("features) are another matter. 32 queries against 32 keys, Dh = 128, the")
print("entries grown to std sigma, each q and k stored in float16 and the raw scores")
print("q @ k^T computed in float16 (the products add up in float32 and the result")
print("is rounded once):")
local Dh, N = 128, 32
local q0, k0 = tt.randn(N, Dh), tt.randn(N, Dh)
local raw0 = maxabs(q0:matmul(k0:mT()))                 -- the largest |q.k| at sigma = 1
-- at scale sigma: the float16 scores, and the same products from the same float16 inputs in float32
local function scores_at(sigma)
  local q, k = (q0 * sigma):half(), (k0 * sigma):half()
  return q:matmul(k:mT()), q:float():matmul(k:float():mT()), q, k
end
do
  local s16 = scores_at(48)
  s16:label("scores (float16, sigma = 48)")
end
tt.trace.off()
print("   sigma   largest |q.k| (float32)   inf in float16   NaN rows of softmax(scores / sqrt(Dh))")
for _, sigma in ipairs{1, 8, 16, 24, 32, 40, 42, 44, 48} do
  local s16, s32 = scores_at(sigma)
  local infs, beyond = count(s16:abs():eq(math.huge)), count(s32:abs():ge(65520))
  local w = (s16 / math.sqrt(Dh)):softmax(-1)
  local nan_rows = count(w:ne(w):float():sum(-1):gt(0))
  local plus_inf_rows = count(s16:eq(math.huge):float():sum(-1):gt(0))
  print(string.format("   %5d   %23.0f   %14d   %d of %d", sigma, maxabs(s32), infs, nan_rows, N))
  if nan_rows ~= plus_inf_rows then error("the rows with NaN weights should be the rows holding +inf") end
  if infs ~= beyond then
    error(string.format("sigma %d: %d float16 scores are inf but %d float32 scores reach 65520", sigma, infs, beyond))
  end
end
print("Checked at every sigma: a float16 score is inf exactly where |q.k| >= 65520,")
print("and the NaN rows are exactly the rows holding +inf.")
print("Dividing by sqrt(Dh) afterwards cannot help: inf / sqrt(Dh) is still inf,")
print("and a row holding +inf gives softmax NaN (inf - inf), or -inf leaves it")
print("with one key fewer, silently.")

-- the smallest sigma at which a float16 score overflows, by bisection
local function overflows(sigma) return count(scores_at(sigma):abs():eq(math.huge)) > 0 end
local lo, hi = 1, 48
for _ = 1, 30 do
  local mid = (lo + hi) / 2
  if overflows(mid) then hi = mid else lo = mid end
end
local predicted = math.sqrt(65520 / raw0)
print(string.format("At sigma = 1 the largest |q.k| of these vectors is %.2f, so the scores", raw0))
print(string.format("reach 65520 at sigma = sqrt(65520 / %.2f) = %.2f. Bisection on the float16", raw0, predicted))
print(string.format("scores finds the first inf at sigma = %.2f.", hi))
if math.abs(hi / predicted - 1) > 2e-3 then
  error(string.format("the first inf at sigma %.4f should be at sqrt(65520 / max|q.k|) = %.4f", hi, predicted))
end
print("Checked: they agree to 0.2% (the inputs' own float16 rounding moves them).")

print("")
print("The cure is to scale before the product, or to keep the scores in float32.")
print("q * (1 / sqrt(Dh)) in float16, then the product; and tt.sdpa(q, k, k):")
local sigma = 48
local _, _, q, k = scores_at(sigma)
local folded = (q * (1 / math.sqrt(Dh))):matmul(k:mT())    -- 1/sqrt(128) folded into q (not a power of 2: one rounding)
tt.trace.on()
local out16 = tt.sdpa(q:view(1, 1, N, Dh), k:view(1, 1, N, Dh), k:view(1, 1, N, Dh))
out16:label("sdpa output (float16)")
tt.trace.off()
local folded_inf = count(folded:abs():eq(math.huge))
local out_bad = count(out16:ne(out16)) + count(out16:abs():eq(math.huge))
print(string.format("At sigma = %d: (q / sqrt(Dh)) @ k^T in float16 has %d inf (its largest is %.0f);",
  sigma, folded_inf, maxabs(folded)))
print(string.format("tt.sdpa on the float16 q, k, v computes the scores in float32 inside: %d NaN or inf", out_bad))
print("in its output. Scaled first, a score overflows only once q.k passes")
print(string.format("65504 * sqrt(Dh) = %.0f.", 65504 * math.sqrt(Dh)))
if folded_inf ~= 0 or out_bad ~= 0 then error("scaled first, or in float32, the scores should stay finite") end
local s_bf16 = (q0 * sigma):bfloat16():matmul((k0 * sigma):bfloat16():mT())
local bf16_inf = count(s_bf16:abs():eq(math.huge))
print(string.format("bfloat16 has float32's range (largest %.3g): the raw scores at sigma = %d", BF16.max, sigma))
print(string.format("in bfloat16 have %d inf. What bfloat16 gives up instead is precision (section 3).", bf16_inf))
if bf16_inf ~= 0 then error("bfloat16 scores should not overflow") end
tt.trace.on()

tt.trace.section("2. Mask values: -inf, tt.finfo(dtype).min, -1e4")
print("Lesson 11 compared -inf with -1e9 in float32: on a normal row they agree, and")
print("on a row with every key hidden -1e9 silently averages. In 16 bits -1e9 is")
print("not even a number float16 can store (it rounds to -inf), so 16-bit code needs")
print("its own choice.")
print("A masked key must get weight exactly 0. -inf does that in any dtype; code")
print("for 16-bit kernels often uses the dtype's lowest number (tt.finfo(dtype).min,")
print(string.format("%g in float16, %.4g in bfloat16) or a round -1e4 instead, so no inf", F16.min, BF16.min))
print("ever enters the arithmetic. The row [2, 1, 0.5, 3] with keys 3 and 4 hidden,")
print("in each dtype and with each value (softmax computes in float32 inside and")
print("rounds the weights once):")
local hide = tt.tensor({{false, false, true, true}}, "bool")
local hide_all = tt.tensor({{true, true, true, true}}, "bool")
local example_row = tt.tensor({{2.0, 1.0, 0.5, 3.0}}):half():masked_fill(hide, F16.min):softmax(-1)
example_row:label("weights (float16, finfo.min)")
tt.trace.off()
local function num(x)
  if isnan(x) then return "NaN" elseif x == 0 then return "0" end
  if x == math.floor(x) and math.abs(x) < 1e6 then return string.format("%d", x) end
  return string.format("%.4g", x)
end
print("Columns: the value as the dtype stores it; the hidden key's weight; the")
print("weights when all 4 keys are hidden; the value added to itself (two additive")
print("masks); the hidden key's weight when the real scores sit near -9990.")
print("  dtype     value       stored as   weight   all hidden    added twice   near -9990")
local measured = {}
for _, dtype in ipairs{"float16", "bfloat16"} do
  for _, name in ipairs{"-inf", "finfo.min", "-1e4"} do
    local value = ({["-inf"] = -math.huge, ["finfo.min"] = tt.finfo(dtype).min, ["-1e4"] = -1e4})[name]
    local row = tt.tensor({{2.0, 1.0, 0.5, 3.0}}, dtype)
    local filled = row:masked_fill(hide, value)
    local r = {
      stored = filled:float():totable()[1][3],
      weight = filled:softmax(-1):float():totable()[1][3],
      empty = row:masked_fill(hide_all, value):softmax(-1):float():totable()[1][1],
      twice = (filled + filled):float():totable()[1][3],           -- two additive masks hiding the same key
      low = (row - 9990):masked_fill(hide, value):softmax(-1):float():totable()[1][3],
    }
    measured[dtype .. " " .. name] = r
    print(string.format("  %-8s  %-10s  %-10s  %-7s  %-12s  %-12s  %s", dtype, name, num(r.stored),
      num(r.weight), r.empty == 0.25 and "uniform 1/4" or num(r.empty), num(r.twice), num(r.low)))
  end
end
local function m(dtype, name) return measured[dtype .. " " .. name] end
for _, dtype in ipairs{"float16", "bfloat16"} do
  for _, name in ipairs{"-inf", "finfo.min", "-1e4"} do
    if m(dtype, name).weight ~= 0 then error(dtype .. " " .. name .. ": the hidden key should get exactly 0") end
  end
  if not isnan(m(dtype, "-inf").empty) then error(dtype .. ": an all -inf row should give NaN") end
  if m(dtype, "finfo.min").empty ~= 0.25 or m(dtype, "-1e4").empty ~= 0.25 then
    error(dtype .. ": a row of equal finite mask values should give uniform weights")
  end
  if m(dtype, "finfo.min").twice ~= -math.huge then
    error(dtype .. ": finfo.min + finfo.min should overflow to -inf")
  end
  if m(dtype, "finfo.min").low ~= 0 or m(dtype, "-inf").low ~= 0 then error(dtype .. ": should still give 0") end
  if m(dtype, "-1e4").low == 0 then error(dtype .. ": -1e4 should fail next to scores near -1e4") end
  -- a row hidden twice by additive finfo.min masks: all -inf, so NaN
  local both = tt.zeros({1, 4}, dtype) + tt.full({1, 4}, tt.finfo(dtype).min, dtype) + tt.finfo(dtype).min
  if not isnan(both:softmax(-1):float():totable()[1][1]) then error(dtype .. ": a twice-hidden row should be NaN") end
end
local near = (tt.tensor({{2.0, 1.0, 0.5, 3.0}}, "bfloat16") - 9990):masked_fill(hide, -1e4):softmax(-1)
tt.assert_close(near, tt.full({1, 4}, 0.25), 0, 0, "bfloat16: near -9990 every key, real or hidden, gets 1/4")
if m("bfloat16", "-1e4").stored ~= -9984 or m("float16", "-1e4").stored ~= -1e4 then
  error("-1e4 should be stored exactly in float16 and as -9984 in bfloat16")
end
tt.trace.on()
print("Checked, every cell. What it says:")
print("  - On an ordinary row all three give the hidden keys exactly 0, in both dtypes:")
print("    exp(-1e4 - 3) underflows to 0 in float32 as surely as exp(-inf).")
print("  - A row with every key hidden: -inf gives NaN (lesson 11); finfo.min and -1e4")
print("    give uniform weights, the query silently averaging keys it must not see.")
print("  - finfo.min is the edge of the range: two additive masks (causal + padding)")
print("    that hide the same key add up to 2 * finfo.min, which overflows to -inf,")
print("    and the \"finite\" mask brings back the all -inf row and its NaN.")
print("  - -1e4 is small only next to scores of ordinary size. Near -9990 bfloat16's")
print("    step is 64: the real scores round to -9984, and so does -1e4 itself, so all")
print(string.format("    four keys get %s alike; in float16 the hidden key gets %s, not 0.",
  num(m("bfloat16", "-1e4").low), num(m("float16", "-1e4").low)))
print("-inf, with empty rows handled apart (as tt.sdpa does: zeros), has the fewest")
print("traps here, not none: 0 * -inf is NaN, and an online softmax (lesson 12) must")
print("treat a running max of -inf apart, since exp(-inf - (-inf)) is NaN too.")

tt.trace.section("3. bfloat16's 8 bits: the error in the weights")
print(string.format("bfloat16 keeps 8 significant bits: a value is rounded by up to half a step,"))
print(string.format("a relative error of at most u = 2^-8 = %.2f%%. float16 keeps 11 (u = 2^-11).", 100 * 2^-8))
print(string.format("(u is the unit roundoff, half the step after 1. tt.finfo(\"bfloat16\").eps is"))
print(string.format("the whole step, %g = 2^-7 = 2u, as torch.finfo's: the two do not disagree.)", BF16.eps))
print("How large does that make the error of attention weights? 32 queries and 32")
print("keys, Dh = 64, entries of variance 1, scaled scores (lesson 02), computed")
print("once in float32 and once with q and k stored in bfloat16 and every result")
print("(scores, weights) rounded to bfloat16:")
local Dh3, N3 = 64, 32
local q3, k3 = tt.randn(N3, Dh3), tt.randn(N3, Dh3)
local s32 = (q3:matmul(k3:mT()) / math.sqrt(Dh3)):label("scores (float32)")
local w32 = s32:softmax(-1):label("weights (float32)")
local s16 = (q3:bfloat16():matmul(k3:bfloat16():mT()) / math.sqrt(Dh3)):label("scores (bfloat16)")
local w16 = s16:softmax(-1):label("weights (bfloat16)")
tt.trace.off()
-- The reference: the same scores and softmax in float64 (Lua numbers), so the
-- figure is the same on every kernel path (float32's exp and sums differ in
-- the last bit from path to path); float32 agrees with it to 1e-5.
local s64, w64 = {}, {}
do
  local qt, kt = q3:totable(), k3:totable()
  for i = 1, N3 do
    s64[i], w64[i] = {}, {}
    local top = -math.huge
    for j = 1, N3 do
      local dot = 0
      for r = 1, Dh3 do dot = dot + qt[i][r] * kt[j][r] end
      s64[i][j] = dot / math.sqrt(Dh3)
      top = math.max(top, s64[i][j])
    end
    local z = 0
    for j = 1, N3 do w64[i][j] = math.exp(s64[i][j] - top); z = z + w64[i][j] end
    for j = 1, N3 do w64[i][j] = w64[i][j] / z end
  end
end
local w_ref = tt.tensor(w64)
tt.assert_close(w32, w_ref, 1e-5, 0, "float32's weights match float64's to 1e-5")
local rel_all = (w16:float() - w_ref):abs() / w_ref                -- the whole computation in bfloat16
local rel_last = (w_ref:bfloat16():float() - w_ref):abs() / w_ref   -- only the weights rounded
local function stats(rel) return rel:max():item(), rel:mean():item() end
local last_max, last_mean = stats(rel_last)
local all_max, all_mean = stats(rel_all)
print(string.format("  only the weights rounded to bfloat16:  largest %.2f%%, mean %.2f%%", 100 * last_max, 100 * last_mean))
print(string.format("  the whole computation in bfloat16:     largest %.2f%%, mean %.2f%%", 100 * all_max, 100 * all_mean))
local u = 2^-8
if last_max > u then error("rounding the weights alone should stay within u = 2^-8") end
-- The whole computation, bounded entry by entry: rounding q and k moves each
-- product q_r*k_r by at most (2u + u^2)|q_r*k_r|, the float32 sum adds at most
-- Dh float32 steps, and rounding the score adds u|score|: an error e in the
-- scores. A weight is exp(s_i) / sum_j exp(s_j), so its log moves by at most
-- e_i + max_j e_j; the weight's own rounding adds u.
local gamma = 2 * u + u * u + Dh3 * 2^-24
local e = gamma * q3:abs():matmul(k3:abs():mT()) / math.sqrt(Dh3) + u * s16:float():abs() / (1 - u)
local bound = (e + e:max(-1, true)):exp() * (1 + u) * (1 + 1e-5) - 1
if count(rel_all:gt(bound)) > 0 then error("a bfloat16 weight is further from float32 than the bound allows") end
print("(Measured against the weights computed in float64. float32's agree with those")
print("to 1e-5 of their value, checked, so against float32 each error would move by")
print("at most 0.001%.)")
print("Rounding the weights alone stays within u, as IEEE rounding guarantees.")
print("Checked: the whole computation stays, entry by entry, within the bound that")
print(string.format("the roundings of q, k and the scores give. The bound is loose (its largest entry"))
print(string.format("is %.1f%%, the largest error measured %.2f%%): it says where the error comes", 100 * bound:max():item(), 100 * all_max))
print("from, not how large it is.")
print("Why the scores matter most: a weight is exp(score) / sum, so an absolute error")
print("d in a score becomes a relative error of about d in its weight. bfloat16 rounds")
print("a score between 2 and 4 by up to 2^-7 = 0.008 and one between 4 and 8 by up to")
print("2^-6 = 0.016, so the error grows with |score|. Measured, the whole computation:")
local abs_s = tt.tensor(s64):abs()
local function mean_where(mask) return (rel_all * mask:float()):sum():item() / count(mask) end
local small, large = mean_where(abs_s:lt(1)), mean_where(abs_s:ge(2))
print(string.format("  mean relative error where |score| < 1:   %.2f%% (%d weights)", 100 * small, count(abs_s:lt(1))))
print(string.format("  mean relative error where |score| >= 2:  %.2f%% (%d weights)", 100 * large, count(abs_s:ge(2))))
if not (large > 1.5 * small) then error("the error should be larger where the scores are") end
print(string.format("Checked: %.1fx as large where |score| >= 2 (the check asks for 1.5x).", large / small))
-- the figure: mean relative error in bins of |score| 0.5 wide (bins with
-- fewer than 5 weights left out)
local bins = {}
for lo = 0, 3.5, 0.5 do
  local inside = abs_s:ge(lo) & abs_s:lt(lo + 0.5)
  if count(inside) >= 5 then
    bins[#bins + 1] = {x = lo + 0.25, all = 100 * mean_where(inside),
      last = 100 * (rel_last * inside:float()):sum():item() / count(inside)}
  end
end
local bx, ball, blast = {}, {}, {}
for i, bin in ipairs(bins) do bx[i], ball[i], blast[i] = bin.x, bin.all, bin.last end
tt.plot({{name = "all in bf16", x = bx, y = ball},
         {name = "weights only", x = bx, y = blast}}, "images/20_bf16_error.png", {
  title = "bfloat16 attention weights: the error grows with |score| (32 x 32, Dh = 64, one draw)",
  xtitle = "|score| (bins 0.5 wide, centre)", ytitle = "mean relative error of a weight (%)", ymin = 0 })
tt.trace.on()
print("Figure: " .. tt.figure_path("images/20_bf16_error.png") .. ": the mean relative error against |score|, in")
print("bins 0.5 wide; the weights' own rounding stays flat, the whole computation's grows.")

tt.trace.section("3b. Why the sums add up in float32")
print("Every tt op reads 16-bit numbers, computes in float32 and rounds once at")
print("the end; a matmul's products add up in float32. What if they did not? The")
print("dot product of two bfloat16 vectors of length 4096 (entries of variance 1):")
print("each product of two bfloat16 numbers is exact in float32 (8 + 8 significant")
print("bits fit in 24), so the only question is where the sum is rounded.")
local L = 4096
local a = tt.randn(L):bfloat16():label("a")
local b = tt.randn(L):bfloat16():label("b")
local dot = a:matmul(b):label("a . b (bfloat16, float32 inside)")
tt.trace.off()
local products = (a:float() * b:float()):totable()     -- exact
local exact = 0
for i = 1, L do exact = exact + products[i] end        -- float64: off by less than 1e-12 here
-- the running sum as one-element tensors, rounded to the dtype after every add
local function running_sum(dtype)
  local acc, largest = tt.zeros({1}, dtype), 0
  local p = tt.tensor(products)
  for i = 1, L do
    acc = (acc:float() + p:narrow(1, i, 1)):to(dtype)
    largest = math.max(largest, math.abs(acc:item()))
  end
  return acc:item(), largest
end
local in_bf16, largest_partial = running_sum("bfloat16")
local in_f32 = running_sum("float32")
local once = dot:item()
local function row(name, value)
  print(string.format("  %-50s %12.6f   error %10.6f", name, value, value - exact))
end
row("float64 reference (the exact products, summed)", exact)
row("accumulated in float32, rounded after every add", in_f32)
row("accumulated in bfloat16, rounded after every add", in_bf16)
row("a:matmul(b): float32 inside, one bfloat16 rounding", once)
local step = 2^(math.floor(math.log(math.abs(exact), 2)) - 7)   -- bfloat16's step at the result
if math.abs(once - exact) > step / 2 then error("one rounding should land within half a bfloat16 step") end
if math.abs(in_f32 - exact) > L * 2^-24 * 64 then error("float32 accumulation should be close") end
if not (math.abs(in_bf16 - exact) > 8 * math.abs(once - exact) + step) then
  error("accumulating in bfloat16 should be far worse than one rounding")
end
tt.trace.on()
print(string.format("Checked: one rounding at the end is within half a bfloat16 step (%.4g) of", step / 2))
print(string.format("the exact sum; the bfloat16 running sum is off by %.1f steps. Its partial", math.abs(in_bf16 - exact) / step))
print(string.format("sums reach %.4g, where bfloat16's step is %g: each add may lose half a step,", largest_partial,
  2^(math.floor(math.log(largest_partial, 2)) - 7)))
print("4096 times over. That is why training kernels, and any kernel that needs")
print("the sum's accuracy, accumulate in float32: x86's vdpbf16ps does, and so do GPU")
print("tensor cores as training uses them (they also offer float16 accumulation,")
print("which some inference kernels take for speed). tt.sdpa does all its sums in")
print("float32.")

tt.trace.section("4. Lesson 14's trained model in bfloat16")
print("The two-layer induction model of lesson 14, its weights converted to bfloat16")
print("(x:bfloat16() on each), run on 72 repeated sequences (8 for each period")
print("P = 8..16) next to the float32 original. Every matmul, sdpa and softmax")
print("then reads bfloat16 and rounds its result to bfloat16 (the loss below is")
print("computed in float32 from the bfloat16 logits).")
local M = dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/induction_model.lua")
tt.trace.off()
local model32 = M.load()
local model16 = {}
for _, name in ipairs(M.NAMES) do model16[name] = model32[name]:bfloat16() end
M.labelled(model16)
local batches, periods = {}, {}
for P = M.N // 4, M.N // 2 do batches[#batches + 1] = M.repeated_batch(8, P); periods[#periods + 1] = P end
local x = tt.cat(batches, 1)
-- per dtype: the loss on the repeated tokens (P+2..N, as lesson 14), each
-- layer-1 head's previous-token score and each layer-2 head's induction score
local function evaluate(model)
  return tt.no_grad(function()
    local logits, w = M.forward(model, x, {weights = true})
    local b, N4, V = x:size(1), M.N, M.V
    local losses = tt.cross_entropy(logits:float():narrow(2, 1, N4 - 1):reshape(b * (N4 - 1), V),
      x:narrow(2, 2, N4 - 1):reshape(b * (N4 - 1)), {reduction = "none"}):view(b, N4 - 1)
    local r = {repeated = 0, prev = {}, ind = {}}
    for h = 1, M.H do r.prev[h], r.ind[h] = 0, 0 end
    for i, P in ipairs(periods) do
      local first = (i - 1) * 8 + 1
      local p1 = M.head_scores(w[1]:float():narrow(1, first, 8), P).prev
      local p2 = M.head_scores(w[2]:float():narrow(1, first, 8), P).ind
      for h = 1, M.H do r.prev[h], r.ind[h] = r.prev[h] + p1[h] / #periods, r.ind[h] + p2[h] / #periods end
      r.repeated = r.repeated + losses:narrow(1, first, 8):narrow(2, P + 1, N4 - 1 - P):mean():item() / #periods
    end
    return r, logits
  end)
end
local r32, logits32 = evaluate(model32)
local r16, logits16 = evaluate(model16)
print(string.format("  %-35s %9s %9s %10s", "", "float32", "bfloat16", "difference"))
print(string.format("  %-35s %9.4f %9.4f %+10.4f", "loss on the repeated tokens (nats)", r32.repeated, r16.repeated,
  r16.repeated - r32.repeated))
local worst_head = 0
for h = 1, M.H do
  print(string.format("  %-35s %9.4f %9.4f %+10.4f", "layer 1 head " .. h .. " previous-token score",
    r32.prev[h], r16.prev[h], r16.prev[h] - r32.prev[h]))
  worst_head = math.max(worst_head, math.abs(r16.prev[h] - r32.prev[h]))
end
for h = 1, M.H do
  print(string.format("  %-35s %9.4f %9.4f %+10.4f", "layer 2 head " .. h .. " induction score",
    r32.ind[h], r16.ind[h], r16.ind[h] - r32.ind[h]))
  worst_head = math.max(worst_head, math.abs(r16.ind[h] - r32.ind[h]))
end
local logit_gap = maxabs(logits16:float() - logits32)
local same_top = count(logits16:float():argmax(-1):eq(logits32:argmax(-1)))
local positions = logits32:size(1) * logits32:size(2)
print(string.format("  the largest logit gap is %.2f (logits reach %.1f); the most likely next", logit_gap, maxabs(logits32)))
print(string.format("  token is the same at %.1f%% of the %d positions.", 100 * same_top / positions, positions))
if logit_gap > 0.2 or same_top < 0.99 * positions then error("bfloat16 logits should stay close") end
-- tolerances: 10x what this machine measured (0.0003 nats, 0.0001), as room
-- for other kernels' float32 sums, which round to bfloat16 differently
local LOSS_TOL, HEAD_TOL = 0.003, 0.001
if math.abs(r16.repeated - r32.repeated) > LOSS_TOL then error("bfloat16 moved the loss too far") end
if worst_head > HEAD_TOL then error("bfloat16 moved a head score too far") end
tt.trace.on()
print(string.format("Checked: the repeated-token loss moves by less than %g nats and every", LOSS_TOL))
print(string.format("head score by less than %g (the largest moves: %.4f and %.4f). The", HEAD_TOL,
  math.abs(r16.repeated - r32.repeated), worst_head))
print("heads lesson 14 found are the same heads in bfloat16: this trained model")
print("tolerates 8-bit mantissas (lesson 14 tells its heads apart at a threshold")
print("of 0.4). One small model; larger ones are usually run in bfloat16 too, but")
print("that is the field's experience, not something measured here.")

tt.trace.section("4b. Training in bfloat16: updates that vanish")
print("Running a trained model in bfloat16 is safe; training one is another")
print("matter. SGD changes a weight w by lr * g, and a bfloat16 weight can only")
print("move to a neighbouring bfloat16 number: between 1 and 2 they are 2^-7 apart,")
print("so a change smaller than half that, 0.0039, rounds back to w and is lost.")
print("As the loss falls, so does g, until lr * g is below half a step almost")
print("everywhere. (\"lost\" below: the share of weights with g ~= 0 that the")
print("last step left unchanged.)")
print("A small task shows it: learn a 32 x 32 matrix W from 256 examples (x, y = x W*),")
print("loss = the squared error summed over y's 32 entries, averaged over the")
print("examples; SGD with lr = 0.05 from W = 0, 160 steps, three ways (on the")
print("portable kernels, tt.kernel_path(\"scalar\"), so every machine prints these")
print("numbers: the SIMD paths sum in other orders, and bfloat16 rounding grows")
print("those last bits):")
print("  float32:        W and every op in float32;")
print("  bfloat16:       W is a bfloat16 tensor, the optimizer's update is rounded")
print("                  to bfloat16 each step (pure 16-bit training);")
print("  float32 master: W stays float32, the forward runs in tt.autocast(\"bfloat16\")")
print("                  (its matmul in bfloat16), the update lands in float32;")
print("  bf16 stochastic: as bfloat16, but each new weight is rounded stochastically:")
print("                  to the nearer bfloat16 neighbour or the farther one, the")
print("                  farther with probability (distance to the nearer) / step,")
print("                  so a small update moves the weight now and then, and on")
print("                  average by the right amount.")
local TD, TB, STEPS, LR = 32, 256, 160, 0.05
tt.trace.off()
-- on the portable kernels: the SIMD paths add up a matmul in other orders,
-- and bfloat16's rounding grows those last-bit differences into percents by
-- step 160; the scalar path gives these numbers on every machine
local path = tt.kernel_path()
tt.kernel_path("scalar")
local W_true, X_train = tt.randn(TD, TD), tt.randn(TB, TD)
local Y_train = X_train:matmul(W_true)
-- the loss of a float32 copy of W, so the three runs are measured alike
local function true_loss(W)
  local d = X_train:matmul(W:detach():float()) - Y_train
  return (d * d):sum():item() / TB
end
-- float32 x rounded stochastically to bfloat16: the nearest r, or the
-- neighbour on x's other side of r with probability |x - r| / step (step:
-- bfloat16's spacing at r, 2^(floor(log2 |r|) - 7))
local function stochastic_bf16(x)
  local r = x:bfloat16():float()
  local e = r:abs():maximum(tt.full(r:shape(), 2^-100)):log() / math.log(2)
  local whole = e:long():float()                                   -- toward 0
  local step = ((whole - e:lt(whole):float() - 7) * math.log(2)):exp()
  local diff = x - r
  local other = r + tt.where(diff:ge(0), step, -step)
  return tt.where(tt.rand(table.unpack(x:shape())):lt(diff:abs() / step), other, r):bfloat16()
end
local function train(way)
  local W = tt.zeros(TD, TD, way:find("^bf") and "bfloat16" or "float32"):requires_grad_()
  local opt = tt.optim.SGD({W}, {lr = LR})
  local function loss_fn()
    local d = X_train:to(W:dtype()):matmul(W):float() - Y_train
    return (d * d):sum() / TB
  end
  local curve, lost = {}, 0
  for step = 1, STEPS do
    local loss = way == "float32 master" and tt.autocast("bfloat16", loss_fn) or loss_fn()
    loss:backward()
    local before = W:detach():clone()
    if way == "bf16 stochastic" then
      tt.no_grad(function() W:copy_(stochastic_bf16(W:detach():float() - LR * W.grad:float())) end)
    else
      opt:step()
    end
    if step == STEPS then          -- the last step: which weights did not move, though g ~= 0?
      local stayed, pushed = W:detach():eq(before):float(), W.grad:ne(0):float()
      lost = (stayed * pushed):sum():item() / pushed:sum():item()
    end
    opt:zero_grad()
    curve[step] = true_loss(W)
  end
  return curve, lost
end
local ways = {"float32", "bfloat16", "float32 master", "bf16 stochastic"}
local curves, lost = {}, {}
for _, way in ipairs(ways) do curves[way], lost[way] = train(way) end
tt.kernel_path(path)
tt.trace.on()
local marks = {1, 20, 40, 80, 160}
local header = "  after step     "
for _, s in ipairs(marks) do header = header .. string.format("%9d", s) end
print(header .. "   lost at step " .. STEPS)
for _, way in ipairs(ways) do
  local line = string.format("  %-16s", way)
  for _, s in ipairs(marks) do
    local v = tonumber(string.format("%.2g", curves[way][s]))
    line = line .. string.format(v >= 10 and "%9.0f" or "%9.2g", v)
  end
  print(line .. string.format("   %3d%%", math.floor(100 * lost[way])))
end
local c32, c16, cm = curves["float32"][STEPS], curves["bfloat16"][STEPS], curves["float32 master"][STEPS]
local stalled = math.abs(curves["bfloat16"][STEPS] - curves["bfloat16"][STEPS // 2]) < 0.05 * c16
if not stalled then error("pure bfloat16 training should have stalled by half way") end
if not (lost["bfloat16"] > 0.9) then error("most bfloat16 updates should be lost at the end") end
if lost["float32 master"] ~= 0 then error("the master weights should lose no update") end
if not (c16 > 100 * cm and cm > 100 * c32) then error("master weights should sit between the two, 100x from each") end
local csr = curves["bf16 stochastic"][STEPS]
if not (csr < c16 / 10) then error("stochastic rounding should keep bfloat16 training going") end
print(string.format("Checked: the bfloat16 run has stalled (its loss moved by less than 5%% over the"))
print(string.format("last %d steps) with more than 90%% of its updates lost; float32 master", STEPS // 2))
print(string.format("weights reach a loss over 100x lower (%.2g against %.2g), and float32", cm, c16))
print(string.format("throughout over 100x lower again (%.2g).", c32))
print("The master weights keep their updates (none lost at the last step): each")
print("lands in float32. What is left between them and float32 is the forward's")
print("own rounding (x and W rounded to bfloat16 going into the matmul, its result")
print("coming out), which sets the floor of the loss they can see.")
print(string.format("Stochastic rounding, with the weights still in bfloat16, reaches %.2g: over 10x", csr))
print(string.format("below round-to-nearest's %.2g (checked), %d%% of its updates lost at the last", c16,
  math.floor(100 * lost["bf16 stochastic"])))
print("step but the rest moving the weights by whole steps, right on average. One")
print("seed and one small task: it shows the mechanism, not how it scales.")
print("That is why mixed-precision training keeps float32 weights and optimizer")
print("state and runs only the matmuls in 16 bits; pure 16-bit training needs")
print("tricks (stochastic rounding, as above, or Kahan-compensated updates) to get")
print("them back.")
print("(Below 16 bits: FP8 comes in two layouts, E4M3 with 3 fraction bits and")
print("E5M2 with 2 and float16's range; DeepSeek-V3 trains its matmuls in FP8 with")
print("a scale per small block of values and float32 accumulation. Not measured here.)")
local steps = {}
for s = 1, STEPS do steps[s] = s end
local series = {}
for _, way in ipairs(ways) do series[#series + 1] = {name = way, x = steps, y = curves[way]} end
tt.plot(series, "images/20_bf16_training.png", {
  title = "SGD on W (32 x 32): bfloat16 weights stall when lr * g falls below half a step",
  xtitle = "step", ytitle = "loss (float32 W)", ylog = true })
print("Figure: " .. tt.figure_path("images/20_bf16_training.png") .. ", the four losses on a log scale.")

tt.trace.section("4c. Training in float16: gradients that underflow, and loss scaling")
print("float16 has the precision bfloat16 lacks but not the range, at both ends.")
print(string.format("Its smallest normal number is 2^-14 = %.3g; below it come subnormals, with", 2^-14))
print(string.format("fewer and fewer bits, down to 2^-24 = %.3g; anything under half of that", 2^-24))
print("rounds to 0. Gradients late in training are often that small. 4096 gradient")
print("entries of std 2^-20 (about 1e-6), stored in float16 directly, and stored after")
print("multiplying the loss (so every gradient) by S = 2^15, then divided by S in float32:")
tt.trace.off()
local G = tt.randn(4096) * 2^-20
local S = 2^15
local g64 = G:totable()
local predicted_zero, normal_scaled = 0, 0
for _, v in ipairs(g64) do
  if v ~= 0 and math.abs(v) <= 2^-25 then predicted_zero = predicted_zero + 1 end   -- half the smallest subnormal, ties to even: 0
  if math.abs(v * S) >= 2^-14 then normal_scaled = normal_scaled + 1 end
end
local function stored(scale)
  local back = (G * scale):half():float() / scale
  local lost = count(back:eq(0)) - count(G:eq(0))
  local rel = ((back - G):abs() / G:abs()):mean():item()
  local sub = count((G * scale):abs():lt(2^-14))
  return lost, rel, sub
end
local lost1, rel1, sub1 = stored(1)
local lostS, relS, subS = stored(S)
tt.trace.on()
print("                         became 0   below 2^-14   mean relative error")
print(string.format("  float16, unscaled     %8d   %11d   %16.2f%%", lost1, sub1, 100 * rel1))
print(string.format("  float16, scaled 2^15  %8d   %11d   %16.4f%%", lostS, subS, 100 * relS))
if lost1 ~= predicted_zero then
  error(string.format("%d gradients became 0 in float16, but %d are at most 2^-25", lost1, predicted_zero))
end
if lostS ~= 0 or subS ~= 4096 - normal_scaled then error("scaled by 2^15, no gradient should be lost") end
print(string.format("Checked: the gradients lost unscaled are exactly the %d at or under 2^-25", predicted_zero))
print("(counted in float64); scaled, none is lost. The rest of the unscaled ones are")
print("subnormal and keep only a few bits, hence the large mean error.")
print("That is loss scaling (Micikevicius et al. 2018, \"Mixed Precision Training\"):")
print("multiply the loss by S before backward, divide the gradients by S in float32")
print("before the update. S too large overflows a gradient to inf instead, so")
print("PyTorch's GradScaler picks S dynamically: it skips the step and halves S when")
print("it sees inf or NaN, and doubles S after a run of clean steps. bfloat16 has")
print("float32's range and needs none of this, one reason training moved to it.")
print("")
print("The same floor touches attention weights. One query over 4096 keys with scores")
print("of std 4 (a sharp head): its weights stored in float16.")
tt.trace.off()
local wrow = (tt.randn(1, 4096) * 4):softmax(-1)
local w64 = wrow:totable()[1]
local under = 0
for _, x in ipairs(w64) do if x <= 2^-25 then under = under + 1 end end
local w16 = wrow:half():float()
local zeros16, mass = count(w16:eq(0)), (wrow * w16:eq(0):float()):sum():item()
tt.trace.on()
print(string.format("  %d of 4096 weights become 0 in float16, together %.2g of the row's weight.", zeros16, mass))
if zeros16 ~= under then error("the weights that vanish should be exactly those at or under 2^-25") end
print("Checked: exactly the weights at or under 2^-25 (counted in float32). Each is")
print("tiny, so here the row loses little; kernels keep the weights in float32 (as")
print("tt.sdpa does) so that nothing depends on how many there are.")

tt.trace.section("5. How fast is each dtype here?")
print("Measured now, on this machine, so these numbers are this machine's alone:")
print("a [256,256] @ [256,256] matmul and a causal tt.sdpa of 4 heads, N = 256,")
print("Dh = 64, in each dtype. Each call takes well under a millisecond, so one call")
print("says little (another program, a cold cache, a frequency change): each cell is")
print("warmed up, then timed as 15 samples of at least 4 ms of calls each; the table")
print("gives the median time per call and how far the middle half of the samples")
print("spread around it.")
-- per call: the median of `samples` samples, each the mean over enough calls
-- to fill `min_s` seconds, after `warm` untimed calls; and the quartiles
local function median_time(fn, samples, min_s, warm)
  for _ = 1, warm do fn() end
  local t0, calls = tt.clock(), 0
  repeat fn(); calls = calls + 1 until tt.clock() - t0 >= min_s
  local times = {}
  for i = 1, samples do
    local t1 = tt.clock()
    for _ = 1, calls do fn() end
    times[i] = (tt.clock() - t1) / calls
  end
  table.sort(times)
  local function q(f) return times[math.max(1, math.floor(f * samples + 0.5))] end
  return q(0.5), q(0.25), q(0.75)
end
tt.trace.off()
local A, Bm = tt.randn(256, 256), tt.randn(256, 256)
local Q, K, Vv = tt.randn(1, 4, 256, 64), tt.randn(1, 4, 256, 64), tt.randn(1, 4, 256, 64)
local mm_flops = 2 * 256 ^ 3
local sdpa_flops = 4 * 4 * 256 * 256 * 64 / 2        -- Q.K^T and P.V, half the pairs (causal)
local speed = {}
for _, dtype in ipairs{"float32", "bfloat16", "float16"} do
  local a16, b16 = A:to(dtype), Bm:to(dtype)
  local q, k, v = Q:to(dtype), K:to(dtype), Vv:to(dtype)
  local r = {dtype = dtype}
  r.mm, r.mm_lo, r.mm_hi = median_time(function() a16:matmul(b16) end, 15, 0.004, 3)
  r.sd, r.sd_lo, r.sd_hi = median_time(function() tt.sdpa(q, k, v, {causal = true}) end, 15, 0.004, 3)
  -- the same computation in each dtype: float32 products of the same inputs, rounded once
  tt.assert_close(a16:matmul(b16):float(), a16:float():matmul(b16:float()), 2 * tt.finfo(dtype).eps, 1e-3,
    dtype .. " matmul: float32 products of the same inputs, rounded once")
  speed[#speed + 1] = r
end
tt.trace.on()
if os.getenv("TT_TRACE_NO_TIMES") then
  print("(TT_TRACE_NO_TIMES is set, as for the golden traces: the timings and the")
  print("kernel path are left out.)")
else
  print(string.format("Kernel path: %s (tt.kernel_path(): avx512_bf16, avx512, avx2 or scalar, the portable C).", tt.kernel_path()))
  print("  dtype      matmul ms  (middle half)    GFLOP/s      sdpa ms  (middle half)    GFLOP/s")
  local function pct(lo, hi, med) return string.format("-%3.0f%% +%3.0f%%", 100 * (1 - lo / med), 100 * (hi / med - 1)) end
  for _, r in ipairs(speed) do
    print(string.format("  %-8s  %9.3f  (%s)  %9.1f   %9.3f  (%s)  %9.1f", r.dtype,
      1e3 * r.mm, pct(r.mm_lo, r.mm_hi, r.mm), mm_flops / r.mm / 1e9,
      1e3 * r.sd, pct(r.sd_lo, r.sd_hi, r.sd), sdpa_flops / r.sd / 1e9))
  end
  print("On a shared machine these move by tens of percent from run to run; the")
  print("table states no ratio between dtypes. For ratios, `make bench` times the")
  print("kernels at sizes where one call takes milliseconds, against OpenBLAS.")
end
print("Whether 16 bits pay off in time depends on the kernels, not on the format.")
print("Where the CPU has bf16 dot-product instructions (AVX512_BF16's vdpbf16ps),")
print("a bfloat16 kernel can do twice float32's multiply-adds per instruction;")
print("elsewhere the 16-bit numbers are converted to float32 for the arithmetic,")
print("so the tensors take half the memory and the conversions cost time.")
