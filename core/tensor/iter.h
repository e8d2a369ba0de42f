/*
** iter.h — THE strided iterator of the core: walks a shape in row-major
** order with up to three operands (0 = the output, then the inputs), each
** with its own element strides, in rows, over threads. Copy, elementwise,
** reductions, tt_get and the figures' float conversion all walk through it.
*/
#ifndef TT_ITER_H
#define TT_ITER_H

#include "tt.h"

#define TT__ITER_OPS 3
#define TT__PAR_MIN 65536       /* elements below which a walk stays on one thread */
#define TT__PAR_GRAIN 16384     /* elements per thread task at least */

/* Size-1 dims are dropped and dims that are contiguous for every operand
   are merged, so a contiguous walk is one long row: the fast path. */
typedef struct tt__iter {
    int ndim;                           /* >= 1; dim 0 is the innermost */
    int nop;
    int64_t numel;
    int64_t shape[TT_MAX_DIMS];
    int64_t stride[TT__ITER_OPS][TT_MAX_DIMS];   /* in elements */
    char *base[TT__ITER_OPS];           /* operand k's element 0 */
    size_t es[TT__ITER_OPS];            /* operand k's element size */
} tt__iter;

/* row(ctx, n, p, inc): n elements; operand k starts at p[k] and steps by
   inc[k] elements. */
typedef void (*tt__row_fn)(void *ctx, int64_t n, char *const *p, const int64_t *inc);

/* Operand k: base[k] (its element 0), element size es[k], strides
   stride[k][0..ndim) along shape (outermost first, 0 where it broadcasts).
   An operand without data (a unary op's second input) has base NULL and
   stride 0: fn then gets some address it must not use. */
void tt__iter_init(tt__iter *it, int ndim, const int64_t *shape, int nop,
                   const int64_t (*stride)[TT_MAX_DIMS], void *const *base, const size_t *es);
/* The operands of a tensor walk: dst and, when src != NULL, src broadcast
   to dst's shape. */
void tt__iter_tensors(tt__iter *it, const tt_tensor *dst, const tt_tensor *src);
/* Elements [begin, end) of the walk, on this thread. */
void tt__iter_range(const tt__iter *it, int64_t begin, int64_t end, tt__row_fn fn, void *ctx);
/* The whole walk, split across threads when numel * cost (the work of one
   element) is large enough; fn must allow that (disjoint outputs). */
void tt__iter_run(const tt__iter *it, int64_t cost, tt__row_fn fn, void *ctx);
/* The whole walk as an elementwise op: where an input runs along another
   dim than the output (a transposed view), in tiles gathered per input;
   else as tt__iter_run. fn sees the same rows either way. */
void tt__iter_run_ew(const tt__iter *it, tt__row_fn fn, void *ctx);

/* Element offset of the flat row-major index `flat` in a strided shape. */
int64_t tt__offset_of(int ndim, const int64_t *shape, const int64_t *stride, int64_t flat);

/* Can dims [0, n) (outermost first) be walked with one stride? Size-1 dims
   do not count. On success *s gets that stride (0 if nothing moves): the
   walk's dim merging on one operand (matmul's and sdpa's batch dims). */
int tt__iter_flat(int n, const int64_t *shape, const int64_t *stride, int64_t *s);

#endif
