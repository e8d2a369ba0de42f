/*
** format.c — the text and JSON forms of a trace event, and the numbers as
** the trace shows them (trace layer). The source line is added by the
** reader (lua/), which knows it.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tt_internal.h"

/* ===== Numbers ===== */

/* A scalar as a learner wrote it: 8 -> "8.0", 0.125 -> "0.125". */
void tt_fmt_scalar(char *buf, size_t n, double v)
{
    if (isinf(v)) snprintf(buf, n, v < 0 ? "-inf" : "inf");
    else if (v == floor(v) && fabs(v) < 1e15) snprintf(buf, n, "%.1f", v);
    else snprintf(buf, n, "%.6g", v);
}

void tt_fmt_si(char *buf, size_t n, double v, int digits, const char *unit)
{
    if (v >= 1e9) snprintf(buf, n, "%.*f G%s", digits, v / 1e9, unit);
    else if (v >= 1e6) snprintf(buf, n, "%.*f M%s", digits, v / 1e6, unit);
    else if (v >= 1e3) snprintf(buf, n, "%.*f k%s", digits, v / 1e3, unit);
    else snprintf(buf, n, "%.0f %s", v, unit);
}

void tt_fmt_flops(char *buf, size_t n, double f)
{
    if (f >= 1e12) snprintf(buf, n, "%.1f TFLOP", f / 1e12);   /* a row goes one prefix past the summary */
    else tt_fmt_si(buf, n, f, 1, "FLOP");
}

/* ===== Text form ===== */

static size_t put_tensor(char *buf, size_t n, const tt_tensor *t)
{
    char shp[192];
    tt_shape_str(t, shp, sizeof shp);
    int len = t->label ? snprintf(buf, n, "%s%s", t->label, shp) : snprintf(buf, n, "%s", shp);
    if (t->dtype != TT_FLOAT32 && len > 0 && (size_t)len < n)
        len += snprintf(buf + len, n - (size_t)len, " %s", tt_dtype_name(t->dtype));
    return len < 0 ? 0 : (size_t)len;
}

#define APPEND(...) do { if (len < n) len += (size_t)snprintf(buf + len, n - len, __VA_ARGS__); } while (0)

/* A gradient as a backward row shows it: "grad of scores[B=2,N=5]" for a
   labelled input, else "grad[B=2,N=5]"; its dtype after it unless float32,
   as a forward row's tensors. */
static size_t put_grad(char *buf, size_t n, const tt_tensor *t)
{
    char shp[192];
    tt_shape_str(t, shp, sizeof shp);
    int len = t->label ? snprintf(buf, n, "grad of %s%s", t->label, shp) : snprintf(buf, n, "grad%s", shp);
    if (t->dtype != TT_FLOAT32 && len > 0 && (size_t)len < n)
        len += snprintf(buf + len, n - (size_t)len, " %s", tt_dtype_name(t->dtype));
    return len < 0 ? 0 : (size_t)len;
}

/* ===== Arguments as text ===== */

/* One argument as its show says (tt_arg in tt.h), "" when it shows nothing. */
static size_t put_arg(char *buf, size_t n, const tt_arg *a)
{
    size_t len = 0;
    const char *f = a->show[0] == ' ' ? a->show + 1 : a->show;
    if (f[0] == '=') {
        APPEND("%s=", a->key);
        f++;
    }
    switch (a->kind) {
    case TT_ARG_INT: case TT_ARG_SIZE: APPEND(f, (long long)a->v.i); break;
    case TT_ARG_NUM:
        if (strcmp(f, "%S") != 0) APPEND(f, a->v.f);
        else if (len < n) {
            tt_fmt_scalar(buf + len, n - len, a->v.f);
            len += strlen(buf + len);
        }
        break;
    case TT_ARG_STR: APPEND(f, a->v.s); break;
    case TT_ARG_BOOL: {
        const char *bar = strchr(f, '|');
        if (a->v.i) APPEND("%.*s", bar ? (int)(bar - f) : (int)strlen(f), f);
        else if (bar) APPEND("%s", bar + 1);
        break;
    }
    case TT_ARG_DIMS:
        for (int i = 0; i < a->n; i++) APPEND("%s%d", i ? ", " : "", a->v.dims[i]);
        break;
    case TT_ARG_INPUT: APPEND("%s", f); break;
    }
    return len < n ? len : n - 1;
}

char *tt_event_args_text(const tt_event *ev, char *buf, size_t n)
{
    char all[512], one[256];
    size_t len = 0, cap = sizeof all;
    all[0] = 0;
    for (int i = 0; i < ev->nargs; i++) {
        const tt_arg *a = &ev->argv[i];
        if (a->show == NULL || put_arg(one, sizeof one, a) == 0) continue;
        const char *sep = len == 0 ? "" : a->show[0] == ' ' ? " " : ", ";
        if (len < cap) len += (size_t)snprintf(all + len, cap - len, "%s%s", sep, one);
    }
    if (n == 0) return buf;
    if (ev->pattern && strlen(all) >= n && n > 4) strcpy(all + n - 4, "...");   /* a long pattern: say it goes on */
    snprintf(buf, n, "%s", all);
    return buf;
}

/* "grad softmax  grad[B=2,N=5,N=5] -> grad of scores[B=2,N=5,N=5]   75 FLOP" */
static char *format_backward(const tt_event *ev, char *buf, size_t n)
{
    size_t len = 0;
    char tmp[64];
    snprintf(tmp, sizeof tmp, "grad %s", ev->name);
    APPEND("%-16s ", tmp);
    if (ev->ninputs > 0 && len < n) len += put_grad(buf + len, n - len, ev->inputs[0]);
    APPEND(" -> ");
    for (int i = 0; i < ev->ngrads; i++) {
        if (i) APPEND(", ");
        if (len < n) len += put_grad(buf + len, n - len, ev->grads[i]);
    }
    if (ev->ngrads_total > ev->ngrads) APPEND(", ... (%d gradients)", ev->ngrads_total);
    if (ev->flops > 0) {
        tt_fmt_flops(tmp, sizeof tmp, ev->flops);
        APPEND("   %s", tmp);
    }
    if (ev->note[0]) APPEND("   !! %s", ev->note);
    return buf;
}

char *tt_event_format(const tt_event *ev, char *buf, size_t n)
{
    size_t len = 0;
    char tmp[256];
    buf[0] = 0;
    if (ev->phase == TT_PHASE_BACKWARD) return format_backward(ev, buf, n);
    APPEND("%-11s ", ev->name);
    const char *sym = ev->infix;
    if (ev->has_scalar && ev->scalar_is_int && fabs(ev->scalar) >= 1e15)   /* past where "%.1f" is exact to read */
        snprintf(tmp, sizeof tmp, "%lld", (long long)ev->scalar_int);
    else if (ev->has_scalar) tt_fmt_scalar(tmp, sizeof tmp, ev->scalar);
    if (ev->has_scalar && ev->scalar_first) APPEND(sym ? "%s %s " : "%s%s ", tmp, sym ? sym : ",");
    for (int i = 0; i < ev->ninputs; i++) {
        if (i) APPEND(sym ? " %s " : ", ", sym);
        if (len < n) len += put_tensor(buf + len, n - len, ev->inputs[i]);
    }
    if (ev->ninputs_total > ev->ninputs) APPEND(", ... (%d tensors)", ev->ninputs_total);
    if (ev->has_scalar && !ev->scalar_first) APPEND(sym ? " %s %s" : "%s %s", sym ? sym : ",", tmp);
    if (!ev->output && !ev->ninputs) APPEND("%s", ev->args);   /* a step of an optimizer: no tensor made */
    else {
        if (ev->args[0]) APPEND(ev->ninputs ? " (%s)" : "(%s)", ev->args);
        if (ev->output) APPEND("%s-> ", ev->ninputs || ev->args[0] ? " " : "");
    }
    if (ev->output && len < n) len += put_tensor(buf + len, n - len, ev->output);
    if (!ev->view && (ev->op == TT_OP_RESHAPE || ev->op == TT_OP_CONTIGUOUS))
        APPEND("   copy (the strides allow no view)");
    if (ev->view) {
        APPEND("   view, strides (");
        for (int i = 0; i < ev->output->ndim; i++)
            APPEND("%s%lld", i ? "," : "", (long long)ev->output->stride[i]);
        APPEND(")");
    }
    if (ev->flops > 0) {
        tt_fmt_flops(tmp, sizeof tmp, ev->flops);
        APPEND("   %s", tmp);
    }
    if (ev->note[0]) APPEND("   !! %s", ev->note);
    return buf;
}

/* ===== JSON form ===== */

#define JSON_STR_MAX 256      /* bytes of one string's text; past it "..." ends the string */

int tt_utf8_len(const unsigned char *s, size_t left)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;   /* range of the second byte */
    int n;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;          /* no overlong forms */
        if (c == 0xED) hi = 0x9F;          /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;          /* at most U+10FFFF */
    } else return 0;
    if ((size_t)n > left || s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    if (n == 3 && c == 0xEF && s[1] == 0xBF && s[2] >= 0xBE) return 0;   /* U+FFFE, U+FFFF */
    return n;
}

/* s as a JSON string, whatever bytes it holds: quotes, backslashes and
   control characters escaped, bad UTF-8 as U+FFFD, long text cut. */
static void json_str(char *buf, size_t n, size_t *len, const char *s)
{
    size_t l = *len, used = 0;
#define PUT(c) do { if (l + 1 < n) buf[l] = (c); l++; } while (0)
    PUT('"');
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        char esc[8];
        const char *out = esc;
        size_t k = 1, adv = 1;
        if (*p == '"' || *p == '\\') { esc[0] = '\\'; esc[1] = (char)*p; k = 2; }
        else if (*p == '\n') { esc[0] = '\\'; esc[1] = 'n'; k = 2; }
        else if (*p == '\t') { esc[0] = '\\'; esc[1] = 't'; k = 2; }
        else if (*p < 0x20 || *p == 0x7f) k = (size_t)snprintf(esc, sizeof esc, "\\u%04x", *p);
        else if (*p < 0x80) esc[0] = (char)*p;
        else if ((adv = (size_t)tt_utf8_len(p, 4)) > 0)   /* the NUL ends any sequence */ { out = (const char *)p; k = adv; }
        else { out = "\\ufffd"; k = 6; adv = 1; }
        if (used + k > JSON_STR_MAX) {
            for (const char *m = "..."; *m; m++) PUT(*m);
            break;
        }
        for (size_t i = 0; i < k; i++) PUT(out[i]);
        used += k;
        p += adv;
    }
    PUT('"');
#undef PUT
    if (l < n) buf[l] = 0;
    else if (n) buf[n - 1] = 0;
    *len = l;
}

static void json_ints(char *buf, size_t n, size_t *lenp, int k, const int64_t *v)
{
    size_t len = *lenp;
    APPEND("[");
    for (int i = 0; i < k; i++) APPEND("%s%lld", i ? "," : "", (long long)v[i]);
    APPEND("]");
    *lenp = len;
}

static void json_tensor(char *buf, size_t n, size_t *lenp, const tt_tensor *t, int is_output, int view)
{
    size_t len = *lenp;
    APPEND("{\"shape\":");
    json_ints(buf, n, &len, t->ndim, t->shape);
    APPEND(",\"stride\":");
    json_ints(buf, n, &len, t->ndim, t->stride);
    APPEND(",\"names\":[");
    for (int i = 0; i < t->ndim; i++) {
        if (i) APPEND(",");
        if (t->names[i]) json_str(buf, n, &len, t->names[i]);
        else APPEND("null");
    }
    APPEND("],\"dtype\":\"%s\"", tt_dtype_name(t->dtype));
    if (is_output) APPEND(",\"view\":%s", view ? "true" : "false");
    APPEND(",\"label\":");
    if (t->label) json_str(buf, n, &len, t->label);
    else APPEND("null");
    APPEND("}");
    *lenp = len;
}

char *tt_event_json(const tt_event *ev, long seq, const char *file, int line, char *buf, size_t n)
{
    size_t len = 0;
    APPEND("{\"seq\":%ld,\"op\":\"%s\",\"phase\":\"%s\",\"file\":", seq, ev->name, tt_phase_name(ev->phase));
    if (file) json_str(buf, n, &len, file);
    else APPEND("null");
    APPEND(",\"line\":%d,\"inputs\":[", line);
    for (int i = 0; i < ev->ninputs; i++) {
        if (i) APPEND(",");
        json_tensor(buf, n, &len, ev->inputs[i], 0, 0);
    }
    APPEND("],\"output\":");
    if (ev->output) json_tensor(buf, n, &len, ev->output, 1, ev->view);
    else APPEND("null");
    if (ev->phase == TT_PHASE_BACKWARD) {   /* every gradient given; output is the first */
        APPEND(",\"grads\":[");
        for (int i = 0; i < ev->ngrads; i++) {
            if (i) APPEND(",");
            json_tensor(buf, n, &len, ev->grads[i], 1, 0);
        }
        APPEND("]");
    }
    APPEND(",\"args\":");
    json_str(buf, n, &len, ev->args);
    if (ev->has_scalar) {
        /* JSON has no inf/nan: such scalars go out as strings */
        if (ev->scalar_is_int) APPEND(",\"scalar\":%lld", (long long)ev->scalar_int);
        else if (isfinite(ev->scalar)) APPEND(",\"scalar\":%.17g", ev->scalar);
        else APPEND(",\"scalar\":\"%s\"", isnan(ev->scalar) ? "nan" : ev->scalar < 0 ? "-inf" : "inf");
    }
    if (ev->note[0]) {
        APPEND(",\"note\":");
        json_str(buf, n, &len, ev->note);
    }
    APPEND(",\"flops\":%.0f,\"bytes\":%.0f,\"ns\":%lld}", ev->flops, ev->bytes, (long long)ev->ns);
    if (len >= n)       /* cannot happen with 16 KiB (strings are capped); stay valid anyway */
        snprintf(buf, n, "{\"seq\":%ld,\"op\":\"%s\",\"truncated\":true}", seq, ev->name);
    return buf;
}
