/*
** tt_internal.h — helpers shared by the core's files (tt__ prefix).
** Not part of the public API.
*/
#ifndef TT_INTERNAL_H
#define TT_INTERNAL_H

#include <string.h>

#include "tt.h"

/* tt__err, storage and the memory cap: core/base/base.h (through tt.h). */
uint64_t tt__next_id(void);

/* A fresh contiguous result shaped like shape[0..ndim) (names copied when
   names != NULL). `op` names the operation for the error message. */
tt_status tt__alloc(tt_tensor *out, const char *op, tt_dtype dt, int ndim,
                    const int64_t *shape, const char *const *names);
/* Sets t's dim names from names[0..t->ndim) (NULL: none), dropping a name
   that would appear on two dims from both: the names invariant. */
void tt__set_names(tt_tensor *t, const char *const *names);
/* Header copy sharing storage (new reference, fresh id, no label). */
void tt__view_of(tt_tensor *out, const tt_tensor *a);
/* Row-major contiguous strides for shape. */
void tt__contig_strides(int ndim, const int64_t *shape, int64_t *stride);
/* Checked product of sizes: TT_ENOMEM on overflow of int64. */
tt_status tt__numel_checked(const char *op, int ndim, const int64_t *shape, int64_t *n);
/* Copies src into dst (same shape; dst contiguous or not; same dtype);
   tensor/iter.c, as is tt__broadcast_strides. */
void tt__copy(const tt_tensor *dst, const tt_tensor *src);

/* 16-bit inputs (ops/elementwise.c): an op on bfloat16 or float16 computes in float32
   and rounds its result once, as PyTorch on the CPU. tt__widen: when *a is
   16-bit, *tmp becomes a contiguous float32 copy and *a points to it (else
   nothing; *a may be NULL). tt__round_to: *t (float32) replaced by its
   rounding to dt when dt is 16-bit (else nothing); on failure *t is
   released. Both untraced: part of the op that calls them. */
static inline int tt__is_half(tt_dtype dt) { return dt == TT_BFLOAT16 || dt == TT_FLOAT16; }
tt_status tt__widen(tt_tensor *tmp, const char *op, const tt_tensor **a);
tt_status tt__round_to(tt_tensor *t, const char *op, tt_dtype dt);
/* The end of an impl's 16-bit way: fa released, then res rounded to half
   (see its definition in ops/elementwise.c for the pattern). */
tt_status tt__half_done(tt_status st, tt_tensor *fa, tt_tensor *res, const char *name, tt_dtype half);

/* Small helpers the op front-ends share (ops/elementwise.c, reduce.c,
   softmax.c, index.c). */
static inline void tt__clear(tt_tensor *t) { if (t) memset(t, 0, sizeof *t); }
static inline double tt__nbytes(const tt_tensor *t)
{
    return (double)tt_numel(t) * (double)tt_dtype_size(t->dtype);
}
static inline void *tt__data_of(const tt_tensor *t)
{
    return t->dtype == TT_BOOL ? (void *)tt_data_bool(t)
         : t->dtype == TT_INT64 ? (void *)tt_data_i64(t) : (void *)tt_data_f32(t);
}

/* Autocast (ops/autocast.c), as torch.autocast: an op of autocast's
   lists calls tt__autocast_enter first; when it returns 1 (autocast on, no
   op running, and something to do), the op runs again on ac.in[] (its
   inputs cast, each a traced conversion of its own, or as they were) and
   returns tt__autocast_leave(&ac, st). The inner run sees autocast paused,
   so an op built on other ops (sdpa's 16-bit path) casts nothing twice.
   LOW (matmul, einsum, sdpa): every float input not in the autocast dtype
   is cast to it, and the op always reruns paused. FP32 (softmax, losses,
   exp, log, pow, sum, mean, norm): 16-bit inputs are cast to float32; 0
   when none is. A failed cast leaves ac.st set (nothing to release). */
#define TT__AC_MAX 16
typedef enum tt__ackind { TT__AC_LOW, TT__AC_FP32 } tt__ackind;
typedef struct tt__autocast {
    tt_dtype paused;            /* the setting tt__autocast_leave restores */
    tt_status st;
    int n;
    const tt_tensor *in[TT__AC_MAX];
    tt_tensor cast[TT__AC_MAX];
} tt__autocast;
int tt__autocast_enter(tt__autocast *ac, tt__ackind kind, int n, const tt_tensor *const *in);
tt_status tt__autocast_leave(tt__autocast *ac, tt_status st);

/* Broadcasts two shapes (NumPy rules) into out_shape/out_names; unifies
   names. TT_ESHAPE naming both shapes on failure. */
tt_status tt__broadcast(const char *op, const tt_tensor *a, const tt_tensor *b,
                        int *ndim, int64_t *shape, const char **names);
/* Strides of a viewed as shape (ndim >= a->ndim, right aligned, 0 for
   broadcast dims). */
void tt__broadcast_strides(const tt_tensor *a, int ndim, const int64_t *shape, int64_t *stride);

/* Dim range check: TT_EARG "op: dim N out of range for [shape]". */
tt_status tt__check_dim(const char *op, const tt_tensor *a, int d, int allow_end);

/* Random numbers (tensor.c): n uniforms in [0,1) or normals into p, from
   the generator tt_manual_seed seeds. */
void tt__rand_uniform(float *p, int64_t n);
/* n uniforms k / 2^bits, k in [0, 2^bits) (bits <= 24): exact in a dtype
   of that many significant bits, so rounding to it keeps them below 1 */
void tt__rand_uniform_bits(float *p, int64_t n, int bits);
void tt__rand_normal(float *p, int64_t n);
/* n integers lo + [0, range) (range 0: all of 2^64), unbiased. */
void tt__rand_int(int64_t *p, int64_t n, int64_t lo, uint64_t range);

/* A double to int64 truncating toward zero; NaN and values outside
   int64's range give INT64_MIN (as PyTorch on x86), never C's undefined
   cast. */
static inline int64_t tt__f64_to_i64(double v)
{
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}

/* A number as each dtype takes it, an integer straight from its 64 bits
   (never through double, which rounds above 2^53). */
static inline int64_t tt__num_i64(tt_number v) { return v.is_int ? v.i : tt__f64_to_i64(v.f); }
static inline float tt__num_f32(tt_number v) { return v.is_int ? (float)v.i : (float)v.f; }
static inline uint8_t tt__num_bool(tt_number v) { return v.is_int ? v.i != 0 : v.f != 0.0; }

/* ===== Untraced views (tensor/view.c) =====
   Each checks its arguments (`op` names the op in the message), fills *out
   (a view, or a copy where said) and emits nothing: core/ops/view.c wraps
   each public view op around one of these and traces it. */
tt_status tt__view(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape, int may_copy);
tt_status tt__transpose(tt_tensor *out, const tt_tensor *a, int d1, int d2, const char *op);
tt_status tt__mT(tt_tensor *out, const tt_tensor *a);
tt_status tt__permute(tt_tensor *out, const tt_tensor *a, const int *perm);
tt_status tt__narrow(tt_tensor *out, const tt_tensor *a, int d, int64_t start, int64_t len, const char *op);
tt_status tt__select(tt_tensor *out, const tt_tensor *a, int d, int64_t i);
tt_status tt__expand(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape);
tt_status tt__unsqueeze(tt_tensor *out, const tt_tensor *a, int d);
tt_status tt__squeeze(tt_tensor *out, const tt_tensor *a, int d);
tt_status tt__named(tt_tensor *out, const tt_tensor *a, const char *const *names);
/* A copy of a (tt__clone), or a itself when already contiguous. */
tt_status tt__contiguous(tt_tensor *out, const tt_tensor *a, const char *op);
tt_status tt__clone(tt_tensor *out, const tt_tensor *a, const char *op);
/* How many pieces of at most `piece` along d (chunk, split); TT_EARG past max. */
tt_status tt__pieces(const char *op, const tt_tensor *a, int d, int64_t piece, int max, int64_t *n);

/* ===== Tracing (trace.c) =====
   Every public op wraps its work in tt__op_enter/tt__op_leave. Nested calls
   (an op built from other ops) emit only the outermost event. */
typedef struct tt__opscope {
    int64_t t0;
    int outer;
} tt__opscope;

tt__opscope tt__op_enter(void);
/* Emits ev (op, output, inputs, ...) when st == TT_OK and this is the outer
   scope; fills ev->ns. Returns st. */
tt_status tt__op_leave(tt__opscope sc, tt_status st, tt_event *ev);

/* A group folds the ops a caller runs into one row: a backward node (the
   engine, ops/autograd.c). Between tt__group_enter and tt__group_leave the
   ops are nested scopes, so they emit nothing; the FLOPs and bytes of the
   ops run directly inside add up in the group (an op's own inner ops are in
   its count already). tt__group_leave adds them to ev's (preset ev->flops
   for work done by raw kernels), sets ev->ns and emits ev when st == TT_OK
   and no other group encloses this one (then the totals go to that group
   instead). An optimizer's step (ops/optim.c) runs raw loops, not ops: it
   is one op scope whose event has phase TT_PHASE_STEP and no output. */
typedef struct tt__group {
    struct tt__group *outer;
    int level;                  /* the scope depth of the ops run directly inside */
    double flops, bytes;
    int64_t t0;
} tt__group;

void tt__group_enter(tt__group *g);
tt_status tt__group_leave(tt__group *g, tt_status st, tt_event *ev);
/* Adds FLOPs done by raw kernels to the innermost group (none: nothing). */
void tt__group_add_flops(double flops);
/* ===== The autograd graph =====
   Records and nodes are refcounted and freed here (tensor/graph.c, so
   tt_tensor_release can drop them); recording and the engine are
   ops/autograd.c, the backward functions ops/backward.c. */
typedef struct tt__node tt__node;

/* What a tensor that requires grad points to (tt_tensor.ag). */
typedef struct tt_autograd {
    int refs;
    int requires_grad;
    int in_node;                /* the record of an op's result, inside its node's block: freed with it */
    tt_tensor *grad;            /* NULL until a backward reaches it (or tt_set_grad): out of
                                   line, as an op's result (most records) never has one */
    tt__node *fn;               /* the op that made it; NULL for a leaf */
} tt_autograd;

/* An op's small arguments, as its backward needs them. */
typedef struct tt__agargs {
    double s;                   /* the scalar of tt_binary_scalar */
    int has_s, first;           /* scalar_first */
    int d, d2, keepdim;         /* dims (reductions: d < 0 is all) */
    int64_t start, len;         /* narrow, select (start); tril, triu: k in start;
                                   repeat_interleave: repeats in len */
    int perm[TT_MAX_DIMS];
    int causal, weights;        /* sdpa: causal; the node of its weights output */
    struct { int64_t window, sinks; int alibi; double dropout; uint64_t seed; } sdpa;   /* sdpa's options */
    int64_t blocks[TT_MAX_DIMS]; /* rearrange: the input as its d blocks, permuted by perm */
    const char *spec;           /* einsum: its spec (interned) */
    int interleaved, inverse;   /* rope: the pair layout and direction (base in s) */
} tt__agargs;

#define TT__AG_IN 3             /* inputs of an op recorded by tt__record (masked_fill's mask included) */
enum { TT__SAVE_A = 1, TT__SAVE_B = 2, TT__SAVE_OUT = 4, TT__SAVE_C = 8,
       TT__SAVE_LIST = 16,      /* every input, in the node's operands[] */
       TT__SAVE_EXTRA = 32 };   /* the extra slots, which the op's front-end fills */
/* The slots of a node's saved[]: a, b, out, c (those the op's row asks
   for), then the extra ones an op's front-end fills itself (max and min:
   the indices; sdpa: the log-sum-exp, the mask and the bias). A node has
   the slots up to the last its row asks for (n->nsaved; TT__SAVE_EXTRA:
   all of them), no more: a node is made per recorded op, and a view's
   node saves nothing. */
enum { TT__SLOT_A, TT__SLOT_B, TT__SLOT_OUT, TT__SLOT_C, TT__SLOT_EXTRA };
#define TT__AG_SAVED 7          /* TT__SLOT_EXTRA and the two after it */

/* A node's input: its node, or its leaf's record to accumulate into (both
   NULL: it needs no gradient), and its shape. shape and names point into
   the node's own block (ndim entries each). */
typedef struct tt__edge {
    tt__node *next;
    tt_autograd *leaf;
    int ndim;
    tt_dtype dtype;             /* the input's: its gradient is given in it */
    const int64_t *shape;
    const char *const *names;   /* the input's dims and label (interned), */
    const char *label;          /* for the backward's trace row */
} tt__edge;

/* One block (tensor/graph.c): the node, its edges, its saved slots, then
   the shapes and names the edges and out_names point to. */
struct tt__node {
    int refs, freed;
    tt_op op;
    int nin, nsaved;
    size_t bytes;               /* the block's size, as counted in tt_graph_memory_in_use */
    tt_tensor *saved;           /* nsaved slots; those not saved are empty */
    int64_t *saved_version;     /* nsaved: each slot's storage version when saved */
    unsigned filled;            /* bit i: saved[i] may hold a tensor (the others are never read
                                   when the node is freed: cold lines of a node made a cycle ago) */
    tt_autograd result;         /* the record of the op's result (one malloc a recorded op) */
    tt__agargs args;
    const char *const *out_names;   /* the output's dims: its gradient's in the trace */
    /* the engine's scratch */
    tt_tensor *acc;             /* the gradient arriving, in the engine's array during a backward */
    int pending;
    unsigned mark;
    tt__node *link;
    tt_tensor *operands;        /* TT__SAVE_LIST: the nin inputs (einsum's backward reads them all),
                                   then their nin storage versions (int64_t) in the same block */
    tt__edge in[];              /* nin of them: a list op (cat, stack) has any number */
};

/* Gradients of the inputs from g (the gradient of the output): gin[i] for
   each input with an edge, shaped as the input (gin has n->nin entries). */
typedef tt_status (*tt__backward_fn)(const tt__node *n, const tt_tensor *g, tt_tensor *gin);

/* A record (refs 1, the rest zero), counted as graph memory; NULL and
   tt__err on TT_ENOMEM or past the memory cap. */
tt_autograd *tt__ag_new(void);
/* r->grad, made empty (graph memory) when r has none; NULL and tt__err as
   tt__ag_new. */
tt_tensor *tt__ag_grad_slot(tt_autograd *r);
/* A node for out = op(in[0..nin)) with nsaved empty slots: the edges'
   shapes, names and labels and out's names copied, the rest zero; its
   result record (refs 1, requires grad) holds the node's one reference.
   NULL and tt__err as tt__ag_new. */
tt__node *tt__node_new(tt_op op, const tt_tensor *const *in, int nin, int nsaved, const tt_tensor *out);
void tt__ag_release(tt_autograd *r);
void tt__node_release(tt__node *n);
/* Frees the graph blocks kept for reuse (tt_release_caches, at exit). */
void tt__graph_drop_cache(void);
/* Drops n's saved tensors and marks it freed (after a backward). */
void tt__node_free_saved(tt__node *n);
/* Notes the storage version of every tensor n saved, for backward's check
   (tt__record does; a front-end that fills saved[4] or [5] itself calls it
   again after). */
void tt__node_note_versions(tt__node *n);

extern int tt__grad_enabled;

/* Whether an op in scope sc with inputs a, b must record: the one check a
   tensor that never requires grad pays. */
static inline int tt__grad_wanted(tt__opscope sc, const tt_tensor *a, const tt_tensor *b)
{
    return ((a && a->ag) || (b && b->ag)) && sc.outer && tt__grad_enabled;
}

/* Records out = op(a, b, c) (a node with its edges, saved tensors and
   args); releases out and fails on TT_ENOMEM. (tt_max_dim then saves its
   indices in saved[4].) */
tt_status tt__record(tt_tensor *out, tt_op op, const tt_tensor *a, const tt_tensor *b,
                     const tt_tensor *c, const tt__agargs *args);

/* For an op of a list (cat, stack, einsum): records it, one edge per
   tensor, when any tensor of the list requires grad. */
tt_status tt__record_list(tt__opscope sc, tt_tensor *out, tt_op op, const tt_tensor *const *list, int n,
                          const tt__agargs *args);

/* The backward of each op that has one (ops/backward.c), named in its row. */
tt_status tt__bw_add(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_rope(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_dropout(const tt__node *, const tt_tensor *, tt_tensor *);
/* rope turning the other way (inverse): rope's backward */
tt_status tt__rope(tt_tensor *out, const tt_tensor *x, const tt_tensor *positions, double base, int interleaved,
                   int inverse);
tt_status tt__bw_tri(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_cat(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_max(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_var(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_repeat_interleave(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_sub(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_mul(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_div(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_pow(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_maximum(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_neg(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_exp(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_log(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_sqrt(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_abs(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_sum(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_matmul(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_softmax(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_log_softmax(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_cross_entropy(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_relu(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_gelu(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_tanh(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_sigmoid(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_sin(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_where(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_norm(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_reduce(const tt__node *, const tt_tensor *, tt_tensor *);
/* reduce's and repeat's gradients from the node's spec (pattern.c). */
tt_status tt__reduce_grad(tt_tensor *out, const char *spec, tt_op red, const tt_tensor *a, const tt_tensor *y,
                          const tt_tensor *g);
tt_status tt__repeat_grad(tt_tensor *out, const char *spec, const tt_tensor *g);
tt_status tt__bw_repeat(const tt__node *, const tt_tensor *, tt_tensor *);
/* A backward formula fused into one elementwise kernel (core/ops/elementwise.c):
   out = the binary kernel code (TK_EW_*_BWD) on float32 a and b broadcast
   together, allocated as `name`; no record, no event. */
tt_status tt__ew_fused(tt_tensor *out, const char *name, int code, const tt_tensor *a,
                       const tt_tensor *b);
tt_status tt__bw_masked_fill(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_reshape(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_transpose(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_permute(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_unsqueeze(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_narrow(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_sdpa(const tt__node *, const tt_tensor *, tt_tensor *);   /* ops/sdpa.c */
tt_status tt__bw_rearrange(const tt__node *, const tt_tensor *, tt_tensor *);
tt_status tt__bw_einsum(const tt__node *, const tt_tensor *, tt_tensor *);

/* The gradient of operand i of tt_einsum(spec, ops[0..n)) from g, the
   gradient of its result (ops/pattern.c): an einsum of g with the other
   operands, broadcast over the axes only operand i has, written onto its
   diagonal when an axis repeats in it, summed over the dims it broadcast. */
tt_status tt__einsum_grad(tt_tensor *out, const char *spec, const tt_tensor *ops, int n,
                          const tt_tensor *g, int i);

tt_status tt__bw_index(const tt__node *, const tt_tensor *, tt_tensor *);

/* index_select's and gather's backward (ops/index.c): dst[mapped i] += g[i] for
   every element i of g, dst float32 shaped as the forward's input, the
   index checked by the forward; repeated indices accumulate, in order. */
void tt__index_add(tt_tensor *dst, int d, const tt_tensor *index, int gather, const tt_tensor *g);

/* ===== The op table (ops/optable.c) =====
   One row per tt_op: what the shared front-ends, the trace and the binding
   know of an op. */
typedef enum tt__operands {
    TT__ANY,            /* not elementwise nor a reduction: its own function checks */
    TT__FLOAT,          /* numbers: float32 or int64 (int64 with float32, or with a Lua
                           number that is not an integer, is promoted to float32) */
    TT__BOOL,           /* bool operands */
    TT__SAME,           /* numbers as TT__FLOAT, or both bool */
} tt__operands;

typedef struct tt__opdef {
    const char *name;           /* as the trace and the messages show it */
    const char *infix;          /* shown between a trace row's inputs, or NULL */
    tt_opkind kind;
    tt__operands dtypes;
    tt_dtype result;            /* elementwise and reductions: the result's dtype */
    double flops;               /* per result element (reductions: per input element) */
    int kernel;                 /* TK_EW_* (elementwise) or TK_RED_* (reductions) */
    int index;                  /* a reduction giving the 1-based index of the extremum */
    int keeps_int;              /* int64 operands (all of them) give an int64 result, or
                                   bool for a comparison, as PyTorch; else int64 is promoted
                                   to float32 (div, exp, log, sqrt, mean) */
    tt__backward_fn backward;   /* NULL: no gradient yet (backward() says so) */
    int saves;                  /* TT__SAVE_*: what the backward reads */
} tt__opdef;

/* op's row; NULL for a value out of range. */
const tt__opdef *tt__op_def(tt_op op);
/* op's row when it is of kind k; TT_EARG naming fn ("binary", "reduce") otherwise. */
tt_status tt__op_kind_def(const char *fn, tt_op op, tt_opkind k, const char *what, const tt__opdef **def);

/* Fills an event (ops/optable.c): every field cleared (args and note to
   ""), op with its name and infix, output, up to 3 inputs, bytes read and
   written. */
void tt__event_init(tt_event *ev, tt_op op, const tt_tensor *out,
                    const tt_tensor *a, const tt_tensor *b, const tt_tensor *c);
/* The event's number (has_scalar), an integer kept exact for the trace. */
void tt__event_scalar(tt_event *ev, tt_number s);
/* The op's arguments, appended to ev->argv in the order the Lua call takes
   them (show: see tt_arg in tt.h); past TT_EVENT_MAX_ARGS they are dropped.
   dims are 0-based here and kept 1-based. */
void tt__arg_int(tt_event *ev, const char *key, const char *show, int64_t v);
void tt__arg_num(tt_event *ev, const char *key, const char *show, double v);
void tt__arg_bool(tt_event *ev, const char *key, const char *show, int v);
void tt__arg_str(tt_event *ev, const char *key, const char *show, const char *v);
void tt__arg_dims(tt_event *ev, const char *key, const int *dims, int n);
void tt__arg_size(tt_event *ev, const char *axis, int64_t v);
void tt__arg_input(tt_event *ev, const char *key, const char *show, int input);

/* How many subscribers read the text fields (args, note) of events. Ops
   write them only when one does (tt__tracing): for a tiny view the
   snprintf costs more than the view. */
extern int tt__trace_text_readers;

static inline int tt__tracing(void) { return tt__trace_text_readers != 0; }

#endif
