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

/* A mask or bias as the kernels read it: broadcast over the scores
   [..., Hq, Nq, Nk], strides (sb, sh, sq, sk) with the batch dims as one. */
typedef struct scores_operand {
    const void *data;
    int64_t sb, sh, sq, sk;
    tt_tensor copy;                     /* materialised over the batch dims, when they cannot merge */
} scores_operand;

/* q, k, v, the mask and the bias as the kernels read them: the batch dims
   flattened to one stride (through contiguous copies where they cannot
   merge). The forward and the backward build the same one from the same
   tensors. */
typedef struct sdpa_layout {
    const tt_tensor *q, *k, *v;
    tt_tensor qc, kc, vc;               /* the copies, when needed */
    int64_t B, Hq, Hkv, Nq, Nk, Dh, Dv;
    int64_t qsb, ksb, vsb;
    scores_operand m, bias;
} sdpa_layout;

static tt_status operand_init(scores_operand *o, const tt_tensor *t, int nd, const int64_t *tshape)
{
    int nbd = nd >= 3 ? nd - 3 : 0, hd = nd - 3;
    int64_t st[TT_MAX_DIMS] = {0};
    tt__broadcast_strides(t, nd, tshape, st);
    o->data = t->dtype == TT_BOOL ? (const void *)tt_data_bool(t) : (const void *)tt_data_f32(t);
    if (!tt__iter_flat(nbd, tshape, st, &o->sb)) {
        tt_tensor h = *t;
        h.ndim = nd;
        for (int i = 0; i < nd; i++) {
            h.shape[i] = i < nbd || st[i] ? tshape[i] : 1;
            h.stride[i] = st[i];
            h.names[i] = NULL;
        }
        tt_status s = tt__alloc(&o->copy, "sdpa", t->dtype, nd, h.shape, NULL);
        if (s) return s;
        tt__copy(&o->copy, &h);
        for (int i = 0; i < nd; i++) st[i] = o->copy.shape[i] == 1 ? 0 : o->copy.stride[i];
        tt__iter_flat(nbd, tshape, st, &o->sb);
        o->data = t->dtype == TT_BOOL ? (const void *)tt_data_bool(&o->copy) : (const void *)tt_data_f32(&o->copy);
    }
    o->sh = hd >= 0 ? st[hd] : 0;
    o->sq = st[nd - 2];
    o->sk = st[nd - 1];
    return TT_OK;
}

/* q, k, v, mask and bias passed sdpa_impl's checks. */
static tt_status layout_init(sdpa_layout *L, const tt_tensor *q, const tt_tensor *k, const tt_tensor *v,
                             const tt_tensor *mask, const tt_tensor *bias)
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
    int64_t tshape[TT_MAX_DIMS];
    memcpy(tshape, q->shape, (size_t)nd * sizeof *tshape);
    tshape[nd - 1] = L->Nk;
    if (st == TT_OK && mask) st = operand_init(&L->m, mask, nd, tshape);
    if (st == TT_OK && bias) st = operand_init(&L->bias, bias, nd, tshape);
    return st;
}

static void layout_free(sdpa_layout *L)
{
    tt_tensor_release(&L->qc);
    tt_tensor_release(&L->kc);
    tt_tensor_release(&L->vc);
    tt_tensor_release(&L->m.copy);
    tt_tensor_release(&L->bias.copy);
}

/* A float32 or 16-bit operand's data as the kernels take it (16-bit bits
   behind a float pointer, with half set), and the kernels' half code. */
static const float *raw(const tt_tensor *t)
{
    return t->dtype == TT_FLOAT32 ? tt_data_f32(t) : (const float *)(const void *)tt_data_u16(t);
}

static int kernel_half(tt_dtype dt)
{
    return dt == TT_BFLOAT16 ? TK_SDPA_BF16 : dt == TT_FLOAT16 ? TK_SDPA_F16 : TK_SDPA_F32;
}

/* A [..., H, N, D] operand's head, row and element strides. */
#define STRIDE_H(t) ((t)->ndim >= 3 ? (t)->stride[(t)->ndim - 3] : 0)
#define STRIDE_N(t) ((t)->stride[(t)->ndim - 2])
#define STRIDE_D(t) ((t)->stride[(t)->ndim - 1])
/* The options of a call as the Lua call's options table names them; a
   window is causal. The mask and bias are inputs 4 and on, as given. */
static void sdpa_event_args(tt_event *ev, const tt_sdpa_opts *o, double scale, int weights)
{
    tt__arg_bool(ev, "causal", "causal", o->causal || o->window > 0);
    tt__arg_num(ev, "scale", "=%.4g", scale);
    if (o->window > 0) tt__arg_int(ev, "window", "=%lld", o->window);
    if (o->sinks > 0) tt__arg_int(ev, "sinks", "=%lld", o->sinks);
    tt__arg_bool(ev, "alibi", "alibi", o->alibi);
    if (o->mask) tt__arg_input(ev, "mask", NULL, 4);
    if (o->bias) tt__arg_input(ev, "bias", "bias", o->mask ? 5 : 4);
    if (o->dropout > 0.0) tt__arg_num(ev, "dropout", "=%.3g", o->dropout);
    tt__arg_bool(ev, "weights", "weights", weights);
}

/* The operands' fields tk_sdpa_args and tk_sdpa_bwd_args share, by name. */
#define LAYOUT_ARGS(L) \
    .B = (L)->B, .Hq = (L)->Hq, .Hkv = (L)->Hkv, .Nq = (L)->Nq, .Nk = (L)->Nk, .Dh = (L)->Dh, .Dv = (L)->Dv, \
    .q = raw((L)->q), .qs_b = (L)->qsb, .qs_h = STRIDE_H((L)->q), .qs_n = STRIDE_N((L)->q), \
    .qs_d = STRIDE_D((L)->q), \
    .k = raw((L)->k), .ks_b = (L)->ksb, .ks_h = STRIDE_H((L)->k), .ks_n = STRIDE_N((L)->k), \
    .ks_d = STRIDE_D((L)->k), \
    .v = raw((L)->v), .vs_b = (L)->vsb, .vs_h = STRIDE_H((L)->v), .vs_n = STRIDE_N((L)->v), \
    .vs_d = STRIDE_D((L)->v), \
    .mask = (const uint8_t *)(L)->m.data, .ms_b = (L)->m.sb, .ms_h = (L)->m.sh, .ms_q = (L)->m.sq, \
    .ms_k = (L)->m.sk

/* sdpa's saved tensors: its row saves a, b, c and out (q, k, v and the
   output); the front-end fills the extra slots. */
enum { SDPA_Q = TT__SLOT_A, SDPA_K = TT__SLOT_B, SDPA_OUT = TT__SLOT_OUT, SDPA_V = TT__SLOT_C,
       SDPA_LSE = TT__SLOT_EXTRA, SDPA_MASK, SDPA_BIAS };
_Static_assert(SDPA_BIAS < TT__AG_SAVED, "sdpa: its saved slots fit a node");

/* The kernels' options from the layout's bias and the node's or call's. */
static tk_sdpa_opts kernel_opts(const sdpa_layout *L, int alibi, int64_t window, int64_t sinks, double dropout,
                                uint64_t seed)
{
    /* a window of Nk keys or more hides nothing causal does not (a query
       sees at most Nk keys): Nk then, which keeps the kernels' bounds
       (position + window) far from overflowing, forward and backward alike */
    if (window > L->Nk) window = L->Nk;
    tk_sdpa_opts o = { .bias = (const float *)L->bias.data, .bs_b = L->bias.sb, .bs_h = L->bias.sh,
                       .bs_q = L->bias.sq, .bs_k = L->bias.sk, .alibi = alibi, .window = window,
                       .sinks = sinks, .dropout = (float)dropout, .seed = seed };
    return o;
}

typedef struct sdpa_info {
    double flops;
    int64_t empty;
    float scale;
    uint64_t seed;              /* dropout's draws */
} sdpa_info;

/* (query, key) pairs per head the kernels compute, for the FLOP counts:
   all of them, or those on and below the lower-right causal diagonal, and
   with a window those in its band and the sinks. */
static double visible_pairs(int64_t Nq, int64_t Nk, int causal, int64_t window, int64_t sinks)
{
    if (!causal && window <= 0) return (double)Nq * (double)Nk;
    double pairs = 0.0;
    for (int64_t i = 0; i < Nq; i++) {
        int64_t hi = i + Nk - Nq + 1;       /* keys [0, hi) on and below the diagonal */
        hi = hi < 0 ? 0 : hi > Nk ? Nk : hi;
        int64_t lo = window > 0 ? hi - window : 0, s = sinks < hi ? sinks : hi;
        lo = lo < 0 ? 0 : lo;
        pairs += (double)(hi - lo) + (double)(s < lo ? s : lo);   /* the sinks below the band */
    }
    return pairs;
}

/* A mask or bias (what) against the scores' shape tshape [nt dims]: it
   must broadcast to them, and its named dims agree with theirs. */
static tt_status check_scores_operand(const char *what, const tt_tensor *mask, const tt_tensor *q,
                                      const tt_tensor *k, int nt, const int64_t *tshape)
{
    char s1[SHAPE_BUF], s2[SHAPE_BUF];
    int nd = nt, is_mask = what[0] == 'm';
    int64_t Nq = tshape[nt - 2], Nk = tshape[nt - 1];
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
            return tt__err(TT_ESHAPE, "sdpa: %s %s has more dims than the scores %s (%d vs %d); "
                           "hint: the %s is [..., Nq, Nk], Nq = %lld queries and Nk = %lld keys",
                           what, shp(mask, s1), s2, mask->ndim, nt, what, (long long)Nq, (long long)Nk);
        char hint[160];
        if (is_mask && mask->ndim == 2 && nt >= 3 && mask->shape[0] == tshape[0] && mask->shape[1] == Nk) {
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
            snprintf(hint, sizeof hint, "the %s is [Nk, Nq]; %s:mT() puts the %lld queries "
                     "first", what, what, (long long)Nq);
        } else {
            snprintf(hint, sizeof hint, "the %s's last two dims are Nq = %lld queries and Nk = %lld keys "
                     "(or 1 to broadcast)", what, (long long)Nq, (long long)Nk);
        }
        return tt__err(TT_ESHAPE, "sdpa: %s %s does not broadcast to the scores %s (dim -%d: %lld vs %lld); "
                       "hint: %s", what, shp(mask, s1), s2, bad, (long long)mask->shape[mask->ndim - bad],
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
            return tt__err(TT_ESHAPE, "sdpa: dim names differ: '%s' vs '%s' at dim -%d of %s %s and "
                           "the scores %s; hint: %s", a, b, i, what, shp(mask, s1), s2,
                           swapped ? (is_mask ? "the mask is [keys, queries]; mask:mT() swaps them"
                                              : "the bias is [keys, queries]; bias:mT() swaps them")
                                   : "rename with x:named(...)");
        }
    }
    return TT_OK;
}

/* The options' checks, the one place for them (the Lua binding only reads
   the options): run before anything else, autocast's casts included. A
   NaN scale is the C API's "the default 1/sqrt(Dh)", so the binding refuses
   a script's NaN itself, in the same words. */
static tt_status check_opts(const tt_sdpa_opts *o)
{
    if (!isnan(o->scale) && !(fabs(o->scale) <= (double)FLT_MAX))
        return tt__err(TT_EARG, "sdpa: scale must be a finite float32, got %g", o->scale);
    if (o->window < 0)
        return tt__err(TT_EARG, "sdpa: window must be at least 1 (the keys each query sees), got %lld",
                       (long long)o->window);
    if (o->sinks < 0)
        return tt__err(TT_EARG, "sdpa: sinks must be at least 0 (the first keys kept beside the window), got %lld",
                       (long long)o->sinks);
    if (o->sinks > 0 && o->window == 0)
        return tt__err(TT_EARG, "sdpa: sinks = %lld needs a window (the sinks are the first keys kept beside it); "
                       "hint: {window = W, sinks = %lld}", (long long)o->sinks, (long long)o->sinks);
    if (!(o->dropout >= 0.0 && o->dropout < 1.0))
        return tt__err(TT_EARG, "sdpa: dropout must be in [0, 1) (the probability of zeroing a weight), got %g%s",
                       o->dropout, o->dropout == 1.0 ? "; hint: p = 1 would drop every weight" : "");
    if (o->alibi && o->bias)
        return tt__err(TT_EARG, "sdpa: alibi and bias both given; hint: alibi = true is a bias the kernel computes: "
                       "add your own terms to an explicit bias instead");
    return TT_OK;
}

/* sdpa's "batch dims differ" error at dim i (0-based, i < nbd), with the
   expand a size-1 batch dim of k or v needs as its hint. */
static tt_status batch_dims_error(const tt_tensor *q, const tt_tensor *k, const tt_tensor *v, int i, int nbd)
{
    char s1[SHAPE_BUF], s2[SHAPE_BUF], s3[SHAPE_BUF];
    int nd = q->ndim;
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

/* q, k and v: float dtypes, the same number of dims (at least 2), the
   same batch dims, matching head sizes, lengths and head counts. */
static tt_status check_qkv(const tt_tensor *q, const tt_tensor *k, const tt_tensor *v)
{
    char s1[SHAPE_BUF], s2[SHAPE_BUF], s3[SHAPE_BUF];
    const tt_tensor *in[3] = { q, k, v };
    for (int i = 0; i < 3; i++)   /* mixed float dtypes were promoted to one (tt_sdpa_ex) */
        if (!tt_dtype_is_float(in[i]->dtype))
            return tt__err(TT_EARG, "sdpa: %c must be float32, bfloat16 or float16, got %s %s; hint: x:float()",
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
    int64_t Dh = q->shape[nd - 1], Nk = k->shape[nd - 2];
    for (int i = 0; i < nbd; i++)
        if (k->shape[i] != q->shape[i] || v->shape[i] != q->shape[i]) return batch_dims_error(q, k, v, i, nbd);
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
    return TT_OK;
}

/* The mask (bool) and the bias (float32), each broadcasting to the scores'
   shape tshape [..., Hq, Nq, Nk]. */
static tt_status check_mask_bias(const tt_tensor *mask, const tt_tensor *bias, const tt_tensor *q,
                                 const tt_tensor *k, const int64_t *tshape)
{
    char s1[SHAPE_BUF];
    int nt = q->ndim;
    if (mask && mask->dtype != TT_BOOL)
        return tt__err(TT_EARG, "sdpa: mask must be bool (true = may attend), got %s %s; hint: mask:bool()",
                       tt_dtype_name(mask->dtype), shp(mask, s1));
    tt_status st = mask ? check_scores_operand("mask", mask, q, k, nt, tshape) : TT_OK;
    if (st) return st;
    if (bias && bias->dtype != TT_FLOAT32)
        return tt__err(TT_EARG, "sdpa: bias must be float32 (added to the scaled scores), got %s %s; hint: %s",
                       tt_dtype_name(bias->dtype), shp(bias, s1),
                       bias->dtype == TT_BOOL ? "a bool tensor is a mask: {mask = m}" : "bias:float()");
    return bias ? check_scores_operand("bias", bias, q, k, nt, tshape) : TT_OK;
}

/* out [..., Hq, Nq, Dv] in q's dtype, weights (when wanted) the scores'
   shape in float32, lse (when wanted) one float per query row; on failure
   none is left allocated. */
static tt_status alloc_results(tt_tensor *out, tt_tensor *weights, tt_tensor *lse, const tt_tensor *q,
                               const tt_tensor *k, const tt_tensor *v, const int64_t *tshape)
{
    int nd = q->ndim;
    int64_t oshape[TT_MAX_DIMS];
    const char *onames[TT_MAX_DIMS], *wnames[TT_MAX_DIMS];
    memcpy(oshape, q->shape, (size_t)nd * sizeof *oshape);
    memcpy(onames, q->names, (size_t)nd * sizeof *onames);
    memcpy(wnames, q->names, (size_t)nd * sizeof *wnames);
    oshape[nd - 1] = v->shape[nd - 1];
    onames[nd - 1] = v->names[nd - 1];
    wnames[nd - 1] = k->names[nd - 2];
    /* out in q's dtype (the kernel rounds it); the weights come in float32
       and are rounded after the kernel */
    tt_status st = tt__alloc(out, "sdpa", q->dtype, nd, oshape, onames);
    if (st == TT_OK && weights) {
        st = tt__alloc(weights, "sdpa", TT_FLOAT32, nd, tshape, wnames);
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
    return st;
}

/* q [..., Hq, Nq, Dh], k [..., Hkv, Nk, Dh], v [..., Hkv, Nk, Dv]; 2-D
   inputs are one head. Scores are [..., Hq, Nq, Nk]. lse: NULL, or gets
   each row's log-sum-exp [B * Hq * Nq] for the backward. */
static tt_status sdpa_impl(tt_tensor *out, tt_tensor *weights, tt_tensor *lse, const tt_tensor *q,
                           const tt_tensor *k, const tt_tensor *v, const tt_sdpa_opts *o, sdpa_info *info)
{
    tt_status st = check_qkv(q, k, v);
    if (st) return st;
    int nd = q->ndim, nbd = nd >= 3 ? nd - 3 : 0, hd = nd - 3;
    int64_t Hq = hd >= 0 ? q->shape[hd] : 1;
    int64_t Nq = q->shape[nd - 2], Dh = q->shape[nd - 1];
    int64_t Nk = k->shape[nd - 2], Dv = v->shape[nd - 1];
    int64_t tshape[TT_MAX_DIMS];            /* the scores' shape, which mask and bias broadcast to */
    memcpy(tshape, q->shape, (size_t)nd * sizeof *tshape);
    tshape[nd - 1] = Nk;
    if ((st = check_mask_bias(o->mask, o->bias, q, k, tshape))) return st;

    sdpa_layout L;
    st = layout_init(&L, q, k, v, o->mask, o->bias);
    if (st == TT_OK) st = alloc_results(out, weights, lse, q, k, v, tshape);
    if (st == TT_OK) {
        int causal = o->causal || o->window > 0;
        int64_t B = 1;
        for (int i = 0; i < nbd; i++) B *= q->shape[i];
        float sc = isnan(o->scale) ? (Dh > 0 ? (float)(1.0 / sqrt((double)Dh)) : 1.0f) : (float)o->scale;
        info->scale = sc;
        info->flops = 2.0 * (double)B * (double)Hq * visible_pairs(Nq, Nk, causal, o->window, o->sinks)
                      * (double)(Dh + Dv);
        if (o->dropout > 0.0) {   /* one draw of the generator seeds the call's dropout */
            int64_t seed;
            tt__rand_int(&seed, 1, 0, 0);
            info->seed = (uint64_t)seed;
        }
        info->empty = 0;
        if (B * Hq * Nq == 0) {
            /* nothing to compute */
        } else if (Nk == 0) {               /* no keys at all: every row is empty */
            memset((float *)raw(out), 0, (size_t)tt_numel(out) * tt_dtype_size(out->dtype));
            info->empty = B * Hq * Nq;
        } else {
            tk_sdpa_args ar = {
                LAYOUT_ARGS(&L), .causal = causal != 0, .scale = sc, .out = (float *)raw(out),
                .weights = weights ? tt_data_f32(weights) : NULL, .lse = lse ? tt_data_f32(lse) : NULL,
                .o = kernel_opts(&L, o->alibi, o->window, o->sinks, o->dropout, info->seed),
                .half = kernel_half(q->dtype),
            };
            info->empty = tk_sdpa(&ar);
        }
        if (weights && (st = tt__round_to(weights, "sdpa", q->dtype)) != TT_OK) tt_tensor_release(out);
    }
    layout_free(&L);
    return st;
}

/* out's node saves q, k, v, out, the log-sum-exp (taken), the mask and
   the bias (an input too: its gradient); the weights get a node of their
   own whose backward is an error. Releases out and weights on failure. */
static tt_status record(tt__opscope sc, tt_tensor *out, tt_tensor *weights, tt_tensor *lse, const tt_tensor *q,
                        const tt_tensor *k, const tt_tensor *v, const tt_sdpa_opts *o, const sdpa_info *info)
{
    tt__agargs args = {0};
    args.s = info->scale;
    args.causal = o->causal || o->window > 0;
    args.sdpa.window = o->window;
    args.sdpa.sinks = o->sinks;
    args.sdpa.alibi = o->alibi != 0;
    args.sdpa.dropout = o->dropout;
    args.sdpa.seed = info->seed;
    const tt_tensor *in[4] = { q, k, v, o->bias };
    int nin = o->bias ? 4 : 3;
    tt_status st = tt__record_list(sc, out, TT_OP_SDPA, in, nin, &args);
    if (st == TT_OK && out->ag) {
        tt__node *n = out->ag->fn;
        n->saved[SDPA_LSE] = *lse;
        memset(lse, 0, sizeof *lse);
        if (o->mask) tt__view_of(&n->saved[SDPA_MASK], o->mask);
        if (o->bias) tt__view_of(&n->saved[SDPA_BIAS], o->bias);
        tt__node_note_versions(n);
    }
    if (st == TT_OK && weights && out->ag) {
        args.weights = 1;
        st = tt__record_list(sc, weights, TT_OP_SDPA, in, nin, &args);
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

/* d bias: the per-score gradient full [..., Hq, Nq, Nk] (contiguous, the
   scores' shape) summed over the dims the bias broadcast along, in float64
   in the order of the scores. */
static tt_status bias_grad(tt_tensor *db, const float *full, const tt_tensor *bias, int nt, const int64_t *tshape)
{
    tt_status st = tt__alloc(db, "sdpa", TT_FLOAT32, bias->ndim, bias->shape, NULL);
    if (st) return st;
    int64_t n = tt_numel(db), total = 1, st_b[TT_MAX_DIMS] = {0}, idx[TT_MAX_DIMS] = {0};
    for (int i = 0; i < nt; i++) total *= tshape[i];
    double *acc = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    if (!acc) {
        tt_tensor_release(db);
        return tt__err(TT_ENOMEM, "backward: sdpa: out of memory");
    }
    tt__broadcast_strides(db, nt, tshape, st_b);
    int64_t off = 0;
    for (int64_t t = 0; t < total; t++) {
        acc[off] += (double)full[t];
        for (int d = nt - 1; d >= 0; d--) {      /* the next index, odometer style */
            off += st_b[d];
            if (++idx[d] < tshape[d]) break;
            off -= st_b[d] * tshape[d];
            idx[d] = 0;
        }
    }
    float *out = tt_data_f32(db);
    for (int64_t t = 0; t < n; t++) out[t] = (float)acc[t];
    free(acc);
    return TT_OK;
}

/* dq, dk, dv from the fused backward, shaped and laid out as q, k, v (the
   layouts the kernel read them in); dk and dv come summed over the query
   heads that share a kv head; d bias, when the bias wants one, reduced to
   its shape. The kernel reads g through its strides. */
tt_status tt__bw_sdpa(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    if (n->args.weights)
        return tt__err(TT_EARG, "backward: sdpa's weights output has no gradient in tensortrace (its "
                       "output does); hint: softmax(q @ k:mT() * scale) built from ops gives weights "
                       "that are differentiable");
    const tt_tensor *q = &n->saved[SDPA_Q], *k = &n->saved[SDPA_K], *out = &n->saved[SDPA_OUT];
    const tt_tensor *v = &n->saved[SDPA_V], *lse = &n->saved[SDPA_LSE];
    const tt_tensor *mask = n->saved[SDPA_MASK].storage ? &n->saved[SDPA_MASK] : NULL;
    const tt_tensor *bias = n->saved[SDPA_BIAS].storage ? &n->saved[SDPA_BIAS] : NULL;
    int want_db = bias && n->nin > 3 && (n->in[3].next || n->in[3].leaf);
    tt_tensor gc = {0}, d[3] = {{0}}, full = {0}, db = {0};
    sdpa_layout L;
    tt_status st = layout_init(&L, q, k, v, mask, bias);
    const tt_tensor *in[3] = {L.q, L.k, L.v};   /* as the kernel reads them (copies where needed) */
    for (int i = 0; i < 3 && st == TT_OK; i++) st = alloc_like(&d[i], in[i]);
    int nd = q->ndim, nbd = nd >= 3 ? nd - 3 : 0;
    int64_t tshape[TT_MAX_DIMS];
    memcpy(tshape, q->shape, (size_t)nd * sizeof *tshape);
    tshape[nd - 1] = L.Nk;
    if (st == TT_OK && want_db && (st = tt__alloc(&full, "sdpa", TT_FLOAT32, nd, tshape, NULL)) == TT_OK)
        memset(tt_data_f32(&full), 0, (size_t)tt_numel(&full) * sizeof(float));
    int64_t gsb = 0, dsb[3] = {0};
    if (st == TT_OK) st = flat_batch(&g, &gc, nbd, &gsb);
    for (int i = 0; i < 3 && st == TT_OK; i++) tt__iter_flat(nbd, d[i].shape, d[i].stride, &dsb[i]);
    const tt__agargs *ag = &n->args;
    if (st == TT_OK) {
        tk_sdpa_bwd_args ar = {
            LAYOUT_ARGS(&L), .causal = ag->causal, .scale = (float)ag->s,
            .out = raw(out), .dout = tt_data_f32(g), .lse = tt_data_f32(lse),
            .dq = tt_data_f32(&d[0]), .dk = tt_data_f32(&d[1]), .dv = tt_data_f32(&d[2]),
            .layouts = 1, .dos_b = gsb, .dos_h = STRIDE_H(g), .dos_n = STRIDE_N(g), .dos_d = STRIDE_D(g),
            .dqs_b = dsb[0], .dqs_h = STRIDE_H(&d[0]), .dqs_n = STRIDE_N(&d[0]),
            .dks_b = dsb[1], .dks_h = STRIDE_H(&d[1]), .dks_n = STRIDE_N(&d[1]),
            .dvs_b = dsb[2], .dvs_h = STRIDE_H(&d[2]), .dvs_n = STRIDE_N(&d[2]),
            .o = kernel_opts(&L, ag->sdpa.alibi, ag->sdpa.window, ag->sdpa.sinks, ag->sdpa.dropout, ag->sdpa.seed),
            .dbias = want_db ? tt_data_f32(&full) : NULL, .half = kernel_half(q->dtype),
        };
        if (tk_sdpa_backward(&ar) != 0) st = tt__err(TT_ENOMEM, "backward: sdpa: out of memory");
        /* per pair: S = QK^T again (2 Dh), dV = P^T dO and dP = dO V^T (2 Dv
           each), dQ = dS K and dK = dS^T Q (2 Dh each): the trace's row */
        else tt__group_add_flops(2.0 * (double)L.B * (double)L.Hq
                                 * visible_pairs(L.Nq, L.Nk, ag->causal, ag->sdpa.window, ag->sdpa.sinks)
                                 * (double)(3 * L.Dh + 2 * L.Dv));
    }
    if (st == TT_OK && want_db) st = bias_grad(&db, tt_data_f32(&full), bias, nd, tshape);
    layout_free(&L);
    tt_tensor_release(&gc);
    tt_tensor_release(&full);
    for (int i = 0; i < 3; i++) {
        if (st == TT_OK && (n->in[i].next || n->in[i].leaf)) gin[i] = d[i];
        else tt_tensor_release(&d[i]);
    }
    if (st == TT_OK && want_db) gin[3] = db;
    else tt_tensor_release(&db);
    return st;
}

/* Mixed float dtypes with a 16-bit one: each input not in the promoted
   dtype converted to it (an op of its own, traced and recorded: gradients
   go back in the inputs' dtypes), then the kernel of that dtype: float32
   (bfloat16 with float16, or a float32 input), or the fused 16-bit one. */
static tt_status sdpa_mixed(tt_tensor *out, tt_tensor *weights, const tt_tensor *q, const tt_tensor *k,
                            const tt_tensor *v, const tt_sdpa_opts *o, int64_t *empty_rows)
{
    tt_dtype rd = tt_promote_float(tt_promote_float(q->dtype, k->dtype), v->dtype);
    const tt_tensor *in[3] = { q, k, v };
    tt_tensor f[3] = {{0}};
    tt_status st = TT_OK;
    for (int i = 0; i < 3 && st == TT_OK; i++)
        if (in[i]->dtype != rd && (st = tt_to_dtype(&f[i], in[i], rd)) == TT_OK) in[i] = &f[i];
    if (st == TT_OK) st = tt_sdpa_ex(out, weights, in[0], in[1], in[2], o, empty_rows);
    for (int i = 0; i < 3; i++) tt_tensor_release(&f[i]);
    return st;
}

tt_status tt_sdpa(tt_tensor *out, tt_tensor *weights, const tt_tensor *q, const tt_tensor *k,
                  const tt_tensor *v, const tt_tensor *mask, int causal, double scale,
                  int64_t *empty_rows)
{
    tt_sdpa_opts o = { mask, NULL, causal, 0, scale, 0, 0, 0.0 };
    return tt_sdpa_ex(out, weights, q, k, v, &o, empty_rows);
}

tt_status tt_sdpa_ex(tt_tensor *out, tt_tensor *weights, const tt_tensor *q, const tt_tensor *k,
                     const tt_tensor *v, const tt_sdpa_opts *o, int64_t *empty_rows)
{
    memset(out, 0, sizeof *out);
    if (weights) memset(weights, 0, sizeof *weights);
    tt_status cs = check_opts(o);
    if (cs) return cs;
    tt__autocast ac;
    if (tt__autocast_enter(&ac, TT__AC_LOW, 3, (const tt_tensor *[]){q, k, v}))   /* a bias stays float32 */
        return tt__autocast_leave(&ac, ac.st ? ac.st : tt_sdpa_ex(out, weights, ac.in[0], ac.in[1], ac.in[2], o, empty_rows));
    if ((tt__is_half(q->dtype) || tt__is_half(k->dtype) || tt__is_half(v->dtype))
        && tt_dtype_is_float(q->dtype) && tt_dtype_is_float(k->dtype) && tt_dtype_is_float(v->dtype)
        && (k->dtype != q->dtype || v->dtype != q->dtype))
        return sdpa_mixed(out, weights, q, k, v, o, empty_rows);
    if (o->bias && tt__is_half(o->bias->dtype)) {
        /* a 16-bit bias is added in float32: converted (an op, so its
           gradient goes back in its dtype), the rest as it was */
        tt_tensor fb = {0};
        tt_sdpa_opts o2 = *o;
        tt_status st = tt_to_dtype(&fb, o->bias, TT_FLOAT32);
        o2.bias = &fb;
        if (st == TT_OK) st = tt_sdpa_ex(out, weights, q, k, v, &o2, empty_rows);
        tt_tensor_release(&fb);
        return st;
    }
    tt__opscope sc = tt__op_enter();
    sdpa_info info = {0};
    int want = tt__grad_wanted(sc, q, k) || tt__grad_wanted(sc, v, o->bias);
    tt_tensor lse = {0};
    tt_status st = sdpa_impl(out, weights, want ? &lse : NULL, q, k, v, o, &info);
    if (empty_rows) *empty_rows = st == TT_OK ? info.empty : 0;
    if (st == TT_OK && want) st = record(sc, out, weights, &lse, q, k, v, o, &info);
    tt_tensor_release(&lse);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_SDPA, out, q, k, v);
        const tt_tensor *extra[2] = { o->mask, o->bias };
        for (int i = 0; i < 2; i++)
            if (extra[i]) {
                ev.inputs[ev.ninputs++] = extra[i];
                ev.ninputs_total = ev.ninputs;
                ev.bytes += (double)tt_numel(extra[i]) * (i ? 4.0 : 1.0);
            }
        if (weights) ev.bytes += (double)tt_dtype_size(weights->dtype) * (double)tt_numel(weights);
        ev.flops = info.flops;
        sdpa_event_args(&ev, o, (double)info.scale, weights != NULL);
        if (info.empty > 0)
            snprintf(ev.note, sizeof ev.note, "%lld query row%s with no visible key: output zeros",
                     (long long)info.empty, info.empty == 1 ? "" : "s");
    }
    return tt__op_leave(sc, st, &ev);
}
