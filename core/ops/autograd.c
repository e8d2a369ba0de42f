/*
** autograd.c — reverse-mode gradients: recording (tt__record, called by
** the op front-ends), the backward of each op (named in its row of the op
** table) and the engine (tt_backward). The graph's memory is
** core/tensor/graph.c. A backward is built from the public ops, run with
** grad mode off; each node's ops fold into one trace row (a tt__group),
** phase backward.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernels.h"
#include "tt_internal.h"

#define SHAPE_BUF 256

int tt__grad_enabled = 1;

int tt_set_grad_enabled(int on)
{
    int was = tt__grad_enabled;
    tt__grad_enabled = on != 0;
    return was;
}

int tt_is_grad_enabled(void) { return tt__grad_enabled; }

/* ===== Records ===== */

static int requires(const tt_tensor *t) { return t && t->ag && t->ag->requires_grad; }

/* TT_ENOMEM "op: what: " and the message of the allocation that failed */
static tt_status out_of_memory(const char *op, const char *what)
{
    char why[TT__ERRMSG_SIZE];
    snprintf(why, sizeof why, "%s", tt_errmsg());
    return tt__err(TT_ENOMEM, "%s: %s%s", op, what, why);
}

tt_status tt_requires_grad_(tt_tensor *t, int flag)
{
    char s[SHAPE_BUF];
    if (!tt_dtype_is_float(t->dtype))
        return tt__err(TT_EARG, "requires_grad_: only float tensors (float32, bfloat16, float16) can require "
                       "gradients, got %s %s; hint: x:float():requires_grad_()",
                       tt_dtype_name(t->dtype), tt_shape_str(t, s, sizeof s));
    if (t->ag && t->ag->fn && !flag)
        return tt__err(TT_EARG, "requires_grad_: %s is the result of %s, not a leaf; "
                       "hint: x:detach() gives a tensor outside the graph", tt_shape_str(t, s, sizeof s),
                       tt_grad_fn_name(t));
    if (!t->ag && !flag) return TT_OK;
    if (!t->ag && !(t->ag = tt__ag_new()))
        return out_of_memory("requires_grad_", "");
    t->ag->requires_grad = flag != 0;
    return TT_OK;
}

int tt_tensor_requires_grad(const tt_tensor *t) { return requires(t); }

const tt_tensor *tt_grad(const tt_tensor *t)
{
    return t->ag && t->ag->grad && t->ag->grad->storage ? t->ag->grad : NULL;
}

tt_status tt_set_grad(tt_tensor *t, const tt_tensor *g)
{
    char s[SHAPE_BUF], sg[SHAPE_BUF];
    if (g && (g->dtype != (tt_dtype_is_float(t->dtype) ? t->dtype : TT_FLOAT32) || g->ndim != t->ndim
              || memcmp(g->shape, t->shape, (size_t)t->ndim * sizeof(int64_t)) != 0))
        return tt__err(TT_EARG, "grad: expects %s %s for a tensor %s, got %s %s",
                       tt_dtype_name(tt_dtype_is_float(t->dtype) ? t->dtype : TT_FLOAT32),
                       tt_shape_str(t, s, sizeof s), tt_shape_str(t, s, sizeof s),
                       tt_dtype_name(g->dtype), tt_shape_str(g, sg, sizeof sg));
    if (!t->ag) {
        if (!g) return TT_OK;
        if (!(t->ag = tt__ag_new())) return out_of_memory("grad", "");
    }
    if (t->ag->grad) tt_tensor_release(t->ag->grad);
    if (g) {
        tt_tensor *slot = tt__ag_grad_slot(t->ag);
        if (!slot) return out_of_memory("grad", "");
        tt__view_of(slot, g);
        slot->label = g->label;
    }
    return TT_OK;
}

tt_status tt_detach(tt_tensor *out, const tt_tensor *a)
{
    tt__view_of(out, a);
    out->label = a->label;
    return TT_OK;
}

const char *tt_grad_fn_name(const tt_tensor *t)
{
    static const char *names[TT_OP_COUNT];
    static char buf[TT_OP_COUNT][40];
    if (!t->ag || !t->ag->fn) return NULL;
    tt_op op = t->ag->fn->op;
    if (!names[op]) {
        /* PyTorch's style: log_softmax -> LogSoftmaxBackward */
        const char *n = tt_op_name(op);
        size_t k = 0;
        for (int up = 1; *n && k + sizeof "Backward" < sizeof buf[op]; n++) {
            if (*n == '_' || *n == '.') { up = 1; continue; }
            buf[op][k++] = up && *n >= 'a' && *n <= 'z' ? (char)(*n - 32) : *n;
            up = 0;
        }
        memcpy(buf[op] + k, "Backward", sizeof "Backward");
        names[op] = buf[op];
    }
    return names[op];
}

/* ===== Recording ===== */

/* A saved tensor: the same view, outside the graph, without names (a
   gradient is unnamed, so its math never meets a name clash). */
static void save(tt_tensor *dst, const tt_tensor *src)
{
    tt__view_of(dst, src);
    for (int i = 0; i < TT_MAX_DIMS; i++) dst->names[i] = NULL;
}

/* The saved slots op's node needs: up to the last its row asks for. */
static int saved_slots(int saves)
{
    return saves & TT__SAVE_EXTRA ? TT__AG_SAVED : saves & TT__SAVE_C ? 4 : saves & TT__SAVE_OUT ? 3
         : saves & TT__SAVE_B ? 2 : saves & TT__SAVE_A ? 1 : 0;
}

static tt_status no_room(tt_tensor *out, tt_op op)
{
    tt_tensor_release(out);
    return out_of_memory(tt_op_name(op), "recording its gradient: ");
}

/* out = op(in[0..nin)); in ends at its first NULL */
static tt_status record_n(tt_tensor *out, tt_op op, const tt_tensor *const *in, int nin, const tt__agargs *args)
{
    int any = 0, n_in = 0;
    for (; n_in < nin && in[n_in]; n_in++) any |= requires(in[n_in]) && tt_dtype_is_float(in[n_in]->dtype);
    if (!any || !tt_dtype_is_float(out->dtype)) return TT_OK;     /* bool results never require grad */
    int saves = tt__op_def(op)->saves;
    if (args && args->has_s && (op == TT_OP_MUL || (op == TT_OP_DIV && !args->first)))
        saves = 0;                          /* x * s, x / s: the backward reads s alone (nothing to go stale) */
    tt__node *n = tt__node_new(op, in, n_in, saved_slots(saves), out);
    if (!n) return no_room(out, op);
    if (args) n->args = *args;
    /* slots a, b, out, c as the row saves them; an extra-saving op's front-end may fill any */
    n->filled = saves & TT__SAVE_EXTRA ? (1u << TT__AG_SAVED) - 1
              : (saves & TT__SAVE_A ? 1u : 0) | (saves & TT__SAVE_B ? 2u : 0) | (saves & TT__SAVE_OUT ? 4u : 0)
                | (saves & TT__SAVE_C ? 8u : 0);
    for (int i = 0; i < n_in; i++) {
        if (!requires(in[i]) || !tt_dtype_is_float(in[i]->dtype)) continue;
        tt_autograd *ag = in[i]->ag;
        tt__edge *e = &n->in[i];
        if (ag->fn) (e->next = ag->fn)->refs++;
        else (e->leaf = ag)->refs++;
    }
    if ((saves & TT__SAVE_A) && n_in > 0) save(&n->saved[0], in[0]);
    if ((saves & TT__SAVE_B) && n_in > 1) save(&n->saved[1], in[1]);
    if (saves & TT__SAVE_OUT) save(&n->saved[2], out);
    if ((saves & TT__SAVE_C) && n_in > 2) save(&n->saved[3], in[2]);
    if ((saves & TT__SAVE_LIST)
        && !(n->operands = calloc((size_t)n->nin, sizeof *n->operands + sizeof(int64_t)))) {
        tt__ag_release(&n->result);
        tt__err(TT_ENOMEM, "out of memory");
        return no_room(out, op);
    }
    for (int i = 0; n->operands && i < n->nin; i++) save(&n->operands[i], in[i]);
    tt__node_note_versions(n);
    out->ag = &n->result;
    return TT_OK;
}

static int64_t *operand_versions(const tt__node *n) { return (int64_t *)(n->operands + n->nin); }

void tt__node_note_versions(tt__node *n)
{
    for (int i = 0; i < n->nsaved; i++)
        n->saved_version[i] = n->saved[i].storage ? n->saved[i].storage->version : 0;
    for (int i = 0; n->operands && i < n->nin; i++) operand_versions(n)[i] = n->operands[i].storage->version;
}

tt_status tt__record(tt_tensor *out, tt_op op, const tt_tensor *a, const tt_tensor *b,
                     const tt_tensor *c, const tt__agargs *args)
{
    const tt_tensor *in[TT__AG_IN] = {a, b, c};
    return record_n(out, op, in, TT__AG_IN, args);
}

tt_status tt__record_list(tt__opscope sc, tt_tensor *out, tt_op op, const tt_tensor *const *list, int n,
                          const tt__agargs *args)
{
    for (int i = 0; i < n; i++)
        if (tt__grad_wanted(sc, list[i], NULL)) return record_n(out, op, list, n, args);
    return TT_OK;
}

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

/* ===== The engine ===== */

/* Which of x's saved tensors slot i is, in words. */
static void saved_role(const tt__node *x, int i, char *buf, size_t n)
{
    if (i == 2) snprintf(buf, n, "the result");
    else if (i < 4) snprintf(buf, n, "input %d", i == 3 ? 3 : i + 1);
    else if (x->op == TT_OP_SDPA && i == 5) snprintf(buf, n, "the mask");
    else if (i == 4 && (x->op == TT_OP_MAX || x->op == TT_OP_MIN)) snprintf(buf, n, "the indices");
    else snprintf(buf, n, "a tensor it saved");
}

/* PyTorch's rule: a tensor saved for x's backward and written in place
   since (its storage's version moved on) would give a wrong gradient. */
static tt_status check_versions(const tt__node *x)
{
    const tt_tensor *t = NULL;
    int64_t want = 0;
    char role[40] = "", s[SHAPE_BUF];
    for (int i = 0; i < x->nsaved && !t; i++)
        if ((x->filled >> i & 1) && x->saved[i].storage && x->saved[i].storage->version != x->saved_version[i]) {
            t = &x->saved[i];
            want = x->saved_version[i];
            saved_role(x, i, role, sizeof role);
        }
    for (int i = 0; x->operands && i < x->nin && !t; i++)
        if (x->operands[i].storage->version != operand_versions(x)[i]) {
            t = &x->operands[i];
            want = operand_versions(x)[i];
            snprintf(role, sizeof role, "input %d", i + 1);
        }
    if (!t) return TT_OK;
    const tt_tensor result = {.ag = (tt_autograd *)&x->result};  /* for its grad_fn's name */
    return tt__err(TT_EARG, "backward: one of the variables needed for gradient computation has been modified by "
                   "an inplace operation: %s %s, %s of %s (%s), is at version %lld; expected version %lld "
                   "instead; hint: an optimizer step or an in-place op (add_, masked_fill_, ...) wrote into it "
                   "after the forward: run the forward again after the change, or change a clone()",
                   tt_shape_str(t, s, sizeof s), tt_dtype_name(t->dtype), role, tt_op_name(x->op),
                   tt_grad_fn_name(&result), (long long)t->storage->version, (long long)want);
}

static tt_status no_backward(tt_op op)
{
    char list[512] = "";
    size_t len = 0;
    for (int i = 0; i < TT_OP_COUNT; i++) {
        const tt__opdef *d = tt__op_def((tt_op)i);
        if (d && d->backward && len + 24 < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", d->name);
    }
    return tt__err(TT_EARG, "backward: no gradient for '%s' yet; ops with gradients: %s", tt_op_name(op), list);
}

/* g added into *acc (empty: g taken as is). Takes g's reference. */
static tt_status accumulate(tt_tensor *acc, tt_tensor *g)
{
    if (!acc->storage) {
        *acc = *g;
        return TT_OK;
    }
    tt_tensor sum;
    tt_status st = tt_binary(&sum, TT_OP_ADD, acc, g);
    tt_tensor_release(g);
    if (st) return st;
    tt_tensor_release(acc);
    *acc = sum;
    return TT_OK;
}

/* Into a leaf's .grad, contiguous as PyTorch keeps it. */
static tt_status accumulate_leaf(tt_autograd *r, tt_tensor *g)
{
    if (!tt_is_contiguous(g)) {
        tt_tensor c;
        tt_status st = tt__clone(&c, g, "backward");
        tt_tensor_release(g);
        if (st) return st;
        *g = c;
    }
    for (int i = 0; i < TT_MAX_DIMS; i++) g->names[i] = NULL;
    g->label = NULL;
    tt_tensor *slot = tt__ag_grad_slot(r);
    if (!slot) {
        tt_tensor_release(g);
        return out_of_memory("backward", "");
    }
    return accumulate(slot, g);
}

/* The engine's arrays (a node list, the ready stack, the gradients
   arriving) are as long as the graph: a million-op chain's take 250 MB,
   so they count against the memory cap as the graph does. */
static void *engine_realloc(void *p, size_t old, size_t bytes)
{
    if (bytes > old && tt__mem_reserve((int64_t)(bytes - old))) {
        char why[TT__ERRMSG_SIZE];
        snprintf(why, sizeof why, "%s", tt_errmsg());
        tt__err(TT_ENOMEM, "backward: the engine's lists for this graph: %s", why);
        return NULL;
    }
    void *q = realloc(p, bytes);
    if (!q) {
        if (bytes > old) tt__mem_release((int64_t)(bytes - old));
        tt__err(TT_ENOMEM, "backward: out of memory");
    }
    return q;
}

static void engine_free(void *p, size_t bytes)
{
    free(p);
    if (p) tt__mem_release((int64_t)bytes);
}

/* The nodes reachable from root, each once, in *list (engine_realloc'd,
   *count of them in a block for *cap); pending counts the edges into
   each from the others. */
static tt_status collect(tt__node *root, tt__node ***list, int64_t *count, int64_t *capacity)
{
    static unsigned epoch;
    unsigned mark = ++epoch;
    int64_t n = 0, cap = 64, top = 0;
    tt__node **all = engine_realloc(NULL, 0, (size_t)cap * sizeof *all);
    if (!all) return TT_ENOMEM;
    root->mark = mark;
    root->pending = 0;
    all[n++] = root;
    /* all[] doubles as the stack: nodes [top, n) are still to expand */
    for (; top < n; top++) {
        tt__node *x = all[top];
        if (x->freed) {
            engine_free(all, (size_t)cap * sizeof *all);
            return tt__err(TT_EARG, "backward: trying to backward through the graph a second time (or directly "
                           "access saved tensors after they have already been freed): %s's saved tensors were "
                           "freed by the first backward(); hint: y:backward(nil, {retain_graph = true}) the "
                           "first time keeps them, or run the forward again", tt_op_name(x->op));
        }
        for (int i = 0; i < x->nin; i++) {
            tt__node *m = x->in[i].next;
            if (!m) continue;
            if (m->mark != mark) {
                if (n == cap) {
                    tt__node **more = engine_realloc(all, (size_t)cap * sizeof *all, (size_t)cap * 2 * sizeof *all);
                    if (!more) {
                        engine_free(all, (size_t)cap * sizeof *all);
                        return TT_ENOMEM;
                    }
                    all = more;
                    cap *= 2;
                }
                m->mark = mark;
                m->pending = 0;
                all[n++] = m;
            }
            m->pending++;
        }
    }
    *list = all;
    *count = n;
    *capacity = cap;
    return TT_OK;
}

/* A gradient's header as the trace shows it: the dims and label of the
   tensor it is the gradient of (the engine's gradients carry none). */
static tt_tensor shown_as(const tt_tensor *g, const char *const *names, const char *label)
{
    tt_tensor t = *g;
    if (t.ndim > 0) memcpy(t.names, names, (size_t)t.ndim * sizeof t.names[0]);
    t.label = label;
    return t;
}

/* Runs x's backward as one trace row: the gradient arriving (`arrived`,
   as it came; g is it in float32), the gradients gin[] it gives, each
   rounded into its input's dtype (up to TT_TRACE_MAX_INPUTS shown, in the
   dtypes they have), the FLOPs of the ops it ran. */
static tt_status run_node(const tt__node *x, const tt__opdef *def, const tt_tensor *arrived, const tt_tensor *g,
                          tt_tensor *gin)
{
    tt__group grp;
    tt__group_enter(&grp);
    tt_status st = def->backward(x, g, gin);
    for (int i = 0; i < x->nin && st == TT_OK; i++) {
        const tt__edge *e = &x->in[i];
        tt_tensor c;
        if (gin[i].storage && gin[i].dtype != e->dtype && tt_dtype_is_float(e->dtype)
            && (st = tt_to_dtype(&c, &gin[i], e->dtype)) == TT_OK) {
            c.label = gin[i].label;
            tt_tensor_release(&gin[i]);
            gin[i] = c;
        }
    }
    tt_event ev;
    tt_tensor gshown, shown[TT_TRACE_MAX_INPUTS];
    if (st == TT_OK) {
        gshown = shown_as(arrived, x->out_names, NULL);
        tt__event_init(&ev, x->op, NULL, &gshown, NULL, NULL);
        ev.phase = TT_PHASE_BACKWARD;
        for (int i = 0; i < x->nin; i++) {
            const tt__edge *e = &x->in[i];
            if (!gin[i].storage || !(e->next || (e->leaf && e->leaf->requires_grad))) continue;
            ev.ngrads_total++;
            if (ev.ngrads < TT_TRACE_MAX_INPUTS) {
                shown[ev.ngrads] = shown_as(&gin[i], e->names, e->label);
                ev.grads[ev.ngrads] = &shown[ev.ngrads];
                ev.ngrads++;
            }
        }
        ev.output = ev.ngrads ? ev.grads[0] : NULL;
        ev.view = ev.output && ev.output->storage == g->storage;   /* a view's backward is a view */
    }
    return tt__group_leave(&grp, st, &ev);
}

/* Runs the nodes in an order where each comes after every node that feeds
   it a gradient (Kahn's, with an explicit stack: no recursion however long
   the chain). Gradients meet in a fixed order, so results are the same
   every run. */
static tt_status run(tt__node **all, int64_t count)
{
    tt__node **ready = engine_realloc(NULL, 0, (size_t)count * sizeof *ready);
    if (!ready) return TT_ENOMEM;
    int64_t top = 0;
    ready[top++] = all[0];
    tt_status st = TT_OK;
    while (top > 0 && st == TT_OK) {
        tt__node *x = ready[--top];
        const tt__opdef *def = tt__op_def(x->op);
        if (!def->backward) {
            st = no_backward(x->op);
            break;
        }
        /* a list op's inputs may outnumber the few on the stack */
        tt_tensor few[TT__AG_IN] = {{0}};
        tt_tensor *gin = x->nin <= TT__AG_IN ? few : calloc((size_t)x->nin, sizeof *gin);
        if (!gin) {
            st = tt__err(TT_ENOMEM, "backward: out of memory");
            break;
        }
        st = check_versions(x);
        /* a 16-bit gradient arriving: the backward computes in float32
           (the saved tensors promote), each input's gradient is rounded
           once into that input's dtype (run_node) */
        tt_tensor g32 = {0};
        const tt_tensor *g = x->acc;
        if (st == TT_OK) st = tt__widen(&g32, "backward", &g);
        if (st == TT_OK) st = run_node(x, def, x->acc, g, gin);
        tt_tensor_release(&g32);
        tt_tensor_release(x->acc);
        for (int i = 0; i < x->nin; i++) {
            tt__edge *e = &x->in[i];
            if (!gin[i].storage) continue;
            if (st == TT_OK && e->leaf && e->leaf->requires_grad) st = accumulate_leaf(e->leaf, &gin[i]);
            else if (st == TT_OK && e->next) {
                st = accumulate(e->next->acc, &gin[i]);
                if (--e->next->pending == 0) ready[top++] = e->next;
            } else {
                tt_tensor_release(&gin[i]);
            }
        }
        if (gin != few) free(gin);
    }
    engine_free(ready, (size_t)count * sizeof *ready);
    return st;
}

tt_status tt_backward(const tt_tensor *root, const tt_tensor *grad) { return tt_backward_retain(root, grad, 0); }

tt_status tt_backward_retain(const tt_tensor *root, const tt_tensor *grad, int retain_graph)
{
    char s[SHAPE_BUF], sg[SHAPE_BUF];
    if (!requires(root))
        return tt__err(TT_EARG, "backward: %s does not require grad and has no grad_fn; "
                       "hint: x:requires_grad_() on the inputs before the forward", tt_shape_str(root, s, sizeof s));
    if (!grad && tt_numel(root) != 1)
        return tt__err(TT_EARG, "backward: grad can be implicitly created only for scalar outputs; got %s; "
                       "hint: y:sum():backward() or y:backward(g)", tt_shape_str(root, s, sizeof s));
    if (grad && (grad->dtype != root->dtype || grad->ndim != root->ndim
                 || memcmp(grad->shape, root->shape, (size_t)root->ndim * sizeof(int64_t)) != 0))
        return tt__err(TT_EARG, "backward: grad must be %s shaped as the output %s, got %s %s",
                       tt_dtype_name(root->dtype), tt_shape_str(root, s, sizeof s), tt_dtype_name(grad->dtype),
                       tt_shape_str(grad, sg, sizeof sg));
    tt__opscope sc = tt__op_enter();
    int was = tt_set_grad_enabled(0);
    tt_tensor g0;
    tt_status st = grad ? (tt__view_of(&g0, grad), TT_OK) : tt_ones(&g0, root->dtype, root->ndim, root->shape);
    for (int i = 0; i < TT_MAX_DIMS; i++) g0.names[i] = NULL;
    tt__node *fn = root->ag->fn;
    if (st == TT_OK && !fn) {
        st = accumulate_leaf(root->ag, &g0);    /* a leaf's own backward: its grad is g */
    } else if (st == TT_OK) {
        tt__node **all = NULL;
        int64_t count = 0, cap = 0;
        st = collect(fn, &all, &count, &cap);
        /* the gradients arriving at each node: only while a backward runs */
        tt_tensor *accs = st == TT_OK ? engine_realloc(NULL, 0, (size_t)count * sizeof *accs) : NULL;
        if (st == TT_OK && !accs) st = TT_ENOMEM;
        if (accs) memset(accs, 0, (size_t)count * sizeof *accs);
        if (st == TT_OK) {
            for (int64_t i = 0; i < count; i++) all[i]->acc = &accs[i];
            accs[0] = g0;
            st = run(all, count);
            for (int64_t i = 0; i < count; i++) {
                tt_tensor_release(&accs[i]);
                all[i]->acc = NULL;
                if (!retain_graph) tt__node_free_saved(all[i]);
            }
        } else {
            tt_tensor_release(&g0);
        }
        engine_free(accs, (size_t)count * sizeof *accs);
        engine_free(all, (size_t)cap * sizeof *all);
    }
    tt_set_grad_enabled(was);
    tt__op_leave(sc, TT_EARG, NULL);   /* not TT_OK: the backward's ops emit no event */
    return st;
}
