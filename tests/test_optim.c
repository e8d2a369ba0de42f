/*
** test_optim.c — SGD and AdamW against a float64 reference of PyTorch's
** update rules over several steps (weight decay, momentum, betas, a
** parameter without a gradient on some steps, a strided gradient), the
** optimizer's errors, one trace event a step, and clip_grad_norm.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tt.h"

#define NP 3
#define MAXN 128

/* Awkward sizes: not multiples of any SIMD width, a single element. */
static const int64_t SHAPES[NP][2] = {{7, 13}, {5, 0}, {1, 0}};
static const int NDIM[NP] = {2, 1, 1};

static uint64_t rng = 12345;
static double uniform(void)             /* [-1, 1), independent of tt_rand */
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

static int64_t count(int i) { return NDIM[i] == 2 ? SHAPES[i][0] * SHAPES[i][1] : SHAPES[i][0]; }

typedef struct ref {
    double p[NP][MAXN], buf[NP][MAXN], m[NP][MAXN];
    int steps[NP];
} ref;

static void ref_sgd(ref *r, int i, const double *g, const tt_optim_opts *o)
{
    for (int64_t j = 0; j < count(i); j++) {
        double d = g[j] + o->weight_decay * r->p[i][j];
        if (o->momentum != 0) d = r->buf[i][j] = r->steps[i] == 0 ? d : o->momentum * r->buf[i][j] + d;
        r->p[i][j] -= o->lr * d;
    }
    r->steps[i]++;
}

static void ref_adamw(ref *r, int i, const double *g, const tt_optim_opts *o)
{
    int t = ++r->steps[i];
    double bc1 = 1 - pow(o->beta1, t), bc2 = 1 - pow(o->beta2, t);
    for (int64_t j = 0; j < count(i); j++) {
        double *p = &r->p[i][j], *m = &r->m[i][j], *v = &r->buf[i][j];
        *p *= 1 - o->lr * o->weight_decay;
        *m = o->beta1 * *m + (1 - o->beta1) * g[j];
        *v = o->beta2 * *v + (1 - o->beta2) * g[j] * g[j];
        *p -= o->lr / bc1 * *m / (sqrt(*v) / sqrt(bc2) + o->eps);
    }
}

static int events[TT_OP_COUNT];
static double event_flops;
static void count_event(const tt_event *ev, void *ud)
{
    (void)ud;
    events[ev->op]++;
    event_flops = ev->flops;
}

/* steps updates of three parameters against the reference; parameter 2
   gets no gradient on step 2 (skipped, its step count stays), parameter 1
   a transposed (strided) gradient on step 3. */
static void run(const char *name, tt_optim_kind kind, const tt_optim_opts *o, int steps)
{
    ref r = {0};
    tt_tensor ps[NP];
    const tt_tensor *pp[NP];
    for (int i = 0; i < NP; i++) {
        float x[MAXN];
        for (int64_t j = 0; j < count(i); j++) x[j] = (float)(r.p[i][j] = uniform());
        for (int64_t j = 0; j < count(i); j++) r.p[i][j] = (double)x[j];
        tt_from_buffer(&ps[i], TT_FLOAT32, NDIM[i], SHAPES[i], x);
        tt_requires_grad_(&ps[i], 1);
        pp[i] = &ps[i];
    }
    tt_optim *opt;
    CHECK("optimizer made", tt_optim_new(&opt, kind, NP, pp, o) == TT_OK);
    tt_op evop = kind == TT_OPTIM_SGD ? TT_OP_SGD_STEP : TT_OP_ADAMW_STEP;
    memset(events, 0, sizeof events);
    for (int s = 1; s <= steps; s++) {
        for (int i = 0; i < NP; i++) {
            if (i == 1 && s == 2) continue;
            double g[MAXN];
            float gf[MAXN];
            for (int64_t j = 0; j < count(i); j++) gf[j] = (float)(g[j] = uniform() * 3);
            for (int64_t j = 0; j < count(i); j++) g[j] = (double)gf[j];
            tt_tensor gt;
            if (i == 0 && s == 3) {          /* g as the mT of its transpose's data */
                float tr[MAXN];
                int64_t rows = SHAPES[0][0], cols = SHAPES[0][1], tshape[2] = {cols, rows};
                for (int64_t a = 0; a < rows; a++)
                    for (int64_t b = 0; b < cols; b++) tr[b * rows + a] = gf[a * cols + b];
                tt_tensor t;
                tt_from_buffer(&t, TT_FLOAT32, 2, tshape, tr);
                tt_mT(&gt, &t);
                tt_tensor_release(&t);
                CHECK("strided gradient", !tt_is_contiguous(&gt));
            } else {
                tt_from_buffer(&gt, TT_FLOAT32, NDIM[i], SHAPES[i], gf);
            }
            tt_set_grad(&ps[i], &gt);
            tt_tensor_release(&gt);
            if (kind == TT_OPTIM_SGD) ref_sgd(&r, i, g, o);
            else ref_adamw(&r, i, g, o);
        }
        CHECK("step", tt_optim_step(opt) == TT_OK);
        tt_optim_zero_grad(opt);
        for (int i = 0; i < NP; i++) CHECK("zero_grad sets grads to none", tt_grad(&ps[i]) == NULL);
    }
    CHECK("one event a step", events[evop] == steps);
    for (int i = 0; i < NP; i++) {
        char d[96];
        snprintf(d, sizeof d, "%s: parameter %d after %d steps", name, i + 1, steps);
        check_close(d, tt_data_f32(&ps[i]), r.p[i], (long)count(i), 2e-5, 2e-6);
    }
    /* a step with no gradient anywhere changes nothing */
    float before = tt_data_f32(&ps[0])[0];
    tt_optim_step(opt);
    CHECK("no gradient: nothing moves", tt_data_f32(&ps[0])[0] == before);
    tt_optim_free(opt);
    for (int i = 0; i < NP; i++) tt_tensor_release(&ps[i]);
}

static void test_updates(void)
{
    tt_trace_subscribe(count_event, NULL, 0);
    run("sgd plain", TT_OPTIM_SGD, &(tt_optim_opts){.lr = 0.1}, 4);
    run("sgd momentum", TT_OPTIM_SGD, &(tt_optim_opts){.lr = 0.05, .momentum = 0.9}, 5);
    run("sgd momentum+wd", TT_OPTIM_SGD, &(tt_optim_opts){.lr = 0.05, .momentum = 0.8, .weight_decay = 0.1}, 5);
    run("adamw defaults", TT_OPTIM_ADAMW,
        &(tt_optim_opts){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 1e-2}, 5);
    run("adamw other betas", TT_OPTIM_ADAMW,
        &(tt_optim_opts){.lr = 0.03, .beta1 = 0.5, .beta2 = 0.75, .eps = 1e-3, .weight_decay = 0.2}, 6);
    run("adamw beta1 0", TT_OPTIM_ADAMW, &(tt_optim_opts){.lr = 0.01, .beta1 = 0, .beta2 = 0.9, .eps = 1e-8}, 3);
    /* the event's FLOPs: 14 an element for AdamW (91 + 5 + 1 elements) */
    tt_tensor a;
    int64_t shp[1] = {97};
    tt_ones(&a, TT_FLOAT32, 1, shp);
    tt_requires_grad_(&a, 1);
    const tt_tensor *pa[1] = {&a};
    tt_optim *opt;
    tt_optim_new(&opt, TT_OPTIM_ADAMW, 1, pa, &(tt_optim_opts){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999});
    tt_set_grad(&a, &a);
    tt_optim_step(opt);
    CHECK("adamw flops", event_flops == 14.0 * 97);
    tt_optim_free(opt);
    tt_tensor_release(&a);
    tt_trace_unsubscribe(count_event, NULL);
}

static int err_has(tt_status st, const char *s)
{
    int ok = st == TT_EARG && strstr(tt_errmsg(), s) != NULL;
    if (!ok) printf("  message: %s\n", tt_errmsg());
    return ok;
}

static void test_errors(void)
{
    int64_t shp[2] = {3, 4};
    tt_tensor a, b, c, t;
    tt_ones(&a, TT_FLOAT32, 2, shp);
    tt_ones(&b, TT_FLOAT32, 2, shp);
    tt_requires_grad_(&b, 1);
    tt_binary_scalar(&c, TT_OP_MUL, &b, 2, 0);
    tt_optim *o = NULL;
    tt_optim_opts ok = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    const tt_tensor *la[2] = {&b, &a};
    CHECK("no grad: an error naming it, with a hint",
          err_has(tt_optim_new(&o, TT_OPTIM_SGD, 2, la, &ok), "SGD: parameter 2 [3,4] does not require grad")
          && strstr(tt_errmsg(), "hint: p:requires_grad_()") && o == NULL);
    const tt_tensor *lc[1] = {&c};
    CHECK("non-leaf", err_has(tt_optim_new(&o, TT_OPTIM_ADAMW, 1, lc, &ok), "AdamW: parameter 1 [3,4] is the result of MulBackward, not a leaf"));
    const tt_tensor *lb[2] = {&b, &b};
    CHECK("listed twice", err_has(tt_optim_new(&o, TT_OPTIM_SGD, 2, lb, &ok), "parameter 2 [3,4] is parameter 1 again"));
    tt_ones(&t, TT_FLOAT32, 2, shp);
    tt_tensor tv;
    tt_mT(&tv, &t);
    tt_requires_grad_(&tv, 1);
    const tt_tensor *lt[1] = {&tv};
    CHECK("strided", err_has(tt_optim_new(&o, TT_OPTIM_SGD, 1, lt, &ok), "parameter 1 [4,3] is not contiguous"));
    const tt_tensor *l1[1] = {&b};
    tt_optim_opts bad = ok;
    bad.lr = -1;
    CHECK("negative lr", err_has(tt_optim_new(&o, TT_OPTIM_SGD, 1, l1, &bad), "SGD: lr must be >= 0, got -1"));
    bad = ok, bad.lr = (double)NAN;
    CHECK("NaN lr", err_has(tt_optim_new(&o, TT_OPTIM_ADAMW, 1, l1, &bad), "lr must be >= 0, got nan"));
    bad = ok, bad.momentum = -0.5;
    CHECK("negative momentum", err_has(tt_optim_new(&o, TT_OPTIM_SGD, 1, l1, &bad), "momentum must be >= 0"));
    bad = ok, bad.weight_decay = -0.5;
    CHECK("negative weight decay", err_has(tt_optim_new(&o, TT_OPTIM_ADAMW, 1, l1, &bad), "weight_decay must be >= 0"));
    bad = ok, bad.beta1 = 1;
    CHECK("beta1 1", err_has(tt_optim_new(&o, TT_OPTIM_ADAMW, 1, l1, &bad), "AdamW: betas[1] must be in [0, 1), got 1"));
    bad = ok, bad.beta2 = -0.1;
    CHECK("beta2 negative", err_has(tt_optim_new(&o, TT_OPTIM_ADAMW, 1, l1, &bad), "betas[2] must be in [0, 1)"));
    bad = ok, bad.eps = -1;
    CHECK("eps negative", err_has(tt_optim_new(&o, TT_OPTIM_ADAMW, 1, l1, &bad), "eps must be >= 0"));
    tt_tensor_release(&a);
    tt_tensor_release(&b);
    tt_tensor_release(&c);
    tt_tensor_release(&t);
    tt_tensor_release(&tv);
}

/* The optimizer's references outlive the caller's handles. */
static void test_lifetime(void)
{
    int64_t shp[1] = {4};
    tt_tensor p, g;
    tt_ones(&p, TT_FLOAT32, 1, shp);
    tt_requires_grad_(&p, 1);
    const tt_tensor *l[1] = {&p};
    tt_optim *o;
    tt_optim_new(&o, TT_OPTIM_SGD, 1, l, &(tt_optim_opts){.lr = 0.5});
    tt_ones(&g, TT_FLOAT32, 1, shp);
    tt_set_grad(&p, &g);
    tt_tensor keep;
    tt_detach(&keep, &p);                   /* shares p's storage */
    tt_tensor_release(&p);
    CHECK("step after the handle is gone", tt_optim_step(o) == TT_OK && tt_data_f32(&keep)[3] == 0.5f);
    tt_optim_free(o);
    tt_tensor_release(&keep);
    tt_tensor_release(&g);
}

static void test_clip(void)
{
    int64_t s1[2] = {3, 5}, s2[1] = {2};
    double g1[15], g2[2], sq = 0;
    float f1[15], f2[2];
    for (int j = 0; j < 15; j++) f1[j] = (float)(g1[j] = uniform()), g1[j] = (double)f1[j], sq += g1[j] * g1[j];
    for (int j = 0; j < 2; j++) f2[j] = (float)(g2[j] = 4 * uniform()), g2[j] = (double)f2[j], sq += g2[j] * g2[j];
    double norm = sqrt(sq);
    tt_tensor p1, p2, p3, t1, t2;
    tt_zeros(&p1, TT_FLOAT32, 2, s1);
    tt_zeros(&p2, TT_FLOAT32, 1, s2);
    tt_zeros(&p3, TT_FLOAT32, 1, s2);       /* no gradient: skipped */
    tt_from_buffer(&t1, TT_FLOAT32, 2, s1, f1);
    tt_from_buffer(&t2, TT_FLOAT32, 1, s2, f2);
    tt_set_grad(&p1, &t1);
    tt_set_grad(&p2, &t2);
    tt_tensor *ps[3] = {&p1, &p3, &p2};
    double total = 0;
    CHECK("clip above", tt_clip_grad_norm(3, ps, 10 * norm, &total) == TT_OK && fabs(total - norm) < 1e-12 * norm);
    CHECK("not above max_norm: grads untouched", tt_grad(&p1)->storage == t1.storage);
    double max_norm = norm / 3, c = max_norm / (norm + 1e-6), r1[15], r2[2];
    for (int j = 0; j < 15; j++) r1[j] = g1[j] * c;
    for (int j = 0; j < 2; j++) r2[j] = g2[j] * c;
    CHECK("clip below", tt_clip_grad_norm(3, ps, max_norm, &total) == TT_OK && fabs(total - norm) < 1e-12 * norm);
    check_close("clipped grad 1", tt_data_f32(tt_grad(&p1)), r1, 15, 1e-6, 0);
    check_close("clipped grad 2", tt_data_f32(tt_grad(&p2)), r2, 2, 1e-6, 0);
    CHECK("the caller's tensor is not scaled", tt_data_f32(&t1)[0] == f1[0]);
    CHECK("no grad stays none", tt_grad(&p3) == NULL);
    tt_tensor *none[1] = {&p3};
    CHECK("no grads at all: norm 0", tt_clip_grad_norm(1, none, 1, &total) == TT_OK && total == 0);
    tt_tensor *list[] = {&p1, &p2, &p3, &t1, &t2};
    for (int i = 0; i < 5; i++) tt_tensor_release(list[i]);
}

int main(void)
{
    test_updates();
    test_errors();
    test_lifetime();
    test_clip();
    tt_release_caches();
    return check_report();
}
