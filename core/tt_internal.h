/*
** tt_internal.h — helpers shared by the core's files (tt__ prefix).
** Not part of the public API.
*/
#ifndef TT_INTERNAL_H
#define TT_INTERNAL_H

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

/* Broadcasts two shapes (NumPy rules) into out_shape/out_names; unifies
   names. TT_ESHAPE naming both shapes on failure. */
tt_status tt__broadcast(const char *op, const tt_tensor *a, const tt_tensor *b,
                        int *ndim, int64_t *shape, const char **names);
/* Strides of a viewed as shape (ndim >= a->ndim, right aligned, 0 for
   broadcast dims). */
void tt__broadcast_strides(const tt_tensor *a, int ndim, const int64_t *shape, int64_t *stride);

/* Dim range check: TT_EARG "op: dim N out of range for [shape]". */
tt_status tt__check_dim(const char *op, const tt_tensor *a, int d, int allow_end);
tt_status tt__check_dtype(const char *op, const tt_tensor *a, tt_dtype want);

/* Random numbers (tensor.c): n uniforms in [0,1) or normals into p, from
   the generator tt_manual_seed seeds. */
void tt__rand_uniform(float *p, int64_t n);
void tt__rand_normal(float *p, int64_t n);

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
/* "2, 1, 3": the first k entries of perm, 1-based. */
void tt__perm_args(char *buf, size_t n, const int *perm, int k);

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
/* Small helper to fill an event: every field cleared (args and note to
   ""), op, output, up to 3 inputs, bytes read and written. */
void tt__event_init(tt_event *ev, tt_op op, const tt_tensor *out,
                    const tt_tensor *a, const tt_tensor *b, const tt_tensor *c);

/* How many subscribers read the text fields (args, note) of events. Ops
   write them only when one does (tt__tracing): for a tiny view the
   snprintf costs more than the view. */
extern int tt__trace_text_readers;

static inline int tt__tracing(void) { return tt__trace_text_readers != 0; }

#endif
