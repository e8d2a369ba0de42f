/*
** autograd.c — reverse-mode gradients: recording (tt__record, called by
** the op front-ends) and the engine (tt_backward). The backward of each op
** (named in its row of the op table) is core/ops/backward.c; the graph's
** memory is core/tensor/graph.c. A backward is built from the public ops,
** run with grad mode off; each node's ops fold into one trace row (a
** tt__group), phase backward.
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
