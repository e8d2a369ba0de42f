/*
** ref.c — the scalar reference kernels (*_ref, always compiled) and the
** portable path built on them: the kernel table used when no SIMD path runs.
*/
#include <math.h>
#include <stdlib.h>

#include "kernels.h"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

/* ===== Reference kernels ===== */

/* M, N, K: rows of A and C, columns of B and C, inner size. */
void tk_gemm_batch_ref(int64_t nbatch, int64_t M, int64_t N, int64_t K,
                       const float *a, const int64_t *aoff, int64_t rsa, int64_t csa,
                       const float *b, const int64_t *boff, int64_t rsb, int64_t csb,
                       float *c, const int64_t *coff, int64_t rsc, int64_t csc)
{
    for (int64_t t = 0; t < nbatch; t++) {
        const float *A = a + aoff[t], *B = b + boff[t];
        float *C = c + coff[t];
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                float s = 0.0f;
                for (int64_t p = 0; p < K; p++) s += A[i*rsa + p*csa] * B[p*rsb + j*csb];
                C[i*rsc + j*csc] = s;
            }
    }
}

void tk_softmax_rows_ref(int64_t nrows, int64_t n, const float *x, float *y)
{
    for (int64_t r = 0; r < nrows; r++, x += n, y += n) {
        float m = -INFINITY, s = 0.0f;
        for (int64_t j = 0; j < n; j++) m = x[j] > m ? x[j] : m;
        if (m == -INFINITY) {               /* all -inf: 0/0, as PyTorch */
            for (int64_t j = 0; j < n; j++) y[j] = NAN;
            continue;
        }
        for (int64_t j = 0; j < n; j++) { y[j] = expf(x[j] - m); s += y[j]; }
        for (int64_t j = 0; j < n; j++) y[j] /= s;
    }
}

void tk_log_softmax_rows_ref(int64_t nrows, int64_t n, const float *x, float *y)
{
    for (int64_t r = 0; r < nrows; r++, x += n, y += n) {
        float m = -INFINITY, s = 0.0f;
        for (int64_t j = 0; j < n; j++) m = x[j] > m ? x[j] : m;
        if (m == -INFINITY) {               /* all -inf: NaN, as softmax */
            for (int64_t j = 0; j < n; j++) y[j] = NAN;
            continue;
        }
        for (int64_t j = 0; j < n; j++) s += expf(x[j] - m);
        float ls = logf(s);
        for (int64_t j = 0; j < n; j++) y[j] = (x[j] - m) - ls;
    }
}

void tk_exp_vec_ref(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = expf(x[i]);
}

/* The activations and their derivatives, each written once for every
   path (a SIMD path that vectorizes one follows the same formula). */
#define GELU_K 0.7978845608f            /* sqrt(2 / pi) */
#define GELU_C 0.044715f
#define INV_SQRT2 0.7071067812f
#define INV_SQRT2PI 0.3989422804f

/* s = sigmoid(t) and q = s (1 - s), from e = exp(-|t|) <= 1 so neither
   overflows nor cancels (1 - s computed as 1 - s would, for t > 0) */
static float sigmoid2(float t, float *q)
{
    float e = expf(-fabsf(t)), d = 1.0f / (1.0f + e);
    if (q) *q = e * d * d;
    return t >= 0.0f ? d : e * d;
}

static float sigmoidf(float x) { return sigmoid2(x, NULL); }

/* x * Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2 (1 + erf would cancel for x < 0) */
static float gelu(float x) { return 0.5f * x * erfcf(-x * INV_SQRT2); }

/* Phi(x) + x phi(x); the second term 0 where phi is (inf * 0 at the ends) */
static float gelu_d(float x)
{
    float p = expf(-0.5f * x * x);
    return 0.5f * erfcf(-x * INV_SQRT2) + (p == 0.0f ? 0.0f : x * INV_SQRT2PI * p);
}

/* 0.5 x (1 + tanh z), z = k (x + c x^3), as x * sigmoid(2z) (1 + tanh z = 2 sigmoid(2z)) */
static float gelu_tanh(float x)
{
    return x * sigmoidf(2.0f * GELU_K * (x + GELU_C * x * x * x));
}

/* 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3c x^2) with t = tanh z, s = sigmoid(2z):
   s + 2 x s (1 - s) k (1 + 3c x^2); where s (1 - s) is 0, x^2 may be inf */
static float gelu_tanh_d(float x)
{
    float q, s = sigmoid2(2.0f * GELU_K * (x + GELU_C * x * x * x), &q);
    return q == 0.0f ? s : s + 2.0f * x * q * GELU_K * (1.0f + 3.0f * GELU_C * x * x);
}

/* The scalar expression of every elementwise op code, written once: one
   switch per row function, each case one loop over EXPR of u (and w). */

/* o[i] = EXPR(u = x[i*sx], w = y[i*sy]) for i < n, o contiguous; the
   contiguous case apart so the compiler can vectorize it. */
#define EW_LOOP2(EXPR) do { \
    if (sx == 1 && sy == 1) \
        for (int64_t i = 0; i < n; i++) { const T u = x[i], w = y[i]; o[i] = (EXPR); } \
    else \
        for (int64_t i = 0; i < n; i++) { const T u = x[i * sx], w = y[i * sy]; o[i] = (EXPR); } \
} while (0)
#define EW_LOOP1(EXPR) for (int64_t i = 0; i < n; i++) { const T u = x[i]; o[i] = (EXPR); }

#define T float
void tk_ew_binary_ref(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy, float *o)
{
    switch (op) {
    case TK_EW_ADD: EW_LOOP2(u + w); break;
    case TK_EW_SUB: EW_LOOP2(u - w); break;
    case TK_EW_MUL: EW_LOOP2(u * w); break;
    case TK_EW_DIV: EW_LOOP2(u / w); break;
    case TK_EW_POW: EW_LOOP2(powf(u, w)); break;
    case TK_EW_MAX: EW_LOOP2(tk_max_nan(u, w)); break;
    case TK_EW_MIN: EW_LOOP2(tk_min_nan(u, w)); break;
    case TK_EW_GELU_BWD: EW_LOOP2(u * gelu_d(w)); break;
    case TK_EW_GELU_TANH_BWD: EW_LOOP2(u * gelu_tanh_d(w)); break;
    default: break;
    }
}

void tk_ew_compare_ref(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy, uint8_t *o)
{
    switch (op) {
    case TK_EW_EQ: EW_LOOP2(u == w); break;
    case TK_EW_NE: EW_LOOP2(u != w); break;
    case TK_EW_LT: EW_LOOP2(u < w); break;
    case TK_EW_LE: EW_LOOP2(u <= w); break;
    case TK_EW_GT: EW_LOOP2(u > w); break;
    case TK_EW_GE: EW_LOOP2(u >= w); break;
    default: break;
    }
}

void tk_ew_unary_ref(int op, int64_t n, const float *x, float *o)
{
    switch (op) {
    case TK_EW_NEG: EW_LOOP1(-u); break;
    case TK_EW_ABS: EW_LOOP1(fabsf(u)); break;
    case TK_EW_SQRT: EW_LOOP1(sqrtf(u)); break;
    case TK_EW_EXP: EW_LOOP1(expf(u)); break;
    case TK_EW_LOG: EW_LOOP1(logf(u)); break;
    case TK_EW_RELU: EW_LOOP1(tk_max_nan(u, 0.0f)); break;
    case TK_EW_GELU: EW_LOOP1(gelu(u)); break;
    case TK_EW_GELU_TANH: EW_LOOP1(gelu_tanh(u)); break;
    case TK_EW_TANH: EW_LOOP1(tanhf(u)); break;
    case TK_EW_SIGMOID: EW_LOOP1(sigmoidf(u)); break;
    case TK_EW_SIN: EW_LOOP1(sinf(u)); break;
    case TK_EW_COS: EW_LOOP1(cosf(u)); break;
    default: break;
    }
}
#undef T

#define T uint8_t
void tk_ew_logic(int op, int64_t n, const uint8_t *x, int64_t sx, const uint8_t *y, int64_t sy, uint8_t *o)
{
    switch (op) {
    case TK_EW_EQ: EW_LOOP2(u == w); break;
    case TK_EW_NE: EW_LOOP2(u != w); break;
    case TK_EW_AND: EW_LOOP2(u & w); break;
    case TK_EW_OR: EW_LOOP2(u | w); break;
    case TK_EW_XOR: EW_LOOP2(u ^ w); break;
    default: break;
    }
}

void tk_ew_logic_unary(int op, int64_t n, const uint8_t *x, uint8_t *o)
{
    switch (op) {
    case TK_EW_NOT: EW_LOOP1(!u); break;
    default: break;
    }
}
#undef T

/* int64 rows (PyTorch's integer arithmetic): + - * wrap around as two's
   complement (done in uint64_t, no undefined overflow); pow by squaring,
   a negative exponent giving the truncated 1/u^-w (0 unless |u| == 1). */
static inline int64_t i64_wrap(uint64_t v) { return (int64_t)v; }

static int64_t i64_pow(int64_t u, int64_t w)
{
    if (w < 0) return u == 1 ? 1 : u == -1 ? (w % 2 ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)u;
    for (; w; w >>= 1, b *= b)
        if (w & 1) r *= b;
    return i64_wrap(r);
}

#define T int64_t
void tk_ew_i64(int op, int64_t n, const int64_t *x, int64_t sx, const int64_t *y, int64_t sy, int64_t *o)
{
    switch (op) {
    case TK_EW_ADD: EW_LOOP2(i64_wrap((uint64_t)u + (uint64_t)w)); break;
    case TK_EW_SUB: EW_LOOP2(i64_wrap((uint64_t)u - (uint64_t)w)); break;
    case TK_EW_MUL: EW_LOOP2(i64_wrap((uint64_t)u * (uint64_t)w)); break;
    case TK_EW_POW: EW_LOOP2(i64_pow(u, w)); break;
    case TK_EW_MAX: EW_LOOP2(u > w ? u : w); break;
    case TK_EW_MIN: EW_LOOP2(u < w ? u : w); break;
    default: break;
    }
}

void tk_ew_i64_compare(int op, int64_t n, const int64_t *x, int64_t sx, const int64_t *y, int64_t sy, uint8_t *o)
{
    switch (op) {
    case TK_EW_EQ: EW_LOOP2(u == w); break;
    case TK_EW_NE: EW_LOOP2(u != w); break;
    case TK_EW_LT: EW_LOOP2(u < w); break;
    case TK_EW_LE: EW_LOOP2(u <= w); break;
    case TK_EW_GT: EW_LOOP2(u > w); break;
    case TK_EW_GE: EW_LOOP2(u >= w); break;
    default: break;
    }
}

void tk_ew_i64_unary(int op, int64_t n, const int64_t *x, int64_t *o)
{
    switch (op) {
    case TK_EW_NEG: EW_LOOP1(i64_wrap(0 - (uint64_t)u)); break;
    case TK_EW_ABS: EW_LOOP1(u < 0 ? i64_wrap(0 - (uint64_t)u) : u); break;
    default: break;
    }
}
#undef T
#undef EW_LOOP1
#undef EW_LOOP2

void tk_ew_masked_fill_ref(int64_t n, const float *x, int64_t sx, const uint8_t *m, int64_t sm,
                           float v, float *o)
{
    for (int64_t i = 0; i < n; i++) o[i] = m[i * sm] ? v : x[i * sx];
}

/* ===== Portable path ===== */

/* Register tile the compiler can keep in SSE registers: 4 x 8 floats are
   8 of the 16 xmm registers, leaving room for the A and B operands. */
#define C_MR 4
#define C_NR 8
/* Cache blocks: a B sliver (kc x nr, 8 KiB) and an A sliver (4 KiB) stay in
   a 32 KiB L1; the A block (mc x kc, 64 KiB) in L2; the B panel (kc x nc,
   2 MiB) in L3. */
#define C_KC 256
#define C_MC 64
#define C_NC 2048

static void ukernel_c(int64_t kc, const float *ap, const float *bp, float *c,
                      int64_t rsc, int m, int n, int acc)
{
    float t[C_MR][C_NR] = {{0.0f}};
    for (int64_t p = 0; p < kc; p++, ap += C_MR, bp += C_NR)
        for (int i = 0; i < C_MR; i++)
            for (int j = 0; j < C_NR; j++) t[i][j] += ap[i] * bp[j];
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) c[i*rsc + j] = acc ? c[i*rsc + j] + t[i][j] : t[i][j];
}

static void axpy_c(int64_t n, float s, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] += s * x[i];
}

static float row_max_c(int64_t n, const float *x)
{
    float m = -INFINITY;
    for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

static float exp_sum_c(int64_t n, const float *x, float m, float *y)
{
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};   /* 4 partial sums: fixed order */
    for (int64_t i = 0; i < n; i++) { y[i] = expf(x[i] - m); s[i & 3] += y[i]; }
    return (s[0] + s[1]) + (s[2] + s[3]);
}

static void scale_c(int64_t n, float s, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = s * x[i];
}

const tk_kern tk_kern_scalar = {
    .name = "scalar", .mr = C_MR, .nr = C_NR, .kc = C_KC, .mc = C_MC, .nc = C_NC,
    .ukernel = ukernel_c, .axpy = axpy_c, .exp_vec = tk_exp_vec_ref, .row_max = row_max_c,
    .exp_sum = exp_sum_c, .scale = scale_c,
    .ew_binary = tk_ew_binary_ref, .ew_compare = tk_ew_compare_ref, .ew_unary = tk_ew_unary_ref,
    .ew_masked_fill = tk_ew_masked_fill_ref,
    .half_from_f32 = tk_half_from_f32_ref, .half_to_f32 = tk_half_to_f32_ref,
};

#ifdef __wasm_simd128__
/* ===== The page's kernels (make web, -msimd128) =====
   The scalar table with its micro-kernel, axpy, scale, row_max and
   exp_sum's sums on 128-bit wasm lanes. Each element sees the same
   multiply, then add, in the same order as the loops above (wasm has no
   fused multiply-add here): the same bits, so it keeps the portable path's
   name ("scalar", as tt.kernel_path says). */

/* The page's register tile: W_MR x 8 is 2 W_MR accumulators, 2 vectors of B
   and a broadcast of A among V8's 16 xmm registers. */
#define W_MR 4
#define W_MC (16 * W_MR)   /* gemm.c may round a row block up to whole slivers: mc a multiple of mr */

/* The tile from A element (i, p) at a[i*ars + p*acs]: packed (ars 1, acs
   W_MR) or rows read in place (ars the row stride, acs 1). */
static inline void tile_w(int64_t kc, const float *a, int64_t ars, int64_t acs, const float *bp,
                          float *c, int64_t rsc, int m, int n, int acc)
{
    v128_t t[W_MR][2];
    for (int i = 0; i < W_MR; i++) t[i][0] = t[i][1] = wasm_f32x4_splat(0.0f);
    for (int64_t p = 0; p < kc; p++, a += acs, bp += C_NR) {
        const v128_t b0 = wasm_v128_load(bp), b1 = wasm_v128_load(bp + 4);
        for (int i = 0; i < W_MR; i++) {
            const v128_t av = wasm_v128_load32_splat(a + i * ars);
            t[i][0] = wasm_f32x4_add(t[i][0], wasm_f32x4_mul(av, b0));
            t[i][1] = wasm_f32x4_add(t[i][1], wasm_f32x4_mul(av, b1));
        }
    }
    if (m == W_MR && n == C_NR) {
        for (int i = 0; i < W_MR; i++, c += rsc) {
            wasm_v128_store(c, acc ? wasm_f32x4_add(wasm_v128_load(c), t[i][0]) : t[i][0]);
            wasm_v128_store(c + 4, acc ? wasm_f32x4_add(wasm_v128_load(c + 4), t[i][1]) : t[i][1]);
        }
        return;
    }
    float o[W_MR][C_NR];
    for (int i = 0; i < W_MR; i++) { wasm_v128_store(o[i], t[i][0]); wasm_v128_store(o[i] + 4, t[i][1]); }
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) c[i*rsc + j] = acc ? c[i*rsc + j] + o[i][j] : o[i][j];
}

static void ukernel_w(int64_t kc, const float *ap, const float *bp, float *c,
                      int64_t rsc, int m, int n, int acc)
{
    tile_w(kc, ap, 1, W_MR, bp, c, rsc, m, n, acc);
}

static void ukernel_rows_w(int64_t kc, const float *a, int64_t rsa, const float *bp, float *c,
                           int64_t rsc, int n, int acc)
{
    tile_w(kc, a, rsa, 1, bp, c, rsc, W_MR, n, acc);
}

static void axpy_w(int64_t n, float s, const float *x, float *y)
{
    const v128_t sv = wasm_f32x4_splat(s);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        wasm_v128_store(y + i, wasm_f32x4_add(wasm_v128_load(y + i), wasm_f32x4_mul(sv, wasm_v128_load(x + i))));
    for (; i < n; i++) y[i] += s * x[i];
}

static void scale_w(int64_t n, float s, const float *x, float *y)
{
    const v128_t sv = wasm_f32x4_splat(s);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) wasm_v128_store(y + i, wasm_f32x4_mul(sv, wasm_v128_load(x + i)));
    for (; i < n; i++) y[i] = s * x[i];
}

/* The scalar loop keeps the first of equal maxima; on lanes that is not
   always the first, which matters only between -0 and +0: a zero maximum
   is looked for again in order. NaN is never taken, as in the loop. */
static float row_max_w(int64_t n, const float *x)
{
    v128_t mv = wasm_f32x4_splat(-INFINITY);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) mv = wasm_f32x4_pmax(mv, wasm_v128_load(x + i));
    float l[4], m = -INFINITY;
    wasm_v128_store(l, mv);
    for (int k = 0; k < 4; k++) m = l[k] > m ? l[k] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m == 0.0f ? row_max_c(n, x) : m;
}

/* ===== expf on lanes =====
   musl's expf (the page's libm) on two float64 lanes at a time, each
   operation as musl orders it, so every result has its bits (wasm has no
   fused multiply-add to round differently): n = round(32 x / ln2) =
   32 k + j by the 1.5 * 2^52 shift, r = 32 x / ln2 - n in [-1/2, 1/2],
   exp x = 2^k 2^(j/32) (1 + c2 r + c1 r^2 + c0 r^3), rounded once to
   float32. The table is 2^(j/32) correctly rounded; the coefficients are
   musl's. */
#define EXPF_N 32
static const double expf_pow2[EXPF_N] = {
    0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
    0x1.172b83c7d517bp+0, 0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
    0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0, 0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
    0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
    0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
    0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0,
    0x1.ae89f995ad3adp+0, 0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
    0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0, 0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0,
};
#define EXPF_INVLN2N (0x1.71547652b82fep+0 * EXPF_N)
#define EXPF_SHIFT 0x1.8p+52
#define EXPF_C0 (0x1.c6af84b912394p-5 / EXPF_N / EXPF_N / EXPF_N)
#define EXPF_C1 (0x1.ebfce50fac4f3p-3 / EXPF_N / EXPF_N)
#define EXPF_C2 (0x1.62e42ff0c52d6p-1 / EXPF_N)

static inline v128_t expf_f64x2(v128_t x)
{
    const v128_t z = wasm_f64x2_mul(wasm_f64x2_splat(EXPF_INVLN2N), x);
    const v128_t kd = wasm_f64x2_add(z, wasm_f64x2_splat(EXPF_SHIFT));   /* n in its low bits */
    const v128_t r = wasm_f64x2_sub(z, wasm_f64x2_sub(kd, wasm_f64x2_splat(EXPF_SHIFT)));
    v128_t s = wasm_v128_load64_zero(&expf_pow2[wasm_i64x2_extract_lane(kd, 0) & (EXPF_N - 1)]);
    s = wasm_v128_load64_lane(&expf_pow2[wasm_i64x2_extract_lane(kd, 1) & (EXPF_N - 1)], s, 1);
    s = wasm_i64x2_add(s, wasm_i64x2_shl(wasm_u64x2_shr(kd, 5), 52));   /* times 2^k */
    const v128_t p = wasm_f64x2_add(wasm_f64x2_mul(wasm_f64x2_splat(EXPF_C0), r), wasm_f64x2_splat(EXPF_C1));
    const v128_t r2 = wasm_f64x2_mul(r, r);
    v128_t y = wasm_f64x2_add(wasm_f64x2_mul(wasm_f64x2_splat(EXPF_C2), r), wasm_f64x2_splat(1.0));
    y = wasm_f64x2_add(wasm_f64x2_mul(p, r2), y);
    return wasm_f64x2_mul(y, s);
}

/* expf of four floats; musl's ends: +0 below log 2^-150 (and at -inf),
   +inf above log 2^128, x + x for NaN */
static inline v128_t expf4(v128_t x)
{
    const v128_t lo = expf_f64x2(wasm_f64x2_promote_low_f32x4(x));
    const v128_t hi = expf_f64x2(wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(x, x, 2, 3, 2, 3)));
    v128_t y = wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(lo), wasm_f32x4_demote_f64x2_zero(hi), 0, 1, 4, 5);
    y = wasm_v128_andnot(y, wasm_f32x4_lt(x, wasm_f32x4_splat(-0x1.9fe368p6f)));
    y = wasm_v128_bitselect(wasm_f32x4_splat(INFINITY), y, wasm_f32x4_gt(x, wasm_f32x4_splat(0x1.62e42ep6f)));
    return wasm_v128_bitselect(wasm_f32x4_add(x, x), y, wasm_f32x4_ne(x, x));
}

static void exp_vec_w(int64_t n, const float *x, float *y)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) wasm_v128_store(y + i, expf4(wasm_v128_load(x + i)));
    for (; i < n; i++) y[i] = expf(x[i]);
}

/* exp_sum_c's four partial sums are the four lanes */
static float exp_sum_w(int64_t n, const float *x, float m, float *y)
{
    const v128_t mv = wasm_f32x4_splat(m);
    v128_t sv = wasm_f32x4_splat(0.0f);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const v128_t e = expf4(wasm_f32x4_sub(wasm_v128_load(x + i), mv));
        wasm_v128_store(y + i, e);
        sv = wasm_f32x4_add(sv, e);
    }
    float s[4];
    wasm_v128_store(s, sv);
    for (; i < n; i++) { y[i] = expf(x[i] - m); s[i & 3] += y[i]; }
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* x op y where each of x and y is contiguous or one broadcast value
   (stride 0): + - * / are one IEEE operation an element, the loops' bits */
#define EW_LANES(VOP, EXPR) do { \
    const v128_t xs = wasm_v128_load32_splat(x), ys = wasm_v128_load32_splat(y); \
    for (; i + 4 <= n; i += 4) \
        wasm_v128_store(o + i, VOP(sx ? wasm_v128_load(x + i) : xs, sy ? wasm_v128_load(y + i) : ys)); \
    for (; i < n; i++) { const float u = x[i * sx], w = y[i * sy]; o[i] = (EXPR); } \
} while (0)

static void ew_binary_w(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy, float *o)
{
    int64_t i = 0;
    switch ((sx == 0 || sx == 1) && (sy == 0 || sy == 1) ? op : -1) {
    case TK_EW_ADD: EW_LANES(wasm_f32x4_add, u + w); break;
    case TK_EW_SUB: EW_LANES(wasm_f32x4_sub, u - w); break;
    case TK_EW_MUL: EW_LANES(wasm_f32x4_mul, u * w); break;
    case TK_EW_DIV: EW_LANES(wasm_f32x4_div, u / w); break;
    default: tk_ew_binary_ref(op, n, x, sx, y, sy, o); break;
    }
}
#undef EW_LANES

/* sigmoid2's float operations on lanes: e = exp(-|t|), d = 1 / (1 + e),
   d for t >= 0, else e d */
static inline v128_t sigmoid4(v128_t t)
{
    const v128_t one = wasm_f32x4_splat(1.0f), e = expf4(wasm_f32x4_neg(wasm_f32x4_abs(t)));
    const v128_t d = wasm_f32x4_div(one, wasm_f32x4_add(one, e));
    return wasm_v128_bitselect(d, wasm_f32x4_mul(e, d), wasm_f32x4_ge(t, wasm_f32x4_splat(0.0f)));
}

/* gelu_tanh's: x sigmoid(2k (x + c x x x)) */
static inline v128_t gelu_tanh4(v128_t x)
{
    const v128_t c3 = wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_splat(GELU_C), x), x), x);
    return wasm_f32x4_mul(x, sigmoid4(wasm_f32x4_mul(wasm_f32x4_splat(2.0f * GELU_K), wasm_f32x4_add(x, c3))));
}

/* exp, sigmoid and gelu_tanh on lanes (their expf is most of their time) */
static void ew_unary_w(int op, int64_t n, const float *x, float *o)
{
    int64_t i = 0;
    if (op != TK_EW_EXP && op != TK_EW_SIGMOID && op != TK_EW_GELU_TANH) {
        tk_ew_unary_ref(op, n, x, o);
        return;
    }
    for (; i + 4 <= n; i += 4) {
        const v128_t u = wasm_v128_load(x + i);
        wasm_v128_store(o + i, op == TK_EW_EXP ? expf4(u) : op == TK_EW_SIGMOID ? sigmoid4(u) : gelu_tanh4(u));
    }
    if (i < n) tk_ew_unary_ref(op, n - i, x + i, o + i);
}

const tk_kern tk_kern_wasm = {
    .name = "scalar", .mr = W_MR, .nr = C_NR, .kc = C_KC, .mc = W_MC, .nc = C_NC,
    .ukernel = ukernel_w, .ukernel_rows = ukernel_rows_w, .axpy = axpy_w, .exp_vec = exp_vec_w, .row_max = row_max_w,
    .exp_sum = exp_sum_w, .scale = scale_w,
    .ew_binary = ew_binary_w, .ew_compare = tk_ew_compare_ref, .ew_unary = ew_unary_w,
    .ew_masked_fill = tk_ew_masked_fill_ref,
    .half_from_f32 = tk_half_from_f32_ref, .half_to_f32 = tk_half_to_f32_ref,
};
#endif

/* ===== Rotary embedding =====
   d = the row's width (even), h = d/2 pairs; pair i is (a, b) =
   (x[2i], x[2i+1]) interleaved, else (x[i], x[i+h]); it becomes
   (a cos - b sin, b cos + a sin), sin negated for the inverse. */
void tk_rope_row(int64_t d, const float *x, float *y, const float *c, const float *s, int interleaved, int inverse)
{
    const int64_t h = d / 2, ia = interleaved ? 2 : 1, ib = interleaved ? 1 : h;
    for (int64_t i = 0; i < h; i++) {
        const int64_t ka = i * ia, kb = ka + ib;
        const float a = x[ka], b = x[kb], sn = inverse ? -s[i] : s[i];
        y[ka] = a * c[i] - b * sn;
        y[kb] = b * c[i] + a * sn;
    }
}
