/*
** lreport.c — --report FILE.html: one self-contained HTML page of a run.
** The script's printed narrative, its trace groups (collapsible, built from
** the events' fields, never from the text rows), the figures embedded where
** they were written, the checks and the error. The page is built in memory
** while the script runs and written at exit: a temporary file in the
** report's folder, renamed into place, so a reader never sees half a page.
** Output is XHTML-compatible (every tag closed, attributes quoted) so a
** strict XML parser accepts it; no byte of it comes from the network.
*/
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lauxtt.h"
#include "lreport.h"
#include "lsandbox.h"

#define REPORT_MAX_BYTES ((size_t)32 << 20)   /* the page's body; past it the rest is left out, and said */
#define PAGE_FRAME_BYTES ((size_t)128 << 10)  /* the rest of a page, at most: style, script, header, error */
#define TITLE_MAX ((size_t)1 << 10)           /* a section title, a label, a dim name, as the page shows it */
#define LINE_MAX_BYTES ((size_t)4 << 10)      /* a line of source, a check's text */
#define FIGURE_MAX_BYTES ((long)16 << 20)     /* a larger figure is named, not embedded */

/* ===== HTML pieces (on the core's tt_strbuf) ===== */

/* s[0..n) as HTML text or attribute value, at most `most` bytes of it:
   the five special characters as entities, bad UTF-8 and control
   characters (but tab and newline) as U+FFFD. Past `most` the rest is
   left out and the text ends "… (cut: N bytes)", N the bytes of s left
   out. Returns whether it cut. */
#define CUT_NOTE_MAX 48                 /* the note, its number at its longest */
static int esc_most(tt_strbuf *b, const char *s, size_t n, size_t most)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    const size_t start = b->n, budget = most > CUT_NOTE_MAX ? most - CUT_NOTE_MAX : 0;
    while (p < end && !b->oom) {
        const size_t used = b->n - start;
        if (used + 6 > budget) break;   /* 6: the longest piece below, "&quot;" */
        const unsigned char *run = p;   /* plain bytes go in one piece */
        while (p < end && (size_t)(p - run) < budget - used && *p >= 0x20 && *p < 0x7F && *p != '&' && *p != '<'
               && *p != '>' && *p != '"' && *p != '\'')
            p++;
        if (p > run) {
            tt_strbuf_add(b, (const char *)run, (size_t)(p - run));
            continue;
        }
        int k;
        switch (*p) {
        case '&': tt_strbuf_str(b, "&amp;"); p++; continue;
        case '<': tt_strbuf_str(b, "&lt;"); p++; continue;
        case '>': tt_strbuf_str(b, "&gt;"); p++; continue;
        case '"': tt_strbuf_str(b, "&quot;"); p++; continue;
        case '\'': tt_strbuf_str(b, "&#39;"); p++; continue;
        case '\n': case '\t': tt_strbuf_add(b, (const char *)p, 1); p++; continue;
        default: break;
        }
        if (*p >= 0x80 && (k = tt_utf8_len(p, (size_t)(end - p))) > 0) {
            tt_strbuf_add(b, (const char *)p, (size_t)k);
            p += k;
        } else {
            tt_strbuf_str(b, "\xef\xbf\xbd");
            p++;
        }
    }
    if (p == end) return 0;
    tt_strbuf_fmt(b, "\xe2\x80\xa6 (cut: %zu bytes)", (size_t)(end - p));
    return 1;
}

/* Text of the page's frame (title, command, error), each piece capped. */
#define FRAME_TEXT_MAX ((size_t)64 << 10)
static void sb_esc_n(tt_strbuf *b, const char *s, size_t n) { esc_most(b, s, n, FRAME_TEXT_MAX); }
static void sb_esc(tt_strbuf *b, const char *s) { sb_esc_n(b, s, strlen(s)); }

static void sb_base64(tt_strbuf *b, const unsigned char *d, size_t n)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char q[4];
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)d[i] << 16 | (i + 1 < n ? (unsigned)d[i + 1] << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);
        q[0] = A[v >> 18 & 63];
        q[1] = A[v >> 12 & 63];
        q[2] = i + 1 < n ? A[v >> 6 & 63] : '=';
        q[3] = i + 2 < n ? A[v & 63] : '=';
        tt_strbuf_add(b, q, 4);
    }
}

/* ===== The report's state ===== */

static struct {
    char *path;                 /* NULL: no report */
    char *command, *script;
    long long seed;
    tt_strbuf body;                  /* the page between the header and the error */
    enum { IN_NONE, IN_SAY, IN_GROUP } in;
    tt_strbuf head, src, rows, figs; /* the open group: file:line and callers, source, rows, figures written meanwhile */
    int g_rows, g_checks, g_warns;
    int ngroups;                /* groups written: the id that names a group's rows */
    double g_flops;
    tt_strbuf toc;
    int nsections;
    char *first_section;
    int nchecks, nfigures, nwarnings;
    char *error;                /* message and traceback, as on stderr */
    char *err_where, *err_source;
    size_t safe;                /* see mark_safe */
    int truncated, finished;
} rp;

int ltt_report_active(void) { return rp.path != NULL && !rp.finished; }

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* The page's text so far (the body, the open group, the contents). */
static size_t page_bytes(void)
{
    return rp.body.n + rp.rows.n + rp.figs.n + rp.head.n + rp.src.n + rp.toc.n;
}

/* Its cap: REPORT_MAX_BYTES, less under --sandbox when --max-write leaves
   less room for the page (written at exit, it counts as a write). */
static size_t page_limit(void)
{
    const int64_t w = ltt_sandbox_write_room();
    if (w < 0 || (uint64_t)w >= REPORT_MAX_BYTES + PAGE_FRAME_BYTES) return REPORT_MAX_BYTES;
    return (size_t)w > PAGE_FRAME_BYTES ? (size_t)w - PAGE_FRAME_BYTES : 0;
}

/* Whether the page may grow; past the cap the rest is left out and the
   page says so at its end. */
static int room(void)
{
    if (page_bytes() < page_limit() && !rp.body.oom && !rp.rows.oom && !rp.figs.oom && !rp.toc.oom) return 1;
    rp.truncated = 1;
    return 0;
}

/* An entry's text (what the script printed, a title, a label): at most
   `most` bytes, and never past the page's cap. One entry of any size is
   cut where the cap is (escaping may multiply it: "'" is five bytes), so
   the page never holds more than its cap. */
static void esc_entry(tt_strbuf *b, const char *s, size_t n, size_t most)
{
    const size_t used = page_bytes(), lim = page_limit(), left = lim > used ? lim - used : 0;
    if (left <= CUT_NOTE_MAX && left <= most && n > 0) {
        rp.truncated = 1;               /* no room even for the note: the page's end says it */
        return;
    }
    if (esc_most(b, s, n, most < left ? most : left) && left <= most) rp.truncated = 1;
}

/* The body is whole up to here (no element open): where it is cut back to
   if memory runs out later. */
static void mark_safe(void)
{
    if (!rp.body.oom) rp.safe = rp.body.n;
}

static void close_group(void)
{
    if (room()) {
        tt_strbuf_str(&rp.body, rp.g_warns ? "<details class=\"g warn\" open=\"open\">" : "<details class=\"g\" open=\"open\">");
        rp.ngroups++;
        tt_strbuf_fmt(&rp.body, "<summary id=\"g%d\">", rp.ngroups);
        tt_strbuf_add(&rp.body, rp.head.p ? rp.head.p : "", rp.head.n);
        tt_strbuf_add(&rp.body, rp.src.p ? rp.src.p : "", rp.src.n);
        tt_strbuf_str(&rp.body, "<span class=\"badges\">");
        if (rp.g_rows) tt_strbuf_fmt(&rp.body, "<span class=\"b\">%d op%s</span>", rp.g_rows, rp.g_rows == 1 ? "" : "s");
        if (rp.g_flops > 0) {
            char fl[32];
            tt_fmt_flops(fl, sizeof fl, rp.g_flops);
            tt_strbuf_fmt(&rp.body, "<span class=\"b fl\">%s</span>", fl);
        }
        if (rp.g_checks) tt_strbuf_fmt(&rp.body, "<span class=\"b ok\">\xe2\x9c\x93 %d</span>", rp.g_checks);
        if (rp.g_warns) tt_strbuf_fmt(&rp.body, "<span class=\"b w\">\xe2\x9a\xa0 %d</span>", rp.g_warns);
        /* the rows scroll sideways: a keyboard reaches them, and the header names them */
        tt_strbuf_fmt(&rp.body, "</span></summary>\n<div class=\"rows\" tabindex=\"0\" role=\"group\" aria-labelledby=\"g%d\">",
                      rp.ngroups);
        tt_strbuf_add(&rp.body, rp.rows.p ? rp.rows.p : "", rp.rows.n);
        tt_strbuf_str(&rp.body, "</div></details>\n");
        tt_strbuf_add(&rp.body, rp.figs.p ? rp.figs.p : "", rp.figs.n);
    }
    rp.head.n = rp.src.n = rp.rows.n = rp.figs.n = 0;
    rp.head.oom = rp.src.oom = rp.rows.oom = rp.figs.oom = 0;
    rp.g_rows = rp.g_checks = rp.g_warns = 0;
    rp.g_flops = 0;
}

/* Ends the open narrative block or group: the next item starts afresh. */
static void close_item(void)
{
    if (rp.in == IN_SAY) tt_strbuf_str(&rp.body, "</pre>\n");
    if (rp.in == IN_GROUP) close_group();
    rp.in = IN_NONE;
    mark_safe();
}

/* ===== Narrative: what the script printed ===== */

static void say(const char *s, size_t n)
{
    if (rp.in != IN_SAY) {
        close_item();
        if (!room()) return;
        tt_strbuf_str(&rp.body, "<pre class=\"say\">\n");   /* the parser drops this first newline, not a printed one */
        rp.in = IN_SAY;
    }
    if (room()) esc_entry(&rp.body, s, n, SIZE_MAX);
}

void ltt_report_output(lua_State *L, int is_write)
{
    if (!ltt_report_active()) return;
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s;
        char num[64];
        if (!is_write) {                 /* print's text; print then meets strings only */
            s = luaL_tolstring(L, i, &len);
            lua_replace(L, i);
            if (i > 1) say("\t", 1);
        } else if (lua_type(L, i) == LUA_TNUMBER) {   /* as io.write writes it */
            if (lua_isinteger(L, i)) snprintf(num, sizeof num, LUA_INTEGER_FMT, (LUAI_UACINT)lua_tointeger(L, i));
            else snprintf(num, sizeof num, LUA_NUMBER_FMT, (LUAI_UACNUMBER)lua_tonumber(L, i));
            s = num;
            len = strlen(num);
        } else if (lua_type(L, i) == LUA_TSTRING) {
            s = lua_tolstring(L, i, &len);
        } else {
            break;                       /* io.write stops with an error there */
        }
        say(s, len);
    }
    if (!is_write) say("\n", 1);
}

int ltt_report_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (ltt_report_active()) {
        tt_strbuf t = {0};
        va_list ap2;
        va_copy(ap2, ap);
        tt_strbuf_vfmt(&t, fmt, ap2);
        va_end(ap2);
        if (t.p) say(t.p, t.n);
        tt_strbuf_free(&t);
    }
    int k = vprintf(fmt, ap);
    va_end(ap);
    return k;
}

void ltt_report_section(const char *title)
{
    if (!ltt_report_active()) return;
    close_item();
    rp.nsections++;
    if (rp.first_section == NULL) {     /* the page's title: a cut piece of it */
        size_t n = strlen(title);
        rp.first_section = malloc((n < TITLE_MAX ? n : TITLE_MAX) + 1);
        if (rp.first_section) {
            memcpy(rp.first_section, title, n < TITLE_MAX ? n : TITLE_MAX);
            rp.first_section[n < TITLE_MAX ? n : TITLE_MAX] = 0;
        }
    }
    if (!room()) return;
    tt_strbuf_fmt(&rp.body, "<h2 class=\"sec\" id=\"s%d\">", rp.nsections);
    esc_entry(&rp.body, title, strlen(title), TITLE_MAX);
    tt_strbuf_str(&rp.body, "</h2>\n");
    tt_strbuf_fmt(&rp.toc, "<li><a href=\"#s%d\">", rp.nsections);
    esc_entry(&rp.toc, title, strlen(title), TITLE_MAX);
    tt_strbuf_str(&rp.toc, "</a></li>\n");
    mark_safe();
}

/* ===== Trace groups ===== */

void ltt_report_group(const char *file, int line, const char *source)
{
    if (!ltt_report_active()) return;
    close_item();
    rp.in = IN_GROUP;
    tt_strbuf_str(&rp.head, "<span class=\"loc\">");
    esc_entry(&rp.head, file, strlen(file), LINE_MAX_BYTES);
    tt_strbuf_fmt(&rp.head, ":%d</span>", line);
    tt_strbuf_str(&rp.src, "<code class=\"src\">");
    esc_entry(&rp.src, source, strlen(source), LINE_MAX_BYTES);
    tt_strbuf_str(&rp.src, "</code>");
}

void ltt_report_caller(const char *file, int line)
{
    if (!ltt_report_active() || rp.in != IN_GROUP) return;
    tt_strbuf_str(&rp.head, "<span class=\"via\">\xe2\x86\x90 ");
    if (file) {
        esc_entry(&rp.head, file, strlen(file), LINE_MAX_BYTES);
        tt_strbuf_fmt(&rp.head, ":%d</span>", line);
    } else {
        tt_strbuf_fmt(&rp.head, "line %d</span>", line);
    }
}

/* Rows come inside a group; one without (no header was shown) gets its own. */
static tt_strbuf *rows_buf(void)
{
    if (rp.in != IN_GROUP) ltt_report_group("?", 0, "");
    return &rp.rows;
}

static void put_scalar(tt_strbuf *b, double v)
{
    char tmp[64];
    tt_fmt_scalar(tmp, sizeof tmp, v);
    tt_strbuf_fmt(b, "<span class=\"num\">%s</span>", tmp);
}

/* label[B=2,N=5] bool: the label, the dim names and the dtype each styled. */
static void put_tensor(tt_strbuf *b, const tt_tensor *t)
{
    tt_strbuf_str(b, "<span class=\"t\">");
    if (t->label) {
        tt_strbuf_str(b, "<span class=\"lbl\">");
        esc_entry(b, t->label, strlen(t->label), TITLE_MAX);
        tt_strbuf_str(b, "</span>");
    }
    tt_strbuf_str(b, "<span class=\"shp\">[");
    for (int i = 0; i < t->ndim; i++) {
        if (i) tt_strbuf_str(b, ",");
        if (t->names[i]) {
            tt_strbuf_str(b, "<span class=\"dn\">");
            esc_entry(b, t->names[i], strlen(t->names[i]), TITLE_MAX);
            tt_strbuf_str(b, "</span>=");
        }
        tt_strbuf_fmt(b, "%lld", (long long)t->shape[i]);
    }
    tt_strbuf_str(b, "]</span>");
    if (t->dtype != TT_FLOAT32) tt_strbuf_fmt(b, " <span class=\"dt\">%s</span>", tt_dtype_name(t->dtype));
    tt_strbuf_str(b, "</span>");
}

/* --trace=values text without its 8-space indent (the page indents it). */
static void put_values(tt_strbuf *b, const char *v)
{
    tt_strbuf_str(b, "<pre class=\"vals\">\n");
    while (*v) {
        const char *e = strchr(v, '\n');
        size_t n = e ? (size_t)(e - v) + 1 : strlen(v);
        size_t skip = 0;
        while (skip < 8 && skip < n && v[skip] == ' ') skip++;
        esc_entry(b, v + skip, n - skip, SIZE_MAX);
        v += n;
    }
    tt_strbuf_str(b, "</pre>");
}

void ltt_report_row(const tt_event *ev, const char *values)
{
    if (!ltt_report_active()) return;
    tt_strbuf *b = rows_buf();
    if (!room()) return;
    rp.g_rows++;
    rp.g_flops += ev->flops > 0 ? ev->flops : 0;
    if (ev->note[0]) {
        rp.g_warns++;
        rp.nwarnings++;
    }
    tt_strbuf_str(b, ev->note[0] ? "<div class=\"row warn\">" : "<div class=\"row\">");
    tt_strbuf_str(b, "<span class=\"op\">");
    if (ev->phase == TT_PHASE_BACKWARD) {   /* "grad softmax": the text row's words after its name */
        char row[2048];
        tt_event_format(ev, row, sizeof row);
        const char *rest = row + strlen("grad ") + strlen(ev->name);
        while (*rest == ' ') rest++;
        tt_strbuf_fmt(b, "grad %s</span> ", ev->name);
        esc_entry(b, rest, strlen(rest), LINE_MAX_BYTES);
        tt_strbuf_str(b, "</div>");
        if (values) put_values(b, values);
        return;
    }
    sb_esc(b, ev->name);                /* an in-place op's name is its own ("add_") */
    tt_strbuf_str(b, "</span> ");
    const char *sym = ev->infix;
    if (ev->has_scalar && ev->scalar_first) {
        put_scalar(b, ev->scalar);
        tt_strbuf_fmt(b, "%s ", sym ? " " : ",");
        if (sym) tt_strbuf_fmt(b, "<span class=\"sym\">%s</span> ", sym);
    }
    for (int i = 0; i < ev->ninputs; i++) {
        if (i) {
            if (sym) tt_strbuf_fmt(b, " <span class=\"sym\">%s</span> ", sym);
            else tt_strbuf_str(b, ", ");
        }
        put_tensor(b, ev->inputs[i]);
    }
    if (ev->ninputs_total > ev->ninputs) tt_strbuf_fmt(b, ", \xe2\x80\xa6 (%d tensors)", ev->ninputs_total);
    if (ev->has_scalar && !ev->scalar_first) {
        if (sym) tt_strbuf_fmt(b, " <span class=\"sym\">%s</span> ", sym);
        else tt_strbuf_str(b, ", ");
        put_scalar(b, ev->scalar);
    }
    if (ev->args[0]) {
        tt_strbuf_str(b, ev->ninputs ? " <span class=\"args\">(" : "<span class=\"args\">(");
        sb_esc(b, ev->args);
        tt_strbuf_str(b, ")</span>");
    }
    tt_strbuf_str(b, ev->ninputs || ev->args[0] ? " <span class=\"arrow\">\xe2\x86\x92</span> " : "<span class=\"arrow\">\xe2\x86\x92</span> ");
    if (ev->output) put_tensor(b, ev->output);
    if (!ev->view && (ev->op == TT_OP_RESHAPE || ev->op == TT_OP_CONTIGUOUS))
        tt_strbuf_str(b, " <span class=\"mark copy\">copy</span><span class=\"why\"> the strides allow no view</span>");
    if (ev->view && ev->output) {
        tt_strbuf_str(b, " <span class=\"mark view\">view</span><span class=\"why\"> strides (");
        for (int i = 0; i < ev->output->ndim; i++) tt_strbuf_fmt(b, "%s%lld", i ? "," : "", (long long)ev->output->stride[i]);
        tt_strbuf_str(b, ")</span>");
    }
    if (ev->flops > 0) {
        char fl[32];
        tt_fmt_flops(fl, sizeof fl, ev->flops);
        tt_strbuf_fmt(b, " <span class=\"flops\">%s</span>", fl);
    }
    if (ev->note[0]) {
        tt_strbuf_str(b, " <span class=\"note\">\xe2\x9a\xa0 ");
        esc_entry(b, ev->note, strlen(ev->note), LINE_MAX_BYTES);
        tt_strbuf_str(b, "</span>");
    }
    tt_strbuf_str(b, "</div>");
    if (values) put_values(b, values);
}

void ltt_report_check(const char *text)
{
    if (!ltt_report_active()) return;
    tt_strbuf *b = rows_buf();
    if (!room()) return;
    /* the trace starts the row of a check that passed with its check mark */
    int passed = strncmp(text, "\xe2\x9c\x93", 3) == 0;
    if (passed) {
        rp.g_checks++;
        rp.nchecks++;
    }
    tt_strbuf_str(b, passed ? "<div class=\"row check pass\">" : "<div class=\"row check\">");
    esc_entry(b, text, strlen(text), LINE_MAX_BYTES);
    tt_strbuf_str(b, "</div>");
}

void ltt_report_count_check(void)
{
    if (ltt_report_active()) rp.nchecks++;
}

/* ===== Figures ===== */

static unsigned char *read_all(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    unsigned char *d = NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (*n = ftell(f)) >= 0 && *n <= FIGURE_MAX_BYTES && fseek(f, 0, SEEK_SET) == 0) {
        d = malloc((size_t)*n + 1);
        if (d && fread(d, 1, (size_t)*n, f) != (size_t)*n) {
            free(d);
            d = NULL;
        }
        if (d) d[*n] = 0;
    }
    fclose(f);
    return d;
}

/* An SVG the figure code wrote, inlined: its XML declaration and namespace
   go (the HTML parser knows <svg>), its ids get the figure's number (two
   figures' hatch patterns must not meet). 0 when it holds anything an
   inline SVG should not (then it goes in as an image, which runs nothing). */
static int put_inline_svg(tt_strbuf *b, const char *s, int fig)
{
    static const char *const banned[] = { "<script", "<!", "<?", "href", "foreignObject", "javascript:",
                                          "onload", "onerror", "onclick", "<iframe", "<style", NULL };
    if (strncmp(s, "<?xml", 5) == 0) {
        const char *e = strstr(s, "?>");
        if (e == NULL) return 0;
        s = e + 2;
    }
    while (*s == '\n' || *s == ' ' || *s == '\r' || *s == '\t') s++;
    if (strncmp(s, "<svg", 4) != 0) return 0;
    for (int i = 0; banned[i]; i++)
        if (strstr(s, banned[i])) return 0;
    /* one pass, rewriting inside tags only: a label's text stays as written,
       and a figure with many url(# in its labels is not quadratic (a
       strstr for each needle from each match was, on megabyte labels) */
    static const char xmlns[] = " xmlns=\"http://www.w3.org/2000/svg\"";
    const char *run = s;                    /* the bytes not copied yet start here */
    int in_tag = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '<' || *p == '>') { in_tag = *p == '<'; continue; }
        if (!in_tag) continue;
        size_t skip;
        const char *with;
        if (strncmp(p, xmlns, sizeof xmlns - 1) == 0) { skip = sizeof xmlns - 1; with = NULL; }
        else if (strncmp(p, "id=\"", 4) == 0) { skip = 4; with = "id=\""; }
        else if (strncmp(p, "url(#", 5) == 0) { skip = 5; with = "url(#"; }
        else continue;
        tt_strbuf_add(b, run, (size_t)(p - run));
        if (with) tt_strbuf_fmt(b, "%sf%d-", with, fig);
        p += skip - 1;
        run = p + 1;
    }
    tt_strbuf_str(b, run);
    return 1;
}

void ltt_report_figure(const char *path, const char *title)
{
    if (!ltt_report_active()) return;
    tt_strbuf *b;
    if (rp.in == IN_GROUP) {
        b = &rp.figs;                    /* shown after the rows of the line that wrote it */
    } else {
        close_item();
        b = &rp.body;
    }
    if (!room()) return;
    rp.nfigures++;
    const char *caption = title && title[0] ? title : path;
    long n = 0;
    unsigned char *d = read_all(path, &n);
    const size_t used = page_bytes(), lim = page_limit();
    int too_big = d && (size_t)n / 3 * 4 + 4 + LINE_MAX_BYTES > (lim > used ? lim - used : 0);
    if (too_big) {                      /* its base64 would pass the page's cap: named, not embedded */
        free(d);
        d = NULL;
        rp.truncated = 1;
    }
    tt_strbuf_str(b, "<figure class=\"fig\">");
    static const unsigned char png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    if (d && n >= 24 && memcmp(d, png_sig, 8) == 0) {
        unsigned w = (unsigned)d[16] << 24 | (unsigned)d[17] << 16 | (unsigned)d[18] << 8 | d[19];
        unsigned h = (unsigned)d[20] << 24 | (unsigned)d[21] << 16 | (unsigned)d[22] << 8 | d[23];
        tt_strbuf_str(b, "<img src=\"data:image/png;base64,");
        sb_base64(b, d, (size_t)n);
        tt_strbuf_fmt(b, "\" width=\"%u\" height=\"%u\" alt=\"", w, h);
        esc_entry(b, caption, strlen(caption), TITLE_MAX);
        tt_strbuf_str(b, "\"/>");
    } else if (d && strstr((const char *)d, "<svg") && !put_inline_svg(b, (const char *)d, rp.nfigures)) {
        tt_strbuf_str(b, "<img src=\"data:image/svg+xml;base64,");
        sb_base64(b, d, (size_t)n);
        tt_strbuf_str(b, "\" alt=\"");
        esc_entry(b, caption, strlen(caption), TITLE_MAX);
        tt_strbuf_str(b, "\"/>");
    } else if (!d || !strstr((const char *)d, "<svg")) {
        tt_strbuf_str(b, "<p class=\"note\">(not embedded: ");
        tt_strbuf_str(b, d ? "neither a PNG nor an SVG file" : too_big ? "it would pass the page's cap"
                         : n > FIGURE_MAX_BYTES ? "larger than 16 MiB" : "cannot be read back");
        tt_strbuf_str(b, ")</p>");
    }
    free(d);
    tt_strbuf_str(b, "<figcaption>");
    esc_entry(b, caption, strlen(caption), TITLE_MAX);
    tt_strbuf_str(b, " <span class=\"path\">");
    esc_entry(b, path, strlen(path), LINE_MAX_BYTES);
    tt_strbuf_str(b, "</span></figcaption></figure>\n");
    if (b == &rp.body) mark_safe();
}

/* ===== The error ===== */

/* The script's line text (for the error box); "" when unknown. */
static char *script_line(const char *file, int line)
{
    FILE *f = fopen(file, "r");
    if (f == NULL) return NULL;
    char buf[1024];
    int at = 0;
    char *found = NULL;
    while (fgets(buf, sizeof buf, f)) {
        size_t n = strlen(buf);
        int whole = n > 0 && buf[n - 1] == '\n';
        if (++at == line) {
            if (whole) buf[n - 1] = 0;
            char *p = buf;
            while (*p == ' ' || *p == '\t') p++;
            found = dup_str(p);
            break;
        }
        while (!whole && fgets(buf, sizeof buf, f)) {   /* the rest of a long line */
            n = strlen(buf);
            whole = n > 0 && buf[n - 1] == '\n';
        }
    }
    fclose(f);
    return found;
}

void ltt_report_error_where(lua_State *L)
{
    if (!ltt_report_active()) return;
    lua_Debug ar;
    for (int level = 1; level < 64 && lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
        char where[LUA_IDSIZE + 32];
        snprintf(where, sizeof where, "%s:%d", ar.short_src, ar.currentline);
        free(rp.err_where);
        free(rp.err_source);
        rp.err_where = dup_str(where);
        rp.err_source = ar.source[0] == '@' ? script_line(ar.source + 1, ar.currentline) : NULL;
        return;
    }
}

void ltt_report_error(const char *msg)
{
    if (!ltt_report_active()) return;
    free(rp.error);
    rp.error = dup_str(msg);
}

/* ===== The page ===== */

/* One piece a rule (C99 caps a string literal at 4095 bytes). */
static const char *const page_css[] = {
    ":root{--ink:#1f2328;--muted:#59636e;--line:#d1d9e0;--paper:#ffffff;--wash:#f6f8fa;"
    "--accent:#0969da;--op:#8250df;--lbl:#0a7b83;--dim:#bc4c00;--ok:#116329;--warn:#9a4d00;--bad:#cf222e;"
    "--mono:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,'Liberation Mono',monospace}\n",
    "*{box-sizing:border-box}\n",
    "html{-webkit-text-size-adjust:100%;text-size-adjust:100%}\n",
    "body{margin:0;background:#eef1f4;color:var(--ink);font:16px/1.5 system-ui,-apple-system,'Segoe UI',"
    "Roboto,'DejaVu Sans',sans-serif}\n",
    ".page{max-width:1040px;margin:0 auto;background:var(--paper);padding:28px 40px 40px;min-height:100vh}\n",
    "header.top{border-bottom:1px solid var(--line);padding-bottom:14px;margin-bottom:18px}\n",
    ".kicker{margin:0;color:var(--muted);font:600 13px/1.4 var(--mono);letter-spacing:.02em}\n",
    "h1{font-size:30px;line-height:1.2;margin:6px 0 12px}\n",
    "dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0;font-size:14px}\n",
    "dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;min-width:0}\n",
    "dl.meta code{font:13px var(--mono);background:var(--wash);padding:1px 5px;border-radius:4px;"
    "overflow-wrap:anywhere}\n",
    ".status.ok{color:var(--ok);font-weight:600}.status.bad{color:var(--bad);font-weight:600}\n",
    "button#toggle{margin-top:12px;font:13px system-ui,sans-serif;padding:4px 12px;border:1px solid var(--line);"
    "border-radius:6px;background:var(--wash);color:var(--ink);cursor:pointer}\n",
    "nav.toc{background:var(--wash);border:1px solid var(--line);border-radius:8px;padding:10px 18px;margin:0 0 20px}\n",
    "nav.toc h2{font-size:14px;margin:0 0 4px;color:var(--muted);text-transform:uppercase;letter-spacing:.06em}\n",
    "nav.toc ol{margin:0;padding:0;list-style:none;font-size:15px}nav.toc a{color:var(--accent);text-decoration:none}\n",
    "nav.toc a:hover{text-decoration:underline}\n",
    "h2.sec{font-size:21px;margin:30px 0 10px;padding-top:12px;border-top:2px solid var(--line)}\n",
    "pre{font:13.5px/1.45 var(--mono);margin:0}\n",
    "pre.say{white-space:pre-wrap;overflow-wrap:anywhere;margin:10px 0;padding:2px 0 2px 12px;"
    "border-left:3px solid #9fb3c8;color:#24292f;font-size:14px}\n",
    "details.g{margin:6px 0;border:1px solid var(--line);border-radius:6px;background:var(--paper)}\n",
    "details.g.warn{border-color:#e8a25b}\n",
    /* a group off screen is laid out when scrolled to: a long report shows at once */
    "details.g{content-visibility:auto;contain-intrinsic-size:auto 90px}\n",
    "details.g summary{cursor:pointer;padding:4px 10px;background:var(--wash);border-radius:6px;"
    "font:13px/1.5 var(--mono);list-style-position:inside}\n",
    "details.g[open] summary{border-bottom:1px solid var(--line);border-radius:6px 6px 0 0}\n",
    "summary .loc{color:var(--accent);font-weight:600;margin-right:10px}\n",
    "summary .via{color:var(--muted);margin-right:10px}\n",
    "summary code.src{font:inherit;color:var(--ink);white-space:pre-wrap;overflow-wrap:anywhere}\n",
    ".badges{float:right;margin-left:10px}\n",
    ".b{display:inline-block;font:11.5px/1.6 var(--mono);padding:0 7px;margin-left:5px;border-radius:9px;"
    "background:#e7ecf0;color:var(--muted)}\n",
    ".b.fl{background:#e6f4ea;color:var(--ok)}.b.ok{background:#dafbe1;color:var(--ok);font-weight:700}\n",
    ".b.w{background:#fff1e5;color:var(--warn);font-weight:700}\n",
    ".rows{overflow-x:auto;padding:6px 10px;font:13px/1.6 var(--mono)}\n",
    ":focus-visible{outline:3px solid var(--accent);outline-offset:2px}.rows:focus-visible{outline-offset:-3px}\n",
    ".row{white-space:pre}\n",
    ".op{display:inline-block;min-width:12ch;color:var(--op);font-weight:600}\n",
    ".lbl{color:var(--lbl);font-weight:700}.dn{color:var(--dim)}.dt{color:var(--muted);font-style:italic}\n",
    ".shp{color:var(--ink)}.num{color:#0550ae}.sym{color:var(--muted)}.args{color:var(--muted)}\n",
    ".arrow{color:var(--muted)}.why{color:var(--muted)}\n",
    ".mark{display:inline-block;font-size:11px;line-height:1.5;padding:0 6px;border-radius:8px;margin-left:6px;"
    "font-weight:700;text-transform:uppercase;letter-spacing:.04em}\n",
    ".mark.view{background:#ddf4ff;color:#0969da}.mark.copy{background:#fff1e5;color:var(--warn)}\n",
    ".flops{margin-left:8px;color:var(--ok)}\n",
    ".note{color:var(--bad);font-weight:600;margin-left:8px}\n",
    ".row.warn{background:#fff8f0}\n",
    ".row.check{color:var(--muted)}.row.check.pass{color:var(--ok);font-weight:600}\n",
    "pre.vals{color:var(--muted);font-size:12px;padding:0 0 4px 3ch;border-left:2px solid #e7ecf0;margin-left:1ch}\n",
    "figure.fig{margin:14px 0 18px;text-align:center}\n",
    "figure.fig img,figure.fig svg{max-width:100%;height:auto;border:1px solid var(--line);border-radius:4px}\n",
    "figcaption{font-size:14px;color:var(--muted);margin-top:4px}\n",
    "figcaption .path{font:12px var(--mono);margin-left:6px}\n",
    "p.note{color:var(--warn)}\n",
    "section.error{margin:24px 0;border:2px solid var(--bad);border-radius:8px;background:#fff5f5;padding:12px 16px}\n",
    "section.error h2{color:var(--bad);margin:0 0 8px;font-size:20px}\n",
    "section.error .where{font:13px var(--mono);margin:0 0 8px}\n",
    "section.error .where code{font:inherit;background:#ffe3e3;padding:1px 5px;border-radius:4px}\n",
    "section.error pre{overflow-x:auto;white-space:pre;padding:8px;background:var(--paper);"
    "border:1px solid #f2c4c4;border-radius:4px}\n",
    "section.error pre.msg{white-space:pre-wrap;overflow-wrap:anywhere;color:var(--bad);font-weight:600}\n",
    "section.error summary{cursor:pointer;color:var(--muted);margin:8px 0 4px;font-size:14px}\n",
    "footer{margin-top:30px;padding-top:10px;border-top:1px solid var(--line);color:var(--muted);font-size:13px}\n",
    /* the narration is wrapped at 80 columns by its script: a frame a little
       narrower (the browser page's) gets a smaller font, not lines wrapped twice */
    "@media (max-width:900px){.page{padding:18px 18px 28px}h1{font-size:24px}"
    "pre.say{font-size:clamp(12px,calc((100vw - 72px) / 48.5),14px)}}\n",
    "@media (max-width:640px){body{font-size:15px}.page{padding:14px 12px 28px}h1{font-size:23px}"
    "h2.sec{font-size:18px}.badges{float:none;display:block;margin:2px 0 0}.b{margin:0 5px 0 0}"
    ".rows{font-size:12px}}\n",
    "@media print{body{background:#fff}.page{max-width:none;padding:0}button#toggle{display:none}"
    "details.g,details.g::details-content{content-visibility:visible}details.g::details-content{display:block}"
    ".rows,.row,pre{white-space:pre-wrap;overflow:visible}figure.fig,.row{break-inside:avoid}"
    "h2.sec{break-after:avoid}}\n",
    NULL};

/* Collapse/expand all, and every group open while printing. Written
   without '<' or '&' so the page stays well-formed XML. */
static const char page_js[] =
    "(function () {\n"
    "  function groups() { return Array.prototype.slice.call(document.querySelectorAll('details.g')); }\n"
    "  var button = document.getElementById('toggle');\n"
    "  function label() {\n"
    "    button.textContent = groups().some(function (d) { return d.open; }) ? 'Collapse all' : 'Expand all';\n"
    "  }\n"
    "  if (button) {\n"
    "    button.hidden = false;\n"
    "    button.addEventListener('click', function () {\n"
    "      var open = !groups().some(function (d) { return d.open; });\n"
    "      groups().forEach(function (d) { d.open = open; });\n"
    "      label();\n"
    "    });\n"
    "    document.addEventListener('toggle', label, true);\n"
    "  }\n"
    "  var closed = [];\n"
    "  window.addEventListener('beforeprint', function () {\n"
    "    closed = groups().filter(function (d) { return !d.open; });\n"
    "    closed.forEach(function (d) { d.open = true; });\n"
    "  });\n"
    "  window.addEventListener('afterprint', function () {\n"
    "    closed.forEach(function (d) { d.open = false; });\n"
    "  });\n"
    "})();\n";

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The lesson's title: its first comment line ("-- 03_causal_mask.lua — the
   causal mask: ..." without the file name), else the first section, else
   the script's name. */
static void put_title(tt_strbuf *b)
{
    char line[512] = "";
    FILE *f = rp.script && strcmp(rp.script, "-") != 0 ? fopen(rp.script, "r") : NULL;
    if (f) {
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "#!", 2) == 0) continue;
            if (strncmp(line, "--", 2) != 0) line[0] = 0;
            break;
        }
        fclose(f);
    }
    char *t = line;
    while (*t == '-' || *t == '[' || *t == ' ' || *t == '\t') t++;
    t[strcspn(t, "\r\n")] = 0;
    const char *base = rp.script ? base_name(rp.script) : "";
    size_t bl = strlen(base);
    if (bl && strncmp(t, base, bl) == 0) {
        t += bl;
        while (*t == ' ' || *t == ':' || *t == '-') t++;
        if (strncmp(t, "\xe2\x80\x94", 3) == 0 || strncmp(t, "\xe2\x80\x93", 3) == 0) t += 3;
        while (*t == ' ') t++;
    }
    size_t n = strlen(t);
    while (n && (t[n - 1] == '.' || t[n - 1] == ' ')) t[--n] = 0;
    if (n == 0) {
        const char *alt = rp.first_section ? rp.first_section : rp.script ? base : "tensortrace run";
        sb_esc(b, alt);
        return;
    }
    if (t[0] >= 'a' && t[0] <= 'z') t[0] = (char)(t[0] - 'a' + 'A');
    sb_esc(b, t);
}

/* The page around its body: pg up to <main>, tail after the body (the
   body itself is written from rp.body, never copied: it may be most of
   the page). omitted: the body is left out (it would pass --max-write). */
static void build_page(tt_strbuf *pg, tt_strbuf *tail, int by_exit, int omitted)
{
    tt_strbuf title = {0};
    put_title(&title);
    const char *tt = title.p ? title.p : "";
    tt_strbuf_str(pg, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
               "<meta name=\"generator\" content=\"tensortrace " TT_VERSION "\"/>\n<title>");
    tt_strbuf_str(pg, tt);
    tt_strbuf_str(pg, " \xe2\x80\x94 tensortrace</title>\n<style>\n");
    for (int i = 0; page_css[i]; i++) tt_strbuf_str(pg, page_css[i]);
    tt_strbuf_str(pg, "</style>\n</head>\n<body>\n<div class=\"page\">\n<header class=\"top\">\n<p class=\"kicker\">tensortrace report");
    if (rp.script) {
        tt_strbuf_str(pg, " \xc2\xb7 ");
        sb_esc(pg, rp.script);
    }
    tt_strbuf_str(pg, "</p>\n<h1>");
    tt_strbuf_str(pg, tt);
    tt_strbuf_str(pg, "</h1>\n<dl class=\"meta\">\n<dt>command</dt><dd><code>");
    sb_esc(pg, rp.command ? rp.command : "");
    tt_strbuf_fmt(pg, "</code></dd>\n<dt>seed</dt><dd>%lld</dd>\n<dt>date</dt><dd>", rp.seed);
    const char *date = getenv("TT_REPORT_DATE");
    char now[64] = "";
    if (date == NULL) {
        time_t t = time(NULL);
        struct tm tm;
        if (localtime_r(&t, &tm)) strftime(now, sizeof now, "%Y-%m-%d %H:%M %Z", &tm);
        date = now;
    }
    sb_esc(pg, date);
    tt_strbuf_str(pg, "</dd>\n<dt>result</dt><dd>");
    if (rp.error) {
        tt_strbuf_str(pg, "<span class=\"status bad\">\xe2\x9c\x97 stopped with an error");
        if (rp.err_where) {
            tt_strbuf_str(pg, " at ");
            sb_esc(pg, rp.err_where);
        }
        tt_strbuf_str(pg, "</span>");
    } else if (by_exit) {
        tt_strbuf_str(pg, "<span class=\"status\">ended by os.exit</span>");
    } else {
        tt_strbuf_str(pg, "<span class=\"status ok\">\xe2\x9c\x93 ran to the end</span>");
    }
    tt_strbuf_fmt(pg, " \xc2\xb7 %d check%s passed \xc2\xb7 %d figure%s", rp.nchecks, rp.nchecks == 1 ? "" : "s",
           rp.nfigures, rp.nfigures == 1 ? "" : "s");
    if (rp.nwarnings) tt_strbuf_fmt(pg, " \xc2\xb7 %d warning%s", rp.nwarnings, rp.nwarnings == 1 ? "" : "s");
    tt_strbuf_str(pg, "</dd>\n</dl>\n<button id=\"toggle\" type=\"button\" hidden=\"hidden\">Collapse all</button>\n"
               "</header>\n");
    if (rp.toc.n) {
        tt_strbuf_str(pg, "<nav class=\"toc\"><h2>Contents</h2><ol>\n");
        tt_strbuf_add(pg, rp.toc.p, rp.toc.n);
        tt_strbuf_str(pg, "</ol></nav>\n");
    }
    tt_strbuf_str(pg, "<main>\n");
    tt_strbuf_free(&title);
    pg = tail;
    if (omitted)
        tt_strbuf_str(pg, "<p class=\"note\">The page&#39;s body is left out: with it the page would pass "
               "--max-write.</p>\n");
    else if (rp.truncated || rp.body.oom)
        tt_strbuf_fmt(pg, "<p class=\"note\">The page stops here: it reached its cap (%zu MiB, less when "
               "--max-write leaves less, or the memory cap); the terminal trace went on.</p>\n", REPORT_MAX_BYTES >> 20);
    if (rp.error) {
        const char *tb = strstr(rp.error, "\nstack traceback:");
        size_t mlen = tb ? (size_t)(tb - rp.error) : strlen(rp.error);
        tt_strbuf_str(pg, "<section class=\"error\" id=\"error\">\n<h2>\xe2\x9c\x97 The script stopped with an error</h2>\n");
        if (rp.err_where) {
            tt_strbuf_str(pg, "<p class=\"where\">");
            sb_esc(pg, rp.err_where);
            if (rp.err_source) {
                tt_strbuf_str(pg, " <code>");
                sb_esc(pg, rp.err_source);
                tt_strbuf_str(pg, "</code>");
            }
            tt_strbuf_str(pg, "</p>\n");
        }
        tt_strbuf_str(pg, "<pre class=\"msg\">");
        sb_esc_n(pg, rp.error, mlen);
        tt_strbuf_str(pg, "</pre>\n");
        if (tb) {
            tt_strbuf_str(pg, "<details open=\"open\"><summary>stack traceback</summary>"
                          "<pre tabindex=\"0\" role=\"group\" aria-label=\"stack traceback\">");
            const char *t = tb + strlen("\nstack traceback:");
            if (*t == '\n') t++;
            sb_esc(pg, t);
            tt_strbuf_str(pg, "</pre></details>\n");
        }
        tt_strbuf_str(pg, "</section>\n");
    }
    tt_strbuf_str(pg, "</main>\n<footer>Written by tensortrace " TT_VERSION
               ": one file, no network; figures embedded. Click a line&#39;s header to fold its trace.</footer>\n"
               "</div>\n<script>\n");
    tt_strbuf_str(pg, page_js);
    tt_strbuf_str(pg, "</script>\n</body>\n</html>\n");
}

/* The temporary file next to the report: "dir/.name.XXXXXX". */
static int open_temp(const char *path, char *tmp, size_t n)
{
    const char *base = base_name(path);
    int k = snprintf(tmp, n, "%.*s.%s.XXXXXX", (int)(base - path), path, base);
    if (k < 0 || (size_t)k >= n) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return mkstemp(tmp);
}

static void free_state(void)
{
    free(rp.path);
    free(rp.command);
    free(rp.script);
    free(rp.first_section);
    free(rp.error);
    free(rp.err_where);
    free(rp.err_source);
    tt_strbuf_free(&rp.body);
    tt_strbuf_free(&rp.head);
    tt_strbuf_free(&rp.src);
    tt_strbuf_free(&rp.rows);
    tt_strbuf_free(&rp.figs);
    tt_strbuf_free(&rp.toc);
    memset(&rp, 0, sizeof rp);
    rp.finished = 1;
}

static int finish(int by_exit)
{
    if (!ltt_report_active()) return 1;
    close_item();
    tt_strbuf pg = {.capped = 1}, tail = {.capped = 1};
    build_page(&pg, &tail, by_exit, 0);
    size_t body = rp.body.p ? (rp.body.oom ? rp.safe : rp.body.n) : 0;
    /* under --sandbox the page is a write like the script's: within
       --max-write (the body is left out if only that fits) */
    const int64_t room_w = ltt_sandbox_write_room();
    int over = room_w >= 0 && (uint64_t)(pg.n + body + tail.n) > (uint64_t)room_w;
    if (over) {
        tt_strbuf_free(&pg);
        tt_strbuf_free(&tail);
        build_page(&pg, &tail, by_exit, 1);
        body = 0;
        over = (uint64_t)(pg.n + tail.n) > (uint64_t)room_w;
    }
    char tmp[4096];
    int fd = -1, ok = 0, err = ENOMEM;
    if (over) {
        char need[32], left[32];
        tt_fmt_bytes(need, sizeof need, (double)(pg.n + tail.n));
        tt_fmt_bytes(left, sizeof left, (double)room_w);
        fprintf(stderr, "tensortrace: cannot write the report '%s': even without its body its %s would pass "
                "--max-write (%s left); hint: raise it with --max-write SIZE\n", rp.path, need, left);
        tt_strbuf_free(&pg);
        tt_strbuf_free(&tail);
        free_state();
        return 0;
    }
    if (!pg.oom && !tail.oom && (fd = open_temp(rp.path, tmp, sizeof tmp)) >= 0) {
        mode_t mask = umask(0);
        umask(mask);
        FILE *f = fdopen(fd, "wb");
        if (f) {
            ok = fchmod(fd, 0666 & ~mask) == 0 && fwrite(pg.p, 1, pg.n, f) == pg.n
                 && (body == 0 || fwrite(rp.body.p, 1, body, f) == body) && fwrite(tail.p, 1, tail.n, f) == tail.n;
            if (!ok) err = errno;
            if (fclose(f) != 0 && ok) {
                ok = 0;
                err = errno;
            }
        } else {
            err = errno;
            close(fd);
        }
        if (ok && rename(tmp, rp.path) != 0) {
            ok = 0;
            err = errno;
        }
        if (!ok) unlink(tmp);
    } else if (fd < 0 && !pg.oom && !tail.oom) {
        err = errno;
    }
    if (ok) ltt_sandbox_count_write((int64_t)(pg.n + body + tail.n));
    if (!ok) fprintf(stderr, "tensortrace: cannot write the report '%s': %s\n", rp.path, strerror(err));
    tt_strbuf_free(&pg);
    tt_strbuf_free(&tail);
    free_state();
    return ok;
}

int ltt_report_finish(void) { return finish(0); }

/* os.exit ends the process from inside the script: the page is still written. */
static void at_exit(void)
{
    if (!ltt_report_active()) return;
    ltt_flush_output();
    finish(1);
}

/* Shell-like quoting, for the command shown in the header. */
static void put_arg(tt_strbuf *b, const char *a)
{
    int plain = *a != 0;
    for (const char *p = a; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,+-@%", *p) != NULL;
    if (plain) {
        tt_strbuf_str(b, a);
        return;
    }
    tt_strbuf_str(b, "'");
    for (const char *p = a; *p; p++) {
        if (*p == '\'') tt_strbuf_str(b, "'\\''");
        else tt_strbuf_add(b, p, 1);
    }
    tt_strbuf_str(b, "'");
}

int ltt_report_open(const char *path, int argc, char **argv, long long seed, const char *script, const char **err)
{
    static char why[160];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        *err = "it is a folder";
        return 0;
    }
    char tmp[4096];
    int fd = open_temp(path, tmp, sizeof tmp);
    if (fd < 0) {
        snprintf(why, sizeof why, "%s", strerror(errno));
        *err = why;
        return 0;
    }
    close(fd);
    unlink(tmp);           /* made again at exit: a killed run leaves nothing behind */
    rp.finished = 0;
    /* the page's memory counts against --max-memory, as tensors do */
    rp.body.capped = rp.head.capped = rp.src.capped = rp.rows.capped = rp.figs.capped = rp.toc.capped = 1;
    rp.path = dup_str(path);
    rp.script = script ? dup_str(script) : NULL;
    rp.seed = seed;
    tt_strbuf cmd = {0};
    for (int i = 0; i < argc; i++) {
        if (i) tt_strbuf_str(&cmd, " ");
        put_arg(&cmd, i == 0 ? base_name(argv[0]) : argv[i]);
    }
    rp.command = cmd.p;
    if (rp.path == NULL || (script && rp.script == NULL) || cmd.oom) {
        *err = "out of memory";
        free_state();
        return 0;
    }
    atexit(at_exit);
    return 1;
}
