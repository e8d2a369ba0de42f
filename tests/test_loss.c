/*
** test_loss.c — tt_cross_entropy against a float64 reference at awkward
** sizes (C = 1, 3, 37, 1000; N = 1, 5, 64), transposed logits and strided
** targets, huge and -inf logits, ignore_index, each reduction; its
** gradient against the reference's formula and against central finite
** differences of the float64 loss; 1, 2, 3 threads bit-identical; errors.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tt.h"

#define IGNORE (-100)

/* the loss of one row in float64: max-subtracted log-sum-exp - x[t] */
static double ref_row(const float *x, int64_t C, int64_t t)
{
    double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < C; i++) m = fmax(m, (double)x[i]);
    if (isinf(m) && m < 0) return NAN;
    for (int64_t i = 0; i < C; i++) s += exp((double)x[i] - m);
    return (m - (double)x[t - 1]) + log(s);
}

/* reduced loss of rows x [N, C] (row-major) against 1-based t */
static double ref_loss(const float *x, int64_t N, int64_t C, const int64_t *t, tt_reduction red)
{
    double sum = 0;
    int64_t count = 0;
    for (int64_t r = 0; r < N; r++)
        if (t[r] != IGNORE) {
            sum += ref_row(x + r * C, C, t[r]);
            count++;
        }
    return red == TT_REDUCTION_MEAN ? sum / (double)count : sum;
}

/* logits [N, C] from row-major x: contiguous, or the transpose of a [C, N] copy */
static tt_tensor make_logits(const float *x, int64_t N, int64_t C, int transposed)
{
    tt_tensor t, c;
    int64_t shape[2] = {N, C}, tshape[2] = {C, N};
    if (!transposed) {
        tt_from_buffer(&t, TT_FLOAT32, 2, shape, x);
        return t;
    }
    float *y = malloc((size_t)(N * C) * sizeof *y);
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < C; j++) y[j * N + i] = x[i * C + j];
    tt_from_buffer(&c, TT_FLOAT32, 2, tshape, y);
    free(y);
    tt_mT(&t, &c);
    tt_tensor_release(&c);
    return t;
}

/* targets [N] with stride 2 (column 1 of an [N, 2] tensor) */
static tt_tensor make_targets(const int64_t *t, int64_t N)
{
    int64_t *two = malloc((size_t)(2 * N + 1) * sizeof *two), shape[2] = {N, 2};
    for (int64_t r = 0; r < N; r++) {
        two[2 * r] = t[r];
        two[2 * r + 1] = 999;
    }
    tt_tensor b, out;
    tt_from_buffer(&b, TT_INT64, 2, shape, two);
    tt_select(&out, &b, 1, 0);
    tt_tensor_release(&b);
    free(two);
    return out;
}

static void random_case(float *x, int64_t *t, int64_t N, int64_t C, int ignore_some)
{
    tt_tensor r;
    int64_t n = N * C;
    tt_randn(&r, 1, &n);
    for (int64_t k = 0; k < n; k++) x[k] = 3.0f * (float)tt_get(&r, k);
    tt_tensor_release(&r);
    for (int64_t i = 0; i < N; i++) t[i] = 1 + (i * 7 + 3) % C;
    if (ignore_some && N > 1) t[N / 2] = IGNORE;
}

/* Forward of each reduction and the mean's gradient against the reference,
   for one size and layout. */
static void check_size(int64_t N, int64_t C, int transposed)
{
    char d[128];
    float *x = malloc((size_t)(N * C) * sizeof *x), *got = malloc((size_t)(N * C) * sizeof *got);
    int64_t *t = malloc((size_t)N * sizeof *t);
    double *ref = malloc((size_t)(N * C) * sizeof *ref);
    random_case(x, t, N, C, 1);
    tt_tensor lg = make_logits(x, N, C, transposed), tg = make_targets(t, N), out;
    for (int red = TT_REDUCTION_MEAN; red <= TT_REDUCTION_NONE; red++) {
        snprintf(d, sizeof d, "cross_entropy N=%lld C=%lld%s reduction %d", (long long)N, (long long)C,
                 transposed ? " transposed" : "", red);
        CHECK(d, tt_cross_entropy(&out, &lg, &tg, IGNORE, (tt_reduction)red) == TT_OK);
        if (red == TT_REDUCTION_NONE) {
            for (int64_t r = 0; r < N; r++) ref[r] = t[r] == IGNORE ? 0.0 : ref_row(x + r * C, C, t[r]);
            CHECK(d, out.ndim == 1 && out.shape[0] == N);
            tt_get_floats(&out, got);
            check_close(d, got, ref, (long)N, 1e-5, 1e-5);
        } else {
            ref[0] = ref_loss(x, N, C, t, (tt_reduction)red);
            got[0] = (float)tt_get(&out, 0);
            CHECK(d, out.ndim == 0);
            check_close(d, got, ref, 1, 1e-5, 1e-5);
        }
        tt_tensor_release(&out);
    }
    /* gradient of the mean: (softmax - onehot) / count, ignored rows zero */
    tt_requires_grad_(&lg, 1);
    snprintf(d, sizeof d, "cross_entropy backward N=%lld C=%lld%s", (long long)N, (long long)C,
             transposed ? " transposed" : "");
    CHECK(d, tt_cross_entropy(&out, &lg, &tg, IGNORE, TT_REDUCTION_MEAN) == TT_OK);
    CHECK(d, tt_backward(&out, NULL) == TT_OK);
    int64_t count = 0;
    for (int64_t r = 0; r < N; r++) count += t[r] != IGNORE;
    for (int64_t r = 0; r < N; r++) {
        const float *row = x + r * C;
        double m = -INFINITY, s = 0;
        for (int64_t i = 0; i < C; i++) m = fmax(m, (double)row[i]);
        for (int64_t i = 0; i < C; i++) s += exp((double)row[i] - m);
        for (int64_t i = 0; i < C; i++)
            ref[r * C + i] = t[r] == IGNORE ? 0.0
                             : (exp((double)row[i] - m) / s - (i + 1 == t[r])) / (double)count;
    }
    const tt_tensor *g = tt_grad(&lg);
    CHECK(d, g && g->ndim == 2 && g->shape[0] == N && g->shape[1] == C);
    if (g) {
        tt_get_floats(g, got);
        check_close(d, got, ref, (long)(N * C), 1e-5, 1e-7);
    }
    tt_tensor_release(&out);
    tt_tensor_release(&lg);
    tt_tensor_release(&tg);
    free(x);
    free(got);
    free(t);
    free(ref);
}

/* The analytic gradient (reduction none, weighted by w) against central
   differences of the float64 reference loss: independent of the kernel. */
static void check_finite_differences(int64_t N, int64_t C)
{
    char d[96];
    snprintf(d, sizeof d, "cross_entropy vs finite differences N=%lld C=%lld", (long long)N, (long long)C);
    float *x = malloc((size_t)(N * C) * sizeof *x), *got = malloc((size_t)(N * C) * sizeof *got);
    double *ref = malloc((size_t)(N * C) * sizeof *ref), w[8];
    int64_t *t = malloc((size_t)N * sizeof *t);
    random_case(x, t, N, C, 1);
    for (int64_t r = 0; r < N; r++) w[r] = 0.5 + 0.25 * (double)r;
    tt_tensor lg = make_logits(x, N, C, 1), tg = make_targets(t, N), out, wt;
    tt_requires_grad_(&lg, 1);
    CHECK(d, tt_cross_entropy(&out, &lg, &tg, IGNORE, TT_REDUCTION_NONE) == TT_OK);
    float wf[8];
    for (int64_t r = 0; r < N; r++) wf[r] = (float)w[r];
    tt_from_buffer(&wt, TT_FLOAT32, 1, &N, wf);
    CHECK(d, tt_backward(&out, &wt) == TT_OK);
    for (int64_t r = 0; r < N; r++)
        for (int64_t i = 0; i < C; i++) {
            if (t[r] == IGNORE) { ref[r * C + i] = 0.0; continue; }   /* no target to read */
            float *xi = &x[r * C + i], keep = *xi;
            double h = 1e-3, up, down;
            /* the reference in float64 at x +- h (x held in double for the step) */
            double row[64];
            for (int64_t j = 0; j < C; j++) row[j] = (double)x[r * C + j];
            double m, s;
            row[i] = (double)keep + h;
            m = -INFINITY, s = 0;
            for (int64_t j = 0; j < C; j++) m = fmax(m, row[j]);
            for (int64_t j = 0; j < C; j++) s += exp(row[j] - m);
            up = m - row[t[r] - 1] + log(s);
            row[i] = (double)keep - h;
            m = -INFINITY, s = 0;
            for (int64_t j = 0; j < C; j++) m = fmax(m, row[j]);
            for (int64_t j = 0; j < C; j++) s += exp(row[j] - m);
            down = m - row[t[r] - 1] + log(s);
            ref[r * C + i] = w[r] * (up - down) / (2 * h);
        }
    const tt_tensor *g = tt_grad(&lg);
    CHECK(d, g != NULL);
    if (g) {
        tt_get_floats(g, got);
        check_close(d, got, ref, (long)(N * C), 1e-4, 1e-5);
    }
    tt_tensor_release(&out);
    tt_tensor_release(&wt);
    tt_tensor_release(&lg);
    tt_tensor_release(&tg);
    free(x);
    free(got);
    free(ref);
    free(t);
}

/* Logits of +-1e30 and -inf: max-subtraction keeps every row finite
   where the math is; the gradient's softmax too. */
static void check_huge(void)
{
    const float H = 1e30f, I = INFINITY;
    float x[4][4] = {
        {H, -H, -I, H},     /* two tied maxima: loss log 2 exactly */
        {-H, H, -I, -I},    /* the target is the max: loss 0 */
        {H, 0, 1, -I},      /* target far below the max: 1e30 */
        {0, -I, 1, 2},      /* target -inf: loss +inf */
    };
    int64_t t[4] = {1, 2, 2, 2}, shape[2] = {4, 4}, n = 4;
    tt_tensor lg, tg, out;
    tt_from_buffer(&lg, TT_FLOAT32, 2, shape, x);
    tt_from_buffer(&tg, TT_INT64, 1, &n, t);
    CHECK("huge logits", tt_cross_entropy(&out, &lg, &tg, IGNORE, TT_REDUCTION_NONE) == TT_OK);
    float got[16];
    tt_get_floats(&out, got);
    double ref[4];
    for (int r = 0; r < 4; r++) ref[r] = ref_row(x[r], 4, t[r]);
    CHECK("huge logits: tie gives log 2", fabs((double)got[0] - log(2.0)) < 1e-6);
    CHECK("huge logits: target at max gives 0", got[1] == 0.0f);
    CHECK("huge logits: target -inf gives +inf", isinf(got[3]) && got[3] > 0);
    check_close("huge logits: rows", got, ref, 4, 1e-6, 1e-6);
    tt_tensor_release(&out);
    tt_requires_grad_(&lg, 1);
    CHECK("huge logits backward", tt_cross_entropy(&out, &lg, &tg, IGNORE, TT_REDUCTION_SUM) == TT_OK);
    CHECK("huge logits backward", tt_backward(&out, NULL) == TT_OK);
    double gref[16] = {
        -0.5, 0, 0, 0.5,
        0, 0, 0, 0,
        1, -1, 0, 0,
        1 / (1 + exp(1.0) + exp(2.0)), -1, exp(1.0) / (1 + exp(1.0) + exp(2.0)), exp(2.0) / (1 + exp(1.0) + exp(2.0)),
    };
    const tt_tensor *g = tt_grad(&lg);
    CHECK("huge logits: gradient", g != NULL);
    if (g) {
        tt_get_floats(g, got);
        check_close("huge logits: gradient", got, gref, 16, 1e-6, 1e-6);
    }
    tt_tensor_release(&out);
    tt_tensor_release(&lg);
    tt_tensor_release(&tg);
}

static void check_ignore(void)
{
    float x[6] = {1, 2, 3, 0.5f, -1, 4};
    int64_t shape[2] = {2, 3}, n = 2, all[2] = {IGNORE, IGNORE}, some[2] = {2, 3};
    tt_tensor lg, ta, ts, out;
    tt_from_buffer(&lg, TT_FLOAT32, 2, shape, x);
    tt_from_buffer(&ta, TT_INT64, 1, &n, all);
    tt_from_buffer(&ts, TT_INT64, 1, &n, some);
    CHECK("all ignored: mean is NaN", tt_cross_entropy(&out, &lg, &ta, IGNORE, TT_REDUCTION_MEAN) == TT_OK
          && isnan(tt_get(&out, 0)));
    tt_tensor_release(&out);
    CHECK("all ignored: sum is 0", tt_cross_entropy(&out, &lg, &ta, IGNORE, TT_REDUCTION_SUM) == TT_OK
          && tt_get(&out, 0) == 0.0);
    tt_tensor_release(&out);
    /* ignore_index may be a valid class: row 2 (target 3) is left out */
    CHECK("ignore_index 3", tt_cross_entropy(&out, &lg, &ts, 3, TT_REDUCTION_MEAN) == TT_OK
          && fabs(tt_get(&out, 0) - ref_row(x, 3, 2)) < 1e-6);
    tt_tensor_release(&out);
    /* all ignored: the gradient is zeros, not NaN */
    tt_requires_grad_(&lg, 1);
    CHECK("all ignored backward", tt_cross_entropy(&out, &lg, &ta, IGNORE, TT_REDUCTION_MEAN) == TT_OK
          && tt_backward(&out, NULL) == TT_OK);
    const tt_tensor *g = tt_grad(&lg);
    int zero = g != NULL;
    for (int k = 0; g && k < 6; k++) zero &= tt_get(g, k) == 0.0;
    CHECK("all ignored: zero gradient", zero);
    tt_tensor_release(&out);
    tt_tensor_release(&lg);
    tt_tensor_release(&ta);
    tt_tensor_release(&ts);
}

/* [C] logits with a 0-d or [1] target, as PyTorch */
static void check_one_row(void)
{
    float x[3] = {0.2f, -1, 2.5f};
    int64_t c = 3, one = 1, t = 3;
    tt_tensor lg, t0, t1, out;
    tt_from_buffer(&lg, TT_FLOAT32, 1, &c, x);
    tt_from_buffer(&t0, TT_INT64, 0, NULL, &t);
    tt_from_buffer(&t1, TT_INT64, 1, &one, &t);
    CHECK("[C] with 0-d target", tt_cross_entropy(&out, &lg, &t0, IGNORE, TT_REDUCTION_NONE) == TT_OK
          && out.ndim == 0 && fabs(tt_get(&out, 0) - ref_row(x, 3, 3)) < 1e-6);
    tt_tensor_release(&out);
    CHECK("[C] with [1] target", tt_cross_entropy(&out, &lg, &t1, IGNORE, TT_REDUCTION_MEAN) == TT_OK
          && out.ndim == 0 && fabs(tt_get(&out, 0) - ref_row(x, 3, 3)) < 1e-6);
    tt_tensor_release(&out);
    tt_tensor_release(&lg);
    tt_tensor_release(&t0);
    tt_tensor_release(&t1);
}

static void check_threads(void)
{
    int64_t N = 64, C = 1000;
    float *x = malloc((size_t)(N * C) * sizeof *x), *g[3];
    int64_t *t = malloc((size_t)N * sizeof *t);
    float loss[3];
    random_case(x, t, N, C, 1);
    for (int k = 0; k < 3; k++) {
        tt_set_num_threads(k + 1);
        tt_tensor lg = make_logits(x, N, C, 0), tg = make_targets(t, N), out;
        tt_requires_grad_(&lg, 1);
        tt_cross_entropy(&out, &lg, &tg, IGNORE, TT_REDUCTION_MEAN);
        loss[k] = (float)tt_get(&out, 0);
        tt_backward(&out, NULL);
        g[k] = malloc((size_t)(N * C) * sizeof(float));
        tt_get_floats(tt_grad(&lg), g[k]);
        tt_tensor_release(&out);
        tt_tensor_release(&lg);
        tt_tensor_release(&tg);
    }
    tt_set_num_threads(0);
    for (int k = 1; k < 3; k++) {
        CHECK("threads: same loss", memcmp(&loss[0], &loss[k], sizeof(float)) == 0);
        CHECK("threads: same gradient", memcmp(g[0], g[k], (size_t)(N * C) * sizeof(float)) == 0);
    }
    for (int k = 0; k < 3; k++) free(g[k]);
    free(x);
    free(t);
}

static void expect_error(const char *descr, const tt_tensor *x, const tt_tensor *t, const char *msg)
{
    tt_tensor out;
    tt_status st = tt_cross_entropy(&out, x, t, IGNORE, TT_REDUCTION_MEAN);
    CHECK(descr, st != TT_OK && strstr(tt_errmsg(), msg) != NULL);
    if (st == TT_OK) tt_tensor_release(&out);
    else if (!strstr(tt_errmsg(), msg)) printf("  %s: got \"%s\"\n", descr, tt_errmsg());
}

static void check_errors(void)
{
    int64_t s2[2] = {2, 3}, s3[3] = {2, 2, 3}, n2 = 2, n3 = 3;
    float xf[12] = {0};
    int64_t bad0[2] = {1, 0}, bad4[2] = {4, 1}, good[3] = {1, 2, 3}, ints[6] = {0};
    tt_tensor x, x3, t0, t4, tf, t3, xi;
    tt_from_buffer(&x, TT_FLOAT32, 2, s2, xf);
    tt_from_buffer(&x3, TT_FLOAT32, 3, s3, xf);
    tt_from_buffer(&t0, TT_INT64, 1, &n2, bad0);
    tt_from_buffer(&t4, TT_INT64, 1, &n2, bad4);
    tt_from_buffer(&t3, TT_INT64, 1, &n3, good);
    tt_from_buffer(&tf, TT_FLOAT32, 1, &n2, xf);
    tt_from_buffer(&xi, TT_INT64, 2, s2, ints);
    expect_error("target 0", &x, &t0, "cross_entropy: target 0 out of range 1..3 (row 2; ignore_index is -100); "
                 "hint: class indices count from 1");
    expect_error("target 4", &x, &t4, "cross_entropy: target 4 out of range 1..3 (row 1; ignore_index is -100)");
    expect_error("float targets", &x, &tf, "cross_entropy: targets must be int64 class indices, got float32 [2]; "
                 "hint: targets:long()");
    expect_error("3-D logits", &x3, &t3, "cross_entropy: logits [2,2,3] must be [N, C] or [C]; hint: with the "
                 "classes last, logits:reshape(-1, C), targets:reshape(-1)");
    expect_error("too many targets", &x, &t3, "cross_entropy: targets [3] do not match logits [2,3]");
    expect_error("int64 logits", &xi, &t0, "cross_entropy: logits must be float32, got int64 [2,3]; "
                 "hint: logits:float()");
    tt_tensor_release(&xi);
    tt_tensor_release(&x);
    tt_tensor_release(&x3);
    tt_tensor_release(&t0);
    tt_tensor_release(&t4);
    tt_tensor_release(&t3);
    tt_tensor_release(&tf);
}

int main(void)
{
    tt_manual_seed(14);
    const int64_t Cs[] = {1, 3, 37, 1000}, Ns[] = {1, 5, 64};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int tr = 0; tr < 2; tr++) check_size(Ns[j], Cs[i], tr);
    check_finite_differences(5, 7);
    check_finite_differences(3, 37);
    check_finite_differences(1, 1);
    check_huge();
    check_ignore();
    check_one_row();
    check_threads();
    check_errors();
    return check_report();
}
