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

static void ukernel_w(int64_t kc, const float *ap, const float *bp, float *c,
                      int64_t rsc, int m, int n, int acc)
{
    v128_t t[C_MR][2];
    for (int i = 0; i < C_MR; i++) t[i][0] = t[i][1] = wasm_f32x4_splat(0.0f);
    for (int64_t p = 0; p < kc; p++, ap += C_MR, bp += C_NR) {
        const v128_t b0 = wasm_v128_load(bp), b1 = wasm_v128_load(bp + 4);
        for (int i = 0; i < C_MR; i++) {
            const v128_t a = wasm_f32x4_splat(ap[i]);
            t[i][0] = wasm_f32x4_add(t[i][0], wasm_f32x4_mul(a, b0));
            t[i][1] = wasm_f32x4_add(t[i][1], wasm_f32x4_mul(a, b1));
        }
    }
    float o[C_MR][C_NR];
    for (int i = 0; i < C_MR; i++) { wasm_v128_store(o[i], t[i][0]); wasm_v128_store(o[i] + 4, t[i][1]); }
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) c[i*rsc + j] = acc ? c[i*rsc + j] + o[i][j] : o[i][j];
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

/* exp_sum_c's four partial sums are the four lanes; expf stays scalar */
static float exp_sum_w(int64_t n, const float *x, float m, float *y)
{
    v128_t sv = wasm_f32x4_splat(0.0f);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        for (int k = 0; k < 4; k++) y[i + k] = expf(x[i + k] - m);
        sv = wasm_f32x4_add(sv, wasm_v128_load(y + i));
    }
    float s[4];
    wasm_v128_store(s, sv);
    for (; i < n; i++) { y[i] = expf(x[i] - m); s[i & 3] += y[i]; }
    return (s[0] + s[1]) + (s[2] + s[3]);
}

const tk_kern tk_kern_wasm = {
    .name = "scalar", .mr = C_MR, .nr = C_NR, .kc = C_KC, .mc = C_MC, .nc = C_NC,
    .ukernel = ukernel_w, .axpy = axpy_w, .exp_vec = tk_exp_vec_ref, .row_max = row_max_w,
    .exp_sum = exp_sum_w, .scale = scale_w,
    .ew_binary = tk_ew_binary_ref, .ew_compare = tk_ew_compare_ref, .ew_unary = tk_ew_unary_ref,
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
