/*
** elementwise.c — broadcasting, elementwise math (binary, unary, fused),
** dtype conversions, the 16-bit widen/round helpers, isnan, where and
** masked_fill.
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
#define PAR_MIN TT__PAR_MIN       /* elements below which a loop stays on one thread */

static const char *shp(const tt_tensor *t, char *buf) { return tt_shape_str(t, buf, SHAPE_BUF); }

static int same_name(const char *p, const char *q)
{
    return p == q || (p && q && strcmp(p, q) == 0);
}

/* ===== Broadcasting ===== */

/* NumPy broadcast of two right-aligned shapes with name unification.
   Returns 0, 1 (sizes clash) or 2 (names clash); *bad = the failing dim
   counted from the end (1 = last). */
static int broadcast_shapes(int na, const int64_t *sa, const char *const *nma,
                            int nb, const int64_t *sb, const char *const *nmb,
                            int *nd, int64_t *shape, const char **names, int *bad)
{
    int n = na > nb ? na : nb;
    for (int i = 1; i <= n; i++) {
        int ia = na - i, ib = nb - i;
        int64_t x = ia >= 0 ? sa[ia] : 1, y = ib >= 0 ? sb[ib] : 1;
        const char *p = ia >= 0 ? nma[ia] : NULL, *q = ib >= 0 ? nmb[ib] : NULL;
        *bad = i;
        if (x != y && x != 1 && y != 1) return 1;
        if (p && q && !same_name(p, q)) return 2;
        shape[n - i] = x == 1 ? y : x;
        if (names) names[n - i] = p ? p : q;
    }
    *nd = n;
    return 0;
}

tt_status tt__broadcast(const char *op, const tt_tensor *a, const tt_tensor *b,
                        int *ndim, int64_t *shape, const char **names)
{
    int bad;
    int r = broadcast_shapes(a->ndim, a->shape, a->names, b->ndim, b->shape, b->names,
                             ndim, shape, names, &bad);
    if (r == 0) return TT_OK;
    char sa[SHAPE_BUF], sb[SHAPE_BUF];
    int ia = a->ndim - bad, ib = b->ndim - bad;
    if (r == 1)   /* x * W with matrix shapes is usually a matmul meant */
        return tt__err(TT_ESHAPE, "%s: shapes %s and %s cannot broadcast (dim -%d: %lld vs %lld)%s",
                       op, shp(a, sa), shp(b, sb), bad, (long long)a->shape[ia],
                       (long long)b->shape[ib],
                       strcmp(op, "mul") == 0 && a->ndim >= 2 && b->ndim >= 2
                           ? "; hint: * is elementwise, use x:matmul(w) for the matrix product" : "");
    return tt__err(TT_ESHAPE, "%s: dim names differ: '%s' vs '%s' at dim -%d of %s and %s; "
                   "hint: rename with x:named(...)", op, a->names[ia], b->names[ib], bad,
                   shp(a, sa), shp(b, sb));
}

/* ===== Elementwise rows ===== */

/* The kernel row function an elementwise op runs, by its kind and dtypes. */
enum { EW_BINARY, EW_COMPARE, EW_LOGIC, EW_UNARY, EW_LOGIC_UNARY, EW_I64, EW_I64_COMPARE, EW_I64_UNARY };

typedef struct ew_ctx {
    int row;                /* EW_* (op rows) */
    int code;               /* the op's kernel code, TK_EW_* */
    size_t es_in, es_out;   /* element sizes */
    const void *x, *y;      /* input bases for run_ew (a scalar has stride 0) */
    float fval;             /* masked_fill value */
    uint8_t bval;
    int64_t ival;           /* (int64: the value as the tensor's dtype, as PyTorch casts it) */
    tt_dtype from, to;      /* tt_to_dtype's convert_row */
} ew_ctx;

/* a unit or zero stride: what the vector kernels take */
static int unit_or_zero(int64_t s) { return s == 0 || s == 1; }

/* The kernel row for n elements: o contiguous; x, y of stride 1 or (binary
   rows) 0. */
static void ew_kernel(const ew_ctx *c, int64_t n, void *o, const void *x, int64_t sx,
                      const void *y, int64_t sy)
{
    switch (c->row) {
    case EW_BINARY: tk_ew_binary(c->code, n, x, sx, y, sy, o); break;
    case EW_COMPARE: tk_ew_compare(c->code, n, x, sx, y, sy, o); break;
    case EW_LOGIC: tk_ew_logic(c->code, n, x, sx, y, sy, o); break;
    case EW_UNARY: tk_ew_unary(c->code, n, x, o); break;
    case EW_I64: tk_ew_i64(c->code, n, x, sx, y, sy, o); break;
    case EW_I64_COMPARE: tk_ew_i64_compare(c->code, n, x, sx, y, sy, o); break;
    case EW_I64_UNARY: tk_ew_i64_unary(c->code, n, x, o); break;
    default: tk_ew_logic_unary(c->code, n, x, o); break;
    }
}

/* n elements of size es from src at stride s to contiguous dst, or back. */
static void gather(void *dst, const char *src, int64_t s, int64_t n, size_t es)
{
    if (es == sizeof(int64_t))
        for (int64_t i = 0; i < n; i++) ((int64_t *)dst)[i] = ((const int64_t *)src)[i * s];
    else if (es == sizeof(float))
        for (int64_t i = 0; i < n; i++) ((float *)dst)[i] = ((const float *)src)[i * s];
    else
        for (int64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = ((const uint8_t *)src)[i * s];
}

static void scatter(char *dst, int64_t s, const void *src, int64_t n, size_t es)
{
    if (es == sizeof(int64_t))
        for (int64_t i = 0; i < n; i++) ((int64_t *)dst)[i * s] = ((const int64_t *)src)[i];
    else if (es == sizeof(float))
        for (int64_t i = 0; i < n; i++) ((float *)dst)[i * s] = ((const float *)src)[i];
    else
        for (int64_t i = 0; i < n; i++) ((uint8_t *)dst)[i * s] = ((const uint8_t *)src)[i];
}

#define EW_CHUNK 256

/* One row of an elementwise op: straight to the kernel when the strides
   allow, else through buffers of EW_CHUNK elements, so a strided row gives
   the bits of a contiguous one (exp and log included). */
static void ew_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    const ew_ctx *c = ctx;
    int unary = c->row == EW_UNARY || c->row == EW_LOGIC_UNARY || c->row == EW_I64_UNARY;
    int keep_x = inc[1] == 1 || (!unary && inc[1] == 0), keep_y = unit_or_zero(inc[2]);
    if (inc[0] == 1 && keep_x && keep_y) {
        ew_kernel(c, n, p[0], p[1], inc[1], p[2], inc[2]);
        return;
    }
    int64_t bo[EW_CHUNK], bx[EW_CHUNK], by[EW_CHUNK];   /* room for any dtype */
    for (int64_t i0 = 0; i0 < n; i0 += EW_CHUNK) {
        int64_t nb = n - i0 < EW_CHUNK ? n - i0 : EW_CHUNK;
        const char *x = p[1] + i0 * inc[1] * (int64_t)c->es_in, *y = p[2] + i0 * inc[2] * (int64_t)c->es_in;
        char *o = p[0] + i0 * inc[0] * (int64_t)c->es_out;
        if (!keep_x) gather(bx, x, inc[1], nb, c->es_in);
        if (!keep_y) gather(by, y, inc[2], nb, c->es_in);
        ew_kernel(c, nb, inc[0] == 1 ? (void *)o : bo, keep_x ? x : (const char *)bx, keep_x ? inc[1] : 1,
                  keep_y ? y : (const char *)by, keep_y ? inc[2] : 1);
        if (inc[0] != 1) scatter(o, inc[0], bo, nb, c->es_out);
    }
}

/* tt_to_dtype's rows: float32 to bool (nonzero, NaN included, is true, as
   in PyTorch) and bool to float32, the common ones; convert_row for the
   pairs with int64. */
static void to_bool_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    (void)ctx;
    const float *x = (const float *)p[1];
    uint8_t *o = (uint8_t *)p[0];
    for (int64_t i = 0; i < n; i++) o[i * inc[0]] = x[i * inc[1]] != 0.0f;
}

static void to_float_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    (void)ctx;
    const uint8_t *x = (const uint8_t *)p[1];
    float *o = (float *)p[0];
    for (int64_t i = 0; i < n; i++) o[i * inc[0]] = x[i * inc[1]] ? 1.0f : 0.0f;
}

static void convert_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    const ew_ctx *c = ctx;
    for (int64_t i = 0; i < n; i++) {
        const char *x = p[1] + i * inc[1] * (int64_t)tt_dtype_size(c->from);
        char *o = p[0] + i * inc[0] * (int64_t)tt_dtype_size(c->to);
        if (c->to == TT_INT64)
            *(int64_t *)o = c->from == TT_BOOL ? *(const uint8_t *)x : tt__f64_to_i64(*(const float *)x);
        else if (c->to == TT_BOOL)
            *(uint8_t *)o = *(const int64_t *)x != 0;
        else
            *(float *)o = (float)*(const int64_t *)x;
    }
}

static void masked_fill_f32_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    const ew_ctx *c = ctx;
    const float *x = (const float *)p[1];
    const uint8_t *m = (const uint8_t *)p[2];
    float *o = (float *)p[0];
    const float v = c->fval;
    if (inc[0] == 1 && unit_or_zero(inc[1]) && unit_or_zero(inc[2])) {
        tk_ew_masked_fill(n, x, inc[1], m, inc[2], v, o);
        return;
    }
    for (int64_t i = 0; i < n; i++) o[i * inc[0]] = m[i * inc[2]] ? v : x[i * inc[1]];
}

static void masked_fill_bool_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    const ew_ctx *c = ctx;
    const uint8_t *x = (const uint8_t *)p[1], *m = (const uint8_t *)p[2];
    uint8_t *o = (uint8_t *)p[0];
    const uint8_t v = c->bval;
    for (int64_t i = 0; i < n; i++) o[i * inc[0]] = m[i * inc[2]] ? v : x[i * inc[1]];
}

static void masked_fill_i64_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    const ew_ctx *c = ctx;
    const int64_t *x = (const int64_t *)p[1];
    const uint8_t *m = (const uint8_t *)p[2];
    int64_t *o = (int64_t *)p[0];
    const int64_t v = c->ival;
    for (int64_t i = 0; i < n; i++) o[i * inc[0]] = m[i * inc[2]] ? v : x[i * inc[1]];
}

/* Operand a is contiguous with out's shape (the common elementwise case). */
static int same_contig(const tt_tensor *a, const tt_tensor *out)
{
    return a->ndim == out->ndim && tt_is_contiguous(a)
        && memcmp(a->shape, out->shape, (size_t)a->ndim * sizeof(int64_t)) == 0;
}

/* Runs fn over out with c->x and c->y laid out as tensors x and y,
   broadcast to out's shape. A NULL tensor gets stride 0 everywhere: its
   pointer in c is a scalar (or unused, for a unary op). out is fresh and
   contiguous. */
static void run_ew(tt__row_fn fn, ew_ctx *c, const tt_tensor *out,
                   const tt_tensor *x, const tt_tensor *y)
{
    void *base[TT__ITER_OPS] = { tt__data_of(out), (void *)c->x, (void *)c->y };
    size_t es[TT__ITER_OPS] = { tt_dtype_size(out->dtype), x ? tt_dtype_size(x->dtype) : 0,
                                y ? tt_dtype_size(y->dtype) : 0 };
    int64_t st[TT__ITER_OPS][TT_MAX_DIMS] = {{0}};
    tt__iter it;
    if ((!x || same_contig(x, out)) && (!y || same_contig(y, out))) {
        /* one long row: no broadcasting, no dims to merge */
        int64_t n = tt_numel(out);
        if (n == 0) return;
        if (n < PAR_MIN) {
            int64_t inc[TT__ITER_OPS] = {1, x != NULL, y != NULL};
            fn(c, n, (char *const *)base, inc);
            return;
        }
        st[0][0] = 1;
        st[1][0] = x != NULL;
        st[2][0] = y != NULL;
        tt__iter_init(&it, 1, &n, TT__ITER_OPS, (const int64_t (*)[TT_MAX_DIMS])st, base, es);
        tt__iter_run(&it, 1, fn, c);
        return;
    }
    int nd = out->ndim;
    memcpy(st[0], out->stride, (size_t)nd * sizeof(int64_t));
    if (x) tt__broadcast_strides(x, nd, out->shape, st[1]);
    if (y) tt__broadcast_strides(y, nd, out->shape, st[2]);
    tt__iter_init(&it, nd, out->shape, TT__ITER_OPS, (const int64_t (*)[TT_MAX_DIMS])st, base, es);
    tt__iter_run_ew(&it, fn, c);
}

/* ===== 16-bit operands ===== */

tt_status tt__widen(tt_tensor *tmp, const char *op, const tt_tensor **a)
{
    if (!*a || !tt__is_half((*a)->dtype)) return TT_OK;
    tt_status st = tt__alloc(tmp, op, TT_FLOAT32, (*a)->ndim, (*a)->shape, (*a)->names);
    if (st) return st;
    tt_get_floats(*a, tt_data_f32(tmp));
    *a = tmp;
    return TT_OK;
}

typedef struct narrow_ctx { int bf16; const float *x; uint16_t *y; } narrow_ctx;

static void narrow_range(void *ctx, int64_t begin, int64_t end)
{
    const narrow_ctx *c = ctx;
    tk_half_from_f32(c->bf16, end - begin, c->x + begin, c->y + begin);
}

tt_status tt__round_to(tt_tensor *t, const char *op, tt_dtype dt)
{
    if (!tt__is_half(dt) || !t->storage || t->dtype != TT_FLOAT32) return TT_OK;
    tt_tensor h = {0}, c = {0};
    const tt_tensor *src = t;
    tt_status st = TT_OK;
    if (!tt_is_contiguous(t) && (st = tt__alloc(&c, op, TT_FLOAT32, t->ndim, t->shape, t->names)) == TT_OK) {
        tt__copy(&c, t);
        src = &c;
    }
    if (st == TT_OK) st = tt__alloc(&h, op, dt, t->ndim, t->shape, t->names);
    if (st == TT_OK) {
        narrow_ctx nc = { dt == TT_BFLOAT16, tt_data_f32(src), tt_data_u16(&h) };
        int64_t n = tt_numel(t);
        if (n < PAR_MIN) narrow_range(&nc, 0, n);
        else tk_parallel_for(n, PAR_MIN, narrow_range, &nc);
        h.label = t->label;
    }
    tt_tensor_release(&c);
    tt_tensor_release(t);
    if (st == TT_OK) *t = h;
    return st;
}

/* The dtype of a float result with a 16-bit operand (PyTorch's rule): a
   16-bit dtype wins over int64, bool and Lua numbers (b NULL); float32
   wins over it; bfloat16 with float16 gives float32. A 0-d tensor beside
   a dimensioned one takes part by category only, as a number does: the
   dimensioned float dtype stands (tt.ones(2, "bfloat16") + tt.tensor(1.5)
   stays bfloat16). */
static tt_dtype half_result(const tt_tensor *a, const tt_tensor *b)
{
    tt_dtype x = a->dtype, y = b ? b->dtype : x;
    if (!tt_dtype_is_float(x)) return y;
    if (!tt_dtype_is_float(y)) return x;
    if (b && (a->ndim == 0) != (b->ndim == 0)) return a->ndim == 0 ? y : x;
    return tt_promote_float(x, y);
}

/* The end of an impl's 16-bit way, which reads:
       tt_tensor fa = {0};
       tt_dtype half = a->dtype;
       tt_status st = tt__widen(&fa, name, &a);     (a now points at fa)
       return tt__half_done(st ? st : impl(res, a, ...), &fa, res, name, half);
   the impl run on a's float32 copy fa, fa let go, and the float32 result
   res rounded once to the 16-bit dtype. */
tt_status tt__half_done(tt_status st, tt_tensor *fa, tt_tensor *res, const char *name, tt_dtype half)
{
    tt_tensor_release(fa);
    return st ? st : tt__round_to(res, name, half);
}

/* ===== Elementwise ops ===== */

/* op's row when it is of kind k; TT_EARG naming fn otherwise. */
tt_status tt__op_kind_def(const char *fn, tt_op op, tt_opkind k, const char *what, const tt__opdef **def)
{
    *def = tt__op_def(op);
    if (!*def) return tt__err(TT_EARG, "%s: unknown op %d", fn, (int)op);
    if ((*def)->kind != k) return tt__err(TT_EARG, "%s: '%s' is not %s", fn, (*def)->name, what);
    return TT_OK;
}

/* "bool [2,3] and float32 [3]" or, for a scalar op, "bool [2,3]". */
static const char *describe(char *buf, size_t n, const tt_tensor *a, const tt_tensor *b)
{
    char sa[SHAPE_BUF], sb[SHAPE_BUF];
    if (b)
        snprintf(buf, n, "%s %s and %s %s", tt_dtype_name(a->dtype), shp(a, sa),
                 tt_dtype_name(b->dtype), shp(b, sb));
    else
        snprintf(buf, n, "%s %s", tt_dtype_name(a->dtype), shp(a, sa));
    return buf;
}

/* The dtype def's kernel runs on (*cd), from the operand dtypes def
   allows: PyTorch's promotion. b == NULL: a unary op, or with has_s the
   other operand is the number s, which adapts to a (an int64 keeps int64
   when s is an integer, and goes to float32 when it is a float). */
static tt_status compute_dtype(const tt__opdef *def, const tt_tensor *a, const tt_tensor *b,
                               int has_s, tt_number s, tt_dtype *cd)
{
    char d[2 * SHAPE_BUF + 40];
    tt_dtype ta = a->dtype, tb = b ? b->dtype : ta;
    int abool = ta == TT_BOOL, bbool = tb == TT_BOOL;
    *cd = TT_FLOAT32;
    switch (def->dtypes) {
    case TT__BOOL:
        *cd = TT_BOOL;
        if (abool && bbool) return TT_OK;
        return tt__err(TT_EARG, "%s: expects bool, got %s; hint: x:bool()", def->name,
                       describe(d, sizeof d, a, b));
    case TT__SAME:
        if (abool && bbool) {
            *cd = TT_BOOL;
            return TT_OK;
        }
        if (abool == bbool) break;
        return tt__err(TT_EARG, "%s: dtypes differ: %s; hint: x:float() or x:bool()", def->name,
                       describe(d, sizeof d, a, b));
    default:
        if (!abool && !bbool) break;
        return tt__err(TT_EARG, "%s: expects float32, got %s; hint: x:float()", def->name,
                       describe(d, sizeof d, a, b));
    }
    if (def->keeps_int && ta == TT_INT64 && tb == TT_INT64 && (!has_s || s.is_int)) *cd = TT_INT64;
    return TT_OK;
}

/* A float32 copy of an int64 operand (untraced: part of the op). */
static tt_status promoted(tt_tensor *tmp, const char *op, const tt_tensor *a)
{
    tt_status st = tt__alloc(tmp, op, TT_FLOAT32, a->ndim, a->shape, a->names);
    if (st) return st;
    ew_ctx c = { .x = tt__data_of(a), .from = TT_INT64, .to = TT_FLOAT32 };
    run_ew(convert_row, &c, tmp, a, NULL);
    return TT_OK;
}

/* The rows of def on inputs of dtype in. */
static ew_ctx ew_ctx_of(const tt__opdef *def, tt_dtype in)
{
    ew_ctx c = { .code = def->kernel, .es_in = tt_dtype_size(in),
                 .es_out = tt_dtype_size(def->result == TT_BOOL ? TT_BOOL : in) };
    if (in == TT_INT64)
        c.row = def->kind == TT_OPK_UNARY ? EW_I64_UNARY : def->result == TT_BOOL ? EW_I64_COMPARE : EW_I64;
    else if (def->kind == TT_OPK_UNARY) c.row = in == TT_BOOL ? EW_LOGIC_UNARY : EW_UNARY;
    else if (in == TT_BOOL) c.row = EW_LOGIC;
    else c.row = def->result == TT_BOOL ? EW_COMPARE : EW_BINARY;
    return c;
}

/* a op b, or with b == NULL a op s (s op a when scalar_first). int64
   operands the op does not keep as int64 run as float32 copies; the number
   goes to the kernel's dtype straight from its subtype (an integer never
   through double). */
static tt_status binary_impl(tt_tensor *out, const tt__opdef *def, const tt_tensor *a,
                             const tt_tensor *b, tt_number s, int scalar_first)
{
    tt_dtype cd;
    tt_status st = compute_dtype(def, a, b, b == NULL, s, &cd);
    if (st) return st;
    if (!b && !scalar_first && cd == TT_INT64 && def == tt__op_def(TT_OP_POW) && s.i < 0) {
        char sa[SHAPE_BUF];
        return tt__err(TT_EARG, "%s: Integers to negative integer powers are not allowed. (%s %s ^ %lld); "
                       "hint: x:float() ^ %lld", def->name, tt_dtype_name(a->dtype), shp(a, sa),
                       (long long)s.i, (long long)s.i);
    }
    if (tt__is_half(a->dtype) || (b && tt__is_half(b->dtype))) {
        tt_tensor fa = {0}, fb = {0};
        const tt_tensor *wa = a, *wb = b;
        if ((st = tt__widen(&fa, def->name, &wa)) == TT_OK && (st = tt__widen(&fb, def->name, &wb)) == TT_OK)
            st = binary_impl(out, def, wa, wb, s, scalar_first);
        tt_tensor_release(&fa);
        tt_tensor_release(&fb);
        return st ? st : tt__round_to(out, def->name, half_result(a, b));
    }
    int nd = a->ndim;
    int64_t shape[TT_MAX_DIMS];
    const char *names[TT_MAX_DIMS];
    if (b) {
        st = tt__broadcast(def->name, a, b, &nd, shape, names);
        if (st) return st;
    } else {
        memcpy(shape, a->shape, sizeof shape);
        memcpy(names, a->names, sizeof names);
    }
    tt_tensor fa = {0}, fb = {0};
    if (cd == TT_FLOAT32 && a->dtype == TT_INT64 && (st = promoted(&fa, def->name, a))) return st;
    if (cd == TT_FLOAT32 && b && b->dtype == TT_INT64 && (st = promoted(&fb, def->name, b))) {
        tt_tensor_release(&fa);
        return st;
    }
    if (fa.storage) a = &fa;
    if (fb.storage) b = &fb;
    st = tt__alloc(out, def->name, def->result == TT_BOOL ? TT_BOOL : cd, nd, shape, names);
    if (st == TT_OK) {
        ew_ctx c = ew_ctx_of(def, cd);
        float sf = tt__num_f32(s);
        uint8_t sb = tt__num_bool(s);
        int64_t si = s.i;                               /* cd is int64 only for an integer */
        const void *sp = cd == TT_BOOL ? (const void *)&sb : cd == TT_INT64 ? (const void *)&si : (const void *)&sf;
        if (b) {
            c.x = tt__data_of(a);
            c.y = tt__data_of(b);
            run_ew(ew_row, &c, out, a, b);
        } else if (scalar_first) {
            c.x = sp;
            c.y = tt__data_of(a);
            run_ew(ew_row, &c, out, NULL, a);
        } else {
            c.x = tt__data_of(a);
            c.y = sp;
            run_ew(ew_row, &c, out, a, NULL);
        }
    }
    tt_tensor_release(&fa);
    tt_tensor_release(&fb);
    return st;
}

tt_status tt_binary(tt_tensor *out, tt_op op, const tt_tensor *a, const tt_tensor *b)
{
    tt__clear(out);
    const tt__opdef *def;
    tt_status st = tt__op_kind_def("binary", op, TT_OPK_BINARY, "a binary op", &def);
    if (st) return st;
    tt__autocast ac;
    if (op == TT_OP_POW && tt__autocast_enter(&ac, TT__AC_FP32, 2, (const tt_tensor *[]){a, b}))
        return tt__autocast_leave(&ac, ac.st ? ac.st : tt_binary(out, op, ac.in[0], ac.in[1]));
    tt__opscope sc = tt__op_enter();
    st = binary_impl(out, def, a, b, tt_num_i(0), 0);
    if (st == TT_OK && tt__grad_wanted(sc, a, b)) st = tt__record(out, op, a, b, NULL, NULL);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, op, out, a, b, NULL);
        ev.flops = def->flops * (double)tt_numel(out);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_binary_scalar(tt_tensor *out, tt_op op, const tt_tensor *a, double s, int scalar_first)
{
    return tt_binary_number(out, op, a, tt_num_f(s), scalar_first);
}

tt_status tt_binary_number(tt_tensor *out, tt_op op, const tt_tensor *a, tt_number s, int scalar_first)
{
    tt__clear(out);
    const tt__opdef *def;
    tt_status st = tt__op_kind_def("binary", op, TT_OPK_BINARY, "a binary op", &def);
    if (st) return st;
    tt__autocast ac;
    if (op == TT_OP_POW && tt__autocast_enter(&ac, TT__AC_FP32, 1, &a))
        return tt__autocast_leave(&ac, ac.st ? ac.st : tt_binary_number(out, op, ac.in[0], s, scalar_first));
    tt__opscope sc = tt__op_enter();
    st = binary_impl(out, def, a, NULL, s, scalar_first);
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL))
        st = tt__record(out, op, a, NULL, NULL, &(tt__agargs){ .s = s.f, .has_s = 1, .first = scalar_first });
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, op, out, a, NULL, NULL);
        tt__event_scalar(&ev, s);
        ev.scalar_first = scalar_first;
        ev.flops = def->flops * (double)tt_numel(out);
    }
    return tt__op_leave(sc, st, &ev);
}

static tt_status unary_impl(tt_tensor *out, const tt__opdef *def, const tt_tensor *a)
{
    tt_dtype cd;
    tt_status st = compute_dtype(def, a, NULL, 0, tt_num_i(0), &cd);
    if (st) return st;
    if (tt__is_half(a->dtype)) {
        tt_tensor fa = {0};
        const tt_tensor *wa = a;
        if ((st = tt__widen(&fa, def->name, &wa)) == TT_OK) st = unary_impl(out, def, wa);
        tt_tensor_release(&fa);
        return st ? st : tt__round_to(out, def->name, a->dtype);
    }
    tt_tensor fa = {0};
    if (cd == TT_FLOAT32 && a->dtype == TT_INT64) {
        if ((st = promoted(&fa, def->name, a))) return st;
        a = &fa;
    }
    st = tt__alloc(out, def->name, def->result == TT_BOOL ? TT_BOOL : cd, a->ndim, a->shape, a->names);
    if (st == TT_OK) {
        ew_ctx c = ew_ctx_of(def, cd);
        c.x = tt__data_of(a);
        run_ew(ew_row, &c, out, a, NULL);
    }
    tt_tensor_release(&fa);
    return st;
}

tt_status tt_unary(tt_tensor *out, tt_op op, const tt_tensor *a)
{
    tt__clear(out);
    const tt__opdef *def;
    tt_status st = tt__op_kind_def("unary", op, TT_OPK_UNARY, "a unary op", &def);
    if (st) return st;
    tt__autocast ac;
    if ((op == TT_OP_EXP || op == TT_OP_LOG) && tt__autocast_enter(&ac, TT__AC_FP32, 1, &a))
        return tt__autocast_leave(&ac, ac.st ? ac.st : tt_unary(out, op, ac.in[0]));
    tt__opscope sc = tt__op_enter();
    st = unary_impl(out, def, a);
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL)) st = tt__record(out, op, a, NULL, NULL, NULL);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, op, out, a, NULL, NULL);
        ev.flops = def->flops * (double)tt_numel(out);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt__ew_fused(tt_tensor *out, const char *name, int code, const tt_tensor *a,
                       const tt_tensor *b)
{
    tt__clear(out);
    int nd;
    int64_t shape[TT_MAX_DIMS];
    const char *names[TT_MAX_DIMS];
    tt_tensor fa = {0}, fb = {0};
    tt_status st = tt__broadcast(name, a, b, &nd, shape, names);
    if (st == TT_OK && (st = tt__widen(&fa, name, &a)) == TT_OK && (st = tt__widen(&fb, name, &b)) == TT_OK)
        st = tt__alloc(out, name, TT_FLOAT32, nd, shape, names);
    if (st == TT_OK) {
        ew_ctx c = { .row = EW_BINARY, .code = code, .es_in = sizeof(float), .es_out = sizeof(float),
                     .x = tt__data_of(a), .y = tt__data_of(b) };
        run_ew(ew_row, &c, out, a, b);
    }
    tt_tensor_release(&fa);
    tt_tensor_release(&fb);
    return st;
}

/* a as dt, untraced (a->dtype != dt): 16-bit through float32 */
static tt_status convert_impl(tt_tensor *out, const tt_tensor *a, tt_dtype dt, const char *name)
{
    tt_status st;
    if (tt__is_half(a->dtype)) {
        tt_tensor fa = {0};
        const tt_tensor *wa = a;
        if ((st = tt__widen(&fa, name, &wa)) == TT_OK) {
            if (dt == TT_FLOAT32) {
                *out = fa;                  /* the widened copy is the result */
                return TT_OK;
            }
            st = convert_impl(out, wa, dt, name);
        }
        tt_tensor_release(&fa);
        return st;
    }
    if (tt__is_half(dt)) {
        if (a->dtype == TT_FLOAT32) {
            tt__view_of(out, a);
            return tt__round_to(out, name, dt);
        } else {
            tt_tensor f = {0};
            st = convert_impl(&f, a, TT_FLOAT32, name);
            if (st == TT_OK) st = tt__round_to(&f, name, dt);
            if (st == TT_OK) *out = f;
            return st;
        }
    }
    st = tt__alloc(out, name, dt, a->ndim, a->shape, a->names);
    if (st == TT_OK && (a->dtype == TT_INT64 || dt == TT_INT64)) {
        ew_ctx c = { .x = tt__data_of(a), .from = a->dtype, .to = dt };
        run_ew(convert_row, &c, out, a, NULL);
    } else if (st == TT_OK) {
        ew_ctx c = { .x = tt__data_of(a) };
        run_ew(dt == TT_BOOL ? to_bool_row : to_float_row, &c, out, a, NULL);
    }
    return st;
}

static tt_status to_dtype(tt_tensor *out, const tt_tensor *a, tt_dtype dt, int autocast)
{
    tt__clear(out);
    if (dt < TT_FLOAT32 || dt > TT_FLOAT16)
        return tt__err(TT_EARG, "to_dtype: unknown dtype %d", (int)dt);
    tt_op op = dt == TT_BOOL ? TT_OP_BOOL : dt == TT_INT64 ? TT_OP_LONG : dt == TT_BFLOAT16 ? TT_OP_BFLOAT16
             : dt == TT_FLOAT16 ? TT_OP_HALF : TT_OP_FLOAT;
    tt__opscope sc = tt__op_enter();
    tt_status st = TT_OK;
    int view = a->dtype == dt;
    if (view) tt__view_of(out, a);
    else st = convert_impl(out, a, dt, tt_op_name(op));
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL)) st = tt__record(out, op, a, NULL, NULL, NULL);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, op, out, a, NULL, NULL);
        ev.view = view;
        if (autocast) tt__arg_bool(&ev, "autocast", "autocast", 1);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_to_dtype(tt_tensor *out, const tt_tensor *a, tt_dtype dt)
{
    return to_dtype(out, a, dt, 0);
}

tt_status tt_autocast_to(tt_tensor *out, const tt_tensor *a, tt_dtype dt)
{
    return to_dtype(out, a, dt, 1);
}


/* ===== What a PyTorch user reaches for: isnan, where, any, all, norm =====
   Each is built from the ops above, run as nested scopes (no rows of their
   own), and emits one event; where and norm record one node. */

/* Replaces *t by *next. */
tt_status tt_isnan(tt_tensor *out, const tt_tensor *a)
{
    tt__clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st;
    if (tt_dtype_is_float(a->dtype)) st = tt_binary(out, TT_OP_NE, a, a);    /* only NaN differs from itself */
    else st = tt_zeros(out, TT_BOOL, a->ndim, a->shape);
    if (st == TT_OK) tt__set_names(out, a->names);
    tt_event ev;
    if (st == TT_OK) tt__event_init(&ev, TT_OP_ISNAN, out, a, NULL, NULL);
    return tt__op_leave(sc, st, &ev);
}

/* cond, a and b expanded to their common shape; a where cond, else b.
   float32 and int64: a with -0.0 where cond is false plus b with -0.0
   where it is true (x + -0.0 is x for every x, -0.0 and NaN included);
   bool: (a & cond) | (b & ~cond). */
static tt_status where_impl(tt_tensor *out, const tt_tensor *cond, const tt_tensor *a, const tt_tensor *b)
{
    char sc_[SHAPE_BUF], sa[SHAPE_BUF], sb[SHAPE_BUF];
    if (cond->dtype != TT_BOOL)
        return tt__err(TT_EARG, "where: the condition must be bool, got %s %s; hint: x:bool() or a comparison such as x:gt(0)",
                       tt_dtype_name(cond->dtype), shp(cond, sc_));
    if (a->dtype != b->dtype && tt_dtype_is_float(a->dtype) && tt_dtype_is_float(b->dtype)) {
        /* a 16-bit operand: both as the promoted dtype (exact, but for a 0-d
           float32 beside a 16-bit tensor: rounded once), then as one */
        tt_dtype rd = half_result(a, b);
        tt_tensor ca = {0}, cb = {0};
        tt_status s2 = TT_OK;
        if (a->dtype != rd && (s2 = convert_impl(&ca, a, rd, "where")) == TT_OK) a = &ca;
        if (s2 == TT_OK && b->dtype != rd && (s2 = convert_impl(&cb, b, rd, "where")) == TT_OK) b = &cb;
        if (s2 == TT_OK) s2 = where_impl(out, cond, a, b);
        tt_tensor_release(&ca);
        tt_tensor_release(&cb);
        return s2;
    }
    if (a->dtype != b->dtype)
        return tt__err(TT_EARG, "where: the two values' dtypes differ: %s %s and %s %s; hint: x:float()",
                       tt_dtype_name(a->dtype), shp(a, sa), tt_dtype_name(b->dtype), shp(b, sb));
    int nd;
    int64_t shape[TT_MAX_DIMS];
    const char *names[TT_MAX_DIMS];
    tt_status st = tt__broadcast("where", cond, a, &nd, shape, names);
    if (st) return st;
    tt_tensor both = *cond;             /* a header with the first two's shape and names */
    both.ndim = nd;
    memcpy(both.shape, shape, sizeof shape);
    memcpy(both.names, names, sizeof names);
    if ((st = tt__broadcast("where", &both, b, &nd, shape, names))) return st;
    tt_tensor ec = {0}, ea = {0}, eb = {0}, nc = {0}, ra = {0}, rb = {0};
    st = tt_expand(&ec, cond, nd, shape);
    if (st == TT_OK) st = tt_expand(&ea, a, nd, shape);
    if (st == TT_OK) st = tt_expand(&eb, b, nd, shape);
    if (st == TT_OK) st = tt_unary(&nc, TT_OP_NOT, &ec);
    if (st == TT_OK && a->dtype == TT_BOOL) {
        st = tt_binary(&ra, TT_OP_AND, &ea, &ec);
        if (st == TT_OK) st = tt_binary(&rb, TT_OP_AND, &eb, &nc);
        if (st == TT_OK) st = tt_binary(out, TT_OP_OR, &ra, &rb);
    } else if (st == TT_OK) {
        st = tt_masked_fill(&ra, &ea, &nc, -0.0);
        if (st == TT_OK) st = tt_masked_fill(&rb, &eb, &ec, -0.0);
        if (st == TT_OK) st = tt_binary(out, TT_OP_ADD, &ra, &rb);
    }
    if (st == TT_OK) tt__set_names(out, names);
    tt_tensor *tmp[] = {&ec, &ea, &eb, &nc, &ra, &rb};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) tt_tensor_release(tmp[i]);
    return st;
}

tt_status tt_where(tt_tensor *out, const tt_tensor *cond, const tt_tensor *a, tt_number sa,
                   const tt_tensor *b, tt_number sb)
{
    tt__clear(out);
    tt__opscope sc = tt__op_enter();
    const tt_tensor *ta = a, *tb = b;   /* as the script gave them, for the event */
    tt_tensor na = {0}, nb = {0};       /* the numbers as 0-d tensors: nested, so no rows */
    tt_tensor fa = {0}, fb = {0};       /* int64 with a float number: float32 copies (PyTorch) */
    tt_status st = TT_OK;
    if ((a && !b && a->dtype == TT_INT64 && !sb.is_int) || (b && !a && b->dtype == TT_INT64 && !sa.is_int)) {
        if (a && (st = tt_to_dtype(&fa, a, TT_FLOAT32)) == TT_OK) a = &fa;
        if (b && st == TT_OK && (st = tt_to_dtype(&fb, b, TT_FLOAT32)) == TT_OK) b = &fb;
    }
    tt_dtype dt = a ? a->dtype : b ? b->dtype : TT_FLOAT32;
    if (st == TT_OK && !a && (st = tt_full_number(&na, dt, 0, NULL, sa)) == TT_OK) a = &na;
    if (st == TT_OK && !b && (st = tt_full_number(&nb, dt, 0, NULL, sb)) == TT_OK) b = &nb;
    if (st == TT_OK) st = where_impl(out, cond, a, b);
    if (st == TT_OK && (tt__grad_wanted(sc, a, b))) st = tt__record(out, TT_OP_WHERE, cond, a, b, NULL);
    tt_event ev;
    if (st == TT_OK && !tb && ta) {     /* where(c, x, 0): shown as the script wrote it */
        tt__event_init(&ev, TT_OP_WHERE, out, cond, ta, NULL);
        tt__event_scalar(&ev, sb);
    } else if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_WHERE, out, cond, ta ? ta : a, tb ? tb : b);
    }
    st = tt__op_leave(sc, st, &ev);
    tt_tensor *tmp[] = {&na, &nb, &fa, &fb};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) tt_tensor_release(tmp[i]);
    return st;
}

/* any: sum(float(bool(a))) > 0; all: sum(float(~bool(a))) == 0. A sum of
   zeros and ones is zero exactly when every term is. */
/* ===== Masking ===== */

static tt_status masked_fill_impl(tt_tensor *out, const tt_tensor *a, const tt_tensor *mask, tt_number value)
{
    char sa[SHAPE_BUF], sm[SHAPE_BUF];
    if (mask->dtype != TT_BOOL)
        return tt__err(TT_EARG, "masked_fill: mask must be bool, got %s %s for %s; hint: mask:bool()",
                       tt_dtype_name(mask->dtype), shp(mask, sm), shp(a, sa));
    if (tt__is_half(a->dtype)) {     /* value rounded as float32, then to a's dtype */
        tt_tensor fa = {0};
        tt_dtype half = a->dtype;
        tt_status st = tt__widen(&fa, "masked_fill", &a);
        return tt__half_done(st ? st : masked_fill_impl(out, a, mask, value), &fa, out, "masked_fill", half);
    }
    int nd;
    int64_t shape[TT_MAX_DIMS];
    const char *names[TT_MAX_DIMS];
    tt_status st = tt__broadcast("masked_fill", a, mask, &nd, shape, names);
    if (st) return st;
    st = tt__alloc(out, "masked_fill", a->dtype, nd, shape, names);
    if (st) return st;
    ew_ctx c = { .x = tt__data_of(a), .y = tt_data_bool(mask), .fval = tt__num_f32(value), .bval = tt__num_bool(value),
                 .ival = tt__num_i64(value) };
    run_ew(a->dtype == TT_BOOL ? masked_fill_bool_row : a->dtype == TT_INT64 ? masked_fill_i64_row
           : masked_fill_f32_row, &c, out, a, mask);
    return TT_OK;
}

/* The mask polarity slip: masked_fill hides where the mask is true, so
   passing the "may attend" mask (tt.causal_mask, or a padding mask that
   keeps keys 1..L) hides what should be seen, and rows hidden entirely end
   in NaN after softmax. When filling with -inf and every matrix of the mask
   (broadcast to the last two dims of out) is such a keep pattern whose
   complement would hide no whole row, writes a note naming the slip. Only
   looked for while a trace is showing. */
static void mask_polarity_note(const tt_tensor *out, const tt_tensor *mask, double value,
                               char *note, size_t n)
{
    if (!(isinf(value) && value < 0) || out->ndim < 2 || mask->ndim < 1) return;
    int64_t R = out->shape[out->ndim - 2], C = out->shape[out->ndim - 1];
    if (R * C == 0) return;
    int md = mask->ndim;
    int64_t mr = md >= 2 ? mask->shape[md - 2] : 1, mc = mask->shape[md - 1];
    int64_t sr = md >= 2 && mr != 1 ? mask->stride[md - 2] : 0, sc = mc != 1 ? mask->stride[md - 1] : 0;
    int64_t nmat = md > 2 ? tt_numel(mask) / (mr * mc) : 1;
    const uint8_t *base = (const uint8_t *)mask->storage->data + mask->offset;
    int upper = 1, lower = 1, padding = 1;   /* every matrix so far matches */
    int64_t hidden_rows = 0;
    for (int64_t m = 0; m < nmat && (upper || lower || padding); m++) {
        int64_t off = 0, rem = m;
        for (int i = md - 3; i >= 0; i--) {
            off += (rem % mask->shape[i]) * mask->stride[i];
            rem /= mask->shape[i];
        }
        const uint8_t *M = base + off;
        int64_t first_len = -1;
        for (int64_t i = 0; i < R; i++) {
            int64_t len = 0, all = 1;        /* leading run of true; whether the row is all true */
            int prefix = 1;                  /* row is 1^len 0^(C-len) */
            for (int64_t j = 0; j < C; j++) {
                int t = M[i * sr + j * sc] != 0;
                all &= t;
                if (t && prefix && len == j) len++;
                else if (t) prefix = 0;
                upper &= t == (j <= i);
                lower &= t == (j <= i + C - R);
            }
            hidden_rows += all;
            if (first_len < 0) first_len = len;
            padding &= prefix && len >= 1 && len == first_len;   /* the complement keeps key 1 */
        }
    }
    lower &= R <= C;          /* with R > C the complement hides the first rows whole */
    if (hidden_rows == 0 || !(upper || lower || padding)) return;
    snprintf(note, n, "mask hides every key of %lld row%s (softmax gives NaN there); this is the %s "
             "pattern: did you mean ~mask?", (long long)hidden_rows, hidden_rows == 1 ? "" : "s",
             upper || lower ? "causal 'may attend'" : "padding 'keep keys 1..L'");
}

tt_status tt_masked_fill(tt_tensor *out, const tt_tensor *a, const tt_tensor *mask, double value)
{
    return tt_masked_fill_number(out, a, mask, tt_num_f(value));
}

tt_status tt_masked_fill_number(tt_tensor *out, const tt_tensor *a, const tt_tensor *mask, tt_number value)
{
    tt__clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = masked_fill_impl(out, a, mask, value);
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL)) st = tt__record(out, TT_OP_MASKED_FILL, a, mask, NULL, NULL);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_MASKED_FILL, out, a, mask, NULL);
        tt__event_scalar(&ev, value);
        if (tt__tracing()) mask_polarity_note(out, mask, value.f, ev.note, sizeof ev.note);
    }
    return tt__op_leave(sc, st, &ev);
}
