/*
** check.h — the C tests' counter (in the shape of sds's testhelp.h).
** CHECK(descr, cond) counts; check_close compares against a float64
** reference; check_report prints "N passed, N failed" and gives the exit code.
*/
#ifndef TT_CHECK_H
#define TT_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

static int check_passed, check_failed;

/* xorshift64: the next 53 random bits of *state as a double in [0, 1).
   Each test keeps its own state, so its draws stay its own. */
static inline double check_xorshift(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return (double)(*state >> 11) / 9007199254740992.0;
}

/* CHECK_UNDER_ASAN: built with AddressSanitizer (make asan), where a test
   samples what would take minutes and does not read memory use (the RSS
   holds ASan's shadow, quarantine and fake stacks). */
#if defined(__SANITIZE_ADDRESS__)
#define CHECK_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHECK_UNDER_ASAN 1
#endif
#endif

#define CHECK(descr, cond) do { \
    if (cond) check_passed++; \
    else { check_failed++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, descr); } \
} while (0)

/* |x - r| <= atol + rtol*|r| for every element; non-finite references must
   match exactly (NaN with NaN, inf with the same inf). Prints the first few
   mismatches and stops after 10. */
static inline int check_close_impl(const char *descr, const float *x, const double *ref, long n,
                            double rtol, double atol, const char *file, int line)
{
    int bad = 0;
    for (long i = 0; i < n && bad < 10; i++) {
        double r = ref[i], v = (double)x[i];
        int ok;
        if (isnan(r)) ok = isnan(v);
        else if (isinf(r)) ok = (v == r);
        else ok = isfinite(v) && fabs(v - r) <= atol + rtol * fabs(r);
        if (!ok) {
            if (bad < 5) printf("  %s: [%ld] got %.9g want %.9g\n", descr, i, v, r);
            bad++;
        }
    }
    if (bad) { check_failed++; printf("FAIL %s:%d: %s\n", file, line, descr); }
    else check_passed++;
    return bad == 0;
}
#define check_close(descr, x, ref, n, rtol, atol) \
    check_close_impl(descr, x, ref, n, rtol, atol, __FILE__, __LINE__)

static int check_report(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
