/*
** create.c — the traced creation ops: empty, full, zeros, ones, tensor
** (from a buffer), arange, eye, rand, randn, randint. The random numbers come from
** the tensor layer's generator (tt__rand_uniform, tt__rand_normal).
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tt_internal.h"

tt_status tt_empty(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__alloc(out, "empty", dt, ndim, shape, NULL);
    tt_event ev;
    if (st == TT_OK) tt__event_init(&ev, TT_OP_EMPTY, out, NULL, NULL, NULL);
    return tt__op_leave(sc, st, &ev);
}

static void fill(tt_tensor *t, tt_number v)
{
    int64_t n = tt_numel(t);
    if (t->dtype == TT_BOOL) {
        memset(tt_data_bool(t), tt__num_bool(v), (size_t)n);
    } else if (t->dtype == TT_INT64) {
        int64_t *p = tt_data_i64(t), iv = tt__num_i64(v);
        for (int64_t i = 0; i < n; i++) p[i] = iv;
    } else if (t->dtype != TT_FLOAT32) {      /* as PyTorch: the value to float32, then rounded */
        uint16_t *p = tt_data_u16(t), h = tt_half_from_float(t->dtype, tt__num_f32(v));
        for (int64_t i = 0; i < n; i++) p[i] = h;
    } else {
        float *p = tt_data_f32(t), f = tt__num_f32(v);
        for (int64_t i = 0; i < n; i++) p[i] = f;
    }
}

static tt_status full_op(tt_tensor *out, tt_op op, tt_dtype dt, int ndim, const int64_t *shape, tt_number value)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__alloc(out, tt_op_name(op), dt, ndim, shape, NULL);
    tt_event ev;
    if (st == TT_OK) {
        fill(out, value);
        tt__event_init(&ev, op, out, NULL, NULL, NULL);
        if (op == TT_OP_FULL && value.is_int) tt__arg_int(&ev, "value", "=%lld", value.i);
        else if (op == TT_OP_FULL) tt__arg_num(&ev, "value", "=%g", value.f);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_full(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape, double value)
{
    return full_op(out, TT_OP_FULL, dt, ndim, shape, tt_num_f(value));
}

tt_status tt_full_number(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape, tt_number value)
{
    return full_op(out, TT_OP_FULL, dt, ndim, shape, value);
}

tt_status tt_zeros(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape)
{
    return full_op(out, TT_OP_ZEROS, dt, ndim, shape, tt_num_i(0));
}

tt_status tt_ones(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape)
{
    return full_op(out, TT_OP_ONES, dt, ndim, shape, tt_num_i(1));
}

tt_status tt_from_buffer(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape, const void *data)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__alloc(out, "tensor", dt, ndim, shape, NULL);
    tt_event ev;
    if (st == TT_OK) {
        if (tt_numel(out)) memcpy(out->storage->data, data, (size_t)(tt_numel(out) * (int64_t)tt_dtype_size(dt)));
        tt__event_init(&ev, TT_OP_TENSOR, out, NULL, NULL, NULL);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_arange(tt_tensor *out, double a, double b, double step)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = TT_OK;
    tt_event ev;
    memset(out, 0, sizeof *out);
    if (step == 0 || !isfinite(a) || !isfinite(b) || !isfinite(step)) {
        st = tt__err(TT_EARG, "arange: needs finite bounds and a nonzero step (got %g, %g, step %g)", a, b, step);
    } else {
        double cnt = ceil((b - a) / step);
        int64_t n = cnt > 0 && cnt <= 1e15 ? (int64_t)cnt : 0;   /* no cast of an out-of-range double */
        if (cnt > 1e15) st = tt__err(TT_ENOMEM, "arange: %g elements is too many", cnt);
        else st = tt__alloc(out, "arange", TT_FLOAT32, 1, &n, NULL);
        if (st == TT_OK) {
            float *p = tt_data_f32(out);
            for (int64_t i = 0; i < n; i++) p[i] = (float)(a + (double)i * step);
            tt__event_init(&ev, TT_OP_ARANGE, out, NULL, NULL, NULL);
            tt__arg_num(&ev, "start", "%g", a);
            tt__arg_num(&ev, "stop", "%g", b);
            tt__arg_num(&ev, "step", "=%g", step);
        }
    }
    return tt__op_leave(sc, st, &ev);
}

/* The count ceil((b - a) / step) in unsigned arithmetic: b - a spans up to
   2^64 - 1, which no int64 (or double, exactly) holds. */
tt_status tt_arange_int(tt_tensor *out, tt_dtype dt, int64_t a, int64_t b, int64_t step)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = TT_OK;
    tt_event ev;
    memset(out, 0, sizeof *out);
    uint64_t span = 0, by = 0;
    if (step > 0 && b > a) span = (uint64_t)b - (uint64_t)a, by = (uint64_t)step;
    if (step < 0 && b < a) span = (uint64_t)a - (uint64_t)b, by = 0 - (uint64_t)step;
    uint64_t count = by ? span / by + (span % by != 0) : 0;
    if (step == 0) {
        st = tt__err(TT_EARG, "arange: needs a nonzero step (got %lld, %lld, step 0)", (long long)a, (long long)b);
    } else if (dt == TT_BOOL) {
        st = tt__err(TT_EARG, "arange: counts in float32 or int64, not bool");
    } else if (count > (uint64_t)1e15) {
        st = tt__err(TT_ENOMEM, "arange: %llu elements (%lld to %lld, step %lld) is too many",
                     (unsigned long long)count, (long long)a, (long long)b, (long long)step);
    } else {
        int64_t n = (int64_t)count;
        /* 16 bits: counted in float32 and rounded once, as PyTorch does */
        st = tt__alloc(out, "arange", dt == TT_INT64 ? TT_INT64 : TT_FLOAT32, 1, &n, NULL);
        if (st == TT_OK) {
            /* a + i*step wraps in uint64_t exactly to the value, which lies in [a, b) */
            for (int64_t i = 0; i < n; i++) {
                int64_t v = (int64_t)((uint64_t)a + (uint64_t)i * (uint64_t)step);
                if (dt == TT_INT64) tt_data_i64(out)[i] = v;
                else tt_data_f32(out)[i] = (float)v;
            }
            st = tt__round_to(out, "arange", dt);
        }
        if (st == TT_OK) {
            tt__event_init(&ev, TT_OP_ARANGE, out, NULL, NULL, NULL);
            tt__arg_int(&ev, "start", "%lld", a);
            tt__arg_int(&ev, "stop", "%lld", b);
            tt__arg_int(&ev, "step", "=%lld", step);
        }
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_eye(tt_tensor *out, int64_t n, int64_t m)
{
    tt__opscope sc = tt__op_enter();
    int64_t shape[2] = {n, m};
    tt_status st = tt__alloc(out, "eye", TT_FLOAT32, 2, shape, NULL);
    tt_event ev;
    if (st == TT_OK) {
        fill(out, tt_num_i(0));
        float *p = tt_data_f32(out);
        for (int64_t i = 0; i < n && i < m; i++) p[i * m + i] = 1.0f;
        tt__event_init(&ev, TT_OP_EYE, out, NULL, NULL, NULL);
    }
    return tt__op_leave(sc, st, &ev);
}

/* A tensor filled by one of the generators of tensor.c: float32 numbers,
   rounded once for a 16-bit dtype (PyTorch's randn(..., dtype=torch.bfloat16)
   draws in float too). Uniforms are drawn at the dtype's precision, as
   PyTorch's are (multiples of 2^-8 in bfloat16, 2^-11 in float16): rounded
   from 24 bits, the draws just below 1 would round to 1. */
tt_status tt_random(tt_tensor *out, tt_op op, tt_dtype dt, int ndim, const int64_t *shape)
{
    memset(out, 0, sizeof *out);
    if ((op != TT_OP_RAND && op != TT_OP_RANDN) || !tt_dtype_is_float(dt))
        return tt__err(TT_EARG, "%s: expects a float dtype, got %s", tt_op_name(op), tt_dtype_name(dt));
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__alloc(out, tt_op_name(op), TT_FLOAT32, ndim, shape, NULL);
    tt_event ev;
    if (st == TT_OK) {
        if (op == TT_OP_RAND)
            tt__rand_uniform_bits(tt_data_f32(out), tt_numel(out), dt == TT_BFLOAT16 ? 8 : dt == TT_FLOAT16 ? 11 : 24);
        else tt__rand_normal(tt_data_f32(out), tt_numel(out));
        st = tt__round_to(out, tt_op_name(op), dt);
    }
    if (st == TT_OK) tt__event_init(&ev, op, out, NULL, NULL, NULL);
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_rand(tt_tensor *out, int ndim, const int64_t *shape)
{
    return tt_random(out, TT_OP_RAND, TT_FLOAT32, ndim, shape);
}

tt_status tt_randn(tt_tensor *out, int ndim, const int64_t *shape)
{
    return tt_random(out, TT_OP_RANDN, TT_FLOAT32, ndim, shape);
}

tt_status tt_randint(tt_tensor *out, int64_t lo, int64_t hi, int ndim, const int64_t *shape)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = TT_OK;
    tt_event ev;
    memset(out, 0, sizeof *out);
    if (hi <= lo)
        st = tt__err(TT_EARG, "randint: empty range [%lld, %lld): needs lo < hi", (long long)lo, (long long)hi);
    else st = tt__alloc(out, "randint", TT_INT64, ndim, shape, NULL);
    if (st == TT_OK) {
        tt__rand_int(tt_data_i64(out), tt_numel(out), lo, (uint64_t)hi - (uint64_t)lo);
        tt__event_init(&ev, TT_OP_RANDINT, out, NULL, NULL, NULL);
        tt__arg_int(&ev, "lo", "%lld", lo);
        tt__arg_int(&ev, "hi", "%lld", hi);
    }
    return tt__op_leave(sc, st, &ev);
}
