/*
** test_autograd.c — every backward against central finite differences,
** at awkward sizes, broadcast and strided (transposed) inputs; the
** engine's rules: accumulation, the freed graph, the error messages,
** no_grad, a 10000-op chain, graph memory counted and capped, and memory
** back to the start.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tt.h"

#define MAXIN 3

typedef tt_status (*op_fn)(tt_tensor *out, tt_tensor *const *in);

typedef struct input {
    int ndim;
    int64_t shape[4];
    int transposed;         /* built as its transpose's contiguous data, then mT: strided */
    int positive;           /* values in [0.5, 1.5) (log, sqrt, pow, div) */
    int grid;               /* 1: multiples of 0.1, 2: those plus 0.05, so ops with a kink
                               (maximum, abs) never see two values within the step */
} input;

/* The input tensor from values x (row-major of its own shape). */
static tt_tensor make(const input *in, const float *x)
{
    tt_tensor t, c;
    if (!in->transposed) {
        tt_from_buffer(&t, TT_FLOAT32, in->ndim, in->shape, x);
        return t;
    }
    int nd = in->ndim;
    int64_t ts[4];
    memcpy(ts, in->shape, sizeof ts);
    ts[nd - 1] = in->shape[nd - 2];
    ts[nd - 2] = in->shape[nd - 1];
    int64_t R = in->shape[nd - 2], C = in->shape[nd - 1], n = 1;
    for (int i = 0; i < nd; i++) n *= in->shape[i];
    float *y = malloc((size_t)n * sizeof *y);
    for (int64_t m = 0; m < n / (R * C); m++)
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++) y[m * R * C + j * R + i] = x[m * R * C + i * C + j];
    tt_from_buffer(&c, TT_FLOAT32, nd, ts, y);
    free(y);
    tt_mT(&t, &c);
    tt_tensor_release(&c);
    return t;
}

static int64_t numel_of(const input *in)
{
    int64_t n = 1;
    for (int i = 0; i < in->ndim; i++) n *= in->shape[i];
    return n;
}

/* loss = sum(f(x) * w) in float64 with w fixed; f runs in float32 */
static double loss(op_fn f, int nin, const input *ins, float *const *x, const float *w)
{
    tt_tensor t[MAXIN], *p[MAXIN], out;
    for (int i = 0; i < nin; i++) {
        t[i] = make(&ins[i], x[i]);
        p[i] = &t[i];
    }
    tt_status st = f(&out, p);
    double s = 0;
    if (st == TT_OK) {
        int64_t n = tt_numel(&out);
        for (int64_t k = 0; k < n; k++) s += tt_get(&out, k) * (double)w[k];
        tt_tensor_release(&out);
    }
    for (int i = 0; i < nin; i++) tt_tensor_release(&t[i]);
    return s;
}

/* The analytic gradient of every input against central differences. The
   step h = 1e-2 is suited to float32: truncation error is O(h^2 f''')
   ~1e-4 relative, rounding error ~ulp(f) * n / h ~ 1e-5 * n for the
   n <= 100 terms of the loss; tolerance 1e-2 relative + 1e-2 absolute
   covers both with room, and a wrong formula is off by O(1). */
static void gradcheck(const char *name, op_fn f, int nin, const input *ins)
{
    float *x[MAXIN];
    tt_manual_seed(7);
    for (int i = 0; i < nin; i++) {
        int64_t n = numel_of(&ins[i]);
        x[i] = malloc((size_t)n * sizeof(float));
        tt_tensor r;
        tt_rand(&r, 1, &n);
        for (int64_t k = 0; k < n; k++) {
            x[i][k] = ins[i].positive ? 0.5f + (float)tt_get(&r, k) : 4.0f * (float)tt_get(&r, k) - 2.0f;
            if (ins[i].grid) x[i][k] = (float)(floor((double)x[i][k] * 10.0) / 10.0 + (ins[i].grid == 2 ? 0.05 : 0.0));
        }
        tt_tensor_release(&r);
    }
    /* the analytic gradients, with grad w */
    tt_tensor t[MAXIN], *p[MAXIN], out;
    for (int i = 0; i < nin; i++) {
        t[i] = make(&ins[i], x[i]);
        tt_requires_grad_(&t[i], 1);
        p[i] = &t[i];
    }
    CHECK(name, f(&out, p) == TT_OK);
    int64_t no = tt_numel(&out);
    tt_tensor wt;
    tt_randn(&wt, out.ndim, out.shape);
    float *w = malloc((size_t)(no ? no : 1) * sizeof *w);
    tt_get_floats(&wt, w);
    tt_status st = tt_backward(&out, &wt);
    if (st) printf("  %s: %s\n", name, tt_errmsg());
    CHECK(name, st == TT_OK);
    tt_tensor_release(&out);
    tt_tensor_release(&wt);
    for (int i = 0; i < nin; i++) {
        int64_t n = numel_of(&ins[i]);
        double *ref = malloc((size_t)n * sizeof *ref);
        float *got = malloc((size_t)n * sizeof *got);
        for (int64_t k = 0; k < n; k++) {
            float keep = x[i][k], h = 1e-2f;
            x[i][k] = keep + h;
            double up = loss(f, nin, ins, x, w);
            x[i][k] = keep - h;
            double down = loss(f, nin, ins, x, w);
            x[i][k] = keep;
            ref[k] = (up - down) / (2.0 * (double)h);
        }
        const tt_tensor *g = tt_grad(&t[i]);
        CHECK(name, g != NULL);
        if (g) {
            tt_get_floats(g, got);
            char d[96];
            snprintf(d, sizeof d, "%s: input %d", name, i + 1);
            check_close(d, got, ref, (long)n, 1e-2, 1e-2);
        }
        free(ref);
        free(got);
    }
    for (int i = 0; i < nin; i++) {
        tt_tensor_release(&t[i]);
        free(x[i]);
    }
    free(w);
}

/* ===== The ops ===== */

static tt_status f_add(tt_tensor *o, tt_tensor *const *in) { return tt_binary(o, TT_OP_ADD, in[0], in[1]); }
static tt_status f_sub(tt_tensor *o, tt_tensor *const *in) { return tt_binary(o, TT_OP_SUB, in[0], in[1]); }
static tt_status f_mul(tt_tensor *o, tt_tensor *const *in) { return tt_binary(o, TT_OP_MUL, in[0], in[1]); }
static tt_status f_div(tt_tensor *o, tt_tensor *const *in) { return tt_binary(o, TT_OP_DIV, in[0], in[1]); }
static tt_status f_pow(tt_tensor *o, tt_tensor *const *in) { return tt_binary(o, TT_OP_POW, in[0], in[1]); }
static tt_status f_max(tt_tensor *o, tt_tensor *const *in) { return tt_binary(o, TT_OP_MAXIMUM, in[0], in[1]); }
static tt_status f_min(tt_tensor *o, tt_tensor *const *in) { return tt_binary(o, TT_OP_MINIMUM, in[0], in[1]); }
static tt_status f_rsub(tt_tensor *o, tt_tensor *const *in) { return tt_binary_scalar(o, TT_OP_SUB, in[0], 3, 1); }
static tt_status f_smul(tt_tensor *o, tt_tensor *const *in) { return tt_binary_scalar(o, TT_OP_MUL, in[0], -1.5, 0); }
static tt_status f_rdiv(tt_tensor *o, tt_tensor *const *in) { return tt_binary_scalar(o, TT_OP_DIV, in[0], 2, 1); }
static tt_status f_sdiv(tt_tensor *o, tt_tensor *const *in) { return tt_binary_scalar(o, TT_OP_DIV, in[0], 3, 0); }
static tt_status f_spow(tt_tensor *o, tt_tensor *const *in) { return tt_binary_scalar(o, TT_OP_POW, in[0], 2.5, 0); }
static tt_status f_rpow(tt_tensor *o, tt_tensor *const *in) { return tt_binary_scalar(o, TT_OP_POW, in[0], 1.7, 1); }
static tt_status f_smax(tt_tensor *o, tt_tensor *const *in) { return tt_binary_scalar(o, TT_OP_MAXIMUM, in[0], 0.3, 0); }
static tt_status f_neg(tt_tensor *o, tt_tensor *const *in) { return tt_unary(o, TT_OP_NEG, in[0]); }
static tt_status f_exp(tt_tensor *o, tt_tensor *const *in) { return tt_unary(o, TT_OP_EXP, in[0]); }
static tt_status f_log(tt_tensor *o, tt_tensor *const *in) { return tt_unary(o, TT_OP_LOG, in[0]); }
static tt_status f_sqrt(tt_tensor *o, tt_tensor *const *in) { return tt_unary(o, TT_OP_SQRT, in[0]); }
static tt_status f_abs(tt_tensor *o, tt_tensor *const *in) { return tt_unary(o, TT_OP_ABS, in[0]); }
static tt_status f_sum(tt_tensor *o, tt_tensor *const *in) { return tt_reduce(o, TT_OP_SUM, in[0], -1, 0); }
static tt_status f_sum1(tt_tensor *o, tt_tensor *const *in) { return tt_reduce(o, TT_OP_SUM, in[0], 1, 0); }
static tt_status f_mean(tt_tensor *o, tt_tensor *const *in) { return tt_reduce(o, TT_OP_MEAN, in[0], -1, 0); }
static tt_status f_mean0k(tt_tensor *o, tt_tensor *const *in) { return tt_reduce(o, TT_OP_MEAN, in[0], 0, 1); }
static tt_status f_matmul(tt_tensor *o, tt_tensor *const *in) { return tt_matmul(o, in[0], in[1]); }
static tt_status f_softmax(tt_tensor *o, tt_tensor *const *in) { return tt_softmax(o, in[0], in[0]->ndim - 1); }
static tt_status f_softmax0(tt_tensor *o, tt_tensor *const *in) { return tt_softmax(o, in[0], 0); }

static tt_status f_log_softmax(tt_tensor *o, tt_tensor *const *in) { return tt_log_softmax(o, in[0], in[0]->ndim - 1); }
static tt_status f_log_softmax0(tt_tensor *o, tt_tensor *const *in) { return tt_log_softmax(o, in[0], 0); }
static tt_status f_relu(tt_tensor *o, tt_tensor *const *in) { return tt_unary(o, TT_OP_RELU, in[0]); }
static tt_status f_gelu(tt_tensor *o, tt_tensor *const *in) { return tt_unary(o, TT_OP_GELU, in[0]); }
static tt_status f_gelu_tanh(tt_tensor *o, tt_tensor *const *in) { return tt_unary(o, TT_OP_GELU_TANH, in[0]); }
static tt_status f_tanh(tt_tensor *o, tt_tensor *const *in) { return tt_unary(o, TT_OP_TANH, in[0]); }
static tt_status f_sigmoid(tt_tensor *o, tt_tensor *const *in) { return tt_unary(o, TT_OP_SIGMOID, in[0]); }
static tt_status f_tril(tt_tensor *o, tt_tensor *const *in) { return tt_tril(o, in[0], -1); }
static tt_status f_triu(tt_tensor *o, tt_tensor *const *in) { return tt_triu(o, in[0], 2); }

/* cat of four with a repeated input (its gradient sums both parts), stack of three */
static tt_status f_cat(tt_tensor *o, tt_tensor *const *in)
{
    const tt_tensor *list[4] = {in[0], in[1], in[0], in[2]};
    return tt_cat(o, list, 4, 1);
}

static tt_status f_stack(tt_tensor *o, tt_tensor *const *in)
{
    const tt_tensor *list[3] = {in[0], in[1], in[2]};
    return tt_stack(o, list, 3, 1);
}

static tt_status f_repeat(tt_tensor *o, tt_tensor *const *in) { return tt_repeat_interleave(o, in[0], 3, 1); }
static tt_status f_repeat_last(tt_tensor *o, tt_tensor *const *in) { return tt_repeat_interleave(o, in[0], 2, 2); }

/* the values of max/min over a dim; the indices dropped */
static tt_status max_dim(tt_tensor *o, tt_tensor *const *in, int d, int keepdim, int is_min)
{
    tt_tensor idx;
    tt_status st = tt_max_dim(o, &idx, in[0], d, keepdim, is_min);
    tt_tensor_release(&idx);
    return st;
}
static tt_status f_max_dim(tt_tensor *o, tt_tensor *const *in) { return max_dim(o, in, 1, 0, 0); }
static tt_status f_min_dim(tt_tensor *o, tt_tensor *const *in) { return max_dim(o, in, 2, 1, 1); }
static tt_status f_max_all(tt_tensor *o, tt_tensor *const *in) { return tt_reduce(o, TT_OP_MAX, in[0], -1, 0); }
static tt_status f_min_red(tt_tensor *o, tt_tensor *const *in) { return tt_reduce(o, TT_OP_MIN, in[0], 0, 0); }

static tt_status f_var(tt_tensor *o, tt_tensor *const *in) { return tt_reduce(o, TT_OP_VAR, in[0], -1, 0); }
static tt_status f_var_dim(tt_tensor *o, tt_tensor *const *in) { return tt_reduce(o, TT_OP_VAR, in[0], 2, 1); }
static tt_status f_std(tt_tensor *o, tt_tensor *const *in) { return tt_reduce(o, TT_OP_STD, in[0], -1, 0); }
static tt_status f_std_dim(tt_tensor *o, tt_tensor *const *in) { return tt_reduce(o, TT_OP_STD, in[0], 1, 0); }

static tt_status f_masked(tt_tensor *o, tt_tensor *const *in)
{
    tt_tensor m;
    tt_causal_mask(&m, 3, 5, 1);
    tt_status st = tt_masked_fill(o, in[0], &m, -7.0);
    tt_tensor_release(&m);
    return st;
}

/* view ops: each followed by a multiply, so the gradient is not all ones */
static tt_status f_views(tt_tensor *o, tt_tensor *const *in)
{
    /* [2,3,5] -> transpose(0,2) [5,3,2] -> narrow(0,1,3) [3,3,2] -> select(1,2) [3,2]
       -> unsqueeze(0) [1,3,2] -> expand [4,3,2] -> permute(2,0,1) [2,4,3]
       -> reshape [8,3] -> mT [3,8] -> view [24] -> squeeze -> contiguous -> clone */
    tt_tensor t[12];
    int perm[3] = {2, 0, 1};
    int64_t e[3] = {4, 3, 2}, r[2] = {8, 3}, v[1] = {24};
    tt_transpose(&t[0], in[0], 0, 2);
    tt_narrow(&t[1], &t[0], 0, 1, 3);
    tt_select(&t[2], &t[1], 1, 2);
    tt_unsqueeze(&t[3], &t[2], 0);
    tt_expand(&t[4], &t[3], 3, e);
    tt_permute(&t[5], &t[4], perm);
    tt_reshape(&t[6], &t[5], 2, r);
    tt_mT(&t[7], &t[6]);
    tt_tensor c;
    tt_contiguous(&c, &t[7]);
    tt_view(&t[8], &c, 1, v);
    tt_squeeze(&t[9], &t[8], -1);
    tt_clone(&t[10], &t[9]);
    tt_status st = tt_binary(o, TT_OP_MUL, &t[10], &t[10]);
    for (int i = 0; i < 11; i++) tt_tensor_release(&t[i]);
    tt_tensor_release(&c);
    return st;
}

static tt_status f_chunk(tt_tensor *o, tt_tensor *const *in)
{
    tt_tensor parts[3];
    int n;
    tt_chunk(parts, 3, &n, in[0], 3, 1);
    tt_status st = tt_binary(o, TT_OP_MUL, &parts[0], &parts[2]);
    for (int i = 0; i < n; i++) tt_tensor_release(&parts[i]);
    return st;
}

/* split into pieces of 2 along dim 2 ([3,7]: 2, 2, 2, 1): pieces 1 and 4
   used (1 twice), 2 and 3 not */
static tt_status f_split(tt_tensor *o, tt_tensor *const *in)
{
    tt_tensor parts[4], c;
    int n;
    tt_split(parts, 4, &n, in[0], 2, 1);
    const tt_tensor *list[3] = {&parts[0], &parts[3], &parts[0]};
    tt_cat(&c, list, 3, 1);
    tt_status st = tt_binary(o, TT_OP_MUL, &c, &c);
    for (int i = 0; i < n; i++) tt_tensor_release(&parts[i]);
    tt_tensor_release(&c);
    return st;
}

/* rearrange: split and permute; a merge across permuted dims (a copy) */
static tt_status f_rearrange(tt_tensor *o, tt_tensor *const *in)
{
    tt_tensor r;
    tt_status st = tt_rearrange(&r, in[0], "b s (h d) -> b h d s", 1, (const char *[]){"h"}, (int64_t[]){2});
    if (st == TT_OK) st = tt_binary(o, TT_OP_MUL, &r, &r);
    tt_tensor_release(&r);
    return st;
}

static tt_status f_rearrange_merge(tt_tensor *o, tt_tensor *const *in)
{
    tt_tensor r;
    tt_status st = tt_rearrange(&r, in[0], "b s d -> (d b) s", 0, NULL, NULL);
    if (st == TT_OK) st = tt_unary(o, TT_OP_EXP, &r);
    tt_tensor_release(&r);
    return st;
}

static tt_status einsum_of(tt_tensor *o, tt_tensor *const *in, int n, const char *spec)
{
    const tt_tensor *list[MAXIN] = {in[0], n > 1 ? in[1] : NULL, n > 2 ? in[2] : NULL};
    return tt_einsum(o, spec, list, n);
}
static tt_status f_es_attn(tt_tensor *o, tt_tensor *const *in) { return einsum_of(o, in, 2, "b i d, b j d -> b i j"); }
static tt_status f_es_bcast(tt_tensor *o, tt_tensor *const *in) { return einsum_of(o, in, 2, "... i d, ... j d -> ... i j"); }
static tt_status f_es_three(tt_tensor *o, tt_tensor *const *in) { return einsum_of(o, in, 3, "b i d, b j d, b j e -> b i e"); }
static tt_status f_es_summed(tt_tensor *o, tt_tensor *const *in) { return einsum_of(o, in, 2, "b i d, j e -> i b"); }
static tt_status f_es_diag(tt_tensor *o, tt_tensor *const *in) { return einsum_of(o, in, 2, "b i i, b i -> i b"); }

/* index_select with repeated indices (their gradients add up), through a
   strided index: column 1 of a [5,2] int64 tensor, {3, 1, 3, 5, 3} */
static tt_status f_index_select(tt_tensor *o, tt_tensor *const *in)
{
    const int64_t ix[10] = {3, 9, 1, 9, 3, 9, 5, 9, 3, 9};
    tt_tensor all, col;
    tt_from_buffer(&all, TT_INT64, 2, (int64_t[]){5, 2}, ix);
    tt_select(&col, &all, 1, 0);
    tt_status st = tt_index_select(o, in[0], 2, &col);
    tt_tensor_release(&col);
    tt_tensor_release(&all);
    return st;
}

static tt_status f_index_select0(tt_tensor *o, tt_tensor *const *in)
{
    const int64_t ix[4] = {2, 2, 1, 2};
    tt_tensor idx;
    tt_from_buffer(&idx, TT_INT64, 1, (int64_t[]){4}, ix);
    tt_status st = tt_index_select(o, in[0], 0, &idx);
    tt_tensor_release(&idx);
    return st;
}

/* the same along dim 1 (an embedding's rows; its backward's row path):
   strided index {2, 1, 2, 2, 1} into [2,3,5] */
static tt_status f_index_select0s(tt_tensor *o, tt_tensor *const *in)
{
    const int64_t ix[10] = {2, 9, 1, 9, 2, 9, 2, 9, 1, 9};
    tt_tensor all, col;
    tt_from_buffer(&all, TT_INT64, 2, (int64_t[]){5, 2}, ix);
    tt_select(&col, &all, 1, 0);
    tt_status st = tt_index_select(o, in[0], 0, &col);
    tt_tensor_release(&col);
    tt_tensor_release(&all);
    return st;
}

/* gather along dim 3 of [2,3,5] with a [2,2,7] index (smaller off d,
   longer along d, repeats), transposed so it is strided */
static tt_status f_gather(tt_tensor *o, tt_tensor *const *in)
{
    int64_t ix[28];
    for (int k = 0; k < 28; k++) ix[k] = 1 + (k * 7 + k / 3) % 5;
    tt_tensor base, idx;
    tt_from_buffer(&base, TT_INT64, 3, (int64_t[]){2, 7, 2}, ix);
    tt_transpose(&idx, &base, 1, 2);            /* [2,2,7] */
    tt_status st = tt_gather(o, in[0], 2, &idx);
    tt_tensor_release(&idx);
    tt_tensor_release(&base);
    return st;
}

static tt_status f_gather0(tt_tensor *o, tt_tensor *const *in)
{
    const int64_t ix[6] = {2, 1, 2, 2, 2, 1};
    tt_tensor idx;
    tt_from_buffer(&idx, TT_INT64, 3, (int64_t[]){2, 3, 1}, ix);
    tt_status st = tt_gather(o, in[0], 0, &idx);
    tt_tensor_release(&idx);
    return st;
}

/* rope of a strided x [2,3,6] at positions 5, -2, 40 (both layouts, base 50) */
static tt_status rope_at(tt_tensor *o, tt_tensor *const *in, int interleaved)
{
    const int64_t p[3] = {5, -2, 40};
    tt_tensor pos;
    tt_from_buffer(&pos, TT_INT64, 1, (int64_t[]){3}, p);
    tt_status st = tt_rope(o, in[0], &pos, 50, interleaved);
    tt_tensor_release(&pos);
    return st;
}
static tt_status f_rope(tt_tensor *o, tt_tensor *const *in) { return rope_at(o, in, 0); }
static tt_status f_rope_il(tt_tensor *o, tt_tensor *const *in) { return rope_at(o, in, 1); }

static void test_gradients(void)
{
    input bc[2] = {{3, {2, 3, 5}, 1, 0, 0}, {2, {1, 5}, 0, 0, 0}};    /* strided a, broadcast b */
    input pos[2] = {{3, {2, 3, 5}, 1, 1, 0}, {1, {5}, 0, 1, 0}};
    input kink[2] = {{3, {2, 3, 5}, 1, 0, 1}, {2, {1, 5}, 0, 0, 2}};
    input kink0[1] = {{3, {2, 3, 5}, 1, 0, 2}};
    gradcheck("add", f_add, 2, bc);
    input rope_x[1] = {{3, {2, 3, 6}, 1, 0, 0}};
    gradcheck("rope", f_rope, 1, rope_x);
    gradcheck("rope interleaved", f_rope_il, 1, rope_x);
    gradcheck("sub", f_sub, 2, bc);
    gradcheck("mul", f_mul, 2, bc);
    gradcheck("div", f_div, 2, pos);
    gradcheck("pow", f_pow, 2, pos);
    gradcheck("maximum", f_max, 2, kink);
    gradcheck("minimum", f_min, 2, kink);
    gradcheck("scalar - a", f_rsub, 1, bc);
    gradcheck("a * scalar", f_smul, 1, bc);
    gradcheck("scalar / a", f_rdiv, 1, pos);
    gradcheck("a / scalar", f_sdiv, 1, bc);
    gradcheck("a ^ scalar", f_spow, 1, pos);
    gradcheck("scalar ^ a", f_rpow, 1, bc);
    gradcheck("maximum(a, scalar)", f_smax, 1, kink0);
    gradcheck("neg", f_neg, 1, bc);
    gradcheck("exp", f_exp, 1, bc);
    gradcheck("log", f_log, 1, pos);
    gradcheck("sqrt", f_sqrt, 1, pos);
    gradcheck("abs", f_abs, 1, kink0);
    gradcheck("sum", f_sum, 1, bc);
    gradcheck("sum dim", f_sum1, 1, bc);
    gradcheck("mean", f_mean, 1, bc);
    gradcheck("mean dim keepdim", f_mean0k, 1, bc);
    gradcheck("softmax", f_softmax, 1, bc);
    gradcheck("softmax dim 1", f_softmax0, 1, bc);
    gradcheck("log_softmax", f_log_softmax, 1, bc);
    gradcheck("log_softmax dim 1", f_log_softmax0, 1, bc);
    gradcheck("relu", f_relu, 1, kink0);
    gradcheck("gelu", f_gelu, 1, bc);
    gradcheck("gelu tanh form", f_gelu_tanh, 1, bc);
    gradcheck("tanh", f_tanh, 1, bc);
    gradcheck("sigmoid", f_sigmoid, 1, bc);
    input mf[1] = {{2, {3, 5}, 1, 0, 0}};
    gradcheck("masked_fill", f_masked, 1, mf);
    gradcheck("tril", f_tril, 1, bc);
    input cats[3] = {{3, {2, 3, 5}, 1, 0, 0}, {3, {2, 1, 5}, 0, 0, 0}, {3, {2, 4, 5}, 1, 0, 0}};
    gradcheck("cat", f_cat, 3, cats);
    input stacks[3] = {{2, {3, 5}, 1, 0, 0}, {2, {3, 5}, 0, 0, 0}, {2, {3, 5}, 1, 0, 0}};
    gradcheck("stack", f_stack, 3, stacks);
    gradcheck("repeat_interleave", f_repeat, 1, bc);
    gradcheck("repeat_interleave last dim", f_repeat_last, 1, bc);
    gradcheck("max over a dim", f_max_dim, 1, kink0);
    gradcheck("min over a dim, keepdim", f_min_dim, 1, bc);
    gradcheck("max", f_max_all, 1, kink0);
    gradcheck("min over a dim (tt_reduce)", f_min_red, 1, kink0);
    gradcheck("var", f_var, 1, bc);
    gradcheck("var over a dim, keepdim", f_var_dim, 1, bc);
    gradcheck("std", f_std, 1, bc);
    gradcheck("std over a dim", f_std_dim, 1, bc);
    gradcheck("triu", f_triu, 1, bc);
    input v[1] = {{3, {2, 3, 5}, 0, 0, 0}};
    gradcheck("views", f_views, 1, v);
    input ch[1] = {{2, {2, 7}, 1, 0, 0}};
    gradcheck("chunk", f_chunk, 1, ch);
    input sp[1] = {{2, {3, 7}, 1, 0, 0}};
    gradcheck("split, pieces 2 and 3 unused", f_split, 1, sp);
    input re[1] = {{3, {2, 3, 4}, 1, 0, 0}};
    gradcheck("rearrange split, permute", f_rearrange, 1, re);
    gradcheck("rearrange merge (a copy)", f_rearrange_merge, 1, re);
    input att[2] = {{3, {2, 3, 4}, 1, 0, 0}, {3, {2, 5, 4}, 0, 0, 0}};
    gradcheck("einsum attention scores", f_es_attn, 2, att);
    input bca[2] = {{4, {2, 1, 3, 4}, 1, 0, 0}, {3, {3, 5, 4}, 1, 0, 0}};
    gradcheck("einsum '...' broadcast", f_es_bcast, 2, bca);
    input thr[3] = {{3, {2, 3, 4}, 0, 0, 0}, {3, {2, 5, 4}, 1, 0, 0}, {3, {2, 5, 3}, 0, 0, 0}};
    gradcheck("einsum three operands", f_es_three, 3, thr);
    input sum[2] = {{3, {2, 3, 4}, 1, 0, 0}, {2, {3, 5}, 0, 0, 0}};
    gradcheck("einsum summed axes", f_es_summed, 2, sum);
    input dia[2] = {{3, {2, 4, 4}, 1, 0, 0}, {2, {2, 4}, 1, 0, 0}};
    gradcheck("einsum diagonal", f_es_diag, 2, dia);
    gradcheck("index_select, repeated and strided indices", f_index_select, 1, bc);
    gradcheck("index_select dim 1", f_index_select0, 1, bc);
    gradcheck("index_select dim 1, repeated and strided indices", f_index_select0s, 1, bc);
    gradcheck("gather, repeated indices, strided index", f_gather, 1, bc);
    gradcheck("gather dim 1, smaller index", f_gather0, 1, bc);
    input mm1[2] = {{3, {2, 3, 5}, 1, 0, 0}, {2, {5, 4}, 1, 0, 0}};
    gradcheck("matmul broadcast batch", f_matmul, 2, mm1);
    input mm2[2] = {{3, {1, 3, 5}, 0, 0, 0}, {3, {2, 5, 4}, 1, 0, 0}};
    gradcheck("matmul batch 1 vs 2", f_matmul, 2, mm2);
    input mm3[2] = {{1, {5}, 0, 0, 0}, {3, {2, 5, 4}, 0, 0, 0}};
    gradcheck("matmul 1-D @ 3-D", f_matmul, 2, mm3);
    input mm4[2] = {{3, {2, 3, 5}, 0, 0, 0}, {1, {5}, 0, 0, 0}};
    gradcheck("matmul 3-D @ 1-D", f_matmul, 2, mm4);
    input mm5[2] = {{1, {5}, 0, 0, 0}, {1, {5}, 0, 0, 0}};
    gradcheck("matmul 1-D @ 1-D", f_matmul, 2, mm5);
}

/* The activations' gradients against central differences of float64
   formulas written here (h = 1e-5: truncation ~1e-10, rounding ~1e-11),
   over the tails and a transposed input; relu's at 0 is 0 (PyTorch). */
#define K_GELU 0.79788456080286536      /* sqrt(2 / pi) */
static double act64(tt_op op, double x)
{
    double z = K_GELU * (x + 0.044715 * x * x * x);
    switch (op) {
    case TT_OP_RELU: return x > 0 ? x : 0.0;
    case TT_OP_GELU: return 0.5 * x * erfc(-x / sqrt(2.0));
    case TT_OP_GELU_TANH: return 0.5 * x * (1.0 + tanh(z));
    case TT_OP_TANH: return tanh(x);
    default: return 1.0 / (1.0 + exp(-x));
    }
}

static void test_activation_fd(void)
{
    static const tt_op ops[] = { TT_OP_RELU, TT_OP_GELU, TT_OP_GELU_TANH, TT_OP_TANH, TT_OP_SIGMOID };
    static const char *const names[] = { "relu", "gelu", "gelu tanh", "tanh", "sigmoid" };
    enum { R = 4, C = 9 };
    float x[R * C];
    const float pick[] = { -12.0f, -6.0f, -3.0f, -0.75f, -1e-3f, 0.0f, 1e-3f, 0.4f, 2.0f, 5.0f, 12.0f };
    for (int k = 0; k < R * C; k++)
        x[k] = k < 11 ? pick[k] : (float)(6.0 * sin(0.37 * k * k) - 0.2);
    input in = {2, {R, C}, 1, 0, 0};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        tt_tensor t = make(&in, x), y, w;
        tt_requires_grad_(&t, 1);
        tt_unary(&y, ops[o], &t);
        tt_randn(&w, 2, in.shape);
        float wv[R * C], got[R * C];
        double ref[R * C];
        tt_get_floats(&w, wv);
        CHECK(names[o], tt_backward(&y, &w) == TT_OK);
        tt_get_floats(tt_grad(&t), got);
        for (int k = 0; k < R * C; k++) {
            double h = 1e-5, xd = (double)x[k];
            ref[k] = (double)wv[k] * (act64(ops[o], xd + h) - act64(ops[o], xd - h)) / (2 * h);
            if (ops[o] == TT_OP_RELU && xd == 0) ref[k] = 0.0;
        }
        char d[64];
        snprintf(d, sizeof d, "%s: gradient vs float64 central differences", names[o]);
        check_close(d, got, ref, R * C, 1e-5, 1e-6);
        tt_tensor_release(&t); tt_tensor_release(&y); tt_tensor_release(&w);
    }
}

/* log_softmax over each dim of a transposed input, against float64 values
   and central differences of a float64 log_softmax written here. */
static void log_softmax64(const double *x, int R, int C, int d, double *y)
{
    int n = d ? C : R, m = d ? R : C;
    for (int i = 0; i < m; i++) {
        double mx = -INFINITY, s = 0;
        for (int j = 0; j < n; j++) mx = fmax(mx, x[d ? i * C + j : j * C + i]);
        for (int j = 0; j < n; j++) s += exp(x[d ? i * C + j : j * C + i] - mx);
        for (int j = 0; j < n; j++) y[d ? i * C + j : j * C + i] = x[d ? i * C + j : j * C + i] - mx - log(s);
    }
}

static void test_log_softmax_fd(void)
{
    enum { R = 5, C = 7 };
    float x[R * C];
    for (int k = 0; k < R * C; k++) x[k] = (float)(8.0 * sin(1.3 * k) + (k == 3 ? 90.0 : 0.0));
    input in = {2, {R, C}, 1, 0, 0};
    for (int d = 0; d < 2; d++) {
        tt_tensor t = make(&in, x), y, w;
        tt_requires_grad_(&t, 1);
        CHECK("log_softmax", tt_log_softmax(&y, &t, d) == TT_OK);
        double xd[R * C], yd[R * C], ref[R * C], up[R * C], down[R * C];
        float got[R * C], wv[R * C];
        for (int k = 0; k < R * C; k++) xd[k] = (double)x[k];
        log_softmax64(xd, R, C, d, yd);
        tt_get_floats(&y, got);
        check_close(d ? "log_softmax dim 2 transposed: values" : "log_softmax dim 1 transposed: values",
                    got, yd, R * C, 1e-6, 2e-6);
        tt_randn(&w, 2, in.shape);
        tt_get_floats(&w, wv);
        CHECK("log_softmax backward", tt_backward(&y, &w) == TT_OK);
        tt_get_floats(tt_grad(&t), got);
        for (int k = 0; k < R * C; k++) {
            double h = 1e-5, keep = xd[k], su = 0, sd = 0;
            xd[k] = keep + h;
            log_softmax64(xd, R, C, d, up);
            xd[k] = keep - h;
            log_softmax64(xd, R, C, d, down);
            xd[k] = keep;
            for (int j = 0; j < R * C; j++) { su += (double)wv[j] * up[j]; sd += (double)wv[j] * down[j]; }
            ref[k] = (su - sd) / (2 * h);
        }
        check_close(d ? "log_softmax dim 2: gradient vs float64 central differences"
                      : "log_softmax dim 1: gradient vs float64 central differences", got, ref, R * C, 1e-5, 1e-5);
        tt_tensor_release(&t); tt_tensor_release(&y); tt_tensor_release(&w);
    }
    /* a row with -inf entries: no gradient flows to them (exp(-inf) = 0) */
    float v[4] = { -INFINITY, 1.0f, -INFINITY, 2.0f }, g[4];
    int64_t four = 4;
    tt_tensor t, y, w;
    tt_from_buffer(&t, TT_FLOAT32, 1, &four, v);
    tt_requires_grad_(&t, 1);
    tt_log_softmax(&y, &t, 0);
    tt_ones(&w, TT_FLOAT32, 1, &four);
    tt_backward(&y, &w);
    tt_get_floats(tt_grad(&t), g);
    CHECK("log_softmax: g - p sum(g), g = 1: 1 to a -inf entry (p = 0), 1 - 4p to the others",
          g[0] == 1.0f && g[2] == 1.0f && fabsf(g[1] - (1.0f - 4.0f * 0.26894142f)) < 1e-6f
          && fabsf(g[3] - (1.0f - 4.0f * 0.73105858f)) < 1e-6f);
    tt_tensor_release(&t); tt_tensor_release(&y); tt_tensor_release(&w);
}

/* Ties of maximum split the gradient in halves, as PyTorch. */
static void test_ties(void)
{
    float one[3] = {1, 2, 3}, two[3] = {1, 5, 0};
    int64_t s = 3;
    tt_tensor a, b, m, l;
    tt_from_buffer(&a, TT_FLOAT32, 1, &s, one);
    tt_from_buffer(&b, TT_FLOAT32, 1, &s, two);
    tt_requires_grad_(&a, 1);
    tt_requires_grad_(&b, 1);
    tt_binary(&m, TT_OP_MAXIMUM, &a, &b);
    tt_reduce(&l, TT_OP_SUM, &m, -1, 0);
    CHECK("maximum ties: backward", tt_backward(&l, NULL) == TT_OK);
    CHECK("maximum ties: a", tt_get(tt_grad(&a), 0) == 0.5 && tt_get(tt_grad(&a), 1) == 0 && tt_get(tt_grad(&a), 2) == 1);
    CHECK("maximum ties: b", tt_get(tt_grad(&b), 0) == 0.5 && tt_get(tt_grad(&b), 1) == 1 && tt_get(tt_grad(&b), 2) == 0);
    tt_tensor_release(&a);
    tt_tensor_release(&b);
    tt_tensor_release(&m);
    tt_tensor_release(&l);
    /* max over a dim: all to the index chosen; max of all: split among ties */
    float three[3] = {1, 3, 3};
    tt_tensor idx;
    tt_from_buffer(&a, TT_FLOAT32, 1, &s, three);
    tt_requires_grad_(&a, 1);
    tt_max_dim(&m, &idx, &a, 0, 0, 0);
    int chosen = (int)tt_get(&idx, 0) - 1;
    CHECK("max_dim ties: backward", tt_backward(&m, NULL) == TT_OK);
    CHECK("max_dim ties: to the index", tt_get(tt_grad(&a), chosen) == 1 && tt_get(tt_grad(&a), 3 - chosen) == 0
          && tt_get(tt_grad(&a), 0) == 0);
    tt_set_grad(&a, NULL);
    tt_tensor_release(&m);
    tt_reduce(&m, TT_OP_MAX, &a, -1, 0);
    CHECK("max ties: backward", tt_backward(&m, NULL) == TT_OK);
    CHECK("max ties: halves", tt_get(tt_grad(&a), 1) == 0.5 && tt_get(tt_grad(&a), 2) == 0.5 && tt_get(tt_grad(&a), 0) == 0);
    tt_tensor_release(&a);
    tt_tensor_release(&m);
    tt_tensor_release(&idx);
}

static void test_engine(void)
{
    int64_t s[2] = {2, 3};
    tt_tensor x, y, l, l2;
    tt_ones(&x, TT_FLOAT32, 2, s);
    CHECK("leaf: no grad_fn", tt_grad_fn_name(&x) == NULL);
    tt_requires_grad_(&x, 1);
    CHECK("requires_grad", tt_tensor_requires_grad(&x));
    tt_binary_scalar(&y, TT_OP_MUL, &x, 3, 0);
    CHECK("grad_fn name", tt_grad_fn_name(&y) && strcmp(tt_grad_fn_name(&y), "MulBackward") == 0);
    /* non-scalar without grad */
    CHECK("non-scalar: error", tt_backward(&y, NULL) == TT_EARG);
    CHECK("non-scalar: message", strstr(tt_errmsg(), "grad can be implicitly created only for scalar outputs; got [2,3]")
          && strstr(tt_errmsg(), "hint: y:sum():backward() or y:backward(g)"));
    tt_reduce(&l, TT_OP_SUM, &y, -1, 0);
    CHECK("backward", tt_backward(&l, NULL) == TT_OK);
    CHECK("grad 3", tt_get(tt_grad(&x), 4) == 3);
    /* a second backward through the same graph: x * 3 and sum saved no
       tensor, so it runs again and adds up, as in PyTorch */
    CHECK("nothing saved: a second backward runs", tt_backward(&l, NULL) == TT_OK);
    CHECK("... and accumulates 3 + 3", tt_get(tt_grad(&x), 4) == 6);
    /* accumulation across two graphs */
    tt_tensor y2;
    tt_binary_scalar(&y2, TT_OP_MUL, &x, 2, 0);
    tt_reduce(&l2, TT_OP_SUM, &y2, -1, 0);
    CHECK("second graph", tt_backward(&l2, NULL) == TT_OK);
    CHECK("accumulated 6 + 2", tt_get(tt_grad(&x), 0) == 8);
    /* x * x saved x: a second backward without retain_graph is refused
       with PyTorch's message; retained, it adds 2x again */
    {
        tt_tensor sq, ls;
        tt_set_grad(&x, NULL);
        tt_binary(&sq, TT_OP_MUL, &x, &x);
        tt_reduce(&ls, TT_OP_SUM, &sq, -1, 0);
        CHECK("retain_graph: first", tt_backward_retain(&ls, NULL, 1) == TT_OK && tt_get(tt_grad(&x), 0) == 2);
        CHECK("retain_graph: second adds", tt_backward(&ls, NULL) == TT_OK && tt_get(tt_grad(&x), 0) == 4);
        CHECK("freed graph: error", tt_backward(&ls, NULL) == TT_EARG);
        CHECK("freed graph: message", strstr(tt_errmsg(), "trying to backward through the graph a second time") != NULL);
        tt_tensor_release(&sq);
        tt_tensor_release(&ls);
        /* a write into a saved tensor since the forward: the version check */
        tt_set_grad(&x, NULL);
        tt_binary(&sq, TT_OP_MUL, &x, &x);
        tt_reduce(&ls, TT_OP_SUM, &sq, -1, 0);
        int was_on = tt_set_grad_enabled(0);
        tt_number half = tt_num_f(0.5);
        CHECK("in place under no_grad", tt_binary_(&x, TT_OP_MUL, NULL, &half) == TT_OK && tt_get(&x, 0) == 0.5);
        tt_set_grad_enabled(was_on);
        CHECK("stale saved tensor: error", tt_backward(&ls, NULL) == TT_EARG && tt_grad(&x) == NULL);
        CHECK("stale saved tensor: message", strstr(tt_errmsg(), "has been modified by an inplace operation: [2,3] "
                                                    "float32, input 1 of mul (MulBackward), is at version 1; "
                                                    "expected version 0 instead") != NULL);
        tt_tensor_release(&sq);
        tt_tensor_release(&ls);
        tt_set_grad(&x, NULL);
    }
    tt_set_grad(&x, NULL);
    CHECK("grad cleared", tt_grad(&x) == NULL);
    /* bool */
    tt_tensor b;
    tt_zeros(&b, TT_BOOL, 2, s);
    CHECK("bool: error", tt_requires_grad_(&b, 1) == TT_EARG);
    CHECK("bool: message", strstr(tt_errmsg(), "requires_grad_: only float tensors (float32, bfloat16, float16) can require gradients, got bool [2,3]") != NULL);
    /* no_grad records nothing; detach leaves the graph */
    int was = tt_set_grad_enabled(0);
    tt_tensor z, d;
    tt_binary_scalar(&z, TT_OP_MUL, &x, 2, 0);
    CHECK("no_grad: previous state", was == 1);
    CHECK("no_grad: not recorded", !tt_tensor_requires_grad(&z) && tt_grad_fn_name(&z) == NULL);
    tt_set_grad_enabled(was);
    tt_detach(&d, &x);
    CHECK("detach", !tt_tensor_requires_grad(&d));
    /* comparisons give bool, never requiring grad */
    tt_tensor c;
    tt_binary_scalar(&c, TT_OP_GT, &x, 0, 0);
    CHECK("bool result", !tt_tensor_requires_grad(&c));
    /* einsum records its operands (one tensor twice here) and has a gradient */
    tt_tensor sd, ls;
    int64_t q[3] = {1, 2, 4};
    tt_tensor qq;
    tt_randn(&qq, 3, q);
    tt_requires_grad_(&qq, 1);
    const tt_tensor *pair[2] = {&qq, &qq};
    CHECK("einsum forward", tt_einsum(&sd, "b i d, b j d -> b i j", pair, 2) == TT_OK);
    tt_reduce(&ls, TT_OP_SUM, &sd, -1, 0);
    CHECK("einsum grad_fn", strcmp(tt_grad_fn_name(&sd), "EinsumBackward") == 0);
    CHECK("einsum backward", tt_backward(&ls, NULL) == TT_OK);
    /* d/dq sum_ij q_i . q_j = 2 sum_j q_j, per batch */
    double s0 = tt_get(&qq, 0) + tt_get(&qq, 4);
    CHECK("einsum: one tensor twice", fabs(tt_get(tt_grad(&qq), 0) - 2 * s0) < 1e-5);
    tt_tensor *all[] = {&x, &y, &l, &l2, &y2, &b, &z, &d, &c, &sd, &ls, &qq};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) tt_tensor_release(all[i]);
}

/* 10000 ops in a chain: the engine and the release use no recursion. */
static void test_chain(void)
{
    int64_t s = 3;
    tt_tensor x, cur;
    tt_ones(&x, TT_FLOAT32, 1, &s);
    tt_requires_grad_(&x, 1);
    tt_binary_scalar(&cur, TT_OP_MUL, &x, 1, 0);
    for (int i = 0; i < 10000; i++) {
        tt_tensor next;
        tt_binary_scalar(&next, TT_OP_ADD, &cur, 0.5, 0);
        tt_tensor_release(&cur);
        cur = next;
    }
    tt_tensor l;
    tt_reduce(&l, TT_OP_MEAN, &cur, -1, 0);
    tt_tensor_release(&cur);
    CHECK("chain: backward", tt_backward(&l, NULL) == TT_OK);
    CHECK("chain: grad", fabs(tt_get(tt_grad(&x), 1) - 1.0 / 3) < 1e-6);
    tt_tensor_release(&l);
    tt_tensor_release(&x);
}

/* A recorded op's node and record count as graph memory, and against the
   memory cap: a chain kept alive by its last result (each intermediate
   handle dropped, as a Lua loop `y = y:transpose(1, 2)` does) grows the
   graph only, and meets the cap with a message naming the op. */
static void test_graph_memory(void)
{
    int64_t s[2] = {2, 3}, g0 = tt_graph_memory_in_use();
    tt_tensor x, y;
    tt_ones(&x, TT_FLOAT32, 2, s);
    tt_requires_grad_(&x, 1);
    int64_t leaf = tt_graph_memory_in_use() - g0;
    CHECK("graph memory: a leaf's record counts", leaf > 0);
    tt_transpose(&y, &x, 0, 1);
    int64_t view = tt_graph_memory_in_use() - g0 - leaf;
    CHECK("graph memory: a recorded view's node counts", view > 0);
    CHECK("graph memory: a view's node is small (no saved tensors)", view < 1024);
    tt_tensor_release(&y);
    tt_softmax(&y, &x, 1);
    int64_t soft = tt_graph_memory_in_use() - g0 - leaf;
    CHECK("graph memory: softmax's node saves its output", soft > view && soft < 2048);
    tt_tensor_release(&y);
    CHECK("graph memory: back to the leaf's once released", tt_graph_memory_in_use() - g0 == leaf);

    const int64_t cap = 8 << 20;
    tt_set_max_memory(tt_memory_in_use() + cap);
    tt_tensor cur;
    tt_transpose(&cur, &x, 0, 1);
    tt_status st = TT_OK;
    int i = 0;
    int64_t most = 0;
    for (; i < 1000000 && st == TT_OK; i++) {
        tt_tensor next;
        st = tt_transpose(&next, &cur, 0, 1);
        if (tt_graph_memory_in_use() > most) most = tt_graph_memory_in_use();
        tt_tensor_release(&cur);    /* the chain lives on in next's node */
        cur = next;
    }
    CHECK("graph memory: a chain of views meets the cap", st == TT_ENOMEM && i > 1000 && i < 1000000);
    CHECK("... with the cap's message naming the op", strstr(tt_errmsg(), "transpose: recording its gradient")
          && strstr(tt_errmsg(), "--max-memory"));
    CHECK("... having grown the graph to about the cap", most - g0 > cap / 2 && most - g0 <= cap);
    tt_set_max_memory(0);
    CHECK("graph memory: the failed op left its output empty", cur.storage == NULL);
    CHECK("graph memory: the chain freed with its end", tt_graph_memory_in_use() - g0 == leaf);
    tt_tensor_release(&x);
    CHECK("graph memory: none once the leaf is released", tt_graph_memory_in_use() == g0);
}

/* ===== sdpa: the fused backward ===== */

static tt_status f_sdpa(tt_tensor *o, tt_tensor *const *in) { return tt_sdpa(o, NULL, in[0], in[1], in[2], NULL, 0, NAN, NULL); }
static tt_status f_sdpa_causal(tt_tensor *o, tt_tensor *const *in)
{
    return tt_sdpa(o, NULL, in[0], in[1], in[2], NULL, 1, NAN, NULL);
}

/* a [3, 5] mask broadcast over the heads; query 2 sees no key */
static tt_status f_sdpa_mask(tt_tensor *o, tt_tensor *const *in)
{
    uint8_t m[15] = {1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
    int64_t s[2] = {3, 5};
    tt_tensor mask;
    tt_from_buffer(&mask, TT_BOOL, 2, s, m);
    tt_status st = tt_sdpa(o, NULL, in[0], in[1], in[2], &mask, 0, 0.7, NULL);
    tt_tensor_release(&mask);
    return st;
}

/* q, k, v of each case: strided k, 2-D, GQA with 2 query heads a kv head */
static void test_sdpa_gradients(void)
{
    input one[3] = {{2, {3, 4}, 0, 0, 0}, {2, {5, 4}, 1, 0, 0}, {2, {5, 3}, 0, 0, 0}};
    gradcheck("sdpa 2-D", f_sdpa, 3, one);
    input heads[3] = {{3, {2, 3, 4}, 0, 0, 0}, {3, {2, 5, 4}, 1, 0, 0}, {3, {2, 5, 3}, 1, 0, 0}};
    gradcheck("sdpa causal", f_sdpa_causal, 3, heads);
    gradcheck("sdpa mask, a fully masked row", f_sdpa_mask, 3, heads);
    input gqa[3] = {{4, {2, 4, 3, 4}, 1, 0, 0}, {4, {2, 2, 5, 4}, 0, 0, 0}, {4, {2, 2, 5, 3}, 0, 0, 0}};
    gradcheck("sdpa GQA", f_sdpa, 3, gqa);
    gradcheck("sdpa GQA causal", f_sdpa_causal, 3, gqa);
    /* the masked row's query gets zero */
    input *mi = heads;
    float *x[3];
    tt_tensor t[3], out, l;
    for (int i = 0; i < 3; i++) {
        int64_t n = numel_of(&mi[i]);
        x[i] = malloc((size_t)n * sizeof(float));
        for (int64_t j = 0; j < n; j++) x[i][j] = (float)((j * 7 % 11) - 5) / 5.0f;
        t[i] = make(&mi[i], x[i]);
        tt_requires_grad_(&t[i], 1);
    }
    tt_tensor *p[3] = {&t[0], &t[1], &t[2]};
    f_sdpa_mask(&out, p);
    tt_reduce(&l, TT_OP_SUM, &out, -1, 0);
    CHECK("sdpa masked row: backward", tt_backward(&l, NULL) == TT_OK);
    int zero = 1;
    for (int h = 0; h < 2; h++)
        for (int d = 0; d < 4; d++) zero &= tt_get(tt_grad(&t[0]), h * 12 + 1 * 4 + d) == 0.0;
    CHECK("sdpa masked row: zero gradient", zero);
    tt_tensor_release(&out);
    tt_tensor_release(&l);
    for (int i = 0; i < 3; i++) {
        tt_tensor_release(&t[i]);
        free(x[i]);
    }
}

/* The explicit formula from ops: softmax(q k^T * scale, hidden -> -inf) @ v,
   with k and v repeated over the G query heads of their group. */
static tt_status explicit_sdpa(tt_tensor *o, const tt_tensor *q, const tt_tensor *k, const tt_tensor *v,
                               const tt_tensor *hidden, int G)
{
    tt_tensor ke, kr, ve, vr, kt, s, ss, sm, p;
    int64_t B = k->shape[0], H = k->shape[1], N = k->shape[2];
    int64_t e5[5] = {B, H, G, N, k->shape[3]}, r4[4] = {B, H * G, N, k->shape[3]};
    int64_t v5[5] = {B, H, G, N, v->shape[3]}, w4[4] = {B, H * G, N, v->shape[3]};
    tt_tensor ku, vu;
    tt_unsqueeze(&ku, k, 2);
    tt_unsqueeze(&vu, v, 2);
    tt_expand(&ke, &ku, 5, e5);
    tt_expand(&ve, &vu, 5, v5);
    tt_reshape(&kr, &ke, 4, r4);
    tt_reshape(&vr, &ve, 4, w4);
    tt_mT(&kt, &kr);
    tt_matmul(&s, q, &kt);
    tt_binary_scalar(&ss, TT_OP_MUL, &s, 1.0 / sqrt((double)q->shape[3]), 0);
    tt_masked_fill(&sm, &ss, hidden, -INFINITY);
    tt_softmax(&p, &sm, 3);
    tt_status st = tt_matmul(o, &p, &vr);
    tt_tensor *all[] = {&ku, &vu, &ke, &ve, &kr, &vr, &kt, &s, &ss, &sm, &p};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) tt_tensor_release(all[i]);
    return st;
}

/* Gradients of sum(out * w) for q, k, v in g (each malloc'd floats). */
static void sdpa_grads(int fused, const tt_tensor *src, const tt_tensor *hidden, const tt_tensor *w, int G,
                       float **g)
{
    tt_tensor t[3], out, prod, l;
    for (int i = 0; i < 3; i++) {
        tt_clone(&t[i], &src[i]);
        tt_requires_grad_(&t[i], 1);
    }
    if (fused) tt_sdpa(&out, NULL, &t[0], &t[1], &t[2], NULL, 1, NAN, NULL);
    else explicit_sdpa(&out, &t[0], &t[1], &t[2], hidden, G);
    tt_binary(&prod, TT_OP_MUL, &out, w);
    tt_reduce(&l, TT_OP_SUM, &prod, -1, 0);
    CHECK("sdpa vs explicit: backward", tt_backward(&l, NULL) == TT_OK);
    for (int i = 0; i < 3; i++) {
        g[i] = malloc((size_t)tt_numel(&t[i]) * sizeof(float));
        tt_get_floats(tt_grad(&t[i]), g[i]);
        tt_tensor_release(&t[i]);
    }
    tt_tensor_release(&out);
    tt_tensor_release(&prod);
    tt_tensor_release(&l);
}

/* Several blocks of queries (64) and keys (256), causal lower-right, GQA
   2: the fused backward against the explicit formula's, and the same
   bits with 1 and 2 threads. */
static void test_sdpa_explicit(void)
{
    int64_t B = 2, Hq = 4, Hkv = 2, Nq = 150, Nk = 300, Dh = 16, Dv = 8;
    int64_t qs[4] = {B, Hq, Nq, Dh}, ks[4] = {B, Hkv, Nk, Dh}, vs[4] = {B, Hkv, Nk, Dv}, os[4] = {B, Hq, Nq, Dv};
    tt_manual_seed(11);
    tt_tensor src[3], w, hidden;
    tt_randn(&src[0], 4, qs);
    tt_randn(&src[1], 4, ks);
    tt_randn(&src[2], 4, vs);
    tt_randn(&w, 4, os);
    uint8_t *h = malloc((size_t)(Nq * Nk));
    for (int64_t i = 0; i < Nq; i++)
        for (int64_t j = 0; j < Nk; j++) h[i * Nk + j] = j > i + Nk - Nq;
    int64_t hs[2] = {Nq, Nk};
    tt_from_buffer(&hidden, TT_BOOL, 2, hs, h);
    free(h);
    float *fused[3], *ref[3], *two[3];
    tt_set_num_threads(1);
    sdpa_grads(1, src, &hidden, &w, 2, fused);
    tt_set_num_threads(2);
    sdpa_grads(1, src, &hidden, &w, 2, two);
    sdpa_grads(0, src, &hidden, &w, 2, ref);
    for (int i = 0; i < 3; i++) {
        int64_t n = tt_numel(&src[i]);
        double *r = malloc((size_t)n * sizeof *r);
        for (int64_t j = 0; j < n; j++) r[j] = ref[i][j];
        char d[64];
        snprintf(d, sizeof d, "sdpa vs explicit: d%c", "qkv"[i]);
        check_close(d, fused[i], r, (long)n, 1e-4, 1e-5);
        snprintf(d, sizeof d, "sdpa 1 vs 2 threads: d%c", "qkv"[i]);
        CHECK(d, memcmp(fused[i], two[i], (size_t)n * sizeof(float)) == 0);
        free(r);
        free(fused[i]);
        free(two[i]);
        free(ref[i]);
        tt_tensor_release(&src[i]);
    }
    tt_tensor_release(&w);
    tt_tensor_release(&hidden);
}

int main(void)
{
    int64_t start = tt_memory_in_use();
    test_gradients();
    test_ties();
    test_activation_fd();
    test_log_softmax_fd();
    test_engine();
    test_chain();
    test_graph_memory();
    test_sdpa_gradients();
    test_sdpa_explicit();
    CHECK("memory back to the start", tt_memory_in_use() == start);
    tt_release_caches();
    return check_report();
}
