/*
** strbuf.c — the one growing text buffer (SVG documents, safetensors
** headers, the --report page). An append never reports failure itself:
** the first one that cannot get memory sets oom and the rest do nothing,
** so a writer appends freely and checks once at the end.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

void tt_strbuf_add(tt_strbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        const int64_t more = (int64_t)(cap - b->cap);
        if (b->capped && tt__mem_reserve(more) != TT_OK) { b->oom = 1; return; }
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            if (b->capped) tt__mem_release(more);
            b->oom = 1;
            return;
        }
        if (b->capped) b->held += more;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void tt_strbuf_str(tt_strbuf *b, const char *s) { tt_strbuf_add(b, s, strlen(s)); }

void tt_strbuf_vfmt(tt_strbuf *b, const char *fmt, va_list ap)
{
    char tmp[512];
    va_list again;
    va_copy(again, ap);
    const int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    if (k >= 0 && (size_t)k < sizeof tmp) {
        tt_strbuf_add(b, tmp, (size_t)k);
    } else if (k >= 0) {                  /* a long piece: formatted once more, in full */
        char *big = malloc((size_t)k + 1);
        if (big) {
            vsnprintf(big, (size_t)k + 1, fmt, again);
            tt_strbuf_add(b, big, (size_t)k);
            free(big);
        } else {
            b->oom = 1;
        }
    }
    va_end(again);
}

void tt_strbuf_fmt(tt_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tt_strbuf_vfmt(b, fmt, ap);
    va_end(ap);
}

void tt_strbuf_free(tt_strbuf *b)
{
    free(b->p);
    if (b->capped) tt__mem_release(b->held);
    const int capped = b->capped;
    memset(b, 0, sizeof *b);
    b->capped = capped;
}
