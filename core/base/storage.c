/*
** storage.c — refcounted storage, the cache of freed buffers, and the
** memory cap every allocation (tensors, names, figure canvases) counts
** against.
*/
#ifdef __linux__
#define _DEFAULT_SOURCE                 /* MADV_HUGEPAGE */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "base.h"

/* Under AddressSanitizer the buffers of the cache and the slabs are
   poisoned while nobody owns them (but a cached buffer's free-list link),
   and so is the slack of every buffer handed out, between its size and its
   class's: to ASan the cache and the slabs are ordinary allocations, so an
   overflow into a block's slack, into a cached buffer or into a free
   neighbour of one slab is reported (tests/test_bounds.c plants one). No
   redzone is added to the size: a larger class would change the slabs'
   slack and so what the memory cap counts, and the ASan build must hold the
   same limits as the normal one. A buffer that fills its class exactly has
   no slack; an overflow of it is seen only where its neighbour is free. */
#if defined(__SANITIZE_ADDRESS__)
#define TT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TT_ASAN 1
#endif
#endif
#ifdef TT_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static int64_t mem_in_use, mem_peak, mem_cap;
static int64_t names_bytes;             /* interned strings and their table (intern.c) */
static int64_t other_bytes;             /* figure canvases (tt__mem_reserve) */

void tt_set_max_memory(int64_t bytes) { mem_cap = bytes > 0 ? bytes : 0; }
int64_t tt_get_max_memory(void) { return mem_cap; }
int64_t tt_memory_in_use(void) { return mem_in_use; }
int64_t tt_memory_peak(void) { return mem_peak; }
void tt_memory_reset_peak(void) { mem_peak = mem_in_use; }

void tt_fmt_bytes(char *buf, size_t n, double b)
{
    if (b >= 1073741824.0) snprintf(buf, n, "%.1f GiB", b / 1073741824.0);
    else if (b >= 1048576.0) snprintf(buf, n, "%.1f MiB", b / 1048576.0);
    else if (b >= 1024.0) snprintf(buf, n, "%.1f KiB", b / 1024.0);
    else snprintf(buf, n, "%.0f bytes", b);
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
   (else each op would go back to aligned_alloc, the slowest part of it).
   From SMALL_LIMIT up, blocks are kept while all of them stay under
   CACHE_MAX_BYTES: a training step of a small model frees a cycle's worth
   of activations and gradients (a hundred or more of 512 KiB), and each
   one malloc took back would page-fault afresh in the next step (a third
   of the step's time, measured by tests/bench/train.lua). */
#define NCLASSES 240
#define SMALL_LIMIT (1 << 16)               /* below: 64 blocks a class, more within: */
#define SMALL_CACHE_BYTES ((int64_t)16 << 20)
#define CACHE_MAX_BYTES ((int64_t)512 << 20) /* above: this many bytes in all */

typedef struct freeblock { struct freeblock *next; } freeblock;
static freeblock *freelist[NCLASSES];
static int freecount[NCLASSES];
static int64_t cache_bytes, small_bytes;
static int64_t stranded_bytes;          /* medium buffers dropped while their slab lives */
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

/* the size of class idx: size_class's inverse */
static size_t class_size(int idx)
{
    if (idx < 4) return (size_t)(idx + 1) * 64;
    size_t top = (size_t)1 << (8 + (idx - 4) / 4);
    return top + (size_t)((idx - 4) % 4 + 1) * (top / 4);
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

static void buffer_free(void *p, size_t sz);

static void cache_put(void *p, size_t sz, int idx)
{
    int keep = idx < NCLASSES && (sz < SMALL_LIMIT
                                  ? freecount[idx] < 64 || small_bytes + (int64_t)sz <= SMALL_CACHE_BYTES
                                  : cache_bytes + (int64_t)sz <= CACHE_MAX_BYTES);
    /* under --max-memory, what is kept counts as in use: the process stays
       within the cap however the script frees and allocates */
    if (keep && mem_cap && mem_in_use + names_bytes + other_bytes + cache_bytes + small_bytes + stranded_bytes
                             + (int64_t)sz > mem_cap)
        keep = 0;
    if (!keep) {
        buffer_free(p, sz);
        return;
    }
    freeblock *b = p;
    UNPOISON(b, sizeof *b);                 /* a slab's fresh block is poisoned */
    b->next = freelist[idx];
    /* the link stays readable: LeakSanitizer follows no pointer in poisoned
       memory, and would call the rest of the list leaked */
    POISON((char *)p + sizeof *b, sz - sizeof *b);
    freelist[idx] = b;
    freecount[idx]++;
    if (sz >= SMALL_LIMIT) cache_bytes += (int64_t)sz;
    else small_bytes += (int64_t)sz;
}

/* A fresh buffer costs a page fault per 4 KiB on first touch, about 5 us on
   a VM: a third of a lesson's time at N = 1024. On Linux, buffers from
   HUGE_BUFFER up start on a 2 MiB boundary and ask for transparent huge
   pages, so where THP is in "madvise" mode (a common default) they fault in
   2 MiB at a time (lesson 10: 18k faults -> 2.7k, 345 -> 143 ms of CPU;
   lesson 12: 10.6k -> 2.5k, 198 -> 88 ms). The hint is advice: where the kernel refuses it or THP
   is off, the buffer is an ordinary one. Elsewhere, plain C11. */
#define HUGE_BUFFER ((size_t)2 << 20)

/* Medium buffers (SMALL_LIMIT up to HUGE_BUFFER: the activations and
   gradients of a small model) are carved from slabs, 2 MiB blocks that ask
   for huge pages like the big buffers: one fault instead of 16 to 512.
   A fresh slab is cut into as many buffers of the wanted class as fit; the
   others go to the class's free list as cache. A slab goes back to malloc
   once every buffer cut from it is dropped; a buffer dropped while others
   of its slab live is "stranded", still memory, and counts against the cap
   until its slab goes. Near the cap, medium buffers are plain ones.
   (A 4 KiB fault cost 12 us on this project's VM, a 2 MiB huge page
   about 135 us; lesson 14 faulted 3.9k-6.8k times, now 1.1k.) */
#define SLAB HUGE_BUFFER
#ifndef TT_NO_SLABS
#if defined(__linux__) && defined(MADV_HUGEPAGE)
#define TT_SLABS 1
#endif
#endif

#ifdef TT_SLABS
/* live slabs by base address: open addressing, linear probing */
typedef struct slab { uintptr_t base; int blocks; } slab;   /* blocks: cut and not dropped */
static slab *slabs;
static size_t slab_cap, slab_count;

static size_t slab_home(uintptr_t base, size_t cap) { return (size_t)((base / SLAB) * 0x9E3779B97F4A7C15ull >> 32) & (cap - 1); }

static slab *slab_find(uintptr_t base)
{
    if (!slab_count) return NULL;
    for (size_t i = slab_home(base, slab_cap);; i = (i + 1) & (slab_cap - 1)) {
        if (slabs[i].base == base) return &slabs[i];
        if (slabs[i].base == 0) return NULL;
    }
}

static int slab_insert(uintptr_t base, int blocks)
{
    if (2 * (slab_count + 1) > slab_cap) {           /* keep the table at most half full */
        size_t cap = slab_cap ? 2 * slab_cap : 64;
        slab *t = calloc(cap, sizeof *t);
        if (!t) return 0;
        for (size_t j = 0; j < slab_cap; j++) {
            if (!slabs[j].base) continue;
            size_t i = slab_home(slabs[j].base, cap);
            while (t[i].base) i = (i + 1) & (cap - 1);
            t[i] = slabs[j];
        }
        free(slabs);
        slabs = t;
        slab_cap = cap;
    }
    size_t i = slab_home(base, slab_cap);
    while (slabs[i].base) i = (i + 1) & (slab_cap - 1);
    slabs[i] = (slab){base, blocks};
    slab_count++;
    return 1;
}

static void slab_remove(slab *e)                 /* backward-shift deletion: no tombstones */
{
    size_t i = (size_t)(e - slabs), j = i;
    for (;;) {
        j = (j + 1) & (slab_cap - 1);
        if (!slabs[j].base) break;
        size_t h = slab_home(slabs[j].base, slab_cap);
        /* slabs[j] may move to the hole at i unless its home lies in (i, j] */
        if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
            slabs[i] = slabs[j];
            i = j;
        }
    }
    slabs[i].base = 0;
    slab_count--;
}

/* A fresh slab cut into buffers of class sz (index idx): returns the first,
   the others go to the free list. NULL when the cap leaves no room for a
   whole slab or malloc has none: the caller makes a plain buffer. */
static void *slab_new(size_t sz, int idx)
{
    const int64_t held = mem_in_use + names_bytes + other_bytes + cache_bytes + small_bytes + stranded_bytes;
    if (mem_cap && held + (int64_t)SLAB > mem_cap) return NULL;
    void *p;
    if (posix_memalign(&p, SLAB, SLAB) != 0) return NULL;
    int k = (int)(SLAB / sz);
    if (!slab_insert((uintptr_t)p, k)) {
        free(p);
        return NULL;
    }
    (void)madvise(p, SLAB, MADV_HUGEPAGE);
    POISON(p, SLAB);
    stranded_bytes += (int64_t)(SLAB - (size_t)k * sz);   /* the slack at its end */
    for (int i = k - 1; i >= 1; i--) cache_put((char *)p + (size_t)i * sz, sz, idx);
    return p;
}
#endif

static void *buffer_alloc(size_t sz, int idx)  /* sz: a size class, a multiple of 64 */
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (sz >= HUGE_BUFFER) {
        void *p;
        if (posix_memalign(&p, HUGE_BUFFER, sz) != 0) return NULL;
        (void)madvise(p, sz & ~(size_t)4095, MADV_HUGEPAGE);
        return p;
    }
#endif
#ifdef TT_SLABS
    if (sz >= SMALL_LIMIT) {
        void *p = slab_new(sz, idx);
        if (p) return p;
    }
#else
    (void)idx;
#endif
    return aligned_alloc(64, sz);           /* 64-byte aligned for SIMD */
}

/* Gives a buffer of class sz back: to malloc, or to its slab. */
static void buffer_free(void *p, size_t sz)
{
#ifdef TT_SLABS
    slab *e = sz >= SMALL_LIMIT && sz < SLAB ? slab_find((uintptr_t)p & ~(uintptr_t)(SLAB - 1)) : NULL;
    if (e) {
        if (--e->blocks > 0) {
            stranded_bytes += (int64_t)sz;
            POISON(p, sz);
            return;
        }
        stranded_bytes -= (int64_t)(SLAB - sz);           /* the others and the slack */
        free((void *)e->base);
        slab_remove(e);
        return;
    }
#else
    (void)sz;
#endif
    free(p);
}

static void cache_drop(void)
{
    for (int i = 0; i < NCLASSES; i++) {
        while (freelist[i]) {
            freeblock *b = freelist[i];
            freelist[i] = b->next;
            buffer_free(b, class_size(i));
        }
        freecount[i] = 0;
    }
    cache_bytes = small_bytes = 0;
}

void tt__storage_drop_cache(void)
{
    cache_drop();
    while (free_headers) {
        tt_storage *h = free_headers;
        free_headers = h->data;
        free(h);
    }
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
    const int64_t held = mem_in_use + names_bytes + other_bytes + stranded_bytes;
    if (mem_cap && nbytes > mem_cap - held - cache_bytes - small_bytes) cache_drop();   /* the cache yields first */
    if (mem_cap && nbytes > mem_cap - held && reclaim_fn) reclaim_fn(reclaim_ud);
    if (mem_cap && nbytes > mem_cap - mem_in_use - names_bytes - other_bytes - stranded_bytes) {
        char want[32], cap[32], used[32], names[96] = "";
        tt_fmt_bytes(want, sizeof want, (double)nbytes);
        tt_fmt_bytes(cap, sizeof cap, (double)mem_cap);
        tt_fmt_bytes(used, sizeof used, (double)(mem_in_use + names_bytes + other_bytes + stranded_bytes));
        if (names_bytes > mem_cap / 4) {
            char nb[32];
            tt_fmt_bytes(nb, sizeof nb, (double)names_bytes);
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

tt_status tt__names_reserve(int64_t bytes)
{
    tt_status st = cap_check(bytes);
    if (st == TT_OK) names_bytes += bytes;
    return st;
}

void tt__names_forget(void) { names_bytes = 0; }

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
    if (s->data == NULL) s->data = buffer_alloc(sz, idx);
    if (s->data == NULL) {
        free(s);
        char want[32];
        tt_fmt_bytes(want, sizeof want, (double)nbytes);
        return tt__err(TT_ENOMEM, "out of memory allocating %s", want);
    }
    UNPOISON(s->data, (size_t)nbytes);
    POISON((char *)s->data + nbytes, sz - (size_t)nbytes);
    if (zero) memset(s->data, 0, (size_t)nbytes);
    s->nbytes = nbytes;
    s->refcount = 1;
    s->version = 0;
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
