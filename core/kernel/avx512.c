/*
** avx512.c — AVX-512F micro-kernel and row primitives (exp, max,
** exp-sum, scale). Compiled with target attributes, picked at run time by
** dispatch.c; tails use masked vector ops so results never depend on where
** a thread's range happens to start.
*/
#include "kernels.h"

#ifdef TK_X86_SIMD
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define TARGET __attribute__((target("avx512f")))

/* Micro-tile: MR rows of A broadcast, NR = 2 vectors of B. 24 accumulators
   hide the FMA latency; 2 loads + 12 broadcasts per 24 FMAs. */
#define MR 12
#define NR 32
/* Cache blocks, measured best on the 2-core EPYC (kc 128-384, mc 48-192
   tried): the A block (mc x kc, 144 KiB) stays in L2, the B panel (kc x nc,
   6 MiB) in L3. */
#define KC 384
#define MC 96
#define NC 4096

static TARGET inline __mmask16 tail_mask(int64_t n)
{
    return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

/* The C tile's m rows from the accumulators: (acc ? C + : ) alpha c0|c1,
   columns past n untouched (alpha 1 is exact, and folded away). */
static TARGET inline __attribute__((always_inline)) void
store_tile(const __m512 *c0, const __m512 *c1, float *c, int64_t rsc, int m, int n, int acc, float alpha)
{
    __mmask16 k0 = tail_mask(n), k1 = tail_mask(n - 16 > 0 ? n - 16 : 0);
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
        if (i >= m) break;
        float *ci = c + i * rsc;
        __m512 v0 = c0[i], v1 = c1[i];
        if (alpha != 1.0f) {
            v0 = _mm512_mul_ps(v0, _mm512_set1_ps(alpha));
            v1 = _mm512_mul_ps(v1, _mm512_set1_ps(alpha));
        }
        if (acc) {
            v0 = _mm512_add_ps(_mm512_maskz_loadu_ps(k0, ci), v0);
            v1 = _mm512_add_ps(_mm512_maskz_loadu_ps(k1, ci + 16), v1);
        }
        _mm512_mask_storeu_ps(ci, k0, v0);
        _mm512_mask_storeu_ps(ci + 16, k1, v1);
    }
}

/* kc: inner size; C tile m x n (m <= MR, n <= NR) at c with row stride rsc.
   Row i of the A sliver at step p is a[i*is + p*ps]: packed (1, MR) or
   straight from a row-major A (rsa, 1). */
static TARGET inline __attribute__((always_inline)) void
tile(int64_t kc, const float *a, int64_t is, int64_t ps, const float *bp, float *c,
     int64_t rsc, int m, int n, int acc)
{
    __m512 c0[MR], c1[MR];
    /* the C tile is needed only at the end: fetch it while the loop runs */
    for (int i = 0; i < m; i++) {
        _mm_prefetch((const char *)(c + i * rsc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * rsc + NR - 1), _MM_HINT_T0);
    }
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) { c0[i] = _mm512_setzero_ps(); c1[i] = _mm512_setzero_ps(); }
    for (int64_t p = 0; p < kc; p++, a += ps, bp += NR) {
        __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            __m512 ai = _mm512_set1_ps(a[i * is]);
            c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
        }
    }
    store_tile(c0, c1, c, rsc, m, n, acc, 1.0f);
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

/* Transposes 16 registers of 16 lanes (r[i] row i) into the first `out`
   (<= 16) of 16 rows at dst (stride ldd), stored under mask k. Four
   shuffle stages; the lanes' bits move unchanged (the bfloat16 packers
   move pairs of 16-bit values with it). */
static TARGET inline __attribute__((always_inline)) void
tr16_regs(const __m512 *r, float *dst, int64_t ldd, __mmask16 k, int out)
{
    __m512 t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {   /* u[i+q]: rows i..i+3, column q of each lane */
        u[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int q = 0; q < 4; q++) {       /* columns q, q+4, q+8, q+12 */
        __m512 v0 = _mm512_shuffle_f32x4(u[q], u[4 + q], 0x88), v1 = _mm512_shuffle_f32x4(u[q], u[4 + q], 0xDD);
        __m512 w0 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0x88), w1 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0xDD);
        if (q < out) _mm512_mask_storeu_ps(dst + q * ldd, k, _mm512_shuffle_f32x4(v0, w0, 0x88));
        if (q + 8 < out) _mm512_mask_storeu_ps(dst + (q + 8) * ldd, k, _mm512_shuffle_f32x4(v0, w0, 0xDD));
        if (q + 4 < out) _mm512_mask_storeu_ps(dst + (q + 4) * ldd, k, _mm512_shuffle_f32x4(v1, w1, 0x88));
        if (q + 12 < out) _mm512_mask_storeu_ps(dst + (q + 12) * ldd, k, _mm512_shuffle_f32x4(v1, w1, 0xDD));
    }
}

/* Transposes a block of `rows` (<= 16) rows of 16 contiguous floats (row
   stride ld) into 16 rows at dst (stride ldd) stored under mask k; missing
   rows read as zeros (the packing's padding). */
static TARGET void tr16(const float *src, int64_t ld, int rows, float *dst, int64_t ldd, __mmask16 k)
{
    __m512 r[16];
    for (int i = 0; i < 16; i++) r[i] = i < rows ? _mm512_loadu_ps(src + i * ld) : _mm512_setzero_ps();
    tr16_regs(r, dst, ldd, k, 16);
}

/* tk_transpose by 16 x 16 blocks of whole columns (rows masked) */
static TARGET int64_t transpose(int64_t rows, int64_t cols, const float *a, int64_t lda, float *b,
                                int64_t ldb)
{
    int64_t j = 0;
    for (; j + 16 <= cols; j += 16)
        for (int64_t i = 0; i < rows; i += 16) {
            int m = rows - i < 16 ? (int)(rows - i) : 16;
            tr16(a + i * lda + j, lda, m, b + j * ldb + i, ldb, tail_mask(m));
        }
    return j;
}

/* A (mc x kc) into MR-row slivers. Unit column stride: rows are read 16
   columns at a time and transposed in registers. Unit row stride (a
   transposed view such as x^T in a weight's gradient): each step's MR rows
   are consecutive, one masked load (zeros past mc) and one store. 0: not
   handled. */
static TARGET int pack_a(int64_t mc, int64_t kc, const float *a, int64_t rs, int64_t cs, float *dst)
{
    if (cs != 1 && rs == 1) {
        const __mmask16 sliver = (__mmask16)((1u << MR) - 1u);
        for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * kc) {
            __mmask16 k = tail_mask(mc - i0 < MR ? mc - i0 : MR);
            const float *s = a + i0;
            for (int64_t p = 0; p < kc; p++)
                _mm512_mask_storeu_ps(dst + p * MR, sliver, _mm512_maskz_loadu_ps(k, s + p * cs));
        }
        return 1;
    }
    if (cs != 1) return 0;
    for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * kc) {
        int m = mc - i0 < MR ? (int)(mc - i0) : MR;
        const float *s = a + i0 * rs;
        int64_t p = 0;
        for (; p + 16 <= kc; p += 16) tr16(s + p, rs, m, dst + p * MR, MR, 0x0fff);
        for (; p < kc; p++)                    /* leftovers */
            for (int i = 0; i < MR; i++) dst[p * MR + i] = i < m ? s[i * rs + p] : 0.0f;
    }
    return 1;
}

/* B (kc x nc) with unit row stride (a transposed view such as K^T) into
   NR-column slivers, transposing 16 x 16 blocks. 0: not handled. */
static TARGET int pack_b(int64_t kc, int64_t nc, const float *b, int64_t rs, int64_t cs, float *dst)
{
    if (rs != 1 || cs == 1) return 0;
    for (int64_t j0 = 0; j0 < nc; j0 += NR, dst += NR * kc) {
        int n = nc - j0 < NR ? (int)(nc - j0) : NR;
        const float *s = b + j0 * cs;
        int64_t p = 0;
        for (; p + 16 <= kc; p += 16) {
            tr16(s + p, cs, n < 16 ? n : 16, dst + p * NR, NR, 0xffff);
            tr16(s + 16 * cs + p, cs, n > 16 ? n - 16 : 0, dst + p * NR + 16, NR, 0xffff);
        }
        for (; p < kc; p++)                    /* leftovers */
            for (int j = 0; j < NR; j++) dst[p * NR + j] = j < n ? s[j * cs + p] : 0.0f;
    }
    return 1;
}

/* exp as kernels.h says; the same bits as avx2.c's exp8. T comes from
   the 8 entries twice over (vpermps reads 4 index bits). exp16_reduce: r,
   and t's bits, 0x4b400000 + n; exp16_q: q with exp(r) = 1 + q. */
static TARGET inline __attribute__((always_inline)) __m512 exp16_reduce(__m512 x, __m512i *ti)
{
    __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(8.0f * TK_LOG2E), _mm512_set1_ps(TK_EXP_SHIFT));
    __m512 n = _mm512_sub_ps(t, _mm512_set1_ps(TK_EXP_SHIFT));
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(TK_LN2_HI / 8.0f), x);
    *ti = _mm512_castps_si512(t);
    return _mm512_fnmadd_ps(n, _mm512_set1_ps(TK_LN2_LO / 8.0f), r);
}

static TARGET inline __attribute__((always_inline)) __m512 exp16_q(__m512 r)
{
    __m512 q = _mm512_fmadd_ps(_mm512_set1_ps(tk_exp_poly[0]), r, _mm512_set1_ps(tk_exp_poly[1]));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(tk_exp_poly[2]));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.0f));
    return _mm512_mul_ps(q, r);
}

static TARGET inline __attribute__((always_inline)) __m512 exp_table(void)
{
    __m512 tab = _mm512_castps256_ps512(_mm256_loadu_ps(tk_exp_tab));
    return _mm512_shuffle_f32x4(tab, tab, 0x44);
}

/* Any x: clamped (NaN passes: minps returns the second operand on NaN),
   then scalef does p 2^k with one rounding, so denormal results, overflow
   to inf and 0 come out right. */
static TARGET __attribute__((noinline)) __m512 exp16_wide(__m512 x)
{
    x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
    x = _mm512_max_ps(_mm512_set1_ps(-110.0f), x);
    __m512i ti;
    __m512 q = exp16_q(exp16_reduce(x, &ti));
    __m512 T = _mm512_permutexvar_ps(ti, exp_table());
    __m512i k = _mm512_srai_epi32(_mm512_sub_epi32(ti, _mm512_castps_si512(_mm512_set1_ps(TK_EXP_SHIFT))), 3);
    return _mm512_scalef_ps(_mm512_fmadd_ps(T, q, T), _mm512_cvtepi32_ps(k));
}

/* On [-87, 88] (k in [-126, 127], a normal result) 2^k T is T's bits plus
   n << 20 less j << 20, and the fma rounds 2^k (T + T q) once: the bits
   of exp16_wide. NaN gives NaN (q is NaN). */
static TARGET inline __attribute__((always_inline)) __m512 exp16_fast(__m512 x)
{
    __m512i ti, adj = _mm512_sub_epi32(_mm512_castps_si512(exp_table()),
                                       _mm512_slli_epi32(_mm512_and_si512(
                                           _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32(7)), 20));
    __m512 q = exp16_q(exp16_reduce(x, &ti));
    __m512 T = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_permutexvar_epi32(ti, adj), _mm512_slli_epi32(ti, 20)));
    return _mm512_fmadd_ps(T, q, T);
}

/* lo >= -87 and hi <= 88 in every lane (a NaN lane fails or, through min
   and max, drops out: right either way, exp16_fast gives NaN for NaN) */
static TARGET inline __attribute__((always_inline)) int exp16_in(__m512 lo, __m512 hi)
{
    return (__mmask16)(_mm512_cmp_ps_mask(lo, _mm512_set1_ps(-87.0f), _CMP_GE_OQ)
                       & _mm512_cmp_ps_mask(hi, _mm512_set1_ps(88.0f), _CMP_LE_OQ)) == 0xffff;
}

static TARGET inline __attribute__((always_inline)) __m512 exp16(__m512 x)
{
    if (__builtin_expect(!exp16_in(x, x), 0)) return exp16_wide(x);
    return exp16_fast(x);
}

/* avx2.c's exp8_nonpos: x <= 0 or NaN; 0 below TK_EXP_LO, exact above */
static TARGET inline __attribute__((always_inline)) __m512 exp16_nonpos(__m512 x)
{
    __m512 y = exp16_fast(_mm512_max_ps(_mm512_set1_ps(TK_EXP_LO), x));
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(TK_EXP_LO), _CMP_NLT_UQ), y);
}

static TARGET void exp_vec(int64_t n, const float *x, float *y)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, exp16(_mm512_loadu_ps(x + i)));
    if (i < n) {                               /* leftovers */
        __mmask16 k = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, k, exp16(_mm512_maskz_loadu_ps(k, x + i)));
    }
}

static TARGET void axpy(int64_t n, float s, const float *x, float *y)
{
    __m512 vs = _mm512_set1_ps(s);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(vs, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {                               /* leftovers */
        __mmask16 k = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, k, _mm512_fmadd_ps(vs, _mm512_maskz_loadu_ps(k, x + i),
                                                          _mm512_maskz_loadu_ps(k, y + i)));
    }
}

static TARGET float row_max(int64_t n, const float *x)
{
    __m512 ninf = _mm512_set1_ps(-INFINITY), m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
        m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + i + 16));
        m2 = _mm512_max_ps(m2, _mm512_loadu_ps(x + i + 32));
        m3 = _mm512_max_ps(m3, _mm512_loadu_ps(x + i + 48));
    }
    for (; i + 16 <= n; i += 16) m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
    if (i < n) m1 = _mm512_max_ps(m1, _mm512_mask_loadu_ps(ninf, tail_mask(n - i), x + i));
    return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
}

/* v rounded to bfloat16 (half 1) or float16 (half 2) values, the bits of
   half.c's round trip: bfloat16 by integer rounding of the bits (add 0x7fff
   plus the kept part's last bit, drop the low half; a NaN quieted
   instead), float16 by vcvtps2ph to nearest even and back; half 0: v. */
static TARGET inline __attribute__((always_inline)) __m512 round16(__m512 v, int half)
{
    if (half == 1) {
        __m512i u = _mm512_castps_si512(v);
        __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        __m512i rd = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
        rd = _mm512_mask_or_epi32(rd, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), u, _mm512_set1_epi32(0x00400000));
        return _mm512_castsi512_ps(_mm512_and_si512(rd, _mm512_set1_epi32((int)0xffff0000u)));
    }
    if (half == 2) return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return v;
}

/* y = exp(x - m), returns the sum (4 partial sums, fixed order). next:
   NULL or n floats to fetch into L1 meanwhile (softmax's next row, so its
   memory reads overlap this row's arithmetic). half: y rounded to 16-bit
   values (round16), the sum of the unrounded ones. */
static TARGET inline __attribute__((always_inline)) float
exp_sum_body(int64_t n, const float *x, float m, float *y, const float *next, int nonpos, int half)
{
    __m512 vm = _mm512_set1_ps(m), s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        if (next) {
            _mm_prefetch((const char *)(next + i), _MM_HINT_T0);
            _mm_prefetch((const char *)(next + i + 16), _MM_HINT_T0);
            _mm_prefetch((const char *)(next + i + 32), _MM_HINT_T0);
            _mm_prefetch((const char *)(next + i + 48), _MM_HINT_T0);
        }
        __m512 e0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), vm);
        __m512 e1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vm);
        __m512 e2 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 32), vm);
        __m512 e3 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 48), vm);
        __m512 lo = _mm512_min_ps(_mm512_min_ps(e0, e1), _mm512_min_ps(e2, e3));
        if (__builtin_expect(exp16_in(lo, _mm512_max_ps(_mm512_max_ps(e0, e1), _mm512_max_ps(e2, e3))), 1)) {
            e0 = exp16_fast(e0); e1 = exp16_fast(e1); e2 = exp16_fast(e2); e3 = exp16_fast(e3);
        } else if (nonpos) {
            e0 = exp16_nonpos(e0); e1 = exp16_nonpos(e1); e2 = exp16_nonpos(e2); e3 = exp16_nonpos(e3);
        } else {
            e0 = exp16(e0); e1 = exp16(e1); e2 = exp16(e2); e3 = exp16(e3);
        }
        _mm512_storeu_ps(y + i, round16(e0, half));
        _mm512_storeu_ps(y + i + 16, round16(e1, half));
        _mm512_storeu_ps(y + i + 32, round16(e2, half));
        _mm512_storeu_ps(y + i + 48, round16(e3, half));
        s0 = _mm512_add_ps(s0, e0); s1 = _mm512_add_ps(s1, e1);
        s2 = _mm512_add_ps(s2, e2); s3 = _mm512_add_ps(s3, e3);
    }
    for (; i + 16 <= n; i += 16) {
        __m512 e = _mm512_sub_ps(_mm512_loadu_ps(x + i), vm);
        e = nonpos ? exp16_nonpos(e) : exp16(e);
        _mm512_storeu_ps(y + i, round16(e, half));
        s0 = _mm512_add_ps(s0, e);
    }
    if (i < n) {                               /* leftovers: masked lanes add 0 */
        __mmask16 k = tail_mask(n - i);
        __m512 e = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm);
        e = _mm512_maskz_mov_ps(k, nonpos ? exp16_nonpos(e) : exp16(e));
        _mm512_mask_storeu_ps(y + i, k, round16(e, half));
        s1 = _mm512_add_ps(s1, e);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

static TARGET float exp_sum(int64_t n, const float *x, float m, float *y)
{
    return exp_sum_body(n, x, m, y, NULL, 0, 0);
}

/* exp_sum for x <= m (sdpa's scores less their max), with exp16_nonpos */
static TARGET float sdpa_exp_sum(int64_t n, const float *x, float m, float *y)
{
    return exp_sum_body(n, x, m, y, NULL, 1, 0);
}

/* sdpa_exp_sum with y rounded to bfloat16 (bf16) or float16 values in the
   same pass: P for a 16-bit P V, the sum of the unrounded P */
static TARGET float sdpa_exp_sum_half(int64_t n, const float *x, float m, float *y, int bf16)
{
    return bf16 ? exp_sum_body(n, x, m, y, NULL, 1, 1) : exp_sum_body(n, x, m, y, NULL, 1, 2);
}

static TARGET float exp_sum_next(int64_t n, const float *x, float m, float *y, const float *next)
{
    for (int64_t i = n & ~(int64_t)63; i < n; i += 16)    /* the part the main loop leaves */
        _mm_prefetch((const char *)(next + i), _MM_HINT_T0);
    return exp_sum_body(n, x, m, y, next, 0, 0);
}

static TARGET void scale(int64_t n, float s, const float *x, float *y)
{
    __m512 vs = _mm512_set1_ps(s);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(vs, _mm512_loadu_ps(x + i)));
    if (i < n) {                               /* leftovers */
        __mmask16 k = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(vs, _mm512_maskz_loadu_ps(k, x + i)));
    }
}

/* ===== Reduction lines ===== */

/* as TK_SUM_CHAINS says: 4 vectors of 8 double chains, the leftovers added
   to the chains in order (a masked lane adds +0, exact: a chain starts at +0
   and so is never -0), then tk_sum_fold's order in registers. No array on
   the stack: under ASan's fake stack a 64-byte-aligned one is misaligned
   and its aligned stores fault (GCC PR 110027). */
static TARGET inline __m512d widen_half(__m512 v, int hi)
{
    __m256 h = hi ? _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))
                  : _mm512_castps512_ps256(v);
    return _mm512_cvtps_pd(h);
}

static TARGET double sum_line(int64_t n, const float *x)
{
    __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_loadu_ps(x + j)));
        a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_loadu_ps(x + j + 8)));
        a2 = _mm512_add_pd(a2, _mm512_cvtps_pd(_mm256_loadu_ps(x + j + 16)));
        a3 = _mm512_add_pd(a3, _mm512_cvtps_pd(_mm256_loadu_ps(x + j + 24)));
    }
    if (j < n) {
        int64_t m = n - j;
        __m512 lo = _mm512_maskz_loadu_ps(tail_mask(m), x + j);
        __m512 hi = _mm512_maskz_loadu_ps(tail_mask(m > 16 ? m - 16 : 0), x + j + 16);
        a0 = _mm512_add_pd(a0, widen_half(lo, 0));
        a1 = _mm512_add_pd(a1, widen_half(lo, 1));
        a2 = _mm512_add_pd(a2, widen_half(hi, 0));
        a3 = _mm512_add_pd(a3, widen_half(hi, 1));
    }
    __m512d s8 = _mm512_add_pd(_mm512_add_pd(a0, a2), _mm512_add_pd(a1, a3));   /* w = 16, 8 */
    __m256d s4 = _mm256_add_pd(_mm512_castpd512_pd256(s8), _mm512_extractf64x4_pd(s8, 1));
    __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(s4), _mm256_extractf128_pd(s4, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
}

/* acc[i] += x[j*sd + i] over j in order: 8 lines a vector, the last ones masked */
static TARGET void sum_cols(int64_t nb, int64_t R, const float *x, int64_t sd, double *acc)
{
    for (int64_t i = 0; i < nb; i += 32) {   /* four named chains: an array of them went to the stack */
        int64_t left = nb - i;
        __mmask8 k0 = left >= 8 ? 0xff : (__mmask8)((1u << left) - 1u);
        __mmask8 k1 = left >= 16 ? 0xff : left > 8 ? (__mmask8)((1u << (left - 8)) - 1u) : 0;
        __mmask8 k2 = left >= 24 ? 0xff : left > 16 ? (__mmask8)((1u << (left - 16)) - 1u) : 0;
        __mmask8 k3 = left >= 32 ? 0xff : left > 24 ? (__mmask8)((1u << (left - 24)) - 1u) : 0;
        __m512d a0 = _mm512_maskz_loadu_pd(k0, acc + i), a1 = _mm512_maskz_loadu_pd(k1, acc + i + 8);
        __m512d a2 = _mm512_maskz_loadu_pd(k2, acc + i + 16), a3 = _mm512_maskz_loadu_pd(k3, acc + i + 24);
        for (int64_t j = 0; j < R; j++) {
            const float *r = x + j * sd + i;
            a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_maskz_loadu_ps((__mmask16)k0, r))));
            a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_maskz_loadu_ps((__mmask16)k1, r + 8))));
            a2 = _mm512_add_pd(a2, _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_maskz_loadu_ps((__mmask16)k2, r + 16))));
            a3 = _mm512_add_pd(a3, _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_maskz_loadu_ps((__mmask16)k3, r + 24))));
        }
        _mm512_mask_storeu_pd(acc + i, k0, a0); _mm512_mask_storeu_pd(acc + i + 8, k1, a1);
        _mm512_mask_storeu_pd(acc + i + 16, k2, a2); _mm512_mask_storeu_pd(acc + i + 24, k3, a3);
    }
}

/* ===== Elementwise rows ===== */

static TARGET inline __m512 neg16(__m512 u)
{
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(u), _mm512_set1_epi32(INT32_MIN)));
}

/* tk_max_nan (kernels.h) on 16 lanes: maxps gives its second operand when either is
   NaN or both are equal, so only u's NaN lanes need u put back. */
static TARGET inline __m512 max16(__m512 u, __m512 w)
{
    return _mm512_mask_mov_ps(_mm512_max_ps(u, w), _mm512_cmp_ps_mask(u, u, _CMP_UNORD_Q), u);
}

static TARGET inline __m512 min16(__m512 u, __m512 w)
{
    return _mm512_mask_mov_ps(_mm512_min_ps(u, w), _mm512_cmp_ps_mask(u, u, _CMP_UNORD_Q), u);
}

/* An 8-entry table in both halves of a register: vpermps reads 4 index
   bits, the 4th being k's lowest. */
static TARGET inline __m512 table8(const float *t)
{
    __m512 v = _mm512_castps256_ps512(_mm256_loadu_ps(t));
    return _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 1, 0));
}

/* log(x) as tk_log_invc says (kernels.h) for ix, the bits of positive
   normal floats; kadj (when adj) is added to k. */
static TARGET inline __attribute__((always_inline)) __m512 log_normal16(__m512i ix, __m512 kadj, int adj)
{
    __m512i u = _mm512_sub_epi32(ix, _mm512_set1_epi32(TK_LOG_OFF));
    __m512 k = _mm512_cvtepi32_ps(_mm512_srai_epi32(u, 23));
    if (adj) k = _mm512_add_ps(k, kadj);
    __m512 z = _mm512_castsi512_ps(_mm512_sub_epi32(ix, _mm512_and_si512(u, _mm512_set1_epi32((int)0xff800000u))));
    __m512i i = _mm512_srli_epi32(u, 20);
    __m512 invc = _mm512_permutexvar_ps(i, table8(tk_log_invc));
    __m512 logc = _mm512_permutexvar_ps(i, table8(tk_log_c));
    __m512 r = _mm512_fmsub_ps(z, invc, _mm512_set1_ps(1.0f));
    __m512 r2 = _mm512_mul_ps(r, r);
    __m512 p = _mm512_fmadd_ps(r2, _mm512_fmadd_ps(_mm512_set1_ps(tk_log_poly[0]), r, _mm512_set1_ps(tk_log_poly[1])),
                               _mm512_fmadd_ps(_mm512_set1_ps(tk_log_poly[2]), r, _mm512_set1_ps(tk_log_poly[3])));
    __m512 s = _mm512_fmadd_ps(r2, p, _mm512_fmadd_ps(k, _mm512_set1_ps(TK_LN2_LO), r));
    __m512 hi = _mm512_fmadd_ps(k, _mm512_set1_ps(TK_LN2_HI), logc);           /* exact */
    return _mm512_add_ps(hi, s);
}

/* log(x); a vector with a lane that is not a positive normal float takes
   the slow way: denormals scaled by 2^23 first (the same arithmetic for the
   other lanes, so no bit depends on the neighbours), 0, negatives, inf and
   NaN put right at the end. Inlined, though rare: a call clobbers every
   vector register, and the loops then rebuilt log's constants for each
   vector (a third of log's time). */
static TARGET inline __attribute__((always_inline)) __m512 log16_odd(__m512 x)
{
    __mmask16 den = _mm512_cmp_ps_mask(x, _mm512_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
    __m512 xs = _mm512_mask_mul_ps(x, den, x, _mm512_set1_ps(8388608.0f));
    __m512 r = log_normal16(_mm512_castps_si512(xs), _mm512_maskz_mov_ps(den, _mm512_set1_ps(-23.0f)), 1);
    __m512 zero = _mm512_setzero_ps(), inf = _mm512_set1_ps(INFINITY);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, inf, _CMP_EQ_OQ), inf);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ),
                           _mm512_castsi512_ps(_mm512_set1_epi32((int)0xffc00000u)));  /* default NaN, as logf */
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, zero, _CMP_EQ_OQ), neg16(inf));
    return _mm512_mask_add_ps(r, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x, x);
}

/* Not a positive normal float: 0, denormal, negative, inf or NaN. */
static TARGET inline __mmask16 log_rare16(__m512i ix)
{
    return _mm512_cmpge_epu32_mask(_mm512_sub_epi32(ix, _mm512_set1_epi32(0x00800000)),
                                   _mm512_set1_epi32(0x7f000000));
}

static TARGET inline __attribute__((always_inline)) __m512 log16(__m512 x)
{
    __m512i ix = _mm512_castps_si512(x);
    if (__builtin_expect(log_rare16(ix) != 0, 0)) return log16_odd(x);
    return log_normal16(ix, _mm512_setzero_ps(), 0);
}

/* log of a row: one test of two vectors for rare lanes (log16_odd gives
   the normal lanes the same bits as log_normal16). */
static TARGET void ew_log16(int64_t n, const float *x, float *o)
{
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 a0 = _mm512_loadu_ps(x + i), a1 = _mm512_loadu_ps(x + i + 16);
        __m512i i0 = _mm512_castps_si512(a0), i1 = _mm512_castps_si512(a1);
        if (__builtin_expect(!_mm512_kortestz(log_rare16(i0), log_rare16(i1)), 0)) {
            _mm512_storeu_ps(o + i, log16_odd(a0));
            _mm512_storeu_ps(o + i + 16, log16_odd(a1));
        } else {
            _mm512_storeu_ps(o + i, log_normal16(i0, _mm512_setzero_ps(), 0));
            _mm512_storeu_ps(o + i + 16, log_normal16(i1, _mm512_setzero_ps(), 0));
        }
    }
    for (; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        _mm512_mask_storeu_ps(o + i, k, log16(_mm512_maskz_loadu_ps(k, x + i)));
    }
}

/* One loop per stride pattern (contiguous or broadcast scalar), two vectors
   an iteration, masked tail. OPV(u, w) is the vector op. */
#define EW_BIN_LOOPS(OPV) do { \
    __m512 vx = _mm512_set1_ps(x[0]), vy = _mm512_set1_ps(y[0]); \
    int64_t i = 0; \
    if (sx && sy) { \
        for (; i + 32 <= n; i += 32) { \
            _mm512_storeu_ps(o + i, OPV(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i))); \
            _mm512_storeu_ps(o + i + 16, OPV(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16))); \
        } \
        for (; i < n; i += 16) { \
            __mmask16 k = tail_mask(n - i); \
            _mm512_mask_storeu_ps(o + i, k, OPV(_mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, y + i))); \
        } \
    } else if (sx) { \
        for (; i + 32 <= n; i += 32) { \
            _mm512_storeu_ps(o + i, OPV(_mm512_loadu_ps(x + i), vy)); \
            _mm512_storeu_ps(o + i + 16, OPV(_mm512_loadu_ps(x + i + 16), vy)); \
        } \
        for (; i < n; i += 16) { \
            __mmask16 k = tail_mask(n - i); \
            _mm512_mask_storeu_ps(o + i, k, OPV(_mm512_maskz_loadu_ps(k, x + i), vy)); \
        } \
    } else if (sy) { \
        for (; i + 32 <= n; i += 32) { \
            _mm512_storeu_ps(o + i, OPV(vx, _mm512_loadu_ps(y + i))); \
            _mm512_storeu_ps(o + i + 16, OPV(vx, _mm512_loadu_ps(y + i + 16))); \
        } \
        for (; i < n; i += 16) { \
            __mmask16 k = tail_mask(n - i); \
            _mm512_mask_storeu_ps(o + i, k, OPV(vx, _mm512_maskz_loadu_ps(k, y + i))); \
        } \
    } else { \
        __m512 r = OPV(vx, vy); \
        for (; i < n; i += 16) _mm512_mask_storeu_ps(o + i, tail_mask(n - i), r); \
    } \
} while (0)

static TARGET void ew_binary(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy,
                             float *o)
{
    switch (op) {
    case TK_EW_ADD: EW_BIN_LOOPS(_mm512_add_ps); break;
    case TK_EW_SUB: EW_BIN_LOOPS(_mm512_sub_ps); break;
    case TK_EW_MUL: EW_BIN_LOOPS(_mm512_mul_ps); break;
    case TK_EW_DIV: EW_BIN_LOOPS(_mm512_div_ps); break;
    case TK_EW_MAX: EW_BIN_LOOPS(max16); break;
    case TK_EW_MIN: EW_BIN_LOOPS(min16); break;
    default: tk_ew_binary_ref(op, n, x, sx, y, sy, o); break;
    }
}

/* 16 compare bits to 16 bytes 0/1 (vpmovdb: AVX-512F only), narrowed in
   a register and stored whole: vpmovdb with a memory operand is several
   times slower on AMD; the masked form only for the tail. */
#define CMP_BYTES(P) _mm512_cvtepi32_epi8(_mm512_maskz_mov_epi32(P, one))
#define EW_CMP_LOOPS(PRED) do { \
    __m512 vx = _mm512_set1_ps(x[0]), vy = _mm512_set1_ps(y[0]); \
    __m512i one = _mm512_set1_epi32(1); \
    int64_t i = 0; \
    for (; i + 16 <= n; i += 16) { \
        __m512 u = sx ? _mm512_loadu_ps(x + i) : vx, w = sy ? _mm512_loadu_ps(y + i) : vy; \
        _mm_storeu_si128((__m128i *)(o + i), CMP_BYTES(_mm512_cmp_ps_mask(u, w, PRED))); \
    } \
    if (i < n) { \
        __mmask16 k = tail_mask(n - i); \
        __m512 u = sx ? _mm512_maskz_loadu_ps(k, x + i) : vx; \
        __m512 w = sy ? _mm512_maskz_loadu_ps(k, y + i) : vy; \
        _mm512_mask_cvtepi32_storeu_epi8(o + i, k, _mm512_maskz_mov_epi32(_mm512_cmp_ps_mask(u, w, PRED), one)); \
    } \
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

static TARGET inline __m512 relu16(__m512 u) { return max16(u, _mm512_setzero_ps()); }

/* as tk_tanh_poly says (kernels.h); NaN stays NaN through the exp branch */
static TARGET inline __m512 tanh16(__m512 x)
{
    __m512 a = _mm512_abs_ps(x), z = _mm512_mul_ps(a, a);
    __m512 p = _mm512_set1_ps(tk_tanh_poly[0]);
    for (int i = 1; i < 5; i++) p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(tk_tanh_poly[i]));
    __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), a, a);
    __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
    __m512 r = _mm512_sub_ps(one, _mm512_div_ps(two, _mm512_add_ps(exp16(_mm512_mul_ps(two, a)), one)));
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a, _mm512_set1_ps(TK_TANH_SMALL), _CMP_LT_OQ), small);
    __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), sign));
}

static TARGET inline __m512 sigmoid16(__m512 x)
{
    __m512 one = _mm512_set1_ps(1.0f);
    __m512 e = exp16(neg16(_mm512_abs_ps(x)));                          /* exp(-|x|) */
    __m512 d = _mm512_div_ps(one, _mm512_add_ps(one, e));
    return _mm512_mask_mov_ps(_mm512_mul_ps(e, d), _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ), d);
}

#define EW_UN_LOOP(OPV) do { \
    int64_t i = 0; \
    for (; i + 32 <= n; i += 32) { \
        __m512 a0 = _mm512_loadu_ps(x + i), a1 = _mm512_loadu_ps(x + i + 16); \
        _mm512_storeu_ps(o + i, OPV(a0)); \
        _mm512_storeu_ps(o + i + 16, OPV(a1)); \
    } \
    for (; i < n; i += 16) { \
        __mmask16 k = tail_mask(n - i); \
        _mm512_mask_storeu_ps(o + i, k, OPV(_mm512_maskz_loadu_ps(k, x + i))); \
    } \
} while (0)

static TARGET void ew_unary(int op, int64_t n, const float *x, float *o)
{
    switch (op) {
    case TK_EW_NEG: EW_UN_LOOP(neg16); break;
    case TK_EW_ABS: EW_UN_LOOP(_mm512_abs_ps); break;
    case TK_EW_SQRT: EW_UN_LOOP(_mm512_sqrt_ps); break;
    case TK_EW_EXP: EW_UN_LOOP(exp16); break;
    case TK_EW_LOG: ew_log16(n, x, o); break;
    case TK_EW_RELU: EW_UN_LOOP(relu16); break;
    case TK_EW_TANH: EW_UN_LOOP(tanh16); break;
    case TK_EW_SIGMOID: EW_UN_LOOP(sigmoid16); break;
    default: tk_ew_unary_ref(op, n, x, o); break;
    }
}

static TARGET void ew_masked_fill(int64_t n, const float *x, int64_t sx, const uint8_t *m, int64_t sm,
                                  float v, float *o)
{
    __m512 vv = _mm512_set1_ps(v), vx = _mm512_set1_ps(x[0]);
    int64_t i = 0;
    if (!sm) {                                 /* one mask byte: a fill or a copy */
        __m512 r = m[0] ? vv : vx;
        for (; i < n; i += 16) {
            __mmask16 k = tail_mask(n - i);
            _mm512_mask_storeu_ps(o + i, k, (sx && !m[0]) ? _mm512_maskz_loadu_ps(k, x + i) : r);
        }
        return;
    }
    for (; i + 16 <= n; i += 16) {
        __m512i mb = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(m + i)));
        __mmask16 k = _mm512_test_epi32_mask(mb, mb);
        _mm512_storeu_ps(o + i, _mm512_mask_mov_ps(sx ? _mm512_loadu_ps(x + i) : vx, k, vv));
    }
    for (; i < n; i++) o[i] = m[i] ? v : x[i * sx];   /* leftovers: a select, same result */
}

/* ===== sdpa at small shapes =====
   One (b, h) head whole when Nq, Nk <= SDPA_SMALL_N and Dh, Dv <= 16 (a
   key or value row is one vector): K^T (16 x 64) sits in L1, a score row
   in 4 registers, and nothing is packed. Every sum is the tiled kernel's
   (sdpa.c) in its order, so the bits are too: a score is the fma chain
   over d from 0 of (scale q_d) k_d, as its micro-kernel does on the scaled
   Q sliver; row_max and sdpa_exp_sum are the ones it calls; an output is the fma chain over keys j
   in order of p_j v_j (hidden keys have p = 0 and add exact zeros), times
   1 / sum. Returns the rows with no visible key, or -1 when a row has a
   non-finite score or sum: the caller then runs the tiled kernel on the
   head, which handles such rows as the formula does. */
#define SDPA_SMALL_N 64
#define SDPA_SMALL_ROWS 8     /* output rows a P V pass carries: 8 fma chains */

/* Rows xa and xb (elements x[d * xs], times mul) dotted with the keys of
   kt (Dn rows of W keys): 8 fma chains over d from 0, the micro-kernel's
   order; chunks of 16 keys from lim on are left zero. */
static TARGET inline __attribute__((always_inline)) void
dot2(const float *xa, const float *xb, int64_t xs, float mul, int64_t Dn, const float *kt,
     int64_t lim, float *sa, float *sb)
{
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, e0 = c0, e1 = c0, e2 = c0, e3 = c0;
    for (int64_t d = 0; d < Dn && lim > 0; d++) {
        __m512 ya = _mm512_set1_ps(xa[d * xs] * mul), yb = _mm512_set1_ps(xb[d * xs] * mul);
        const float *kd = kt + d * SDPA_SMALL_N;
        __m512 k0 = _mm512_load_ps(kd);
        c0 = _mm512_fmadd_ps(ya, k0, c0); e0 = _mm512_fmadd_ps(yb, k0, e0);
        if (lim > 16) {
            __m512 k1 = _mm512_load_ps(kd + 16);
            c1 = _mm512_fmadd_ps(ya, k1, c1); e1 = _mm512_fmadd_ps(yb, k1, e1);
        }
        if (lim > 32) {
            __m512 k2 = _mm512_load_ps(kd + 32);
            c2 = _mm512_fmadd_ps(ya, k2, c2); e2 = _mm512_fmadd_ps(yb, k2, e2);
        }
        if (lim > 48) {
            __m512 k3 = _mm512_load_ps(kd + 48);
            c3 = _mm512_fmadd_ps(ya, k3, c3); e3 = _mm512_fmadd_ps(yb, k3, e3);
        }
    }
    _mm512_store_ps(sa, c0); _mm512_store_ps(sa + 16, c1);
    _mm512_store_ps(sa + 32, c2); _mm512_store_ps(sa + 48, c3);
    _mm512_store_ps(sb, e0); _mm512_store_ps(sb + 16, e1);
    _mm512_store_ps(sb + 32, e2); _mm512_store_ps(sb + 48, e3);
}

/* o[r] = the fma chain from 0 over steps t in [t0, t1), in order, of
   c[r * cr + t * ct] times row t of x (x + t * xs, lanes kv), r < 8 */
static TARGET inline __attribute__((always_inline)) void
acc8(const float *c, int64_t cr, int64_t ct, int64_t t0, int64_t t1, const float *x, int64_t xs,
     __mmask16 kv, __m512 *o)
{
#pragma GCC unroll 8
    for (int r = 0; r < SDPA_SMALL_ROWS; r++) o[r] = _mm512_setzero_ps();
    for (int64_t t = t0; t < t1; t++) {
        __m512 xt = _mm512_maskz_loadu_ps(kv, x + t * xs);
#pragma GCC unroll 8
        for (int r = 0; r < SDPA_SMALL_ROWS; r++)
            o[r] = _mm512_fmadd_ps(_mm512_set1_ps(c[r * cr + t * ct]), xt, o[r]);
    }
}

static TARGET int64_t sdpa_head(const tk_sdpa_args *a, int64_t b, int64_t h)
{
    enum { W = SDPA_SMALL_N, R = SDPA_SMALL_ROWS };
    int64_t hk = h / (a->Hq / a->Hkv), Nq = a->Nq, Nk = a->Nk, Dh = a->Dh, off = Nk - Nq;
    int64_t bh = b * a->Hq + h, empty = 0;
    const float *Q = a->q + b * a->qs_b + h * a->qs_h;
    const float *K = a->k + b * a->ks_b + hk * a->ks_h, *V = a->v + b * a->vs_b + hk * a->vs_h;
    const uint8_t *M = a->mask ? a->mask + b * a->ms_b + h * a->ms_h : NULL;
    __attribute__((aligned(64))) float kt[16 * W], vr[W * 16], P[R * W];
    __mmask16 kv = tail_mask(a->Dv);

    /* K^T, Dh rows of W keys; keys from Nk on are zeros (never read) */
    if (Dh == 16 && a->ks_d == 1) {
        for (int64_t j0 = 0; j0 < W; j0 += 16) {
            int rows = Nk - j0 < 0 ? 0 : Nk - j0 < 16 ? (int)(Nk - j0) : 16;
            tr16(K + (rows ? j0 * a->ks_n : 0), a->ks_n, rows, kt + j0, W, 0xffff);
        }
    } else {
        for (int64_t d = 0; d < Dh; d++)
            for (int64_t j = 0; j < W; j++) kt[d * W + j] = j < Nk ? K[j * a->ks_n + d * a->ks_d] : 0.0f;
    }
    /* V rows: in place when their elements are adjacent */
    const float *vrow = V;
    int64_t vst = a->vs_n;
    if (a->vs_d != 1) {
        for (int64_t j = 0; j < Nk; j++)
            for (int64_t e = 0; e < a->Dv; e++) vr[j * 16 + e] = V[j * a->vs_n + e * a->vs_d];
        vrow = vr; vst = 16;
    }

    for (int64_t i0 = 0; i0 < Nq; i0 += R) {
        int nr = Nq - i0 < R ? (int)(Nq - i0) : R;
        float inv[R];
        int64_t jb = 0;                         /* keys any row of the block sees */
        int64_t lims[R];
        for (int r = 0; r < R; r++) {
            int64_t i = i0 + r, lim = Nk;
            if (a->causal) lim = i + off + 1 < 0 ? 0 : i + off + 1 < Nk ? i + off + 1 : Nk;
            lims[r] = r < nr ? lim : 0;
        }
        /* scores, two rows at a time: 4 chunks of 16 keys each, 8 fma chains */
        __attribute__((aligned(64))) float S[R * W];
        for (int r = 0; r < R; r += 2) {
            const float *qa = Q + (i0 + r) * a->qs_n, *qb = r + 1 < nr ? qa + a->qs_n : qa;
            dot2(qa, qb, a->qs_d, a->scale, Dh, kt, lims[r + 1] > lims[r] ? lims[r + 1] : lims[r],
                 S + r * W, S + (r + 1) * W);
        }
        /* mask and softmax, row by row: P = exp(S - max), zero from lim on */
        for (int r = 0; r < R; r++) {
            float *s = S + r * W, *p = P + r * W;
            int64_t i = i0 + r, lim = lims[r], visible = lim, z = 0;   /* p is zero from z on */
            inv[r] = -1.0f;                     /* the row's output is zeros */
            if (M)
                for (int64_t j = 0; j < lim; j++)
                    if (!M[i * a->ms_q + j * a->ms_k]) { s[j] = -INFINITY; visible--; }
            if (visible > 0) {
                float m = row_max(lim, s);
                if (!(m > -INFINITY && m < INFINITY)) return -1;
                float sum = sdpa_exp_sum(lim, s, m, p);
                if (sum != sum) return -1;
                inv[r] = 1.0f / sum;
                if (a->lse) a->lse[bh * Nq + i] = m + logf(sum);
                z = lim;
                jb = lim > jb ? lim : jb;
            } else if (r < nr) {
                if (a->lse) a->lse[bh * Nq + i] = -INFINITY;
                empty++;
            }
            for (int64_t j = z & ~(int64_t)15; j < W; j += 16)
                _mm512_store_ps(p + j, _mm512_maskz_load_ps(tail_mask(z - j > 0 ? z - j : 0), p + j));
        }
        /* O = P V over the block's keys, R rows at a time */
        __m512 o[R];
        acc8(P, W, 1, 0, jb, vrow, vst, kv, o);
        for (int r = 0; r < nr; r++)
            _mm512_mask_storeu_ps(a->out + (bh * Nq + i0 + r) * a->Dv, kv, inv[r] < 0.0f ? _mm512_setzero_ps()
                                  : _mm512_mul_ps(_mm512_set1_ps(inv[r]), o[r]));
    }
    return empty;
}

/* n rows (row stride rs, element stride cs, Dn elements) into 16-float
   rows at dst, zero padded; returns a NaN when an element is not finite */
static TARGET float rows16(float *dst, const float *src, int64_t n, int64_t rs, int64_t cs, int64_t Dn)
{
    __mmask16 k = tail_mask(Dn);
    __m512 chk = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i++) {
        __m512 x;
        if (cs == 1) x = _mm512_maskz_loadu_ps(k, src + i * rs);
        else {
            __attribute__((aligned(64))) float t[16] = { 0 };
            for (int64_t d = 0; d < Dn; d++) t[d] = src[i * rs + d * cs];
            x = _mm512_load_ps(t);
        }
        _mm512_store_ps(dst + i * 16, x);
        chk = _mm512_add_ps(chk, _mm512_sub_ps(x, x));   /* x - x: NaN for inf and NaN */
    }
    return _mm512_reduce_add_ps(chk);
}

/* The backward of one kv head (b, hk) and its group of query heads whole,
   at sdpa_head's shapes: S and dP two rows at a time, P and dS row by row,
   dQ eight rows and dK, dV eight keys at a time, nothing packed. Every sum
   is the tiled kernel's (sdpa_backward.c) in its order: S, dP and dQ are
   fma chains over d, e and keys from 0, dV and dK chains over query rows
   added to the head's sum of the group's earlier heads; the terms either
   skips are exact zeros (hidden P and dS times finite rows). Returns -1
   when an input is not finite (the tiled kernel then takes the head), else 0. */
static TARGET int sdpa_bwd_head(const tk_sdpa_bwd_args *a, const float *Drow, int64_t b, int64_t hk)
{
    enum { W = SDPA_SMALL_N, R = SDPA_SMALL_ROWS };
    int64_t G = a->Hq / a->Hkv, Nq = a->Nq, Nk = a->Nk, Dh = a->Dh, Dv = a->Dv, off = Nk - Nq;
    __attribute__((aligned(64))) float kr[W * 16], vr[W * 16], kt[16 * W], vt[16 * W];
    __attribute__((aligned(64))) float qr[W * 16], dor[W * 16], S[W * W], DS[W * W];
    __attribute__((aligned(64))) float gk[W * 16] = { 0 }, gv[W * 16] = { 0 };
    __mmask16 kh = tail_mask(Dh), kv = tail_mask(Dv);
    const float *K = a->k + b * a->ks_b + hk * a->ks_h, *V = a->v + b * a->vs_b + hk * a->vs_h;
    float chk = rows16(kr, K, Nk, a->ks_n, a->ks_d, Dh) + rows16(vr, V, Nk, a->vs_n, a->vs_d, Dv);
    if (chk != chk) return -1;
    for (int64_t j0 = 0; j0 < W; j0 += 16) {     /* K^T, V^T: 16 rows of W keys */
        int rows = Nk - j0 < 0 ? 0 : Nk - j0 < 16 ? (int)(Nk - j0) : 16;
        tr16(kr + j0 * 16, 16, rows, kt + j0, W, 0xffff);
        tr16(vr + j0 * 16, 16, rows, vt + j0, W, 0xffff);
    }
    for (int64_t h = hk * G; h < hk * G + G; h++) {
        int64_t row0 = (b * a->Hq + h) * Nq, lim[W + 1];
        chk = rows16(qr, a->q + b * a->qs_b + h * a->qs_h, Nq, a->qs_n, a->qs_d, Dh)
            + rows16(dor, a->dout + b * a->dos_b + h * a->dos_h, Nq, a->dos_n, a->dos_d, Dv);
        for (int64_t i = 0; i < Nq; i++) {
            float lse = a->lse[row0 + i], D = Drow[row0 + i];
            chk += D - D + (lse == -INFINITY ? 0.0f : lse - lse);
            lim[i] = !a->causal ? Nk : i + off + 1 < 0 ? 0 : i + off + 1 < Nk ? i + off + 1 : Nk;
            if (lse == -INFINITY) lim[i] = 0;     /* no visible key: no gradient */
        }
        if (chk != chk) return -1;
        lim[Nq] = 0;
        /* S = (scale Q) K^T and dP = dO V^T, two rows at a time */
        for (int64_t i = 0; i < Nq; i += 2) {
            int64_t l = lim[i + 1] > lim[i] ? lim[i + 1] : lim[i];
            const float *qb = i + 1 < Nq ? qr + 16 : qr;
            dot2(qr + i * 16, qb + i * 16, 1, a->scale, Dh, kt, l, S + i * W, S + (i + 1) * W);
            const float *ob = i + 1 < Nq ? dor + 16 : dor;
            dot2(dor + i * 16, ob + i * 16, 1, 1.0f, Dv, vt, l, DS + i * W, DS + (i + 1) * W);
        }
        /* P = exp(S - lse) where visible, dS = scale P (dP - D); zeros past lim */
        const uint8_t *M = a->mask ? a->mask + b * a->ms_b + h * a->ms_h : NULL;
        for (int64_t i = 0; i < Nq; i++) {
            float *p = S + i * W, *ds = DS + i * W;
            int64_t l = lim[i];
            if (M)
                for (int64_t j = 0; j < l; j++) if (!M[i * a->ms_q + j * a->ms_k]) p[j] = -INFINITY;
            if (l > 0) exp_sum(l, p, a->lse[row0 + i], p);
            __m512 vsc = _mm512_set1_ps(a->scale), vd = _mm512_set1_ps(Drow[row0 + i]);
            for (int64_t j = 0; j < W; j += 16) {
                __mmask16 k = tail_mask(l - j > 0 ? l - j : 0);
                __m512 pj = _mm512_maskz_load_ps(k, p + j);
                _mm512_store_ps(p + j, pj);
                _mm512_store_ps(ds + j, _mm512_maskz_mul_ps(k, _mm512_mul_ps(vsc, pj),
                                                             _mm512_sub_ps(_mm512_load_ps(ds + j), vd)));
            }
        }
        /* dQ = dS K, eight rows at a time */
        for (int64_t i0 = 0; i0 < Nq; i0 += R) {
            int64_t l = 0;
            for (int64_t i = i0; i < i0 + R && i < Nq; i++) l = lim[i] > l ? lim[i] : l;
            __m512 o[R];
            acc8(DS + i0 * W, W, 1, 0, l, kr, 16, kh, o);
            for (int r = 0; r < R && i0 + r < Nq; r++)
                _mm512_mask_storeu_ps(a->dq + b * a->dqs_b + h * a->dqs_h + (i0 + r) * a->dqs_n, kh, o[r]);
        }
        /* dV += P^T dO, dK += dS^T Q, eight keys at a time over the rows that see them */
        for (int64_t j0 = 0; j0 < Nk; j0 += R) {
            int64_t i1 = a->causal && j0 - off > 0 ? j0 - off : 0;
            __m512 o[R];
            acc8(S + j0, 1, W, i1, Nq, dor, 16, kv, o);
#pragma GCC unroll 8
            for (int r = 0; r < R; r++) _mm512_store_ps(gv + (j0 + r) * 16, _mm512_add_ps(_mm512_load_ps(gv + (j0 + r) * 16), o[r]));
            acc8(DS + j0, 1, W, i1, Nq, qr, 16, kh, o);
#pragma GCC unroll 8
            for (int r = 0; r < R; r++) _mm512_store_ps(gk + (j0 + r) * 16, _mm512_add_ps(_mm512_load_ps(gk + (j0 + r) * 16), o[r]));
        }
    }
    for (int64_t j = 0; j < Nk; j++) {
        _mm512_mask_storeu_ps(a->dk + b * a->dks_b + hk * a->dks_h + j * a->dks_n, kh, _mm512_load_ps(gk + j * 16));
        _mm512_mask_storeu_ps(a->dv + b * a->dvs_b + hk * a->dvs_h + j * a->dvs_n, kv, _mm512_load_ps(gv + j * 16));
    }
    return 0;
}

/* ===== 16-bit conversions =====
   bfloat16 by integers, as half.c: add 0x7fff (0x8000 when the kept half is
   odd) and keep the top half; a NaN keeps its top half with the quiet bit
   set. float16 by vcvtps2ph / vcvtph2ps (AVX-512F), which round to nearest
   even and quiet NaNs as half.c does. Tails go through a 16-lane buffer. */
static TARGET inline __m512 bf16_to_f32_16(__m256i h)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static TARGET inline __m256i f32_to_bf16_16(__m512 x)
{
    __m512i u = _mm512_castps_si512(x), top = _mm512_srli_epi32(u, 16);
    __m512i odd = _mm512_and_si512(top, _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(r, nan, top, _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}

static TARGET inline __m512 half_to_f32_16(int bf16, __m256i h)
{
    return bf16 ? bf16_to_f32_16(h) : _mm512_cvtph_ps(h);
}

static TARGET inline __m256i f32_to_half_16(int bf16, __m512 x)
{
    return bf16 ? f32_to_bf16_16(x) : _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

static TARGET void half_from_f32(int bf16, int64_t n, const float *x, uint16_t *y)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm256_storeu_si256((__m256i *)(y + i), f32_to_half_16(bf16, _mm512_loadu_ps(x + i)));
    if (i < n) {
        uint16_t t[16];
        _mm256_storeu_si256((__m256i *)t, f32_to_half_16(bf16, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i)));
        memcpy(y + i, t, (size_t)(n - i) * sizeof *t);
    }
}

static TARGET void half_to_f32(int bf16, int64_t n, const uint16_t *x, float *y)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, half_to_f32_16(bf16, _mm256_loadu_si256((const __m256i *)(x + i))));
    if (i < n) {
        uint16_t t[16] = {0};
        memcpy(t, x + i, (size_t)(n - i) * sizeof *t);
        _mm512_mask_storeu_ps(y + i, tail_mask(n - i), half_to_f32_16(bf16, _mm256_loadu_si256((const __m256i *)t)));
    }
}

/* A GEMM tile (m x n floats, row stride nr in tmp) rounded into a 16-bit C
   with row stride rsc, half_from_f32's bits, rows masked at n. */
static TARGET void half_tile(int bf16, const float *tmp, int m, int n, uint16_t *c, int64_t rsc)
{
    __mmask16 k0 = tail_mask(n), k1 = tail_mask(n - 16 > 0 ? n - 16 : 0);
    for (int i = 0; i < m; i++) {
        __m256i h0 = f32_to_half_16(bf16, _mm512_maskz_loadu_ps(k0, tmp + i * NR));
        __m256i h1 = f32_to_half_16(bf16, _mm512_maskz_loadu_ps(k1, tmp + i * NR + 16));
        if (n == NR) {
            _mm256_storeu_si256((__m256i *)(c + i * rsc), h0);
            _mm256_storeu_si256((__m256i *)(c + i * rsc + 16), h1);
            continue;
        }
        uint16_t t[NR];   /* AVX-512F has no 16-bit masked store */
        _mm256_storeu_si256((__m256i *)t, h0);
        _mm256_storeu_si256((__m256i *)(t + 16), h1);
        memcpy(c + i * rsc, t, (size_t)n * sizeof *t);
    }
}

/* 16-bit sdpa's P rounded in place (round16) */
static TARGET void round_half(int bf16, int64_t n, float *x)
{
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 k = tail_mask(n - j);
        __m512 v = _mm512_maskz_loadu_ps(k, x + j);
        _mm512_mask_storeu_ps(x + j, k, bf16 ? round16(v, 1) : round16(v, 2));
    }
}

/* ===== bfloat16 products (AVX512_BF16) =====
   vdpbf16ps adds to each float32 lane two bfloat16 products, a pair along
   k: so the operands are packed in pairs, A slivers as kp steps of MR
   pairs (a(i, 2p), a(i, 2p + 1)), B slivers as kp steps of NR pairs
   (b(2p, j), b(2p + 1, j)), an odd k's last pair padded with 0. The
   products are exact in float32; the instruction reads subnormal inputs
   and writes subnormal sums as 0 and rounds to nearest even, whatever
   MXCSR says. Twice the multiply-adds of an FMA per instruction. */
#define TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* The tile of ukernel_bf16: row i's pair at step p is the 32 bits at
   a + i is + p ps (16-bit units): packed (2, 2 MR) or a row-major A in
   place (rsa, 2). */
static TARGET_BF16 inline __attribute__((always_inline)) void
sums_bf16(int64_t kp, const uint16_t *a, int64_t is, int64_t ps, const uint16_t *bp, __m512 *c0, __m512 *c1)
{
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) { c0[i] = _mm512_setzero_ps(); c1[i] = _mm512_setzero_ps(); }
    for (int64_t p = 0; p < kp; p++, a += ps, bp += 2 * NR) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp), b1 = (__m512bh)_mm512_loadu_si512(bp + 32);
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            int32_t w;
            memcpy(&w, a + i * is, sizeof w);
            __m512bh ai = (__m512bh)_mm512_set1_epi32(w);
            c0[i] = _mm512_dpbf16_ps(c0[i], ai, b0);
            c1[i] = _mm512_dpbf16_ps(c1[i], ai, b1);
        }
    }
}

static TARGET_BF16 inline __attribute__((always_inline)) void
tile_bf16(int64_t kp, const uint16_t *a, int64_t is, int64_t ps, const uint16_t *bp, float *c, int64_t rsc,
          int m, int n, int acc, float alpha)
{
    __m512 c0[MR], c1[MR];
    for (int i = 0; i < m; i++) {
        _mm_prefetch((const char *)(c + i * rsc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * rsc + NR - 1), _MM_HINT_T0);
    }
    sums_bf16(kp, a, is, ps, bp, c0, c1);
    store_tile(c0, c1, c, rsc, m, n, acc, alpha);
}

static TARGET_BF16 void ukernel_bf16(int64_t kp, const uint16_t *ap, const uint16_t *bp, float *c,
                                     int64_t rsc, int m, int n, int acc, float alpha)
{
    tile_bf16(kp, ap, 2, 2 * MR, bp, c, rsc, m, n, acc, alpha);
}

/* ukernel_bf16 into a bfloat16 C, each row of a whole tile rounded from
   the registers by one vcvtne2ps2bf16 (no float32 tile in between). Its
   sums are never subnormal (vdpbf16ps writes them as 0), the one input
   where the instruction and half.c differ. */
static TARGET_BF16 void ukernel_bf16_round(int64_t kp, const uint16_t *ap, const uint16_t *bp, uint16_t *c,
                                           int64_t rsc, int m, int n)
{
    __m512 c0[MR], c1[MR];
    if (m < MR || n < NR) {
        float t[MR * NR];
        sums_bf16(kp, ap, 2, 2 * MR, bp, c0, c1);
        store_tile(c0, c1, t, NR, m, n, 0, 1.0f);
        half_tile(1, t, m, n, c, rsc);
        return;
    }
    for (int i = 0; i < MR; i++) _mm_prefetch((const char *)(c + i * rsc), _MM_HINT_T0);
    sums_bf16(kp, ap, 2, 2 * MR, bp, c0, c1);
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) _mm512_storeu_si512(c + i * rsc, (__m512i)_mm512_cvtne2ps_pbh(c1[i], c0[i]));
}

static TARGET_BF16 void ukernel_rows_bf16(int64_t kp, const uint16_t *a, int64_t rsa, const uint16_t *bp,
                                          float *c, int64_t rsc, int n, int acc)
{
    tile_bf16(kp, a, rsa, 2, bp, c, rsc, MR, n, acc, 1.0f);
}

/* half_tile for bfloat16 on avx512_bf16: a full row of the tile by one
   vcvtne2ps2bf16 (round to nearest even, a NaN quieted as half.c does).
   It reads a subnormal as 0, so a row where it wrote a +-0 is rounded the
   AVX-512F way instead (a row with a true zero pays just that). QK^T at
   K = 64 spent a third of its time in the AVX-512F rounding. */
static TARGET_BF16 void half_tile_bf16(int bf16, const float *tmp, int m, int n, uint16_t *c, int64_t rsc)
{
    if (!bf16 || n != NR) {
        half_tile(bf16, tmp, m, n, c, rsc);
        return;
    }
    for (int i = 0; i < m; i++) {
        __m512 x0 = _mm512_loadu_ps(tmp + i * NR), x1 = _mm512_loadu_ps(tmp + i * NR + 16);
        __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
        if (_mm512_testn_epi16_mask(h, _mm512_set1_epi16(0x7fff))) {
            _mm256_storeu_si256((__m256i *)(c + i * rsc), f32_to_bf16_16(x0));
            _mm256_storeu_si256((__m256i *)(c + i * rsc + 16), f32_to_bf16_16(x1));
            continue;
        }
        _mm512_storeu_si512(c + i * rsc, h);
    }
}

/* sdpa_exp_sum (x <= m) with y stored as bfloat16 bits by vcvtne2ps2bf16:
   round to nearest even, as half.c, for every value but those below
   FLT_MIN, which it writes as 0 (sdpa_exp_sum may already flush them; no
   row sum can see them). The sum of the unrounded y, in exp_sum_body's
   order. P for the pairs' P V. */
static TARGET_BF16 float sdpa_exp_sum_bf16(int64_t n, const float *x, float m, uint16_t *y)
{
    __m512 vm = _mm512_set1_ps(m), s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512 e0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), vm);
        __m512 e1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vm);
        __m512 e2 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 32), vm);
        __m512 e3 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 48), vm);
        __m512 lo = _mm512_min_ps(_mm512_min_ps(e0, e1), _mm512_min_ps(e2, e3));
        if (__builtin_expect(exp16_in(lo, _mm512_max_ps(_mm512_max_ps(e0, e1), _mm512_max_ps(e2, e3))), 1)) {
            e0 = exp16_fast(e0); e1 = exp16_fast(e1); e2 = exp16_fast(e2); e3 = exp16_fast(e3);
        } else {
            e0 = exp16_nonpos(e0); e1 = exp16_nonpos(e1); e2 = exp16_nonpos(e2); e3 = exp16_nonpos(e3);
        }
        _mm512_storeu_si512(y + i, (__m512i)_mm512_cvtne2ps_pbh(e1, e0));
        _mm512_storeu_si512(y + i + 32, (__m512i)_mm512_cvtne2ps_pbh(e3, e2));
        s0 = _mm512_add_ps(s0, e0); s1 = _mm512_add_ps(s1, e1);
        s2 = _mm512_add_ps(s2, e2); s3 = _mm512_add_ps(s3, e3);
    }
    for (; i + 16 <= n; i += 16) {
        __m512 e = exp16_nonpos(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
        _mm256_storeu_si256((__m256i *)(y + i), (__m256i)_mm512_cvtneps_pbh(e));
        s0 = _mm512_add_ps(s0, e);
    }
    if (i < n) {                               /* leftovers: masked lanes add 0 */
        __mmask16 k = tail_mask(n - i);
        __m512 e = _mm512_maskz_mov_ps(k, exp16_nonpos(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm)));
        _mm256_mask_storeu_epi16(y + i, k, (__m256i)_mm512_cvtneps_pbh(e));
        s1 = _mm512_add_ps(s1, e);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

/* The sdpa backward's row of P and dS as bfloat16 bits, in one pass:
   p = exp(s - lse) by exp16 a vector at a time from 0 (exp_sum's values),
   ds = (p scale)(dp - D) (the backward's separate passes' two products and
   difference), each rounded once as half_from_f32 rounds; zeros in [n, nk). */
static TARGET_BF16 void sdpa_bwd_p_ds_bf16(int64_t n, int64_t nk, const float *s, float lse, const float *dp,
                                           float D, float scale, uint16_t *p16, uint16_t *d16)
{
    __m512 vl = _mm512_set1_ps(lse), vd = _mm512_set1_ps(D), vs = _mm512_set1_ps(scale);
    for (int64_t i = 0; i < n; i += 16) {      /* the last vector masked, loaded as exp_sum loads it */
        __mmask16 k = tail_mask(n - i);
        __m512 e = _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + i), vl)));
        __m512 ds = _mm512_mul_ps(_mm512_mul_ps(e, vs), _mm512_sub_ps(_mm512_maskz_loadu_ps(k, dp + i), vd));
        _mm256_mask_storeu_epi16(p16 + i, k, f32_to_bf16_16(e));
        _mm256_mask_storeu_epi16(d16 + i, k, f32_to_bf16_16(ds));
    }
    if (nk > n) {
        memset(p16 + n, 0, (size_t)(nk - n) * sizeof *p16);
        memset(d16 + n, 0, (size_t)(nk - n) * sizeof *d16);
    }
}

/* 16 pairs from s, of which `valid` 16-bit values exist (the rest read as 0) */
static TARGET_BF16 inline __m512 pairs16(const uint16_t *s, int64_t valid)
{
    __mmask32 k = valid >= 32 ? 0xffffffffu : (__mmask32)((1u << valid) - 1u);
    return _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(k, s));
}

/* rows (<= 16) rows of pairs along k (row i at s + i rs, kc values) into
   `width`-pair rows of the packed layout at dst, `out_mask` lanes each:
   16 pairs of each row at a time, transposed as 32-bit lanes. */
static TARGET_BF16 void pairs_transposed(int rows, int64_t kc, const uint16_t *s, int64_t rs, uint16_t *dst,
                                         int width, __mmask16 out_mask)
{
    int64_t kp = (kc + 1) / 2;
    for (int64_t p = 0; p < kp; p += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; i++) r[i] = i < rows ? pairs16(s + i * rs + 2 * p, kc - 2 * p) : _mm512_setzero_ps();
        tr16_regs(r, (float *)(void *)(dst + 2 * p * width), width, out_mask, kp - p < 16 ? (int)(kp - p) : 16);
    }
}

/* The lanes of two 32-value rows x and y interleaved: lo gets pairs
   (x[t], y[t]) for t < 16, hi for t from 16. */
static TARGET_BF16 inline void interleave16(__m512i x, __m512i y, __m512i *lo, __m512i *hi)
{
    static const uint16_t il[32] = { 0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                     8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47 };
    __m512i i0 = _mm512_loadu_si512(il), i1 = _mm512_add_epi16(i0, _mm512_set1_epi16(16));
    *lo = _mm512_permutex2var_epi16(x, i0, y);
    *hi = _mm512_permutex2var_epi16(x, i1, y);
}

static TARGET_BF16 inline __mmask32 mask32(int64_t n)
{
    return n >= 32 ? 0xffffffffu : n <= 0 ? 0 : (__mmask32)((1u << n) - 1u);
}

/* A (mc x kc bfloat16) into MR-row pair slivers: rows along k (unit column
   stride) through the 32-bit transpose; columns along m (a transposed
   view) two columns interleaved per step. 0: other strides. */
static TARGET_BF16 int pack_a_bf16(int64_t mc, int64_t kc, const uint16_t *a, int64_t rs, int64_t cs, uint16_t *dst)
{
    int64_t kp = (kc + 1) / 2;
    if (cs != 1 && rs != 1) return 0;
    for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += 2 * MR * kp) {
        int m = mc - i0 < MR ? (int)(mc - i0) : MR;
        if (cs == 1) {
            pairs_transposed(m, kc, a + i0 * rs, rs, dst, MR, (__mmask16)((1u << MR) - 1u));
            continue;
        }
        for (int64_t p = 0; p < kp; p++) {
            __m512i x = _mm512_maskz_loadu_epi16(mask32(m), a + i0 + 2 * p * cs), lo, hi;
            __m512i y = 2 * p + 1 < kc ? _mm512_maskz_loadu_epi16(mask32(m), a + i0 + (2 * p + 1) * cs)
                                       : _mm512_setzero_si512();
            interleave16(x, y, &lo, &hi);
            _mm512_mask_storeu_epi16(dst + 2 * p * MR, mask32(2 * MR), lo);
        }
    }
    return 1;
}

/* B (kc x nc bfloat16) into NR-column pair slivers: rows along n (unit
   column stride) two rows interleaved per step; columns along k (K^T)
   through the 32-bit transpose. 0: other strides. */
static TARGET_BF16 int pack_b_bf16(int64_t kc, int64_t nc, const uint16_t *b, int64_t rs, int64_t cs, uint16_t *dst)
{
    int64_t kp = (kc + 1) / 2;
    if (cs != 1 && rs != 1) return 0;
    for (int64_t j0 = 0; j0 < nc; j0 += NR, dst += 2 * NR * kp) {
        int n = nc - j0 < NR ? (int)(nc - j0) : NR;
        if (cs == 1) {
            for (int64_t p = 0; p < kp; p++) {
                __m512i x = _mm512_maskz_loadu_epi16(mask32(n), b + 2 * p * rs + j0), lo, hi;
                __m512i y = 2 * p + 1 < kc ? _mm512_maskz_loadu_epi16(mask32(n), b + (2 * p + 1) * rs + j0)
                                           : _mm512_setzero_si512();
                interleave16(x, y, &lo, &hi);
                _mm512_storeu_si512(dst + 2 * p * NR, lo);
                _mm512_storeu_si512(dst + 2 * p * NR + 32, hi);
            }
            continue;
        }
        const uint16_t *s = b + j0 * cs;
        pairs_transposed(n < 16 ? n : 16, kc, s, cs, dst, NR, 0xffff);
        pairs_transposed(n > 16 ? n - 16 : 0, kc, s + 16 * cs, cs, dst + 32, NR, 0xffff);
    }
    return 1;
}

/* The fields both AVX-512 paths share; avx512_bf16 adds the bfloat16
   micro-kernel, for CPUs with AVX512_BF16 (dispatch.c). */
#define AVX512_FIELDS \
    .mr = MR, .nr = NR, .kc = KC, .mc = MC, .nc = NC, \
    .ukernel = ukernel, .ukernel_rows = ukernel_rows, .axpy = axpy, .exp_vec = exp_vec, \
    .row_max = row_max, .exp_sum = exp_sum, .exp_sum_next = exp_sum_next, .scale = scale, \
    .sdpa_exp_sum = sdpa_exp_sum, .transpose = transpose, \
    .sum_line = sum_line, .sum_cols = sum_cols, .pack_a = pack_a, .pack_b = pack_b, \
    .ew_binary = ew_binary, .ew_compare = ew_compare, .ew_unary = ew_unary, \
    .ew_masked_fill = ew_masked_fill, .sdpa_head = sdpa_head, .sdpa_small_n = SDPA_SMALL_N, \
    .sdpa_bwd_head = sdpa_bwd_head, .half_from_f32 = half_from_f32, .half_to_f32 = half_to_f32, \
    .round_half = round_half, .sdpa_exp_sum_half = sdpa_exp_sum_half

const tk_kern tk_kern_avx512 = { .name = "avx512", AVX512_FIELDS, .half_tile = half_tile };

const tk_kern tk_kern_avx512_bf16 = {
    .name = "avx512_bf16", AVX512_FIELDS,
    .ukernel_bf16 = ukernel_bf16, .pack_a_bf16 = pack_a_bf16, .pack_b_bf16 = pack_b_bf16,
    .ukernel_rows_bf16 = ukernel_rows_bf16, .sdpa_exp_sum_bf16 = sdpa_exp_sum_bf16, .half_tile = half_tile_bf16,
    .ukernel_bf16_round = ukernel_bf16_round, .sdpa_bwd_p_ds_bf16 = sdpa_bwd_p_ds_bf16,
};

#else
typedef int tk_no_avx512;   /* ISO C wants a non-empty file */
#endif
