/*
** tensor.c — storage refcounts, memory cap, errors, creation, the random
** generator, and every view op (views never copy; reshape copies only when
** the strides leave no choice). Part of the C core: no Lua here.
*/
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernels.h"
#include "tt_internal.h"

/* ===== Errors ===== */

static char errbuf[1024];

tt_status tt__err(tt_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return st;
}

const char *tt_errmsg(void) { return errbuf; }

/* ===== Interned strings =====
   Names and labels are compared by pointer; a small open hash table. */

static char **intern_tab;
static size_t intern_cap, intern_len;
static int64_t intern_bytes;            /* strings and table: counted against the memory cap */
static int64_t other_bytes;             /* figure canvases (tt__mem_reserve): counted too */
static tt_status intern_reserve(int64_t bytes);

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;            /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

const char *tt_intern(const char *s)
{
    if (s == NULL) return NULL;
    if (intern_len * 2 >= intern_cap) {
        size_t ncap = intern_cap ? intern_cap * 2 : 64;
        if (intern_reserve((int64_t)((ncap - intern_cap) * sizeof *intern_tab))) return NULL;
        char **nt = calloc(ncap, sizeof *nt);
        if (nt == NULL) return NULL;
        for (size_t i = 0; i < intern_cap; i++) {
            if (intern_tab[i] == NULL) continue;
            size_t j = hash_str(intern_tab[i]) & (ncap - 1);
            while (nt[j]) j = (j + 1) & (ncap - 1);
            nt[j] = intern_tab[i];
        }
        free(intern_tab);
        intern_tab = nt;
        intern_cap = ncap;
    }
    size_t j = hash_str(s) & (intern_cap - 1);
    while (intern_tab[j]) {
        if (strcmp(intern_tab[j], s) == 0) return intern_tab[j];
        j = (j + 1) & (intern_cap - 1);
    }
    size_t n = strlen(s) + 1;
    if (intern_reserve((int64_t)n + 16)) return NULL;   /* 16: malloc's own header */
    char *c = malloc(n);
    if (c == NULL) return NULL;
    memcpy(c, s, n);
    intern_tab[j] = c;
    intern_len++;
    return c;
}

/* ===== Storage and the memory cap ===== */

static int64_t mem_in_use, mem_peak, mem_cap;
static uint64_t id_counter;

void tt_set_max_memory(int64_t bytes) { mem_cap = bytes > 0 ? bytes : 0; }
int64_t tt_get_max_memory(void) { return mem_cap; }
int64_t tt_memory_in_use(void) { return mem_in_use; }
int64_t tt_memory_peak(void) { return mem_peak; }
void tt_memory_reset_peak(void) { mem_peak = mem_in_use; }
uint64_t tt__next_id(void) { return ++id_counter; }

static void fmt_bytes(char *buf, size_t n, int64_t b)
{
    if (b >= (1LL << 30)) snprintf(buf, n, "%.1f GiB", (double)b / (double)(1LL << 30));
    else if (b >= (1LL << 20)) snprintf(buf, n, "%.1f MiB", (double)b / (double)(1LL << 20));
    else if (b >= 1024) snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
    else snprintf(buf, n, "%lld bytes", (long long)b);
}

/* Freed buffers are kept and handed out again, in free lists per size
   class: a fresh big buffer costs a page fault per 4 KiB on first touch
   (at attention sizes that takes longer than the arithmetic), and small
   aligned allocations are slow in most mallocs. Sizes round up to a
   multiple of 64 below 256 bytes, else to one of four classes per power of
   two (at most 25% slack). Lua frees dead tensors in batches, one
   collection cycle at a time, so a loop of small ops frees hundreds of
   same-sized buffers at once: below SMALL_LIMIT a class keeps 64 blocks,
   or more while all the small blocks kept stay under SMALL_CACHE_BYTES
   (else each op would go back to aligned_alloc, the slowest part of it). */
#define NCLASSES 240
#define SMALL_LIMIT (1 << 20)               /* below: 64 blocks a class, more within: */
#define SMALL_CACHE_BYTES ((int64_t)16 << 20)
#define CACHE_MAX_BYTES ((int64_t)512 << 20) /* above: this many bytes in all */

typedef struct freeblock { struct freeblock *next; } freeblock;
static freeblock *freelist[NCLASSES];
static int freecount[NCLASSES];
static int64_t cache_bytes, small_bytes;
static tt_storage *free_headers;

static size_t size_class(size_t sz, int *idx)
{
    if (sz <= 256) {
        sz = sz ? (sz + 63) & ~(size_t)63 : 64;
        *idx = (int)(sz / 64) - 1;
        return sz;
    }
    int o = 63 - __builtin_clzll((unsigned long long)sz);
    size_t top = (size_t)1 << o, step = top / 4;
    size_t c = (sz + step - 1) / step * step;
    int sub = (int)((c - top) / step);      /* 1..4: 4 is the next octave */
    *idx = 4 + (o - 8) * 4 + sub - 1;
    return c;
}

static void *cache_take(int idx, size_t sz)
{
    freeblock *b = idx < NCLASSES ? freelist[idx] : NULL;
    if (b == NULL) return NULL;
    freelist[idx] = b->next;
    freecount[idx]--;
    if (sz >= SMALL_LIMIT) cache_bytes -= (int64_t)sz;
    else small_bytes -= (int64_t)sz;
    return b;
}

static void cache_put(void *p, size_t sz, int idx)
{
    int keep = idx < NCLASSES && (sz < SMALL_LIMIT
                                  ? freecount[idx] < 64 || small_bytes + (int64_t)sz <= SMALL_CACHE_BYTES
                                  : cache_bytes + (int64_t)sz <= CACHE_MAX_BYTES);
    /* under --max-memory, what is kept counts as in use: the process stays
       within the cap however the script frees and allocates */
    if (keep && mem_cap && mem_in_use + intern_bytes + other_bytes + cache_bytes + small_bytes + (int64_t)sz > mem_cap)
        keep = 0;
    if (!keep) {
        free(p);
        return;
    }
    freeblock *b = p;
    b->next = freelist[idx];
    freelist[idx] = b;
    freecount[idx]++;
    if (sz >= SMALL_LIMIT) cache_bytes += (int64_t)sz;
    else small_bytes += (int64_t)sz;
}

static void cache_drop(void)
{
    for (int i = 0; i < NCLASSES; i++) {
        while (freelist[i]) {
            freeblock *b = freelist[i];
            freelist[i] = b->next;
            free(b);
        }
        freecount[i] = 0;
    }
    cache_bytes = small_bytes = 0;
}

void tt_release_caches(void)
{
    tk_threads_stop();
    cache_drop();
    while (free_headers) {
        tt_storage *h = free_headers;
        free_headers = h->data;
        free(h);
    }
    for (size_t i = 0; i < intern_cap; i++) free(intern_tab[i]);
    free(intern_tab);
    intern_tab = NULL;
    intern_cap = intern_len = 0;
    intern_bytes = 0;
}

static void (*reclaim_fn)(void *);
static void *reclaim_ud;

void tt_set_reclaim(void (*fn)(void *ud), void *ud)
{
    reclaim_fn = fn;
    reclaim_ud = ud;
}

/* Whether nbytes more fit under the cap, after collecting garbage tensors;
   else TT_ENOMEM with the cap's message. Interned names and labels count:
   they live until exit, so a script making fresh labels in a loop meets the
   cap instead of growing without bound. */
static tt_status cap_check(int64_t nbytes)
{
    const int64_t held = mem_in_use + intern_bytes + other_bytes;
    if (mem_cap && nbytes > mem_cap - held - cache_bytes - small_bytes) cache_drop();   /* the cache yields first */
    if (mem_cap && nbytes > mem_cap - held && reclaim_fn) reclaim_fn(reclaim_ud);
    if (mem_cap && nbytes > mem_cap - mem_in_use - intern_bytes - other_bytes) {
        char want[32], cap[32], used[32], names[96] = "";
        fmt_bytes(want, sizeof want, nbytes);
        fmt_bytes(cap, sizeof cap, mem_cap);
        fmt_bytes(used, sizeof used, mem_in_use + intern_bytes + other_bytes);
        if (intern_bytes > mem_cap / 4) {
            char nb[32];
            fmt_bytes(nb, sizeof nb, intern_bytes);
            snprintf(names, sizeof names, ", %s of it dim names and labels, kept until exit", nb);
        }
        return tt__err(TT_ENOMEM, "%s needed but the memory cap is %s (%s in use%s); "
                       "hint: raise it with --max-memory%s", want, cap, used, names,
                       names[0] ? ", or reuse labels" : "");
    }
    return TT_OK;
}

tt_status tt__mem_reserve(int64_t bytes)
{
    tt_status st = cap_check(bytes);
    if (st == TT_OK) other_bytes += bytes;
    return st;
}

void tt__mem_release(int64_t bytes) { other_bytes -= bytes; }

static tt_status intern_reserve(int64_t bytes)
{
    tt_status st = cap_check(bytes);
    if (st == TT_OK) intern_bytes += bytes;
    return st;
}

tt_status tt__storage_new(tt_storage **out, int64_t nbytes, int zero)
{
    *out = NULL;
    tt_status st = cap_check(nbytes);
    if (st) return st;
    tt_storage *s = free_headers;
    if (s) free_headers = s->data;
    else if ((s = malloc(sizeof *s)) == NULL) return tt__err(TT_ENOMEM, "out of memory");
    int idx;                                /* classes are multiples of 64, as aligned_alloc needs */
    size_t sz = size_class((size_t)nbytes, &idx);
    s->data = cache_take(idx, sz);
    if (s->data == NULL) s->data = aligned_alloc(64, sz);   /* 64-byte aligned for SIMD */
    if (s->data == NULL) {
        free(s);
        char want[32];
        fmt_bytes(want, sizeof want, nbytes);
        return tt__err(TT_ENOMEM, "out of memory allocating %s", want);
    }
    if (zero) memset(s->data, 0, sz);
    s->nbytes = nbytes;
    s->refcount = 1;
    mem_in_use += nbytes;
    if (mem_in_use > mem_peak) mem_peak = mem_in_use;
    *out = s;
    return TT_OK;
}

void tt__storage_retain(tt_storage *s) { if (s) s->refcount++; }

void tt__storage_release(tt_storage *s)
{
    if (s == NULL || --s->refcount > 0) return;
    mem_in_use -= s->nbytes;
    int idx;
    size_t sz = size_class((size_t)s->nbytes, &idx);
    cache_put(s->data, sz, idx);
    s->data = free_headers;                 /* headers are reused too */
    free_headers = s;
}

void tt_tensor_release(tt_tensor *t)
{
    if (t == NULL) return;
    tt__storage_release(t->storage);
    t->storage = NULL;
}

void tt_tensor_retain(tt_tensor *out, const tt_tensor *a)
{
    *out = *a;
    tt__storage_retain(a->storage);
}

/* ===== Basic queries ===== */

size_t tt_dtype_size(tt_dtype dt) { return dt == TT_BOOL ? 1 : 4; }
const char *tt_dtype_name(tt_dtype dt) { return dt == TT_BOOL ? "bool" : "float32"; }

int64_t tt_numel(const tt_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

int tt_is_contiguous(const tt_tensor *t)
{
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 1) continue;     /* stride of a size-1 dim is irrelevant */
        if (t->shape[i] == 0) return 1;
        if (t->stride[i] != expect) return 0;
        expect *= t->shape[i];
    }
    return 1;
}

float *tt_data_f32(const tt_tensor *t) { return (float *)t->storage->data + t->offset; }
uint8_t *tt_data_bool(const tt_tensor *t) { return (uint8_t *)t->storage->data + t->offset; }

double tt_get(const tt_tensor *t, int64_t flat)
{
    int64_t off = t->offset;
    for (int i = t->ndim - 1; i >= 0; i--) {
        off += (flat % t->shape[i]) * t->stride[i];
        flat /= t->shape[i];
    }
    if (t->dtype == TT_BOOL) return ((const uint8_t *)t->storage->data)[off];
    return ((const float *)t->storage->data)[off];
}

char *tt_shape_str(const tt_tensor *t, char *buf, size_t n)
{
    size_t len = 0;
    len += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < t->ndim && len < n; i++) {
        const char *sep = i ? "," : "";
        if (t->names[i])
            len += (size_t)snprintf(buf + len, n - len, "%s%s=%lld", sep, t->names[i], (long long)t->shape[i]);
        else
            len += (size_t)snprintf(buf + len, n - len, "%s%lld", sep, (long long)t->shape[i]);
    }
    if (len < n) snprintf(buf + len, n - len, "]");
    return buf;
}

/* ===== Helpers shared by the core ===== */

void tt__contig_strides(int ndim, const int64_t *shape, int64_t *stride)
{
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        stride[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

tt_status tt__numel_checked(const char *op, int ndim, const int64_t *shape, int64_t *n)
{
    int64_t p = 1, nz = 1;   /* nz: product of the nonzero sizes, which bounds the strides */
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return tt__err(TT_EARG, "%s: negative size %lld at dim %d", op, (long long)shape[i], i + 1);
        if (shape[i] && nz > INT64_MAX / 8 / shape[i]) {
            char buf[256];
            size_t len = 0;
            for (int j = 0; j < ndim && len < sizeof buf - 24; j++)
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%lld", j ? "," : "", (long long)shape[j]);
            return tt__err(TT_ENOMEM, "%s: shape [%s] is too large (its element count overflows)", op, buf);
        }
        p *= shape[i];
        if (shape[i]) nz *= shape[i];
    }
    *n = p;
    return TT_OK;
}

tt_status tt__alloc(tt_tensor *out, const char *op, tt_dtype dt, int ndim,
                    const int64_t *shape, const char *const *names)
{
    memset(out, 0, sizeof *out);
    if (ndim < 0 || ndim > TT_MAX_DIMS)
        return tt__err(TT_EARG, "%s: %d dims requested but at most %d are supported", op, ndim, TT_MAX_DIMS);
    int64_t n;
    tt_status st = tt__numel_checked(op, ndim, shape, &n);
    if (st) return st;
    tt_storage *s;
    st = tt__storage_new(&s, n * (int64_t)tt_dtype_size(dt), 0);
    if (st) {
        char tmp[sizeof errbuf], shp[256];
        tt_tensor probe = {0};
        probe.ndim = ndim;
        if (ndim) memcpy(probe.shape, shape, (size_t)ndim * sizeof *shape);
        snprintf(tmp, sizeof tmp, "%s", errbuf);
        return tt__err(st, "%s: cannot allocate %s %s: %s", op, tt_dtype_name(dt),
                       tt_shape_str(&probe, shp, sizeof shp), tmp);
    }
    out->storage = s;
    out->ndim = ndim;
    out->dtype = dt;
    if (ndim) memcpy(out->shape, shape, (size_t)ndim * sizeof *shape);
    tt__contig_strides(ndim, shape, out->stride);
    tt__set_names(out, names);
    out->id = tt__next_id();
    return TT_OK;
}

/* The one place that names a result's dims. A tensor never carries a
   name on two dims: such a name would make x:softmax("N") pick one of
   them silently, so both dims lose it and a lookup by it fails loudly. */
void tt__set_names(tt_tensor *t, const char *const *names)
{
    for (int i = 0; i < TT_MAX_DIMS; i++) t->names[i] = names && i < t->ndim ? names[i] : NULL;
    for (int i = 0; i < t->ndim; i++) {
        const char *n = t->names[i];
        int repeated = 0;
        for (int j = i + 1; j < t->ndim; j++)
            if (t->names[j] && n && strcmp(t->names[j], n) == 0) {
                t->names[j] = NULL;
                repeated = 1;
            }
        if (repeated) t->names[i] = NULL;
    }
}

void tt__view_of(tt_tensor *out, const tt_tensor *a)
{
    *out = *a;
    out->label = NULL;
    out->id = tt__next_id();
    tt__storage_retain(a->storage);
}

tt_status tt__check_dim(const char *op, const tt_tensor *a, int d, int allow_end)
{
    int hi = a->ndim + (allow_end ? 1 : 0);
    if (d < 0 || d >= hi) {
        char shp[256];
        return tt__err(TT_EARG, "%s: dim %d out of range for %s (%d dims)", op, d + 1,
                       tt_shape_str(a, shp, sizeof shp), a->ndim);
    }
    return TT_OK;
}

tt_status tt__check_dtype(const char *op, const tt_tensor *a, tt_dtype want)
{
    if (a->dtype == want) return TT_OK;
    char shp[256];
    return tt__err(TT_EARG, "%s: expects %s, got %s %s; hint: x:%s()", op, tt_dtype_name(want),
                   tt_dtype_name(a->dtype), tt_shape_str(a, shp, sizeof shp),
                   want == TT_BOOL ? "bool" : "float");
}

/* Copy of the last two dims in square tiles: when src is read across its
   rows (a transposed view), a row-by-row walk would touch a new cache line
   and TLB page per element. */
#define COPY_TILE 32
#define TILE_LOOP(T) do { \
    T *dp = (T *)d + doff; \
    const T *sp = (const T *)s + soff; \
    for (int64_t i0 = 0; i0 < R; i0 += COPY_TILE) \
        for (int64_t j0 = 0; j0 < C; j0 += COPY_TILE) \
            for (int64_t i = i0; i < R && i < i0 + COPY_TILE; i++) \
                for (int64_t j = j0; j < C && j < j0 + COPY_TILE; j++) \
                    dp[i * drs + j * dcs] = sp[i * srs + j * scs]; \
} while (0)

static void copy_tiled(const tt_tensor *dst, const tt_tensor *src, char *d, const char *s, size_t es)
{
    int nd = dst->ndim;
    int64_t R = dst->shape[nd - 2], C = dst->shape[nd - 1];
    int64_t drs = dst->stride[nd - 2], dcs = dst->stride[nd - 1];
    int64_t srs = src->stride[nd - 2], scs = src->stride[nd - 1];
    int64_t planes = R * C != 0 ? tt_numel(dst) / (R * C) : 0;
    for (int64_t p = 0; p < planes; p++) {
        int64_t doff = 0, soff = 0, rem = p;
        for (int i = nd - 3; i >= 0; i--) {
            doff += (rem % dst->shape[i]) * dst->stride[i];
            soff += (rem % dst->shape[i]) * src->stride[i];
            rem /= dst->shape[i];
        }
        if (es == 4) TILE_LOOP(float);
        else TILE_LOOP(uint8_t);
    }
}

/* Strided copy of same-shaped tensors, walking dst in row-major order. */
void tt__copy(const tt_tensor *dst, const tt_tensor *src)
{
    int64_t n = tt_numel(dst);
    if (n == 0) return;
    size_t es = tt_dtype_size(dst->dtype);
    char *d = (char *)dst->storage->data + dst->offset * (int64_t)es;
    const char *s = (const char *)src->storage->data + src->offset * (int64_t)es;
    if (tt_is_contiguous(dst) && tt_is_contiguous(src)) {
        memmove(d, s, (size_t)n * es);
        return;
    }
    int nd = dst->ndim;
    if (nd >= 2 && src->stride[nd - 1] != 1 && src->stride[nd - 1] != 0) {
        copy_tiled(dst, src, d, s, es);
        return;
    }
    int64_t idx[TT_MAX_DIMS] = {0};
    int64_t inner = nd ? dst->shape[nd - 1] : 1;
    int64_t ds = nd ? dst->stride[nd - 1] : 0, ss = nd ? src->stride[nd - 1] : 0;
    for (int64_t done = 0; done < n; done += inner) {
        int64_t doff = 0, soff = 0;
        for (int i = 0; i < nd - 1; i++) {
            doff += idx[i] * dst->stride[i];
            soff += idx[i] * src->stride[i];
        }
        if (es == 4) {
            float *dp = (float *)d + doff;
            const float *sp = (const float *)s + soff;
            for (int64_t j = 0; j < inner; j++) dp[j * ds] = sp[j * ss];
        } else {
            uint8_t *dp = (uint8_t *)d + doff;
            const uint8_t *sp = (const uint8_t *)s + soff;
            for (int64_t j = 0; j < inner; j++) dp[j * ds] = sp[j * ss];
        }
        for (int i = nd - 2; i >= 0; i--) {
            if (++idx[i] < dst->shape[i]) break;
            idx[i] = 0;
        }
    }
}

/* ===== Creation ===== */

static void shape_args(char *buf, size_t n, int ndim, const int64_t *shape)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < ndim && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? "," : "", (long long)shape[i]);
}

tt_status tt_empty(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__alloc(out, "empty", dt, ndim, shape, NULL);
    tt_event ev;
    if (st == TT_OK) tt__event_init(&ev, TT_OP_EMPTY, out, NULL, NULL, NULL);
    return tt__op_leave(sc, st, &ev);
}

static void fill(tt_tensor *t, double v)
{
    int64_t n = tt_numel(t);
    if (t->dtype == TT_BOOL) {
        memset(tt_data_bool(t), v != 0.0, (size_t)n);
    } else {
        float *p = tt_data_f32(t), f = (float)v;
        for (int64_t i = 0; i < n; i++) p[i] = f;
    }
}

static tt_status full_op(tt_tensor *out, tt_op op, tt_dtype dt, int ndim, const int64_t *shape, double value)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__alloc(out, tt_op_name(op), dt, ndim, shape, NULL);
    tt_event ev;
    if (st == TT_OK) {
        fill(out, value);
        tt__event_init(&ev, op, out, NULL, NULL, NULL);
        if (op == TT_OP_FULL && tt__tracing()) snprintf(ev.args, sizeof ev.args, "value=%g", value);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_full(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape, double value)
{
    return full_op(out, TT_OP_FULL, dt, ndim, shape, value);
}

tt_status tt_zeros(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape)
{
    return full_op(out, TT_OP_ZEROS, dt, ndim, shape, 0.0);
}

tt_status tt_ones(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape)
{
    return full_op(out, TT_OP_ONES, dt, ndim, shape, 1.0);
}

tt_status tt_from_buffer(tt_tensor *out, tt_dtype dt, int ndim, const int64_t *shape, const void *data)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__alloc(out, "tensor", dt, ndim, shape, NULL);
    tt_event ev;
    if (st == TT_OK) {
        if (tt_numel(out)) memcpy(out->storage->data, data, (size_t)(tt_numel(out) * (int64_t)tt_dtype_size(dt)));
        tt__event_init(&ev, TT_OP_TENSOR, out, NULL, NULL, NULL);
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_arange(tt_tensor *out, double a, double b, double step)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = TT_OK;
    tt_event ev;
    memset(out, 0, sizeof *out);
    if (step == 0 || !isfinite(a) || !isfinite(b) || !isfinite(step)) {
        st = tt__err(TT_EARG, "arange: needs finite bounds and a nonzero step (got %g, %g, step %g)", a, b, step);
    } else {
        double cnt = ceil((b - a) / step);
        int64_t n = cnt > 0 && cnt <= 1e15 ? (int64_t)cnt : 0;   /* no cast of an out-of-range double */
        if (cnt > 1e15) st = tt__err(TT_ENOMEM, "arange: %g elements is too many", cnt);
        else st = tt__alloc(out, "arange", TT_FLOAT32, 1, &n, NULL);
        if (st == TT_OK) {
            float *p = tt_data_f32(out);
            for (int64_t i = 0; i < n; i++) p[i] = (float)(a + (double)i * step);
            tt__event_init(&ev, TT_OP_ARANGE, out, NULL, NULL, NULL);
            if (tt__tracing()) snprintf(ev.args, sizeof ev.args, "%g, %g, step=%g", a, b, step);
        }
    }
    return tt__op_leave(sc, st, &ev);
}

tt_status tt_eye(tt_tensor *out, int64_t n, int64_t m)
{
    tt__opscope sc = tt__op_enter();
    int64_t shape[2] = {n, m};
    tt_status st = tt__alloc(out, "eye", TT_FLOAT32, 2, shape, NULL);
    tt_event ev;
    if (st == TT_OK) {
        fill(out, 0.0);
        float *p = tt_data_f32(out);
        for (int64_t i = 0; i < n && i < m; i++) p[i * m + i] = 1.0f;
        tt__event_init(&ev, TT_OP_EYE, out, NULL, NULL, NULL);
    }
    return tt__op_leave(sc, st, &ev);
}

/* ===== Random numbers =====
   xoshiro128** (Blackman & Vigna) with its 128-bit state seeded through
   splitmix64. Uniforms take the top 24 bits, so every float in [0,1) is
   exact. Normals use Marsaglia's polar method with our own log (below),
   built from IEEE +,*,/ and sqrt only, so results do not depend on libm. */

static uint32_t rng_s[4];

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void tt_manual_seed(uint64_t seed)
{
    uint64_t x = seed;
    uint64_t a = splitmix64(&x), b = splitmix64(&x);
    rng_s[0] = (uint32_t)a; rng_s[1] = (uint32_t)(a >> 32);
    rng_s[2] = (uint32_t)b; rng_s[3] = (uint32_t)(b >> 32);
}

/* A copy of the state in locals for the length of one tensor (the compiler
   keeps it in registers); rng_save writes it back. xoshiro never reaches
   the all-zero state from another, so checking once per tensor is enough. */
typedef struct rng { uint32_t s[4]; } rng;

static rng rng_load(void)
{
    if ((rng_s[0] | rng_s[1] | rng_s[2] | rng_s[3]) == 0) tt_manual_seed(0);
    rng r = {{rng_s[0], rng_s[1], rng_s[2], rng_s[3]}};
    return r;
}

static void rng_save(const rng *r) { memcpy(rng_s, r->s, sizeof rng_s); }

static uint32_t rotl32(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

static uint32_t rng_next(rng *r)
{
    uint32_t *s = r->s;
    uint32_t result = rotl32(s[1] * 5, 7) * 9;
    uint32_t t = s[1] << 9;
    s[2] ^= s[0]; s[3] ^= s[1];
    s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl32(s[3], 11);
    return result;
}

static double rng_uniform(rng *r) { return (double)(rng_next(r) >> 8) * (1.0 / 16777216.0); }

/* ln(x) for x > 0: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), then
   ln m = 2 atanh(z) = 2 (z + z^3/3 + z^5/5 + ...), z = (m-1)/(m+1).
   |z| < 0.172, so z^2 < 0.0295 and 12 terms reach 1e-18. m and e are what
   frexp gives, read from the bits for normal numbers (no libm call). */
static inline double det_log(double x)
{
    static const double inv_odd[12] = {
        1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11,
        1.0 / 13, 1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21, 1.0 / 23,
    };
    int e;
    double m;
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int biased = (int)(bits >> 52) & 0x7ff;
    if (biased == 0 || biased == 0x7ff) {
        m = frexp(x, &e);                /* zero, subnormal, inf, NaN */
    } else {
        e = biased - 1022;               /* exact: m in [0.5, 1) */
        bits = (bits & ~(0x7ffull << 52)) | (0x3feull << 52);
        memcpy(&m, &bits, sizeof m);
    }
    int low = m < 0.70710678118654752;  /* a select, not a branch: it is a coin toss */
    m = low ? m * 2 : m;
    e -= low;
    double z = (m - 1) / (m + 1), z2 = z * z, poly = 0;
    for (int k = 11; k >= 0; k--) poly = poly * z2 + inv_odd[k];   /* Horner */
    return 2 * z * poly + e * 0.69314718055994530942;
}

tt_status tt_rand(tt_tensor *out, int ndim, const int64_t *shape)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__alloc(out, "rand", TT_FLOAT32, ndim, shape, NULL);
    tt_event ev;
    if (st == TT_OK) {
        float *p = tt_data_f32(out);
        int64_t n = tt_numel(out);
        rng r = rng_load();
        for (int64_t i = 0; i < n; i++) p[i] = (float)rng_uniform(&r);
        rng_save(&r);
        tt__event_init(&ev, TT_OP_RAND, out, NULL, NULL, NULL);
    }
    return tt__op_leave(sc, st, &ev);
}

/* Normals come in two passes. 1: the polar method's draws, a serial chain
   through the generator, written as float pairs (a, b) into the result
   (exact: both are multiples of 2^-23 in [-1, 1)); a rejected pair is
   overwritten by the next one, without a branch. 2: each pair becomes two
   normals in place. The pairs are independent there, so they overlap in
   the CPU and split across threads; the numbers are those of drawing and
   transforming one pair at a time. */
#define RANDN_GRAIN 16384           /* pairs per thread at least */

static inline void polar_pair(double a, double b, float *out, int both)
{
    double q = a * a + b * b;
    double f = sqrt(-2 * det_log(q) / q);
    out[0] = (float)(a * f);
    if (both) out[1] = (float)(b * f);
}

static void polar_range(void *ctx, int64_t begin, int64_t end)
{
    float *p = ctx;
    for (int64_t k = begin; k < end; k++) polar_pair(p[2 * k], p[2 * k + 1], p + 2 * k, 1);
}

tt_status tt_randn(tt_tensor *out, int ndim, const int64_t *shape)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__alloc(out, "randn", TT_FLOAT32, ndim, shape, NULL);
    tt_event ev;
    if (st == TT_OK) {
        float *p = tt_data_f32(out);
        int64_t n = tt_numel(out), pairs = n / 2;
        rng r = rng_load();
        for (int64_t k = 0; k < pairs;) {            /* 1: draws, kept when inside the disc */
            double a = 2 * rng_uniform(&r) - 1, b = 2 * rng_uniform(&r) - 1, q = a * a + b * b;
            p[2 * k] = (float)a;
            p[2 * k + 1] = (float)b;
            k += q < 1 && q != 0;
        }
        if (n % 2) {                                 /* the last element still draws a pair */
            double a, b, q;
            do {
                a = 2 * rng_uniform(&r) - 1;
                b = 2 * rng_uniform(&r) - 1;
                q = a * a + b * b;
            } while (q >= 1 || q == 0);
            polar_pair(a, b, p + n - 1, 0);
        }
        rng_save(&r);
        tk_parallel_for(pairs, RANDN_GRAIN, polar_range, p);   /* 2: the transforms */
        tt__event_init(&ev, TT_OP_RANDN, out, NULL, NULL, NULL);
    }
    return tt__op_leave(sc, st, &ev);
}

/* ===== Views ===== */

/* Emits a view event with its args; shared by the view ops below, which
   format args only when tt__tracing() (else they pass ""). */
static tt_status leave_view(tt__opscope sc, tt_status st, tt_op op, tt_tensor *out,
                            const tt_tensor *a, const char *args)
{
    tt_event ev;
    if (st == TT_OK) {
        tt__event_init(&ev, op, out, a, NULL, NULL);
        ev.view = out->storage == a->storage;
        if (args && args[0]) snprintf(ev.args, sizeof ev.args, "%s", args);
    }
    return tt__op_leave(sc, st, &ev);
}

/* Resolves one -1 in shape against numel; checks the count matches. */
static tt_status infer_shape(const char *op, const tt_tensor *a, int ndim, const int64_t *shape,
                             int64_t *res)
{
    char shp[256];
    if (ndim < 0 || ndim > TT_MAX_DIMS)
        return tt__err(TT_EARG, "%s: %d dims requested but at most %d are supported", op, ndim, TT_MAX_DIMS);
    int infer = -1;
    int64_t known = 1, nz = 1;       /* nz: product of the nonzero sizes (bounds the strides) */
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == -1) {
            if (infer >= 0) return tt__err(TT_EARG, "%s: only one size may be -1", op);
            infer = i;
        } else if (shape[i] < 0) {
            return tt__err(TT_EARG, "%s: invalid size %lld at dim %d", op, (long long)shape[i], i + 1);
        } else {
            if (shape[i] && nz > INT64_MAX / 8 / shape[i])
                return tt__err(TT_EARG, "%s: requested shape is too large", op);
            known *= shape[i];
            if (shape[i]) nz *= shape[i];
        }
        res[i] = shape[i];
    }
    int64_t n = tt_numel(a);
    char want[256];
    shape_args(want, sizeof want, ndim, shape);
    if (infer >= 0) {
        if (known == 0 || n % known != 0)
            return tt__err(TT_ESHAPE, "%s: cannot infer -1 in [%s] for %s (%lld elements)", op, want,
                           tt_shape_str(a, shp, sizeof shp), (long long)n);
        res[infer] = n / known;
    } else if (known != n) {
        return tt__err(TT_ESHAPE, "%s: shape [%s] has %lld elements but %s has %lld", op, want,
                       (long long)known, tt_shape_str(a, shp, sizeof shp), (long long)n);
    }
    return TT_OK;
}

/* Strides that let a be seen as shape without copying, or 0 when none
   exist: old dims are grouped into chunks that are contiguous among
   themselves, and each chunk is split across the new dims it covers. */
static int view_strides(const tt_tensor *a, int ndim, const int64_t *shape, int64_t *stride)
{
    int64_t n = tt_numel(a);
    if (n == 0 || a->ndim == 0) {
        tt__contig_strides(ndim, shape, stride);
        return 1;
    }
    int view_d = ndim - 1;
    int64_t chunk_base = a->ndim ? a->stride[a->ndim - 1] : 1;
    int64_t tensor_numel = 1, view_numel = 1;
    for (int d = a->ndim - 1; d >= 0; d--) {
        tensor_numel *= a->shape[d];
        /* a chunk ends where the next outer dim is not contiguous with it */
        if (d == 0 || (a->shape[d - 1] != 1 && a->stride[d - 1] != tensor_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                stride[view_d] = view_numel * chunk_base;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return 0;
            if (d > 0) {
                chunk_base = a->stride[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

/* Names survive where leading or trailing dims are unchanged. */
static void reshape_names(const tt_tensor *a, tt_tensor *out)
{
    const char *names[TT_MAX_DIMS] = {0};
    int i = 0;
    for (; i < a->ndim && i < out->ndim && a->shape[i] == out->shape[i]; i++) names[i] = a->names[i];
    for (int j = 1; j <= a->ndim && j <= out->ndim; j++) {
        int ia = a->ndim - j, io = out->ndim - j;
        if (io < i || a->shape[ia] != out->shape[io]) break;
        names[io] = a->names[ia];
    }
    tt__set_names(out, names);   /* [N=1] viewed as [1,1] would name both dims N */
}

static tt_status view_impl(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape, int may_copy)
{
    const char *op = may_copy ? "reshape" : "view";
    int64_t res[TT_MAX_DIMS], stride[TT_MAX_DIMS];
    memset(out, 0, sizeof *out);
    tt_status st = infer_shape(op, a, ndim, shape, res);
    if (st) return st;
    if (view_strides(a, ndim, res, stride)) {
        tt__view_of(out, a);
        out->ndim = ndim;
        memcpy(out->shape, res, (size_t)ndim * sizeof *res);
        memcpy(out->stride, stride, (size_t)ndim * sizeof *stride);
    } else if (!may_copy) {
        char shp[256], want[256], str[128];
        shape_args(want, sizeof want, ndim, res);
        shape_args(str, sizeof str, a->ndim, a->stride);
        return tt__err(TT_ESHAPE, "view: %s with strides (%s) cannot be viewed as [%s] without a copy; "
                       "hint: use x:reshape(...) or x:contiguous():view(...)",
                       tt_shape_str(a, shp, sizeof shp), str, want);
    } else {
        tt_tensor c;
        st = tt_contiguous(&c, a);
        if (st) return st;
        tt__view_of(out, &c);
        tt_tensor_release(&c);
        out->ndim = ndim;
        memcpy(out->shape, res, (size_t)ndim * sizeof *res);
        tt__contig_strides(ndim, res, out->stride);
    }
    reshape_names(a, out);
    return TT_OK;
}

tt_status tt_view(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = view_impl(out, a, ndim, shape, 0);
    return leave_view(sc, st, TT_OP_VIEW, out, a, NULL);
}

tt_status tt_reshape(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = view_impl(out, a, ndim, shape, 1);
    return leave_view(sc, st, TT_OP_RESHAPE, out, a, NULL);
}

static tt_status transpose_impl(tt_tensor *out, const tt_tensor *a, int d1, int d2, const char *op)
{
    memset(out, 0, sizeof *out);
    tt_status st = tt__check_dim(op, a, d1, 0);
    if (st == TT_OK) st = tt__check_dim(op, a, d2, 0);
    if (st) return st;
    tt__view_of(out, a);
    int64_t t;
    t = out->shape[d1]; out->shape[d1] = out->shape[d2]; out->shape[d2] = t;
    t = out->stride[d1]; out->stride[d1] = out->stride[d2]; out->stride[d2] = t;
    const char *n = out->names[d1]; out->names[d1] = out->names[d2]; out->names[d2] = n;
    return TT_OK;
}

tt_status tt_transpose(tt_tensor *out, const tt_tensor *a, int d1, int d2)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = transpose_impl(out, a, d1, d2, "transpose");
    char args[32] = "";
    if (tt__tracing()) snprintf(args, sizeof args, "%d, %d", d1 + 1, d2 + 1);
    return leave_view(sc, st, TT_OP_TRANSPOSE, out, a, args);
}

tt_status tt_mT(tt_tensor *out, const tt_tensor *a)
{
    tt__opscope sc = tt__op_enter();
    tt_status st;
    if (a->ndim < 2) {
        char shp[256];
        memset(out, 0, sizeof *out);
        st = tt__err(TT_EARG, "mT: needs at least 2 dims, got %s", tt_shape_str(a, shp, sizeof shp));
    } else {
        st = transpose_impl(out, a, a->ndim - 2, a->ndim - 1, "mT");
    }
    return leave_view(sc, st, TT_OP_MT, out, a, NULL);
}

/* "2, 1, 3": the first k entries of perm, 1-based. */
static void perm_args(char *buf, size_t n, const int *perm, int k)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < k && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%d", i ? ", " : "", perm[i] + 1);
}

tt_status tt_permute(tt_tensor *out, const tt_tensor *a, const int *perm)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = TT_OK;
    int seen[TT_MAX_DIMS] = {0};
    char args[64] = "";
    memset(out, 0, sizeof *out);
    for (int i = 0; i < a->ndim && st == TT_OK; i++) {
        if (perm[i] < 0 || perm[i] >= a->ndim || seen[perm[i]]++) {
            char shp[256];
            perm_args(args, sizeof args, perm, i + 1);
            st = tt__err(TT_EARG, "permute: (%s...) is not a permutation of the %d dims of %s", args,
                         a->ndim, tt_shape_str(a, shp, sizeof shp));
        }
    }
    if (st == TT_OK && tt__tracing()) perm_args(args, sizeof args, perm, a->ndim);
    if (st == TT_OK) {
        tt__view_of(out, a);
        for (int i = 0; i < a->ndim; i++) {
            out->shape[i] = a->shape[perm[i]];
            out->stride[i] = a->stride[perm[i]];
            out->names[i] = a->names[perm[i]];
        }
    }
    return leave_view(sc, st, TT_OP_PERMUTE, out, a, args);
}

static tt_status narrow_impl(tt_tensor *out, const tt_tensor *a, int d, int64_t start, int64_t len, const char *op)
{
    memset(out, 0, sizeof *out);
    tt_status st = tt__check_dim(op, a, d, 0);
    if (st) return st;
    if (start < 0 || len < 0 || start > a->shape[d] || len > a->shape[d] - start) {
        char shp[256];
        return tt__err(TT_EARG, "%s: range start %lld, length %lld is outside dim %d of %s (size %lld)",
                       op, (long long)start + 1, (long long)len, d + 1, tt_shape_str(a, shp, sizeof shp),
                       (long long)a->shape[d]);
    }
    tt__view_of(out, a);
    out->offset += start * a->stride[d];
    out->shape[d] = len;
    return TT_OK;
}

tt_status tt_narrow(tt_tensor *out, const tt_tensor *a, int d, int64_t start, int64_t len)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = narrow_impl(out, a, d, start, len, "narrow");
    char args[64] = "";
    if (tt__tracing())
        snprintf(args, sizeof args, "dim=%d, start=%lld, len=%lld", d + 1, (long long)start + 1, (long long)len);
    return leave_view(sc, st, TT_OP_NARROW, out, a, args);
}

tt_status tt_select(tt_tensor *out, const tt_tensor *a, int d, int64_t i)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__check_dim("select", a, d, 0);
    memset(out, 0, sizeof *out);
    if (st == TT_OK && (i < 0 || i >= a->shape[d])) {
        char shp[256];
        st = tt__err(TT_EARG, "select: index %lld out of range for dim %d of %s (valid 1..%lld)",
                     (long long)i + 1, d + 1, tt_shape_str(a, shp, sizeof shp), (long long)a->shape[d]);
    }
    if (st == TT_OK) {
        tt__view_of(out, a);
        out->offset += i * a->stride[d];
        for (int j = d; j < a->ndim - 1; j++) {
            out->shape[j] = a->shape[j + 1];
            out->stride[j] = a->stride[j + 1];
            out->names[j] = a->names[j + 1];
        }
        out->ndim--;
        out->names[out->ndim] = NULL;
    }
    char args[48] = "";
    if (tt__tracing()) snprintf(args, sizeof args, "dim=%d, index=%lld", d + 1, (long long)i + 1);
    return leave_view(sc, st, TT_OP_SELECT, out, a, args);
}

tt_status tt_expand(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = TT_OK;
    char shp[256], want[256];
    memset(out, 0, sizeof *out);
    shape_args(want, sizeof want, ndim > TT_MAX_DIMS ? TT_MAX_DIMS : ndim, shape);
    if (ndim < a->ndim || ndim > TT_MAX_DIMS) {
        st = tt__err(TT_ESHAPE, "expand: cannot expand %s to [%s] (%s)", tt_shape_str(a, shp, sizeof shp), want,
                     ndim > TT_MAX_DIMS ? "too many dims" : "fewer dims than the tensor");
    } else {
        tt_tensor r = *a;
        int lead = ndim - a->ndim;
        for (int i = 0; i < ndim && st == TT_OK; i++) {
            int j = i - lead;
            int64_t cur = j >= 0 ? a->shape[j] : 1;
            int64_t want_i = shape[i] == -1 && j >= 0 ? cur : shape[i];
            if (want_i < 0 || (cur != 1 && cur != want_i)) {
                st = tt__err(TT_ESHAPE, "expand: cannot expand %s to [%s]: dim %d has size %lld, only size-1 "
                             "dims can grow", tt_shape_str(a, shp, sizeof shp), want, i + 1, (long long)cur);
                break;
            }
            r.shape[i] = want_i;
            r.stride[i] = (j < 0 || (cur == 1 && want_i != 1)) ? 0 : a->stride[j];
            r.names[i] = j >= 0 ? a->names[j] : NULL;
        }
        int64_t n;
        if (st == TT_OK) st = tt__numel_checked("expand", ndim, r.shape, &n);   /* no wrapped numel */
        if (st == TT_OK) {
            r.ndim = ndim;
            tt__view_of(out, &r);
        }
    }
    return leave_view(sc, st, TT_OP_EXPAND, out, a, NULL);
}

tt_status tt_unsqueeze(tt_tensor *out, const tt_tensor *a, int d)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__check_dim("unsqueeze", a, d, 1);
    memset(out, 0, sizeof *out);
    if (st == TT_OK && a->ndim >= TT_MAX_DIMS)
        st = tt__err(TT_EARG, "unsqueeze: a tensor has at most %d dims", TT_MAX_DIMS);
    if (st == TT_OK) {
        tt__view_of(out, a);
        for (int j = a->ndim; j > d; j--) {
            out->shape[j] = a->shape[j - 1];
            out->stride[j] = a->stride[j - 1];
            out->names[j] = a->names[j - 1];
        }
        out->shape[d] = 1;
        out->stride[d] = d < a->ndim ? a->shape[d] * a->stride[d] : 1;
        out->names[d] = NULL;
        out->ndim++;
    }
    char args[16] = "";
    if (tt__tracing()) snprintf(args, sizeof args, "dim=%d", d + 1);
    return leave_view(sc, st, TT_OP_UNSQUEEZE, out, a, args);
}

tt_status tt_squeeze(tt_tensor *out, const tt_tensor *a, int d)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = d >= 0 ? tt__check_dim("squeeze", a, d, 0) : TT_OK;
    memset(out, 0, sizeof *out);
    if (st == TT_OK) {
        tt__view_of(out, a);
        int k = 0;
        for (int j = 0; j < a->ndim; j++) {
            int drop = a->shape[j] == 1 && (d < 0 || j == d);
            if (drop) continue;
            out->shape[k] = a->shape[j];
            out->stride[k] = a->stride[j];
            out->names[k] = a->names[j];
            k++;
        }
        for (int j = k; j < TT_MAX_DIMS; j++) out->names[j] = NULL;
        out->ndim = k;
    }
    char args[16] = "";
    if (d >= 0 && tt__tracing()) snprintf(args, sizeof args, "dim=%d", d + 1);
    return leave_view(sc, st, TT_OP_SQUEEZE, out, a, args);
}

static tt_status clone_impl(tt_tensor *out, const tt_tensor *a, const char *op)
{
    tt_status st = tt__alloc(out, op, a->dtype, a->ndim, a->shape, a->names);
    if (st == TT_OK) tt__copy(out, a);
    return st;
}

tt_status tt_contiguous(tt_tensor *out, const tt_tensor *a)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = TT_OK;
    if (tt_is_contiguous(a)) tt__view_of(out, a);
    else st = clone_impl(out, a, "contiguous");
    return leave_view(sc, st, TT_OP_CONTIGUOUS, out, a, NULL);
}

tt_status tt_clone(tt_tensor *out, const tt_tensor *a)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = clone_impl(out, a, "clone");
    return leave_view(sc, st, TT_OP_CLONE, out, a, NULL);
}

tt_status tt_named(tt_tensor *out, const tt_tensor *a, const char *const *names)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = TT_OK;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < a->ndim && st == TT_OK; i++)
        for (int j = 0; j < i; j++)
            if (names[i] && names[i] == names[j]) {
                st = tt__err(TT_EARG, "named: name '%s' is used for dims %d and %d", names[i], j + 1, i + 1);
                break;
            }
    if (st == TT_OK) {
        tt__view_of(out, a);
        for (int i = 0; i < a->ndim; i++) out->names[i] = names[i];
    }
    return leave_view(sc, st, TT_OP_NAMED, out, a, NULL);
}

/* Pieces of at most `piece` along d; shared by chunk and split. */
static tt_status pieces(tt_tensor *outs, int max, int *count, const tt_tensor *a, int64_t piece,
                        int d, tt_op op, const char *opname)
{
    *count = 0;
    tt_status st = tt__check_dim(opname, a, d, 0);
    if (st) return st;
    int64_t size = a->shape[d];
    int64_t n = size == 0 ? 1 : size / piece + (size % piece != 0);   /* ceil without overflow */
    if (n > max) return tt__err(TT_EARG, "%s: %lld pieces is more than the %d allowed", opname, (long long)n, max);
    for (int64_t i = 0; i < n; i++) {
        int64_t start = i * piece, len = size - start < piece ? size - start : piece;
        tt__opscope sc = tt__op_enter();
        st = narrow_impl(&outs[i], a, d, start, len, opname);
        char args[48] = "";
        if (tt__tracing())
            snprintf(args, sizeof args, "%lld of %lld, dim=%d", (long long)i + 1, (long long)n, d + 1);
        st = leave_view(sc, st, op, &outs[i], a, args);
        if (st) {
            for (int64_t j = 0; j < i; j++) tt_tensor_release(&outs[j]);
            return st;
        }
    }
    *count = (int)n;
    return TT_OK;
}

tt_status tt_chunk(tt_tensor *outs, int max, int *count, const tt_tensor *a, int64_t n, int d)
{
    *count = 0;
    if (n <= 0) return tt__err(TT_EARG, "chunk: number of chunks must be positive, got %lld", (long long)n);
    tt_status st = tt__check_dim("chunk", a, d, 0);
    if (st) return st;
    int64_t piece = a->shape[d] / n + (a->shape[d] % n != 0);   /* ceil without overflow */
    return pieces(outs, max, count, a, piece ? piece : 1, d, TT_OP_CHUNK, "chunk");
}

tt_status tt_split(tt_tensor *outs, int max, int *count, const tt_tensor *a, int64_t size, int d)
{
    *count = 0;
    if (size <= 0) return tt__err(TT_EARG, "split: split size must be positive, got %lld", (long long)size);
    return pieces(outs, max, count, a, size, d, TT_OP_SPLIT, "split");
}
