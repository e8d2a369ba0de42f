/*
** backward.c — the backward of each op (named in its row of the op table),
** written with the public ops so the trace shows them. The engine
** (ops/autograd.c) calls one with the op's node, the gradient arrived at
** its result and a slot per input; it runs with grad mode off inside a
** tt__group, so a formula's ops fold into one backward row.
*/
#include <math.h>
#include <string.h>

#include "kernel/kernels.h"
#include "tt_internal.h"

/* ===== Backward helpers =====
   A backward chains public ops through a scratch list: each helper takes
   and gives borrowed pointers into it and gives NULL once anything failed,
   so a formula reads as one expression and its error is checked once.
   A formula computes in float32 and its result is rounded once into the
   input's dtype (run_node): the helpers read a 16-bit operand (a saved
   bfloat16 input or output) as a float32 copy, so no intermediate (exp(y),
   a mean, y*y) is rounded to 16 bits on the way. */

#define SCRATCH 48

typedef struct scratch {
    tt_tensor t[SCRATCH];
    const tt_tensor *widened[SCRATCH];   /* t[i] is the float32 copy of widened[i] */
    int n;
    tt_status st;
} scratch;

static tt_tensor *slot(scratch *w)
{
    if (w->st) return NULL;
    if (w->n == SCRATCH) {
        w->st = tt__err(TT_EARG, "backward: scratch list full (an internal limit)");
        return NULL;
    }
    return &w->t[w->n++];
}

/* Keeps the result of a call that wrote into o. */
static const tt_tensor *kept(scratch *w, tt_tensor *o, tt_status st)
{
    w->st = st;
    return st ? NULL : o;
}

/* a as float32: itself, or its float32 copy (made once per formula) when 16-bit */
static const tt_tensor *wide(scratch *w, const tt_tensor *a)
{
    if (!a || !tt__is_half(a->dtype)) return a;
    for (int i = 0; i < w->n; i++)
        if (w->widened[i] == a) return &w->t[i];
    tt_tensor *o = slot(w);
    if (!o) return NULL;
    w->widened[w->n - 1] = a;
    return kept(w, o, tt_to_dtype(o, a, TT_FLOAT32));
}

static const tt_tensor *bin(scratch *w, tt_op op, const tt_tensor *a, const tt_tensor *b)
{
    a = wide(w, a);
    b = wide(w, b);
    tt_tensor *o = a && b ? slot(w) : NULL;
    return o ? kept(w, o, tt_binary(o, op, a, b)) : NULL;
}

/* a op s, or s op a when first */
static const tt_tensor *bins(scratch *w, tt_op op, const tt_tensor *a, double s, int first)
{
    a = wide(w, a);
    tt_tensor *o = a ? slot(w) : NULL;
    return o ? kept(w, o, tt_binary_scalar(o, op, a, s, first)) : NULL;
}

static const tt_tensor *un(scratch *w, tt_op op, const tt_tensor *a)
{
    a = wide(w, a);
    tt_tensor *o = a ? slot(w) : NULL;
    return o ? kept(w, o, tt_unary(o, op, a)) : NULL;
}

static const tt_tensor *as_float(scratch *w, const tt_tensor *a)
{
    tt_tensor *o = a ? slot(w) : NULL;
    return o ? kept(w, o, tt_to_dtype(o, a, TT_FLOAT32)) : NULL;
}

static const tt_tensor *red(scratch *w, tt_op op, const tt_tensor *a, int d, int keepdim)
{
    a = wide(w, a);
    tt_tensor *o = a ? slot(w) : NULL;
    return o ? kept(w, o, tt_reduce(o, op, a, d, keepdim)) : NULL;
}

static const tt_tensor *mm(scratch *w, const tt_tensor *a, const tt_tensor *b)
{
    tt_tensor *o = a && b ? slot(w) : NULL;
    return o ? kept(w, o, tt_matmul(o, a, b)) : NULL;
}

static const tt_tensor *mT(scratch *w, const tt_tensor *a)
{
    tt_tensor *o = a ? slot(w) : NULL;
    return o ? kept(w, o, tt_mT(o, a)) : NULL;
}

static const tt_tensor *unsq(scratch *w, const tt_tensor *a, int d)
{
    tt_tensor *o = a ? slot(w) : NULL;
    return o ? kept(w, o, tt_unsqueeze(o, a, d)) : NULL;
}

static const tt_tensor *reshape(scratch *w, const tt_tensor *a, int ndim, const int64_t *shape)
{
    tt_tensor *o = a ? slot(w) : NULL;
    return o ? kept(w, o, tt_reshape(o, a, ndim, shape)) : NULL;
}

static const tt_tensor *expand(scratch *w, const tt_tensor *a, int ndim, const int64_t *shape)
{
    tt_tensor *o = a ? slot(w) : NULL;
    return o ? kept(w, o, tt_expand(o, a, ndim, shape)) : NULL;
}

/* a with 0 where mask is true: a selection, not a product with 0, so an
   inf or NaN gradient stays where it was sent (PyTorch's masked_fill) */
static const tt_tensor *zero_where(scratch *w, const tt_tensor *a, const tt_tensor *mask)
{
    tt_tensor *o = a && mask ? slot(w) : NULL;
    return o ? kept(w, o, tt_masked_fill(o, a, mask, 0)) : NULL;
}

/* g summed over the dims broadcasting added or grew: shaped as shape. */
static const tt_tensor *sum_to(scratch *w, const tt_tensor *g, int ndim, const int64_t *shape)
{
    if (!g) return NULL;
    const int gnd = g->ndim, lead = gnd - ndim;
    for (int i = 0; i < gnd && g; i++)   /* a failed sum gives NULL: stop there */
        if (i < lead || (shape[i - lead] == 1 && g->shape[i] != 1)) g = red(w, TT_OP_SUM, g, i, 1);
    return reshape(w, g, ndim, shape);
}

/* Input i's shape, and g summed to it. */
#define IN_SHAPE(n, i) (n)->in[i].ndim, (n)->in[i].shape
static const tt_tensor *to_in(scratch *w, const tt__node *n, int i, const tt_tensor *g)
{
    return sum_to(w, g, IN_SHAPE(n, i));
}

static int need(const tt__node *n, int i) { return n->in[i].next || n->in[i].leaf; }

/* Moves t (a scratch entry) into *dst; releases the rest; returns the status. */
static void give(scratch *w, const tt_tensor *t, tt_tensor *dst)
{
    if (!t || w->st) return;
    *dst = *t;
    memset((tt_tensor *)t, 0, sizeof *t);
}

static tt_status done(scratch *w)
{
    for (int i = 0; i < w->n; i++) tt_tensor_release(&w->t[i]);
    return w->st;
}

#define A(n) (&(n)->saved[0])
#define B(n) (&(n)->saved[1])
#define OUT(n) (&(n)->saved[2])
#define BINARY_TENSORS(n) (!(n)->args.has_s)

/* ===== Backward of each op ===== */

tt_status tt__bw_add(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    for (int i = 0; i < n->nin; i++)
        if (need(n, i)) give(&w, to_in(&w, n, i, g), &gin[i]);
    return done(&w);
}

tt_status tt__bw_sub(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    if (need(n, 0)) give(&w, to_in(&w, n, 0, n->args.first ? un(&w, TT_OP_NEG, g) : g), &gin[0]);
    if (n->nin > 1 && need(n, 1)) give(&w, to_in(&w, n, 1, un(&w, TT_OP_NEG, g)), &gin[1]);
    return done(&w);
}

tt_status tt__bw_mul(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    if (!BINARY_TENSORS(n)) {
        give(&w, bins(&w, TT_OP_MUL, g, n->args.s, 0), &gin[0]);
        return done(&w);
    }
    if (need(n, 0)) give(&w, to_in(&w, n, 0, bin(&w, TT_OP_MUL, g, B(n))), &gin[0]);
    if (need(n, 1)) give(&w, to_in(&w, n, 1, bin(&w, TT_OP_MUL, g, A(n))), &gin[1]);
    return done(&w);
}

/* d(a/b) = g/b, -g*out/b; for s/a: -g*out/a */
tt_status tt__bw_div(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    const tt_tensor *go = NULL;
    if (!BINARY_TENSORS(n)) {
        if (n->args.first) go = un(&w, TT_OP_NEG, bin(&w, TT_OP_DIV, bin(&w, TT_OP_MUL, g, OUT(n)), A(n)));
        else go = bins(&w, TT_OP_DIV, g, n->args.s, 0);
        give(&w, go, &gin[0]);
        return done(&w);
    }
    if (need(n, 0)) give(&w, to_in(&w, n, 0, bin(&w, TT_OP_DIV, g, B(n))), &gin[0]);
    if (need(n, 1))
        give(&w, to_in(&w, n, 1, un(&w, TT_OP_NEG, bin(&w, TT_OP_DIV, bin(&w, TT_OP_MUL, g, OUT(n)), B(n)))),
             &gin[1]);
    return done(&w);
}

/* d(a^b) = g*b*a^(b-1), g*out*log(a); a^s: g*s*a^(s-1); s^a: g*out*log(s).
   PyTorch's rules at the edges, as selections so a NaN or inf g is not
   multiplied into them: the base gets 0 where the exponent is 0 (a^0 is
   constant), and the exponent gets g*0 where the base is 0 and the
   exponent >= 0 (out*log(a) there is 0*-inf, but out is flat in b) */
tt_status tt__bw_pow(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    double s = n->args.s;
    if (!BINARY_TENSORS(n)) {
        const tt_tensor *go;
        if (n->args.first) {
            const tt_tensor *d = bins(&w, TT_OP_MUL, OUT(n), log(s), 0);
            if (s == 0) d = zero_where(&w, d, bins(&w, TT_OP_GE, A(n), 0, 0));
            go = bin(&w, TT_OP_MUL, g, d);
        } else if (s == 0) {
            tt_tensor *z = slot(&w);
            go = z ? kept(&w, z, tt_zeros(z, TT_FLOAT32, IN_SHAPE(n, 0))) : NULL;
        } else {
            go = bin(&w, TT_OP_MUL, g, bins(&w, TT_OP_MUL, bins(&w, TT_OP_POW, A(n), s - 1, 0), s, 0));
        }
        give(&w, go, &gin[0]);
        return done(&w);
    }
    if (need(n, 0)) {
        const tt_tensor *p = bin(&w, TT_OP_POW, A(n), bins(&w, TT_OP_SUB, B(n), 1, 0));
        const tt_tensor *ga = zero_where(&w, bin(&w, TT_OP_MUL, g, bin(&w, TT_OP_MUL, B(n), p)),
                                         bins(&w, TT_OP_EQ, B(n), 0, 0));
        give(&w, to_in(&w, n, 0, ga), &gin[0]);
    }
    if (need(n, 1)) {
        const tt_tensor *flat = bin(&w, TT_OP_AND, bins(&w, TT_OP_EQ, A(n), 0, 0), bins(&w, TT_OP_GE, B(n), 0, 0));
        const tt_tensor *d = zero_where(&w, bin(&w, TT_OP_MUL, OUT(n), un(&w, TT_OP_LOG, A(n))), flat);
        give(&w, to_in(&w, n, 1, bin(&w, TT_OP_MUL, g, d)), &gin[1]);
    }
    return done(&w);
}

/* maximum and minimum: the gradient goes to the winner, half to each on a
   tie (PyTorch's rule) */
tt_status tt__bw_maximum(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    tt_op win = n->op == TT_OP_MAXIMUM ? TT_OP_GT : TT_OP_LT;
    const tt_tensor *wins, *ties;
    if (BINARY_TENSORS(n)) {
        wins = as_float(&w, bin(&w, win, A(n), B(n)));
        ties = as_float(&w, bin(&w, TT_OP_EQ, A(n), B(n)));
    } else {
        wins = as_float(&w, bins(&w, win, A(n), n->args.s, 0));
        ties = as_float(&w, bins(&w, TT_OP_EQ, A(n), n->args.s, 0));
    }
    /* each side's share (1, 1/2 at a tie, 0), and the gradient selected,
       never multiplied by a 0: an inf g reaches the winner alone */
    const tt_tensor *wa = bin(&w, TT_OP_ADD, wins, bins(&w, TT_OP_MUL, ties, 0.5, 0));
    const tt_tensor *ga = zero_where(&w, bin(&w, TT_OP_MUL, g, wa), bins(&w, TT_OP_EQ, wa, 0, 0));
    if (need(n, 0)) give(&w, to_in(&w, n, 0, ga), &gin[0]);
    if (n->nin > 1 && need(n, 1)) {
        const tt_tensor *wb = bins(&w, TT_OP_SUB, wa, 1, 1);
        give(&w, to_in(&w, n, 1, zero_where(&w, bin(&w, TT_OP_MUL, g, wb), bins(&w, TT_OP_EQ, wb, 0, 0))), &gin[1]);
    }
    return done(&w);
}

tt_status tt__bw_neg(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    (void)n;
    scratch w = {0};
    give(&w, un(&w, TT_OP_NEG, g), &gin[0]);
    return done(&w);
}

tt_status tt__bw_exp(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    give(&w, bin(&w, TT_OP_MUL, g, OUT(n)), &gin[0]);
    return done(&w);
}

tt_status tt__bw_log(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    give(&w, bin(&w, TT_OP_DIV, g, A(n)), &gin[0]);
    return done(&w);
}

tt_status tt__bw_sqrt(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    give(&w, bin(&w, TT_OP_DIV, g, bins(&w, TT_OP_MUL, OUT(n), 2, 0)), &gin[0]);
    return done(&w);
}

/* sign(a): 0 at 0, as PyTorch */
tt_status tt__bw_abs(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    const tt_tensor *sign = bin(&w, TT_OP_SUB, as_float(&w, bins(&w, TT_OP_GT, A(n), 0, 0)),
                                as_float(&w, bins(&w, TT_OP_LT, A(n), 0, 0)));
    give(&w, bin(&w, TT_OP_MUL, g, sign), &gin[0]);
    return done(&w);
}

/* sum and mean: g spread back over the reduced dims (a stride-0 view) */
tt_status tt__bw_sum(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    int d = n->args.d;
    int64_t ones[TT_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
    if (d < 0) g = reshape(&w, g, n->in[0].ndim, ones);
    else if (!n->args.keepdim) g = unsq(&w, g, d);
    g = expand(&w, g, IN_SHAPE(n, 0));
    if (n->op == TT_OP_MEAN) {
        int64_t count = 1;
        for (int i = 0; i < n->in[0].ndim; i++)
            if (d < 0 || i == d) count *= n->in[0].shape[i];
        g = bins(&w, TT_OP_DIV, g, (double)count, 0);
    }
    give(&w, g, &gin[0]);
    return done(&w);
}

/* max and min over dims: tt_max_dim's values send g to the index the
   forward chose (saved[4], PyTorch's rule); tt_reduce's split it evenly
   among the elements equal to the result */
/* A reduction's gradient g and result y brought back to the input's rank
   (the reduced dims as size 1), so they broadcast against the input. */
static void kept_dims(scratch *w, const tt__node *n, const tt_tensor **g, const tt_tensor **y)
{
    static const int64_t ones[TT_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
    int d = n->args.d, nd = n->in[0].ndim;
    if (d < 0) {
        *g = reshape(w, *g, nd, ones);
        *y = reshape(w, *y, nd, ones);
    } else if (!n->args.keepdim) {
        *g = unsq(w, *g, d);
        *y = unsq(w, *y, d);
    }
}

tt_status tt__bw_max(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    int d = n->args.d, nd = n->in[0].ndim;
    int64_t ones[TT_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
    const tt_tensor *y = OUT(n), *hit;
    kept_dims(&w, n, &g, &y);
    if (n->saved[4].storage) {
        const tt_tensor *idx = n->args.keepdim ? &n->saved[4] : unsq(&w, &n->saved[4], d);
        ones[d] = n->in[0].shape[d];
        tt_tensor *pos = slot(&w);
        if (pos) kept(&w, pos, tt_arange(pos, 1, (double)ones[d] + 1, 1));   /* indices count from 1 */
        hit = bin(&w, TT_OP_EQ, reshape(&w, pos, nd, ones), idx);
        give(&w, zero_where(&w, expand(&w, g, IN_SHAPE(n, 0)), un(&w, TT_OP_NOT, hit)), &gin[0]);
    } else {
        /* split among the ties; a NaN maximum is the NaN elements' (PyTorch) */
        const tt_tensor *a = A(n);
        hit = bin(&w, TT_OP_OR, bin(&w, TT_OP_EQ, a, y), bin(&w, TT_OP_AND, bin(&w, TT_OP_NE, a, a),
                                                                bin(&w, TT_OP_NE, y, y)));
        const tt_tensor *share = bin(&w, TT_OP_DIV, g, red(&w, TT_OP_SUM, as_float(&w, hit), d, d >= 0));
        give(&w, zero_where(&w, expand(&w, share, IN_SHAPE(n, 0)), un(&w, TT_OP_NOT, hit)), &gin[0]);
    }
    return done(&w);
}

/* var = sum((a - mean)^2) / (N - 1), Bessel's correction as the forward:
   g * 2 (a - mean) / (N - 1); std = sqrt(var): g * (a - mean) / ((N - 1) std),
   0 where std is 0 (a - mean is 0 there too: PyTorch's std_backward masks
   the 0/0 instead of letting a NaN reach every upstream leaf) */
tt_status tt__bw_var(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    int d = n->args.d, nd = n->in[0].ndim;
    int64_t count = 1;
    const tt_tensor *y = OUT(n);
    kept_dims(&w, n, &g, &y);
    for (int i = 0; i < nd; i++)
        if (d < 0 || i == d) count *= n->in[0].shape[i];
    const tt_tensor *c = bin(&w, TT_OP_SUB, A(n), red(&w, TT_OP_MEAN, A(n), d, d >= 0));
    const tt_tensor *k;
    if (n->op == TT_OP_VAR) {
        k = bins(&w, TT_OP_MUL, g, 2.0 / (double)(count - 1), 0);
    } else {
        const tt_tensor *q = bin(&w, TT_OP_DIV, bins(&w, TT_OP_MUL, g, 1.0 / (double)(count - 1), 0), y);
        const tt_tensor *flat = bins(&w, TT_OP_EQ, y, 0, 0);
        tt_tensor *o = q && flat ? slot(&w) : NULL;
        k = o ? kept(&w, o, tt_masked_fill(o, q, flat, 0)) : NULL;
    }
    give(&w, bin(&w, TT_OP_MUL, c, k), &gin[0]);
    return done(&w);
}

/* ga = g @ b^T, gb = a^T @ g over the promoted operands (a 1-D a is
   [1,K], a 1-D b is [K,1]), each summed over the batch dims it
   broadcast along and shaped back */
tt_status tt__bw_matmul(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    const tt_tensor *a = A(n), *b = B(n);
    int an = a->ndim, bn = b->ndim;
    if (an == 1) {
        a = unsq(&w, a, 0);
        g = unsq(&w, g, g->ndim - (bn >= 2));
    }
    if (bn == 1) {
        b = unsq(&w, b, 1);
        g = g ? unsq(&w, g, g->ndim) : NULL;
    }
    if (need(n, 0)) {
        const tt_tensor *ga = a ? sum_to(&w, mm(&w, g, mT(&w, b)), a->ndim, a->shape) : NULL;
        give(&w, reshape(&w, ga, IN_SHAPE(n, 0)), &gin[0]);
    }
    if (need(n, 1) && a && b && g && b->ndim == 2 && a->ndim > 2) {
        /* b shared by every batch (x [B,N,D] @ w [D,E]): the sum over the
           batch of aᵀ g is one GEMM over all B*N rows, with no [B,D,E]
           products to reduce */
        int64_t as2[2] = {1, a->shape[a->ndim - 1]};
        for (int i = 0; i < a->ndim - 1; i++) as2[0] *= a->shape[i];
        int64_t gs2[2] = {as2[0], g->shape[g->ndim - 1]};
        const tt_tensor *gb = mm(&w, mT(&w, reshape(&w, a, 2, as2)), reshape(&w, g, 2, gs2));
        give(&w, reshape(&w, gb, IN_SHAPE(n, 1)), &gin[1]);
    } else if (need(n, 1)) {
        const tt_tensor *gb = b ? sum_to(&w, mm(&w, mT(&w, a), g), b->ndim, b->shape) : NULL;
        give(&w, reshape(&w, gb, IN_SHAPE(n, 1)), &gin[1]);
    }
    return done(&w);
}

/* y * (g - sum(g * y, d)) */
tt_status tt__bw_softmax(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    const tt_tensor *y = OUT(n);
    const tt_tensor *dot = red(&w, TT_OP_SUM, bin(&w, TT_OP_MUL, g, y), n->args.d, 1);
    give(&w, bin(&w, TT_OP_MUL, y, bin(&w, TT_OP_SUB, g, dot)), &gin[0]);
    return done(&w);
}

/* g - exp(y) * sum(g, d) */
tt_status tt__bw_log_softmax(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    const tt_tensor *sum = red(&w, TT_OP_SUM, g, n->args.d, 1);
    give(&w, bin(&w, TT_OP_SUB, g, bin(&w, TT_OP_MUL, un(&w, TT_OP_EXP, OUT(n)), sum)), &gin[0]);
    return done(&w);
}

/* g where a > 0, else 0 (a NaN a passes g on, as PyTorch's threshold_backward) */
tt_status tt__bw_relu(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    const tt_tensor *off = bins(&w, TT_OP_LE, A(n), 0, 0);
    tt_tensor *o = off ? slot(&w) : NULL;
    give(&w, o ? kept(&w, o, tt_masked_fill(o, g, off, 0)) : NULL, &gin[0]);
    return done(&w);
}

/* g * gelu'(a), of the form the forward ran, in one kernel */
tt_status tt__bw_gelu(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    tt_tensor *o = slot(&w);
    int code = n->op == TT_OP_GELU_TANH ? TK_EW_GELU_TANH_BWD : TK_EW_GELU_BWD;
    if (o) kept(&w, o, tt__ew_fused(o, "gelu_backward", code, g, A(n)));
    give(&w, w.st ? NULL : o, &gin[0]);
    return done(&w);
}

/* g * (1 - y^2) */
tt_status tt__bw_tanh(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    const tt_tensor *y = OUT(n);
    give(&w, bin(&w, TT_OP_MUL, g, bins(&w, TT_OP_SUB, bin(&w, TT_OP_MUL, y, y), 1, 1)), &gin[0]);
    return done(&w);
}

/* g * y (1 - y) */
tt_status tt__bw_sigmoid(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    const tt_tensor *y = OUT(n);
    give(&w, bin(&w, TT_OP_MUL, g, bin(&w, TT_OP_MUL, y, bins(&w, TT_OP_SUB, y, 1, 1))), &gin[0]);
    return done(&w);
}

/* sin: g cos(a); cos: -g sin(a) */
tt_status tt__bw_sin(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    if (n->op == TT_OP_SIN) give(&w, bin(&w, TT_OP_MUL, g, un(&w, TT_OP_COS, A(n))), &gin[0]);
    else give(&w, bin(&w, TT_OP_MUL, g, un(&w, TT_OP_NEG, un(&w, TT_OP_SIN, A(n)))), &gin[0]);
    return done(&w);
}

/* where(cond, a, b): g where cond to a, g elsewhere to b, each summed back
   to its input's shape; cond (input 0, saved) has none */
tt_status tt__bw_where(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    for (int i = 1; i <= 2; i++) {
        if (!need(n, i)) continue;
        tt_tensor *o = slot(&w);
        const tt_tensor *hide = i == 1 ? un(&w, TT_OP_NOT, A(n)) : A(n);
        const tt_tensor *gm = o && hide ? kept(&w, o, tt_masked_fill(o, g, hide, 0.0)) : NULL;
        give(&w, to_in(&w, n, i, gm), &gin[i]);
    }
    return done(&w);
}

/* p-norm: g sign(a) |a|^(p-1) / y^(p-1) (p = 2: g a / y), 0 where y is 0
   (PyTorch's subgradient); p = inf: g sign(a) split among the elements
   with |a| == y, as max's ties */
tt_status tt__bw_norm(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    double p = n->args.s;
    const tt_tensor *y = OUT(n), *a = A(n), *grad;
    kept_dims(&w, n, &g, &y);
    const tt_tensor *sign = p == 2 ? NULL : bin(&w, TT_OP_SUB, as_float(&w, bins(&w, TT_OP_GT, a, 0, 0)),
                                                as_float(&w, bins(&w, TT_OP_LT, a, 0, 0)));
    if (isinf(p)) {
        const tt_tensor *hit = as_float(&w, bin(&w, TT_OP_EQ, un(&w, TT_OP_ABS, a), y));
        grad = bin(&w, TT_OP_DIV, bin(&w, TT_OP_MUL, sign, hit), red(&w, TT_OP_SUM, hit, n->args.d, 1));
    } else if (p == 2) {
        grad = bin(&w, TT_OP_DIV, a, y);
    } else {
        grad = bin(&w, TT_OP_MUL, sign, bin(&w, TT_OP_DIV, bins(&w, TT_OP_POW, un(&w, TT_OP_ABS, a), p - 1, 0),
                                             bins(&w, TT_OP_POW, y, p - 1, 0)));
    }
    const tt_tensor *zero = bins(&w, TT_OP_EQ, y, 0, 0), *prod = bin(&w, TT_OP_MUL, g, grad);
    tt_tensor *o = prod && zero ? slot(&w) : NULL;
    const tt_tensor *gm = o ? kept(&w, o, tt_masked_fill(o, prod, zero, 0.0)) : NULL;
    give(&w, gm, &gin[0]);
    return done(&w);
}

/* rope is a rotation per pair: its gradient is g turned back by the same
   angles (the transpose of a rotation is its inverse); positions get none */
tt_status tt__bw_rope(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    tt_tensor *o = slot(&w);
    const tt_tensor *gx = o ? kept(&w, o, tt__rope(o, g, B(n), n->args.s, n->args.interleaved, !n->args.inverse)) : NULL;
    give(&w, gx, &gin[0]);
    return done(&w);
}

/* dropout: g times the forward's mask (0 or 1 / (1 - p)) */
tt_status tt__bw_dropout(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    give(&w, bin(&w, TT_OP_MUL, g, B(n)), &gin[0]);
    return done(&w);
}

/* zero where filled */
tt_status tt__bw_masked_fill(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    tt_tensor *o = slot(&w);
    const tt_tensor *gm = o ? kept(&w, o, tt_masked_fill(o, g, B(n), 0.0)) : NULL;
    give(&w, to_in(&w, n, 0, gm), &gin[0]);
    return done(&w);
}

/* tril and triu: g masked as the forward masked a */
tt_status tt__bw_tri(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    tt_tensor *o = slot(&w);
    if (o) kept(&w, o, n->op == TT_OP_TRIU ? tt_triu(o, g, n->args.start) : tt_tril(o, g, n->args.start));
    give(&w, o, &gin[0]);
    return done(&w);
}

/* cat and stack: each input's part of g, a view (cat: narrowed along d
   at its place; stack: selected at its index). No scratch list: a list
   may be longer than it. */
tt_status tt__bw_cat(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    int d = n->args.d, stack = n->op == TT_OP_STACK;
    int64_t pos = 0;
    tt_status st = TT_OK;
    for (int i = 0; i < n->nin && st == TT_OK; i++) {
        int64_t len = stack ? 1 : n->in[i].shape[d];
        if (need(n, i)) st = stack ? tt__select(&gin[i], g, d, i) : tt__narrow(&gin[i], g, d, pos, len, "cat");
        pos += len;
    }
    return st;
}

/* repeat_interleave: g as [before d, n, r, after d], summed over the r
   repeats (four dims whatever the input's, so never past TT_MAX_DIMS) */
tt_status tt__bw_repeat_interleave(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    int d = n->args.d;
    int64_t split[4] = {1, n->in[0].shape[d], n->args.len, 1};
    for (int i = 0; i < n->in[0].ndim; i++)
        if (i != d) split[i < d ? 0 : 3] *= n->in[0].shape[i];
    g = red(&w, TT_OP_SUM, reshape(&w, g, 4, split), 2, 0);
    give(&w, reshape(&w, g, IN_SHAPE(n, 0)), &gin[0]);
    return done(&w);
}

/* view, reshape, squeeze, contiguous, clone, named, float: g shaped back
   (expand sums its broadcast dims) */
tt_status tt__bw_reshape(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    give(&w, n->op == TT_OP_EXPAND ? to_in(&w, n, 0, g) : reshape(&w, g, IN_SHAPE(n, 0)), &gin[0]);
    return done(&w);
}

tt_status tt__bw_transpose(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    tt_tensor *o = slot(&w);
    if (n->op == TT_OP_T && g->ndim < 2) {     /* t() of a 0-d or 1-D tensor: g as it is */
        give(&w, reshape(&w, g, IN_SHAPE(n, 0)), &gin[0]);
        return done(&w);
    }
    if (o) kept(&w, o, n->op == TT_OP_MT ? tt_mT(o, g) : tt_transpose(o, g, n->args.d, n->args.d2));
    give(&w, o, &gin[0]);
    return done(&w);
}

tt_status tt__bw_permute(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    int inv[TT_MAX_DIMS];
    for (int i = 0; i < g->ndim; i++) inv[n->args.perm[i]] = i;
    tt_tensor *o = slot(&w);
    if (o) kept(&w, o, tt_permute(o, g, inv));
    give(&w, o, &gin[0]);
    return done(&w);
}

tt_status tt__bw_unsqueeze(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    tt_tensor *o = slot(&w);
    if (o) kept(&w, o, tt_squeeze(o, g, n->args.d));
    give(&w, o, &gin[0]);
    return done(&w);
}

/* index_select and gather: g added into zeros where the forward read
   (a repeated index gets the sum of its gradients) */
tt_status tt__bw_index(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    tt_tensor *z = slot(&w);
    if (z) kept(&w, z, tt_zeros(z, TT_FLOAT32, IN_SHAPE(n, 0)));
    if (w.st == TT_OK) {
        const tt_tensor *ix = B(n);
        if (n->op == TT_OP_INDEX_SELECT && n->args.d == 0 && g->dtype == TT_FLOAT32 && tt_is_contiguous(g)
            && tt_is_contiguous(z)) {
            /* an embedding's: g's row k added to z's row index[k], rows in
               order, so every element sums in index_add's order */
            int64_t rows = ix->shape[0], len = rows > 0 ? tt_numel(g) / rows : 0;
            const int64_t *id = tt_data_i64(ix);
            const float *gr = tt_data_f32(g);
            float *zr = tt_data_f32(z);
            for (int64_t k = 0; k < rows; k++) {
                float *dst = zr + (id[k * ix->stride[0]] - 1) * len;
                const float *src = gr + k * len;
                for (int64_t c = 0; c < len; c++) dst[c] += src[c];
            }
        } else {
            tt__index_add(z, n->args.d, ix, n->op == TT_OP_GATHER, g);
        }
    }
    give(&w, z, &gin[0]);
    return done(&w);
}

/* narrow and select: g written into its place in zeros */
tt_status tt__bw_narrow(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    tt_tensor *z = slot(&w);
    if (z) kept(&w, z, tt_zeros(z, TT_FLOAT32, IN_SHAPE(n, 0)));
    if (w.st == TT_OK) {
        tt_tensor part;
        if (n->op == TT_OP_SELECT || n->op == TT_OP_UNBIND) w.st = tt__select(&part, z, n->args.d, n->args.start);
        else w.st = tt__narrow(&part, z, n->args.d, n->args.start, n->args.len, "narrow");
        if (w.st == TT_OK) {
            tt__copy(&part, g);
            tt_tensor_release(&part);
        }
    }
    give(&w, z, &gin[0]);
    return done(&w);
}

/* rearrange: its forward is reshape (into the blocks), permute, reshape;
   g goes back through the three in reverse */
tt_status tt__bw_rearrange(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    scratch w = {0};
    int nb = n->args.d, inv[TT_MAX_DIMS];
    int64_t permuted[TT_MAX_DIMS];
    for (int i = 0; i < nb; i++) {
        permuted[i] = n->args.blocks[n->args.perm[i]];
        inv[n->args.perm[i]] = i;
    }
    g = reshape(&w, g, nb, permuted);
    tt_tensor *o = g ? slot(&w) : NULL;
    if (o) g = kept(&w, o, tt_permute(o, g, inv));
    give(&w, reshape(&w, g, IN_SHAPE(n, 0)), &gin[0]);
    return done(&w);
}

/* reduce and repeat: each one's gradient is the other (pattern.c) */
tt_status tt__bw_reduce(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    return tt__reduce_grad(&gin[0], n->args.spec, (tt_op)n->args.len, A(n), OUT(n), g);
}

tt_status tt__bw_repeat(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    return tt__repeat_grad(&gin[0], n->args.spec, g);
}

/* einsum: each operand's gradient is itself an einsum of g with the
   others (tt__einsum_grad, beside the forward's parser) */
tt_status tt__bw_einsum(const tt__node *n, const tt_tensor *g, tt_tensor *gin)
{
    tt_status st = TT_OK;
    for (int i = 0; i < n->nin && st == TT_OK; i++)
        if (need(n, i)) st = tt__einsum_grad(&gin[i], n->args.spec, n->operands, n->nin, g, i);
    return st;
}
