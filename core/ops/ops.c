/*
** ops.c — op front-ends: broadcasting, elementwise math, conversions,
** reductions, softmax, masking, tril/triu, repeat_interleave, cat, stack.
** Each public op checks its arguments, allocates the result, runs a strided
** loop (or a kernel from kernels.h) and emits one trace event.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernels.h"
#include "tt_internal.h"

#define SHAPE_BUF 256
#define PAR_MIN 65536       /* elements below which a loop stays on one thread */
#define PAR_GRAIN 16384

static void clear(tt_tensor *t)
{
    if (t) memset(t, 0, sizeof *t);
}

static const char *shp(const tt_tensor *t, char *buf)
{
    return tt_shape_str(t, buf, SHAPE_BUF);
}

static double nbytes(const tt_tensor *t)
{
    return (double)tt_numel(t) * (double)tt_dtype_size(t->dtype);
}

static void *data_of(const tt_tensor *t)
{
    return t->dtype == TT_BOOL ? (void *)tt_data_bool(t) : (void *)tt_data_f32(t);
}

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

void tt__broadcast_strides(const tt_tensor *a, int ndim, const int64_t *shape, int64_t *stride)
{
    int lead = ndim - a->ndim;
    for (int i = 0; i < ndim; i++) {
        int ia = i - lead;
        stride[i] = (ia < 0 || a->shape[ia] != shape[i]) ? 0 : a->stride[ia];
    }
}

/* ===== Strided iteration =====
   An iterator walks an output shape in row-major order with up to three
   operands (0 = output, then inputs), each with its own element strides.
   Size-1 dims are dropped and dims that are contiguous for every operand
   are merged, so a contiguous op becomes one long row: the fast path. */

#define ITER_OPS 3

typedef struct iter {
    int ndim;                           /* >= 1; dim 0 is the innermost */
    int nop;
    int64_t numel;
    int64_t shape[TT_MAX_DIMS];
    int64_t stride[ITER_OPS][TT_MAX_DIMS];
} iter;

/* row(ctx, n, off, inc): n elements; operand k starts at element off[k]
   and steps by inc[k]. */
typedef void (*row_fn)(void *ctx, int64_t n, const int64_t *off, const int64_t *inc);

static void iter_init(iter *it, int ndim, const int64_t *shape, int nop,
                      const int64_t (*stride)[TT_MAX_DIMS])
{
    it->ndim = 0;
    it->nop = nop;
    it->numel = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        it->numel *= shape[d];
        if (shape[d] == 1) continue;
        int merge = it->ndim > 0;
        for (int k = 0; k < nop && merge; k++) {
            int j = it->ndim - 1;
            merge = stride[k][d] == it->stride[k][j] * it->shape[j];
        }
        if (merge) {
            it->shape[it->ndim - 1] *= shape[d];
            continue;
        }
        it->shape[it->ndim] = shape[d];
        for (int k = 0; k < nop; k++) it->stride[k][it->ndim] = stride[k][d];
        it->ndim++;
    }
    if (it->ndim == 0) {
        it->ndim = 1;
        it->shape[0] = 1;
        for (int k = 0; k < nop; k++) it->stride[k][0] = 0;
    }
}

static void iter_range(const iter *it, int64_t begin, int64_t end, row_fn fn, void *ctx)
{
    if (begin >= end) return;
    int64_t idx[TT_MAX_DIMS], off[ITER_OPS] = {0}, inc[ITER_OPS] = {0};
    int64_t rem = begin;
    for (int d = 0; d < it->ndim; d++) {
        idx[d] = rem % it->shape[d];
        rem /= it->shape[d];
        for (int k = 0; k < it->nop; k++) off[k] += idx[d] * it->stride[k][d];
    }
    for (int k = 0; k < it->nop; k++) inc[k] = it->stride[k][0];
    for (int64_t pos = begin; pos < end;) {
        int64_t n = it->shape[0] - idx[0];
        if (n > end - pos) n = end - pos;
        fn(ctx, n, off, inc);
        pos += n;
        idx[0] += n;
        for (int k = 0; k < it->nop; k++) off[k] += n * inc[k];
        for (int d = 0; d < it->ndim - 1 && idx[d] == it->shape[d]; d++) {
            idx[d] = 0;
            idx[d + 1]++;
            for (int k = 0; k < it->nop; k++)
                off[k] += it->stride[k][d + 1] - it->shape[d] * it->stride[k][d];
        }
    }
}

typedef struct par_job {
    const iter *it;
    row_fn fn;
    void *ctx;
} par_job;

static void par_range(void *p, int64_t begin, int64_t end)
{
    const par_job *j = p;
    iter_range(j->it, begin, end, j->fn, j->ctx);
}

static void iter_run(const iter *it, row_fn fn, void *ctx)
{
    if (it->numel == 0) return;
    if (it->numel < PAR_MIN) {
        iter_range(it, 0, it->numel, fn, ctx);
        return;
    }
    par_job j = { it, fn, ctx };
    tk_parallel_for(it->numel, PAR_GRAIN, par_range, &j);
}

/* ===== Elementwise rows ===== */

typedef struct ew_ctx {
    int op;                 /* tt_binop or tt_unop (or CAST_*) */
    const void *x, *y;      /* operand bases (a scalar has stride 0) */
    void *o;
    float fval;             /* masked_fill value */
    uint8_t bval;
} ew_ctx;

enum { CAST_TO_BOOL = 100, CAST_TO_FLOAT };

/* One loop shape per stride pattern: both contiguous, one a scalar, any. */
#define EW2(EXPR) do { \
    if (so == 1 && sx == 1 && sy == 1) \
        for (int64_t i = 0; i < n; i++) { const T u = x[i], w = y[i]; (void)w; o[i] = (EXPR); } \
    else if (so == 1 && sx == 1 && sy == 0) { \
        const T w = y[0]; (void)w; \
        for (int64_t i = 0; i < n; i++) { const T u = x[i]; o[i] = (EXPR); } \
    } else if (so == 1 && sx == 0 && sy == 1) { \
        const T u = x[0]; \
        for (int64_t i = 0; i < n; i++) { const T w = y[i]; (void)w; o[i] = (EXPR); } \
    } else \
        for (int64_t i = 0; i < n; i++) { \
            const T u = x[i * sx], w = y[i * sy]; (void)w; o[i * so] = (EXPR); } \
} while (0)

#define EW1(EXPR) do { \
    if (so == 1 && sx == 1) for (int64_t i = 0; i < n; i++) { const T u = x[i]; o[i] = (EXPR); } \
    else for (int64_t i = 0; i < n; i++) { const T u = x[i * sx]; o[i * so] = (EXPR); } \
} while (0)

/* tt_binop / tt_unop to the kernels' op codes (-1: no kernel) */
static const signed char EW_BIN[TT_BINOP_COUNT] = {
    TK_EW_ADD, TK_EW_SUB, TK_EW_MUL, TK_EW_DIV, -1, TK_EW_MAX, TK_EW_MIN,
    TK_EW_EQ, TK_EW_NE, TK_EW_LT, TK_EW_LE, TK_EW_GT, TK_EW_GE, -1, -1, -1,
};
static const signed char EW_UN[TT_UNOP_COUNT] = {
    TK_EW_NEG, TK_EW_EXP, TK_EW_LOG, TK_EW_SQRT, TK_EW_ABS, -1,
};

/* a unit or zero stride: what the vector kernels take */
static int unit_or_zero(int64_t s) { return s == 0 || s == 1; }

#define T float
static void binary_f32_row(void *p, int64_t n, const int64_t *off, const int64_t *inc)
{
    const ew_ctx *c = p;
    const float *x = (const float *)c->x + off[1], *y = (const float *)c->y + off[2];
    int64_t so = inc[0], sx = inc[1], sy = inc[2];
    int vec = so == 1 && unit_or_zero(sx) && unit_or_zero(sy);
    if (c->op < TT_EQ) {
        float *o = (float *)c->o + off[0];
        if (vec && c->op == TT_POW && sy == 0 && y[0] == 2.0f) {
            tk_ew_binary(TK_EW_MUL, n, x, sx, x, sx, o);     /* exact, and the common case */
            return;
        }
        if (vec && EW_BIN[c->op] >= 0) {
            tk_ew_binary(EW_BIN[c->op], n, x, sx, y, sy, o);
            return;
        }
        switch (c->op) {
        case TT_ADD: EW2(u + w); break;
        case TT_SUB: EW2(u - w); break;
        case TT_MUL: EW2(u * w); break;
        case TT_DIV: EW2(u / w); break;
        case TT_POW:
            if (sy == 0 && y[0] == 2.0f) EW2(u * u);     /* exact, and the common case */
            else EW2(powf(u, w));
            break;
        case TT_MAXIMUM: EW2(tk_max_nan(u, w)); break;
        case TT_MINIMUM: EW2(tk_min_nan(u, w)); break;
        default: break;
        }
        return;
    }
    uint8_t *o = (uint8_t *)c->o + off[0];
    if (vec) {
        tk_ew_compare(EW_BIN[c->op], n, x, sx, y, sy, o);
        return;
    }
    switch (c->op) {
    case TT_EQ: EW2(u == w); break;
    case TT_NE: EW2(u != w); break;
    case TT_LT: EW2(u < w); break;
    case TT_LE: EW2(u <= w); break;
    case TT_GT: EW2(u > w); break;
    case TT_GE: EW2(u >= w); break;
    default: break;
    }
}

static void unary_f32_row(void *p, int64_t n, const int64_t *off, const int64_t *inc)
{
    const ew_ctx *c = p;
    const float *x = (const float *)c->x + off[1];
    int64_t so = inc[0], sx = inc[1];
    if (c->op == CAST_TO_BOOL) {
        uint8_t *o = (uint8_t *)c->o + off[0];
        EW1(u != 0.0f);                  /* NaN counts as true, as in PyTorch */
        return;
    }
    float *o = (float *)c->o + off[0];
    if (so == 1 && sx == 1) {
        tk_ew_unary(EW_UN[c->op], n, x, o);
        return;
    }
    /* strided: through a buffer, so exp and log give the same bits as on
       a contiguous copy */
    float t[256];
    for (int64_t i0 = 0; i0 < n; i0 += 256) {
        int64_t nb = n - i0 < 256 ? n - i0 : 256;
        for (int64_t i = 0; i < nb; i++) t[i] = x[(i0 + i) * sx];
        tk_ew_unary(EW_UN[c->op], nb, t, t);
        for (int64_t i = 0; i < nb; i++) o[(i0 + i) * so] = t[i];
    }
}

static void masked_fill_f32_row(void *p, int64_t n, const int64_t *off, const int64_t *inc)
{
    const ew_ctx *c = p;
    const float *x = (const float *)c->x + off[1];
    const uint8_t *m = (const uint8_t *)c->y + off[2];
    float *o = (float *)c->o + off[0];
    const float v = c->fval;
    if (inc[0] == 1 && unit_or_zero(inc[1]) && unit_or_zero(inc[2])) {
        tk_ew_masked_fill(n, x, inc[1], m, inc[2], v, o);
        return;
    }
    for (int64_t i = 0; i < n; i++) o[i * inc[0]] = m[i * inc[2]] ? v : x[i * inc[1]];
}
#undef T

#define T uint8_t
static void binary_bool_row(void *p, int64_t n, const int64_t *off, const int64_t *inc)
{
    const ew_ctx *c = p;
    const uint8_t *x = (const uint8_t *)c->x + off[1], *y = (const uint8_t *)c->y + off[2];
    uint8_t *o = (uint8_t *)c->o + off[0];
    int64_t so = inc[0], sx = inc[1], sy = inc[2];
    switch (c->op) {
    case TT_EQ: EW2(u == w); break;
    case TT_NE: EW2(u != w); break;
    case TT_AND: EW2(u & w); break;
    case TT_OR: EW2(u | w); break;
    case TT_XOR: EW2(u ^ w); break;
    default: break;
    }
}

static void unary_bool_row(void *p, int64_t n, const int64_t *off, const int64_t *inc)
{
    const ew_ctx *c = p;
    const uint8_t *x = (const uint8_t *)c->x + off[1];
    int64_t so = inc[0], sx = inc[1];
    if (c->op == CAST_TO_FLOAT) {
        float *o = (float *)c->o + off[0];
        EW1(u ? 1.0f : 0.0f);
        return;
    }
    uint8_t *o = (uint8_t *)c->o + off[0];
    EW1(!u);
}

static void masked_fill_bool_row(void *p, int64_t n, const int64_t *off, const int64_t *inc)
{
    const ew_ctx *c = p;
    const uint8_t *x = (const uint8_t *)c->x + off[1], *m = (const uint8_t *)c->y + off[2];
    uint8_t *o = (uint8_t *)c->o + off[0];
    const uint8_t v = c->bval;
    for (int64_t i = 0; i < n; i++) o[i * inc[0]] = m[i * inc[2]] ? v : x[i * inc[1]];
}
#undef T

/* ===== Tiles for operands that disagree on the innermost stride =====
   out[..., r, c] = f(x, y) where an input runs along r (a transposed view,
   stride 1 on iterator dim 1): walking out's rows would touch a new cache
   line of that input at every element. Instead the two inner dims go in
   TILE_R x TILE_C tiles; each such input's tile is first gathered (reading
   along its own unit stride, the next tile's lines prefetched) into a
   small contiguous buffer, then the row
   function runs on the tile's rows with every operand contiguous or as it
   was. Any row function works: only where the bytes come from changes. */

/* 32 x 128 measured best of 16..64 x 32..256 for 1024^2 and 4096^2 */
#define TILE_R 32           /* rows of a tile (iterator dim 1) */
#define TILE_C 128          /* columns (iterator dim 0, out's unit stride) */

typedef struct tile_job {
    const iter *it;
    row_fn fn;
    const ew_ctx *c;
    int pack[ITER_OPS];         /* inputs gathered per tile */
    size_t es[ITER_OPS];        /* element sizes */
    int64_t nr, nc;             /* tiles along dims 1 and 0 */
} tile_job;

static void tile_range(void *p, int64_t begin, int64_t end)
{
    const tile_job *j = p;
    const iter *it = j->it;
    float buf[ITER_OPS][TILE_R * TILE_C];   /* as bytes for bool operands */
    for (int64_t t = begin; t < end; t++) {
        int64_t b = t / (j->nr * j->nc), tr = t / j->nc % j->nr, tc = t % j->nc;
        int64_t r0 = tr * TILE_R, c0 = tc * TILE_C;
        int64_t R = it->shape[1] - r0 < TILE_R ? it->shape[1] - r0 : TILE_R;
        int64_t C = it->shape[0] - c0 < TILE_C ? it->shape[0] - c0 : TILE_C;
        int64_t base[ITER_OPS] = {0}, rem = b;
        for (int d = 2; d < it->ndim; d++) {
            int64_t i = rem % it->shape[d];
            rem /= it->shape[d];
            for (int k = 0; k < it->nop; k++) base[k] += i * it->stride[k][d];
        }
        ew_ctx tc_ctx = *j->c;
        for (int k = 1; k < it->nop; k++) {
            base[k] += r0 * it->stride[k][1] + c0 * it->stride[k][0];
            if (!j->pack[k]) continue;
            int64_t s0 = it->stride[k][0];           /* stride[k][1] == 1 */
            const void *src = k == 1 ? j->c->x : j->c->y;
            if (j->es[k] == 4) {
                const float *sp = (const float *)src + base[k];
                float *dp = buf[k];
                int pf = c0 + TILE_C + C <= it->shape[0];   /* the next tile along exists */
                for (int64_t cc = 0; cc < C; cc++) {
                    if (pf) {
                        __builtin_prefetch(sp + (cc + TILE_C) * s0);
                        __builtin_prefetch(sp + (cc + TILE_C) * s0 + R - 1);
                    }
                    for (int64_t r = 0; r < R; r++) dp[r * C + cc] = sp[cc * s0 + r];
                }
            } else {
                const uint8_t *sp = (const uint8_t *)src + base[k];
                uint8_t *dp = (uint8_t *)buf[k];
                for (int64_t cc = 0; cc < C; cc++)
                    for (int64_t r = 0; r < R; r++) dp[r * C + cc] = sp[cc * s0 + r];
            }
            if (k == 1) tc_ctx.x = buf[k];
            else tc_ctx.y = buf[k];
        }
        base[0] += r0 * it->stride[0][1] + c0 * it->stride[0][0];
        for (int64_t r = 0; r < R; r++) {
            int64_t off[ITER_OPS], inc[ITER_OPS];
            for (int k = 0; k < it->nop; k++) {
                off[k] = j->pack[k] ? r * C : base[k] + r * it->stride[k][1];
                inc[k] = j->pack[k] ? 1 : it->stride[k][0];
            }
            j->fn(&tc_ctx, C, off, inc);
        }
    }
}

/* Takes the tiled path when it applies (see above); 0 if not. */
static int run_tiled(const iter *it, row_fn fn, const ew_ctx *c, const tt_tensor *x,
                     const tt_tensor *y)
{
    if (it->ndim < 2 || it->shape[0] < 8 || it->shape[1] < 8 || it->stride[0][0] != 1) return 0;
    tile_job j = { it, fn, c, {0}, {0}, 0, 0 };
    int any = 0;
    for (int k = 1; k < it->nop; k++) {
        int64_t s0 = it->stride[k][0];
        const tt_tensor *t = k == 1 ? x : y;
        j.pack[k] = s0 != 0 && s0 != 1 && it->stride[k][1] == 1;
        j.es[k] = t ? tt_dtype_size(t->dtype) : 4;
        any |= j.pack[k];
        if (!j.pack[k] && s0 != 0 && s0 != 1) return 0;   /* some other layout */
    }
    if (!any) return 0;
    j.nr = (it->shape[1] + TILE_R - 1) / TILE_R;
    j.nc = (it->shape[0] + TILE_C - 1) / TILE_C;
    int64_t tiles = it->numel / (it->shape[0] * it->shape[1]) * j.nr * j.nc;
    if (it->numel < PAR_MIN) tile_range(&j, 0, tiles);
    else tk_parallel_for(tiles, PAR_GRAIN / (TILE_R * TILE_C) + 1, tile_range, &j);
    return 1;
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
static void run_ew(row_fn fn, ew_ctx *c, const tt_tensor *out,
                   const tt_tensor *x, const tt_tensor *y)
{
    iter it;
    c->o = data_of(out);
    if ((!x || same_contig(x, out)) && (!y || same_contig(y, out))) {
        /* one long row: no broadcasting, no dims to merge */
        it.ndim = 1;
        it.nop = ITER_OPS;
        it.numel = tt_numel(out);
        it.shape[0] = it.numel;
        it.stride[0][0] = 1;
        it.stride[1][0] = x != NULL;
        it.stride[2][0] = y != NULL;
        if (it.numel < PAR_MIN) {
            int64_t off[ITER_OPS] = {0}, inc[ITER_OPS] = {1, x != NULL, y != NULL};
            if (it.numel > 0) fn(c, it.numel, off, inc);
            return;
        }
        iter_run(&it, fn, c);
        return;
    }
    int64_t st[ITER_OPS][TT_MAX_DIMS] = {{0}};
    int nd = out->ndim;
    memcpy(st[0], out->stride, (size_t)nd * sizeof(int64_t));
    if (x) tt__broadcast_strides(x, nd, out->shape, st[1]);
    if (y) tt__broadcast_strides(y, nd, out->shape, st[2]);
    iter_init(&it, nd, out->shape, ITER_OPS, (const int64_t (*)[TT_MAX_DIMS])st);
    if (it.numel == 0 || run_tiled(&it, fn, c, x, y)) return;
    iter_run(&it, fn, c);
}

/* ===== Elementwise ops ===== */

static const tt_op BINOP_OP[] = {
    TT_OP_ADD, TT_OP_SUB, TT_OP_MUL, TT_OP_DIV, TT_OP_POW, TT_OP_MAXIMUM, TT_OP_MINIMUM,
    TT_OP_EQ, TT_OP_NE, TT_OP_LT, TT_OP_LE, TT_OP_GT, TT_OP_GE,
    TT_OP_AND, TT_OP_OR, TT_OP_XOR,
};
_Static_assert(sizeof BINOP_OP / sizeof BINOP_OP[0] == TT_BINOP_COUNT, "BINOP_OP out of sync");

static const tt_op UNOP_OP[] = {
    TT_OP_NEG, TT_OP_EXP, TT_OP_LOG, TT_OP_SQRT, TT_OP_ABS, TT_OP_NOT,
};
_Static_assert(sizeof UNOP_OP / sizeof UNOP_OP[0] == TT_UNOP_COUNT, "UNOP_OP out of sync");

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

/* b == NULL: the other operand is a Lua number, which adapts to a. */
static tt_status check_binary_dtypes(const char *name, tt_binop op, const tt_tensor *a,
                                     const tt_tensor *b)
{
    char d[2 * SHAPE_BUF + 40];
    int abool = a->dtype == TT_BOOL, bbool = b ? b->dtype == TT_BOOL : abool;
    if (op == TT_AND || op == TT_OR || op == TT_XOR) {
        if (abool && bbool) return TT_OK;
        return tt__err(TT_EARG, "%s: expects bool, got %s; hint: x:bool()", name,
                       describe(d, sizeof d, a, b));
    }
    if (op == TT_EQ || op == TT_NE) {
        if (abool == bbool) return TT_OK;
        return tt__err(TT_EARG, "%s: dtypes differ: %s; hint: x:float() or x:bool()", name,
                       describe(d, sizeof d, a, b));
    }
    if (!abool && !bbool) return TT_OK;
    return tt__err(TT_EARG, "%s: expects float32, got %s; hint: x:float()", name,
                   describe(d, sizeof d, a, b));
}

/* a op b, or with b == NULL a op s (s op a when scalar_first). */
static tt_status binary_impl(tt_tensor *out, tt_binop op, const tt_tensor *a,
                             const tt_tensor *b, double s, int scalar_first)
{
    const char *name = tt_op_name(BINOP_OP[op]);
    tt_status st = check_binary_dtypes(name, op, a, b);
    if (st) return st;
    int nd = a->ndim;
    int64_t shape[TT_MAX_DIMS];
    const char *names[TT_MAX_DIMS];
    if (b) {
        st = tt__broadcast(name, a, b, &nd, shape, names);
        if (st) return st;
    } else {
        memcpy(shape, a->shape, sizeof shape);
        memcpy(names, a->names, sizeof names);
    }
    tt_dtype odt = op >= TT_EQ ? TT_BOOL : TT_FLOAT32;
    st = tt__alloc(out, name, odt, nd, shape, names);
    if (st) return st;
    ew_ctx c = { .op = op };
    float sf = (float)s;
    uint8_t sb = s != 0.0;
    const void *sp = a->dtype == TT_BOOL ? (const void *)&sb : (const void *)&sf;
    row_fn fn = a->dtype == TT_BOOL ? binary_bool_row : binary_f32_row;
    if (b) {
        c.x = data_of(a);
        c.y = data_of(b);
        run_ew(fn, &c, out, a, b);
    } else if (scalar_first) {
        c.x = sp;
        c.y = data_of(a);
        run_ew(fn, &c, out, NULL, a);
    } else {
        c.x = data_of(a);
        c.y = sp;
        run_ew(fn, &c, out, a, NULL);
    }
    return TT_OK;
}

tt_status tt_binary(tt_tensor *out, tt_binop op, const tt_tensor *a, const tt_tensor *b)
{
    clear(out);
    if ((unsigned)op >= TT_BINOP_COUNT) return tt__err(TT_EARG, "binary: unknown op %d", (int)op);
    tt__opscope sc = tt__op_enter();
    tt_status st = binary_impl(out, op, a, b, 0.0, 0);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, BINOP_OP[op], out, a, b, NULL);
        ev.flops = op <= TT_MINIMUM ? (double)tt_numel(out) : 0.0;   /* float arithmetic only */
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_binary_scalar(tt_tensor *out, tt_binop op, const tt_tensor *a, double s, int scalar_first)
{
    clear(out);
    if ((unsigned)op >= TT_BINOP_COUNT) return tt__err(TT_EARG, "binary: unknown op %d", (int)op);
    tt__opscope sc = tt__op_enter();
    tt_status st = binary_impl(out, op, a, NULL, s, scalar_first);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, BINOP_OP[op], out, a, NULL, NULL);
        ev.has_scalar = 1;
        ev.scalar = s;
        ev.scalar_first = scalar_first;
        ev.flops = op <= TT_MINIMUM ? (double)tt_numel(out) : 0.0;
    }
    return tt__op_leave(sc, st, &ev);
}

static tt_status unary_impl(tt_tensor *out, tt_unop op, const tt_tensor *a)
{
    const char *name = tt_op_name(UNOP_OP[op]);
    char d[SHAPE_BUF + 16];
    if (op == TT_NOT && a->dtype != TT_BOOL)
        return tt__err(TT_EARG, "%s: expects bool, got %s; hint: x:bool()", name,
                       describe(d, sizeof d, a, NULL));
    if (op != TT_NOT && a->dtype != TT_FLOAT32)
        return tt__err(TT_EARG, "%s: expects float32, got %s; hint: x:float()", name,
                       describe(d, sizeof d, a, NULL));
    tt_status st = tt__alloc(out, name, a->dtype, a->ndim, a->shape, a->names);
    if (st) return st;
    ew_ctx c = { .op = op, .x = data_of(a) };
    run_ew(op == TT_NOT ? unary_bool_row : unary_f32_row, &c, out, a, NULL);
    return TT_OK;
}

tt_status tt_unary(tt_tensor *out, tt_unop op, const tt_tensor *a)
{
    clear(out);
    if ((unsigned)op >= TT_UNOP_COUNT) return tt__err(TT_EARG, "unary: unknown op %d", (int)op);
    tt__opscope sc = tt__op_enter();
    tt_status st = unary_impl(out, op, a);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, UNOP_OP[op], out, a, NULL, NULL);
        ev.flops = op == TT_NOT ? 0.0 : (double)tt_numel(out);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_to_dtype(tt_tensor *out, const tt_tensor *a, tt_dtype dt)
{
    clear(out);
    if (dt != TT_FLOAT32 && dt != TT_BOOL) return tt__err(TT_EARG, "to_dtype: unknown dtype %d", (int)dt);
    tt_op op = dt == TT_BOOL ? TT_OP_BOOL : TT_OP_FLOAT;
    tt__opscope sc = tt__op_enter();
    tt_status st = TT_OK;
    int view = a->dtype == dt;
    if (view) {
        tt__view_of(out, a);
    } else {
        st = tt__alloc(out, tt_op_name(op), dt, a->ndim, a->shape, a->names);
        if (st == TT_OK) {
            ew_ctx c = { .op = dt == TT_BOOL ? CAST_TO_BOOL : CAST_TO_FLOAT, .x = data_of(a) };
            run_ew(dt == TT_BOOL ? unary_f32_row : unary_bool_row, &c, out, a, NULL);
        }
    }
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, op, out, a, NULL, NULL);
        ev.view = view;
    }
    return tt__op_leave(sc, st, &ev);
}

/* ===== Reductions ===== */

static const tt_op REDOP_OP[] = {
    TT_OP_SUM, TT_OP_MEAN, TT_OP_MAX, TT_OP_MIN, TT_OP_ARGMAX, TT_OP_ARGMIN, TT_OP_STD, TT_OP_VAR,
};
_Static_assert(sizeof REDOP_OP / sizeof REDOP_OP[0] == TT_REDOP_COUNT, "REDOP_OP out of sync");

static int is_extremum(int op)
{
    return op == TT_MAX || op == TT_MIN || op == TT_ARGMAX || op == TT_ARGMIN;
}

/* The line kernel of each reduction (arg* share max/min's, which also
   give the index). */
static const signed char RED_KERN[] = {
    [TT_SUM] = TK_RED_SUM, [TT_MEAN] = TK_RED_MEAN, [TT_MAX] = TK_RED_MAX, [TT_MIN] = TK_RED_MIN,
    [TT_ARGMAX] = TK_RED_MAX, [TT_ARGMIN] = TK_RED_MIN, [TT_STD] = TK_RED_STD, [TT_VAR] = TK_RED_VAR,
};
_Static_assert(sizeof RED_KERN / sizeof RED_KERN[0] == TT_REDOP_COUNT, "RED_KERN out of sync");

typedef struct red_ctx {
    int op;                 /* TK_RED_* */
    const float *x;
    float *val, *idx;       /* either may be NULL */
    int64_t R, sd;          /* reduced length and stride */
} red_ctx;

static void reduce_row(void *p, int64_t n, const int64_t *off, const int64_t *inc)
{
    const red_ctx *c = p;
    const float *x = c->x + off[1];
    int64_t so = inc[0], si = inc[1];
    /* along a unit stride one line at a time; else many lines side by side */
    int64_t blk = c->sd == 1 ? 1 : TK_RED_BLOCK;
    float v[TK_RED_BLOCK], ix[TK_RED_BLOCK];
    for (int64_t i0 = 0; i0 < n; i0 += blk) {
        int64_t nb = n - i0 < blk ? n - i0 : blk;
        tk_reduce_lines(c->op, x + i0 * si, nb, si, c->R, c->sd, v, ix);
        for (int64_t i = 0; i < nb; i++) {
            if (c->val) c->val[off[0] + (i0 + i) * so] = v[i];
            if (c->idx) c->idx[off[0] + (i0 + i) * so] = ix[i];
        }
    }
}

/* vals and/or idxs (either may be NULL) get the reduction of a over d
   (d < 0: everything). */
static tt_status reduce_impl(tt_tensor *vals, tt_tensor *idxs, int op, const tt_tensor *a,
                             int d, int keepdim)
{
    const char *name = tt_op_name(REDOP_OP[op]);
    char sa[SHAPE_BUF];
    if (a->dtype != TT_FLOAT32)
        return tt__err(TT_EARG, "%s: expects float32, got %s %s; hint: x:float()", name,
                       tt_dtype_name(a->dtype), shp(a, sa));
    tt_status st;
    if (d >= 0 && (st = tt__check_dim(name, a, d, 0))) return st;
    int64_t R = d >= 0 ? a->shape[d] : tt_numel(a);
    if (is_extremum(op) && R == 0) {
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
    if (vals && (st = tt__alloc(vals, name, TT_FLOAT32, nd, shape, names))) return st;
    if (idxs && (st = tt__alloc(idxs, name, TT_FLOAT32, nd, shape, names))) {
        if (vals) tt_tensor_release(vals);
        return st;
    }
    red_ctx c = { RED_KERN[op], NULL, vals ? tt_data_f32(vals) : NULL, idxs ? tt_data_f32(idxs) : NULL, R, 1 };
    if (d < 0) {
        /* one line over everything, contiguous (copied when a is not) */
        tt_tensor tmp = {0};
        const tt_tensor *src = a;
        if (!tt_is_contiguous(a)) {
            if ((st = tt__alloc(&tmp, name, TT_FLOAT32, a->ndim, a->shape, NULL))) {
                tt_tensor_release(vals);
                tt_tensor_release(idxs);
                return st;
            }
            tt__copy(&tmp, a);
            src = &tmp;
        }
        c.x = R ? tt_data_f32(src) : NULL;
        float v, ix;
        tk_reduce_lines(c.op, c.x, 1, 0, R, 1, &v, &ix);
        if (c.val) c.val[0] = v;
        if (c.idx) c.idx[0] = ix;
        tt_tensor_release(&tmp);
        return TT_OK;
    }
    /* iterate over the kept dims; each output reduces R elements at stride sd */
    int64_t kshape[TT_MAX_DIMS], st2[ITER_OPS][TT_MAX_DIMS] = {{0}};
    int nk = 0;
    for (int i = 0; i < a->ndim; i++) {
        if (i == d) continue;
        kshape[nk] = a->shape[i];
        st2[1][nk++] = a->stride[i];
    }
    tt__contig_strides(nk, kshape, st2[0]);
    c.x = tt_data_f32(a);
    c.sd = a->stride[d];
    iter it;
    iter_init(&it, nk, kshape, 2, (const int64_t (*)[TT_MAX_DIMS])st2);
    /* each output costs R reads: split the work by outputs, not elements */
    if (it.numel * (R ? R : 1) < PAR_MIN) {
        iter_range(&it, 0, it.numel, reduce_row, &c);
    } else if (it.numel > 0) {
        par_job j = { &it, reduce_row, &c };
        int64_t grain = PAR_GRAIN / (R ? R : 1);
        tk_parallel_for(it.numel, grain > 0 ? grain : 1, par_range, &j);
    }
    return TT_OK;
}

static void reduce_args(tt_event *ev, int d, int keepdim)
{
    if (!tt__tracing()) return;         /* only a sink reads args */
    if (d >= 0) snprintf(ev->args, sizeof ev->args, keepdim ? "dim=%d, keepdim" : "dim=%d", d + 1);
    else if (keepdim) snprintf(ev->args, sizeof ev->args, "keepdim");
}

tt_status tt_reduce(tt_tensor *out, tt_redop op, const tt_tensor *a, int d, int keepdim)
{
    clear(out);
    if ((unsigned)op >= TT_REDOP_COUNT) return tt__err(TT_EARG, "reduce: unknown op %d", (int)op);
    tt__opscope sc = tt__op_enter();
    int argx = op == TT_ARGMAX || op == TT_ARGMIN;
    tt_status st = reduce_impl(argx ? NULL : out, argx ? out : NULL, op, a, d, keepdim);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, REDOP_OP[op], out, a, NULL, NULL);
        ev.flops = (double)tt_numel(a) * (op == TT_STD || op == TT_VAR ? 3.0 : 1.0);
        reduce_args(&ev, d, keepdim);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_max_dim(tt_tensor *values, tt_tensor *indices, const tt_tensor *a, int d, int keepdim, int is_min)
{
    clear(values);
    clear(indices);
    tt__opscope sc = tt__op_enter();
    tt_status st = reduce_impl(values, indices, is_min ? TT_MIN : TT_MAX, a, d, keepdim);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, is_min ? TT_OP_MIN : TT_OP_MAX, values, a, NULL, NULL);
        ev.bytes += nbytes(indices);
        ev.flops = (double)tt_numel(a);
        reduce_args(&ev, d, keepdim);
    }
    return tt__op_leave(sc, st, &ev);
}

/* ===== Softmax ===== */

static tt_status softmax_impl(tt_tensor *out, const tt_tensor *a, int d)
{
    char sa[SHAPE_BUF];
    if (a->dtype != TT_FLOAT32)
        return tt__err(TT_EARG, "softmax: expects float32, got %s %s; hint: x:float()",
                       tt_dtype_name(a->dtype), shp(a, sa));
    tt_status st = tt__check_dim("softmax", a, d, 0);
    if (st) return st;
    st = tt__alloc(out, "softmax", TT_FLOAT32, a->ndim, a->shape, a->names);
    if (st) return st;
    int64_t numel = tt_numel(a), n = a->shape[d];
    if (numel == 0) return TT_OK;
    float *y = tt_data_f32(out);
    if (d == a->ndim - 1) {
        const float *x = tt_data_f32(a);
        if (!tt_is_contiguous(a)) {
            tt__copy(out, a);
            x = y;
        }
        tk_softmax_rows(numel / n, n, x, y);
        return TT_OK;
    }
    const float *x = tt_data_f32(a);
    if (!tt_is_contiguous(a)) {
        tt__copy(out, a);
        x = y;
    }
    int64_t inner = 1;
    for (int i = d + 1; i < a->ndim; i++) inner *= a->shape[i];
    tk_softmax_cols(numel / (n * inner), n, inner, x, y);
    return TT_OK;
}

/* Rows of a along d whose every entry is -inf (softmax gives NaN there).
   Only looked for while a trace is showing, where the count becomes a note. */
static int64_t all_masked_rows(const tt_tensor *a, int d)
{
    int64_t n = a->shape[d], rows = n ? tt_numel(a) / n : 0, count = 0;
    if (n == 0 || a->dtype != TT_FLOAT32) return 0;
    const float *base = (const float *)a->storage->data + a->offset;
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = 0, rem = r;
        for (int i = a->ndim - 1; i >= 0; i--) {
            if (i == d) continue;
            off += (rem % a->shape[i]) * a->stride[i];
            rem /= a->shape[i];
        }
        int64_t j = 0;
        while (j < n && isinf(base[off + j * a->stride[d]]) && base[off + j * a->stride[d]] < 0) j++;
        count += j == n;
    }
    return count;
}

tt_status tt_softmax(tt_tensor *out, const tt_tensor *a, int d)
{
    clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = softmax_impl(out, a, d);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_SOFTMAX, out, a, NULL, NULL);
        ev.flops = 5.0 * (double)tt_numel(a);   /* max, sub, exp, sum, div */
        if (tt__tracing()) snprintf(ev.args, sizeof ev.args, "dim=%d", d + 1);
        int64_t masked = tt__tracing() ? all_masked_rows(a, d) : 0;
        if (masked)
            snprintf(ev.note, sizeof ev.note, "%lld row%s all -inf: softmax gives NaN there",
                     (long long)masked, masked == 1 ? " is" : "s are");
    }
    return tt__op_leave(sc, st, &ev);
}

/* ===== Masking ===== */

static tt_status masked_fill_impl(tt_tensor *out, const tt_tensor *a, const tt_tensor *mask, double value)
{
    char sa[SHAPE_BUF], sm[SHAPE_BUF];
    if (mask->dtype != TT_BOOL)
        return tt__err(TT_EARG, "masked_fill: mask must be bool, got %s %s for %s; hint: mask:bool()",
                       tt_dtype_name(mask->dtype), shp(mask, sm), shp(a, sa));
    int nd;
    int64_t shape[TT_MAX_DIMS];
    const char *names[TT_MAX_DIMS];
    tt_status st = tt__broadcast("masked_fill", a, mask, &nd, shape, names);
    if (st) return st;
    st = tt__alloc(out, "masked_fill", a->dtype, nd, shape, names);
    if (st) return st;
    ew_ctx c = { .x = data_of(a), .y = tt_data_bool(mask), .fval = (float)value, .bval = value != 0.0 };
    run_ew(a->dtype == TT_BOOL ? masked_fill_bool_row : masked_fill_f32_row, &c, out, a, mask);
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
    clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = masked_fill_impl(out, a, mask, value);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_MASKED_FILL, out, a, mask, NULL);
        ev.has_scalar = 1;
        ev.scalar = value;
        if (tt__tracing()) mask_polarity_note(out, mask, value, ev.note, sizeof ev.note);
    }
    return tt__op_leave(sc, st, &ev);
}

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
    char *base = data_of(out);
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
    clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = tri_impl(out, a, k, upper);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, upper ? TT_OP_TRIU : TT_OP_TRIL, out, a, NULL, NULL);
        if (tt__tracing()) snprintf(ev.args, sizeof ev.args, "k=%lld", (long long)k);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_tril(tt_tensor *out, const tt_tensor *a, int64_t k) { return tri(out, a, k, 0); }
tt_status tt_triu(tt_tensor *out, const tt_tensor *a, int64_t k) { return tri(out, a, k, 1); }

tt_status tt_causal_mask(tt_tensor *out, int64_t nq, int64_t nk, int lower_right)
{
    clear(out);
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
        if (tt__tracing())
            snprintf(ev.args, sizeof ev.args, "nq=%lld, nk=%lld%s", (long long)nq, (long long)nk,
                     lower_right ? "" : ", upper_left");
    }
    return tt__op_leave(sc, st, &ev);
}

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
    clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = repeat_impl(out, a, r, d);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_REPEAT_INTERLEAVE, out, a, NULL, NULL);
        if (tt__tracing()) snprintf(ev.args, sizeof ev.args, "r=%lld, dim=%d", (long long)r, d + 1);
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
    ev->bytes = nbytes(out);
    for (int i = 0; i < n; i++) ev->bytes += nbytes(list[i]);
    if (tt__tracing()) snprintf(ev->args, sizeof ev->args, "dim=%d", d + 1);
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
    clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = cat_impl(out, list, n, d);
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
    clear(out);
    tt__opscope sc = tt__op_enter();
    tt_status st = stack_impl(out, list, n, d);
    tt_event ev;
    if (st == TT_OK) list_event(&ev, TT_OP_STACK, out, list, n, d);
    return tt__op_leave(sc, st, &ev);
}
