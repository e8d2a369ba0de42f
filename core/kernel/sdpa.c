/*
** sdpa.c — fused scaled dot-product attention: the scalar reference
** and a tiled FlashAttention-style kernel (online softmax, O(N*Dh) extra
** memory) built on the current path's micro-kernel and row primitives.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

/* Letters: B batch, Hq/Hkv query/key-value heads (G = Hq/Hkv queries per kv
   head), Nq queries, Nk keys, Dh query/key size, Dv value size.
   Causal is lower-right: query i sees key j when j <= i + (Nk - Nq).
   A row is the formula softmax(scale q k^T) @ v, but for one exception: a
   row with no visible key (all hidden by causal or mask) gives zeros. So a
   visible score that is NaN or +inf, or visible scores that are all -inf,
   make the row NaN, as the formula does; they never make it "empty". */

float tk_alibi_slope(int64_t h, int64_t H)
{
    int64_t n = 1;
    while (n * 2 <= H) n *= 2;
    double e = h < n ? -8.0 * (double)(h + 1) / (double)n : -4.0 * (double)(2 * (h - n) + 1) / (double)n;
    return (float)exp2(e);
}

void tk_sdpa_rows_f32(int half, int64_t rows, int64_t cols, const float *p, int64_t rs, int64_t cs, float *dst)
{
    const uint16_t *h = (const uint16_t *)(const void *)p;
    for (int64_t r = 0; r < rows; r++) {
        if (cs == 1) tk_half_to_f32(half == TK_SDPA_BF16, cols, h + r * rs, dst + r * cols);
        else for (int64_t c = 0; c < cols; c++) dst[r * cols + c] = tk_sdpa_ld(half, p, r * rs + c * cs);
    }
}

void tk_sdpa_round(const tk_kern *kn, int half, int64_t n, float *x)
{
    int bf16 = half == TK_SDPA_BF16;
    if (kn->round_half) {
        kn->round_half(bf16, n, x);
        return;
    }
    for (int64_t j = 0; j < n; j++)
        x[j] = bf16 ? tk_bf16_to_f32(tk_bf16_from_f32(x[j])) : tk_f16_to_f32(tk_f16_from_f32(x[j]));
}

/* n elements of a row of out from float32 x: stored, or rounded to 16 bits. */
static void put_row(int half, float *out, int64_t off, int64_t n, const float *x)
{
    if (!half) memcpy(out + off, x, (size_t)n * sizeof(float));
    else tk_half_from_f32(half == TK_SDPA_BF16, n, x, (uint16_t *)(void *)out + off);
}

/* n elements of a row of out set to v (0 or NaN). */
static void fill_row(int half, float *out, int64_t off, int64_t n, float v)
{
    uint16_t h = half == TK_SDPA_BF16 ? tk_bf16_from_f32(v) : tk_f16_from_f32(v);
    for (int64_t e = 0; e < n; e++) {
        if (half) ((uint16_t *)(void *)out)[off + e] = h;
        else out[off + e] = v;
    }
}

/* ===== Reference ===== */

int64_t tk_sdpa_ref(const tk_sdpa_args *a)
{
    int64_t empty = 0, G = a->Hq / a->Hkv, off = a->Nk - a->Nq;
    const tk_sdpa_opts *op = &a->o;
    float keep_scale = op->dropout > 0.0f ? (float)(1.0 / (1.0 - (double)op->dropout)) : 1.0f;
    int hf = a->half;
    float *s = malloc((size_t)(a->Nk > 0 ? a->Nk : 1) * sizeof(float));
    float *o = malloc((size_t)(a->Dv > 0 ? a->Dv : 1) * sizeof(float));
    if (!s || !o) { free(s); free(o); return -1; }
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t h = 0; h < a->Hq; h++)
            for (int64_t i = 0; i < a->Nq; i++) {
                const float *q = tk_sdpa_at(hf, a->q, b * a->qs_b + h * a->qs_h + i * a->qs_n);
                const float *k = tk_sdpa_at(hf, a->k, b * a->ks_b + (h / G) * a->ks_h);
                const float *v = tk_sdpa_at(hf, a->v, b * a->vs_b + (h / G) * a->vs_h);
                int64_t oo = ((b * a->Hq + h) * a->Nq + i) * a->Dv;   /* the row of out */
                float *w = a->weights ? a->weights + ((b * a->Hq + h) * a->Nq + i) * a->Nk : NULL;
                float *lse = a->lse ? a->lse + (b * a->Hq + h) * a->Nq + i : NULL;
                float m = -INFINITY, sum = 0.0f, slope = op->alibi ? tk_alibi_slope(h, a->Hq) : 0.0f;
                int64_t row = (b * a->Hq + h) * a->Nq + i;
                int seen = 0, bad = 0;
                for (int64_t j = 0; j < a->Nk; j++) {
                    int keep = (!a->causal || j <= i + off) && tk_sdpa_band(op, i, j, off);
                    if (keep && a->mask)
                        keep = a->mask[b * a->ms_b + h * a->ms_h + i * a->ms_q + j * a->ms_k] != 0;
                    float d = 0.0f;
                    for (int64_t e = 0; e < a->Dh; e++) d += tk_sdpa_ld(hf, q, e * a->qs_d) * tk_sdpa_ld(hf, k, j * a->ks_n + e * a->ks_d);
                    s[j] = keep ? d * a->scale + tk_sdpa_extra(op, slope, b, h, i, j, off) : -INFINITY;
                    seen |= keep;
                    bad |= keep && !(s[j] < INFINITY);     /* NaN or +inf */
                    m = s[j] > m ? s[j] : m;
                }
                if (!seen || bad || m == -INFINITY) {
                    float fill = seen ? NAN : 0.0f;  /* no visible key: zeros */
                    fill_row(hf, a->out, oo, a->Dv, fill);
                    if (w) for (int64_t j = 0; j < a->Nk; j++) w[j] = fill;
                    if (lse) *lse = seen ? NAN : -INFINITY;
                    empty += !seen;
                    continue;
                }
                for (int64_t e = 0; e < a->Dv; e++) o[e] = 0.0f;
                for (int64_t j = 0; j < a->Nk; j++) { s[j] = expf(s[j] - m); sum += s[j]; }
                if (lse) *lse = m + logf(sum);
                for (int64_t j = 0; j < a->Nk; j++) {
                    float p = s[j] / sum;
                    if (op->dropout > 0.0f)
                        p *= tk_sdpa_keep(op->seed, (uint64_t)(row * a->Nk + j)) >= op->dropout ? keep_scale : 0.0f;
                    if (w) w[j] = p;
                    if (hf) tk_sdpa_round(&tk_kern_scalar, hf, 1, &p);   /* as the tiled kernel's P (which it divides by the sum later) */
                    for (int64_t e = 0; e < a->Dv; e++) o[e] += p * tk_sdpa_ld(hf, v, j * a->vs_n + e * a->vs_d);
                }
                put_row(hf, a->out, oo, a->Dv, o);
            }
    free(s);
    free(o);
    return empty;
}

/* ===== Tiled kernel =====
   A task is (b, h, block of BQ queries). Per task: Q block packed (scaled)
   as micro-kernel A slivers; for each block of BK keys up to the last one
   visible (blocks wholly above the causal diagonal are never touched):
   S = Q K^T, mask, online softmax (running max m, sum l, O rescaled by
   exp(m_old - m_new) when m moved), O += P V; on the diagonal block each
   sliver of mr queries takes only the keys its last row sees. K and V of a
   kv head are packed once per thread and reused by every query block and
   every query head of its group (GQA without copies). */

/* Block sizes: about BQ_ROWS query rows (whole slivers) by BK_COLS keys, so
   the score block S (64 x 544 floats with S_PAD, 136 KiB) stays in L2 next
   to the Q block and the O accumulators, while K and V panels stream from
   L3. */
#define BQ_ROWS 64
#define BK_COLS 512
/* S rows are BK_COLS + S_PAD floats apart: at 2 KiB apart the mr rows a
   micro-tile stores (Q K^T) or broadcasts from (P V) share few L1 sets and
   alias 4 KiB apart; 128 bytes more measured 2-3% faster at N = 4096. */
#define S_PAD 32

typedef struct sdpa_job {
    const tk_sdpa_args *a;
    const tk_kern *kn;
    int64_t G, off, bq, bk, nqb, ntask;
    int64_t dvp;                 /* Dv rounded up to nr */
    uint64_t call;
    int small;                   /* a task is a head, done by kn->sdpa_head */
    int pairs;                   /* bfloat16 through kn->ukernel_bf16: Q, K, V, P packed as pairs */
    int64_t *empty;              /* per task */
    int failed;
    float keep_scale;            /* dropout: 1 / (1 - p) */
} sdpa_job;

/* Which (call, b, kv head) this thread has packed, and how many keys. */
static _Thread_local struct { uint64_t call; int64_t b, hk, keys; } kv_cache;
static uint64_t sdpa_calls;

/* K rows [j0, j1) of head (b, hk) as B slivers of nr keys (Dh x nr each);
   V rows as slivers of nr value columns (Nk x nr each), zero padded. j0 is
   a multiple of nr; rows from Nk on are zeros. 16-bit K and V rows are converted to float32 (in f32, room for
   (j1 - j0) max(Dh, Dv) floats) and packed from there; with pairs, packed
   as bfloat16 pairs instead (K's slivers Dh rounded up to even by nr, V's
   keys in pairs: the same offsets counted in 16-bit values). */
static void pack_kv(const sdpa_job *J, int64_t b, int64_t hk, int64_t j0, int64_t j1,
                    float *kp, float *vp, int64_t nkp, float *f32)
{
    const tk_sdpa_args *a = J->a;
    const tk_kern *kn = J->kn;
    int nr = kn->nr, hf = a->half;
    const float *K = tk_sdpa_at(hf, a->k, b * a->ks_b + hk * a->ks_h + j0 * a->ks_n);
    const float *V = tk_sdpa_at(hf, a->v, b * a->vs_b + hk * a->vs_h + j0 * a->vs_n);
    int64_t jv = j1 < a->Nk ? j1 : a->Nk;     /* rows that exist */
    int64_t ks_n = a->ks_n, ks_d = a->ks_d, vs_n = a->vs_n, vs_d = a->vs_d;
    if (J->pairs) {
        uint16_t *kb = (uint16_t *)(void *)kp, *vb = (uint16_t *)(void *)vp;
        int64_t dhp = (a->Dh + 1) / 2 * 2;
        if (jv > j0 && a->Dh > 0)
            tk_pack_b_pairs(kn, a->Dh, jv - j0, (const uint16_t *)(const void *)K, ks_d, ks_n, kb + j0 * dhp);
        for (int64_t t = 0; t < J->dvp; t += nr) {
            uint16_t *dv = vb + t * nkp;
            if (jv > j0) {
                int64_t nc = a->Dv - t < nr ? a->Dv - t : nr;
                tk_pack_b_pairs(kn, jv - j0, nc, (const uint16_t *)(const void *)V + t * vs_d, vs_n, vs_d, dv + j0 * nr);
            }
            int64_t z0 = jv > j0 ? (jv + 1) / 2 * 2 : j0;   /* an odd last key's pair is padded */
            if (j1 > z0) memset(dv + z0 * nr, 0, (size_t)((j1 - z0) * nr) * sizeof(uint16_t));
        }
        return;
    }
    if (hf && jv > j0) {
        tk_sdpa_rows_f32(hf, jv - j0, a->Dh, K, ks_n, ks_d, f32);
        K = f32, ks_n = a->Dh, ks_d = 1;
    }
    if (jv > j0 && a->Dh > 0)                 /* K^T: Dh x keys */
        tk_pack_b(kn, a->Dh, jv - j0, K, ks_d, ks_n, kp + j0 * a->Dh);
    if (hf && jv > j0) {                      /* K is packed: f32 takes V */
        tk_sdpa_rows_f32(hf, jv - j0, a->Dv, V, vs_n, vs_d, f32);
        V = f32, vs_n = a->Dv, vs_d = 1;
    }
    for (int64_t t = 0; t < J->dvp; t += nr) {
        float *dv = vp + t * nkp;
        if (jv > j0) {
            int64_t nc = a->Dv - t < nr ? a->Dv - t : nr;
            tk_pack_b(kn, jv - j0, nc, V + t * vs_d, vs_n, vs_d, dv + j0 * nr);
        }
        int64_t z0 = jv > j0 ? jv : j0;
        if (j1 > z0) memset(dv + z0 * nr, 0, (size_t)((j1 - z0) * nr) * sizeof(float));
    }
}

/* How many of the nk keys from j0 query row i sees: causal hides those
   after i + off. Rows of a sliver see more keys the later the row, so its
   last row's count bounds the sliver. */
static inline int64_t row_keys(const sdpa_job *J, int64_t i, int64_t j0, int64_t nk)
{
    if (!J->a->causal) return nk;
    int64_t l = i + J->off + 1 - j0;
    return l < 0 ? 0 : l < nk ? l : nk;
}

/* The first key of a block from j0 (relative to j0, rounded down to nr)
   that rows from i on can see: the window hides those before
   i + off - W + 1 but the sinks. */
static inline int64_t first_key(const sdpa_job *J, int64_t i, int64_t j0)
{
    const tk_sdpa_opts *o = &J->a->o;
    if (o->window <= 0 || j0 < o->sinks) return 0;
    int64_t l = i + J->off - o->window + 1 - j0;
    return l <= 0 ? 0 : l / J->kn->nr * J->kn->nr;
}

/* The first query row of a task's block, and its head bh = b Hq + h */
static int64_t task_row0(const sdpa_job *J, int64_t task, int64_t *bh)
{
    int64_t r = task % J->nqb;
    *bh = task / J->nqb;
    /* causal: pair early and late query blocks so contiguous ranges balance */
    return (!J->a->causal ? r : r % 2 == 0 ? r / 2 : J->nqb - 1 - r / 2) * J->bq;
}

/* Fetch n bytes from p into the cache (for writing when w) while the last
   key block is computed: the output rows and the next task's Q rows are
   in memory, and stores or loads missing there stall longer than the
   prefetches, spread over the block's work, cost. */
static void fetch(const void *p, int64_t n, int w)
{
    for (int64_t c = 0; c < n; c += 64) {
        if (w) __builtin_prefetch((const char *)p + c, 1);
        else __builtin_prefetch((const char *)p + c, 0);
    }
}

/* Zeros P of a row from key `from` to `to` (relative to its first computed
   key): the float32 row p, or with pairs its bfloat16 row p16. */
static void zero_p(const sdpa_job *J, float *p, uint16_t *p16, int64_t from, int64_t to)
{
    if (J->pairs) memset(p16 + from, 0, (size_t)(to - from) * sizeof(uint16_t));
    else memset(p + from, 0, (size_t)(to - from) * sizeof(float));
}

/* O (m rows, stride dvp) += P V over kl keys with bfloat16 pairs: P's
   bfloat16 rows (stride ls) read in place by whole slivers (a partial one
   packed into pp), V's pair slivers from vs (sliver t at vs + t nkp). An
   odd last key is added apart, so the pad of its pair never reads the next
   key's v. */
static void pv_pairs(const sdpa_job *J, const uint16_t *P, int64_t ls, int m, int64_t kl, uint16_t *pp,
                     const uint16_t *vs, int64_t nkp, float *O)
{
    const tk_kern *kn = J->kn;
    int nr = kn->nr, mr = kn->mr;
    int64_t kp = kl / 2, dvp = J->dvp, Dv = J->a->Dv;
    if (kp > 0 && m < mr) tk_pack_a_pairs(kn, m, 2 * kp, P, ls, 1, pp);
    for (int64_t t = 0; t < dvp; t += nr) {
        int n = Dv - t < nr ? (int)(Dv - t) : nr;
        const uint16_t *v = vs + t * nkp;
        if (kp > 0 && m == mr) kn->ukernel_rows_bf16(kp, P, ls, v, O + t, dvp, n, 1);
        else if (kp > 0) kn->ukernel_bf16(kp, pp, v, O + t, dvp, m, n, 1, 1.0f);
        if (kl % 2 == 0) continue;
        const uint16_t *vl = v + kp * 2 * nr;   /* key kl - 1: the even halves of the pairs */
        for (int i = 0; i < m; i++) {
            float p = tk_bf16_to_f32(P[i * ls + kl - 1]);
            for (int j = 0; j < n; j++) O[i * dvp + t + j] += p * tk_bf16_to_f32(vl[2 * j]);
        }
    }
}

/* One task's state: its query block, the blocks of scratch it works in,
   and each row's running softmax. */
typedef struct sdpa_blk {
    int64_t task, bh, b, h, hk, i0;
    int64_t nq, nqp, ls, nkp, jend, lo0;   /* ls: S's row stride; keys from jend on are never seen */
    int64_t out0;                           /* the block's first element of out */
    char *outb;
    float *W, *lse;                         /* the block's weights and lse rows, or NULL */
    const uint8_t *M;                       /* the block's mask rows, or NULL */
    int extra;                              /* per-score work beside the mask: bias, ALiBi, window */
    float slope;
    float *kp, *vp, *qp, *S, *pp, *O, *f32;
    uint16_t *P16;                          /* with pairs: P's bfloat16 rows, stride ls */
    /* per row: running max and sum; whether a key was visible; whether a
       visible score was NaN or +inf (the row is then NaN) */
    float *mrow, *lrow, *seen, *bad;
} sdpa_blk;

/* The task's query block and the keys it can see at all (jend); 0 when it
   sees none, its rows then written empty. */
static int blk_start(const sdpa_job *J, int64_t task, sdpa_blk *k)
{
    const tk_sdpa_args *a = J->a;
    const tk_sdpa_opts *o = &a->o;
    k->task = task;
    k->i0 = task_row0(J, task, &k->bh);
    k->b = k->bh / a->Hq, k->h = k->bh % a->Hq, k->hk = k->h / J->G;
    k->nq = a->Nq - k->i0 < J->bq ? a->Nq - k->i0 : J->bq;
    k->nqp = (k->nq + J->kn->mr - 1) / J->kn->mr * J->kn->mr;
    k->ls = J->bk + S_PAD;
    k->out0 = (k->bh * a->Nq + k->i0) * a->Dv;
    k->outb = (char *)tk_sdpa_at(a->half, a->out, k->out0);
    k->W = a->weights ? a->weights + (k->bh * a->Nq + k->i0) * a->Nk : NULL;
    k->lse = a->lse ? a->lse + k->bh * a->Nq + k->i0 : NULL;
    k->M = a->mask ? a->mask + k->b * a->ms_b + k->h * a->ms_h + k->i0 * a->ms_q : NULL;
    k->jend = a->Nk;
    if (a->causal) {
        int64_t last = k->i0 + k->nq - 1 + J->off + 1;
        k->jend = last < 0 ? 0 : last < a->Nk ? last : a->Nk;
    }
    k->extra = o->bias || o->alibi || o->window > 0;
    k->slope = o->alibi ? tk_alibi_slope(k->h, a->Hq) : 0.0f;
    /* window: the block's first row sees no key before lo0 but the sinks */
    k->lo0 = o->window > 0 ? k->i0 + J->off - o->window + 1 : 0;
    if (k->jend > 0) return 1;
    memset(k->outb, 0, (size_t)(k->nq * a->Dv) * (a->half ? 2u : 4u));
    if (k->W) memset(k->W, 0, (size_t)(k->nq * a->Nk) * sizeof(float));
    if (k->lse) for (int64_t i = 0; i < k->nq; i++) k->lse[i] = -INFINITY;
    J->empty[task] = k->nq;
    return 0;
}

/* The task's scratch: packed K, V and Q, the score block S, a packed P
   sliver (with pairs after P's bfloat16 rows), O with the row state after
   it, and for 16-bit inputs their float32 rows. 0 when one is missing. */
static int blk_scratch(const sdpa_job *J, sdpa_blk *k)
{
    const tk_sdpa_args *a = J->a;
    int mr = J->kn->mr, nr = J->kn->nr;
    int64_t Dh = a->Dh, dvp = J->dvp, nqp = k->nqp;
    k->nkp = (a->Nk + nr - 1) / nr * nr;
    k->kp = tk_scratch(TK_SCRATCH_SDPA_K, (size_t)(k->nkp * (Dh > 0 ? Dh : 1)) * sizeof(float));
    k->vp = tk_scratch(TK_SCRATCH_SDPA_V, (size_t)(k->nkp * (dvp > 0 ? dvp : 1)) * sizeof(float));
    k->qp = tk_scratch(TK_SCRATCH_SDPA_Q, (size_t)(nqp * (Dh > 0 ? Dh : 1)) * sizeof(float));
    k->S = tk_scratch(TK_SCRATCH_SDPA_S, (size_t)(nqp * k->ls) * sizeof(float));
    size_t np16 = J->pairs ? (size_t)(nqp * k->ls) * sizeof(uint16_t) : 0;
    k->pp = tk_scratch(TK_SCRATCH_SDPA_P, np16 + (size_t)(mr * J->bk) * sizeof(float));
    k->P16 = (uint16_t *)(void *)k->pp;
    if (J->pairs) k->pp = (float *)(void *)(k->P16 + nqp * k->ls);
    k->O = tk_scratch(TK_SCRATCH_SDPA_O, (size_t)(nqp * (dvp + 4)) * sizeof(float));
    int64_t wide = Dh > a->Dv ? Dh : a->Dv, f32n = (k->nkp > k->nq ? k->nkp : k->nq) * (wide > 0 ? wide : 1);
    k->f32 = a->half ? tk_scratch(TK_SCRATCH_SDPA_F32, (size_t)f32n * sizeof(float)) : NULL;
    if (!k->kp || !k->vp || !k->qp || !k->S || !k->pp || !k->O || (a->half && !k->f32)) return 0;
    k->mrow = k->O + nqp * dvp, k->lrow = k->mrow + nqp, k->seen = k->lrow + nqp, k->bad = k->seen + nqp;
    return 1;
}

/* K and V of the task's kv head packed up to the last key block it needs,
   unless this thread has them from an earlier task of this call. */
static void blk_pack_kv(const sdpa_job *J, sdpa_blk *k)
{
    if (kv_cache.call != J->call || kv_cache.b != k->b || kv_cache.hk != k->hk) {
        kv_cache.call = J->call; kv_cache.b = k->b; kv_cache.hk = k->hk; kv_cache.keys = 0;
    }
    int64_t need = (k->jend + J->bk - 1) / J->bk * J->bk;
    if (need > k->nkp) need = k->nkp;
    if (kv_cache.keys < need) {
        pack_kv(J, k->b, k->hk, kv_cache.keys, need, k->kp, k->vp, k->nkp, k->f32);
        kv_cache.keys = need;
    }
}

/* The Q block as mr-row slivers (Dh x mr each): scaled float32, or with
   pairs bfloat16 pairs unscaled (the micro-kernel scales S); 16-bit Q
   otherwise converted to float32 first. */
static void blk_pack_q(const sdpa_job *J, sdpa_blk *k)
{
    const tk_sdpa_args *a = J->a;
    const tk_kern *kn = J->kn;
    int hf = a->half;
    const float *Q = tk_sdpa_at(hf, a->q, k->b * a->qs_b + k->h * a->qs_h + k->i0 * a->qs_n);
    int64_t qs_n = a->qs_n, qs_d = a->qs_d, Dh = a->Dh;
    if (Dh == 0) return;
    if (J->pairs) {
        tk_pack_a_pairs(kn, k->nq, Dh, (const uint16_t *)(const void *)Q, qs_n, qs_d, (uint16_t *)(void *)k->qp);
        return;
    }
    if (hf) {
        tk_sdpa_rows_f32(hf, k->nq, Dh, Q, qs_n, qs_d, k->f32);
        Q = k->f32, qs_n = Dh, qs_d = 1;
    }
    tk_pack_a(kn, k->nq, Dh, Q, qs_n, qs_d, k->qp);
    kn->scale(k->nqp * Dh, a->scale, k->qp, k->qp);
}

/* 1. S = (scale Q) K^T over the key block from j0 (nk keys), for each
   sliver only the micro-tiles that hold a key it can see (the rest of its
   rows is set by the softmax step). */
static void blk_scores(const sdpa_job *J, const sdpa_blk *k, int64_t j0, int64_t nk)
{
    const tk_sdpa_args *a = J->a;
    const tk_kern *kn = J->kn;
    int mr = kn->mr, nr = kn->nr;
    int64_t Dh = a->Dh, dhp = (Dh + 1) / 2 * 2;   /* dhp: Dh in whole pairs */
    for (int64_t jr = 0; jr < nk; jr += nr) {
        int n = nk - jr < nr ? (int)(nk - jr) : nr;
        for (int64_t ir = 0; ir < k->nq; ir += mr) {
            int m = k->nq - ir < mr ? (int)(k->nq - ir) : mr;
            if (jr >= row_keys(J, k->i0 + ir + m - 1, j0, nk) || jr + n <= first_key(J, k->i0 + ir, j0)) continue;
            float *s = k->S + ir * k->ls + jr;
            if (J->pairs)
                kn->ukernel_bf16(dhp / 2, (const uint16_t *)(const void *)k->qp + ir * dhp,
                                 (const uint16_t *)(const void *)k->kp + (j0 + jr) * dhp, s, k->ls, m, n, 0, a->scale);
            else kn->ukernel(Dh, k->qp + ir * Dh, k->kp + (j0 + jr) * Dh, s, k->ls, m, n, 0);
        }
    }
}

/* Row i's scores [rb, lim) of the block from j0: masked keys and those the
   window hides set to -inf, the others given their bias and ALiBi term;
   how many stay visible. */
static int64_t row_mask(const sdpa_job *J, const sdpa_blk *k, int64_t i, int64_t j0, float *s, int64_t rb,
                        int64_t lim)
{
    const tk_sdpa_args *a = J->a;
    const tk_sdpa_opts *o = &a->o;
    int64_t visible = lim - rb;
    const uint8_t *mi = k->M ? k->M + i * a->ms_q + j0 * a->ms_k : NULL;
    if (mi && !k->extra) {
        for (int64_t j = rb; j < lim; j++)
            if (!mi[j * a->ms_k]) { s[j] = -INFINITY; visible--; }
    } else if (k->extra) {
        for (int64_t j = rb; j < lim; j++) {
            if (!tk_sdpa_band(o, k->i0 + i, j0 + j, J->off) || (mi && !mi[j * a->ms_k])) {
                s[j] = -INFINITY;
                visible--;
            } else {
                s[j] += tk_sdpa_extra(o, k->slope, k->b, k->h, k->i0 + i, j0 + j, J->off);
            }
        }
    }
    return visible;
}

/* P = exp(s - mnew) over the row's lim computed keys into p (with pairs
   as bfloat16 bits into p16, zeros up to `to`), dropout applied and
   rounded to the 16-bit dtype as P V takes it; the row's sum before
   dropout, NaN when a visible score was NaN or +inf. */
static float row_exp(const sdpa_job *J, const sdpa_blk *k, int64_t i, int64_t j0, int64_t rb, const float *s,
                     int64_t lim, int64_t to, float mnew, float *p, uint16_t *p16)
{
    const tk_sdpa_args *a = J->a;
    const tk_sdpa_opts *o = &a->o;
    const tk_kern *kn = J->kn;
    int hf = a->half;
    /* 16-bit without dropout: P rounded in the exp pass where the path can */
    int fused = hf && o->dropout <= 0.0f && kn->sdpa_exp_sum_half;
    float (*exp_sum)(int64_t, const float *, float, float *) =
        kn->sdpa_exp_sum ? kn->sdpa_exp_sum : kn->exp_sum;
    float sum = J->pairs && fused ? kn->sdpa_exp_sum_bf16(lim, s, mnew, p16)
                : fused ? kn->sdpa_exp_sum_half(lim, s, mnew, p, hf == TK_SDPA_BF16)
                : exp_sum(lim, s, mnew, p);
    if (sum != sum) return sum;
    zero_p(J, p, p16, lim, to);
    if (o->dropout > 0.0f) {   /* after the sum: lse and l are the undropped ones */
        uint64_t n0 = (uint64_t)((k->bh * a->Nq + k->i0 + i) * a->Nk + j0 + rb);
        for (int64_t j = 0; j < lim; j++)
            p[j] *= tk_sdpa_keep(o->seed, n0 + (uint64_t)j) >= o->dropout ? J->keep_scale : 0.0f;
    }
    if (J->pairs && !fused) tk_half_from_f32(1, lim, p, p16);   /* P V takes bfloat16 bits */
    else if (hf && !fused) tk_sdpa_round(kn, hf, lim, p);       /* P V takes P in the 16-bit dtype */
    return sum;
}

/* 2. Row i of the block from j0 (nk keys): mask, online softmax, P =
   exp(S - m) in place of S. */
static void blk_softmax_row(const sdpa_job *J, sdpa_blk *k, int64_t i, int64_t j0, int64_t nk)
{
    const tk_sdpa_args *a = J->a;
    const tk_kern *kn = J->kn;
    int mr = kn->mr;
    float *s = k->S + i * k->ls, *p = s;
    int64_t lim = row_keys(J, k->i0 + i, j0, nk);
    int64_t rb = first_key(J, k->i0 + i / mr * mr, j0);   /* the sliver's first computed key */
    if (rb > lim) rb = lim;
    int64_t visible = row_mask(J, k, i, j0, s, rb, lim);
    if (k->W) {   /* the masked scores; keys before rb and from lim on are hidden (P is 0 there) */
        for (int64_t j = 0; j < rb; j++) s[j] = -INFINITY;
        for (int64_t j = lim; j < nk; j++) s[j] = -INFINITY;
        memcpy(k->W + i * a->Nk + j0, s, (size_t)nk * sizeof(float));
    }
    s += rb, p += rb, lim -= rb;   /* the row's computed keys, [rb, lim) */
    uint16_t *p16 = k->P16 + i * k->ls + rb;   /* with pairs: P's bfloat16 row */
    if (visible > 0) k->seen[i] = 1.0f;
    if (k->bad[i] != 0.0f) {               /* the row will be NaN: skip its softmax */
        zero_p(J, p, p16, 0, nk - rb);
        return;
    }
    float mnew = kn->row_max(lim, s);
    if (mnew < k->mrow[i]) mnew = k->mrow[i];
    if (mnew == -INFINITY) {            /* nothing finite yet; a NaN the max dropped? */
        for (int64_t j = 0; j < lim; j++) if (s[j] != s[j]) k->bad[i] = 1.0f;
        zero_p(J, p, p16, 0, nk - rb);
        return;
    }
    /* A visible NaN or +inf score (hidden ones are -inf here) makes the
       sum NaN: exp(NaN - m), exp(inf - inf) or a NaN max. So the sum is
       the row's check, at no extra pass. */
    float sum = row_exp(J, k, i, j0, rb, s, lim, nk - rb, mnew, p, p16);
    if (sum != sum) {
        k->bad[i] = 1.0f;
        zero_p(J, p, p16, 0, nk - rb);
        return;
    }
    /* alpha = exp(m_old - m_new): 1 when the max stays (most blocks after
       a row's first), and on the row's first visible block 0 for a sum of
       0 and an O row of zeros (or NaN from 0 v), which scaling would leave
       as they are */
    float *o = k->O + i * J->dvp;
    if (k->mrow[i] == -INFINITY) k->lrow[i] = sum;
    else if (k->mrow[i] != mnew) {
        float alpha = expf(k->mrow[i] - mnew);
        k->lrow[i] = k->lrow[i] * alpha + sum;
        kn->scale(a->Dv, alpha, o, o);
    } else k->lrow[i] += sum;
    k->mrow[i] = mnew;
}

/* 3. O += P V, P read in place by full slivers (a last partial sliver is
   packed, zero padded), over the keys the sliver sees: its P is +0 from
   there on, and the micro-kernel sums each output as one fma chain over
   keys in order, so dropping those trailing 0 v terms leaves each sum as
   it was (but a -0 sum, which such a term may have turned into +0; added
   to O, which is never -0 but after an underflowing rescale, it shows as
   the same bits). As with the keys past the block, a hidden key's v is
   not read. */
static void blk_pv(const sdpa_job *J, const sdpa_blk *k, int64_t j0, int64_t nk)
{
    const tk_kern *kn = J->kn;
    int mr = kn->mr, nr = kn->nr;
    int64_t dvp = J->dvp, Dv = J->a->Dv, ls = k->ls;
    for (int64_t ir = 0; ir < k->nq; ir += mr) {
        int m = k->nq - ir < mr ? (int)(k->nq - ir) : mr;
        int64_t kl = row_keys(J, k->i0 + ir + m - 1, j0, nk);   /* keys the sliver sees */
        int64_t kb = first_key(J, k->i0 + ir, j0);              /* from its first (window) */
        const float *P = k->S + ir * ls + kb;
        if (kl <= kb) continue;
        kl -= kb;
        if (J->pairs) {
            pv_pairs(J, k->P16 + ir * ls + kb, ls, m, kl, (uint16_t *)(void *)k->pp,
                     (const uint16_t *)(const void *)k->vp + (j0 + kb) * nr, k->nkp, k->O + ir * dvp);
            continue;
        }
        if (m < mr || !kn->ukernel_rows) {
            for (int64_t i = 0; i < mr; i++)
                for (int64_t j = 0; j < kl; j++) k->pp[j * mr + i] = i < m ? P[i * ls + j] : 0.0f;
            P = NULL;
        }
        for (int64_t t = 0; t < dvp; t += nr) {
            int n = Dv - t < nr ? (int)(Dv - t) : nr;
            const float *vs = k->vp + t * k->nkp + (j0 + kb) * nr;
            float *o = k->O + ir * dvp + t;
            if (P) kn->ukernel_rows(kl, P, ls, vs, o, dvp, n, 1);
            else kn->ukernel(kl, k->pp, vs, o, dvp, m, n, 1);
        }
    }
}

/* The key blocks from the first the window leaves to the last the block
   sees: scores, softmax, P V. The last fetches the output rows and the
   next task's Q rows, a row of each with each score row. */
static void blk_keys(const sdpa_job *J, sdpa_blk *k)
{
    const tk_sdpa_args *a = J->a;
    int hf = a->half;
    for (int64_t j0 = 0; j0 < k->jend; j0 += J->bk) {
        int64_t nk = k->jend - j0 < J->bk ? k->jend - j0 : J->bk;
        if (j0 + nk <= k->lo0 && j0 >= a->o.sinks) continue;   /* below the band */
        const float *nQ = NULL;
        int64_t nq1 = 0, last = j0 + J->bk >= k->jend;
        if (last && k->task + 1 < J->ntask && a->qs_d == 1) {
            int64_t nbh, n0 = task_row0(J, k->task + 1, &nbh);
            nQ = tk_sdpa_at(hf, a->q, nbh / a->Hq * a->qs_b + nbh % a->Hq * a->qs_h + n0 * a->qs_n);
            nq1 = a->Nq - n0 < J->bq ? a->Nq - n0 : J->bq;
        }
        blk_scores(J, k, j0, nk);
        for (int64_t i = 0; i < k->nq; i++) {
            if (last) fetch(k->outb + i * a->Dv * (hf ? 2 : 4), a->Dv * (hf ? 2 : 4), 1);
            if (i < nq1) fetch(tk_sdpa_at(hf, nQ, i * a->qs_n), a->Dh * (hf ? 2 : 4), 0);
            blk_softmax_row(J, k, i, j0, nk);
        }
        blk_pv(J, k, j0, nk);
    }
}

/* 4. out = O / l; rows that saw no key give zeros; rows with a NaN or
   +inf score, or only -inf scores, give NaN as the formula does. The
   weights from the saved masked scores, final max and sum. Returns the
   rows that saw no key. */
static int64_t blk_finish(const sdpa_job *J, const sdpa_blk *k)
{
    const tk_sdpa_args *a = J->a;
    const tk_sdpa_opts *o = &a->o;
    const tk_kern *kn = J->kn;
    int hf = a->half;
    int64_t empty = 0, Dv = a->Dv, jend = k->jend;
    for (int64_t i = 0; i < k->nq; i++) {
        float *w = k->W ? k->W + i * a->Nk : NULL, *oi = k->O + i * J->dvp;
        int64_t at = k->out0 + i * Dv;
        if (k->seen[i] == 0.0f || k->bad[i] != 0.0f || k->mrow[i] == -INFINITY) {
            float fill = k->seen[i] != 0.0f ? NAN : 0.0f;
            fill_row(hf, a->out, at, Dv, fill);
            if (w) for (int64_t j = 0; j < a->Nk; j++) w[j] = fill;
            if (k->lse) k->lse[i] = k->seen[i] != 0.0f ? NAN : -INFINITY;
            empty += k->seen[i] == 0.0f;
            continue;
        }
        float inv = 1.0f / k->lrow[i];
        if (k->lse) k->lse[i] = k->mrow[i] + logf(k->lrow[i]);
        if (!hf) kn->scale(Dv, inv, oi, a->out + at);
        else {   /* scaled in place, then rounded once into out */
            kn->scale(Dv, inv, oi, oi);
            put_row(hf, a->out, at, Dv, oi);
        }
        if (!w) continue;
        kn->exp_sum(jend, w, k->mrow[i], w);
        kn->scale(jend, inv, w, w);
        if (o->dropout > 0.0f) {   /* the weights V is multiplied by */
            uint64_t n0 = (uint64_t)((k->bh * a->Nq + k->i0 + i) * a->Nk);
            for (int64_t j = 0; j < jend; j++)
                w[j] *= tk_sdpa_keep(o->seed, n0 + (uint64_t)j) >= o->dropout ? J->keep_scale : 0.0f;
        }
        memset(w + jend, 0, (size_t)(a->Nk - jend) * sizeof(float));
    }
    return empty;
}

/* One task: a head to the path's small-shape kernel, or a query block of
   it through the tiled steps (float32, 16-bit converted, or bfloat16
   pairs, as the job says). */
static void sdpa_task(sdpa_job *J, int64_t task)
{
    const tk_sdpa_args *a = J->a;
    sdpa_blk k;
    if (J->small) {
        int64_t bh;
        task_row0(J, task, &bh);
        int64_t e = J->kn->sdpa_head(a, bh / a->Hq, bh % a->Hq);
        if (e >= 0) { J->empty[task] = e; return; }
    }
    J->empty[task] = 0;                     /* read by the caller even if this task fails */
    if (!blk_start(J, task, &k)) return;
    if (!blk_scratch(J, &k)) { J->failed = 1; return; }
    blk_pack_kv(J, &k);
    blk_pack_q(J, &k);
    memset(k.O, 0, (size_t)(k.nqp * J->dvp) * sizeof(float));
    for (int64_t i = 0; i < k.nq; i++) { k.mrow[i] = -INFINITY; k.lrow[i] = k.seen[i] = k.bad[i] = 0.0f; }
    if (k.W && a->o.window > 0)   /* the blocks the band skips are hidden keys */
        for (int64_t t = 0; t < k.nq * a->Nk; t++) k.W[t] = -INFINITY;
    blk_keys(J, &k);
    J->empty[task] = blk_finish(J, &k);
}

static void sdpa_range(void *ctx, int64_t begin, int64_t end)
{
    for (int64_t t = begin; t < end; t++) sdpa_task(ctx, t);
}

static int small_on = 1;

void tk_sdpa_small(int on)
{
    small_on = on;
}

int tk_sdpa_small_fits(const tk_kern *kn, int64_t Nq, int64_t Nk, int64_t Dh, int64_t Dv, int backward)
{
    return small_on && (backward ? kn->sdpa_bwd_head != NULL : kn->sdpa_head != NULL)
           && Nq <= kn->sdpa_small_n && Nk <= kn->sdpa_small_n && Dh <= 16 && Dv <= 16;
}

int64_t tk_sdpa(const tk_sdpa_args *a)
{
    if (a->B <= 0 || a->Hq <= 0 || a->Nq <= 0) return 0;
    if (a->Nk <= 0) {                      /* no keys at all: every row empty */
        memset(a->out, 0, (size_t)(a->B * a->Hq * a->Nq * a->Dv) * (a->half ? 2u : 4u));
        if (a->lse) for (int64_t r = 0; r < a->B * a->Hq * a->Nq; r++) a->lse[r] = -INFINITY;
        return a->B * a->Hq * a->Nq;
    }
    const tk_kern *kn = tk_kern_now();
    sdpa_job J = { a, kn, a->Hq / a->Hkv, a->Nk - a->Nq, 0, BK_COLS, 0, 0, 0, 0, 0, 0, NULL, 0, 1.0f };
    J.small = !a->weights && !a->half && !tk_sdpa_opts_any(&a->o) && tk_sdpa_small_fits(kn, a->Nq, a->Nk, a->Dh, a->Dv, 0);
    J.pairs = a->half == TK_SDPA_BF16 && kn->ukernel_bf16;
    J.keep_scale = a->o.dropout > 0.0f ? (float)(1.0 / (1.0 - (double)a->o.dropout)) : 1.0f;
    J.bq = J.small ? a->Nq : BQ_ROWS / kn->mr * kn->mr;   /* a head, or whole slivers */
    J.nqb = (a->Nq + J.bq - 1) / J.bq;
    J.dvp = (a->Dv + kn->nr - 1) / kn->nr * kn->nr;
    J.call = ++sdpa_calls;
    int64_t ntask = J.ntask = a->B * a->Hq * J.nqb;
    J.empty = calloc((size_t)ntask, sizeof(int64_t));
    if (!J.empty) return tk_sdpa_ref(a);
    tk_parallel_for(ntask, 1, sdpa_range, &J);
    int64_t empty = 0;
    for (int64_t t = 0; t < ntask; t++) empty += J.empty[t];
    free(J.empty);
    if (J.failed) return tk_sdpa_ref(a);   /* out of scratch memory */
    return empty;
}
