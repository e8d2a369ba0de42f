/*
** optim.c — optimizers (SGD, AdamW) and gradient clipping (ops layer):
** PyTorch's update rules, each fused into one pass over a parameter's
** data, its gradient and its state; one trace event for a whole step.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tt_internal.h"
#include "kernel/kernels.h"

#define SHAPE_BUF 192

typedef struct param {
    tt_tensor p;                /* our reference: the storage and the gradient record */
    tt_tensor buf, m;           /* SGD: the momentum buffer in buf; AdamW: m, v in buf, m */
    int64_t steps;              /* updates this parameter has had */
} param;

struct tt_optim {
    tt_optim_kind kind;
    tt_optim_opts o;
    int n;
    param ps[];
};

static const char *kind_name(tt_optim_kind k) { return k == TT_OPTIM_SGD ? "SGD" : "AdamW"; }

/* ===== Creation ===== */

static tt_status check_opts(tt_optim_kind kind, const tt_optim_opts *o)
{
    const char *name = kind_name(kind);
    if (!(o->lr >= 0)) return tt__err(TT_EARG, "%s: lr must be >= 0, got %g", name, o->lr);
    if (!(o->weight_decay >= 0))
        return tt__err(TT_EARG, "%s: weight_decay must be >= 0, got %g", name, o->weight_decay);
    if (kind == TT_OPTIM_SGD && !(o->momentum >= 0))
        return tt__err(TT_EARG, "%s: momentum must be >= 0, got %g", name, o->momentum);
    if (kind == TT_OPTIM_ADAMW) {
        if (!(o->beta1 >= 0 && o->beta1 < 1))
            return tt__err(TT_EARG, "%s: betas[1] must be in [0, 1), got %g (decay rates, as {0.9, 0.999})", name, o->beta1);
        if (!(o->beta2 >= 0 && o->beta2 < 1))
            return tt__err(TT_EARG, "%s: betas[2] must be in [0, 1), got %g (decay rates, as {0.9, 0.999})", name, o->beta2);
        if (!(o->eps >= 0)) return tt__err(TT_EARG, "%s: eps must be >= 0, got %g", name, o->eps);
    }
    return TT_OK;
}

/* Parameter i (1-based in messages, as the script's list) must be a
   contiguous float leaf (float32, bfloat16, float16) that requires grad,
   listed once. */
static tt_status check_param(tt_optim_kind kind, int i, const tt_tensor *const *params)
{
    const char *name = kind_name(kind);
    const tt_tensor *t = params[i];
    char s[SHAPE_BUF];
    tt_shape_str(t, s, sizeof s);
    if (!tt_dtype_is_float(t->dtype))
        return tt__err(TT_EARG, "%s: parameter %d %s is %s; only float tensors (float32, bfloat16, float16) "
                       "can be optimized", name, i + 1, s, tt_dtype_name(t->dtype));
    if (!tt_tensor_requires_grad(t))
        return tt__err(TT_EARG, "%s: parameter %d %s does not require grad, so it would never get a "
                       "gradient; hint: p:requires_grad_() before building the optimizer, or leave it out",
                       name, i + 1, s);
    if (t->ag->fn)
        return tt__err(TT_EARG, "%s: parameter %d %s is the result of %s, not a leaf; "
                       "hint: optimize the tensor it was computed from", name, i + 1, s, tt_grad_fn_name(t));
    if (!tt_is_contiguous(t))
        return tt__err(TT_EARG, "%s: parameter %d %s is not contiguous; "
                       "hint: x:contiguous():detach():requires_grad_()", name, i + 1, s);
    for (int j = 0; j < i; j++)
        if (params[j]->ag == t->ag)
            return tt__err(TT_EARG, "%s: parameter %d %s is parameter %d again; list each once",
                           name, i + 1, s, j + 1);
    return TT_OK;
}

tt_status tt_optim_new(tt_optim **out, tt_optim_kind kind, int n, const tt_tensor *const *params,
                       const tt_optim_opts *o)
{
    *out = NULL;
    tt_status st = check_opts(kind, o);
    for (int i = 0; i < n && st == TT_OK; i++) st = check_param(kind, i, params);
    if (st) return st;
    tt_optim *op = calloc(1, sizeof *op + (size_t)n * sizeof(param));
    if (!op) return tt__err(TT_ENOMEM, "%s: out of memory", kind_name(kind));
    op->kind = kind;
    op->o = *o;
    op->n = n;
    for (int i = 0; i < n; i++) {
        param *p = &op->ps[i];
        p->p = *params[i];          /* a second handle on the same tensor and record */
        tt__storage_retain(p->p.storage);
        p->p.ag->refs++;
    }
    *out = op;
    return TT_OK;
}

void tt_optim_free(tt_optim *o)
{
    if (!o) return;
    for (int i = 0; i < o->n; i++) {
        tt_tensor_release(&o->ps[i].p);
        tt_tensor_release(&o->ps[i].buf);
        tt_tensor_release(&o->ps[i].m);
    }
    free(o);
}

tt_optim_opts *tt_optim_options(tt_optim *o) { return &o->o; }
int tt_optim_count(const tt_optim *o) { return o->n; }
tt_optim_kind tt_optim_kind_of(const tt_optim *o) { return o->kind; }

void tt_optim_zero_grad(tt_optim *o)
{
    for (int i = 0; i < o->n; i++) tt_set_grad(&o->ps[i].p, NULL);   /* cannot fail for NULL */
}

/* ===== The update loops =====
   n elements of p (updated in place), g, and the state; float math in the
   order of PyTorch's single-tensor ops, the scalars computed in double. */

static void sgd_update(float *p, const float *g, float *buf, int64_t n, const tt_optim_opts *o, int first)
{
    const float lr = (float)o->lr, wd = (float)o->weight_decay, mom = (float)o->momentum;
    for (int64_t i = 0; i < n; i++) {
        float d = g[i];
        if (wd != 0) d += wd * p[i];
        if (buf) d = buf[i] = first ? d : mom * buf[i] + d;
        p[i] -= lr * d;
    }
}

static void adamw_update(float *p, const float *g, float *m, float *v, int64_t n, const tt_optim_opts *o,
                         int64_t t)
{
    const double bc1 = 1 - pow(o->beta1, (double)t), bc2 = 1 - pow(o->beta2, (double)t);
    const float decay = (float)(1 - o->lr * o->weight_decay);
    const float b1c = (float)(1 - o->beta1), b2 = (float)o->beta2, b2c = (float)(1 - o->beta2);
    const float step_size = (float)(o->lr / bc1), bc2_sqrt = (float)sqrt(bc2), eps = (float)o->eps;
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i], pi = p[i] * decay;
        m[i] += b1c * (gi - m[i]);                  /* m.lerp_(g, 1 - b1) */
        v[i] = v[i] * b2 + b2c * gi * gi;
        float denom = sqrtf(v[i]) / bc2_sqrt + eps;
        p[i] = pi - step_size * (m[i] / denom);
    }
}

/* A 16-bit parameter keeps its state in its own dtype, as PyTorch's
   zeros_like(p): each chunk of p, g and the state is widened to float32,
   updated by the float32 loop (which uses the new state as computed), and
   p and the state are rounded once as they are stored (to nearest even;
   PyTorch's fused updates do the same). An update
   below half a unit in the last place of p is lost in the rounding: the
   reason mixed-precision training keeps float32 master weights. */
#define HALF_CHUNK 256

static void update_half(const tt_optim *o, int bf16, uint16_t *p, const uint16_t *g, uint16_t *buf,
                        uint16_t *m, int64_t n, int first, int64_t t)
{
    float fp[HALF_CHUNK], fg[HALF_CHUNK], fb[HALF_CHUNK], fm[HALF_CHUNK];
    for (int64_t i = 0; i < n; i += HALF_CHUNK) {
        int64_t k = n - i < HALF_CHUNK ? n - i : HALF_CHUNK;
        tk_half_to_f32(bf16, k, p + i, fp);
        tk_half_to_f32(bf16, k, g + i, fg);
        if (buf) tk_half_to_f32(bf16, k, buf + i, fb);
        if (m) tk_half_to_f32(bf16, k, m + i, fm);
        if (o->kind == TT_OPTIM_SGD) sgd_update(fp, fg, buf ? fb : NULL, k, &o->o, first);
        else adamw_update(fp, fg, fm, fb, k, &o->o, t);
        tk_half_from_f32(bf16, k, fp, p + i);
        if (buf) tk_half_from_f32(bf16, k, fb, buf + i);
        if (m) tk_half_from_f32(bf16, k, fm, m + i);
    }
}

/* FLOPs a parameter element costs in one step. */
static double step_flops(const tt_optim *o)
{
    if (o->kind == TT_OPTIM_ADAMW) return 14;   /* decay 1, m 3, v 4, denominator 3, update 3 */
    return 2 + (o->o.weight_decay != 0 ? 2 : 0) + (o->o.momentum != 0 ? 2 : 0);
}

/* "50,240" */
static void fmt_count(char *buf, size_t n, int64_t v)
{
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%lld", (long long)v), k = 0;
    size_t j = 0;
    for (int i = 0; i < len && j + 1 < n; i++) {
        buf[j++] = digits[i];
        k = len - i - 1;
        if (k > 0 && k % 3 == 0 && j + 1 < n) buf[j++] = ',';
    }
    buf[j] = 0;
}


static void *state_data(const tt_tensor *t)
{
    return tt__is_half(t->dtype) ? (void *)tt_data_u16(t) : (void *)tt_data_f32(t);
}

/* One parameter's update; the state appears at its first. */
static tt_status step_one(tt_optim *o, param *p, const tt_tensor *grad)
{
    const char *op = o->kind == TT_OPTIM_SGD ? "sgd.step" : "adamw.step";
    tt_tensor gc = {0};
    tt_status st = TT_OK;
    if (!tt_is_contiguous(grad)) {           /* a gradient set by hand may be any view */
        if ((st = tt__clone(&gc, grad, op))) return st;
        grad = &gc;
    }
    int first = p->steps == 0;
    int stateful = o->kind == TT_OPTIM_ADAMW || o->o.momentum != 0;
    tt_dtype dt = p->p.dtype;
    if (first && stateful) st = tt__alloc(&p->buf, op, dt, p->p.ndim, p->p.shape, NULL);
    if (!st && first && o->kind == TT_OPTIM_ADAMW) st = tt__alloc(&p->m, op, dt, p->p.ndim, p->p.shape, NULL);
    if (st) {
        tt_tensor_release(&p->buf);
        tt_tensor_release(&gc);
        return st;
    }
    int64_t n = tt_numel(&p->p);
    if (first && o->kind == TT_OPTIM_ADAMW) {   /* zero bits are +0 in every float dtype */
        memset(state_data(&p->buf), 0, (size_t)n * tt_dtype_size(dt));
        memset(state_data(&p->m), 0, (size_t)n * tt_dtype_size(dt));
    }
    p->steps++;
    p->p.storage->version++;                /* written in place: a graph that saved p is stale */
    if (tt__is_half(dt))
        update_half(o, dt == TT_BFLOAT16, tt_data_u16(&p->p), tt_data_u16(grad),
                    stateful ? tt_data_u16(&p->buf) : NULL, o->kind == TT_OPTIM_ADAMW ? tt_data_u16(&p->m) : NULL,
                    n, first, p->steps);
    else if (o->kind == TT_OPTIM_SGD)
        sgd_update(tt_data_f32(&p->p), tt_data_f32(grad), stateful ? tt_data_f32(&p->buf) : NULL, n, &o->o, first);
    else
        adamw_update(tt_data_f32(&p->p), tt_data_f32(grad), tt_data_f32(&p->m), tt_data_f32(&p->buf), n, &o->o,
                     p->steps);
    tt_tensor_release(&gc);
    return TT_OK;
}

tt_status tt_optim_step(tt_optim *o)
{
    tt__opscope sc = tt__op_enter();
    tt_event ev;
    tt__event_init(&ev, o->kind == TT_OPTIM_SGD ? TT_OP_SGD_STEP : TT_OP_ADAMW_STEP, NULL, NULL, NULL, NULL);
    ev.phase = TT_PHASE_STEP;
    int updated = 0;
    int64_t elems = 0;
    double elem_bytes = 0;
    tt_status st = TT_OK;
    for (int i = 0; i < o->n && st == TT_OK; i++) {
        const tt_tensor *g = tt_grad(&o->ps[i].p);
        if (!g) continue;                      /* no gradient yet: skipped, as PyTorch */
        st = step_one(o, &o->ps[i], g);
        updated++;
        elems += tt_numel(&o->ps[i].p);
        elem_bytes += (double)tt_numel(&o->ps[i].p) * (double)tt_dtype_size(o->ps[i].p.dtype);
    }
    int stateful = o->kind == TT_OPTIM_ADAMW ? 2 : o->o.momentum != 0;
    ev.flops = step_flops(o) * (double)elems;
    ev.bytes = elem_bytes * (3 + 2 * stateful);   /* p read and written, g read, the state */
    char a[160];                               /* the summary the trace shows; lives until the event is out */
    tt__arg_int(&ev, "params", NULL, updated);
    tt__arg_int(&ev, "elements", NULL, elems);
    if (tt__tracing()) {
        char cnt[32];
        fmt_count(cnt, sizeof cnt, elems);
        if (updated == o->n)
            snprintf(a, sizeof a, "%d param%s, %s elements", updated, updated == 1 ? "" : "s", cnt);
        else
            snprintf(a, sizeof a, "%d of %d params (the others have no grad), %s elements", updated, o->n, cnt);
        tt__arg_str(&ev, "summary", "%s", a);
    }
    return tt__op_leave(sc, st, &ev);
}

/* ===== Clipping ===== */

tt_status tt_clip_grad_norm(int n, tt_tensor *const *params, double max_norm, double *total)
{
    tt__opscope sc = tt__op_enter();
    tt_event ev;
    tt__event_init(&ev, TT_OP_CLIP_GRAD_NORM, NULL, NULL, NULL, NULL);
    ev.phase = TT_PHASE_STEP;
    double sumsq = 0, grad_bytes = 0;
    int64_t elems = 0;
    int ngrads = 0;
    for (int i = 0; i < n; i++) {
        const tt_tensor *g = tt_grad(params[i]);
        if (!g) continue;
        int64_t k = tt_numel(g);
        const float *x = g->dtype == TT_FLOAT32 && tt_is_contiguous(g) ? tt_data_f32(g) : NULL;
        for (int64_t j = 0; j < k; j++) {
            double v = x ? (double)x[j] : tt_get(g, j);
            sumsq += v * v;
        }
        elems += k;
        grad_bytes += (double)k * (double)tt_dtype_size(g->dtype);
        ngrads++;
    }
    double norm = sqrt(sumsq), coef = max_norm / (norm + 1e-6);
    *total = norm;
    tt_status st = TT_OK;
    int scaled = !(coef >= 1.0);               /* PyTorch clamps coef to 1; NaN scales too */
    for (int i = 0; i < n && scaled && st == TT_OK; i++) {
        const tt_tensor *g = tt_grad(params[i]);
        if (!g) continue;
        tt_tensor c;
        st = tt_binary_scalar(&c, TT_OP_MUL, g, coef, 0);
        if (st == TT_OK) {
            st = tt_set_grad(params[i], &c);
            tt_tensor_release(&c);
        }
    }
    ev.flops = 2.0 * (double)elems + (scaled ? (double)elems : 0);
    ev.bytes = grad_bytes * (scaled ? 3 : 1);
    char a[160];                               /* the summary the trace shows; lives until the event is out */
    tt__arg_num(&ev, "max_norm", NULL, max_norm);
    tt__arg_num(&ev, "norm", NULL, norm);
    if (tt__tracing()) {
        char nb[32], mb[32];
        tt_fmt_scalar(nb, sizeof nb, norm);
        tt_fmt_scalar(mb, sizeof mb, max_norm);
        if (scaled) snprintf(a, sizeof a, "%d grads, norm %s > %s: scaled by %.4g", ngrads, nb, mb, coef);
        else snprintf(a, sizeof a, "%d grads, norm %s <= %s: unchanged", ngrads, nb, mb);
        tt__arg_str(&ev, "summary", "%s", a);
    }
    return tt__op_leave(sc, st, &ev);
}
