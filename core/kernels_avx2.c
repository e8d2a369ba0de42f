/*
** kernels_avx2.c — AVX2+FMA micro-kernel and row primitives, picked at run
** time by kernels.c. Tails run the same vector code on a padded copy, so
** results never depend on where a thread's range happens to start.
*/
#include "kernels.h"

#ifdef TT__X86_SIMD
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define TARGET __attribute__((target("avx2,fma")))

/* Micro-tile: MR rows broadcast x NR = 2 vectors: 12 accumulators of 16 regs. */
#define MR 6
#define NR 16

/* kc: inner size; C tile m x n (m <= MR, n <= NR) at c with row stride rsc. */
static TARGET void ukernel(int64_t kc, const float *ap, const float *bp, float *c,
                           int64_t rsc, int m, int n, int acc)
{
    __m256 c0[MR], c1[MR];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) { c0[i] = _mm256_setzero_ps(); c1[i] = _mm256_setzero_ps(); }
    for (int64_t p = 0; p < kc; p++, ap += MR, bp += NR) {
        __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            __m256 ai = _mm256_broadcast_ss(ap + i);
            c0[i] = _mm256_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(ai, b1, c1[i]);
        }
    }
    if (n == NR) {
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            if (i >= m) break;
            float *ci = c + i * rsc;
            __m256 v0 = c0[i], v1 = c1[i];
            if (acc) {
                v0 = _mm256_add_ps(_mm256_loadu_ps(ci), v0);
                v1 = _mm256_add_ps(_mm256_loadu_ps(ci + 8), v1);
            }
            _mm256_storeu_ps(ci, v0);
            _mm256_storeu_ps(ci + 8, v1);
        }
        return;
    }
    /* edge tile: same sums, stored element by element */
    float t[NR];
    for (int i = 0; i < m; i++) {
        _mm256_storeu_ps(t, c0[i]);
        _mm256_storeu_ps(t + 8, c1[i]);
        float *ci = c + i * rsc;
        for (int j = 0; j < n; j++) ci[j] = acc ? ci[j] + t[j] : t[j];
    }
}

/* exp(x) as in kernels_avx512.c; without scalef, 2^n is applied in two
   exact halves (p*2^(n/2) is normal) so a denormal result rounds once. */
static TARGET inline __m256 exp8(__m256 x)
{
    x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);     /* NaN passes (2nd operand) */
    x = _mm256_max_ps(_mm256_set1_ps(-110.0f), x);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.98412698e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.38888889e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.33333333e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.16666667e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.66666667e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
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

static TARGET float exp_sum(int64_t n, const float *x, float m, float *y)
{
    __m256 vm = _mm256_set1_ps(m), s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 e0 = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        __m256 e1 = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm));
        __m256 e2 = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 16), vm));
        __m256 e3 = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 24), vm));
        _mm256_storeu_ps(y + i, e0);
        _mm256_storeu_ps(y + i + 8, e1);
        _mm256_storeu_ps(y + i + 16, e2);
        _mm256_storeu_ps(y + i + 24, e3);
        s0 = _mm256_add_ps(s0, e0); s1 = _mm256_add_ps(s1, e1);
        s2 = _mm256_add_ps(s2, e2); s3 = _mm256_add_ps(s3, e3);
    }
    for (; i + 8 <= n; i += 8) {
        __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(y + i, e);
        s0 = _mm256_add_ps(s0, e);
    }
    if (i < n) {                               /* leftovers: padded with -inf -> 0 */
        float t[8];
        for (int j = 0; j < 8; j++) t[j] = i + j < n ? x[i + j] : -INFINITY;
        __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(t), vm));
        _mm256_storeu_ps(t, e);
        memcpy(y + i, t, (size_t)(n - i) * sizeof(float));
        s1 = _mm256_add_ps(s1, e);
    }
    float t[8];
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

static TARGET void scale(int64_t n, float s, const float *x, float *y, int stream)
{
    __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    if (stream && ((uintptr_t)y & 3) == 0) {
        for (; i < n && ((uintptr_t)(y + i) & 31) != 0; i++) y[i] = s * x[i];
        for (; i + 8 <= n; i += 8) _mm256_stream_ps(y + i, _mm256_mul_ps(vs, _mm256_loadu_ps(x + i)));
        _mm_sfence();
    }
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(vs, _mm256_loadu_ps(x + i)));
    for (; i < n; i++) y[i] = s * x[i];        /* leftovers */
}

const tt__kern tt__kern_avx2 = {
    "avx2", MR, NR, 256, 72, 4096,
    ukernel, axpy, exp_vec, row_max, exp_sum, scale, NULL, NULL
};

#else
typedef int tt__no_avx2;   /* ISO C wants a non-empty file */
#endif
