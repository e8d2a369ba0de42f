/*
** avx2.c — AVX2+FMA micro-kernel and row primitives, picked at run
** time by dispatch.c. Tails run the same vector code on a padded copy, so
** results never depend on where a thread's range happens to start.
*/
#include "kernels.h"

#ifdef TK_X86_SIMD
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define TARGET __attribute__((target("avx2,fma")))

/* Micro-tile: MR rows broadcast x NR = 2 vectors. Of the 16 ymm registers,
   12 hold accumulators (two FMA ports x 4 cycles of latency need 8 chains
   in flight), 2 the B vectors and 1 the broadcast: 8 loads per 12 FMAs. */
#define MR 6
#define NR 16
/* Cache blocks, upper bounds fitted to L1/L2 at run time (gemm.c): A and B
   slivers (6 + 16 KiB at kc 256) stay in a 32 or 48 KiB L1; the A block
   (mc = 12 slivers, 72 KiB) in L2; the B panel (4 MiB) in L3. */
#define KC 256
#define MC 72
#define NC 4096

/* kc: inner size; C tile m x n (m <= MR, n <= NR) at c with row stride rsc.
   Row i of the A sliver at step p is a[i*is + p*ps]: packed (1, MR) or
   straight from a row-major A (rsa, 1). */
static TARGET inline __attribute__((always_inline)) void
tile(int64_t kc, const float *a, int64_t is, int64_t ps, const float *bp, float *c,
     int64_t rsc, int m, int n, int acc)
{
    __m256 c0[MR], c1[MR];
    for (int i = 0; i < m; i++) {   /* fetch the C tile while the loop runs */
        _mm_prefetch((const char *)(c + i * rsc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * rsc + NR - 1), _MM_HINT_T0);
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) { c0[i] = _mm256_setzero_ps(); c1[i] = _mm256_setzero_ps(); }
    for (int64_t p = 0; p < kc; p++, a += ps, bp += NR) {
        __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i * is);
            c0[i] = _mm256_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(ai, b1, c1[i]);
        }
    }
    /* constant indices only (the loop unrolls), or the accumulators would
       live on the stack: an edge tile goes through t, element by element */
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
        if (i >= m) break;
        float *ci = c + i * rsc;
        if (n == NR) {
            __m256 v0 = c0[i], v1 = c1[i];
            if (acc) {
                v0 = _mm256_add_ps(_mm256_loadu_ps(ci), v0);
                v1 = _mm256_add_ps(_mm256_loadu_ps(ci + 8), v1);
            }
            _mm256_storeu_ps(ci, v0);
            _mm256_storeu_ps(ci + 8, v1);
            continue;
        }
        float t[NR];
        _mm256_storeu_ps(t, c0[i]);
        _mm256_storeu_ps(t + 8, c1[i]);
        for (int j = 0; j < n; j++) ci[j] = acc ? ci[j] + t[j] : t[j];
    }
}

static TARGET void ukernel(int64_t kc, const float *ap, const float *bp, float *c,
                           int64_t rsc, int m, int n, int acc)
{
    tile(kc, ap, 1, MR, bp, c, rsc, m, n, acc);
}

static TARGET void ukernel_rows(int64_t kc, const float *a, int64_t rsa, const float *bp,
                                float *c, int64_t rsc, int n, int acc)
{
    tile(kc, a, rsa, 1, bp, c, rsc, MR, n, acc);
}

/* The 8 x 8 transpose of `rows` (<= 8) rows of 8 contiguous floats (row
   stride ld): o[q] is column q; missing rows read as zeros (the packing's
   padding). Three shuffle stages. */
static TARGET inline __attribute__((always_inline)) void
tr8(const float *src, int64_t ld, int rows, __m256 o[8])
{
    __m256 r[8], t[8], u[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) r[i] = i < rows ? _mm256_loadu_ps(src + i * ld) : _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 8; i += 4) {   /* per 128-bit half: rows i..i+3 of one column */
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
        o[q] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x20);
        o[q + 4] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x31);
    }
}

/* MR = 6 lanes of v at d, stored 4 + 2 so nothing is written past them. */
static TARGET inline __attribute__((always_inline)) void store_sliver_step(float *d, __m256 v)
{
    _mm_storeu_ps(d, _mm256_castps256_ps128(v));
    _mm_storel_pi((__m64 *)(d + 4), _mm256_extractf128_ps(v, 1));
}

/* tk_transpose by 8 x 8 blocks of whole columns; a last partial block of
   rows is stored through a padded tile */
static TARGET int64_t transpose(int64_t rows, int64_t cols, const float *a, int64_t lda, float *b,
                                int64_t ldb)
{
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8)
        for (int64_t i = 0; i < rows; i += 8) {
            int m = rows - i < 8 ? (int)(rows - i) : 8;
            __m256 o[8];
            tr8(a + i * lda + j, lda, m, o);
            float *d = b + j * ldb + i;
            if (m == 8) {
#pragma GCC unroll 8
                for (int q = 0; q < 8; q++) _mm256_storeu_ps(d + q * ldb, o[q]);
            } else {
                float t[8];
                for (int q = 0; q < 8; q++) {
                    _mm256_storeu_ps(t, o[q]);
                    memcpy(d + q * ldb, t, (size_t)m * sizeof(float));
                }
            }
        }
    return j;
}

/* A (mc x kc) into MR-row slivers. Unit column stride: 8 columns at a time
   transposed in registers. Unit row stride (a transposed view such as x^T
   in a weight's gradient): each step's MR rows are consecutive, one masked
   load (lanes past mc neither read nor kept: zeros) and one store. 0: not
   handled. */
static TARGET int pack_a(int64_t mc, int64_t kc, const float *a, int64_t rs, int64_t cs, float *dst)
{
    if (cs != 1 && rs == 1) {
        for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * kc) {
            int m = mc - i0 < MR ? (int)(mc - i0) : MR;
            __m256i k = _mm256_cmpgt_epi32(_mm256_set1_epi32(m), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            const float *s = a + i0;
            for (int64_t p = 0; p < kc; p++) store_sliver_step(dst + p * MR, _mm256_maskload_ps(s + p * cs, k));
        }
        return 1;
    }
    if (cs != 1) return 0;
    for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * kc) {
        int m = mc - i0 < MR ? (int)(mc - i0) : MR;
        const float *s = a + i0 * rs;
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8) {
            __m256 o[8];
            tr8(s + p, rs, m, o);
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++) store_sliver_step(dst + (p + q) * MR, o[q]);
        }
        for (; p < kc; p++)                    /* leftovers */
            for (int i = 0; i < MR; i++) dst[p * MR + i] = i < m ? s[i * rs + p] : 0.0f;
    }
    return 1;
}

/* B (kc x nc) with unit row stride (a transposed view such as K^T) into
   NR-column slivers, two 8 x 8 transposes per 8 rows. 0: not handled. */
static TARGET int pack_b(int64_t kc, int64_t nc, const float *b, int64_t rs, int64_t cs, float *dst)
{
    if (rs != 1 || cs == 1) return 0;
    for (int64_t j0 = 0; j0 < nc; j0 += NR, dst += NR * kc) {
        int n = nc - j0 < NR ? (int)(nc - j0) : NR;
        const float *s = b + j0 * cs;
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8) {
            __m256 o[8];
            tr8(s + p, cs, n < 8 ? n : 8, o);
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++) _mm256_storeu_ps(dst + (p + q) * NR, o[q]);
            tr8(s + 8 * cs + p, cs, n > 8 ? n - 8 : 0, o);
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++) _mm256_storeu_ps(dst + (p + q) * NR + 8, o[q]);
        }
        for (; p < kc; p++)                    /* leftovers */
            for (int j = 0; j < NR; j++) dst[p * NR + j] = j < n ? s[j * cs + p] : 0.0f;
    }
    return 1;
}

/* exp as kernels.h says. exp8_reduce: r, and t's bits, 0x4b400000 + n. */
static TARGET inline __attribute__((always_inline)) __m256 exp8_reduce(__m256 x, __m256i *ti)
{
    __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(8.0f * TK_LOG2E), _mm256_set1_ps(TK_EXP_SHIFT));
    __m256 n = _mm256_sub_ps(t, _mm256_set1_ps(TK_EXP_SHIFT));
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(TK_LN2_HI / 8.0f), x);
    *ti = _mm256_castps_si256(t);
    return _mm256_fnmadd_ps(n, _mm256_set1_ps(TK_LN2_LO / 8.0f), r);
}

/* q with exp(r) = 1 + q */
static TARGET inline __attribute__((always_inline)) __m256 exp8_q(__m256 r)
{
    __m256 q = _mm256_fmadd_ps(_mm256_set1_ps(tk_exp_poly[0]), r, _mm256_set1_ps(tk_exp_poly[1]));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(tk_exp_poly[2]));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.0f));
    return _mm256_mul_ps(q, r);
}

/* Outside [-87, 88]: x clamped (NaN passes: minps and maxps return the
   second operand on NaN), p = T + T q, then 2^k in two exact halves (p
   2^(k/2) is normal) so a denormal result rounds once, as scalef does. */
static TARGET __attribute__((noinline)) __m256 exp8_wide(__m256 x)
{
    x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);
    x = _mm256_max_ps(_mm256_set1_ps(-110.0f), x);
    __m256i ti;
    __m256 q = exp8_q(exp8_reduce(x, &ti));
    __m256 T = _mm256_permutevar8x32_ps(_mm256_loadu_ps(tk_exp_tab), ti);
    __m256 p = _mm256_fmadd_ps(T, q, T);
    __m256i k = _mm256_srai_epi32(_mm256_sub_epi32(ti, _mm256_castps_si256(_mm256_set1_ps(TK_EXP_SHIFT))), 3);
    __m256i k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1);
    __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* On [-87, 88] k is in [-126, 127] and the result normal: 2^k T is T's
   bits plus n << 20 less j << 20 (the table holds T's bits less j << 20),
   and the fma gives 2^k (T + T q) with the one rounding exp8_wide's p has.
   NaN gives NaN here too (q is NaN). */
static TARGET inline __attribute__((always_inline)) __m256 exp8_fast(__m256 x)
{
    __m256i ti, adj = _mm256_sub_epi32(_mm256_castps_si256(_mm256_loadu_ps(tk_exp_tab)),
                                       _mm256_setr_epi32(0, 1 << 20, 2 << 20, 3 << 20, 4 << 20,
                                                         5 << 20, 6 << 20, 7 << 20));
    __m256 q = exp8_q(exp8_reduce(x, &ti));
    __m256 T = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_permutevar8x32_epi32(adj, ti),
                                                    _mm256_slli_epi32(ti, 20)));
    return _mm256_fmadd_ps(T, q, T);
}

/* lo >= -87 and hi <= 88 in every lane: exp8_fast's range. A NaN lane
   fails the test or (through min and max, which return their second
   operand on NaN) drops out of it: right either way, as exp8_fast gives
   NaN for NaN. */
static TARGET inline __attribute__((always_inline)) int exp8_in(__m256 lo, __m256 hi)
{
    __m256 in = _mm256_and_ps(_mm256_cmp_ps(lo, _mm256_set1_ps(-87.0f), _CMP_GE_OQ),
                              _mm256_cmp_ps(hi, _mm256_set1_ps(88.0f), _CMP_LE_OQ));
    return _mm256_movemask_ps(in) == 0xff;
}

static TARGET inline __attribute__((always_inline)) __m256 exp8(__m256 x)
{
    if (__builtin_expect(!exp8_in(x, x), 0)) return exp8_wide(x);
    return exp8_fast(x);
}

/* exp(x) for x <= 0 or NaN (scores less their row max), no branch:
   exp8_fast on x clamped at TK_EXP_LO, the float just above ln FLT_MIN
   (so k >= -126), and 0 below it, where the true value is under FLT_MIN
   (-inf, a hidden key, gives 0 exactly). NaN stays NaN (NLT is true). */
static TARGET inline __attribute__((always_inline)) __m256 exp8_nonpos(__m256 x)
{
    __m256 y = exp8_fast(_mm256_max_ps(_mm256_set1_ps(TK_EXP_LO), x));
    return _mm256_and_ps(y, _mm256_cmp_ps(x, _mm256_set1_ps(TK_EXP_LO), _CMP_NLT_UQ));
}

static TARGET void exp_vec(int64_t n, const float *x, float *y)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
    if (i < n) {                               /* leftovers, through a padded copy */
        float t[8] = {0.0f};
        memcpy(t, x + i, (size_t)(n - i) * sizeof(float));
        _mm256_storeu_ps(t, exp8(_mm256_loadu_ps(t)));
        memcpy(y + i, t, (size_t)(n - i) * sizeof(float));
    }
}

static TARGET void axpy(int64_t n, float s, const float *x, float *y)
{
    __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(vs, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] = fmaf(s, x[i], y[i]);   /* leftovers, same rounding */
}

static TARGET float row_max(int64_t n, const float *x)
{
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
        m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
        m2 = _mm256_max_ps(m2, _mm256_loadu_ps(x + i + 16));
        m3 = _mm256_max_ps(m3, _mm256_loadu_ps(x + i + 24));
    }
    for (; i + 8 <= n; i += 8) m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
    float t[8], m = -INFINITY;
    _mm256_storeu_ps(t, _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
    for (int j = 0; j < 8; j++) m = t[j] > m ? t[j] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;       /* leftovers */
    return m;
}

/* as in avx512.c, next fetched two lines an iteration; the four vectors
   of an iteration share one range test (one movemask and branch instead
   of four), else each takes exp8's own test */
static TARGET inline __attribute__((always_inline)) float
exp_sum_body(int64_t n, const float *x, float m, float *y, const float *next, int nonpos)
{
    __m256 vm = _mm256_set1_ps(m), s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        if (next) {
            _mm_prefetch((const char *)(next + i), _MM_HINT_T0);
            _mm_prefetch((const char *)(next + i + 16), _MM_HINT_T0);
        }
        __m256 e0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
        __m256 e1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm);
        __m256 e2 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 16), vm);
        __m256 e3 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 24), vm);
        if (__builtin_expect(exp8_in(_mm256_min_ps(_mm256_min_ps(e0, e1), _mm256_min_ps(e2, e3)),
                                     _mm256_max_ps(_mm256_max_ps(e0, e1), _mm256_max_ps(e2, e3))), 1)) {
            e0 = exp8_fast(e0); e1 = exp8_fast(e1); e2 = exp8_fast(e2); e3 = exp8_fast(e3);
        } else if (nonpos) {
            e0 = exp8_nonpos(e0); e1 = exp8_nonpos(e1); e2 = exp8_nonpos(e2); e3 = exp8_nonpos(e3);
        } else {
            e0 = exp8(e0); e1 = exp8(e1); e2 = exp8(e2); e3 = exp8(e3);
        }
        _mm256_storeu_ps(y + i, e0);
        _mm256_storeu_ps(y + i + 8, e1);
        _mm256_storeu_ps(y + i + 16, e2);
        _mm256_storeu_ps(y + i + 24, e3);
        s0 = _mm256_add_ps(s0, e0); s1 = _mm256_add_ps(s1, e1);
        s2 = _mm256_add_ps(s2, e2); s3 = _mm256_add_ps(s3, e3);
    }
    for (; i + 8 <= n; i += 8) {
        __m256 e = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
        e = nonpos ? exp8_nonpos(e) : exp8(e);
        _mm256_storeu_ps(y + i, e);
        s0 = _mm256_add_ps(s0, e);
    }
    if (i < n) {   /* leftovers: m in the lanes past n (exp 0 keeps exp8 on its fast way), then +0 */
        __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256 v = _mm256_blendv_ps(vm, _mm256_maskload_ps(x + i, live), _mm256_castsi256_ps(live));
        __m256 e = _mm256_sub_ps(v, vm);
        e = _mm256_and_ps(nonpos ? exp8_nonpos(e) : exp8(e), _mm256_castsi256_ps(live));
        _mm256_maskstore_ps(y + i, live, e);
        s1 = _mm256_add_ps(s1, e);
    }
    float t[8];
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

static TARGET float exp_sum(int64_t n, const float *x, float m, float *y)
{
    return exp_sum_body(n, x, m, y, NULL, 0);
}

/* exp_sum for x <= m (sdpa's scores less their max), with exp8_nonpos */
static TARGET float sdpa_exp_sum(int64_t n, const float *x, float m, float *y)
{
    return exp_sum_body(n, x, m, y, NULL, 1);
}

static TARGET float exp_sum_next(int64_t n, const float *x, float m, float *y, const float *next)
{
    for (int64_t i = n & ~(int64_t)31; i < n; i += 16)    /* the part the main loop leaves */
        _mm_prefetch((const char *)(next + i), _MM_HINT_T0);
    return exp_sum_body(n, x, m, y, next, 0);
}

static TARGET void scale(int64_t n, float s, const float *x, float *y)
{
    __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {          /* 4 vectors an iteration: less loop per store */
        __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        __m256 c = _mm256_loadu_ps(x + i + 16), d = _mm256_loadu_ps(x + i + 24);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(vs, a));
        _mm256_storeu_ps(y + i + 8, _mm256_mul_ps(vs, b));
        _mm256_storeu_ps(y + i + 16, _mm256_mul_ps(vs, c));
        _mm256_storeu_ps(y + i + 24, _mm256_mul_ps(vs, d));
    }
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(vs, _mm256_loadu_ps(x + i)));
    for (; i < n; i++) y[i] = s * x[i];        /* leftovers */
}

/* ===== Reduction lines ===== */

/* as TK_SUM_CHAINS says: 8 vectors of 4 double chains, the leftovers added
   to the chains in order */
static TARGET double sum_line(int64_t n, const float *x)
{
    __m256d a[8];
    for (int q = 0; q < 8; q++) a[q] = _mm256_setzero_pd();
    int64_t j = 0;
    for (; j + 32 <= n; j += 32)
#pragma GCC unroll 8
        for (int q = 0; q < 8; q++) a[q] = _mm256_add_pd(a[q], _mm256_cvtps_pd(_mm_loadu_ps(x + j + 4 * q)));
    double s[TK_SUM_CHAINS];
    for (int q = 0; q < 8; q++) _mm256_storeu_pd(s + 4 * q, a[q]);
    for (int k = 0; j + k < n; k++) s[k] += (double)x[j + k];
    return tk_sum_fold(s);
}

/* acc[i] += x[j*sd + i] over j in order: 4 lines a vector, 16 at a time;
   the last nb % 4 lines scalar (the same adds in the same order) */
static TARGET void sum_cols(int64_t nb, int64_t R, const float *x, int64_t sd, double *acc)
{
    int64_t i = 0;
    for (; i + 16 <= nb; i += 16) {
        __m256d a0 = _mm256_loadu_pd(acc + i), a1 = _mm256_loadu_pd(acc + i + 4);
        __m256d a2 = _mm256_loadu_pd(acc + i + 8), a3 = _mm256_loadu_pd(acc + i + 12);
        for (int64_t j = 0; j < R; j++) {
            const float *r = x + j * sd + i;
            a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(r)));
            a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(r + 4)));
            a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm_loadu_ps(r + 8)));
            a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm_loadu_ps(r + 12)));
        }
        _mm256_storeu_pd(acc + i, a0); _mm256_storeu_pd(acc + i + 4, a1);
        _mm256_storeu_pd(acc + i + 8, a2); _mm256_storeu_pd(acc + i + 12, a3);
    }
    for (; i + 4 <= nb; i += 4) {
        __m256d a0 = _mm256_loadu_pd(acc + i);
        for (int64_t j = 0; j < R; j++) a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x + j * sd + i)));
        _mm256_storeu_pd(acc + i, a0);
    }
    for (; i < nb; i++)
        for (int64_t j = 0; j < R; j++) acc[i] += (double)x[j * sd + i];
}

/* ===== Elementwise rows ===== */

static TARGET inline __m256 neg8(__m256 u) { return _mm256_xor_ps(u, _mm256_set1_ps(-0.0f)); }
static TARGET inline __m256 abs8(__m256 u) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), u); }

/* tk_max_nan (kernels.h) on 8 lanes: maxps gives w on NaN or equality, so
   only u's NaN lanes need u put back. */
static TARGET inline __m256 max8(__m256 u, __m256 w)
{
    return _mm256_blendv_ps(_mm256_max_ps(u, w), u, _mm256_cmp_ps(u, u, _CMP_UNORD_Q));
}

static TARGET inline __m256 min8(__m256 u, __m256 w)
{
    return _mm256_blendv_ps(_mm256_min_ps(u, w), u, _mm256_cmp_ps(u, u, _CMP_UNORD_Q));
}

/* log(x) as tk_log_invc says (kernels.h) for ix, the bits of positive
   normal floats, the 8-entry tables in registers; kadj (when adj) is
   added to k. The same operations as avx512.c, so the same bits. */
static TARGET inline __attribute__((always_inline)) __m256 log_normal8(__m256i ix, __m256 kadj, int adj)
{
    __m256i u = _mm256_sub_epi32(ix, _mm256_set1_epi32(TK_LOG_OFF));
    __m256 k = _mm256_cvtepi32_ps(_mm256_srai_epi32(u, 23));
    if (adj) k = _mm256_add_ps(k, kadj);
    __m256 z = _mm256_castsi256_ps(_mm256_sub_epi32(ix, _mm256_and_si256(u, _mm256_set1_epi32((int)0xff800000u))));
    __m256i i = _mm256_srli_epi32(u, 20);
    __m256 invc = _mm256_permutevar8x32_ps(_mm256_loadu_ps(tk_log_invc), i);
    __m256 logc = _mm256_permutevar8x32_ps(_mm256_loadu_ps(tk_log_c), i);
    __m256 r = _mm256_fmsub_ps(z, invc, _mm256_set1_ps(1.0f));
    __m256 r2 = _mm256_mul_ps(r, r);
    __m256 p = _mm256_fmadd_ps(r2, _mm256_fmadd_ps(_mm256_set1_ps(tk_log_poly[0]), r, _mm256_set1_ps(tk_log_poly[1])),
                               _mm256_fmadd_ps(_mm256_set1_ps(tk_log_poly[2]), r, _mm256_set1_ps(tk_log_poly[3])));
    __m256 s = _mm256_fmadd_ps(r2, p, _mm256_fmadd_ps(k, _mm256_set1_ps(TK_LN2_LO), r));
    __m256 hi = _mm256_fmadd_ps(k, _mm256_set1_ps(TK_LN2_HI), logc);           /* exact */
    return _mm256_add_ps(hi, s);
}

/* log(x); a vector with a lane that is not a positive normal float takes
   the slow way, as in avx512.c (denormals scaled by 2^23 first, the
   special values put right at the end; inlined so the loops keep the
   constants in registers). */
static TARGET inline __attribute__((always_inline)) __m256 log8_odd(__m256 x)
{
    __m256 den = _mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
    __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(8388608.0f)), den);
    __m256 r = log_normal8(_mm256_castps_si256(xs), _mm256_and_ps(den, _mm256_set1_ps(-23.0f)), 1);
    __m256 zero = _mm256_setzero_ps(), inf = _mm256_set1_ps(INFINITY);
    r = _mm256_blendv_ps(r, inf, _mm256_cmp_ps(x, inf, _CMP_EQ_OQ));
    r = _mm256_blendv_ps(r, _mm256_castsi256_ps(_mm256_set1_epi32((int)0xffc00000u)),  /* as logf */
                         _mm256_cmp_ps(x, zero, _CMP_LT_OQ));
    r = _mm256_blendv_ps(r, neg8(inf), _mm256_cmp_ps(x, zero, _CMP_EQ_OQ));
    return _mm256_blendv_ps(r, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* A lane is rare (0, denormal, negative, inf or NaN) when its bits minus
   2^23 are >= 0x7f000000 unsigned; one of two vectors is when the unsigned
   max of their keys is. */
static TARGET inline __m256i log_key8(__m256i ix)
{
    return _mm256_sub_epi32(ix, _mm256_set1_epi32(0x00800000));
}

static TARGET inline int log_rare8(__m256i key)
{
    __m256i odd = _mm256_cmpeq_epi32(_mm256_max_epu32(key, _mm256_set1_epi32(0x7f000000)), key);
    return !_mm256_testz_si256(odd, odd);
}

static TARGET inline __attribute__((always_inline)) __m256 log8(__m256 x)
{
    __m256i ix = _mm256_castps_si256(x);
    if (__builtin_expect(log_rare8(log_key8(ix)), 0)) return log8_odd(x);
    return log_normal8(ix, _mm256_setzero_ps(), 0);
}

/* log of a row's whole vectors, one test of two for rare lanes (as
   avx512.c); returns how many floats it did. */
static TARGET int64_t ew_log8(int64_t n, const float *x, float *o)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a0 = _mm256_loadu_ps(x + i), a1 = _mm256_loadu_ps(x + i + 8);
        __m256i i0 = _mm256_castps_si256(a0), i1 = _mm256_castps_si256(a1);
        if (__builtin_expect(log_rare8(_mm256_max_epu32(log_key8(i0), log_key8(i1))), 0)) {
            _mm256_storeu_ps(o + i, log8_odd(a0));
            _mm256_storeu_ps(o + i + 8, log8_odd(a1));
        } else {
            _mm256_storeu_ps(o + i, log_normal8(i0, _mm256_setzero_ps(), 0));
            _mm256_storeu_ps(o + i + 8, log_normal8(i1, _mm256_setzero_ps(), 0));
        }
    }
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, log8(_mm256_loadu_ps(x + i)));
    return i;
}

/* One loop per stride pattern, two vectors an iteration; the leftovers run
   the reference row (ref.c), which rounds the same way. */
#define EW_BIN_LOOPS(OPV) do { \
    __m256 vx = _mm256_set1_ps(x[0]), vy = _mm256_set1_ps(y[0]); \
    int64_t i = 0; \
    if (sx && sy) { \
        for (; i + 16 <= n; i += 16) { \
            _mm256_storeu_ps(o + i, OPV(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i))); \
            _mm256_storeu_ps(o + i + 8, OPV(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8))); \
        } \
        for (; i + 8 <= n; i += 8) \
            _mm256_storeu_ps(o + i, OPV(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i))); \
    } else if (sx) { \
        for (; i + 16 <= n; i += 16) { \
            _mm256_storeu_ps(o + i, OPV(_mm256_loadu_ps(x + i), vy)); \
            _mm256_storeu_ps(o + i + 8, OPV(_mm256_loadu_ps(x + i + 8), vy)); \
        } \
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, OPV(_mm256_loadu_ps(x + i), vy)); \
    } else if (sy) { \
        for (; i + 16 <= n; i += 16) { \
            _mm256_storeu_ps(o + i, OPV(vx, _mm256_loadu_ps(y + i))); \
            _mm256_storeu_ps(o + i + 8, OPV(vx, _mm256_loadu_ps(y + i + 8))); \
        } \
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, OPV(vx, _mm256_loadu_ps(y + i))); \
    } \
    if (i < n) tk_ew_binary_ref(op, n - i, x + i * sx, sx, y + i * sy, sy, o + i); \
} while (0)

static TARGET void ew_binary(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy,
                             float *o)
{
    switch (op) {
    case TK_EW_ADD: EW_BIN_LOOPS(_mm256_add_ps); break;
    case TK_EW_SUB: EW_BIN_LOOPS(_mm256_sub_ps); break;
    case TK_EW_MUL: EW_BIN_LOOPS(_mm256_mul_ps); break;
    case TK_EW_DIV: EW_BIN_LOOPS(_mm256_div_ps); break;
    case TK_EW_MAX: EW_BIN_LOOPS(max8); break;
    case TK_EW_MIN: EW_BIN_LOOPS(min8); break;
    default: tk_ew_binary_ref(op, n, x, sx, y, sy, o); break;
    }
}

/* 32 compares at a time: four all-ones/zero lane masks packed to bytes
   (packs works within 128-bit halves; the permute restores the order). */
#define EW_CMP_LOOPS(PRED) do { \
    __m256 vx = _mm256_set1_ps(x[0]), vy = _mm256_set1_ps(y[0]); \
    __m256i ord = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7), one = _mm256_set1_epi8(1); \
    int64_t i = 0; \
    for (; i + 32 <= n; i += 32) { \
        __m256i c[4]; \
        for (int q = 0; q < 4; q++) { \
            __m256 u = sx ? _mm256_loadu_ps(x + i + 8 * q) : vx; \
            __m256 w = sy ? _mm256_loadu_ps(y + i + 8 * q) : vy; \
            c[q] = _mm256_castps_si256(_mm256_cmp_ps(u, w, PRED)); \
        } \
        __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3])); \
        b = _mm256_and_si256(_mm256_permutevar8x32_epi32(b, ord), one); \
        _mm256_storeu_si256((__m256i *)(o + i), b); \
    } \
    if (i < n) tk_ew_compare_ref(op, n - i, x + i * sx, sx, y + i * sy, sy, o + i); \
} while (0)

static TARGET void ew_compare(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy,
                              uint8_t *o)
{
    switch (op) {
    case TK_EW_EQ: EW_CMP_LOOPS(_CMP_EQ_OQ); break;
    case TK_EW_NE: EW_CMP_LOOPS(_CMP_NEQ_UQ); break;
    case TK_EW_LT: EW_CMP_LOOPS(_CMP_LT_OQ); break;
    case TK_EW_LE: EW_CMP_LOOPS(_CMP_LE_OQ); break;
    case TK_EW_GT: EW_CMP_LOOPS(_CMP_GT_OQ); break;
    case TK_EW_GE: EW_CMP_LOOPS(_CMP_GE_OQ); break;
    default: tk_ew_compare_ref(op, n, x, sx, y, sy, o); break;
    }
}

static TARGET inline __m256 relu8(__m256 u) { return max8(u, _mm256_setzero_ps()); }

/* as tk_tanh_poly says (kernels.h); NaN stays NaN through the exp branch */
static TARGET inline __m256 tanh8(__m256 x)
{
    __m256 sign = _mm256_set1_ps(-0.0f), a = _mm256_andnot_ps(sign, x), z = _mm256_mul_ps(a, a);
    __m256 p = _mm256_set1_ps(tk_tanh_poly[0]);
    for (int i = 1; i < 5; i++) p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(tk_tanh_poly[i]));
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), a, a);
    __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
    __m256 big = _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(exp8(_mm256_mul_ps(two, a)), one)));
    __m256 r = _mm256_blendv_ps(big, small, _mm256_cmp_ps(a, _mm256_set1_ps(TK_TANH_SMALL), _CMP_LT_OQ));
    return _mm256_or_ps(r, _mm256_and_ps(sign, x));
}

static TARGET inline __m256 sigmoid8(__m256 x)
{
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 e = exp8(_mm256_or_ps(x, _mm256_set1_ps(-0.0f)));          /* exp(-|x|) */
    __m256 d = _mm256_div_ps(one, _mm256_add_ps(one, e));
    return _mm256_blendv_ps(_mm256_mul_ps(e, d), d, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
}

/* the inexact ops, for the padded leftovers */
static TARGET inline __m256 approx8(int op, __m256 v)
{
    switch (op) {
    case TK_EW_EXP: return exp8(v);
    case TK_EW_LOG: return log8(v);
    case TK_EW_TANH: return tanh8(v);
    default: return sigmoid8(v);
    }
}

/* Exact ops finish with the reference row; the others run their
   leftovers through the vector code on a padded copy. */
#define EW_UN_LOOP(OPV) do { \
    for (; i + 16 <= n; i += 16) { \
        __m256 a0 = _mm256_loadu_ps(x + i), a1 = _mm256_loadu_ps(x + i + 8); \
        _mm256_storeu_ps(o + i, OPV(a0)); \
        _mm256_storeu_ps(o + i + 8, OPV(a1)); \
    } \
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, OPV(_mm256_loadu_ps(x + i))); \
} while (0)

static TARGET void ew_unary(int op, int64_t n, const float *x, float *o)
{
    int64_t i = 0;
    switch (op) {
    case TK_EW_NEG: EW_UN_LOOP(neg8); break;
    case TK_EW_ABS: EW_UN_LOOP(abs8); break;
    case TK_EW_SQRT: EW_UN_LOOP(_mm256_sqrt_ps); break;
    case TK_EW_EXP: EW_UN_LOOP(exp8); break;
    case TK_EW_LOG: i = ew_log8(n, x, o); break;
    case TK_EW_RELU: EW_UN_LOOP(relu8); break;
    case TK_EW_TANH: EW_UN_LOOP(tanh8); break;
    case TK_EW_SIGMOID: EW_UN_LOOP(sigmoid8); break;
    default: tk_ew_unary_ref(op, n, x, o); return;
    }
    if (op != TK_EW_EXP && op != TK_EW_LOG && op != TK_EW_TANH && op != TK_EW_SIGMOID) {
        if (i < n) tk_ew_unary_ref(op, n - i, x + i, o + i);   /* exact ops: the reference finishes */
        return;
    }
    if (i < n) {                               /* inexact leftovers: padded copy */
        float t[8] = {0.0f};
        memcpy(t, x + i, (size_t)(n - i) * sizeof(float));
        _mm256_storeu_ps(t, approx8(op, _mm256_loadu_ps(t)));
        memcpy(o + i, t, (size_t)(n - i) * sizeof(float));
    }
}

static TARGET void ew_masked_fill(int64_t n, const float *x, int64_t sx, const uint8_t *m, int64_t sm,
                                  float v, float *o)
{
    __m256 vv = _mm256_set1_ps(v), vx = _mm256_set1_ps(x[0]);
    int64_t i = 0;
    if (!sm) {                                 /* one mask byte: a fill or a copy */
        if (sx && !m[0]) { memmove(o, x, (size_t)n * sizeof(float)); return; }
        __m256 r = m[0] ? vv : vx;
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, r);
    } else {
        for (; i + 8 <= n; i += 8) {
            __m256i mb = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(m + i)));
            __m256 clear = _mm256_castsi256_ps(_mm256_cmpeq_epi32(mb, _mm256_setzero_si256()));
            _mm256_storeu_ps(o + i, _mm256_blendv_ps(vv, sx ? _mm256_loadu_ps(x + i) : vx, clear));
        }
    }
    for (; i < n; i++) o[i] = m[i * sm] ? v : x[i * sx];   /* leftovers */
}

/* ===== sdpa at small shapes =====
   One head whole when Nq, Nk <= SDPA_SMALL_N and Dh, Dv <= 16, as
   avx512.c's sdpa_head and sdpa_bwd_head: operands in L1, nothing packed
   but K^T and V^T, no scratch. A row of 16 floats is two ymm registers, so
   the layout is the micro-kernel's: tile() keeps 6 rows of 2 accumulators
   (12 registers), the streamed key or value row (2) and a broadcast (1),
   15 of the 16. Every product here is tile() itself, on query rows, score
   rows and key rows of 16 floats as they lie (K^T and V^T as 16-key
   slivers), over the 6-row slivers the tiled kernels use, so every sum is
   theirs in their order and the bits are too: scores and dP fma chains
   over d from 0 of (scale q_d) k_d and do_e v_e; O, dQ, dK and dV fma
   chains over keys or query rows from 0, added to zeros (turning a -0
   chain into +0, as the tiled kernels' accumulators do) and, for dK and
   dV, to the group's earlier heads; row_max, sdpa_exp_sum, exp_sum and
   scale are the ones they call. The forward's P V takes each sliver's
   last row's keys, as the tiled kernel does; elsewhere the terms one
   skips and the other adds are exact zeros times finite rows. */
#define SDPA_SMALL_N 64
#define SDPA_SMALL_ROWS ((SDPA_SMALL_N + MR - 1) / MR * MR)   /* tile() reads whole slivers */

/* n rows (row stride rs, element stride cs, Dn elements) into 16-float
   rows at dst, zero padded; returns a NaN when an element is not finite */
static TARGET float rows16(float *dst, const float *src, int64_t n, int64_t rs, int64_t cs, int64_t Dn)
{
    __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i k0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)Dn), iota);
    __m256i k1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)Dn - 8), iota);
    __m256 chk = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i++) {
        __m256 x0, x1;
        if (cs == 1) {
            x0 = _mm256_maskload_ps(src + i * rs, k0);
            x1 = _mm256_maskload_ps(src + i * rs + 8, k1);
        } else {
            float t[16] = { 0 };
            for (int64_t d = 0; d < Dn; d++) t[d] = src[i * rs + d * cs];
            x0 = _mm256_loadu_ps(t);
            x1 = _mm256_loadu_ps(t + 8);
        }
        _mm256_store_ps(dst + i * 16, x0);
        _mm256_store_ps(dst + i * 16 + 8, x1);
        chk = _mm256_add_ps(chk, _mm256_add_ps(_mm256_sub_ps(x0, x0), _mm256_sub_ps(x1, x1)));
    }
    float t[8];
    _mm256_storeu_ps(t, chk);
    return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

/* Rows [n, up to a whole sliver) of 16-float rows: zeros, read by tile() */
static void pad_rows16(float *dst, int64_t n)
{
    int64_t np = (n + MR - 1) / MR * MR;
    memset(dst + n * 16, 0, (size_t)((np - n) * 16) * sizeof(float));
}

/* Dn x Nk K^T (or V^T) as 16-key slivers (kc = Dn), from 16-float rows */
static TARGET void slivers16(float *dst, const float *rows, int64_t Nk, int64_t Dn)
{
    if (Dn > 0) pack_b(Dn, Nk, rows, 1, 16, dst);
}

/* A score row's max and sdpa_exp_sum(n, s, max, s), n <= SDPA_SMALL_N,
   without row_max's and exp_sum_body's scalar leftovers: the same exps
   (exp_sum_body's exp8_fast equals exp8_nonpos on x <= 0) into the same
   accumulators in the same order, the last partial vector through a
   masked load, -inf past n (exp 0, stored: the caller wants zeros there).
   The max of finite and -inf scores is the max whatever the order; a NaN
   or inf score gives a max or sum the caller rejects, as with row_max. */
static TARGET inline __attribute__((always_inline)) float small_exp_sum(int64_t n, float *s, float *mx)
{
    __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 ninf = _mm256_set1_ps(-INFINITY), vm = ninf;
    int64_t full = n & ~(int64_t)7;
    for (int64_t i = 0; i < full; i += 8) vm = _mm256_max_ps(vm, _mm256_load_ps(s + i));
    __m256i kt = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - full)), iota);
    __m256 tail = _mm256_blendv_ps(ninf, _mm256_maskload_ps(s + full, kt), _mm256_castsi256_ps(kt));
    vm = _mm256_max_ps(vm, tail);
    vm = _mm256_max_ps(vm, _mm256_permute2f128_ps(vm, vm, 1));
    vm = _mm256_max_ps(vm, _mm256_permute_ps(vm, 0x4e));
    vm = _mm256_max_ps(vm, _mm256_permute_ps(vm, 0xb1));
    *mx = _mm256_cvtss_f32(vm);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 e0 = exp8_nonpos(_mm256_sub_ps(_mm256_load_ps(s + i), vm));
        __m256 e1 = exp8_nonpos(_mm256_sub_ps(_mm256_load_ps(s + i + 8), vm));
        __m256 e2 = exp8_nonpos(_mm256_sub_ps(_mm256_load_ps(s + i + 16), vm));
        __m256 e3 = exp8_nonpos(_mm256_sub_ps(_mm256_load_ps(s + i + 24), vm));
        _mm256_store_ps(s + i, e0); _mm256_store_ps(s + i + 8, e1);
        _mm256_store_ps(s + i + 16, e2); _mm256_store_ps(s + i + 24, e3);
        s0 = _mm256_add_ps(s0, e0); s1 = _mm256_add_ps(s1, e1);
        s2 = _mm256_add_ps(s2, e2); s3 = _mm256_add_ps(s3, e3);
    }
    for (; i + 8 <= n; i += 8) {
        __m256 e = exp8_nonpos(_mm256_sub_ps(_mm256_load_ps(s + i), vm));
        _mm256_store_ps(s + i, e);
        s0 = _mm256_add_ps(s0, e);
    }
    if (i < n) {
        __m256 e = exp8_nonpos(_mm256_sub_ps(tail, vm));
        _mm256_store_ps(s + i, e);
        s1 = _mm256_add_ps(s1, e);
    }
    float t[8];
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

static TARGET int64_t sdpa_head(const tk_sdpa_args *a, int64_t b, int64_t h)
{
    enum { W = SDPA_SMALL_N, WP = SDPA_SMALL_ROWS };
    int64_t hk = h / (a->Hq / a->Hkv), Nq = a->Nq, Nk = a->Nk, Dh = a->Dh, Dv = a->Dv, off = Nk - Nq;
    int64_t bh = b * a->Hq + h, empty = 0;
    const float *K = a->k + b * a->ks_b + hk * a->ks_h, *V = a->v + b * a->vs_b + hk * a->vs_h;
    const uint8_t *M = a->mask ? a->mask + b * a->ms_b + h * a->ms_h : NULL;
    __attribute__((aligned(32))) float qs[WP * 16], kr[W * 16], kt[W * 16], vr[W * 16];
    __attribute__((aligned(32))) float S[WP * W], O[MR * 16];

    /* scale Q, as the tiled kernel scales its packed copy */
    rows16(qs, a->q + b * a->qs_b + h * a->qs_h, Nq, a->qs_n, a->qs_d, Dh);
    pad_rows16(qs, Nq);
    scale(Nq * 16, a->scale, qs, qs);
    if (Dh > 0 && !pack_b(Dh, Nk, K, a->ks_d, a->ks_n, kt)) {
        rows16(kr, K, Nk, a->ks_n, a->ks_d, Dh);
        slivers16(kt, kr, Nk, Dh);
    }
    const float *vrow = V;                      /* value rows 16 floats apart */
    if (Dv != 16 || a->vs_d != 1 || a->vs_n != 16) {
        rows16(vr, V, Nk, a->vs_n, a->vs_d, Dv);
        vrow = vr;
    }

    for (int64_t i0 = 0; i0 < Nq; i0 += MR) {
        int m = Nq - i0 < MR ? (int)(Nq - i0) : MR;
        int64_t lim[MR] = { 0 }, kl;            /* keys each row sees; kl: the sliver's last row's */
        for (int r = 0; r < m; r++) {
            int64_t l = i0 + r + off + 1;
            lim[r] = !a->causal ? Nk : l < 0 ? 0 : l < Nk ? l : Nk;
        }
        kl = lim[m - 1];
        for (int64_t j = 0; j < kl; j += 16)     /* S = (scale Q) K^T */
            tile(Dh, qs + i0 * 16, 16, 1, kt + j * Dh, S + i0 * W + j, W, m, 16, 0);
        /* mask and softmax row by row: P = exp(S - max), zero to kl */
        float inv[MR];
        for (int r = 0; r < m; r++) {
            int64_t i = i0 + r, visible = lim[r], z = 0;   /* p is zero from z on */
            float *s = S + i * W;
            inv[r] = -1.0f;                     /* the row's output is zeros */
            if (M)
                for (int64_t j = 0; j < lim[r]; j++)
                    if (!M[i * a->ms_q + j * a->ms_k]) { s[j] = -INFINITY; visible--; }
            if (visible > 0) {
                float mx, sum = small_exp_sum(lim[r], s, &mx);
                if (!(mx > -INFINITY && mx < INFINITY) || sum != sum) return -1;
                inv[r] = 1.0f / sum;
                if (a->lse) a->lse[bh * Nq + i] = mx + logf(sum);
                z = lim[r];
            } else {
                if (a->lse) a->lse[bh * Nq + i] = -INFINITY;
                empty++;
            }
            z = (z + 7) & ~(int64_t)7;         /* small_exp_sum wrote zeros to there */
            if (kl > z) memset(s + z, 0, (size_t)(kl - z) * sizeof(float));
        }
        /* O = 0 + P V over the sliver's keys, then times 1 / sum */
        memset(O, 0, sizeof O);
        tile(kl, S + i0 * W, W, 1, vrow, O, 16, m, 16, 1);
        for (int r = 0; r < m; r++) {
            float *o = a->out + (bh * Nq + i0 + r) * Dv;
            if (inv[r] < 0.0f) memset(o, 0, (size_t)Dv * sizeof(float));
            else scale(Dv, inv[r], O + r * 16, o);
        }
    }
    return empty;
}

/* The backward of kv head (b, hk) and its group of query heads whole, at
   sdpa_head's shapes: S = (scale Q) K^T and dP = dO V^T by slivers, P and
   dS row by row, then dQ = dS K by slivers of rows and dV += P^T dO,
   dK += dS^T Q by slivers of keys (tile() reading P and dS transposed in
   place). Returns -1 when an input is not finite (the tiled kernel then
   takes the head), else 0. */
static TARGET int sdpa_bwd_head(const tk_sdpa_bwd_args *a, const float *Drow, int64_t b, int64_t hk)
{
    enum { W = SDPA_SMALL_N, WP = SDPA_SMALL_ROWS };
    int64_t G = a->Hq / a->Hkv, Nq = a->Nq, Nk = a->Nk, Dh = a->Dh, Dv = a->Dv, off = Nk - Nq;
    __attribute__((aligned(32))) float kr[W * 16], vr[W * 16], kt[W * 16], vt[W * 16];
    __attribute__((aligned(32))) float qr[WP * 16], qs[WP * 16], dor[WP * 16], S[WP * W], DS[WP * W];
    __attribute__((aligned(32))) float gk[W * 16] = { 0 }, gv[W * 16] = { 0 };
    const float *K = a->k + b * a->ks_b + hk * a->ks_h, *V = a->v + b * a->vs_b + hk * a->vs_h;
    float chk = rows16(kr, K, Nk, a->ks_n, a->ks_d, Dh) + rows16(vr, V, Nk, a->vs_n, a->vs_d, Dv);
    if (chk != chk) return -1;
    slivers16(kt, kr, Nk, Dh);
    slivers16(vt, vr, Nk, Dv);
    for (int64_t h = hk * G; h < hk * G + G; h++) {
        int64_t row0 = (b * a->Hq + h) * Nq, lim[WP];
        chk = rows16(qr, a->q + b * a->qs_b + h * a->qs_h, Nq, a->qs_n, a->qs_d, Dh)
            + rows16(dor, a->dout + b * a->dos_b + h * a->dos_h, Nq, a->dos_n, a->dos_d, Dv);
        for (int64_t i = 0; i < WP; i++) {
            lim[i] = 0;
            if (i >= Nq) continue;
            float lse = a->lse[row0 + i], D = Drow[row0 + i];
            chk += D - D + (lse == -INFINITY ? 0.0f : lse - lse);
            lim[i] = !a->causal ? Nk : i + off + 1 < 0 ? 0 : i + off + 1 < Nk ? i + off + 1 : Nk;
            if (lse == -INFINITY) lim[i] = 0;     /* no visible key: no gradient */
        }
        if (chk != chk) return -1;
        pad_rows16(qr, Nq);
        pad_rows16(dor, Nq);
        scale(Nq * 16, a->scale, qr, qs);
        pad_rows16(qs, Nq);
        /* S and dP over the keys the sliver's rows see */
        for (int64_t i0 = 0; i0 < Nq; i0 += MR) {
            int m = Nq - i0 < MR ? (int)(Nq - i0) : MR;
            int64_t l = 0;
            for (int r = 0; r < m; r++) l = lim[i0 + r] > l ? lim[i0 + r] : l;
            for (int64_t j = 0; j < l; j += 16) {
                tile(Dh, qs + i0 * 16, 16, 1, kt + j * Dh, S + i0 * W + j, W, m, 16, 0);
                tile(Dv, dor + i0 * 16, 16, 1, vt + j * Dv, DS + i0 * W + j, W, m, 16, 0);
            }
        }
        /* P = exp(S - lse) where visible, dS = (scale P) (dP - D); zeros past
           lim. exp8 is exp_sum's exp lane by lane (exp8_fast and exp8_wide
           agree where both run); exp_sum's -inf padding past lim would send
           the last vector to exp8_wide, here those lanes take 0 and are
           cleared after. */
        const uint8_t *M = a->mask ? a->mask + b * a->ms_b + h * a->ms_h : NULL;
        __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        __m256 vsc = _mm256_set1_ps(a->scale);
        for (int64_t i = 0; i < Nq; i++) {
            float *p = S + i * W, *ds = DS + i * W;
            int64_t l = lim[i];
            if (M)
                for (int64_t j = 0; j < l; j++) if (!M[i * a->ms_q + j * a->ms_k]) p[j] = -INFINITY;
            __m256 vd = _mm256_set1_ps(Drow[row0 + i]), vl = _mm256_set1_ps(l > 0 ? a->lse[row0 + i] : 0.0f);
            for (int64_t j = 0; j < W; j += 8) {
                __m256 k = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)(l - j)), iota));
                __m256 pj = _mm256_setzero_ps();
                if (j < l)
                    pj = _mm256_and_ps(k, exp8(_mm256_and_ps(k, _mm256_sub_ps(_mm256_load_ps(p + j), vl))));
                _mm256_store_ps(p + j, pj);
                _mm256_store_ps(ds + j, _mm256_and_ps(k, _mm256_mul_ps(_mm256_mul_ps(pj, vsc),
                                                                        _mm256_sub_ps(_mm256_load_ps(ds + j), vd))));
            }
        }
        /* dQ = 0 + dS K, by slivers of rows */
        for (int64_t i0 = 0; i0 < Nq; i0 += MR) {
            int m = Nq - i0 < MR ? (int)(Nq - i0) : MR;
            int64_t l = 0;
            float *dq = a->dq + b * a->dqs_b + h * a->dqs_h + i0 * a->dqs_n;
            for (int r = 0; r < m; r++) {
                l = lim[i0 + r] > l ? lim[i0 + r] : l;
                memset(dq + r * a->dqs_n, 0, (size_t)Dh * sizeof(float));
            }
            if (Dh > 0) tile(l, DS + i0 * W, W, 1, kr, dq, a->dqs_n, m, (int)Dh, 1);
        }
        /* dV += P^T dO, dK += dS^T Q, by slivers of keys over the rows that see them */
        for (int64_t j0 = 0; j0 < Nk; j0 += MR) {
            int m = Nk - j0 < MR ? (int)(Nk - j0) : MR;
            int64_t i1 = a->causal && j0 - off > 0 ? j0 - off : 0;
            tile(Nq - i1, S + i1 * W + j0, 1, W, dor + i1 * 16, gv + j0 * 16, 16, m, 16, 1);
            tile(Nq - i1, DS + i1 * W + j0, 1, W, qr + i1 * 16, gk + j0 * 16, 16, m, 16, 1);
        }
    }
    for (int64_t j = 0; j < Nk; j++) {
        memcpy(a->dk + b * a->dks_b + hk * a->dks_h + j * a->dks_n, gk + j * 16, (size_t)Dh * sizeof(float));
        memcpy(a->dv + b * a->dvs_b + hk * a->dvs_h + j * a->dvs_n, gv + j * 16, (size_t)Dv * sizeof(float));
    }
    return 0;
}

/* ===== 16-bit conversions =====
   As avx512.c's, 8 lanes: bfloat16 by integers (half.c's rounding, NaN
   kept quiet), float16 by F16C (vcvtps2ph / vcvtph2ps: the same bits).
   Tails go through an 8-lane buffer. */
#define TARGET_F16C __attribute__((target("avx2,fma,f16c")))

static TARGET_F16C inline __m256 half_to_f32_8(int bf16, __m128i h)
{
    if (!bf16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static TARGET_F16C inline __m128i f32_to_half_8(int bf16, __m256 x)
{
    if (!bf16) return _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256i u = _mm256_castps_si256(x), top = _mm256_srli_epi32(u, 16);
    __m256i odd = _mm256_and_si256(top, _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                     _mm256_set1_epi32(0x7f800000));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(top, _mm256_set1_epi32(0x40)), nan);
    /* lanes hold values below 2^16: the unsigned saturation never bites */
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

static TARGET_F16C void half_from_f32(int bf16, int64_t n, const float *x, uint16_t *y)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(y + i), f32_to_half_8(bf16, _mm256_loadu_ps(x + i)));
    if (i < n) {
        float t[8] = {0};
        uint16_t h[8];
        memcpy(t, x + i, (size_t)(n - i) * sizeof *t);
        _mm_storeu_si128((__m128i *)h, f32_to_half_8(bf16, _mm256_loadu_ps(t)));
        memcpy(y + i, h, (size_t)(n - i) * sizeof *h);
    }
}

/* A GEMM tile (m x n floats, row stride NR in tmp) rounded into a 16-bit C:
   inline for full rows (QK^T at K = 64 rounds a tile every 64 steps, and a
   call a row cost it a fifth of its time). */
static TARGET_F16C void half_tile(int bf16, const float *tmp, int m, int n, uint16_t *c, int64_t rsc)
{
    for (int i = 0; i < m; i++) {
        if (n < NR) {
            half_from_f32(bf16, n, tmp + i * NR, c + i * rsc);
            continue;
        }
        _mm_storeu_si128((__m128i *)(c + i * rsc), f32_to_half_8(bf16, _mm256_loadu_ps(tmp + i * NR)));
        _mm_storeu_si128((__m128i *)(c + i * rsc + 8), f32_to_half_8(bf16, _mm256_loadu_ps(tmp + i * NR + 8)));
    }
}

static TARGET_F16C void half_to_f32(int bf16, int64_t n, const uint16_t *x, float *y)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, half_to_f32_8(bf16, _mm_loadu_si128((const __m128i *)(x + i))));
    if (i < n) {
        uint16_t h[8] = {0};
        float t[8];
        memcpy(h, x + i, (size_t)(n - i) * sizeof *h);
        _mm256_storeu_ps(t, half_to_f32_8(bf16, _mm_loadu_si128((const __m128i *)h)));
        memcpy(y + i, t, (size_t)(n - i) * sizeof *t);
    }
}

/* 16-bit sdpa's P rounded in place, as avx512.c's round_half (the same
   bits): bfloat16 by integer rounding, float16 by F16C's vcvtps2ph (the avx2
   path is chosen only with F16C: dispatch.c).
   The tail goes through a padded copy. */
static __attribute__((target("avx2,fma,f16c"))) void round_half(int bf16, int64_t n, float *x)
{
    const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff);
    const __m256i quiet = _mm256_set1_epi32(0x00400000), top = _mm256_set1_epi32((int)0xffff0000u);
    for (int64_t j = 0; j < n; j += 8) {
        float pad[8] = {0};
        int64_t m = n - j < 8 ? n - j : 8;
        float *p = m == 8 ? x + j : pad;
        if (m < 8) memcpy(pad, x + j, (size_t)m * sizeof(float));
        __m256 v = _mm256_loadu_ps(p), r;
        if (bf16) {
            __m256i u = _mm256_castps_si256(v);
            __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
            __m256i rd = _mm256_add_epi32(u, _mm256_add_epi32(lsb, half));
            __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
            rd = _mm256_blendv_epi8(rd, _mm256_or_si256(u, quiet), nan);
            r = _mm256_castsi256_ps(_mm256_and_si256(rd, top));
        } else {
            r = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
        _mm256_storeu_ps(p, r);
        if (m < 8) memcpy(x + j, pad, (size_t)m * sizeof(float));
    }
}

const tk_kern tk_kern_avx2 = {
    .name = "avx2", .mr = MR, .nr = NR, .kc = KC, .mc = MC, .nc = NC, .blocks_from_caches = 1,
    .ukernel = ukernel, .ukernel_rows = ukernel_rows, .axpy = axpy, .exp_vec = exp_vec,
    .row_max = row_max, .exp_sum = exp_sum, .exp_sum_next = exp_sum_next, .scale = scale,
    .sum_line = sum_line, .sum_cols = sum_cols, .pack_a = pack_a, .pack_b = pack_b,
    .ew_binary = ew_binary, .ew_compare = ew_compare, .ew_unary = ew_unary,
    .ew_masked_fill = ew_masked_fill, .sdpa_exp_sum = sdpa_exp_sum, .transpose = transpose,
    .sdpa_head = sdpa_head, .sdpa_small_n = SDPA_SMALL_N, .sdpa_bwd_head = sdpa_bwd_head,
    .half_from_f32 = half_from_f32, .half_to_f32 = half_to_f32,
    .round_half = round_half, .half_tile = half_tile,
};

#else
typedef int tk_no_avx2;   /* ISO C wants a non-empty file */
#endif
