/*
** lauxtt.c — the bottom of the `tt` Lua library (lua/): the tensor
** userdata, argument checks, dims, options tables and errors. Every other
** file of lua/ builds on these; see lauxtt.h for the order of the files.
*/
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lauxtt.h"

/* Lua's collector sees a tensor as a small userdata and does not know of
   the buffer behind it, nor of the graph node a recorded op made, so big
   temporaries would pile up between cycles (as in Torch7, we track the
   heap ourselves): when tensor and graph memory doubles since the last
   full collection, run one. */
static int64_t gc_threshold = 16 << 20;

static int64_t c_memory(void) { return tt_memory_in_use() + tt_graph_memory_in_use(); }

static void collect(lua_State *L)
{
    lua_gc(L, LUA_GCCOLLECT);
    int64_t live = c_memory();
    gc_threshold = live > (8 << 20) ? 2 * live : 16 << 20;
}

static void reclaim(void *ud) { collect(ud); }


/* Every op checks its tensors and makes one, so both skip the lookup of
   "tt.Tensor" by name (a string hash and compare per call): the metatable
   sits in the registry under a light userdata key too, and its address is
   kept for a pointer compare. The address is only trusted for the state
   that made it (it is forgotten when that state closes); any other case
   takes luaL_testudata's way, which is always exact. The size check keeps
   out a foreign userdata given our metatable through debug.setmetatable. */
static const char tensor_mt_key;    /* registry[&tensor_mt_key] = the metatable */
static const void *tensor_mt;       /* its address, in the state that made it */
static const void *tensor_mt_state; /* that state's registry */

tt_tensor *ltt_testtensor(lua_State *L, int idx)
{
    void *p = lua_touserdata(L, idx);
    if (p == NULL) return NULL;
    if (tensor_mt != NULL && lua_getmetatable(L, idx)) {
        const void *mt = lua_topointer(L, -1);
        lua_pop(L, 1);
        if (mt == tensor_mt) return lua_rawlen(L, idx) == sizeof(ltensor) ? p : NULL;
    }
    p = luaL_testudata(L, idx, LTT_TENSOR);
    return p && lua_rawlen(L, idx) == sizeof(ltensor) ? p : NULL;
}

/* Finalizer of a registry sentinel: runs when the state closes. */
static int forget_mt(lua_State *L)
{
    if (tensor_mt_state == lua_topointer(L, LUA_REGISTRYINDEX)) tensor_mt = tensor_mt_state = NULL;
    return 0;
}

/* The table on top becomes the tensor metatable (it stays on the stack):
   kept in the registry under tensor_mt_key, its address remembered for
   this state, and the collector told to run when tensor memory grows. */
void ltt_register_tensor_mt(lua_State *L)
{
    tt_set_reclaim(reclaim, L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &tensor_mt_key);
    tensor_mt = lua_topointer(L, -1);
    tensor_mt_state = lua_topointer(L, LUA_REGISTRYINDEX);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &tensor_mt_state) == LUA_TNIL) {
        lua_newuserdatauv(L, 0, 0);      /* forgets tensor_mt when the state closes */
        lua_createtable(L, 0, 1);
        lua_pushcfunction(L, forget_mt);
        lua_setfield(L, -2, "__gc");
        lua_setmetatable(L, -2);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &tensor_mt_state);
    }
    lua_pop(L, 1);
}

tt_tensor *ltt_newtensor(lua_State *L)
{
    if (c_memory() > gc_threshold) collect(L);
    ltensor *u = lua_newuserdatauv(L, sizeof *u, 0);
    memset(u, 0, sizeof *u);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &tensor_mt_key);
    lua_setmetatable(L, -2);
    return &u->t;
}

tt_tensor *ltt_totensor(lua_State *L, int idx)
{
    tt_tensor *t = ltt_testtensor(L, idx);
    return t && t->storage ? t : NULL;
}

tt_tensor *ltt_checktensor(lua_State *L, int idx)
{
    tt_tensor *t = ltt_testtensor(L, idx);
    if (t == NULL) luaL_typeerror(L, idx, LTT_TENSOR);
    if (t->storage == NULL) luaL_argerror(L, idx, "tensor was closed");
    return t;
}
/* Each of in[0..n) (NULL entries skipped) must still be open: Lua code run
   since it was checked (a metamethod, a finalizer) may have closed it. */
void ltt_closed_during_call(lua_State *L, const char *op, int i)
{
    ltt_error(L, "%s: tensor was closed during the call (input %d, by a metamethod or a finalizer)", op, i + 1);
}

void ltt_release_held(ltensor *u)
{
    u->close_asked = 0;
    tt_tensor_release(&u->t);
}

static void (*output_hook)(void);      /* see lauxtt.h: the trace's flush, set by linit.c */

void ltt_set_output_hook(void (*flush)(void)) { output_hook = flush; }

void ltt_flush_output(void)
{
    if (output_hook) output_hook();
}

static void (*label_hook)(lua_State *L, const tt_tensor *t);

void ltt_set_label_hook(void (*hook)(lua_State *L, const tt_tensor *t)) { label_hook = hook; }

void ltt_label_hook(lua_State *L, const tt_tensor *t)
{
    if (label_hook) label_hook(L, t);
}

void ltt_check(lua_State *L, tt_status st)
{
    if (st != TT_OK) ltt_error(L, "%s", tt_errmsg());
}

int ltt_error(lua_State *L, const char *fmt, ...)
{
    char buf[1024];                 /* lua_pushfstring lacks %lld and %g */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ltt_flush_output();
    /* file:line of the nearest Lua caller: an op called by a C function
       (pcall, or string arithmetic trying the tensor's __pow) has none */
    lua_Debug ar;
    int level = 1;
    while (level < 8 && lua_getstack(L, level, &ar) && lua_getinfo(L, "l", &ar) && ar.currentline <= 0) level++;
    if (level == 8 || !lua_getstack(L, level, &ar)) level = 1;
    luaL_where(L, level);
    lua_pushstring(L, buf);
    lua_concat(L, 2);
    return lua_error(L);
}

/* The integer value of the number at idx, as math.tointeger gives it: 2 and
   2.0 (and 2^40) are integers, 1.5 and strings are not. */
int ltt_tointeger(lua_State *L, int idx, int64_t *v)
{
    int ok = 0;
    *v = lua_type(L, idx) == LUA_TNUMBER ? (int64_t)lua_tointegerx(L, idx, &ok) : 0;
    return ok;
}

tt_number ltt_number(lua_State *L, int idx)
{
    return lua_isinteger(L, idx) ? tt_num_i((int64_t)lua_tointeger(L, idx)) : tt_num_f((double)lua_tonumber(L, idx));
}

/* A string argument (or option) that must not hold a NUL byte: C would
   read only its first part, and a name, label or pattern cut short in
   silence is worse than an error. */
const char *ltt_checkcstring(lua_State *L, int idx, const char *op, const char *what)
{
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    if (s == NULL) return luaL_checklstring(L, idx, NULL);  /* raises the usual type error */
    if (strlen(s) != len) ltt_error(L, "%s: %s contains a NUL byte (\\0)", op, what);
    return s;
}

int ltt_checkdim(lua_State *L, int idx, const tt_tensor *t, int allow_end, const char *op)
{
    char shp[256];
    int n = t->ndim + (allow_end ? 1 : 0);
    int64_t d;
    if (!ltt_tointeger(L, idx, &d)) {           /* a number (the common case) is never a name */
        if (lua_type(L, idx) == LUA_TSTRING) {
            const char *name = tt_intern(ltt_checkcstring(L, idx, op, "dim name"));
            int found = -1, unnamed = 0;
            for (int i = 0; i < t->ndim; i++) {
                unnamed += t->names[i] == NULL;
                if (t->names[i] != name) continue;
                if (found >= 0)             /* core never builds this; never guess between them */
                    return ltt_error(L, "%s: dim name '%s' is ambiguous in %s (dims %d and %d)", op, name,
                                     tt_shape_str(t, shp, sizeof shp), found + 1, i + 1);
                found = i;
            }
            if (found >= 0) return found;
            return ltt_error(L, "%s: no dim named '%s' in %s%s", op, name, tt_shape_str(t, shp, sizeof shp),
                             unnamed ? "; hint: names that would repeat are dropped: name queries and keys "
                                       "apart, e.g. 'Nq' and 'Nk'" : "");
        }
        if (lua_type(L, idx) == LUA_TNUMBER)
            return ltt_error(L, "%s: dim must be an integer, got %s", op, lua_tostring(L, idx));
        return ltt_error(L, "%s: dim must be an integer or a dim name, got %s", op, luaL_typename(L, idx));
    }
    if (d >= 1 && d <= n) return (int)(d - 1);
    if (d < 0 && d >= -n) return (int)(d + n);
    if (d == 0 && n > 0)
        return ltt_error(L, "%s: dim 0 out of range for %s (expected 1..%d or -%d..-1; Lua counts dims from 1)",
                         op, tt_shape_str(t, shp, sizeof shp), n, n);
    if (n == 0)
        return ltt_error(L, "%s: dim %lld given but %s has no dims", op, (long long)d, tt_shape_str(t, shp, sizeof shp));
    return ltt_error(L, "%s: dim %lld out of range for %s (expected 1..%d or -%d..-1)", op, (long long)d,
                      tt_shape_str(t, shp, sizeof shp), n, n);
}

/* __gc and __close (safe twice, and on a closed tensor). The collector
   never finalizes a held tensor (a binding holds its inputs on its stack),
   so only a close asked by a script can be delayed. */
int ltt_tensor_gc(lua_State *L)
{
    ltensor *u = (ltensor *)ltt_testtensor(L, 1);
    if (u == NULL) return luaL_typeerror(L, 1, LTT_TENSOR);
    if (u->holds > 0) u->close_asked = 1;
    else tt_tensor_release(&u->t);
    return 0;
}

/* Options tables: unknown keys are errors (a typo must not pass silently). */
int ltt_optflag(lua_State *L, int opts, const char *op, const char *name, int dflt)
{
    if (!opts) return dflt;
    const int t = lua_getfield(L, opts, name);
    if (t != LUA_TNIL && t != LUA_TBOOLEAN)
        ltt_error(L, "%s: option '%s' must be true or false, not a %s", op, name, luaL_typename(L, -1));
    const int v = t == LUA_TNIL ? dflt : lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

tt_tensor **ltt_checktensorlist(lua_State *L, int idx, const char *op, const char *what, int *n)
{
    idx = lua_absindex(L, idx);
    if (!lua_istable(L, idx)) {
        const char *tn = luaL_getmetafield(L, idx, "__name") == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, idx);
        ltt_error(L, "%s: %s must be a list of tensors, got a %s; hint: m:parameters() lists a module's", op, what, tn);
    }
    lua_Unsigned len = lua_rawlen(L, idx);
    if (len > INT_MAX / sizeof(tt_tensor *)) ltt_error(L, "%s: %s is too long", op, what);
    tt_tensor **list = lua_newuserdatauv(L, (len ? len : 1) * sizeof *list, 0);
    for (lua_Unsigned i = 0; i < len; i++) {
        lua_rawgeti(L, idx, (lua_Integer)i + 1);
        list[i] = ltt_testtensor(L, -1);
        if (!list[i]) ltt_error(L, "%s: %s[%d] is a %s, not a tensor", op, what, (int)i + 1, luaL_typename(L, -1));
        if (!list[i]->storage) ltt_error(L, "%s: %s[%d] was closed", op, what, (int)i + 1);
        lua_pop(L, 1);              /* the list keeps it alive */
    }
    *n = (int)len;
    return list;
}

double ltt_optnumber(lua_State *L, int opts, const char *op, const char *name, double dflt)
{
    if (!opts) return dflt;
    const int t = lua_getfield(L, opts, name);
    if (t != LUA_TNIL && t != LUA_TNUMBER)
        ltt_error(L, "%s: option '%s' must be a number, not a %s", op, name, luaL_typename(L, -1));
    const double v = t == LUA_TNIL ? dflt : lua_tonumber(L, -1);
    lua_pop(L, 1);
    return v;
}

void ltt_check_opts(lua_State *L, int idx, const char *op, const char *const *known)
{
    if (lua_isnoneornil(L, idx)) return;
    luaL_checktype(L, idx, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING) ltt_error(L, "%s: option keys must be strings", op);
        const char *k = lua_tostring(L, -1);
        int ok = 0;
        for (int i = 0; known[i]; i++) ok |= strcmp(k, known[i]) == 0;
        if (!ok) {
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            for (int i = 0; known[i]; i++) {
                if (i) luaL_addstring(&b, ", ");
                luaL_addstring(&b, known[i]);
            }
            luaL_pushresult(&b);
            ltt_error(L, "%s: unknown option '%s' (options: %s)", op, k, lua_tostring(L, -1));
        }
    }
}

/* ===== The thread running the script's code ===== */

/* coroutine.resume's C function and the one of the functions
   coroutine.wrap makes: found once (ltt_find_coroutines) */
static lua_CFunction co_resume, co_wrapped;

void ltt_find_coroutines(lua_State *L)
{
    if (co_resume || !lua_checkstack(L, 4)) return;
    int top = lua_gettop(L);
    lua_getglobal(L, "coroutine");
    if (lua_istable(L, -1)) {
        lua_getfield(L, -1, "resume");
        lua_CFunction r = lua_tocfunction(L, -1);
        lua_getfield(L, -2, "wrap");
        lua_getglobal(L, "type");      /* any function will do: it is never run */
        if (r && lua_tocfunction(L, -2) && lua_pcall(L, 1, 1, 0) == LUA_OK) {
            co_wrapped = lua_tocfunction(L, -1);
            co_resume = r;
        }
    }
    lua_settop(L, top);
}

lua_State *ltt_running_thread(lua_State *L)
{
    for (int depth = 0; depth < 200 && L && co_resume; depth++) {   /* coroutines inside coroutines */
        lua_Debug ar;
        if (!lua_getstack(L, 0, &ar) || !lua_checkstack(L, 2) || !lua_getinfo(L, "f", &ar)) break;
        lua_CFunction f = lua_tocfunction(L, -1);
        lua_State *co = NULL;
        if (f == co_resume && lua_getlocal(L, &ar, 1)) {            /* coroutine.resume(co, ...) */
            co = lua_tothread(L, -1);
            lua_pop(L, 1);
        } else if (f == co_wrapped && lua_getupvalue(L, -1, 1)) {   /* its coroutine is its upvalue */
            co = lua_tothread(L, -1);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        if (co == NULL || co == L || lua_status(co) != LUA_OK) break;   /* a yielded one is not running */
        L = co;
    }
    return L;
}

/* ===== "did you mean": a misspelt method or tt function ===== */

/* The last name looked up and missing: in a tensor's methods (prefix "")
   or in one of tt's tables (prefix "tt.", "tt.nn."...). A registry table
   {name, in, prefix}; the message handler asks it about Lua's "a nil value
   (method 'sofmax')", which names no table. */
static const char missing_key = 0;

void ltt_note_missing(lua_State *L, int table, const char *prefix)
{
    if (lua_type(L, 2) != LUA_TSTRING) return;
    table = lua_absindex(L, table);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &missing_key) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, 0, 3);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &missing_key);
    }
    lua_pushvalue(L, 2);
    lua_setfield(L, -2, "name");
    lua_pushvalue(L, table);
    lua_setfield(L, -2, "in");
    lua_pushstring(L, prefix);
    lua_setfield(L, -2, "prefix");
    lua_pop(L, 1);
}

/* Edit distance of a and b (insert, delete, replace, swap two neighbours:
   "sofmax" and "sfotmax" are both one from "softmax"); names are short. */
static int edit_distance(const char *a, const char *b)
{
    enum { MAXN = 40 };
    size_t n = strlen(a), m = strlen(b);
    if (n >= MAXN || m >= MAXN) return INT_MAX;
    int d[MAXN + 1][MAXN + 1];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[n][m];
}

/* The key of the table on top nearest to name, within a third of its
   length (one edit at least, three at most), ties to the first in byte
   order; NULL when none is. The table is read raw: no script code runs. */
static const char *nearest_key(lua_State *L, const char *name)
{
    int most = (int)strlen(name) / 3, best = INT_MAX;
    const char *found = NULL;
    if (most < 1) most = 1;
    if (most > 3) most = 3;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING) continue;
        const char *k = lua_tostring(L, -1);
        int d = edit_distance(name, k);
        if (d <= most && (d < best || (d == best && strcmp(k, found) < 0))) {
            best = d;
            found = k;   /* (a key of the table: it outlives the loop) */
        }
    }
    return found;
}

const char *ltt_hint_misspelt(lua_State *L, const char *msg)
{
    const char *at = strstr(msg, "a nil value (method '");
    if (at == NULL) at = strstr(msg, "a nil value (field '");
    if (at == NULL) return msg;
    const char *name = strchr(at, '\'') + 1, *end = strchr(name, '\'');
    if (end == NULL || end[1] != ')') return msg;
    int top = lua_gettop(L);
    const char *hint = NULL;
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &missing_key) == LUA_TTABLE
        && lua_getfield(L, top + 1, "name") == LUA_TSTRING && lua_rawlen(L, -1) == (size_t)(end - name)
        && memcmp(lua_tostring(L, -1), name, (size_t)(end - name)) == 0
        && lua_getfield(L, top + 1, "in") == LUA_TTABLE)
        hint = nearest_key(L, lua_tostring(L, top + 2));
    if (hint) {
        lua_getfield(L, top + 1, "prefix");
        msg = lua_pushfstring(L, "%s; did you mean %s%s?", msg, lua_tostring(L, -1), hint);
        lua_replace(L, top + 1);
    }
    lua_settop(L, hint ? top + 1 : top);
    return msg;
}
