/*
** index.c — repeat_interleave, cat, stack, index_select and gather.
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

/* ===== Repeat, cat, stack ===== */

static tt_status repeat_impl(tt_tensor *out, const tt_tensor *a, int64_t r, int d)
{
    char sa[SHAPE_BUF];
    tt_status st = tt__check_dim("repeat_interleave", a, d, 0);
    if (st) return st;
    if (r < 0)
        return tt__err(TT_EARG, "repeat_interleave: repeats must not be negative, got %lld for %s",
                       (long long)r, shp(a, sa));
    int64_t n = a->shape[d];
    if (r > 0 && n > INT64_MAX / 8 / r)
        return tt__err(TT_ENOMEM, "repeat_interleave: %lld x %lld is too large", (long long)n, (long long)r);
    int64_t shape[TT_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[d] = n * r;
    st = tt__alloc(out, "repeat_interleave", a->dtype, a->ndim, shape, a->names);
    if (st) return st;
    if (tt_numel(out) == 0) return TT_OK;
    if (a->ndim < TT_MAX_DIMS) {
        /* one copy: src gets a stride-0 dim of r after d; dst is out split at d */
        tt_tensor src = *a, dst = *out;
        for (int i = a->ndim; i > d + 1; i--) {
            src.shape[i] = a->shape[i - 1];
            src.stride[i] = a->stride[i - 1];
            dst.shape[i] = out->shape[i - 1];
        }
        src.shape[d + 1] = r;
        src.stride[d + 1] = 0;
        dst.shape[d] = n;
        dst.shape[d + 1] = r;
        src.ndim = dst.ndim = a->ndim + 1;
        tt__contig_strides(dst.ndim, dst.shape, dst.stride);
        tt__copy(&dst, &src);
        return TT_OK;
    }
    /* no room for the extra dim: one slice at a time */
    for (int64_t j = 0; j < n; j++) {
        tt_tensor src = *a, dst = *out;
        src.shape[d] = dst.shape[d] = 1;
        src.offset += j * a->stride[d];
        for (int64_t t = 0; t < r; t++) {
            dst.offset = out->offset + (j * r + t) * out->stride[d];
            tt__copy(&dst, &src);
        }
    }
    return TT_OK;
}

tt_status tt_repeat_interleave(tt_tensor *out, const tt_tensor *a, int64_t r, int d)
{
    tt__clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = repeat_impl(out, a, r, d);
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL)) st = tt__record(out, TT_OP_REPEAT_INTERLEAVE, a, NULL, NULL, &(tt__agargs){ .d = d, .len = r });
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_REPEAT_INTERLEAVE, out, a, NULL, NULL);
        tt__arg_int(&ev, "r", "=%lld", r);
        tt__arg_int(&ev, "dim", "=%lld", d + 1);
    }
    return tt__op_leave(sc, st, &ev);
}

/* Checks a list for cat (stack == 0: sizes may differ along d) or stack
   (all shapes equal). */
static tt_status check_list(const char *name, const tt_tensor *const *list, int n, int d, int stack)
{
    char s0[SHAPE_BUF], si[SHAPE_BUF];
    if (n < 1 || list == NULL) return tt__err(TT_EARG, "%s: expects at least one tensor", name);
    for (int i = 0; i < n; i++)
        if (list[i] == NULL || list[i]->storage == NULL)
            return tt__err(TT_EARG, "%s: tensor %d is missing", name, i + 1);
    const tt_tensor *a = list[0];
    tt_status st = tt__check_dim(name, a, d, stack);
    if (st) return st;
    if (stack && a->ndim + 1 > TT_MAX_DIMS)
        return tt__err(TT_EARG, "%s: the result would have %d dims (at most %d)", name, a->ndim + 1, TT_MAX_DIMS);
    for (int i = 1; i < n; i++) {
        const tt_tensor *t = list[i];
        if (t->dtype != a->dtype)
            return tt__err(TT_EARG, "%s: dtypes differ: tensor 1 is %s %s, tensor %d is %s %s; hint: x:float()",
                           name, tt_dtype_name(a->dtype), shp(a, s0), i + 1, tt_dtype_name(t->dtype), shp(t, si));
        if (t->ndim != a->ndim)
            return tt__err(TT_ESHAPE, "%s: tensors 1 and %d have different dims: %s and %s",
                           name, i + 1, shp(a, s0), shp(t, si));
        for (int j = 0; j < a->ndim; j++) {
            if (t->shape[j] == a->shape[j] || (!stack && j == d)) continue;
            if (stack)
                return tt__err(TT_ESHAPE, "%s: shapes differ: %s and %s (tensor 1 vs %d, dim %d: %lld vs %lld)",
                               name, shp(a, s0), shp(t, si), i + 1, j + 1,
                               (long long)a->shape[j], (long long)t->shape[j]);
            return tt__err(TT_ESHAPE, "%s: shapes %s and %s differ outside dim %d (tensor 1 vs %d, dim %d: %lld vs %lld)",
                           name, shp(a, s0), shp(t, si), d + 1, i + 1, j + 1,
                           (long long)a->shape[j], (long long)t->shape[j]);
        }
    }
    return TT_OK;
}

static void list_event(tt_event *ev, tt_op op, const tt_tensor *out, const tt_tensor *const *list, int n, int d)
{
    tt__event_init(ev, op, out, list[0], n > 1 ? list[1] : NULL, n > 2 ? list[2] : NULL);
    if (n > 3) ev->inputs[ev->ninputs++] = list[3];
    ev->ninputs_total = n;
    ev->bytes = tt__nbytes(out);
    for (int i = 0; i < n; i++) ev->bytes += tt__nbytes(list[i]);
    tt__arg_int(ev, "dim", "=%lld", d + 1);
}

static tt_status cat_impl(tt_tensor *out, const tt_tensor *const *list, int n, int d)
{
    tt_status st = check_list("cat", list, n, d, 0);
    if (st) return st;
    const tt_tensor *a = list[0];
    int64_t shape[TT_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[d] = 0;
    for (int i = 0; i < n; i++) {
        if (list[i]->shape[d] > INT64_MAX / 8 - shape[d])
            return tt__err(TT_ENOMEM, "cat: the result is too large");
        shape[d] += list[i]->shape[d];
    }
    st = tt__alloc(out, "cat", a->dtype, a->ndim, shape, a->names);
    if (st) return st;
    int64_t pos = 0;
    for (int i = 0; i < n; i++) {
        tt_tensor dst = *out;                   /* borrowed header: a slab of out */
        dst.shape[d] = list[i]->shape[d];
        dst.offset = out->offset + pos * out->stride[d];
        tt__copy(&dst, list[i]);
        pos += dst.shape[d];
    }
    return TT_OK;
}

tt_status tt_cat(tt_tensor *out, const tt_tensor *const *list, int n, int d)
{
    tt__clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = cat_impl(out, list, n, d);
    if (st == TT_OK) st = tt__record_list(sc, out, TT_OP_CAT, list, n, &(tt__agargs){ .d = d });
    tt_event ev;
    if (st == TT_OK) list_event(&ev, TT_OP_CAT, out, list, n, d);
    return tt__op_leave(sc, st, &ev);
}

static tt_status stack_impl(tt_tensor *out, const tt_tensor *const *list, int n, int d)
{
    tt_status st = check_list("stack", list, n, d, 1);
    if (st) return st;
    const tt_tensor *a = list[0];
    int64_t shape[TT_MAX_DIMS];
    const char *names[TT_MAX_DIMS];
    for (int i = 0, j = 0; i <= a->ndim; i++) {
        if (i == d) {
            shape[i] = n;
            names[i] = NULL;
        } else {
            shape[i] = a->shape[j];
            names[i] = a->names[j++];
        }
    }
    st = tt__alloc(out, "stack", a->dtype, a->ndim + 1, shape, names);
    if (st) return st;
    for (int i = 0; i < n; i++) {
        tt_tensor dst = *out;                   /* borrowed header: out selected at d = i */
        dst.ndim = a->ndim;
        for (int j = d; j < a->ndim; j++) {
            dst.shape[j] = out->shape[j + 1];
            dst.stride[j] = out->stride[j + 1];
        }
        dst.offset = out->offset + i * out->stride[d];
        tt__copy(&dst, list[i]);
    }
    return TT_OK;
}

tt_status tt_stack(tt_tensor *out, const tt_tensor *const *list, int n, int d)
{
    tt__clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = stack_impl(out, list, n, d);
    if (st == TT_OK) st = tt__record_list(sc, out, TT_OP_STACK, list, n, &(tt__agargs){ .d = d });
    tt_event ev;
    if (st == TT_OK) list_event(&ev, TT_OP_STACK, out, list, n, d);
    return tt__op_leave(sc, st, &ev);
}

/* ===== Indexing: index_select, gather ===== */

/* Walks every element i of `walk` (row-major): the element of `big` at i
   with i_d replaced by the index (index[i_d] for index_select, index[i]
   for gather; 1-based) is copied into walk[i], or with add, walk[i] (a
   float gradient) is added to it. */
static void index_walk(const tt_tensor *big, int d, const tt_tensor *index, int gather,
                       const tt_tensor *walk, int add)
{
    int nd = walk->ndim;
    int64_t n = tt_numel(walk), i[TT_MAX_DIMS] = {0};
    size_t es = tt_dtype_size(big->dtype);
    const int64_t *ix = tt_data_i64(index);
    char *bb = (char *)big->storage->data + big->offset * (int64_t)es;
    char *wb = (char *)walk->storage->data + walk->offset * (int64_t)tt_dtype_size(walk->dtype);
    for (int64_t k = 0; k < n; k++) {
        int64_t wo = 0, io = 0, bo = 0;
        for (int q = 0; q < nd; q++) {
            wo += i[q] * walk->stride[q];
            if (gather) io += i[q] * index->stride[q];
        }
        if (!gather) io = i[d] * index->stride[0];
        for (int q = 0; q < nd; q++) bo += (q == d ? ix[io] - 1 : i[q]) * big->stride[q];
        if (add) ((float *)bb)[bo] += ((const float *)wb)[wo];
        else memcpy(wb + wo * (int64_t)es, bb + bo * (int64_t)es, es);
        for (int q = nd - 1; q >= 0 && ++i[q] == walk->shape[q]; q--) i[q] = 0;
    }
}

/* index_select along dim 1 (an embedding's lookup) when each of a's rows
   (dims 2..) is one contiguous run: out's row k is a copy of a's row
   index[k], one memcpy instead of index_walk's element by element. out is
   freshly allocated (contiguous). 0: a's rows are not contiguous. */
static int select_rows(tt_tensor *out, const tt_tensor *a, const tt_tensor *index)
{
    int64_t len = 1;
    for (int q = a->ndim - 1; q >= 1; q--) {
        if (a->shape[q] != 1 && a->stride[q] != len) return 0;
        len *= a->shape[q];
    }
    size_t es = tt_dtype_size(a->dtype), row = (size_t)len * es;
    int64_t rows = index->shape[0];
    if (row == 0 || rows == 0) return 1;
    const int64_t *ix = tt_data_i64(index);
    const char *ab = (const char *)a->storage->data + a->offset * (int64_t)es;
    char *ob = (char *)out->storage->data + out->offset * (int64_t)es;
    for (int64_t k = 0; k < rows; k++)
        memcpy(ob + k * (int64_t)row, ab + (ix[k * index->stride[0]] - 1) * a->stride[0] * (int64_t)es, row);
    return 1;
}

/* index_select along the last dim (a head's score picks N of a row of N*N
   weights): out is fresh (contiguous) and filled a row at a time, the row's
   start found once, not index_walk's address arithmetic over every dim for
   every element (3x fewer instructions at lesson 14's sizes). */
static void select_last(tt_tensor *out, const tt_tensor *a, const tt_tensor *index)
{
    const int d = a->ndim - 1;
    const int64_t m = index->shape[0], is = index->stride[0], as = a->stride[d];
    if (m == 0 || tt_numel(out) == 0) return;
    const int64_t rows = tt_numel(out) / m;
    int64_t i[TT_MAX_DIMS] = {0};
    const size_t es = tt_dtype_size(a->dtype);
    const int64_t *ix = tt_data_i64(index);
    const char *ab = (const char *)a->storage->data + a->offset * (int64_t)es;
    char *ob = (char *)out->storage->data + out->offset * (int64_t)es;
    for (int64_t r = 0; r < rows; r++, ob += m * (int64_t)es) {
        int64_t base = 0;
        for (int q = 0; q < d; q++) base += i[q] * a->stride[q];
        const char *row = ab + base * (int64_t)es;
        if (es == 4)
            for (int64_t k = 0; k < m; k++) memcpy(ob + 4 * k, row + (ix[k * is] - 1) * as * 4, 4);
        else
            for (int64_t k = 0; k < m; k++)
                memcpy(ob + k * (int64_t)es, row + (ix[k * is] - 1) * as * (int64_t)es, es);
        for (int q = d - 1; q >= 0 && ++i[q] == a->shape[q]; q--) i[q] = 0;
    }
}

void tt__index_add(tt_tensor *dst, int d, const tt_tensor *index, int gather, const tt_tensor *g)
{
    index_walk(dst, d, index, gather, g, 1);
}

/* index is int64 and every value of it in 1..a's size at d. */
static tt_status check_index(const char *op, const tt_tensor *a, int d, const tt_tensor *index)
{
    char sa[SHAPE_BUF], si[SHAPE_BUF];
    if (index->dtype != TT_INT64)
        return tt__err(TT_EARG, "%s: index must be int64, got %s %s; hint: index:long()", op,
                       tt_dtype_name(index->dtype), shp(index, si));
    int64_t n = tt_numel(index), size = a->shape[d];
    for (int64_t k = 0; k < n; k++) {
        int64_t v = tt_get_i64(index, k);
        if (v < 1 || v > size)
            return tt__err(TT_EARG, "%s: index %lld out of range for dim %d of %s (1..%lld)%s", op,
                           (long long)v, d + 1, shp(a, sa), (long long)size,
                           v == 0 ? "; hint: indices count from 1" : "");
    }
    return TT_OK;
}

static tt_status index_impl(tt_tensor *out, const tt_tensor *a, int d, const tt_tensor *index, int gather)
{
    const char *op = gather ? "gather" : "index_select";
    char sa[SHAPE_BUF], si[SHAPE_BUF];
    tt_status st = tt__check_dim(op, a, d, 0);
    if (st) return st;
    int64_t shape[TT_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    if (gather) {
        if (index->ndim != a->ndim)
            return tt__err(TT_ESHAPE, "gather: index %s and input %s must have as many dims", shp(index, si),
                           shp(a, sa));
        for (int q = 0; q < a->ndim; q++)
            if (q != d && index->shape[q] > a->shape[q])
                return tt__err(TT_ESHAPE, "gather: index %s is larger than input %s at dim %d (%lld vs %lld)",
                               shp(index, si), shp(a, sa), q + 1, (long long)index->shape[q],
                               (long long)a->shape[q]);
        memcpy(shape, index->shape, sizeof shape);
    } else {
        if (index->ndim != 1)
            return tt__err(TT_ESHAPE, "index_select: index must be 1-D, got %s; hint: index:view(-1)",
                           shp(index, si));
        shape[d] = index->shape[0];
    }
    if ((st = check_index(op, a, d, index))) return st;
    st = tt__alloc(out, op, a->dtype, a->ndim, shape, gather ? NULL : a->names);
    if (st) return st;
    if (!gather && d == 0 && select_rows(out, a, index)) return TT_OK;
    if (!gather && d > 0 && d == a->ndim - 1) select_last(out, a, index);
    else index_walk(a, d, index, gather, out, 0);
    return TT_OK;
}

static tt_status index_op(tt_tensor *out, tt_op op, const tt_tensor *a, int d, const tt_tensor *index)
{
    tt__clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = index_impl(out, a, d, index, op == TT_OP_GATHER);
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL))
        st = tt__record(out, op, a, index, NULL, &(tt__agargs){ .d = d });
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, op, out, a, index, NULL);
        tt__arg_int(&ev, "dim", "=%lld", d + 1);
        tt__arg_input(&ev, "index", NULL, 2);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_index_select(tt_tensor *out, const tt_tensor *a, int d, const tt_tensor *index)
{
    return index_op(out, TT_OP_INDEX_SELECT, a, d, index);
}

tt_status tt_gather(tt_tensor *out, const tt_tensor *a, int d, const tt_tensor *index)
{
    return index_op(out, TT_OP_GATHER, a, d, index);
}
