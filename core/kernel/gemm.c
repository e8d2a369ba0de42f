/*
** gemm.c — the packed cache-blocked GEMM driver shared by all paths: the
** portable packers, the blocked loops and the thread split.
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels.h"

/* ===== GEMM =====
   BLIS loop order: jc (nc columns of C) > pc (kc of the inner size: B panel
   packed) > ic (mc rows: A block packed) > jr (nr) > ir (mr) micro-kernel.
   Each C element is one register lane summed over p in order, then added
   once per pc block, so the bits never depend on how the tiles are shared
   out among threads. Letters: M rows of A/C, N columns of B/C, K inner. */

/* A (mc x kc, strides rs/cs) into mr-row slivers, k-major, zero padded. */
static void pack_a_c(int mr, int64_t mc, int64_t kc, const float *a, int64_t rs, int64_t cs,
                     float *dst)
{
    for (int64_t i0 = 0; i0 < mc; i0 += mr, dst += mr * kc) {
        int m = mc - i0 < mr ? (int)(mc - i0) : mr;
        const float *s = a + i0 * rs;
        if (rs == 1 && m == mr) {            /* columns contiguous: copy runs */
            for (int64_t p = 0; p < kc; p++)
                memcpy(dst + p * mr, s + p * cs, (size_t)mr * sizeof(float));
            continue;
        }
        for (int i = 0; i < m; i++)
            for (int64_t p = 0; p < kc; p++) dst[p * mr + i] = s[i * rs + p * cs];
        for (int i = m; i < mr; i++)
            for (int64_t p = 0; p < kc; p++) dst[p * mr + i] = 0.0f;
    }
}

/* B (kc x nc, strides rs/cs) into nr-column slivers, k-major, zero padded. */
static void pack_b_c(int nr, int64_t kc, int64_t nc, const float *b, int64_t rs, int64_t cs,
                     float *dst)
{
    for (int64_t j0 = 0; j0 < nc; j0 += nr, dst += nr * kc) {
        int n = nc - j0 < nr ? (int)(nc - j0) : nr;
        const float *s = b + j0 * cs;
        if (cs == 1) {                        /* rows contiguous: copy runs */
            for (int64_t p = 0; p < kc; p++) {
                memcpy(dst + p * nr, s + p * rs, (size_t)n * sizeof(float));
                for (int j = n; j < nr; j++) dst[p * nr + j] = 0.0f;
            }
            continue;
        }
        for (int j = 0; j < n; j++)
            for (int64_t p = 0; p < kc; p++) dst[p * nr + j] = s[p * rs + j * cs];
        for (int j = n; j < nr; j++)
            for (int64_t p = 0; p < kc; p++) dst[p * nr + j] = 0.0f;
    }
}

void tk_pack_a(const tk_kern *kn, int64_t mc, int64_t kc, const float *a, int64_t rs, int64_t cs,
               float *dst)
{
    if (!kn->pack_a || !kn->pack_a(mc, kc, a, rs, cs, dst)) pack_a_c(kn->mr, mc, kc, a, rs, cs, dst);
}

void tk_pack_b(const tk_kern *kn, int64_t kc, int64_t nc, const float *b, int64_t rs, int64_t cs,
               float *dst)
{
    if (!kn->pack_b || !kn->pack_b(kc, nc, b, rs, cs, dst)) pack_b_c(kn->nr, kc, nc, b, rs, cs, dst);
}

/* ===== 16-bit operands =====
   A 16-bit A or B is converted to float32 on its way into the packed
   slivers, so the micro-kernels never see it and the packed floats are
   those of a float32 copy: the same bits as the float32 GEMM. Runs along
   the packed layout convert straight into it; runs across it (rows of a
   row-major A, columns of a transposed B) convert into `tmp` (mr or nr
   rows of kc) and go through the path's float32 packer, which transposes. */
static size_t elt_size(int t) { return t == TK_F32 ? sizeof(float) : sizeof(uint16_t); }

static const void *elt_at(int t, const void *p, int64_t off)
{
    return (const char *)p + off * (int64_t)elt_size(t);
}

static float elt_load(int t, const void *p, int64_t i)
{
    if (t == TK_F32) return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return t == TK_BF16 ? tk_bf16_to_f32(h) : tk_f16_to_f32(h);
}

static void pack_a_typed(const tk_kern *kn, int t, int64_t mc, int64_t kc, const void *a, int64_t rs,
                         int64_t cs, float *dst, float *tmp)
{
    if (t == TK_F32) { tk_pack_a(kn, mc, kc, a, rs, cs, dst); return; }
    int mr = kn->mr, bf16 = t == TK_BF16;
    const uint16_t *h = a;
    for (int64_t i0 = 0; i0 < mc; i0 += mr, dst += mr * kc) {
        int m = mc - i0 < mr ? (int)(mc - i0) : mr;
        if (cs == 1) {                  /* rows along k: mr rows through tmp */
            for (int i = 0; i < m; i++) kn->half_to_f32(bf16, kc, h + (i0 + i) * rs, tmp + i * kc);
            tk_pack_a(kn, m, kc, tmp, kc, 1, dst);
        } else if (rs == 1) {           /* columns along m: each step's run into the sliver */
            for (int64_t p = 0; p < kc; p++) {
                kn->half_to_f32(bf16, m, h + i0 + p * cs, dst + p * mr);
                for (int i = m; i < mr; i++) dst[p * mr + i] = 0.0f;
            }
        } else {
            for (int64_t p = 0; p < kc; p++)
                for (int i = 0; i < mr; i++) dst[p * mr + i] = i < m ? elt_load(t, h, (i0 + i) * rs + p * cs) : 0.0f;
        }
    }
}

static void pack_b_typed(const tk_kern *kn, int t, int64_t kc, int64_t nc, const void *b, int64_t rs,
                         int64_t cs, float *dst, float *tmp)
{
    if (t == TK_F32) { tk_pack_b(kn, kc, nc, b, rs, cs, dst); return; }
    int nr = kn->nr, bf16 = t == TK_BF16;
    const uint16_t *h = b;
    for (int64_t j0 = 0; j0 < nc; j0 += nr, dst += nr * kc) {
        int n = nc - j0 < nr ? (int)(nc - j0) : nr;
        if (cs == 1) {                  /* rows along n: each step's run into the sliver */
            for (int64_t p = 0; p < kc; p++) {
                kn->half_to_f32(bf16, n, h + p * rs + j0, dst + p * nr);
                for (int j = n; j < nr; j++) dst[p * nr + j] = 0.0f;
            }
        } else if (rs == 1) {           /* columns along k (a transposed B): nr columns through tmp */
            for (int j = 0; j < n; j++) kn->half_to_f32(bf16, kc, h + (j0 + j) * cs, tmp + j * kc);
            tk_pack_b(kn, kc, n, tmp, 1, kc, dst);
        } else {
            for (int64_t p = 0; p < kc; p++)
                for (int j = 0; j < nr; j++) dst[p * nr + j] = j < n ? elt_load(t, h, p * rs + (j0 + j) * cs) : 0.0f;
        }
    }
}

/* bfloat16 A and B as pair slivers for ukernel_bf16 (kernels.h): the
   path's packers where they handle the strides, else element by element. */
void tk_pack_a_pairs(const tk_kern *kn, int64_t mc, int64_t kc, const uint16_t *a, int64_t rs,
                     int64_t cs, uint16_t *dst)
{
    if (kn->pack_a_bf16(mc, kc, a, rs, cs, dst)) return;
    int mr = kn->mr;
    int64_t kp = (kc + 1) / 2;
    for (int64_t i0 = 0; i0 < mc; i0 += mr, dst += 2 * mr * kp)
        for (int64_t p = 0; p < 2 * kp; p++)
            for (int i = 0; i < mr; i++)
                dst[(p / 2 * mr + i) * 2 + p % 2] = i0 + i < mc && p < kc ? a[(i0 + i) * rs + p * cs] : 0;
}

void tk_pack_b_pairs(const tk_kern *kn, int64_t kc, int64_t nc, const uint16_t *b, int64_t rs,
                     int64_t cs, uint16_t *dst)
{
    if (kn->pack_b_bf16(kc, nc, b, rs, cs, dst)) return;
    int nr = kn->nr;
    int64_t kp = (kc + 1) / 2;
    for (int64_t j0 = 0; j0 < nc; j0 += nr, dst += 2 * nr * kp)
        for (int64_t p = 0; p < 2 * kp; p++)
            for (int j = 0; j < nr; j++)
                dst[(p / 2 * nr + j) * 2 + p % 2] = j0 + j < nc && p < kc ? b[p * rs + (j0 + j) * cs] : 0;
}

/* Data cache sizes in bytes, read once (0 where the system does not say). */
static long cache_l1, cache_l2;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_read(void)
{
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    cache_l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    cache_l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    if (cache_l1 < 0) cache_l1 = 0;
    if (cache_l2 < 0) cache_l2 = 0;
}

/* The path's kc and mc are upper bounds, measured on the machines it was
   tuned on; a path that asks for it (blocks_from_caches) fits them to this
   machine's caches: kc the largest power of two whose A and B slivers take
   at most 3/4 of L1 (they are read on every step of the micro-kernel), mc
   so that the packed A block takes at most 1/4 of L2 (it is read once per
   column sliver; B's panel and C pass through L2 beside it). Fixed per
   machine, so no result depends on the thread count. */
static void cache_blocks(const tk_kern *kn, int64_t *kc, int64_t *mc)
{
    *kc = kn->kc;
    *mc = kn->mc;
    if (!kn->blocks_from_caches) return;
    pthread_once(&cache_once, cache_read);
    if (cache_l1 > 0) {
        int64_t fit = cache_l1 * 3 / 4 / ((int64_t)(kn->mr + kn->nr) * (int64_t)sizeof(float)), k = 64;
        while (2 * k <= fit && 2 * k <= kn->kc) k *= 2;
        *kc = k;
    }
    if (cache_l2 > 0) {
        int64_t rows = cache_l2 / 4 / (*kc * (int64_t)sizeof(float)) / kn->mr * kn->mr;
        if (rows < *mc) *mc = rows < kn->mr ? kn->mr : rows;
    }
}

typedef struct gemm_job {
    const tk_kern *kn;
    int64_t M, N, K;
    int ta; const void *a; const int64_t *aoff; int64_t rsa, csa;
    int tb; const void *b; const int64_t *boff; int64_t rsb, csb;
    float *c; const int64_t *coff; int64_t rsc, csc;
    uint16_t *c16; int bf16c;     /* instead of c: C rounded to bfloat16 (bf16c) or float16 bits (K <= kc) */
    int pairs;                    /* bfloat16 A and B through ukernel_bf16 */
    int64_t kc, mc;               /* inner and row blocks (cache_blocks; kc doubled for pairs) */
    int64_t nc, njc;              /* column blocks */
    int64_t slivers, parts;       /* mr-row slivers of C, cut into `parts` row ranges */
    int failed;                   /* units: batch x njc x parts */
} gemm_job;

/* First row of part k: parts differ by at most one sliver. */
static int64_t part_row(const gemm_job *g, int64_t k)
{
    int64_t r = g->slivers * k / g->parts * g->kn->mr;
    return r < g->M ? r : g->M;
}

/* The next sliver's A rows (bytes each) into L2 while this one computes:
   read in place, its rows are short runs far apart (a row of P per head),
   which the hardware prefetchers pick up late. */
static void prefetch_rows(const char *a, int64_t rs, int64_t rows, int64_t bytes)
{
#if defined(__GNUC__)
    for (int64_t i = 0; i < rows; i++)
        for (int64_t p = 0; p < bytes; p += 64) __builtin_prefetch(a + i * rs + p, 0, 2);
#else
    (void)a; (void)rs; (void)rows; (void)bytes;
#endif
}

static void put_tile(const gemm_job *g, int64_t ct, float *tmp, int m, int n, int acc, int round);

/* Whether the kc block at p0 is the last, whose tiles are rounded into
   the 16-bit C (c holding the earlier blocks' sums when there were any). */
static int rounds_at(const gemm_job *g, int64_t p0, int64_t kc)
{
    return g->c16 && p0 + kc >= g->K;
}

/* C rows [r0, r1) (+)= A rows times the packed B panel (kc x ncur), A read
   in place with unit column stride: float32, bfloat16 pairs (kc even), or
   16-bit rows converted a sliver at a time into `half` (a plain copy, not
   the packer's transpose). C is the element of c (or c16) at row 0 of the
   panel's first column; the last block of a 16-bit C goes through tmp.
   Each A sliver serves all column slivers while it is in L1. A last
   partial sliver goes through a packed copy. */
static void gemm_rows(const gemm_job *g, const void *A, int64_t C, int64_t r0, int64_t r1,
                      int64_t kc, int64_t ncur, int acc, int round, const void *bp, void *ap, float *half,
                      float *tmp)
{
    const tk_kern *kn = g->kn;
    int mr = kn->mr, nr = kn->nr, convert = !g->pairs && g->ta != TK_F32;
    int64_t esz = (int64_t)elt_size(g->ta), kp = kc / 2;
    for (int64_t i0 = r0; i0 < r1; i0 += mr) {
        int m = r1 - i0 < mr ? (int)(r1 - i0) : mr;
        const char *as = (const char *)A + i0 * g->rsa * esz;
        const float *rows = (const float *)(const void *)as;
        int64_t rs = g->rsa;
        if (convert) {
            for (int i = 0; i < m; i++)
                kn->half_to_f32(g->ta == TK_BF16, kc, (const uint16_t *)(const void *)as + i * g->rsa, half + i * kc);
            rows = half, rs = kc;
        }
        if (m < mr && g->pairs) tk_pack_a_pairs(kn, m, kc, (const uint16_t *)(const void *)as, g->rsa, 1, ap);
        else if (m < mr) tk_pack_a(kn, m, kc, rows, rs, 1, ap);
        prefetch_rows(as + mr * g->rsa * esz, g->rsa * esz, r1 - i0 - mr < mr ? r1 - i0 - mr : mr, kc * esz);
        for (int64_t jr = 0; jr < ncur; jr += nr) {
            int n = ncur - jr < nr ? (int)(ncur - jr) : nr;
            int64_t at = C + i0 * g->rsc + jr;
            float *ct = round ? tmp : g->c + at;
            int64_t rsc = round ? nr : g->rsc;
            int add = acc && !round;
            if (g->pairs) {
                const uint16_t *bs = (const uint16_t *)bp + 2 * jr * kp;
                if (m == mr) kn->ukernel_rows_bf16(kp, (const uint16_t *)(const void *)as, g->rsa, bs, ct, rsc, n, add);
                else kn->ukernel_bf16(kp, ap, bs, ct, rsc, m, n, add, 1.0f);
            } else {
                const float *bs = (const float *)bp + jr * kc;
                if (m == mr) kn->ukernel_rows(kc, rows, rs, bs, ct, rsc, n, add);
                else kn->ukernel(kc, ap, bs, ct, rsc, m, n, add);
            }
            if (round) put_tile(g, at, tmp, m, n, acc, 1);
        }
    }
}

/* A tile computed into tmp (row stride nr) added to or stored in C at
   element ct (a strided C), or (round) rounded into the 16-bit C, after
   the earlier kc blocks' sums in c are added (acc): the same float32 adds
   as acc into c, so the same bits as rounding that C afterwards. */
static void put_tile(const gemm_job *g, int64_t ct, float *tmp, int m, int n, int acc, int round)
{
    int nr = g->kn->nr;
    for (int i = 0; round && acc && i < m; i++) {   /* (an axpy by 1: exact products, the same sums) */
        if (g->csc == 1) g->kn->axpy(n, 1.0f, g->c + ct + i * g->rsc, tmp + i * nr);
        else for (int j = 0; j < n; j++) tmp[i * nr + j] = g->c[ct + i * g->rsc + j * g->csc] + tmp[i * nr + j];
    }
    if (round && g->csc == 1 && g->kn->half_tile) {
        g->kn->half_tile(g->bf16c, tmp, m, n, g->c16 + ct, g->rsc);
        return;
    }
    for (int i = 0; i < m; i++) {
        if (round && g->csc == 1) {
            g->kn->half_from_f32(g->bf16c, n, tmp + i * nr, g->c16 + ct + i * g->rsc);
            continue;
        }
        for (int j = 0; j < n; j++) {
            int64_t e = ct + i * g->rsc + j * g->csc;
            float v = tmp[i * nr + j];
            if (round) g->c16[e] = g->bf16c ? tk_bf16_from_f32(v) : tk_f16_from_f32(v);
            else g->c[e] = acc ? g->c[e] + v : v;
        }
    }
}

/* gemm_block for bfloat16 pairs: the same loops over pair slivers. */
static void gemm_block_pairs(gemm_job *g, const uint16_t *A, const uint16_t *B, int64_t C, int64_t j0,
                             int64_t ncur, int64_t r0, int64_t r1, int64_t mc, uint16_t *ap, uint16_t *bp,
                             float *tmp)
{
    const tk_kern *kn = g->kn;
    int mr = kn->mr, nr = kn->nr;
    /* as gemm_block reads a float32 A in place for a narrow B; an odd last
       kc block is packed (the pad of its last pair would read past the row) */
    int in_place = kn->ukernel_rows_bf16 && g->csa == 1 && g->csc == 1 && ncur <= 4 * nr;
    for (int64_t p0 = 0; p0 < g->K; p0 += g->kc) {
        int64_t kc = g->K - p0 < g->kc ? g->K - p0 : g->kc, kp = (kc + 1) / 2;
        int acc = p0 > 0, round = rounds_at(g, p0, kc);
        tk_pack_b_pairs(kn, kc, ncur, B + p0 * g->rsb + j0 * g->csb, g->rsb, g->csb, bp);
        if (in_place && kc % 2 == 0) {
            gemm_rows(g, A + p0, C + j0, r0, r1, kc, ncur, acc, round, bp, ap, NULL, tmp);
            continue;
        }
        for (int64_t i0 = r0; i0 < r1; i0 += mc) {
            int64_t mcur = r1 - i0 < mc ? r1 - i0 : mc;
            tk_pack_a_pairs(kn, mcur, kc, A + i0 * g->rsa + p0 * g->csa, g->rsa, g->csa, ap);
            for (int64_t jr = 0; jr < ncur; jr += nr) {
                int n = ncur - jr < nr ? (int)(ncur - jr) : nr;
                for (int64_t ir = 0; ir < mcur; ir += mr) {
                    int m = mcur - ir < mr ? (int)(mcur - ir) : mr;
                    int64_t ct = C + (i0 + ir) * g->rsc + (j0 + jr) * g->csc;
                    const uint16_t *as = ap + 2 * ir * kp, *bs = bp + 2 * jr * kp;
                    if (g->csc == 1 && !round) {
                        kn->ukernel_bf16(kp, as, bs, g->c + ct, g->rsc, m, n, acc, 1.0f);
                        continue;
                    }
                    if (g->csc == 1 && !acc && g->bf16c && kn->ukernel_bf16_round) {   /* QK^T: K in one block */
                        kn->ukernel_bf16_round(kp, as, bs, g->c16 + ct, g->rsc, m, n);
                        continue;
                    }
                    kn->ukernel_bf16(kp, as, bs, tmp, nr, m, n, 0, 1.0f);
                    put_tile(g, ct, tmp, m, n, acc, round);
                }
            }
        }
    }
}

/* Rows [r0, r1) of C, column block jc, batch t: the B panel is packed once
   per pc block, then the rows go by in mc blocks of equal size. */
static void gemm_block(gemm_job *g, int64_t t, int64_t jc, int64_t r0, int64_t r1,
                       float *ap, float *bp, float *tmp, float *half)
{
    const tk_kern *kn = g->kn;
    int mr = kn->mr, nr = kn->nr;
    const void *A = elt_at(g->ta, g->a, g->aoff[t]), *B = elt_at(g->tb, g->b, g->boff[t]);
    int64_t C = g->coff[t];   /* C's first element (of c or c16) */
    int64_t j0 = jc * g->nc, ncur = g->N - j0 < g->nc ? g->N - j0 : g->nc;
    int64_t sl = (r1 - r0 + mr - 1) / mr, nblk = (sl * mr + g->mc - 1) / g->mc;
    int64_t mc = (sl + nblk - 1) / nblk * mr;
    if (g->pairs) {
        gemm_block_pairs(g, A, B, C, j0, ncur, r0, r1, mc, (uint16_t *)(void *)ap, (uint16_t *)(void *)bp, tmp);
        return;
    }
    /* a narrow B (A·V: N = Dh) would reuse a packed A block only a few
       times: read A where it is instead (16-bit rows converted as they go) */
    int in_place = kn->ukernel_rows && g->csa == 1 && g->csc == 1 && ncur <= 4 * nr;
    for (int64_t p0 = 0; p0 < g->K; p0 += g->kc) {
        int64_t kc = g->K - p0 < g->kc ? g->K - p0 : g->kc;
        int acc = p0 > 0, round = rounds_at(g, p0, kc);
        pack_b_typed(kn, g->tb, kc, ncur, elt_at(g->tb, B, p0 * g->rsb + j0 * g->csb), g->rsb, g->csb, bp, half);
        if (in_place) {
            gemm_rows(g, elt_at(g->ta, A, p0), C + j0, r0, r1, kc, ncur, acc, round, bp, ap, half, tmp);
            continue;
        }
        for (int64_t i0 = r0; i0 < r1; i0 += mc) {
            int64_t mcur = r1 - i0 < mc ? r1 - i0 : mc;
            pack_a_typed(kn, g->ta, mcur, kc, elt_at(g->ta, A, i0 * g->rsa + p0 * g->csa), g->rsa, g->csa, ap, half);
            for (int64_t jr = 0; jr < ncur; jr += nr) {
                int n = ncur - jr < nr ? (int)(ncur - jr) : nr;
                for (int64_t ir = 0; ir < mcur; ir += mr) {
                    int m = mcur - ir < mr ? (int)(mcur - ir) : mr;
                    int64_t ct = C + (i0 + ir) * g->rsc + (j0 + jr) * g->csc;
                    if (g->csc == 1 && !round) {
                        kn->ukernel(kc, ap + ir * kc, bp + jr * kc, g->c + ct, g->rsc, m, n, acc);
                        continue;
                    }
                    /* strided or 16-bit C: through a tile, same arithmetic per element */
                    kn->ukernel(kc, ap + ir * kc, bp + jr * kc, tmp, nr, m, n, 0);
                    put_tile(g, ct, tmp, m, n, acc, round);
                }
            }
        }
    }
}

static void gemm_range(void *ctx, int64_t begin, int64_t end)
{
    gemm_job *g = ctx;
    const tk_kern *kn = g->kn;
    int64_t kc = g->K < g->kc ? g->K : g->kc;
    int64_t nc = g->N < g->nc ? g->N : g->nc, ncp = (nc + kn->nr - 1) / kn->nr * kn->nr;
    size_t esz = sizeof(float);
    if (g->pairs) kc = (kc + 1) / 2 * 2, esz = sizeof(uint16_t);   /* pairs of 16-bit values */
    float *ap = tk_scratch(TK_SCRATCH_PACK_A, (size_t)(g->mc * kc) * esz);
    float *bp = tk_scratch(TK_SCRATCH_PACK_B, (size_t)(ncp * kc) * esz);
    float *tmp = tk_scratch(TK_SCRATCH_TILE, (size_t)(kn->mr * kn->nr) * sizeof(float));
    float *half = NULL;
    if (!g->pairs && (g->ta != TK_F32 || g->tb != TK_F32))
        half = tk_scratch(TK_SCRATCH_HALF, (size_t)((kn->mr > kn->nr ? kn->mr : kn->nr) * kc) * sizeof(float));
    if (!ap || !bp || !tmp || (!g->pairs && (g->ta != TK_F32 || g->tb != TK_F32) && !half)) {
        g->failed = 1;
        return;
    }
    for (int64_t u = begin; u < end; ) {
        /* consecutive parts of one (batch, column block) are one row range */
        int64_t k0 = u % g->parts, left = g->parts - k0;
        int64_t k1 = k0 + (end - u < left ? end - u : left);
        int64_t t = u / g->parts / g->njc, jc = u / g->parts % g->njc;
        gemm_block(g, t, jc, part_row(g, k0), part_row(g, k1), ap, bp, tmp, half);
        u += k1 - k0;
    }
}

/* Small products: no packing; one C row at a time with axpy on rows of B. */
typedef struct small_job {
    const tk_kern *kn;
    int64_t M, N, K;
    int ta; const void *a; const int64_t *aoff; int64_t rsa, csa;
    int tb; const void *b; const int64_t *boff; int64_t rsb, csb;
    float *c; const int64_t *coff; int64_t rsc, csc;
} small_job;

static void small_range(void *ctx, int64_t begin, int64_t end)
{
    small_job *g = ctx;
    /* a 16-bit B row is converted into `row` before its axpy (no memory
       for it: the element loop, the same values up to rounding) */
    float *row = g->tb == TK_F32 ? NULL : tk_scratch(TK_SCRATCH_PACK_B, (size_t)g->N * sizeof(float));
    int by_rows = g->csb == 1 && g->csc == 1 && (g->tb == TK_F32 || row);
    for (int64_t t = begin; t < end; t++) {
        const void *A = elt_at(g->ta, g->a, g->aoff[t]), *B = elt_at(g->tb, g->b, g->boff[t]);
        float *C = g->c + g->coff[t];
        for (int64_t i = 0; i < g->M; i++) {
            float *ci = C + i * g->rsc;
            if (by_rows) {
                memset(ci, 0, (size_t)g->N * sizeof(float));
                for (int64_t p = 0; p < g->K; p++) {
                    const float *bp = (const float *)B + p * g->rsb;
                    if (g->tb != TK_F32) {
                        g->kn->half_to_f32(g->tb == TK_BF16, g->N, (const uint16_t *)B + p * g->rsb, row);
                        bp = row;
                    }
                    g->kn->axpy(g->N, elt_load(g->ta, A, i * g->rsa + p * g->csa), bp, ci);
                }
                continue;
            }
            for (int64_t j = 0; j < g->N; j++) {
                float s = 0.0f;
                for (int64_t p = 0; p < g->K; p++)
                    s += elt_load(g->ta, A, i * g->rsa + p * g->csa) * elt_load(g->tb, B, p * g->rsb + j * g->csb);
                ci[j * g->csc] = s;
            }
        }
    }
}

/* The reference loop on any operand types (the big path's fallback when it
   gets no memory for packing: it needs none). */
static void gemm_ref_typed(int64_t nbatch, int64_t M, int64_t N, int64_t K,
                           int ta, const void *a, const int64_t *aoff, int64_t rsa, int64_t csa,
                           int tb, const void *b, const int64_t *boff, int64_t rsb, int64_t csb,
                           float *c, const int64_t *coff, int64_t rsc, int64_t csc)
{
    for (int64_t t = 0; t < nbatch; t++) {
        const void *A = elt_at(ta, a, aoff[t]), *B = elt_at(tb, b, boff[t]);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                float s = 0.0f;
                for (int64_t p = 0; p < K; p++) s += elt_load(ta, A, i * rsa + p * csa) * elt_load(tb, B, p * rsb + j * csb);
                c[coff[t] + i * rsc + j * csc] = s;
            }
    }
}

#define SMALL_MNK (32 * 32 * 32)     /* below this, packing costs more than it saves */
#define PAIRS_KC 2048                /* the largest kc of bfloat16 pairs (gemm_run) */
#define PAR_FLOPS 200000.0           /* work per thread worth a wake-up */

void tk_gemm_batch(int64_t nbatch, int64_t M, int64_t N, int64_t K,
                   const float *a, const int64_t *aoff, int64_t rsa, int64_t csa,
                   const float *b, const int64_t *boff, int64_t rsb, int64_t csb,
                   float *c, const int64_t *coff, int64_t rsc, int64_t csc)
{
    tk_gemm_batch_typed(nbatch, M, N, K, TK_F32, a, aoff, rsa, csa, TK_F32, b, boff, rsb, csb,
                        c, coff, rsc, csc);
}

/* A float32 C (f) rounded into the 16-bit C of the same layout. */
static void round_all(int64_t nbatch, int64_t M, int64_t N, const float *f, uint16_t *c, int bf16c,
                      const int64_t *coff, int64_t rsc, int64_t csc)
{
    for (int64_t t = 0; t < nbatch; t++)
        for (int64_t i = 0; i < M; i++) {
            int64_t r = coff[t] + i * rsc;
            if (csc == 1) tk_half_from_f32(bf16c, N, f + r, c + r);
            else for (int64_t j = 0; j < N; j++) c[r + j * csc] = bf16c ? tk_bf16_from_f32(f[r + j * csc]) : tk_f16_from_f32(f[r + j * csc]);
        }
}

/* The GEMM into a float32 C (c16 NULL), or into a 16-bit C: straight when
   K fits one kc block (each tile computed in L1, rounded as it is stored);
   with a float32 C of the same layout beside it (c) for any K, the earlier
   kc blocks summed there and the last one's tiles rounded as they are
   stored. Returns 0 when done, 1 when it cannot take a 16-bit C without
   that float32 C (nothing or some tiles written). */
static int gemm_run(int64_t nbatch, int64_t M, int64_t N, int64_t K,
                    int ta, const void *a, const int64_t *aoff, int64_t rsa, int64_t csa,
                    int tb, const void *b, const int64_t *boff, int64_t rsb, int64_t csb,
                    float *c, uint16_t *c16, int bf16c, const int64_t *coff, int64_t rsc, int64_t csc)
{
    if (nbatch <= 0 || M <= 0 || N <= 0) return 0;
    if (c16 && !c && K <= 0) return 1;
    if (K <= 0) {
        for (int64_t t = 0; t < nbatch; t++)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) c[coff[t] + i * rsc + j * csc] = 0.0f;
        if (c16) round_all(nbatch, M, N, c, c16, bf16c, coff, rsc, csc);
        return 0;
    }
    if (csc != 1 && rsc == 1)   /* C column-major: compute C^T = B^T A^T so the tiles store rows */
        return gemm_run(nbatch, N, M, K, tb, b, boff, csb, rsb, ta, a, aoff, csa, rsa, c, c16, bf16c, coff, csc, rsc);
    const tk_kern *kn = tk_kern_now();
    double flops = 2.0 * (double)M * (double)N * (double)K;
    int nt = tk_get_num_threads();
    if ((double)M * (double)N * (double)K <= SMALL_MNK || M < kn->mr / 2) {
        if (c16 && !c) return 1;
        small_job s = { kn, M, N, K, ta, a, aoff, rsa, csa, tb, b, boff, rsb, csb, c, coff, rsc, csc };
        int64_t grain = (int64_t)(PAR_FLOPS / flops) + 1;
        tk_parallel_for(nbatch, grain, small_range, &s);
        if (c16) round_all(nbatch, M, N, c, c16, bf16c, coff, rsc, csc);
        return 0;
    }
    gemm_job g = { kn, M, N, K, ta, a, aoff, rsa, csa, tb, b, boff, rsb, csb, c, coff, rsc, csc, c16, bf16c,
                   ta == TK_BF16 && tb == TK_BF16 && kn->ukernel_bf16, kn->kc, kn->mc, kn->nc, 0,
                   (M + kn->mr - 1) / kn->mr, 1, 0 };
    cache_blocks(kn, &g.kc, &g.mc);
    if (g.pairs) {
        /* vdpbf16ps reads its B sliver from L2 at any kc (measured on Zen 5);
           what a kc block costs is a pass over a float32 C. So K in one
           block up to PAIRS_KC (C rounded straight into a 16-bit C), else in
           equal even blocks: 1024^3 went from 1.72x to about 2x fp32. */
        int64_t nblk = (K + PAIRS_KC - 1) / PAIRS_KC;
        g.kc = ((K + nblk - 1) / nblk + 1) / 2 * 2;
    }
    if (c16 && !c && K > g.kc) return 1;
    /* Too few rows to share: cut the columns finer (this never changes the
       arithmetic, only who does it). */
    if (nbatch * g.slivers < 4 * nt && N > kn->nr) {
        int64_t want = (2 * nt + nbatch - 1) / nbatch;
        int64_t nc = (N + want - 1) / want;
        nc = (nc + kn->nr - 1) / kn->nr * kn->nr;
        if (nc < g.nc) g.nc = nc;
    }
    g.njc = (N + g.nc - 1) / g.nc;
    /* Cut the rows so that the units share out evenly over the threads:
       lcm(nbatch * njc, nt) units in all. */
    int64_t base = nbatch * g.njc, x = base, y = nt;
    while (y) { int64_t r = x % y; x = y; y = r; }
    g.parts = nt / x < g.slivers ? nt / x : g.slivers;
    int64_t units = base * g.parts;
    int64_t grain = (int64_t)(PAR_FLOPS * (double)units / (flops * (double)nbatch)) + 1;
    tk_parallel_for(units, grain, gemm_range, &g);
    if (g.failed && c16 && !c) return 1;
    if (g.failed && ta == TK_F32 && tb == TK_F32)   /* no memory for packing: the reference needs none */
        tk_gemm_batch_ref(nbatch, M, N, K, a, aoff, rsa, csa, b, boff, rsb, csb, c, coff, rsc, csc);
    else if (g.failed)
        gemm_ref_typed(nbatch, M, N, K, ta, a, aoff, rsa, csa, tb, b, boff, rsb, csb, c, coff, rsc, csc);
    if (g.failed && c16) round_all(nbatch, M, N, c, c16, bf16c, coff, rsc, csc);
    return 0;
}

void tk_gemm_batch_typed(int64_t nbatch, int64_t M, int64_t N, int64_t K,
                         int ta, const void *a, const int64_t *aoff, int64_t rsa, int64_t csa,
                         int tb, const void *b, const int64_t *boff, int64_t rsb, int64_t csb,
                         float *c, const int64_t *coff, int64_t rsc, int64_t csc)
{
    gemm_run(nbatch, M, N, K, ta, a, aoff, rsa, csa, tb, b, boff, rsb, csb, c, NULL, 0, coff, rsc, csc);
}

int tk_gemm_batch_round(int64_t nbatch, int64_t M, int64_t N, int64_t K,
                        int ta, const void *a, const int64_t *aoff, int64_t rsa, int64_t csa,
                        int tb, const void *b, const int64_t *boff, int64_t rsb, int64_t csb,
                        int tc, uint16_t *c, const int64_t *coff, int64_t rsc, int64_t csc)
{
    int bf16c = tc == TK_BF16;
    if (gemm_run(nbatch, M, N, K, ta, a, aoff, rsa, csa, tb, b, boff, rsb, csb, NULL, c, bf16c, coff, rsc, csc) == 0)
        return 0;
    /* with a float32 C of the same layout for the sums of all but the last
       kc block (so the same arithmetic); the last block's tiles are rounded
       as they are stored */
    int64_t n = 0;
    for (int64_t t = 0; t < nbatch; t++) {
        int64_t last = coff[t] + (M - 1) * rsc + (N - 1) * csc + 1;
        n = last > n ? last : n;
    }
    float *f = tk_alloc((size_t)n * sizeof(float));
    if (!f) return -1;
    gemm_run(nbatch, M, N, K, ta, a, aoff, rsa, csa, tb, b, boff, rsb, csb, f, c, bf16c, coff, rsc, csc);
    tk_free(f, (size_t)n * sizeof(float));
    return 0;
}
