/*
** print.c — tensors as text, the way PyTorch lays them out: one number
** format for the whole tensor (integers, fixed or scientific), columns
** aligned, dims longer than 6 summarised with "..." when the tensor is big,
** rows wrapped at 80 columns between numbers.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tt_internal.h"

#define SUMMARY_THRESHOLD 1000   /* PyTorch's default */
#define EDGE_ITEMS 3
#define LINE_WIDTH 80            /* PyTorch's linewidth */

static int precision = 4;        /* digits after the point, PyTorch's default */

void tt_set_print_precision(int digits)
{
    precision = digits < 0 ? 0 : digits > TT_PRINT_PRECISION_MAX ? TT_PRINT_PRECISION_MAX : digits;
}

int tt_print_precision(void) { return precision; }

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) TT__PRINTF(2, 3);
static void sb_add(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->cap - b->len, fmt, ap);   /* no NULL + 0 */
        va_end(ap);
        if (n < 0) { b->oom = 1; return; }
        if ((size_t)n < b->cap - b->len) { b->len += (size_t)n; return; }
        size_t ncap = (b->cap + (size_t)n + 1) * 2;
        char *np = realloc(b->p, ncap);
        if (np == NULL) { b->oom = 1; return; }
        b->p = np;
        b->cap = ncap;
    }
}

typedef struct fmt {
    int kind;        /* 0 integers, 1 fixed, 2 scientific, 3 bool, 4 int64 */
    int width;
    int summarize;
} fmt;

static int shown(const tt_tensor *t, int d, int64_t i, const fmt *f)
{
    return !f->summarize || t->shape[d] <= 2 * EDGE_ITEMS || i < EDGE_ITEMS || i >= t->shape[d] - EDGE_ITEMS;
}

static double elem(const tt_tensor *t, const int64_t *idx)
{
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) off += idx[i] * t->stride[i];
    if (t->dtype == TT_BOOL) return ((const uint8_t *)t->storage->data)[off];
    if (t->dtype == TT_INT64) return (double)((const int64_t *)t->storage->data)[off];
    if (t->dtype != TT_FLOAT32) return tt_half_to_float(t->dtype, ((const uint16_t *)t->storage->data)[off]);
    return ((const float *)t->storage->data)[off];
}

/* An int64 element exactly (a double holds integers only up to 2^53). */
static int64_t elem_i64(const tt_tensor *t, const int64_t *idx)
{
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) off += idx[i] * t->stride[i];
    return ((const int64_t *)t->storage->data)[off];
}

static int fmt_value(char *buf, size_t n, double v, const fmt *f)
{
    if (f->kind == 3) return snprintf(buf, n, "%s", v != 0 ? "true" : "false");
    if (isnan(v)) return snprintf(buf, n, "nan");
    if (isinf(v)) return snprintf(buf, n, v < 0 ? "-inf" : "inf");
    if (f->kind == 0) return snprintf(buf, n, "%.0f.", v);
    if (f->kind == 1) return snprintf(buf, n, "%.*f", precision, v);
    return snprintf(buf, n, "%.*e", precision, v);
}

/* Visits every shown element (row-major) to choose format and width. */
static void scan(const tt_tensor *t, int d, int64_t *idx, fmt *f, double *stats, int pass)
{
    if (d == t->ndim) {
        if (f->kind == 4) {                 /* int64: integers, exactly */
            char buf[32];
            int w = snprintf(buf, sizeof buf, "%lld", (long long)elem_i64(t, idx));
            if (w > f->width) f->width = w;
            return;
        }
        double v = elem(t, idx);
        if (pass == 0) {
            if (!isfinite(v)) return;
            double a = fabs(v);
            if (v != floor(v)) stats[0] = 0;          /* not all integers */
            if (a > stats[1]) stats[1] = a;
            if (a > 0 && a < stats[2]) stats[2] = a;
        } else {
            char buf[64];
            int w = fmt_value(buf, sizeof buf, v, f);
            if (w > f->width) f->width = w;
        }
        return;
    }
    for (int64_t i = 0; i < t->shape[d]; i++) {
        if (!shown(t, d, i, f)) {
            i = t->shape[d] - EDGE_ITEMS - 1;    /* jump the summarised middle */
            continue;
        }
        idx[d] = i;
        scan(t, d + 1, idx, f, stats, pass);
    }
}

static void emit_value(sbuf *b, const tt_tensor *t, const int64_t *idx, const fmt *f)
{
    char buf[64];
    if (f->kind == 4) snprintf(buf, sizeof buf, "%lld", (long long)elem_i64(t, idx));
    else fmt_value(buf, sizeof buf, elem(t, idx), f);
    sb_add(b, "%*s", f->width, buf);
}

/* The last dim, its '[' at column indent: as many numbers a line as fit in
   LINE_WIDTH (at least one), the next line under the first number, as
   PyTorch's _vector_str does; "..." counts as one number. */
static void emit_row(sbuf *b, const tt_tensor *t, int d, int64_t *idx, const fmt *f, int indent)
{
    int per = (LINE_WIDTH - indent) / (f->width + 2);
    if (per < 1) per = 1;
    sb_add(b, "[");
    int on_line = 0;
    for (int64_t i = 0; i < t->shape[d]; i++) {
        int dots = !shown(t, d, i, f);
        if (on_line == per) {
            sb_add(b, ",\n%*s", indent + 1, "");
            on_line = 0;
        } else if (i > 0) {
            sb_add(b, ", ");
        }
        on_line++;
        if (dots) {
            sb_add(b, "...");
            i = t->shape[d] - EDGE_ITEMS - 1;        /* jump the summarised middle */
            continue;
        }
        idx[d] = i;
        emit_value(b, t, idx, f);
    }
    sb_add(b, "]");
}

static void emit(sbuf *b, const tt_tensor *t, int d, int64_t *idx, const fmt *f, int indent)
{
    if (d == t->ndim) {                 /* a 0-dim tensor */
        emit_value(b, t, idx, f);
        return;
    }
    if (d == t->ndim - 1) {
        emit_row(b, t, d, idx, f, indent);
        return;
    }
    sb_add(b, "[");
    int skipped = 0;
    int first = 1;
    for (int64_t i = 0; i < t->shape[d]; i++) {
        if (!shown(t, d, i, f)) {
            if (!skipped) {
                skipped = 1;
                sb_add(b, ",\n%*s...", indent + 1, "");
            }
            i = t->shape[d] - EDGE_ITEMS - 1;        /* jump the summarised middle */
            continue;
        }
        if (!first) {
            sb_add(b, ",");
            for (int k = 0; k < t->ndim - 1 - d; k++) sb_add(b, "\n");
            sb_add(b, "%*s", indent + 1, "");
        }
        first = 0;
        idx[d] = i;
        emit(b, t, d + 1, idx, f, indent + 1);
    }
    sb_add(b, "]");
}

char *tt_tensor_format(const tt_tensor *t)
{
    sbuf b = {0};
    char shp[256];
    sb_add(&b, "%s%s%s %s\n", t->label ? t->label : "tensor", " ", tt_shape_str(t, shp, sizeof shp),
           tt_dtype_name(t->dtype));
    fmt f = {1, 0, tt_numel(t) > SUMMARY_THRESHOLD};
    int64_t idx[TT_MAX_DIMS] = {0};
    if (t->dtype == TT_BOOL) {
        f.kind = 3;
    } else if (t->dtype == TT_INT64) {
        f.kind = 4;
    } else if (tt_numel(t) > 0) {     /* [1,2^40,0] has no element to scan */
        double stats[3] = {1, 0, INFINITY};     /* all integers, max |v|, min nonzero |v| */
        scan(t, 0, idx, &f, stats, 0);
        if (stats[0] && stats[1] < 1e8) f.kind = 0;
        else if (stats[1] > 1e8 || stats[2] < 1e-4 || stats[1] / stats[2] > 1000)
            f.kind = 2;
        else f.kind = 1;
    }
    if (tt_numel(t) == 0) {
        sb_add(&b, "[]");
    } else {
        scan(t, 0, idx, &f, NULL, 1);
        emit(&b, t, 0, idx, &f, 0);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
