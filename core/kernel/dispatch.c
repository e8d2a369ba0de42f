/*
** dispatch.c — the choice of kernel path (detected once at start-up, or
** forced by tests and benchmarks) and the dispatching elementwise entry points.
*/
#include <string.h>

#include "kernels.h"

#ifdef TK_X86_SIMD
#include <cpuid.h>
#endif

/* ===== Dispatch ===== */

static const tk_kern *kern_auto, *kern_forced;

#ifdef TK_X86_SIMD
/* F16C (the float16 conversions the avx2 path uses) from cpuid leaf 1:
   clang 14's __builtin_cpu_supports does not know "f16c". */
static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

/* AVX512_BF16 (cpuid leaf 7, subleaf 1, eax bit 5) beside AVX-512F, BW
   and VL, and the OS saving the AVX-512 state (which avx512f's check
   includes). */
static int has_bf16(void)
{
    unsigned a, b, c, d;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
           && __builtin_cpu_supports("avx512vl")
           && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)) != 0;
}
#endif

static const tk_kern *detect(void)
{
#ifdef TK_X86_SIMD
    __builtin_cpu_init();
    if (has_bf16()) return &tk_kern_avx512_bf16;
    if (__builtin_cpu_supports("avx512f")) return &tk_kern_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c())
        return &tk_kern_avx2;
#endif
#ifdef __wasm_simd128__
    return &tk_kern_wasm;
#endif
    return &tk_kern_scalar;
}

const tk_kern *tk_kern_now(void)
{
    if (kern_forced) return kern_forced;
    if (!kern_auto) kern_auto = detect();
    return kern_auto;
}

const char *tk_simd_path(void) { return tk_kern_now()->name; }

int tk_simd_force(const char *path)
{
    if (!path) { kern_forced = NULL; return 1; }
#ifdef __wasm_simd128__
    if (strcmp(path, "scalar") == 0) { kern_forced = &tk_kern_wasm; return 1; }
#endif
    if (strcmp(path, "scalar") == 0) { kern_forced = &tk_kern_scalar; return 1; }
#ifdef TK_X86_SIMD
    __builtin_cpu_init();
    if (strcmp(path, "avx512_bf16") == 0 && has_bf16()) {
        kern_forced = &tk_kern_avx512_bf16;
        return 1;
    }
    if (strcmp(path, "avx512") == 0 && __builtin_cpu_supports("avx512f")) {
        kern_forced = &tk_kern_avx512;
        return 1;
    }
    if (strcmp(path, "avx2") == 0 && __builtin_cpu_supports("avx2")
        && __builtin_cpu_supports("fma") && has_f16c()) {
        kern_forced = &tk_kern_avx2;
        return 1;
    }
#endif
    return 0;
}
/* ===== Elementwise rows (serial; the op front-end shares them out) ===== */

void tk_ew_binary(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy, float *o)
{
    if (op == TK_EW_POW && n > 0 && sy == 0 && y[0] == 2.0f) {   /* x^2 as x*x: exact, and vector */
        op = TK_EW_MUL;
        y = x;
        sy = sx;
    }
    if (n > 0) tk_kern_now()->ew_binary(op, n, x, sx, y, sy, o);
}

void tk_ew_compare(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy, uint8_t *o)
{
    if (n > 0) tk_kern_now()->ew_compare(op, n, x, sx, y, sy, o);
}

void tk_ew_unary(int op, int64_t n, const float *x, float *o)
{
    if (n > 0) tk_kern_now()->ew_unary(op, n, x, o);
}

void tk_ew_masked_fill(int64_t n, const float *x, int64_t sx, const uint8_t *m, int64_t sm,
                       float v, float *o)
{
    if (n > 0) tk_kern_now()->ew_masked_fill(n, x, sx, m, sm, v, o);
}
