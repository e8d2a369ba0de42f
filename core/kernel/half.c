/*
** half.c — the 16-bit float formats, to and from float32, portable C.
** bfloat16 is float32's top half (8 exponent bits, 7 fraction bits: the
** range of float32, 3 decimal digits); float16 is IEEE binary16 (5 and 10:
** 65504 at most, normals from 2^-14, subnormals down to 2^-24). float32 to
** either rounds to nearest, ties to even; the way back is exact. These are
** the portable conversions (the scalar path's); avx512.c and avx2.c have
** vector ones with the same bits, which tk_half_from_f32/_to_f32 dispatch to.
*/
#include <string.h>

#include "kernels.h"

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t tk_bf16_from_f32(float f)
{
    uint32_t u = bits_of(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);  /* NaN stays NaN (quiet) */
    /* adding 0x7fff (0x8000 when the kept part is odd) carries into the
       kept half exactly when the dropped half is past (or, odd, at) the
       middle; a carry out of the fraction bumps the exponent, to inf at the top */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float tk_bf16_to_f32(uint16_t h) { return float_of((uint32_t)h << 16); }

uint16_t tk_f16_from_f32(float f)
{
    uint32_t u = bits_of(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | (a >> 13 & 0x3ffu));   /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);    /* from 65520 (past 65504's half ulp): inf */
    if (a < 0x38800000u) {
        /* below 2^-14: a subnormal (or 0), a multiple of 2^-24. 0.5 + |f| is
           rounded by the FPU to a multiple of 2^-24 (0.5's ulp), ties to even:
           its fraction bits are the result's (2^-14 itself comes out as 0x400) */
        return (uint16_t)(sign | (bits_of(float_of(a) + 0.5f) - 0x3f000000u));
    }
    /* a normal: rebias the exponent (127 -> 15) and round away 13 fraction
       bits, ties to even; a carry moves into the exponent as it should */
    uint32_t r = a - 0x38000000u;
    return (uint16_t)(sign | ((r + 0x0fffu + ((r >> 13) & 1u)) >> 13));
}

float tk_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)      /* inf; a NaN comes out quiet, as F16C's vcvtph2ps gives it */
        return float_of(sign | 0x7f800000u | (m << 13) | (m ? 0x00400000u : 0u));
    if (e == 0) {                                                    /* 0, subnormal: m * 2^-24 */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

void tk_half_from_f32_ref(int bf16, int64_t n, const float *x, uint16_t *y)
{
    if (bf16)
        for (int64_t i = 0; i < n; i++) y[i] = tk_bf16_from_f32(x[i]);
    else
        for (int64_t i = 0; i < n; i++) y[i] = tk_f16_from_f32(x[i]);
}

void tk_half_to_f32_ref(int bf16, int64_t n, const uint16_t *x, float *y)
{
    if (bf16)
        for (int64_t i = 0; i < n; i++) y[i] = tk_bf16_to_f32(x[i]);
    else
        for (int64_t i = 0; i < n; i++) y[i] = tk_f16_to_f32(x[i]);
}

/* The current path's vector conversions (the same bits as the loops above) */
void tk_half_from_f32(int bf16, int64_t n, const float *x, uint16_t *y)
{
    if (n > 0) tk_kern_now()->half_from_f32(bf16, n, x, y);
}

void tk_half_to_f32(int bf16, int64_t n, const uint16_t *x, float *y)
{
    if (n > 0) tk_kern_now()->half_to_f32(bf16, n, x, y);
}
