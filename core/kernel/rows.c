/*
** rows.c — row and column drivers: softmax over contiguous rows or over
** the middle dim of [outer, n, inner], the vector exp, and the line loops of
** the reductions; the drivers share the work out over the thread pool.
*/
#include <math.h>
#include <stdatomic.h>

#include "kernels.h"

/* Work sizes: a task of GRAIN elements (EXP_GRAIN for the cheaper exp alone)
   repays a thread wake-up. */
#define GRAIN 16384
#define EXP_GRAIN 32768

/* ===== Softmax and exp ===== */

typedef struct rows_job {
    const tk_kern *kn;
    int64_t n;
    const float *x;
    float *y;
} rows_job;

/* The exps go to y and are scaled there while the row is in L1, with
   ordinary stores even when the result is far larger than the caches:
   non-temporal stores of the result (through an L1 scratch row) measured
   0.6-0.7x the speed on the 2-core EPYC (Zen 5) VM, on both paths. */
static void softmax_range(void *ctx, int64_t begin, int64_t end)
{
    rows_job *j = ctx;
    const tk_kern *kn = j->kn;
    int64_t n = j->n;
    for (int64_t r = begin; r < end; r++) {
        const float *x = j->x + r * n;
        float *y = j->y + r * n;
        float m = kn->row_max(n, x);
        if (m == -INFINITY) {                 /* all -inf: NaN, as PyTorch */
            for (int64_t i = 0; i < n; i++) y[i] = NAN;
            continue;
        }
        float s = kn->exp_sum_next && r + 1 < end ? kn->exp_sum_next(n, x, m, y, x + n)
                                                   : kn->exp_sum(n, x, m, y);
        kn->scale(n, 1.0f / s, y, y);
    }
}

void tk_softmax_rows(int64_t nrows, int64_t n, const float *x, float *y)
{
    if (nrows <= 0 || n <= 0) return;
    rows_job j = { tk_kern_now(), n, x, y };
    tk_parallel_for(nrows, GRAIN / n + 1, softmax_range, &j);
}

/* x - max - log(sum): the exps go to a scratch row, so x == y is fine */
typedef struct log_job {
    rows_job r;
    atomic_int nomem;       /* a task found no memory for its scratch row */
} log_job;

static void log_softmax_range(void *ctx, int64_t begin, int64_t end)
{
    log_job *j = ctx;
    const tk_kern *kn = j->r.kn;
    int64_t n = j->r.n;
    float *e = tk_scratch(TK_SCRATCH_TILE, (size_t)n * sizeof(float));
    if (!e) {
        atomic_store(&j->nomem, 1);
        return;
    }
    for (int64_t r = begin; r < end; r++) {
        const float *x = j->r.x + r * n;
        float *y = j->r.y + r * n;
        float m = kn->row_max(n, x);
        if (m == -INFINITY) {                 /* all -inf: NaN, as softmax */
            for (int64_t i = 0; i < n; i++) y[i] = NAN;
            continue;
        }
        float ls = logf(kn->exp_sum(n, x, m, e));
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) - ls;
    }
}

int tk_log_softmax_rows(int64_t nrows, int64_t n, const float *x, float *y)
{
    if (nrows <= 0 || n <= 0) return 0;
    log_job j = { { tk_kern_now(), n, x, y }, 0 };
    tk_parallel_for(nrows, GRAIN / n + 1, log_softmax_range, &j);
    return atomic_load(&j.nomem) ? -1 : 0;
}

static void exp_range(void *ctx, int64_t begin, int64_t end)
{
    rows_job *j = ctx;
    j->kn->exp_vec(end - begin, j->x + begin, j->y + begin);
}

void tk_exp_vec(int64_t n, const float *x, float *y)
{
    if (n <= 0) return;
    rows_job j = { tk_kern_now(), 1, x, y };
    tk_parallel_for(n, EXP_GRAIN, exp_range, &j);
}

void tk_transpose(int64_t rows, int64_t cols, const float *a, int64_t lda, float *b, int64_t ldb)
{
    const tk_kern *kn = tk_kern_now();
    int64_t j0 = kn->transpose ? kn->transpose(rows, cols, a, lda, b, ldb) : 0;
    for (int64_t j = j0; j < cols; j++)          /* the columns left: b's rows */
        for (int64_t i = 0; i < rows; i++) b[j * ldb + i] = a[i * lda + j];
}

/* ===== Cross-entropy rows =====
   One pass of max and one of exp-sum a row; a row whose target is
   ignored (t < 0) is skipped whole, so C may even be 0 there. */
typedef struct ce_job {
    const tk_kern *kn;
    int64_t n;
    const float *x;
    const int64_t *t;       /* 0-based targets, < 0 ignored */
    float *loss, *stats;    /* stats: max and sum of exp(x - max) a row */
    const float *g;         /* backward: g a row (gstride 0: one for all) */
    int64_t gstride;
    float *dx;
    atomic_int nomem;
} ce_job;

static void ce_range(void *ctx, int64_t begin, int64_t end)
{
    ce_job *j = ctx;
    int64_t n = j->n;
    float *e = tk_scratch(TK_SCRATCH_TILE, (size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!e) {
        atomic_store(&j->nomem, 1);
        return;
    }
    for (int64_t r = begin; r < end; r++) {
        const float *x = j->x + r * n;
        int64_t t = j->t[r];
        if (t < 0) {
            j->loss[r] = 0.0f;
            j->stats[2 * r] = j->stats[2 * r + 1] = NAN;
            continue;
        }
        float m = j->kn->row_max(n, x);
        /* all -inf: NaN, as PyTorch; the sum's terms are exp(x - m) <= 1 */
        float s = m == -INFINITY ? NAN : j->kn->exp_sum(n, x, m, e);
        j->stats[2 * r] = m;
        j->stats[2 * r + 1] = s;
        /* (m - x_t) + log s, not lse - x_t: exact when m ~ x_t ~ 1e30 */
        j->loss[r] = (m - x[t]) + logf(s);
    }
}

int tk_cross_entropy_rows(int64_t nrows, int64_t n, const float *x, const int64_t *t,
                          float *loss, float *stats)
{
    if (nrows <= 0) return 0;
    ce_job j = { .kn = tk_kern_now(), .n = n, .x = x, .t = t, .loss = loss, .stats = stats };
    tk_parallel_for(nrows, GRAIN / (n + 1) + 1, ce_range, &j);
    return atomic_load(&j.nomem) ? -1 : 0;
}

/* dx = (exp(x - m) / s - onehot(t)) * g, from the forward's m and s */
static void ce_backward_range(void *ctx, int64_t begin, int64_t end)
{
    ce_job *j = ctx;
    int64_t n = j->n;
    for (int64_t r = begin; r < end; r++) {
        float *dx = j->dx + r * n;
        int64_t t = j->t[r];
        if (t < 0) {
            for (int64_t i = 0; i < n; i++) dx[i] = 0.0f;
            continue;
        }
        float g = j->g[r * j->gstride], m = j->stats[2 * r], s = j->stats[2 * r + 1];
        j->kn->exp_sum(n, j->x + r * n, m, dx);
        j->kn->scale(n, g / s, dx, dx);
        dx[t] -= g;
    }
}

void tk_cross_entropy_backward_rows(int64_t nrows, int64_t n, const float *x, const int64_t *t,
                                    const float *stats, const float *g, int64_t gstride, float *dx)
{
    if (nrows <= 0) return;
    ce_job j = { .kn = tk_kern_now(), .n = n, .x = x, .t = t, .stats = (float *)stats,
                 .g = g, .gstride = gstride, .dx = dx };
    tk_parallel_for(nrows, GRAIN / (n + 1) + 1, ce_backward_range, &j);
}

/* ===== Column softmax ===== */

#define SM_COLS 4096            /* columns side by side at most (wide rows: fewer TLB misses) */

/* Contiguous y viewed as [outer, n, inner], softmax over n in place. Each
   task takes up to SM_COLS neighbouring columns through the three passes
   (max, exp-sum, normalise), so every access runs along contiguous rows.
   log_softmax sums its exps in a row of its own (y may be x, still needed)
   and writes x - max - log(sum). */
typedef struct sm_job {
    const float *x;         /* source, same layout as y (may be y) */
    float *y;
    int64_t n, inner, cols, nblk;
    int log;                /* log_softmax */
} sm_job;

static void softmax_cols_range(void *p, int64_t begin, int64_t end)
{
    const sm_job *j = p;
    float mx[SM_COLS], sum[SM_COLS], e[SM_COLS];
    for (int64_t t = begin; t < end; t++) {
        int64_t o = t / j->nblk, c0 = (t % j->nblk) * j->cols;
        int64_t cb = j->inner - c0 < j->cols ? j->inner - c0 : j->cols;
        const float *src = j->x + o * j->n * j->inner + c0;
        float *base = j->y + o * j->n * j->inner + c0;
        for (int64_t c = 0; c < cb; c++) {
            mx[c] = -INFINITY;
            sum[c] = 0.0f;
        }
        for (int64_t r = 0; r < j->n; r++) {          /* 1: column maxima */
            const float *row = src + r * j->inner;
            for (int64_t c = 0; c < cb; c++)
                if (row[c] > mx[c]) mx[c] = row[c];
        }
        /* 2: exp and sums; an all -inf column gives exp(NaN), so NaN, as PyTorch */
        for (int64_t r = 0; r < j->n; r++) {
            const float *in = src + r * j->inner;
            float *row = j->log ? e : base + r * j->inner;
            for (int64_t c = 0; c < cb; c++) row[c] = in[c] - mx[c];
            tk_exp_vec(cb, row, row);
            for (int64_t c = 0; c < cb; c++) sum[c] += row[c];
        }
        if (j->log) {                                 /* 3: x - max - log(sum) */
            for (int64_t c = 0; c < cb; c++) sum[c] = logf(sum[c]);
            for (int64_t r = 0; r < j->n; r++) {
                const float *in = src + r * j->inner;
                float *row = base + r * j->inner;
                for (int64_t c = 0; c < cb; c++) row[c] = (in[c] - mx[c]) - sum[c];
            }
            continue;
        }
        for (int64_t r = 0; r < j->n; r++) {          /* 3: normalise */
            float *row = base + r * j->inner;
            for (int64_t c = 0; c < cb; c++) row[c] /= sum[c];
        }
    }
}

static void cols_run(int64_t outer, int64_t n, int64_t inner, const float *x, float *y, int log)
{
    if (outer <= 0 || n <= 0 || inner <= 0) return;
    sm_job j = { x, y, n, inner, 1, 1, log };
    /* wide blocks, but enough of them for every thread (columns are
       independent, so the split never changes the result) */
    int64_t nt = tk_get_num_threads(), want = (nt + outer - 1) / outer;
    j.cols = (j.inner + want - 1) / want;
    j.cols = j.cols < 64 ? 64 : j.cols > SM_COLS ? SM_COLS : j.cols;
    j.nblk = (j.inner + j.cols - 1) / j.cols;
    int64_t tasks = outer * j.nblk;
    int64_t cols = j.inner < j.cols ? j.inner : j.cols;
    int64_t grain = GRAIN / (cols * n) + 1;
    tk_parallel_for(tasks, grain, softmax_cols_range, &j);
}

void tk_softmax_cols(int64_t outer, int64_t n, int64_t inner, const float *x, float *y)
{
    cols_run(outer, n, inner, x, y, 0);
}

void tk_log_softmax_cols(int64_t outer, int64_t n, int64_t inner, const float *x, float *y)
{
    cols_run(outer, n, inner, x, y, 1);
}

/* ===== Reductions ===== */

/* Sum of a contiguous line in double, in the chains of TK_SUM_CHAINS (they
   hide the add latency; the SIMD paths keep the same order). */
static double line_sum(const float *x, int64_t n)
{
    const tk_kern *kn = tk_kern_now();
    if (kn->sum_line) return kn->sum_line(n, x);
    double s[TK_SUM_CHAINS] = {0};
    int64_t j = 0;
    for (; j + TK_SUM_CHAINS <= n; j += TK_SUM_CHAINS)
        for (int k = 0; k < TK_SUM_CHAINS; k++) s[k] += (double)x[j + k];
    for (int k = 0; j + k < n; k++) s[k] += (double)x[j + k];
    return tk_sum_fold(s);
}

/* Sum of squared deviations from mean (the second pass of var). */
static double line_sqdev(const float *x, int64_t n, double mean)
{
    double s0 = 0, s1 = 0;
    int64_t j = 0;
    for (; j + 2 <= n; j += 2) {
        double d0 = (double)x[j] - mean, d1 = (double)x[j + 1] - mean;
        s0 += d0 * d0;
        s1 += d1 * d1;
    }
    for (; j < n; j++) s0 += ((double)x[j] - mean) * ((double)x[j] - mean);
    return s0 + s1;
}

/* Sums go in double; variance is two-pass. */
void tk_reduce_lines(int op, const float *x, int64_t nb, int64_t si, int64_t R, int64_t sd,
                         float *v, float *ix)
{
    if (op != TK_RED_MAX && op != TK_RED_MIN) {
        double acc[TK_RED_BLOCK], ss[TK_RED_BLOCK];     /* only the nb in use are zeroed */
        for (int64_t i = 0; i < nb; i++) acc[i] = ss[i] = 0.0;
        if (nb == 1 && sd == 1) {
            acc[0] = line_sum(x, R);
        } else if (si == 1 && tk_kern_now()->sum_cols) {        /* neighbouring lines: vectors */
            tk_kern_now()->sum_cols(nb, R, x, sd, acc);
        } else {
            for (int64_t j = 0; j < R; j++) {
                const float *r = x + j * sd;
                for (int64_t i = 0; i < nb; i++) acc[i] += (double)r[i * si];
            }
        }
        if (op == TK_RED_SUM) {
            for (int64_t i = 0; i < nb; i++) v[i] = (float)acc[i];
            return;
        }
        for (int64_t i = 0; i < nb; i++) acc[i] /= (double)R;      /* R == 0: NaN */
        if (op == TK_RED_MEAN) {
            for (int64_t i = 0; i < nb; i++) v[i] = (float)acc[i];
            return;
        }
        if (nb == 1 && sd == 1) {
            ss[0] = line_sqdev(x, R, acc[0]);
        } else {
            for (int64_t j = 0; j < R; j++) {
                const float *r = x + j * sd;
                for (int64_t i = 0; i < nb; i++) {
                    double dlt = (double)r[i * si] - acc[i];
                    ss[i] += dlt * dlt;
                }
            }
        }
        for (int64_t i = 0; i < nb; i++) {
            double var = R > 1 ? ss[i] / (double)(R - 1) : (double)NAN;
            v[i] = (float)(op == TK_RED_STD ? sqrt(var) : var);
        }
        return;
    }
    /* R >= 1 here (the front-end rejects empty dims); NaN wins, first tie wins */
    int is_max = op == TK_RED_MAX;
    float best[TK_RED_BLOCK];
    int64_t bi[TK_RED_BLOCK];
    for (int64_t i = 0; i < nb; i++) {
        best[i] = x[i * si];
        bi[i] = 0;
    }
    for (int64_t j = 1; j < R; j++) {
        const float *r = x + j * sd;
        for (int64_t i = 0; i < nb; i++) {
            float u = r[i * si];
            if (isnan(best[i])) continue;
            if (isnan(u) || (is_max ? u > best[i] : u < best[i])) {
                best[i] = u;
                bi[i] = j;
            }
        }
    }
    for (int64_t i = 0; i < nb; i++) {
        v[i] = best[i];
        ix[i] = (float)(bi[i] + 1);
    }
}
