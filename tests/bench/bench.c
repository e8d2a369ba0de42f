/*
** bench.c — `make bench`: our kernels next to their yardsticks in one run
** (OpenBLAS loaded with dlopen, PyTorch through bench_torch.py, memcpy).
** Medians after a warm-up, min-max in brackets. Never part of `make test`.
*/
#include <dlfcn.h>
#include <stdatomic.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel/kernels.h"
#include "tt.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* ===== Timing ===== */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct stat3 { double med, min, max; } stat3;

/* `quick` (make bench QUICK=1): the smallest shape of each section, one
   round of turns, fewer runs and no PyTorch, to check the bench works;
   its numbers are not the bench's. */
static int quick;

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Seconds per call: one warm-up, then 3..11 runs within about `budget` s
   (for what has no yardstick in this process). */
static stat3 timeit(void (*fn)(void *), void *ctx, double budget)
{
    double t = now(), ts[11];
    fn(ctx);
    double first = now() - t;
    int reps = first > 0 ? (int)(budget / first) : 11;
    reps = reps < 3 || quick ? 3 : reps > 11 ? 11 : reps;
    for (int r = 0; r < reps; r++) {
        t = now();
        fn(ctx);
        ts[r] = now() - t;
    }
    qsort(ts, (size_t)reps, sizeof ts[0], cmpd);
    stat3 s = { ts[reps / 2], ts[0], ts[reps - 1] };
    return s;
}

/* Ours and a yardstick measured in turns: rounds of a warm-up and 1..4
   runs of A, then the same of B, all within about 2 * budget s. A noisy
   spell on this shared machine then tends to hit both sides, not one.
   Three rounds, or nine when a call takes under 5 ms: a spell as long as
   a whole round of such calls would otherwise be a third of the runs. */
static void timeit_pair(void (*fa)(void *), void *ca, void (*fb)(void *), void *cb, double budget,
                        stat3 *sa, stat3 *sb)
{
    double ta[36], tb[36];
    int na = 0, nb = 0, rounds = quick ? 1 : 3;
    for (int round = 0; round < rounds; round++) {
        for (int side = 0; side < 2; side++) {
            void (*fn)(void *) = side ? fb : fa;
            void *ctx = side ? cb : ca;
            double *ts = side ? tb : ta;
            int *n = side ? &nb : &na;
            double t = now();
            fn(ctx);
            double first = now() - t;
            if (round == 0 && side == 0 && first < 5e-3 && !quick) rounds = 9;
            int reps = first > 0 ? (int)(budget / rounds / first) : 4;
            reps = reps < 1 ? 1 : reps > 4 ? 4 : reps;
            for (int r = 0; r < reps; r++) {
                t = now();
                fn(ctx);
                ts[(*n)++] = now() - t;
            }
        }
    }
    qsort(ta, (size_t)na, sizeof ta[0], cmpd);
    qsort(tb, (size_t)nb, sizeof tb[0], cmpd);
    *sa = (stat3){ ta[na / 2], ta[0], ta[na - 1] };
    *sb = (stat3){ tb[nb / 2], tb[0], tb[nb - 1] };
}

/* "value (min-max)" of work/seconds, in a fixed width */
static void put_rate(double work, stat3 s, const char *unit)
{
    char b[64];
    snprintf(b, sizeof b, "%.1f (%.1f-%.1f) %s", work / s.med, work / s.max, work / s.min, unit);
    printf("%-27s ", b);   /* a space even when the value is wider than its column */
}

static void put_ms(stat3 s)
{
    char b[64];
    snprintf(b, sizeof b, "%.1f (%.1f-%.1f) ms", s.med * 1e3, s.min * 1e3, s.max * 1e3);
    printf("%-27s ", b);
}

static float *frand(size_t n)
{
    float *p = NULL;
    if (posix_memalign((void **)&p, 64, n * sizeof(float) + 64)) { perror("bench"); exit(1); }
    uint32_t s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)(s >> 8) * (1.0f / 8388608.0f) - 1.0f;
    }
    return p;
}

/* ===== Memory (VmHWM reset via clear_refs) ===== */

static long status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0;
    size_t n = strlen(field);
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':') v = atol(line + n + 1);
    fclose(f);
    return v;
}

static void peak_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) { fputs("5", f); fclose(f); }
}

/* ===== OpenBLAS, loaded at run time ===== */

enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                         const float *, int, float, float *, int);
static sgemm_fn ob_sgemm;
/* cblas_sbgemm: bfloat16 A and B (raw bits), float32 C; where this OpenBLAS exports it */
typedef void (*sbgemm_fn)(int, int, int, int, int, int, float, const uint16_t *, int,
                          const uint16_t *, int, float, float *, int);
static sbgemm_fn ob_sbgemm;
static void (*ob_set_threads)(int);
static char *(*ob_config)(void);

/* avx2: OpenBLAS's Zen (AVX2) kernels, to stand next to our forced AVX2 path */
static void openblas_load(int avx2)
{
    /* otherwise its AVX-512 kernel, which it picks only when it detects the core itself */
    if (avx2) setenv("OPENBLAS_CORETYPE", "Zen", 1);
    else unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");
    /* Its idle workers spin 2^28 cycles (~0.1 s) by default, on the core our next
       turn needs; 2^20 (~0.3 ms) is about as long as our own pool spins. */
    setenv("OPENBLAS_THREAD_TIMEOUT", "20", 1);
    static const char *names[] = { "libopenblas.so.0", "libopenblas.so", "libopenblasp.so.0" };
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) h = dlopen(names[i], RTLD_NOW);
    if (!h) {
        printf("OpenBLAS: not found; install it with 'apt-get install libopenblas-dev' "
               "(yardstick columns left empty)\n");
        return;
    }
    *(void **)&ob_sgemm = dlsym(h, "cblas_sgemm");
    *(void **)&ob_set_threads = dlsym(h, "openblas_set_num_threads");
    *(void **)&ob_config = dlsym(h, "openblas_get_config");
    *(void **)&ob_sbgemm = dlsym(h, "cblas_sbgemm");
    if (!ob_sgemm || !ob_set_threads) { ob_sgemm = NULL; printf("OpenBLAS: symbols missing\n"); }
}

/* ===== FMA peak ===== */

/* One run of the peak loop on th threads: each thread takes one chunk of a
   tk_parallel_for over th items, waits at a barrier until all th have
   arrived (so a worker that wakes late does not leave its chunk to another
   thread, which would time two chunks back to back), then stamps its own
   start and end. The run lasts from the first start to the last end. */
#define PEAK_MAX_THREADS 64

typedef struct peak_run {
    atomic_int arrived;
    int th, late;              /* late: the barrier timed out (a thread never came) */
    double start[PEAK_MAX_THREADS], end[PEAK_MAX_THREADS];
    float sink;
} peak_run;

#define PEAK_ITERS 20000000    /* per thread: 12 FMAs each, about 40 ms at 3 GHz */

static void peak_barrier(peak_run *r)
{
    atomic_fetch_add(&r->arrived, 1);
    double t0 = now();
    while (atomic_load(&r->arrived) < r->th)
        if (now() - t0 > 1.0) { r->late = 1; return; }   /* never hang the bench */
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static void peak512(void *ctx, int64_t b, int64_t e)
{
    peak_run *r = ctx;
    __m512 a[12], m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(1e-3f);
    for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
    for (int64_t t = b; t < e; t++) {
        peak_barrier(r);
        r->start[t] = now();
        for (int64_t k = 0; k < PEAK_ITERS; k++) {
#pragma GCC unroll 12
            for (int i = 0; i < 12; i++) a[i] = _mm512_fmadd_ps(a[i], m, c);
        }
        r->end[t] = now();
    }
    float s = 0.0f;
    for (int i = 0; i < 12; i++) s += _mm512_reduce_add_ps(a[i]);
    *(volatile float *)&r->sink = s;
}
/* the bfloat16 dot-product peak: 12 chains of vdpbf16ps (2 products a lane) */
__attribute__((target("avx512f,avx512bf16"))) static void peak512bf16(void *ctx, int64_t b, int64_t e)
{
    peak_run *r = ctx;
    __m512 a[12];
    __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3a83);   /* 1, 0.001 */
    for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
    for (int64_t t = b; t < e; t++) {
        peak_barrier(r);
        r->start[t] = now();
        for (int64_t k = 0; k < PEAK_ITERS; k++) {
#pragma GCC unroll 12
            for (int i = 0; i < 12; i++) a[i] = _mm512_dpbf16_ps(a[i], x, y);
        }
        r->end[t] = now();
    }
    float s = 0.0f;
    for (int i = 0; i < 12; i++) s += _mm512_reduce_add_ps(a[i]);
    *(volatile float *)&r->sink = s;
}
__attribute__((target("avx2,fma"))) static void peak256(void *ctx, int64_t b, int64_t e)
{
    peak_run *r = ctx;
    __m256 a[12], m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(1e-3f);
    for (int i = 0; i < 12; i++) a[i] = _mm256_set1_ps((float)i);
    for (int64_t t = b; t < e; t++) {
        peak_barrier(r);
        r->start[t] = now();
        for (int64_t k = 0; k < PEAK_ITERS; k++) {
#pragma GCC unroll 12
            for (int i = 0; i < 12; i++) a[i] = _mm256_fmadd_ps(a[i], m, c);
        }
        r->end[t] = now();
    }
    __m256 s = a[0];   /* every chain feeds the result, or the compiler drops it */
    for (int i = 1; i < 12; i++) s = _mm256_add_ps(s, a[i]);
    float t[8];
    _mm256_storeu_ps(t, s);
    *(volatile float *)&r->sink = t[0];
}
#endif

/* GFLOP/s of w-bit FMAs (512 or 256) on th threads: the best of at least
   PEAK_RUNS runs, after one that starts the pool's workers, going on (up
   to PEAK_MAX_RUNS) until PEAK_RUNS runs in a row fail to beat the best by
   1%: a shared machine can take a core from one window, or from several
   in a row; -1 when the CPU lacks them or a thread never reached the
   barrier. */
#define PEAK_RUNS 5
#define PEAK_MAX_RUNS 40
#define PEAK_BF16 16                /* w for the vdpbf16ps peak */

static double peak_once(int w, int th)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (w == PEAK_BF16 ? !__builtin_cpu_supports("avx512bf16")
        : w == 512 ? !__builtin_cpu_supports("avx512f") : !__builtin_cpu_supports("fma")) return -1;
    int saved = tk_get_num_threads();
    tk_set_num_threads(th);
    double best = 1e30;
    int since = 0;                             /* runs since the best last moved by 1% */
    int max_runs = quick ? PEAK_RUNS : PEAK_MAX_RUNS;
    for (int run = 0; run <= max_runs && since < PEAK_RUNS && best > 0; run++) {   /* run 0: untimed */
        peak_run r = { .th = th };
        atomic_init(&r.arrived, 0);
        tk_parallel_for(th, 1, w == PEAK_BF16 ? peak512bf16 : w == 512 ? peak512 : peak256, &r);
        double first = r.start[0], last = r.end[0];
        for (int t = 1; t < th; t++) {
            if (r.start[t] < first) first = r.start[t];
            if (r.end[t] > last) last = r.end[t];
        }
        if (r.late) best = -1;
        else if (run > 0) {
            since = last - first < 0.99 * best ? 0 : since + 1;
            if (last - first < best) best = last - first;
        }
    }
    tk_set_num_threads(saved);
    double flops = w == PEAK_BF16 ? 16 * 4 : w / 32 * 2;   /* per instruction */
    return best > 0 ? (double)PEAK_ITERS * 12 * flops * th / best / 1e9 : -1;
#else
    (void)w; (void)th;
    return -1;
#endif
}

/* peak_once, measured once per (w, th) and kept; 0 when there is none */
static double peak_measure(int w, int th)
{
    static double kept[3][PEAK_MAX_THREADS + 1];   /* 0: not measured yet */
    if (th < 1 || th > PEAK_MAX_THREADS) return 0;
    double *k = &kept[w == PEAK_BF16 ? 2 : w == 512][th];
    if (*k == 0) *k = peak_once(w, th);
    return *k > 0 ? *k : 0;
}

/* The peak of the path the kernels use now (tk_simd_path: path=avx2 or
   a forced AVX2 row measure against the AVX2 peak). */
static double peak_now(int th)
{
    const char *p = tk_simd_path();
    return strncmp(p, "avx512", 6) == 0 ? peak_measure(512, th) : strcmp(p, "avx2") == 0 ? peak_measure(256, th) : 0;
}

/* The bfloat16 dot-product peak when the path multiplies bf16 pairs, else 0. */
static double peak_bf16(int th)
{
    return tk_kern_now()->ukernel_bf16 ? peak_measure(PEAK_BF16, th) : 0;
}

static void bench_peak(void)
{
    printf("\n== FMA peak (12 independent FMA chains per thread, threads started and met at a\n"
           "   barrier before timing; GFLOP/s, the best run, once %d in a row did no better)\n", PEAK_RUNS);
    static const int ws[] = { 512, 256, PEAK_BF16 };
    for (int wi = 0; wi < 3; wi++)
        for (int th = 1; th <= 2; th++) {
            int w = ws[wi];
            const char *name = w == PEAK_BF16 ? "vdpbf16ps" : w == 512 ? "avx512  " : "avx2+fma";
            double g = peak_measure(w, th);
            if (g > 0) printf("  %s  %d thread%s  %7.1f\n", name, th, th > 1 ? "s" : " ", g);
            else if (th > 1 && peak_measure(w, 1) > 0)
                printf("  %s  %d threads  none: a worker never reached the barrier\n", name, th);
        }
}

/* ===== GEMM ===== */

typedef struct mm {
    int64_t nb, M, N, K;
    float *a, *b, *c;
    int btrans;                /* B given as [N,K] rows (K^T view) */
} mm;

static void mm_ours(void *ctx)
{
    mm *m = ctx;
    int64_t ao[64], bo[64], co[64];
    for (int64_t t = 0; t < m->nb; t++) { ao[t] = t * m->M * m->K; bo[t] = t * m->K * m->N; co[t] = t * m->M * m->N; }
    if (m->btrans)
        tk_gemm_batch(m->nb, m->M, m->N, m->K, m->a, ao, m->K, 1, m->b, bo, 1, m->K, m->c, co, m->N, 1);
    else
        tk_gemm_batch(m->nb, m->M, m->N, m->K, m->a, ao, m->K, 1, m->b, bo, m->N, 1, m->c, co, m->N, 1);
}

static void mm_blas(void *ctx)
{
    mm *m = ctx;
    for (int64_t t = 0; t < m->nb; t++)
        ob_sgemm(CblasRowMajor, CblasNoTrans, m->btrans ? CblasTrans : CblasNoTrans,
                 (int)m->M, (int)m->N, (int)m->K, 1.0f, m->a + t * m->M * m->K, (int)m->K,
                 m->b + t * m->K * m->N, m->btrans ? (int)m->K : (int)m->N, 0.0f,
                 m->c + t * m->M * m->N, (int)m->N);
}

static void mm_row(const char *label, mm *m, int th, double budget)
{
    double flop = 2.0 * (double)m->nb * (double)m->M * (double)m->N * (double)m->K / 1e9;
    tk_set_num_threads(th);
    stat3 ours, ob;
    if (ob_sgemm) {
        ob_set_threads(th);
        timeit_pair(mm_ours, m, mm_blas, m, budget, &ours, &ob);
    } else {
        ours = timeit(mm_ours, m, budget);
    }
    printf("  %-22s %d  ", label, th);
    put_rate(flop, ours, "");
    if (ob_sgemm) {
        put_rate(flop, ob, "");
        printf("%5.2f", ob.med / ours.med);
    }
    double pk = peak_now(th);
    if (pk > 0) printf("   %3.0f%% of peak", 100.0 * flop / ours.med / pk);
    printf("\n");
    fflush(stdout);
}

static void bench_gemm(void)
{
    printf("\n== matmul (GFLOP/s; ratio = ours / OpenBLAS)\n");
    printf("  %-22s %-2s %-28s%-28s%s\n", "shape", "th", "ours", "OpenBLAS", "ratio");
    for (int64_t n = 512; n <= (quick ? 512 : 2048); n *= 2) {
        mm m = { 1, n, n, n, frand((size_t)(n * n)), frand((size_t)(n * n)), frand((size_t)(n * n)), 0 };
        char l[64];
        snprintf(l, sizeof l, "%lldx%lldx%lld", (long long)n, (long long)n, (long long)n);
        for (int th = 1; th <= 2; th++) mm_row(l, &m, th, n >= 2048 ? 1.5 : 0.6);
        /* the AVX2 micro-kernel too, where this CPU has the wider one */
        if (n >= 1024 && strcmp(tk_simd_path(), "avx512") == 0 && tk_simd_force("avx2")) {
            snprintf(l, sizeof l, "%lldx%lldx%lld avx2", (long long)n, (long long)n, (long long)n);
            for (int th = 1; th <= 2; th++) mm_row(l, &m, th, n >= 2048 ? 1.5 : 0.6);
            tk_simd_force(NULL);
        }
        free(m.a); free(m.b); free(m.c);
    }
    for (int64_t n = 1024; n <= (quick ? 1024 : 4096); n *= 2) {
        float *a = frand((size_t)(8 * n * n)), *b = frand((size_t)(8 * n * 64)), *c = frand((size_t)(8 * n * n));
        mm qk = { 8, n, n, 64, b, b, c, 1 };   /* Q [N,64] @ K^T, K stored [N,64] */
        mm pv = { 8, n, 64, n, a, b, c, 0 };   /* P [N,N] @ V [N,64] */
        char l[64];
        for (int th = 1; th <= 2; th++) {
            snprintf(l, sizeof l, "8x QK^T (%lld,%lld,64)", (long long)n, (long long)n);
            mm_row(l, &qk, th, 1.0);
            snprintf(l, sizeof l, "8x PV (%lld,64,%lld)", (long long)n, (long long)n);
            mm_row(l, &pv, th, 1.0);
        }
        free(a); free(b); free(c);
    }
}

/* ===== 16-bit GEMM vs float32 ===== */

/* One operand set in float32 and in both 16-bit formats; a 16-bit run is
   the whole matmul as tt_matmul does it: tk_gemm_batch_round reading
   16-bit A and B into a 16-bit C. */
typedef struct hm {
    mm f;                      /* the float32 set (btrans as mm) */
    int type;                  /* TK_BF16 or TK_F16 for the 16-bit runs */
    uint16_t *a16[2], *b16[2], *c16;   /* [0] bfloat16, [1] float16 */
} hm;

static void hm_half(void *ctx)
{
    hm *h = ctx;
    mm *m = &h->f;
    int k = h->type == TK_F16;
    int64_t ao[64], bo[64], co[64];
    for (int64_t t = 0; t < m->nb; t++) { ao[t] = t * m->M * m->K; bo[t] = t * m->K * m->N; co[t] = t * m->M * m->N; }
    tk_gemm_batch_round(m->nb, m->M, m->N, m->K, h->type, h->a16[k], ao, m->K, 1, h->type, h->b16[k], bo,
                        m->btrans ? 1 : m->N, m->btrans ? m->K : 1, h->type, h->c16, co, m->N, 1);
}

static void hm_sbgemm(void *ctx)
{
    hm *h = ctx;
    mm *m = &h->f;
    for (int64_t t = 0; t < m->nb; t++)
        ob_sbgemm(CblasRowMajor, CblasNoTrans, m->btrans ? CblasTrans : CblasNoTrans,
                  (int)m->M, (int)m->N, (int)m->K, 1.0f, h->a16[0] + t * m->M * m->K, (int)m->K,
                  h->b16[0] + t * m->K * m->N, m->btrans ? (int)m->K : (int)m->N, 0.0f,
                  m->c + t * m->M * m->N, (int)m->N);
}

static uint16_t *to16(int bf16, const float *x, size_t n)
{
    uint16_t *y = NULL;
    if (posix_memalign((void **)&y, 64, n * sizeof *y + 64)) { perror("bench"); exit(1); }
    tk_half_from_f32(bf16, (int64_t)n, x, y);
    return y;
}

static void half_row(const char *label, hm *h, int th, double budget)
{
    mm *m = &h->f;
    double flop = 2.0 * (double)m->nb * (double)m->M * (double)m->N * (double)m->K / 1e9;
    tk_set_num_threads(th);
    stat3 f32a, f32b, bf, fp, sb = { 0, 0, 0 };
    h->type = TK_BF16;
    timeit_pair(mm_ours, m, hm_half, h, budget, &f32a, &bf);
    h->type = TK_F16;
    timeit_pair(mm_ours, m, hm_half, h, budget, &f32b, &fp);
    if (ob_sbgemm) {
        ob_set_threads(th);
        sb = timeit(hm_sbgemm, h, budget);
    }
    printf("  %-22s %d  ", label, th);
    put_rate(flop, f32a, "");
    put_rate(flop, bf, "");
    printf("%5.2f  ", bf.med / f32a.med);
    put_rate(flop, fp, "");
    printf("%5.2f  ", fp.med / f32b.med);
    if (ob_sbgemm) put_rate(flop, sb, "");
    else printf("%-27s ", "-");
    /* operands: A, B and C; the 16-bit op also holds a float32 C meanwhile
       unless K fits one cache block (kc is at least 64; bfloat16 pairs take
       K up to 2048 in one, gemm.c's PAIRS_KC) */
    double e = (double)m->nb * (double)(m->M * m->K + (m->btrans ? m->N * m->K : m->K * m->N) + m->M * m->N);
    double c32 = (double)m->nb * (double)(m->M * m->N) * 4.0 / 1048576.0;
    int one_bf = m->K <= 64 || (tk_kern_now()->ukernel_bf16 && m->K <= 2048);
    printf("%.1f / %.1f (+%.1f bf16, +%.1f fp16)", e * 4.0 / 1048576.0, e * 2.0 / 1048576.0, one_bf ? 0.0 : c32,
           m->K <= 64 ? 0.0 : c32);
    double pk = peak_bf16(th);
    if (pk > 0) printf("   bf16 %3.0f%% of the vdpbf16ps peak", 100.0 * flop / bf.med / pk);
    printf("\n");
    fflush(stdout);
}

static hm hm_make(int64_t nb, int64_t M, int64_t N, int64_t K, int btrans)
{
    size_t na = (size_t)(nb * M * K), nbb = (size_t)(nb * K * N), nc = (size_t)(nb * M * N);
    hm h = { { nb, M, N, K, frand(na), frand(nbb), frand(nc), btrans }, TK_BF16, { NULL, NULL }, { NULL, NULL }, NULL };
    for (int k = 0; k < 2; k++) {
        h.a16[k] = to16(!k, h.f.a, na);
        h.b16[k] = to16(!k, h.f.b, nbb);
    }
    h.c16 = to16(1, h.f.c, nc);
    return h;
}

static void hm_free(hm *h)
{
    free(h->f.a); free(h->f.b); free(h->f.c); free(h->c16);
    for (int k = 0; k < 2; k++) { free(h->a16[k]); free(h->b16[k]); }
}

static void bench_half(void)
{
    const char *p = tk_simd_path();
    int bf16_isa = 0;
#ifdef TK_X86_SIMD
    __builtin_cpu_init();
    bf16_isa = __builtin_cpu_supports("avx512bf16");
#endif
    printf("\n== half: 16-bit matmul vs float32 (GFLOP/s, median (min-max); ratio = 16-bit time / fp32 time,\n"
           "   each paired in turns with its own fp32 run)\n");
    int pairs = tk_kern_now()->ukernel_bf16 != NULL;
    printf("   path %s: %s; fp16 converted to fp32 in the GEMM packers (%s; for a narrow B, a row-major A a sliver of rows at a time, read as float32 rows), fp32 products\n"
           "   and sums; C rounded once. This CPU %s AVX512_BF16. sbgemm: OpenBLAS cblas_sbgemm (bf16 in,\n"
           "   fp32 C)%s.\n"
           "   a 16-bit C is rounded as each tile is stored when K fits one cache block (QK^T; with bf16 pairs,\n"
           "   any K up to 2048), else through a float32 C; memory: A+B+C in MiB, fp32 / 16-bit (+ that float32 C,\n"
           "   where there is one)\n",
           p, pairs ? "bf16 by the vdpbf16ps micro-kernel (bf16 pairs packed, or a row-major A read in place for a narrow B as in PV; two products per fp32 lane)"
                    : "bf16 converted to fp32 in the GEMM packers",
           strcmp(p, "avx512") == 0 || pairs ? "AVX-512F: vcvtph2ps"
              : strcmp(p, "avx2") == 0 ? "AVX2: F16C" : "portable C",
           bf16_isa ? "has" : "has no", ob_sbgemm ? "" : ": not exported by this OpenBLAS (or none found)");
    printf("  %-22s %-2s %-28s%-28s%-7s%-28s%-7s%-28s%s\n", "shape", "th", "fp32", "bf16", "ratio", "fp16", "ratio",
           "OpenBLAS sbgemm", "memory");
    for (int64_t n = 1024; n <= (quick ? 1024 : 2048); n *= 2) {
        hm h = hm_make(1, n, n, n, 0);
        char l[64];
        snprintf(l, sizeof l, "%lldx%lldx%lld", (long long)n, (long long)n, (long long)n);
        for (int th = 1; th <= 2; th++) half_row(l, &h, th, n >= 2048 ? 1.5 : 0.6);
        hm_free(&h);
    }
    for (int64_t n = 1024; n <= (quick ? 1024 : 2048); n *= 2) {
        hm qk = hm_make(8, n, n, 64, 1), pv = hm_make(8, n, 64, n, 0);
        char l[64];
        snprintf(l, sizeof l, "8x QK^T (%lld,%lld,64)", (long long)n, (long long)n);
        half_row(l, &qk, 2, 1.0);
        snprintf(l, sizeof l, "8x PV (%lld,64,%lld)", (long long)n, (long long)n);
        half_row(l, &pv, 2, 1.0);
        hm_free(&qk);
        hm_free(&pv);
    }
}

/* ===== softmax vs memcpy ===== */

typedef struct sm { int64_t rows, n; float *x, *y; } sm;

static void sm_ours(void *ctx)
{
    sm *s = ctx;
    tk_softmax_rows(s->rows, s->n, s->x, s->y);
}

static void cp_range(void *ctx, int64_t b, int64_t e)
{
    sm *s = ctx;
    memcpy(s->y + b * s->n, s->x + b * s->n, (size_t)((e - b) * s->n) * sizeof(float));
}

static void cp_run(void *ctx)
{
    sm *s = ctx;
    int nt = tk_get_num_threads();   /* one range a thread: memcpy at its best */
    tk_parallel_for(s->rows, (s->rows + nt - 1) / nt, cp_range, s);
}

static void bench_softmax(const char *py)
{
    printf("\n== softmax [8,2048,2048] rows (GB/s = (read + write bytes) / time)\n");
    printf("  %-22s %-2s %-28s%-28s%s\n", "", "th", "ours", "memcpy same bytes", "ratio");
    sm s = { 8 * 2048, 2048, frand(8u << 22), frand(8u << 22) };
    double gb = 2.0 * 4.0 * (double)s.rows * (double)s.n / 1e9;
    for (int th = 1; th <= 2; th++) {
        tk_set_num_threads(th);
        stat3 o, c;
        timeit_pair(sm_ours, &s, cp_run, &s, 1.0, &o, &c);
        printf("  %-22s %d  ", "softmax", th);
        put_rate(gb, o, "");
        put_rate(gb, c, "");
        printf("%5.2f\n", c.med / o.med);
    }
    if (py) {
        for (int th = 1; th <= 2; th++) {
            char cmd[512], line[256];
            snprintf(cmd, sizeof cmd, "%s tests/bench/bench_torch.py %d softmax 2>&1", py, th);
            FILE *f = popen(cmd, "r");
            while (f && fgets(line, sizeof line, f)) {
                double med, mn, mx, pk;
                if (sscanf(line, "softmax %lf %lf %lf %lf", &med, &mn, &mx, &pk) == 4) {
                    stat3 t = { med / 1e3, mn / 1e3, mx / 1e3 };
                    printf("  %-22s %d  ", "torch.softmax", th);
                    put_rate(gb, t, "");
                    printf("\n");
                }
            }
            if (f) pclose(f);
        }
    }
    free(s.x); free(s.y);
}

/* ===== elementwise vs memcpy ===== */

/* [8,2048,256] floats (16 MiB a tensor), as PyTorch would see them */
#define EW_N (8 * 2048 * 256)

typedef struct ewb { int kind, op; float *x, *y, *o; uint8_t *m; } ewb;
enum { EWB_BIN, EWB_SCALAR, EWB_UN, EWB_CMP, EWB_FILL };

static void ew_range(void *ctx, int64_t b, int64_t e)
{
    ewb *w = ctx;
    switch (w->kind) {
    case EWB_BIN: tk_ew_binary(w->op, e - b, w->x + b, 1, w->y + b, 1, w->o + b); break;
    case EWB_SCALAR: tk_ew_binary(w->op, e - b, w->x + b, 1, w->y, 0, w->o + b); break;
    case EWB_UN: tk_ew_unary(w->op, e - b, w->x + b, w->o + b); break;
    case EWB_CMP: tk_ew_compare(w->op, e - b, w->x + b, 1, w->y + b, 1, (uint8_t *)w->o + b); break;
    default: tk_ew_masked_fill(e - b, w->x + b, 1, w->m + b, 1, -INFINITY, w->o + b); break;
    }
}

static void ew_run(void *ctx) { tk_parallel_for(EW_N, 16384, ew_range, ctx); }

typedef struct cpb { char *d; const char *s; size_t n; } cpb;

static void cpb_range(void *ctx, int64_t b, int64_t e)
{
    cpb *c = ctx;
    memcpy(c->d + b, c->s + b, (size_t)(e - b));
}

static void cpb_run(void *ctx)
{
    cpb *c = ctx;
    int nt = tk_get_num_threads();   /* one range a thread: memcpy at its best */
    tk_parallel_for((int64_t)c->n, ((int64_t)c->n + nt - 1) / nt, cpb_range, c);
}

static void bench_ew(const char *py)
{
    static const struct { const char *name, *tname; int kind, op, rd, wr; } cases[] = {
        { "x + y", "add", EWB_BIN, TK_EW_ADD, 8, 4 },
        { "x / 2", "div_scalar", EWB_SCALAR, TK_EW_DIV, 4, 4 },
        { "maximum(x, y)", "maximum", EWB_BIN, TK_EW_MAX, 8, 4 },
        { "x > y", "gt", EWB_CMP, TK_EW_GT, 8, 1 },
        { "exp(x)", "exp", EWB_UN, TK_EW_EXP, 4, 4 },
        { "log(x)", "log", EWB_UN, TK_EW_LOG, 4, 4 },
        { "sqrt(x)", "sqrt", EWB_UN, TK_EW_SQRT, 4, 4 },
        { "masked_fill(x, m, -inf)", "masked_fill", EWB_FILL, 0, 5, 4 },
    };
    printf("\n== elementwise on [8,2048,256] (GB/s = (read + write bytes) / time; ratio = ours / memcpy\n"
           "   of the same bytes; torch: the same op allocating its result, as tensortrace's ops do)\n");
    printf("  %-24s %-2s %-28s%-28s%-7s%s\n", "", "th", "ours", "memcpy same bytes", "ratio", "torch");
    float *x = frand(EW_N), *y = frand(EW_N), *o = frand(EW_N);
    uint8_t *m = malloc(EW_N);
    for (size_t i = 0; i < EW_N; i++) { x[i] += 1.5f; m[i] = (uint8_t)((i * 2654435761u) >> 31); }
    float two = 2.0f;
    char *src = malloc((size_t)EW_N * 8), *dst = malloc((size_t)EW_N * 8);
    memset(src, 1, (size_t)EW_N * 8);
    memset(dst, 0, (size_t)EW_N * 8);
    double tms[2][16];
    int nt = 0;
    for (int th = 1; th <= 2; th++) {
        nt = 0;
        if (py) {
            char cmd[512], line[256];
            snprintf(cmd, sizeof cmd, "%s tests/bench/bench_torch.py %d ew 2>&1", py, th);
            FILE *f = popen(cmd, "r");
            while (f && fgets(line, sizeof line, f)) {
                char key[64];
                double med, mn, mx, pk;
                if (sscanf(line, "%63s %lf %lf %lf %lf", key, &med, &mn, &mx, &pk) == 5 && nt < 16)
                    tms[th - 1][nt++] = med / 1e3;
            }
            if (f) pclose(f);
        }
        tk_set_num_threads(th);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            ewb w = { cases[c].kind, cases[c].op, x, cases[c].kind == EWB_SCALAR ? &two : y, o, m };
            size_t bytes = (size_t)EW_N * (size_t)(cases[c].rd + cases[c].wr);
            cpb cp = { dst, src, bytes / 2 };        /* memcpy reads and writes n bytes each */
            double gb = (double)bytes / 1e9;
            stat3 so, sc;
            timeit_pair(ew_run, &w, cpb_run, &cp, 0.5, &so, &sc);
            printf("  %-24s %d  ", cases[c].name, th);
            put_rate(gb, so, "");
            put_rate(gb, sc, "");
            printf("%5.2f  ", sc.med / so.med);
            if ((int)c < nt) printf(" %.1f GB/s (%.1fx)", gb / tms[th - 1][c], tms[th - 1][c] / so.med);
            printf("\n");
            fflush(stdout);
        }
    }
    free(x); free(y); free(o); free(m); free(src); free(dst);
}

/* ===== ops through the public API vs memcpy =====
   The same [8,2048,256] as above, but through tt.h as lua/ calls it: the
   checks, the result allocation, the strided iterator and its threads on
   top of the kernels. Copies and the iterator's cost a row (x + b) and
   its tiles show here only. */

enum { OP_BIN, OP_BIAS, OP_SCALAR, OP_UN, OP_FILL, OP_TRANSPOSE, OP_PERMUTE, OP_CLONE, OP_SUM, OP_SOFTMAX };

typedef struct opb { int kind, op, dim; tt_tensor *x, *y, *m, *v, *b; } opb;

static void op_run(void *ctx)
{
    opb *b = ctx;
    tt_tensor o = {0};
    tt_status st = TT_OK;
    switch (b->kind) {
    case OP_BIN: st = tt_binary(&o, (tt_op)b->op, b->x, b->y); break;
    case OP_BIAS: st = tt_binary(&o, (tt_op)b->op, b->x, b->b); break;
    case OP_SCALAR: st = tt_binary_scalar(&o, (tt_op)b->op, b->x, 2.0, 0); break;
    case OP_UN: st = tt_unary(&o, (tt_op)b->op, b->x); break;
    case OP_FILL: st = tt_masked_fill(&o, b->x, b->m, -INFINITY); break;
    case OP_TRANSPOSE: case OP_PERMUTE: st = tt_contiguous(&o, b->v); break;
    case OP_CLONE: st = tt_clone(&o, b->x); break;
    case OP_SUM: st = tt_reduce(&o, TT_OP_SUM, b->x, b->dim, 0); break;
    default: st = tt_softmax(&o, b->x, b->dim); break;
    }
    if (st != TT_OK) { fprintf(stderr, "bench ops: %s\n", tt_errmsg()); exit(1); }
    tt_tensor_release(&o);
}

static void bench_ops(void)
{
    static const struct { const char *name; int kind, op, dim; double rd, wr; } cases[] = {
        { "x + y", OP_BIN, TT_OP_ADD, 0, 8, 4 },
        { "x / 2", OP_SCALAR, TT_OP_DIV, 0, 4, 4 },
        { "x + b[256] (rows)", OP_BIAS, TT_OP_ADD, 0, 4, 4 },
        { "maximum(x, y)", OP_BIN, TT_OP_MAXIMUM, 0, 8, 4 },
        { "exp(x)", OP_UN, TT_OP_EXP, 0, 4, 4 },
        { "masked_fill(x, m, -inf)", OP_FILL, 0, 0, 5, 4 },
        { "x:transpose(2,3):contig", OP_TRANSPOSE, 0, 0, 4, 4 },
        { "x:permute(3,1,2):contig", OP_PERMUTE, 0, 0, 4, 4 },
        { "x:clone()", OP_CLONE, 0, 0, 4, 4 },
        { "x:sum(3)", OP_SUM, 0, 2, 4, 4.0 / 256 },
        { "x:sum(1)", OP_SUM, 0, 0, 4, 4.0 / 8 },
        { "x:softmax(3)", OP_SOFTMAX, 0, 2, 4, 4 },
    };
    printf("\n== ops through tt.h on [8,2048,256] (GB/s = (read + write bytes) / time, the result's\n"
           "   allocation included; ratio = ours / memcpy of the same bytes)\n");
    printf("  %-24s %-2s %-28s%-28s%s\n", "", "th", "ours", "memcpy same bytes", "ratio");
    const int64_t shape[3] = { 8, 2048, 256 };
    float *xf = frand(EW_N), *yf = frand(EW_N);
    uint8_t *mb = malloc(EW_N);
    for (size_t i = 0; i < EW_N; i++) { xf[i] += 1.5f; mb[i] = (uint8_t)((i * 2654435761u) >> 31); }
    tt_tensor x = {0}, y = {0}, m = {0}, xt = {0}, xp = {0}, bias = {0};
    static const int perm[3] = { 2, 0, 1 };
    if (tt_from_buffer(&x, TT_FLOAT32, 3, shape, xf) || tt_from_buffer(&y, TT_FLOAT32, 3, shape, yf)
        || tt_from_buffer(&m, TT_BOOL, 3, shape, mb) || tt_transpose(&xt, &x, 1, 2)
        || tt_permute(&xp, &x, perm) || tt_from_buffer(&bias, TT_FLOAT32, 1, shape + 2, yf)) {
        fprintf(stderr, "bench ops: %s\n", tt_errmsg());
        exit(1);
    }
    char *src = malloc((size_t)EW_N * 8), *dst = malloc((size_t)EW_N * 8);
    memset(src, 1, (size_t)EW_N * 8);
    memset(dst, 0, (size_t)EW_N * 8);
    for (int th = 1; th <= 2; th++) {
        tt_set_num_threads(th);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            opb b = { cases[c].kind, cases[c].op, cases[c].dim, &x, &y, &m,
                      cases[c].kind == OP_PERMUTE ? &xp : &xt, &bias };
            double bytes = (double)EW_N * (cases[c].rd + cases[c].wr);
            cpb cp = { dst, src, (size_t)(bytes / 2) };   /* memcpy reads and writes n bytes each */
            stat3 so, sc;
            timeit_pair(op_run, &b, cpb_run, &cp, 0.5, &so, &sc);
            printf("  %-24s %d  ", cases[c].name, th);
            put_rate(bytes / 1e9, so, "");
            put_rate(bytes / 1e9, sc, "");
            printf("%5.2f\n", sc.med / so.med);
            fflush(stdout);
        }
    }
    tt_tensor_release(&x); tt_tensor_release(&y); tt_tensor_release(&m);
    tt_tensor_release(&xt); tt_tensor_release(&xp); tt_tensor_release(&bias);
    free(xf); free(yf); free(mb); free(src); free(dst);
}

/* A causal mask's cost is bounded by its size whatever its shape: 2^24
   queries of one key against one query of 2^24 keys (a loop per row once
   made the tall one ~30x slower). */
static void mask_run(void *ctx)
{
    const int64_t *nqk = ctx;
    tt_tensor m = {0};
    if (tt_causal_mask(&m, nqk[0], nqk[1], 1) != TT_OK) { fprintf(stderr, "bench mask: %s\n", tt_errmsg()); exit(1); }
    tt_tensor_release(&m);
}

static void bench_mask(void)
{
    int64_t tall[2] = { (int64_t)1 << 24, 1 }, wide[2] = { 1, (int64_t)1 << 24 };
    stat3 st, sw;
    timeit_pair(mask_run, tall, mask_run, wide, 0.5, &st, &sw);
    printf("\n== causal_mask of 2^24 cells, one thread: tall [2^24,1] vs wide [1,2^24], ms\n");
    printf("  tall %.2f (%.2f-%.2f)   wide %.2f (%.2f-%.2f)   ratio tall/wide %.2f\n",
           st.med * 1e3, st.min * 1e3, st.max * 1e3, sw.med * 1e3, sw.min * 1e3, sw.max * 1e3, st.med / sw.med);
}

/* ===== sdpa vs PyTorch ===== */

typedef struct at { tk_sdpa_args a; } at;

static void at_run(void *ctx)
{
    at *t = ctx;
    tk_sdpa(&t->a);
}

static void sdpa_args(tk_sdpa_args *a, int64_t N, int64_t Hkv, float *q, float *k, float *v, float *o)
{
    memset(a, 0, sizeof *a);
    a->B = 1; a->Hq = 8; a->Hkv = Hkv; a->Nq = N; a->Nk = N; a->Dh = 64; a->Dv = 64;
    a->q = q; a->qs_d = 1; a->qs_n = 64; a->qs_h = N * 64; a->qs_b = 8 * N * 64;
    a->k = k; a->ks_d = 1; a->ks_n = 64; a->ks_h = N * 64; a->ks_b = Hkv * N * 64;
    a->v = v; a->vs_d = 1; a->vs_n = 64; a->vs_h = N * 64; a->vs_b = Hkv * N * 64;
    a->causal = 1;
    a->scale = 0.125f;
    a->out = o;
}

/* torch results by key "explicit_N_HKV" */
static struct { char key[32]; stat3 t; double mib; } tres[32];
static int ntres;

static void torch_sdpa(const char *py, int th, const int64_t *ns, int nn)
{
    char cmd[512], line[256];
    int len = snprintf(cmd, sizeof cmd, "%s tests/bench/bench_torch.py %d sdpa", py, th);
    for (int i = 0; i < nn; i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %lld 8 %lld 4", (long long)ns[i], (long long)ns[i]);
    snprintf(cmd + len, sizeof cmd - (size_t)len, " 2>&1");
    FILE *f = popen(cmd, "r");
    ntres = 0;
    while (f && fgets(line, sizeof line, f)) {
        char key[32];
        double med, mn, mx, pk;
        if (strncmp(line, "absent", 6) == 0 || strncmp(line, "info", 4) == 0) { printf("  torch: %s", line); continue; }
        if (sscanf(line, "%31s %lf %lf %lf %lf", key, &med, &mn, &mx, &pk) == 5 && ntres < 32) {
            snprintf(tres[ntres].key, sizeof tres[ntres].key, "%s", key);
            tres[ntres].t.med = med / 1e3; tres[ntres].t.min = mn / 1e3; tres[ntres].t.max = mx / 1e3;
            tres[ntres].mib = pk;
            ntres++;
        }
    }
    if (f) pclose(f);
}

static int torch_find(const char *kind, int64_t n, int64_t hkv)
{
    char key[32];
    snprintf(key, sizeof key, "%s_%lld_%lld", kind, (long long)n, (long long)hkv);
    for (int i = 0; i < ntres; i++) if (strcmp(tres[i].key, key) == 0) return i;
    return -1;
}

/* Matmul FLOPs of causal attention, B=1, H heads of Dh=64, N queries and
   keys: N(N+1)/2 (query, key) pairs, each 2*Dh for q.k and 2*Dh for p*v in
   the forward; the backward recomputes q.k and does four more products
   (dV, dP, dQ, dK), 2*Dh each. Softmax and exp are not counted. */
static double sdpa_flops(int64_t N, int backward)
{
    return (double)N * (double)(N + 1) / 2 * 8 * 64 * 2 * (backward ? 5 : 2);
}

/* "GFLOP  floor ms  share": the time the FLOPs take at the measured FMA peak
   on th threads, and the share of that peak reached in s seconds. */
static void put_floor(double flops, int th, double s)
{
    double pk = peak_now(th);
    char b[64];
    if (pk > 0) snprintf(b, sizeof b, "%.1f  %.1f ms  %.0f%%", flops / 1e9, flops / pk / 1e6, 100.0 * flops / s / (pk * 1e9));
    else snprintf(b, sizeof b, "%.1f  (no peak)", flops / 1e9);
    printf("%-26s", b);
}

static void bench_sdpa(const char *py)
{
    static const int64_t ns[] = { 1024, 2048, 4096 };
    int nn = quick ? 1 : 3;
    printf("\n== sdpa B=1 H=8 Dh=64 causal (ms; extra = peak RSS growth of the first call, MiB;\n"
           "   ours keeps its per-thread K/V packing buffers, so only growth shows; GFLOP of the\n"
           "   matmuls, floor = their time at the FMA peak measured on as many threads, and the\n"
           "   share of that peak reached)\n");
    printf("  %-22s %-2s %-28s%-9s%-26s%-28s%-9s%s\n", "", "th", "ours", "extra", "GFLOP  floor  of peak",
           "torch explicit formula", "extra", "speed-up");
    for (int th = 1; th <= 2; th++) {
        if (py) torch_sdpa(py, th, ns, nn);
        tk_set_num_threads(th);
        for (int i = 0; i < nn; i++)
            for (int64_t hkv = 8; hkv >= 4; hkv -= 4) {
                int64_t N = ns[i];
                float *q = frand((size_t)(8 * N * 64)), *k = frand((size_t)(hkv * N * 64));
                float *v = frand((size_t)(hkv * N * 64)), *o = frand((size_t)(8 * N * 64));
                at t;
                sdpa_args(&t.a, N, hkv, q, k, v, o);
                long base = status_kib("VmRSS");
                peak_reset();
                at_run(&t);
                double mib = (double)(status_kib("VmHWM") - base) / 1024.0;
                stat3 s = timeit(at_run, &t, 1.5);
                char l[64];
                snprintf(l, sizeof l, "N=%lld %s", (long long)N, hkv == 8 ? "MHA" : "GQA G=2");
                printf("  %-22s %d  ", l, th);
                put_ms(s);
                printf("%-9.1f", mib);
                put_floor(sdpa_flops(N, 0), th, s.med);
                int j = torch_find("explicit", N, hkv);
                if (j >= 0) {
                    put_ms(tres[j].t);
                    printf("%-9.1f%5.1fx", tres[j].mib, tres[j].t.med / s.med);
                }
                int f = torch_find("fused", N, hkv);
                if (f >= 0) printf("   fused: %.1f ms (%.1fx)", tres[f].t.med * 1e3, tres[f].t.med / s.med);
                printf("\n");
                fflush(stdout);
                free(q); free(k); free(v); free(o);
            }
    }
    if (quick) return;
    /* the long sequence: must fit in 1 GiB of extra memory */
    int64_t N = 32768;
    tk_set_num_threads(2);
    float *q = frand((size_t)(8 * N * 64)), *k = frand((size_t)(8 * N * 64));
    float *v = frand((size_t)(8 * N * 64)), *o = frand((size_t)(8 * N * 64));
    at t;
    sdpa_args(&t.a, N, 8, q, k, v, o);
    long base = status_kib("VmRSS");
    peak_reset();
    double t0 = now();
    at_run(&t);
    t0 = now() - t0;
    printf("  %-22s %d  %-28.0f%-9.1f(one run, ms)\n", "N=32768 MHA", 2, t0 * 1e3,
           (double)(status_kib("VmHWM") - base) / 1024.0);
    free(q); free(k); free(v); free(o);
}

/* ===== sdpa forward+backward ===== */

typedef struct fb { tk_sdpa_args f; tk_sdpa_bwd_args b; } fb;

static void fb_fwd(void *ctx) { tk_sdpa(&((fb *)ctx)->f); }
static void fb_bwd(void *ctx) { tk_sdpa_backward(&((fb *)ctx)->b); }

/* PyTorch's autograd through the explicit formula at one N: fwd+bwd and
   bwd alone (s), the first call's extra peak RSS (MiB); 0 when absent. */
static int torch_sdpa_bwd(const char *py, int th, int64_t N, stat3 *both, double *bwd, double *mib)
{
    char cmd[512], line[256];
    int found = 0;
    snprintf(cmd, sizeof cmd, "%s tests/bench/bench_torch.py %d sdpabwd %lld 2>&1", py, th, (long long)N);
    FILE *f = popen(cmd, "r");
    while (f && fgets(line, sizeof line, f)) {
        long long n;
        double med, mn, mx, pk, b;
        if (sscanf(line, "sdpabwd_%lld %lf %lf %lf %lf %lf", &n, &med, &mn, &mx, &pk, &b) == 6) {
            *both = (stat3){ med / 1e3, mn / 1e3, mx / 1e3 };
            *bwd = b / 1e3;
            *mib = pk;
            found = 1;
        } else if (strncmp(line, "absent", 6) == 0) {
            printf("  torch: %s", line);
        }
    }
    if (f) pclose(f);
    return found;
}

/* The backward next to the forward that feeds it (which saves lse), MHA
   causal, then PyTorch's autograd through the explicit formula (q@k^T*scale,
   masked_fill, softmax, @v, .backward) on the same shapes. extra: peak RSS
   growth of the first forward+backward (every buffer they are given is
   already resident). */
static void bench_sdpa_bwd(const char *py)
{
    static const int64_t ns[] = { 1024, 4096 };
    printf("\n== sdpa forward+backward B=1 H=8 Dh=64 causal (ms; extra = peak RSS growth of the\n"
           "   first forward+backward, MiB; torch: autograd through the explicit formula;\n"
           "   speed-up = torch fwd+bwd / ours fwd+bwd;\n");
    printf("   fwd+bwd: GFLOP of the forward's and the backward's matmuls together, floor = their\n"
           "   time at the FMA peak measured on as many threads, and the share of it reached)\n");
    printf("  %-10s %-2s %-28s%-28s%-8s%-7s%-26s%-28s%-12s%-9s%s\n", "", "th", "forward", "backward", "bwd/fwd",
           "extra", "fwd+bwd GFLOP floor peak", "torch fwd+bwd", "torch bwd", "extra", "speed-up");
    for (int th = 1; th <= 2; th++) {
        tt_set_num_threads(th);
        for (int i = 0; i < (quick ? 1 : 2); i++) {
            int64_t N = ns[i], n = 8 * N * 64;
            stat3 tb = { 0, 0, 0 };
            double tbwd = 0, tmib = 0;
            int have_torch = py && torch_sdpa_bwd(py, th, N, &tb, &tbwd, &tmib);
            float *q = frand((size_t)n), *k = frand((size_t)n), *v = frand((size_t)n), *o = frand((size_t)n);
            float *go = frand((size_t)n), *dq = frand((size_t)n), *dk = frand((size_t)n);
            float *dv = frand((size_t)n), *lse = frand((size_t)(8 * N));
            fb t;
            sdpa_args(&t.f, N, 8, q, k, v, o);
            t.f.lse = lse;
            tk_sdpa_bwd_args b = {
                1, 8, 8, N, N, 64, 64,
                q, t.f.qs_b, t.f.qs_h, t.f.qs_n, t.f.qs_d,
                k, t.f.ks_b, t.f.ks_h, t.f.ks_n, t.f.ks_d,
                v, t.f.vs_b, t.f.vs_h, t.f.vs_n, t.f.vs_d,
                NULL, 0, 0, 0, 0,
                1, t.f.scale, o, go, lse, dq, dk, dv, .layouts = 0,   /* contiguous */
            };
            t.b = b;
            long base = status_kib("VmRSS");
            peak_reset();
            fb_fwd(&t);
            fb_bwd(&t);
            double mib = (double)(status_kib("VmHWM") - base) / 1024.0;
            stat3 sf = timeit(fb_fwd, &t, 1.5), sb = timeit(fb_bwd, &t, 1.5);
            char l[32];
            snprintf(l, sizeof l, "N=%lld", (long long)N);
            printf("  %-10s %d  ", l, th);
            put_ms(sf);
            put_ms(sb);
            printf("%-8.2f%-7.1f", sb.med / sf.med, mib);
            put_floor(sdpa_flops(N, 0) + sdpa_flops(N, 1), th, sf.med + sb.med);
            if (have_torch) {
                put_ms(tb);
                char bw[32];
                snprintf(bw, sizeof bw, "%.1f ms", tbwd * 1e3);
                printf("%-12s%-9.1f%.1fx", bw, tmib, tb.med / (sf.med + sb.med));
            }
            printf("\n");
            fflush(stdout);
            free(q); free(k); free(v); free(o); free(go); free(dq); free(dk); free(dv); free(lse);
        }
    }
}

/* ===== sdpa in bfloat16 and float16 vs float32 ===== */

/* The same causal attention from 16-bit q, k, v (bits of the float32
   inputs rounded), forward and backward, timed in alternation with the
   float32 kernel on the same inputs (so load on the machine hits both
   alike). The header says which path ran and what it does with bf16. */
static void bench_sdpa_half(void)
{
    int pairs = tk_kern_now()->ukernel_bf16 != NULL;
    printf("\n== sdpa bfloat16 / float16 vs float32, B=1 H=8 Dh=64 causal (ms, median (min-max) of\n"
           "   alternating runs; path %s: %s;\n"
           "   fp16 tiles converted to float32 on load, float32 products; P rounded to the dtype before P V;\n"
           "   %s; q/k/v = their memory;\n"
           "   ratio = 16-bit / float32, of the medians (of the minimums: the steadier on a loaded machine))\n",
           tk_simd_path(), pairs ? "bf16 forward by vdpbf16ps (Q K^T and P V in bf16 pairs, fp32 sums)"
                                 : "bf16 tiles converted to float32 on load (this path has no vdpbf16ps)",
           pairs ? "the bf16 backward's five products by vdpbf16ps too (dO and dS rounded to bf16), fp16's in float32"
                 : "the backward converts to float32");
    printf("  %-14s %-2s %-6s %-9s %-26s%-26s%-15s%-26s%-26s%s\n", "", "th", "dtype", "q/k/v MiB", "forward",
           "float32 forward", "ratio", "backward", "float32 backward", "ratio");
    static const int64_t ns[] = { 2048, 4096 };
    for (int th = 1; th <= 2; th++) {
        tt_set_num_threads(th);
        for (int i = 0; i < (quick ? 1 : 2); i++) {
            int64_t N = ns[i], n = 8 * N * 64;
            float *q = frand((size_t)n), *k = frand((size_t)n), *v = frand((size_t)n), *o = frand((size_t)n);
            float *go = frand((size_t)n), *dq = frand((size_t)n), *dk = frand((size_t)n);
            float *dv = frand((size_t)n), *lse = frand((size_t)(8 * N)), *lse16 = frand((size_t)(8 * N));
            uint16_t *h[3], *o16 = malloc((size_t)n * 2);
            for (int hf = TK_SDPA_BF16; hf <= TK_SDPA_F16; hf++) {
                float *src[3] = { q, k, v };
                for (int t = 0; t < 3; t++) {
                    h[t] = malloc((size_t)n * 2);
                    tk_half_from_f32(hf == TK_SDPA_BF16, n, src[t], h[t]);
                    tk_half_to_f32(hf == TK_SDPA_BF16, n, h[t], src[t]);   /* float32 gets the same values */
                }
                fb t32, t16;
                sdpa_args(&t32.f, N, 8, q, k, v, o);
                t32.f.lse = lse;
                tk_sdpa_bwd_args b = {
                    1, 8, 8, N, N, 64, 64,
                    q, t32.f.qs_b, t32.f.qs_h, t32.f.qs_n, t32.f.qs_d,
                    k, t32.f.ks_b, t32.f.ks_h, t32.f.ks_n, t32.f.ks_d,
                    v, t32.f.vs_b, t32.f.vs_h, t32.f.vs_n, t32.f.vs_d,
                    NULL, 0, 0, 0, 0,
                    1, t32.f.scale, o, go, lse, dq, dk, dv, .layouts = 0,
                };
                t32.b = b;
                t16 = t32;
                t16.f.q = t16.b.q = (const float *)(const void *)h[0];
                t16.f.k = t16.b.k = (const float *)(const void *)h[1];
                t16.f.v = t16.b.v = (const float *)(const void *)h[2];
                t16.f.out = (float *)(void *)o16;
                t16.b.out = (const float *)(const void *)o16;
                t16.f.lse = lse16;
                t16.b.lse = lse16;
                t16.f.half = t16.b.half = hf;
                fb_fwd(&t32); fb_fwd(&t16);
                stat3 f16, f32, b16, b32;
                timeit_pair(fb_fwd, &t16, fb_fwd, &t32, 2.0, &f16, &f32);
                timeit_pair(fb_bwd, &t16, fb_bwd, &t32, 2.0, &b16, &b32);
                char l[32];
                snprintf(l, sizeof l, "N=%lld", (long long)N);
                printf("  %-14s %d  %-6s %-9.1f ", l, th, hf == TK_SDPA_BF16 ? "bf16" : "fp16",
                       3.0 * (double)n * 2.0 / 1048576.0);
                put_ms(f16); put_ms(f32);
                printf("%.2f (%.2f)   ", f16.med / f32.med, f16.min / f32.min);
                put_ms(b16); put_ms(b32);
                printf("%.2f (%.2f)   (float32 q/k/v: %.1f MiB)\n", b16.med / b32.med, b16.min / b32.min,
                       3.0 * (double)n * 4.0 / 1048576.0);
                fflush(stdout);
                for (int t = 0; t < 3; t++) free(h[t]);
            }
            free(q); free(k); free(v); free(o); free(go); free(dq); free(dk); free(dv); free(lse); free(lse16); free(o16);
        }
    }
}

/* ===== sdpa with a sliding window: cost vs N ===== */

/* Forward and forward+backward, full causal against window = W (the
   kernels skip the key blocks outside the band), MHA B=1 H=8 Dh=64 on two
   threads; slope: log2 of the time's growth from the row before (N
   doubles): 2 for O(N^2), 1 for O(N W). Causal stops at 8192 (its
   fwd+bwd there is seconds a run). */
static void bench_sdpa_window(void)
{
    enum { W = 256, NN = 6 };
    static const int64_t ns[NN] = { 1024, 2048, 4096, 8192, 16384, 32768 };
    printf("\n== sdpa sliding window W=%d vs full causal, B=1 H=8 Dh=64, 2 threads (ms, median;\n"
           "   slope = log2 of the growth from the row above: 2 is O(N^2), 1 is O(N W))\n", W);
    printf("  %-8s %-12s%-7s%-14s%-7s%-12s%-7s%-14s%-7s%s\n", "", "causal fwd", "slope", "causal f+b", "slope",
           "window fwd", "slope", "window f+b", "slope", "fwd speed-up");
    tt_set_num_threads(2);
    double prev[4] = { 0, 0, 0, 0 };
    for (int i = 0; i < (quick ? 2 : NN); i++) {
        int64_t N = ns[i], n = 8 * N * 64;
        float *q = frand((size_t)n), *k = frand((size_t)n), *v = frand((size_t)n), *o = frand((size_t)n);
        float *go = frand((size_t)n), *dq = frand((size_t)n), *dk = frand((size_t)n);
        float *dv = frand((size_t)n), *lse = frand((size_t)(8 * N));
        double ms[4] = { 0, 0, 0, 0 };
        for (int w = 0; w < 2; w++) {
            if (w == 0 && N > 8192) continue;
            fb t;
            sdpa_args(&t.f, N, 8, q, k, v, o);
            t.f.lse = lse;
            t.f.o.window = w ? W : 0;
            tk_sdpa_bwd_args b = {
                1, 8, 8, N, N, 64, 64,
                q, t.f.qs_b, t.f.qs_h, t.f.qs_n, t.f.qs_d,
                k, t.f.ks_b, t.f.ks_h, t.f.ks_n, t.f.ks_d,
                v, t.f.vs_b, t.f.vs_h, t.f.vs_n, t.f.vs_d,
                NULL, 0, 0, 0, 0,
                1, t.f.scale, o, go, lse, dq, dk, dv, .layouts = 0, .o = t.f.o,
            };
            t.b = b;
            stat3 sf = timeit(fb_fwd, &t, 0.5), sb = timeit(fb_bwd, &t, 0.5);
            ms[2 * w] = sf.med * 1e3;
            ms[2 * w + 1] = (sf.med + sb.med) * 1e3;
        }
        char l[32];
        snprintf(l, sizeof l, "N=%lld", (long long)N);
        printf("  %-8s ", l);
        for (int c = 0; c < 4; c++) {
            char a[32] = "", sl[16] = "";
            if (ms[c] > 0) snprintf(a, sizeof a, "%.1f", ms[c]);
            if (ms[c] > 0 && prev[c] > 0) snprintf(sl, sizeof sl, "%.2f", log2(ms[c] / prev[c]));
            printf(c % 2 ? "%-14s%-7s" : "%-12s%-7s", a, sl);
            prev[c] = ms[c];
        }
        if (ms[0] > 0) printf("%.1fx", ms[0] / ms[2]);
        printf("\n");
        fflush(stdout);
        free(q); free(k); free(v); free(o); free(go); free(dq); free(dk); free(dv); free(lse);
    }
}

/* ===== The machine ===== */

/* Cache size of level (1: L1d, 2, 3) in KiB: sysconf where glibc knows it,
   else /sys (cpu0's index folders); 0 when neither says. */
static long cache_kib(int level)
{
#if defined(_SC_LEVEL1_DCACHE_SIZE)
    long v = sysconf(level == 1 ? _SC_LEVEL1_DCACHE_SIZE : level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
    if (v > 0) return v / 1024;
#endif
    for (int i = 0; i < 8; i++) {
        char path[96], buf[64];
        long lv = 0, kib = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f) break;
        if (fgets(buf, sizeof buf, f)) lv = atol(buf);
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if ((f = fopen(path, "r")) == NULL) continue;
        int instr = fgets(buf, sizeof buf, f) && strncmp(buf, "Instruction", 11) == 0;
        fclose(f);
        if (lv != level || instr) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if ((f = fopen(path, "r")) == NULL) continue;
        if (fgets(buf, sizeof buf, f)) kib = atol(buf) * (strchr(buf, 'M') ? 1024 : 1);
        fclose(f);
        return kib;
    }
    return 0;
}

static void put_cache(const char *name, long kib)
{
    if (kib >= 1024 && kib % 1024 == 0) printf(" %s %ld MiB", name, kib / 1024);
    else if (kib > 0) printf(" %s %ld KiB", name, kib);
    else printf(" %s ?", name);
}

/* The lines at the top: what the numbers below were measured on. */
static void put_machine(void)
{
    char model[128] = "unknown CPU", line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(model, sizeof model, "%s", colon + 2);
            model[strcspn(model, "\n")] = 0;
            break;
        }
    }
    if (f) fclose(f);
    const char *isa = "scalar";
#if defined(__x86_64__) && defined(__GNUC__)
    isa = __builtin_cpu_supports("avx512bf16") ? "avx512f, avx512_bf16, avx2+fma"
          : __builtin_cpu_supports("avx512f") ? "avx512f, avx2+fma" : __builtin_cpu_supports("fma") ? "avx2+fma" : "sse2";
#endif
    printf("machine: %s; ISA %s; %ld cores;", model, isa, sysconf(_SC_NPROCESSORS_ONLN));
    put_cache("L1d", cache_kib(1));
    put_cache("L2", cache_kib(2));
    put_cache("L3", cache_kib(3));
    printf("\n");
}

static const char *find_python(void)
{
    static const char *cands[] = { "/usr/bin/python3", "python3" };
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "%s -c 'import torch' >/dev/null 2>&1", cands[i]);
        if (system(cmd) == 0) return cands[i];
    }
    printf("PyTorch: not found; install Debian's python3-torch (apt-get install python3-torch) "
           "for the PyTorch columns\n");
    return NULL;
}

int main(int argc, char **argv)
{
    int want[10] = { 0 }, any = 0, no_torch = 0;
    static const char *sec[] = { "peak", "gemm", "softmax", "sdpa", "ew", "sdpabwd", "api", "sdpawindow", "sdpahalf",
                                 "half" };
    const char *path = NULL;   /* path=avx2 (or scalar): run as if the CPU had no wider path */
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "path=", 5) == 0) { path = argv[i] + 5; continue; }
        if (strcmp(argv[i], "notorch") == 0) { no_torch = 1; continue; }   /* the PyTorch columns take minutes */
        if (strcmp(argv[i], "quick") == 0) { quick = no_torch = 1; continue; }
        any = 1;            /* a section, ours or another script's (lessons, train, grading): only those run */
        for (int s = 0; s < 10; s++) if (strcmp(argv[i], sec[s]) == 0) want[s] = 1;
    }
    for (int s = 0; s < 10; s++) want[s] |= !any;
    if (path && !tk_simd_force(path)) {
        fprintf(stderr, "bench: path=%s is not available on this CPU (avx512, avx2, scalar)\n", path);
        return 1;
    }
    openblas_load(path && strcmp(path, "avx2") == 0);
    const char *py = !no_torch && (want[2] || want[3] || want[4] || want[5]) ? find_python() : NULL;
    time_t tm = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&tm));
    printf("tensortrace bench%s — %s; kernel path %s%s; threads %d; %s\n", quick ? " (quick)" : "", date, tk_simd_path(),
           path ? " (forced by path=)" : "", tk_get_num_threads(), ob_config ? ob_config() : "no OpenBLAS");
    put_machine();
    if (want[0]) bench_peak();
    if (want[1]) bench_gemm();
    if (want[9]) bench_half();
    if (want[2]) bench_softmax(py);
    if (want[4]) bench_ew(py);
    if (want[6]) { bench_ops(); tt_set_num_threads(1); bench_mask(); }
    if (want[3]) bench_sdpa(py);
    if (want[5]) bench_sdpa_bwd(py);
    if (want[7]) bench_sdpa_window();
    if (want[8]) bench_sdpa_half();
    return 0;
}
