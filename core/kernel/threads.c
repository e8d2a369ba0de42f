/*
** threads.c — the kernels' persistent thread pool, per-thread scratch and the
** whole-result temporaries counted against the memory cap. One job at a time;
** work is cut into fixed ranges (so results never depend on timing), and
** idle workers sleep on a condition variable.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "base/base.h"
#include "kernels.h"

/* ===== Per-thread scratch ===== */

/* Kept between calls so big packing buffers are faulted in once. */
static _Thread_local struct { void *p; size_t n; } scratch[TK_SCRATCH_COUNT];

void *tk_scratch(int slot, size_t bytes)
{
    if (bytes > scratch[slot].n) {
        size_t n = (bytes + bytes / 4 + 4095) & ~(size_t)4095;  /* grow with headroom */
        void *p = NULL;
        if (posix_memalign(&p, 64, n) != 0) return NULL;
        free(scratch[slot].p);
        scratch[slot].p = p;
        scratch[slot].n = n;
    }
    return scratch[slot].p;
}

void tk_scratch_trim(int slot, size_t keep)
{
    if (scratch[slot].n <= keep) return;
    free(scratch[slot].p);
    scratch[slot].p = NULL;
    scratch[slot].n = 0;
}

static void scratch_free_all(void)
{
    for (int i = 0; i < TK_SCRATCH_COUNT; i++) {
        free(scratch[i].p);
        scratch[i].p = NULL;
        scratch[i].n = 0;
    }
}

/* ===== Whole-result temporaries, under the memory cap ===== */

void *tk_alloc(size_t bytes)
{
    if (tt__mem_reserve((int64_t)bytes) != TT_OK) return NULL;
    void *p = malloc(bytes);
    if (p == NULL) {
        tt__mem_release((int64_t)bytes);
        char want[32];
        tt_fmt_bytes(want, sizeof want, (double)bytes);
        tt__err(TT_ENOMEM, "out of memory allocating %s", want);
    }
    return p;
}

void tk_free(void *p, size_t bytes)
{
    if (p == NULL) return;
    free(p);
    tt__mem_release((int64_t)bytes);
}

/* ===== Pool ===== */

#define MAX_THREADS 256

static struct {
    pthread_mutex_t mu, submit;
    pthread_cond_t wake, done;
    pthread_t tid[MAX_THREADS];
    int nworkers;              /* running workers (threads - 1) */
    int quit;
    uint64_t gen;              /* bumped per job */
    /* the current job */
    tk_range_fn fn;
    void *ctx;
    int64_t n;
    int nchunks;
    int helpers;               /* workers 0 .. helpers-1 take part in this job */
    int parts;                 /* the caller (part 0) and the helpers (worker i: part i + 1) */
    atomic_int next[MAX_THREADS];   /* part p's next chunk of its own share */
    int share_end[MAX_THREADS];     /* and the end of that share */
    atomic_uint_fast64_t seen; /* generation the workers may run */
    int left;                  /* workers not yet finished with this job */
} pool = { .mu = PTHREAD_MUTEX_INITIALIZER, .submit = PTHREAD_MUTEX_INITIALIZER,
            .wake = PTHREAD_COND_INITIALIZER,
            .done = PTHREAD_COND_INITIALIZER };

#define CHUNKS_PER_THREAD 4

static int nthreads;               /* 0: not chosen yet */
static _Thread_local int in_task;  /* nested calls run serially */

static int cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

int tk_get_num_threads(void)
{
    if (nthreads == 0) {
        const char *env = getenv("TT_NUM_THREADS");
        int n = env ? atoi(env) : 0;
        nthreads = n > 0 ? (n > MAX_THREADS ? MAX_THREADS : n) : cores();
    }
    return nthreads;
}

static void pool_stop(void)
{
    pthread_mutex_lock(&pool.mu);
    pool.quit = 1;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < pool.nworkers; i++) pthread_join(pool.tid[i], NULL);
    pool.nworkers = 0;
    pool.quit = 0;
}

void tk_set_num_threads(int n)
{
    if (n <= 0) n = cores();
    if (n > MAX_THREADS) n = MAX_THREADS;
    nthreads = n;   /* workers beyond n - 1 stay, asleep: a fresh thread may start on a busy core */
}

/* Chunk c of nchunks covers [c*n/nchunks, (c+1)*n/nchunks): fixed by n and
   nchunks only. Part `me` takes the chunks of its own share first, in
   order, then what is left of the others' (a core held up elsewhere does
   not hold up the op); with no one held up each part works on the same
   share of the data every call, which its core's caches may still hold
   (2 threads, elementwise ops on [8,2048,256] moved 1.2-1.7x the bytes a
   second of chunks dealt out as threads came free). Returns when no chunk
   is left. */
static void run_chunks(int me)
{
    in_task = 1;
    for (int k = 0; k < pool.parts; k++) {
        int p = (me + k) % pool.parts, c;
        while ((c = atomic_fetch_add(&pool.next[p], 1)) < pool.share_end[p]) {
            int64_t b = pool.n * c / pool.nchunks, e = pool.n * (c + 1) / pool.nchunks;
            if (b < e) pool.fn(pool.ctx, b, e);
        }
    }
    in_task = 0;
}

static void *worker(void *arg)
{
    uint64_t my = 0;
    const int index = (int)(intptr_t)arg;
    for (;;) {
        /* spin briefly: back-to-back ops then start without a syscall */
        for (int s = 0; s < 20000 && atomic_load(&pool.seen) == my; s++) {
#if defined(__x86_64__) || defined(__i386__)
            __asm__ __volatile__("pause");
#endif
        }
        pthread_mutex_lock(&pool.mu);
        while (pool.gen == my && !pool.quit) pthread_cond_wait(&pool.wake, &pool.mu);
        if (pool.quit) { pthread_mutex_unlock(&pool.mu); break; }
        my = pool.gen;
        const int helps = index < pool.helpers;
        pthread_mutex_unlock(&pool.mu);
        if (!helps) continue;          /* fewer threads asked for now */
        run_chunks(index + 1);
        pthread_mutex_lock(&pool.mu);
        if (--pool.left == 0) pthread_cond_signal(&pool.done);
        pthread_mutex_unlock(&pool.mu);
    }
    scratch_free_all();
    return NULL;
}

void tk_threads_stop(void)
{
    pool_stop();
    scratch_free_all();            /* the calling thread's own buffers */
}

static void pool_start(int want)
{
    while (pool.nworkers < want) {
        if (pthread_create(&pool.tid[pool.nworkers], NULL, worker, (void *)(intptr_t)pool.nworkers) != 0)
            break;
        pool.nworkers++;
    }
}

void tk_parallel_for(int64_t n, int64_t grain, tk_range_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int64_t nch = (n + grain - 1) / grain;
    int nt = tk_get_num_threads();
    /* a few chunks a thread: when another process holds up one core, the
       others take over its share instead of waiting for it */
    if (nch > (int64_t)CHUNKS_PER_THREAD * nt) nch = (int64_t)CHUNKS_PER_THREAD * nt;
    if (nch <= 1 || nt <= 1 || in_task) { fn(ctx, 0, n); return; }
    if (pool.nworkers < nt - 1) pool_start(nt - 1);
    if (pool.nworkers == 0) { fn(ctx, 0, n); return; }  /* no threads to be had */
    /* one job at a time: a second caller (another thread) runs serially */
    if (pthread_mutex_trylock(&pool.submit) != 0) { fn(ctx, 0, n); return; }

    pthread_mutex_lock(&pool.mu);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.nchunks = (int)nch;
    pool.helpers = pool.nworkers < nt - 1 ? pool.nworkers : nt - 1;
    pool.parts = pool.helpers + 1;
    for (int p = 0; p < pool.parts; p++) {
        atomic_store(&pool.next[p], (int)(nch * p / pool.parts));
        pool.share_end[p] = (int)(nch * (p + 1) / pool.parts);
    }
    pool.left = pool.helpers;
    pool.gen++;
    atomic_store(&pool.seen, pool.gen);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);

    run_chunks(0);

    pthread_mutex_lock(&pool.mu);
    while (pool.left > 0) pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.submit);
}
