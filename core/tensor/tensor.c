/*
** tensor.c — tensor queries, allocation and the random generator, all
** untraced (the traced ops live in core/ops/). Part of the C core: no Lua here.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernels.h"
#include "tensor/iter.h"
#include "tt_internal.h"

/* ===== Tensors ===== */

static uint64_t id_counter;

uint64_t tt__next_id(void) { return ++id_counter; }

void tt_release_caches(void)
{
    tk_threads_stop();
    tt__storage_drop_cache();
    tt__graph_drop_cache();
    tt__intern_free();
}

void tt_tensor_release(tt_tensor *t)
{
    if (t == NULL) return;
    tt__storage_release(t->storage);
    t->storage = NULL;
    tt__ag_release(t->ag);
    t->ag = NULL;
}

void tt_tensor_share(tt_tensor *out, const tt_tensor *a)
{
    *out = *a;
    tt__storage_retain(out->storage);
    out->ag = NULL;
}

/* ===== Basic queries ===== */

size_t tt_dtype_size(tt_dtype dt)
{
    return dt == TT_BOOL ? 1 : dt == TT_INT64 ? 8 : dt == TT_BFLOAT16 || dt == TT_FLOAT16 ? 2 : 4;
}

const char *tt_dtype_name(tt_dtype dt)
{
    static const char *names[] = { "float32", "bool", "int64", "bfloat16", "float16" };
    return dt >= 0 && dt <= TT_FLOAT16 ? names[dt] : "?";
}

int tt_dtype_is_float(tt_dtype dt) { return dt == TT_FLOAT32 || dt == TT_BFLOAT16 || dt == TT_FLOAT16; }

tt_dtype tt_promote_float(tt_dtype a, tt_dtype b) { return a == b ? a : TT_FLOAT32; }

uint16_t tt_half_from_float(tt_dtype dt, float v)
{
    return dt == TT_BFLOAT16 ? tk_bf16_from_f32(v) : tk_f16_from_f32(v);
}

float tt_half_to_float(tt_dtype dt, uint16_t h) { return dt == TT_BFLOAT16 ? tk_bf16_to_f32(h) : tk_f16_to_f32(h); }

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
int64_t *tt_data_i64(const tt_tensor *t) { return (int64_t *)t->storage->data + t->offset; }
uint16_t *tt_data_u16(const tt_tensor *t) { return (uint16_t *)t->storage->data + t->offset; }

double tt_get(const tt_tensor *t, int64_t flat)
{
    int64_t off = t->offset + tt__offset_of(t->ndim, t->shape, t->stride, flat);
    if (t->dtype == TT_BOOL) return ((const uint8_t *)t->storage->data)[off];
    if (t->dtype == TT_INT64) return (double)((const int64_t *)t->storage->data)[off];
    if (t->dtype != TT_FLOAT32) return tt_half_to_float(t->dtype, ((const uint16_t *)t->storage->data)[off]);
    return ((const float *)t->storage->data)[off];
}

int64_t tt_get_i64(const tt_tensor *t, int64_t flat)
{
    int64_t off = t->offset + tt__offset_of(t->ndim, t->shape, t->stride, flat);
    if (t->dtype == TT_INT64) return ((const int64_t *)t->storage->data)[off];
    return tt__f64_to_i64(tt_get(t, flat));
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
    int64_t limit = INT64_MAX / 8;  /* the bytes of 8-byte elements fit in int64... */
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) limit = INT64_MAX;   /* ...unless there are none: then only the strides */
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return tt__err(TT_EARG, "%s: negative size %lld at dim %d", op, (long long)shape[i], i + 1);
        if (shape[i] && nz > limit / shape[i]) {
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
        char tmp[TT__ERRMSG_SIZE], shp[256];
        tt_tensor probe = {0};
        probe.ndim = ndim;
        if (ndim) memcpy(probe.shape, shape, (size_t)ndim * sizeof *shape);
        snprintf(tmp, sizeof tmp, "%s", tt_errmsg());
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
    out->ag = NULL;                     /* a view joins the graph only when its op records it */
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

void tt__rand_uniform_bits(float *p, int64_t n, int bits)
{
    rng r = rng_load();
    const double unit = ldexp(1.0, -bits);
    for (int64_t i = 0; i < n; i++) p[i] = (float)((double)(rng_next(&r) >> (32 - bits)) * unit);
    rng_save(&r);
}

void tt__rand_uniform(float *p, int64_t n) { tt__rand_uniform_bits(p, n, 24); }

void tt__rand_int(int64_t *p, int64_t n, int64_t lo, uint64_t range)
{
    rng r = rng_load();
    uint64_t low = range ? (0 - range) % range : 0;   /* 2^64 mod range: the draws to reject */
    for (int64_t i = 0; i < n; i++) {
        uint64_t x;
        do {
            x = (uint64_t)rng_next(&r) << 32;
            x |= rng_next(&r);
        } while (x < low);
        p[i] = (int64_t)((uint64_t)lo + (range ? x % range : x));
    }
    rng_save(&r);
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

void tt__rand_normal(float *p, int64_t n)
{
    int64_t pairs = n / 2;
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
}
