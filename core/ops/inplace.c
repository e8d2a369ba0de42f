/*
** inplace.c — the in-place ops (add_, sub_, mul_, div_, masked_fill_,
** fill_, zero_, copy_; optimizer steps write in place too, in optim.c): each computes its values with the out-of-place op
** and writes them into the tensor's own storage (through its strides, so
** into a view's base), then bumps the storage's version: a tensor saved
** for backward before the write makes that backward() fail instead of
** giving a wrong gradient (autograd.c checks). As PyTorch, a tensor that
** requires grad may be changed in place only with grad mode off (an
** update by hand); unlike PyTorch, an in-place op is never recorded.
*/
#include <string.h>

#include "tt_internal.h"

#define SHAPE_BUF 256

static int requires(const tt_tensor *t) { return t && t->ag && t->ag->requires_grad; }

/* Whether two elements of t share one memory location (a stride 0 over
   more than one element: an expand), which a write cannot serve. */
static int overlaps(const tt_tensor *t)
{
    for (int i = 0; i < t->ndim; i++)
        if (t->stride[i] == 0 && t->shape[i] > 1) return 1;
    return 0;
}

/* The checks every in-place op makes on a (written) and b (read); instead
   names the out-of-place form for the hint ("x + y"). */
static tt_status check(const char *name, const tt_tensor *a, const tt_tensor *b, const char *instead)
{
    char sa[SHAPE_BUF];
    if (tt_is_grad_enabled() && requires(a) && !(a->ag->fn))
        return tt__err(TT_EARG, "%s: a leaf tensor that requires grad (%s) is being used in an in-place operation; "
                       "hint: an update by hand goes in tt.no_grad(function() ... end), or write y = %s",
                       name, tt_shape_str(a, sa, sizeof sa), instead);
    if (tt_is_grad_enabled() && requires(a))
        return tt__err(TT_EARG, "%s: %s is the result of %s, in the autograd graph: in-place ops are not recorded "
                       "for backward here; hint: write y = %s instead", name, tt_shape_str(a, sa, sizeof sa),
                       tt_grad_fn_name(a), instead);
    if (tt_is_grad_enabled() && requires(b))
        return tt__err(TT_EARG, "%s: the operand requires grad but the in-place result would not be recorded; "
                       "hint: write y = %s instead", name, instead);
    if (overlaps(a))
        return tt__err(TT_EARG, "%s: %s has more than one element at one memory location (an expand); "
                       "hint: x:contiguous() or x:clone() first", name, tt_shape_str(a, sa, sizeof sa));
    return TT_OK;
}

/* vals (the op's out-of-place result) written into a; releases vals. */
static tt_status write_into(const char *name, tt_tensor *a, tt_tensor *vals)
{
    char sa[SHAPE_BUF], sv[SHAPE_BUF];
    tt_status st = TT_OK;
    if (vals->ndim != a->ndim || memcmp(vals->shape, a->shape, (size_t)a->ndim * sizeof a->shape[0]) != 0) {
        st = tt__err(TT_ESHAPE, "%s: output with shape %s doesn't match the broadcast shape %s", name,
                     tt_shape_str(a, sa, sizeof sa), tt_shape_str(vals, sv, sizeof sv));
    } else if (vals->dtype != a->dtype && !tt_dtype_is_float(a->dtype)) {
        st = tt__err(TT_EARG, "%s: result type %s can't be cast to the desired output type %s; hint: x:float() first",
                     name, tt_dtype_name(vals->dtype), tt_dtype_name(a->dtype));
    } else {
        tt_tensor conv = {0};
        if (vals->dtype != a->dtype) st = tt_to_dtype(&conv, vals, a->dtype);
        if (st == TT_OK) {
            tt__copy(a, conv.storage ? &conv : vals);
            a->storage->version++;
        }
        tt_tensor_release(&conv);
    }
    tt_tensor_release(vals);
    return st;
}

/* The op's one trace event: the tensor written, what it read, a -> a. */
static tt_status leave(tt__opscope sc, tt_status st, const char *name, tt_op op, tt_tensor *a, const tt_tensor *b,
                       int has_s, tt_number s)
{
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, op, a, a, b, NULL);
        ev.name = name;
        ev.infix = NULL;
        if (has_s) tt__event_scalar(&ev, s);
        tt__arg_bool(&ev, "in_place", "in place", 1);
    }
    return tt__op_leave(sc, st, &ev);
}

static const struct { tt_op op; const char *name, *instead; } BINARY[] = {
    {TT_OP_ADD, "add_", "x + y"}, {TT_OP_SUB, "sub_", "x - y"}, {TT_OP_MUL, "mul_", "x * y"},
    {TT_OP_DIV, "div_", "x / y"},
};

tt_status tt_binary_(tt_tensor *a, tt_op op, const tt_tensor *b, const tt_number *s)
{
    size_t k = 0;
    while (k < sizeof BINARY / sizeof BINARY[0] && BINARY[k].op != op) k++;
    if (k == sizeof BINARY / sizeof BINARY[0])
        return tt__err(TT_EARG, "in-place: '%s' has no in-place form (add_, sub_, mul_, div_ have)", tt_op_name(op));
    const char *name = BINARY[k].name;
    tt__opscope sc = tt__op_enter();
    tt_status st = check(name, a, b, BINARY[k].instead);
    if (st == TT_OK) {
        int was = tt_set_grad_enabled(0);
        tt_tensor vals;
        st = b ? tt_binary(&vals, op, a, b) : tt_binary_number(&vals, op, a, *s, 0);
        tt_set_grad_enabled(was);
        if (st == TT_OK) st = write_into(name, a, &vals);
    }
    return leave(sc, st, name, op, a, b, b == NULL, b ? tt_num_i(0) : *s);
}

tt_status tt_masked_fill_(tt_tensor *a, const tt_tensor *mask, tt_number value)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = check("masked_fill_", a, NULL, "x:masked_fill(mask, value)");
    if (st == TT_OK) {
        int was = tt_set_grad_enabled(0);
        tt_tensor vals;
        st = tt_masked_fill_number(&vals, a, mask, value);
        tt_set_grad_enabled(was);
        if (st == TT_OK) st = write_into("masked_fill_", a, &vals);
    }
    return leave(sc, st, "masked_fill_", TT_OP_MASKED_FILL, a, mask, 1, value);
}

static tt_status fill(tt_tensor *a, tt_number value, const char *name, const char *instead)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = check(name, a, NULL, instead);
    tt_tensor vals;
    if (st == TT_OK) st = tt_full_number(&vals, a->dtype, a->ndim, a->shape, value);
    if (st == TT_OK) st = write_into(name, a, &vals);
    return leave(sc, st, name, TT_OP_FULL, a, NULL, value.f != 0 || name[0] == 'f', value);
}

tt_status tt_fill_(tt_tensor *a, tt_number value) { return fill(a, value, "fill_", "tt.full(shape, value)"); }
tt_status tt_zero_(tt_tensor *a) { return fill(a, tt_num_i(0), "zero_", "tt.zeros(shape)"); }

tt_status tt_copy_(tt_tensor *a, const tt_tensor *src)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = check("copy_", a, src, "src:clone()");
    char sa[SHAPE_BUF], ss[SHAPE_BUF];
    tt_tensor vals = {0};
    if (st == TT_OK) {
        /* src broadcast to a's shape, then copied out of any view it shares with a */
        tt_tensor wide;
        st = tt_expand(&wide, src, a->ndim, a->shape);
        if (st) st = tt__err(TT_ESHAPE, "copy_: the source %s does not broadcast to %s", tt_shape_str(src, ss, sizeof ss),
                             tt_shape_str(a, sa, sizeof sa));
        else {
            st = tt_clone(&vals, &wide);
            tt_tensor_release(&wide);
        }
    }
    if (st == TT_OK && vals.dtype != a->dtype) {
        tt_tensor conv;
        st = tt_to_dtype(&conv, &vals, a->dtype);     /* copy_ converts any way, as PyTorch's */
        tt_tensor_release(&vals);
        if (st == TT_OK) vals = conv;
    }
    if (st == TT_OK) st = write_into("copy_", a, &vals);
    return leave(sc, st, "copy_", TT_OP_CLONE, a, src, 0, tt_num_i(0));
}
