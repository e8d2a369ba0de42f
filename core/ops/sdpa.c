/*
** sdpa.c — the front-end of tt_sdpa (scaled dot-product attention): checks
** q, k, v and the mask, flattens the batch dims, and hands strided inputs
** to the fused kernel (core/kernel/sdpa.c), which never builds the N x N
** matrix unless the weights are asked for; GQA reads shared K/V in place.
** Its backward (tt__bw_sdpa) runs the fused backward kernel
** (core/kernel/sdpa_backward.c) from the rows' saved log-sum-exp.
*/
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernels.h"
#include "tensor/iter.h"
#include "tt_internal.h"

#define SHAPE_BUF 256

static const char *shp(const tt_tensor *t, char *buf)
{
    return tt_shape_str(t, buf, SHAPE_BUF);
}

/* A shape that no tensor holds yet, with its dim names (names may be
   NULL), in the form of tt_shape_str: "[B=2,H=4,5,5]". */
static const char *fmt_shape(char *buf, int nd, const int64_t *shape, const char *const *names)
{
    tt_tensor t;
    memset(&t, 0, sizeof t);
    t.ndim = nd;
    memcpy(t.shape, shape, (size_t)nd * sizeof *shape);
    if (names) memcpy(t.names, names, (size_t)nd * sizeof *names);
    return shp(&t, buf);
}

/* A tensor's batch dims [0, nbd) as one stride; a contiguous copy in *tmp
   when they cannot merge (then *t points at it). */
static tt_status flat_batch(const tt_tensor **t, tt_tensor *tmp, int nbd, int64_t *s)
{
    if (tt__iter_flat(nbd, (*t)->shape, (*t)->stride, s)) return TT_OK;
    tt_status st = tt_contiguous(tmp, *t);
    if (st) return st;
    *t = tmp;
    tt__iter_flat(nbd, tmp->shape, tmp->stride, s);
    return TT_OK;
}

/* q, k, v and the mask as the kernels read them: the batch dims flattened
   to one stride (through contiguous copies where they cannot merge), the
   mask broadcast over the scores [..., Hq, Nq, Nk]. The forward and the
   backward build the same one from the same tensors. */
typedef struct sdpa_layout {
    const tt_tensor *q, *k, *v;
    tt_tensor qc, kc, vc, mc;           /* the copies, when needed */
    int64_t B, Hq, Hkv, Nq, Nk, Dh, Dv;
    int64_t qsb, ksb, vsb;
    const uint8_t *mdata;
    int64_t msb, msh, msq, msk;         /* the mask's strides over the scores */
} sdpa_layout;

/* The mask materialised over the batch dims only (they could not merge). */
static tt_status mask_copy(sdpa_layout *L, const tt_tensor *mask, int nbd, const int64_t *tshape, int64_t *mst)
{
    int nd = L->q->ndim;
    tt_tensor h = *mask;
    h.ndim = nd;
    for (int i = 0; i < nd; i++) {
        h.shape[i] = i < nbd || mst[i] ? tshape[i] : 1;
        h.stride[i] = mst[i];
        h.names[i] = NULL;
    }
    tt_status st = tt__alloc(&L->mc, "sdpa", TT_BOOL, nd, h.shape, NULL);
    if (st) return st;
    tt__copy(&L->mc, &h);
    for (int i = 0; i < nd; i++) mst[i] = L->mc.shape[i] == 1 ? 0 : L->mc.stride[i];
    tt__iter_flat(nbd, tshape, mst, &L->msb);
    L->mdata = tt_data_bool(&L->mc);
    return TT_OK;
}

/* q, k, v and mask passed sdpa_impl's checks. */
static tt_status layout_init(sdpa_layout *L, const tt_tensor *q, const tt_tensor *k, const tt_tensor *v,
                             const tt_tensor *mask)
{
    memset(L, 0, sizeof *L);
    int nd = q->ndim, nbd = nd >= 3 ? nd - 3 : 0, hd = nd - 3;
    L->B = 1;
    for (int i = 0; i < nbd; i++) L->B *= q->shape[i];
    L->Hq = hd >= 0 ? q->shape[hd] : 1;
    L->Hkv = hd >= 0 ? k->shape[hd] : 1;
    L->Nq = q->shape[nd - 2];
    L->Dh = q->shape[nd - 1];
    L->Nk = k->shape[nd - 2];
    L->Dv = v->shape[nd - 1];
    L->q = q, L->k = k, L->v = v;
    tt_status st = flat_batch(&L->q, &L->qc, nbd, &L->qsb);
    if (st == TT_OK) st = flat_batch(&L->k, &L->kc, nbd, &L->ksb);
    if (st == TT_OK) st = flat_batch(&L->v, &L->vc, nbd, &L->vsb);
    if (st || !mask) return st;
    int64_t tshape[TT_MAX_DIMS];
    memcpy(tshape, q->shape, (size_t)nd * sizeof *tshape);
    tshape[nd - 1] = L->Nk;
    int64_t mst[TT_MAX_DIMS] = {0};
    tt__broadcast_strides(mask, nd, tshape, mst);
    L->mdata = tt_data_bool(mask);
    if (!tt__iter_flat(nbd, tshape, mst, &L->msb)) st = mask_copy(L, mask, nbd, tshape, mst);
    L->msh = hd >= 0 ? mst[hd] : 0;
    L->msq = mst[nd - 2];
    L->msk = mst[nd - 1];
    return st;
}

static void layout_free(sdpa_layout *L)
{
    tt_tensor_release(&L->qc);
    tt_tensor_release(&L->kc);
    tt_tensor_release(&L->vc);
    tt_tensor_release(&L->mc);
}

/* The operands' fields shared by tk_sdpa_args and tk_sdpa_bwd_args, in
   their order. */
#define STRIDES(t) ((t)->ndim >= 3 ? (t)->stride[(t)->ndim - 3] : 0), (t)->stride[(t)->ndim - 2], \
                   (t)->stride[(t)->ndim - 1]
#define ROW_STRIDES(t) ((t)->ndim >= 3 ? (t)->stride[(t)->ndim - 3] : 0), (t)->stride[(t)->ndim - 2]
#define LAYOUT_ARGS(L) \
    (L)->B, (L)->Hq, (L)->Hkv, (L)->Nq, (L)->Nk, (L)->Dh, (L)->Dv, \
    tt_data_f32((L)->q), (L)->qsb, STRIDES((L)->q), \
    tt_data_f32((L)->k), (L)->ksb, STRIDES((L)->k), \
    tt_data_f32((L)->v), (L)->vsb, STRIDES((L)->v), \
    (L)->mdata, (L)->msb, (L)->msh, (L)->msq, (L)->msk

typedef struct sdpa_info {
    double flops;
    int64_t empty;
    float scale;
} sdpa_info;

/* (query, key) pairs per head the kernels compute, for the FLOP counts:
   all of them, or those on and below the lower-right causal diagonal. */
static double visible_pairs(int64_t Nq, int64_t Nk, int causal)
{
    if (!causal) return (double)Nq * (double)Nk;
    double pairs = 0.0;
    for (int64_t i = 0; i < Nq; i++) {
        int64_t lim = i + Nk - Nq + 1;
        pairs += (double)(lim < 0 ? 0 : lim > Nk ? Nk : lim);
    }
    return pairs;
}

/* q [..., Hq, Nq, Dh], k [..., Hkv, Nk, Dh], v [..., Hkv, Nk, Dv]; 2-D
   inputs are one head. Scores are [..., Hq, Nq, Nk]. lse: NULL, or gets
   each row's log-sum-exp [B * Hq * Nq] for the backward. */
static tt_status sdpa_impl(tt_tensor *out, tt_tensor *weights, tt_tensor *lse, const tt_tensor *q,
                           const tt_tensor *k, const tt_tensor *v, const tt_tensor *mask, int causal,
                           double scale, sdpa_info *info)
{
    char s1[SHAPE_BUF], s2[SHAPE_BUF], s3[SHAPE_BUF];
    if (!isnan(scale) && !(fabs(scale) <= (double)FLT_MAX))
        return tt__err(TT_EARG, "sdpa: scale must be a finite float32, got %g", scale);
    const tt_tensor *in[3] = { q, k, v };
    for (int i = 0; i < 3; i++)
        if (in[i]->dtype != TT_FLOAT32)
            return tt__err(TT_EARG, "sdpa: %c must be float32, got %s %s; hint: x:float()",
                           "qkv"[i], tt_dtype_name(in[i]->dtype), shp(in[i], s1));
    int nd = q->ndim;
    if (nd < 2 || k->ndim != nd || v->ndim != nd) {
        /* one input a dim short: usually the head dim */
        int lo = 0, hi = 0;
        for (int i = 1; i < 3; i++) {
            if (in[i]->ndim < in[lo]->ndim) lo = i;
            if (in[i]->ndim > in[hi]->ndim) hi = i;
        }
        char hint[96] = "";
        if (in[lo]->ndim < 2)
            snprintf(hint, sizeof hint, "; hint: one position is a row, %c:unsqueeze(1)", "qkv"[lo]);
        else if (in[hi]->ndim - in[lo]->ndim == 1)
            snprintf(hint, sizeof hint, "; hint: %c:unsqueeze(-3) gives %c a head dim of size 1",
                     "qkv"[lo], "qkv"[lo]);
        return tt__err(TT_ESHAPE, "sdpa: q, k and v need the same number of dims (at least 2): "
                       "q %s, k %s, v %s%s", shp(q, s1), shp(k, s2), shp(v, s3), hint);
    }
    int nbd = nd >= 3 ? nd - 3 : 0;         /* leading batch dims */
    int hd = nd - 3;                        /* head dim, if any */
    int64_t Hq = hd >= 0 ? q->shape[hd] : 1, Hkv = hd >= 0 ? k->shape[hd] : 1;
    int64_t Nq = q->shape[nd - 2], Dh = q->shape[nd - 1];
    int64_t Nk = k->shape[nd - 2], Dv = v->shape[nd - 1];
    for (int i = 0; i < nbd; i++)
        if (k->shape[i] != q->shape[i] || v->shape[i] != q->shape[i]) {
            /* no broadcasting here; a size-1 batch dim of k or v expands */
            const tt_tensor *t = k->shape[i] != q->shape[i] ? k : v;
            int ones = 1;
            for (int j = 0; j < nbd; j++) ones &= t->shape[j] == q->shape[j] || t->shape[j] == 1;
            char hint[SHAPE_BUF] = "q, k and v need the same batch dims";
            if (ones) {
                int len = snprintf(hint, sizeof hint, "sdpa does not broadcast them: %c:expand(",
                                   t == k ? 'k' : 'v');
                for (int j = 0; j < nd && len < (int)sizeof hint; j++)
                    len += snprintf(hint + len, sizeof hint - (size_t)len, "%s%lld", j ? ", " : "",
                                    (long long)(j < nbd ? q->shape[j] : t->shape[j]));
                if (len < (int)sizeof hint)
                    snprintf(hint + len, sizeof hint - (size_t)len, ")%s",
                             t == k && v->shape[i] != q->shape[i] ? ", and v likewise" : "");
            }
            return tt__err(TT_ESHAPE, "sdpa: batch dims differ: q %s, k %s, v %s (dim %d: %lld, %lld, %lld); "
                           "hint: %s", shp(q, s1), shp(k, s2), shp(v, s3), i + 1, (long long)q->shape[i],
                           (long long)k->shape[i], (long long)v->shape[i], hint);
        }
    if (k->shape[nd - 1] != Dh)
        return tt__err(TT_ESHAPE, "sdpa: q and k head sizes differ: q %s, k %s (%lld vs %lld)",
                       shp(q, s1), shp(k, s2), (long long)Dh, (long long)k->shape[nd - 1]);
    if (v->shape[nd - 2] != Nk)
        return tt__err(TT_ESHAPE, "sdpa: k and v lengths differ: k %s, v %s (%lld vs %lld)",
                       shp(k, s1), shp(v, s2), (long long)Nk, (long long)v->shape[nd - 2]);
    if (hd >= 0 && v->shape[hd] != Hkv)
        return tt__err(TT_ESHAPE, "sdpa: k and v head counts differ: k %s, v %s (%lld vs %lld)",
                       shp(k, s1), shp(v, s2), (long long)Hkv, (long long)v->shape[hd]);
    if (Hkv == 0 ? Hq != 0 : Hq % Hkv != 0)
        return tt__err(TT_ESHAPE, "sdpa: query heads (%lld) are not a multiple of kv heads (%lld): "
                       "q %s, k %s", (long long)Hq, (long long)Hkv, shp(q, s1), shp(k, s2));

    /* the scores' shape, which the mask must broadcast to */
    int nt = nd;
    int64_t tshape[TT_MAX_DIMS];
    memcpy(tshape, q->shape, (size_t)nd * sizeof *tshape);
    tshape[nt - 1] = Nk;
    if (mask) {
        if (mask->dtype != TT_BOOL)
            return tt__err(TT_EARG, "sdpa: mask must be bool (true = may attend), got %s %s; hint: mask:bool()",
                           tt_dtype_name(mask->dtype), shp(mask, s1));
        /* the scores as matmul would name them: batch and head dims from q
           (else k), rows from q, columns from k */
        const char *tnames[TT_MAX_DIMS];
        for (int i = 0; i < nt; i++) tnames[i] = q->names[i] ? q->names[i] : k->names[i];
        tnames[nt - 2] = q->names[nd - 2];
        tnames[nt - 1] = k->names[nd - 2];
        tt_tensor scores_names = {.ndim = nt};
        tt__set_names(&scores_names, tnames);
        memcpy(tnames, scores_names.names, sizeof tnames);
        int bad = -1;   /* failing dim of the mask, counted from the end (1 = last) */
        for (int i = 1; i <= mask->ndim && i <= nt && bad < 0; i++) {
            const int64_t m = mask->shape[mask->ndim - i];
            if (m != 1 && m != tshape[nt - i]) bad = i;
        }
        if (bad >= 0 || mask->ndim > nt) {
            fmt_shape(s2, nt, tshape, tnames);
            if (bad < 0)
                return tt__err(TT_ESHAPE, "sdpa: mask %s has more dims than the scores %s (%d vs %d); "
                               "hint: the mask is [..., Nq, Nk], Nq = %lld queries and Nk = %lld keys",
                               shp(mask, s1), s2, mask->ndim, nt, (long long)Nq, (long long)Nk);
            char hint[160];
            if (mask->ndim == 2 && nt >= 3 && mask->shape[0] == tshape[0] && mask->shape[1] == Nk) {
                /* a padding mask [B, Nk] meant as [B, 1, .., 1, Nk] */
                int len = snprintf(hint, sizeof hint, "a padding mask [B, Nk] needs mask:reshape(%lld",
                                   (long long)tshape[0]);
                for (int i = 1; i < nt - 1 && len < (int)sizeof hint; i++)
                    len += snprintf(hint + len, sizeof hint - (size_t)len, ", 1");
                if (len < (int)sizeof hint)
                    snprintf(hint + len, sizeof hint - (size_t)len, ", %lld) to broadcast over the %s",
                             (long long)Nk, nt > 3 ? "heads and queries" : "queries");
            } else if (mask->ndim >= 2 && Nq != Nk && mask->shape[mask->ndim - 2] == Nk &&
                       mask->shape[mask->ndim - 1] == Nq) {
                snprintf(hint, sizeof hint, "the mask is [Nk, Nq]; mask:mT() puts the %lld queries "
                         "first", (long long)Nq);
            } else {
                snprintf(hint, sizeof hint, "the mask's last two dims are Nq = %lld queries and Nk = %lld keys "
                         "(or 1 to broadcast)", (long long)Nq, (long long)Nk);
            }
            return tt__err(TT_ESHAPE, "sdpa: mask %s does not broadcast to the scores %s (dim -%d: %lld vs %lld); "
                           "hint: %s", shp(mask, s1), s2, bad, (long long)mask->shape[mask->ndim - bad],
                           (long long)tshape[nt - bad], hint);
        }
        /* named dims must agree, as in elementwise ops: a square [Nk, Nq]
           mask has the right shape and the wrong meaning */
        for (int i = 1; i <= mask->ndim; i++) {
            const char *a = mask->names[mask->ndim - i], *b = tnames[nt - i];
            if (a && b && a != b && strcmp(a, b) != 0) {
                fmt_shape(s2, nt, tshape, tnames);
                int swapped = i <= 2 && mask->ndim >= 2 && tnames[nt - 1] && tnames[nt - 2] &&
                              mask->names[mask->ndim - 1] && mask->names[mask->ndim - 2] &&
                              strcmp(mask->names[mask->ndim - 1], tnames[nt - 2]) == 0 &&
                              strcmp(mask->names[mask->ndim - 2], tnames[nt - 1]) == 0;
                return tt__err(TT_ESHAPE, "sdpa: dim names differ: '%s' vs '%s' at dim -%d of mask %s and "
                               "the scores %s; hint: %s", a, b, i, shp(mask, s1), s2,
                               swapped ? "the mask is [keys, queries]; mask:mT() swaps them"
                                       : "rename with x:named(...)");
            }
        }
    }

    sdpa_layout L;
    tt_status st = layout_init(&L, q, k, v, mask);
    int64_t oshape[TT_MAX_DIMS];
    const char *onames[TT_MAX_DIMS], *wnames[TT_MAX_DIMS];
    memcpy(oshape, q->shape, (size_t)nd * sizeof *oshape);
    memcpy(onames, q->names, (size_t)nd * sizeof *onames);
    memcpy(wnames, q->names, (size_t)nd * sizeof *wnames);
    oshape[nd - 1] = Dv;
    onames[nd - 1] = v->names[nd - 1];
    wnames[nd - 1] = k->names[nd - 2];
    if (st == TT_OK) st = tt__alloc(out, "sdpa", TT_FLOAT32, nd, oshape, onames);
    if (st == TT_OK && weights) {
        st = tt__alloc(weights, "sdpa", TT_FLOAT32, nt, tshape, wnames);
        if (st) tt_tensor_release(out);
    }
    if (st == TT_OK && lse) {
        int64_t rows = 1;
        for (int i = 0; i < nd - 1; i++) rows *= q->shape[i];
        st = tt__alloc(lse, "sdpa", TT_FLOAT32, 1, &rows, NULL);
        if (st) {
            tt_tensor_release(out);
            if (weights) tt_tensor_release(weights);
        }
    }
    if (st == TT_OK) {
        int64_t B = 1;
        for (int i = 0; i < nbd; i++) B *= q->shape[i];
        float sc = isnan(scale) ? (Dh > 0 ? (float)(1.0 / sqrt((double)Dh)) : 1.0f) : (float)scale;
        info->scale = sc;
        info->flops = 2.0 * (double)B * (double)Hq * visible_pairs(Nq, Nk, causal) * (double)(Dh + Dv);
        info->empty = 0;
        if (B * Hq * Nq == 0) {
            /* nothing to compute */
        } else if (Nk == 0) {               /* no keys at all: every row is empty */
            memset(tt_data_f32(out), 0, (size_t)tt_numel(out) * sizeof(float));
            info->empty = B * Hq * Nq;
        } else {
            tk_sdpa_args ar = {
                LAYOUT_ARGS(&L), causal != 0, sc, tt_data_f32(out),
                weights ? tt_data_f32(weights) : NULL, lse ? tt_data_f32(lse) : NULL,
            };
            info->empty = tk_sdpa(&ar);
        }
    }
    layout_free(&L);
    return st;
}

/* out's node saves q, k, v, out, the log-sum-exp (taken) and the mask; the
   weights get a node of their own whose backward is an error. Releases
   out and weights on failure. */
static tt_status record(tt_tensor *out, tt_tensor *weights, tt_tensor *lse, const tt_tensor *q,
                        const tt_tensor *k, const tt_tensor *v, const tt_tensor *mask, int causal, float scale)
{
    tt__agargs args = {0};
    args.s = scale;
    args.causal = causal != 0;
    tt_status st = tt__record(out, TT_OP_SDPA, q, k, v, &args);
    if (st == TT_OK && out->ag) {
        tt__node *n = out->ag->fn;
        n->saved[4] = *lse;
        memset(lse, 0, sizeof *lse);
        if (mask) tt__view_of(&n->saved[5], mask);
        tt__node_note_versions(n);
    }
    if (st == TT_OK && weights && out->ag) {
        args.weights = 1;
        st = tt__record(weights, TT_OP_SDPA, q, k, v, &args);
        if (st == TT_OK)    /* its backward reads nothing */
            for (int i = 0; i < TT__AG_SAVED; i++) tt_tensor_release(&weights->ag->fn->saved[i]);
        else
            tt_tensor_release(out);
    } else if (st && weights) {
        tt_tensor_release(weights);
    }
    return st;
}

/* A fresh float32 tensor shaped as x and laid out as x when x is dense
   (its strides a permutation of a contiguous layout's, the last 1), as PyTorch
   lays out a gradient like its input: heads split from [B, N, H*D] by a
   transpose get their gradient in [B, N, H*D] order, so the transpose's
   and the reshape's backward are views and nothing is copied. Else
   contiguous. */
static tt_status alloc_like(tt_tensor *d, const tt_tensor *x)
{
    tt_status st = tt__alloc(d, "sdpa", TT_FLOAT32, x->ndim, x->shape, NULL);
    if (st || tt_numel(x) == 0 || x->ndim == 0 || x->stride[x->ndim - 1] != 1) return st;
    int order[TT_MAX_DIMS], n = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (x->shape[i] == 1) continue;         /* any stride serves a dim of size 1 */
        int j = n++;
        for (; j > 0 && x->stride[order[j - 1]] < x->stride[i]; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    int64_t want = 1;
    for (int k = n - 1; k >= 0; k--) {
        if (x->stride[order[k]] != want) return TT_OK;
        want *= x->shape[order[k]];
    }
    for (int k = 0; k < n; k++) d->stride[order[k]] = x->stride[order[k]];
    return TT_OK;
}

/* dq, dk, dv from the fused backward, shaped and laid out as q, k, v (the
   layouts the kernel read them in); dk and dv come summed over the query
   heads that share a kv head. The kernel reads g through its strides. */
tt_status tt__bw_sdpa(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    if (n->args.weights)
        return tt__err(TT_EARG, "backward: sdpa's weights output has no gradient in tensortrace (its "
                       "output does); hint: softmax(q @ k:mT() * scale) built from ops gives weights "
                       "that are differentiable");
    const tt_tensor *q = &n->saved[0], *k = &n->saved[1], *out = &n->saved[2], *v = &n->saved[3];
    const tt_tensor *lse = &n->saved[4], *mask = n->saved[5].storage ? &n->saved[5] : NULL;
    tt_tensor gc = {0}, d[3] = {{0}};
    sdpa_layout L;
    tt_status st = layout_init(&L, q, k, v, mask);
    const tt_tensor *in[3] = {L.q, L.k, L.v};   /* as the kernel reads them (copies where needed) */
    for (int i = 0; i < 3 && st == TT_OK; i++) st = alloc_like(&d[i], in[i]);
    int nbd = q->ndim >= 3 ? q->ndim - 3 : 0;
    int64_t gsb = 0, dsb[3] = {0};
    if (st == TT_OK) st = flat_batch(&g, &gc, nbd, &gsb);
    for (int i = 0; i < 3 && st == TT_OK; i++) tt__iter_flat(nbd, d[i].shape, d[i].stride, &dsb[i]);
    if (st == TT_OK) {
        tk_sdpa_bwd_args ar = {
            LAYOUT_ARGS(&L), n->args.causal, (float)n->args.s,
            tt_data_f32(out), tt_data_f32(g), tt_data_f32(lse),
            tt_data_f32(&d[0]), tt_data_f32(&d[1]), tt_data_f32(&d[2]),
            1, gsb, STRIDES(g), dsb[0], ROW_STRIDES(&d[0]), dsb[1], ROW_STRIDES(&d[1]), dsb[2], ROW_STRIDES(&d[2]),
        };
        if (tk_sdpa_backward(&ar) != 0) st = tt__err(TT_ENOMEM, "backward: sdpa: out of memory");
        /* per pair: S = QK^T again (2 Dh), dV = P^T dO and dP = dO V^T (2 Dv
           each), dQ = dS K and dK = dS^T Q (2 Dh each): the trace's row */
        else tt__group_add_flops(2.0 * (double)L.B * (double)L.Hq * visible_pairs(L.Nq, L.Nk, n->args.causal)
                                 * (double)(3 * L.Dh + 2 * L.Dv));
    }
    layout_free(&L);
    tt_tensor_release(&gc);
    for (int i = 0; i < 3; i++) {
        if (st == TT_OK && (n->in[i].next || n->in[i].leaf)) gin[i] = d[i];
        else tt_tensor_release(&d[i]);
    }
    return st;
}

/* 16-bit q, k, v: converted at the boundary, each conversion an op of its
   own (traced, recorded: the gradients go back in the inputs' dtypes), the
   float32 kernel between, the results rounded once to the promoted dtype. */
static tt_status sdpa_half(tt_tensor *out, tt_tensor *weights, const tt_tensor *q, const tt_tensor *k,
                           const tt_tensor *v, const tt_tensor *mask, int causal, double scale,
                           int64_t *empty_rows)
{
    tt_dtype rd = tt_promote_float(tt_promote_float(q->dtype, k->dtype), v->dtype);
    tt_tensor f[5] = {{0}};             /* q, k, v, the output, the weights in float32 */
    tt_status st = tt_to_dtype(&f[0], q, TT_FLOAT32);
    if (st == TT_OK) st = tt_to_dtype(&f[1], k, TT_FLOAT32);
    if (st == TT_OK) st = tt_to_dtype(&f[2], v, TT_FLOAT32);
    if (st == TT_OK) st = tt_sdpa(&f[3], weights ? &f[4] : NULL, &f[0], &f[1], &f[2], mask, causal, scale, empty_rows);
    if (st == TT_OK) st = tt_to_dtype(out, &f[3], rd);
    if (st == TT_OK && weights && (st = tt_to_dtype(weights, &f[4], rd)) != TT_OK) tt_tensor_release(out);
    for (int i = 0; i < 5; i++) tt_tensor_release(&f[i]);
    return st;
}

tt_status tt_sdpa(tt_tensor *out, tt_tensor *weights, const tt_tensor *q, const tt_tensor *k,
                  const tt_tensor *v, const tt_tensor *mask, int causal, double scale,
                  int64_t *empty_rows)
{
    memset(out, 0, sizeof *out);
    if (weights) memset(weights, 0, sizeof *weights);
    if ((tt__is_half(q->dtype) || tt__is_half(k->dtype) || tt__is_half(v->dtype))
        && tt_dtype_is_float(q->dtype) && tt_dtype_is_float(k->dtype) && tt_dtype_is_float(v->dtype))
        return sdpa_half(out, weights, q, k, v, mask, causal, scale, empty_rows);
    tt__opscope sc = tt__op_enter();
    sdpa_info info = {0};
    int want = tt__grad_wanted(sc, q, k) || tt__grad_wanted(sc, v, NULL);
    tt_tensor lse = {0};
    tt_status st = sdpa_impl(out, weights, want ? &lse : NULL, q, k, v, mask, causal, scale, &info);
    if (empty_rows) *empty_rows = st == TT_OK ? info.empty : 0;
    if (st == TT_OK && want) st = record(out, weights, &lse, q, k, v, mask, causal, info.scale);
    tt_tensor_release(&lse);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_SDPA, out, q, k, v);
        if (mask) {
            ev.inputs[ev.ninputs++] = mask;
            ev.ninputs_total = ev.ninputs;
            ev.bytes += (double)tt_numel(mask);
        }
        if (weights) ev.bytes += 4.0 * (double)tt_numel(weights);
        ev.flops = info.flops;
        snprintf(ev.args, sizeof ev.args, "%sscale=%.4g%s", causal ? "causal, " : "",
                 (double)info.scale, weights ? ", weights" : "");
        if (info.empty > 0)
            snprintf(ev.note, sizeof ev.note, "%lld query row%s with no visible key: output zeros",
                     (long long)info.empty, info.empty == 1 ? "" : "s");
    }
    return tt__op_leave(sc, st, &ev);
}
