/*
** softmax.c — softmax, log_softmax and the masks they are used with:
** tril, triu, causal_mask (masked_fill, an elementwise op, is in
** elementwise.c).
** Each public op checks its arguments, allocates the result, runs a strided
** loop (or a kernel from kernels.h) and emits one trace event.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernels.h"
#include "tensor/iter.h"
#include "tt_internal.h"

#define SHAPE_BUF 256

static const char *shp(const tt_tensor *t, char *buf) { return tt_shape_str(t, buf, SHAPE_BUF); }

/* ===== Softmax ===== */

/* softmax or log_softmax (op) of a over d */
static tt_status softmax_impl(tt_tensor *out, tt_op op, const tt_tensor *a, int d)
{
    char sa[SHAPE_BUF];
    const char *name = tt_op_name(op);
    int log = op == TT_OP_LOG_SOFTMAX;
    if (tt__is_half(a->dtype)) {     /* float32 inside, one rounding */
        tt_tensor fa = {0};
        tt_dtype half = a->dtype;
        tt_status st = tt__widen(&fa, name, &a);
        return tt__half_done(st ? st : softmax_impl(out, op, a, d), &fa, out, name, half);
    }
    if (a->dtype != TT_FLOAT32)
        return tt__err(TT_EARG, "%s: expects float32, got %s %s; hint: x:float()", name,
                       tt_dtype_name(a->dtype), shp(a, sa));
    tt_status st = tt__check_dim(name, a, d, 0);
    if (st) return st;
    st = tt__alloc(out, name, TT_FLOAT32, a->ndim, a->shape, a->names);
    if (st) return st;
    int64_t numel = tt_numel(a), n = a->shape[d];
    if (numel == 0) return TT_OK;
    float *y = tt_data_f32(out);
    const float *x = tt_data_f32(a);
    if (!tt_is_contiguous(a)) {
        tt__copy(out, a);
        x = y;
    }
    if (d == a->ndim - 1) {
        if (!log) tk_softmax_rows(numel / n, n, x, y);
        else if (tk_log_softmax_rows(numel / n, n, x, y) < 0) {
            tt_tensor_release(out);
            return tt__err(TT_ENOMEM, "log_softmax: out of memory for a row of %lld", (long long)n);
        }
        return TT_OK;
    }
    int64_t inner = 1;
    for (int i = d + 1; i < a->ndim; i++) inner *= a->shape[i];
    (log ? tk_log_softmax_cols : tk_softmax_cols)(numel / (n * inner), n, inner, x, y);
    return TT_OK;
}

/* Rows of a along d whose every entry is -inf (softmax gives NaN there).
   Only looked for while a trace is showing, where the count becomes a note. */
typedef struct masked_ctx {
    int64_t n, sd, count;       /* row length and stride along d; rows found */
} masked_ctx;

static void masked_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    masked_ctx *c = ctx;
    for (int64_t i = 0; i < n; i++) {
        const float *x = (const float *)p[0] + i * inc[0];
        int64_t j = 0;
        while (j < c->n && isinf(x[j * c->sd]) && x[j * c->sd] < 0) j++;
        c->count += j == c->n;
    }
}

static int64_t all_masked_rows(const tt_tensor *a, int d)
{
    if (a->shape[d] == 0 || a->dtype != TT_FLOAT32) return 0;
    int64_t kshape[TT_MAX_DIMS], st[TT__ITER_OPS][TT_MAX_DIMS] = {{0}};
    int nk = 0;
    for (int i = 0; i < a->ndim; i++) {
        if (i == d) continue;
        kshape[nk] = a->shape[i];
        st[0][nk++] = a->stride[i];
    }
    void *base[1] = { tt_data_f32(a) };
    size_t es[1] = { sizeof(float) };
    masked_ctx c = { a->shape[d], a->stride[d], 0 };
    tt__iter it;
    tt__iter_init(&it, nk, kshape, 1, (const int64_t (*)[TT_MAX_DIMS])st, base, es);
    tt__iter_range(&it, 0, it.numel, masked_row, &c);
    return c.count;
}

static tt_status softmax_op(tt_tensor *out, tt_op op, const tt_tensor *a, int d)
{
    tt__clear(out);
    tt__autocast ac;
    if (tt__autocast_enter(&ac, TT__AC_FP32, 1, &a))
        return tt__autocast_leave(&ac, ac.st ? ac.st : softmax_op(out, op, ac.in[0], d));
    tt__opscope sc = tt__op_enter();
    tt_status st = softmax_impl(out, op, a, d);
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL)) st = tt__record(out, op, a, NULL, NULL, &(tt__agargs){ .d = d });
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, op, out, a, NULL, NULL);
        ev.flops = tt__op_def(op)->flops * (double)tt_numel(a);
        tt__arg_int(&ev, "dim", "=%lld", d + 1);
        int64_t masked = tt__tracing() ? all_masked_rows(a, d) : 0;
        if (masked)
            snprintf(ev.note, sizeof ev.note, "%lld row%s all -inf: %s gives NaN there",
                     (long long)masked, masked == 1 ? " is" : "s are", tt_op_name(op));
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_softmax(tt_tensor *out, const tt_tensor *a, int d)
{
    return softmax_op(out, TT_OP_SOFTMAX, a, d);
}

tt_status tt_log_softmax(tt_tensor *out, const tt_tensor *a, int d)
{
    return softmax_op(out, TT_OP_LOG_SOFTMAX, a, d);
}

/* ===== Masks: tril, triu, causal_mask ===== */

static tt_status tri_impl(tt_tensor *out, const tt_tensor *a, int64_t k, int upper)
{
    const char *name = upper ? "triu" : "tril";
    char sa[SHAPE_BUF];
    if (a->ndim < 2)
        return tt__err(TT_ESHAPE, "%s: expects at least 2 dims, got %s", name, shp(a, sa));
    tt_status st = tt__alloc(out, name, a->dtype, a->ndim, a->shape, a->names);
    if (st) return st;
    tt__copy(out, a);
    int64_t R = a->shape[a->ndim - 2], C = a->shape[a->ndim - 1];
    if (R * C == 0) return TT_OK;
    int64_t nmat = tt_numel(a) / (R * C);
    if (k > R + C) k = R + C;                   /* keeps i + k from overflowing */
    if (k < -(R + C)) k = -(R + C);
    size_t es = tt_dtype_size(a->dtype);
    char *base = tt__data_of(out);
    for (int64_t m = 0; m < nmat; m++) {
        for (int64_t i = 0; i < R; i++) {
            char *row = base + (size_t)((m * R + i) * C) * es;
            /* tril keeps j <= i + k, triu keeps j >= i + k */
            int64_t lo = upper ? 0 : i + k + 1, hi = upper ? i + k : C;
            if (lo < 0) lo = 0;
            if (hi > C) hi = C;
            if (lo < hi) memset(row + (size_t)lo * es, 0, (size_t)(hi - lo) * es);
        }
    }
    return TT_OK;
}

static tt_status tri(tt_tensor *out, const tt_tensor *a, int64_t k, int upper)
{
    tt__clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = tri_impl(out, a, k, upper);
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL)) st = tt__record(out, upper ? TT_OP_TRIU : TT_OP_TRIL, a, NULL, NULL, &(tt__agargs){ .start = k });
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, upper ? TT_OP_TRIU : TT_OP_TRIL, out, a, NULL, NULL);
        tt__arg_int(&ev, "k", "=%lld", k);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_tril(tt_tensor *out, const tt_tensor *a, int64_t k) { return tri(out, a, k, 0); }
tt_status tt_triu(tt_tensor *out, const tt_tensor *a, int64_t k) { return tri(out, a, k, 1); }

tt_status tt_causal_mask(tt_tensor *out, int64_t nq, int64_t nk, int lower_right)
{
    tt__clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = TT_OK;
    if (nq < 0 || nk < 0)
        st = tt__err(TT_EARG, "causal_mask: sizes must not be negative, got nq=%lld, nk=%lld",
                     (long long)nq, (long long)nk);
    int64_t shape[2] = { nq, nk };
    if (st == TT_OK) st = tt__alloc(out, "causal_mask", TT_BOOL, 2, shape, NULL);
    if (st == TT_OK) {
        /* Query i sees keys j < i + shift + 1. Rows [0, i0) see none and rows
           [i1, nq) see all, each run one memset; only the at most nk rows
           between need their own, so the work is bounded by nq*nk. */
        uint8_t *m = tt_data_bool(out);
        int64_t shift = lower_right ? nk - nq : 0;
        int64_t i0 = -shift < 0 ? 0 : -shift > nq ? nq : -shift;
        int64_t i1 = nk - shift - 1 < i0 ? i0 : nk - shift - 1 > nq ? nq : nk - shift - 1;
        memset(m, 0, (size_t)(i0 * nk));
        for (int64_t i = i0; i < i1; i++) {
            int64_t lim = i + shift + 1;        /* 0 < lim < nk here */
            memset(m + i * nk, 1, (size_t)lim);
            memset(m + i * nk + lim, 0, (size_t)(nk - lim));
        }
        memset(m + i1 * nk, 1, (size_t)((nq - i1) * nk));
    }
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_CAUSAL_MASK, out, NULL, NULL, NULL);
        tt__arg_int(&ev, "nq", "=%lld", nq);
        tt__arg_int(&ev, "nk", "=%lld", nk);
        if (!lower_right) tt__arg_str(&ev, "align", "%s", "upper_left");
    }
    return tt__op_leave(sc, st, &ev);
}
