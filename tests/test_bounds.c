/*
** test_bounds.c — writes stay inside their buffers. A 16-bit output (arange,
** sdpa with no keys) leaves the buffer after it alone; and, built with
** AddressSanitizer (make asan), a planted one-byte overflow of a 100 KiB
** tensor carved from a slab (its neighbour live after it) and a write into
** a buffer back in the cache are each reported (in a child that must die).
*/
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tt.h"

/* 65536 bytes of bfloat16: a medium buffer, carved from a slab */
#define ROWS 512
#define COLS 64
static const int64_t SHAPE4[4] = {1, 1, ROWS, COLS};

typedef tt_status (*make_fn)(tt_tensor *out);

static tt_status make_arange(tt_tensor *out)
{
    return tt_arange_int(out, TT_BFLOAT16, 0, ROWS * COLS, 1);
}

static tt_tensor q16, k16;     /* sdpa's operands, made before the buffers below */

static tt_status make_sdpa(tt_tensor *out)
{
    return tt_sdpa(out, NULL, &q16, &k16, &k16, NULL, 0, NAN, NULL);
}

/* make(out) gives a [1,1,ROWS,COLS] bfloat16 tensor. Two such buffers are
   taken from the cache, the first given back so that out reuses it; the
   second, the guard after it, is filled with a byte pattern that must
   survive make. */
static void check_no_spill(const char *what, make_fn make)
{
    tt_tensor first = {0}, guard = {0}, out = {0};
    CHECK("buffers for the spill test", tt_zeros(&first, TT_BFLOAT16, 4, SHAPE4) == TT_OK
          && tt_zeros(&guard, TT_BFLOAT16, 4, SHAPE4) == TT_OK);
    unsigned char *g = (unsigned char *)tt_data_u16(&guard);
    const uintptr_t at = (uintptr_t)tt_data_u16(&first);
    const size_t nbytes = (size_t)ROWS * COLS * 2;
#if defined(__linux__) && !defined(TT_NO_SLABS)
    /* the premise: the guard lies within reach of a write twice out's size */
    CHECK("the guard buffer follows the first (one slab)",
          (uintptr_t)g > at && (uintptr_t)g - at < 2 * nbytes);
#endif
    memset(g, 0xA5, nbytes);
    tt_tensor_release(&first);
    CHECK(what, make(&out) == TT_OK);
    CHECK("the output reuses the buffer given back", (uintptr_t)tt_data_u16(&out) == at);
    size_t bad = 0;
    for (size_t i = 0; i < nbytes; i++) bad += g[i] != 0xA5;
    char descr[160];
    snprintf(descr, sizeof descr, "%s writes nothing past its output (%zu guard bytes changed)", what, bad);
    CHECK(descr, bad == 0);
    tt_tensor_release(&guard);          /* in this order: the next call gets them as this one did */
    tt_tensor_release(&out);
}

static void test_no_spill(void)
{
    int64_t qs[4] = {1, 1, ROWS, COLS}, ks[4] = {1, 1, 0, COLS};
    CHECK("sdpa operands", tt_ones(&q16, TT_BFLOAT16, 4, qs) == TT_OK && tt_zeros(&k16, TT_BFLOAT16, 4, ks) == TT_OK);
    check_no_spill("sdpa, bfloat16, no keys", make_sdpa);
    check_no_spill("arange, bfloat16", make_arange);
    tt_tensor_release(&q16);
    tt_tensor_release(&k16);
}

#ifdef CHECK_UNDER_ASAN
/* ===== AddressSanitizer sees inside the cache and the slabs ===== */

#define N100K (100 * 1024 / 4)          /* 100 KiB of float32 */

static void plant_past_end(void)       /* between a and b, carved from one slab */
{
    tt_tensor a = {0}, b = {0};
    int64_t n = N100K;
    if (tt_zeros(&a, TT_FLOAT32, 1, &n) || tt_zeros(&b, TT_FLOAT32, 1, &n)) _exit(3);
    volatile char *p = (volatile char *)tt_data_f32(&a);
    if ((uintptr_t)tt_data_f32(&b) - (uintptr_t)p > (size_t)2 * 4 * N100K) _exit(4);   /* not neighbours */
    p[(size_t)n * 4] = 1;               /* one byte past a's last */
}

static void plant_last_byte(void)      /* the control: in bounds, no report */
{
    tt_tensor t = {0};
    int64_t n = N100K;
    if (tt_zeros(&t, TT_FLOAT32, 1, &n)) _exit(3);
    volatile char *p = (volatile char *)tt_data_f32(&t);
    p[(size_t)n * 4 - 1] = 1;
    tt_tensor_release(&t);
}

static void plant_after_release(void)  /* the buffer is back in the cache */
{
    tt_tensor t = {0};
    int64_t n = N100K;
    if (tt_zeros(&t, TT_FLOAT32, 1, &n)) _exit(3);
    volatile char *p = (volatile char *)tt_data_f32(&t);
    tt_tensor_release(&t);
    p[64] = 1;
}

/* Runs fn in a child with stderr captured into buf; the exit status. */
static int run_child(void (*fn)(void), char *buf, size_t n)
{
    int fd[2];
    buf[0] = 0;
    if (pipe(fd) != 0) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        fn();
        _exit(0);
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd[0], buf + got, n - 1 - got)) > 0 && got + (size_t)r < n - 1) got += (size_t)r;
    if (r > 0) got += (size_t)r;
    buf[got] = 0;
    close(fd[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
    return status;
}

static void expect_report(const char *what, void (*fn)(void), int want)
{
    static char buf[1 << 16];
    int status = run_child(fn, buf, sizeof buf);
    int died = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int reported = strstr(buf, "AddressSanitizer") != NULL;
    char descr[200];
    snprintf(descr, sizeof descr, "ASan %s: %s (status %d)", want ? "reports" : "stays quiet on", what, status);
    CHECK(descr, want ? died && reported : !died && !reported);
    if (want && !(died && reported)) printf("  child's stderr: %.400s\n", buf);
}

static void test_asan_sees_slabs(void)
{
    expect_report("a write to the last byte of a 100 KiB tensor", plant_last_byte, 0);
    expect_report("a one-byte overflow of a 100 KiB tensor", plant_past_end, 1);
    expect_report("a write into a buffer back in the cache", plant_after_release, 1);
}
#endif

int main(void)
{
    test_no_spill();
#ifdef CHECK_UNDER_ASAN
    test_asan_sees_slabs();
#endif
    return check_report();
}
