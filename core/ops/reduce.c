/*
** reduce.c — reductions (sum, mean, max, min, argmax...), max_dim, any,
** all and norm.
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

/* ===== Reductions ===== */

/* The walk's operands: 0 the values, 1 the input, 2 the indices; when
   only one of values and indices is wanted, the other operand aliases it
   and is not written. */
typedef struct red_ctx {
    int op;                 /* TK_RED_* */
    int want_val, want_idx;
    int64_t R, sd;          /* reduced length and stride */
    int i64;                /* int64 input: int64 values */
} red_ctx;

/* tk_reduce_lines for int64 lines (SUM MAX MIN): sums wrap as two's
   complement; the index is that of the first extremum, 1-based. */
static void i64_lines(int op, const int64_t *x, int64_t nb, int64_t si, int64_t R, int64_t sd,
                      int64_t *v, int64_t *ix)
{
    for (int64_t i = 0; i < nb; i++) {
        const int64_t *l = x + i * si;
        if (op == TK_RED_SUM) {
            uint64_t s = 0;
            for (int64_t j = 0; j < R; j++) s += (uint64_t)l[j * sd];
            v[i] = (int64_t)s;
            ix[i] = 0;
            continue;
        }
        int64_t best = l[0], at = 0;
        for (int64_t j = 1; j < R; j++) {
            int64_t u = l[j * sd];
            if (op == TK_RED_MAX ? u > best : u < best) best = u, at = j;
        }
        v[i] = best;
        ix[i] = at + 1;
    }
}

static void reduce_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    const red_ctx *c = ctx;
    int64_t so = inc[0], si = inc[1];
    int64_t *idx = (int64_t *)p[2];
    /* along a unit stride one line at a time; else many lines side by side */
    int64_t blk = c->sd == 1 ? 1 : TK_RED_BLOCK;
    for (int64_t i0 = 0; i0 < n; i0 += blk) {
        int64_t nb = n - i0 < blk ? n - i0 : blk;
        if (c->i64) {
            int64_t v[TK_RED_BLOCK], ix[TK_RED_BLOCK];
            int64_t *val = (int64_t *)p[0];
            i64_lines(c->op, (const int64_t *)p[1] + i0 * si, nb, si, c->R, c->sd, v, ix);
            for (int64_t i = 0; i < nb; i++) {
                if (c->want_val) val[(i0 + i) * so] = v[i];
                if (c->want_idx) idx[(i0 + i) * so] = ix[i];
            }
            continue;
        }
        float v[TK_RED_BLOCK], ix[TK_RED_BLOCK];
        float *val = (float *)p[0];
        tk_reduce_lines(c->op, (const float *)p[1] + i0 * si, nb, si, c->R, c->sd, v, ix);
        for (int64_t i = 0; i < nb; i++) {
            if (c->want_val) val[(i0 + i) * so] = v[i];
            if (c->want_idx) idx[(i0 + i) * so] = (int64_t)ix[i];
        }
    }
}

/* vals and/or idxs (either may be NULL) get the reduction of a over d
   (d < 0: everything): values of a's dtype (float32, or int64 for sum,
   max and min of int64), int64 1-based indices. */
static tt_status reduce_impl(tt_tensor *vals, tt_tensor *idxs, const tt__opdef *def,
                             const tt_tensor *a, int d, int keepdim)
{
    const char *name = def->name;
    char sa[SHAPE_BUF];
    if (tt__is_half(a->dtype) && vals) {   /* values rounded once; indices as they are */
        tt_tensor fa = {0};
        tt_dtype half = a->dtype;
        tt_status s2 = tt__widen(&fa, name, &a);
        return tt__half_done(s2 ? s2 : reduce_impl(vals, idxs, def, a, d, keepdim), &fa, vals, name, half);
    } else if (tt__is_half(a->dtype)) {
        tt_tensor fa = {0};
        tt_status s2 = tt__widen(&fa, name, &a);
        if (s2 == TT_OK) s2 = reduce_impl(vals, idxs, def, a, d, keepdim);
        tt_tensor_release(&fa);
        return s2;
    }
    int i64 = a->dtype == TT_INT64;
    if (a->dtype == TT_BOOL || (i64 && !def->keeps_int))
        return tt__err(TT_EARG, "%s: expects float32, got %s %s; hint: x:float()", name,
                       tt_dtype_name(a->dtype), shp(a, sa));
    tt_status st;
    if (d >= 0 && (st = tt__check_dim(name, a, d, 0))) return st;
    int64_t R = d >= 0 ? a->shape[d] : tt_numel(a);
    if ((def->kernel == TK_RED_MAX || def->kernel == TK_RED_MIN) && R == 0) {   /* no extremum of nothing */
        if (d >= 0)
            return tt__err(TT_EARG, "%s: cannot reduce the empty dim %d of %s", name, d + 1, shp(a, sa));
        return tt__err(TT_EARG, "%s: cannot reduce an empty tensor %s; hint: give a dim", name, shp(a, sa));
    }
    /* result shape: a's without d (or with d as 1 when keepdim) */
    int nd = 0;
    int64_t shape[TT_MAX_DIMS];
    const char *names[TT_MAX_DIMS];
    for (int i = 0; i < a->ndim; i++) {
        if (d < 0 || i == d) {
            if (!keepdim) continue;
            shape[nd] = 1;
        } else {
            shape[nd] = a->shape[i];
        }
        /* a kept size-1 dim is there to broadcast: unnamed, so it cannot
           lend its name to a full-size dim of another tensor */
        names[nd++] = (d < 0 || i == d) ? NULL : a->names[i];
    }
    if (vals && (st = tt__alloc(vals, name, a->dtype, nd, shape, names))) return st;
    if (idxs && (st = tt__alloc(idxs, name, TT_INT64, nd, shape, names))) {
        if (vals) tt_tensor_release(vals);
        return st;
    }
    void *val = vals ? tt__data_of(vals) : NULL;
    int64_t *idx = idxs ? tt_data_i64(idxs) : NULL;
    if (d < 0) {
        /* one line over everything, contiguous (copied when a is not) */
        tt_tensor tmp = {0};
        const tt_tensor *src = a;
        if (!tt_is_contiguous(a)) {
            if ((st = tt__alloc(&tmp, name, a->dtype, a->ndim, a->shape, NULL))) {
                tt_tensor_release(vals);
                tt_tensor_release(idxs);
                return st;
            }
            tt__copy(&tmp, a);
            src = &tmp;
        }
        if (i64) {
            int64_t v, ix;
            i64_lines(def->kernel, tt_data_i64(src), 1, 0, R, 1, &v, &ix);
            if (val) *(int64_t *)val = v;
            if (idx) idx[0] = ix;
        } else {
            float v, ix;
            tk_reduce_lines(def->kernel, R ? tt_data_f32(src) : NULL, 1, 0, R, 1, &v, &ix);
            if (val) *(float *)val = v;
            if (idx) idx[0] = (int64_t)ix;
        }
        tt_tensor_release(&tmp);
        return TT_OK;
    }
    /* walk the kept dims; each output reduces R elements at stride sd */
    int64_t kshape[TT_MAX_DIMS], st2[TT__ITER_OPS][TT_MAX_DIMS] = {{0}};
    int nk = 0;
    for (int i = 0; i < a->ndim; i++) {
        if (i == d) continue;
        kshape[nk] = a->shape[i];
        st2[1][nk++] = a->stride[i];
    }
    tt__contig_strides(nk, kshape, st2[0]);
    memcpy(st2[2], st2[0], sizeof st2[0]);
    red_ctx c = { def->kernel, val != NULL, idx != NULL, R, a->stride[d], i64 };
    /* one of values and indices alone: the other slot aliases it, unwritten */
    size_t ev = tt_dtype_size(a->dtype);
    void *base[TT__ITER_OPS] = { val ? val : (void *)idx, tt__data_of(a), idx ? (void *)idx : val };
    size_t es[TT__ITER_OPS] = { val ? ev : sizeof(int64_t), ev, idx ? sizeof(int64_t) : ev };
    tt__iter it;
    tt__iter_init(&it, nk, kshape, TT__ITER_OPS, (const int64_t (*)[TT_MAX_DIMS])st2, base, es);
    tt__iter_run(&it, R, reduce_row, &c);   /* each output costs R reads: split by outputs */
    return TT_OK;
}

static void reduce_args(tt_event *ev, int d, int keepdim)
{
    if (d >= 0) tt__arg_int(ev, "dim", "=%lld", d + 1);
    tt__arg_bool(ev, "keepdim", "keepdim", keepdim);
}

tt_status tt_reduce(tt_tensor *out, tt_op op, const tt_tensor *a, int d, int keepdim)
{
    tt__clear(out);
    const tt__opdef *def;
    tt_status st = tt__op_kind_def("reduce", op, TT_OPK_REDUCE, "a reduction", &def);
    if (st) return st;
    tt__autocast ac;
    if ((op == TT_OP_SUM || op == TT_OP_MEAN) && tt__autocast_enter(&ac, TT__AC_FP32, 1, &a))
        return tt__autocast_leave(&ac, ac.st ? ac.st : tt_reduce(out, op, ac.in[0], d, keepdim));
    tt__opscope sc = tt__op_enter();
    st = reduce_impl(def->index ? NULL : out, def->index ? out : NULL, def, a, d, keepdim);
    if (st == TT_OK && !def->index && tt__grad_wanted(sc, a, NULL))
        st = tt__record(out, op, a, NULL, NULL, &(tt__agargs){ .d = d, .keepdim = keepdim });
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, op, out, a, NULL, NULL);
        ev.flops = (double)tt_numel(a) * def->flops;
        reduce_args(&ev, d, keepdim);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_max_dim(tt_tensor *values, tt_tensor *indices, const tt_tensor *a, int d, int keepdim, int is_min)
{
    tt__clear(values);
    tt__clear(indices);
    tt__opscope sc = tt__op_enter();
    tt_status st = reduce_impl(values, indices, tt__op_def(is_min ? TT_OP_MIN : TT_OP_MAX), a, d, keepdim);
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL)) {
        st = tt__record(values, is_min ? TT_OP_MIN : TT_OP_MAX, a, NULL, NULL, &(tt__agargs){ .d = d, .keepdim = keepdim });
        if (st) tt_tensor_release(indices);
        else if (values->ag) {              /* the backward sends g to these */
            tt_tensor *idx = &values->ag->fn->saved[4];
            tt__view_of(idx, indices);
            for (int i = 0; i < TT_MAX_DIMS; i++) idx->names[i] = NULL;
            tt__node_note_versions(values->ag->fn);
        }
    }
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, is_min ? TT_OP_MIN : TT_OP_MAX, values, a, NULL, NULL);
        ev.bytes += tt__nbytes(indices);
        ev.flops = (double)tt_numel(a);
        reduce_args(&ev, d, keepdim);
    }
    return tt__op_leave(sc, st, &ev);
}

static void take(tt_tensor *t, tt_tensor *next)
{
    tt_tensor_release(t);
    *t = *next;
    memset(next, 0, sizeof *next);
}

static tt_status any_all(tt_tensor *out, tt_op op, const tt_tensor *a, int d, int keepdim)
{
    tt__clear(out);
    tt__opscope sc = tt__op_enter();
    tt_tensor t = {0}, u = {0};
    tt_status st = tt_to_dtype(&t, a, TT_BOOL);
    if (st == TT_OK && op == TT_OP_ALL && (st = tt_unary(&u, TT_OP_NOT, &t)) == TT_OK) take(&t, &u);
    if (st == TT_OK && (st = tt_to_dtype(&u, &t, TT_FLOAT32)) == TT_OK) take(&t, &u);
    if (st == TT_OK && (st = tt_reduce(&u, TT_OP_SUM, &t, d, keepdim)) == TT_OK) take(&t, &u);
    if (st == TT_OK) st = tt_binary_scalar(out, op == TT_OP_ANY ? TT_OP_GT : TT_OP_EQ, &t, 0.0, 0);
    tt_tensor_release(&t);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, op, out, a, NULL, NULL);
        ev.flops = (double)tt_numel(a);
        reduce_args(&ev, d, keepdim);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_any(tt_tensor *out, const tt_tensor *a, int d, int keepdim) { return any_all(out, TT_OP_ANY, a, d, keepdim); }
tt_status tt_all(tt_tensor *out, const tt_tensor *a, int d, int keepdim) { return any_all(out, TT_OP_ALL, a, d, keepdim); }

/* p = 2: sqrt(sum(a*a)); inf: max(|a|); else sum(|a|^p)^(1/p) */
static tt_status norm_impl(tt_tensor *out, const tt_tensor *a, double p, int d, int keepdim)
{
    char sa[SHAPE_BUF];
    if (a->dtype == TT_BOOL)
        return tt__err(TT_EARG, "norm: expects float32, got bool %s; hint: x:float()", shp(a, sa));
    if (!(p > 0))
        return tt__err(TT_EARG, "norm: p must be positive (or math.huge for the largest |x|), got %g", p);
    tt_tensor t = {0}, u = {0};
    tt_status st = tt_to_dtype(&t, a, TT_FLOAT32);
    if (st == TT_OK && isinf(p)) {
        if ((st = tt_unary(&u, TT_OP_ABS, &t)) == TT_OK) take(&t, &u);
        if (st == TT_OK) st = tt_reduce(out, TT_OP_MAX, &t, d, keepdim);
    } else if (st == TT_OK) {
        if (p == 2) st = tt_binary(&u, TT_OP_MUL, &t, &t);
        else if ((st = tt_unary(&u, TT_OP_ABS, &t)) == TT_OK && p != 1) {
            take(&t, &u);
            st = tt_binary_scalar(&u, TT_OP_POW, &t, p, 0);
        }
        if (st == TT_OK) take(&t, &u);
        if (st == TT_OK && (st = tt_reduce(&u, TT_OP_SUM, &t, d, keepdim)) == TT_OK) take(&t, &u);
        if (st == TT_OK && p == 1) take(out, &t);
        else if (st == TT_OK && p == 2) st = tt_unary(out, TT_OP_SQRT, &t);
        else if (st == TT_OK) st = tt_binary_scalar(out, TT_OP_POW, &t, 1.0 / p, 0);
    }
    if (st == TT_OK) st = tt__round_to(out, "norm", a->dtype);     /* float32 inside, one rounding */
    tt_tensor_release(&t);
    tt_tensor_release(&u);
    return st;
}

tt_status tt_norm(tt_tensor *out, const tt_tensor *a, double p, int d, int keepdim)
{
    tt__clear(out);
    tt__autocast ac;
    if (tt__autocast_enter(&ac, TT__AC_FP32, 1, &a))
        return tt__autocast_leave(&ac, ac.st ? ac.st : tt_norm(out, ac.in[0], p, d, keepdim));
    tt__opscope sc = tt__op_enter();
    tt_status st = norm_impl(out, a, p, d, keepdim);
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL))
        st = tt__record(out, TT_OP_NORM, a, NULL, NULL, &(tt__agargs){ .s = p, .d = d, .keepdim = keepdim });
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_NORM, out, a, NULL, NULL);
        ev.flops = (double)tt_numel(a) * (isinf(p) ? 1 : p == 2 ? 2 : 3);
        tt__arg_num(&ev, "p", "=%S", isinf(p) ? HUGE_VAL : p);   /* -inf is inf's max |x| here */
        if (d >= 0) {
            tt__arg_int(&ev, "dim", "=%lld", d + 1);
            tt__arg_bool(&ev, "keepdim", "keepdim", keepdim);
        }
    }
    return tt__op_leave(sc, st, &ev);
}
