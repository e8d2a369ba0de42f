/*
** rope.c — two ops of the transformer block that are neither table rows
** nor views: rotary position embedding (tt_rope) and dropout (tt_dropout).
** Each records one node; their backwards are in backward.c.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernels.h"
#include "tt_internal.h"

#define SHAPE_BUF 256

static void clear(tt_tensor *t) { memset(t, 0, sizeof *t); }

static const char *shp(const tt_tensor *t, char *buf) { return tt_shape_str(t, buf, SHAPE_BUF); }

/* ===== Rotary position embedding =====
   x [..., D] as R = numel / D rows; the positions, P of them, give the
   angles p * theta_i once each (cos and sin tables [P, D/2], computed in
   double); row r reads the table row of the position it broadcasts to. */

static tt_status rope_check(const tt_tensor *x, const tt_tensor *pos, double base)
{
    char sx[SHAPE_BUF], sp[SHAPE_BUF];
    if (!tt_dtype_is_float(x->dtype))
        return tt__err(TT_EARG, "rope: x must be a float tensor (float32, bfloat16, float16), got %s %s; hint: x:float()",
                       tt_dtype_name(x->dtype), shp(x, sx));
    if (pos->dtype == TT_BOOL)
        return tt__err(TT_EARG, "rope: positions must be int64 or float32, got bool %s; hint: tt.arange(N)", shp(pos, sp));
    if (x->ndim == 0)
        return tt__err(TT_ESHAPE, "rope: x must have a last dim to rotate in pairs, got a 0-d tensor");
    const int64_t d = x->shape[x->ndim - 1];
    if (d % 2 != 0)
        return tt__err(TT_ESHAPE, "rope: the last dim of x %s must be even (it turns in pairs), got %lld",
                       shp(x, sx), (long long)d);
    if (!(base > 0) || isinf(base))
        return tt__err(TT_EARG, "rope: base must be a positive number, got %g", base);
    if (pos->ag && pos->ag->requires_grad)
        return tt__err(TT_EARG, "rope: positions %s require grad, but rope gives them no gradient; "
                       "hint: positions:detach()", shp(pos, sp));
    /* positions broadcast to x's shape without its last dim, right aligned */
    const int lead = x->ndim - 1;
    int fits = pos->ndim <= lead;
    for (int i = 0; fits && i < pos->ndim; i++) {
        int64_t ps = pos->shape[i], xs = x->shape[lead - pos->ndim + i];
        fits = ps == xs || ps == 1;
    }
    if (!fits) {
        tt_tensor rows = *x;
        rows.ndim = lead;
        char sr[SHAPE_BUF];
        return tt__err(TT_ESHAPE, "rope: positions %s do not fit x %s: they must broadcast to %s, "
                       "x without its last dim (e.g. [N] for [..., N, D])", shp(pos, sp), shp(x, sx),
                       lead ? shp(&rows, sr) : "[] (one position, a 0-d tensor)");
    }
    return TT_OK;
}

/* x float32, checked */
static tt_status rope_f32(tt_tensor *out, const tt_tensor *x, const tt_tensor *pos, double base,
                          int interleaved, int inverse)
{
    tt_status st;
    if ((st = tt__alloc(out, "rope", TT_FLOAT32, x->ndim, x->shape, x->names))) return st;
    const int lead = x->ndim - 1;
    const int64_t d = x->shape[lead], h = d / 2, n = tt_numel(x), np = tt_numel(pos);
    if (n == 0) return TT_OK;
    float *tab = malloc((size_t)(np * h > 0 ? 2 * np * h : 1) * sizeof *tab);
    if (!tab) {
        tt_tensor_release(out);
        return tt__err(TT_ENOMEM, "rope: out of memory for the angles of %lld positions", (long long)np);
    }
    float *cs = tab, *sn = tab + np * h;
    for (int64_t p = 0; p < np; p++) {
        const double at = tt_get(pos, p);
        for (int64_t i = 0; i < h; i++) {
            const double a = at * pow(base, -2.0 * (double)i / (double)d);
            cs[p * h + i] = (float)cos(a);
            sn[p * h + i] = (float)sin(a);
        }
    }
    float *y = tt_data_f32(out);
    const float *src = tt_data_f32(x);
    if (!tt_is_contiguous(x)) {
        tt__copy(out, x);
        src = y;
    }
    /* the table row of each x row: positions' row-major strides on x's
       leading dims, 0 where positions broadcast */
    int64_t pstride[TT_MAX_DIMS] = {0}, idx[TT_MAX_DIMS] = {0}, s = 1;
    for (int i = pos->ndim - 1; i >= 0; i--) {
        pstride[lead - pos->ndim + i] = pos->shape[i] == 1 ? 0 : s;
        s *= pos->shape[i];
    }
    int64_t prow = 0;
    for (int64_t r = 0; r < n / d; r++) {
        tk_rope_row(d, src + r * d, y + r * d, cs + prow * h, sn + prow * h, interleaved, inverse);
        for (int k = lead - 1; k >= 0; k--) {   /* the next row's index and its position */
            prow += pstride[k];
            if (++idx[k] < x->shape[k]) break;
            prow -= pstride[k] * idx[k];
            idx[k] = 0;
        }
    }
    free(tab);
    return TT_OK;
}

/* a 16-bit x turns as its float32 copy, the result rounded once to x's dtype */
static tt_status rope_impl(tt_tensor *out, const tt_tensor *x, const tt_tensor *pos, double base,
                           int interleaved, int inverse)
{
    tt_status st = rope_check(x, pos, base);
    if (st) return st;
    tt_tensor wx = {0};
    const tt_dtype dt = x->dtype;
    if ((st = tt__widen(&wx, "rope", &x))) return st;
    st = rope_f32(out, x, pos, base, interleaved, inverse);
    tt_tensor_release(&wx);
    return st ? st : tt__round_to(out, "rope", dt);
}

tt_status tt__rope(tt_tensor *out, const tt_tensor *x, const tt_tensor *positions, double base, int interleaved,
                   int inverse)
{
    clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = rope_impl(out, x, positions, base, interleaved, inverse);
    if (st == TT_OK && tt__grad_wanted(sc, x, NULL))
        st = tt__record(out, TT_OP_ROPE, x, positions, NULL,
                        &(tt__agargs){ .s = base, .interleaved = interleaved, .inverse = inverse });
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_ROPE, out, x, positions, NULL);
        ev.flops = 3.0 * (double)tt_numel(x);
        tt__arg_num(&ev, "base", "=%S", base);
        tt__arg_bool(&ev, "interleaved", "interleaved|half-split", interleaved);
        if (inverse) tt__arg_bool(&ev, "inverse", "inverse", 1);   /* the backward's; no Lua call takes it */
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_rope(tt_tensor *out, const tt_tensor *x, const tt_tensor *positions, double base, int interleaved)
{
    return tt__rope(out, x, positions, base, interleaved, 0);
}

/* ===== Dropout =====
   mask = (u >= p) / (1 - p) for u uniform in [0, 1) from the seeded
   generator (p = 1: all 0); out = x * mask, in x's dtype, and the node keeps the mask
   so the backward multiplies by the very same one. */

static tt_status dropout_impl(tt_tensor *out, tt_tensor *mask, const tt_tensor *x, double p)
{
    char sx[SHAPE_BUF];
    if (!tt_dtype_is_float(x->dtype))
        return tt__err(TT_EARG, "dropout: x must be a float tensor (float32, bfloat16, float16), got %s %s; "
                       "hint: x:float()", tt_dtype_name(x->dtype), shp(x, sx));
    if (!(p >= 0 && p <= 1))
        return tt__err(TT_EARG, "dropout: p must be a probability in [0, 1], got %g", p);
    tt_status st = tt__alloc(mask, "dropout", TT_FLOAT32, x->ndim, x->shape, NULL);
    if (st) return st;
    float *m = tt_data_f32(mask);
    const int64_t n = tt_numel(x);
    const float keep = p < 1 ? (float)(1.0 / (1.0 - p)) : 0.0f, pf = (float)p;
    tt__rand_uniform(m, n);
    for (int64_t i = 0; i < n; i++) m[i] = m[i] >= pf && p < 1 ? keep : 0.0f;
    /* a 16-bit x: the product in float32 (x * the float32 mask promotes),
       rounded once back to x's dtype; the mask stays float32 for the backward */
    if ((st = tt_binary(out, TT_OP_MUL, x, mask)) || (st = tt__round_to(out, "dropout", x->dtype))) return st;
    tt__set_names(out, x->names);
    return TT_OK;
}

tt_status tt_dropout(tt_tensor *out, const tt_tensor *x, double p)
{
    clear(out);
    tt__opscope sc = tt__op_enter();
    tt_tensor mask = {0};
    tt_status st = dropout_impl(out, &mask, x, p);
    if (st == TT_OK && tt__grad_wanted(sc, x, NULL)) st = tt__record(out, TT_OP_DROPOUT, x, &mask, NULL, NULL);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_DROPOUT, out, x, NULL, NULL);
        ev.flops = (double)tt_numel(x);
        tt__arg_num(&ev, "p", "=%S", p);
    }
    st = tt__op_leave(sc, st, &ev);
    tt_tensor_release(&mask);
    return st;
}
