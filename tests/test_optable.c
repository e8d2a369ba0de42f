/*
** test_optable.c — one loop over the op table (core/ops/optable.c) with
** the references of tests/opref.h. Every op must have a reference (or name
** the test that holds it), a backward or a stated reason for none, and a
** row in lua/README.md. Every elementwise row is tested from its reference:
** the forward at every layout against float64, the gradient against the
** reference derivative (itself checked against central differences),
** bfloat16 and float16, an in-place write into each tensor its backward
** saves, and its trace rows. A new elementwise op is tested by its row.
*/
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opref.h"
#include "tt_internal.h"

enum { R = 3, C = 37, N = R * C };   /* 37: a multiple of no vector width */
enum { L_CONTIG, L_TRANS, L_NARROW, L_EXPAND, L_COUNT };
static const char *const LAYOUT[L_COUNT] = { "contiguous", "transposed", "narrowed", "expanded" };

static uint64_t rng = 88172645463325252ull;

static double urand(void) { return check_xorshift(&rng); }   /* [0, 1) */

static int ok(tt_status st)
{
    if (st != TT_OK) printf("  unexpected error: %s\n", tt_errmsg());
    return st == TT_OK;
}

static int is_elementwise(tt_op op)
{
    return tt_op_kind(op) == TT_OPK_UNARY || tt_op_kind(op) == TT_OPK_BINARY;
}

/* N inputs of op's row, already rounded to float32: whole numbers for a
   comparison, 0 and 1 for bool ops; an expanded layout repeats row 0. */
static void draw(tt_op op, int layout, double *v)
{
    const opref *r = &OPREF[op];
    for (int i = 0; i < N; i++) {
        double u = r->lo + (r->hi - r->lo) * urand();
        v[i] = tt__op_def(op)->result == TT_BOOL ? floor(u + 0.5) : (double)(float)u;
    }
    if (layout == L_EXPAND)
        for (int i = C; i < N; i++) v[i] = v[i % C];
}

static void put(void *buf, tt_dtype dt, int64_t at, double x)
{
    if (dt == TT_BOOL) ((uint8_t *)buf)[at] = x != 0;
    else ((float *)buf)[at] = (float)x;
}

/* v ([R, C], row-major) as a tensor of dtype dt (float32 or bool) laid out
   as layout says: its elements at [i, j] are v's whatever the strides. */
static tt_tensor make(const double *v, tt_dtype dt, int layout)
{
    int64_t shape[2] = { R, C }, tshape[2] = { C, R }, wshape[2] = { R, C + 5 }, row[2] = { 1, C };
    size_t es = tt_dtype_size(dt);
    void *buf = calloc((size_t)R * (C + 5), es);
    tt_tensor base, t;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            double x = v[i * C + j];
            if (layout == L_CONTIG) put(buf, dt, i * C + j, x);
            else if (layout == L_TRANS) put(buf, dt, j * R + i, x);
            else if (layout == L_NARROW) put(buf, dt, i * (C + 5) + 2 + j, x);
            else if (i == 0) put(buf, dt, j, x);
        }
    const int64_t *bs = layout == L_TRANS ? tshape : layout == L_NARROW ? wshape : layout == L_EXPAND ? row : shape;
    ok(tt_from_buffer(&base, dt, 2, bs, buf));
    free(buf);
    if (layout == L_CONTIG) return base;
    if (layout == L_TRANS) ok(tt_transpose(&t, &base, 0, 1));
    else if (layout == L_NARROW) ok(tt_narrow(&t, &base, 1, 2, C));
    else ok(tt_expand(&t, &base, 2, shape));
    tt_tensor_release(&base);
    return t;
}

/* t's elements (any dtype) in row-major order as doubles; caller frees */
static double *values(const tt_tensor *t)
{
    int was = tt_set_grad_enabled(0);
    tt_tensor f, c;
    ok(tt_to_dtype(&f, t, TT_FLOAT32));
    ok(tt_contiguous(&c, &f));
    int64_t n = tt_numel(&c);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    const float *p = tt_data_f32(&c);
    for (int64_t i = 0; i < n; i++) v[i] = (double)p[i];
    tt_tensor_release(&c);
    tt_tensor_release(&f);
    tt_set_grad_enabled(was);
    return v;
}

static tt_status apply(tt_tensor *out, tt_op op, const tt_tensor *a, const tt_tensor *b)
{
    return tt_op_kind(op) == TT_OPK_BINARY ? tt_binary(out, op, a, b) : tt_unary(out, op, a);
}

/* How far a float32 result may be from the float64 reference: a few ulps,
   plus the input's rounding carried through (condition |x f'(x)|). */
static double tol32(const opref *r, double x, double y, double ref)
{
    double cond = (r->dx ? fabs(x * r->dx(x, y)) : 0) + (r->dy ? fabs(y * r->dy(x, y)) : 0);
    return 2e-6 * fabs(ref) + 4.0 * (double)FLT_EPSILON * cond + 1e-37;
}

static int close_to(double got, double ref, double tol)
{
    if (isnan(ref)) return isnan(got);
    if (isinf(ref)) return got == ref;
    return fabs(got - ref) <= tol;
}

/* ===== every row: a reference, a backward or a reason, a docs row ===== */

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}

static int documented(const char *readme, tt_op op)
{
    char a[96], b[96];
    const char *name = tt_op_name(op);
    if (OPREF[op].doc) return strstr(readme, OPREF[op].doc) != NULL;
    snprintf(a, sizeof a, ":%s(", name);
    snprintf(b, sizeof b, "tt.%s(", name);
    return strstr(readme, a) || strstr(readme, b);
}

static void test_rows(void)
{
    char *readme = read_file("lua/README.md"), d[192];
    CHECK("lua/README.md read (tests run from the repository's root)", readme != NULL);
    for (int o = 0; o < TT_OP_COUNT; o++) {
        tt_op op = (tt_op)o;
        const opref *r = &OPREF[op];
        const char *name = tt_op_name(op);
        snprintf(d, sizeof d, "%s: a row in tests/opref.h (a float64 reference, or the test that holds one)", name);
        CHECK(d, is_elementwise(op) ? r->f != NULL : r->file != NULL);
        if (r->file) {
            char *src = read_file(r->file), stem[64];
            snprintf(stem, sizeof stem, "%.*s", (int)strcspn(name, "."), name);   /* adamw.step: adamw */
            snprintf(d, sizeof d, "%s: its test %s exists and tests it", name, r->file);
            CHECK(d, src && strstr(src, stem));
            free(src);
        }
        const tt__opdef *def = tt__op_def(op);
        snprintf(d, sizeof d, "%s: a backward, or opref.h says why it has none", name);
        CHECK(d, def->backward != NULL || r->no_grad != NULL);
        if (def->backward && is_elementwise(op)) {
            snprintf(d, sizeof d, "%s: its backward has reference derivatives in opref.h", name);
            CHECK(d, r->dx && (tt_op_kind(op) == TT_OPK_UNARY || r->dy));
        }
        snprintf(d, sizeof d, "%s: a row in lua/README.md", name);
        CHECK(d, r->not_in_tt || (readme && documented(readme, op)));
    }
    free(readme);
}

/* ===== elementwise rows from their references ===== */

static void test_forward(tt_op op)
{
    const opref *r = &OPREF[op];
    int binary = tt_op_kind(op) == TT_OPK_BINARY;
    tt_dtype in = tt__op_def(op)->dtypes == TT__BOOL ? TT_BOOL : TT_FLOAT32;
    char d[160];
    for (int l = 0; l < L_COUNT; l++) {
        double va[N], vb[N];
        draw(op, l, va);
        draw(op, l, vb);
        tt_tensor a = make(va, in, l), b = make(vb, in, l), out;
        if (ok(apply(&out, op, &a, binary ? &b : NULL))) {
            double *got = values(&out);
            int bad = 0;
            for (int i = 0; i < N; i++) {
                double ref = r->f(va[i], vb[i]);
                double tol = tt__op_def(op)->result == TT_BOOL ? 0 : tol32(r, va[i], vb[i], ref);
                if (!close_to(got[i], ref, tol) && bad++ < 3)
                    printf("  %s %s [%d]: f(%.9g, %.9g) = %.9g want %.9g\n", tt_op_name(op), LAYOUT[l], i, va[i],
                           vb[i], got[i], ref);
            }
            snprintf(d, sizeof d, "%s on %s [3,37] against float64", tt_op_name(op), LAYOUT[l]);
            CHECK(d, bad == 0 && out.dtype == tt__op_def(op)->result && out.shape[0] == R && out.shape[1] == C);
            free(got);
            tt_tensor_release(&out);
        }
        tt_tensor_release(&a);
        tt_tensor_release(&b);
    }
}

/* The reference derivative against central differences of the reference,
   away from a kink (where the one-sided slopes differ). */
static int derivative_agrees(opref_fn f, opref_fn df, double x, double y, int in_y)
{
    double v = in_y ? y : x, h = 1e-5 * (fabs(v) > 1 ? fabs(v) : 1);
    double up = in_y ? f(x, y + h) : f(x + h, y), dn = in_y ? f(x, y - h) : f(x - h, y), mid = f(x, y);
    double right = (up - mid) / h, left = (mid - dn) / h, want = df(x, y);
    if (fabs(right - left) > 1e-3 * (1 + fabs(want))) return 1;
    return fabs((up - dn) / (2 * h) - want) <= 1e-5 * (1 + fabs(want));
}

static void test_gradient(tt_op op)
{
    const opref *r = &OPREF[op];
    int binary = tt_op_kind(op) == TT_OPK_BINARY;
    double va[N], vb[N], vg[N];
    draw(op, L_CONTIG, va);
    draw(op, L_CONTIG, vb);
    for (int i = 0; i < N; i++) vg[i] = (double)(float)(2 * urand() - 1);
    tt_tensor a = make(va, TT_FLOAT32, L_CONTIG), b = make(vb, TT_FLOAT32, L_CONTIG);
    tt_tensor g = make(vg, TT_FLOAT32, L_CONTIG), out;
    ok(tt_requires_grad_(&a, 1));
    if (binary) ok(tt_requires_grad_(&b, 1));
    int bad_fd = 0, bad = 0;
    if (ok(apply(&out, op, &a, binary ? &b : NULL)) && ok(tt_backward(&out, &g))) {
        for (int side = 0; side <= binary; side++) {
            opref_fn df = side ? r->dy : r->dx;
            double *got = values(tt_grad(side ? &b : &a));
            for (int i = 0; i < N; i++) {
                double want = vg[i] * df(va[i], vb[i]);
                bad_fd += !derivative_agrees(r->f, df, va[i], vb[i], side);
                if (!close_to(got[i], want, 1e-5 * fabs(want) + 1e-6 * fabs(vg[i])) && bad++ < 3)
                    printf("  %s gradient %s [%d]: %.9g want %.9g\n", tt_op_name(op), side ? "y" : "x", i, got[i], want);
            }
            free(got);
        }
        tt_tensor_release(&out);
    } else bad++;
    char d[160];
    snprintf(d, sizeof d, "%s: opref.h's derivative agrees with central differences of its forward", tt_op_name(op));
    CHECK(d, bad_fd == 0);
    snprintf(d, sizeof d, "%s: the gradient against the reference derivative", tt_op_name(op));
    CHECK(d, bad == 0);
    tt_tensor_release(&a);
    tt_tensor_release(&b);
    tt_tensor_release(&g);
}

/* In 16 bits the op widens, runs in float32 and rounds once: within one
   rounding of the 16-bit dtype (u) of the reference on the 16-bit inputs. */
static void test_half(tt_op op)
{
    const opref *r = &OPREF[op];
    int binary = tt_op_kind(op) == TT_OPK_BINARY;
    static const tt_dtype dts[2] = { TT_BFLOAT16, TT_FLOAT16 };
    for (int k = 0; k < 2; k++) {
        double va[N], vb[N], u = dts[k] == TT_BFLOAT16 ? 0x1p-8 : 0x1p-11;
        draw(op, L_CONTIG, va);
        draw(op, L_CONTIG, vb);
        tt_tensor a32 = make(va, TT_FLOAT32, L_CONTIG), b32 = make(vb, TT_FLOAT32, L_CONTIG), a, b, out;
        ok(tt_to_dtype(&a, &a32, dts[k]));
        ok(tt_to_dtype(&b, &b32, dts[k]));
        double *xa = values(&a), *xb = values(&b);
        int bad = 0;
        tt_dtype want_dt = tt__op_def(op)->result == TT_BOOL ? TT_BOOL : dts[k];
        if (ok(apply(&out, op, &a, binary ? &b : NULL))) {
            double *got = values(&out);
            for (int i = 0; i < N; i++) {
                double ref = r->f(xa[i], xb[i]);
                double tol = want_dt == TT_BOOL ? 0 : u * fabs(ref) + tol32(r, xa[i], xb[i], ref) + 0x1p-24;
                if (!close_to(got[i], ref, tol) && bad++ < 3)
                    printf("  %s %s [%d]: f(%.9g, %.9g) = %.9g want %.9g\n", tt_op_name(op), tt_dtype_name(dts[k]), i,
                           xa[i], xb[i], got[i], ref);
            }
            free(got);
            bad += out.dtype != want_dt;
            tt_tensor_release(&out);
        } else bad++;
        char d[160];
        snprintf(d, sizeof d, "%s in %s: one rounding from float64 on the 16-bit inputs", tt_op_name(op),
                 tt_dtype_name(dts[k]));
        CHECK(d, bad == 0);
        free(xa);
        free(xb);
        tt_tensor_release(&a32);
        tt_tensor_release(&b32);
        tt_tensor_release(&a);
        tt_tensor_release(&b);
    }
}

/* A tensor the backward saved, written in place after the forward:
   backward() must refuse it with PyTorch's message, never use new values. */
static void test_inplace(tt_op op)
{
    static const int roles[3] = { TT__SAVE_A, TT__SAVE_B, TT__SAVE_OUT };
    static const char *const role_name[3] = { "its first input", "its second input", "its result" };
    int binary = tt_op_kind(op) == TT_OPK_BINARY;
    for (int k = 0; k < 3; k++) {
        if (!(tt__op_def(op)->saves & roles[k])) continue;
        double va[N], vb[N];
        draw(op, L_CONTIG, va);
        draw(op, L_CONTIG, vb);
        tt_tensor a = make(va, TT_FLOAT32, L_CONTIG), b = make(vb, TT_FLOAT32, L_CONTIG), out;
        ok(tt_requires_grad_(&a, 1));
        int refused = 0;
        if (ok(apply(&out, op, &a, binary ? &b : NULL))) {
            int was = tt_set_grad_enabled(0);
            ok(tt_fill_(k == 0 ? &a : k == 1 ? &b : &out, tt_num_f(1.5)));
            tt_set_grad_enabled(was);
            tt_tensor one;
            ok(tt_full(&one, TT_FLOAT32, 2, out.shape, 1.0));
            refused = tt_backward(&out, &one) != TT_OK && strstr(tt_errmsg(), "inplace operation") != NULL;
            tt_tensor_release(&one);
            tt_tensor_release(&out);
        }
        char d[160];
        snprintf(d, sizeof d, "%s: backward refuses %s written in place after the forward", tt_op_name(op),
                 role_name[k]);
        CHECK(d, refused);
        tt_tensor_release(&a);
        tt_tensor_release(&b);
    }
}

typedef struct heard { tt_op op; int forward, backward; double flops; char name[32]; } heard;

static void listen(const tt_event *ev, void *ud)
{
    heard *h = ud;
    if (ev->op != h->op) return;
    if (ev->phase == TT_PHASE_BACKWARD) h->backward++;
    if (ev->phase != TT_PHASE_FORWARD) return;
    h->forward++;
    h->flops = ev->flops;
    snprintf(h->name, sizeof h->name, "%s", ev->name);
}

/* One trace row forward named as the table's row with its FLOPs, and one
   backward row for the node. */
static void test_trace(tt_op op)
{
    int binary = tt_op_kind(op) == TT_OPK_BINARY;
    const tt__opdef *def = tt__op_def(op);
    tt_dtype in = def->dtypes == TT__BOOL ? TT_BOOL : TT_FLOAT32;
    double va[N], vb[N];
    draw(op, L_CONTIG, va);
    draw(op, L_CONTIG, vb);
    tt_tensor a = make(va, in, L_CONTIG), b = make(vb, in, L_CONTIG), out;
    if (def->backward) ok(tt_requires_grad_(&a, 1));
    heard h = { .op = op };
    ok(tt_trace_subscribe(listen, &h, 0));
    if (ok(apply(&out, op, &a, binary ? &b : NULL))) {
        if (def->backward) {
            tt_tensor one;
            ok(tt_full(&one, TT_FLOAT32, 2, out.shape, 1.0));
            ok(tt_backward(&out, &one));
            tt_tensor_release(&one);
        }
        tt_tensor_release(&out);
    }
    tt_trace_unsubscribe(listen, &h);
    char d[160];
    snprintf(d, sizeof d, "%s: one trace row, named as its table row, %g FLOPs an element", def->name, def->flops);
    CHECK(d, h.forward == 1 && strcmp(h.name, def->name) == 0 && h.flops == def->flops * N);
    if (def->backward) {
        snprintf(d, sizeof d, "%s: one backward row", def->name);
        CHECK(d, h.backward == 1);
    }
    tt_tensor_release(&a);
    tt_tensor_release(&b);
}

int main(void)
{
    test_rows();
    for (int o = 0; o < TT_OP_COUNT; o++) {
        tt_op op = (tt_op)o;
        if (!is_elementwise(op) || !OPREF[op].f) continue;
        test_forward(op);
        test_trace(op);
        if (tt__op_def(op)->dtypes == TT__BOOL) continue;
        test_half(op);
        if (!tt__op_def(op)->backward) continue;
        test_gradient(op);
        test_inplace(op);
    }
    return check_report();
}
