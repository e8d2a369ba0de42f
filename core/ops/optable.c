/*
** optable.c — the op table: one row per tt_op with everything the shared
** front-ends (tt_binary, tt_unary, tt_reduce), the trace and the Lua binding
** read of an op: name, infix symbol, kind, operand dtypes, result dtype,
** FLOPs per element and kernel code. A new elementwise op is an enum line in
** tt.h, a row here and a kernel code with its scalar expression in
** core/kernel/ (kernels.h, ref.c). Its gradient is the row's backward (a
** function of core/ops/backward.c) with the tensors it saves; an op without
** one records, and backward() through it says there is no gradient yet.
*/
#include "kernel/kernels.h"
#include "tt_internal.h"

#define BINARY .kind = TT_OPK_BINARY
#define UNARY .kind = TT_OPK_UNARY
#define BW(f) .backward = tt__bw_##f
#define REDUCE .kind = TT_OPK_REDUCE, .dtypes = TT__FLOAT, .result = TT_FLOAT32

static const tt__opdef OPS[] = {
    [TT_OP_NONE] = { .name = "none" },
    /* creation */
    [TT_OP_TENSOR] = { .name = "tensor" },
    [TT_OP_EMPTY] = { .name = "empty" },
    [TT_OP_ZEROS] = { .name = "zeros" },
    [TT_OP_ONES] = { .name = "ones" },
    [TT_OP_FULL] = { .name = "full" },
    [TT_OP_ARANGE] = { .name = "arange" },
    [TT_OP_EYE] = { .name = "eye" },
    [TT_OP_RAND] = { .name = "rand" },
    [TT_OP_RANDN] = { .name = "randn" },
    [TT_OP_RANDINT] = { .name = "randint" },
    /* views and copies */
    [TT_OP_VIEW] = { .name = "view", BW(reshape) },
    [TT_OP_RESHAPE] = { .name = "reshape", BW(reshape) },
    [TT_OP_TRANSPOSE] = { .name = "transpose", BW(transpose) },
    [TT_OP_MT] = { .name = "mT", BW(transpose) },
    [TT_OP_PERMUTE] = { .name = "permute", BW(permute) },
    [TT_OP_NARROW] = { .name = "narrow", BW(narrow) },
    [TT_OP_SELECT] = { .name = "select", BW(narrow) },
    [TT_OP_EXPAND] = { .name = "expand", BW(reshape) },
    [TT_OP_UNSQUEEZE] = { .name = "unsqueeze", BW(unsqueeze) },
    [TT_OP_SQUEEZE] = { .name = "squeeze", BW(reshape) },
    [TT_OP_CONTIGUOUS] = { .name = "contiguous", BW(reshape) },
    [TT_OP_CLONE] = { .name = "clone", BW(reshape) },
    [TT_OP_NAMED] = { .name = "named", BW(reshape) },
    [TT_OP_CHUNK] = { .name = "chunk", BW(narrow) },
    [TT_OP_SPLIT] = { .name = "split", BW(narrow) },
    /* elementwise: arithmetic counts one FLOP a result element; keeps_int: int64 stays int64 */
    [TT_OP_ADD] = { .name = "add", .infix = "+", BINARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_ADD, BW(add), .keeps_int = 1 },
    [TT_OP_SUB] = { .name = "sub", .infix = "-", BINARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_SUB, BW(sub), .keeps_int = 1 },
    [TT_OP_MUL] = { .name = "mul", .infix = "*", BINARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_MUL, BW(mul), .saves = TT__SAVE_A | TT__SAVE_B, .keeps_int = 1 },
    [TT_OP_DIV] = { .name = "div", .infix = "/", BINARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_DIV, BW(div), .saves = TT__SAVE_A | TT__SAVE_B | TT__SAVE_OUT },
    [TT_OP_POW] = { .name = "pow", .infix = "^", BINARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_POW, BW(pow), .saves = TT__SAVE_A | TT__SAVE_B | TT__SAVE_OUT, .keeps_int = 1 },
    [TT_OP_MAXIMUM] = { .name = "maximum", BINARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_MAX, BW(maximum), .saves = TT__SAVE_A | TT__SAVE_B, .keeps_int = 1 },
    [TT_OP_MINIMUM] = { .name = "minimum", BINARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_MIN, BW(maximum), .saves = TT__SAVE_A | TT__SAVE_B, .keeps_int = 1 },
    [TT_OP_EQ] = { .name = "eq", BINARY, .dtypes = TT__SAME, .result = TT_BOOL, .kernel = TK_EW_EQ, .keeps_int = 1 },
    [TT_OP_NE] = { .name = "ne", BINARY, .dtypes = TT__SAME, .result = TT_BOOL, .kernel = TK_EW_NE, .keeps_int = 1 },
    [TT_OP_LT] = { .name = "lt", BINARY, .dtypes = TT__FLOAT, .result = TT_BOOL, .kernel = TK_EW_LT, .keeps_int = 1 },
    [TT_OP_LE] = { .name = "le", BINARY, .dtypes = TT__FLOAT, .result = TT_BOOL, .kernel = TK_EW_LE, .keeps_int = 1 },
    [TT_OP_GT] = { .name = "gt", BINARY, .dtypes = TT__FLOAT, .result = TT_BOOL, .kernel = TK_EW_GT, .keeps_int = 1 },
    [TT_OP_GE] = { .name = "ge", BINARY, .dtypes = TT__FLOAT, .result = TT_BOOL, .kernel = TK_EW_GE, .keeps_int = 1 },
    [TT_OP_AND] = { .name = "and", .infix = "&", BINARY, .dtypes = TT__BOOL, .result = TT_BOOL, .kernel = TK_EW_AND },
    [TT_OP_OR] = { .name = "or", .infix = "|", BINARY, .dtypes = TT__BOOL, .result = TT_BOOL, .kernel = TK_EW_OR },
    [TT_OP_XOR] = { .name = "xor", .infix = "~", BINARY, .dtypes = TT__BOOL, .result = TT_BOOL, .kernel = TK_EW_XOR },
    [TT_OP_NEG] = { .name = "neg", UNARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_NEG, BW(neg), .keeps_int = 1 },
    [TT_OP_EXP] = { .name = "exp", UNARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_EXP, BW(exp), .saves = TT__SAVE_OUT },
    [TT_OP_LOG] = { .name = "log", UNARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_LOG, BW(log), .saves = TT__SAVE_A },
    [TT_OP_SQRT] = { .name = "sqrt", UNARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_SQRT, BW(sqrt), .saves = TT__SAVE_OUT },
    [TT_OP_ABS] = { .name = "abs", UNARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_ABS, BW(abs), .saves = TT__SAVE_A, .keeps_int = 1 },
    /* activations: exp, log, tanh and erfc count one FLOP like any operation;
       relu 1 (max); sigmoid 4 (neg, exp, add, div); gelu 4 (scale, erfc,
       two muls); gelu tanh form 9 (x*x*x: 2, *c, +x, *k, tanh, +1, *0.5, *x) */
    [TT_OP_RELU] = { .name = "relu", UNARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_RELU, BW(relu), .saves = TT__SAVE_A },
    [TT_OP_GELU] = { .name = "gelu", UNARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 4, .kernel = TK_EW_GELU, BW(gelu), .saves = TT__SAVE_A },
    [TT_OP_GELU_TANH] = { .name = "gelu_tanh", UNARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 9, .kernel = TK_EW_GELU_TANH, BW(gelu), .saves = TT__SAVE_A },
    [TT_OP_TANH] = { .name = "tanh", UNARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_TANH, BW(tanh), .saves = TT__SAVE_OUT },
    [TT_OP_SIGMOID] = { .name = "sigmoid", UNARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 4, .kernel = TK_EW_SIGMOID, BW(sigmoid), .saves = TT__SAVE_OUT },
    [TT_OP_NOT] = { .name = "not", UNARY, .dtypes = TT__BOOL, .result = TT_BOOL, .kernel = TK_EW_NOT },
    [TT_OP_FLOAT] = { .name = "float", BW(reshape) },
    [TT_OP_BOOL] = { .name = "bool" },
    [TT_OP_LONG] = { .name = "long" },
    /* reductions: FLOPs per input element; arg* run max/min's kernel for the index;
       keeps_int: int64 input allowed (int64 values), mean/std/var want float32 */
    [TT_OP_SUM] = { .name = "sum", REDUCE, .flops = 1, .kernel = TK_RED_SUM, BW(sum), .keeps_int = 1 },
    [TT_OP_MEAN] = { .name = "mean", REDUCE, .flops = 1, .kernel = TK_RED_MEAN, BW(sum) },
    [TT_OP_MAX] = { .name = "max", REDUCE, .flops = 1, .kernel = TK_RED_MAX, BW(max), .saves = TT__SAVE_A | TT__SAVE_OUT | TT__SAVE_EXTRA, .keeps_int = 1 },
    [TT_OP_MIN] = { .name = "min", REDUCE, .flops = 1, .kernel = TK_RED_MIN, BW(max), .saves = TT__SAVE_A | TT__SAVE_OUT | TT__SAVE_EXTRA, .keeps_int = 1 },
    [TT_OP_ARGMAX] = { .name = "argmax", REDUCE, .flops = 1, .kernel = TK_RED_MAX, .index = 1, .keeps_int = 1 },
    [TT_OP_ARGMIN] = { .name = "argmin", REDUCE, .flops = 1, .kernel = TK_RED_MIN, .index = 1, .keeps_int = 1 },
    [TT_OP_STD] = { .name = "std", REDUCE, .flops = 3, .kernel = TK_RED_STD, BW(var), .saves = TT__SAVE_A | TT__SAVE_OUT },
    [TT_OP_VAR] = { .name = "var", REDUCE, .flops = 3, .kernel = TK_RED_VAR, BW(var), .saves = TT__SAVE_A | TT__SAVE_OUT },
    /* attention and the rest: their own functions */
    /* softmax, log_softmax: 5 a input element (max, sub, exp, sum, div or sub) */
    [TT_OP_SOFTMAX] = { .name = "softmax", .flops = 5, BW(softmax), .saves = TT__SAVE_OUT },
    [TT_OP_LOG_SOFTMAX] = { .name = "log_softmax", .flops = 5, BW(log_softmax), .saves = TT__SAVE_OUT },
    [TT_OP_MASKED_FILL] = { .name = "masked_fill", BW(masked_fill), .saves = TT__SAVE_B },
    [TT_OP_TRIL] = { .name = "tril", BW(tri) },
    [TT_OP_TRIU] = { .name = "triu", BW(tri) },
    [TT_OP_CAUSAL_MASK] = { .name = "causal_mask" },
    [TT_OP_REPEAT_INTERLEAVE] = { .name = "repeat_interleave", BW(repeat_interleave) },
    [TT_OP_CAT] = { .name = "cat", BW(cat) },
    [TT_OP_STACK] = { .name = "stack", BW(cat) },
    [TT_OP_MATMUL] = { .name = "matmul", .infix = "@", BW(matmul), .saves = TT__SAVE_A | TT__SAVE_B },
    [TT_OP_SDPA] = { .name = "sdpa", BW(sdpa), .saves = TT__SAVE_A | TT__SAVE_B | TT__SAVE_C | TT__SAVE_OUT | TT__SAVE_EXTRA },
    [TT_OP_REARRANGE] = { .name = "rearrange", BW(rearrange) },
    [TT_OP_EINSUM] = { .name = "einsum", BW(einsum), .saves = TT__SAVE_LIST },
    /* optimizers: FLOPs counted by the step itself (they depend on the options) */
    [TT_OP_SGD_STEP] = { .name = "sgd.step" },
    [TT_OP_ADAMW_STEP] = { .name = "adamw.step" },
    [TT_OP_CLIP_GRAD_NORM] = { .name = "clip_grad_norm" },
    /* indexing: the backward scatter-adds g where the forward read */
    [TT_OP_INDEX_SELECT] = { .name = "index_select", BW(index), .saves = TT__SAVE_B },
    [TT_OP_GATHER] = { .name = "gather", BW(index), .saves = TT__SAVE_B },
    /* losses: 4 a logit (max, sub, exp, sum); the front-end saves the
       contiguous logits, the row statistics and the 0-based targets itself */
    [TT_OP_CROSS_ENTROPY] = { .name = "cross_entropy", .flops = 4, BW(cross_entropy), .saves = TT__SAVE_EXTRA },
    /* what a PyTorch user reaches for (issue 30): sin and cos are table rows
       as exp is; the rest have their own front-ends (elementwise.c, reduce.c, view.c, pattern.c) */
    [TT_OP_SIN] = { .name = "sin", UNARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_SIN, BW(sin), .saves = TT__SAVE_A },
    [TT_OP_COS] = { .name = "cos", UNARY, .dtypes = TT__FLOAT, .result = TT_FLOAT32, .flops = 1, .kernel = TK_EW_COS, BW(sin), .saves = TT__SAVE_A },
    [TT_OP_ISNAN] = { .name = "isnan" },
    [TT_OP_WHERE] = { .name = "where", BW(where), .saves = TT__SAVE_A },
    [TT_OP_ANY] = { .name = "any" },
    [TT_OP_ALL] = { .name = "all" },
    /* norm: |x|, the power and the sum: 3 an element (2 for p = 2, 1 for inf) */
    [TT_OP_NORM] = { .name = "norm", BW(norm), .saves = TT__SAVE_A | TT__SAVE_OUT },
    [TT_OP_FLATTEN] = { .name = "flatten", BW(reshape) },
    [TT_OP_UNBIND] = { .name = "unbind", BW(narrow) },
    [TT_OP_T] = { .name = "t", BW(transpose) },
    [TT_OP_REDUCE] = { .name = "reduce", .flops = 1, BW(reduce), .saves = TT__SAVE_A | TT__SAVE_OUT },
    [TT_OP_REPEAT] = { .name = "repeat", BW(repeat) },
    /* the gradient of a conversion is g as the input's dtype (the engine converts it) */
    [TT_OP_BFLOAT16] = { .name = "bfloat16", BW(reshape) },
    [TT_OP_HALF] = { .name = "half", BW(reshape) },
    /* the block: rope 3 an element (two muls and an add; the angles' sin
       and cos once per position and pair besides); dropout 1 (the mul) */
    [TT_OP_ROPE] = { .name = "rope", .flops = 3, BW(rope), .saves = TT__SAVE_B },
    [TT_OP_DROPOUT] = { .name = "dropout", .flops = 1, BW(dropout), .saves = TT__SAVE_B },
};
_Static_assert(sizeof OPS / sizeof OPS[0] == TT_OP_COUNT, "OPS: one row per tt_op");

const tt__opdef *tt__op_def(tt_op op)
{
    return op >= 0 && op < TT_OP_COUNT && OPS[op].name ? &OPS[op] : NULL;
}

const char *tt_op_name(tt_op op)
{
    const tt__opdef *d = tt__op_def(op);
    return d ? d->name : "?";
}

const char *tt_op_infix(tt_op op)
{
    const tt__opdef *d = tt__op_def(op);
    return d ? d->infix : NULL;
}

tt_opkind tt_op_kind(tt_op op)
{
    const tt__opdef *d = tt__op_def(op);
    return d ? d->kind : TT_OPK_OTHER;
}

/* ===== Events ===== */

void tt__event_scalar(tt_event *ev, tt_number s)
{
    ev->has_scalar = 1;
    ev->scalar = s.f;
    ev->scalar_is_int = s.is_int;
    ev->scalar_int = s.i;
}

void tt__event_init(tt_event *ev, tt_op op, const tt_tensor *out,
                    const tt_tensor *a, const tt_tensor *b, const tt_tensor *c)
{
    /* field by field: the two text buffers are most of the struct, and
       only their first byte needs clearing */
    ev->op = op;
    ev->phase = TT_PHASE_FORWARD;
    ev->ngrads = ev->ngrads_total = 0;
    ev->name = tt_op_name(op);
    ev->infix = tt_op_infix(op);
    ev->ninputs = 0;
    for (int i = 0; i < TT_TRACE_MAX_INPUTS; i++) ev->inputs[i] = NULL;
    ev->output = out;
    ev->view = ev->has_scalar = ev->scalar_first = 0;
    ev->scalar = 0;
    ev->scalar_is_int = 0;
    ev->scalar_int = 0;
    ev->args[0] = ev->note[0] = 0;
    ev->nargs = 0;
    ev->pattern = NULL;
    ev->flops = ev->bytes = 0;
    ev->ns = 0;
    const tt_tensor *in[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (in[i]) ev->inputs[ev->ninputs++] = in[i];
    ev->ninputs_total = ev->ninputs;
    if (out && out->storage) {
        double b_out = (double)tt_numel(out) * (double)tt_dtype_size(out->dtype);
        ev->bytes = b_out;
        for (int i = 0; i < ev->ninputs; i++)
            ev->bytes += (double)tt_numel(ev->inputs[i]) * (double)tt_dtype_size(ev->inputs[i]->dtype);
    }
}

/* ===== An event's arguments ===== */

static tt_arg *new_arg(tt_event *ev, const char *key, const char *show, tt_argkind kind)
{
    if (ev->nargs >= TT_EVENT_MAX_ARGS) return NULL;
    tt_arg *a = &ev->argv[ev->nargs++];
    a->key = key;
    a->show = show;
    a->kind = kind;
    a->n = 0;
    return a;
}

void tt__arg_int(tt_event *ev, const char *key, const char *show, int64_t v)
{
    tt_arg *a = new_arg(ev, key, show, TT_ARG_INT);
    if (a) a->v.i = v;
}

void tt__arg_num(tt_event *ev, const char *key, const char *show, double v)
{
    tt_arg *a = new_arg(ev, key, show, TT_ARG_NUM);
    if (a) a->v.f = v;
}

void tt__arg_bool(tt_event *ev, const char *key, const char *show, int v)
{
    tt_arg *a = new_arg(ev, key, show, TT_ARG_BOOL);
    if (a) a->v.i = v != 0;
}

void tt__arg_str(tt_event *ev, const char *key, const char *show, const char *v)
{
    tt_arg *a = new_arg(ev, key, show, TT_ARG_STR);
    if (a) a->v.s = v ? v : "";
}

void tt__arg_dims(tt_event *ev, const char *key, const int *dims, int n)
{
    tt_arg *a = new_arg(ev, key, "", TT_ARG_DIMS);
    if (a == NULL) return;
    a->n = n < TT_MAX_DIMS ? n : TT_MAX_DIMS;
    for (int i = 0; i < a->n; i++) a->v.dims[i] = (int8_t)(dims[i] + 1);
}

void tt__arg_size(tt_event *ev, const char *axis, int64_t v)
{
    tt_arg *a = new_arg(ev, axis, "=%lld", TT_ARG_SIZE);
    if (a) a->v.i = v;
}

void tt__arg_input(tt_event *ev, const char *key, const char *show, int input)
{
    tt_arg *a = new_arg(ev, key, show, TT_ARG_INPUT);
    if (a) a->v.i = input;
}
