/*
** matmul.c — the front-end of tt_matmul (PyTorch's rules: 1-D promotion,
** broadcast batch dims). Strided inputs go straight to the GEMM kernel (a
** k:mT() view is read in place, never copied); a copy is made only when
** batch strides cannot be merged.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernels.h"
#include "tensor/iter.h"
#include "tt_internal.h"

#define SHAPE_BUF 256

static const char *shp(const tt_tensor *t, char *buf)
{
    return tt_shape_str(t, buf, SHAPE_BUF);
}

/* Batch t's element offsets in a and b, in walk order. */
typedef struct batch_ctx {
    const char *a, *b;
    int64_t ea, eb;                 /* element sizes */
    int64_t *aoff, *boff, t;
} batch_ctx;

static void batch_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    batch_ctx *c = ctx;
    for (int64_t i = 0; i < n; i++, c->t++) {
        c->aoff[c->t] = (p[0] - c->a) / c->ea + i * inc[0];     /* inc counts elements */
        c->boff[c->t] = (p[1] - c->b) / c->eb + i * inc[1];
    }
}

/* The GEMM's element type of a float tensor, and its data. */
static int gemm_type(tt_dtype dt) { return dt == TT_BFLOAT16 ? TK_BF16 : dt == TT_FLOAT16 ? TK_F16 : TK_F32; }

static const void *gemm_data(const tt_tensor *t)
{
    return tt__is_half(t->dtype) ? (const void *)tt_data_u16(t) : (const void *)tt_data_f32(t);
}

/* ===== matmul ===== */

/* The GEMM into out (float32, or 16-bit: each element rounded once from
   the float32 sum, in the GEMM's store where it can). */
static tt_status gemm_into(tt_tensor *out, int64_t nbatch, int64_t M, int64_t N, int64_t K,
                           int ta, const void *da, const int64_t *aoff, int64_t rsa, int64_t csa,
                           int tb, const void *db, const int64_t *boff, int64_t rsb, int64_t csb,
                           const int64_t *coff, int64_t rsc, int64_t csc)
{
    if (out->dtype == TT_FLOAT32) {
        tk_gemm_batch_typed(nbatch, M, N, K, ta, da, aoff, rsa, csa, tb, db, boff, rsb, csb,
                            tt_data_f32(out), coff, rsc, csc);
        return TT_OK;
    }
    if (tk_gemm_batch_round(nbatch, M, N, K, ta, da, aoff, rsa, csa, tb, db, boff, rsb, csb,
                            gemm_type(out->dtype), tt_data_u16(out), coff, rsc, csc) == 0)
        return TT_OK;
    char why[TT__ERRMSG_SIZE];                 /* the cap's message, or malloc's */
    snprintf(why, sizeof why, "%s", tt_errmsg());
    tt_tensor_release(out);
    char dims[64];                             /* the batch too: the copy holds all of it */
    int n = nbatch > 1 ? snprintf(dims, sizeof dims, "%lld x ", (long long)nbatch) : 0;
    snprintf(dims + n, sizeof dims - (size_t)n, "%lld x %lld", (long long)M, (long long)N);
    return tt__err(TT_ENOMEM, "matmul: no memory for a float32 copy of the %s result: %s", dims, why);
}

/* The nb batch dims of a @ b (right aligned, the last two of each are the
   matrices): their broadcast sizes, each operand's strides along them (0
   where it broadcasts) and their names, unified. */
static tt_status batch_dims(const tt_tensor *a, const tt_tensor *b, int nb, int64_t *bshape, int64_t *as,
                            int64_t *bs, const char **names)
{
    char sa[SHAPE_BUF], sb[SHAPE_BUF];
    int abn = a->ndim > 2 ? a->ndim - 2 : 0, bbn = b->ndim > 2 ? b->ndim - 2 : 0;
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - abn), ib = i - (nb - bbn);
        int64_t x = ia >= 0 ? a->shape[ia] : 1, y = ib >= 0 ? b->shape[ib] : 1;
        const char *p = ia >= 0 ? a->names[ia] : NULL, *q = ib >= 0 ? b->names[ib] : NULL;
        if (x != y && x != 1 && y != 1) {
            /* one a multiple of the other: heads shared as in GQA */
            char hint[SHAPE_BUF] = "";
            if (x > 0 && y > 0 && (x % y == 0 || y % x == 0))
                snprintf(hint, sizeof hint, "; hint: x:repeat_interleave(%lld, %d) repeats the %s operand's "
                         "%lld into %lld (as in GQA; tt.sdpa shares K/V heads without a copy)",
                         (long long)(x > y ? x / y : y / x), (x > y ? ib : ia) + 1, x > y ? "right" : "left",
                         (long long)(x > y ? y : x), (long long)(x > y ? x : y));
            return tt__err(TT_ESHAPE, "matmul: batch dims cannot broadcast: %s @ %s (batch dim %d: %lld vs %lld)%s",
                           shp(a, sa), shp(b, sb), i + 1, (long long)x, (long long)y, hint);
        }
        if (p && q && p != q && strcmp(p, q) != 0)
            return tt__err(TT_ESHAPE, "matmul: batch dim names differ: '%s' vs '%s' at batch dim %d of %s @ %s; "
                           "hint: rename with x:named(...)", p, q, i + 1, shp(a, sa), shp(b, sb));
        bshape[i] = x == 1 ? y : x;
        names[i] = p ? p : q;
        as[i] = x == bshape[i] && ia >= 0 ? a->stride[ia] : 0;
        bs[i] = y == bshape[i] && ib >= 0 ? b->stride[ib] : 0;
    }
    return TT_OK;
}

/* a [..., M, K] @ b [..., K, N] -> [..., M, N]; a 1-D a is [1, K] and a 1-D
   b is [K, 1], their promoted dim dropped from the result. 16-bit operands
   are read in place: the GEMM's packers convert them to float32 (or keep
   bfloat16 pairs), products and sums are float32, and each result is
   rounded once to the promoted dtype, as PyTorch. */
static tt_status matmul_impl(tt_tensor *out, const tt_tensor *a, const tt_tensor *b, double *flops)
{
    char sa[SHAPE_BUF], sb[SHAPE_BUF];
    int half_ok = tt_dtype_is_float(a->dtype) && tt_dtype_is_float(b->dtype);
    if (!half_ok && (a->dtype != TT_FLOAT32 || b->dtype != TT_FLOAT32))
        return tt__err(TT_EARG, "matmul: expects float32, got %s %s @ %s %s; hint: x:float()",
                       tt_dtype_name(a->dtype), shp(a, sa), tt_dtype_name(b->dtype), shp(b, sb));
    int an = a->ndim, bn = b->ndim;
    if (an == 0 || bn == 0)
        return tt__err(TT_ESHAPE, "matmul: both arguments need at least 1 dim, got %s @ %s; "
                       "hint: use * for a scalar", shp(a, sa), shp(b, sb));
    /* M = rows of a, K = inner size, N = columns of b */
    int64_t M = an >= 2 ? a->shape[an - 2] : 1, K = a->shape[an - 1];
    int64_t rsa = an >= 2 ? a->stride[an - 2] : 0, csa = a->stride[an - 1];
    int64_t Kb = bn >= 2 ? b->shape[bn - 2] : b->shape[0], N = bn >= 2 ? b->shape[bn - 1] : 1;
    int64_t rsb = bn >= 2 ? b->stride[bn - 2] : b->stride[0], csb = bn >= 2 ? b->stride[bn - 1] : 0;
    if (K != Kb) {
        int hint = bn >= 2 && a->shape[an - 1] == b->shape[bn - 1];
        return tt__err(TT_ESHAPE, "matmul: inner sizes differ: %s @ %s (%lld vs %lld)%s",
                       shp(a, sa), shp(b, sb), (long long)K, (long long)Kb,
                       hint ? "; did you mean k:mT()?" : "");
    }
    /* batch dims broadcast (right aligned), names unified */
    int abn = an > 2 ? an - 2 : 0, bbn = bn > 2 ? bn - 2 : 0, nb = abn > bbn ? abn : bbn;
    int64_t bshape[TT_MAX_DIMS], as[TT_MAX_DIMS], bs[TT_MAX_DIMS];
    const char *names[TT_MAX_DIMS];
    tt_status st = batch_dims(a, b, nb, bshape, as, bs, names);
    if (st) return st;
    int nd = nb;
    int64_t shape[TT_MAX_DIMS];
    memcpy(shape, bshape, (size_t)nb * sizeof *shape);
    if (an >= 2) {
        shape[nd] = M;
        names[nd++] = a->names[an - 2];
    }
    if (bn >= 2) {
        shape[nd] = N;
        names[nd++] = b->names[bn - 1];
    }
    tt_dtype dt = tt__is_half(a->dtype) || tt__is_half(b->dtype) ? tt_promote_float(a->dtype, b->dtype) : TT_FLOAT32;
    st = tt__alloc(out, "matmul", dt, nd, shape, names);
    if (st) return st;
    int64_t nbatch = 1;
    for (int i = 0; i < nb; i++) nbatch *= bshape[i];
    *flops = 2.0 * (double)M * (double)N * (double)K * (double)nbatch;
    if (nbatch == 0 || M == 0 || N == 0) return TT_OK;
    int64_t rsc = N, csc = 1;               /* out is contiguous [batch..., M, N] */
    int ta = gemm_type(a->dtype), tb = gemm_type(b->dtype);
    const void *da = gemm_data(a), *db = gemm_data(b);

    /* b shared by every batch and a's batch dims fold into its rows
       (x [B,N,D] @ w [D,E]): one GEMM of B*N rows, b packed once */
    int shared = 1;
    for (int i = 0; i < nb; i++) shared &= bs[i] == 0 || bshape[i] == 1;
    if (an >= 2 && shared && nbatch > 1) {
        int64_t fs[TT_MAX_DIMS], fst[TT_MAX_DIMS], s;
        memcpy(fs, bshape, (size_t)nb * sizeof *fs);
        memcpy(fst, as, (size_t)nb * sizeof *fst);
        fs[nb] = M;
        fst[nb] = rsa;
        if (tt__iter_flat(nb + 1, fs, fst, &s)) {
            int64_t zero = 0;
            return gemm_into(out, 1, M * nbatch, N, K, ta, da, &zero, s, csa, tb, db, &zero, rsb, csb,
                             &zero, rsc, csc);
        }
    }
    if (nbatch == 1) {                      /* no batch dims (the common 2-D case): no walk */
        int64_t zero = 0;
        return gemm_into(out, 1, M, N, K, ta, da, &zero, rsa, csa, tb, db, &zero, rsb, csb, &zero, rsc, csc);
    }
    int64_t *off = malloc(3 * (size_t)nbatch * sizeof *off);
    if (off == NULL) {
        tt_tensor_release(out);
        return tt__err(TT_ENOMEM, "matmul: out of memory for %lld batch offsets", (long long)nbatch);
    }
    int64_t *aoff = off, *boff = off + nbatch, *coff = off + 2 * nbatch;
    int64_t bst[2][TT_MAX_DIMS];             /* the odometer over the batch dims */
    memcpy(bst[0], as, (size_t)nb * sizeof *as);
    memcpy(bst[1], bs, (size_t)nb * sizeof *bs);
    void *base[2] = { (void *)da, (void *)db };
    size_t es[2] = { tt_dtype_size(a->dtype), tt_dtype_size(b->dtype) };
    batch_ctx bc = { base[0], base[1], (int64_t)es[0], (int64_t)es[1], aoff, boff, 0 };
    tt__iter it;
    tt__iter_init(&it, nb, bshape, 2, (const int64_t (*)[TT_MAX_DIMS])bst, base, es);
    tt__iter_range(&it, 0, nbatch, batch_row, &bc);
    for (int64_t t = 0; t < nbatch; t++) coff[t] = t * M * N;
    st = gemm_into(out, nbatch, M, N, K, ta, da, aoff, rsa, csa, tb, db, boff, rsb, csb, coff, rsc, csc);
    free(off);
    return st;
}

tt_status tt_matmul(tt_tensor *out, const tt_tensor *a, const tt_tensor *b)
{
    memset(out, 0, sizeof *out);
    tt__autocast ac;
    if (tt__autocast_enter(&ac, TT__AC_LOW, 2, (const tt_tensor *[]){a, b}))
        return tt__autocast_leave(&ac, ac.st ? ac.st : tt_matmul(out, ac.in[0], ac.in[1]));
    tt__opscope sc = tt__op_enter();
    double flops = 0.0;
    tt_status st = matmul_impl(out, a, b, &flops);
    if (st == TT_OK && tt__grad_wanted(sc, a, b)) st = tt__record(out, TT_OP_MATMUL, a, b, NULL, NULL);
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, TT_OP_MATMUL, out, a, b, NULL);
        ev.flops = flops;
    }
    return tt__op_leave(sc, st, &ev);
}
