/*
** test_half.c — bfloat16 and float16 conversions against references
** written here from the formats' definitions: every one of the 65536
** 16-bit patterns decoded, and every one of the 2^32 float32 patterns
** rounded, on each kernel path this CPU can run (scalar, avx2, avx512)
** and by the one-value functions (the sanitizer build rounds a sample of
** the 2^32: see chunk_wanted).
*/
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernel/kernels.h"
#include "tt.h"

/* A format: p bits of precision (the leading 1 included), emin the
   exponent of the least normal, ebits exponent bits. */
typedef struct fmt { const char *name; int bf16, p, emin, ebits; double overflow; } fmt;
static const fmt BF16 = { "bfloat16", 1, 8, -126, 8, 0x1p128 };
static const fmt F16 = { "float16", 0, 11, -14, 5, 0x1p16 };

/* The value of pattern h, from the definition: sign, biased exponent,
   fraction; exponent all ones is inf or NaN, zero is subnormal. */
static double decode_ref(const fmt *f, uint16_t h)
{
    int fb = 15 - f->ebits, emax = (1 << f->ebits) - 1, bias = emax / 2;
    int e = (h >> fb) & emax;
    double m = h & ((1 << fb) - 1), s = h & 0x8000 ? -1.0 : 1.0, v;
    if (e == emax) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp(m, 1 - bias - fb);
    else v = ldexp(1.0 + ldexp(m, -fb), e - bias);
    return s * v;
}

/* float32 x rounded to the format, in double: |x| divided by the quantum of
   its binade (or of the subnormals) is exact, nearbyint rounds it to an
   integer ties to even (the default mode), and past the largest finite
   value's half ulp the result is inf. */
static double pow2[400];     /* 2^(k - 200) */

/* float32 x rounded to the format, in double: the quantum q of its binade
   (or of the subnormals) from the exponent field, |x| rounded to a multiple
   of q by adding and taking away 2^52 q (the sum's ulp is q: the FPU rounds
   it ties to even), inf from the largest finite value's half ulp on. */
static double round_ref(const fmt *f, float x)
{
    if (isnan(x)) return NAN;
    double a = fabs((double)x);
    if (isinf(a)) return (double)x;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    int e = (int)((u >> 23) & 0xff) - 127;      /* a in [2^e, 2^(e+1)); subnormals: e = -127 */
    if (e < f->emin) e = f->emin;
    double c = pow2[e - (f->p - 1) + 52 + 200];
    volatile double s = a + c;                  /* kept apart from the subtraction */
    double r = s - c;
    if (r >= f->overflow) r = INFINITY;
    return copysign(r, (double)x);
}

static int same_value(double got, double want)
{
    if (isnan(want)) return isnan(got);
    return got == want && signbit(got) == signbit(want);
}

static double table[2][65536];

/* The kernel paths this CPU and build can run (tk_simd_force accepts them),
   each with its table: the passes below call every path's conversions side
   by side, so the float64 reference is computed once per value. */
static const char *const PATH_NAMES[] = { "scalar", "avx2", "avx512", "avx512_bf16" };
#define NPATHS (int)(sizeof PATH_NAMES / sizeof *PATH_NAMES)
static const tk_kern *paths[NPATHS];
static const char *path_names[NPATHS];
static int npaths;

static void find_paths(void)
{
    for (int i = 0; i < NPATHS; i++)
        if (tk_simd_force(PATH_NAMES[i])) {
            path_names[npaths] = PATH_NAMES[i];
            paths[npaths++] = tk_kern_now();
        }
    tk_simd_force(NULL);
    printf("  paths:");
    for (int i = 0; i < npaths; i++) printf(" %s", path_names[i]);
    printf("\n");
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void test_decode(const fmt *f)
{
    long bad = 0;
    float buf[256];
    uint16_t in[256];
    for (int h = 0; h < 65536; h++) table[f->bf16][h] = decode_ref(f, (uint16_t)h);
    for (int h = 0; h < 65536; h++) {
        float v = f->bf16 ? tk_bf16_to_f32((uint16_t)h) : tk_f16_to_f32((uint16_t)h);
        if (!same_value((double)v, table[f->bf16][h]) && bad++ < 5)
            printf("  %s to float32 %#06x: got %.9g want %.9g\n", f->name, h, (double)v, table[f->bf16][h]);
    }
    CHECK(f->bf16 ? "bfloat16 to float32, every pattern" : "float16 to float32, every pattern", bad == 0);
    /* in bulk through tk_half_to_f32 on each path (forced): the bits of the
       one-value function, odd lengths so the tails run too */
    for (int k = 0; k < npaths; k++) {
        tk_simd_force(path_names[k]);
        bad = 0;
        for (int h0 = 0; h0 < 65536; h0 += 256) {
            for (int i = 0; i < 256; i++) in[i] = (uint16_t)(h0 + i);
            int n = 256 - (h0 / 256) % 17;
            tk_half_to_f32(f->bf16, n, in, buf);
            for (int i = 0; i < n; i++) {
                uint16_t h = (uint16_t)(h0 + i);
                float one = f->bf16 ? tk_bf16_to_f32(h) : tk_f16_to_f32(h);
                if (f32_bits(buf[i]) != f32_bits(one) && bad++ < 5)
                    printf("  %s: bulk %s to float32 %#06x: got %#010x want %#010x\n", path_names[k], f->name,
                           h, (unsigned)f32_bits(buf[i]), (unsigned)f32_bits(one));
            }
        }
        printf("  %s: %s to float32 in bulk on %s, every pattern, bit for bit\n", bad ? "FAIL" : "ok",
               f->name, path_names[k]);
        CHECK("16 bits to float32 in bulk, every pattern, every path", bad == 0);
    }
    tk_simd_force(NULL);
    CHECK("a float16 signalling NaN comes out quiet", (f32_bits(tk_f16_to_f32(0x7c01)) & 0x7fc00000u) == 0x7fc00000u);
}

/* Which of the 2^16 chunks (the top 16 bits of the float32 patterns) a
   pass rounds: all of them, except under the sanitizers (make asan), where
   a pass would take minutes: there every 61st chunk and the chunks where
   the rules change (zeros and float32 subnormals, float16's subnormals,
   least normal and overflow, inf and NaN), both signs. */
static int chunk_wanted(uint32_t c)
{
#ifdef CHECK_UNDER_ASAN
    static const uint32_t edges[] = { 0x0000, 0x0001, 0x007f, 0x0080, 0x3300, 0x3380, 0x337f, 0x3800,
                                      0x387f, 0x3880, 0x477f, 0x4780, 0x7f7f, 0x7f80, 0x7fc0, 0x7fff };
    if (c % 61 == 0) return 1;
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
        if ((c & 0x7fff) == edges[i]) return 1;
    return 0;
#else
    (void)c;
    return 1;
#endif
}

/* 2^32 patterns in chunks of 2^16, over the thread pool: each chunk
   rounds by the reference and by the one-value function (compared by
   value), and in bulk by every path's conversion (compared with the
   one-value function bit for bit). */
typedef struct round_job { const fmt *f; atomic_long bad_one, bad_bulk[NPATHS], bad_tile[NPATHS], chunks; } round_job;

/* The GEMM's tile store (half_tile): the chunk as whole mr x nr tiles of a
   16-bit C with a row stride past nr, then its rest as one tile of fewer
   rows and columns; each element against the one-value function. */
static long tiles_wrong(const tk_kern *kn, int bf16, const float *x, const uint16_t *one, int64_t c)
{
    enum { LD = 40 };   /* the C row stride (at least any path's nr) */
    uint16_t out[16 * LD];
    int mr = kn->mr, nr = kn->nr, tile = mr * nr;
    long bad = 0;
    for (int t0 = 0; t0 < 65536; t0 += tile) {
        int m = mr, n = nr;
        if (65536 - t0 < tile) m = (65536 - t0) / nr, n = nr - 1;   /* the rest: fewer rows, a column short */
        if (m == 0) break;
        kn->half_tile(bf16, x + t0, m, n, out, LD);
        for (int i = 0; i < m; i++)
            if (memcmp(out + i * LD, one + t0 + i * nr, (size_t)n * sizeof *out) != 0)  /* as in bulk */
                for (int k = 0; k < n; k++)
                    if (out[i * LD + k] != one[t0 + i * nr + k] && bad++ < 3)
                        printf("  %s: tile store of float32 %#010x: got %#06x want %#06x\n", kn->name,
                               (unsigned)((uint32_t)c << 16 | (uint32_t)(t0 + i * nr + k)), out[i * LD + k],
                               one[t0 + i * nr + k]);
    }
    return bad;
}

static void round_range(void *ctx, int64_t begin, int64_t end)
{
    round_job *j = ctx;
    const fmt *f = j->f;
    const double *dec = table[f->bf16];
    static _Thread_local float x[65536];
    static _Thread_local uint16_t y[65536], one[65536];
    for (int64_t c = begin; c < end; c++) {
        if (!chunk_wanted((uint32_t)c)) continue;
        long bad1 = 0;
        for (uint32_t i = 0; i < 65536; i++) {
            uint32_t u = (uint32_t)c << 16 | i;
            memcpy(&x[i], &u, sizeof u);
        }
        for (int i = 0; i < 65536; i++) {
            double want = round_ref(f, x[i]);
            uint16_t h = f->bf16 ? tk_bf16_from_f32(x[i]) : tk_f16_from_f32(x[i]);
            one[i] = h;
            if (!same_value(dec[h], want) && bad1++ < 3)
                printf("  float32 %#010x to %s: got %#06x (%.9g) want %.9g\n", (unsigned)((uint32_t)c << 16 | (uint32_t)i),
                       f->name, h, dec[h], want);
        }
        j->bad_one += bad1;
        int n = 65536 - (int)(c % 17);          /* odd lengths too: the tails */
        for (int k = 0; k < npaths; k++) {
            long badb = 0;
            paths[k]->half_from_f32(f->bf16, n, x, y);
            /* memcmp first: the loop that names the wrong ones does not
               vectorize, and it took a third of the test's time */
            if (memcmp(y, one, (size_t)n * sizeof *y) != 0)
                for (int i = 0; i < n; i++)
                    if (y[i] != one[i] && badb++ < 3)
                        printf("  %s: bulk float32 %#010x to %s: got %#06x want %#06x\n", path_names[k],
                               (unsigned)((uint32_t)c << 16 | (uint32_t)i), f->name, y[i], one[i]);
            j->bad_bulk[k] += badb;
            if (paths[k]->half_tile) j->bad_tile[k] += tiles_wrong(paths[k], f->bf16, x, one, c);
        }
        j->chunks++;
    }
}

static void test_round(const fmt *f)
{
    round_job j = { f, 0, {0}, {0}, 0 };
    tk_parallel_for(65536, 1, round_range, &j);
    const char *what = j.chunks == 65536 ? "all 2^32 patterns" : "a sample (sanitizer build)";
    printf("  %s: float32 to %s, %s, one at a time (%ld wrong)\n", j.bad_one ? "FAIL" : "ok",
           f->name, what, (long)j.bad_one);
    CHECK("float32 to 16 bits, every pattern", j.bad_one == 0);
#ifndef CHECK_UNDER_ASAN
    CHECK("every chunk was rounded", j.chunks == 65536);
#endif
    for (int k = 0; k < npaths; k++) {
        printf("  %s: float32 to %s on %s, %s, in bulk, bit for bit (%ld wrong)\n", j.bad_bulk[k] ? "FAIL" : "ok",
               f->name, path_names[k], what, (long)j.bad_bulk[k]);
        CHECK("float32 to 16 bits in bulk, every pattern, every path", j.bad_bulk[k] == 0);
        if (!paths[k]->half_tile) continue;
        printf("  %s: float32 to %s on %s, %s, by the GEMM's tile store, bit for bit (%ld wrong)\n",
               j.bad_tile[k] ? "FAIL" : "ok", f->name, path_names[k], what, (long)j.bad_tile[k]);
        CHECK("float32 to 16 bits by the tile store, every pattern, every path with one", j.bad_tile[k] == 0);
    }
    /* the public entry runs the forced path's conversion */
    float x[37];
    uint16_t y[37], want[37];
    for (int i = 0; i < 37; i++) x[i] = 1.0f / (float)(i + 3) + (float)i * 1000.0f;
    for (int k = 0; k < npaths; k++) {
        tk_simd_force(path_names[k]);
        tk_half_from_f32(f->bf16, 37, x, y);
        tk_half_from_f32_ref(f->bf16, 37, x, want);
        CHECK("tk_half_from_f32 on a forced path", memcmp(y, want, sizeof y) == 0);
    }
    tk_simd_force(NULL);
}

/* A few values by hand, so a reader sees the rules (and the reference is
   checked against numbers written down from the formats' tables). */
static void test_known(void)
{
    CHECK("bf16 1 + 2^-8 ties to even: 1", tk_bf16_from_f32(1.0f + 0x1p-8f) == 0x3f80);
    CHECK("bf16 1 + 3*2^-8 ties to even: 1 + 2^-6", tk_bf16_from_f32(1.0f + 3 * 0x1p-8f) == 0x3f82);
    CHECK("bf16 of float32 max is inf", tk_bf16_from_f32(0x1.fffffep127f) == 0x7f80);
    CHECK("bf16 of -0 is -0", tk_bf16_from_f32(-0.0f) == 0x8000);
    CHECK("bf16 of NaN is NaN", (tk_bf16_from_f32(NAN) & 0x7fff) > 0x7f80);
    CHECK("f16 65504 is the largest finite", tk_f16_from_f32(65504.0f) == 0x7bff);
    CHECK("f16 65519 rounds to 65504", tk_f16_from_f32(65519.0f) == 0x7bff);
    CHECK("f16 65520 overflows to inf", tk_f16_from_f32(65520.0f) == 0x7c00);
    CHECK("f16 2^-24 is the least subnormal", tk_f16_from_f32(0x1p-24f) == 0x0001);
    CHECK("f16 2^-25 ties to even: 0", tk_f16_from_f32(0x1p-25f) == 0x0000);
    CHECK("f16 3*2^-25 ties to even: 2^-23", tk_f16_from_f32(3 * 0x1p-25f) == 0x0002);
    CHECK("f16 1/3", tk_f16_from_f32(1.0f / 3) == 0x3555);
    CHECK("f16 0x3555 is 0.333251953125", tk_f16_to_f32(0x3555) == 0.333251953125f);
    CHECK("bf16 0x3eab is 0.333984375", tk_bf16_to_f32(0x3eab) == 0.333984375f);
    uint32_t snan = 0x7f800001u;
    float fs;
    memcpy(&fs, &snan, sizeof fs);
    CHECK("bf16 of a signalling NaN with payload in the low half is NaN",
          (tk_bf16_from_f32(fs) & 0x7f80) == 0x7f80 && (tk_bf16_from_f32(fs) & 0x7f) != 0);
    CHECK("f16 of that NaN is NaN", (tk_f16_from_f32(fs) & 0x7c00) == 0x7c00 && (tk_f16_from_f32(fs) & 0x3ff) != 0);
}


/* ===== 16-bit GEMM =====
   tk_gemm_batch_typed on bfloat16 / float16 (and mixed) operands, read in
   place with awkward sizes and strides (row-major, transposed, both strides
   non-unit, a batch), on every path: (1) the bits of tk_gemm_batch on
   float32 copies laid out the same way (the packers convert exactly);
   (2) within float32 accumulation's bound of a float64 reference of the
   same products, |c - ref| <= K * 2^-23 * sum |a b| (+ the least normal);
   (3) the same bits on 1, 2 and 3 threads. */
static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((rng >> 40) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
}

/* Element (i, p) of a [rows x cols] operand stored in layout `lay`: 0 row
   major, 1 transposed (column major), 2 both strides non-unit (a 2x2 grid
   with one gap); *rs, *cs get the strides, the return is the storage size. */
static int64_t layout(int lay, int64_t rows, int64_t cols, int64_t *rs, int64_t *cs)
{
    if (lay == 0) { *rs = cols; *cs = 1; return rows * cols; }
    if (lay == 1) { *rs = 1; *cs = rows; return rows * cols; }
    *rs = 2 * cols + 3; *cs = 2;
    return rows * *rs;
}

static void test_gemm_case(int ta, int tb, int64_t nb, int64_t M, int64_t N, int64_t K, int la, int lb)
{
    int64_t rsa, csa, rsb, csb;
    int64_t na = layout(la, M, K, &rsa, &csa), nbb = layout(lb, K, N, &rsb, &csb);
    float *af = calloc((size_t)(na * nb), sizeof(float)), *bf = calloc((size_t)(nbb * nb), sizeof(float));
    uint16_t *ah = calloc((size_t)(na * nb), 2), *bh = calloc((size_t)(nbb * nb), 2);
    float *c16 = malloc((size_t)(nb * M * N) * sizeof(float)), *c32 = malloc((size_t)(nb * M * N) * sizeof(float));
    float *c16t = malloc((size_t)(nb * M * N) * sizeof(float));
    int64_t aoff[2] = { 0, na }, boff[2] = { 0, nbb }, coff[2] = { 0, M * N };
    /* values on the 16-bit grid (so the float32 copies hold the same numbers) */
    for (int64_t i = 0; i < na * nb; i++) {
        float v = frand() * 3.0f;
        ah[i] = ta == TK_BF16 ? tk_bf16_from_f32(v) : tk_f16_from_f32(v);
        af[i] = ta == TK_F32 ? v : ta == TK_BF16 ? tk_bf16_to_f32(ah[i]) : tk_f16_to_f32(ah[i]);
    }
    for (int64_t i = 0; i < nbb * nb; i++) {
        float v = frand() * 3.0f;
        bh[i] = tb == TK_BF16 ? tk_bf16_from_f32(v) : tk_f16_from_f32(v);
        bf[i] = tb == TK_F32 ? v : tb == TK_BF16 ? tk_bf16_to_f32(bh[i]) : tk_f16_to_f32(bh[i]);
    }
    const void *A = ta == TK_F32 ? (const void *)af : ah, *B = tb == TK_F32 ? (const void *)bf : bh;
    tk_gemm_batch_typed(nb, M, N, K, ta, A, aoff, rsa, csa, tb, B, boff, rsb, csb, c16, coff, N, 1);
    tk_gemm_batch(nb, M, N, K, af, aoff, rsa, csa, bf, boff, rsb, csb, c32, coff, N, 1);
    /* bfloat16 pairs through vdpbf16ps sum in another order: the bound below */
    int pairs = ta == TK_BF16 && tb == TK_BF16 && tk_kern_now()->ukernel_bf16 && M * N * K > 32 * 32 * 32
                && M >= tk_kern_now()->mr / 2;
    if (!pairs)
        CHECK("16-bit GEMM: the bits of the float32 GEMM on float32 copies",
              memcmp(c16, c32, (size_t)(nb * M * N) * sizeof(float)) == 0);
    else
        CHECK("bfloat16 GEMM through vdpbf16ps: not the float32 GEMM's bits (another order of sums)",
              memcmp(c16, c32, (size_t)(nb * M * N) * sizeof(float)) != 0);
    long bad = 0;
    for (int64_t t = 0; t < nb; t++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double ref = 0.0, mag = 0.0;
                for (int64_t p = 0; p < K; p++) {
                    double x = (double)af[aoff[t] + i * rsa + p * csa] * (double)bf[boff[t] + p * rsb + j * csb];
                    ref += x;
                    mag += fabs(x);
                }
                double got = (double)c16[coff[t] + i * N + j];
                /* (+ K least normals: vdpbf16ps writes subnormal sums as 0) */
                if (!(fabs(got - ref) <= (double)K * (0x1p-23 * mag + 0x1p-126)) && bad++ < 3)
                    printf("  c[%lld,%lld,%lld] = %.9g, float64 %.9g (K %lld)\n", (long long)t, (long long)i,
                           (long long)j, got, ref, (long long)K);
            }
    CHECK("16-bit GEMM within float32 accumulation's bound of float64", bad == 0);
    int same = 1;
    for (int nt = 1; nt <= 3; nt++) {
        tk_set_num_threads(nt);
        tk_gemm_batch_typed(nb, M, N, K, ta, A, aoff, rsa, csa, tb, B, boff, rsb, csb, c16t, coff, N, 1);
        same &= memcmp(c16, c16t, (size_t)(nb * M * N) * sizeof(float)) == 0;
    }
    tk_set_num_threads(0);
    CHECK("16-bit GEMM: the same bits on 1, 2, 3 threads", same);
    /* a 16-bit C (row major, then column major): the values of a float32 C
       of the same layout, each rounded once */
    uint16_t *ch = malloc((size_t)(nb * M * N) * 2), *want = malloc((size_t)(nb * M * N) * 2);
    for (int cm = 0; cm < 2; cm++) {
        int64_t rsc = cm ? 1 : N, csc = cm ? M : 1;
        tk_gemm_batch_typed(nb, M, N, K, ta, A, aoff, rsa, csa, tb, B, boff, rsb, csb, c16t, coff, rsc, csc);
        for (int tc = TK_BF16; tc <= TK_F16; tc++) {
            for (int64_t i = 0; i < nb * M * N; i++)
                want[i] = tc == TK_BF16 ? tk_bf16_from_f32(c16t[i]) : tk_f16_from_f32(c16t[i]);
            int ok = tk_gemm_batch_round(nb, M, N, K, ta, A, aoff, rsa, csa, tb, B, boff, rsb, csb, tc, ch, coff,
                                         rsc, csc) == 0;
            CHECK("16-bit C: each element the float32 C's, rounded once",
                  ok && memcmp(ch, want, (size_t)(nb * M * N) * 2) == 0);
        }
    }
    free(ch); free(want);
    free(af); free(bf); free(ah); free(bh); free(c16); free(c32); free(c16t);
}

/* A narrow B reads a row-major bfloat16 A in place, two values of a row at
   a time; with K odd the last pair's pad is not A's: here each row of A is
   followed by an inf, which C must never see (K = 515: one odd kc block;
   K = 2101: an even block in place, then an odd one). */
static void test_gemm_row_end(void)
{
    enum { M = 40, N = 24 };
    static const int ks[] = { 515, 2101 };
    int fin = 1;
    for (int t = 0; t < 2; t++) {
        int K = ks[t], lda = K + 1;
        uint16_t *a = malloc((size_t)(M * lda) * 2), *b = malloc((size_t)(K * N) * 2);
        float *c = malloc((size_t)(M * N) * sizeof(float));
        for (int i = 0; i < M; i++)
            for (int p = 0; p < lda; p++) a[i * lda + p] = tk_bf16_from_f32(p == K ? INFINITY : frand());
        for (int i = 0; i < K * N; i++) b[i] = tk_bf16_from_f32(frand());
        int64_t off = 0;
        for (int k = 0; k < npaths; k++) {
            tk_simd_force(path_names[k]);
            tk_gemm_batch_typed(1, M, N, K, TK_BF16, a, &off, lda, 1, TK_BF16, b, &off, N, 1, c, &off, N, 1);
            for (int i = 0; i < M * N; i++) fin &= isfinite(c[i]) != 0;
        }
        free(a); free(b); free(c);
    }
    tk_simd_force(NULL);
    CHECK("bfloat16 GEMM with an odd K never reads past a row of A (an inf there stays out of C)", fin);
}

static void test_gemm(void)
{
    static const int64_t sizes[][3] = {   /* M, N, K: edges of every tile, the small path, several kc blocks */
        { 1, 7, 5 }, { 3, 33, 17 }, { 13, 45, 29 }, { 37, 70, 300 }, { 64, 65, 129 }, { 130, 97, 700 }, { 5, 300, 260 },
        { 50, 40, 515 },   /* a narrow B (A read in place), an odd K */
        { 24, 40, 2101 },  /* bfloat16 pairs in two kc blocks (PAIRS_KC), A in place, an odd last one */
        { 30, 140, 2050 }, /* the same with A packed */
    };
    static const int types[][2] = { { TK_BF16, TK_BF16 }, { TK_F16, TK_F16 }, { TK_BF16, TK_F32 }, { TK_F32, TK_F16 } };
    for (int k = 0; k < npaths; k++) {
        tk_simd_force(path_names[k]);
        int before = check_failed;
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            for (size_t ty = 0; ty < sizeof types / sizeof *types; ty++)
                for (int la = 0; la < 3; la++)
                    for (int lb = 0; lb < 3; lb++)
                        test_gemm_case(types[ty][0], types[ty][1], 1 + (int64_t)((s + la + lb) % 2),
                                       sizes[s][0], sizes[s][1], sizes[s][2], la, lb);
        printf("  %s: 16-bit GEMM on %s: 10 sizes x 4 type pairs x 9 layouts\n",
               check_failed == before ? "ok" : "FAIL", path_names[k]);
    }
    tk_simd_force(NULL);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int k = 0; k < 400; k++) pow2[k] = ldexp(1.0, k - 200);
    find_paths();
    test_known();
    test_decode(&BF16);
    test_decode(&F16);
    test_gemm();
    test_gemm_row_end();
    test_round(&BF16);
    test_round(&F16);
    return check_report();
}
