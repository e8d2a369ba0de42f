/*
** tt.h — the tensortrace C core: tensors, views, ops, tracing events.
** No Lua in here (lua/ depends on core/, never the reverse).
** Dims are 0-based here; lua/ converts from 1-based and negative dims once.
*/
#ifndef TT_H
#define TT_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define TT_VERSION "0.1.0"
#define TT_MAX_DIMS 8

/* Status codes and tt_errmsg, tt_intern, tt_storage and the memory cap:
   the base layer (core/base/base.h), part of this API. */

/* ===== Tensors ===== */

/* int64: token ids, targets and indices (never requires grad). bfloat16
   and float16: 16-bit storage (PyTorch's torch.bfloat16, torch.float16);
   ops compute on them in float32 and round the result once to the
   input's dtype (round to nearest even), as PyTorch does on the CPU. */
typedef enum tt_dtype { TT_FLOAT32 = 0, TT_BOOL = 1, TT_INT64 = 2, TT_BFLOAT16 = 3, TT_FLOAT16 = 4 } tt_dtype;

/* A small value header over a storage. Strides and offset count elements.
   names[] and label are interned strings (tt_intern) or NULL. */
typedef struct tt_tensor {
    tt_storage *storage;
    int64_t offset;
    int ndim;
    tt_dtype dtype;
    int64_t shape[TT_MAX_DIMS];
    int64_t stride[TT_MAX_DIMS];
    const char *names[TT_MAX_DIMS];
    const char *label;
    uint64_t id;          /* unique per op result; lineage for tt.flow */
    struct tt_autograd *ag; /* gradient record (Gradients, below); NULL unless it requires grad */
} tt_tensor;

/* Conventions for every function below that takes `tt_tensor *out`:
   inputs are borrowed; on TT_OK *out holds a new reference (release it with
   tt_tensor_release); on failure *out is left empty (storage NULL). `out`
   may not alias an input. */

/* Drops the reference held by t (t may be NULL or empty); t becomes empty. */
void tt_tensor_release(tt_tensor *t);
/* *out becomes a new reference to the same view as a (same storage, shape,
   strides, names, label and id), outside the gradient graph; no op runs
   and no event is emitted (a trace subscriber may keep what it sees). */
void tt_tensor_share(tt_tensor *out, const tt_tensor *a);

int64_t tt_numel(const tt_tensor *t);
int tt_is_contiguous(const tt_tensor *t);
size_t tt_dtype_size(tt_dtype dt);
/* "float32", "bool", "int64", "bfloat16", "float16" (PyTorch's names). */
const char *tt_dtype_name(tt_dtype dt);
/* float32, bfloat16, float16: the dtypes that carry gradients. */
int tt_dtype_is_float(tt_dtype dt);
/* The dtype of a float result from two float operands, as PyTorch
   promotes: the same; float32 over a 16-bit one; bfloat16 with float16
   gives float32. */
tt_dtype tt_promote_float(tt_dtype a, tt_dtype b);
/* One value to a 16-bit dtype's bits (round to nearest even) and back. */
uint16_t tt_half_from_float(tt_dtype dt, float v);
float tt_half_to_float(tt_dtype dt, uint16_t h);
/* Pointer to element 0 of the view (storage data + offset). */
float *tt_data_f32(const tt_tensor *t);
uint16_t *tt_data_u16(const tt_tensor *t);   /* bfloat16, float16: the raw bits */
uint8_t *tt_data_bool(const tt_tensor *t);
int64_t *tt_data_i64(const tt_tensor *t);
/* Element at a flat row-major index of the view, as a double. */
double tt_get(const tt_tensor *t, int64_t flat);
/* The same as an integer, exact for int64 (float32 truncates toward 0). */
int64_t tt_get_i64(const tt_tensor *t, int64_t flat);
/* Every element of the view in row-major order into dst[0..numel), as
   floats (bool as 0 and 1). */
void tt_get_floats(const tt_tensor *t, float *dst);

/* "[2,3]" or, with names, "[B=2,N=3]"; returns buf. */
char *tt_shape_str(const tt_tensor *t, char *buf, size_t n);

/* Frees the buffers kept for reuse and the interned strings, and stops
   the thread pool (at exit; no tensor or name may be used afterwards). */
void tt_release_caches(void);

/* A number as a script wrote it: Lua 5.4's integer (exact to 64 bits)
   or float subtype; f holds the value as a double either way. Ops that
   take a number keep an integer exact against int64 (PyTorch's wrapped
   integer scalar); a float with int64 promotes to float32. */
typedef struct tt_number { double f; int64_t i; int is_int; } tt_number;
static inline tt_number tt_num_f(double f) { return (tt_number){ f, 0, 0 }; }
static inline tt_number tt_num_i(int64_t i) { return (tt_number){ (double)i, i, 1 }; }

/* ===== Creation ===== */

/* Uninitialised contiguous tensor. TT_EARG for a negative size or too many
   dims, TT_ENOMEM when the size overflows or passes the memory cap. */
tt_status tt_empty(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape);
tt_status tt_full(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape, double value);
/* The same with an exact integer or a float (int64 from an integer is exact,
   from a float truncates toward zero). */
tt_status tt_full_number(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape, tt_number value);
tt_status tt_zeros(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape);
tt_status tt_ones(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape);
/* Contiguous copy of data (float, int64 or one byte per bool, row-major). */
tt_status tt_from_buffer(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape, const void *data);
/* [a, b) by step (step != 0), float32. */
tt_status tt_arange(tt_tensor *out, double a, double b, double step);
/* [a, b) by step (step != 0) counted in integers (exact across the whole
   int64 range: arange(INT64_MIN, INT64_MIN + 5) has 5 elements), each
   value a + i*step as dtype dt (float32 rounds it once, int64 is exact);
   TT_ENOMEM naming the count when it is too many to allocate. */
tt_status tt_arange_int(tt_tensor *out, tt_dtype dt, int64_t a, int64_t b, int64_t step);
/* n x m identity, float32. */
tt_status tt_eye(tt_tensor *out, int64_t n, int64_t m);

/* Random numbers: xoshiro128** seeded through splitmix64 (see tensor.c);
   integer arithmetic only, so a seed gives the same numbers everywhere. */
void tt_manual_seed(uint64_t seed);
tt_status tt_rand(tt_tensor *out, int ndim, const int64_t *shape);   /* U[0,1) */
tt_status tt_randn(tt_tensor *out, int ndim, const int64_t *shape);  /* N(0,1) */
/* int64 uniform in [lo, hi) (PyTorch's randint); TT_EARG when hi <= lo. */
tt_status tt_randint(tt_tensor *out, int64_t lo, int64_t hi, int ndim, const int64_t *shape);

/* ===== Views (share storage; never copy) ===== */

/* shape may hold one -1 (inferred). view needs compatible strides
   (TT_ESHAPE with a hint otherwise); reshape copies when it must. */
tt_status tt_view(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape);
tt_status tt_reshape(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape);
tt_status tt_transpose(tt_tensor *out, const tt_tensor *a, int d1, int d2);
tt_status tt_mT(tt_tensor *out, const tt_tensor *a);     /* swap the last two */
tt_status tt_permute(tt_tensor *out, const tt_tensor *a, const int *perm); /* perm has a->ndim entries */
tt_status tt_narrow(tt_tensor *out, const tt_tensor *a, int d, int64_t start, int64_t len);
tt_status tt_select(tt_tensor *out, const tt_tensor *a, int d, int64_t i);
/* -1 keeps a size; new leading dims allowed; only size-1 dims grow (stride 0). */
tt_status tt_expand(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape);
tt_status tt_unsqueeze(tt_tensor *out, const tt_tensor *a, int d);  /* 0 <= d <= ndim */
tt_status tt_squeeze(tt_tensor *out, const tt_tensor *a, int d);    /* d < 0: all size-1 dims */
/* A view when already contiguous, else a copy. */
tt_status tt_contiguous(tt_tensor *out, const tt_tensor *a);
tt_status tt_clone(tt_tensor *out, const tt_tensor *a);
/* Same view with names (array of a->ndim interned names or NULLs). */
tt_status tt_named(tt_tensor *out, const tt_tensor *a, const char *const *names);
/* Pieces along d: chunk into n parts of ceil(size/n) (fewer when it runs out),
   split into parts of `size` (last may be shorter). outs has room for max
   entries; *count gets the number written; each is a new reference. */
tt_status tt_chunk(tt_tensor *outs, int max, int *count, const tt_tensor *a, int64_t n, int d);
tt_status tt_split(tt_tensor *outs, int max, int *count, const tt_tensor *a, int64_t size, int d);
/* PyTorch's flatten: dims start..end (0 <= start <= end < ndim) merged into
   one, a view when the strides allow (a copy otherwise); a 0-d tensor
   gives [1]. */
tt_status tt_flatten(tt_tensor *out, const tt_tensor *a, int start, int end);
/* PyTorch's unbind: the a->shape[d] selects along d into outs (room for
   max), as chunk and split. */
tt_status tt_unbind(tt_tensor *outs, int max, int *count, const tt_tensor *a, int d);
/* PyTorch's t(): a 2-D tensor transposed; 0-d and 1-D as they are (a
   view); TT_ESHAPE with a hint for more dims. */
tt_status tt_t(tt_tensor *out, const tt_tensor *a);

/* ===== Ops ===== */

/* Every op, in no order that matters: each has one row in the op table
   (core/ops/optable.c) with its name, kind, dtype rule, FLOPs and kernel. */
typedef enum tt_op {
    TT_OP_NONE = 0,
    /* creation */
    TT_OP_TENSOR, TT_OP_EMPTY, TT_OP_ZEROS, TT_OP_ONES, TT_OP_FULL, TT_OP_ARANGE, TT_OP_EYE, TT_OP_RAND, TT_OP_RANDN, TT_OP_RANDINT,
    /* views and copies */
    TT_OP_VIEW, TT_OP_RESHAPE, TT_OP_TRANSPOSE, TT_OP_MT, TT_OP_PERMUTE, TT_OP_NARROW,
    TT_OP_SELECT, TT_OP_EXPAND, TT_OP_UNSQUEEZE, TT_OP_SQUEEZE, TT_OP_CONTIGUOUS,
    TT_OP_CLONE, TT_OP_NAMED, TT_OP_CHUNK, TT_OP_SPLIT,
    /* elementwise (float and bool: conversions) */
    TT_OP_ADD, TT_OP_SUB, TT_OP_MUL, TT_OP_DIV, TT_OP_POW, TT_OP_MAXIMUM, TT_OP_MINIMUM,
    TT_OP_EQ, TT_OP_NE, TT_OP_LT, TT_OP_LE, TT_OP_GT, TT_OP_GE, TT_OP_AND, TT_OP_OR, TT_OP_XOR,
    TT_OP_NEG, TT_OP_EXP, TT_OP_LOG, TT_OP_SQRT, TT_OP_ABS, TT_OP_NOT, TT_OP_FLOAT, TT_OP_BOOL, TT_OP_LONG,
    TT_OP_RELU, TT_OP_GELU, TT_OP_GELU_TANH, TT_OP_TANH, TT_OP_SIGMOID,
    /* reductions */
    TT_OP_SUM, TT_OP_MEAN, TT_OP_MAX, TT_OP_MIN, TT_OP_ARGMAX, TT_OP_ARGMIN, TT_OP_STD, TT_OP_VAR,
    /* attention */
    TT_OP_SOFTMAX, TT_OP_MASKED_FILL, TT_OP_TRIL, TT_OP_TRIU, TT_OP_CAUSAL_MASK,
    TT_OP_LOG_SOFTMAX,
    TT_OP_REPEAT_INTERLEAVE, TT_OP_CAT, TT_OP_STACK, TT_OP_MATMUL, TT_OP_SDPA,
    TT_OP_REARRANGE, TT_OP_EINSUM,
    /* optimizers (ops/optim.c): one event a step, for all the parameters */
    TT_OP_SGD_STEP, TT_OP_ADAMW_STEP, TT_OP_CLIP_GRAD_NORM,
    /* indexing */
    TT_OP_INDEX_SELECT, TT_OP_GATHER,
    TT_OP_CROSS_ENTROPY,
    /* what a PyTorch user reaches for (issue 30) */
    TT_OP_SIN, TT_OP_COS, TT_OP_ISNAN, TT_OP_WHERE, TT_OP_ANY, TT_OP_ALL, TT_OP_NORM,
    TT_OP_FLATTEN, TT_OP_UNBIND, TT_OP_T, TT_OP_REDUCE, TT_OP_REPEAT,
    /* 16-bit floats (issue 25): the conversions x:bfloat16(), x:half() */
    TT_OP_BFLOAT16, TT_OP_HALF,
    /* the transformer block (issue 24) */
    TT_OP_ROPE, TT_OP_DROPOUT,
    TT_OP_COUNT
} tt_op;

/* The same numbers as rand (op TT_OP_RAND) or randn (TT_OP_RANDN) in a
   float dtype: drawn as float32, rounded once for bfloat16 and float16. */
tt_status tt_random(tt_tensor *out, tt_op op, tt_dtype dt, int ndim, const int64_t *shape);

/* Which front-end takes the op: tt_binary (and tt_binary_scalar), tt_unary,
   tt_reduce; OTHER for an op with its own function. */
typedef enum tt_opkind { TT_OPK_OTHER, TT_OPK_BINARY, TT_OPK_UNARY, TT_OPK_REDUCE } tt_opkind;

/* "add"; "?" for a value out of range. */
const char *tt_op_name(tt_op op);
/* The infix symbol a trace row shows between the inputs ("+", "@", "&"),
   or NULL for an op written as a call. */
const char *tt_op_infix(tt_op op);
/* TT_OPK_OTHER for a value out of range. */
tt_opkind tt_op_kind(tt_op op);

/* ===== Elementwise (NumPy broadcasting) =====
   The ops are the elementwise rows of tt_op: tt_binary takes a
   TT_OPK_BINARY op, tt_unary a TT_OPK_UNARY one, else TT_EARG. Comparisons
   give bool; and, or, xor, not take bool; the others float32. */

tt_status tt_binary(tt_tensor *out, tt_op op, const tt_tensor *a, const tt_tensor *b);
/* a op s, or s op a when scalar_first; s a float (int64 a promotes to
   float32, as PyTorch with a Python float). */
tt_status tt_binary_scalar(tt_tensor *out, tt_op op, const tt_tensor *a, double s, int scalar_first);
/* The same with s an exact integer or a float: int64 op integer stays
   int64 for the ops that keep int64 (+ - * ^ maximum minimum, comparisons),
   wrapping as two's complement; int64 ^ (negative integer) is TT_EARG
   (PyTorch's "Integers to negative integer powers are not allowed."). */
tt_status tt_binary_number(tt_tensor *out, tt_op op, const tt_tensor *a, tt_number s, int scalar_first);
tt_status tt_unary(tt_tensor *out, tt_op op, const tt_tensor *a);
/* Between the dtypes: float32 to bfloat16/float16 rounds to nearest even,
   16-bit to float32 is exact (others through float32); nonzero -> true, float -> int64
   truncates toward zero (NaN and values out of int64's range give
   INT64_MIN, as PyTorch on x86); same dtype gives a copy-free view. */
tt_status tt_to_dtype(tt_tensor *out, const tt_tensor *a, tt_dtype dt);

/* isnan: bool, true where a (float32) is NaN; int64 and bool are never
   NaN (all false). */
tt_status tt_isnan(tt_tensor *out, const tt_tensor *a);
/* PyTorch's where: a where cond is true, b elsewhere; cond bool, a and b
   of one dtype; all three broadcast together. a (or b) NULL: the number sa
   (sb) as a 0-d tensor of the other's dtype (float32 when both are
   numbers, or when the other is int64 and the number a float: PyTorch's
   promotion; an integer with int64 stays exact). Exact (no arithmetic on
   the values: -0.0, inf and NaN pass as they are). */
tt_status tt_where(tt_tensor *out, const tt_tensor *cond, const tt_tensor *a, tt_number sa,
                   const tt_tensor *b, tt_number sb);

/* ===== Reductions ===== */

/* op: a TT_OPK_REDUCE op (sum, mean, max, min, argmax, argmin, std, var). */
/* Over dim d, or over everything when d < 0 (0-d result). std/var use
   Bessel's correction (n-1), as PyTorch. ARGMAX/ARGMIN give int64
   1-based indices (the first of ties). int64 input: sum, max, min give
   int64 (mean, std, var: TT_EARG). max/min of an empty dim: TT_EARG. */
tt_status tt_reduce(tt_tensor *out, tt_op op, const tt_tensor *a, int d, int keepdim);
/* any/all: bool, whether any/every element over d (d < 0: all dims, 0-d
   result) is nonzero (NaN counts as nonzero, as PyTorch); any of nothing is
   false, all of nothing true. Any dtype. */
tt_status tt_any(tt_tensor *out, const tt_tensor *a, int d, int keepdim);
tt_status tt_all(tt_tensor *out, const tt_tensor *a, int d, int keepdim);
/* The p-norm over d (d < 0: every element), float32: (sum |a|^p)^(1/p)
   for p > 0, max |a| for p = inf; TT_EARG for p <= 0 or NaN, and (as
   max) for an empty input with p = inf. */
tt_status tt_norm(tt_tensor *out, const tt_tensor *a, double p, int d, int keepdim);

/* Rotary position embedding on x's last dim (even, D), in pairs: the pair
   i (0 <= i < D/2) of a row at position p turns by the angle p * theta_i,
   theta_i = base^(-2i/D). interleaved: the pairs are (x0,x1), (x2,x3), ...
   (RoFormer, Meta's llama, GPT-J); else (x_i, x_{i+D/2}), HF's
   rotate_half (GPT-NeoX, HF LLaMA). positions (int64 or float32) has a
   shape that broadcasts to x's without its last dim (e.g. [N] for
   [..., N, D]). The result is x's shape, names and dtype (a 16-bit x turns
   in float32, rounded once); the gradient flows to x
   (the opposite rotation), never to positions. TT_ESHAPE for an odd D or
   positions that do not fit, TT_EARG for dtypes and base <= 0. */
tt_status tt_rope(tt_tensor *out, const tt_tensor *x, const tt_tensor *positions, double base, int interleaved);
/* Dropout: each element of x kept with probability 1 - p and scaled by
   1 / (1 - p), else 0 (p = 1: all 0), from the seeded generator; the
   result in x's dtype (a 16-bit x: the product in float32, rounded once);
   the backward multiplies by the same mask. 0 <= p <= 1 and x a float
   tensor, else TT_EARG. */
tt_status tt_dropout(tt_tensor *out, const tt_tensor *x, double p);
/* max/min over d with values and 1-based int64 indices. */
tt_status tt_max_dim(tt_tensor *values, tt_tensor *indices, const tt_tensor *a, int d, int keepdim, int is_min);

/* ===== Attention pieces ===== */

/* Stable softmax over d: a row of all -inf gives NaN (as PyTorch). */
tt_status tt_softmax(tt_tensor *out, const tt_tensor *a, int d);
/* x - max - log(sum(exp(x - max))) over d, never through log(softmax):
   stable for huge inputs, -inf where x is -inf; a row of all -inf (or
   with a NaN or +inf) gives NaN, as softmax and PyTorch. */
tt_status tt_log_softmax(tt_tensor *out, const tt_tensor *a, int d);
/* a where mask is false, value where true; mask is bool, broadcast to a. */
tt_status tt_masked_fill(tt_tensor *out, const tt_tensor *a, const tt_tensor *mask, double value);
/* The same with an exact integer or a float as the value (cast to a's dtype). */
tt_status tt_masked_fill_number(tt_tensor *out, const tt_tensor *a, const tt_tensor *mask, tt_number value);

/* In-place ops (ops/inplace.c): a is written through its strides (a view
   writes into its base) and its storage's version goes up, so a backward
   that saved the old values fails (tt_backward_retain). a op= b (b
   broadcast to a; s the scalar when b is NULL) for op ADD, SUB, MUL, DIV;
   a's elements where mask is true set to value; all set to value; src
   (broadcast, any dtype) copied in. TT_EARG when a requires grad with grad
   mode on (in-place ops are not recorded), when a is an expand (elements
   sharing memory), when the result's dtype cannot be a's; TT_ESHAPE when
   the broadcast result is not a's shape. Each emits one event. */
tt_status tt_binary_(tt_tensor *a, tt_op op, const tt_tensor *b, const tt_number *s);
tt_status tt_masked_fill_(tt_tensor *a, const tt_tensor *mask, tt_number value);
tt_status tt_fill_(tt_tensor *a, tt_number value);
tt_status tt_zero_(tt_tensor *a);
tt_status tt_copy_(tt_tensor *a, const tt_tensor *src);
/* Keep j - i <= k (tril) or j - i >= k (triu) on the last two dims. */
tt_status tt_tril(tt_tensor *out, const tt_tensor *a, int64_t k);
tt_status tt_triu(tt_tensor *out, const tt_tensor *a, int64_t k);
/* bool [nq, nk], true = may attend. lower_right: query i sees keys
   j <= i + (nk - nq); else (upper left, PyTorch is_causal) j <= i. */
tt_status tt_causal_mask(tt_tensor *out, int64_t nq, int64_t nk, int lower_right);
tt_status tt_repeat_interleave(tt_tensor *out, const tt_tensor *a, int64_t r, int d);
tt_status tt_cat(tt_tensor *out, const tt_tensor *const *list, int n, int d);
tt_status tt_stack(tt_tensor *out, const tt_tensor *const *list, int n, int d);

/* Indexing with int64 indices counted from 1 (an index outside 1..size is
   TT_EARG naming it and the range). index_select: the slices of a along d
   at index (1-D): a's shape with index's length at d. gather: out[i] =
   a[i with i_d = index[i]], index with a's number of dims and sizes at
   most a's off d; the result has index's shape. Any dtype of a. */
tt_status tt_index_select(tt_tensor *out, const tt_tensor *a, int d, const tt_tensor *index);
tt_status tt_gather(tt_tensor *out, const tt_tensor *a, int d, const tt_tensor *index);

/* PyTorch's cross_entropy with class indices: logits [N, C] float32 and
   int64 targets [N] (or [C] and one target, 0-d or [1]), targets 1-based;
   a target equal to ignore_index (PyTorch's default -100) counts nowhere,
   any other outside 1..C is TT_EARG naming it. Loss of a row: log-sum-exp
   (max-subtracted) - logit[target]. MEAN: over the targets not ignored
   (none: NaN, as PyTorch); SUM; NONE: [N] (0-d for [C]), 0 where ignored. */
typedef enum tt_reduction { TT_REDUCTION_MEAN, TT_REDUCTION_SUM, TT_REDUCTION_NONE } tt_reduction;
tt_status tt_cross_entropy(tt_tensor *out, const tt_tensor *logits, const tt_tensor *targets,
                           int64_t ignore_index, tt_reduction reduction);

/* PyTorch's matmul: 1-D promotion, broadcast batch dims, any strides. */
tt_status tt_matmul(tt_tensor *out, const tt_tensor *a, const tt_tensor *b);

/* Scaled dot-product attention. q [..., Hq, Nq, Dh], k [..., Hkv, Nk, Dh],
   v [..., Hkv, Nk, Dv], Hq % Hkv == 0 (GQA: query head h uses kv head
   h / (Hq/Hkv)). mask: NULL or bool broadcastable to [..., Hq, Nq, Nk],
   true = may attend. causal: lower-right aligned. scale: NAN means the
   default 1/sqrt(Dh); any finite value is used as is (0 gives uniform
   weights over the visible keys, as PyTorch); TT_EARG when infinite. weights: NULL, or receives [..., Hq, Nq, Nk]. A query row with
   no visible key (all hidden by causal or mask) gives zeros; *empty_rows
   (may be NULL) gets their count. Otherwise the result is the formula's
   softmax(scale q k^T) @ v, NaN included (a NaN or +inf visible score, or
   visible scores all -inf, make the row NaN). */
tt_status tt_sdpa(tt_tensor *out, tt_tensor *weights, const tt_tensor *q, const tt_tensor *k,
                  const tt_tensor *v, const tt_tensor *mask, int causal, double scale,
                  int64_t *empty_rows);
/* tt_sdpa with all its options (zeros: none; scale NaN: 1/sqrt(Dh)).
   bias: float32 broadcast to the scores [..., Hq, Nq, Nk], added after the
   scale (its gradient is summed over the dims it broadcasts); alibi: minus
   Press et al.'s head slope times |i + Nk - Nq - j| (not with bias);
   window W >= 1: query i sees keys (i + Nk - Nq - W, i + Nk - Nq] (it
   implies causal), and sinks S >= 0 the first S keys besides; dropout p in
   [0, 1): each weight kept with probability 1 - p and scaled by 1/(1 - p),
   seeded by tt_manual_seed, the same draws in the backward. */
typedef struct tt_sdpa_opts {
    const tt_tensor *mask, *bias;
    int causal, alibi;
    double scale;
    int64_t window, sinks;
    double dropout;
} tt_sdpa_opts;
tt_status tt_sdpa_ex(tt_tensor *out, tt_tensor *weights, const tt_tensor *q, const tt_tensor *k,
                     const tt_tensor *v, const tt_sdpa_opts *opts, int64_t *empty_rows);

/* einops (pattern.c). rearrange: a seen through a pattern such as
   "b s (h d) -> b h s d" with sizes given by name (nsizes pairs); a view when
   the strides allow; dims named from the pattern ("h*d" for a group).
   einsum: an einops-style spec ("... i d, ... j d -> ... i j", or classic
   "bid,bjd->bij") contracted through tt_matmul; dims named from the output
   axes. Errors (TT_EARG/TT_ESHAPE) name the pattern, the shape and the axis. */
tt_status tt_rearrange(tt_tensor *out, const tt_tensor *a, const char *pattern,
                       int nsizes, const char *const *size_names, const int64_t *sizes);
tt_status tt_einsum(tt_tensor *out, const char *spec, const tt_tensor *const *list, int n);
/* einops' reduce and repeat (pattern.c). reduce: the axes of the left side
   missing on the right reduced with `reduction` ("sum", "mean", "max",
   "min", "any", "all"), as einops.reduce(x, "b h n d -> b n d", "mean");
   repeat: the axes of the right side missing on the left made new, of the
   lengths given by name, as einops.repeat(x, "h w -> h w c", c=3) (a view
   when no group merges a new axis). '...' on both sides or neither; output
   dims named from the pattern, as rearrange's. */
tt_status tt_reduce_pattern(tt_tensor *out, const tt_tensor *a, const char *pattern, const char *reduction,
                            int nsizes, const char *const *size_names, const int64_t *sizes);
tt_status tt_repeat(tt_tensor *out, const tt_tensor *a, const char *pattern,
                    int nsizes, const char *const *size_names, const int64_t *sizes);

/* ===== Gradients (ops/autograd.c) =====
   Reverse mode with PyTorch's semantics. While grad mode is on, an op with
   a float input that requires grad records a node (its grad_fn);
   tt_backward walks the graph from root once, accumulates into the .grad
   of every leaf that requires grad, then frees the graph's saved tensors (a
   second backward through it is TT_EARG). Bool results never require grad. */

/* flag != 0: t (a float32 leaf) requires grad; TT_EARG for bool. */
tt_status tt_requires_grad_(tt_tensor *t, int flag);
int tt_tensor_requires_grad(const tt_tensor *t);
/* grad NULL only for a one-element root; otherwise root's shape. */
tt_status tt_backward(const tt_tensor *root, const tt_tensor *grad);
/* The same; retain_graph != 0 keeps the saved tensors, so the graph can be
   run backward again (its gradients then add up, as in PyTorch). Without
   it a second backward() through a node that saved tensors is TT_EARG
   with PyTorch's message; TT_EARG too when a tensor saved for the backward
   was written in place since (its storage's version moved on). */
tt_status tt_backward_retain(const tt_tensor *root, const tt_tensor *grad, int retain_graph);
/* The accumulated gradient (borrowed), NULL until a backward reaches t. */
const tt_tensor *tt_grad(const tt_tensor *t);
/* Replaces t's gradient with g (a new reference taken), or clears it (NULL). */
tt_status tt_set_grad(tt_tensor *t, const tt_tensor *g);
/* The same data, outside the graph: a view that does not require grad. */
tt_status tt_detach(tt_tensor *out, const tt_tensor *a);
/* "MulBackward" for a recorded result, NULL for a leaf. */
const char *tt_grad_fn_name(const tt_tensor *t);
/* Grad mode (on at start); returns the previous state. */
int tt_set_grad_enabled(int on);
int tt_is_grad_enabled(void);

/* Autocast (torch.autocast): while set to TT_BFLOAT16 or TT_FLOAT16, an op
   called outside any other op casts its float inputs first, each cast a
   traced conversion of its own on the graph (its gradient comes back in
   the input's dtype): matmul, einsum and sdpa cast them to the autocast
   dtype and give results in it; softmax, log_softmax, cross_entropy, exp,
   log, pow, sum, mean and norm cast 16-bit inputs to float32 and give
   float32; the other ops are untouched (PyTorch's promotion). TT_FLOAT32
   turns it off (the start). Returns the previous setting; TT_EARG for
   another dtype. */
tt_status tt_set_autocast(tt_dtype dt, tt_dtype *was);
/* The autocast dtype now, TT_FLOAT32 when off. */
tt_dtype tt_autocast_dtype(void);
/* tt_to_dtype marked "autocast" in its trace row's args: the cast an op
   of autocast's lists makes, for a composite built in the binding
   (nn.Linear's bias, a norm's input). */
tt_status tt_autocast_to(tt_tensor *out, const tt_tensor *a, tt_dtype dt);
/* Bytes of the graphs' nodes and records now alive (tensor/graph.c); they
   count against the memory cap as tensors do, and the interpreter collects
   garbage when tensors and graphs together grow. */
int64_t tt_graph_memory_in_use(void);

/* ===== Optimizers (ops/optim.c) =====
   PyTorch's update rules, fused: one pass over each parameter's data, its
   gradient and its state. An optimizer holds its own references to the
   parameters (their storage and their gradient record), so it sees the
   gradients backward() leaves and outlives the scripts' handles. */

typedef enum tt_optim_kind { TT_OPTIM_SGD, TT_OPTIM_ADAMW } tt_optim_kind;

typedef struct tt_optim_opts {
    double lr, weight_decay;
    double momentum;            /* SGD: buf = momentum*buf + g (buf = g at the first step) */
    double beta1, beta2, eps;   /* AdamW */
} tt_optim_opts;

typedef struct tt_optim tt_optim;

/* An optimizer over params[0..n): each a float32 leaf that requires grad
   (TT_EARG naming the parameter otherwise, with a hint); the options are
   checked (lr >= 0, momentum >= 0, weight_decay >= 0, betas in [0, 1),
   eps >= 0). *out is freed with tt_optim_free. */
tt_status tt_optim_new(tt_optim **out, tt_optim_kind kind, int n, const tt_tensor *const *params,
                       const tt_optim_opts *o);
/* One update of every parameter that has a gradient (the others are
   skipped and keep their step count, as PyTorch), in place. Emits one
   event (TT_OP_SGD_STEP or TT_OP_ADAMW_STEP) for the whole step. SGD:
   d = g + wd*p; with momentum, buf = momentum*buf + d (buf = d the first
   time) and d = buf; p -= lr*d. AdamW (t counts this parameter's steps):
   p *= 1 - lr*wd; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
   p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps). */
tt_status tt_optim_step(tt_optim *o);
/* Every parameter's gradient cleared (set to none, PyTorch's default). */
void tt_optim_zero_grad(tt_optim *o);
/* The options in use; lr may be changed between steps (a schedule). */
tt_optim_opts *tt_optim_options(tt_optim *o);
int tt_optim_count(const tt_optim *o);
tt_optim_kind tt_optim_kind_of(const tt_optim *o);
/* Drops the state and the references; o may be NULL. */
void tt_optim_free(tt_optim *o);

/* The L2 norm of all the gradients of params[0..n) together (those without
   one skipped) into *total; when it passes max_norm, every gradient is
   replaced by itself times max_norm / (total + 1e-6) (PyTorch's
   clip_grad_norm_). A new tensor each, never scaled in place: two
   gradients may share storage. Emits one event. */
tt_status tt_clip_grad_norm(int n, tt_tensor *const *params, double max_norm, double *total);

/* ===== Files: safetensors (safetensors.c) =====
   The layout Python's safetensors and PyTorch read: dtypes F32, BF16, F16, I64
   and BOOL (little-endian).
   tt_save writes names[i] -> tensors[i] (any strides) and nmeta key/value
   string pairs (meta[2k], meta[2k+1]) as "__metadata__", atomically (the
   file appears whole or not at all). tt_load reads a file, checking every
   number of its header against the file's size first: a truncated, lying
   or oversized header is TT_EIO naming the file and what is wrong. */
tt_status tt_save(const char *path, int n, const char *const *names, const tt_tensor *const *tensors,
                  int nmeta, const char *const *meta);
typedef struct tt_loaded {
    int n;
    char **names;               /* malloc'd */
    tt_tensor *tensors;         /* new references */
    int nmeta;
    char **meta;                /* key, value, ... (malloc'd) */
} tt_loaded;
tt_status tt_load(tt_loaded *f, const char *path);
void tt_loaded_free(tt_loaded *f);

/* ===== Printing ===== */

/* PyTorch-like text of the tensor: values aligned, long dims summarised
   with "...", a header line with shape and dtype. Returns a malloc'd string
   (caller frees) or NULL when out of memory. */
char *tt_tensor_format(const tt_tensor *t);
/* Digits after the point in tt_tensor_format (and the values trace): 4 by
   default as PyTorch; clamped to 0..TT_PRINT_PRECISION_MAX. */
#define TT_PRINT_PRECISION_MAX 16
void tt_set_print_precision(int digits);
int tt_print_precision(void);

/* ===== Tracing ===== */

/* Numbers as the trace shows them: a scalar as a learner wrote it (8 ->
   "8.0", 0.125 -> "0.125", "-inf"); a FLOP count with its unit ("25.6 kFLOP",
   up to "TFLOP"). */
void tt_fmt_scalar(char *buf, size_t n, double v);
void tt_fmt_flops(char *buf, size_t n, double flops);
/* A quantity with a decimal prefix up to G and digits after the point, a
   whole number under 1000: "16.78 MB", "2.10 MFLOP", "640 B" (the summary's
   columns). */
void tt_fmt_si(char *buf, size_t n, double v, int digits, const char *unit);
/* Length (2..4) of the well-formed UTF-8 sequence of a non-ASCII character
   at s, within left bytes, that XML allows (no surrogates, U+FFFE, U+FFFF);
   0 when none starts there. ASCII (s[0] < 0x80) gives 1. */
int tt_utf8_len(const unsigned char *s, size_t left);

#define TT_TRACE_MAX_INPUTS 5

/* Which pass an event belongs to. FORWARD: an op ran. BACKWARD: one node of
   a backward pass (op is the forward op it differentiates; inputs[0] is the
   gradient arriving, named as the op's output; grads[] the gradients it
   gives, one per input that needs one, each with the dims and label of
   that input; output is grads[0]). STEP: the ops of one optimizer step,
   folded into one row by tt__group (tt_internal.h). */
typedef enum tt_phase { TT_PHASE_FORWARD, TT_PHASE_BACKWARD, TT_PHASE_STEP, TT_PHASE_COUNT } tt_phase;

/* "forward", "backward", "step" */
const char *tt_phase_name(tt_phase phase);

/* One argument of a traced op, as a value: key is the name the Lua call
   gives it (a size's key is its axis name), the value as the user wrote it
   (dims 1-based). show says how the trace's args text shows it (derived in
   core/trace/format.c): a printf format of the value, "=" first to put
   "key=" before it, a space first to join it to the previous one without
   ", "; a BOOL's is "word if true|word if false"; an INPUT's is its word;
   NULL: kept, not shown. */
typedef enum tt_argkind {
    TT_ARG_INT, TT_ARG_NUM,       /* show "%S": the number as the trace writes scalars (tt_fmt_scalar) */
    TT_ARG_BOOL, TT_ARG_STR,
    TT_ARG_DIMS,                  /* a list of 1-based dims (permute's), shown "1, 3, 2" */
    TT_ARG_SIZE,                  /* an einops axis size: the Lua call's sizes table */
    TT_ARG_INPUT                  /* a tensor option (sdpa's mask, bias): v.i is its index in inputs, from 1 */
} tt_argkind;

typedef struct tt_arg {
    const char *key;
    const char *show;
    tt_argkind kind;
    int n;                        /* DIMS: how many */
    union { int64_t i; double f; const char *s; int8_t dims[TT_MAX_DIMS]; } v;
} tt_arg;

#define TT_EVENT_MAX_ARGS 16

/* One traced op. Pointers are borrowed for the duration of the callback. */
typedef struct tt_event {
    tt_op op;
    tt_phase phase;
    const char *name, *infix;        /* tt_op_name(op), tt_op_infix(op): the trace layer reads these */
    int ninputs;                     /* shown inputs (cat/stack show up to 4) */
    int ninputs_total;
    const tt_tensor *inputs[TT_TRACE_MAX_INPUTS];
    const tt_tensor *output;         /* NULL for a step */
    int ngrads, ngrads_total;        /* backward: the gradients shown (up to 4) and given */
    const tt_tensor *grads[TT_TRACE_MAX_INPUTS];
    int view;                        /* output shares an input's storage */
    int has_scalar, scalar_first;    /* binary op with a Lua number */
    double scalar;
    int scalar_is_int;               /* the number was an integer: scalar_int exactly */
    int64_t scalar_int;
    int nargs;                       /* the op's arguments, in the order the Lua call takes them */
    tt_arg argv[TT_EVENT_MAX_ARGS];
    char args[64];                   /* argv as text, 1-based: "dim=4" (derived: tt_event_args_text) */
    const char *pattern;             /* einsum, rearrange, einrepeat, reduce: the whole pattern (args may cut it) */
    char note[160];                  /* a warning for this event ("2 rows fully masked") */
    double flops;
    double bytes;                    /* read + written */
    int64_t ns;
} tt_event;

typedef void (*tt_trace_fn)(const tt_event *ev, void *ud);

/* Subscribers receive every event of an outermost op, in the order they
   subscribed (the per-kind stats below come first, always). wants_text:
   fn reads the args and note, which ops write only while a subscriber
   wants them (the interpreter's trace subscribes only while it shows, not
   under -q nor while tt.trace.off() pauses it). Subscribing fn with ud
   again changes nothing; TT_EARG when TT_TRACE_MAX_SUBSCRIBERS are in.
   Neither call may be made from inside a callback. */
#define TT_TRACE_MAX_SUBSCRIBERS 8
tt_status tt_trace_subscribe(tt_trace_fn fn, void *ud, int wants_text);
/* Removes fn with ud; nothing when it is not subscribed. */
void tt_trace_unsubscribe(tt_trace_fn fn, void *ud);
/* 1 while a tensor op runs (read by the --timeout watchdog thread). */
int tt_op_running(void);
/* Monotonic clock in nanoseconds. */
int64_t tt_now_ns(void);

/* Per phase and op kind totals since the last reset (always collected;
   cheap): a backward node counts under its forward op's kind. */
typedef struct tt_op_stats {
    int64_t calls;
    double flops, bytes;
    int64_t ns;
    int64_t max_bytes;              /* largest result of this kind */
    char max_shape[96];             /* its shape, "[2,8,5,5]" */
} tt_op_stats;
const tt_op_stats *tt_trace_stats(tt_phase phase, tt_op op);
void tt_trace_stats_reset(void);

/* JSON object of an event (one line, no newline), keys as in DESIGN.md;
   file may be NULL. Strings are valid UTF-8 (bad bytes become U+FFFD) and
   cut with "..." past 256 bytes, so 16 KiB always holds the object; in a
   smaller buf it is {"seq","op","truncated":true}. Returns buf. */
char *tt_event_json(const tt_event *ev, long seq, const char *file, int line, char *buf, size_t n);

/* The text row of an event (no source line), e.g.
   "matmul  [2,5,64] @ [2,64,5] -> [2,5,5]   3.2 kFLOP". Returns buf. */
char *tt_event_format(const tt_event *ev, char *buf, size_t n);
/* ev's argv as the trace's args text: "dim=4, keepdim"; cut at n - 1
   bytes ("..." ends a cut einops or einsum pattern). The trace fills
   ev->args with it before the subscribers that read text see the event. */
char *tt_event_args_text(const tt_event *ev, char *buf, size_t n);

/* ===== Threads ===== */

void tt_set_num_threads(int n);     /* n <= 0: all cores */
int tt_get_num_threads(void);
/* The kernel path the ops run on: "avx512_bf16" (avx512 with AVX512_BF16's
   bfloat16 micro-kernel), "avx512", "avx2" or "scalar" (the portable C),
   chosen once from the CPU (or forced by a test). */
const char *tt_kernel_path(void);
/* Runs the ops on path ("avx512_bf16", "avx512", "avx2", "scalar"; NULL or "auto": the
   CPU's choice again) from now on; 0 when this CPU or build cannot. */
int tt_set_kernel_path(const char *path);
/* Joins the pool's workers and frees their scratch (at exit); the pool
   starts again on the next parallel op. */
void tt_threads_stop(void);

#endif
