/*
** lcompare.c — tensortrace --compare: the compare engine's C side
** (--exercise, --exercises and --watch are lexercise.c's front end to it).
** Each learner's script, then the reference, run one after the other, each
** in a Lua state of its own with the seed reset and the same arguments, so
** the same tt.randn calls give the same inputs (and, while the engine runs,
** again on the other inputs the reference declares). While a script runs, a trace
** subscriber keeps the records of its ops (each op's inputs and output,
** shared, not copied) while the script can still reach them; x:label(name)
** then keeps the labelled tensor and the ops it was computed from, back to
** its inputs. For the reference it also records every op's ids and shapes
** (run.graph), so the engine sees what became of a tensor. Under --sandbox
** each checked script runs in a child process of its own. The comparison engine (compare.lua,
** built into the binary) gets both runs in a third state: it checks each
** checkpoint, replays the reference's ops with one mistake at a time to
** explain a mismatch, and prints the verdict.
*/
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lua.h>
#include <lualib.h>
#include <lauxlib.h>

#include "lauxtt.h"
#include "flow.h"
#include "lcompare.h"
#include "lreport.h"
#include "lsandbox.h"
#include "ltrace.h"
#include "lttlib.h"

#define PROGNAME "tensortrace"

/* The engine's source, from lua/compare.lua (the Makefile writes it out). */
extern const unsigned char ltt_compare_lua[];
extern const unsigned long ltt_compare_lua_len;

/* ===== The ops a script ran, while their tensors may still be labelled ===== */

/* Every op's record (its inputs and output, shared, not copied) stays while
   the script can still reach its output, or it is within CHAIN_NODES ops
   behind one it can reach: a label given long after the op, or after a
   loop of a thousand other ops, still finds the ops behind its tensor. A
   sweep drops the rest: a tensor that only the records hold (its storage's
   refcount is the records' own references) can no longer be labelled. If
   the records the script can reach pass KEPT_BYTES (or half the memory
   cap), the oldest go and the run says so (cap.dropped). */
#define KEPT_BYTES ((int64_t)256 << 20)
#define SWEEP_MIN 1024           /* records before the first sweep */
#define CHAIN_NODES 400          /* ops kept per label, back from its tensor */
#define GRAPH_OPS (1L << 18)     /* the reference's op graph (ids only), at most */
#define MAX_LABELS 10000         /* checkpoints kept of one run: a loop of labels cannot fill the engine */
#define MAX_ERROR 2000           /* bytes of a script's error message kept */

typedef struct kept {
    uint64_t id;                 /* the output's id */
    const char *op;
    char args[64];
    int nargs;                   /* the op's arguments as values, strings interned */
    tt_arg argv[TT_EVENT_MAX_ARGS];
    int has_scalar, scalar_first;
    double scalar;
    int nin;
    tt_tensor in[TT_TRACE_MAX_INPUTS];
    tt_tensor out;
    const char *file;            /* interned; NULL when no Lua line ran it */
    int line;
    int64_t bytes;
    int mark;                    /* a sweep's: kept (1 + depth behind a reachable tensor) */
} kept;

static struct {
    kept **recs;                 /* in the order the ops ran */
    long n, size;
    kept **index;                /* by output id, open addressing (index_n a power of 2) */
    long index_n;
    long sweep_at;
    int64_t bytes, budget;
    long dropped;                /* reachable records dropped past the budget */
    int failed;                  /* out of C memory: records stopped */
    lua_State *L;                /* the script running */
    lua_State *E;                /* the engine's state */
    int run;                     /* index in E of the running script's run table */
    int graph;                   /* record run.graph (the reference) */
    long labels;                 /* labels kept of the running script (at most MAX_LABELS) */
    long graph_n;
} cap;

static int64_t tensor_bytes(const tt_tensor *t)
{
    return tt_numel(t) * (int64_t)tt_dtype_size(t->dtype);
}

static void drop(kept *k)
{
    for (int i = 0; i < k->nin; i++) tt_tensor_release(&k->in[i]);
    tt_tensor_release(&k->out);
    cap.bytes -= k->bytes;
    free(k);
}

static unsigned long hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (unsigned long)x;
}

static kept *find_kept(uint64_t id)
{
    if (cap.index_n == 0) return NULL;
    for (unsigned long h = hash_u64(id);; h++) {
        kept *k = cap.index[h & (unsigned long)(cap.index_n - 1)];
        if (k == NULL) return NULL;
        if (k->id == id) return k;
    }
}

/* The index of recs[0..n), at most half full; 0 when out of memory. */
static int reindex(void)
{
    long want = 64;
    while (want < 2 * cap.n + 2) want *= 2;
    kept **index = calloc((size_t)want, sizeof *index);
    if (index == NULL) return 0;
    free(cap.index);
    cap.index = index;
    cap.index_n = want;
    for (long i = 0; i < cap.n; i++) {      /* a later op of the same id (in-place) wins */
        unsigned long h = hash_u64(cap.recs[i]->id);
        while (index[h & (unsigned long)(want - 1)] && index[h & (unsigned long)(want - 1)]->id != cap.recs[i]->id) h++;
        index[h & (unsigned long)(want - 1)] = cap.recs[i];
    }
    return 1;
}

/* The records' references to each storage, counted in a table of
   (storage, count) pairs by open addressing. */
typedef struct { const tt_storage *s; long count; } storage_refs;

static storage_refs *refs_slot(storage_refs *t, long n, const tt_storage *s)
{
    for (unsigned long h = hash_u64((uint64_t)(uintptr_t)s);; h++) {
        storage_refs *r = &t[h & (unsigned long)(n - 1)];
        if (r->s == NULL || r->s == s) return r;
    }
}

/* Keeps what the script can reach and the ops behind it; see above. */
static void sweep(void)
{
    long tn = 64;
    while (tn < 4 * (cap.n * (TT_TRACE_MAX_INPUTS + 1)) / 2) tn *= 2;
    storage_refs *refs = calloc((size_t)tn, sizeof *refs);
    kept **queue = malloc((size_t)(cap.n + 1) * sizeof *queue);
    if (refs == NULL || queue == NULL) {
        free(refs);
        free(queue);
        return;                     /* no sweep this time: everything stays */
    }
    for (long i = 0; i < cap.n; i++) {
        kept *k = cap.recs[i];
        k->mark = 0;
        if (k->out.storage) {
            storage_refs *r = refs_slot(refs, tn, k->out.storage);
            r->s = k->out.storage;
            r->count++;
        }
        for (int j = 0; j < k->nin; j++) {
            if (k->in[j].storage == NULL) continue;
            storage_refs *r = refs_slot(refs, tn, k->in[j].storage);
            r->s = k->in[j].storage;
            r->count++;
        }
    }
    /* the roots: outputs something besides the records holds (a Lua
       value, the engine's checkpoints, a gradient record) */
    long qn = 0;
    for (long i = 0; i < cap.n; i++) {
        kept *k = cap.recs[i];
        if (k->out.storage && k->out.storage->refcount > refs_slot(refs, tn, k->out.storage)->count) {
            k->mark = 1;
            queue[qn++] = k;
        }
    }
    /* breadth first, so each record gets its least depth behind a root */
    for (long qi = 0; qi < qn; qi++) {
        kept *k = queue[qi];
        if (k->mark > CHAIN_NODES) continue;
        for (int j = 0; j < k->nin; j++) {
            kept *in = find_kept(k->in[j].id);
            if (in && in->mark == 0) {
                in->mark = k->mark + 1;
                queue[qn++] = in;
            }
        }
    }
    free(refs);
    free(queue);
    long w = 0;
    for (long i = 0; i < cap.n; i++) {
        if (cap.recs[i]->mark) cap.recs[w++] = cap.recs[i];
        else drop(cap.recs[i]);
    }
    cap.n = w;
    /* over the budget with what the script can reach: the oldest go */
    long first = 0;
    while (cap.bytes > cap.budget && cap.n - first > 1) {
        drop(cap.recs[first++]);
        cap.dropped++;
    }
    if (first) {
        memmove(cap.recs, cap.recs + first, (size_t)(cap.n - first) * sizeof *cap.recs);
        cap.n -= first;
    }
    if (!reindex()) cap.failed = 1;
    cap.sweep_at = 2 * cap.n > SWEEP_MIN ? 2 * cap.n : SWEEP_MIN;
}

static void clear_kept(void)
{
    for (long i = 0; i < cap.n; i++) drop(cap.recs[i]);
    free(cap.recs);
    free(cap.index);
    cap.recs = cap.index = NULL;
    cap.n = cap.size = cap.index_n = 0;
    cap.bytes = 0;
}

/* The script line running now: the innermost Lua function with a line. */
static void where(lua_State *L, const char **file, int *line)
{
    lua_Debug ar;
    *file = NULL;
    *line = 0;
    for (int level = 0; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
        *file = tt_intern(ar.source[0] == '@' || ar.source[0] == '=' ? ar.source + 1 : ar.short_src);
        *line = ar.currentline;
        return;
    }
}

static void set_int(lua_State *E, const char *key, long long v);
static void set_str(lua_State *E, const char *key, const char *v);

/* An event's arguments for a record that outlives it: strings interned
   (an axis's name is a size's key). Returns how many were kept. */
static int keep_args(tt_arg *dst, const tt_event *ev)
{
    int n = 0;
    for (int i = 0; i < ev->nargs; i++) {
        tt_arg a = ev->argv[i];
        if (a.kind == TT_ARG_STR && (a.v.s = tt_intern(a.v.s)) == NULL) continue;
        if (a.kind == TT_ARG_SIZE && (a.key = tt_intern(a.key)) == NULL) continue;
        dst[n++] = a;
    }
    return n;
}

/* node.argv = {dim = 4, keepdim = true, sizes = {h = 8}, mask = {input = 4}}
   and node.argkeys = {"dim", "keepdim"}: the op's arguments as values, and
   their keys in the order the Lua call takes them (an einops call's sizes
   are one table, "sizes"); neither for an op without arguments (most of
   the reference's graph). */
static void push_argv(lua_State *E, int nargs, const tt_arg *argv)
{
    if (nargs == 0) return;
    lua_createtable(E, 0, nargs);
    lua_createtable(E, nargs, 0);
    int nkeys = 0, sizes = 0;
    for (int i = 0; i < nargs; i++) {
        const tt_arg *a = &argv[i];
        if (a->kind == TT_ARG_SIZE) {
            if (!sizes) {
                lua_createtable(E, 0, 4);
                lua_setfield(E, -3, "sizes");
                lua_pushstring(E, "sizes");
                lua_rawseti(E, -2, ++nkeys);
                sizes = 1;
            }
            lua_getfield(E, -2, "sizes");
            set_int(E, a->key, (long long)a->v.i);
            lua_pop(E, 1);
            continue;
        }
        switch (a->kind) {
        case TT_ARG_NUM: lua_pushnumber(E, a->v.f); break;
        case TT_ARG_BOOL: lua_pushboolean(E, (int)a->v.i); break;
        case TT_ARG_STR: lua_pushstring(E, a->v.s); break;
        case TT_ARG_DIMS:
            lua_createtable(E, a->n, 0);
            for (int d = 0; d < a->n; d++) {
                lua_pushinteger(E, a->v.dims[d]);
                lua_rawseti(E, -2, d + 1);
            }
            break;
        case TT_ARG_INPUT:
            lua_createtable(E, 0, 1);
            set_int(E, "input", (long long)a->v.i);
            break;
        default: lua_pushinteger(E, (lua_Integer)a->v.i); break;
        }
        lua_setfield(E, -3, a->key);
        lua_pushstring(E, a->key);
        lua_rawseti(E, -2, ++nkeys);
    }
    lua_setfield(E, -3, "argkeys");
    lua_setfield(E, -2, "argv");
}

/* run.graph[#+1] = {id, op, args, argv, argkeys, scalar, scalar_first, inputs = {{id,
   shape}...}}: the reference's every op, without its tensors, so that the
   engine sees what became of a tensor (a softmax after a detach()). */
static void graph_event(const tt_event *ev)
{
    lua_State *E = cap.E;
    if (cap.graph_n >= GRAPH_OPS || !lua_checkstack(E, 8)) return;
    lua_getfield(E, cap.run, "graph");
    lua_createtable(E, 0, 6);
    set_int(E, "id", (long long)ev->output->id);
    set_str(E, "op", ev->name);
    set_str(E, "args", ev->args);
    push_argv(E, ev->nargs, ev->argv);
    if (ev->has_scalar) {
        lua_pushnumber(E, ev->scalar);
        lua_setfield(E, -2, "scalar");
        lua_pushboolean(E, ev->scalar_first);
        lua_setfield(E, -2, "scalar_first");
    }
    int nin = ev->ninputs < TT_TRACE_MAX_INPUTS ? ev->ninputs : TT_TRACE_MAX_INPUTS;
    lua_createtable(E, nin, 0);
    for (int i = 0; i < nin; i++) {
        lua_createtable(E, 0, 2);
        set_int(E, "id", (long long)ev->inputs[i]->id);
        lua_createtable(E, ev->inputs[i]->ndim, 0);
        for (int d = 0; d < ev->inputs[i]->ndim; d++) {
            lua_pushinteger(E, (lua_Integer)ev->inputs[i]->shape[d]);
            lua_rawseti(E, -2, d + 1);
        }
        lua_setfield(E, -2, "shape");
        lua_rawseti(E, -2, i + 1);
    }
    lua_setfield(E, -2, "inputs");
    lua_rawseti(E, -2, ++cap.graph_n);
    lua_pop(E, 1);
}

static void keep_event(const tt_event *ev, void *ud)
{
    (void)ud;
    if (ev->phase != TT_PHASE_FORWARD || ev->output == NULL || cap.L == NULL) return;
    if (cap.graph) graph_event(ev);
    if (cap.failed) return;
    if (cap.n == cap.size) {
        long size = cap.size ? 2 * cap.size : SWEEP_MIN;
        kept **recs = realloc(cap.recs, (size_t)size * sizeof *recs);
        if (recs == NULL) { cap.failed = 1; return; }
        cap.recs = recs;
        cap.size = size;
    }
    kept *k = calloc(1, sizeof *k);
    if (k == NULL) { cap.failed = 1; return; }
    k->id = ev->output->id;
    k->op = ev->name;
    snprintf(k->args, sizeof k->args, "%s", ev->args);
    k->nargs = keep_args(k->argv, ev);
    k->has_scalar = ev->has_scalar;
    k->scalar_first = ev->scalar_first;
    k->scalar = ev->scalar;
    k->nin = ev->ninputs < TT_TRACE_MAX_INPUTS ? ev->ninputs : TT_TRACE_MAX_INPUTS;
    for (int i = 0; i < k->nin; i++) {
        tt_tensor_share(&k->in[i], ev->inputs[i]);
        k->bytes += tensor_bytes(ev->inputs[i]);
    }
    tt_tensor_share(&k->out, ev->output);
    k->bytes += tensor_bytes(ev->output);
    where(ltt_running_thread(cap.L), &k->file, &k->line);
    cap.bytes += k->bytes;
    cap.recs[cap.n++] = k;
    if (2 * cap.n + 2 > cap.index_n) {
        if (!reindex()) { cap.failed = 1; return; }
    } else {
        unsigned long h = hash_u64(k->id);
        while (cap.index[h & (unsigned long)(cap.index_n - 1)] && cap.index[h & (unsigned long)(cap.index_n - 1)]->id != k->id) h++;
        cap.index[h & (unsigned long)(cap.index_n - 1)] = k;
    }
    if (cap.n >= cap.sweep_at || cap.bytes > cap.budget) sweep();
}

/* ===== What a label keeps, in the engine's state ===== */

static void push_tensor(lua_State *E, const tt_tensor *t)
{
    tt_tensor *u = ltt_newtensor(E);
    tt_tensor_share(u, t);
}

static void set_str(lua_State *E, const char *key, const char *v)
{
    if (v == NULL) return;
    lua_pushstring(E, v);
    lua_setfield(E, -2, key);
}

static void set_int(lua_State *E, const char *key, long long v)
{
    lua_pushinteger(E, (lua_Integer)v);
    lua_setfield(E, -2, key);
}

/* nodes[id] = the op that made tensor id, then the ops of its inputs,
   depth first; *budget bounds the ops one label takes. */
static void keep_chain(lua_State *E, int nodes, uint64_t id, int *budget)
{
    if (*budget <= 0) return;
    lua_rawgeti(E, nodes, (lua_Integer)id);
    int known = !lua_isnil(E, -1);
    lua_pop(E, 1);
    if (known) return;
    const kept *k = find_kept(id);
    if (k == NULL) {
        if (cap.dropped) {              /* the op behind it may be one that went */
            lua_pushboolean(E, 1);
            lua_setfield(E, cap.run, "cut");
        }
        return;
    }
    --*budget;
    lua_createtable(E, 0, 10);
    set_int(E, "id", (long long)k->id);
    set_str(E, "op", k->op);
    set_str(E, "args", k->args);
    push_argv(E, k->nargs, k->argv);
    if (k->has_scalar) {
        lua_pushnumber(E, k->scalar);
        lua_setfield(E, -2, "scalar");
        lua_pushboolean(E, k->scalar_first);
        lua_setfield(E, -2, "scalar_first");
    }
    set_str(E, "file", k->file);
    set_int(E, "line", k->line);
    push_tensor(E, &k->out);
    lua_setfield(E, -2, "out");
    lua_createtable(E, k->nin, 0);
    for (int i = 0; i < k->nin; i++) {
        lua_createtable(E, 0, 2);
        set_int(E, "id", (long long)k->in[i].id);
        push_tensor(E, &k->in[i]);
        lua_setfield(E, -2, "t");
        lua_rawseti(E, -2, i + 1);
    }
    lua_setfield(E, -2, "inputs");
    lua_rawseti(E, nodes, (lua_Integer)id);
    uint64_t ids[TT_TRACE_MAX_INPUTS];
    for (int i = 0; i < k->nin; i++) ids[i] = k->in[i].id;
    for (int i = 0; i < k->nin; i++) keep_chain(E, nodes, ids[i], budget);
}

/* L is the running script's main thread or one of its coroutines. */
static int same_script(lua_State *L)
{
    if (L == cap.L) return 1;
    if (cap.L == NULL || !lua_checkstack(L, 1)) return 0;
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    int same = lua_tothread(L, -1) == cap.L;
    lua_pop(L, 1);
    return same;
}

/* x:label(name) in the running script: run.checkpoints gets {label, file,
   line, t, id}, run.nodes the ops behind it. */
static void keep_label(lua_State *L, const tt_tensor *t)
{
    lua_State *E = cap.E;
    if (E == NULL || t->label == NULL || !same_script(L)) return;
    if (cap.labels >= MAX_LABELS) return;     /* the verdict says it labelled more than REF */
    cap.labels++;
    if (!lua_checkstack(E, 12)) return;
    lua_Debug ar;
    const char *file = NULL;
    int line = 0;
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
        file = ar.source[0] == '@' || ar.source[0] == '=' ? ar.source + 1 : ar.short_src;
        line = ar.currentline;
    }
    lua_getfield(E, cap.run, "checkpoints");
    lua_createtable(E, 0, 5);
    set_str(E, "label", t->label);
    set_str(E, "file", file);
    set_int(E, "line", line);
    set_int(E, "id", (long long)t->id);
    push_tensor(E, t);
    lua_setfield(E, -2, "t");
    lua_rawseti(E, -2, (lua_Integer)luaL_len(E, -2) + 1);
    lua_pop(E, 1);
    lua_getfield(E, cap.run, "nodes");
    int budget = CHAIN_NODES;
    keep_chain(E, lua_gettop(E), t->id, &budget);
    lua_pop(E, 1);
}

/* ===== Running one script ===== */

/* A script's standard output and standard error go to one file while it
   runs, as 2>&1 would: they are its output, quoted under the verdict
   (run.output) with control characters shown, never mixed with the
   verdict's lines nor written raw to the teacher's terminal; print,
   io.write, io.stderr and warn are the ones of a normal run. */
#define OUTPUT_KEPT 4096
static struct { FILE *f; int saved[2]; } out_cap = { NULL, { -1, -1 } };

static void capture_start(void)
{
    fflush(stdout);
    fflush(stderr);
    out_cap.f = tmpfile();
    int ok = out_cap.f != NULL;
    for (int k = 0; k < 2; k++) {
        out_cap.saved[k] = ok ? dup(STDOUT_FILENO + k) : -1;
        ok = ok && out_cap.saved[k] >= 0 && dup2(fileno(out_cap.f), STDOUT_FILENO + k) >= 0;
    }
    if (!ok) {          /* as it was: the terminal */
        for (int k = 0; k < 2; k++)
            if (out_cap.saved[k] >= 0) {
                dup2(out_cap.saved[k], STDOUT_FILENO + k);
                close(out_cap.saved[k]);
                out_cap.saved[k] = -1;
            }
        if (out_cap.f) fclose(out_cap.f);
        out_cap.f = NULL;
        return;
    }
    ltt_limits_message_fd(out_cap.saved[1]);     /* the watchdog's word stays the teacher's */
}

/* Back to the terminal; run.output = the first OUTPUT_KEPT bytes,
   run.output_bytes = how many there were. */
static void capture_end(lua_State *E)
{
    if (out_cap.f == NULL) return;
    fflush(stdout);
    fflush(stderr);
    ltt_limits_message_fd(STDERR_FILENO);
    for (int k = 0; k < 2; k++) {
        dup2(out_cap.saved[k], STDOUT_FILENO + k);
        close(out_cap.saved[k]);
        out_cap.saved[k] = -1;
    }
    off_t total = lseek(fileno(out_cap.f), 0, SEEK_END);
    char buf[OUTPUT_KEPT];
    size_t got = 0;
    if (total > 0 && lseek(fileno(out_cap.f), 0, SEEK_SET) == 0) {
        ssize_t r = read(fileno(out_cap.f), buf, sizeof buf);
        got = r > 0 ? (size_t)r : 0;
    }
    fclose(out_cap.f);
    out_cap.f = NULL;
    if (got == 0) return;
    lua_pushlstring(E, buf, got);
    lua_setfield(E, cap.run, "output");
    set_int(E, "output_bytes", (long long)total);
}

static int msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
        lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
        return 1;
    }
    ltt_hint_misspelt(L, msg);   /* (pushes the message with its hint, if it has one) */
    return 1;
}

static void open_tt(lua_State *L)
{
    luaL_requiref(L, "tt", luaopen_tt, 1);
    lua_pop(L, 1);
}

/* Puts the checked script L under the sandbox: its folder for reads,
   o->images (or nowhere) for writes. 0 when it cannot, with the run's error
   set. */
static int sandbox_script(lua_State *L, const ltt_compare_opts *o, const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/'), *err = NULL;
    if (slash == NULL) snprintf(dir, sizeof dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    ltt_sandbox_set_quota(o->max_write >= 0 ? o->max_write : LTT_DEFAULT_MAX_WRITE,
                          o->max_files >= 0 ? o->max_files : LTT_DEFAULT_MAX_FILES);
    if (!ltt_sandbox_open(L, o->images ? o->images : "", o->images != NULL, dir, &err)) {
        lua_pushfstring(cap.E, "--sandbox: %s", err);
        lua_setfield(cap.E, cap.run, "error");
        return 0;
    }
    struct timespec since = { (time_t)(o->since_ns / 1000000000), (long)(o->since_ns % 1000000000) };
    ltt_sandbox_grading(path, o->inputs, o->ninputs, o->data, o->ndata, &since);
    return 1;
}

/* The script's global arg: its path at 0, then the arguments after "--". */
static void set_arg(lua_State *L, const ltt_compare_opts *o, const char *path)
{
    lua_createtable(L, o->nargs, 1);
    lua_pushstring(L, path);
    lua_rawseti(L, -2, 0);
    for (int i = 0; i < o->nargs; i++) {
        lua_pushstring(L, o->args[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setglobal(L, "arg");
}

/* The run's error: the message on top of L (the first MAX_ERROR bytes),
   and missing when the file could not be read. */
static void keep_error(lua_State *L, int status)
{
    lua_State *E = cap.E;
    char why[512];
    const char *msg = lua_tostring(L, -1);
    if (status == LUA_ERRMEM && ltt_heap_cap_hit(why, sizeof why)) msg = why;
    size_t len = msg ? strlen(msg) : 0;
    if (msg == NULL) lua_pushstring(E, "(error object is not a string)");
    else if (len <= MAX_ERROR) lua_pushstring(E, msg);
    else {
        lua_pushlstring(E, msg, MAX_ERROR);
        lua_pushfstring(E, "%s... (the first %d of %I bytes)", lua_tostring(E, -1), MAX_ERROR, (lua_Integer)len);
        lua_remove(E, -2);
    }
    lua_setfield(E, cap.run, "error");
    if (status == LUA_ERRFILE) {
        lua_pushboolean(E, 1);
        lua_setfield(E, cap.run, "missing");
    }
}

/* Runs path (or src, its text varied, when not NULL) with the run table
   at the top of E's stack; sets run.error
   (the message) when the script raises one, run.output to what it printed. */
static void run_script(const ltt_compare_opts *o, const char *path, int is_ref, const char *src)
{
    lua_State *E = cap.E;
    cap.run = lua_gettop(E);
    cap.graph = is_ref;
    cap.graph_n = 0;
    cap.sweep_at = SWEEP_MIN;
    cap.dropped = 0;
    cap.failed = 0;
    cap.labels = 0;
    cap.budget = o->max_memory > 0 && o->max_memory / 2 < KEPT_BYTES ? o->max_memory / 2 : KEPT_BYTES;
    tt_manual_seed((uint64_t)o->seed);
    lua_State *L = ltt_newstate(o->max_memory);
    if (L == NULL) {
        lua_pushstring(E, "cannot create a Lua state (out of memory)");
        lua_setfield(E, cap.run, "error");
        return;
    }
    luaL_openlibs(L);
    open_tt(L);
    const char *err = NULL;
    ltt_trace_start(L, LTT_TRACE_OFF, NULL, &err);
    if (o->sandbox && !is_ref && !sandbox_script(L, o, path)) {
        ltt_trace_stop();
        lua_close(L);
        return;
    }
    set_arg(L, o, path);

    cap.L = L;
    tt_trace_stats_reset();         /* nothing of one run reaches the next: tt.trace.summary, tt.flow, */
    tt_flow_reset();
    static int precision0 = -1;     /* tt.set_printoptions, tt.kernel_path: as when the check began */
    static char path0[16];
    if (precision0 < 0) {
        precision0 = tt_print_precision();
        snprintf(path0, sizeof path0, "%s", tt_kernel_path());
    }
    tt_set_print_precision(precision0);
    tt_set_kernel_path(path0);
    capture_start();
    tt_trace_subscribe(keep_event, NULL, 1);
    ltt_set_label_hook(keep_label);
    ltt_limits_start(L, o->timeout, o->max_instructions);
    lua_pushcfunction(L, msghandler);
    char chunkname[4200];
    snprintf(chunkname, sizeof chunkname, "@%s", path);        /* a varied text keeps the file's name and lines */
    int status = src ? luaL_loadbufferx(L, src, strlen(src), chunkname, "t") : luaL_loadfilex(L, path, "t");
    if (status == LUA_OK) {
        for (int i = 0; i < o->nargs; i++) lua_pushstring(L, o->args[i]);
        status = lua_pcall(L, o->nargs, 0, 1);
    }
    ltt_limits_pause(L);
    if (status != LUA_OK) keep_error(L, status);
    ltt_set_label_hook(NULL);
    tt_trace_unsubscribe(keep_event, NULL);
    capture_end(E);
    if (cap.dropped) {
        lua_pushinteger(E, (lua_Integer)cap.dropped);
        lua_setfield(E, cap.run, "dropped");
        lua_pushinteger(E, (lua_Integer)(cap.budget >> 20));
        lua_setfield(E, cap.run, "kept_mb");
    }
    clear_kept();
    cap.L = NULL;
    ltt_trace_stop();
    ltt_limits_exit();              /* its finalizers stay under the watchdog */
    lua_close(L);
    ltt_limits_done();              /* and the engine's work after it does not */
    ltt_sandbox_grading(NULL, NULL, 0, NULL, 0, NULL);
    ltt_sandbox_close();
}

/* A new run table {file, checkpoints = {}, nodes = {}} on E's stack. */
static void new_run(lua_State *E, const char *path)
{
    lua_createtable(E, 0, 4);
    set_str(E, "file", path);
    lua_newtable(E);
    lua_setfield(E, -2, "checkpoints");
    lua_newtable(E);
    lua_setfield(E, -2, "nodes");
    lua_newtable(E);
    lua_setfield(E, -2, "graph");
}

/* ===== The engine ===== */

/* The length of the valid UTF-8 sequence at s (1-4), 0 when it is not one. */
static int utf8_seq(const unsigned char *s)
{
    if (s[0] < 0x80) return 1;
    int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) return 0;   /* overlong, surrogate */
    if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))) return 0;   /* overlong, > U+10FFFF */
    return n;
}

/* s as a JSON string: valid UTF-8 whatever s holds (a stray byte is U+FFFD). */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    while (*s) {
        unsigned char c = (unsigned char)*s;
        int n = utf8_seq((const unsigned char *)s);
        if (n == 0) fputs("\\ufffd", f), n = 1;
        else if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
        else fwrite(s, 1, (size_t)n, f);
        s += n;
    }
    fputc('"', f);
}

/* The verdict of a script whose check gave none (its process died, or the
   engine failed on it): a line and a JSON line of its own. */
static void lost_verdict(const ltt_compare_opts *o, const char *file, const char *why)
{
    printf("%s: ✗ no verdict: %s\n", file, why);
    fflush(stdout);
    FILE *f = o->json ? fopen(o->json, "a") : NULL;
    if (f == NULL) return;
    fputs("{\"file\":", f);
    json_string(f, file);
    fputs(",\"match\":false,\"checkpoints\":[],\"error\":{\"kind\":\"no_verdict\",\"message\":", f);
    json_string(f, why);
    fputs("}}\n", f);
    fclose(f);
}

static int out_text(lua_State *E)
{
    const char *s = luaL_checkstring(E, 1);
    ltt_report_printf("%s", s);
    fflush(stdout);
    return 0;
}

static int engine_msghandler(lua_State *E)
{
    luaL_traceback(E, E, lua_tostring(E, 1), 1);
    return 1;
}

/* The whole text of a file, or NULL (lexercise.c reads the progress file
   with it too). */
char *ltt_read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) return NULL;
    size_t cap_n = 4096, len = 0;
    char *s = malloc(cap_n);
    size_t got;
    while (s && (got = fread(s + len, 1, cap_n - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap_n) {
            char *more = realloc(s, cap_n *= 2);
            if (more == NULL) { free(s); s = NULL; break; }
            s = more;
        }
    }
    fclose(f);
    if (s) s[len] = 0;
    return s;
}

static int engine_load(lua_State *E)
{
    return luaL_loadbufferx(E, (const char *)ltt_compare_lua, ltt_compare_lua_len, "=compare.lua", "t");
}

/* Pushes path's text with the variant spec applied ("N = 7, seed = 4":
   compare.lua's vary), or nil and why. */
static void push_varied(lua_State *E, const char *path, const char *spec)
{
    char *text = ltt_read_text(path);
    if (text == NULL || engine_load(E) != LUA_OK) {
        if (text) lua_pop(E, 1);
        lua_pushnil(E);
        lua_pushfstring(E, "cannot read '%s'", path);
    } else {
        lua_pushstring(E, text);
        lua_pushstring(E, spec);
        lua_createtable(E, 0, 1);
        set_str(E, "mode", "vary");
        if (lua_pcall(E, 3, 2, 0) != LUA_OK) {
            lua_pushnil(E);
            lua_insert(E, -2);                  /* nil, message: two values as the call gives */
        }
    }
    free(text);
}

/* Pushes the run of path (its text varied by spec, unless NULL): a run
   table, or {file, error} when the variant does not apply to it. */
static void push_run(lua_State *E, const ltt_compare_opts *o, const char *path, int is_ref, const char *spec)
{
    const char *src = NULL;
    if (spec) {
        push_varied(E, path, spec);
        src = lua_tostring(E, -2);
        if (src == NULL) {
            const char *why = lua_tostring(E, -1);
            lua_createtable(E, 0, 2);
            set_str(E, "file", path);
            lua_pushfstring(E, "--recheck '%s': %s", spec, why ? why : "?");
            lua_setfield(E, -2, "error");
            lua_replace(E, -3);
            lua_pop(E, 1);
            return;
        }
    }
    new_run(E, path);
    run_script(o, path, is_ref, src);
    if (spec) {
        lua_replace(E, -3);                     /* the run where the text was */
        lua_pop(E, 1);
    }
}

/* The engine's recheck(spec, path, is_ref): the run of path varied by spec
   (another size or seed), made while the engine runs; nil and why when the
   variant does not apply. */
static const ltt_compare_opts *engine_opts;
static int recheck_run(lua_State *E)
{
    const char *spec = luaL_checkstring(E, 1), *path = luaL_checkstring(E, 2);
    int is_ref = lua_toboolean(E, 3);
    const char *err = NULL;
    cap.E = E;
    push_run(E, engine_opts, path, is_ref, spec);
    cap.E = NULL;
    ltt_trace_start(E, LTT_TRACE_OFF, NULL, &err);   /* the engine's own ops again untraced */
    return 1;
}

static int compare_here(const ltt_compare_opts *o);
static int ref_failed;           /* the reference raised an error or labels nothing */

/* The verdicts of a batch, in words, for its summary line (a --sandbox
   child sends its own to the parent through the pipe). */
typedef struct { int graded, matched, failed, errors, timeouts, memory; } tally;
static tally batch;

/* Adds the engine's scores (at idx: {{outcome, ok, total}...}) to batch. */
static void count_outcomes(lua_State *E, int idx)
{
    if (!lua_istable(E, idx)) return;
    for (lua_Integer i = 1; lua_rawgeti(E, idx, i) == LUA_TTABLE; i++) {
        lua_getfield(E, -1, "outcome");
        const char *w = lua_tostring(E, -1);
        batch.graded++;
        if (w == NULL || strcmp(w, "fail") == 0) batch.failed++;
        else if (strcmp(w, "match") == 0) batch.matched++;
        else if (strcmp(w, "timeout") == 0 || strcmp(w, "instructions") == 0) batch.timeouts++;
        else if (strcmp(w, "memory") == 0) batch.memory++;
        else batch.errors++;
        lua_pop(E, 2);
    }
    lua_pop(E, 1);
}

static void print_tally(void)
{
    printf("graded %d: %d matched, %d failed, %d errors, %d timeouts, %d out of memory\n", batch.graded,
           batch.matched, batch.failed, batch.errors, batch.timeouts, batch.memory);
    fflush(stdout);
}

/* --sandbox: each script checked in a child of its own (see lcompare.h). */
static int compare_isolated(const ltt_compare_opts *o)
{
    const char *outs[2] = { o->json, o->csv };
    for (int k = 0; k < 2; k++) {
        FILE *f = outs[k] ? fopen(outs[k], "w") : NULL;     /* each child appends its verdict */
        if (outs[k] && f == NULL) {
            fprintf(stderr, PROGNAME ": cannot write '%s': %s\n", outs[k], strerror(errno));
            return 2;
        }
        if (f) fclose(f);
    }
    int code = 0;
    for (int i = 0; i < o->nmine; i++) {       /* whatever one does, the next is graded */
        int pfd[2];
        fflush(NULL);
        if (pipe(pfd) != 0) {
            fprintf(stderr, PROGNAME ": --sandbox: pipe: %s\n", strerror(errno));
            return 2;
        }
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, PROGNAME ": --sandbox: fork: %s\n", strerror(errno));
            close(pfd[0]);
            close(pfd[1]);
            return 2;
        }
        if (pid == 0) {
            close(pfd[0]);
            ltt_compare_opts one = *o;
            one.mine = o->mine + i;
            one.nmine = 1;
            one.one_line = o->nmine > 1;
            one.json_append = 1;
            if (i > 0) one.figure = NULL;        /* the figure is the first script's */
            memset(&batch, 0, sizeof batch);      /* this child's verdict only */
            int rc = compare_here(&one);
            ltt_limits_done();
            fflush(NULL);
            if (write(pfd[1], ref_failed ? "nref" : "done", 4) != 4 ||
                write(pfd[1], &batch, sizeof batch) != (ssize_t)sizeof batch) rc = 2;
            _exit(rc);
        }
        close(pfd[1]);
        /* the child's own limits end a runaway; this is for one they cannot
           reach (a stuck C call): the reference and the script, twice over */
        double limit = o->timeout > 0 ? 4 * o->timeout + 10 : -1;
        char buf[4 + sizeof(tally)];
        ssize_t got = 0;
        int killed = 0;
        struct pollfd p = { pfd[0], POLLIN, 0 };
        for (;;) {
            int r = poll(&p, 1, limit > 0 ? (int)(limit * 1000) : -1);
            if (r < 0 && errno == EINTR) continue;
            if (r == 0) {
                kill(pid, SIGKILL);
                killed = 1;
                break;
            }
            ssize_t n = read(pfd[0], buf + got, sizeof buf - (size_t)got);
            if (n < 0 && errno == EINTR) continue;
            if (n > 0 && (got += n) < (ssize_t)sizeof buf) continue;
            break;
        }
        close(pfd[0]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        if (got >= 4 && memcmp(buf, "nref", 4) == 0) return 2;   /* the reference failed: said once, no grades */
        int done = got == (ssize_t)sizeof buf && memcmp(buf, "done", 4) == 0;
        if (done && WIFEXITED(status)) {
            tally t;
            memcpy(&t, buf + 4, sizeof t);
            batch.graded += t.graded, batch.matched += t.matched, batch.failed += t.failed;
            batch.errors += t.errors, batch.timeouts += t.timeouts, batch.memory += t.memory;
            if (WEXITSTATUS(status) > code) code = WEXITSTATUS(status);
            continue;
        }
        /* it died before its verdict: this is its verdict */
        char why[160];
        if (killed) snprintf(why, sizeof why, "it ran past %g s and was stopped", limit);
        else if (WIFSIGNALED(status)) snprintf(why, sizeof why, "it was ended by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
        else snprintf(why, sizeof why, "the watchdog stopped it: a limit passed where Lua's hooks cannot stop it "
                      "(a __gc finalizer, a message handler, a long C call; its message is on stderr)");
        lost_verdict(o, o->mine[i], why);
        batch.graded++;
        if (killed) batch.timeouts++;
        else batch.errors++;
        if (code < 1) code = 1;
    }
    return code;
}

/* path resolved (its folder, when the file does not exist yet) into res. */
static int resolve(const char *path, char res[PATH_MAX])
{
    if (realpath(path, res)) return 1;
    char dir[PATH_MAX], tmp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1, slash ? path : ".");
    if (realpath(dir, tmp) == NULL) return 0;
    snprintf(res, PATH_MAX, "%.3000s/%.1000s", tmp, slash ? slash + 1 : path);
    return 1;
}

/* An output file of the check (--compare-json) may not be one of its
   inputs, nor lie under the folder the submissions may write (a later one
   would erase the grades). Says why and returns 0 when it is refused. */
static int output_allowed(const ltt_compare_opts *o, const char *option, const char *path)
{
    char res[PATH_MAX], in[PATH_MAX];
    if (path == NULL || !resolve(path, res)) return 1;       /* the open says why */
    for (int i = 0; i < o->ninputs; i++)
        if (realpath(o->inputs[i], in) && strcmp(in, res) == 0) {
            fprintf(stderr, PROGNAME ": %s '%s' is one of the scripts being checked; it would be overwritten\n", option, path);
            return 0;
        }
    size_t n;
    if (o->sandbox && o->images && realpath(o->images, in) && strncmp(res, in, n = strlen(in)) == 0 &&
        (res[n] == '/' || res[n] == 0)) {
        fprintf(stderr, PROGNAME ": %s '%s' is inside --images '%s', which the submissions may write; "
                "put it elsewhere\n", option, path, o->images);
        return 0;
    }
    return 1;
}

/* The data files REF declares above its marked line, "-- reads: lib/m.lua
   data/w.safetensors": each name found in REF's folder or the nearest
   folder above it that has it (an exercise's solution and its starter sit
   at different depths), resolved into got[]. Returns how many, or -1 with
   the message said when a name is found nowhere. */
#define MAX_DATA 16
static int declared_data(const char *ref, char got[MAX_DATA][PATH_MAX])
{
    FILE *f = fopen(ref, "r");
    if (f == NULL) return 0;            /* the run says why */
    char line[1024], dir[PATH_MAX];
    int n = 0;
    if (!resolve(ref, dir)) dir[0] = 0;
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    while (fgets(line, sizeof line, f) && strncmp(line, "-- ===== your code below", 24) != 0) {
        if (strncmp(line, "-- reads:", 9) != 0) continue;
        for (char *name = strtok(line + 9, " ,\t\r\n"); name; name = strtok(NULL, " ,\t\r\n")) {
            char at[PATH_MAX], try[2 * PATH_MAX];
            snprintf(at, sizeof at, "%s", dir);
            int found = 0;
            while (!found && at[0]) {
                snprintf(try, sizeof try, "%s/%s", at, name);
                found = n < MAX_DATA && realpath(try, got[n]) != NULL;
                char *up = strrchr(at, '/');
                if (up) *up = 0;
                else at[0] = 0;
            }
            if (!found) {
                fprintf(stderr, PROGNAME ": %s declares '%s' ('-- reads:'), which is %s\n", ref, name,
                        n < MAX_DATA ? "neither beside it nor in a folder above it" : "one file too many (16 at most)");
                fclose(f);
                return -1;
            }
            n++;
        }
    }
    fclose(f);
    return n;
}

int ltt_compare(const ltt_compare_opts *o)
{
    ltt_compare_opts c = *o;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    c.since_ns = (long long)now.tv_sec * 1000000000 + now.tv_nsec;
    /* a checked script reads none of the check's other files */
    const char **all = malloc((size_t)(o->nmine + 1) * sizeof *all);
    if (all == NULL) {
        fprintf(stderr, PROGNAME ": out of memory\n");
        return 2;
    }
    all[0] = o->ref;
    for (int i = 0; i < o->nmine; i++) all[i + 1] = o->mine[i];
    c.inputs = all;
    c.ninputs = o->nmine + 1;
    static char data[MAX_DATA][PATH_MAX];
    const char *data_ptr[MAX_DATA];
    int ndata = o->sandbox ? declared_data(o->ref, data) : 0;
    if (ndata < 0) {
        free(all);
        return 2;
    }
    for (int i = 0; i < ndata; i++) data_ptr[i] = data[i];
    c.data = data_ptr;
    c.ndata = ndata;
    memset(&batch, 0, sizeof batch);
    int code = !output_allowed(&c, "--compare-json", o->json) || !output_allowed(&c, "--compare-csv", o->csv) ? 2
             : o->sandbox ? compare_isolated(&c) : compare_here(&c);
    if (o->nmine > 1 && batch.graded > 0) print_tally();
    free(all);
    return code;
}

static int compare_here(const ltt_compare_opts *o)
{
    /* the engine's own heap: not the capped one the scripts share (a
       script's cap must not refuse the engine, nor the engine use it up) */
    lua_State *E = luaL_newstate();
    if (E == NULL) {
        fprintf(stderr, PROGNAME ": cannot create the Lua state (out of memory)\n");
        return 2;
    }
    luaL_openlibs(E);
    open_tt(E);
    cap.E = E;

    /* the scripts before the reference: nothing of its run (a global of
       the core, a file it writes) can reach theirs */
    lua_createtable(E, o->nmine, 0);
    int mines = lua_gettop(E);
    for (int i = 0; i < o->nmine; i++) {
        push_run(E, o, o->mine[i], 0, o->variant);
        lua_rawseti(E, mines, i + 1);
    }
    push_run(E, o, o->ref, 1, o->variant);
    int ref = lua_gettop(E);
    lua_getfield(E, ref, "error");
    lua_getfield(E, ref, "checkpoints");
    ref_failed = !lua_isnil(E, -2) || luaL_len(E, -1) == 0;
    lua_pop(E, 2);
    cap.E = NULL;

    if (o->report) {
        const char *why = NULL;
        if (!ltt_report_open(o->report, o->report_argc, o->report_argv, o->seed, o->nmine == 1 ? o->mine[0] : o->ref, &why)) {
            fprintf(stderr, PROGNAME ": cannot write the report '%s': %s\n", o->report, why);
            lua_close(E);
            return 2;
        }
    }
    const char *err = NULL;
    ltt_trace_start(E, LTT_TRACE_OFF, NULL, &err);

    lua_pushcfunction(E, engine_msghandler);
    int handler = lua_gettop(E);
    int status = luaL_loadbufferx(E, (const char *)ltt_compare_lua, ltt_compare_lua_len, "=compare.lua", "t");
    int code = 2;
    if (status == LUA_OK) {
        lua_pushvalue(E, ref);
        lua_pushvalue(E, mines);
        lua_createtable(E, 0, 8);
        lua_pushnumber(E, o->rtol);
        lua_setfield(E, -2, "rtol");
        lua_pushnumber(E, o->atol);
        lua_setfield(E, -2, "atol");
        set_str(E, "json", o->json);
        set_str(E, "figure", o->figure);
        set_str(E, "exercise", o->exercise);
        lua_pushboolean(E, o->report != NULL);
        lua_setfield(E, -2, "report");
        lua_pushboolean(E, o->one_line);
        lua_setfield(E, -2, "one_line");
        lua_pushboolean(E, o->json_append);
        lua_setfield(E, -2, "json_append");
        set_str(E, "csv", o->csv);
        set_str(E, "variant", o->variant);
        engine_opts = o;
        lua_pushcfunction(E, recheck_run);
        lua_setfield(E, -2, "recheck");
        lua_pushcfunction(E, out_text);
        lua_setfield(E, -2, "out");
        status = lua_pcall(E, 3, 4, handler);
    }
    if (status != LUA_OK) {
        /* the engine's own failure: said, and the batch goes on */
        fprintf(stderr, PROGNAME ": --compare: %s\n", lua_tostring(E, -1));
        for (int i = 0; i < o->nmine; i++) {
            lost_verdict(o, o->mine[i], "the checker failed on it (its message is on stderr)");
            batch.graded++;
            batch.errors++;
        }
    } else {
        code = (int)lua_tointeger(E, -4);
        if (o->report && lua_isstring(E, -2)) ltt_report_error(lua_tostring(E, -2));
        count_outcomes(E, lua_gettop(E));
        if (o->exercise && lua_istable(E, -3)) {
            lua_rawgeti(E, -3, 1);
            if (lua_isboolean(E, -1))
                ltt_progress_record(o->exercise, lua_toboolean(E, -1), lua_isstring(E, -3) ? lua_tostring(E, -3) : NULL);
            lua_pop(E, 1);
        }
    }
    ltt_trace_stop();
    lua_close(E);
    if (o->report && !ltt_report_finish() && code == 0) code = 1;
    return code;
}
