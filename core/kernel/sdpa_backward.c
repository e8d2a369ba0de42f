/*
** sdpa_backward.c — the backward of fused attention: the scalar reference
** and a tiled FlashAttention-2 kernel that recomputes the weights block by
** block from the forward's per-row log-sum-exp (O(N*D) extra memory).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

/* Letters as in sdpa.c. With P = softmax(scale S) and D = rowsum(dO∘O):
   dV = Pᵀ dO, dP = dO Vᵀ, dS = P∘(dP − D), dQ = scale dS K, dK = scale dSᵀ Q.
   P is exp(scale s − lse) where visible, 0 where hidden. */

/* Whether query i of head (b, h) may see key j (causal, window, mask). */
static int visible(const tk_sdpa_bwd_args *a, int64_t b, int64_t h, int64_t i, int64_t j)
{
    if (a->causal && j > i + a->Nk - a->Nq) return 0;
    if (!tk_sdpa_band(&a->o, i, j, a->Nk - a->Nq)) return 0;
    return !a->mask || a->mask[b * a->ms_b + h * a->ms_h + i * a->ms_q + j * a->ms_k] != 0;
}

/* a with its layouts filled in: the contiguous ones unless given. */
static tk_sdpa_bwd_args with_layouts(const tk_sdpa_bwd_args *a)
{
    tk_sdpa_bwd_args r = *a;
    if (r.layouts) return r;
    r.layouts = 1;
    r.dos_d = 1, r.dos_n = r.Dv, r.dos_h = r.Nq * r.Dv, r.dos_b = r.Hq * r.Nq * r.Dv;
    r.dqs_n = r.Dh, r.dqs_h = r.Nq * r.Dh, r.dqs_b = r.Hq * r.Nq * r.Dh;
    r.dks_n = r.Dh, r.dks_h = r.Nk * r.Dh, r.dks_b = r.Hkv * r.Nk * r.Dh;
    r.dvs_n = r.Dv, r.dvs_h = r.Nk * r.Dv, r.dvs_b = r.Hkv * r.Nk * r.Dv;
    return r;
}

/* Row i of head (b, h) of dO, and of each gradient. */
static const float *dout_row(const tk_sdpa_bwd_args *a, int64_t b, int64_t h, int64_t i)
{
    return a->dout + b * a->dos_b + h * a->dos_h + i * a->dos_n;
}
static float *dq_row(const tk_sdpa_bwd_args *a, int64_t b, int64_t h, int64_t i)
{
    return a->dq + b * a->dqs_b + h * a->dqs_h + i * a->dqs_n;
}
static float *dk_row(const tk_sdpa_bwd_args *a, int64_t b, int64_t h, int64_t j)
{
    return a->dk + b * a->dks_b + h * a->dks_h + j * a->dks_n;
}
static float *dv_row(const tk_sdpa_bwd_args *a, int64_t b, int64_t h, int64_t j)
{
    return a->dv + b * a->dvs_b + h * a->dvs_h + j * a->dvs_n;
}

/* ===== Reference ===== */

/* One kv head at a time, float64 sums, dk and dv accumulated over its group. */
int tk_sdpa_backward_ref(const tk_sdpa_bwd_args *args)
{
    const tk_sdpa_bwd_args la = with_layouts(args), *a = &la;
    int64_t G = a->Hq / a->Hkv, Nk = a->Nk, Dh = a->Dh, Dv = a->Dv, off = a->Nk - a->Nq;
    const tk_sdpa_opts *op = &a->o;
    double keep_scale = op->dropout > 0.0f ? 1.0 / (1.0 - (double)op->dropout) : 1.0;
    int hf = a->half;
    double *p = malloc((size_t)(Nk > 0 ? Nk : 1) * sizeof(double));
    double *dq = malloc((size_t)(Dh > 0 ? Dh : 1) * sizeof(double));
    double *dk = malloc((size_t)(Nk * Dh > 0 ? Nk * Dh : 1) * sizeof(double));
    double *dv = malloc((size_t)(Nk * Dv > 0 ? Nk * Dv : 1) * sizeof(double));
    if (!p || !dq || !dk || !dv) { free(p); free(dq); free(dk); free(dv); return -1; }
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t hk = 0; hk < a->Hkv; hk++) {
            const float *K = tk_sdpa_at(hf, a->k, b * a->ks_b + hk * a->ks_h);
            const float *V = tk_sdpa_at(hf, a->v, b * a->vs_b + hk * a->vs_h);
            memset(dk, 0, (size_t)(Nk * Dh) * sizeof(double));
            memset(dv, 0, (size_t)(Nk * Dv) * sizeof(double));
            for (int64_t h = hk * G; h < hk * G + G; h++)
                for (int64_t i = 0; i < a->Nq; i++) {
                    int64_t row = (b * a->Hq + h) * a->Nq + i;
                    const float *q = tk_sdpa_at(hf, a->q, b * a->qs_b + h * a->qs_h + i * a->qs_n);
                    const float *o = tk_sdpa_at(hf, a->out, row * Dv), *go = dout_row(a, b, h, i);
                    double lse = (double)a->lse[row], D = 0.0;
                    float slope = op->alibi ? tk_alibi_slope(h, a->Hq) : 0.0f;
                    int empty = a->lse[row] == -INFINITY;     /* no visible key */
                    for (int64_t e = 0; e < Dh; e++) dq[e] = 0.0;
                    for (int64_t e = 0; e < Dv; e++) D += (double)go[e * a->dos_d] * (double)tk_sdpa_ld(hf, o, e);
                    for (int64_t j = 0; j < Nk && !empty; j++) {
                        if (!visible(a, b, h, i, j)) continue;
                        double s = 0.0, dp = 0.0;
                        for (int64_t e = 0; e < Dh; e++) s += (double)tk_sdpa_ld(hf, q, e * a->qs_d) * (double)tk_sdpa_ld(hf, K, j * a->ks_n + e * a->ks_d);
                        for (int64_t e = 0; e < Dv; e++) dp += (double)go[e * a->dos_d] * (double)tk_sdpa_ld(hf, V, j * a->vs_n + e * a->vs_d);
                        double z = op->dropout > 0.0f && tk_sdpa_keep(op->seed, (uint64_t)(row * Nk + j)) < op->dropout
                                   ? 0.0 : keep_scale;
                        double sc = s * (double)a->scale + (double)tk_sdpa_extra(op, slope, b, h, i, j, off);
                        double pj = exp(sc - lse), dsr = pj * (dp * z - D), ds = dsr * (double)a->scale;
                        if (a->dbias) a->dbias[row * Nk + j] = (float)dsr;
                        pj *= z;   /* the weight V saw */
                        for (int64_t e = 0; e < Dh; e++) {
                            dq[e] += ds * (double)tk_sdpa_ld(hf, K, j * a->ks_n + e * a->ks_d);
                            dk[j * Dh + e] += ds * (double)tk_sdpa_ld(hf, q, e * a->qs_d);
                        }
                        for (int64_t e = 0; e < Dv; e++) dv[j * Dv + e] += pj * (double)go[e * a->dos_d];
                    }
                    float *gq = dq_row(a, b, h, i);
                    for (int64_t e = 0; e < Dh; e++) gq[e] = (float)dq[e];
                }
            for (int64_t j = 0; j < Nk; j++) {
                float *gk = dk_row(a, b, hk, j), *gv = dv_row(a, b, hk, j);
                for (int64_t e = 0; e < Dh; e++) gk[e] = (float)dk[j * Dh + e];
                for (int64_t e = 0; e < Dv; e++) gv[e] = (float)dv[j * Dv + e];
            }
        }
    free(p); free(dq); free(dk); free(dv);
    return 0;
}

/* ===== Tiled kernel =====
   Determinism without atomics: a task is (b, kv head, lane); lane l takes
   the key chunks l, l + L, l + 2L, ... (BK keys each) in increasing order.
   A chunk's dK and dV rows are summed entirely inside its task (over the
   group's query heads, then query blocks, in a fixed order) and written
   once. dQ gets a term from every chunk: lane l adds its chunks' terms, in
   order, into its own [B, Hq, Nq, Dh] buffer (lane 0 into dq itself), and
   the lanes are summed afterwards as ((dq + lane 1) + lane 2) + ... per
   element. L depends only on the shape, so every sum has one order
   whatever the thread count. */

#define BK 256          /* keys per chunk */
#define BQ 64           /* query rows per block */
#define MAX_LANES 4
#define LANE_BYTES ((int64_t)48 << 20)   /* cap on the extra dQ buffers */
#define LANES_KEEP ((size_t)16 << 20)     /* kept between calls up to this */


/* Where a task adds its dQ terms: dq itself (its strides) or a lane's
   contiguous buffer. */
typedef struct dq_dst {
    float *p;
    int64_t sb, sh, sn;
} dq_dst;

typedef struct bwd_job {
    const tk_sdpa_bwd_args *a;
    const tk_kern *kn;
    int64_t G, off, nchunk, lanes;
    int64_t bqp, bkp, dhp, dvp;  /* BQ and BK rounded up to mr, Dh and Dv to nr */
    const float *D;              /* [B, Hq, Nq]: rowsum(dO∘O) */
    float *lane;                 /* lanes 1 .. L-1, each [B, Hq, Nq, Dh] */
    uint16_t *do16;              /* pairs: dO rounded to bfloat16 once, [B, Hq, Nq, Dv] */
    int small;                   /* kn->sdpa_bwd_head takes a task's kv head first */
    int pairs;                   /* bfloat16 through kn->ukernel_bf16: all five products in pairs */
    int failed;
    float keep_scale;            /* dropout: 1 / (1 - p) */
} bwd_job;

/* Limits of a causal block, per mr-row panel of a product (NULL: none).
   For row i of the panel's rows, ncol[i] columns of C are needed, the
   inner steps from kbeg[i] to kend[i] can be nonzero; the panel takes
   the widest. The steps skipped multiply an exact zero of P or dS (set
   so by block), so the sums keep their values and their order. */
typedef struct limits { const int64_t *ncol, *kbeg, *kend; } limits;

static int64_t panel_max(const int64_t *x, int64_t i, int m, int64_t dflt)
{
    if (!x) return dflt;
    int64_t v = x[i];
    for (int t = 1; t < m; t++) v = x[i + t] > v ? x[i + t] : v;
    return v < dflt ? v : dflt;
}

/* C[M,N] (row stride rsc) = (acc ? C + : ) Ap Bp over K, packed operands;
   Bp was packed with kb >= K rows (only its first K are read). A packed
   sliver holds step p at p * mr, a B sliver at p * nr. With pairs (J->pairs)
   Ap and Bp are bfloat16 pair slivers, K and kb count pairs, the limits'
   steps round out to whole pairs (the other half of a pair multiplies an
   exact zero too) and C gets alpha times the product; else alpha is 1. */
static void mm(const tk_kern *kn, int pairs, int64_t M, int64_t N, int64_t K, const void *ap,
               const void *bp, int64_t kb, float *c, int64_t rsc, int acc, float alpha, const limits *lm)
{
    int w = pairs ? 2 : 1;   /* steps of k per packed step */
    for (int64_t ir = 0; ir < M; ir += kn->mr) {
        int m = M - ir < kn->mr ? (int)(M - ir) : kn->mr;
        int64_t n_end = panel_max(lm ? lm->ncol : NULL, ir, m, N);
        int64_t k_end = (panel_max(lm ? lm->kend : NULL, ir, m, w * K) + w - 1) / w;
        int64_t k_beg = lm && lm->kbeg ? lm->kbeg[ir] / w : 0;   /* kbeg rises with the row */
        if (k_beg > k_end) k_beg = k_end;
        for (int64_t jr = 0; jr < n_end; jr += kn->nr) {
            int n = n_end - jr < kn->nr ? (int)(n_end - jr) : kn->nr;
            if (pairs)
                kn->ukernel_bf16(k_end - k_beg, (const uint16_t *)ap + 2 * (ir * K + k_beg * kn->mr),
                                 (const uint16_t *)bp + 2 * (jr * kb + k_beg * kn->nr), c + ir * rsc + jr, rsc,
                                 m, n, acc, alpha);
            else
                kn->ukernel(k_end - k_beg, (const float *)ap + ir * K + k_beg * kn->mr,
                            (const float *)bp + jr * kb + k_beg * kn->nr, c + ir * rsc + jr, rsc, m, n, acc);
        }
    }
}

/* As mm (without kbeg), with A (M x K, row stride rsa, each row's
   elements adjacent) read where it lies by ukernel_rows for full mr-row
   panels (the same arithmetic as ukernel on a packed copy); a partial
   panel, or a kernel without ukernel_rows, is packed into buf first. At
   attention's small blocks packing costs about as much as the product.
   With pairs, A is bfloat16 rows (a row's element 2 k_end - 1 must be
   there, 0 past its last step) and K, kb count pairs, as in mm. */
static void mm_rows(const tk_kern *kn, int pairs, int64_t M, int64_t N, int64_t K, const void *a, int64_t rsa,
                    void *buf, const void *bp, int64_t kb, float *c, int64_t rsc, int acc, const limits *lm)
{
    int w = pairs ? 2 : 1;
    for (int64_t ir = 0; ir < M; ir += kn->mr) {
        int m = M - ir < kn->mr ? (int)(M - ir) : kn->mr;
        int64_t n_end = panel_max(lm ? lm->ncol : NULL, ir, m, N);
        int64_t k_end = (panel_max(lm ? lm->kend : NULL, ir, m, w * K) + w - 1) / w;
        int in_place = m == kn->mr && (pairs ? kn->ukernel_rows_bf16 != NULL : kn->ukernel_rows != NULL);
        const float *af = (const float *)a + ir * rsa;
        const uint16_t *ah = (const uint16_t *)a + ir * rsa;
        if (!in_place && pairs) tk_pack_a_pairs(kn, m, w * k_end, ah, rsa, 1, buf);
        else if (!in_place) tk_pack_a(kn, m, k_end, af, rsa, 1, buf);
        for (int64_t jr = 0; jr < n_end; jr += kn->nr) {
            int n = n_end - jr < kn->nr ? (int)(n_end - jr) : kn->nr;
            float *ct = c + ir * rsc + jr;
            if (pairs && in_place) kn->ukernel_rows_bf16(k_end, ah, rsa, (const uint16_t *)bp + 2 * jr * kb, ct, rsc, n, acc);
            else if (pairs) kn->ukernel_bf16(k_end, buf, (const uint16_t *)bp + 2 * jr * kb, ct, rsc, m, n, acc, 1.0f);
            else if (in_place) kn->ukernel_rows(k_end, af, rsa, (const float *)bp + jr * kb, ct, rsc, n, acc);
            else kn->ukernel(k_end, buf, (const float *)bp + jr * kb, ct, rsc, m, n, acc);
        }
    }
}

/* Per-thread buffers, carved from one scratch slot. */
typedef struct bufs {
    float *kt, *vt, *kb;         /* chunk: Kᵀ, Vᵀ (for S, dP), K (for dQ) as B slivers */
    float *qa, *qb, *oa, *ob;    /* block: scale Q, dO as A slivers; Q, dO as B slivers */
    float *s, *dp;               /* BQ x BK: S then P; dP then dS */
    float *ta, *sa;              /* Pᵀ or dSᵀ, and dS, as A slivers */
    float *gk, *gv;              /* the chunk's dK, dV: BK x dhp, BK x dvp */
    float *kf, *vf, *qf;         /* 16-bit inputs: K, V of the chunk and Q of the block in float32 */
    uint16_t *p16, *d16;         /* pairs: P, dS (BQ x BK) as bfloat16 rows */
} bufs;

static int get_bufs(const bwd_job *J, bufs *u)
{
    int64_t Dh = J->a->Dh, Dv = J->a->Dv, bq = J->bqp, bk = J->bkp, dh = J->dhp, dv = J->dvp;
    /* a pair sliver of k steps takes no more than the float32 sliver of k
       (k >= 1): the same buffers serve both */
    int64_t hf = J->a->half != 0 && !J->pairs, pr = J->pairs;
    float *p16 = NULL, *d16 = NULL;
    int64_t sz[] = { Dh * bk, Dv * bk, BK * dh, bq * Dh, BQ * dh, bq * Dv, BQ * dv,
                     bq * BK, bq * BK, bk * BQ, bq * BK, BK * dh, BK * dv,
                     hf * BK * Dh, hf * BK * Dv, hf * BQ * Dh, pr * BQ * BK / 2, pr * BQ * BK / 2 };
    float **dst[] = { &u->kt, &u->vt, &u->kb, &u->qa, &u->qb, &u->oa, &u->ob,
                      &u->s, &u->dp, &u->ta, &u->sa, &u->gk, &u->gv, &u->kf, &u->vf, &u->qf, &p16, &d16 };
    const int NPARTS = (int)(sizeof sz / sizeof sz[0]);
    int64_t total = 0;
    for (int t = 0; t < NPARTS; t++) total += (sz[t] + 15) / 16 * 16;   /* 64-byte aligned parts */
    float *p = tk_scratch(TK_SCRATCH_SDPA_BWD, (size_t)total * sizeof(float));
    if (!p) return 0;
    for (int t = 0; t < NPARTS; t++) { *dst[t] = p; p += (sz[t] + 15) / 16 * 16; }
    u->p16 = (uint16_t *)(void *)p16, u->d16 = (uint16_t *)(void *)d16;
    return 1;
}

/* Whether block rows [i0, i0+nq) x keys [j0, j0+nk) of head (b, h) has a
   visible pair; lim[i] gets each row's causal limit (keys from j0 on). */
static int block_visible(const bwd_job *J, int64_t b, int64_t h, int64_t i0, int64_t nq,
                         int64_t j0, int64_t nk, int64_t *lim)
{
    const tk_sdpa_bwd_args *a = J->a;
    int any = 0;
    for (int64_t i = 0; i < nq; i++) {
        int64_t l = nk;
        if (a->causal) {
            l = i0 + i + J->off + 1 - j0;
            l = l < 0 ? 0 : l < nk ? l : nk;
        }
        lim[i] = l;
        if (any || l == 0) continue;
        if (a->o.window > 0 && j0 + l - 1 <= i0 + i + J->off - a->o.window && j0 >= a->o.sinks)
            continue;   /* the window hides all these keys from this row */
        if (!a->mask && a->o.window <= 0) { any = 1; continue; }
        const uint8_t *m = a->mask ? a->mask + b * a->ms_b + h * a->ms_h + (i0 + i) * a->ms_q + j0 * a->ms_k : NULL;
        for (int64_t j = 0; j < l && !any; j++)
            any = (!m || m[j * a->ms_k] != 0) && tk_sdpa_band(&a->o, i0 + i, j0 + j, J->off);
    }
    return any;
}

/* pairs: P and dS go straight to bfloat16 in one pass where the path can */
static int fused_p_ds(const bwd_job *J)
{
    return J->pairs && J->kn->sdpa_bwd_p_ds_bf16 && J->a->o.dropout <= 0.0f && !J->a->dbias;
}

/* A block's rows from S and dP (BK apart in u->s, u->dp): P = exp(S - lse)
   where visible, else 0, in u->s; dS = scale P (dP - D) in u->dp (fused:
   both as bfloat16 in u->p16, u->d16); dbias gets P (dP - D). */
static void p_ds_rows(const bwd_job *J, const bufs *u, int64_t b, int64_t h, int64_t i0, int64_t nq,
                      int64_t j0, int64_t nk, const int64_t *lim)
{
    const tk_sdpa_bwd_args *a = J->a;
    const tk_kern *kn = J->kn;
    int64_t row0 = (b * a->Hq + h) * a->Nq + i0;
    const uint8_t *M = a->mask ? a->mask + b * a->ms_b + h * a->ms_h + j0 * a->ms_k : NULL;
    const tk_sdpa_opts *op = &a->o;
    int extra = op->bias || op->alibi || op->window > 0;
    float slope = op->alibi ? tk_alibi_slope(h, a->Hq) : 0.0f;
    int fused = fused_p_ds(J);
    for (int64_t i = 0; i < nq; i++) {
        float *s = u->s + i * BK, *ds = u->dp + i * BK;
        float lse = a->lse[row0 + i], D = J->D[row0 + i];
        if (lse == -INFINITY || lim[i] == 0) {   /* no visible key here: no gradient */
            if (fused) {
                memset(u->p16 + i * BK, 0, (size_t)nk * sizeof(uint16_t));
                memset(u->d16 + i * BK, 0, (size_t)nk * sizeof(uint16_t));
                continue;
            }
            memset(s, 0, (size_t)nk * sizeof(float));
            memset(ds, 0, (size_t)nk * sizeof(float));
            continue;
        }
        if (M && !extra) {
            const uint8_t *mi = M + (i0 + i) * a->ms_q;
            for (int64_t j = 0; j < lim[i]; j++) if (!mi[j * a->ms_k]) s[j] = -INFINITY;
        } else if (extra) {   /* as the forward: hidden, else plus bias and ALiBi */
            const uint8_t *mi = M ? M + (i0 + i) * a->ms_q : NULL;
            for (int64_t j = 0; j < lim[i]; j++) {
                if (!tk_sdpa_band(op, i0 + i, j0 + j, J->off) || (mi && !mi[j * a->ms_k])) s[j] = -INFINITY;
                else s[j] += tk_sdpa_extra(op, slope, b, h, i0 + i, j0 + j, J->off);
            }
        }
        if (fused) {
            kn->sdpa_bwd_p_ds_bf16(lim[i], nk, s, lse, ds, D, a->scale, u->p16 + i * BK, u->d16 + i * BK);
            continue;
        }
        kn->exp_sum(lim[i], s, lse, s);
        float z[BK];   /* dropout: each weight's factor, 0 or 1 / (1 - p) */
        if (op->dropout > 0.0f) {
            uint64_t n0 = (uint64_t)((row0 + i) * a->Nk + j0);
            for (int64_t j = 0; j < lim[i]; j++)
                z[j] = tk_sdpa_keep(op->seed, n0 + (uint64_t)j) >= op->dropout ? J->keep_scale : 0.0f;
            kn->ew_binary(TK_EW_MUL, lim[i], ds, 1, z, 1, ds);   /* d loss / d P */
        }
        if (a->dbias) {   /* d loss / d score = P (dP - D) */
            float *db = a->dbias + (row0 + i) * a->Nk + j0;
            for (int64_t j = 0; j < lim[i]; j++) db[j] = s[j] * (ds[j] - D);
        }
        /* ds = (scale P) (dP - D), as vectors: the same two products and
           difference per element as the formula written out, so the same bits */
        float sp[BK];
        kn->ew_binary(TK_EW_MUL, lim[i], s, 1, &a->scale, 0, sp);
        kn->ew_binary(TK_EW_SUB, lim[i], ds, 1, &D, 0, ds);
        kn->ew_binary(TK_EW_MUL, lim[i], sp, 1, ds, 1, ds);
        if (op->dropout > 0.0f) kn->ew_binary(TK_EW_MUL, lim[i], s, 1, z, 1, s);   /* for dV */
        if (a->half) tk_sdpa_round(kn, a->half, lim[i], s);   /* P in the 16-bit dtype, as the forward's P V takes it */
        memset(s + lim[i], 0, (size_t)(nk - lim[i]) * sizeof(float));   /* hidden: exact zeros */
        memset(ds + lim[i], 0, (size_t)(nk - lim[i]) * sizeof(float));
    }
}

/* One query block against the first nk keys of the packed chunk (kb keys):
   P, dS, then the dV, dK, dQ terms. */
static void block(const bwd_job *J, const bufs *u, int64_t b, int64_t h, int64_t i0, int64_t nq,
                  int64_t j0, int64_t nk, int64_t kb, const int64_t *lim, const dq_dst *dq)
{
    const tk_sdpa_bwd_args *a = J->a;
    const tk_kern *kn = J->kn;
    int64_t Dh = a->Dh, Dv = a->Dv, row0 = (b * a->Hq + h) * a->Nq + i0;
    const float *Q = tk_sdpa_at(a->half, a->q, b * a->qs_b + h * a->qs_h + i0 * a->qs_n);
    int64_t qs_n = a->qs_n, qs_d = a->qs_d;
    const uint16_t *Q16 = (const uint16_t *)(const void *)Q;
    if (a->half && !J->pairs) {   /* the block's Q rows in float32 */
        tk_sdpa_rows_f32(a->half, nq, Dh, Q, qs_n, qs_d, u->qf);
        Q = u->qf, qs_n = Dh, qs_d = 1;
    }
    const float *dO = dout_row(a, b, h, i0);
    int64_t nqp = (nq + kn->mr - 1) / kn->mr * kn->mr;

    /* key j is seen by no row before first[j] (as lim[] is a prefix of keys) */
    int64_t first[BK], seen = 0;
    for (int64_t i = 0; i < nq; i++)
        for (; seen < lim[i]; seen++) first[seen] = i;
    for (; seen < nk; seen++) first[seen] = nq;
    const limits rows = { lim, NULL, NULL }, dq_terms = { NULL, NULL, lim }, key_terms = { NULL, first, NULL };

    /* S = (scale Q) Kᵀ, as the forward computes it; dP = dO Vᵀ (only the
       columns a row may see). With pairs, S = scale (Q Kᵀ) as the pairs
       forward does, and dO is rounded to bfloat16 (as FlashAttention
       takes it in the inputs' dtype; exact when dO came from a bfloat16
       gradient) */
    int64_t hp = (Dh + 1) / 2, vp = (Dv + 1) / 2;   /* pairs along Dh, Dv */
    const uint16_t *o16 = J->do16 ? J->do16 + row0 * Dv : NULL;   /* the block's dO rows, rounded */
    if (J->pairs) {
        tk_pack_a_pairs(kn, nq, Dh, Q16, qs_n, qs_d, (uint16_t *)(void *)u->qa);
        mm(kn, 1, nq, nk, hp, u->qa, u->kt, hp, u->s, BK, 0, a->scale, &rows);
        tk_pack_a_pairs(kn, nq, Dv, o16, Dv, 1, (uint16_t *)(void *)u->oa);
        mm(kn, 1, nq, nk, vp, u->oa, u->vt, vp, u->dp, BK, 0, 1.0f, &rows);
    } else {
        tk_pack_a(kn, nq, Dh, Q, qs_n, qs_d, u->qa);
        kn->scale(nqp * Dh, a->scale, u->qa, u->qa);
        mm(kn, 0, nq, nk, Dh, u->qa, u->kt, Dh, u->s, BK, 0, 1.0f, &rows);
        if (a->dos_d == 1) {
            mm_rows(kn, 0, nq, nk, Dv, dO, a->dos_n, u->oa, u->vt, Dv, u->dp, BK, 0, &rows);
        } else {
            tk_pack_a(kn, nq, Dv, dO, a->dos_n, a->dos_d, u->oa);
            mm(kn, 0, nq, nk, Dv, u->oa, u->vt, Dv, u->dp, BK, 0, 1.0f, &rows);
        }
    }

    int fused = fused_p_ds(J);
    p_ds_rows(J, u, b, h, i0, nq, j0, nk, lim);

    /* dV += Pᵀ dO; dK += dSᵀ Q; dQ += dS K */
    float *dqp = dq->p + b * dq->sb + h * dq->sh + i0 * dq->sn;
    if (J->pairs) {   /* P is bfloat16 already; dS is rounded to it, as FlashAttention does */
        int64_t qp = (nq + 1) / 2;
        uint16_t *ta = (uint16_t *)(void *)u->ta;
        for (int64_t i = 0; i < nq; i++) {
            if (!fused) {
                kn->half_from_f32(1, nk, u->s + i * BK, u->p16 + i * BK);
                kn->half_from_f32(1, nk, u->dp + i * BK, u->d16 + i * BK);
            }
            /* dQ reads an odd nk's last pair in place: its B half is 0,
               but a stale NaN times 0 would not be */
            if (nk % 2) u->d16[i * BK + nk] = 0;
        }
        tk_pack_b_pairs(kn, nq, Dv, o16, Dv, 1, (uint16_t *)(void *)u->ob);
        tk_pack_a_pairs(kn, nk, nq, u->p16, 1, BK, ta);
        mm(kn, 1, nk, Dv, qp, ta, u->ob, qp, u->gv, J->dvp, 1, 1.0f, &key_terms);
        tk_pack_b_pairs(kn, nq, Dh, Q16, qs_n, qs_d, (uint16_t *)(void *)u->qb);
        tk_pack_a_pairs(kn, nk, nq, u->d16, 1, BK, ta);
        mm(kn, 1, nk, Dh, qp, ta, u->qb, qp, u->gk, J->dhp, 1, 1.0f, &key_terms);
        /* dQ: an odd nk inside the chunk would pair its last key with one no
           row here sees (0 times an inf there is a NaN): that key apart */
        int64_t kd = nk % 2 && nk < kb ? nk - 1 : nk;
        mm_rows(kn, 1, nq, Dh, (kd + 1) / 2, u->d16, BK, u->sa, u->kb, (kb + 1) / 2, dqp, dq->sn, 1, &dq_terms);
        for (int64_t i = 0; i < nq && kd < nk; i++) {
            if (lim[i] < nk) continue;
            const uint16_t *kr = (const uint16_t *)(const void *)tk_sdpa_at(
                a->half, a->k, b * a->ks_b + h / J->G * a->ks_h + (j0 + kd) * a->ks_n);
            float d = tk_bf16_to_f32(u->d16[i * BK + kd]);
            for (int64_t e = 0; e < Dh; e++) dqp[i * dq->sn + e] += d * tk_bf16_to_f32(kr[e * a->ks_d]);
        }
        return;
    }
    tk_pack_b(kn, nq, Dv, dO, a->dos_n, a->dos_d, u->ob);
    tk_pack_a(kn, nk, nq, u->s, 1, BK, u->ta);
    mm(kn, 0, nk, Dv, nq, u->ta, u->ob, nq, u->gv, J->dvp, 1, 1.0f, &key_terms);
    tk_pack_b(kn, nq, Dh, Q, qs_n, qs_d, u->qb);
    tk_pack_a(kn, nk, nq, u->dp, 1, BK, u->ta);
    mm(kn, 0, nk, Dh, nq, u->ta, u->qb, nq, u->gk, J->dhp, 1, 1.0f, &key_terms);
    mm_rows(kn, 0, nq, Dh, nk, u->dp, BK, u->sa, u->kb, kb, dqp, dq->sn, 1, &dq_terms);
}

/* Key chunk c of kv head (b, hk): its dK and dV rows, and its dQ terms. */
static void chunk(const bwd_job *J, const bufs *u, int64_t b, int64_t hk, int64_t c, const dq_dst *dq)
{
    const tk_sdpa_bwd_args *a = J->a;
    const tk_kern *kn = J->kn;
    int64_t Dh = a->Dh, Dv = a->Dv, j0 = c * BK, nk = a->Nk - j0 < BK ? a->Nk - j0 : BK;
    const float *K = tk_sdpa_at(a->half, a->k, b * a->ks_b + hk * a->ks_h + j0 * a->ks_n);
    const float *V = tk_sdpa_at(a->half, a->v, b * a->vs_b + hk * a->vs_h + j0 * a->vs_n);
    int64_t ks_n = a->ks_n, ks_d = a->ks_d, vs_n = a->vs_n, vs_d = a->vs_d;
    if (J->pairs) {   /* Kᵀ and Vᵀ (for S, dP) and K (for dQ) as bfloat16 pairs */
        const uint16_t *K16 = (const uint16_t *)(const void *)K, *V16 = (const uint16_t *)(const void *)V;
        tk_pack_b_pairs(kn, Dh, nk, K16, ks_d, ks_n, (uint16_t *)(void *)u->kt);
        tk_pack_b_pairs(kn, Dv, nk, V16, vs_d, vs_n, (uint16_t *)(void *)u->vt);
        tk_pack_b_pairs(kn, nk, Dh, K16, ks_n, ks_d, (uint16_t *)(void *)u->kb);
    } else if (a->half) {   /* the chunk's K and V rows in float32 */
        tk_sdpa_rows_f32(a->half, nk, Dh, K, ks_n, ks_d, u->kf);
        tk_sdpa_rows_f32(a->half, nk, Dv, V, vs_n, vs_d, u->vf);
        K = u->kf, ks_n = Dh, ks_d = 1;
        V = u->vf, vs_n = Dv, vs_d = 1;
    }
    if (!J->pairs) {
        tk_pack_b(kn, Dh, nk, K, ks_d, ks_n, u->kt);
        tk_pack_b(kn, Dv, nk, V, vs_d, vs_n, u->vt);
        tk_pack_b(kn, nk, Dh, K, ks_n, ks_d, u->kb);
    }
    memset(u->gk, 0, (size_t)(nk * J->dhp) * sizeof(float));
    memset(u->gv, 0, (size_t)(nk * J->dvp) * sizeof(float));

    /* causal: rows before j0 - off see none of these keys */
    int64_t first = a->causal && j0 - J->off > 0 ? j0 - J->off : 0;
    /* window: rows from j0 + nk - 1 - off + W on see none of them (but the sinks) */
    int64_t last = a->Nq;
    if (a->o.window > 0 && j0 >= a->o.sinks && j0 + nk - 1 - J->off + a->o.window < last)
        last = j0 + nk - 1 - J->off + a->o.window;
    int64_t lim[BQ];
    for (int64_t h = hk * J->G; h < hk * J->G + J->G; h++)
        for (int64_t i0 = first; i0 < last; i0 += BQ) {
            int64_t nq = a->Nq - i0 < BQ ? a->Nq - i0 : BQ;
            /* causal: keys past the block's last row's limit are hidden from all its rows */
            int64_t nkb = a->causal && i0 + nq + J->off - j0 < nk ? i0 + nq + J->off - j0 : nk;
            if (block_visible(J, b, h, i0, nq, j0, nkb, lim))
                block(J, u, b, h, i0, nq, j0, nkb, nk, lim, dq);
        }

    for (int64_t j = 0; j < nk; j++) {
        memcpy(dk_row(a, b, hk, j0 + j), u->gk + j * J->dhp, (size_t)Dh * sizeof(float));
        memcpy(dv_row(a, b, hk, j0 + j), u->gv + j * J->dvp, (size_t)Dv * sizeof(float));
    }
}

static void task_range(void *ctx, int64_t begin, int64_t end)
{
    bwd_job *J = ctx;
    const tk_sdpa_bwd_args *a = J->a;
    bufs u;
    if (!get_bufs(J, &u)) { J->failed = 1; return; }
    for (int64_t t = begin; t < end; t++) {
        int64_t bhk = t / J->lanes, l = t % J->lanes, b = bhk / a->Hkv, hk = bhk % a->Hkv;
        int64_t Dh = a->Dh, Nq = a->Nq, size = a->B * a->Hq * Nq * Dh;
        dq_dst dq = { a->dq, a->dqs_b, a->dqs_h, a->dqs_n };
        if (J->small && J->kn->sdpa_bwd_head(a, J->D, b, hk) == 0) continue;
        if (l > 0) dq = (dq_dst){ J->lane + (l - 1) * size, a->Hq * Nq * Dh, Nq * Dh, Dh };
        for (int64_t h = hk * J->G; h < hk * J->G + J->G; h++)
            for (int64_t i = 0; i < Nq; i++)
                memset(dq.p + b * dq.sb + h * dq.sh + i * dq.sn, 0, (size_t)Dh * sizeof(float));
        for (int64_t c = l; c < J->nchunk; c += J->lanes) chunk(J, &u, b, hk, c, &dq);
    }
}

/* D[r] = rowsum(dO∘O), float64 sums in order of e; four rows of a head at
   a time, so four sums are under way at once. */
static void d_range(void *ctx, int64_t begin, int64_t end)
{
    bwd_job *J = ctx;
    const tk_sdpa_bwd_args *a = J->a;
    float *D = (float *)J->D;
    int64_t Dv = a->Dv, sd = a->dos_d, sn = a->dos_n;
    int hf = a->half;
    for (int64_t r = begin; r < end;) {
        int64_t bh = r / a->Nq, i = r % a->Nq, n = a->Nq - i < end - r ? a->Nq - i : end - r;
        const float *go = dout_row(a, bh / a->Hq, bh % a->Hq, i), *o = tk_sdpa_at(hf, a->out, r * Dv);
        int64_t k = 0;
        for (; k + 4 <= n; k += 4) {
            double d0 = 0.0, d1 = 0.0, d2 = 0.0, d3 = 0.0;
            for (int64_t e = 0; e < Dv; e++) {
                d0 += (double)go[k * sn + e * sd] * (double)tk_sdpa_ld(hf, o, k * Dv + e);
                d1 += (double)go[(k + 1) * sn + e * sd] * (double)tk_sdpa_ld(hf, o, (k + 1) * Dv + e);
                d2 += (double)go[(k + 2) * sn + e * sd] * (double)tk_sdpa_ld(hf, o, (k + 2) * Dv + e);
                d3 += (double)go[(k + 3) * sn + e * sd] * (double)tk_sdpa_ld(hf, o, (k + 3) * Dv + e);
            }
            D[r + k] = (float)d0; D[r + k + 1] = (float)d1; D[r + k + 2] = (float)d2; D[r + k + 3] = (float)d3;
        }
        for (; k < n; k++) {
            double d = 0.0;
            for (int64_t e = 0; e < Dv; e++) d += (double)go[k * sn + e * sd] * (double)tk_sdpa_ld(hf, o, k * Dv + e);
            D[r + k] = (float)d;
        }
        r += n;
    }
    for (int64_t r = begin; r < end && J->do16; r++) {   /* pairs: dO in bfloat16, once */
        const float *go = dout_row(a, r / a->Nq / a->Hq, r / a->Nq % a->Hq, r % a->Nq);
        uint16_t *y = J->do16 + r * Dv;
        if (sd == 1) J->kn->half_from_f32(1, Dv, go, y);
        else for (int64_t e = 0; e < Dv; e++) y[e] = tk_bf16_from_f32(go[e * sd]);
    }
}

/* dq += lanes 1 .. L-1, in lane order, a row at a time (vector adds: the
   same sums, element by element, as a scalar loop). */
static void sum_range(void *ctx, int64_t begin, int64_t end)
{
    bwd_job *J = ctx;
    const tk_sdpa_bwd_args *a = J->a;
    int64_t size = a->B * a->Hq * a->Nq * a->Dh;
    for (int64_t r = begin; r < end; r++) {
        float *dq = dq_row(a, r / a->Nq / a->Hq, r / a->Nq % a->Hq, r % a->Nq);
        for (int64_t l = 1; l < J->lanes; l++)
            J->kn->ew_binary(TK_EW_ADD, a->Dh, dq, 1, J->lane + (l - 1) * size + r * a->Dh, 1, dq);
    }
}

int tk_sdpa_backward(const tk_sdpa_bwd_args *args)
{
    const tk_sdpa_bwd_args la = with_layouts(args), *a = &la;
    int64_t rows = a->B * a->Hq * a->Nq;
    if (a->B <= 0 || a->Hq <= 0) return 0;
    if (a->Nq <= 0 || a->Nk <= 0) {          /* nothing visible anywhere */
        for (int64_t b = 0; b < a->B; b++) {
            for (int64_t h = 0; h < a->Hq; h++)
                for (int64_t i = 0; i < a->Nq; i++) memset(dq_row(a, b, h, i), 0, (size_t)a->Dh * sizeof(float));
            for (int64_t h = 0; h < a->Hkv; h++)
                for (int64_t j = 0; j < a->Nk; j++) {
                    memset(dk_row(a, b, h, j), 0, (size_t)a->Dh * sizeof(float));
                    memset(dv_row(a, b, h, j), 0, (size_t)a->Dv * sizeof(float));
                }
        }
        return 0;
    }
    const tk_kern *kn = tk_kern_now();
    bwd_job J;
    memset(&J, 0, sizeof J);
    J.a = a; J.kn = kn;
    J.G = a->Hq / a->Hkv;
    J.off = a->Nk - a->Nq;
    J.nchunk = (a->Nk + BK - 1) / BK;
    J.bqp = (BQ + kn->mr - 1) / kn->mr * kn->mr;
    J.bkp = (BK + kn->nr - 1) / kn->nr * kn->nr;
    if (J.bkp < (BK + kn->mr - 1) / kn->mr * kn->mr) J.bkp = (BK + kn->mr - 1) / kn->mr * kn->mr;
    J.dhp = (a->Dh + kn->nr - 1) / kn->nr * kn->nr;
    J.dvp = (a->Dv + kn->nr - 1) / kn->nr * kn->nr;
    J.pairs = a->half == TK_SDPA_BF16 && kn->ukernel_bf16;
    J.small = !a->half && !tk_sdpa_opts_any(&a->o) && tk_sdpa_small_fits(kn, a->Nq, a->Nk, a->Dh, a->Dv, 1);
    J.keep_scale = a->o.dropout > 0.0f ? (float)(1.0 / (1.0 - (double)a->o.dropout)) : 1.0f;   /* one key chunk: one lane */
    /* lanes: up to 4, for some 16 tasks when there are few kv heads
       (each lane past the first costs a dQ-sized buffer and a pass to sum
       it), fewer when their buffers would be big; never from the thread
       count */
    int64_t lane_bytes = rows * a->Dh * (int64_t)sizeof(float), heads = a->B * a->Hkv;
    J.lanes = heads >= 16 ? 1 : (16 + heads - 1) / heads;
    if (J.lanes > MAX_LANES) J.lanes = MAX_LANES;
    if (J.lanes > J.nchunk) J.lanes = J.nchunk;
    while (J.lanes > 1 && (J.lanes - 1) * lane_bytes > LANE_BYTES) J.lanes--;
    /* D, the rounded dO and the lanes in the calling thread's scratch,
       kept for the next call up to LANES_KEEP: memory handed back to the
       system and taken again is faulted in again, page by page, on every
       call */
    size_t d_bytes = ((size_t)rows * sizeof(float) + 63) & ~(size_t)63;
    size_t o_bytes = J.pairs ? ((size_t)(rows * a->Dv) * sizeof(uint16_t) + 63) & ~(size_t)63 : 0;
    char *s = tk_scratch(TK_SCRATCH_SDPA_LANES, d_bytes + o_bytes + (size_t)((J.lanes - 1) * lane_bytes));
    if (!s) return tk_sdpa_backward_ref(a);
    J.D = (float *)(void *)s;
    J.do16 = J.pairs ? (uint16_t *)(void *)(s + d_bytes) : NULL;
    J.lane = J.lanes > 1 ? (float *)(void *)(s + d_bytes + o_bytes) : NULL;
    tk_parallel_for(rows, 256, d_range, &J);
    tk_parallel_for(a->B * a->Hkv * J.lanes, 1, task_range, &J);
    if (!J.failed && J.lanes > 1) tk_parallel_for(rows, 256, sum_range, &J);
    tk_scratch_trim(TK_SCRATCH_SDPA_LANES, LANES_KEEP);
    if (J.failed) return tk_sdpa_backward_ref(a);   /* out of scratch memory */
    return 0;
}
