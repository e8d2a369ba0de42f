/*
** ltrace.c — the trace as a learner reads it: events grouped under the
** script line that made them (source text shown once), optional values,
** JSON Lines, and the tt.trace table (section, off, on, summary).
** Events of the current line are held back until the line changes or the
** script prints, so a label given on the same line shows in its row.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ltt.h"

typedef struct pending {
    tt_event ev;
    tt_tensor in[TT_TRACE_MAX_INPUTS];   /* header copies; storage not owned */
    tt_tensor out;
    char *values;                        /* --trace=values text, or NULL */
} pending;

typedef struct source {
    char *name;                          /* chunk name as Lua gives it */
    char **lines;
    int nlines;
} source;

static struct {
    lua_State *L;
    ltt_trace_mode mode;
    FILE *json;
    int wanted;                          /* a text or JSON trace was asked for */
    int paused, muted;
    pending *pend;
    int npend, cap;
    const char *group_src;               /* chunk name of the last header */
    int group_line;
    int output_since_header;
    long seq;
    source *srcs;
    int nsrcs;
} tr;

/* ===== Source text ===== */

static void split_lines(source *s, const char *text)
{
    size_t n = strlen(text);
    char *copy = malloc(n + 1);
    if (copy == NULL) return;
    memcpy(copy, text, n + 1);
    int cap = 16;
    s->lines = malloc((size_t)cap * sizeof *s->lines);
    for (char *p = copy; s->lines && *p;) {
        if (s->nlines == cap) {
            char **nl = realloc(s->lines, (size_t)(cap *= 2) * sizeof *nl);
            if (nl == NULL) break;
            s->lines = nl;
        }
        s->lines[s->nlines++] = p;
        char *e = strchr(p, '\n');
        if (e == NULL) break;
        *e = 0;
        p = e + 1;
    }
    if (s->nlines == 0) free(copy);     /* lines[0] owns the copy otherwise */
}

static source *find_source(const char *name)
{
    for (int i = 0; i < tr.nsrcs; i++)
        if (strcmp(tr.srcs[i].name, name) == 0) return &tr.srcs[i];
    return NULL;
}

static source *add_source(const char *name)
{
    source *ns = realloc(tr.srcs, (size_t)(tr.nsrcs + 1) * sizeof *ns);
    if (ns == NULL) return NULL;
    tr.srcs = ns;
    source *s = &tr.srcs[tr.nsrcs++];
    memset(s, 0, sizeof *s);
    s->name = malloc(strlen(name) + 1);
    if (s->name) strcpy(s->name, name);
    else tr.nsrcs--;
    return s->name ? s : NULL;
}

void ltt_trace_source(const char *chunkname, const char *text)
{
    source *s = find_source(chunkname);
    if (s) {                            /* the REPL reuses its chunk name */
        if (s->nlines) free(s->lines[0]);
        free(s->lines);
        s->lines = NULL;
        s->nlines = 0;
    } else if ((s = add_source(chunkname)) == NULL) {
        return;
    }
    split_lines(s, text);
}

static const char *source_line(const char *chunk, int line)
{
    source *s = find_source(chunk);
    if (s == NULL) {
        if ((s = add_source(chunk)) == NULL) return "";
        if (chunk[0] == '@') {
            FILE *f = fopen(chunk + 1, "rb");
            if (f) {
                char *buf = NULL;
                size_t len = 0, cap = 0, got;
                char tmp[4096];
                while ((got = fread(tmp, 1, sizeof tmp, f)) > 0) {
                    if (len + got + 1 > cap) {
                        cap = (len + got + 1) * 2;
                        char *nb = realloc(buf, cap);
                        if (nb == NULL) break;
                        buf = nb;
                    }
                    memcpy(buf + len, tmp, got);
                    len += got;
                }
                fclose(f);
                if (buf) {
                    buf[len] = 0;
                    split_lines(s, buf);
                    free(buf);
                }
            }
        } else if (chunk[0] != '=') {
            split_lines(s, chunk);      /* a string chunk is its own source */
        }
    }
    if (line < 1 || line > s->nlines) return "";
    const char *p = s->lines[line - 1];
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

static const char *display_name(const char *chunk)
{
    if (chunk[0] == '@' || chunk[0] == '=') return chunk + 1;
    return "(string)";
}

/* ===== Held-back events ===== */

static void print_values_line(FILE *out, const pending *p)
{
    if (p->values) fputs(p->values, out);
}

static void free_pending(pending *p)
{
    free(p->values);
    p->values = NULL;
}

void ltt_trace_flush(void)
{
    if (tr.npend == 0) return;
    char row[2048];
    static char json[16384];
    for (int i = 0; i < tr.npend; i++) {
        pending *p = &tr.pend[i];
        p->ev.output = &p->out;
        for (int j = 0; j < p->ev.ninputs; j++) p->ev.inputs[j] = &p->in[j];
        if (tr.mode != LTT_TRACE_OFF) {
            printf("    %s\n", tt_event_format(&p->ev, row, sizeof row));
            if (tr.mode == LTT_TRACE_VALUES) print_values_line(stdout, p);
        }
        if (tr.json) {
            fputs(tt_event_json(&p->ev, ++tr.seq, display_name(tr.group_src), tr.group_line, json, sizeof json), tr.json);
            fputc('\n', tr.json);
        }
        free_pending(p);
    }
    tr.npend = 0;
    fflush(stdout);
}

/* Summary of a result for --trace=values: range, moments, non-finite
   counts, and the values themselves when small. */
#define VALUES_SCAN_MAX ((int64_t)1 << 20)   /* a huge (expanded) view must not stall the trace */

static char *values_text(const tt_tensor *t, const tt_event *ev)
{
    int64_t n = tt_numel(t), scan = n < VALUES_SCAN_MAX ? n : VALUES_SCAN_MAX;
    double mn = INFINITY, mx = -INFINITY, sum = 0, sq = 0;
    int64_t nan = 0, pinf = 0, ninf = 0, finite = 0;
    for (int64_t i = 0; i < scan; i++) {
        double v = tt_get(t, i);
        if (isnan(v)) { nan++; continue; }
        if (isinf(v)) { if (v > 0) pinf++; else ninf++; continue; }
        finite++;
        sum += v;
        if (v < mn) mn = v;
        if (v > mx) mx = v;
    }
    double mean = finite ? sum / (double)finite : (double)NAN;
    for (int64_t i = 0; i < scan && finite > 1; i++) {
        double v = tt_get(t, i);
        if (isfinite(v)) sq += (v - mean) * (v - mean);
    }
    double sd = finite > 1 ? sqrt(sq / (double)(finite - 1)) : 0;
    size_t cap = 512, len = 0;
    char *buf = malloc(cap);
    if (buf == NULL) return NULL;
    if (n == 0) len += (size_t)snprintf(buf, cap, "        (empty)\n");
    else if (t->dtype == TT_BOOL)
        len += (size_t)snprintf(buf, cap, "        true %lld of %lld%s\n", (long long)(int64_t)sum, (long long)scan,
                                scan < n ? " (the first ones)" : "");
    else if (finite)
        len += (size_t)snprintf(buf, cap, "        min %.4g  max %.4g  mean %.4g  std %.4g", mn, mx, mean, sd);
    else
        len += (size_t)snprintf(buf, cap, "        no finite values");
    if (n && t->dtype != TT_BOOL) {
        if (nan) len += (size_t)snprintf(buf + len, cap - len, "  NaN %lld", (long long)nan);
        if (pinf) len += (size_t)snprintf(buf + len, cap - len, "  +inf %lld", (long long)pinf);
        if (ninf) len += (size_t)snprintf(buf + len, cap - len, "  -inf %lld", (long long)ninf);
        if (scan < n) len += (size_t)snprintf(buf + len, cap - len, "  (of the first %lld)", (long long)scan);
        int in_nan = 0;
        for (int j = 0; j < ev->ninputs && nan; j++)     /* (only when there is a NaN to place) */
            for (int64_t i = 0, m = tt_numel(ev->inputs[j]); i < m && i < VALUES_SCAN_MAX && !in_nan; i++)
                in_nan = isnan(tt_get(ev->inputs[j], i));
        if (nan && !in_nan)
            len += (size_t)snprintf(buf + len, cap - len, "   !! NaN appears here%s",
                                    ev->op == TT_OP_SOFTMAX ? " (a row with every entry -inf)" : "");
        len += (size_t)snprintf(buf + len, cap - len, "\n");
    }
    if (n > 0 && n <= 36) {
        char *s = tt_tensor_format(t);
        if (s) {
            const char *body = strchr(s, '\n');
            body = body ? body + 1 : s;
            size_t need = len + strlen(body) * 2 + 64;
            if (need > cap) {
                char *nb = realloc(buf, need);
                if (nb) { buf = nb; cap = need; }
            }
            for (const char *line = body; *line && len + 16 < cap;) {
                const char *e = strchr(line, '\n');
                size_t l = e ? (size_t)(e - line) : strlen(line);
                len += (size_t)snprintf(buf + len, cap - len, "        %.*s\n", (int)l, line);
                line = e ? e + 1 : line + l;
            }
            free(s);
        }
    }
    return buf;
}

/* Where in the script the event comes from: the innermost Lua function. */
static int script_location(lua_State *L, const char **src, int *line)
{
    lua_Debug ar;
    for (int level = 0; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar)) break;
        if (ar.currentline > 0) {
            *src = ar.source;
            *line = ar.currentline;
            return 1;
        }
    }
    return 0;
}

static void sink(const tt_event *ev, void *ud);

/* The sink is installed only while events are shown: with none, the core
   skips the work only a reader of the event needs (its args and notes). */
static void update_sink(void)
{
    tt_trace_set_sink(tr.wanted && !tr.paused && !tr.muted ? sink : NULL, NULL);
}

static void sink(const tt_event *ev, void *ud)
{
    (void)ud;
    if (tr.paused || tr.muted) return;
    const char *src = "=?";
    int line = 0;
    script_location(tr.L, &src, &line);
    const char *isrc = tt_intern(src);
    if (isrc != tr.group_src || line != tr.group_line || tr.output_since_header) {
        ltt_trace_flush();
        if (tr.mode != LTT_TRACE_OFF) {
            const char *text = source_line(src, line);
            printf("%s:%d  %s\n", display_name(src), line, text);
        }
        tr.group_src = isrc;
        tr.group_line = line;
        tr.output_since_header = 0;
    }
    if (tr.npend == tr.cap) {
        int ncap = tr.cap ? tr.cap * 2 : 16;
        pending *np = realloc(tr.pend, (size_t)ncap * sizeof *np);
        if (np == NULL) return;
        tr.pend = np;
        tr.cap = ncap;
    }
    pending *p = &tr.pend[tr.npend++];
    p->ev = *ev;
    p->out = *ev->output;
    for (int j = 0; j < ev->ninputs; j++) p->in[j] = *ev->inputs[j];
    p->values = tr.mode == LTT_TRACE_VALUES ? values_text(ev->output, ev) : NULL;
}

void ltt_trace_label(uint64_t id, const char *label)
{
    for (int i = 0; i < tr.npend; i++) {
        if (tr.pend[i].out.id == id) tr.pend[i].out.label = label;
        for (int j = 0; j < tr.pend[i].ev.ninputs; j++)
            if (tr.pend[i].in[j].id == id) tr.pend[i].in[j].label = label;
    }
    tt_flow_set_label(id, label);
}

void ltt_trace_mute(int on)
{
    tr.muted += on ? 1 : (tr.muted > 0 ? -1 : 0);
    update_sink();
}

/* ===== Output from the script: flush first so the order is kept ===== */

static int wrapped_print(lua_State *L)
{
    ltt_trace_flush();
    tr.output_since_header = 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    fflush(stdout);
    return lua_gettop(L);
}

static void wrap_global(lua_State *L, const char *table, const char *name)
{
    if (table) {
        if (lua_getglobal(L, table) != LUA_TTABLE) {
            lua_pop(L, 1);
            return;
        }
    } else {
        lua_pushglobaltable(L);
    }
    lua_getfield(L, -1, name);
    if (lua_isfunction(L, -1)) {
        lua_pushcclosure(L, wrapped_print, 1);
        lua_setfield(L, -2, name);
    } else {
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

int ltt_trace_start(lua_State *L, ltt_trace_mode mode, const char *json_path, const char **err)
{
    tr.L = L;
    tr.mode = mode;
    if (json_path) {
        tr.json = fopen(json_path, "w");
        if (tr.json == NULL) {
            *err = "cannot open the --trace-json file";
            return 0;
        }
    }
    if (mode != LTT_TRACE_OFF || tr.json) {
        tr.wanted = 1;
        update_sink();
        wrap_global(L, NULL, "print");
        wrap_global(L, "io", "write");
    }
    return 1;
}

void ltt_trace_stop(void)
{
    ltt_trace_flush();
    tr.wanted = 0;
    update_sink();
    if (tr.json) fclose(tr.json);
    tr.json = NULL;
    free(tr.pend);
    tr.pend = NULL;
    tr.npend = tr.cap = 0;
    for (int i = 0; i < tr.nsrcs; i++) {
        if (tr.srcs[i].nlines) free(tr.srcs[i].lines[0]);
        free(tr.srcs[i].lines);
        free(tr.srcs[i].name);
    }
    free(tr.srcs);
    tr.srcs = NULL;
    tr.nsrcs = 0;
}

/* ===== tt.trace ===== */

static int trace_section(lua_State *L)
{
    const char *title = luaL_checkstring(L, 1);
    ltt_trace_flush();
    printf("\n=== %s ===\n", title);
    fflush(stdout);
    tr.output_since_header = 1;
    tt_flow_reset();
    return 0;
}

/* off/on nest: a helper that pauses the trace leaves an outer pause alone.
   Both return whether the trace was showing before the call. */
static int trace_off(lua_State *L)
{
    ltt_trace_flush();
    lua_pushboolean(L, tr.paused == 0);
    tr.paused++;
    update_sink();
    return 1;
}

static int trace_on(lua_State *L)
{
    lua_pushboolean(L, tr.paused == 0);
    if (tr.paused > 0) tr.paused--;
    update_sink();
    return 1;
}

static void fmt_qty(char *buf, size_t n, double v, const char *unit)
{
    if (v >= 1e9) snprintf(buf, n, "%.2f G%s", v / 1e9, unit);
    else if (v >= 1e6) snprintf(buf, n, "%.2f M%s", v / 1e6, unit);
    else if (v >= 1e3) snprintf(buf, n, "%.2f k%s", v / 1e3, unit);
    else snprintf(buf, n, "%.0f %s", v, unit);
}

/* Per op kind: calls, FLOPs, bytes moved, time and share of it, and the
   largest result; printed, and returned as {op = {calls, flops, bytes,
   seconds, largest_bytes, largest_shape}} so scripts can check them.
   {times = false} leaves the time columns out (for golden files);
   {print = false} only returns the table (a lesson measuring step by step). */
static int trace_summary(lua_State *L)
{
    const int opts = lua_istable(L, 1) ? 1 : 0;
    int times = ltt_optflag(L, opts, "trace.summary", "times", 1);
    const int print = ltt_optflag(L, opts, "trace.summary", "print", 1);
    if (getenv("TT_TRACE_NO_TIMES")) times = 0;
    ltt_trace_flush();
    lua_newtable(L);                    /* returned: op name -> counters */
    int stats_idx = lua_gettop(L);
    int64_t total = 0;
    for (int op = 1; op < TT_OP_COUNT; op++) total += tt_trace_stats((tt_op)op)->ns;
    if (print) {
        printf("\n%-18s %6s %12s %12s", "op", "calls", "FLOPs", "bytes");
        if (times) printf(" %10s %6s", "time", "share");
        printf("  %s\n", "largest result");
    }
    for (int op = 1; op < TT_OP_COUNT; op++) {
        const tt_op_stats *s = tt_trace_stats((tt_op)op);
        if (s->calls == 0) continue;
        char fl[32], by[32], big[160];
        fmt_qty(fl, sizeof fl, s->flops, "FLOP");
        fmt_qty(by, sizeof by, s->bytes, "B");
        if (s->max_bytes) {
            char mb[32];
            fmt_qty(mb, sizeof mb, (double)s->max_bytes, "B");
            snprintf(big, sizeof big, "%s (%s)", s->max_shape, mb);
        } else {
            snprintf(big, sizeof big, "(views only)");
        }
        if (print) {
            printf("%-18s %6lld %12s %12s", tt_op_name((tt_op)op), (long long)s->calls, s->flops ? fl : "-", by);
            if (times)
                printf(" %8.3f ms %5.1f%%", (double)s->ns / 1e6, total ? 100.0 * (double)s->ns / (double)total : 0.0);
            printf("  %s\n", big);
        }
        lua_createtable(L, 0, 6);
        lua_pushinteger(L, s->calls);
        lua_setfield(L, -2, "calls");
        lua_pushnumber(L, s->flops);
        lua_setfield(L, -2, "flops");
        lua_pushnumber(L, s->bytes);
        lua_setfield(L, -2, "bytes");
        lua_pushnumber(L, (double)s->ns * 1e-9);
        lua_setfield(L, -2, "seconds");
        lua_pushinteger(L, s->max_bytes);
        lua_setfield(L, -2, "largest_bytes");
        lua_pushstring(L, s->max_shape);
        lua_setfield(L, -2, "largest_shape");
        lua_setfield(L, stats_idx, tt_op_name((tt_op)op));
    }
    if (print) {
        fflush(stdout);
        tr.output_since_header = 1;
    }
    return 1;
}

static int trace_reset(lua_State *L)
{
    (void)L;
    tt_trace_stats_reset();
    return 0;
}

static const luaL_Reg tracelib[] = {
    {"section", trace_section}, {"off", trace_off}, {"on", trace_on},
    {"summary", trace_summary}, {"reset", trace_reset},
    {NULL, NULL}
};

void ltt_open_trace(lua_State *L)
{
    luaL_newlib(L, tracelib);
    lua_setfield(L, -2, "trace");
}
