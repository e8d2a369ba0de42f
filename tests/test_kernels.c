/*
** test_kernels.c — every kernel in kernels.h against a float64 reference
** computed here, at awkward sizes and strides, on each SIMD path this CPU
** can run, and 1 vs N threads bit for bit.
*/
#include <float.h>
#include <malloc.h>             /* malloc_usable_size: tk_scratch_trim gave the buffer back */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernel/kernels.h"
#include "opref.h"
#include "tt.h"
#include "tt_internal.h"

/* ===== Helpers ===== */

#define DINF ((double)INFINITY)

static uint64_t rng = 42;

static double urand(void)   /* splitmix64 -> [0, 1) */
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

static float *frand(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = (float)(2.0 * urand() - 1.0);
    return p;
}

static const char *path_now = "auto";
static int threads_max = 2;

/* ===== GEMM ===== */

/* Layouts of an operand R x C: row-major, transposed (column-major),
   narrowed (row stride padded), expanded (stride 0 on rows). */
enum { L_ROW, L_COL, L_PAD, L_BCAST, L_COLGAP, L_NLAYOUT };
static const char *lay_name[] = { "row", "col", "pad", "bcast", "colgap" };

static void strides(int lay, int64_t R, int64_t C, int64_t *rs, int64_t *cs, int64_t *extent)
{
    switch (lay) {
    case L_COL:   *rs = 1; *cs = R; break;
    case L_PAD:   *rs = C + 3; *cs = 1; break;
    case L_BCAST: *rs = 0; *cs = 1; break;
    case L_COLGAP: *rs = 1; *cs = R + 3; break;   /* x^T of a slice: columns apart */
    default:      *rs = C; *cs = 1; break;
    }
    *extent = (R - 1) * *rs + (C - 1) * *cs + 1;
}

/* Runs one batched product and checks it against a float64 reference with
   the rounding bound (K+2) u sum|a||b|, and that C outside the result is
   untouched (padded rows, strided columns). Returns the result's copy. */
static void gemm_case(int64_t nb, int64_t M, int64_t N, int64_t K, int la, int lb, int lc,
                      int bcast_batch)
{
    int64_t rsa, csa, ea, rsb, csb, eb, rsc, csc, ec;
    strides(la, M, K, &rsa, &csa, &ea);
    strides(lb, K, N, &rsb, &csb, &eb);
    if (lc == L_COL) { rsc = 1; csc = M + 1; }          /* column-major with a gap */
    else if (lc == L_PAD) { rsc = 2 * N + 1; csc = 2; } /* every other column */
    else { rsc = N; csc = 1; }
    ec = (M - 1) * rsc + (N - 1) * csc + 1;
    float *a = frand((size_t)(ea * nb)), *b = frand((size_t)(eb * nb));
    float *c = malloc((size_t)(ec * nb) * sizeof(float));
    int64_t aoff[4], boff[4], coff[4];
    for (int64_t t = 0; t < nb; t++) {
        aoff[t] = bcast_batch ? 0 : t * ea;
        boff[t] = t * eb;
        coff[t] = t * ec;
    }
    for (int64_t i = 0; i < ec * nb; i++) c[i] = 777.0f;   /* sentinel */
    tk_gemm_batch(nb, M, N, K, a, aoff, rsa, csa, b, boff, rsb, csb, c, coff, rsc, csc);

    int bad = 0;
    char *touched = calloc((size_t)(ec * nb), 1);
    for (int64_t t = 0; t < nb && bad < 5; t++)
        for (int64_t i = 0; i < M && bad < 5; i++)
            for (int64_t j = 0; j < N && bad < 5; j++) {
                double r = 0.0, ab = 0.0;
                for (int64_t p = 0; p < K; p++) {
                    double x = (double)a[aoff[t] + i * rsa + p * csa] * (double)b[boff[t] + p * rsb + j * csb];
                    r += x;
                    ab += fabs(x);
                }
                int64_t at = coff[t] + i * rsc + j * csc;
                touched[at] = 1;
                double tol = (double)(K + 2) * ldexp(1.0, -24) * ab;
                if (!(fabs((double)c[at] - r) <= tol)) {
                    printf("  gemm %s [%lld] %lldx%lldx%lld a=%s b=%s c=%s: C[%lld,%lld] got %.9g want %.9g\n",
                           path_now, (long long)t, (long long)M, (long long)N, (long long)K,
                           lay_name[la], lay_name[lb], lay_name[lc], (long long)i, (long long)j,
                           (double)c[at], r);
                    bad++;
                }
            }
    for (int64_t i = 0; i < ec * nb; i++)
        if (!touched[i] && c[i] != 777.0f) { bad++; printf("  gemm wrote outside C at %lld\n", (long long)i); break; }
    CHECK("gemm matches float64 reference and writes only C", bad == 0);
    free(touched);
    free(a); free(b); free(c);
}

static void test_gemm(void)
{
    static const int64_t sz[] = { 1, 3, 15, 17, 31, 33, 63, 65, 127, 129, 255, 257 };
    int nsz = (int)(sizeof sz / sizeof sz[0]);
    /* sizes: every size as M, N and K at least once, in rotating triples */
    for (int i = 0; i < nsz; i++)
        gemm_case(1, sz[i], sz[(i + 5) % nsz], sz[(i + 9) % nsz], L_ROW, L_ROW, L_ROW, 0);
    gemm_case(1, 1000, 17, 65, L_ROW, L_ROW, L_ROW, 0);
    gemm_case(1, 33, 1000, 31, L_ROW, L_COL, L_ROW, 0);
    gemm_case(1, 65, 63, 1000, L_COL, L_ROW, L_ROW, 0);   /* several kc blocks */
    /* every layout of A, B and C on a shape with edges in all three sizes */
    for (int la = 0; la < L_NLAYOUT; la++)
        for (int lb = 0; lb < L_NLAYOUT; lb++)
            gemm_case(2, 37, 45, 29, la, lb, L_ROW, 0);
    for (int lc = 0; lc < 3; lc++) gemm_case(3, 70, 41, 300, L_PAD, L_COL, lc, 0);
    for (int lc = 0; lc < 3; lc++) gemm_case(2, 5, 7, 3, L_ROW, L_COL, lc, 0);   /* small path */
    gemm_case(3, 129, 65, 33, L_ROW, L_COL, L_ROW, 1);    /* A broadcast over the batch */
    gemm_case(4, 2, 300, 200, L_ROW, L_ROW, L_ROW, 0);    /* thin M */
    /* narrow B: A read in place, partial last sliver, several kc blocks */
    gemm_case(1, 1000, 64, 1000, L_ROW, L_ROW, L_ROW, 0);
    gemm_case(2, 77, 128, 300, L_PAD, L_COL, L_ROW, 0);
    /* K = 1, and B given transposed (Q K^T) across several slivers */
    for (int lb = 0; lb < 3; lb++) gemm_case(2, 67, 45, 1, L_ROW, lb, L_ROW, 0);
    gemm_case(3, 130, 150, 64, L_ROW, L_COL, L_ROW, 0);
    gemm_case(2, 61, 35, 401, L_PAD, L_COL, L_ROW, 0);

    /* K == 0 gives zeros */
    float c[6] = { 1, 2, 3, 4, 5, 6 }, dummy = 0.0f;
    int64_t z = 0;
    tk_gemm_batch(1, 2, 3, 0, &dummy, &z, 0, 0, &dummy, &z, 0, 0, c, &z, 3, 1);
    int zeros = 1;
    for (int i = 0; i < 6; i++) zeros &= c[i] == 0.0f;
    CHECK("gemm K == 0 gives zeros", zeros);
}

/* The packers of the active path (fast where it has them) against the
   layout written out here: sliver s, step p, lane i at s*w*kc + p*w + i,
   zero past the operand's edge, nothing written past the last sliver. */
static void pack_case(int is_a, int64_t rows, int64_t kc, int lay)
{
    const tk_kern *kn = tk_kern_now();
    int w = is_a ? kn->mr : kn->nr;
    int64_t R = is_a ? rows : kc, C = is_a ? kc : rows;   /* the operand, R x C */
    int64_t rs, cs, ext;
    strides(lay, R, C, &rs, &cs, &ext);
    int64_t len = (rows + w - 1) / w * w * kc;
    float *src = frand((size_t)ext), *dst = malloc((size_t)(len + 16) * sizeof(float));
    for (int64_t i = 0; i < len + 16; i++) dst[i] = 777.0f;
    if (is_a) tk_pack_a(kn, rows, kc, src, rs, cs, dst);
    else tk_pack_b(kn, kc, rows, src, rs, cs, dst);
    int bad = 0;
    for (int64_t x = 0; x < (rows + w - 1) / w * w; x++)
        for (int64_t p = 0; p < kc; p++) {
            float want = 0.0f;   /* x: row of A or column of B */
            if (x < rows) want = is_a ? src[x * rs + p * cs] : src[p * rs + x * cs];
            bad += dst[x / w * w * kc + p * w + x % w] != want;
        }
    for (int64_t i = len; i < len + 16; i++) bad += dst[i] != 777.0f;
    if (bad)
        printf("  pack_%s %s %lldx%lld %s: %d wrong\n", is_a ? "a" : "b", path_now,
               (long long)rows, (long long)kc, lay_name[lay], bad);
    CHECK("gemm packers give the sliver layout, zero padded", bad == 0);
    free(src); free(dst);
}

static void test_gemm_pack(void)
{
    static const int64_t ks[] = { 1, 7, 8, 9, 16, 17, 33 };
    static const int64_t rs[] = { 1, 5, 6, 7, 12, 13, 16, 17, 31, 33 };
    for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
        for (size_t r = 0; r < sizeof rs / sizeof rs[0]; r++)
            for (int lay = 0; lay < L_NLAYOUT; lay++) {
                if (lay == L_BCAST) continue;
                pack_case(1, rs[r], ks[k], lay);
                pack_case(0, rs[r], ks[k], lay);
            }
}

/* Same product on 1, 2 and 3 threads: identical bits (A column-major,
   then row-major, which a narrow B reads in place, then row-major with B
   transposed as K^T). */
static void test_gemm_threads(void)
{
    static const int64_t shp[][4] = { { 1, 300, 257, 129 }, { 1, 65, 1000, 600 },
                                      { 8, 64, 64, 64 }, { 3, 200, 40, 33 }, { 2, 5, 300, 200 },
                                      { 1, 1000, 64, 500 }, { 8, 100, 64, 300 }, { 3, 77, 64, 1000 } };
    const size_t nshp = sizeof shp / sizeof shp[0];
    for (size_t s = 0; s < 3 * nshp; s++) {
        size_t i = s % nshp;
        int arow = s >= nshp, btr = s >= 2 * nshp;
        int64_t nb = shp[i][0], M = shp[i][1], N = shp[i][2], K = shp[i][3];
        int64_t rsa = arow ? K : 1, csa = arow ? 1 : M;
        int64_t rsb = btr ? 1 : N, csb = btr ? K : 1;
        float *a = frand((size_t)(nb * M * K)), *b = frand((size_t)(nb * K * N));
        float *c1 = malloc((size_t)(nb * M * N) * sizeof(float));
        float *c2 = malloc((size_t)(nb * M * N) * sizeof(float));
        int64_t ao[8], bo[8], co[8];
        for (int64_t t = 0; t < nb; t++) { ao[t] = t * M * K; bo[t] = t * K * N; co[t] = t * M * N; }
        tt_set_num_threads(1);
        tk_gemm_batch(nb, M, N, K, a, ao, rsa, csa, b, bo, rsb, csb, c1, co, N, 1);
        int same = 1;
        for (int th = 2; th <= threads_max + 1; th++) {
            tt_set_num_threads(th);
            tk_gemm_batch(nb, M, N, K, a, ao, rsa, csa, b, bo, rsb, csb, c2, co, N, 1);
            same &= memcmp(c1, c2, (size_t)(nb * M * N) * sizeof(float)) == 0;
        }
        tt_set_num_threads(threads_max);
        CHECK("gemm: 1 vs N threads bit-identical", same);
        free(a); free(b); free(c1); free(c2);
    }
}

/* ===== exp ===== */

static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* Relative error <= 2e-7 for normal results; a denormal result cannot be
   that close in float, so there it may be off by one denormal step. */
static void test_exp(void)
{
    /* a sweep over every 61st float from -110 to 90 (about 35 million) would
       take long in double; every 509th bit pattern keeps it under 0.2 s */
    size_t cap = 8u << 20, n = 0;
    float *x = malloc(cap * sizeof(float)), *y = malloc(cap * sizeof(float));
    for (uint32_t u = 0; u < 0x42B40000u && n < cap; u += 509) x[n++] = from_bits(u);          /* [0, 90) */
    for (uint32_t u = 0x80000000u; u < 0xC2DC0000u && n < cap; u += 509) x[n++] = from_bits(u); /* (-110, -0] */
    static const float special[] = { 88.7228f, 88.72283f, 88.7229f, 89.0f, 100.0f, FLT_MAX,
                                     -87.3365f, -87.34f, -100.0f, -103.9f, -103.98f, -104.0f,
                                     -150.0f, -FLT_MAX, 1e-30f, -1e-30f, 0.5f, -0.5f };
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) x[n++] = special[i];
    tk_exp_vec((int64_t)n, x, y);
    int bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double r = exp((double)x[i]), v = y[i];
        int ok;
        if (r > (double)FLT_MAX) ok = isinf(v) && v > 0;
        else if (r >= (double)FLT_MIN) {
            double rel = fabs(v - r) / r;
            worst = rel > worst ? rel : worst;
            ok = rel <= 2e-7;
        } else ok = fabs(v - r) <= ldexp(1.0, -149);
        if (!ok && bad++ < 5) printf("  exp %s: exp(%.9g) got %.9g want %.9g\n", path_now, (double)x[i], v, r);
    }
    printf("  exp %s: %zu points, worst relative error %.3g\n", path_now, n, worst);
    CHECK("exp: relative error <= 2e-7, denormals within one step, overflow inf", bad == 0);

    float sx[] = { -INFINITY, INFINITY, NAN, 0.0f, -0.0f }, sy[5];
    tk_exp_vec(5, sx, sy);
    CHECK("exp(-inf) = 0", sy[0] == 0.0f);
    CHECK("exp(inf) = inf", isinf(sy[1]) && sy[1] > 0);
    CHECK("exp(NaN) = NaN", isnan(sy[2]));
    CHECK("exp(+-0) = 1", sy[3] == 1.0f && sy[4] == 1.0f);

    /* in place, and the same bits whatever the length around an element */
    float *z = frand(1001), *zc = malloc(1001 * sizeof(float)), *w = malloc(1001 * sizeof(float));
    for (int i = 0; i < 1001; i++) z[i] *= 80.0f;
    memcpy(zc, z, 1001 * sizeof(float));
    tk_exp_vec(1001, z, w);
    tk_exp_vec(1001, z, z);
    CHECK("exp in place equals out of place", memcmp(z, w, 1001 * sizeof(float)) == 0);
    int same = 1;
    for (int s = 1; s < 40; s += 3) {
        float t[64];
        tk_exp_vec(17, zc + s, t);
        same &= memcmp(t, w + s, 17 * sizeof(float)) == 0;
    }
    CHECK("exp bits do not depend on the position in the range", same);
    free(x); free(y); free(z); free(zc); free(w);

    /* the reference too */
    float rx[4] = { -1.0f, 0.0f, 10.0f, -INFINITY }, ry[4];
    tk_exp_vec_ref(4, rx, ry);
    CHECK("exp_ref", fabs((double)ry[0] - exp(-1.0)) < 1e-7 && ry[1] == 1.0f
          && fabs((double)ry[2] / exp(10.0) - 1.0) < 2e-7 && ry[3] == 0.0f);
}

/* ===== Elementwise rows ===== */

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Inputs with the awkward values sprinkled in: NaN (two payloads), +-inf,
   +-0, denormals, huge and tiny; the rest random in [-4, 4). */
static float *ew_input(size_t n, int salt)
{
    static const float special[] = { NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -3e-42f,
                                     FLT_MAX, -FLT_MAX, FLT_MIN, 1.0f, -1.0f, 2.0f, 0.5f };
    float *p = frand(n + 1);
    for (size_t i = 0; i < n; i++) {
        p[i] *= 4.0f;
        if ((i * 7 + (size_t)salt) % 5 == 0) p[i] = special[(i + (size_t)salt) % (sizeof special / sizeof special[0])];
    }
    if (n > 3) p[3] = from_bits(0x7fc01234u);               /* a NaN with a payload */
    return p;
}

static float bin_expr(int op, float u, float w)
{
    switch (op) {
    case TK_EW_ADD: return u + w;
    case TK_EW_SUB: return u - w;
    case TK_EW_MUL: return u * w;
    case TK_EW_DIV: return u / w;
    case TK_EW_MAX: return (u > w || isnan(u)) ? u : w;
    default: return (u < w || isnan(u)) ? u : w;
    }
}

static int cmp_expr(int op, float u, float w)
{
    switch (op) {
    case TK_EW_EQ: return u == w;
    case TK_EW_NE: return u != w;
    case TK_EW_LT: return u < w;
    case TK_EW_LE: return u <= w;
    case TK_EW_GT: return u > w;
    default: return u >= w;
    }
}

/* The bits of x op y against the exact reference: for + - * / the float64
   result rounded once (exact for float operands), checked to equal the
   float expression; max/min the NaN-propagating select, payloads included. */
static void test_ew_binary(void)
{
    static const int64_t sizes[] = { 0, 1, 3, 15, 16, 17, 31, 33, 63, 65, 1000 };
    static const int bops[] = { TK_EW_ADD, TK_EW_SUB, TK_EW_MUL, TK_EW_DIV, TK_EW_MAX, TK_EW_MIN };
    static const int cops[] = { TK_EW_EQ, TK_EW_NE, TK_EW_LT, TK_EW_LE, TK_EW_GT, TK_EW_GE };
    static const char *const names[TK_EW_COUNT] = {
        [TK_EW_ADD] = "add", [TK_EW_SUB] = "sub", [TK_EW_MUL] = "mul", [TK_EW_DIV] = "div",
        [TK_EW_MAX] = "max", [TK_EW_MIN] = "min", [TK_EW_EQ] = "eq", [TK_EW_NE] = "ne",
        [TK_EW_LT] = "lt", [TK_EW_LE] = "le", [TK_EW_GT] = "gt", [TK_EW_GE] = "ge",
    };
    int bad_b = 0, bad_c = 0, bad_pos = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        float *x = ew_input((size_t)n + 1, 1), *y = ew_input((size_t)n + 1, 2);
        float *o = malloc((size_t)(n + 1) * sizeof(float));
        uint8_t *ob = malloc((size_t)(n + 1));
        for (int pat = 0; pat < 4; pat++) {
            int64_t sx = pat & 1 ? 0 : 1, sy = pat & 2 ? 0 : 1;
            for (size_t k = 0; k < sizeof bops / sizeof bops[0]; k++) {
                int op = bops[k], exact = op != TK_EW_MAX && op != TK_EW_MIN;
                o[n] = 777.0f;
                tk_ew_binary(op, n, x, sx, y, sy, o);
                for (int64_t i = 0; i < n; i++) {
                    float u = x[i * sx], w = y[i * sy], want = bin_expr(op, u, w);
                    if (exact && !isnan(want)) {
                        double d = op == TK_EW_ADD ? (double)u + (double)w : op == TK_EW_SUB ? (double)u - (double)w
                                 : op == TK_EW_MUL ? (double)u * (double)w : (double)u / (double)w;
                        if (bits_of((float)d) != bits_of(want)) bad_b++;    /* the reference itself */
                    }
                    int good = isnan(want) && exact ? isnan(o[i]) : bits_of(o[i]) == bits_of(want);
                    if (!good && bad_b++ < 5)
                        printf("  %s %s n=%lld sx=%lld sy=%lld [%lld]: %.9g, %.9g -> %.9g want %.9g\n", names[op],
                               path_now, (long long)n, (long long)sx, (long long)sy, (long long)i,
                               (double)u, (double)w, (double)o[i], (double)want);
                }
                if (o[n] != 777.0f) bad_b++;                                   /* wrote past the end */
            }
            for (size_t k = 0; k < sizeof cops / sizeof cops[0]; k++) {
                int op = cops[k];
                ob[n] = 99;
                tk_ew_compare(op, n, x, sx, y, sy, ob);
                for (int64_t i = 0; i < n; i++) {
                    int want = cmp_expr(op, x[i * sx], y[i * sy]);
                    if (ob[i] != want && bad_c++ < 5)
                        printf("  %s %s n=%lld [%lld]: %.9g, %.9g -> %d\n", names[op], path_now, (long long)n,
                               (long long)i, (double)x[i * sx], (double)y[i * sy], ob[i]);
                }
                if (ob[n] != 99) bad_c++;
            }
        }
        /* the same bits whatever the row's start */
        if (n >= 33) {
            float *full = malloc((size_t)n * sizeof(float)), t[40];
            for (size_t k = 0; k < sizeof bops / sizeof bops[0]; k++) {
                int op = bops[k];
                tk_ew_binary(op, n, x, 1, y, 1, full);
                for (int s = 1; s < 16; s += 5) {
                    tk_ew_binary(op, 17, x + s, 1, y + s, 1, t);
                    bad_pos += memcmp(t, full + s, 17 * sizeof(float)) != 0;
                }
            }
            free(full);
        }
        free(x); free(y); free(o); free(ob);
    }
    char d[96];
    snprintf(d, sizeof d, "ew binary %s: exact bits, NaN payloads, stride 0 and 1, no overrun", path_now);
    CHECK(d, bad_b == 0);
    snprintf(d, sizeof d, "ew compare %s: as the C operators (NaN unordered)", path_now);
    CHECK(d, bad_c == 0);
    snprintf(d, sizeof d, "ew binary %s: bits do not depend on the row's start", path_now);
    CHECK(d, bad_pos == 0);

    /* maximum/minimum on the cases the blend is for */
    float u[4] = { NAN, 1.0f, 0.0f, -0.0f }, w[4] = { 1.0f, NAN, -0.0f, 0.0f }, r[4];
    tk_ew_binary(TK_EW_MAX, 4, u, 1, w, 1, r);
    CHECK("max(NaN, 1) and max(1, NaN) are NaN; max(0, -0) = -0 as the select gives",
          isnan(r[0]) && isnan(r[1]) && bits_of(r[2]) == 0x80000000u && bits_of(r[3]) == 0u);
    tk_ew_binary(TK_EW_MIN, 4, u, 1, w, 1, r);
    CHECK("min(NaN, 1) and min(1, NaN) are NaN", isnan(r[0]) && isnan(r[1]));
}

/* ulps between v and the float64 value r, in units of the float spacing at r */
static double ulp_err(float v, double r)
{
    float f = (float)r;
    double sp = (double)nextafterf(fabsf(f), INFINITY) - (double)fabsf(f);
    return fabs((double)v - r) / sp;
}

/* sin and cos against float64's on the specials, small, large and huge
   arguments (the reduction of 1e30 needs all of pi's bits): at most 1 ulp,
   NaN for NaN and +-inf, no overrun */
static void test_ew_trig(void)
{
    static const int64_t sizes[] = { 0, 1, 3, 17, 33, 1000 };
    int bad = 0;
    double worst = 0.0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        float *x = ew_input((size_t)n + 1, 5), *o = malloc((size_t)(n + 1) * sizeof(float));
        for (int64_t i = 0; i < n; i++)
            if (i % 7 == 3) x[i] = ldexpf(x[i], (int)(i % 90));       /* up to about 1e30 */
        for (int k = 0; k < 2; k++) {
            int op = k ? TK_EW_COS : TK_EW_SIN;
            o[n] = 777.0f;
            tk_ew_unary(op, n, x, o);
            for (int64_t i = 0; i < n; i++) {
                double r = op == TK_EW_SIN ? sin((double)x[i]) : cos((double)x[i]);
                int good;
                if (isnan(r)) good = isnan(o[i]);
                else if (fabs(r) < (double)FLT_MIN) good = fabs((double)o[i] - r) <= ldexp(1.0, -149);
                else {
                    double e = ulp_err(o[i], r);
                    worst = e > worst ? e : worst;
                    good = e <= 1.0;
                }
                if (!good && bad++ < 5)
                    printf("  %s %s n=%lld [%lld]: f(%.9g) = %.9g want %.17g\n", k ? "cos" : "sin", path_now,
                           (long long)n, (long long)i, (double)x[i], (double)o[i], r);
            }
            if (o[n] != 777.0f) bad++;
        }
        free(x);
        free(o);
    }
    char d[120];
    snprintf(d, sizeof d, "ew sin, cos %s: within 1 ulp of float64 (worst %.2f), NaN for NaN and inf", path_now, worst);
    CHECK(d, bad == 0);
}

static void test_ew_unary(void)
{
    static const int64_t sizes[] = { 0, 1, 3, 15, 16, 17, 31, 33, 63, 65, 1000 };
    static const int uops[] = { TK_EW_NEG, TK_EW_ABS, TK_EW_SQRT, TK_EW_EXP, TK_EW_LOG };
    static const char *const names[TK_EW_COUNT] = {
        [TK_EW_NEG] = "neg", [TK_EW_ABS] = "abs", [TK_EW_SQRT] = "sqrt", [TK_EW_EXP] = "exp", [TK_EW_LOG] = "log",
    };
    int bad = 0, bad_pos = 0;
    double worst_exp = 0.0, worst_log = 0.0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        float *x = ew_input((size_t)n + 1, 3), *o = malloc((size_t)(n + 1) * sizeof(float));
        for (size_t k = 0; k < sizeof uops / sizeof uops[0]; k++) {
            int op = uops[k];
            o[n] = 777.0f;
            tk_ew_unary(op, n, x, o);
            for (int64_t i = 0; i < n; i++) {
                float u = x[i], v = o[i];
                int good;
                if (op == TK_EW_NEG) good = bits_of(v) == (bits_of(u) ^ 0x80000000u) || (isnan(u) && isnan(v));
                else if (op == TK_EW_ABS) good = bits_of(v) == (bits_of(u) & 0x7fffffffu) || (isnan(u) && isnan(v));
                else if (op == TK_EW_SQRT) good = isnan(u) || u < 0 ? isnan(v) : bits_of(v) == bits_of(sqrtf(u));
                else {
                    double r = op == TK_EW_EXP ? exp((double)u) : log((double)u);
                    if (isnan(r)) good = isnan(v);
                    else if (isinf(r) || r > (double)FLT_MAX) good = isinf(v) && (v > 0) == (r > 0);
                    else if (fabs(r) < (double)FLT_MIN) good = fabs((double)v - r) <= ldexp(1.0, -149);
                    else {
                        double e = op == TK_EW_EXP ? fabs((double)v - r) / fabs(r) : ulp_err(v, r);
                        if (op == TK_EW_EXP) worst_exp = e > worst_exp ? e : worst_exp;
                        else worst_log = e > worst_log ? e : worst_log;
                        good = op == TK_EW_EXP ? e <= 2e-7 : e <= 2.0;
                    }
                }
                if (!good && bad++ < 5)
                    printf("  %s %s n=%lld [%lld]: f(%.9g) = %.9g\n", names[op], path_now, (long long)n,
                           (long long)i, (double)u, (double)v);
            }
            if (o[n] != 777.0f) bad++;
            if (n >= 33) {                                  /* position and in place */
                float t[20], *c = malloc((size_t)n * sizeof(float));
                for (int s = 1; s < 16; s += 5) {
                    tk_ew_unary(op, 17, x + s, t);
                    bad_pos += memcmp(t, o + s, 17 * sizeof(float)) != 0;
                }
                memcpy(c, x, (size_t)n * sizeof(float));
                tk_ew_unary(op, n, c, c);
                bad_pos += memcmp(c, o, (size_t)n * sizeof(float)) != 0;
                free(c);
            }
        }
        free(x); free(o);
    }
    char d[128];
    snprintf(d, sizeof d, "ew unary %s: neg/abs/sqrt exact, exp <= 2e-7, log <= 2 ulp, specials", path_now);
    CHECK(d, bad == 0);
    snprintf(d, sizeof d, "ew unary %s: bits independent of the start; in place = out of place", path_now);
    CHECK(d, bad_pos == 0);

    /* log over the whole positive range (every 1021st bit pattern, denormals
       included) and densely around 1, where the cancellation is */
    size_t cap = 4u << 20, n = 0;
    float *x = malloc(cap * sizeof(float)), *y = malloc(cap * sizeof(float));
    for (uint32_t u = 1; u < 0x7f800000u && n < cap; u += 1021) x[n++] = from_bits(u);
    for (uint32_t u = 0x3f300000u; u < 0x3fc00000u && n < cap; u += 37) x[n++] = from_bits(u);
    tk_ew_unary(TK_EW_LOG, (int64_t)n, x, y);
    int badl = 0;
    for (size_t i = 0; i < n; i++) {
        double r = log((double)x[i]), e = ulp_err(y[i], r);
        worst_log = e > worst_log ? e : worst_log;
        if (!(e <= 2.0) && badl++ < 5) printf("  log %s: log(%.9g) got %.9g want %.9g\n", path_now,
                                               (double)x[i], (double)y[i], r);
    }
    printf("  log %s: %zu points, worst %.3f ulp; exp worst relative %.3g\n", path_now, n, worst_log, worst_exp);
    snprintf(d, sizeof d, "log %s: within 2 ulp over the positive floats", path_now);
    CHECK(d, badl == 0);
    float sx[6] = { 0.0f, -0.0f, -1.0f, INFINITY, -INFINITY, NAN }, sy[6];
    tk_ew_unary(TK_EW_LOG, 6, sx, sy);
    CHECK("log(+-0) = -inf, log(-1) = log(-inf) = NaN, log(inf) = inf, log(NaN) = NaN",
          isinf(sy[0]) && sy[0] < 0 && isinf(sy[1]) && sy[1] < 0 && isnan(sy[2]) && isinf(sy[3])
          && sy[3] > 0 && isnan(sy[4]) && isnan(sy[5]));
    free(x); free(y);
}

/* Every unary float row of the op table (the activations among them) and
   gelu's backward codes against the float64 references of tests/opref.h
   (gelu x Phi(x) with erfc, its tanh form 0.5 x (1 + tanh(k (x + c x^3)))
   and, where 1 + tanh cancels in double too, the same as x e^2z / (1 +
   e^2z)). Tolerance: 1e-6 relative (8 ulp), plus 4 ulp
   times the condition number |x f'(x) / f(x)| (the float formula rounds
   x / sqrt 2 or z before erfc or exp: in gelu's far tail that is x^2
   ulps, inherent to any float32 formula), plus 2^-126 absolute (a
   denormal or flushed result is no error). The backward codes: 4e-7
   absolute on terms of size 1. */
/* The op table's unary float row whose kernel is code, or TT_OP_NONE */
static tt_op op_of_kernel(int code)
{
    for (int o = 0; o < TT_OP_COUNT; o++) {
        const tt__opdef *def = tt__op_def((tt_op)o);
        if (def->kind == TT_OPK_UNARY && def->dtypes != TT__BOOL && def->kernel == code) return (tt_op)o;
    }
    return TT_OP_NONE;
}

/* The float64 reference of code's op (tests/opref.h); NaN for a code no
   row names, so a kernel without a reference fails rather than passes. */
static double act64(int code, double x)
{
    tt_op op = op_of_kernel(code);
    return op != TT_OP_NONE && OPREF[op].f ? OPREF[op].f(x, 0) : (double)NAN;
}

/* Its derivative; gelu's backward codes compute g times gelu's */
static double act64_d(int code, double x)
{
    if (code == TK_EW_GELU_BWD) code = TK_EW_GELU;
    if (code == TK_EW_GELU_TANH_BWD) code = TK_EW_GELU_TANH;
    tt_op op = op_of_kernel(code);
    return op != TT_OP_NONE && OPREF[op].dx ? OPREF[op].dx(x, 0) : (double)NAN;
}

static const char *code_name(int code)
{
    return code == TK_EW_GELU_BWD ? "gelu backward" : code == TK_EW_GELU_TANH_BWD ? "gelu tanh backward"
         : tt_op_name(op_of_kernel(code));
}

/* The vector exp (AVX2) and log have a short way for the common vectors
   and a careful one for a vector with any other lane: the bits of a lane
   must not depend on its neighbours (x alone vs next to a lane that forces
   the careful way), nor softmax's rows on the row after them (the next row
   is fetched while one is computed). */
static void test_fast_and_careful(void)
{
    enum { N = 4096 };
    float *x = malloc(N * sizeof(float)), *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
    float v[16], w[16];
    int bad_exp = 0, bad_log = 0;
    for (int i = 0; i < N; i++) x[i] = -90.0f + 180.0f * (float)i / (float)N;
    x[0] = -87.0f; x[1] = nextafterf(-87.0f, -INFINITY); x[2] = 88.0f; x[3] = nextafterf(88.0f, INFINITY);
    x[4] = -86.0f; x[5] = nextafterf(-86.0f, -INFINITY);
    tk_exp_vec(N, x, a);
    for (int i = 0; i < N; i++) {
        for (int l = 0; l < 16; l++) v[l] = l == 5 ? x[i] : -INFINITY;
        tk_exp_vec(16, v, w);
        bad_exp += bits_of(w[5]) != bits_of(a[i]);
    }
    for (int i = 0; i < N; i++) x[i] = from_bits(0x00400000u + (uint32_t)i * 0x7f1f3u);  /* denormal .. huge */
    tk_ew_unary(TK_EW_LOG, N, x, a);
    for (int i = 0; i < N; i++) {
        for (int l = 0; l < 16; l++) v[l] = l == 9 ? x[i] : (l & 1 ? 0.0f : 1.5f);
        tk_ew_unary(TK_EW_LOG, 16, v, w);
        bad_log += bits_of(w[9]) != bits_of(a[i]);
    }
    char d[128];
    snprintf(d, sizeof d, "exp %s: a lane's bits do not depend on its neighbours (-87, -86, 88 edges)", path_now);
    CHECK(d, bad_exp == 0);
    snprintf(d, sizeof d, "log %s: a lane's bits do not depend on its neighbours (0, denormals)", path_now);
    CHECK(d, bad_log == 0);
    static const int64_t ns[] = { 1, 17, 63, 64, 65, 100, 2048 + 7 };
    int bad_sm = 0;
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int64_t n = ns[k];
        float *xs = frand((size_t)(5 * n)), *ys = malloc((size_t)(5 * n) * sizeof(float)), y1[2100];
        for (int64_t j = 0; j < 5 * n; j++) xs[j] *= 30.0f;
        xs[n + n / 2] = -INFINITY;
        tk_softmax_rows(5, n, xs, ys);
        for (int r = 0; r < 5; r++) {
            tk_softmax_rows(1, n, xs + r * n, y1);
            bad_sm += memcmp(y1, ys + r * n, (size_t)n * sizeof(float)) != 0;
        }
        free(xs); free(ys);
    }
    snprintf(d, sizeof d, "softmax %s: a row's bits do not depend on the rows after it", path_now);
    CHECK(d, bad_sm == 0);
    free(x); free(a); free(b);
}

/* Sums of lines (tk_reduce_lines): a contiguous line in TK_SUM_CHAINS
   chains, neighbouring lines as vectors; every path gives the same bits,
   close to the float64 sum, at lengths around the chain and vector sizes. */
static void test_reduce_paths(void)
{
    static const char *paths[] = { "scalar", "avx2", "avx512" };
    static const int64_t lens[] = { 1, 2, 7, 31, 32, 33, 63, 65, 100, 1000, 4099 };
    static const int64_t nbs[] = { 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64 };
    float *x = frand(70 * 80);
    for (int i = 0; i < 70 * 80; i++) x[i] = x[i] * 1000.0f - 400.0f;
    float v0[64], v[64], ix[64];
    int same = 1, close = 1, tested = 0;
    for (int p = 0; p < 3; p++) {
        if (!tk_simd_force(paths[p])) continue;
        tested++;
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
            int64_t n = lens[k];
            double r = 0.0;
            for (int64_t j = 0; j < n; j++) r += (double)x[j];
            tk_reduce_lines(TK_RED_SUM, x, 1, 0, n, 1, v, ix);
            close &= fabs((double)v[0] - r) <= 1e-6 * (fabs(r) + 1.0);
            tk_reduce_lines(TK_RED_MEAN, x, 1, 0, n, 1, v + 1, ix);
            if (p == 0) memcpy(v0 + 2 * k, v, 2 * sizeof(float));
            else same &= memcmp(v0 + 2 * k, v, 2 * sizeof(float)) == 0;
        }
        for (size_t k = 0; k < sizeof nbs / sizeof nbs[0]; k++)
            for (int64_t R = 1; R <= 5; R += 2) {
                int64_t nb = nbs[k], sd = nb + 3;
                float w[64];
                tk_reduce_lines(TK_RED_SUM, x + 1, nb, 1, R, sd, w, ix);
                for (int64_t i = 0; i < nb; i++) {
                    double r = 0.0;
                    for (int64_t j = 0; j < R; j++) r += (double)x[1 + j * sd + i];
                    same &= w[i] == (float)r;               /* in order, in double: exact as float64 */
                }
            }
    }
    tk_simd_force(NULL);
    CHECK("sum of lines: every path gives the same bits (contiguous and side by side)", tested >= 1 && same);
    CHECK("sum of lines: within 1e-6 of the float64 sum", close);
    free(x);
}

/* The AVX2 and AVX-512 logs run the same operations on the same tables. */
static void test_log_paths_agree(void)
{
    if (!tk_simd_force("avx512") || !tk_simd_force("avx2")) {
        printf("skip: log avx2 vs avx512 needs both paths\n");
        return;
    }
    size_t n = 0, cap = 1u << 20;
    float *x = malloc(cap * sizeof(float)), *a = malloc(cap * sizeof(float)), *b = malloc(cap * sizeof(float));
    for (uint32_t u = 1; u < 0x7f800000u && n < cap; u += 2039) x[n++] = from_bits(u);
    tk_ew_unary(TK_EW_LOG, (int64_t)n, x, a);
    tk_simd_force("avx512");
    tk_ew_unary(TK_EW_LOG, (int64_t)n, x, b);
    CHECK("log: the avx2 and avx512 paths give the same bits", memcmp(a, b, n * sizeof(float)) == 0);
    free(x); free(a); free(b);
}

static void test_ew_activations(void)
{
    static const int64_t sizes[] = { 0, 1, 7, 15, 16, 17, 31, 33, 65, 1000 };
    int ops[TT_OP_COUNT], nops = 0;                 /* every unary float row of the op table */
    for (int o = 0; o < TT_OP_COUNT; o++) {
        const tt__opdef *def = tt__op_def((tt_op)o);
        if (def->kind == TT_OPK_UNARY && def->dtypes != TT__BOOL) ops[nops++] = def->kernel;
    }
    int bad = 0, bad_pos = 0, bad_bwd = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        float *x = ew_input((size_t)n + 1, 5), *o = malloc((size_t)(n + 1) * sizeof(float));
        for (int64_t i = 0; i < n; i += 11) x[i] *= 3.0f;           /* the tails too */
        for (int k = 0; k < nops; k++) {
            int op = ops[k];
            o[n] = 777.0f;
            tk_ew_unary(op, n, x, o);
            for (int64_t i = 0; i < n; i++) {
                double xd = (double)x[i], r = act64(op, xd), v = (double)o[i];
                double cond = op == TK_EW_RELU || r == 0 ? 0.0
                            : fabs(xd * act64_d(op == TK_EW_GELU_TANH ? TK_EW_GELU_TANH_BWD : op, xd) / r);
                int good = isnan(r) ? isnan(v) : isinf(r) ? v == r
                         : op == TK_EW_RELU ? bits_of(o[i]) == bits_of((float)r)
                         : fabs(v - r) <= (1e-6 + 4.0 * (double)FLT_EPSILON * cond) * fabs(r) + ldexp(1.0, -126);
                if (!good && bad++ < 5)
                    printf("  %s %s n=%lld [%lld]: f(%.9g) = %.9g want %.9g\n", code_name(op), path_now,
                           (long long)n, (long long)i, (double)x[i], v, r);
            }
            if (o[n] != 777.0f) bad++;
            if (n >= 33) {                                  /* position and in place */
                float t[20], *c = malloc((size_t)n * sizeof(float));
                for (int s = 1; s < 16; s += 5) {
                    tk_ew_unary(op, 17, x + s, t);
                    bad_pos += memcmp(t, o + s, 17 * sizeof(float)) != 0;
                }
                memcpy(c, x, (size_t)n * sizeof(float));
                tk_ew_unary(op, n, c, c);
                bad_pos += memcmp(c, o, (size_t)n * sizeof(float)) != 0;
                free(c);
            }
        }
        /* the backward codes: g * gelu'(x), g from a second input, and g broadcast */
        float *g = ew_input((size_t)n + 1, 6);
        for (int code = TK_EW_GELU_BWD; code <= TK_EW_GELU_TANH_BWD; code++)
            for (int sg = 0; sg <= 1; sg++) {
                tk_ew_binary(code, n, g, sg, x, 1, o);
                for (int64_t i = 0; i < n; i++) {
                    double xd = (double)x[i], r = (double)g[i * sg] * act64_d(code, xd), v = (double)o[i];
                    if (isinf(xd) && !isnan(g[i * sg]))     /* the limits: 0 or 1 times g */
                        r = xd > 0 ? (double)g[i * sg] : 0.0 * (double)g[i * sg];
                    /* a derivative under FLT_MIN may be 0 in float, its factors
                       underflowing first (sigmoid(2z) at x = -10.85): inf * 0 */
                    int tiny = isinf(g[i * sg]) && fabs(act64_d(code, xd)) < (double)FLT_MIN;
                    int good = tiny ? isnan(v) || v == r : isnan(r) ? isnan(v) : isinf(r) ? v == r
                             : fabs(r) > (double)FLT_MAX ? fabs(v) >= (double)FLT_MAX && (v > 0) == (r > 0)
                             : fabs(v - r) <= 1e-6 * fabs(r) + 4e-7 * fabs((double)g[i * sg]);
                    if (!good && bad_bwd++ < 5)
                        printf("  %s %s n=%lld [%lld]: g %.9g x %.9g: %.9g want %.9g\n", code_name(code), path_now,
                               (long long)n, (long long)i, (double)g[i * sg], xd, v, r);
                }
            }
        free(x); free(o); free(g);
    }
    char d[128];
    snprintf(d, sizeof d, "unary rows of the op table %s: relu exact, the others within 1e-6 and their conditioning, specials", path_now);
    CHECK(d, bad == 0);
    snprintf(d, sizeof d, "activations %s: bits independent of the start; in place = out of place", path_now);
    CHECK(d, bad_pos == 0);
    snprintf(d, sizeof d, "gelu backward codes %s: g * gelu'(x), both forms, g broadcast", path_now);
    CHECK(d, bad_bwd == 0);
    /* tanh and sigmoid densely over [-20, 20] and across 1e-30..1 (where
       tanh switches from its polynomial), worst error printed */
    size_t ns = 0, cap = 600000;
    float *sw = malloc(cap * sizeof(float)), *so = malloc(cap * sizeof(float));
    for (int k = -200000; k <= 200000; k++) sw[ns++] = (float)k * 1e-4f;
    for (float v = 1e-30f; v < 1.0f && ns + 2 < cap; v *= 1.001f) { sw[ns++] = v; sw[ns++] = -v; }
    for (int op = TK_EW_TANH; op <= TK_EW_SIGMOID; op++) {
        double worst = 0.0;
        int badw = 0;
        tk_ew_unary(op, (int64_t)ns, sw, so);
        for (size_t i = 0; i < ns; i++) {
            double r = act64(op, (double)sw[i]), e = fabs((double)so[i] - r) / fabs(r);
            if (fabs(r) < ldexp(1.0, -126)) continue;
            worst = e > worst ? e : worst;
            if (!(e <= 5e-7) && badw++ < 3)
                printf("  %s %s: f(%.9g) = %.9g want %.9g\n", code_name(op), path_now, (double)sw[i], (double)so[i], r);
        }
        printf("  %s %s: %zu points, worst relative %.3g\n", code_name(op), path_now, ns, worst);
        snprintf(d, sizeof d, "%s %s: within 5e-7 relative (4 ulp) over [-20, 20] and near 0", code_name(op), path_now);
        CHECK(d, badw == 0);
    }
    free(sw); free(so);
    float sx[6] = { -INFINITY, INFINITY, NAN, -0.0f, -200.0f, 200.0f }, sy[6];
    tk_ew_unary(TK_EW_GELU, 6, sx, sy);
    CHECK("gelu(-inf) = NaN (PyTorch's -inf * 0), gelu(inf) = inf, gelu(-200) = -0",
          isnan(sy[0]) && sy[1] == INFINITY && isnan(sy[2]) && sy[4] == 0.0f && sy[5] == 200.0f);
    tk_ew_unary(TK_EW_SIGMOID, 6, sx, sy);
    CHECK("sigmoid: 0 and 1 at -inf and inf, -200 and 200; NaN stays NaN",
          sy[0] == 0.0f && sy[1] == 1.0f && isnan(sy[2]) && sy[3] == 0.5f && sy[4] == 0.0f && sy[5] == 1.0f);
    tk_ew_unary(TK_EW_TANH, 6, sx, sy);
    CHECK("tanh: -1 and 1 at -inf and inf, -0 stays -0, NaN stays NaN",
          sy[0] == -1.0f && sy[1] == 1.0f && isnan(sy[2]) && sy[3] == 0.0f && signbit(sy[3])
          && sy[4] == -1.0f && sy[5] == 1.0f);
    tk_ew_unary(TK_EW_RELU, 6, sx, sy);
    CHECK("relu: 0 at -inf and -0, inf at inf, NaN stays NaN",
          sy[0] == 0.0f && sy[1] == INFINITY && isnan(sy[2]) && sy[3] == 0.0f && !signbit(sy[3]));
}

static void test_ew_masked_fill(void)
{
    static const int64_t sizes[] = { 0, 1, 3, 15, 16, 17, 31, 33, 63, 65, 1000 };
    int bad = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        float *x = ew_input((size_t)n + 1, 4), *o = malloc((size_t)(n + 1) * sizeof(float));
        uint8_t *m = malloc((size_t)n + 1);
        for (int64_t i = 0; i <= n; i++) m[i] = urand() < 0.4 ? (uint8_t)(1 + (i % 3 == 0) * 6) : 0;
        for (int pat = 0; pat < 4; pat++) {
            int64_t sx = pat & 1 ? 0 : 1, sm = pat & 2 ? 0 : 1;
            for (int f = 0; f < 2; f++) {
                float v = f ? -INFINITY : NAN;
                o[n] = 777.0f;
                tk_ew_masked_fill(n, x, sx, m, sm, v, o);
                for (int64_t i = 0; i < n; i++) {
                    float want = m[i * sm] ? v : x[i * sx];
                    if (bits_of(o[i]) != bits_of(want) && bad++ < 5)
                        printf("  masked_fill %s n=%lld [%lld] got %.9g want %.9g\n", path_now,
                               (long long)n, (long long)i, (double)o[i], (double)want);
                }
                if (o[n] != 777.0f) bad++;
            }
        }
        free(x); free(o); free(m);
    }
    char d[96];
    snprintf(d, sizeof d, "ew masked_fill %s: exact, any non-zero byte true, stride 0 and 1", path_now);
    CHECK(d, bad == 0);
}

/* ===== softmax ===== */

static void softmax_ref(int64_t rows, int64_t n, const float *x, double *r)
{
    for (int64_t i = 0; i < rows; i++, x += n, r += n) {
        double m = -DINF, s = 0.0;
        for (int64_t j = 0; j < n; j++) m = (double)x[j] > m ? (double)x[j] : m;
        for (int64_t j = 0; j < n; j++) s += (r[j] = exp((double)x[j] - m));
        for (int64_t j = 0; j < n; j++) r[j] = m == -DINF ? (double)NAN : r[j] / s;
    }
}

static void softmax_case(int64_t rows, int64_t n, float *x, int inplace, const char *what)
{
    double *r = malloc((size_t)(rows * n) * sizeof(double));
    float *y = inplace ? x : malloc((size_t)(rows * n) * sizeof(float));
    softmax_ref(rows, n, x, r);
    tk_softmax_rows(rows, n, x, y);
    char d[96];
    snprintf(d, sizeof d, "softmax %s %s rows=%lld n=%lld", path_now, what, (long long)rows, (long long)n);
    check_close(d, y, r, rows * n, 2e-6, 1e-12);
    if (!inplace) free(y);
    free(r);
}

static void test_softmax(void)
{
    static const int64_t sz[] = { 1, 3, 15, 17, 31, 33, 63, 65, 127, 129, 255, 257, 1000 };
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
        float *x = frand((size_t)(7 * sz[i]));
        for (int64_t j = 0; j < 7 * sz[i]; j++) x[j] *= 20.0f;
        softmax_case(7, sz[i], x, 0, "random");
        softmax_case(7, sz[i], x, 1, "in place");
        free(x);
    }
    /* edge rows: some -inf, all -inf (NaN), huge, +inf (NaN), one element */
    float e[6][5] = {
        { -INFINITY, 1.0f, -INFINITY, 2.0f, 0.5f },
        { -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY },
        { 3e38f, -3e38f, 3e38f, 0.0f, 1e38f },
        { 1.0f, INFINITY, 2.0f, 3.0f, 4.0f },
        { -1e30f, -1e30f, -1e30f + 1e24f, -1e30f, -1e30f },
        { 88.0f, -88.0f, 0.0f, 100.0f, -100.0f },
    };
    softmax_case(6, 5, &e[0][0], 0, "edges");
    float *y = malloc(30 * sizeof(float));
    tk_softmax_rows(6, 5, &e[0][0], y);
    CHECK("softmax: -inf entries give exact 0", y[0] == 0.0f && y[2] == 0.0f);
    int nan = 1;
    for (int j = 0; j < 5; j++) nan &= isnan(y[5 + j]);
    CHECK("softmax: all -inf row gives NaN", nan);
    CHECK("softmax: huge values stay finite", y[10] == 0.5f && y[12] == 0.5f && y[11] == 0.0f);
    float one = 7.0f, r1;
    tk_softmax_rows(1, 1, &one, &r1);
    CHECK("softmax of one element is 1", r1 == 1.0f);
    /* reference kernel on the same edges */
    tk_softmax_rows_ref(6, 5, &e[0][0], y);
    double r[30];
    softmax_ref(6, 5, &e[0][0], r);
    check_close("softmax_ref edges", y, r, 30, 2e-6, 1e-12);
    free(y);

    /* past the last-level cache, odd row length (unaligned rows) */
    int64_t rows = 1031, n = 4099;
    float *x = frand((size_t)(rows * n));
    for (int64_t j = 0; j < rows * n; j += 97) x[j] = -INFINITY;
    softmax_case(rows, n, x, 0, "big");
    free(x);

    /* the path's scale: exact products at every start and length around
       the vector and line sizes, nothing written outside its range */
    const tk_kern *kn = tk_kern_now();
    float *a = frand(300), *o = malloc(300 * sizeof(float));
    int bad = 0;
    for (int off = 0; off < 17; off++)
        for (int64_t len = 0; len + off <= 300; len += 13) {
            for (int i = 0; i < 300; i++) o[i] = 777.0f;
            kn->scale(len, 0.37f, a + off, o + off);
            for (int i = 0; i < 300; i++)
                bad += i >= off && i < off + len ? o[i] != 0.37f * a[i] : o[i] != 777.0f;
        }
    char d[96];
    snprintf(d, sizeof d, "scale %s: exact, only its range", path_now);
    CHECK(d, bad == 0);
    free(a); free(o);
}

/* log_softmax of [outer, n, inner] over n in float64; past the float range
   the result is the float one (inf: x - max overflows for real). */
static void log_softmax_ref(int64_t outer, int64_t n, int64_t inner, const float *x, double *r)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = 0; c < inner; c++) {
            const float *xc = x + o * n * inner + c;
            double *rc = r + o * n * inner + c, m = -DINF, s = 0.0;
            for (int64_t j = 0; j < n; j++) m = (double)xc[j * inner] > m || isnan(xc[j * inner]) ? (double)xc[j * inner] : m;
            for (int64_t j = 0; j < n; j++) s += exp((double)xc[j * inner] - m);
            for (int64_t j = 0; j < n; j++) {
                double v = (double)xc[j * inner] - m - log(s);
                rc[j * inner] = fabs(v) > (double)FLT_MAX && !isinf(v) ? copysign(DINF, v) : v;
            }
        }
}

static void test_log_softmax(void)
{
    static const int64_t sz[] = { 1, 7, 15, 17, 33, 65, 257, 1000 };
    char d[96];
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
        int64_t rows = 7, n = sz[i];
        float *x = frand((size_t)(rows * n)), *y = malloc((size_t)(rows * n) * sizeof(float));
        double *r = malloc((size_t)(rows * n) * sizeof(double));
        for (int64_t j = 0; j < rows * n; j++) x[j] *= 30.0f;
        log_softmax_ref(rows, n, 1, x, r);
        CHECK("log_softmax rows: memory", tk_log_softmax_rows(rows, n, x, y) == 0);
        snprintf(d, sizeof d, "log_softmax %s rows=%lld n=%lld", path_now, (long long)rows, (long long)n);
        check_close(d, y, r, rows * n, 2e-6, 2e-6);
        tk_log_softmax_rows_ref(rows, n, x, y);
        snprintf(d, sizeof d, "log_softmax_ref rows=%lld n=%lld", (long long)rows, (long long)n);
        check_close(d, y, r, rows * n, 2e-6, 2e-6);
        tk_log_softmax_rows(rows, n, x, x);
        snprintf(d, sizeof d, "log_softmax %s in place n=%lld", path_now, (long long)n);
        check_close(d, x, r, rows * n, 2e-6, 2e-6);
        free(x); free(y); free(r);
        /* over the middle dim of [3, n, 5] (and in place) */
        x = frand((size_t)(15 * n));
        y = malloc((size_t)(15 * n) * sizeof(float));
        r = malloc((size_t)(15 * n) * sizeof(double));
        log_softmax_ref(3, n, 5, x, r);
        tk_log_softmax_cols(3, n, 5, x, y);
        snprintf(d, sizeof d, "log_softmax cols %s [3,%lld,5]", path_now, (long long)n);
        check_close(d, y, r, 15 * n, 2e-6, 2e-6);
        tk_log_softmax_cols(3, n, 5, x, x);
        check_close(d, x, r, 15 * n, 2e-6, 2e-6);
        free(x); free(y); free(r);
    }
    /* edge rows: some -inf, all -inf, huge both ways, +inf, NaN, tiny spread */
    float e[7][5] = {
        { -INFINITY, 1.0f, -INFINITY, 2.0f, 0.5f },
        { -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY },
        { 3e38f, -3e38f, 3e38f, 0.0f, 1e38f },
        { 1.0f, INFINITY, 2.0f, 3.0f, 4.0f },
        { 1.0f, NAN, 2.0f, 3.0f, 4.0f },
        { -1e30f, -1e30f, -1e30f + 1e24f, -1e30f, -1e30f },
        { 88.0f, -88.0f, 0.0f, 100.0f, -100.0f },
    };
    float y[35];
    double r[35];
    log_softmax_ref(7, 5, 1, &e[0][0], r);
    tk_log_softmax_rows(7, 5, &e[0][0], y);
    snprintf(d, sizeof d, "log_softmax %s edge rows", path_now);
    check_close(d, y, r, 35, 2e-6, 2e-6);
    int nan = 1;
    for (int j = 0; j < 5; j++) nan &= isnan(y[5 + j]) && isnan(y[15 + j]) && isnan(y[20 + j]);
    CHECK("log_softmax: an all -inf row (as softmax), a +inf or a NaN gives NaN", nan);
    CHECK("log_softmax: -inf stays -inf, huge stays finite (log 2 below the max)",
          y[0] == -INFINITY && y[2] == -INFINITY && y[10] == -0.6931472f && y[11] == -INFINITY);
    tk_log_softmax_rows_ref(7, 5, &e[0][0], y);
    check_close("log_softmax_ref edge rows", y, r, 35, 2e-6, 2e-6);
    {   /* 1 vs N threads, bit for bit (rows and columns) */
        int64_t rows = 301, n = 777;
        float *x = frand((size_t)(rows * n)), *y1 = malloc((size_t)(rows * n) * sizeof(float));
        float *y2 = malloc((size_t)(rows * n) * sizeof(float));
        int same = 1;
        for (int th = 2; th <= threads_max + 1; th++) {
            tt_set_num_threads(1);
            tk_log_softmax_rows(rows, n, x, y1);
            tt_set_num_threads(th);
            tk_log_softmax_rows(rows, n, x, y2);
            same &= memcmp(y1, y2, (size_t)(rows * n) * sizeof(float)) == 0;
            tk_log_softmax_cols(7, 43, 3 * 259, x, y2);
            tt_set_num_threads(1);
            tk_log_softmax_cols(7, 43, 3 * 259, x, y1);
            same &= memcmp(y1, y2, (size_t)(rows * n) * sizeof(float)) == 0;
        }
        tt_set_num_threads(threads_max);
        snprintf(d, sizeof d, "log_softmax %s: 1 vs N threads bit-identical", path_now);
        CHECK(d, same);
        free(x); free(y1); free(y2);
    }
    tk_log_softmax_cols(1, 7, 5, &e[0][0], y);  /* the same values as 5 columns of 7 */
    log_softmax_ref(1, 7, 5, &e[0][0], r);
    snprintf(d, sizeof d, "log_softmax cols %s edge values", path_now);
    check_close(d, y, r, 35, 2e-6, 2e-6);
}

/* Softmax's and exp's bits are part of the contract: golden traces, trained
   checkpoints and the lessons' re-train goldens depend on them. The hashes
   below are of the table-driven exp (2^(j/8) T (1 + q), kernels.h), whose
   bits the two SIMD paths share; any change to a kernel's arithmetic or
   to a sum's order shows up here. Rows of awkward lengths, -inf entries, an all -inf row, entries
   just past exp's fast range below the max, NaN, huge values, rows without
   -inf (every vector of them takes exp's fast way); in place too. */
static uint64_t fnv_bits(uint64_t h, const float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t b = bits_of(y[i]);
        for (int k = 0; k < 4; k++) h = (h ^ ((b >> (8 * k)) & 0xff)) * 0x100000001b3ull;
    }
    return h;
}

static void test_softmax_pinned(void)
{
    static const int64_t ns[] = { 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 79, 95,
                                  127, 128, 129, 191, 192, 200, 255, 256, 257, 1000, 2047, 2048,
                                  2049, 2111, 4100 };
    static const struct { const char *path; uint64_t softmax, exp; } pins[] = {
        { "avx512", 0x351f3e3fe33bf1bdull, 0xbc8adb80947c6d13ull },
        { "avx2", 0xffa4bc271bca60b1ull, 0xbc8adb80947c6d13ull },
        { "scalar", 0xbb06a6d1142e54c1ull, 0x77445b13d1cdb9e0ull },
    };
    enum { ROWS = 9 };
    uint64_t seed = rng, hs = 0xcbf29ce484222325ull, he = hs;
    rng = 1234;
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int64_t n = ns[k];
        float *x = malloc((size_t)(ROWS * n) * sizeof(float)), *y = malloc((size_t)(ROWS * n) * sizeof(float));
        for (int64_t j = 0; j < ROWS * n; j++) {
            double u = urand();
            x[j] = u < 0.1 ? -INFINITY : (float)(80.0 * urand() - 40.0);
        }
        for (int64_t j = 0; j < n; j++) x[2 * n + j] = -INFINITY;          /* row 2: all -inf */
        for (int64_t j = 0; j < n; j++)                                     /* row 3: exp's edges */
            x[3 * n + j] = j == 0 ? 0.0f : -86.0f - (float)(j % 5) * 0.5f + (float)urand() * 0.01f;
        if (n > 3) x[4 * n + n / 3] = NAN;                                  /* row 4: NaN */
        x[5 * n + n - 1] = 3e38f;                                           /* row 5: huge */
        for (int64_t j = 0; j < n; j++) if (j % 3) x[6 * n + j] = -INFINITY; /* row 6: mostly -inf */
        for (int64_t j = 0; j < n; j++) x[7 * n + j] = (float)(80.0 * urand() - 40.0); /* 7: no -inf */
        for (int64_t j = 0; j < n; j++)                     /* row 8: down to 86 below the max */
            x[8 * n + j] = j == n / 2 ? 10.0f : 10.0f - (float)(86.0 * urand());
        tk_softmax_rows(ROWS, n, x, y);
        hs = fnv_bits(hs, y, ROWS * n);
        tk_softmax_rows(ROWS, n, x, x);                                     /* in place */
        hs = fnv_bits(hs, x, ROWS * n);
        for (int64_t j = 0; j < ROWS * n; j++) x[j] = (float)(200.0 * urand() - 110.0);
        tk_exp_vec(ROWS * n, x, y);
        he = fnv_bits(he, y, ROWS * n);
        free(x); free(y);
    }
    rng = seed;
    for (size_t p = 0; p < sizeof pins / sizeof pins[0]; p++)
        if (strcmp(pins[p].path, path_now) == 0) {
            char d[160];
            snprintf(d, sizeof d, "softmax %s: the pinned bits (hash %016llx)", path_now, (unsigned long long)hs);
            CHECK(d, hs == pins[p].softmax);
            snprintf(d, sizeof d, "exp %s: the pinned bits (hash %016llx)", path_now, (unsigned long long)he);
            CHECK(d, he == pins[p].exp);
        }
}

static void test_softmax_threads(void)
{
    int64_t rows = 301, n = 777;
    float *x = frand((size_t)(rows * n));
    float *y1 = malloc((size_t)(rows * n) * sizeof(float)), *y2 = malloc((size_t)(rows * n) * sizeof(float));
    tt_set_num_threads(1);
    tk_softmax_rows(rows, n, x, y1);
    tk_exp_vec(rows * n, x, x);
    memcpy(y2, x, (size_t)(rows * n) * sizeof(float));
    int same = 1;
    for (int th = 2; th <= threads_max + 1; th++) {
        tt_set_num_threads(th);
        float *t = malloc((size_t)(rows * n) * sizeof(float));
        tk_softmax_rows(rows, n, y2, t);      /* softmax of exp(x): any data will do */
        tt_set_num_threads(1);
        float *u = malloc((size_t)(rows * n) * sizeof(float));
        tk_softmax_rows(rows, n, y2, u);
        same &= memcmp(t, u, (size_t)(rows * n) * sizeof(float)) == 0;
        free(t); free(u);
    }
    /* exp split across threads at arbitrary points */
    float *e1 = frand((size_t)(rows * n)), *e2 = malloc((size_t)(rows * n) * sizeof(float));
    float *e3 = malloc((size_t)(rows * n) * sizeof(float));
    tt_set_num_threads(1);
    tk_exp_vec(rows * n, e1, e2);
    tt_set_num_threads(3);
    tk_exp_vec(rows * n, e1, e3);
    same &= memcmp(e2, e3, (size_t)(rows * n) * sizeof(float)) == 0;
    tt_set_num_threads(threads_max);
    CHECK("softmax/exp: 1 vs N threads bit-identical", same);
    free(x); free(y1); free(y2); free(e1); free(e2); free(e3);
}

/* ===== sdpa ===== */

typedef struct sdpa_case {
    int64_t B, Hq, Hkv, Nq, Nk, Dh, Dv;
    int causal, mask, weights, layout;   /* mask: 0 none, 1 [Nq,Nk] bcast, 2 [B,1,Nq,Nk],
                                            3 key padding [B,1,1,Nk], 4 [Nq,Nk] transposed */
    float scale;
} sdpa_case;

/* The composed formula in float64: scores, mask, softmax (its max
   propagating NaN, as PyTorch's), weights @ v; a row with no visible key
   gives zeros, the one exception. Returns the number of such rows. */
static int64_t sdpa_ref64(const tk_sdpa_args *a, double *out, double *w)
{
    int64_t G = a->Hq / a->Hkv, off = a->Nk - a->Nq, empty = 0;
    double *s = malloc((size_t)a->Nk * sizeof(double) + 8);
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t h = 0; h < a->Hq; h++)
            for (int64_t i = 0; i < a->Nq; i++) {
                double m = -DINF, sum = 0.0;
                int seen = 0;
                int64_t row = (b * a->Hq + h) * a->Nq + i;
                for (int64_t j = 0; j < a->Nk; j++) {
                    double d = 0.0;
                    for (int64_t e = 0; e < a->Dh; e++)
                        d += (double)a->q[b * a->qs_b + h * a->qs_h + i * a->qs_n + e * a->qs_d]
                           * (double)a->k[b * a->ks_b + (h / G) * a->ks_h + j * a->ks_n + e * a->ks_d];
                    int keep = !a->causal || j <= i + off;
                    if (a->mask && !a->mask[b * a->ms_b + h * a->ms_h + i * a->ms_q + j * a->ms_k]) keep = 0;
                    s[j] = keep ? d * (double)a->scale : -DINF;
                    seen |= keep;
                    if (s[j] > m || isnan(s[j])) m = isnan(m) ? m : s[j];
                }
                for (int64_t j = 0; j < a->Nk; j++) sum += (s[j] = !seen ? 0.0 : exp(s[j] - m));
                if (!seen) empty++;
                for (int64_t j = 0; j < a->Nk; j++) {
                    s[j] = !seen ? 0.0 : s[j] / sum;
                    if (w) w[row * a->Nk + j] = s[j];
                }
                for (int64_t e = 0; e < a->Dv; e++) {
                    double o = 0.0;
                    for (int64_t j = 0; j < a->Nk; j++)
                        o += s[j] * (double)a->v[b * a->vs_b + (h / G) * a->vs_h + j * a->vs_n + e * a->vs_d];
                    out[row * a->Dv + e] = seen ? o : 0.0;   /* even when v has NaN */
                }
            }
    free(s);
    return empty;
}

/* Non-finite inputs a case may be given (applied to batch 0, kv head 0). */
enum { P_NONE, P_Q_NAN, P_K_POSINF, P_K_LAST_NAN, P_ALL_NEGINF, P_V_NAN, P_NEGINF_NAN, P_COUNT };
static const char *const POISON[] = { "", " q row NaN", " k all +inf", " last key NaN",
                                      " row 0 all -inf", " v NaN", " row 0: -inf, key 0 NaN, finite from key 512" };

static void sdpa_run(const sdpa_case *c, int use_ref, int poison)
{
    tk_sdpa_args a;
    memset(&a, 0, sizeof a);
    a.B = c->B; a.Hq = c->Hq; a.Hkv = c->Hkv; a.Nq = c->Nq; a.Nk = c->Nk; a.Dh = c->Dh; a.Dv = c->Dv;
    int64_t nq = c->B * c->Hq * c->Nq * c->Dh, nk = c->B * c->Hkv * c->Nk * c->Dh;
    int64_t nv = c->B * c->Hkv * c->Nk * c->Dv;
    float *q = frand((size_t)nq), *k = frand((size_t)nk), *v = frand((size_t)nv);
    for (int64_t i = 0; i < nq; i++) q[i] *= 3.0f;   /* peaked softmax rows too */
    if (c->layout == 0) {    /* contiguous [B, H, N, D] */
        a.qs_d = 1; a.qs_n = c->Dh; a.qs_h = c->Nq * c->Dh; a.qs_b = c->Hq * a.qs_h;
        a.ks_d = 1; a.ks_n = c->Dh; a.ks_h = c->Nk * c->Dh; a.ks_b = c->Hkv * a.ks_h;
        a.vs_d = 1; a.vs_n = c->Dv; a.vs_h = c->Nk * c->Dv; a.vs_b = c->Hkv * a.vs_h;
    } else {                 /* stored [B, N, H, D] ("b s (h d)"), K with d outermost */
        a.qs_d = 1; a.qs_h = c->Dh; a.qs_n = c->Hq * c->Dh; a.qs_b = c->Nq * a.qs_n;
        a.ks_n = 1; a.ks_d = c->Nk; a.ks_h = c->Dh * c->Nk; a.ks_b = c->Hkv * a.ks_h;
        a.vs_d = 1; a.vs_h = c->Dv; a.vs_n = c->Hkv * c->Dv; a.vs_b = c->Nk * a.vs_n;
    }
    a.q = q; a.k = k; a.v = v;
    int64_t qrow = c->Nq > 1 ? 1 : 0;
    for (int64_t e = 0; e < c->Dh; e++) {
        for (int64_t j = 0; j < c->Nk; j++) {
            float *kj = k + j * a.ks_n + e * a.ks_d;
            if (poison == P_K_POSINF) *kj = INFINITY;
            if (poison == P_ALL_NEGINF || (poison == P_NEGINF_NAN && j < 512)) *kj = -INFINITY;
            if (poison == P_NEGINF_NAN && j == 0) *kj = NAN;   /* a vector max drops it */
            if (poison == P_K_LAST_NAN && j == c->Nk - 1) *kj = NAN;
        }
        if (poison == P_Q_NAN && e == 0) q[qrow * a.qs_n] = NAN;
        if (poison == P_ALL_NEGINF || poison == P_NEGINF_NAN) q[e * a.qs_d] = 1.0f;   /* row 0 scores -inf */
    }
    if (poison == P_V_NAN) v[0] = NAN;
    uint8_t *mask = NULL;
    if (c->mask) {
        int64_t nm = c->B * c->Nq * c->Nk;
        mask = malloc((size_t)nm);
        for (int64_t i = 0; i < nm; i++) mask[i] = urand() < 0.7;
        if (c->mask == 1) { a.ms_b = 0; a.ms_h = 0; a.ms_q = c->Nk; a.ms_k = 1; }
        else if (c->mask == 2) { a.ms_b = c->Nq * c->Nk; a.ms_h = 0; a.ms_q = c->Nk; a.ms_k = 1; }
        else if (c->mask == 3) { a.ms_b = c->Nk; a.ms_h = 0; a.ms_q = 0; a.ms_k = 1; }
        else { a.ms_b = 0; a.ms_h = 0; a.ms_q = 1; a.ms_k = c->Nq; }   /* stored [Nk, Nq] */
        /* a few fully masked rows */
        if (c->mask != 3 && c->Nq > 2)
            for (int64_t j = 0; j < c->Nk; j++) mask[1 * a.ms_q + j * a.ms_k] = 0;
        a.mask = mask;
    }
    a.causal = c->causal;
    a.scale = c->scale > 0 ? c->scale : 1.0f / sqrtf((float)c->Dh);
    int64_t no = c->B * c->Hq * c->Nq * c->Dv, nw = c->B * c->Hq * c->Nq * c->Nk;
    a.out = malloc((size_t)no * sizeof(float) + 4);
    a.weights = c->weights ? malloc((size_t)nw * sizeof(float)) : NULL;
    double *ro = malloc((size_t)no * sizeof(double) + 8), *rw = c->weights ? malloc((size_t)nw * sizeof(double)) : NULL;
    int64_t want = sdpa_ref64(&a, ro, rw);
    int64_t got = use_ref ? tk_sdpa_ref(&a) : tk_sdpa(&a);
    char d[160];
    snprintf(d, sizeof d, "sdpa%s %s%s B=%lld Hq=%lld Hkv=%lld Nq=%lld Nk=%lld Dh=%lld Dv=%lld causal=%d mask=%d layout=%d",
             use_ref ? "_ref" : "", path_now, POISON[poison], (long long)c->B, (long long)c->Hq, (long long)c->Hkv,
             (long long)c->Nq, (long long)c->Nk, (long long)c->Dh, (long long)c->Dv, c->causal, c->mask, c->layout);
    check_close(d, a.out, ro, no, 1e-5, 2e-6);
    if (c->weights) check_close(d, a.weights, rw, nw, 1e-5, 1e-7);
    if (got != want) printf("  %s: %lld empty rows, want %lld\n", d, (long long)got, (long long)want);
    CHECK("sdpa counts the rows with no visible key", got == want);

    if (!use_ref && !c->weights && poison == P_NONE) {
        /* asking for the weights takes the tiled kernel: a path's small-shape
           kernel (kn->sdpa_head) must give its bits */
        float *o1 = malloc((size_t)no * sizeof(float) + 4);
        memcpy(o1, a.out, (size_t)no * sizeof(float));
        a.weights = malloc((size_t)nw * sizeof(float) + 4);
        tk_sdpa(&a);
        free(a.weights);
        a.weights = NULL;
        CHECK("sdpa: the small-shape path gives the tiled kernel's bits",
              memcmp(o1, a.out, (size_t)no * sizeof(float)) == 0);
        free(o1);
    }
    if (!use_ref) {   /* 1 vs N threads */
        float *o1 = malloc((size_t)no * sizeof(float) + 4);
        memcpy(o1, a.out, (size_t)no * sizeof(float));
        tt_set_num_threads(1);
        tk_sdpa(&a);
        tt_set_num_threads(threads_max);
        CHECK("sdpa: 1 vs N threads bit-identical", memcmp(o1, a.out, (size_t)no * sizeof(float)) == 0);
        free(o1);
    }
    free(q); free(k); free(v); free(mask); free(a.out); free(a.weights); free(ro); free(rw);
}

/* The path's sdpa exp-sum (scores less their max: x <= m) against exp in
   double: 2e-7 relative, results under FLT_MIN within FLT_MIN (it may
   flush them), a hidden key (-inf) exactly 0, NaN kept, the sum of the
   values it wrote; odd lengths for the tails. */
static void test_sdpa_exp_sum(void)
{
    const tk_kern *kn = tk_kern_now();
    if (!kn->sdpa_exp_sum) return;
    size_t cap = 1u << 20, n = 0;
    float *x = malloc((cap + 64) * sizeof(float)), *y = malloc((cap + 64) * sizeof(float));
    for (uint32_t u = 0x80000000u; u < 0xC2DC0000u && n < cap; u += 1021) x[n++] = from_bits(u); /* (-110, -0] */
    static const float special[] = { -87.3365f, -87.34f, -87.68f, -87.7f, -88.0f, -88.1f, -100.0f,
                                     -103.98f, -150.0f, -FLT_MAX, -INFINITY, -1e-30f, 0.0f, -0.0f };
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) x[n++] = special[i];
    int bad = 0;
    for (int64_t len = 1; len <= 41; len += 8) {      /* tails: 1, 9, 17, 25, 33, 41 */
        for (size_t i0 = 0; i0 + (size_t)len <= n; i0 += (size_t)len) {
            float m = 2.5f, xs[41];
            for (int64_t j = 0; j < len; j++) xs[j] = x[i0 + (size_t)j] + m;   /* x - m = x */
            float s = kn->sdpa_exp_sum(len, xs, m, y);
            double want = 0.0;
            for (int64_t j = 0; j < len; j++) {
                double r = exp((double)xs[j] - (double)m), v = y[j];
                int ok = r >= (double)FLT_MIN ? fabs(v - r) <= 2e-7 * r + 1e-45
                                              : fabs(v - r) <= (double)FLT_MIN && v >= 0.0;
                if (isinf(xs[j])) ok = v == 0.0;
                if (!ok && bad++ < 5)
                    printf("  sdpa_exp_sum %s: exp(%.9g) got %.9g want %.9g\n", path_now,
                           (double)xs[j] - (double)m, v, r);
                want += v;
            }
            if (fabs((double)s - want) > 1e-6 * want + 1e-30 && bad++ < 5)
                printf("  sdpa_exp_sum %s: sum %.9g want %.9g\n", path_now, (double)s, want);
        }
    }
    CHECK("sdpa_exp_sum: exp within 2e-7, tiny results within FLT_MIN, exp(-inf) = 0, the sum", bad == 0);
    float nx[9] = { 0.0f, -1.0f, NAN, -2.0f, -INFINITY, -3.0f, -4.0f, -5.0f, -6.0f }, ny[9];
    float ns = kn->sdpa_exp_sum(9, nx, 0.0f, ny);
    CHECK("sdpa_exp_sum: NaN stays NaN and makes the sum NaN", isnan(ny[2]) && isnan(ns) && ny[4] == 0.0f);
    free(x); free(y);
}

static void test_sdpa(int use_ref)
{
    static const sdpa_case cs[] = {
        /* B Hq Hkv Nq  Nk   Dh  Dv causal mask w layout scale */
        { 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0 },
        { 1, 1, 1, 3, 3, 2, 2, 1, 0, 1, 0, 0 },                 /* the hand example's size */
        { 2, 2, 2, 17, 17, 16, 16, 1, 0, 0, 0, 0 },
        { 1, 2, 2, 65, 129, 33, 33, 1, 0, 1, 0, 0 },            /* Nq < Nk: lower right */
        { 1, 2, 2, 129, 65, 31, 31, 1, 0, 1, 0, 0 },            /* Nq > Nk: first rows empty */
        { 1, 4, 2, 257, 257, 64, 64, 1, 0, 0, 0, 0 },           /* GQA, N not a tile multiple */
        { 2, 4, 1, 63, 300, 15, 17, 0, 0, 1, 1, 0.3f },         /* MQA, Dv != Dh, strided */
        { 2, 3, 3, 33, 65, 8, 8, 0, 1, 1, 0, 0 },               /* mask [Nq,Nk] broadcast */
        { 2, 2, 1, 31, 31, 8, 12, 1, 2, 1, 1, 0 },              /* mask per batch + causal */
        { 3, 2, 2, 5, 257, 8, 8, 0, 3, 1, 0, 0 },               /* key padding mask */
        { 1, 2, 2, 40, 300, 8, 8, 1, 4, 1, 0, 0 },              /* mask transposed view */
        { 1, 8, 2, 130, 130, 64, 64, 1, 0, 0, 1, 0 },
        { 1, 1, 1, 1, 1000, 64, 64, 1, 0, 1, 0, 0 },            /* decoding: one query */
        { 1, 1, 1, 100, 1100, 16, 24, 1, 0, 0, 0, 0 },          /* several key blocks */
        { 1, 2, 1, 70, 1100, 16, 16, 0, 3, 1, 0, 0 },           /* the same, padding mask */
        { 1, 2, 2, 3, 5, 0, 4, 0, 0, 1, 0, 1.0f },              /* Dh = 0: uniform weights */
        /* causal: each sliver's own key count on the diagonal block, with
           a mask, a partial last sliver, a partial value tile, the diagonal
           crossing a key block inside a query block, empty first rows */
        { 2, 2, 1, 77, 600, 24, 40, 1, 2, 1, 0, 0 },
        { 1, 2, 2, 600, 530, 16, 20, 1, 0, 0, 1, 0 },
        { 1, 1, 1, 523, 517, 8, 8, 1, 4, 1, 0, 0 },
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) sdpa_run(&cs[i], use_ref, P_NONE);

    /* NaN and inf propagate as in the formula; only rows whose keys are all
       hidden (causal, mask; row 1 of masks 1, 2 and 4 is) give zeros and
       count as empty. Several key blocks, GQA, both layouts. */
    static const sdpa_case nf[] = {
        { 1, 2, 1, 9, 9, 8, 8, 1, 0, 1, 0, 0 },
        { 2, 2, 2, 5, 7, 4, 4, 0, 1, 1, 1, 0 },
        { 1, 2, 2, 6, 600, 8, 8, 1, 2, 1, 0, 0 },
        { 2, 2, 1, 3, 530, 8, 8, 0, 3, 1, 1, 0 },
        { 1, 1, 1, 700, 700, 8, 8, 1, 0, 0, 0, 0 },
    };
    for (size_t i = 0; i < sizeof nf / sizeof nf[0]; i++)
        for (int p = P_Q_NAN; p < P_COUNT; p++) sdpa_run(&nf[i], use_ref, p);
}

/* Small shapes (N <= 64, Dh, Dv <= 16, no weights: a path's kn->sdpa_head)
   on every path, against float64, bit-identical to the tiled kernel (see
   sdpa_run); with non-finite inputs the tiled kernel takes the odd heads.
   Run last: the inputs drawn before stay as they were. */
static void test_sdpa_small(void)
{
    static const sdpa_case cs[] = {
        /* B Hq Hkv Nq  Nk   Dh  Dv causal mask w layout scale */
        { 2, 4, 2, 64, 64, 16, 16, 1, 0, 0, 1, 0 },             /* the lesson model's, GQA */
        { 1, 2, 2, 37, 64, 16, 16, 1, 0, 0, 0, 0 },             /* causal Nq < Nk */
        { 1, 2, 2, 64, 37, 16, 16, 1, 0, 0, 1, 0 },             /* causal Nq > Nk: empty rows */
        { 2, 3, 1, 33, 50, 13, 9, 0, 1, 0, 1, 0 },              /* MQA, K d-outer, masked row */
        { 1, 2, 2, 64, 64, 16, 16, 1, 2, 0, 0, 0 },             /* mask + causal */
        { 1, 1, 1, 5, 64, 16, 7, 0, 4, 0, 0, 0 },               /* mask transposed view */
        { 3, 1, 1, 64, 64, 1, 16, 1, 3, 0, 1, 0.5f },           /* Dh 1, key padding */
        { 1, 1, 1, 1, 1, 16, 16, 0, 0, 0, 0, 0 },
        { 1, 2, 2, 65, 65, 16, 16, 1, 0, 0, 0, 0 },             /* just too big: tiled */
    };
    static const sdpa_case nf[] = {
        { 1, 2, 1, 64, 64, 16, 16, 1, 0, 0, 1, 0 },
        { 2, 2, 2, 9, 30, 16, 5, 0, 1, 0, 0, 0 },
    };
    static const char *paths[] = { "avx512", "avx2", "scalar" };
    for (int p = 0; p < 3; p++) {
        if (!tk_simd_force(paths[p])) continue;
        path_now = paths[p];
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) sdpa_run(&cs[i], 0, P_NONE);
        for (size_t i = 0; i < sizeof nf / sizeof nf[0]; i++)
            for (int q = P_Q_NAN; q < P_COUNT; q++) sdpa_run(&nf[i], 0, q);
    }
    tk_simd_force(NULL);
}

/* tk_transpose at awkward sizes and leading dims, against the index
   formula; the cells of b outside the block must stay untouched. */
static void test_transpose(void)
{
    static const int64_t dims[][2] = { { 1, 1 }, { 7, 5 }, { 8, 8 }, { 9, 17 }, { 16, 16 }, { 17, 33 },
                                       { 128, 32 }, { 33, 15 }, { 40, 64 }, { 3, 100 } };
    int bad = 0;
    for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++) {
        int64_t rows = dims[t][0], cols = dims[t][1], lda = cols + 3, ldb = rows + 5;
        float *a = frand((size_t)(rows * lda)), *b = malloc((size_t)(cols * ldb) * sizeof(float));
        for (int64_t i = 0; i < cols * ldb; i++) b[i] = -7.0f;
        tk_transpose(rows, cols, a, lda, b, ldb);
        for (int64_t j = 0; j < cols; j++)
            for (int64_t i = 0; i < ldb; i++) {
                float want = i < rows ? a[i * lda + j] : -7.0f;
                if (bits_of(b[j * ldb + i]) != bits_of(want) && bad++ < 5)
                    printf("  transpose %s %lldx%lld: b[%lld][%lld] = %g, want %g\n", path_now,
                           (long long)rows, (long long)cols, (long long)j, (long long)i,
                           (double)b[j * ldb + i], (double)want);
            }
        free(a); free(b);
    }
    char d[120];
    snprintf(d, sizeof d, "transpose %s: every size and leading dim, nothing outside the block", path_now);
    CHECK(d, bad == 0);
}

/* ===== Threads ===== */

static atomic_llong hits[1000];
static atomic_int nested_bad;

static void mark(void *ctx, int64_t b, int64_t e)
{
    (void)ctx;
    for (int64_t i = b; i < e; i++) hits[i]++;
}

static void whole(void *ctx, int64_t b, int64_t e)
{
    (void)ctx;
    if (b != 0 || e != 3) nested_bad++;     /* nested: one serial range */
    for (int64_t i = b; i < e; i++) hits[i]++;
}

static void nest(void *ctx, int64_t b, int64_t e)
{
    (void)ctx;
    for (int64_t i = b; i < e; i++) tk_parallel_for(3, 1, whole, NULL);
}

static void hits_clear(void)
{
    for (int i = 0; i < 1000; i++) hits[i] = 0;
}

static void test_threads(void)
{
    for (int th = 1; th <= 4; th++) {
        tt_set_num_threads(th);
        CHECK("tt_get_num_threads follows tt_set_num_threads", tt_get_num_threads() == th);
        for (int64_t n = 1; n <= 1000; n = n * 3 + 1) {
            hits_clear();
            tk_parallel_for(n, 1, mark, NULL);
            int ok = 1;
            for (int64_t i = 0; i < 1000; i++) ok &= hits[i] == (i < n);
            CHECK("parallel_for covers [0,n) exactly once", ok);
        }
    }
    hits_clear();
    tt_set_num_threads(2);
    tk_parallel_for(10, 1, nest, NULL);
    CHECK("nested parallel_for runs every range", hits[0] == 10 && hits[1] == 10 && hits[2] == 10 && nested_bad == 0);
    tt_set_num_threads(0);
    CHECK("tt_set_num_threads(0) means all cores", tt_get_num_threads() >= 1);
    tt_set_num_threads(threads_max);
}

/* Per-thread scratch: kept and grown between calls; tk_scratch_trim frees
   only a buffer above its keep (the sdpa backward's D and dQ lanes) */
static void test_scratch(void)
{
    const int slot = TK_SCRATCH_SDPA_LANES;
    tk_scratch_trim(slot, 0);
    unsigned char *p = tk_scratch(slot, 100000);
    CHECK("tk_scratch gives a 64-byte aligned buffer", p && (uintptr_t)p % 64 == 0);
    memset(p, 7, 100000);
    CHECK("a smaller request keeps the buffer and its bytes", tk_scratch(slot, 1000) == p && p[99999] == 7);
    tk_scratch_trim(slot, 1 << 20);
    CHECK("trim below its keep: kept", tk_scratch(slot, 100000) == p && p[0] == 7);
    unsigned char *q = tk_scratch(slot, 300000);
    CHECK("a bigger request grows it", q && (uintptr_t)q % 64 == 0);
    memset(q, 1, 300000);
    tk_scratch_trim(slot, 200000);
    q = tk_scratch(slot, 16);
    CHECK("trimmed above its keep: the next call gets a small fresh buffer",
          q && (uintptr_t)q % 64 == 0 && malloc_usable_size(q) < 200000);
    memset(q, 2, 16);
    tk_scratch_trim(slot, 0);
}

int main(void)
{
    /* before anything reads the thread count: the variable must be honoured */
    setenv("TT_NUM_THREADS", "3", 1);
    CHECK("TT_NUM_THREADS is honoured at first use", tt_get_num_threads() == 3);
    test_threads();
    test_scratch();

    /* avx512_bf16 runs avx512's float32 kernels (test_half.c tests its bfloat16 ones) */
#ifdef TK_X86_SIMD
    if (tk_simd_force("avx512_bf16")) {
        CHECK("tk_simd_path reports avx512_bf16 forced", strcmp(tk_simd_path(), "avx512_bf16") == 0);
        CHECK("avx512_bf16 has avx512's float32 micro-kernel", tk_kern_now()->ukernel == tk_kern_avx512.ukernel);
    }
#else
    CHECK("a build without SIMD cannot force avx512_bf16", !tk_simd_force("avx512_bf16"));
#endif
    static const char *paths[] = { "avx512", "avx2", "scalar" };
    int ran = 0;
    for (int p = 0; p < 3; p++) {
        if (!tk_simd_force(paths[p])) {
            printf("skip: path %s cannot run on this CPU/build\n", paths[p]);
            continue;
        }
        path_now = paths[p];
        CHECK("tk_simd_path reports the forced path", strcmp(tk_simd_path(), paths[p]) == 0);
        CHECK("tt_kernel_path (tt.kernel_path) reports it too", strcmp(tt_kernel_path(), paths[p]) == 0);
        printf("path %s\n", paths[p]);
        test_gemm();
        test_gemm_pack();
        test_gemm_threads();
        test_exp();
        test_ew_binary();
        test_ew_unary();
        test_ew_trig();
        test_fast_and_careful();
        test_ew_activations();
        test_ew_masked_fill();
        test_softmax();
        test_softmax_threads();
        test_softmax_pinned();
        test_log_softmax();
        test_sdpa_exp_sum();
        test_sdpa(0);
        test_transpose();
        ran++;
    }
    CHECK("the scalar path always runs", ran >= 1);
    test_log_paths_agree();
    test_reduce_paths();
    {   /* the references as such */
        float x[3] = { 1.0f, NAN, 4.0f }, y[3] = { 2.0f, 1.0f, NAN }, o[3];
        uint8_t b[3], m[3] = { 0, 1, 0 };
        tk_ew_binary_ref(TK_EW_MAX, 3, x, 1, y, 1, o);
        CHECK("ew_binary_ref max", o[0] == 2.0f && isnan(o[1]) && isnan(o[2]));
        tk_ew_compare_ref(TK_EW_NE, 3, x, 1, y, 0, b);
        CHECK("ew_compare_ref ne with a scalar", b[0] == 1 && b[1] == 1 && b[2] == 1);
        tk_ew_unary_ref(TK_EW_LOG, 3, x, o);
        CHECK("ew_unary_ref log", o[0] == 0.0f && isnan(o[1]) && fabsf(o[2] - 1.3862944f) < 1e-7f);
        tk_ew_masked_fill_ref(3, x, 1, m, 1, -1.0f, o);
        CHECK("ew_masked_fill_ref", o[0] == 1.0f && o[1] == -1.0f && o[2] == 4.0f);
    }
    tk_simd_force(NULL);
    path_now = "ref";
    test_sdpa(1);
    {   /* the GEMM reference on one layout mix */
        float a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 1, 0, -1, 2, 0.5f, 3 }, c[4];
        int64_t z = 0;
        tk_gemm_batch_ref(1, 2, 2, 3, a, &z, 3, 1, b, &z, 1, 3, c, &z, 2, 1);
        /* A [[1,2,3],[4,5,6]], B^T stored: B = [[1,2],[0,0.5],[-1,3]] */
        CHECK("gemm_ref", c[0] == -2.0f && c[1] == 12.0f && c[2] == -2.0f && c[3] == 28.5f);
    }
    test_sdpa_small();
    return check_report();
}
