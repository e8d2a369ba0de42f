/*
** opref.h — the tests' one list of ops: a row for every tt_op, indexed by
** the op as core/ops/optable.c is. An elementwise row holds its float64
** forward and derivatives and the inputs it is tested on; any other row
** names the test file that holds its reference. A row says why an op has
** no backward, and where lua/README.md documents it when that is not as
** `x:name(` or `tt.name(`. tests/test_optable.c loops over the op table with
** it (and fails for an op without a row); test_ops.c and test_kernels.c
** read the same forwards. A new elementwise op is a new row here.
*/
#ifndef TT_OPREF_H
#define TT_OPREF_H

#include <math.h>

#include "tt.h"

typedef double (*opref_fn)(double x, double y);

typedef struct opref {
    opref_fn f;             /* elementwise: the forward in float64 (y: the second operand) */
    opref_fn dx, dy;        /* its derivatives in x and in y */
    double lo, hi;          /* elementwise: inputs drawn from [lo, hi] (whole numbers for bool results) */
    const char *file;       /* any other op: the test that holds its reference */
    const char *no_grad;    /* why the op has no backward */
    const char *doc;        /* how lua/README.md names it, when not `:name(` or `tt.name(` */
    const char *not_in_tt;  /* why a script cannot call it (then it has no docs row) */
} opref;

#define OPREF_K_GELU 0.79788456080286536     /* sqrt(2 / pi) */
#define OPREF_C_GELU 0.044715

static double r_add(double x, double y) { return x + y; }
static double r_sub(double x, double y) { return x - y; }
static double r_mul(double x, double y) { return x * y; }
static double r_div(double x, double y) { return x / y; }
static double r_pow(double x, double y) { return pow(x, y); }
static double r_max(double x, double y) { return isnan(x) || isnan(y) ? (double)NAN : x > y ? x : y; }
static double r_min(double x, double y) { return isnan(x) || isnan(y) ? (double)NAN : x < y ? x : y; }
static double r_eq(double x, double y) { return x == y; }
static double r_ne(double x, double y) { return x != y; }
static double r_lt(double x, double y) { return x < y; }
static double r_le(double x, double y) { return x <= y; }
static double r_gt(double x, double y) { return x > y; }
static double r_ge(double x, double y) { return x >= y; }
static double r_and(double x, double y) { return x != 0 && y != 0; }
static double r_or(double x, double y) { return x != 0 || y != 0; }
static double r_xor(double x, double y) { return (x != 0) != (y != 0); }
static double r_not(double x, double y) { (void)y; return x == 0; }
static double r_neg(double x, double y) { (void)y; return -x; }
static double r_exp(double x, double y) { (void)y; return exp(x); }
static double r_log(double x, double y) { (void)y; return x < 0 ? (double)NAN : log(x); }
static double r_sqrt(double x, double y) { (void)y; return x < 0 ? (double)NAN : sqrt(x); }
static double r_abs(double x, double y) { (void)y; return fabs(x); }
static double r_relu(double x, double y) { (void)y; return isnan(x) ? x : x > 0 ? x : 0.0; }
static double r_gelu(double x, double y) { (void)y; return 0.5 * x * erfc(-x / sqrt(2.0)); }
static double r_tanh(double x, double y) { (void)y; return tanh(x); }
static double r_sigmoid(double x, double y) { (void)y; return 1.0 / (1.0 + exp(-x)); }
static double r_sin(double x, double y) { (void)y; return sin(x); }
static double r_cos(double x, double y) { (void)y; return cos(x); }

/* gelu's tanh form; where tanh(z) is near -1, 1 + tanh z as 2 sigmoid(2z), without the cancellation */
static double r_gelu_tanh(double x, double y)
{
    (void)y;
    double z = OPREF_K_GELU * (x + OPREF_C_GELU * x * x * x);
    return z < -5 && isfinite(z) ? x * exp(2 * z) / (1 + exp(2 * z)) : 0.5 * x * (1.0 + tanh(z));
}

static double d_one(double x, double y) { (void)x; (void)y; return 1.0; }
static double d_minus_one(double x, double y) { (void)x; (void)y; return -1.0; }
static double d_mul_x(double x, double y) { (void)x; return y; }
static double d_mul_y(double x, double y) { (void)y; return x; }
static double d_div_x(double x, double y) { (void)x; return 1.0 / y; }
static double d_div_y(double x, double y) { return -x / (y * y); }
static double d_pow_x(double x, double y) { return y * pow(x, y - 1.0); }
static double d_pow_y(double x, double y) { return pow(x, y) * log(x); }
/* a tie splits the gradient in halves, as PyTorch */
static double d_max_x(double x, double y) { return x > y ? 1.0 : x == y ? 0.5 : 0.0; }
static double d_max_y(double x, double y) { return d_max_x(y, x); }
static double d_min_x(double x, double y) { return d_max_x(y, x); }
static double d_min_y(double x, double y) { return d_max_x(x, y); }
static double d_exp(double x, double y) { (void)y; return exp(x); }
static double d_log(double x, double y) { (void)y; return 1.0 / x; }
static double d_sqrt(double x, double y) { (void)y; return 0.5 / sqrt(x); }
static double d_abs(double x, double y) { (void)y; return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
static double d_relu(double x, double y) { (void)y; return x > 0 ? 1.0 : 0.0; }
static double d_tanh(double x, double y) { (void)y; return 1.0 - tanh(x) * tanh(x); }
static double d_sigmoid(double x, double y) { double s = r_sigmoid(x, y); return s * (1.0 - s); }
static double d_sin(double x, double y) { (void)y; return cos(x); }
static double d_cos(double x, double y) { (void)y; return -sin(x); }
static double d_gelu(double x, double y)
{
    (void)y;
    return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
}
static double d_gelu_tanh(double x, double y)
{
    (void)y;
    double z = OPREF_K_GELU * (x + OPREF_C_GELU * x * x * x), t = tanh(z);
    double dz = OPREF_K_GELU * (1.0 + 3.0 * OPREF_C_GELU * x * x);
    if (z < -5 && isfinite(z)) {    /* 1 + t and 1 - t^2 as 2 s and 4 s (1 - s), s = sigmoid(2z) */
        double s = exp(2 * z) / (1 + exp(2 * z));
        return s + 2.0 * x * s * (1.0 - s) * dz;
    }
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * dz;
}

#define OPREF_CMP "a comparison: piecewise constant, its gradient 0 almost everywhere (PyTorch has none)"
#define OPREF_BOOL "bool in, bool out: nothing to differentiate"
#define OPREF_CREATE "creation: no input to differentiate"

static const opref OPREF[TT_OP_COUNT] = {
    [TT_OP_NONE] = { .file = "tests/test_trace.c", .no_grad = "not an op: the enum's zero",
                     .not_in_tt = "not an op: the enum's zero" },
    /* creation */
    [TT_OP_TENSOR] = { .file = "tests/test_ops.c", .no_grad = OPREF_CREATE },
    [TT_OP_EMPTY] = { .file = "tests/test_ops.c", .no_grad = OPREF_CREATE,
                      .not_in_tt = "the C API's uninitialised allocation, under tt's creation functions" },
    [TT_OP_ZEROS] = { .file = "tests/test_ops.c", .no_grad = OPREF_CREATE },
    [TT_OP_ONES] = { .file = "tests/test_ops.c", .no_grad = OPREF_CREATE },
    [TT_OP_FULL] = { .file = "tests/test_ops.c", .no_grad = OPREF_CREATE },
    [TT_OP_ARANGE] = { .file = "tests/lua/test_api.lua", .no_grad = OPREF_CREATE },
    [TT_OP_EYE] = { .file = "tests/lua/test_api.lua", .no_grad = OPREF_CREATE },
    [TT_OP_RAND] = { .file = "tests/test_tensor.c", .no_grad = OPREF_CREATE },
    [TT_OP_RANDN] = { .file = "tests/test_autograd.c", .no_grad = OPREF_CREATE },
    [TT_OP_RANDINT] = { .file = "tests/test_tensor.c", .no_grad = OPREF_CREATE },
    /* views and copies */
    [TT_OP_VIEW] = { .file = "tests/test_autograd.c" },
    [TT_OP_RESHAPE] = { .file = "tests/test_autograd.c" },
    [TT_OP_TRANSPOSE] = { .file = "tests/test_autograd.c" },
    [TT_OP_MT] = { .file = "tests/test_autograd.c" },
    [TT_OP_PERMUTE] = { .file = "tests/test_autograd.c" },
    [TT_OP_NARROW] = { .file = "tests/test_autograd.c" },
    [TT_OP_SELECT] = { .file = "tests/test_autograd.c" },
    [TT_OP_EXPAND] = { .file = "tests/test_autograd.c" },
    [TT_OP_UNSQUEEZE] = { .file = "tests/test_autograd.c" },
    [TT_OP_SQUEEZE] = { .file = "tests/test_autograd.c" },
    [TT_OP_CONTIGUOUS] = { .file = "tests/test_autograd.c" },
    [TT_OP_CLONE] = { .file = "tests/test_autograd.c" },
    [TT_OP_NAMED] = { .file = "tests/test_ops.c" },
    [TT_OP_CHUNK] = { .file = "tests/lua/test_gradcheck.lua" },
    [TT_OP_SPLIT] = { .file = "tests/lua/test_gradcheck.lua" },
    /* elementwise */
    [TT_OP_ADD] = { r_add, d_one, d_one, -3, 3 },
    [TT_OP_SUB] = { r_sub, d_one, d_minus_one, -3, 3 },
    [TT_OP_MUL] = { r_mul, d_mul_x, d_mul_y, -3, 3 },
    [TT_OP_DIV] = { r_div, d_div_x, d_div_y, 0.5, 3 },
    [TT_OP_POW] = { r_pow, d_pow_x, d_pow_y, 0.5, 2 },
    [TT_OP_MAXIMUM] = { r_max, d_max_x, d_max_y, -3, 3 },
    [TT_OP_MINIMUM] = { r_min, d_min_x, d_min_y, -3, 3 },
    [TT_OP_EQ] = { r_eq, .lo = 0, .hi = 2, .no_grad = OPREF_CMP },
    [TT_OP_NE] = { r_ne, .lo = 0, .hi = 2, .no_grad = OPREF_CMP },
    [TT_OP_LT] = { r_lt, .lo = 0, .hi = 2, .no_grad = OPREF_CMP },
    [TT_OP_LE] = { r_le, .lo = 0, .hi = 2, .no_grad = OPREF_CMP },
    [TT_OP_GT] = { r_gt, .lo = 0, .hi = 2, .no_grad = OPREF_CMP },
    [TT_OP_GE] = { r_ge, .lo = 0, .hi = 2, .no_grad = OPREF_CMP },
    [TT_OP_AND] = { r_and, .lo = 0, .hi = 1, .no_grad = OPREF_BOOL, .doc = "`a & b`" },
    [TT_OP_OR] = { r_or, .lo = 0, .hi = 1, .no_grad = OPREF_BOOL, .doc = "`a \\| b`" },
    [TT_OP_XOR] = { r_xor, .lo = 0, .hi = 1, .no_grad = OPREF_BOOL, .doc = "`a ~ b`" },
    [TT_OP_NEG] = { r_neg, d_minus_one, NULL, -3, 3 },
    [TT_OP_EXP] = { r_exp, d_exp, NULL, -4, 4 },
    [TT_OP_LOG] = { r_log, d_log, NULL, 0.1, 4 },
    [TT_OP_SQRT] = { r_sqrt, d_sqrt, NULL, 0.1, 4 },
    [TT_OP_ABS] = { r_abs, d_abs, NULL, -3, 3 },
    [TT_OP_RELU] = { r_relu, d_relu, NULL, -3, 3 },
    [TT_OP_GELU] = { r_gelu, d_gelu, NULL, -4, 4 },
    [TT_OP_GELU_TANH] = { r_gelu_tanh, d_gelu_tanh, NULL, -4, 4, .doc = "traced as `gelu_tanh`" },
    [TT_OP_TANH] = { r_tanh, d_tanh, NULL, -4, 4 },
    [TT_OP_SIGMOID] = { r_sigmoid, d_sigmoid, NULL, -6, 6 },
    [TT_OP_NOT] = { r_not, .lo = 0, .hi = 1, .no_grad = OPREF_BOOL, .doc = "`~m`" },
    [TT_OP_FLOAT] = { .file = "tests/test_ops.c" },
    [TT_OP_BOOL] = { .file = "tests/test_ops.c", .no_grad = "gives bool, which never requires grad" },
    [TT_OP_LONG] = { .file = "tests/test_ops.c", .no_grad = "gives int64, which never requires grad" },
    /* reductions (test_ops.c's test_reduce loops over this kind of the table) */
    [TT_OP_SUM] = { .file = "tests/test_ops.c" },
    [TT_OP_MEAN] = { .file = "tests/test_ops.c" },
    [TT_OP_MAX] = { .file = "tests/test_ops.c" },
    [TT_OP_MIN] = { .file = "tests/test_ops.c" },
    [TT_OP_ARGMAX] = { .file = "tests/test_ops.c", .no_grad = "gives int64 indices" },
    [TT_OP_ARGMIN] = { .file = "tests/test_ops.c", .no_grad = "gives int64 indices" },
    [TT_OP_STD] = { .file = "tests/test_ops.c" },
    [TT_OP_VAR] = { .file = "tests/test_ops.c" },
    /* attention and the rest */
    [TT_OP_SOFTMAX] = { .file = "tests/test_ops.c" },
    [TT_OP_LOG_SOFTMAX] = { .file = "tests/test_autograd.c" },
    [TT_OP_MASKED_FILL] = { .file = "tests/test_ops.c" },
    [TT_OP_TRIL] = { .file = "tests/test_ops.c" },
    [TT_OP_TRIU] = { .file = "tests/test_ops.c" },
    [TT_OP_CAUSAL_MASK] = { .file = "tests/test_ops.c", .no_grad = OPREF_CREATE },
    [TT_OP_REPEAT_INTERLEAVE] = { .file = "tests/test_ops.c" },
    [TT_OP_CAT] = { .file = "tests/test_ops.c" },
    [TT_OP_STACK] = { .file = "tests/test_ops.c" },
    [TT_OP_MATMUL] = { .file = "tests/test_ops.c" },
    [TT_OP_SDPA] = { .file = "tests/test_sdpa_backward.c" },
    [TT_OP_REARRANGE] = { .file = "tests/test_pattern.c" },
    [TT_OP_EINSUM] = { .file = "tests/test_pattern.c" },
    [TT_OP_SGD_STEP] = { .file = "tests/test_optim.c", .no_grad = "an optimizer step: it writes the parameters in place",
                         .doc = ":step()" },
    [TT_OP_ADAMW_STEP] = { .file = "tests/test_optim.c", .no_grad = "an optimizer step: it writes the parameters in place",
                           .doc = ":step()" },
    [TT_OP_CLIP_GRAD_NORM] = { .file = "tests/test_optim.c", .no_grad = "scales gradients in place after a backward",
                               .doc = "tt.nn.clip_grad_norm(" },
    [TT_OP_INDEX_SELECT] = { .file = "tests/test_ops.c" },
    [TT_OP_GATHER] = { .file = "tests/test_ops.c" },
    [TT_OP_CROSS_ENTROPY] = { .file = "tests/test_loss.c" },
    [TT_OP_SIN] = { r_sin, d_sin, NULL, -4, 4 },
    [TT_OP_COS] = { r_cos, d_cos, NULL, -4, 4 },
    [TT_OP_ISNAN] = { .file = "tests/lua/test_habits.lua", .no_grad = "gives bool, which never requires grad" },
    [TT_OP_WHERE] = { .file = "tests/test_ops.c" },
    [TT_OP_ANY] = { .file = "tests/test_ops.c", .no_grad = "gives bool, which never requires grad" },
    [TT_OP_ALL] = { .file = "tests/test_ops.c", .no_grad = "gives bool, which never requires grad" },
    [TT_OP_NORM] = { .file = "tests/test_ops.c" },
    [TT_OP_FLATTEN] = { .file = "tests/test_ops.c" },
    [TT_OP_UNBIND] = { .file = "tests/test_ops.c" },
    [TT_OP_T] = { .file = "tests/test_ops.c" },
    [TT_OP_REDUCE] = { .file = "tests/test_ops.c" },
    [TT_OP_REPEAT] = { .file = "tests/test_ops.c" },
    [TT_OP_BFLOAT16] = { .file = "tests/test_half.c" },
    [TT_OP_HALF] = { .file = "tests/lua/test_autocast.lua" },
    [TT_OP_ROPE] = { .file = "tests/lua/test_block.lua" },
    [TT_OP_DROPOUT] = { .file = "tests/lua/test_block.lua" },
};

#endif
