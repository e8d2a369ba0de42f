/*
** iter.c — the strided iterator (iter.h): dim merging, an odometer over
** rows, thread ranges, and tiles for inputs transposed against the output.
*/
#include <string.h>

#include "kernel/kernels.h"
#include "tensor/iter.h"
#include "tt_internal.h"

/* The base of an operand without data (NULL, with stride 0 throughout): a
   real address, so the walk steps every operand alike. */
static char no_data;

void tt__iter_init(tt__iter *it, int ndim, const int64_t *shape, int nop,
                   const int64_t (*stride)[TT_MAX_DIMS], void *const *base, const size_t *es)
{
    it->ndim = 0;
    it->nop = nop;
    it->numel = 1;
    for (int k = 0; k < nop; k++) {
        it->base[k] = base[k] ? base[k] : &no_data;
        it->es[k] = es[k];
    }
    for (int d = ndim - 1; d >= 0; d--) {
        it->numel *= shape[d];
        if (shape[d] == 1) continue;
        int merge = it->ndim > 0;
        for (int k = 0; k < nop && merge; k++) {
            int j = it->ndim - 1;
            merge = stride[k][d] == it->stride[k][j] * it->shape[j];
        }
        if (merge) {
            it->shape[it->ndim - 1] *= shape[d];
            continue;
        }
        it->shape[it->ndim] = shape[d];
        for (int k = 0; k < nop; k++) it->stride[k][it->ndim] = stride[k][d];
        it->ndim++;
    }
    if (it->ndim == 0) {
        it->ndim = 1;
        it->shape[0] = 1;
        for (int k = 0; k < nop; k++) it->stride[k][0] = 0;
    }
}

void tt__broadcast_strides(const tt_tensor *a, int ndim, const int64_t *shape, int64_t *stride)
{
    int lead = ndim - a->ndim;
    for (int i = 0; i < ndim; i++) {
        int ia = i - lead;
        stride[i] = (ia < 0 || a->shape[ia] != shape[i]) ? 0 : a->stride[ia];
    }
}

static char *elem0(const tt_tensor *t)
{
    return (char *)t->storage->data + t->offset * (int64_t)tt_dtype_size(t->dtype);
}

void tt__iter_tensors(tt__iter *it, const tt_tensor *dst, const tt_tensor *src)
{
    int64_t st[TT__ITER_OPS][TT_MAX_DIMS] = {{0}};
    void *base[TT__ITER_OPS] = { elem0(dst), NULL, NULL };
    size_t es[TT__ITER_OPS] = { tt_dtype_size(dst->dtype), 0, 0 };
    int nd = dst->ndim;
    memcpy(st[0], dst->stride, (size_t)nd * sizeof(int64_t));
    if (src) {
        tt__broadcast_strides(src, nd, dst->shape, st[1]);
        base[1] = elem0(src);
        es[1] = tt_dtype_size(src->dtype);
    }
    tt__iter_init(it, nd, dst->shape, src ? 2 : 1, (const int64_t (*)[TT_MAX_DIMS])st, base, es);
}

/* Each row moves every operand's pointer once, straight to the next row's
   first element, by a step worked out per range for each number of
   odometer carries; all TT__ITER_OPS slots step (an unused one by 0) so
   the loop unrolls. Kept so on purpose (perf, a broadcast add over rows
   of 256): offsets in arrays updated by several loops had GCC mix scalar
   stores with vector loads of them, a stall on every row (14% of the op's
   time in here; now 3.6%, 5.7% at e2c9141). */
void tt__iter_range(const tt__iter *it, int64_t begin, int64_t end, tt__row_fn fn, void *ctx)
{
    if (begin >= end) return;
    const int nd = it->ndim;
    int64_t shape[TT_MAX_DIMS], idx[TT_MAX_DIMS];
    int64_t inc[TT__ITER_OPS] = {0}, step[TT__ITER_OPS] = {0};
    int64_t carry[TT_MAX_DIMS][TT__ITER_OPS] = {{0}};  /* bytes added when dims 0..c-1 wrap */
    char *p[TT__ITER_OPS] = { &no_data, &no_data, &no_data };
    int64_t rem = begin;
    for (int d = 0; d < nd; d++) {
        shape[d] = it->shape[d];
        idx[d] = rem % shape[d];
        rem /= shape[d];
    }
    for (int k = 0; k < it->nop; k++) {
        int64_t es = (int64_t)it->es[k], off = 0;
        for (int d = 0; d < nd; d++) off += idx[d] * it->stride[k][d] * es;
        p[k] = it->base[k] + off;
        inc[k] = it->stride[k][0];
        step[k] = inc[k] * es;
        for (int c = 1; c < nd; c++)
            carry[c][k] = carry[c - 1][k] + (it->stride[k][c] - shape[c - 1] * it->stride[k][c - 1]) * es;
    }
    for (int64_t pos = begin;;) {
        int64_t n = shape[0] - idx[0];
        if (n > end - pos) n = end - pos;
        fn(ctx, n, p, inc);
        pos += n;
        if (pos == end) return;     /* a step past the last row could leave the operand */
        idx[0] += n;
        int c = 0;                                      /* the odometer */
        for (; c < nd - 1 && idx[c] == shape[c]; c++) {
            idx[c] = 0;
            idx[c + 1]++;
        }
        for (int k = 0; k < TT__ITER_OPS; k++) p[k] += n * step[k] + carry[c][k];
    }
}

typedef struct par_job {
    const tt__iter *it;
    tt__row_fn fn;
    void *ctx;
} par_job;

static void par_range(void *p, int64_t begin, int64_t end)
{
    const par_job *j = p;
    tt__iter_range(j->it, begin, end, j->fn, j->ctx);
}

void tt__iter_run(const tt__iter *it, int64_t cost, tt__row_fn fn, void *ctx)
{
    if (it->numel == 0) return;
    if (cost < 1) cost = 1;
    if (it->numel * cost < TT__PAR_MIN) {
        tt__iter_range(it, 0, it->numel, fn, ctx);
        return;
    }
    par_job j = { it, fn, ctx };
    int64_t grain = TT__PAR_GRAIN / cost;
    tk_parallel_for(it->numel, grain > 0 ? grain : 1, par_range, &j);
}

/* ===== Tiles for inputs that disagree on the innermost stride =====
   out[..., r, c] = f(x, y) where an input runs along r (a transposed or
   permuted view, stride 1 on an outer iterator dim r): walking out's rows
   would touch a new cache line of that input at every element. Instead
   dims r and 0 go in TILE_R x TILE_C tiles; each such input's tile is first gathered (reading
   along its own unit stride, the next tile's lines prefetched) into a
   small contiguous buffer, then the row function runs on the tile's rows
   with every operand contiguous or as it was. Any row function works:
   only where the bytes come from changes. */

/* 32 x 128 measured best of 16..64 x 32..256 for 1024^2 and 4096^2 */
#define TILE_R 32           /* rows of a tile (iterator dim rdim) */
#define TILE_C 128          /* columns (iterator dim 0, out's unit stride) */

typedef struct tile_job {
    const tt__iter *it;
    tt__row_fn fn;
    void *ctx;
    int pack[TT__ITER_OPS];     /* inputs gathered per tile */
    int rdim;                   /* the dim along which they run (stride 1) */
    int64_t nr, nc;             /* tiles along dims rdim and 0 */
} tile_job;


static void tile_range(void *p, int64_t begin, int64_t end)
{
    const tile_job *j = p;
    const tt__iter *it = j->it;
    float buf[TT__ITER_OPS][TILE_R * TILE_C];   /* as bytes for bool operands */
    for (int64_t t = begin; t < end; t++) {
        int64_t b = t / (j->nr * j->nc), tr = t / j->nc % j->nr, tc = t % j->nc;
        int64_t r0 = tr * TILE_R, c0 = tc * TILE_C;
        int64_t R = it->shape[j->rdim] - r0 < TILE_R ? it->shape[j->rdim] - r0 : TILE_R;
        int64_t C = it->shape[0] - c0 < TILE_C ? it->shape[0] - c0 : TILE_C;
        int64_t base[TT__ITER_OPS] = {0}, rem = b;
        for (int d = 1; d < it->ndim; d++) {
            if (d == j->rdim) continue;
            int64_t i = rem % it->shape[d];
            rem /= it->shape[d];
            for (int k = 0; k < it->nop; k++) base[k] += i * it->stride[k][d];
        }
        char *row[TT__ITER_OPS];
        int64_t inc[TT__ITER_OPS], down[TT__ITER_OPS];    /* down: bytes to the next row */
        for (int k = 0; k < it->nop; k++) {
            int64_t es = (int64_t)it->es[k];
            base[k] += r0 * it->stride[k][j->rdim] + c0 * it->stride[k][0];
            row[k] = it->base[k] + base[k] * es;
            inc[k] = it->stride[k][0];
            down[k] = it->stride[k][j->rdim] * es;
            if (!j->pack[k]) continue;
            int64_t s0 = inc[k];                     /* stride[k][rdim] == 1 */
            const char *sp = row[k];
            char *dp = (char *)buf[k];
            /* the R x C tile at sp (stride 1 down a column, s0 along a row)
               into the row-major dp */
            if (es == 4) {
                int pf = c0 + TILE_C + C <= it->shape[0];       /* the next tile exists */
                for (int64_t c1 = 0; c1 < C; c1 += 16) {        /* its lines fetched as we go */
                    int64_t n1 = C - c1 < 16 ? C - c1 : 16;
                    for (int64_t cc = c1; pf && cc < c1 + n1; cc++) {
                        __builtin_prefetch((const float *)sp + (cc + TILE_C) * s0);
                        __builtin_prefetch((const float *)sp + (cc + TILE_C) * s0 + R - 1);
                    }
                    tk_transpose(n1, R, (const float *)sp + c1 * s0, s0, (float *)dp + c1, C);
                }
            } else if (es == 2) {               /* bfloat16, float16 */
                const uint16_t *s16 = (const uint16_t *)sp;
                for (int64_t cc = 0; cc < C; cc++)
                    for (int64_t r = 0; r < R; r++) ((uint16_t *)dp)[r * C + cc] = s16[cc * s0 + r];
            } else {                            /* bytes (bool operands) */
                for (int64_t cc = 0; cc < C; cc++)
                    for (int64_t r = 0; r < R; r++) dp[r * C + cc] = sp[cc * s0 + r];
            }
            row[k] = dp;
            inc[k] = 1;
            down[k] = C * es;
        }
        for (int64_t r = 0; r < R; r++) {
            if (r > 0)      /* stepping after the last row could leave the operand */
                for (int k = 0; k < it->nop; k++) row[k] += down[k];
            j->fn(j->ctx, C, row, inc);
        }
    }
}

/* The first dim after 0 along which operand k steps by 1; 0 if none. */
static int unit_dim(const tt__iter *it, int k)
{
    for (int d = 1; d < it->ndim; d++)
        if (it->stride[k][d] == 1) return d;
    return 0;
}

/* Takes the tiled path when it applies (see above); 0 if not. */
static int run_tiled(const tt__iter *it, tt__row_fn fn, void *ctx)
{
    if (it->ndim < 2 || it->shape[0] < 8 || it->stride[0][0] != 1) return 0;
    tile_job j = { it, fn, ctx, {0}, 0, 0, 0 };
    for (int k = 1; k < it->nop; k++) {
        int64_t s0 = it->stride[k][0];
        if (s0 == 0 || s0 == 1) continue;
        int r = unit_dim(it, k);
        if (r == 0 || (j.rdim && r != j.rdim)) return 0;   /* some other layout */
        if (it->es[k] > sizeof(float)) return 0;            /* int64: the tiles hold 4-byte elements */
        j.rdim = r;
        j.pack[k] = 1;
    }
    if (!j.rdim || it->shape[j.rdim] < 8) return 0;
    j.nr = (it->shape[j.rdim] + TILE_R - 1) / TILE_R;
    j.nc = (it->shape[0] + TILE_C - 1) / TILE_C;
    int64_t tiles = it->numel / (it->shape[0] * it->shape[j.rdim]) * j.nr * j.nc;
    if (it->numel < TT__PAR_MIN) tile_range(&j, 0, tiles);
    else tk_parallel_for(tiles, TT__PAR_GRAIN / (TILE_R * TILE_C) + 1, tile_range, &j);
    return 1;
}

void tt__iter_run_ew(const tt__iter *it, tt__row_fn fn, void *ctx)
{
    if (it->numel == 0 || run_tiled(it, fn, ctx)) return;
    tt__iter_run(it, 1, fn, ctx);
}

/* ===== Users inside the tensor layer ===== */

int64_t tt__offset_of(int ndim, const int64_t *shape, const int64_t *stride, int64_t flat)
{
    int64_t off = 0;
    for (int i = ndim - 1; i >= 0; i--) {
        off += (flat % shape[i]) * stride[i];
        flat /= shape[i];
    }
    return off;
}

static void copy_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    size_t es = *(const size_t *)ctx;
    if (inc[0] == 1 && inc[1] == 1) {
        memcpy(p[0], p[1], (size_t)n * es);
    } else if (es == 4) {
        float *d = (float *)p[0];
        const float *s = (const float *)p[1];
        for (int64_t i = 0; i < n; i++) d[i * inc[0]] = s[i * inc[1]];
    } else if (es == 8) {
        int64_t *d = (int64_t *)p[0];
        const int64_t *s = (const int64_t *)p[1];
        for (int64_t i = 0; i < n; i++) d[i * inc[0]] = s[i * inc[1]];
    } else if (es == 2) {
        uint16_t *d = (uint16_t *)p[0];
        const uint16_t *s = (const uint16_t *)p[1];
        for (int64_t i = 0; i < n; i++) d[i * inc[0]] = s[i * inc[1]];
    } else {
        uint8_t *d = (uint8_t *)p[0];
        const uint8_t *s = (const uint8_t *)p[1];
        for (int64_t i = 0; i < n; i++) d[i * inc[0]] = s[i * inc[1]];
    }
}

/* Strided copy of same-shaped tensors (same dtype), walking dst in
   row-major order: threads and, for a transposed src, tiles. */
void tt__copy(const tt_tensor *dst, const tt_tensor *src)
{
    int64_t n = tt_numel(dst);
    if (n == 0) return;
    size_t es = tt_dtype_size(dst->dtype);
    if (tt_is_contiguous(dst) && tt_is_contiguous(src)) {
        memmove(elem0(dst), elem0(src), (size_t)n * es);
        return;
    }
    tt__iter it;
    tt__iter_tensors(&it, dst, src);
    tt__iter_run_ew(&it, copy_row, &es);
}

static void floats_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    float *d = (float *)p[0];
    if (*(const tt_dtype *)ctx == TT_BOOL) {
        const uint8_t *s = (const uint8_t *)p[1];
        for (int64_t i = 0; i < n; i++) d[i * inc[0]] = s[i * inc[1]] ? 1.0f : 0.0f;
    } else if (*(const tt_dtype *)ctx == TT_INT64) {
        const int64_t *s = (const int64_t *)p[1];
        for (int64_t i = 0; i < n; i++) d[i * inc[0]] = (float)s[i * inc[1]];
    } else if (*(const tt_dtype *)ctx != TT_FLOAT32) {
        const uint16_t *s = (const uint16_t *)p[1];
        int bf16 = *(const tt_dtype *)ctx == TT_BFLOAT16;
        if (inc[0] == 1 && inc[1] == 1) tk_half_to_f32(bf16, n, s, d);
        else
            for (int64_t i = 0; i < n; i++)
                d[i * inc[0]] = bf16 ? tk_bf16_to_f32(s[i * inc[1]]) : tk_f16_to_f32(s[i * inc[1]]);
    } else {
        const float *s = (const float *)p[1];
        for (int64_t i = 0; i < n; i++) d[i * inc[0]] = s[i * inc[1]];
    }
}

void tt_get_floats(const tt_tensor *src, float *dst)
{
    int64_t st[TT__ITER_OPS][TT_MAX_DIMS] = {{0}};
    void *base[TT__ITER_OPS] = { dst, elem0(src), NULL };
    size_t es[TT__ITER_OPS] = { sizeof *dst, tt_dtype_size(src->dtype), 0 };
    tt__contig_strides(src->ndim, src->shape, st[0]);
    memcpy(st[1], src->stride, (size_t)src->ndim * sizeof(int64_t));
    tt__iter it;
    tt__iter_init(&it, src->ndim, src->shape, 2, (const int64_t (*)[TT_MAX_DIMS])st, base, es);
    tt_dtype dt = src->dtype;
    tt__iter_run(&it, 1, floats_row, &dt);
}

int tt__iter_flat(int n, const int64_t *shape, const int64_t *stride, int64_t *s)
{
    void *base[1] = { NULL };
    size_t es[1] = { 0 };
    tt__iter it;
    tt__iter_init(&it, n, shape, 1, (const int64_t (*)[TT_MAX_DIMS])stride, base, es);
    *s = it.numel ? it.stride[0][0] : 0;
    return it.numel == 0 || it.ndim == 1;
}
