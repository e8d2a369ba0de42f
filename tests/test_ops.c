/*
** test_ops.c — the op front-ends (core/ops/) against float64 references computed
** here, element by element through the strides (never through the code
** under test): broadcasting, elementwise, reductions, softmax, masking,
** cat/stack, matmul, sdpa, names, error messages and trace events.
*/
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernel/kernels.h"
#include "opref.h"
#include "tt.h"
#include "tt_internal.h"

#define DNAN ((double)NAN)
#define DINF ((double)INFINITY)

/* DIMS(3, 4) expands to a dim count and a shape array. */
#define DIMS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

/* ===== Helpers ===== */

static uint64_t rng = 88172645463325252u;

static double urand(void) { return check_xorshift(&rng); }   /* [0, 1) */

static int ok(tt_status st)
{
    if (st != TT_OK) printf("  unexpected error: %s\n", tt_errmsg());
    return st == TT_OK;
}

/* Element at idx, read through the tensor's own strides. */
static double el(const tt_tensor *t, const int64_t *idx)
{
    int64_t o = t->offset;
    for (int d = 0; d < t->ndim; d++) o += idx[d] * t->stride[d];
    if (t->dtype == TT_BOOL) return ((const uint8_t *)t->storage->data)[o];
    if (t->dtype == TT_INT64) return (double)((const int64_t *)t->storage->data)[o];
    return (double)((const float *)t->storage->data)[o];
}

/* Element of t broadcast to an nd-dim index (right aligned). */
static double elb(const tt_tensor *t, int nd, const int64_t *idx)
{
    int64_t j[TT_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        int64_t i = idx[nd - t->ndim + d];
        j[d] = t->shape[d] == 1 ? 0 : i;
    }
    return el(t, j);
}

/* Odometer over shape; 0 when it wraps around. */
static int next_idx(int nd, const int64_t *shape, int64_t *idx)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return 1;
        idx[d] = 0;
    }
    return 0;
}

static int64_t numel_of(int nd, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    return n;
}

/* The values of t in row-major order (bools as 0/1); caller frees. */
static float *flat(const tt_tensor *t)
{
    int64_t n = tt_numel(t), idx[TT_MAX_DIMS] = {0};
    float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        v[i] = (float)el(t, idx);
        next_idx(t->ndim, t->shape, idx);
    }
    return v;
}

static int same_shape(const tt_tensor *t, int nd, const int64_t *shape)
{
    if (t->ndim != nd) return 0;
    for (int i = 0; i < nd; i++)
        if (t->shape[i] != shape[i]) return 0;
    return 1;
}

static void fill_rand(tt_tensor *t, double lo, double hi)
{
    float *p = tt_data_f32(t);
    for (int64_t i = 0; i < tt_numel(t); i++) p[i] = (float)(lo + (hi - lo) * urand());
}

static tt_tensor rnd(int nd, const int64_t *shape)
{
    tt_tensor t;
    ok(tt_empty(&t, TT_FLOAT32, nd, shape));
    fill_rand(&t, -2.0, 2.0);
    return t;
}

static tt_tensor from(const float *v, int nd, const int64_t *shape)
{
    tt_tensor t;
    ok(tt_from_buffer(&t, TT_FLOAT32, nd, shape, v));
    return t;
}

static tt_tensor from_bool(const uint8_t *v, int nd, const int64_t *shape)
{
    tt_tensor t;
    ok(tt_from_buffer(&t, TT_BOOL, nd, shape, v));
    return t;
}

static tt_tensor rnd_bool(int nd, const int64_t *shape)
{
    tt_tensor t;
    ok(tt_empty(&t, TT_BOOL, nd, shape));
    uint8_t *p = tt_data_bool(&t);
    for (int64_t i = 0; i < tt_numel(&t); i++) p[i] = urand() < 0.6;
    return t;
}

enum { L_CONTIG, L_TRANS, L_NARROW, L_EXPAND, L_PERM, L_COUNT };
static const char *const LAYOUT[] = { "contiguous", "transposed", "narrowed", "expanded", "permuted" };

/* A random float tensor of the given shape laid out in memory as `layout`
   says (a view over a differently shaped base). */
static tt_tensor make(int layout, int nd, const int64_t *shape)
{
    int64_t base[TT_MAX_DIMS];
    tt_tensor b, t;
    tt_status st = TT_OK;
    memcpy(base, shape, (size_t)nd * sizeof *base);
    if (layout == L_TRANS && nd >= 2) {
        base[nd - 1] = shape[nd - 2];
        base[nd - 2] = shape[nd - 1];
        b = rnd(nd, base);
        st = tt_transpose(&t, &b, nd - 2, nd - 1);
    } else if (layout == L_NARROW && nd >= 1) {
        base[nd - 1] = shape[nd - 1] + 3;
        b = rnd(nd, base);
        st = tt_narrow(&t, &b, nd - 1, 1, shape[nd - 1]);
    } else if (layout == L_EXPAND && nd >= 1) {
        base[0] = 1;
        b = rnd(nd, base);
        st = tt_expand(&t, &b, nd, shape);
    } else if (layout == L_PERM && nd >= 2) {
        int perm[TT_MAX_DIMS];
        for (int i = 0; i < nd; i++) {
            base[i] = shape[nd - 1 - i];
            perm[i] = nd - 1 - i;
        }
        b = rnd(nd, base);
        st = tt_permute(&t, &b, perm);
    } else {
        return rnd(nd, shape);
    }
    tt_tensor_release(&b);
    if (st != TT_OK) {              /* a view this shape cannot have: plain */
        printf("  note: %s layout unavailable: %s\n", LAYOUT[layout], tt_errmsg());
        return rnd(nd, shape);
    }
    return t;
}

static int has(const char *s) { return strstr(tt_errmsg(), s) != NULL; }

/* st must be `want` and the message must contain every non-NULL string. */
static void check_err(const char *descr, tt_status st, tt_status want,
                      const char *s1, const char *s2, const char *s3)
{
    int good = st == want && has(s1) && (!s2 || has(s2)) && (!s3 || has(s3));
    if (!good) printf("  status %d, message: %s\n", (int)st, tt_errmsg());
    CHECK(descr, good);
}

/* ===== Elementwise ===== */

static double ref_binop(tt_op op, double u, double w)
{
    switch (op) {
    case TT_OP_ADD: return (double)(float)(u + w);
    case TT_OP_SUB: return (double)(float)(u - w);
    case TT_OP_MUL: return (double)(float)(u * w);
    case TT_OP_DIV: return u / w;
    case TT_OP_POW: return pow(u, w);
    case TT_OP_MAXIMUM: return (isnan(u) || isnan(w)) ? DNAN : u > w ? u : w;
    case TT_OP_MINIMUM: return (isnan(u) || isnan(w)) ? DNAN : u < w ? u : w;
    case TT_OP_EQ: return u == w;
    case TT_OP_NE: return u != w;
    case TT_OP_LT: return u < w;
    case TT_OP_LE: return u <= w;
    case TT_OP_GT: return u > w;
    case TT_OP_GE: return u >= w;
    case TT_OP_AND: return (u != 0) && (w != 0);
    case TT_OP_OR: return (u != 0) || (w != 0);
    case TT_OP_XOR: return (u != 0) != (w != 0);
    default: return DNAN;
    }
}

/* out = a op b checked element by element against the reference. */
static void check_binary(const char *descr, tt_op op, const tt_tensor *a, const tt_tensor *b)
{
    tt_tensor out;
    if (!ok(tt_binary(&out, op, a, b))) {
        CHECK(descr, 0);
        return;
    }
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    int64_t shape[TT_MAX_DIMS], idx[TT_MAX_DIMS] = {0};
    for (int i = 0; i < nd; i++) {
        int ia = a->ndim - nd + i, ib = b->ndim - nd + i;
        int64_t x = ia >= 0 ? a->shape[ia] : 1, y = ib >= 0 ? b->shape[ib] : 1;
        shape[i] = x == 1 ? y : x;
    }
    int64_t n = numel_of(nd, shape);
    double *ref = malloc((size_t)(n ? n : 1) * sizeof *ref);
    for (int64_t i = 0; i < n; i++) {
        ref[i] = ref_binop(op, elb(a, nd, idx), elb(b, nd, idx));
        next_idx(nd, shape, idx);
    }
    float *got = flat(&out);
    int want_bool = op == TT_OP_EQ || op == TT_OP_NE || op == TT_OP_LT || op == TT_OP_LE || op == TT_OP_GT
                    || op == TT_OP_GE || op == TT_OP_AND || op == TT_OP_OR || op == TT_OP_XOR;
    CHECK(descr, same_shape(&out, nd, shape) && tt_is_contiguous(&out) &&
                 out.dtype == (want_bool ? TT_BOOL : TT_FLOAT32) && out.label == NULL);
    check_close(descr, got, ref, n, op == TT_OP_POW ? 1e-5 : 1e-6, 0.0);
    free(ref);
    free(got);
    tt_tensor_release(&out);
}

/* ===== int64 ===== */

/* An int64 tensor of shape in [lo, hi), laid out as `layout` says: the
   float layouts of make() with the values rounded (long() of a view). */
static tt_tensor make_i64(int layout, int nd, const int64_t *shape, double lo, double hi)
{
    tt_tensor f = make(layout, nd, shape), sc, sh, l = {0};
    /* f in [-1, 1) (rnd) -> lo + (f+1)/2 * (hi - lo), truncated */
    if (ok(tt_binary_scalar(&sc, TT_OP_MUL, &f, (hi - lo) / 2, 0))) {
        if (ok(tt_binary_scalar(&sh, TT_OP_ADD, &sc, lo + (hi - lo) / 2, 0))) {
            ok(tt_to_dtype(&l, &sh, TT_INT64));
            tt_tensor_release(&sh);
        }
        tt_tensor_release(&sc);
    }
    tt_tensor_release(&f);
    return l;
}

static int64_t ref_i64(tt_op op, int64_t u, int64_t w)
{
    switch (op) {
    case TT_OP_ADD: return u + w;
    case TT_OP_SUB: return u - w;
    case TT_OP_MUL: return u * w;
    case TT_OP_MAXIMUM: return u > w ? u : w;
    case TT_OP_MINIMUM: return u < w ? u : w;
    case TT_OP_EQ: return u == w;
    case TT_OP_NE: return u != w;
    case TT_OP_LT: return u < w;
    case TT_OP_LE: return u <= w;
    case TT_OP_GT: return u > w;
    case TT_OP_GE: return u >= w;
    case TT_OP_POW: {
        int64_t r = 1;
        for (int64_t k = 0; k < w; k++) r *= u;
        return w < 0 ? (u == 1 ? 1 : u == -1 ? (w % 2 ? -1 : 1) : 0) : r;
    }
    default: return 0;
    }
}

/* int64 op int64 at awkward shapes and strides against plain C integer
   arithmetic (values small enough not to overflow); promotion to float32
   with float tensors, non-integer scalars and true division. */
static void test_int64_ops(void)
{
    static const tt_op ops[] = { TT_OP_ADD, TT_OP_SUB, TT_OP_MUL, TT_OP_POW, TT_OP_MAXIMUM, TT_OP_MINIMUM,
                                 TT_OP_EQ, TT_OP_NE, TT_OP_LT, TT_OP_LE, TT_OP_GT, TT_OP_GE };
    const int64_t sa[3] = {3, 37, 13}, sb[2] = {37, 1};
    for (int la = 0; la < 5; la++) {
        tt_tensor a = make_i64(la, 3, sa, -50, 50), b = make_i64(la % 3, 2, sb, -4, 5);
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            tt_tensor out;
            char d[128];
            snprintf(d, sizeof d, "int64 %s, %s [3,37,13] with [37,1]", tt_op_name(ops[k]), LAYOUT[la]);
            if (!ok(tt_binary(&out, ops[k], &a, &b))) { CHECK(d, 0); continue; }
            int cmp = ops[k] >= TT_OP_EQ && ops[k] <= TT_OP_GE;
            int good = out.dtype == (cmp ? TT_BOOL : TT_INT64) && same_shape(&out, 3, sa);
            int64_t idx[3] = {0};
            for (int64_t i = 0; good && i < tt_numel(&out); i++) {
                int64_t u = (int64_t)elb(&a, 3, idx), w = (int64_t)elb(&b, 3, idx);
                int64_t want = ref_i64(ops[k], u, ops[k] == TT_OP_POW ? w % 4 : w);
                if (ops[k] == TT_OP_POW) break;         /* below, with small exponents */
                good &= tt_get_i64(&out, i) == want;
                next_idx(3, sa, idx);
            }
            CHECK(d, good);
            tt_tensor_release(&out);
        }
        /* pow with exponents -2..4 */
        tt_tensor e = make_i64(la % 3, 2, sb, -2, 5), p;
        if (ok(tt_binary(&p, TT_OP_POW, &a, &e))) {
            int good = p.dtype == TT_INT64;
            int64_t idx[3] = {0};
            for (int64_t i = 0; i < tt_numel(&p); i++) {
                good &= tt_get_i64(&p, i) == ref_i64(TT_OP_POW, (int64_t)elb(&a, 3, idx), (int64_t)elb(&e, 3, idx));
                next_idx(3, sa, idx);
            }
            CHECK("int64 pow, negative exponents included", good);
            tt_tensor_release(&p);
        }
        /* promotion: int64 / int64, int64 * float32, int64 + 0.5, int64 * 3.0 (a
           float, as Python's 3.0) give float32; int64 * the integer 3 stays int64 */
        tt_tensor f = make(la % 3, 2, sb), q, m, h, s3, f3;
        if (ok(tt_binary(&q, TT_OP_DIV, &a, &b)) && ok(tt_binary(&m, TT_OP_MUL, &a, &f))
            && ok(tt_binary_scalar(&h, TT_OP_ADD, &a, 0.5, 1)) && ok(tt_binary_number(&s3, TT_OP_MUL, &a, tt_num_i(3), 0))
            && ok(tt_binary_scalar(&f3, TT_OP_MUL, &a, 3.0, 0))) {
            int good = q.dtype == TT_FLOAT32 && m.dtype == TT_FLOAT32 && h.dtype == TT_FLOAT32 && s3.dtype == TT_INT64
                       && f3.dtype == TT_FLOAT32;
            int64_t idx[3] = {0};
            for (int64_t i = 0; i < tt_numel(&q); i++) {
                double u = elb(&a, 3, idx), w = elb(&b, 3, idx), x = elb(&f, 3, idx);
                good &= tt_get(&q, i) == (double)((float)u / (float)w) || (isnan(tt_get(&q, i)) && u == 0 && w == 0);
                good &= tt_get(&m, i) == (double)((float)u * (float)x);
                good &= tt_get(&h, i) == (double)(float)(u + 0.5);
                good &= tt_get_i64(&s3, i) == (int64_t)u * 3 && tt_get(&f3, i) == u * 3;
                next_idx(3, sa, idx);
            }
            CHECK("int64 promotion: / , * float32, + 0.5, * 3.0 are float32; * 3 stays int64", good);
            tt_tensor_release(&f3);
        }
        tt_tensor_release(&q);
        tt_tensor_release(&m);
        tt_tensor_release(&h);
        tt_tensor_release(&s3);
        tt_tensor_release(&f);
        tt_tensor_release(&e);
        /* unary: neg, abs stay int64; exp is float32 */
        tt_tensor ng, ab, ex;
        if (ok(tt_unary(&ng, TT_OP_NEG, &a)) && ok(tt_unary(&ab, TT_OP_ABS, &a)) && ok(tt_unary(&ex, TT_OP_EXP, &b))) {
            int good = ng.dtype == TT_INT64 && ab.dtype == TT_INT64 && ex.dtype == TT_FLOAT32;
            int64_t idx[3] = {0};
            for (int64_t i = 0; i < tt_numel(&ng); i++) {
                int64_t u = (int64_t)elb(&a, 3, idx);
                good &= tt_get_i64(&ng, i) == -u && tt_get_i64(&ab, i) == (u < 0 ? -u : u);
                next_idx(3, sa, idx);
            }
            for (int64_t i = 0; i < tt_numel(&ex); i++)
                good &= fabs(tt_get(&ex, i) - exp(tt_get(&b, i))) <= 1e-6 * exp(tt_get(&b, i));
            CHECK("int64 neg, abs stay int64; exp gives float32", good);
        }
        tt_tensor_release(&ng);
        tt_tensor_release(&ab);
        tt_tensor_release(&ex);
        tt_tensor_release(&a);
        tt_tensor_release(&b);
    }
    /* + wraps around as two's complement, as PyTorch */
    int64_t big[2] = {INT64_MAX, INT64_MIN}, one = 2;
    tt_tensor t, w, nb;
    if (ok(tt_from_buffer(&t, TT_INT64, 1, &one, big))) {
        if (ok(tt_binary_number(&w, TT_OP_ADD, &t, tt_num_i(1), 0))) {
            CHECK("int64 + wraps", tt_get_i64(&w, 0) == INT64_MIN && tt_get_i64(&w, 1) == INT64_MIN + 1);
            tt_tensor_release(&w);
        }
        if (ok(tt_unary(&nb, TT_OP_NEG, &t))) {
            CHECK("int64 neg of INT64_MIN wraps", tt_get_i64(&nb, 1) == INT64_MIN && tt_get_i64(&nb, 0) == -INT64_MAX);
            tt_tensor_release(&nb);
        }
        tt_tensor bl;
        if (ok(tt_to_dtype(&bl, &t, TT_BOOL))) {
            check_err("int64 with bool is an error", tt_binary(&w, TT_OP_ADD, &t, &bl), TT_EARG,
                      "add", "int64 [2] and bool [2]", "hint");
            tt_tensor_release(&bl);
        }
        tt_tensor_release(&t);
    }
}

/* ===== Indexing ===== */

/* A 1-D int64 index of n values in 1..size, strided: column 1 of [n,2]. */
static tt_tensor strided_index(int64_t n, int64_t size)
{
    tt_tensor base, col = {0};
    int64_t shape[2] = {n, 2};
    if (ok(tt_randint(&base, 1, size + 1, 2, shape))) {
        ok(tt_select(&col, &base, 1, 0));
        tt_tensor_release(&base);
    }
    return col;
}

/* index_select and gather copy elements: exact equality with the element
   the reference walk picks, at awkward shapes, for every layout of the
   input (strided, expanded) and strided indices; int64 input too. */
static void test_indexing(void)
{
    const int64_t shape[3] = {3, 37, 13};
    tt_manual_seed(5);
    for (int l = 0; l < L_COUNT; l++) {
        tt_tensor a = make(l, 3, shape);
        for (int d = 0; d < 3; d++) {
            char descr[96];
            tt_tensor ix = strided_index(2 * shape[d] + 3, shape[d]), out;    /* repeats certain */
            snprintf(descr, sizeof descr, "index_select dim=%d on %s", d + 1, LAYOUT[l]);
            if (!ok(tt_index_select(&out, &a, d, &ix))) { CHECK(descr, 0); tt_tensor_release(&ix); continue; }
            int64_t os[3] = {shape[0], shape[1], shape[2]}, idx[3] = {0};
            os[d] = tt_numel(&ix);
            int good = same_shape(&out, 3, os) && out.dtype == TT_FLOAT32;
            for (int64_t k = 0; good && k < tt_numel(&out); k++) {
                int64_t src[3] = {idx[0], idx[1], idx[2]};
                src[d] = tt_get_i64(&ix, idx[d]) - 1;
                good &= tt_get(&out, k) == el(&a, src);
                next_idx(3, os, idx);
            }
            CHECK(descr, good);
            tt_tensor_release(&out);
            tt_tensor_release(&ix);

            /* gather: index [3, 20, 13] off d smaller where it may be, transposed (strided) */
            int64_t gs[3] = {shape[0] - (d != 0), shape[1] - 5 * (d != 1), shape[2] - 2 * (d != 2)};
            gs[d] = 20;
            int64_t ts[3] = {gs[0], gs[2], gs[1]};
            tt_tensor gb, gi;
            if (!ok(tt_randint(&gb, 1, shape[d] + 1, 3, ts)) || !ok(tt_transpose(&gi, &gb, 1, 2))) continue;
            tt_tensor_release(&gb);
            snprintf(descr, sizeof descr, "gather dim=%d on %s, strided index", d + 1, LAYOUT[l]);
            if (ok(tt_gather(&out, &a, d, &gi))) {
                int64_t j[3] = {0};
                good = same_shape(&out, 3, gs) && out.dtype == TT_FLOAT32;
                for (int64_t k = 0; good && k < tt_numel(&out); k++) {
                    int64_t src[3] = {j[0], j[1], j[2]};
                    src[d] = (int64_t)el(&gi, j) - 1;
                    good &= tt_get(&out, k) == el(&a, src);
                    next_idx(3, gs, j);
                }
                CHECK(descr, good);
                tt_tensor_release(&out);
            }
            tt_tensor_release(&gi);
        }
        tt_tensor_release(&a);
    }
    /* int64 input: the ids of an embedding lookup */
    tt_tensor ids, ix = strided_index(9, 40), out;
    int64_t s40 = 40;
    if (ok(tt_randint(&ids, -1000000, 1000000, 1, &s40)) && ok(tt_index_select(&out, &ids, 0, &ix))) {
        int good = out.dtype == TT_INT64 && tt_numel(&out) == 9;
        for (int64_t k = 0; k < 9; k++) good &= tt_get_i64(&out, k) == tt_get_i64(&ids, tt_get_i64(&ix, k) - 1);
        CHECK("index_select of int64", good);
        tt_tensor_release(&out);
    }
    /* int64 along the last dim of a transposed view: [8,5] viewed as [5,8] */
    tt_tensor grid, gt, lix = strided_index(11, 8), lout;
    const int64_t s85[2] = {8, 5};
    if (ok(tt_randint(&grid, -1000000, 1000000, 2, s85)) && ok(tt_transpose(&gt, &grid, 0, 1))) {
        if (ok(tt_index_select(&lout, &gt, 1, &lix))) {
            int good = lout.dtype == TT_INT64 && lout.shape[0] == 5 && lout.shape[1] == 11;
            for (int64_t r = 0; r < 5; r++)
                for (int64_t k = 0; k < 11; k++)
                    good &= tt_get_i64(&lout, r * 11 + k) == tt_get_i64(&grid, (tt_get_i64(&lix, k) - 1) * 5 + r);
            CHECK("index_select of int64, last dim of a transposed view", good);
            tt_tensor_release(&lout);
        }
        tt_tensor_release(&gt);
        tt_tensor_release(&grid);
    }
    tt_tensor_release(&lix);
    /* an embedding's lookup (dim 1, whole rows copied): a contiguous weight,
       one whose rows lie apart (narrowed columns), one whose rows are not
       contiguous (transposed), int64 rows; repeated, strided index */
    const int64_t wshape[2] = {11, 7};
    tt_tensor rix = strided_index(25, wshape[0]);
    for (int l = 0; l < 4; l++) {
        static const char *const what[] = { "contiguous", "rows apart", "transposed", "int64" };
        tt_tensor w, rows;
        if (l < 3) w = make(l == 0 ? L_CONTIG : l == 1 ? L_NARROW : L_TRANS, 2, wshape);
        else if (!ok(tt_randint(&w, -1000000, 1000000, 2, wshape))) continue;
        char descr[96];
        snprintf(descr, sizeof descr, "index_select dim=1 of a [11,7] weight, %s", what[l]);
        if (!ok(tt_index_select(&rows, &w, 0, &rix))) { CHECK(descr, 0); tt_tensor_release(&w); continue; }
        int64_t os[2] = {25, wshape[1]}, idx[2] = {0};
        int good = same_shape(&rows, 2, os) && rows.dtype == w.dtype;
        for (int64_t k = 0; good && k < 25 * wshape[1]; k++) {
            int64_t src[2] = {tt_get_i64(&rix, idx[0]) - 1, idx[1]};
            good &= el(&rows, idx) == el(&w, src);
            next_idx(2, os, idx);
        }
        CHECK(descr, good);
        tt_tensor_release(&rows);
        tt_tensor_release(&w);
    }
    tt_tensor_release(&rix);
    /* errors: the value and the range; float index; wrong dims */
    tt_tensor bad, f;
    int64_t two = 2, vals[2] = {1, 41};
    if (ok(tt_from_buffer(&bad, TT_INT64, 1, &two, vals))) {
        check_err("index_select: index out of range", tt_index_select(&out, &ids, 0, &bad), TT_EARG,
                  "index_select: index 41 out of range", "dim 1 of [40]", "(1..40)");
        vals[1] = 0;
        tt_tensor_release(&bad);
        ok(tt_from_buffer(&bad, TT_INT64, 1, &two, vals));
        check_err("index_select: index 0 has a hint", tt_index_select(&out, &ids, 0, &bad), TT_EARG,
                  "index 0 out of range", "count from 1", NULL);
        tt_tensor ix2;
        if (ok(tt_unsqueeze(&ix2, &ix, 0))) {
            check_err("gather: dims differ", tt_gather(&out, &ids, 0, &ix2), TT_ESHAPE,
                      "gather: index [1,9] and input [40] must have as many dims", NULL, NULL);
            tt_tensor_release(&ix2);
        }
        tt_tensor_release(&bad);
    }
    if (ok(tt_to_dtype(&f, &ix, TT_FLOAT32))) {
        check_err("index_select: float index", tt_index_select(&out, &ids, 0, &f), TT_EARG,
                  "index must be int64", "float32 [9]", "index:long()");
        tt_tensor_release(&f);
    }
    tt_tensor_release(&ix);
    tt_tensor_release(&ids);
}

static void test_binary(void)
{
    static const struct { int na; int64_t sa[4]; int nb; int64_t sb[4]; } pairs[] = {
        { 2, {3, 5}, 2, {3, 5} },
        { 3, {3, 1, 5}, 2, {4, 1} },       /* broadcast on both sides */
        { 1, {7}, 3, {2, 3, 7} },
        { 2, {17, 33}, 1, {33} },
        { 2, {4, 1}, 2, {1, 6} },
        { 2, {0, 3}, 2, {1, 3} },          /* zero-size */
        { 2, {2, 3}, 0, {0} },             /* 0-d operand */
        { 2, {300, 301}, 2, {300, 301} },  /* big enough for threads */
    };
    static const tt_op ops[] = { TT_OP_ADD, TT_OP_SUB, TT_OP_MUL, TT_OP_DIV, TT_OP_POW, TT_OP_MAXIMUM,
                                    TT_OP_MINIMUM, TT_OP_LT, TT_OP_LE, TT_OP_GT, TT_OP_GE, TT_OP_EQ, TT_OP_NE };
    char descr[128];
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        for (int la = 0; la < L_COUNT; la++) {
            int lb = (la + (int)p) % L_COUNT;
            tt_tensor a = make(la, pairs[p].na, pairs[p].sa);
            tt_tensor b = make(lb, pairs[p].nb, pairs[p].sb);
            for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
                if (ops[o] == TT_OP_POW) {       /* positive bases keep pow real */
                    tt_tensor pa;
                    ok(tt_unary(&pa, TT_OP_ABS, &a));
                    snprintf(descr, sizeof descr, "pow pair %zu %s/%s", p, LAYOUT[la], LAYOUT[lb]);
                    check_binary(descr, TT_OP_POW, &pa, &b);
                    tt_tensor_release(&pa);
                    continue;
                }
                snprintf(descr, sizeof descr, "%s pair %zu %s/%s", tt_op_name(ops[o]),
                         p, LAYOUT[la], LAYOUT[lb]);
                check_binary(descr, ops[o], &a, &b);
                /* and swapped: the broadcast is symmetric */
                check_binary(descr, ops[o], &b, &a);
            }
            tt_tensor_release(&a);
            tt_tensor_release(&b);
        }
    }

    /* special values: inf, NaN, division by zero, equal elements */
    float av[] = { 1, -1, 0, NAN, INFINITY, 3, 2, -0.0f };
    float bv[] = { 0, 0, 0, 1, 1, NAN, 2, 0 };
    tt_tensor a = from(av, DIMS(8)), b = from(bv, DIMS(8));
    static const tt_op all[] = { TT_OP_ADD, TT_OP_SUB, TT_OP_MUL, TT_OP_DIV, TT_OP_MAXIMUM, TT_OP_MINIMUM,
                                    TT_OP_EQ, TT_OP_NE, TT_OP_LT, TT_OP_LE, TT_OP_GT, TT_OP_GE };
    for (size_t o = 0; o < sizeof all / sizeof all[0]; o++) {
        snprintf(descr, sizeof descr, "special values %s", tt_op_name(all[o]));
        check_binary(descr, all[o], &a, &b);
    }
    tt_tensor_release(&a);
    tt_tensor_release(&b);
}

static void test_scalar(void)
{
    tt_tensor a = make(L_TRANS, DIMS(5, 9)), out, pa;
    ok(tt_unary(&pa, TT_OP_ABS, &a));
    static const tt_op ops[] = { TT_OP_ADD, TT_OP_SUB, TT_OP_MUL, TT_OP_DIV, TT_OP_POW, TT_OP_MAXIMUM, TT_OP_MINIMUM,
                                    TT_OP_EQ, TT_OP_NE, TT_OP_LT, TT_OP_LE, TT_OP_GT, TT_OP_GE };
    double svals[] = { 0.5, -1.25, 2.0, 0.0 };
    char descr[96];
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        for (size_t si = 0; si < 4; si++) {
            for (int first = 0; first < 2; first++) {
                const tt_tensor *x = ops[o] == TT_OP_POW ? &pa : &a;
                double s = svals[si];
                if (ops[o] == TT_OP_POW && first) s = fabs(s) + 0.5;
                if (!ok(tt_binary_scalar(&out, ops[o], x, s, first))) {
                    CHECK("scalar op runs", 0);
                    continue;
                }
                int64_t n = tt_numel(x), idx[2] = {0, 0};
                double *ref = malloc((size_t)n * sizeof *ref);
                for (int64_t i = 0; i < n; i++) {
                    double u = el(x, idx), w = (double)(float)s;
                    ref[i] = first ? ref_binop(ops[o], w, u) : ref_binop(ops[o], u, w);
                    next_idx(2, x->shape, idx);
                }
                float *got = flat(&out);
                snprintf(descr, sizeof descr, "scalar %s s=%g first=%d",
                         tt_op_name(ops[o]), s, first);
                CHECK(descr, same_shape(&out, 2, x->shape));
                check_close(descr, got, ref, n, 1e-5, 0.0);
                free(ref);
                free(got);
                tt_tensor_release(&out);
            }
        }
    }
    /* x^2 is exactly x*x */
    ok(tt_binary_scalar(&out, TT_OP_POW, &a, 2.0, 0));
    int exact = 1;
    int64_t idx[2] = {0, 0};
    float *got = flat(&out);
    for (int64_t i = 0; i < tt_numel(&a); i++) {
        float u = (float)el(&a, idx);
        exact &= got[i] == u * u;
        next_idx(2, a.shape, idx);
    }
    CHECK("pow 2 is exact x*x (negative bases too)", exact);
    free(got);
    tt_tensor_release(&out);
    tt_tensor_release(&pa);
    tt_tensor_release(&a);
}

static void test_bool_ops(void)
{
    tt_tensor a = rnd_bool(DIMS(4, 6)), b0 = rnd_bool(DIMS(6, 4)), b, c = rnd_bool(DIMS(6));
    ok(tt_transpose(&b, &b0, 0, 1));
    static const tt_op ops[] = { TT_OP_AND, TT_OP_OR, TT_OP_XOR, TT_OP_EQ, TT_OP_NE };
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        check_binary("bool op, transposed", ops[o], &a, &b);
        check_binary("bool op, broadcast", ops[o], &a, &c);
    }
    tt_tensor out;
    ok(tt_unary(&out, TT_OP_NOT, &b));
    float *got = flat(&out);
    double ref[24];
    int64_t idx[2] = {0, 0};
    for (int i = 0; i < 24; i++) {
        ref[i] = el(&b, idx) == 0;
        next_idx(2, b.shape, idx);
    }
    check_close("not of transposed bool", got, ref, 24, 0, 0);
    CHECK("not gives bool", out.dtype == TT_BOOL);
    free(got);
    tt_tensor_release(&out);
    ok(tt_binary_scalar(&out, TT_OP_EQ, &a, 1.0, 0));
    got = flat(&out);
    memset(idx, 0, sizeof idx);
    for (int i = 0; i < 24; i++) {
        ref[i] = el(&a, idx) == 1;
        next_idx(2, a.shape, idx);
    }
    check_close("bool eq scalar", got, ref, 24, 0, 0);
    free(got);
    tt_tensor_release(&out);
    tt_tensor_release(&a);
    tt_tensor_release(&b);
    tt_tensor_release(&b0);
    tt_tensor_release(&c);
}

/* Every unary float row of the op table, against its float64 reference in
   tests/opref.h (test_optable.c tests the rows further). Tolerance: a few
   ulps plus the input's rounding carried through, |x f'(x)|. */
static void test_unary(void)
{
    char descr[96];
    for (int l = 0; l < L_COUNT; l++) {
        tt_tensor a = make(l, DIMS(3, 70, 33)), out;
        for (int o = 0; o < TT_OP_COUNT; o++) {
            tt_op op = (tt_op)o;
            const opref *r = &OPREF[op];
            if (tt_op_kind(op) != TT_OPK_UNARY || tt__op_def(op)->dtypes == TT__BOOL || !r->f) continue;
            if (!ok(tt_unary(&out, op, &a))) continue;
            int64_t n = tt_numel(&a), idx[3] = {0, 0, 0};
            double *ref = malloc((size_t)n * sizeof *ref);
            int bad = 0;
            float *got = flat(&out);
            for (int64_t i = 0; i < n; i++) {
                double u = el(&a, idx);
                ref[i] = r->f(u, 0);
                double tol = 2e-6 * fabs(ref[i]) + 4.0 * (double)FLT_EPSILON * fabs(u * r->dx(u, 0));
                if (!(isnan(ref[i]) ? isnan(got[i]) : fabs((double)got[i] - ref[i]) <= tol) && bad++ < 3)
                    printf("  %s: f(%.9g) = %.9g want %.9g\n", tt_op_name(op), u, (double)got[i], ref[i]);
                next_idx(3, a.shape, idx);
            }
            snprintf(descr, sizeof descr, "%s on %s", tt_op_name(op), LAYOUT[l]);
            CHECK(descr, same_shape(&out, 3, a.shape) && out.dtype == TT_FLOAT32 && bad == 0);
            free(ref);
            free(got);
            tt_tensor_release(&out);
        }
        tt_tensor_release(&a);
    }
    float sv[] = { 0, -INFINITY, INFINITY, NAN, 100, -100 };
    tt_tensor s = from(sv, DIMS(6)), out;
    ok(tt_unary(&out, TT_OP_EXP, &s));
    double ref[6] = { 1, 0, DINF, DNAN, DINF, exp(-100.0) };
    float *got = flat(&out);
    check_close("exp of special values", got, ref, 6, 1e-6, 1e-44);   /* exp(-100) is subnormal */
    free(got);
    tt_tensor_release(&out);
    ok(tt_unary(&out, TT_OP_LOG, &s));
    double lref[6] = { -DINF, DNAN, DINF, DNAN, log(100.0), DNAN };
    got = flat(&out);
    check_close("log of special values", got, lref, 6, 1e-6, 0.0);
    free(got);
    tt_tensor_release(&out);
    tt_tensor_release(&s);
}

static void test_to_dtype(void)
{
    float v[] = { 0, -0.0f, 1, -2.5f, NAN, INFINITY };
    tt_tensor a = from(v, DIMS(2, 3)), t, b, f;
    ok(tt_transpose(&t, &a, 0, 1));
    ok(tt_to_dtype(&b, &t, TT_BOOL));
    float *got = flat(&b);
    double ref[6] = { 0, 1, 0, 1, 1, 1 };    /* transposed: 0,-2.5 / -0,nan / 1,inf */
    CHECK("float -> bool dtype and shape", b.dtype == TT_BOOL && b.shape[0] == 3 && b.shape[1] == 2);
    check_close("float -> bool (nonzero and NaN are true)", got, ref, 6, 0, 0);
    free(got);
    ok(tt_to_dtype(&f, &b, TT_FLOAT32));
    got = flat(&f);
    check_close("bool -> float is 0/1", got, ref, 6, 0, 0);
    CHECK("bool -> float dtype", f.dtype == TT_FLOAT32);
    free(got);
    tt_tensor same;
    ok(tt_to_dtype(&same, &t, TT_FLOAT32));
    CHECK("same dtype shares storage", same.storage == t.storage && same.offset == t.offset);
    tt_tensor_release(&same);
    tt_tensor_release(&f);
    tt_tensor_release(&b);
    tt_tensor_release(&t);
    tt_tensor_release(&a);
}

/* ===== Reductions ===== */

/* Reference of one reduction over a line of n doubles (idx: 1-based). */
static double ref_reduce(tt_op op, const double *x, int64_t n)
{
    double s = 0, best = n ? x[0] : DNAN;
    int64_t bi = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    for (int64_t i = 1; i < n; i++) {
        int better = (op == TT_OP_MAX || op == TT_OP_ARGMAX) ? x[i] > best : x[i] < best;
        if (better) {
            best = x[i];
            bi = i;
        }
    }
    double mean = s / (double)n, ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);
    switch (op) {
    case TT_OP_SUM: return s;
    case TT_OP_MEAN: return mean;
    case TT_OP_MAX: case TT_OP_MIN: return best;
    case TT_OP_ARGMAX: case TT_OP_ARGMIN: return (double)(bi + 1);
    case TT_OP_VAR: return n > 1 ? ss / (double)(n - 1) : DNAN;
    case TT_OP_STD: return n > 1 ? sqrt(ss / (double)(n - 1)) : DNAN;
    default: return DNAN;
    }
}

static void check_reduce(const char *descr, tt_op op, const tt_tensor *a, int d, int keepdim)
{
    tt_tensor out;
    if (!ok(tt_reduce(&out, op, a, d, keepdim))) {
        CHECK(descr, 0);
        return;
    }
    int nd = a->ndim;
    int64_t oshape[TT_MAX_DIMS], idx[TT_MAX_DIMS] = {0};
    int ond = 0;
    for (int i = 0; i < nd; i++) {
        if (d < 0 || i == d) {
            if (keepdim) oshape[ond++] = 1;
        } else {
            oshape[ond++] = a->shape[i];
        }
    }
    int64_t R = d < 0 ? tt_numel(a) : a->shape[d];
    int64_t n = numel_of(ond, oshape);
    double *ref = malloc((size_t)(n ? n : 1) * sizeof *ref);
    double *line = malloc((size_t)(R ? R : 1) * sizeof *line);
    /* walk the input shape with the reduced dim(s) pinned, one line per output */
    int64_t ishape[TT_MAX_DIMS];
    memcpy(ishape, a->shape, sizeof ishape);
    for (int64_t o = 0; o < n; o++) {
        if (d < 0) {
            int64_t j[TT_MAX_DIMS] = {0};
            for (int64_t r = 0; r < R; r++) {
                line[r] = el(a, j);
                next_idx(nd, ishape, j);
            }
        } else {
            for (int64_t r = 0; r < R; r++) {
                idx[d] = r;
                line[r] = el(a, idx);
            }
            idx[d] = 0;
            /* advance idx over every dim but d */
            for (int i = nd - 1; i >= 0; i--) {
                if (i == d) continue;
                if (++idx[i] < a->shape[i]) break;
                idx[i] = 0;
            }
        }
        ref[o] = ref_reduce(op, line, R);
    }
    float *got = flat(&out);
    CHECK(descr, same_shape(&out, ond, oshape));
    check_close(descr, got, ref, n, 2e-6, 2e-6);
    free(got);
    free(ref);
    free(line);
    tt_tensor_release(&out);
}

static void test_reduce(void)
{
    char descr[128];
    for (int l = 0; l < L_COUNT; l++) {
        tt_tensor a = make(l, DIMS(4, 7, 130));
        for (int op = 0; op < TT_OP_COUNT; op++) {
            if (tt_op_kind((tt_op)op) != TT_OPK_REDUCE) continue;
            for (int d = -1; d < 3; d++) {
                for (int kd = 0; kd < 2; kd++) {
                    snprintf(descr, sizeof descr, "%s dim=%d keepdim=%d on %s",
                             tt_op_name((tt_op)op), d + 1, kd, LAYOUT[l]);
                    check_reduce(descr, (tt_op)op, &a, d, kd);
                }
            }
        }
        tt_tensor_release(&a);
    }
    /* int64 input: sum, max, min (int64 values) and argmax, argmin (int64
       indices) against the same reference; mean, std, var want float32 */
    static const tt_op iops[] = { TT_OP_SUM, TT_OP_MAX, TT_OP_MIN, TT_OP_ARGMAX, TT_OP_ARGMIN };
    for (int l = 0; l < L_COUNT; l++) {
        tt_tensor a = make_i64(l, DIMS(4, 7, 130), -1000, 1000);
        for (size_t k = 0; k < sizeof iops / sizeof iops[0]; k++)
            for (int d = -1; d < 3; d++) {
                snprintf(descr, sizeof descr, "int64 %s dim=%d on %s", tt_op_name(iops[k]), d + 1, LAYOUT[l]);
                check_reduce(descr, iops[k], &a, d, d == 1);
                tt_tensor o;
                if (ok(tt_reduce(&o, iops[k], &a, d, 0))) {
                    snprintf(descr, sizeof descr, "int64 %s dim=%d gives int64", tt_op_name(iops[k]), d + 1);
                    CHECK(descr, o.dtype == TT_INT64);
                    tt_tensor_release(&o);
                }
            }
        tt_tensor o;
        check_err("int64 mean is an error", tt_reduce(&o, TT_OP_MEAN, &a, 0, 0), TT_EARG, "mean", "int64", "x:float()");
        tt_tensor_release(&a);
    }
    /* large: threads and long lines */
    tt_tensor big = make(L_TRANS, DIMS(300, 400));
    check_reduce("sum dim 1 of transposed [300,400]", TT_OP_SUM, &big, 0, 0);
    check_reduce("var dim 2 of transposed [300,400]", TT_OP_VAR, &big, 1, 0);
    check_reduce("mean of everything, transposed", TT_OP_MEAN, &big, -1, 0);
    tt_tensor_release(&big);

    /* precision: double accumulation and two-pass variance */
    tt_tensor c;
    int64_t n = 100000;
    ok(tt_full(&c, TT_FLOAT32, 1, &n, 1.0));
    float *p = tt_data_f32(&c);
    for (int64_t i = 0; i < n; i++) p[i] = 10000.0f + (i % 2 ? 0.5f : -0.5f);
    tt_tensor s, v;
    ok(tt_reduce(&s, TT_OP_SUM, &c, 0, 0));
    ok(tt_reduce(&v, TT_OP_VAR, &c, 0, 0));
    CHECK("sum of 1e5 values near 1e4 is exact", tt_data_f32(&s)[0] == 1.0e9f);
    double vref = 0.25 * (double)n / (double)(n - 1);
    CHECK("two-pass variance", fabs((double)tt_data_f32(&v)[0] - vref) < 1e-6);
    CHECK("full reduction is 0-d", s.ndim == 0);
    tt_tensor_release(&s);
    tt_tensor_release(&v);
    tt_tensor_release(&c);

    /* ties and NaN */
    float tv[] = { 1, 3, 3, 2, -1, -1, NAN, 5 };
    tt_tensor t = from(tv, DIMS(2, 4)), vals, idxs;
    ok(tt_max_dim(&vals, &idxs, &t, 1, 0, 0));
    float *gv = flat(&vals), *gi = flat(&idxs);
    double rv[] = { 3, DNAN }, ri[] = { 2, 3 };
    check_close("max values (first of ties; NaN wins)", gv, rv, 2, 0, 0);
    check_close("max indices are 1-based, first of ties", gi, ri, 2, 0, 0);
    free(gv);
    free(gi);
    tt_tensor_release(&vals);
    tt_tensor_release(&idxs);
    ok(tt_max_dim(&vals, &idxs, &t, 0, 1, 1));
    gv = flat(&vals);
    gi = flat(&idxs);
    double mv[] = { -1, -1, DNAN, 2 }, mi[] = { 2, 2, 2, 1 };
    check_close("min over dim 1 values", gv, mv, 4, 0, 0);
    check_close("min over dim 1 indices", gi, mi, 4, 0, 0);
    CHECK("min keepdim shape", vals.ndim == 2 && vals.shape[0] == 1 && vals.shape[1] == 4 &&
                               idxs.shape[0] == 1 && idxs.dtype == TT_INT64);
    free(gv);
    free(gi);
    tt_tensor_release(&vals);
    tt_tensor_release(&idxs);
    tt_tensor_release(&t);

    /* zero-size */
    tt_tensor e;
    ok(tt_zeros(&e, TT_FLOAT32, DIMS(3, 0)));
    ok(tt_reduce(&s, TT_OP_SUM, &e, 1, 0));
    gv = flat(&s);
    double zr[3] = { 0, 0, 0 }, nr[3] = { DNAN, DNAN, DNAN };
    CHECK("sum over an empty dim: shape [3]", s.ndim == 1 && s.shape[0] == 3);
    check_close("sum over an empty dim is 0", gv, zr, 3, 0, 0);
    free(gv);
    tt_tensor_release(&s);
    ok(tt_reduce(&s, TT_OP_MEAN, &e, 1, 0));
    gv = flat(&s);
    check_close("mean over an empty dim is NaN", gv, nr, 3, 0, 0);
    free(gv);
    tt_tensor_release(&s);
    ok(tt_reduce(&s, TT_OP_SUM, &e, 0, 0));
    CHECK("sum over dim 1 of [3,0] is [0]", s.ndim == 1 && s.shape[0] == 0);
    tt_tensor_release(&s);
    ok(tt_reduce(&s, TT_OP_SUM, &e, -1, 0));
    CHECK("sum of an empty tensor is 0", s.ndim == 0 && tt_data_f32(&s)[0] == 0.0f);
    tt_tensor_release(&s);
    check_err("max over an empty dim", tt_reduce(&s, TT_OP_MAX, &e, 1, 0), TT_EARG, "max", "[3,0]", "empty");
    CHECK("failed op leaves out empty", s.storage == NULL);
    check_err("argmax of an empty tensor", tt_reduce(&s, TT_OP_ARGMAX, &e, -1, 0), TT_EARG, "argmax", "[3,0]", NULL);
    check_err("max_dim over an empty dim", tt_max_dim(&vals, &idxs, &e, 1, 0, 0), TT_EARG, "max", "[3,0]", NULL);
    tt_tensor_release(&e);
}

/* ===== Softmax ===== */

static void check_softmax(const char *descr, const tt_tensor *a, int d)
{
    tt_tensor out;
    if (!ok(tt_softmax(&out, a, d))) {
        CHECK(descr, 0);
        return;
    }
    int nd = a->ndim;
    int64_t n = tt_numel(a), R = a->shape[d], idx[TT_MAX_DIMS] = {0};
    double *ref = malloc((size_t)(n ? n : 1) * sizeof *ref);
    for (int64_t i = 0; i < n; i++) {
        int64_t j[TT_MAX_DIMS];
        memcpy(j, idx, sizeof j);
        double m = -DINF, s = 0;
        for (int64_t r = 0; r < R; r++) {
            j[d] = r;
            double x = el(a, j);
            if (x > m || isnan(x)) m = x;
        }
        for (int64_t r = 0; r < R; r++) {
            j[d] = r;
            s += exp(el(a, j) - m);
        }
        ref[i] = m == -DINF ? DNAN : exp(el(a, idx) - m) / s;
        next_idx(nd, a->shape, idx);
    }
    float *got = flat(&out);
    CHECK(descr, same_shape(&out, nd, a->shape) && tt_is_contiguous(&out));
    check_close(descr, got, ref, n, 1e-5, 1e-7);
    free(ref);
    free(got);
    tt_tensor_release(&out);
}

static void test_softmax(void)
{
    char descr[96];
    for (int l = 0; l < L_COUNT; l++) {
        tt_tensor a = make(l, DIMS(3, 5, 67));
        for (int d = 0; d < 3; d++) {
            snprintf(descr, sizeof descr, "softmax dim=%d on %s [3,5,67]", d + 1, LAYOUT[l]);
            check_softmax(descr, &a, d);
        }
        tt_tensor_release(&a);
    }
    tt_tensor big = make(L_CONTIG, DIMS(5000, 3));
    check_softmax("softmax over a 5000-long non-last dim", &big, 0);
    tt_tensor_release(&big);
    big = make(L_NARROW, DIMS(130, 1000));
    check_softmax("softmax dim 2 of narrowed [130,1000]", &big, 1);
    check_softmax("softmax dim 1 of narrowed [130,1000]", &big, 0);
    tt_tensor_release(&big);

    /* -inf entries, an all -inf row, huge values */
    float v[] = { 0, -INFINITY, 1, -INFINITY,
                  -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                  1e30f, -1e30f, 1e30f, 0,
                  -1e30f, -1e30f, -1e30f, -1e30f };
    tt_tensor s = from(v, DIMS(4, 4)), out;
    ok(tt_softmax(&out, &s, 1));
    double e1 = 1.0 / (1.0 + exp(1.0));
    double ref[16] = { e1, 0, 1 - e1, 0, DNAN, DNAN, DNAN, DNAN, 0.5, 0, 0.5, 0, 0.25, 0.25, 0.25, 0.25 };
    float *got = flat(&out);
    check_close("softmax: -inf entries, all -inf row (NaN), 1e30 without overflow", got, ref, 16, 1e-6, 1e-7);
    free(got);
    tt_tensor_release(&out);
    tt_tensor t;
    ok(tt_transpose(&t, &s, 0, 1));
    ok(tt_softmax(&out, &t, 0));             /* the same rows, reached through a column */
    got = flat(&out);
    double tref[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) tref[j * 4 + i] = ref[i * 4 + j];
    check_close("softmax over dim 1 of the transpose", got, tref, 16, 1e-6, 1e-7);
    free(got);
    tt_tensor_release(&out);
    tt_tensor_release(&t);
    tt_tensor_release(&s);

    tt_tensor e;
    ok(tt_zeros(&e, TT_FLOAT32, DIMS(0, 4)));
    CHECK("softmax of an empty tensor", ok(tt_softmax(&out, &e, 1)) && out.shape[0] == 0);
    tt_tensor_release(&out);
    tt_tensor_release(&e);
}

/* ===== Masking, tril/triu, causal_mask ===== */

static void test_masking(void)
{
    /* masked_fill with broadcasts on either side */
    static const struct { int na; int64_t sa[3]; int nm; int64_t sm[3]; } cases[] = {
        { 2, {3, 5}, 2, {1, 5} }, { 2, {3, 5}, 2, {3, 5} }, { 2, {1, 5}, 3, {2, 4, 1} }, { 3, {2, 3, 4}, 1, {4} },
    };
    char descr[96];
    for (size_t c = 0; c < 4; c++) {
        tt_tensor a = make((int)c % L_COUNT, cases[c].na, cases[c].sa);
        tt_tensor m = rnd_bool(cases[c].nm, cases[c].sm), out;
        if (!ok(tt_masked_fill(&out, &a, &m, -DINF))) continue;
        int nd = out.ndim;
        int64_t n = tt_numel(&out), idx[TT_MAX_DIMS] = {0};
        double *ref = malloc((size_t)n * sizeof *ref);
        for (int64_t i = 0; i < n; i++) {
            ref[i] = elb(&m, nd, idx) ? -DINF : elb(&a, nd, idx);
            next_idx(nd, out.shape, idx);
        }
        float *got = flat(&out);
        snprintf(descr, sizeof descr, "masked_fill case %zu", c);
        check_close(descr, got, ref, n, 0, 0);
        free(ref);
        free(got);
        tt_tensor_release(&out);
        tt_tensor_release(&a);
        tt_tensor_release(&m);
    }
    tt_tensor bm = rnd_bool(DIMS(3, 4)), mm = rnd_bool(DIMS(4)), out;
    ok(tt_masked_fill(&out, &bm, &mm, 1.0));
    int good = out.dtype == TT_BOOL;
    int64_t idx[2] = {0, 0};
    for (int i = 0; i < 12; i++) {
        good &= tt_data_bool(&out)[i] == (el(&mm, idx + 1) ? 1 : el(&bm, idx));
        next_idx(2, bm.shape, idx);
    }
    CHECK("masked_fill on a bool tensor", good);
    tt_tensor_release(&out);
    tt_tensor_release(&bm);
    tt_tensor_release(&mm);

    /* tril/triu at several k, batched, on a transposed input and on bool */
    tt_tensor a = make(L_TRANS, DIMS(2, 5, 7));
    int64_t ks[] = { 0, 1, -1, 3, -6, 100, -100 };
    for (size_t ki = 0; ki < 7; ki++) {
        for (int up = 0; up < 2; up++) {
            int64_t k = ks[ki];
            ok(up ? tt_triu(&out, &a, k) : tt_tril(&out, &a, k));
            double ref[70];
            int64_t j3[3] = {0, 0, 0};
            for (int i = 0; i < 70; i++) {
                int64_t r = j3[1], c = j3[2];
                int keep = up ? c - r >= k : c - r <= k;
                ref[i] = keep ? el(&a, j3) : 0.0;
                next_idx(3, a.shape, j3);
            }
            float *got = flat(&out);
            snprintf(descr, sizeof descr, "%s k=%lld", up ? "triu" : "tril", (long long)k);
            CHECK(descr, same_shape(&out, 3, a.shape));
            check_close(descr, got, ref, 70, 0, 0);
            free(got);
            tt_tensor_release(&out);
        }
    }
    tt_tensor_release(&a);
    tt_tensor ones;
    ok(tt_ones(&ones, TT_BOOL, DIMS(3, 3)));
    ok(tt_tril(&out, &ones, 0));
    uint8_t want[9] = { 1, 0, 0, 1, 1, 0, 1, 1, 1 };
    CHECK("tril of bool ones", out.dtype == TT_BOOL && memcmp(tt_data_bool(&out), want, 9) == 0);
    tt_tensor_release(&out);
    tt_tensor_release(&ones);

    /* causal masks: upper-left and lower-right, square and not */
    int64_t sizes[][2] = { {4, 4}, {2, 5}, {5, 2}, {1, 6}, {0, 3}, {3, 0}, {9, 1}, {1, 9}, {7, 3}, {0, 0} };
    for (int s = 0; s < 10; s++) {
        for (int lr = 0; lr < 2; lr++) {
            int64_t nq = sizes[s][0], nk = sizes[s][1];
            if (!ok(tt_causal_mask(&out, nq, nk, lr))) continue;
            int g = out.dtype == TT_BOOL && out.ndim == 2 && out.shape[0] == nq && out.shape[1] == nk;
            for (int64_t i = 0; i < nq && g; i++)
                for (int64_t j = 0; j < nk; j++)
                    g &= tt_data_bool(&out)[i * nk + j] == (j <= i + (lr ? nk - nq : 0));
            snprintf(descr, sizeof descr, "causal_mask %lld x %lld %s", (long long)nq, (long long)nk,
                     lr ? "lower_right" : "upper_left");
            CHECK(descr, g);
            tt_tensor_release(&out);
        }
    }
    ok(tt_causal_mask(&out, 2, 4, 1));
    uint8_t lr24[8] = { 1, 1, 1, 0, 1, 1, 1, 1 };
    CHECK("lower-right 2x4: the queries are the last two positions", memcmp(tt_data_bool(&out), lr24, 8) == 0);
    tt_tensor_release(&out);
    check_err("causal_mask negative", tt_causal_mask(&out, -1, 3, 1), TT_EARG, "causal_mask", "-1", NULL);

    /* A tall mask (2^24 queries, one key) is the case a loop per row made
       slow; its cost is measured in make bench, never timed here. Lower-right,
       the one key is visible to the last query only. */
    ok(tt_causal_mask(&out, (int64_t)1 << 24, 1, 1));
    const uint8_t *m = tt_data_bool(&out);
    int64_t seen = 0;
    for (int64_t i = 0; i < (int64_t)1 << 24; i++) seen += m[i];
    CHECK("causal_mask(2^24, 1) lower-right: only the last query sees the key", seen == 1 && m[((int64_t)1 << 24) - 1] == 1);
    tt_tensor_release(&out);
}

/* ===== repeat_interleave, cat, stack ===== */

static void test_repeat(void)
{
    char descr[96];
    for (int l = 0; l < L_COUNT; l++) {
        tt_tensor a = make(l, DIMS(3, 4, 5));
        for (int d = 0; d < 3; d++) {
            for (int64_t r = 0; r < 4; r++) {
                tt_tensor out;
                if (!ok(tt_repeat_interleave(&out, &a, r, d))) continue;
                int64_t n = tt_numel(&out), idx[3] = {0, 0, 0};
                double *ref = malloc((size_t)(n ? n : 1) * sizeof *ref);
                for (int64_t i = 0; i < n; i++) {
                    int64_t j[3] = { idx[0], idx[1], idx[2] };
                    j[d] /= r;
                    ref[i] = el(&a, j);
                    next_idx(3, out.shape, idx);
                }
                float *got = flat(&out);
                snprintf(descr, sizeof descr, "repeat_interleave r=%lld dim=%d %s", (long long)r, d + 1, LAYOUT[l]);
                CHECK(descr, out.shape[d] == a.shape[d] * r);
                check_close(descr, got, ref, n, 0, 0);
                free(ref);
                free(got);
                tt_tensor_release(&out);
            }
        }
        tt_tensor_release(&a);
    }
    /* 8-dim input: no room for the helper dim */
    int64_t s8[8] = { 1, 2, 1, 2, 1, 2, 1, 3 };
    tt_tensor a8 = rnd(8, s8), out;
    ok(tt_repeat_interleave(&out, &a8, 2, 3));
    int64_t n = tt_numel(&out), idx[8] = {0};
    double *ref = malloc((size_t)n * sizeof *ref);
    for (int64_t i = 0; i < n; i++) {
        int64_t j[8];
        memcpy(j, idx, sizeof j);
        j[3] /= 2;
        ref[i] = el(&a8, j);
        next_idx(8, out.shape, idx);
    }
    float *got = flat(&out);
    check_close("repeat_interleave on 8 dims", got, ref, n, 0, 0);
    free(ref);
    free(got);
    tt_tensor_release(&out);
    tt_tensor_release(&a8);
}

/* The issue-30 ops through the C API on every layout, against float64
   loops: where (and its numbers), any/all, norm, flatten, unbind, t, and
   einops' reduce and repeat. */
static void test_pytorch_names(void)
{
    char descr[96];
    for (int l = 0; l < L_COUNT; l++) {
        tt_tensor a = make(l, DIMS(3, 7, 5)), b = make((l + 1) % L_COUNT, DIMS(7, 5)), c, out;
        int64_t n = tt_numel(&a), idx[3] = {0, 0, 0};
        ok(tt_binary_scalar(&c, TT_OP_GT, &a, 0.25, 0));
        double *ref = malloc((size_t)n * sizeof *ref);
        /* where(c, a, b) and where(c, a, -1.5) */
        for (int which = 0; which < 2; which++) {
            if (!ok(tt_where(&out, &c, &a, tt_num_i(0), which ? NULL : &b, tt_num_f(-1.5)))) continue;
            memset(idx, 0, sizeof idx);
            for (int64_t i = 0; i < n; i++) {
                ref[i] = el(&c, idx) ? el(&a, idx) : which ? -1.5 : elb(&b, 3, idx);
                next_idx(3, a.shape, idx);
            }
            float *got = flat(&out);
            snprintf(descr, sizeof descr, "where%s %s", which ? " with a number" : "", LAYOUT[l]);
            CHECK(descr, same_shape(&out, DIMS(3, 7, 5)));
            check_close(descr, got, ref, n, 0, 0);
            free(got);
            tt_tensor_release(&out);
        }
        /* any and all over dim 2; norm p = 2, 3, inf over dim 3 */
        tt_tensor any, all;
        if (ok(tt_any(&any, &c, 1, 0)) && ok(tt_all(&all, &c, 1, 0))) {
            int good = same_shape(&any, DIMS(3, 5)) && same_shape(&all, DIMS(3, 5));
            for (int64_t i = 0; good && i < 3; i++)
                for (int64_t k = 0; k < 5; k++) {
                    int sa = 0, sl = 1;
                    for (int64_t j = 0; j < 7; j++) {
                        int64_t ix[3] = {i, j, k};
                        sa |= el(&c, ix) != 0;
                        sl &= el(&c, ix) != 0;
                    }
                    good &= el(&any, (int64_t[]){i, k}) == sa && el(&all, (int64_t[]){i, k}) == sl;
                }
            snprintf(descr, sizeof descr, "any, all over dim 2 %s", LAYOUT[l]);
            CHECK(descr, good);
            tt_tensor_release(&any);
            tt_tensor_release(&all);
        }
        const double ps[] = {2, 3, INFINITY};
        for (int pi = 0; pi < 3; pi++) {
            if (!ok(tt_norm(&out, &a, ps[pi], 2, 0))) continue;
            double r[21];
            for (int64_t i = 0; i < 3; i++)
                for (int64_t j = 0; j < 7; j++) {
                    double acc = 0;
                    for (int64_t k = 0; k < 5; k++) {
                        double v = fabs(el(&a, (int64_t[]){i, j, k}));
                        acc = isinf(ps[pi]) ? (v > acc ? v : acc) : acc + pow(v, ps[pi]);
                    }
                    r[i * 7 + j] = isinf(ps[pi]) ? acc : pow(acc, 1 / ps[pi]);
                }
            float *got = flat(&out);
            snprintf(descr, sizeof descr, "norm p=%g over dim 3 %s", ps[pi], LAYOUT[l]);
            check_close(descr, got, r, 21, 2e-6, 1e-6);
            free(got);
            tt_tensor_release(&out);
        }
        /* flatten(2, 3), t of a [7,5], unbind along dim 2: the same values */
        tt_tensor pieces[7];
        int count = 0;
        if (ok(tt_flatten(&out, &a, 1, 2))) {
            float *got = flat(&out), *want = flat(&a);
            snprintf(descr, sizeof descr, "flatten %s", LAYOUT[l]);
            CHECK(descr, same_shape(&out, DIMS(3, 35)) && memcmp(got, want, (size_t)n * sizeof *got) == 0);
            free(got);
            free(want);
            tt_tensor_release(&out);
        }
        if (ok(tt_t(&out, &b))) {
            int good = same_shape(&out, DIMS(5, 7));
            for (int64_t i = 0; good && i < 7; i++)
                for (int64_t j = 0; j < 5; j++) good &= el(&out, (int64_t[]){j, i}) == el(&b, (int64_t[]){i, j});
            snprintf(descr, sizeof descr, "t %s", LAYOUT[l]);
            CHECK(descr, good);
            tt_tensor_release(&out);
        }
        if (ok(tt_unbind(pieces, 7, &count, &a, 1))) {
            int good = count == 7;
            for (int p = 0; p < count; p++) {
                good &= same_shape(&pieces[p], DIMS(3, 5)) && pieces[p].storage == a.storage;
                for (int64_t i = 0; i < 3; i++)
                    for (int64_t k = 0; k < 5; k++) good &= el(&pieces[p], (int64_t[]){i, k}) == el(&a, (int64_t[]){i, p, k});
                tt_tensor_release(&pieces[p]);
            }
            snprintf(descr, sizeof descr, "unbind %s", LAYOUT[l]);
            CHECK(descr, good);
        }
        /* reduce "a (g h) k -> k a" (g = 7), mean; repeat "a n k -> a k (n r)" (r = 2) */
        const char *gname[] = {tt_intern("g")}, *rname[] = {tt_intern("r")};
        if (ok(tt_reduce_pattern(&out, &a, "a (g h) k -> k a", "mean", 1, gname, (int64_t[]){7}))) {
            double r[15];
            for (int64_t k = 0; k < 5; k++)
                for (int64_t i = 0; i < 3; i++) {
                    double acc = 0;
                    for (int64_t j = 0; j < 7; j++) acc += el(&a, (int64_t[]){i, j, k});
                    r[k * 3 + i] = acc / 7;
                }
            float *got = flat(&out);
            snprintf(descr, sizeof descr, "einops reduce mean %s", LAYOUT[l]);
            CHECK(descr, same_shape(&out, DIMS(5, 3)));
            check_close(descr, got, r, 15, 1e-6, 1e-7);
            free(got);
            tt_tensor_release(&out);
        }
        if (ok(tt_repeat(&out, &a, "a n k -> a k (n r)", 1, rname, (int64_t[]){2}))) {
            int good = same_shape(&out, DIMS(3, 5, 14));
            for (int64_t i = 0; good && i < 3; i++)
                for (int64_t k = 0; k < 5; k++)
                    for (int64_t m = 0; m < 14; m++)
                        good &= el(&out, (int64_t[]){i, k, m}) == el(&a, (int64_t[]){i, m / 2, k});
            snprintf(descr, sizeof descr, "einops repeat %s", LAYOUT[l]);
            CHECK(descr, good);
            tt_tensor_release(&out);
        }
        free(ref);
        tt_tensor_release(&a);
        tt_tensor_release(&b);
        tt_tensor_release(&c);
    }
    tt_tensor x = rnd(DIMS(2, 3)), out;
    CHECK("where: a float condition is TT_EARG", tt_where(&out, &x, &x, tt_num_i(0), &x, tt_num_i(0)) == TT_EARG
          && strstr(tt_errmsg(), "condition must be bool") && out.storage == NULL);
    CHECK("norm: p = 0 is TT_EARG", tt_norm(&out, &x, 0, -1, 0) == TT_EARG && out.storage == NULL);
    CHECK("flatten: end before start is TT_EARG", tt_flatten(&out, &x, 1, 0) == TT_EARG && out.storage == NULL);
    tt_tensor x3 = rnd(DIMS(2, 3, 4));
    CHECK("t of 3 dims is TT_ESHAPE", tt_t(&out, &x3) == TT_ESHAPE && strstr(tt_errmsg(), "x:mT()"));
    CHECK("reduce: an unknown reduction", tt_reduce_pattern(&out, &x, "a b -> a", "prod", 0, NULL, NULL) == TT_EARG
          && strstr(tt_errmsg(), "unknown reduction 'prod'"));
    CHECK("repeat: a new axis without its length", tt_repeat(&out, &x, "a b -> a b c", 0, NULL, NULL) == TT_EARG
          && strstr(tt_errmsg(), "axis 'c' is new"));
    tt_tensor_release(&x);
    tt_tensor_release(&x3);
}

/* ===== Rotary embedding ===== */

/* rope of x [3,5,10] (five pairs, an odd count) on every layout, both pair
   layouts, with int64 positions far from 0..N-1 ([5]: -3, 0, 7, 1000,
   123456), float32 ones broadcast from [3,1] (fractions), and a [3,5]
   table, against the rotation in float64; then the errors. */
static double ref_rope(const tt_tensor *x, const int64_t *idx, double pos, int interleaved)
{
    const int64_t d = x->shape[2], h = d / 2, k = idx[2];
    const int64_t i = interleaved ? k / 2 : k % h;
    const int second = interleaved ? (int)(k % 2) : k >= h;
    int64_t ja[3] = {idx[0], idx[1], interleaved ? 2 * i : i}, jb[3] = {idx[0], idx[1], interleaved ? 2 * i + 1 : i + h};
    const double a = el(x, ja), b = el(x, jb), ang = pos * pow(10000.0, -2.0 * (double)i / (double)d);
    return second ? b * cos(ang) + a * sin(ang) : a * cos(ang) - b * sin(ang);
}

static void test_rope(void)
{
    char descr[128];
    const int64_t ipos[5] = {-3, 0, 7, 1000, 123456};
    const float fpos[3] = {0.5f, -2.25f, 31.75f};
    tt_tensor pi, pf, pt;
    ok(tt_from_buffer(&pi, TT_INT64, DIMS(5), ipos));
    ok(tt_from_buffer(&pf, TT_FLOAT32, DIMS(3, 1), fpos));
    pt = rnd(DIMS(3, 5));
    for (int l = 0; l < L_COUNT; l++)
        for (int il = 0; il < 2; il++)
            for (int which = 0; which < 3; which++) {
                const tt_tensor *pos = which == 0 ? &pi : which == 1 ? &pf : &pt;
                tt_tensor x = make(l, DIMS(3, 5, 10)), out;
                snprintf(descr, sizeof descr, "rope %s, %s positions %s on %s", il ? "interleaved" : "half-split",
                         which == 0 ? "int64 [5]" : which == 1 ? "float32 [3,1]" : "float32 [3,5]", "x [3,5,10]", LAYOUT[l]);
                if (!ok(tt_rope(&out, &x, pos, 10000, il))) { CHECK(descr, 0); tt_tensor_release(&x); continue; }
                int64_t n = tt_numel(&x), idx[3] = {0, 0, 0};
                double *ref = malloc((size_t)n * sizeof *ref);
                for (int64_t e = 0; e < n; e++) {
                    double p = which == 0 ? (double)ipos[idx[1]] : which == 1 ? (double)fpos[idx[0]] : el(pos, idx);
                    ref[e] = ref_rope(&x, idx, p, il);
                    next_idx(3, x.shape, idx);
                }
                float *got = flat(&out);
                CHECK(descr, same_shape(&out, DIMS(3, 5, 10)) && out.dtype == TT_FLOAT32);
                check_close(descr, got, ref, n, 1e-5, 1e-6);
                free(ref);
                free(got);
                tt_tensor_release(&out);
                tt_tensor_release(&x);
            }
    /* another base: a rotation of pair 0 is the position itself, pair 1 of position / base^(2/4) */
    {
        tt_tensor x, out;
        const float xv[4] = {1, 0, 1, 0};
        const int64_t p1[1] = {3};
        tt_tensor p;
        ok(tt_from_buffer(&x, TT_FLOAT32, DIMS(1, 4), xv));
        ok(tt_from_buffer(&p, TT_INT64, DIMS(1), p1));
        if (ok(tt_rope(&out, &x, &p, 100, 1))) {
            const double ref[4] = {cos(3.0), sin(3.0), cos(0.3), sin(0.3)};
            float *got = flat(&out);
            check_close("rope base=100, interleaved: angles 3 and 3/10", got, ref, 4, 1e-6, 1e-7);
            free(got);
            tt_tensor_release(&out);
        }
        tt_tensor_release(&p);
        tt_tensor_release(&x);
    }
    /* errors */
    tt_tensor odd = rnd(DIMS(3, 5, 7)), x = rnd(DIMS(3, 5, 10)), out, bad = rnd(DIMS(4)), b;
    ok(tt_binary_scalar(&b, TT_OP_GT, &bad, 0.5, 0));
    check_err("rope: odd last dim", tt_rope(&out, &odd, &pi, 10000, 0), TT_ESHAPE, "rope", "[3,5,7]", "must be even");
    check_err("rope: positions that do not fit", tt_rope(&out, &x, &bad, 10000, 0), TT_ESHAPE, "positions [4]",
              "x [3,5,10]", "broadcast to [3,5]");
    check_err("rope: positions with too many dims", tt_rope(&out, &x, &x, 10000, 0), TT_ESHAPE, "positions [3,5,10]", NULL, NULL);
    check_err("rope: bool positions", tt_rope(&out, &x, &b, 10000, 0), TT_EARG, "bool", "int64 or float32", NULL);
    check_err("rope: base 0", tt_rope(&out, &x, &pi, 0, 0), TT_EARG, "base", "positive", NULL);
    check_err("rope: int64 x", tt_rope(&out, &pi, &pi, 10000, 0), TT_EARG,
              "x must be a float tensor (float32, bfloat16, float16), got int64", NULL, NULL);
    tt_tensor *rel[] = {&odd, &x, &bad, &b, &pi, &pf, &pt};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) tt_tensor_release(rel[i]);
}

static void test_cat_stack(void)
{
    tt_tensor a = make(L_TRANS, DIMS(3, 4, 5)), b = make(L_NARROW, DIMS(3, 2, 5)),
              c = make(L_EXPAND, DIMS(3, 1, 5)), e, out;
    ok(tt_zeros(&e, TT_FLOAT32, DIMS(3, 0, 5)));
    const tt_tensor *list[] = { &a, &b, &e, &c };
    ok(tt_cat(&out, list, 4, 1));
    CHECK("cat shape", out.ndim == 3 && out.shape[0] == 3 && out.shape[1] == 7 && out.shape[2] == 5);
    int64_t n = tt_numel(&out), idx[3] = {0, 0, 0};
    double *ref = malloc((size_t)n * sizeof *ref);
    for (int64_t i = 0; i < n; i++) {
        int64_t j[3] = { idx[0], idx[1], idx[2] };
        const tt_tensor *src = &a;
        if (j[1] >= 4 && j[1] < 6) { src = &b; j[1] -= 4; }
        else if (j[1] >= 6) { src = &c; j[1] -= 6; }
        ref[i] = el(src, j);
        next_idx(3, out.shape, idx);
    }
    float *got = flat(&out);
    check_close("cat along dim 2 of transposed/narrowed/empty/expanded", got, ref, n, 0, 0);
    free(ref);
    free(got);
    tt_tensor_release(&out);

    const tt_tensor *l2[] = { &a, &a };
    ok(tt_cat(&out, l2, 2, 0));
    CHECK("cat along dim 1", out.shape[0] == 6 && tt_data_f32(&out)[0] == (float)el(&a, (int64_t[]){0, 0, 0}) &&
                             tt_data_f32(&out)[60] == (float)el(&a, (int64_t[]){0, 0, 0}) &&
                             tt_data_f32(&out)[119] == (float)el(&a, (int64_t[]){2, 3, 4}));
    tt_tensor_release(&out);

    for (int d = 0; d <= 3; d++) {
        tt_tensor x = make(L_PERM, DIMS(3, 4, 5)), y = make(L_CONTIG, DIMS(3, 4, 5));
        const tt_tensor *ls[] = { &x, &y, &x };
        if (!ok(tt_stack(&out, ls, 3, d))) continue;
        n = tt_numel(&out);
        int64_t id4[4] = {0, 0, 0, 0};
        ref = malloc((size_t)n * sizeof *ref);
        for (int64_t i = 0; i < n; i++) {
            int64_t j[3];
            for (int k = 0, m = 0; k < 4; k++)
                if (k != d) j[m++] = id4[k];
            ref[i] = el(id4[d] == 1 ? &y : &x, j);
            next_idx(4, out.shape, id4);
        }
        got = flat(&out);
        char descr[64];
        snprintf(descr, sizeof descr, "stack at dim %d", d + 1);
        CHECK(descr, out.ndim == 4 && out.shape[d] == 3);
        check_close(descr, got, ref, n, 0, 0);
        free(ref);
        free(got);
        tt_tensor_release(&out);
        tt_tensor_release(&x);
        tt_tensor_release(&y);
    }

    /* errors */
    tt_tensor f = make(L_CONTIG, DIMS(3, 4, 6)), bb = rnd_bool(DIMS(3, 4, 5));
    const tt_tensor *bad1[] = { &a, &f };
    check_err("cat shape mismatch", tt_cat(&out, bad1, 2, 1), TT_ESHAPE, "cat", "[3,4,5]", "[3,4,6]");
    check_err("stack shape mismatch", tt_stack(&out, bad1, 2, 0), TT_ESHAPE, "stack", "[3,4,5]", "[3,4,6]");
    const tt_tensor *bad2[] = { &a, &bb };
    check_err("cat dtype mismatch", tt_cat(&out, bad2, 2, 0), TT_EARG, "cat", "bool", NULL);
    check_err("cat dim out of range", tt_cat(&out, l2, 2, 3), TT_EARG, "cat", "dim 4", "[3,4,5]");
    check_err("cat of nothing", tt_cat(&out, l2, 0, 0), TT_EARG, "cat", NULL, NULL);
    tt_tensor_release(&f);
    tt_tensor_release(&bb);
    tt_tensor_release(&a);
    tt_tensor_release(&b);
    tt_tensor_release(&c);
    tt_tensor_release(&e);
}

/* ===== matmul ===== */

/* PyTorch's rules, spelled out with indices. */
static void check_matmul(const char *descr, const tt_tensor *a, const tt_tensor *b, double rtol)
{
    tt_tensor out;
    if (!ok(tt_matmul(&out, a, b))) {
        CHECK(descr, 0);
        return;
    }
    int an = a->ndim, bn = b->ndim;
    int64_t M = an >= 2 ? a->shape[an - 2] : 1, K = a->shape[an - 1], N = bn >= 2 ? b->shape[bn - 1] : 1;
    int abn = an > 2 ? an - 2 : 0, bbn = bn > 2 ? bn - 2 : 0, nb = abn > bbn ? abn : bbn;
    int64_t bshape[TT_MAX_DIMS], shape[TT_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - abn), ib = i - (nb - bbn);
        int64_t x = ia >= 0 ? a->shape[ia] : 1, y = ib >= 0 ? b->shape[ib] : 1;
        bshape[i] = shape[nd++] = x == 1 ? y : x;
    }
    if (an >= 2) shape[nd++] = M;
    if (bn >= 2) shape[nd++] = N;
    int64_t nbatch = numel_of(nb, bshape), n = nbatch * M * N;
    double *ref = malloc((size_t)(n ? n : 1) * sizeof *ref);
    int64_t bi[TT_MAX_DIMS] = {0};
    for (int64_t t = 0; t < nbatch; t++) {
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t p = 0; p < K; p++) {
                    int64_t ja[TT_MAX_DIMS], jb[TT_MAX_DIMS];
                    for (int q = 0; q < abn; q++) ja[q] = a->shape[q] == 1 ? 0 : bi[q + nb - abn];
                    for (int q = 0; q < bbn; q++) jb[q] = b->shape[q] == 1 ? 0 : bi[q + nb - bbn];
                    if (an >= 2) { ja[an - 2] = i; ja[an - 1] = p; } else ja[0] = p;
                    if (bn >= 2) { jb[bn - 2] = p; jb[bn - 1] = j; } else jb[0] = p;
                    s += el(a, ja) * el(b, jb);
                }
                ref[(t * M + i) * N + j] = s;
            }
        }
        next_idx(nb, bshape, bi);
    }
    float *got = flat(&out);
    CHECK(descr, same_shape(&out, nd, shape) && out.dtype == TT_FLOAT32);
    check_close(descr, got, ref, n, rtol, 1e-5 * sqrt((double)K + 1));
    free(ref);
    free(got);
    tt_tensor_release(&out);
}

static void test_matmul(void)
{
    char descr[128];
    int64_t sz[] = { 1, 7, 17, 65, 127 };
    for (int i = 0; i < 5; i++) {
        for (int j = 0; j < 5; j++) {
            int64_t M = sz[i], K = sz[j], N = sz[(i + j) % 5];
            for (int la = 0; la < 3; la++) {
                int lb = (la + i) % 3;
                tt_tensor a = make(la, DIMS(M, K)), b = make(lb, DIMS(K, N));
                snprintf(descr, sizeof descr, "matmul %lldx%lldx%lld %s @ %s", (long long)M, (long long)K,
                         (long long)N, LAYOUT[la], LAYOUT[lb]);
                check_matmul(descr, &a, &b, 1e-5);
                tt_tensor_release(&a);
                tt_tensor_release(&b);
            }
        }
    }
    /* q @ k:mT() reads k in place: no copy of k is ever allocated */
    tt_tensor q = rnd(DIMS(2, 3, 65, 64)), k = rnd(DIMS(2, 3, 65, 64)), kt, out;
    ok(tt_mT(&kt, &k));
    tt_memory_reset_peak();
    int64_t before = tt_memory_in_use();
    ok(tt_matmul(&out, &q, &kt));
    int64_t extra = tt_memory_peak() - before;
    CHECK("matmul with k:mT() allocates only its result", extra <= (int64_t)(2 * 3 * 65 * 65 * 4));
    tt_tensor_release(&out);
    check_matmul("batched q @ k:mT()", &q, &kt, 1e-5);
    tt_tensor_release(&kt);
    tt_tensor_release(&q);
    tt_tensor_release(&k);

    /* 1-D promotion */
    static const struct { int na; int64_t sa[4]; int nb; int64_t sb[4]; } shapes[] = {
        { 1, {7}, 1, {7} },                 /* dot -> 0-d */
        { 1, {7}, 2, {7, 5} },              /* -> [5] */
        { 2, {5, 7}, 1, {7} },              /* -> [5] */
        { 1, {7}, 3, {3, 7, 5} },           /* -> [3,5] */
        { 3, {3, 5, 7}, 1, {7} },           /* -> [3,5] */
        { 3, {4, 17, 9}, 2, {9, 6} },       /* folds into one GEMM */
        { 3, {5, 1, 7}, 2, {7, 3} },        /* folds with M = 1: the batch stride walks the rows */
        { 4, {2, 3, 4, 9}, 1, {9} },        /* folds, b 1-D */
        { 2, {17, 9}, 3, {4, 9, 6} },       /* a broadcast */
        { 4, {2, 1, 5, 7}, 3, {3, 7, 4} },  /* batch dims broadcast on both sides */
        { 4, {2, 3, 5, 7}, 4, {2, 3, 7, 4} },
        { 3, {3, 0, 7}, 2, {7, 4} },        /* M = 0 */
        { 3, {3, 5, 0}, 2, {0, 4} },        /* K = 0: zeros */
        { 3, {0, 5, 7}, 3, {1, 7, 4} },     /* empty batch */
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int l = 0; l < L_COUNT; l++) {
            tt_tensor a = make(l, shapes[s].na, shapes[s].sa);
            tt_tensor b = make((l + 1) % L_COUNT, shapes[s].nb, shapes[s].sb);
            snprintf(descr, sizeof descr, "matmul shapes %zu, %s @ %s", s, LAYOUT[l], LAYOUT[(l + 1) % L_COUNT]);
            check_matmul(descr, &a, &b, 1e-5);
            tt_tensor_release(&a);
            tt_tensor_release(&b);
        }
    }
    /* a big one through the blocked kernel with a permuted batch */
    tt_tensor a = make(L_PERM, DIMS(3, 130, 150)), b = make(L_TRANS, DIMS(150, 90));
    check_matmul("matmul [3,130,150] permuted @ [150,90] transposed", &a, &b, 1e-5);
    tt_tensor_release(&a);
    tt_tensor_release(&b);
    a = make(L_EXPAND, DIMS(4, 33, 20));
    b = make(L_EXPAND, DIMS(4, 20, 31));
    check_matmul("matmul of expanded batches", &a, &b, 1e-5);
    tt_tensor_release(&a);
    tt_tensor_release(&b);
}

/* ===== sdpa ===== */

/* The composed formula in double: scores = scale q k^T, masked (mask false
   or causal lower-right) to -inf, softmax (its max propagating NaN, as
   PyTorch's), @ v; a row with no visible key gives zeros, the one exception. out/w are [..., Hq, Nq, Dv] / [..., Hq, Nq, Nk]. */
static int64_t sdpa_ref(const tt_tensor *q, const tt_tensor *k, const tt_tensor *v, const tt_tensor *mask,
                        int causal, double scale, double *out, double *w)
{
    int nd = q->ndim, nbd = nd >= 3 ? nd - 3 : 0;
    int64_t Hq = nd >= 3 ? q->shape[nd - 3] : 1, Hkv = nd >= 3 ? k->shape[nd - 3] : 1;
    int64_t Nq = q->shape[nd - 2], Dh = q->shape[nd - 1], Nk = k->shape[nd - 2], Dv = v->shape[nd - 1];
    int64_t B = numel_of(nbd, q->shape), bi[TT_MAX_DIMS] = {0}, empty = 0;
    if (isnan(scale)) scale = Dh > 0 ? 1.0 / sqrt((double)Dh) : 1.0;   /* Dh = 0: uniform weights */
    double *sc = malloc((size_t)(Nk ? Nk : 1) * sizeof *sc);
    for (int64_t b = 0; b < B; b++) {
        for (int64_t h = 0; h < Hq; h++) {
            int64_t hk = h / (Hq / Hkv);
            for (int64_t i = 0; i < Nq; i++) {
                int64_t row = (b * Hq + h) * Nq + i;
                int64_t qi[TT_MAX_DIMS], ki[TT_MAX_DIMS], mi[TT_MAX_DIMS];
                memcpy(qi, bi, sizeof qi);
                memcpy(ki, bi, sizeof ki);
                memcpy(mi, bi, sizeof mi);
                if (nd >= 3) { qi[nd - 3] = h; ki[nd - 3] = hk; mi[nd - 3] = h; }
                double m = -DINF;
                int seen = 0;
                for (int64_t j = 0; j < Nk; j++) {
                    double s = 0;
                    for (int64_t d = 0; d < Dh; d++) {
                        qi[nd - 2] = i; qi[nd - 1] = d;
                        ki[nd - 2] = j; ki[nd - 1] = d;
                        s += el(q, qi) * el(k, ki);
                    }
                    s *= scale;
                    mi[nd - 2] = i;
                    mi[nd - 1] = j;
                    int vis = (!causal || j <= i + Nk - Nq) && (!mask || elb(mask, nd, mi) != 0);
                    sc[j] = vis ? s : -DINF;
                    seen |= vis;
                    if (sc[j] > m || isnan(sc[j])) m = isnan(m) ? m : sc[j];
                }
                double sum = 0;
                for (int64_t j = 0; j < Nk; j++) sum += !seen ? 0 : exp(sc[j] - m);
                if (!seen) empty++;
                for (int64_t j = 0; j < Nk; j++) {
                    double p = !seen ? 0 : exp(sc[j] - m) / sum;
                    if (w) w[row * Nk + j] = p;
                    sc[j] = p;
                }
                for (int64_t e = 0; e < Dv; e++) {
                    double s = 0;
                    for (int64_t j = 0; j < Nk; j++) {
                        ki[nd - 2] = j;
                        ki[nd - 1] = e;
                        s += sc[j] * el(v, ki);
                    }
                    out[row * Dv + e] = seen ? s : 0.0;   /* even when v has NaN */
                }
            }
        }
        next_idx(nbd, q->shape, bi);
    }
    free(sc);
    return empty;
}

static void check_sdpa(const char *descr, const tt_tensor *q, const tt_tensor *k, const tt_tensor *v,
                       const tt_tensor *mask, int causal, double scale)
{
    tt_tensor out, w;
    int64_t empty = -1;
    if (!ok(tt_sdpa(&out, &w, q, k, v, mask, causal, scale, &empty))) {
        CHECK(descr, 0);
        return;
    }
    int nd = q->ndim;
    int64_t Nk = k->shape[nd - 2], Dv = v->shape[nd - 1];
    int64_t rows = numel_of(nd - 1, q->shape);
    double *ro = malloc((size_t)(rows * Dv + 1) * sizeof *ro), *rw = malloc((size_t)(rows * Nk + 1) * sizeof *rw);
    int64_t rempty = sdpa_ref(q, k, v, mask, causal, scale, ro, rw);
    float *go = flat(&out), *gw = flat(&w);
    int64_t oshape[TT_MAX_DIMS], wshape[TT_MAX_DIMS];
    memcpy(oshape, q->shape, sizeof oshape);
    memcpy(wshape, q->shape, sizeof wshape);
    oshape[nd - 1] = Dv;
    wshape[nd - 1] = Nk;
    CHECK(descr, same_shape(&out, nd, oshape) && same_shape(&w, nd, wshape) && empty == rempty);
    if (empty != rempty) printf("  empty rows %lld, reference %lld\n", (long long)empty, (long long)rempty);
    check_close(descr, go, ro, rows * Dv, 1e-4, 1e-5);
    check_close(descr, gw, rw, rows * Nk, 1e-4, 1e-6);
    free(go);
    free(gw);
    free(ro);
    free(rw);
    tt_tensor_release(&out);
    tt_tensor_release(&w);
    /* and without weights: the same output */
    if (ok(tt_sdpa(&out, NULL, q, k, v, mask, causal, scale, NULL))) {
        ro = malloc((size_t)(rows * Dv + 1) * sizeof *ro);
        sdpa_ref(q, k, v, mask, causal, scale, ro, NULL);
        go = flat(&out);
        check_close(descr, go, ro, rows * Dv, 1e-4, 1e-5);
        free(go);
        free(ro);
        tt_tensor_release(&out);
    }
}

static void test_sdpa(void)
{
    /* the article's hand example, numbers from the article */
    float qv[] = { 1, 0, 0, 1, 1, 1 }, vv[] = { 1, 0, 0, 2, 1, 1 };
    tt_tensor Q = from(qv, DIMS(3, 2)), V = from(vv, DIMS(3, 2)), out, w, kt, scores, ws, o2;
    ok(tt_sdpa(&out, &w, &Q, &Q, &V, NULL, 0, DNAN, NULL));
    double w3[] = { 0.2483, 0.2483, 0.5035 }, o3[] = { 0.7517, 1.0000 };
    check_close("hand example: weights of query 3", tt_data_f32(&w) + 6, w3, 3, 0, 1e-4);
    check_close("hand example: output of query 3", tt_data_f32(&out) + 4, o3, 2, 0, 1e-4);
    tt_tensor_release(&out);
    tt_tensor_release(&w);
    ok(tt_mT(&kt, &Q));
    ok(tt_matmul(&o2, &Q, &kt));
    ok(tt_binary_scalar(&scores, TT_OP_DIV, &o2, sqrt(2.0), 0));
    tt_tensor_release(&o2);
    double s3[] = { 0.7071, 0.7071, 1.4142 };
    check_close("hand example, step by step: scores of query 3", tt_data_f32(&scores) + 6, s3, 3, 0, 1e-4);
    ok(tt_softmax(&ws, &scores, 1));
    check_close("hand example, step by step: weights of query 3", tt_data_f32(&ws) + 6, w3, 3, 0, 1e-4);
    ok(tt_matmul(&o2, &ws, &V));
    check_close("hand example, step by step: output of query 3", tt_data_f32(&o2) + 4, o3, 2, 0, 1e-4);
    tt_tensor_release(&o2);
    tt_tensor_release(&ws);
    tt_tensor_release(&scores);
    tt_tensor_release(&kt);
    tt_tensor_release(&Q);
    tt_tensor_release(&V);

    /* against the composed formula */
    static const struct { int64_t B, Hq, Hkv, Nq, Nk, Dh, Dv; } cfg[] = {
        { 2, 4, 4, 5, 5, 8, 8 },       /* MHA */
        { 2, 4, 2, 5, 7, 8, 6 },       /* GQA, Nq < Nk, Dv != Dh */
        { 1, 6, 1, 9, 4, 16, 16 },     /* MQA, Nq > Nk: early rows see nothing when causal */
        { 1, 2, 2, 1, 33, 64, 64 },    /* decoding: one query */
        { 3, 2, 1, 67, 67, 17, 17 },
    };
    char descr[128];
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        for (int causal = 0; causal < 2; causal++) {
            int l = (int)(c + (size_t)causal) % L_COUNT;
            tt_tensor q = make(l, DIMS(cfg[c].B, cfg[c].Hq, cfg[c].Nq, cfg[c].Dh));
            tt_tensor k = make((l + 1) % L_COUNT, DIMS(cfg[c].B, cfg[c].Hkv, cfg[c].Nk, cfg[c].Dh));
            tt_tensor v = make((l + 2) % L_COUNT, DIMS(cfg[c].B, cfg[c].Hkv, cfg[c].Nk, cfg[c].Dv));
            snprintf(descr, sizeof descr, "sdpa cfg %zu causal=%d q %s", c, causal, LAYOUT[l]);
            check_sdpa(descr, &q, &k, &v, NULL, causal, DNAN);
            /* masks of several broadcast shapes */
            tt_tensor m1 = rnd_bool(DIMS(cfg[c].Nk));
            tt_tensor m2 = rnd_bool(DIMS(cfg[c].Nq, cfg[c].Nk));
            tt_tensor m3 = rnd_bool(DIMS(cfg[c].B, 1, cfg[c].Nq, cfg[c].Nk));
            tt_tensor m4 = rnd_bool(DIMS(cfg[c].B, cfg[c].Hq, 1, cfg[c].Nk));
            const tt_tensor *ms[] = { &m1, &m2, &m3, &m4 };
            for (int mi = 0; mi < 4; mi++) {
                snprintf(descr, sizeof descr, "sdpa cfg %zu causal=%d mask %d", c, causal, mi + 1);
                check_sdpa(descr, &q, &k, &v, ms[mi], causal, mi == 1 ? 0.3 : DNAN);
            }
            for (int mi = 0; mi < 4; mi++) tt_tensor_release((tt_tensor *)ms[mi]);
            tt_tensor_release(&q);
            tt_tensor_release(&k);
            tt_tensor_release(&v);
        }
    }
    /* two batch dims whose strides cannot merge (q, k, v and the mask) */
    tt_tensor q0 = rnd(DIMS(3, 2, 2, 5, 8)), q;
    ok(tt_transpose(&q, &q0, 0, 1));                 /* [2,3,2,5,8], batch not mergeable */
    tt_tensor k = make(L_PERM, DIMS(2, 3, 1, 6, 8)), v = make(L_EXPAND, DIMS(2, 3, 1, 6, 4));
    tt_tensor m0 = rnd_bool(DIMS(3, 2, 1, 5, 6)), m;
    ok(tt_transpose(&m, &m0, 0, 1));
    check_sdpa("sdpa with unmergeable batch dims and mask", &q, &k, &v, &m, 0, DNAN);
    check_sdpa("sdpa with unmergeable batch dims, causal", &q, &k, &v, &m, 1, DNAN);
    /* a size 0 in each of B, H, Nq, Nk, Dh (and Dh = Dv = 0, the issue's
       tt.zeros(5,2,6,0) as q, k and v), with and without causal and mask */
    static const int64_t zdims[][6] = {   /* B, Hq, Nq, Nk, Dh, Dv */
        { 0, 2, 3, 4, 5, 5 }, { 2, 0, 3, 4, 5, 5 }, { 2, 2, 0, 4, 5, 5 },
        { 2, 2, 3, 0, 5, 5 }, { 2, 2, 3, 4, 0, 5 }, { 5, 2, 6, 6, 0, 0 }, { 2, 2, 3, 4, 5, 0 },
    };
    for (size_t zi = 0; zi < sizeof zdims / sizeof *zdims; zi++) {
        const int64_t *z = zdims[zi];
        tt_threads_stop();    /* fresh scratch: a 0-byte request once failed, leaving counters unwritten */
        tt_tensor zq = rnd(DIMS(z[0], z[1], z[2], z[4])), zk = rnd(DIMS(z[0], z[1], z[3], z[4]));
        tt_tensor zv = rnd(DIMS(z[0], z[1], z[3], z[5])), zm = rnd_bool(DIMS(z[2], z[3]));
        for (int zc = 0; zc < 4; zc++) {
            snprintf(descr, sizeof descr, "sdpa zero size B=%lld H=%lld Nq=%lld Nk=%lld Dh=%lld Dv=%lld%s%s",
                     (long long)z[0], (long long)z[1], (long long)z[2], (long long)z[3], (long long)z[4],
                     (long long)z[5], zc & 1 ? " causal" : "", zc & 2 ? " mask" : "");
            check_sdpa(descr, &zq, &zk, &zv, zc & 2 ? &zm : NULL, zc & 1, DNAN);
        }
        tt_tensor_release(&zq);
        tt_tensor_release(&zk);
        tt_tensor_release(&zv);
        tt_tensor_release(&zm);
    }

    /* scale: NAN is the default; any finite value is used as is */
    check_sdpa("sdpa negative scale matches the formula", &q, &k, &v, &m, 0, -0.7);
    check_sdpa("sdpa negative scale, causal", &q, &k, &v, NULL, 1, -2.5);
    check_sdpa("sdpa scale 0 matches the formula", &q, &k, &v, &m, 1, 0.0);
    {
        tt_tensor o0, w0;
        ok(tt_sdpa(&o0, &w0, &q, &k, &v, NULL, 1, 0.0, NULL));   /* Nq=5, Nk=6: row i sees i+2 keys */
        float *wf = flat(&w0);
        int uniform = 1;
        for (int64_t r = 0; r < tt_numel(&w0) / 6; r++)
            for (int64_t j = 0; j < 6; j++) {
                int64_t i = r % 5;
                double want = j <= i + 1 ? 1.0 / (double)(i + 2) : 0.0;
                uniform &= fabs((double)wf[r * 6 + j] - want) < 1e-6;
            }
        CHECK("sdpa scale 0: uniform weights over the visible keys", uniform);
        free(wf);
        tt_tensor_release(&o0);
        tt_tensor_release(&w0);
        check_err("sdpa infinite scale", tt_sdpa(&o0, NULL, &q, &k, &v, NULL, 0, DINF, NULL), TT_EARG,
                  "sdpa", "scale", "inf");
        /* the options' checks live in the core: the C API gets the words a script gets */
        tt_sdpa_opts bad[] = {
            { .scale = DNAN, .window = -1 }, { .scale = DNAN, .window = 2, .sinks = -1 },
            { .scale = DNAN, .sinks = 4 }, { .scale = DNAN, .dropout = 1.0 },
            { .scale = DNAN, .alibi = 1, .bias = &m }, { .scale = 1e300 },
        };
        const char *said[] = {
            "sdpa: window must be at least 1 (the keys each query sees), got -1",
            "sdpa: sinks must be at least 0 (the first keys kept beside the window), got -1",
            "sdpa: sinks = 4 needs a window (the sinks are the first keys kept beside it); hint: {window = W, sinks = 4}",
            "sdpa: dropout must be in [0, 1) (the probability of zeroing a weight), got 1; hint: p = 1 would drop every weight",
            "sdpa: alibi and bias both given; hint: alibi = true is a bias the kernel computes: add your own terms",
            "sdpa: scale must be a finite float32, got 1e+300",
        };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
            check_err(said[i], tt_sdpa_ex(&o0, NULL, &q, &k, &v, &bad[i], NULL), TT_EARG, said[i], NULL, NULL);
    }
    tt_tensor_release(&q0);
    tt_tensor_release(&q);
    tt_tensor_release(&k);
    tt_tensor_release(&v);
    tt_tensor_release(&m0);
    tt_tensor_release(&m);

    /* fully masked rows give zeros and are counted */
    tt_tensor q3 = rnd(DIMS(2, 4, 8)), k3 = rnd(DIMS(2, 6, 8)), v3 = rnd(DIMS(2, 6, 3));
    uint8_t mv[4 * 6] = { 1, 1, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0,  0, 1, 0, 1, 0, 1,  0, 0, 0, 0, 0, 0 };
    tt_tensor mk = from_bool(mv, DIMS(4, 6));
    check_sdpa("sdpa with fully masked rows (3-D, one head dim)", &q3, &k3, &v3, &mk, 0, DNAN);
    int64_t empty = 0;
    ok(tt_sdpa(&out, &w, &q3, &k3, &v3, &mk, 0, DNAN, &empty));
    int zeros = 1;
    for (int h = 0; h < 2; h++)
        for (int e = 0; e < 3; e++)
            zeros &= tt_data_f32(&out)[(h * 4 + 1) * 3 + e] == 0.0f && tt_data_f32(&out)[(h * 4 + 3) * 3 + e] == 0.0f;
    CHECK("fully masked rows: zero output, counted", zeros && empty == 4);
    tt_tensor_release(&out);
    tt_tensor_release(&w);
    /* no keys at all */
    tt_tensor k0, v0;
    ok(tt_zeros(&k0, TT_FLOAT32, DIMS(2, 0, 8)));
    ok(tt_zeros(&v0, TT_FLOAT32, DIMS(2, 0, 3)));
    ok(tt_sdpa(&out, &w, &q3, &k0, &v0, NULL, 0, DNAN, &empty));
    CHECK("sdpa with no keys: zeros", out.shape[2] == 3 && w.shape[2] == 0 && empty == 8 &&
                                      tt_data_f32(&out)[0] == 0.0f && tt_data_f32(&out)[23] == 0.0f);
    tt_tensor_release(&out);
    tt_tensor_release(&w);

    /* errors */
    tt_tensor kb = rnd(DIMS(3, 6, 8)), kd = rnd(DIMS(2, 6, 7)), vb = rnd(DIMS(2, 5, 3)), mf = rnd(DIMS(4, 6));
    tt_tensor mbad = rnd_bool(DIMS(4, 5));
    check_err("sdpa Hq not a multiple of Hkv", tt_sdpa(&out, NULL, &q3, &kb, &kb, NULL, 0, DNAN, NULL),
              TT_ESHAPE, "sdpa", "[2,4,8]", "[3,6,8]");
    CHECK("sdpa failure leaves out empty", out.storage == NULL);
    check_err("sdpa head size differs", tt_sdpa(&out, NULL, &q3, &kd, &v3, NULL, 0, DNAN, NULL),
              TT_ESHAPE, "sdpa", "[2,4,8]", "[2,6,7]");
    check_err("sdpa k/v lengths differ", tt_sdpa(&out, NULL, &q3, &k3, &vb, NULL, 0, DNAN, NULL),
              TT_ESHAPE, "sdpa", "[2,6,8]", "[2,5,3]");
    check_err("sdpa float mask", tt_sdpa(&out, NULL, &q3, &k3, &v3, &mf, 0, DNAN, NULL),
              TT_EARG, "sdpa", "mask", "bool");
    check_err("sdpa mask does not broadcast", tt_sdpa(&out, NULL, &q3, &k3, &v3, &mbad, 0, DNAN, NULL),
              TT_ESHAPE, "sdpa", "[4,5]", "[2,4,6]");
    tt_tensor_release(&kb);
    tt_tensor_release(&kd);
    tt_tensor_release(&vb);
    tt_tensor_release(&mf);
    tt_tensor_release(&mbad);
    tt_tensor_release(&mk);
    tt_tensor_release(&k0);
    tt_tensor_release(&v0);
    tt_tensor_release(&q3);
    tt_tensor_release(&k3);
    tt_tensor_release(&v3);
}

/* ===== Names and labels ===== */

static tt_tensor named(tt_tensor *a, const char *n0, const char *n1, const char *n2)
{
    const char *names[3] = { tt_intern(n0), tt_intern(n1), tt_intern(n2) };
    tt_tensor t;
    ok(tt_named(&t, a, names));
    tt_tensor_release(a);
    return t;
}

/* Whether no name appears on two dims of t (the names invariant). */
static int names_unique(const tt_tensor *t)
{
    for (int i = 0; i < t->ndim; i++)
        for (int j = i + 1; j < t->ndim; j++)
            if (t->names[i] && t->names[i] == t->names[j]) return 0;
    return 1;
}

/* A result that would carry one name on two dims carries it on neither,
   whichever op family builds it. */
static void test_names_unique(void)
{
    const char *B = tt_intern("B"), *N = tt_intern("N"), *D = tt_intern("D"), *H = tt_intern("h");
    tt_tensor x = rnd(DIMS(2, 3, 4)), xt, out, r;
    x = named(&x, "B", "N", "D");
    const char *rep[3] = { B, N, N };
    check_err("named: a repeated name is an error naming both dims", tt_named(&out, &x, rep), TT_EARG,
              "named", "'N'", "dims 2 and 3");

    ok(tt_mT(&xt, &x));
    ok(tt_matmul(&out, &x, &xt));             /* [B,N,D] @ [B,D,N] */
    CHECK("matmul [N,D]@[D,N]: both N dims lose the name, B stays",
          out.names[0] == B && out.names[1] == NULL && out.names[2] == NULL);
    ok(tt_transpose(&r, &out, 1, 2));
    CHECK("transpose of it: still unique", names_unique(&r) && r.names[0] == B);
    tt_tensor_release(&r);
    const int perm[3] = { 2, 0, 1 };
    ok(tt_permute(&r, &out, perm));
    CHECK("permute of it: still unique", names_unique(&r) && r.names[1] == B);
    tt_tensor_release(&r);
    ok(tt_reduce(&r, TT_OP_SUM, &out, 2, 0));
    CHECK("reduction of it: unique, B kept", names_unique(&r) && r.names[0] == B && r.names[1] == NULL);
    tt_tensor_release(&r);
    const tt_tensor *two[] = { &out, &out };
    ok(tt_cat(&r, two, 2, 1));
    CHECK("cat of it: unique", names_unique(&r) && r.names[0] == B && r.names[1] == NULL);
    tt_tensor_release(&r);
    ok(tt_stack(&r, two, 2, 0));
    CHECK("stack of it: unique", names_unique(&r) && r.names[1] == B && !r.names[2] && !r.names[3]);
    tt_tensor_release(&r);
    tt_tensor_release(&out);

    /* elementwise broadcast: [N,1] + [1,N] would be [N,N] */
    tt_tensor col = rnd(DIMS(3, 1)), row = rnd(DIMS(1, 3)), cn, rn;
    const char *cnames[2] = { N, NULL }, *rnames[2] = { NULL, N };
    ok(tt_named(&cn, &col, cnames));
    ok(tt_named(&rn, &row, rnames));
    ok(tt_binary(&out, TT_OP_ADD, &cn, &rn));
    CHECK("broadcast [N,1] + [1,N]: neither dim named N", out.names[0] == NULL && out.names[1] == NULL);
    tt_tensor_release(&out);
    tt_tensor mask = rnd_bool(DIMS(1, 3)), mn;
    ok(tt_named(&mn, &mask, rnames));
    ok(tt_masked_fill(&out, &cn, &mn, 0.0));
    CHECK("masked_fill [N,1] by [1,N]: neither dim named N", out.names[0] == NULL && out.names[1] == NULL);
    tt_tensor_release(&out);

    /* reshape [N=1] -> [1,1]: the leading and trailing rules would both name N */
    tt_tensor one = rnd(DIMS(1)), on;
    const char *one_name[1] = { N };
    ok(tt_named(&on, &one, one_name));
    ok(tt_reshape(&out, &on, DIMS(1, 1)));
    CHECK("reshape [N=1] -> [1,1]: unique", names_unique(&out));
    tt_tensor_release(&out);

    /* einsum: the ellipsis dim is named h and so is an output axis */
    tt_tensor e = rnd(DIMS(2, 3, 4)), en;
    const char *enames[3] = { H, NULL, NULL };
    ok(tt_named(&en, &e, enames));
    const tt_tensor *ops2[] = { &en, &en };
    ok(tt_einsum(&out, "... h d, ... j d -> ... h j", ops2, 2));
    CHECK("einsum: ellipsis named h and axis h: both unnamed",
          out.ndim == 3 && out.names[0] == NULL && out.names[1] == NULL && out.names[2] == tt_intern("j"));
    tt_tensor_release(&out);
    ok(tt_einsum(&out, "b i d, b j d -> b i j", (const tt_tensor *const[]){ &x, &x }, 2));
    CHECK("einsum: distinct axes keep their names", names_unique(&out) && out.names[1] == tt_intern("i"));
    tt_tensor_release(&out);

    /* rearrange: the same, and a plain pattern keeps names */
    ok(tt_rearrange(&out, &en, "... h d -> ... h d", 0, NULL, NULL));
    CHECK("rearrange: ellipsis named h and axis h: both unnamed",
          out.names[0] == NULL && out.names[1] == NULL && out.names[2] == tt_intern("d"));
    tt_tensor_release(&out);
    ok(tt_rearrange(&out, &x, "b n d -> b d n", 0, NULL, NULL));
    CHECK("rearrange: distinct names kept", names_unique(&out) && out.names[1] == tt_intern("d"));
    tt_tensor_release(&out);

    /* sdpa weights [B,N,N] lose N; a mask named [Nq,Nk] still fits them */
    tt_tensor w, am = rnd_bool(DIMS(3, 3)), amn;
    const char *mnames[2] = { tt_intern("Nq"), tt_intern("Nk") };
    ok(tt_named(&amn, &am, mnames));
    ok(tt_sdpa(&out, &w, &x, &x, &x, &amn, 0, DNAN, NULL));
    CHECK("sdpa weights: the two N dims unnamed", w.names[0] == B && !w.names[1] && !w.names[2]);
    CHECK("sdpa output keeps [B,N,D]", out.names[0] == B && out.names[1] == N && out.names[2] == D);
    tt_tensor_release(&out);
    tt_tensor_release(&w);

    tt_tensor *all[] = { &x, &xt, &col, &row, &cn, &rn, &mask, &mn, &one, &on, &e, &en, &am, &amn };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) tt_tensor_release(all[i]);
}

static void test_names(void)
{
    tt_tensor a = rnd(DIMS(2, 3, 4)), b = rnd(DIMS(3, 4)), c = rnd(DIMS(2, 4, 5)), out;
    a = named(&a, "B", "N", "D");
    const char *bn[2] = { NULL, tt_intern("D") };
    tt_tensor b2;
    ok(tt_named(&b2, &b, bn));
    const char *B = tt_intern("B"), *N = tt_intern("N"), *D = tt_intern("D"), *E = tt_intern("E");
    a.label = tt_intern("x");
    ok(tt_binary(&out, TT_OP_ADD, &a, &b2));
    CHECK("add unifies names", out.names[0] == B && out.names[1] == N && out.names[2] == D);
    CHECK("labels are not copied", out.label == NULL);
    tt_tensor_release(&out);
    ok(tt_reduce(&out, TT_OP_SUM, &a, 1, 0));
    CHECK("sum drops the reduced name", out.ndim == 2 && out.names[0] == B && out.names[1] == D);
    tt_tensor_release(&out);
    ok(tt_reduce(&out, TT_OP_MEAN, &a, 1, 1));
    CHECK("keepdim leaves the kept size-1 dim unnamed", out.ndim == 3 && out.names[1] == NULL && out.names[0] == B);
    tt_tensor_release(&out);
    ok(tt_softmax(&out, &a, 2));
    CHECK("softmax keeps names", out.names[0] == B && out.names[1] == N && out.names[2] == D && out.label == NULL);
    tt_tensor_release(&out);
    ok(tt_tril(&out, &a, 0));
    CHECK("tril keeps names", out.names[2] == D);
    tt_tensor_release(&out);
    ok(tt_repeat_interleave(&out, &a, 2, 1));
    CHECK("repeat_interleave keeps names", out.names[1] == N);
    tt_tensor_release(&out);
    c = named(&c, "B", "D", "E");
    ok(tt_matmul(&out, &a, &c));
    CHECK("matmul: batch, row from a, column from b", out.names[0] == B && out.names[1] == N && out.names[2] == E);
    tt_tensor_release(&out);
    const tt_tensor *l[] = { &a, &a };
    ok(tt_cat(&out, l, 2, 1));
    CHECK("cat keeps the first's names", out.names[0] == B && out.names[1] == N);
    tt_tensor_release(&out);
    ok(tt_stack(&out, l, 2, 0));
    CHECK("stack: new dim unnamed", out.names[0] == NULL && out.names[1] == B);
    tt_tensor_release(&out);
    tt_tensor m = rnd_bool(DIMS(3, 1));
    ok(tt_masked_fill(&out, &a, &m, 0.0));
    CHECK("masked_fill keeps names", out.names[0] == B && out.names[1] == N && out.names[2] == D);
    tt_tensor_release(&out);

    /* conflicts */
    tt_tensor x = rnd(DIMS(2, 3, 4));
    x = named(&x, "B", "H", "D");
    check_err("add: two names on one dim", tt_binary(&out, TT_OP_ADD, &a, &x), TT_ESHAPE, "add", "'N'", "'H'");
    CHECK("conflict leaves out empty", out.storage == NULL);
    tt_tensor y = rnd(DIMS(2, 4, 4));
    y = named(&y, "C", "D", "E");
    check_err("matmul: batch names differ", tt_matmul(&out, &a, &y), TT_ESHAPE, "matmul", "'B'", "'C'");
    tt_tensor_release(&x);
    tt_tensor_release(&y);
    tt_tensor_release(&m);
    tt_tensor_release(&a);
    tt_tensor_release(&b);
    tt_tensor_release(&b2);
    tt_tensor_release(&c);
}

/* ===== Error messages ===== */

static void test_errors(void)
{
    tt_tensor q = rnd(DIMS(5, 64)), k = rnd(DIMS(5, 64)), out;
    check_err("matmul inner sizes, mT hint", tt_matmul(&out, &q, &k), TT_ESHAPE,
              "matmul: inner sizes differ: [5,64] @ [5,64] (64 vs 5)", "did you mean k:mT()?", NULL);
    tt_tensor c = rnd(DIMS(7, 3));
    check_err("matmul inner sizes, no hint", tt_matmul(&out, &q, &c), TT_ESHAPE, "matmul", "[5,64] @ [7,3]", "64 vs 7");
    CHECK("no mT hint when it would not help", !has("mT"));
    tt_tensor a = rnd(DIMS(2, 3)), b = rnd(DIMS(4)), bb = rnd_bool(DIMS(2, 3)), s0, b3 = rnd(DIMS(2, 3, 4)),
              b4 = rnd(DIMS(3, 4, 5));
    check_err("add broadcast", tt_binary(&out, TT_OP_ADD, &a, &b), TT_ESHAPE,
              "add: shapes [2,3] and [4] cannot broadcast (dim -1: 3 vs 4)", NULL, NULL);
    check_err("softmax of bool", tt_softmax(&out, &bb, 1), TT_EARG, "softmax: expects float32, got bool", "x:float()", NULL);
    check_err("softmax dim out of range", tt_softmax(&out, &a, 2), TT_EARG, "softmax", "dim 3", "[2,3]");
    check_err("add float and bool", tt_binary(&out, TT_OP_ADD, &a, &bb), TT_EARG, "add", "bool", "x:float()");
    check_err("sub scalar on bool", tt_binary_scalar(&out, TT_OP_SUB, &bb, 1.0, 0), TT_EARG, "sub", "bool [2,3]", "x:float()");
    check_err("and on floats", tt_binary(&out, TT_OP_AND, &a, &a), TT_EARG, "and: expects bool", "[2,3]", "x:bool()");
    check_err("not on float", tt_unary(&out, TT_OP_NOT, &a), TT_EARG, "not", "float32 [2,3]", "x:bool()");
    check_err("exp on bool", tt_unary(&out, TT_OP_EXP, &bb), TT_EARG, "exp", "bool [2,3]", "x:float()");
    check_err("eq float vs bool", tt_binary(&out, TT_OP_EQ, &a, &bb), TT_EARG, "eq", "[2,3]", "bool");
    check_err("lt on bools", tt_binary(&out, TT_OP_LT, &bb, &bb), TT_EARG, "lt", "bool", "x:float()");
    check_err("sum of bool", tt_reduce(&out, TT_OP_SUM, &bb, 0, 0), TT_EARG, "sum", "bool", "x:float()");
    check_err("sum dim out of range", tt_reduce(&out, TT_OP_SUM, &a, 5, 0), TT_EARG, "sum", "dim 6", "[2,3]");
    check_err("masked_fill float mask", tt_masked_fill(&out, &a, &a, 0), TT_EARG, "masked_fill", "bool", "[2,3]");
    tt_tensor m4 = rnd_bool(DIMS(4));
    check_err("masked_fill mask broadcast", tt_masked_fill(&out, &a, &m4, 0), TT_ESHAPE, "masked_fill", "[2,3]", "[4]");
    check_err("tril of 1-D", tt_tril(&out, &b, 0), TT_ESHAPE, "tril", "[4]", NULL);
    check_err("matmul of bool", tt_matmul(&out, &bb, &a), TT_EARG, "matmul", "bool [2,3]", "x:float()");
    int64_t none[1] = {0};
    ok(tt_full(&s0, TT_FLOAT32, 0, none, 1.0));
    check_err("matmul of 0-d", tt_matmul(&out, &s0, &a), TT_ESHAPE, "matmul", "[]", "[2,3]");
    check_err("matmul batch broadcast", tt_matmul(&out, &b3, &b4), TT_ESHAPE, "matmul", "[2,3,4]", "[3,4,5]");
    check_err("repeat_interleave negative", tt_repeat_interleave(&out, &a, -1, 0), TT_EARG, "repeat_interleave", "-1", NULL);
    check_err("repeat_interleave dim", tt_repeat_interleave(&out, &a, 2, 2), TT_EARG, "repeat_interleave", "dim 3", "[2,3]");
    CHECK("errors leave out empty", out.storage == NULL);
    tt_tensor *all[] = { &q, &k, &c, &a, &b, &bb, &s0, &b3, &b4, &m4 };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tt_tensor_release(all[i]);
}

/* ===== Trace events ===== */

typedef struct seen {
    int n;
    tt_op op;
    double flops;
    int ninputs, ninputs_total, has_scalar;
    char args[64], note[160];
} seen;

static void sink(const tt_event *ev, void *ud)
{
    seen *s = ud;
    s->n++;
    s->op = ev->op;
    s->flops = ev->flops;
    s->ninputs = ev->ninputs;
    s->ninputs_total = ev->ninputs_total;
    s->has_scalar = ev->has_scalar;
    snprintf(s->args, sizeof s->args, "%s", ev->args);
    snprintf(s->note, sizeof s->note, "%s", ev->note);
}

/* masked_fill's note when the "may attend" mask is passed where the
   "hidden" one belongs (a sink is listening). */
static void mask_note_case(seen *s, const char *descr, const tt_tensor *scores, const tt_tensor *mask,
                           double value, const char *want)
{
    tt_tensor out;
    s->note[0] = 0;
    ok(tt_masked_fill(&out, scores, mask, value));
    int good = want ? strstr(s->note, want) != NULL : s->note[0] == 0;
    if (!good) printf("  note: \"%s\"\n", s->note);
    CHECK(descr, good);
    tt_tensor_release(&out);
}

static void test_mask_polarity_note(seen *s)
{
    tt_tensor sq = rnd(DIMS(2, 4, 4)), wide = rnd(DIMS(2, 3, 5)), tall = rnd(DIMS(2, 5, 3));
    tt_tensor c44, c35ul, c35lr, c53lr, nc44, pad, pad_ok, pad_bad, rnd_m;
    ok(tt_causal_mask(&c44, 4, 4, 1));
    ok(tt_causal_mask(&c35ul, 3, 5, 0));
    ok(tt_causal_mask(&c35lr, 3, 5, 1));
    ok(tt_causal_mask(&c53lr, 5, 3, 1));
    ok(tt_unary(&nc44, TT_OP_NOT, &c44));
    const uint8_t keep[] = { 1, 1, 1, 1, 1, 1, 0, 0 };      /* lengths 4 and 2 as "keep" */
    const uint8_t hide[] = { 0, 0, 0, 0, 0, 0, 1, 1 };      /* the right polarity */
    const uint8_t odd[] = { 1, 0, 1, 1, 1, 1, 0, 0 };       /* not a padding pattern */
    ok(tt_from_buffer(&pad, TT_BOOL, DIMS(2, 1, 4), keep));
    ok(tt_from_buffer(&pad_ok, TT_BOOL, DIMS(2, 1, 4), hide));
    ok(tt_from_buffer(&pad_bad, TT_BOOL, DIMS(2, 1, 4), odd));
    ok(tt_ones(&rnd_m, TT_BOOL, DIMS(4, 4)));
    mask_note_case(s, "masked_fill(causal_mask(4), -inf) names the slip", &sq, &c44, -DINF,
                   "mask hides every key of 1 row (softmax gives NaN there); this is the causal 'may attend' "
                   "pattern: did you mean ~mask?");
    mask_note_case(s, "masked_fill(~causal_mask(4), -inf): no note", &sq, &nc44, -DINF, NULL);
    mask_note_case(s, "masked_fill(causal_mask(4), -1e9): no NaN, no note", &sq, &c44, -1e9, NULL);
    mask_note_case(s, "upper-left 3x5 causal pattern", &wide, &c35ul, -DINF, NULL);   /* no whole row hidden */
    mask_note_case(s, "lower-right 3x5 causal pattern: the last row hidden", &wide, &c35lr, -DINF,
                   "of 1 row (softmax gives NaN there); this is the causal");
    mask_note_case(s, "lower-right 5x3: its complement hides rows too, no hint", &tall, &c53lr, -DINF, NULL);
    mask_note_case(s, "padding 'keep' mask [B,1,Nk]", &sq, &pad, -DINF,
                   "mask hides every key of 4 rows (softmax gives NaN there); this is the padding");
    mask_note_case(s, "padding 'hide' mask: no note", &sq, &pad_ok, -DINF, NULL);
    mask_note_case(s, "not a keep pattern: no hint", &sq, &pad_bad, -DINF, NULL);
    mask_note_case(s, "all-true mask: every key of every row, padding of full length", &sq, &rnd_m, -DINF,
                   "of 4 rows");
    tt_tensor *all[] = { &sq, &wide, &tall, &c44, &c35ul, &c35lr, &c53lr, &nc44, &pad, &pad_ok, &pad_bad, &rnd_m };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) tt_tensor_release(all[i]);
}

static void test_events(void)
{
    tt_tensor a = rnd(DIMS(2, 5, 64)), b = rnd(DIMS(2, 64, 7)), out, w;
    tt_tensor q0 = rnd(DIMS(3, 2, 2, 4, 8)), q, k = rnd(DIMS(2, 3, 1, 6, 8));
    ok(tt_transpose(&q, &q0, 0, 1));
    seen s = {0};
    tt_trace_subscribe(sink, &s, 1);
    ok(tt_matmul(&out, &a, &b));
    CHECK("matmul: one event with 2*M*N*K*batch FLOPs", s.n == 1 && s.op == TT_OP_MATMUL && s.flops == 2.0 * 5 * 7 * 64 * 2);
    tt_tensor_release(&out);
    ok(tt_binary_scalar(&out, TT_OP_DIV, &a, 8.0, 0));
    CHECK("div by a scalar: one event with has_scalar", s.n == 2 && s.op == TT_OP_DIV && s.has_scalar);
    tt_tensor_release(&out);
    ok(tt_softmax(&out, &a, 2));
    CHECK("softmax: args dim=3", s.n == 3 && strcmp(s.args, "dim=3") == 0);
    tt_tensor_release(&out);
    s.n = 0;
    ok(tt_sdpa(&out, &w, &q, &k, &k, NULL, 1, DNAN, NULL));   /* copies q inside: still one event */
    /* causal 4 queries, 6 keys: visible 3+4+5+6 = 18 pairs per head */
    CHECK("sdpa: one event, FLOPs of the visible pairs", s.n == 1 && s.op == TT_OP_SDPA &&
                                                         s.flops == 2.0 * 6 * 2 * 18 * (8 + 8));
    tt_tensor_release(&out);
    tt_tensor_release(&w);
    const tt_tensor *l[] = { &a, &a, &a, &a, &a };
    ok(tt_cat(&out, l, 5, 0));
    CHECK("cat: 4 shown inputs of 5", s.op == TT_OP_CAT && s.ninputs == 4 && s.ninputs_total == 5);
    tt_tensor_release(&out);
    test_mask_polarity_note(&s);
    s.n = 0;
    check_err("failed op", tt_matmul(&out, &a, &a), TT_ESHAPE, "matmul", NULL, NULL);
    CHECK("a failed op emits no event", s.n == 0);
    tt_trace_unsubscribe(sink, &s);
    tt_tensor_release(&a);
    tt_tensor_release(&b);
    tt_tensor_release(&q0);
    tt_tensor_release(&q);
    tt_tensor_release(&k);
}

/* Elementwise where the operands disagree on the innermost stride (the
   tiled path of ops.c): shapes around the tile sizes, each SIMD path; the
   bits must equal the same op on a contiguous copy. */
static int same_bits(const tt_tensor *x, const tt_tensor *y)
{
    if (!x->storage || !y->storage || x->dtype != y->dtype || tt_numel(x) != tt_numel(y)) return 0;
    return memcmp(x->storage->data, y->storage->data,
                  (size_t)tt_numel(x) * tt_dtype_size(x->dtype)) == 0;  /* both fresh, contiguous */
}

static void tiled_case(const char *path, int nd, const int64_t *shape, int trans_a)
{
    char descr[160], sh[64];
    int64_t n = numel_of(nd, shape);
    snprintf(sh, sizeof sh, "[%lld..%lld,%lld] %s", (long long)shape[0], (long long)shape[nd - 2],
             (long long)shape[nd - 1], path);
    tt_tensor a = make(trans_a ? L_TRANS : L_CONTIG, nd, shape), b = make(L_TRANS, nd, shape);
    tt_tensor ac, bc, out, ref;
    ok(tt_contiguous(&ac, &a));
    ok(tt_contiguous(&bc, &b));
    float *pb = tt_data_f32(&b);                   /* specials in the transposed operand */
    pb[0] = NAN;
    pb[1] = INFINITY;
    if (tt_numel(&b) > 40) pb[40] = -0.0f;
    tt_tensor_release(&bc);
    ok(tt_contiguous(&bc, &b));
    static const tt_op ops[] = { TT_OP_ADD, TT_OP_SUB, TT_OP_MUL, TT_OP_DIV, TT_OP_MAXIMUM, TT_OP_MINIMUM, TT_OP_LT, TT_OP_NE };
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        snprintf(descr, sizeof descr, "%s %s^T %s", tt_op_name(ops[o]),
                 trans_a ? "a^T, b" : "a, b", sh);
        check_binary(descr, ops[o], &a, &b);
        ok(tt_binary(&out, ops[o], &a, &b));
        ok(tt_binary(&ref, ops[o], &ac, &bc));
        snprintf(descr, sizeof descr, "%s on views = on contiguous copies, bit for bit, %s",
                 tt_op_name(ops[o]), sh);
        CHECK(descr, same_bits(&out, &ref));
        tt_tensor_release(&out);
        tt_tensor_release(&ref);
    }
    static const tt_op uops[] = { TT_OP_NEG, TT_OP_EXP, TT_OP_LOG, TT_OP_SQRT, TT_OP_ABS };
    for (size_t o = 0; o < sizeof uops / sizeof uops[0]; o++) {
        ok(tt_unary(&out, uops[o], &b));
        ok(tt_unary(&ref, uops[o], &bc));
        snprintf(descr, sizeof descr, "%s of a transposed view = of its copy, %s",
                 tt_op_name(uops[o]), sh);
        CHECK(descr, same_bits(&out, &ref));
        tt_tensor_release(&out);
        tt_tensor_release(&ref);
    }
    /* bool operands: a transposed mask, a transposed bool */
    tt_tensor mb, mt, mc, bo;
    ok(tt_binary_scalar(&mb, TT_OP_GT, &bc, 0.0, 0));
    ok(tt_mT(&mt, &mb));
    ok(tt_contiguous(&mc, &mt));
    tt_tensor bt;                                  /* a view the shape of mt */
    ok(tt_mT(&bt, &bc));
    ok(tt_masked_fill(&out, &bt, &mt, -DINF));
    ok(tt_masked_fill(&ref, &bt, &mc, -DINF));
    int good = same_bits(&out, &ref);
    int64_t idx[TT_MAX_DIMS] = {0};
    const float *po = tt_data_f32(&out);
    for (int64_t i = 0; i < n; i++) {       /* and against the definition */
        double want = el(&mt, idx) ? -DINF : el(&bt, idx), got = (double)po[i];
        good &= (isnan(want) && isnan(got)) || want == got;
        next_idx(nd, mt.shape, idx);
    }
    snprintf(descr, sizeof descr, "masked_fill with a transposed mask %s", sh);
    CHECK(descr, good);
    tt_tensor_release(&out);
    tt_tensor_release(&ref);
    tt_tensor m2;                                  /* a contiguous bool the shape of mt */
    ok(tt_binary_scalar(&m2, TT_OP_LT, &bt, 0.5, 0));
    ok(tt_binary(&out, TT_OP_XOR, &m2, &mt));
    ok(tt_binary(&bo, TT_OP_XOR, &m2, &mc));
    tt_tensor_release(&m2);
    snprintf(descr, sizeof descr, "xor of bool and transposed bool %s", sh);
    CHECK(descr, same_bits(&out, &bo));
    tt_tensor_release(&out);
    tt_tensor_release(&bo);
    ok(tt_to_dtype(&out, &mt, TT_FLOAT32));
    ok(tt_to_dtype(&bo, &mc, TT_FLOAT32));
    snprintf(descr, sizeof descr, "float() of a transposed bool %s", sh);
    CHECK(descr, same_bits(&out, &bo));
    tt_tensor_release(&out);
    tt_tensor_release(&bo);
    tt_tensor_release(&mb); tt_tensor_release(&mt); tt_tensor_release(&mc); tt_tensor_release(&bt);
    tt_tensor_release(&a); tt_tensor_release(&b); tt_tensor_release(&ac); tt_tensor_release(&bc);
}

static void test_tiled(void)
{
    static const char *const paths[] = { "avx512", "avx2", "scalar" };
    for (int p = 0; p < 3; p++) {
        if (!tk_simd_force(paths[p])) continue;
        tiled_case(paths[p], DIMS(8, 8), 0);
        tiled_case(paths[p], DIMS(33, 129), 0);    /* edge tiles on both dims */
        tiled_case(paths[p], DIMS(3, 45, 140), 1); /* batched, a transposed too */
        tiled_case(paths[p], DIMS(257, 300), 0);   /* enough for the threads */
        tiled_case(paths[p], DIMS(2, 7, 100), 0);  /* too few rows to tile */
    }
    tk_simd_force(NULL);
}

/* Peak resident memory of this process in KiB (VmHWM), or -1. */
static long peak_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kib = atol(line + 6);
    if (f) fclose(f);
    return kib;
}

/* Labels (and dim names) are interned until exit, so a loop labelling a
   million tensors with fresh strings counts them against the memory cap:
   it meets the cap's message instead of growing without bound. */
static void test_label_memory(void)
{
    const int64_t cap = 64 << 20;
    long rss0 = peak_rss_kib();
    tt_set_max_memory(cap);
    tt_status st = TT_OK;
    char label[128];
    int i = 0, stopped = 0;
    for (; i < 1000000 && !stopped; i++) {
        tt_tensor t;
        if ((st = tt_zeros(&t, TT_FLOAT32, DIMS(4))) != TT_OK) { stopped = 1; break; }
        snprintf(label, sizeof label, "tensor %07d of a long loop that labels every tensor it makes, "
                 "with a fresh string each time", i);
        t.label = tt_intern(label);
        if (t.label == NULL) stopped = 2;
        tt_tensor_release(&t);
    }
    CHECK("a million fresh labels under a 64M cap stop at the cap", stopped != 0 && i < 1000000);
    CHECK("... with the cap's message naming the labels", strstr(tt_errmsg(), "the memory cap is 64") &&
          strstr(tt_errmsg(), "dim names and labels") && strstr(tt_errmsg(), "--max-memory"));
    tt_tensor t;
    st = tt_zeros(&t, TT_FLOAT32, DIMS(cap / 16));   /* a quarter of the cap */
    CHECK("the next big tensor meets the cap too", st == TT_ENOMEM && strstr(tt_errmsg(), "dim names and labels"));
    tt_tensor_release(&t);
    tt_set_max_memory(0);
    long grown = peak_rss_kib() - rss0;
    CHECK("peak memory grew by about the cap, not more", rss0 < 0 || grown < 2 * (cap >> 10));
    if (rss0 >= 0 && grown >= 2 * (cap >> 10)) printf("  VmHWM grew by %ld KiB\n", grown);
}

/* A 16-bit matmul whose K passes one cache block goes through a float32
   copy of the whole result (tk_gemm_batch_round), counted against the
   memory cap: past the cap it is an error naming matmul, the result
   released; with room, each call gives its copy back. A K within one block
   rounds each tile as it stores it and needs no copy. */
static int64_t memory_held(void)   /* what the cap counts as held: tensors, names, canvases, ... */
{
    const int64_t cap = (int64_t)1 << 40;
    int64_t lo = 0, hi = cap;         /* a reservation of lo fits, of hi + 1 does not */
    tt_set_max_memory(cap);
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (tt__mem_reserve(mid) == TT_OK) { tt__mem_release(mid); lo = mid; } else hi = mid - 1;
    }
    tt_set_max_memory(0);
    return cap - lo;
}

static void test_matmul_f32_copy(void)
{
    /* float16 takes float32 kc blocks (384 at most) on every path; bfloat16
       pairs (avx512_bf16) would take K up to 2048 in one */
    enum { M = 128, N = 128, KBIG = 2048, KSMALL = 64 };
    const int64_t out16 = M * N * 2, out32 = M * N * 4;
    tt_tensor a, b, a1, b1, y = {0};
    ok(tt_ones(&a, TT_FLOAT16, DIMS(M, KBIG)));
    ok(tt_ones(&b, TT_FLOAT16, DIMS(KBIG, N)));
    ok(tt_ones(&a1, TT_FLOAT16, DIMS(M, KSMALL)));
    ok(tt_ones(&b1, TT_FLOAT16, DIMS(KSMALL, N)));
    int64_t before = tt_memory_in_use();
    tt_set_max_memory(memory_held() + out16 + out32 / 2);    /* the result fits, its float32 copy does not */
    CHECK("float16 matmul, K in one block: no float32 copy, fits the cap",
          ok(tt_matmul(&y, &a1, &b1)) && tt_get(&y, M * N - 1) == KSMALL);
    tt_tensor_release(&y);
    tt_status st = tt_matmul(&y, &a, &b);
    CHECK("K past one block: the float32 copy passes the cap, TT_ENOMEM", st == TT_ENOMEM && y.storage == NULL);
    CHECK("... naming matmul, the copy and the cap", strstr(tt_errmsg(), "matmul: ") == tt_errmsg()
          && strstr(tt_errmsg(), "float32 copy of the 128 x 128 result") && strstr(tt_errmsg(), "64.0 KiB needed")
          && strstr(tt_errmsg(), "--max-memory"));
    if (st != TT_ENOMEM) tt_tensor_release(&y);
    CHECK("... no tensor memory held", tt_memory_in_use() == before);
    tt_set_max_memory(memory_held() + out16 + out32 + 4096);  /* room for one copy at a time */
    int good = 1;
    for (int i = 0; i < 3 && good; i++) {
        good = ok(tt_matmul(&y, &a, &b)) && tt_get(&y, M * N - 1) == KBIG;
        tt_tensor_release(&y);
    }
    CHECK("with room for one copy, three calls: each gives its copy back", good);
    /* a batch of 3: one copy of the whole result, named with its batch */
    tt_tensor a3;
    ok(tt_expand(&a3, &a, DIMS(3, M, KBIG)));
    tt_set_max_memory(memory_held() + 3 * out16 + out32);
    st = tt_matmul(&y, &a3, &b);
    CHECK("batched: the copy of all 3 results passes the cap, TT_ENOMEM", st == TT_ENOMEM && y.storage == NULL);
    CHECK("... naming its 3 x 128 x 128 and 192.0 KiB", strstr(tt_errmsg(), "float32 copy of the 3 x 128 x 128 result: 192.0 KiB needed") != NULL);
    if (st != TT_ENOMEM) tt_tensor_release(&y);
    tt_tensor_release(&a3);
    tt_set_max_memory(0);
    tt_tensor_release(&a);
    tt_tensor_release(&b);
    tt_tensor_release(&a1);
    tt_tensor_release(&b1);
}

/* tt_set_autocast: only the 16-bit dtypes (float32 is off); matmul casts
   and gives the dtype, softmax gives float32 from 16-bit, a failed cast
   (the memory cap) restores the setting and leaks nothing */
static void test_autocast(void)
{
    tt_dtype was = TT_BOOL;
    CHECK("autocast int64 is TT_EARG", tt_set_autocast(TT_INT64, &was) == TT_EARG && was == TT_BOOL
          && strstr(tt_errmsg(), "autocast: dtype must be bfloat16 or float16"));
    CHECK("autocast is off at the start", tt_autocast_dtype() == TT_FLOAT32);
    tt_tensor a, b, y = {0}, h, s = {0};
    ok(tt_ones(&a, TT_FLOAT32, DIMS(3, 5)));
    ok(tt_ones(&b, TT_FLOAT32, DIMS(5, 2)));
    ok(tt_set_autocast(TT_FLOAT16, &was));
    CHECK("autocast float16 set, off before", was == TT_FLOAT32 && tt_autocast_dtype() == TT_FLOAT16);
    CHECK("matmul under autocast gives float16", ok(tt_matmul(&y, &a, &b)) && y.dtype == TT_FLOAT16
          && tt_get(&y, 5) == 5.0);
    ok(tt_to_dtype(&h, &a, TT_BFLOAT16));
    CHECK("softmax of bfloat16 under autocast gives float32", ok(tt_softmax(&s, &h, 1)) && s.dtype == TT_FLOAT32);
    CHECK("the setting holds after the ops", tt_autocast_dtype() == TT_FLOAT16);
    tt_tensor_release(&y);
    int64_t before = tt_memory_in_use();
    tt_set_max_memory(before + 8);              /* no room for the casts */
    CHECK("a cast past the cap fails the matmul", tt_matmul(&y, &a, &b) == TT_ENOMEM && y.storage == NULL);
    tt_set_max_memory(0);
    CHECK("... restoring the setting and leaking nothing",
          tt_autocast_dtype() == TT_FLOAT16 && tt_memory_in_use() == before);
    ok(tt_set_autocast(TT_FLOAT32, NULL));
    CHECK("float32 turns it off", tt_autocast_dtype() == TT_FLOAT32 && ok(tt_matmul(&y, &a, &b))
          && y.dtype == TT_FLOAT32);
    tt_tensor_release(&y);
    tt_tensor_release(&s);
    tt_tensor_release(&h);
    tt_tensor_release(&a);
    tt_tensor_release(&b);
}

int main(void)
{
    int64_t base = tt_memory_in_use();
    test_autocast();
    test_matmul_f32_copy();
    test_binary();
    test_int64_ops();
    test_indexing();
    test_scalar();
    test_bool_ops();
    test_unary();
    test_tiled();
    test_to_dtype();
    test_reduce();
    test_softmax();
    test_masking();
    test_repeat();
    test_pytorch_names();
    test_rope();
    test_cat_stack();
    test_matmul();
    test_sdpa();
    if (tk_simd_force("scalar")) {      /* the portable kernels get the same checks */
        test_matmul();
        test_sdpa();
        test_softmax();
        tk_simd_force(NULL);
    }
    test_names();
    test_names_unique();
    test_errors();
    test_events();
    CHECK("no tensor memory leaked", tt_memory_in_use() == base);
    test_label_memory();                /* last: fills the intern table up to a cap */
    if (tt_memory_in_use() != base)
        printf("  %lld bytes still in use\n", (long long)(tt_memory_in_use() - base));
    return check_report();
}
