/*
** test_tensor.c — the tensor layer itself: the strided iterator against a
** naive odometer written here (transposed, broadcast, narrowed, 0-size,
** 1-size and 8-dim operands; rows and tiles; 1, 2 and 3 threads), copy of
** transposed and permuted views, tt_get and tt_get_floats on strided views;
** big storage buffers (2 MiB aligned, huge pages asked for on Linux, zeroed,
** reused from the cache, counted exactly under the memory cap).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tensor/iter.h"
#include "tt.h"

#define SENTINEL -1.0f

static uint64_t rng = 88172645463325252u;

static int64_t urand(int64_t n)                 /* xorshift64, [0, n) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int64_t)(rng >> 11) % n;
}

static int ok(tt_status st)
{
    if (st != TT_OK) printf("  unexpected error: %s\n", tt_errmsg());
    return st == TT_OK;
}

/* ===== The iterator against an odometer ===== */

/* One operand: a float buffer, element 0 at offset, strides along shape. */
typedef struct operand {
    float *buf;
    int64_t len, offset;
    int64_t stride[TT_MAX_DIMS];
} operand;

/* out = x + 1000 y, elementwise: every value is an exact small integer. */
static void sum_row(void *ctx, int64_t n, char *const *p, const int64_t *inc)
{
    (void)ctx;
    float *o = (float *)p[0];
    const float *x = (const float *)p[1], *y = (const float *)p[2];
    for (int64_t i = 0; i < n; i++) o[i * inc[0]] = x[i * inc[1]] + 1000 * y[i * inc[2]];
}

/* The output: contiguous strides of shape, dims visited in a random order
   (a transposed or permuted output), so each element has its own place. */
static void make_output(operand *o, int nd, const int64_t *shape, int permute)
{
    int order[TT_MAX_DIMS];
    for (int i = 0; i < nd; i++) order[i] = i;
    for (int i = nd - 1; permute && i > 0; i--) {
        int j = (int)urand(i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        o->stride[order[i]] = s;
        s *= shape[order[i]];
    }
    o->offset = 0;
    o->len = s ? s : 1;
    o->buf = malloc((size_t)o->len * sizeof *o->buf);
    for (int64_t i = 0; i < o->len; i++) o->buf[i] = SENTINEL;
}

/* An input: strides of a bigger permuted buffer (a narrowed, transposed
   view), 0 on broadcast dims, at an offset. */
static void make_input(operand *x, int nd, const int64_t *shape, int layout)
{
    int64_t s = 1 + (layout == 3);            /* 3: every other element */
    int order[TT_MAX_DIMS];
    for (int i = 0; i < nd; i++) order[i] = i;
    if (layout >= 1)                          /* transposed: the two inner dims swapped, or permuted */
        for (int i = nd - 1; i > 0; i--) {
            int j = layout == 1 ? i - 1 : (int)urand(i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
            if (layout == 1) break;
        }
    for (int i = nd - 1; i >= 0; i--) {
        int d = order[i];
        int broadcast = layout == 4 ? d % 2 == 0 : urand(5) == 0;
        x->stride[d] = broadcast ? 0 : s;
        if (!broadcast) s *= shape[d] + urand(2);   /* room around: a narrowed view */
    }
    x->offset = urand(5);
    x->len = x->offset + s + 1;
    x->buf = malloc((size_t)x->len * sizeof *x->buf);
    for (int64_t i = 0; i < x->len; i++) x->buf[i] = (float)(urand(997));
}

/* The reference: every index in row-major order, offsets summed. */
static void odometer(int nd, const int64_t *shape, operand *o, const operand *x, const operand *y)
{
    int64_t idx[TT_MAX_DIMS] = {0}, n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    for (int64_t e = 0; e < n; e++) {
        int64_t oo = o->offset, xo = x->offset, yo = y->offset;
        for (int i = 0; i < nd; i++) {
            oo += idx[i] * o->stride[i];
            xo += idx[i] * x->stride[i];
            yo += idx[i] * y->stride[i];
        }
        o->buf[oo] = (float)((double)x->buf[xo] + 1000.0 * (double)y->buf[yo]);
        for (int i = nd - 1; i >= 0; i--) {
            if (++idx[i] < shape[i]) break;
            idx[i] = 0;
        }
    }
}

static int same(const float *a, const float *b, int64_t n)
{
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

/* One walk of shape with the given layouts, through rows and tiles, against
   the odometer. */
static void walk_case(const char *what, int nd, const int64_t *shape, int out_perm, int xl, int yl)
{
    operand o, r, x, y;
    make_output(&o, nd, shape, out_perm);
    r = o;
    r.buf = malloc((size_t)r.len * sizeof *r.buf);
    memcpy(r.buf, o.buf, (size_t)r.len * sizeof *r.buf);
    make_input(&x, nd, shape, xl);
    make_input(&y, nd, shape, yl);
    odometer(nd, shape, &r, &x, &y);

    int64_t st[TT__ITER_OPS][TT_MAX_DIMS];
    memcpy(st[0], o.stride, sizeof st[0]);
    memcpy(st[1], x.stride, sizeof st[1]);
    memcpy(st[2], y.stride, sizeof st[2]);
    void *base[TT__ITER_OPS] = { o.buf + o.offset, x.buf + x.offset, y.buf + y.offset };
    size_t es[TT__ITER_OPS] = { 4, 4, 4 };
    tt__iter it;
    tt__iter_init(&it, nd, shape, 3, (const int64_t (*)[TT_MAX_DIMS])st, base, es);
    char d[160];

    tt__iter_run(&it, 1, sum_row, NULL);
    snprintf(d, sizeof d, "%s: rows match the odometer", what);
    CHECK(d, same(o.buf, r.buf, o.len));

    for (int64_t i = 0; i < o.len; i++) o.buf[i] = SENTINEL;
    tt__iter_run_ew(&it, sum_row, NULL);
    snprintf(d, sizeof d, "%s: elementwise (tiles where they apply) match the odometer", what);
    CHECK(d, same(o.buf, r.buf, o.len));

    /* any split into ranges gives the same walk */
    for (int64_t i = 0; i < o.len; i++) o.buf[i] = SENTINEL;
    int64_t cut = it.numel ? urand(it.numel + 1) : 0;
    tt__iter_range(&it, cut, it.numel, sum_row, NULL);
    tt__iter_range(&it, 0, cut, sum_row, NULL);
    snprintf(d, sizeof d, "%s: two ranges match the odometer", what);
    CHECK(d, same(o.buf, r.buf, o.len));
    free(o.buf);
    free(r.buf);
    free(x.buf);
    free(y.buf);
}

static void test_iter_shapes(void)
{
    static const int64_t sizes[] = { 0, 1, 1, 2, 3, 5, 8, 9, 17 };
    for (int trial = 0; trial < 300; trial++) {
        int nd = (int)urand(TT_MAX_DIMS + 1);
        int64_t shape[TT_MAX_DIMS], n = 1;
        for (int i = 0; i < nd; i++) {
            shape[i] = sizes[urand(sizeof sizes / sizeof *sizes)];
            if (n * shape[i] > 20000) shape[i] = 1;
            n *= shape[i];
        }
        char what[64];
        snprintf(what, sizeof what, "random walk %d (%d dims)", trial, nd);
        walk_case(what, nd, shape, (int)urand(2), (int)urand(5), (int)urand(5));
    }
    /* big enough for threads and for tiles */
    walk_case("[300,517] x transposed", 2, (int64_t[]){300, 517}, 0, 1, 0);
    walk_case("[300,517] x and y transposed", 2, (int64_t[]){300, 517}, 0, 1, 1);
    walk_case("[300,517] y transposed, x broadcast", 2, (int64_t[]){300, 517}, 0, 4, 1);
    walk_case("[3,130,171] x transposed, y every other", 3, (int64_t[]){3, 130, 171}, 0, 1, 3);
    walk_case("[2,1,129,257] out permuted", 4, (int64_t[]){2, 1, 129, 257}, 1, 2, 2);
    walk_case("[2,3,2,5,1,7,4,9] eight dims", 8, (int64_t[]){2, 3, 2, 5, 1, 7, 4, 9}, 0, 2, 4);
    walk_case("[2,3,2,5,1,7,4,9] eight dims, big", 8, (int64_t[]){4, 3, 2, 5, 1, 7, 4, 33}, 1, 1, 2);
    walk_case("[7,0,300] an empty dim", 3, (int64_t[]){7, 0, 300}, 0, 1, 1);
    walk_case("[] a scalar", 0, (int64_t[]){0}, 0, 0, 0);
}

/* Dim merging: a contiguous walk is one row, broadcast and size-1 dims go. */
static void test_iter_merge(void)
{
    int64_t st[TT__ITER_OPS][TT_MAX_DIMS] = {{12, 4, 1}, {12, 4, 1}, {0, 4, 1}};
    void *base[TT__ITER_OPS] = { NULL, NULL, NULL };
    size_t es[TT__ITER_OPS] = { 4, 4, 4 };
    tt__iter it;
    tt__iter_init(&it, 3, (int64_t[]){2, 3, 4}, 2, (const int64_t (*)[TT_MAX_DIMS])st, base, es);
    CHECK("contiguous [2,3,4]: one row of 24", it.ndim == 1 && it.shape[0] == 24 && it.numel == 24);
    tt__iter_init(&it, 3, (int64_t[]){2, 3, 4}, 3, (const int64_t (*)[TT_MAX_DIMS])st, base, es);
    CHECK("broadcast outer dim: two dims [12, 2]", it.ndim == 2 && it.shape[0] == 12 && it.shape[1] == 2);
    CHECK("broadcast outer dim: stride 0 kept", it.stride[2][1] == 0 && it.stride[0][1] == 12);
    int64_t one[TT__ITER_OPS][TT_MAX_DIMS] = {{5, 1, 1}};
    tt__iter_init(&it, 3, (int64_t[]){1, 1, 1}, 1, (const int64_t (*)[TT_MAX_DIMS])one, base, es);
    CHECK("all size-1 dims: one element, stride 0", it.ndim == 1 && it.shape[0] == 1 && it.stride[0][0] == 0);
    CHECK("offset of a flat index", tt__offset_of(3, (int64_t[]){2, 3, 4}, (int64_t[]){1, 8, 2}, 23) == 1 + 16 + 6);
}

/* ===== Copy, tt_get and tt_get_floats through views ===== */

/* Element at flat row-major index i of t, read through its strides here. */
static double read_at(const tt_tensor *t, int64_t i)
{
    int64_t off = t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (i % t->shape[d]) * t->stride[d];
        i /= t->shape[d];
    }
    if (t->dtype == TT_BOOL) return ((const uint8_t *)t->storage->data)[off];
    if (t->dtype == TT_INT64) return (double)((const int64_t *)t->storage->data)[off];
    return ((const float *)t->storage->data)[off];
}

/* contiguous(v), tt_get and tt_get_floats all read v as read_at does. */
static void check_view(const char *what, const tt_tensor *v)
{
    int64_t n = tt_numel(v);
    tt_tensor c;
    char d[160];
    if (!ok(tt_contiguous(&c, v))) return;
    int copy_ok = tt_is_contiguous(&c), get_ok = 1, floats_ok = 1;
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    tt_get_floats(v, f);
    for (int64_t i = 0; i < n; i++) {
        double want = read_at(v, i);
        copy_ok &= read_at(&c, i) == want;
        get_ok &= tt_get(v, i) == want;
        floats_ok &= (double)f[i] == want;
    }
    snprintf(d, sizeof d, "%s: contiguous copy", what);
    CHECK(d, copy_ok);
    snprintf(d, sizeof d, "%s: tt_get", what);
    CHECK(d, get_ok);
    snprintf(d, sizeof d, "%s: tt_get_floats", what);
    CHECK(d, floats_ok);
    free(f);
    tt_tensor_release(&c);
}

static void test_views(tt_dtype dt)
{
    const char *dn = tt_dtype_name(dt);
    char what[96];
    tt_tensor a, b, t, p, nrw, s;
    int64_t shape[4] = {3, 67, 131, 5};
    if (!ok(tt_rand(&a, 4, shape))) return;
    if (dt == TT_BOOL) {
        tt_tensor half;
        if (!ok(tt_full(&half, TT_FLOAT32, 0, NULL, 0.5))) return;
        if (!ok(tt_binary(&b, TT_OP_LT, &a, &half))) return;
        tt_tensor_release(&half);
    } else if (dt == TT_INT64) {
        if (!ok(tt_randint(&b, -1000000, 1000000, 4, shape))) return;
    } else {
        if (!ok(tt_clone(&b, &a))) return;
    }
    if (ok(tt_transpose(&t, &b, 1, 2))) {
        snprintf(what, sizeof what, "%s [3,67,131,5] transposed 2,3", dn);
        check_view(what, &t);
        tt_tensor_release(&t);
    }
    if (ok(tt_transpose(&t, &b, 2, 3))) {
        snprintf(what, sizeof what, "%s [3,67,131,5] transposed 3,4", dn);
        check_view(what, &t);
        if (ok(tt_narrow(&nrw, &t, 3, 9, 100))) {
            snprintf(what, sizeof what, "%s transposed then narrowed", dn);
            check_view(what, &nrw);
            if (ok(tt_select(&s, &nrw, 0, 2))) {
                snprintf(what, sizeof what, "%s transposed, narrowed, selected", dn);
                check_view(what, &s);
                tt_tensor_release(&s);
            }
            tt_tensor_release(&nrw);
        }
        tt_tensor_release(&t);
    }
    if (ok(tt_permute(&p, &b, (int[]){3, 0, 2, 1}))) {
        snprintf(what, sizeof what, "%s [3,67,131,5] permuted 4,1,3,2", dn);
        check_view(what, &p);
        tt_tensor_release(&p);
    }
    if (ok(tt_narrow(&nrw, &b, 3, 1, 3)) && ok(tt_expand(&s, &nrw, 5, (int64_t[]){2, 3, 67, 131, 3}))) {
        snprintf(what, sizeof what, "%s narrowed and expanded (stride 0)", dn);
        check_view(what, &s);
        tt_tensor_release(&s);
    }
    tt_tensor_release(&nrw);
    if (ok(tt_narrow(&nrw, &b, 1, 5, 0))) {
        snprintf(what, sizeof what, "%s with an empty dim", dn);
        check_view(what, &nrw);
        tt_tensor_release(&nrw);
    }
    tt_tensor_release(&a);
    tt_tensor_release(&b);
}

/* tt_to_dtype with int64 against a double reference, on a strided view:
   truncation toward zero, NaN and out-of-range floats to INT64_MIN. */
static void test_int64_convert(void)
{
    const float src[8] = {1.5f, -1.5f, 0.0f, -0.0f, 1e19f, -3e9f, NAN, 16777216.0f};
    tt_tensor f, v, l, back, b;
    if (!ok(tt_from_buffer(&f, TT_FLOAT32, 2, (int64_t[]){4, 2}, src))) return;
    if (!ok(tt_mT(&v, &f))) return;                 /* [2,4], strides (1,2) */
    if (!ok(tt_to_dtype(&l, &v, TT_INT64))) return;
    int good = l.dtype == TT_INT64 && tt_is_contiguous(&l);
    for (int i = 0; i < 8; i++) {
        double x = src[(i % 4) * 2 + i / 4];
        int64_t want = isnan(x) || fabs(x) >= 9223372036854775808.0 ? INT64_MIN : (int64_t)trunc(x);
        good &= tt_get_i64(&l, i) == want;
    }
    CHECK("float32 -> int64 truncates toward zero; NaN and overflow give INT64_MIN", good);
    if (ok(tt_to_dtype(&back, &l, TT_FLOAT32))) {
        CHECK("int64 -> float32", tt_get(&back, 0) == 1.0 && tt_get(&back, 1) == 0.0 && tt_get(&back, 4) == -1.0
                                   && tt_get(&back, 6) == -3e9 && tt_get(&back, 7) == 16777216.0);
        tt_tensor_release(&back);
    }
    if (ok(tt_to_dtype(&b, &l, TT_BOOL))) {
        CHECK("int64 -> bool", tt_get(&b, 0) == 1 && tt_get(&b, 1) == 0 && tt_get(&b, 4) == 1 && tt_get(&b, 5) == 0);
        if (ok(tt_to_dtype(&back, &b, TT_INT64))) {
            CHECK("bool -> int64 is 0/1", tt_get_i64(&back, 0) == 1 && tt_get_i64(&back, 1) == 0 && tt_get_i64(&back, 4) == 1);
            tt_tensor_release(&back);
        }
        tt_tensor_release(&b);
    }
    tt_tensor_release(&l);
    tt_tensor_release(&v);
    tt_tensor_release(&f);
}

/* randint: every value in [lo, hi), each of a small range drawn about
   equally often (a biased draw would skew the counts), the seed repeats. */
static void test_randint(void)
{
    tt_tensor a, b;
    int64_t n = 70000;
    tt_manual_seed(11);
    if (!ok(tt_randint(&a, -3, 4, 1, &n))) return;
    tt_manual_seed(11);
    if (!ok(tt_randint(&b, -3, 4, 1, &n))) return;
    int64_t count[7] = {0};
    int inrange = 1, same = 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = tt_get_i64(&a, i);
        inrange &= v >= -3 && v < 4;
        if (v >= -3 && v < 4) count[v + 3]++;
        same &= v == tt_get_i64(&b, i);
    }
    CHECK("randint: values in [lo, hi)", inrange);
    CHECK("randint: same seed, same numbers", same);
    int even = 1;
    for (int k = 0; k < 7; k++) even &= count[k] > 9500 && count[k] < 10500;
    CHECK("randint: each value about 1/7 of the draws", even);
    tt_tensor_release(&a);
    tt_tensor_release(&b);
    CHECK("randint: hi <= lo is TT_EARG", tt_randint(&a, 5, 5, 1, &n) == TT_EARG && strstr(tt_errmsg(), "randint"));
    int64_t one = 4;
    if (ok(tt_randint(&a, INT64_MIN, INT64_MAX, 1, &one))) {     /* a range of nearly 2^64 */
        CHECK("randint: the widest range", a.dtype == TT_INT64);
        tt_tensor_release(&a);
    }
}

/* Whether the mapping holding p has the kernel's "hg" flag (MADV_HUGEPAGE
   given): -1 where /proc/self/smaps cannot be read. */
static int huge_page_advised(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (f == NULL) return -1;
    char line[512];
    int inside = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            found = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

/* Transparent huge pages on in "madvise" or "always" mode. */
static int thp_enabled(void)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char line[128] = "";
    if (f == NULL) return 0;
    if (fgets(line, sizeof line, f) == NULL) line[0] = 0;
    fclose(f);
    return strstr(line, "[madvise]") || strstr(line, "[always]");
}

static void test_big_storage(void)
{
    const int64_t base = tt_memory_in_use(), nbytes = (3 << 20) + 100;   /* class 3.5 MiB */
    tt_storage *s;
    if (!ok(tt__storage_new(&s, nbytes, 1))) return;
    unsigned char *data = s->data;
    int64_t nonzero = 0;
    for (int64_t i = 0; i < nbytes; i++) nonzero += data[i] != 0;
    CHECK("big storage: zeroed", nonzero == 0);
    CHECK("big storage: counted at its size", tt_memory_in_use() == base + nbytes);
#ifdef __linux__
    CHECK("big storage: 2 MiB aligned", (uintptr_t)data % (2u << 20) == 0);
    if (thp_enabled()) CHECK("big storage: huge pages asked for", huge_page_advised(data) != 0);
#endif
    memset(data, 7, (size_t)nbytes);
    tt__storage_release(s);
    CHECK("big storage: released, uncounted", tt_memory_in_use() == base);
    if (!ok(tt__storage_new(&s, nbytes, 1))) return;
    CHECK("big storage: the cached buffer is handed out again", s->data == data);
    nonzero = 0;
    for (int64_t i = 0; i < nbytes; i++) nonzero += data[i] != 0;
    CHECK("big storage: zeroed again from the cache", nonzero == 0);
    tt__storage_release(s);
    /* under a cap the cached 3.5 MiB counts: 4 MiB more fit only once it is dropped */
    tt_set_max_memory(tt_memory_in_use() + (6 << 20));
    tt_storage *t;
    CHECK("big storage: the cache yields to the cap", ok(tt__storage_new(&t, 4 << 20, 0)));
    tt__storage_release(t);
    CHECK("big storage: a buffer over the cap is refused",
          tt__storage_new(&t, 7 << 20, 0) == TT_ENOMEM && t == NULL && strstr(tt_errmsg(), "memory cap"));
    tt_set_max_memory(0);
    CHECK("big storage: nothing left counted", tt_memory_in_use() == base);
}

/* Medium buffers (64 KiB up to 2 MiB) are cut from 2 MiB slabs that ask for
   huge pages; a slab goes back to malloc once all its buffers are dropped. */
static void test_medium_storage(void)
{
    const int64_t base = tt_memory_in_use(), nbytes = (224 << 10) - 100;   /* class 224 KiB: 9 a slab */
    enum { PER_SLAB = (2 << 20) / (224 << 10), N = PER_SLAB + 2 };
    tt_storage *s[N];
    int made = 0;
    for (; made < N; made++)
        if (!ok(tt__storage_new(&s[made], nbytes, 1))) break;
    if (made < N) {
        while (made > 0) tt__storage_release(s[--made]);
        return;
    }
    int zeroed = 1, apart = 1;
    for (int i = 0; i < N; i++) {
        const unsigned char *d = s[i]->data;
        for (int64_t j = 0; j < nbytes; j++) zeroed &= d[j] == 0;
        for (int j = 0; j < i; j++) {            /* no two overlap */
            const unsigned char *e = s[j]->data;
            apart &= d + nbytes <= e || e + nbytes <= d;
        }
        memset(s[i]->data, 0x5a, (size_t)nbytes);
    }
    CHECK("medium storage: zeroed", zeroed);
    CHECK("medium storage: no two buffers overlap", apart);
    CHECK("medium storage: counted at their size", tt_memory_in_use() == base + N * nbytes);
#ifdef __linux__
    uintptr_t slab0 = (uintptr_t)s[0]->data & ~(uintptr_t)((2 << 20) - 1);
    int same = 1;
    for (int i = 1; i < PER_SLAB; i++) same &= ((uintptr_t)s[i]->data & ~(uintptr_t)((2 << 20) - 1)) == slab0;
    CHECK("medium storage: a class's buffers share a 2 MiB block", same);
    if (thp_enabled()) CHECK("medium storage: huge pages asked for", huge_page_advised(s[0]->data) != 0);
#endif
    void *first = s[0]->data;
    tt__storage_release(s[0]);
    CHECK("medium storage: released, uncounted", tt_memory_in_use() == base + (N - 1) * nbytes);
    if (!ok(tt__storage_new(&s[0], nbytes, 1))) s[0] = NULL;
    else {
        CHECK("medium storage: the cached buffer is handed out again", s[0]->data == first);
        const unsigned char *d = s[0]->data;
        int z = 1;
        for (int64_t j = 0; j < nbytes; j++) z &= d[j] == 0;
        CHECK("medium storage: zeroed again from the cache", z);
    }
    /* dropped from the cache while the rest of their slab lives: the memory
       stays counted under a cap, and goes when the last buffer does */
    for (int i = 0; i < N; i += 2) if (s[i]) tt__storage_release(s[i]);
    tt__storage_drop_cache();
    for (int i = 1; i < N; i += 2) {            /* still intact */
        const unsigned char *d = s[i]->data;
        int kept = 1;
        for (int64_t j = 0; j < nbytes; j++) kept &= d[j] == 0x5a;
        if (!kept) { CHECK("medium storage: live buffers survive a cache drop", 0); break; }
    }
    tt_set_max_memory(tt_memory_in_use() + (1 << 20));   /* room for 96 KiB, not for a slab */
    tt_storage *t;
    CHECK("medium storage: dropped buffers of a live slab count under the cap",
          tt__storage_new(&t, 96 << 10, 1) == TT_ENOMEM && t == NULL && strstr(tt_errmsg(), "memory cap"));
    for (int i = 1; i < N; i += 2) tt__storage_release(s[i]);
    tt__storage_drop_cache();                    /* the slabs go */
    tt_set_max_memory(tt_memory_in_use() + (1 << 20));
    CHECK("medium storage: once the slabs are gone, a plain buffer near the cap",
          tt__storage_new(&t, 96 << 10, 1) == TT_OK && t->data != NULL);
    if (t) tt__storage_release(t);
    tt_set_max_memory(0);
    tt__storage_drop_cache();
    CHECK("medium storage: nothing left counted", tt_memory_in_use() == base);
}

int main(void)
{
    int64_t base = tt_memory_in_use();
    test_iter_merge();
    for (int threads = 1; threads <= 3; threads++) {
        tt_set_num_threads(threads);
        test_iter_shapes();
        test_views(TT_FLOAT32);
        test_views(TT_BOOL);
        test_views(TT_INT64);
    }
    test_int64_convert();
    test_randint();
    test_big_storage();
    test_medium_storage();
    CHECK("no tensor leaked", tt_memory_in_use() == base);
    tt_release_caches();
    return check_report();
}
