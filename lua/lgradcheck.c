/*
** lgradcheck.c — tt.gradcheck(fn, inputs [, opts]): the analytic gradient
** of every input that requires grad against central finite differences.
** Rank 2 (lauxtt.h).
**
** The scalar checked is L = sum(fn(inputs...) * w), w fixed weights in
** [-1, 1) (one per output element, from its index: every element counts,
** with a different weight, so two wrong elements cannot cancel). The
** analytic side is one backward of L; the numeric side evaluates fn in
** float32 with one input element moved by +-eps and forms the difference
** of the two L's in double. fn runs quietly (no trace rows) and with
** recording off for the numeric side; the inputs' .grad are left as they
** were.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lauxtt.h"
#include "ltrace.h"
#include "lttlib.h"

/* Defaults for float32 evaluations. Rounding puts an error of about
   6e-8 * sum|y*w| / eps on a central difference and truncation one of
   about eps^2 * |f'''| / 6: at eps = 1e-2 both stay near 1e-3 for the
   outputs of up to a few hundred elements a check uses, while a wrong
   backward is off by the size of the gradient itself. */
#define GC_EPS 1e-2
#define GC_ATOL 1e-2
#define GC_RTOL 1e-2

/* The weight of output element k: splitmix64 of k scaled to [-1, 1). Its
   own generator: gradcheck leaves tt.randn's stream alone. */
static double weight(int64_t k)
{
    uint64_t x = (uint64_t)k * 0x9E3779B97F4A7C15u + 0x632BE59BD9B4E019u;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9u;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBu;
    x ^= x >> 31;
    return (double)(x >> 11) / 4503599627370496.0 - 1.0;     /* 2^52 */
}

/* What the protected part leaves for the cleanup to undo. */
typedef struct gc_state {
    int n;                      /* inputs: stack slots 2 (the list), 4 (old grads) */
    double eps, atol, rtol;
    int ndim;                   /* the output's shape, from the first call */
    int64_t shape[TT_MAX_DIMS];
    float *moved, kept;         /* the element moved now (NULL: none) and its value */
    int moved_input;            /* whose element it is */
} gc_state;

static tt_tensor *input(lua_State *L, int i)
{
    lua_rawgeti(L, 2, i + 1);
    tt_tensor *t = ltt_testtensor(L, -1);   /* closed or not: callers check storage */
    lua_pop(L, 1);              /* the list keeps it alive */
    return t;
}

/* Calls fn with the inputs; returns its result (on the stack) as a
   float32 tensor shaped as the first call's. */
static tt_tensor *call(lua_State *L, gc_state *s, int first)
{
    char s1[256], s2[256];
    lua_pushvalue(L, 1);
    for (int i = 0; i < s->n; i++) lua_rawgeti(L, 2, i + 1);
    if (lua_pcall(L, s->n, 1, 0) != LUA_OK)
        ltt_error(L, "gradcheck: fn raised an error: %s", lua_isstring(L, -1) ? lua_tostring(L, -1)
                                                                         : luaL_typename(L, -1));
    tt_tensor *y = ltt_testtensor(L, -1);
    if (!y)
        ltt_error(L, "gradcheck: fn must return a tensor, got %s", luaL_typename(L, -1));
    if (!y->storage) ltt_error(L, "gradcheck: fn returned a closed tensor");
    if (y->dtype != TT_FLOAT32)
        ltt_error(L, "gradcheck: fn returned a %s tensor %s; gradients need float32", tt_dtype_name(y->dtype),
                  tt_shape_str(y, s1, sizeof s1));
    if (first) {
        s->ndim = y->ndim;
        memcpy(s->shape, y->shape, sizeof s->shape);
    } else if (y->ndim != s->ndim || memcmp(y->shape, s->shape, (size_t)s->ndim * sizeof *s->shape) != 0) {
        tt_tensor was = {.ndim = s->ndim};
        memcpy(was.shape, s->shape, sizeof was.shape);
        ltt_error(L, "gradcheck: fn returned %s on the first call but %s on a later one; "
                  "hint: fn must give the same shape for inputs of the same shapes",
                  tt_shape_str(&was, s1, sizeof s1), tt_shape_str(y, s2, sizeof s2));
    }
    return y;
}

/* L = sum(fn(inputs) * w), in double from fn's float32 result. */
static double loss(lua_State *L, gc_state *s)
{
    tt_tensor *y = call(L, s, 0);
    double l = 0;
    for (int64_t k = 0, n = tt_numel(y); k < n; k++) l += tt_get(y, k) * weight(k);
    lua_pop(L, 1);
    return l;
}

/* Element k (row-major) of t's view, and its index as "[2,1]". */
static float *element(const tt_tensor *t, int64_t k, char *where, size_t size)
{
    int64_t off = 0, idx[TT_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = k % t->shape[d];
        k /= t->shape[d];
        off += idx[d] * t->stride[d];
    }
    size_t len = (size_t)snprintf(where, size, "[");
    for (int d = 0; d < t->ndim && len < size; d++)
        len += (size_t)snprintf(where + len, size - len, "%s%lld", d ? "," : "", (long long)idx[d] + 1);
    if (len < size) snprintf(where + len, size - len, "]");
    return tt_data_f32(t) + off;
}

/* The analytic gradients of the inputs that require grad, as a list of
   tensors (zeros for an input the output does not reach) at slot 5. */
static void analytic(lua_State *L, gc_state *s)
{
    char sy[256];
    tt_tensor *y = call(L, s, 1);
    if (!tt_tensor_requires_grad(y))
        ltt_error(L, "gradcheck: fn's result %s does not require grad (no input that requires grad reaches "
                  "it, or fn ran under tt.no_grad or detached it)", tt_shape_str(y, sy, sizeof sy));
    tt_tensor *w = ltt_newtensor(L);
    ltt_check(L, tt_empty(w, TT_FLOAT32, y->ndim, y->shape));
    float *wp = tt_data_f32(w);
    for (int64_t k = 0, n = tt_numel(y); k < n; k++) wp[k] = (float)weight(k);
    tt_tensor *prod = ltt_newtensor(L), *in[] = {y, w};
    LTT_CALL_HELD(L, "gradcheck", in, tt_binary(prod, TT_OP_MUL, y, w));
    tt_tensor *l = ltt_newtensor(L), *in_p[] = {prod};
    LTT_CALL_HELD(L, "gradcheck", in_p, tt_reduce(l, TT_OP_SUM, prod, -1, 0));
    tt_tensor *in_l[] = {l};
    LTT_CALL_HELD(L, "gradcheck", in_l, tt_backward(l, NULL));
    lua_settop(L, 4);
    lua_createtable(L, s->n, 0);
    for (int i = 0; i < s->n; i++) {
        tt_tensor *t = input(L, i);
        if (!t->storage) ltt_error(L, "gradcheck: input %d was closed by fn", i + 1);
        if (!tt_tensor_requires_grad(t)) continue;
        const tt_tensor *g = tt_grad(t);
        tt_tensor *c = ltt_newtensor(L);
        ltt_check(L, g ? tt_detach(c, g) : tt_zeros(c, TT_FLOAT32, t->ndim, t->shape));
        lua_rawseti(L, 5, i + 1);
    }
}

/* Central differences, element by element, against the analytic side. */
static void numeric(lua_State *L, gc_state *s)
{
    tt_set_grad_enabled(0);
    for (int i = 0; i < s->n; i++) {
        tt_tensor *t = input(L, i);
        if (!t->storage) ltt_error(L, "gradcheck: input %d was closed by fn", i + 1);
        if (!tt_tensor_requires_grad(t)) continue;
        lua_rawgeti(L, 5, i + 1);
        const tt_tensor *g = ltt_totensor(L, -1);
        for (int64_t k = 0, n = tt_numel(t); k < n; k++) {
            char where[160], st[256];
            if (!t->storage) ltt_error(L, "gradcheck: input %d was closed by fn", i + 1);
            float *p = element(t, k, where, sizeof where);
            float up = (float)((double)*p + s->eps), down = (float)((double)*p - s->eps);
            s->moved = p;
            s->kept = *p;
            s->moved_input = i;
            *p = up;
            double lu = loss(L, s);
            if (!t->storage) ltt_error(L, "gradcheck: input %d was closed by fn", i + 1);
            *p = down;
            double ld = loss(L, s);
            if (!t->storage) ltt_error(L, "gradcheck: input %d was closed by fn", i + 1);
            *p = s->kept;
            s->moved = NULL;
            double num = (lu - ld) / ((double)up - (double)down), ana = tt_get(g, k);
            if (!(fabs(ana - num) <= s->atol + s->rtol * fabs(num)))
                ltt_error(L, "gradcheck: input %d %s, element %lld %s: analytic %.7g vs numeric %.7g "
                          "(|diff| %.3g > atol %g + rtol %g * |numeric|, eps %g); hint: a backward "
                          "is wrong, or fn is not smooth there (a kink within eps, a detach)",
                          i + 1, tt_shape_str(t, st, sizeof st), (long long)k + 1, where, ana, num,
                          fabs(ana - num), s->atol, s->rtol, s->eps);
        }
        lua_pop(L, 1);
    }
}

/* The checks, protected: stack 1 fn, 2 the inputs (a list of our own),
   3 the state, 4 the inputs' old grads. */
static int gradcheck_body(lua_State *L)
{
    gc_state *s = lua_touserdata(L, 3);
    analytic(L, s);
    numeric(L, s);
    return 0;
}

static double opt_number(lua_State *L, const char *name, double dflt)
{
    if (lua_isnoneornil(L, 3)) return dflt;
    lua_getfield(L, 3, name);
    int ok = 1;
    double v = lua_isnil(L, -1) ? dflt : lua_tonumberx(L, -1, &ok);
    if (!lua_isnil(L, -1) && (!ok || !(v >= 0) || isinf(v) || (v == 0 && name[0] == 'e')))
        ltt_error(L, "gradcheck: opts.%s must be a %s number, got %s", name,
                  name[0] == 'e' ? "positive" : "non-negative", luaL_tolstring(L, -1, NULL));
    lua_pop(L, 1);
    return v;
}

/* tt.gradcheck(fn, inputs [, {eps, atol, rtol}]): true, or an error
   naming the first element whose gradients disagree */
static int ltt_gradcheck(lua_State *L)
{
    static const char *const known[] = {"eps", "atol", "rtol", NULL};
    luaL_checktype(L, 1, LUA_TFUNCTION);
    luaL_checktype(L, 2, LUA_TTABLE);
    ltt_check_opts(L, 3, "gradcheck", known);
    gc_state st0 = {0};
    st0.eps = opt_number(L, "eps", GC_EPS);
    st0.atol = opt_number(L, "atol", GC_ATOL);
    st0.rtol = opt_number(L, "rtol", GC_RTOL);
    /* our own list, so fn cannot change what is checked */
    int n = (int)luaL_len(L, 2), wanted = 0;
    if (n < 1) return ltt_error(L, "gradcheck: inputs is an empty list; give the tensors fn takes");
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        char sh[256];
        lua_geti(L, 2, i + 1);
        tt_tensor *t = ltt_testtensor(L, -1);
        if (!t) return ltt_error(L, "gradcheck: inputs[%d] is a %s, not a tensor", i + 1, luaL_typename(L, -1));
        if (!t->storage) return ltt_error(L, "gradcheck: inputs[%d] is a closed tensor", i + 1);
        if (tt_tensor_requires_grad(t)) {
            wanted++;
            if (t->dtype != TT_FLOAT32)     /* finite differences need float32's precision */
                return ltt_error(L, "gradcheck: input %d %s is %s; gradcheck moves float32 inputs; "
                                 "hint: pass x:float():detach():requires_grad_()", i + 1,
                                 tt_shape_str(t, sh, sizeof sh), tt_dtype_name(t->dtype));
            for (int d = 0; d < t->ndim; d++)
                if (t->stride[d] == 0 && t->shape[d] > 1)
                    return ltt_error(L, "gradcheck: input %d %s has elements that share memory (an expand); "
                                     "hint: pass x:contiguous():detach():requires_grad_()",
                                     i + 1, tt_shape_str(t, sh, sizeof sh));
        }
        lua_rawseti(L, -2, i + 1);
    }
    if (!wanted)
        return ltt_error(L, "gradcheck: no input requires grad; hint: x:requires_grad_() on the inputs to check");
    lua_replace(L, 2);
    lua_settop(L, 2);
    gc_state *s = lua_newuserdatauv(L, sizeof *s, 0);
    *s = st0;
    s->n = n;
    /* the old grads, put back at the end as PyTorch's gradcheck leaves them */
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        tt_tensor *t = input(L, i);
        const tt_tensor *g = tt_grad(t);
        if (g) {
            ltt_check(L, tt_detach(ltt_newtensor(L), g));
            lua_rawseti(L, 4, i + 1);
        }
    }
    for (int i = 0; i < n; i++) ltt_check(L, tt_set_grad(input(L, i), NULL));
    int was = tt_is_grad_enabled();
    ltt_trace_mute(1);
    lua_pushcfunction(L, gradcheck_body);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_pushvalue(L, 4);
    int status = lua_pcall(L, 4, 0, 0);
    ltt_trace_mute(0);
    tt_set_grad_enabled(was);
    if (s->moved && input(L, s->moved_input)->storage) *s->moved = s->kept;
    for (int i = n - 1; i >= 0; i--) {
        tt_tensor *t = input(L, i);
        lua_rawgeti(L, 4, i + 1);
        if (t->storage) tt_set_grad(t, ltt_totensor(L, -1));
        lua_pop(L, 1);
    }
    if (status != LUA_OK) return lua_error(L);
    int64_t elements = 0;
    for (int i = 0; i < n; i++)
        if (tt_tensor_requires_grad(input(L, i))) elements += tt_numel(input(L, i));
    char what[160];
    snprintf(what, sizeof what, "gradcheck   %lld elements of %d input%s against central differences "
             "(eps %g, rtol %g, atol %g)", (long long)elements, n, n == 1 ? "" : "s", s->eps, s->rtol, s->atol);
    ltt_trace_passed(what);
    lua_pushboolean(L, 1);
    return 1;
}

static const luaL_Reg gradchecklib[] = {
    {"gradcheck", ltt_gradcheck},
    {NULL, NULL}
};

void ltt_open_gradcheck(lua_State *L)
{
    luaL_setfuncs(L, gradchecklib, 0);
}
