/*
** fuzz_pattern.c — libFuzzer harness for the einops parsers: tt_rearrange
** and tt_einsum on small tensors. Input (text, so the corpus is readable):
**   MODE SHAPES '|' SIZES '|' PATTERN
** MODE 'r' (rearrange) or 'e' (einsum); SHAPES tensors split by ';', dims by
** 'x' (each 0..6), e.g. "2x6;6x3"; SIZES "h=2,d=3". Build: make fuzz.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tt.h"

#define MAXT 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    const int einsum = text[0] == 'e';
    char *p = text + 1;

    /* shapes */
    int nt = 1, ndim[MAXT] = {0};
    int64_t shape[MAXT][TT_MAX_DIMS];
    while (*p && *p != '|') {
        if (*p == ';') { if (nt < MAXT) nt++; p++; continue; }
        if (*p == 'x') { p++; continue; }
        if (*p >= '0' && *p <= '9') {
            int64_t v = 0;
            while (*p >= '0' && *p <= '9') { v = v * 10 + (*p - '0'); if (v > 6) v = 6; p++; }
            int64_t numel = 1;                  /* small tensors: parsing is the target */
            for (int j = 0; j < ndim[nt - 1]; j++) numel *= shape[nt - 1][j] ? shape[nt - 1][j] : 1;
            if (numel * v > 4096) v = 1;
            if (ndim[nt - 1] < TT_MAX_DIMS) shape[nt - 1][ndim[nt - 1]++] = v;
            continue;
        }
        p++;
    }
    if (*p == '|') p++;

    /* sizes: name=value pairs, interned names */
    const char *names[8];
    int64_t sizes[8];
    int ns = 0;
    while (*p && *p != '|') {
        char name[32];
        int k = 0;
        while (*p && *p != '=' && *p != '|' && *p != ',' && k < 31) name[k++] = *p++;
        name[k] = 0;
        int64_t v = 0, neg = 0;
        if (*p == '=') {
            p++;
            if (*p == '-') { neg = 1; p++; }
            while (*p >= '0' && *p <= '9') { if (v < (INT64_MAX - 9) / 10) v = v * 10 + (*p - '0'); p++; }
        }
        if (ns < 8 && k > 0) { names[ns] = tt_intern(name); sizes[ns++] = neg ? -v : v; }
        while (*p && *p != ',' && *p != '|') p++;
        if (*p == ',') p++;
    }
    if (*p == '|') p++;
    const char *pattern = p;

    tt_tensor in[MAXT];
    const tt_tensor *list[MAXT];
    int made = 0;
    for (int i = 0; i < nt; i++) {
        if (tt_zeros(&in[i], TT_FLOAT32, ndim[i], shape[i]) != TT_OK) break;
        float *f = tt_data_f32(&in[i]);
        int64_t n = tt_numel(&in[i]);
        for (int64_t j = 0; j < n; j++) f[j] = (float)j;
        list[i] = &in[i];
        made++;
    }
    if (made == nt) {
        tt_tensor out = {0};
        tt_status st = einsum ? tt_einsum(&out, pattern, list, nt)
                              : tt_rearrange(&out, &in[0], pattern, ns, names, sizes);
        if (st == TT_OK) {
            /* touch every element: a wrong stride shows up under ASan */
            volatile double acc = 0;
            int64_t n = tt_numel(&out);
            for (int64_t j = 0; j < n && j < 100000; j++) acc += tt_get(&out, j);
            (void)acc;
            tt_tensor_release(&out);
        } else if (tt_errmsg()[0] == 0) {
            abort();                     /* every failure carries a message */
        }
    }
    for (int i = 0; i < made; i++) tt_tensor_release(&in[i]);
    free(text);
    return 0;
}
