/*
** fuzz_pattern.c — libFuzzer harness for the einops patterns: tt_rearrange,
** tt_reduce_pattern and tt_repeat on small tensors, forward and backward
** (einsum has its own harness, fuzz_einsum.c). Input (text, so the corpus
** is readable):
**   MODE SHAPE '|' SIZES '|' PATTERN
** MODE 'r' rearrange, 'p' repeat, or a reduction: 'S' sum, 'M' mean,
** 'X' max, 'N' min, 'Y' any, 'L' all, '?' an unknown one ("prod");
** SHAPE dims split by 'x' (each 0..6), e.g. "2x6"; SIZES "h=2,d=3".
** A failure must carry a message naming the op. A result must hold what
** the pattern promises: rearrange and a sum keep the sum of the values
** (0, 1, 2, ...), repeat multiplies it by numel(out) / numel(in), and the
** gradient of sum(result) adds up to numel(result) (the same for a sum).
** Build and run: make fuzz-parsers.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tt.h"

#define MAX_CHECKED (1 << 20)       /* a repeat may be a huge view: larger results are only touched */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    const char mode = text[0];
    static const char *const REDUCE_MODES = "SMXNYL?";
    static const char *const REDUCTIONS[] = {"sum", "mean", "max", "min", "any", "all", "prod"};
    const char *rmode = strchr(REDUCE_MODES, mode);
    const char *reduction = mode && rmode ? REDUCTIONS[rmode - REDUCE_MODES] : NULL;
    char *p = text + 1;

    /* the shape */
    int ndim = 0;
    int64_t shape[TT_MAX_DIMS];
    while (*p && *p != '|') {
        if (*p >= '0' && *p <= '9') {
            int64_t v = 0;
            while (*p >= '0' && *p <= '9') { v = v * 10 + (*p - '0'); if (v > 6) v = 6; p++; }
            int64_t numel = 1;                  /* small tensors: parsing is the target */
            for (int j = 0; j < ndim; j++) numel *= shape[j] ? shape[j] : 1;
            if (numel * v > 4096) v = 1;
            if (ndim < TT_MAX_DIMS) shape[ndim++] = v;
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

    tt_tensor in;
    if (tt_zeros(&in, TT_FLOAT32, ndim, shape) == TT_OK) {
        float *f = tt_data_f32(&in);
        int64_t n = tt_numel(&in);
        for (int64_t j = 0; j < n; j++) f[j] = (float)j;
        if (tt_requires_grad_(&in, 1) != TT_OK) abort();
        const char *op = reduction ? "reduce" : mode == 'p' ? "repeat" : "rearrange";
        tt_tensor out = {0};
        tt_status st = reduction ? tt_reduce_pattern(&out, &in, pattern, reduction, ns, names, sizes)
                       : mode == 'p' ? tt_repeat(&out, &in, pattern, ns, names, sizes)
                       : tt_rearrange(&out, &in, pattern, ns, names, sizes);
        if (st == TT_OK) {
            /* touch every element: a wrong stride shows up under ASan */
            double sum_in = (double)n * (double)(n - 1) / 2, sum_out = 0;
            int64_t nout = tt_numel(&out);
            for (int64_t j = 0; j < nout && j < MAX_CHECKED; j++) sum_out += tt_get(&out, j);
            int sums = (!reduction || strcmp(reduction, "sum") == 0) && nout <= MAX_CHECKED;
            double want = mode == 'p' && n ? sum_in * (double)nout / (double)n : sum_in;
            if (sums && fabs(sum_out - want) > 1e-6 * (1 + fabs(want))) {
                fprintf(stderr, "fuzz_pattern: %s \"%s\": the result sums to %.17g, %.17g expected\n", op,
                        pattern, sum_out, want);
                abort();
            }
            tt_tensor loss = {0};
            if (out.dtype == TT_FLOAT32 && nout <= MAX_CHECKED && tt_reduce(&loss, TT_OP_SUM, &out, -1, 0) == TT_OK) {
                if (tt_backward(&loss, NULL) != TT_OK) {
                    fprintf(stderr, "fuzz_pattern: %s \"%s\": backward failed: %s\n", op, pattern, tt_errmsg());
                    abort();
                }
                const tt_tensor *g = tt_grad(&in);
                double gsum = 0;
                for (int64_t j = 0; g && j < n; j++) gsum += tt_get(g, j);
                /* d sum(out) / d in: 1 per input element for a sum; for the others 1 per output
                   element, shared among the inputs it came from */
                int64_t gwant = reduction && strcmp(reduction, "sum") == 0 ? n : nout;
                if (n && fabs(gsum - (double)gwant) > 1e-4 * (1 + (double)gwant)) {
                    fprintf(stderr, "fuzz_pattern: %s \"%s\": the gradient sums to %.17g, %lld expected\n", op,
                            pattern, gsum, (long long)gwant);
                    abort();
                }
                tt_tensor_release(&loss);
            }
            tt_tensor_release(&out);
        } else if (strncmp(tt_errmsg(), op, strlen(op)) != 0) {
            fprintf(stderr, "fuzz_pattern: %s \"%s\": an error that does not name the op: %s\n", op, pattern,
                    tt_errmsg());
            abort();
        }
        tt_tensor_release(&in);
    }
    free(text);
    return 0;
}
