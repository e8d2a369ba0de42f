/*
** rows.c — row drivers: softmax over contiguous rows and the vector exp,
** shared out over the thread pool.
*/
#include <math.h>

#include "kernels.h"

/* ===== Softmax and exp ===== */

typedef struct rows_job {
    const tt__kern *kn;
    int64_t n;
    const float *x;
    float *y;
    int stream;
} rows_job;

static void softmax_range(void *ctx, int64_t begin, int64_t end)
{
    rows_job *j = ctx;
    const tt__kern *kn = j->kn;
    int64_t n = j->n;
    /* streaming: exp goes to an L1-resident row, the result bypasses caches */
    float *e = j->stream ? tt__scratch(TK_SCRATCH_TILE, (size_t)n * sizeof(float)) : NULL;
    for (int64_t r = begin; r < end; r++) {
        const float *x = j->x + r * n;
        float *y = j->y + r * n, *t = e ? e : y;
        float m = kn->row_max(n, x);
        if (m == -INFINITY) {                 /* all -inf: NaN, as PyTorch */
            for (int64_t i = 0; i < n; i++) y[i] = NAN;
            continue;
        }
        float s = kn->exp_sum(n, x, m, t);
        kn->scale(n, 1.0f / s, t, y, e != NULL);
    }
}

void tt_softmax_rows(int64_t nrows, int64_t n, const float *x, float *y)
{
    if (nrows <= 0 || n <= 0) return;
    rows_job j = { tt__kern_now(), n, x, y, 0 };
    /* beyond the last-level cache the result is not read back soon */
    j.stream = (double)nrows * (double)n * 4.0 >= 16.0 * 1024 * 1024;
    tt_parallel_for(nrows, 16384 / n + 1, softmax_range, &j);
}

static void exp_range(void *ctx, int64_t begin, int64_t end)
{
    rows_job *j = ctx;
    j->kn->exp_vec(end - begin, j->x + begin, j->y + begin);
}

void tt_exp_vec(int64_t n, const float *x, float *y)
{
    if (n <= 0) return;
    rows_job j = { tt__kern_now(), 1, x, y, 0 };
    tt_parallel_for(n, 32768, exp_range, &j);
}
