/*
** loss.c — tt_cross_entropy: PyTorch's cross_entropy over class indices,
** fused: the row kernels (kernel/rows.c) compute each row's max and sum of
** exps once, the loss from them, and the backward's softmax - onehot from
** the same two numbers; log_softmax is never a tensor of its own.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernel/kernels.h"
#include "tt_internal.h"

#define SHAPE_BUF 256

static const char *shp(const tt_tensor *t, char *buf) { return tt_shape_str(t, buf, SHAPE_BUF); }

static const char *const REDUCTIONS[] = {"mean", "sum", "none"};

/* The shapes PyTorch takes here: logits [N, C] with targets [N], or [C]
   with one target (0-d or [1]). Sets *nrows and *nclass. */
static tt_status check_shapes(const tt_tensor *x, const tt_tensor *t, int64_t *nrows, int64_t *nclass)
{
    char sx[SHAPE_BUF], st[SHAPE_BUF];
    if (x->dtype != TT_FLOAT32)
        return tt__err(TT_EARG, "cross_entropy: logits must be float32, got %s %s; hint: logits:float()",
                       tt_dtype_name(x->dtype), shp(x, sx));
    if (t->dtype != TT_INT64)
        return tt__err(TT_EARG, "cross_entropy: targets must be int64 class indices, got %s %s; "
                       "hint: targets:long()", tt_dtype_name(t->dtype), shp(t, st));
    if (x->ndim != 1 && x->ndim != 2)
        return tt__err(TT_ESHAPE, "cross_entropy: logits %s must be [N, C] or [C]; hint: with the "
                       "classes last, logits:reshape(-1, C), targets:reshape(-1)", shp(x, sx));
    *nrows = x->ndim == 2 ? x->shape[0] : 1;
    *nclass = x->shape[x->ndim - 1];
    int ok = x->ndim == 2 ? t->ndim == 1 && t->shape[0] == *nrows : t->ndim <= 1 && tt_numel(t) == 1;
    if (!ok)
        return tt__err(TT_ESHAPE, "cross_entropy: targets %s do not match logits %s (one class index a "
                       "row: %s)", shp(t, st), shp(x, sx), x->ndim == 2 ? "[N]" : "0-d or [1]");
    return TT_OK;
}

/* targets as 0-based int64 [nrows] (-1: ignored), each checked against 1..C */
static tt_status zero_based(tt_tensor *out, const tt_tensor *t, int64_t nrows, int64_t nclass, int64_t ignore)
{
    tt_status st = tt__alloc(out, "cross_entropy", TT_INT64, 1, &nrows, NULL);
    if (st) return st;
    int64_t *o = tt_data_i64(out);
    for (int64_t r = 0; r < nrows; r++) {
        int64_t v = tt_get_i64(t, r);
        if (v == ignore) {
            o[r] = -1;
        } else if (v < 1 || v > nclass) {
            tt_tensor_release(out);
            return tt__err(TT_EARG, "cross_entropy: target %lld out of range 1..%lld (row %lld; "
                           "ignore_index is %lld)%s", (long long)v, (long long)nclass, (long long)r + 1,
                           (long long)ignore, v == 0 ? "; hint: class indices count from 1" : "");
        } else {
            o[r] = v - 1;
        }
    }
    return TT_OK;
}

typedef struct ce_parts {
    tt_tensor x, t, stats;      /* contiguous logits, 0-based targets, [N,2] max and sum */
    int64_t count;              /* rows not ignored */
} ce_parts;

static void parts_release(ce_parts *p)
{
    tt_tensor_release(&p->x);
    tt_tensor_release(&p->t);
    tt_tensor_release(&p->stats);
}

static tt_status ce_impl(tt_tensor *out, ce_parts *p, const tt_tensor *logits, const tt_tensor *targets,
                         int64_t ignore, tt_reduction red)
{
    int64_t nrows = 0, nclass = 0;
    tt_status st = check_shapes(logits, targets, &nrows, &nclass);
    if (st == TT_OK) st = zero_based(&p->t, targets, nrows, nclass, ignore);
    if (st == TT_OK) st = tt__contiguous(&p->x, logits, "cross_entropy");
    int64_t sshape[2] = {nrows, 2};
    if (st == TT_OK) st = tt__alloc(&p->stats, "cross_entropy", TT_FLOAT32, 2, sshape, NULL);
    tt_tensor rows = {0};
    if (st == TT_OK) st = tt__alloc(&rows, "cross_entropy", TT_FLOAT32, logits->ndim - 1, &nrows, NULL);
    if (st) return st;
    const int64_t *t = tt_data_i64(&p->t);
    float *loss = tt_data_f32(&rows);
    if (tk_cross_entropy_rows(nrows, nclass, tt_data_f32(&p->x), t, loss, tt_data_f32(&p->stats)) < 0) {
        tt_tensor_release(&rows);
        return tt__err(TT_ENOMEM, "cross_entropy: out of memory for a row of %lld", (long long)nclass);
    }
    p->count = 0;
    for (int64_t r = 0; r < nrows; r++) p->count += t[r] >= 0;
    if (red == TT_REDUCTION_NONE) {
        *out = rows;
        return TT_OK;
    }
    /* one thread, in row order: the same sum for any thread count */
    double sum = 0;
    for (int64_t r = 0; r < nrows; r++) sum += (double)loss[r];
    tt_tensor_release(&rows);
    st = tt__alloc(out, "cross_entropy", TT_FLOAT32, 0, NULL, NULL);
    if (st == TT_OK)    /* mean over no target: 0/0, NaN as PyTorch */
        *tt_data_f32(out) = (float)(red == TT_REDUCTION_MEAN ? sum / (double)p->count : sum);
    return st;
}

tt_status tt_cross_entropy(tt_tensor *out, const tt_tensor *logits, const tt_tensor *targets,
                           int64_t ignore_index, tt_reduction reduction)
{
    memset(out, 0, sizeof *out);
    if (reduction < TT_REDUCTION_MEAN || reduction > TT_REDUCTION_NONE)
        return tt__err(TT_EARG, "cross_entropy: unknown reduction %d", (int)reduction);
    tt__autocast ac;
    if (tt__autocast_enter(&ac, TT__AC_FP32, 1, &logits))
        return tt__autocast_leave(&ac, ac.st ? ac.st : tt_cross_entropy(out, ac.in[0], targets, ignore_index, reduction));
    if (tt__is_half(logits->dtype)) {
        /* 16-bit logits: a float32 copy (its own op, recorded: the gradient
           goes back as bfloat16/float16), the loss rounded to their dtype */
        tt_tensor f = {0}, l = {0};
        tt_status st = tt_to_dtype(&f, logits, TT_FLOAT32);
        if (st == TT_OK) st = tt_cross_entropy(&l, &f, targets, ignore_index, reduction);
        if (st == TT_OK) st = tt_to_dtype(out, &l, logits->dtype);
        tt_tensor_release(&f);
        tt_tensor_release(&l);
        return st;
    }
    tt__opscope sc = tt__op_enter();
    ce_parts p = {0};
    tt_status st = ce_impl(out, &p, logits, targets, ignore_index, reduction);
    if (st == TT_OK && tt__grad_wanted(sc, logits, NULL)) {
        tt__agargs args = { .d = (int)reduction };
        args.s = reduction == TT_REDUCTION_MEAN ? 1.0 / (double)p.count : 1.0;
        st = tt__record(out, TT_OP_CROSS_ENTROPY, logits, targets, NULL, &args);
        if (st == TT_OK && out->ag) {       /* the node takes the kernel's inputs and stats */
            tt__node *n = out->ag->fn;
            n->saved[0] = p.x;
            n->saved[4] = p.stats;
            n->saved[5] = p.t;
            memset(&p, 0, sizeof p);
            tt__node_note_versions(n);
        }
    }
    parts_release(&p);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_CROSS_ENTROPY, out, logits, targets, NULL);
        ev.flops = tt__op_def(TT_OP_CROSS_ENTROPY)->flops * (double)tt_numel(logits);
        tt__arg_str(&ev, "reduction", "=%s", REDUCTIONS[reduction]);
        if (ignore_index != -100) tt__arg_int(&ev, "ignore_index", "=%lld", ignore_index);
    }
    return tt__op_leave(sc, st, &ev);
}

/* (softmax(row) - onehot(target)) * g, g scaled by 1/count for mean;
   ignored rows get zeros */
tt_status tt__bw_cross_entropy(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    const tt_tensor *x = &n->saved[0], *stats = &n->saved[4], *t = &n->saved[5];
    int64_t nrows = stats->shape[0], nclass = x->shape[x->ndim - 1];
    tt_tensor gc = {0}, dx = {0};
    tt_status st = tt__contiguous(&gc, g, "cross_entropy");
    if (st == TT_OK) st = tt__alloc(&dx, "cross_entropy", TT_FLOAT32, x->ndim, x->shape, NULL);
    if (st == TT_OK) {
        const float *gp = tt_data_f32(&gc);
        int none = n->args.d == TT_REDUCTION_NONE;
        float scaled = none ? 0.0f : (float)((double)gp[0] * n->args.s);
        tk_cross_entropy_backward_rows(nrows, nclass, tt_data_f32(x), tt_data_i64(t), tt_data_f32(stats),
                                       none ? gp : &scaled, none ? 1 : 0, tt_data_f32(&dx));
        tt__group_add_flops(3.0 * (double)tt_numel(x));   /* sub, exp, scale */
        gin[0] = dx;
    } else {
        tt_tensor_release(&dx);
    }
    tt_tensor_release(&gc);
    return st;
}
