/*
** ltrace.c — the trace as a learner reads it: events grouped under the
** script line that made them (source text shown once, with the call sites
** when the line is inside a function), optional values, JSON Lines, the
** folded rows of checks, and the tt.trace table (section, off, on, summary).
** The first rows of the current line are held back until the line changes
** or the script prints, so a label given later on the same line shows in
** them; a label given on another line never changes a row already made.
** A finished group is held back too, to fold a loop: groups that repeat
** the ones just before them (same lines, ops and shapes) are counted, and
** one line "… ×N more (same shapes)" stands for them.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"
#include "lauxtt.h"
#include "lreport.h"
#include "ltrace.h"
#include "lttlib.h"

#define HOLD_MAX 64                    /* rows held back; more are printed at once */
#define MAX_CALLERS 3                  /* call sites shown after a line inside a function */
#define MAX_SOURCES 64                 /* chunks whose text is kept ... */
#define MAX_SOURCE_BYTES (4 << 20)     /* ... and their total size; the least recently used go */
#define FOLD_HISTORY 128               /* finished groups remembered when looking for a repeat */
#define FOLD_GROUP_MAX (256 << 10)     /* text of one group held back; a longer one prints as it comes */

typedef struct pending {
    tt_event ev;
    tt_tensor in[TT_TRACE_MAX_INPUTS];   /* header copies; storage not owned */
    tt_tensor out;
    tt_tensor grads[TT_TRACE_MAX_INPUTS];   /* a backward row's gradients (out is grads[0]) */
    unsigned char prev[TT_TRACE_MAX_INPUTS + 1];   /* its label has since gone to a newer tensor (out last) */
    unsigned char folded;                /* a check's literal operand: JSON only */
    char *values;                        /* --trace=values text, or NULL */
    char *text;                          /* a row that is no event (a check), or NULL */
} pending;

/* A place in the script: a Lua frame's chunk (identified by its source
   string, which may be gone by the time rows print) and line. */
typedef struct frame {
    const char *src;                     /* lua_Debug.source: compared, never read later */
    size_t srclen;
    uint32_t sum;                        /* of the source's ends: a reused address is a new chunk */
    int line;
    uint64_t pass;                       /* the innermost for loop's variable: a new value is a new pass */
} frame;

typedef struct group {
    frame f[1 + MAX_CALLERS];            /* the line, then its callers outwards */
    int n;
    char *name;                          /* display name of f[0]'s chunk (for JSON) */
} group;

typedef struct source {
    char *name;                          /* chunk name as Lua gives it */
    size_t namelen;
    uint32_t hash;
    char **lines;
    int nlines;
    size_t bytes;
    unsigned long used;                  /* last use, for eviction */
} source;

static struct {
    lua_State *L;
    ltt_trace_mode mode;
    FILE *json;
    int wanted;                          /* a text or JSON trace was asked for */
    int paused, muted;
    pending pend[HOLD_MAX];
    int npend;
    group grp;                           /* the line of the last header */
    int output_since_header;
    long seq;
    uint64_t values_id;                  /* result whose values the last row showed */
    source srcs[MAX_SOURCES];
    int nsrcs;
    size_t src_bytes;
    unsigned long src_clock;
    struct holder { const char *label; tt_tensor t; } *holders;   /* label -> newest tensor given it (header; storage not owned) */
    size_t nholders, holders_cap;
} tr;

/* ===== Source text ===== */

static void free_source(source *s)
{
    if (s->nlines) free(s->lines[0]);
    free(s->lines);
    free(s->name);
    tr.src_bytes -= s->bytes;
    memset(s, 0, sizeof *s);
}

static void drop_source(int i)
{
    free_source(&tr.srcs[i]);
    tr.srcs[i] = tr.srcs[--tr.nsrcs];
}

/* Splits text into s's lines; 0 when the text does not fit the budget. */
static int split_lines(source *s, const char *text)
{
    size_t n = strlen(text), nl = 1;
    for (const char *p = text; (p = strchr(p, '\n')) != NULL; p++) nl++;
    size_t bytes = n + 1 + nl * sizeof(char *) + s->namelen + 1;
    if (bytes > MAX_SOURCE_BYTES) return 0;
    while (tr.src_bytes + bytes > MAX_SOURCE_BYTES && tr.nsrcs > 1) {
        int old = -1;                    /* least recently used, not s itself */
        for (int i = 0; i < tr.nsrcs; i++)
            if (&tr.srcs[i] != s && (old < 0 || tr.srcs[i].used < tr.srcs[old].used)) old = i;
        if (&tr.srcs[tr.nsrcs - 1] == s) {  /* s moves into the freed slot */
            drop_source(old);
            s = &tr.srcs[old];
        } else {
            drop_source(old);
        }
    }
    char *copy = malloc(n + 1);
    s->lines = malloc(nl * sizeof *s->lines);
    if (copy == NULL || s->lines == NULL) {
        free(copy);
        free(s->lines);
        s->lines = NULL;
        return 0;
    }
    memcpy(copy, text, n + 1);
    for (char *p = copy;;) {
        s->lines[s->nlines++] = p;
        char *e = strchr(p, '\n');
        if (e == NULL) break;
        *e = 0;
        p = e + 1;
    }
    s->bytes = bytes;
    tr.src_bytes += bytes;
    return 1;
}

static uint32_t name_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;            /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static source *find_source(const char *name)
{
    size_t len = strlen(name);
    uint32_t h = name_hash(name, len);
    for (int i = 0; i < tr.nsrcs; i++)
        if (tr.srcs[i].namelen == len && tr.srcs[i].hash == h && memcmp(tr.srcs[i].name, name, len) == 0) {
            tr.srcs[i].used = ++tr.src_clock;
            return &tr.srcs[i];
        }
    return NULL;
}

/* A new entry for name (the least recently used one makes room), or NULL. */
static source *add_source(const char *name)
{
    size_t len = strlen(name);
    if (len + 1 > MAX_SOURCE_BYTES / 2) return NULL;    /* a huge string chunk: no text kept */
    if (tr.nsrcs == MAX_SOURCES) {
        int old = 0;
        for (int i = 1; i < tr.nsrcs; i++)
            if (tr.srcs[i].used < tr.srcs[old].used) old = i;
        drop_source(old);
    }
    source *s = &tr.srcs[tr.nsrcs];
    memset(s, 0, sizeof *s);
    if ((s->name = malloc(len + 1)) == NULL) return NULL;
    memcpy(s->name, name, len + 1);
    s->namelen = len;
    s->hash = name_hash(name, len);
    s->used = ++tr.src_clock;
    tr.nsrcs++;
    return s;
}

void ltt_trace_source(const char *chunkname, const char *text)
{
    tr.output_since_header = 1;         /* a new chunk's rows get their own header, even at the same "stdin:1" */
    source *s = find_source(chunkname);
    if (s) {                            /* the REPL reuses its chunk name */
        char *name = s->name;
        s->name = NULL;
        free_source(s);
        s->name = name;
        s->namelen = strlen(name);
        s->hash = name_hash(name, s->namelen);
        s->used = ++tr.src_clock;
    } else if ((s = add_source(chunkname)) == NULL) {
        return;
    }
    split_lines(s, text);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    char tmp[4096];
    while ((got = fread(tmp, 1, sizeof tmp, f)) > 0 && len + got < MAX_SOURCE_BYTES) {
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
    if (buf) buf[len] = 0;
    return buf;
}

static const char *source_line(const char *chunk, int line)
{
    source *s = find_source(chunk);
    if (s == NULL) {
        if ((s = add_source(chunk)) == NULL) return "";
        if (chunk[0] == '@') {
            char *text = read_file(chunk + 1);
            if (text) {
                if (!split_lines(s, text)) s = NULL;
                free(text);
            }
        } else if (chunk[0] != '=') {
            if (!split_lines(s, chunk)) s = NULL;      /* a string chunk is its own source */
        }
        if (s == NULL) return "";
        s = find_source(chunk);          /* making room may have moved it */
        if (s == NULL) return "";
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

/* ===== Where an event comes from ===== */

static uint32_t ends_sum(const char *s, size_t n)
{
    uint32_t h = 2166136261u;            /* FNV-1a over the first and last 32 bytes */
    for (size_t i = 0; i < n && i < 32; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    for (size_t i = n > 32 ? n - 32 : 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static int same_frame(const frame *a, const frame *b)
{
    return a->src == b->src && a->srclen == b->srclen && a->sum == b->sum && a->line == b->line;
}

/* Identifies the pass of the innermost for loop running in ar's function
   by its control variable (the first named local after the loop's hidden
   "(for state)" ones): a loop's passes on one line are groups of their own,
   so that they can fold. 0 outside loops. */
static uint64_t loop_pass(lua_State *L, lua_Debug *ar)
{
    uint64_t key = 0;
    int after_state = 0;
    const char *name;
    for (int n = 1; (name = lua_getlocal(L, ar, n)) != NULL; n++) {
        if (strcmp(name, "(for state)") == 0) {
            after_state = 1;
        } else if (after_state && name[0] != '(') {
            after_state = 0;
            if (lua_isinteger(L, -1)) key = (uint64_t)lua_tointeger(L, -1);
            else if (lua_type(L, -1) == LUA_TNUMBER) {
                lua_Number v = lua_tonumber(L, -1);
                memcpy(&key, &v, sizeof key < sizeof v ? sizeof key : sizeof v);
            } else if (lua_type(L, -1) == LUA_TBOOLEAN) key = (uint64_t)lua_toboolean(L, -1);
            else key = (uint64_t)(uintptr_t)lua_topointer(L, -1);
            key = key * 31u + (uint64_t)n;   /* another loop with the same value is another pass */
        }
        lua_pop(L, 1);
    }
    return key;
}

/* The innermost Lua line running, then the lines that called it, up to
   MAX_CALLERS and stopping at a main chunk. Returns the frame count. */
static int locate(lua_State *L, frame *f, int max)
{
    lua_Debug ar;
    int n = 0;
    for (int level = 0; n < max && lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar)) break;
        if (ar.currentline <= 0) continue;          /* C functions */
        int again = n > 0 && f[n - 1].src == ar.source && f[n - 1].line == ar.currentline;
        if (again) {                     /* a function called on the line that defines it */
            if (strcmp(ar.what, "main") == 0) break;
            continue;
        }
        f[n].src = ar.source;
        f[n].srclen = ar.srclen;
        f[n].sum = ends_sum(ar.source, ar.srclen);
        f[n].line = ar.currentline;
        f[n].pass = loop_pass(L, &ar);
        n++;
        if (strcmp(ar.what, "main") == 0) break;
    }
    return n;
}

/* ===== Folding a loop: repeated groups counted, not printed ===== */

/* A group of the text trace once its last row is in: kept to be compared
   with the groups after it, its text while it waits to be shown. */
typedef struct done_group {
    frame f[1 + MAX_CALLERS];
    int n;
    char file[140];                      /* its header's file and line */
    int line;
    char *sig;                           /* its rows without labels or values; NULL: never equal */
    uint32_t sighash;
    char *text;                          /* header and rows, while it waits; NULL once shown or counted */
    size_t rows_at;                      /* where its rows start in text (after the header) */
    long anchor;                         /* first group of the repeat it belongs to (itself when alone) */
} done_group;

static struct {
    done_group h[FOLD_HISTORY];          /* group i is h[i % FOLD_HISTORY] */
    long len;                            /* groups finished */
    long waiting;                        /* the last ones, held back: they may repeat those before */
    long period;                         /* groups in the repeat being counted, 0 if none */
    long since;                          /* the first of its first occurrence (shown) */
    long count;                          /* repeats counted since the last "more" line */
    frame last[1 + MAX_CALLERS];         /* the lines of the group shown last, nothing printed since */
    int nlast;                           /* 0: something else was printed after it */
} fold;

/* The group being made: its text and signature, held until it ends. */
static struct {
    tt_strbuf text, sig;
    size_t rows_at;
    int open;
    int direct;                          /* printed as it comes (too long, or a continuation): never folds */
} cur;

static done_group *nth(long i) { return &fold.h[i % FOLD_HISTORY]; }

static int same_lines(const frame *a, int na, const frame *b, int nb)
{
    if (na != nb) return 0;
    for (int k = 0; k < na; k++)
        if (!same_frame(&a[k], &b[k])) return 0;
    return 1;
}

static int same_group(long i, long j)
{
    const done_group *a = nth(i), *b = nth(j);
    if (a->sig == NULL || b->sig == NULL || a->sighash != b->sighash) return 0;
    return same_lines(a->f, a->n, b->f, b->n) && strcmp(a->sig, b->sig) == 0;
}

/* Prints a group; its header only when the rows just above are not of the
   same lines (a loop's passes that differ read as one group). */
static void show(long i)
{
    done_group *g = nth(i);
    if (g->text) {
        int again = same_lines(g->f, g->n, fold.last, fold.nlast);
        fputs(g->text + (again ? g->rows_at : 0), stdout);
        memcpy(fold.last, g->f, sizeof fold.last);
        fold.nlast = g->n;
    }
    free(g->text);
    g->text = NULL;
}

/* Marks groups from..to-1 as part of the repeat whose first occurrence
   starts at fold.since; the counted ones are never shown. */
static void mark_repeat(long from, long to, long counted_from)
{
    for (long j = from; j < to; j++) {
        nth(j)->anchor = fold.since;
        if (j >= counted_from) {
            free(nth(j)->text);
            nth(j)->text = NULL;
        }
    }
}

/* "    … ×9 more (same shapes)": the repeats counted since the last such
   line; "of the rows since line 12" when a repeat is several groups. */
static void announce(void)
{
    if (fold.count == 0) return;
    const done_group *first = nth(fold.since), *last = nth(fold.len - 1);
    printf("    \xe2\x80\xa6 \xc3\x97%ld more", fold.count);
    if (fold.period > 1 && strcmp(first->file, last->file) == 0) printf(" of the rows since line %d", first->line);
    else if (fold.period > 1) printf(" of the rows since %s:%d", first->file, first->line);
    printf(" (same shapes%s)\n", tr.mode == LTT_TRACE_VALUES ? ", values not shown" : "");
    fold.count = 0;
    fold.nlast = 0;
}

/* Whether the p groups before s can be a first occurrence: all in the
   history, each shown or counted in a repeat that began among them (a
   "more" line never stands for rows the reader did not see). */
static int window_ok(long s, long p)
{
    if (s - p < 0 || s - p < fold.len - FOLD_HISTORY) return 0;
    for (long j = s - p; j < s; j++)
        if (nth(j)->anchor < s - p) return 0;
    return 1;
}

/* Whether groups s..len-1 repeat the p groups before them. */
static int repeats(long s, long p)
{
    if (p > FOLD_HISTORY / 2 || !window_ok(s, p)) return 0;
    for (long j = s; j < fold.len; j++)
        if (!same_group(j, j - p)) return 0;
    return 1;
}

/* Decides the waiting groups s..len-1 (no repeat being counted). The
   earliest s2 whose groups s2..len-1 repeat as many groups just before
   starts a repeat (the groups before s2 are shown). Else, while the
   groups from s match the start of a longer block before them, they keep
   waiting; if not, the first is shown and the rest looked at again. */
static void settle(long s)
{
    while (s < fold.len) {
        for (long s2 = s; s2 < fold.len; s2++) {
            long p = fold.len - s2;
            if (!repeats(s2, p)) continue;
            while (s < s2) show(s++);
            fold.period = p;
            fold.since = s2 - p;
            fold.count = 1;
            fold.waiting = 0;
            mark_repeat(s2 - p, fold.len, s2);
            return;
        }
        for (long p = fold.len - s + 1; p <= FOLD_HISTORY / 2; p++)
            if (repeats(s, p)) {
                fold.waiting = fold.len - s;
                return;
            }
        show(s++);
    }
    fold.waiting = 0;
}

static void fold_add(const group *where, char *sig, char *text, size_t rows_at)
{
    long i = fold.len++;
    done_group *g = nth(i);
    free(g->sig);
    free(g->text);                       /* NULL: a group this old was decided long ago */
    memcpy(g->f, where->f, sizeof g->f);
    g->n = where->n;
    /* the name copied at the group's start: its chunk may be collected by now */
    snprintf(g->file, sizeof g->file, "%s", where->name ? where->name : "?");
    g->line = where->f[0].line;
    g->sig = sig;
    g->sighash = sig ? name_hash(sig, strlen(sig)) : 0;
    g->text = text;
    g->rows_at = rows_at;
    g->anchor = i;
    if (fold.period) {
        if (same_group(i, i - fold.period)) {
            if (++fold.waiting == fold.period) {
                fold.count++;
                mark_repeat(i + 1 - fold.period, i + 1, i + 1 - fold.period);
                fold.waiting = 0;
            }
            return;
        }
        announce();
        fold.period = 0;
    }
    settle(i - fold.waiting);
}

/* Before other output: the count so far, and the waiting groups in full.
   keep: a repeat in progress may go on counting after the output (a
   training loop printing its loss); not across a section. */
static void fold_flush(int keep)
{
    announce();
    if (fold.period && fold.waiting == 0 && keep) return;
    for (long j = fold.len - fold.waiting; j < fold.len; j++) show(j);
    fold.waiting = fold.period = 0;
    fold.nlast = 0;                      /* output follows */
}

static void fold_reset(void)
{
    fold_flush(0);
    for (int i = 0; i < FOLD_HISTORY; i++) free(fold.h[i].sig);
    memset(&fold, 0, sizeof fold);
    tt_strbuf_free(&cur.text);
    tt_strbuf_free(&cur.sig);
    cur.open = cur.direct = 0;
}

/* Text of the current group: held back, or printed at once once it is
   too long to hold (the repeats before it are settled first). */
static void emit_fmt(const char *fmt, ...) TT__PRINTF(1, 2);
static void emit_fmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (cur.direct) vprintf(fmt, ap);
    else tt_strbuf_vfmt(&cur.text, fmt, ap);
    va_end(ap);
    if (!cur.direct && (cur.text.n > FOLD_GROUP_MAX || cur.text.oom)) {
        fold_flush(0);
        if (cur.text.n) fputs(cur.text.p, stdout);
        tt_strbuf_free(&cur.text);
        cur.direct = 1;
    }
}

/* A row as repeats are compared: its text without labels, scalars and
   arguments (op, shapes, strides, FLOPs, warnings), or a check's text. */
static void add_sig(const tt_event *row, const char *text)
{
    if (cur.direct) return;
    if (text) {
        tt_strbuf_str(&cur.sig, text);
    } else {
        tt_event ev = *row;
        ev.has_scalar = 0;
        ev.args[0] = 0;
        tt_tensor t[2 * TT_TRACE_MAX_INPUTS + 1];
        int k = 0;
        for (int j = 0; j < ev.ninputs; j++, k++) {
            t[k] = *ev.inputs[j];
            t[k].label = NULL;
            ev.inputs[j] = &t[k];
        }
        for (int j = 0; j < ev.ngrads; j++, k++) {
            t[k] = *ev.grads[j];
            t[k].label = NULL;
            ev.grads[j] = &t[k];
        }
        if (ev.output) {
            t[k] = *ev.output;
            t[k].label = NULL;
            ev.output = &t[k];
        }
        char buf[2048];
        tt_strbuf_str(&cur.sig, tt_event_format(&ev, buf, sizeof buf));
    }
    tt_strbuf_add(&cur.sig, "\n", 1);
}

static char *take(tt_strbuf *b)
{
    char *s = NULL;
    if (!b->oom && (s = malloc(b->n + 1)) != NULL) {
        if (b->n) memcpy(s, b->p, b->n);
        s[b->n] = 0;
    }
    tt_strbuf_free(b);
    return s;
}

/* The current group is complete: to the folding. */
static void end_group(const group *where)
{
    if (!cur.open) return;
    cur.open = 0;
    if (tr.mode == LTT_TRACE_OFF) {
        tt_strbuf_free(&cur.text);
        tt_strbuf_free(&cur.sig);
        return;
    }
    char *sig = cur.direct ? NULL : take(&cur.sig), *text = cur.direct ? NULL : take(&cur.text);
    tt_strbuf_free(&cur.sig);
    if (!cur.direct && text == NULL) {  /* out of memory: no folding of this one */
        free(sig);
        sig = NULL;
    }
    cur.direct = 0;
    fold_add(where, sig, text, cur.rows_at);
}

/* ===== Held-back rows ===== */

static const char *previous_label(const tt_tensor *t, char *buf, size_t n)
{
    snprintf(buf, n, "%.200s (previous)", t->label);
    return buf;
}

/* Renders the held-back rows into the current group's text (and JSON). */
static void render_rows(void)
{
    if (tr.npend == 0) return;
    char row[2048];
    static char json[16384];
    for (int i = 0; i < tr.npend; i++) {
        pending *p = &tr.pend[i];
        if (p->text) {
            if (tr.mode != LTT_TRACE_OFF) {
                emit_fmt("    %s\n", p->text);
                add_sig(NULL, p->text);
                ltt_report_check(p->text);
            }
            free(p->text);
            p->text = NULL;
            continue;
        }
        if (p->ev.output) p->ev.output = &p->out;   /* an optimizer's step makes no tensor */
        for (int j = 0; j < p->ev.ninputs; j++) p->ev.inputs[j] = &p->in[j];
        for (int j = 0; j < p->ev.ngrads; j++) p->ev.grads[j] = &p->grads[j];
        if (tr.json) {
            fputs(tt_event_json(&p->ev, ++tr.seq, tr.grp.name, tr.grp.f[0].line, json, sizeof json), tr.json);
            fputc('\n', tr.json);
        }
        if (tr.mode != LTT_TRACE_OFF && !p->folded) {
            /* the text shows "label (previous)" where a newer tensor took the label */
            tt_tensor shown[TT_TRACE_MAX_INPUTS + 1];
            char names[TT_TRACE_MAX_INPUTS + 1][224];
            tt_event ev = p->ev;
            for (int j = 0; j < ev.ninputs + (ev.output != NULL) && ev.phase == TT_PHASE_FORWARD; j++) {
                const tt_tensor *t = j < ev.ninputs ? &p->in[j] : &p->out;
                int k = j < ev.ninputs ? j : TT_TRACE_MAX_INPUTS;
                shown[j] = *t;
                if (p->prev[k] && t->label) shown[j].label = previous_label(t, names[j], sizeof names[j]);
                if (j < ev.ninputs) ev.inputs[j] = &shown[j];
                else ev.output = &shown[j];
            }
            emit_fmt("    %s\n", tt_event_format(&ev, row, sizeof row));
            add_sig(&ev, NULL);
            if (tr.mode == LTT_TRACE_VALUES && p->values) emit_fmt("%s", p->values);
            ltt_report_row(&ev, tr.mode == LTT_TRACE_VALUES ? p->values : NULL);
        }
        free(p->values);
        p->values = NULL;
    }
    tr.npend = 0;
}

static void free_group(group *g)
{
    free(g->name);
    g->name = NULL;
    g->n = 0;
}

/* "file:12 ← line 30 ← other.lua:4  source text of line 12" */
static void print_header(const group *g)
{
    const char *name = display_name(g->f[0].src);
    const char *text = source_line(g->f[0].src, g->f[0].line);
    emit_fmt("%s:%d", name, g->f[0].line);
    ltt_report_group(name, g->f[0].line, text);
    for (int i = 1; i < g->n; i++) {
        int same = g->f[i].src == g->f[0].src;
        if (same) emit_fmt(" \xe2\x86\x90 line %d", g->f[i].line);
        else emit_fmt(" \xe2\x86\x90 %s:%d", display_name(g->f[i].src), g->f[i].line);
        ltt_report_caller(same ? NULL : display_name(g->f[i].src), g->f[i].line);
    }
    emit_fmt("  %s\n", text);
}

/* Everything held back goes out: before the script's own output (keep:
   a repeat being counted may go on after it) or a section (it may not). */
static void flush_all(int keep)
{
    render_rows();
    end_group(&tr.grp);
    if (tr.mode != LTT_TRACE_OFF) fold_flush(keep);
    fflush(stdout);
}

void ltt_trace_flush(void)
{
    flush_all(1);
}

/* A slot for a new row of the line running now: prints the header first
   when the line (or the calls that led to it) changed. NULL if out of
   Lua state (no trace). */
static void locate_group(group *g)
{
    memset(g, 0, sizeof *g);
    g->n = locate(ltt_running_thread(tr.L), g->f, 1 + MAX_CALLERS);
    if (g->n == 0) {                     /* no Lua code running (a C caller) */
        g->f[0].src = "=?";
        g->n = 1;
    }
}

/* Whether g is the group of the last header, with no script output since. */
static int is_current(const group *g)
{
    int same = g->n == tr.grp.n && !tr.output_since_header;
    for (int i = 0; same && i < g->n; i++) same = same_frame(&g->f[i], &tr.grp.f[i]) && g->f[i].pass == tr.grp.f[i].pass;
    return same;
}

static pending *new_row(void)
{
    group g;
    locate_group(&g);
    if (!is_current(&g)) {
        render_rows();
        end_group(&tr.grp);
        cur.open = 1;
        if (tr.mode != LTT_TRACE_OFF) print_header(&g);
        cur.rows_at = cur.text.n;
        const char *name = display_name(g.f[0].src);
        free_group(&tr.grp);
        tr.grp = g;
        tr.grp.name = malloc(strlen(name) + 1);
        if (tr.grp.name) strcpy(tr.grp.name, name);
        tr.output_since_header = 0;
    } else if (!cur.open) {              /* more rows of a group whose first ones went out */
        cur.open = cur.direct = 1;
    }
    if (tr.npend == HOLD_MAX) render_rows();     /* a long loop on one line: keep memory flat */
    pending *p = &tr.pend[tr.npend++];
    memset(p->prev, 0, sizeof p->prev);
    p->folded = 0;
    p->values = p->text = NULL;
    return p;
}

/* ===== Labels: the newest tensor given each label ===== */

static size_t holder_slot(const char *label)
{
    size_t h = (size_t)((uintptr_t)label >> 4) * 2654435761u;
    size_t i = h & (tr.holders_cap - 1);
    while (tr.holders[i].label && tr.holders[i].label != label) i = (i + 1) & (tr.holders_cap - 1);
    return i;
}

/* The newest tensor labelled `label` (interned), NULL if none. */
static const tt_tensor *holder(const char *label)
{
    if (label == NULL || tr.holders_cap == 0) return NULL;
    struct holder *h = &tr.holders[holder_slot(label)];
    return h->label ? &h->t : NULL;
}

/* a and b are the same values: one tensor, or a view of the same elements
   in the same layout, as detach() makes (it keeps the label) */
static int same_tensor(const tt_tensor *a, const tt_tensor *b)
{
    if (a->id == b->id) return 1;
    if (a->storage != b->storage || a->offset != b->offset || a->ndim != b->ndim || a->dtype != b->dtype) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->stride[d] != b->stride[d])) return 0;
    return 1;
}

static void set_holder(const char *label, const tt_tensor *t)
{
    if (tr.nholders * 2 >= tr.holders_cap) {
        size_t ncap = tr.holders_cap ? tr.holders_cap * 2 : 64;
        struct holder *old = tr.holders, *nh = calloc(ncap, sizeof *nh);
        if (nh == NULL) return;
        size_t ocap = tr.holders_cap;
        tr.holders = nh;
        tr.holders_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].label) tr.holders[holder_slot(old[i].label)] = old[i];
        free(old);
    }
    size_t i = holder_slot(label);
    if (tr.holders[i].label == NULL) tr.nholders++;
    tr.holders[i].label = label;
    tr.holders[i].t = *t;
}

/* t carries a label that a different tensor was given since */
static int is_previous(const tt_tensor *t)
{
    const tt_tensor *h = holder(t->label);
    return h != NULL && !same_tensor(h, t);
}

void ltt_trace_label(const tt_tensor *labelled)
{
    uint64_t id = labelled->id;
    const char *label = labelled->label;
    tt_flow_set_label(id, label);
    if (!tr.wanted || label == NULL) return;
    set_holder(label, labelled);
    if (tr.npend == 0) return;
    /* only rows of the line giving the label (or of a function it called) */
    frame here;
    if (locate(ltt_running_thread(tr.L), &here, 1) != 1) return;
    int mine = 0;
    for (int i = 0; i < tr.grp.n && !mine; i++) mine = same_frame(&here, &tr.grp.f[i]);
    if (!mine) return;
    for (int i = 0; i < tr.npend; i++) {
        pending *p = &tr.pend[i];
        if (p->text || p->ev.phase != TT_PHASE_FORWARD) continue;   /* a gradient keeps its tensor's label */
        for (int j = 0; j <= p->ev.ninputs; j++) {
            tt_tensor *t = j < p->ev.ninputs ? &p->in[j] : &p->out;
            int k = j < p->ev.ninputs ? j : TT_TRACE_MAX_INPUTS;
            if (t->id == id) {
                t->label = label;
                p->prev[k] = 0;
            } else if (t->label == label) {
                p->prev[k] = !same_tensor(t, labelled);
            }
        }
    }
}


/* ===== --trace=values ===== */

/* Summary of a result for --trace=values: range, moments, non-finite
   counts, and the values themselves when small. */
#define VALUES_SCAN_MAX ((int64_t)1 << 20)   /* a huge (expanded) view must not stall the trace */
#define VALUES_SHOWN_MAX 36                  /* results this small are shown in full */

static char *values_text(const tt_tensor *t, const tt_event *ev)
{
    int64_t n = tt_numel(t), scan = n < VALUES_SCAN_MAX ? n : VALUES_SCAN_MAX;
    int prec = tt_print_precision();
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
        len += (size_t)snprintf(buf, cap, "        min %.*g  max %.*g  mean %.*g  std %.*g", prec, mn, prec, mx,
                                prec, mean, prec, sd);
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
    if (n > 0 && n <= VALUES_SHOWN_MAX) {
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

/* ===== --trace=values of a backward row ===== */

typedef struct grad_stats {
    double sq, mn, mx;
    int64_t finite, nan, pinf, ninf, scan;
} grad_stats;

static grad_stats scan_grad(const tt_tensor *t)
{
    grad_stats g = {0, INFINITY, -INFINITY, 0, 0, 0, 0, 0};
    int64_t n = tt_numel(t);
    g.scan = n < VALUES_SCAN_MAX ? n : VALUES_SCAN_MAX;
    for (int64_t i = 0; i < g.scan; i++) {
        double v = tt_get(t, i);
        if (isnan(v)) g.nan++;
        else if (isinf(v)) *(v > 0 ? &g.pinf : &g.ninf) += 1;
        else {
            g.finite++;
            g.sq += v * v;
            if (v < g.mn) g.mn = v;
            if (v > g.mx) g.mx = v;
        }
    }
    return g;
}

/* Why an op's backward can turn a finite gradient into NaN or inf. */
static const char *nonfinite_hint(tt_op op)
{
    switch (op) {
    case TT_OP_SQRT: return "sqrt's derivative 1/(2 sqrt(x)) is inf at x = 0";
    case TT_OP_LOG: return "log's derivative 1/x is inf at x = 0";
    case TT_OP_DIV: return "a / b has derivatives 1/b and -a/b^2: inf where b = 0";
    case TT_OP_POW: return "x^p's derivative p x^(p-1) is inf at x = 0 when p < 1";
    default: return "it multiplies by values the forward saved: look for NaN or inf in its forward row";
    }
}

/* Each gradient a backward row gives: norm, range and the counts of NaN
   and inf; "!!" where a gradient turns non-finite although the one
   arriving is finite, naming the op whose backward did it. */
static char *grads_text(const tt_event *ev)
{
    size_t cap = 256 + 256 * (size_t)ev->ngrads, len = 0;
    char *buf = malloc(cap);
    if (buf == NULL) return NULL;
    buf[0] = 0;
    int prec = tt_print_precision();
    int64_t made_nan = 0, made_inf = 0;
    for (int i = 0; i < ev->ngrads; i++) {
        const tt_tensor *t = ev->grads[i];
        grad_stats g = scan_grad(t);
        char shp[192];
        tt_shape_str(t, shp, sizeof shp);
        len += (size_t)snprintf(buf + len, cap - len, "        %s%.100s%s:", t->label ? "grad of " : "grad",
                                t->label ? t->label : "", t->label ? "" : shp);
        if (g.finite)
            len += (size_t)snprintf(buf + len, cap - len, " norm %.*g  min %.*g  max %.*g", prec, sqrt(g.sq), prec,
                                    g.mn, prec, g.mx);
        else if (g.scan)
            len += (size_t)snprintf(buf + len, cap - len, " no finite values");
        if (g.nan) len += (size_t)snprintf(buf + len, cap - len, "  NaN %lld", (long long)g.nan);
        if (g.pinf) len += (size_t)snprintf(buf + len, cap - len, "  +inf %lld", (long long)g.pinf);
        if (g.ninf) len += (size_t)snprintf(buf + len, cap - len, "  -inf %lld", (long long)g.ninf);
        if (g.scan < tt_numel(t)) len += (size_t)snprintf(buf + len, cap - len, "  (of the first %lld)", (long long)g.scan);
        len += (size_t)snprintf(buf + len, cap - len, "\n");
        made_nan += g.nan;
        made_inf += g.pinf + g.ninf;
    }
    if ((made_nan || made_inf) && ev->ninputs > 0) {
        grad_stats in = scan_grad(ev->inputs[0]);
        if (in.nan + in.pinf + in.ninf == 0)
            snprintf(buf + len, cap - len, "        !! the gradient turns %s here: the backward of %s made it from a "
                     "finite gradient (%s)\n", made_nan ? "NaN" : "inf", ev->name, nonfinite_hint(ev->op));
    }
    return buf;
}

/* Storage index of element `flat` (row-major) of t. */
static int64_t elem_offset(const tt_tensor *t, int64_t flat)
{
    int64_t off = t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += flat % t->shape[d] * t->stride[d];
        flat /= t->shape[d];
    }
    return off;
}

/* A view that reads the same elements as its input: in the same order when
   the values are shown in full, in any order when only the summary is. */
static int same_values(const tt_tensor *a, const tt_tensor *v)
{
    int64_t n = tt_numel(a);
    if (a->storage != v->storage || a->dtype != v->dtype || n != tt_numel(v) || n == 0) return 0;
    if (n > VALUES_SHOWN_MAX) return 1;
    for (int64_t i = 0; i < n; i++)
        if (elem_offset(a, i) != elem_offset(v, i)) return 0;
    return 1;
}

/* ===== The sink ===== */

static void sink(const tt_event *ev, void *ud);

/* The sink is subscribed only while events are shown: with none, the core
   skips the work only a reader of the text needs (the args and notes). */
static void update_sink(void)
{
    if (tr.wanted && !tr.paused && !tr.muted) tt_trace_subscribe(sink, NULL, 1);
    else tt_trace_unsubscribe(sink, NULL);
}

static void sink(const tt_event *ev, void *ud)
{
    (void)ud;
    if (tr.paused || tr.muted) return;
    pending *p = new_row();
    p->ev = *ev;
    p->ev.nargs = 0;                /* argv's strings and the pattern are the op's, gone after this call: */
    p->ev.pattern = NULL;           /* the row keeps the args text, derived from them */
    int fwd = ev->phase == TT_PHASE_FORWARD;
    if (ev->output) p->out = *ev->output;
    else memset(&p->out, 0, sizeof p->out);      /* id 0: no label or check ever matches it */
    for (int j = 0; j < ev->ngrads; j++) p->grads[j] = *ev->grads[j];
    p->prev[TT_TRACE_MAX_INPUTS] = (unsigned char)(fwd && is_previous(ev->output));
    for (int j = 0; j < ev->ninputs; j++) {
        p->in[j] = *ev->inputs[j];
        p->prev[j] = (unsigned char)(fwd && is_previous(ev->inputs[j]));
    }
    if (tr.mode == LTT_TRACE_VALUES && !fwd) {
        p->values = ev->phase == TT_PHASE_BACKWARD ? grads_text(ev) : NULL;
        tr.values_id = 0;
    } else if (tr.mode == LTT_TRACE_VALUES && ev->output) {
        static const char same[] = "        (a view of the values above)\n";
        if (ev->view && ev->ninputs > 0 && ev->inputs[0]->id == tr.values_id && same_values(ev->inputs[0], ev->output)) {
            p->values = malloc(sizeof same);
            if (p->values) memcpy(p->values, same, sizeof same);
        } else {
            p->values = values_text(ev->output, ev);
        }
        tr.values_id = ev->output->id;
    }
}

/* ===== Checks: one row instead of their literal operands ===== */

/* "1e-06" -> "1e-6" */
static void fmt_tol(char *buf, size_t n, double v)
{
    snprintf(buf, n, "%g", v);
    char *e = strstr(buf, "e-0");
    if (e) memmove(e + 2, e + 3, strlen(e + 3) + 1);
}

static void put_literal(char *buf, size_t n, size_t *len, const tt_tensor *t, int d, int64_t *flat)
{
    if (d == t->ndim) {
        double v = tt_get(t, (*flat)++);
        if (t->dtype == TT_BOOL) *len += (size_t)snprintf(buf + *len, n - *len, "%s", v != 0 ? "true" : "false");
        else *len += (size_t)snprintf(buf + *len, n - *len, "%.7g", v);
        return;
    }
    *len += (size_t)snprintf(buf + *len, n - *len, "{");
    for (int64_t i = 0; i < t->shape[d] && *len < n; i++) {
        if (i) *len += (size_t)snprintf(buf + *len, n - *len, ", ");
        put_literal(buf, n, len, t, d + 1, flat);
    }
    if (*len < n) *len += (size_t)snprintf(buf + *len, n - *len, "}");
}

/* Folds the held-back row of this line that made t from nothing but
   constants (a Lua table the check converted, tt.ones(...) written as its
   argument): returns that row, or NULL. */
static const pending *fold_constant(const tt_tensor *t)
{
    for (int i = 0; i < tr.npend; i++) {
        pending *p = &tr.pend[i];
        if (p->text || p->out.id != t->id || p->ev.ninputs != 0) continue;
        if (p->ev.op == TT_OP_RAND || p->ev.op == TT_OP_RANDN) return NULL;
        p->folded = 1;
        return p;
    }
    return NULL;
}

/* An operand as the row shows it: a small Lua table by its values, a
   larger one as table[shape], a constant as ones[shape], a tensor as
   label[shape]. */
static void describe_operand(char *buf, size_t n, const tt_tensor *t, const pending *made)
{
    char shp[192];
    tt_shape_str(t, shp, sizeof shp);
    size_t len = 0;
    if (made && made->ev.op == TT_OP_TENSOR && tt_numel(t) <= 8) {
        int64_t flat = 0;
        put_literal(buf, n, &len, t, 0, &flat);
    } else if (made && made->ev.op == TT_OP_TENSOR) {
        snprintf(buf, n, "table%s", shp);
    } else if (made) {
        snprintf(buf, n, "%s%s%s%s%s", tt_op_name(made->ev.op), shp, made->ev.args[0] ? " (" : "", made->ev.args,
                 made->ev.args[0] ? ")" : "");
    } else {
        snprintf(buf, n, "%.200s%s%s%s", t->label ? t->label : "", shp, t->dtype == TT_FLOAT32 ? "" : " ",
                 t->dtype == TT_FLOAT32 ? "" : tt_dtype_name(t->dtype));
    }
}

void ltt_trace_check(const char *fn, const tt_tensor *a, const tt_tensor *b, double rtol, double atol, int ok)
{
    if (!tr.wanted || tr.paused || tr.muted) return;
    if (tr.mode == LTT_TRACE_OFF) {      /* no row to show, but the report counts it */
        if (ok && strcmp(fn, "assert_close") == 0) ltt_report_count_check();
        return;
    }
    /* a check on a line that made no other row gets the line's header and
       its row all the same: every check shows, and the report counts it;
       only rows of its own line may fold into it */
    group g;
    locate_group(&g);
    int here = is_current(&g);
    const pending *ma = here ? fold_constant(a) : NULL, *mb = here ? fold_constant(b) : NULL;
    pending *p = new_row();
    char sa[512], sb[512], tol[96], rt[32], at[32];
    describe_operand(sa, sizeof sa, a, ma);
    describe_operand(sb, sizeof sb, b, mb);
    fmt_tol(rt, sizeof rt, rtol);
    fmt_tol(at, sizeof at, atol);
    if (rtol == 0 && atol == 0) snprintf(tol, sizeof tol, "exactly");
    else if (rtol == 0) snprintf(tol, sizeof tol, "atol %s", at);
    else if (atol == 0) snprintf(tol, sizeof tol, "rtol %s", rt);
    else snprintf(tol, sizeof tol, "rtol %s, atol %s", rt, at);
    size_t n = strlen(sa) + strlen(sb) + strlen(tol) + 64;
    if ((p->text = malloc(n)) == NULL) {
        tr.npend--;
        return;
    }
    if (strcmp(fn, "assert_close") == 0)
        snprintf(p->text, n, "\xe2\x9c\x93 checked   %s \xe2\x89\x88 %s (%s)", sa, sb, tol);
    else
        snprintf(p->text, n, "%-11s %s \xe2\x89\x88 %s (%s) -> %s", fn, sa, sb, tol, ok ? "true" : "false");
    tr.values_id = 0;
}

void ltt_trace_passed(const char *what)
{
    if (!tr.wanted || tr.paused || tr.muted) return;
    if (tr.mode == LTT_TRACE_OFF) {
        ltt_report_count_check();
        return;
    }
    pending *p = new_row();
    size_t n = strlen(what) + 8;
    if ((p->text = malloc(n)) == NULL) {
        tr.npend--;
        return;
    }
    snprintf(p->text, n, "\xe2\x9c\x93 %s", what);
    tr.values_id = 0;
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
    ltt_report_output(L, lua_toboolean(L, lua_upvalueindex(2)));
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
        lua_pushboolean(L, table != NULL);     /* io.write, not print */
        lua_pushcclosure(L, wrapped_print, 2);
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
    if (mode != LTT_TRACE_OFF || tr.json || ltt_report_active()) {
        tr.wanted = 1;
        update_sink();
        ltt_set_output_hook(ltt_trace_flush);
        wrap_global(L, NULL, "print");
        wrap_global(L, "io", "write");
    }
    return 1;
}

void ltt_trace_stop(void)
{
    flush_all(0);
    fold_reset();
    tr.wanted = 0;
    update_sink();
    ltt_set_output_hook(NULL);
    if (tr.json) fclose(tr.json);
    tr.json = NULL;
    while (tr.nsrcs > 0) drop_source(tr.nsrcs - 1);
    free_group(&tr.grp);
    free(tr.holders);
    tr.holders = NULL;
    tr.nholders = tr.holders_cap = 0;
}

/* ===== tt.trace ===== */

static int trace_section(lua_State *L)
{
    const char *title = luaL_checkstring(L, 1);
    flush_all(0);
    printf("\n=== %s ===\n", title);
    ltt_report_section(title);
    fflush(stdout);
    tr.output_since_header = 1;
    tt_flow_reset();
    return 0;
}

/* off/on nest: a helper that pauses the trace leaves an outer pause alone.
   Both return whether the trace was showing before the call. */
static int trace_off(lua_State *L)
{
    render_rows();                       /* not the groups: a loop that pauses still folds */
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

/* The row name of an op in a phase: "matmul", "grad matmul", "step adamw". */
static void phase_op_name(char *buf, size_t n, int phase, int op)
{
    static const char *const prefix[TT_PHASE_COUNT] = {"", "grad ", "step "};
    snprintf(buf, n, "%s%s", prefix[phase], tt_op_name((tt_op)op));
}

/* Per phase and op kind: calls, FLOPs, bytes moved, time and share of it,
   and the largest result; printed (the forward's rows, then the
   backward's "grad matmul" rows and the optimizer's "step adamw" rows,
   each phase with its total once a second phase ran), and returned as
   {name = {calls, flops, bytes, seconds, largest_bytes, largest_shape,
   phase}} so scripts can check them. {times = false} leaves the time
   columns out (for golden files); {print = false} only returns the table
   (a lesson measuring step by step). */
static int trace_summary(lua_State *L)
{
    const int opts = lua_istable(L, 1) ? 1 : 0;
    int times = ltt_optflag(L, opts, "trace.summary", "times", 1);
    const int print = ltt_optflag(L, opts, "trace.summary", "print", 1);
    if (getenv("TT_TRACE_NO_TIMES")) times = 0;
    flush_all(0);
    lua_newtable(L);                    /* returned: row name -> counters */
    int stats_idx = lua_gettop(L);
    int64_t total = 0, calls[TT_PHASE_COUNT] = {0};
    int phases_run = 0;
    for (int ph = 0; ph < TT_PHASE_COUNT; ph++) {
        for (int op = 1; op < TT_OP_COUNT; op++) {
            total += tt_trace_stats((tt_phase)ph, (tt_op)op)->ns;
            calls[ph] += tt_trace_stats((tt_phase)ph, (tt_op)op)->calls;
        }
        phases_run += calls[ph] > 0;
    }
    if (print) {
        ltt_report_printf("\n%-18s %6s %12s %12s", "op", "calls", "FLOPs", "bytes");
        if (times) ltt_report_printf(" %10s %6s", "time", "share");
        ltt_report_printf("  %s\n", "largest result");
    }
    for (int ph = 0, shown = 0; ph < TT_PHASE_COUNT; ph++) {
        tt_op_stats sum = {0};
        if (print && phases_run > 1 && calls[ph] > 0 && shown++) ltt_report_printf("\n");
        for (int op = 1; op < TT_OP_COUNT; op++) {
            const tt_op_stats *s = tt_trace_stats((tt_phase)ph, (tt_op)op);
            if (s->calls == 0) continue;
            sum.calls += s->calls;
            sum.flops += s->flops;
            sum.bytes += s->bytes;
            sum.ns += s->ns;
            char name[64], fl[32], by[32], big[160];
            phase_op_name(name, sizeof name, ph, op);
            tt_fmt_si(fl, sizeof fl, s->flops, 2, "FLOP");
            tt_fmt_si(by, sizeof by, s->bytes, 2, "B");
            if (s->max_bytes) {
                char mb[32];
                tt_fmt_si(mb, sizeof mb, (double)s->max_bytes, 2, "B");
                snprintf(big, sizeof big, "%s (%s)", s->max_shape, mb);
            } else {
                snprintf(big, sizeof big, ph == TT_PHASE_STEP || s->bytes > 0 ? "(no result)" : "(views only)");
            }
            if (print) {
                ltt_report_printf("%-18s %6lld %12s %12s", name, (long long)s->calls, s->flops ? fl : "-", by);
                if (times)
                    ltt_report_printf(" %8.3f ms %5.1f%%", (double)s->ns / 1e6, total ? 100.0 * (double)s->ns / (double)total : 0.0);
                ltt_report_printf("  %s\n", big);
            }
            lua_createtable(L, 0, 7);
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
            lua_pushstring(L, tt_phase_name((tt_phase)ph));
            lua_setfield(L, -2, "phase");
            lua_setfield(L, stats_idx, name);
        }
        if (print && phases_run > 1 && sum.calls > 0) {
            char name[32], fl[32], by[32];
            snprintf(name, sizeof name, "%s total", tt_phase_name((tt_phase)ph));
            tt_fmt_si(fl, sizeof fl, sum.flops, 2, "FLOP");
            tt_fmt_si(by, sizeof by, sum.bytes, 2, "B");
            ltt_report_printf("%-18s %6lld %12s %12s", name, (long long)sum.calls, sum.flops ? fl : "-", by);
            if (times)
                ltt_report_printf(" %8.3f ms %5.1f%%", (double)sum.ns / 1e6, total ? 100.0 * (double)sum.ns / (double)total : 0.0);
            ltt_report_printf("\n");
        }
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

/* tt.set_printoptions{precision = n}: digits after the point in printed
   tensors and in --trace=values (as PyTorch's; 4 by default). */
static int set_printoptions(lua_State *L)
{
    static const char *const known[] = {"precision", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    ltt_check_opts(L, 1, "set_printoptions", known);
    if (lua_getfield(L, 1, "precision") != LUA_TNIL) {
        int isint;
        lua_Integer p = lua_tointegerx(L, -1, &isint);
        if (!isint || p < 0 || p > TT_PRINT_PRECISION_MAX)
            return ltt_error(L, "set_printoptions: precision must be a whole number from 0 to %d, got %s",
                             TT_PRINT_PRECISION_MAX, luaL_tolstring(L, -1, NULL));
        tt_set_print_precision((int)p);
    }
    return 0;
}

void ltt_open_trace(lua_State *L)
{
    ltt_check(L, tt_flow_start());     /* tt.flow draws what ran since */
    luaL_newlib(L, tracelib);
    lua_setfield(L, -2, "trace");
    lua_pushcfunction(L, set_printoptions);
    lua_setfield(L, -2, "set_printoptions");
}
