/*
** fuzz_einsum.c — libFuzzer harness for tt_einsum's spec parser and its
** contraction plans (batch, contracted, free and summed axes, diagonals,
** '...', three or more operands), forward and backward. Input (text):
**   SHAPES '|' SPEC
** SHAPES tensors split by ';', dims by 'x' (each 0..6), e.g. "2x6;6x3".
** A failure must carry a message naming einsum. When the spec is a plain
** letter spec ("ij,jk->ik", "ii", "bij,bjk") the harness also contracts it
** by brute force in float64 and checks the result and the gradient of
** sum(result) with respect to every operand (a wrong plan, not a crash, is
** what most einsum bugs are). Build and run: make fuzz-parsers.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tt.h"

#define MAXT 4
#define MAX_WORK 20000              /* index combinations the reference walks */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static double value(int t, int64_t j) { return (double)((j * 7 + t * 3) % 11) / 4.0 - 1.25; }

/* The letter spec's terms: term[i] the letters of operand i, term[nt] the
   output (implicit: the letters that occur once, alphabetically). 0 when
   the spec is not a plain letter spec this reference reads. */
static int parse_letters(const char *spec, int nt, char term[MAXT + 1][16])
{
    const char *arrow = strstr(spec, "->");
    int k = 0, len = 0;
    for (const char *p = spec; *p; p++) {
        if (p == arrow) {
            if (k != nt - 1) return 0;
            term[k][len] = 0;
            k = nt;
            len = 0;
            p++;
        } else if (*p == ',') {
            if (k >= nt - 1 || (arrow && p > arrow)) return 0;
            term[k][len] = 0;
            k++;
            len = 0;
        } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
            if (len == 15) return 0;
            term[k][len++] = *p;
        } else {
            return 0;
        }
    }
    term[k][len] = 0;
    if (!arrow) {
        if (k != nt - 1) return 0;
        int count[128] = {0};
        for (int i = 0; i < nt; i++)
            for (const char *c = term[i]; *c; c++) count[(int)*c]++;
        len = 0;
        for (int c = 'A'; c <= 'z'; c++)
            if (count[c] == 1 && len < 15) term[nt][len++] = (char)c;
        term[nt][len] = 0;
    }
    return 1;
}

/* Brute force: out[o] = sum over the other letters of prod_i x_i, and
   grad_i[e] = sum of the products of the other operands (upstream ones). */
static int reference(const char term[MAXT + 1][16], int nt, const tt_tensor *in, double *out, double **grad)
{
    char letters[64];
    int64_t size[64];
    int nl = 0;
    for (int i = 0; i < nt; i++) {
        if ((int)strlen(term[i]) != in[i].ndim) return 0;
        for (int d = 0; term[i][d]; d++) {
            int l = 0;
            while (l < nl && letters[l] != term[i][d]) l++;
            if (l == nl) { letters[nl] = term[i][d]; size[nl++] = in[i].shape[d]; }
            else if (size[l] != in[i].shape[d]) return 0;
        }
    }
    for (const char *c = term[nt]; *c; c++) {
        if (strchr(c + 1, *c)) return 0;                        /* an output letter twice */
        int l = 0;
        while (l < nl && letters[l] != *c) l++;
        if (l == nl) return 0;                                  /* an output letter in no operand */
    }
    int64_t work = 1;
    for (int l = 0; l < nl; l++) {
        if (size[l] == 0) work = 0;
        else if ((work *= size[l]) > MAX_WORK) return 0;
    }
    int64_t idx[64] = {0};
    for (int64_t w = 0; w < work; w++) {
        int64_t flat[MAXT], o = 0;
        double x[MAXT];
        for (int i = 0; i < nt; i++) {
            flat[i] = 0;
            for (int d = 0; term[i][d]; d++) {
                int l = (int)(strchr(letters, term[i][d]) - letters);
                flat[i] = flat[i] * in[i].shape[d] + idx[l];
            }
            x[i] = value(i, flat[i]);
        }
        for (const char *c = term[nt]; *c; c++) {
            int l = (int)(strchr(letters, *c) - letters);
            o = o * size[l] + idx[l];
        }
        double prod = 1;
        for (int i = 0; i < nt; i++) prod *= x[i];
        out[o] += prod;
        for (int i = 0; i < nt; i++) {
            double others = 1;
            for (int j = 0; j < nt; j++) if (j != i) others *= x[j];
            grad[i][flat[i]] += others;
        }
        for (int l = nl - 1; l >= 0 && ++idx[l] == size[l]; l--) idx[l] = 0;
    }
    return 1;
}

static void check_close(const char *what, const tt_tensor *t, const double *want, int64_t n, const char *spec)
{
    if (tt_numel(t) != n) {
        fprintf(stderr, "fuzz_einsum: '%s': %s has %lld elements, the reference %lld\n", spec, what,
                (long long)tt_numel(t), (long long)n);
        abort();
    }
    for (int64_t j = 0; j < n; j++) {
        double got = tt_get(t, j);
        if (!(fabs(got - want[j]) <= 1e-4 * (1 + fabs(want[j])))) {
            fprintf(stderr, "fuzz_einsum: '%s': %s[%lld] = %.9g, the float64 reference %.9g\n", spec, what,
                    (long long)j, got, want[j]);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char *p = text;

    int nt = 1, ndim[MAXT] = {0};
    int64_t shape[MAXT][TT_MAX_DIMS];
    while (*p && *p != '|') {
        if (*p == ';') { if (nt < MAXT) nt++; p++; continue; }
        if (*p >= '0' && *p <= '9') {
            int64_t v = 0;
            while (*p >= '0' && *p <= '9') { v = v * 10 + (*p - '0'); if (v > 6) v = 6; p++; }
            int64_t numel = 1;                  /* small tensors: the spec is the target */
            for (int j = 0; j < ndim[nt - 1]; j++) numel *= shape[nt - 1][j] ? shape[nt - 1][j] : 1;
            if (numel * v > 4096) v = 1;
            if (ndim[nt - 1] < TT_MAX_DIMS) shape[nt - 1][ndim[nt - 1]++] = v;
            continue;
        }
        p++;
    }
    if (*p == '|') p++;
    const char *spec = p;

    tt_tensor in[MAXT];
    const tt_tensor *list[MAXT];
    int made = 0;
    for (int i = 0; i < nt; i++) {
        if (tt_zeros(&in[i], TT_FLOAT32, ndim[i], shape[i]) != TT_OK) break;
        float *f = tt_data_f32(&in[i]);
        for (int64_t j = 0; j < tt_numel(&in[i]); j++) f[j] = (float)value(i, j);
        if (tt_requires_grad_(&in[i], 1) != TT_OK) abort();
        list[i] = &in[i];
        made++;
    }
    if (made == nt) {
        tt_tensor out = {0};
        if (tt_einsum(&out, spec, list, nt) != TT_OK) {
            if (strncmp(tt_errmsg(), "einsum", 6) != 0) {
                fprintf(stderr, "fuzz_einsum: '%s': an error that does not name einsum: %s\n", spec, tt_errmsg());
                abort();
            }
        } else {
            char term[MAXT + 1][16];
            int64_t nout = tt_numel(&out);
            double *want = calloc((size_t)nout + 1, sizeof *want), *grad[MAXT];
            for (int i = 0; i < nt; i++) grad[i] = calloc((size_t)tt_numel(&in[i]) + 1, sizeof *grad[i]);
            int checked = parse_letters(spec, nt, term) && reference(term, nt, in, want, grad);
            if (checked) check_close("the result", &out, want, nout, spec);
            tt_tensor loss = {0};
            if (tt_reduce(&loss, TT_OP_SUM, &out, -1, 0) == TT_OK) {
                if (tt_backward(&loss, NULL) != TT_OK) {
                    fprintf(stderr, "fuzz_einsum: '%s': backward failed: %s\n", spec, tt_errmsg());
                    abort();
                }
                for (int i = 0; i < nt && checked; i++) {
                    const tt_tensor *g = tt_grad(&in[i]);
                    if (g == NULL && tt_numel(&in[i]) > 0) {
                        int any = 0;            /* no gradient is right only where it is all zero */
                        for (int64_t j = 0; j < tt_numel(&in[i]); j++) any |= grad[i][j] != 0;
                        if (any) { fprintf(stderr, "fuzz_einsum: '%s': operand %d got no gradient\n", spec, i + 1); abort(); }
                    } else if (g) {
                        char what[32];
                        snprintf(what, sizeof what, "the gradient of operand %d", i + 1);
                        check_close(what, g, grad[i], tt_numel(&in[i]), spec);
                    }
                }
                tt_tensor_release(&loss);
            }
            for (int i = 0; i < nt; i++) free(grad[i]);
            free(want);
            tt_tensor_release(&out);
        }
    }
    for (int i = 0; i < made; i++) tt_tensor_release(&in[i]);
    free(text);
    return 0;
}
