/*
** lio.c — tt.save(path, tensors [, metadata]) and tt.load(path): tensors
** to and from safetensors files (core/ops/safetensors.c), as Python's
** safetensors save_file / load_file. Under --sandbox a file is written
** only inside the --images folder and counts against the write quota; it
** is read only where the sandbox allows reads.
**
** The script's tables are read raw (lua_next, no __pairs or __index runs),
** and every key and value is copied into a private table first: a
** finalizer that empties the script's table during the call cannot free a
** name or a tensor we still point at.
*/
#include <string.h>

#include "lauxtt.h"
#include "lsandbox.h"
#include "lttlib.h"

/* More than any real checkpoint holds; past it the header alone would
   pass the 100 MB readers accept. */
#define MAX_TENSORS (1 << 20)

#define HINT_TENSORS "hint: tt.save(path, {name = tensor, ...} [, {key = \"value\", ...}])"

/* The key at -2 as shown in a message (not converted in place: lua_next
   still needs it): a number as written, anything else by its type. */
static const char *key_text(lua_State *L)
{
    if (lua_isinteger(L, -2)) return lua_pushfstring(L, "[%I]", lua_tointeger(L, -2));
    if (lua_type(L, -2) == LUA_TNUMBER) return lua_pushfstring(L, "[%f]", lua_tonumber(L, -2));
    return lua_pushfstring(L, "of type %s", luaL_typename(L, -2));
}

/* Copies the pairs of the table at idx into keep (a table at stack index
   keep: key, value, key, value, ... as pairs from + 1, from + 2, ...),
   checking each with check(L) while the key is at -2 and the value at -1.
   Returns how many pairs. */
static int collect(lua_State *L, int idx, int keep, int from, int max, void (*check)(lua_State *L))
{
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        check(L);
        if (n == max) {
            lua_pop(L, 2);
            ltt_error(L, "save: more than %d entries in one table; hint: split them over several files", max);
        }
        lua_pushvalue(L, -2);
        lua_rawseti(L, keep, 2 * (from + n) + 1);
        lua_rawseti(L, keep, 2 * (from + n) + 2);   /* pops the value */
        n++;
    }
    return n;
}

/* The key is a string without NUL bytes (a name in C and in the header). */
static void check_name(lua_State *L, const char *what, const char *hint)
{
    size_t len;
    if (lua_type(L, -2) != LUA_TSTRING) {
        const char *k = key_text(L);
        ltt_error(L, "save: %s key %s is not a string; hint: %s", what, k, hint);
    }
    const char *s = lua_tolstring(L, -2, &len);
    if (strlen(s) != len)
        ltt_error(L, "save: %s key '%s\\0...' contains a NUL byte (\\0); hint: names are C strings", what, s);
}

static void check_tensor_entry(lua_State *L)
{
    check_name(L, "tensor", "tensors are saved by name, {name = tensor, ...}");
    tt_tensor *t = ltt_testtensor(L, -1);
    if (t == NULL)
        ltt_error(L, "save: '%s' is a %s, not a tensor; " HINT_TENSORS, lua_tostring(L, -2),
                  luaL_typename(L, -1));
    if (t->storage == NULL)
        ltt_error(L, "save: tensor '%s' was closed; hint: save it before closing it", lua_tostring(L, -2));
}

static void check_meta_entry(lua_State *L)
{
    check_name(L, "metadata", "metadata maps strings to strings, {key = \"value\", ...}");
    size_t len;
    if (lua_type(L, -1) != LUA_TSTRING)
        ltt_error(L, "save: metadata '%s' is a %s, not a string; hint: metadata maps strings to strings "
                  "(tostring(x) for a number)", lua_tostring(L, -2), luaL_typename(L, -1));
    const char *v = lua_tolstring(L, -1, &len);
    if (strlen(v) != len)
        ltt_error(L, "save: metadata '%s' contains a NUL byte (\\0); hint: values are C strings",
                  lua_tostring(L, -2));
}

/* keep's pairs from `from` as C arrays: strings into s[], tensors into t[]
   (t NULL: both halves are strings, into s[2i] and s[2i+1]). The pointers
   live as long as keep. Allocates nothing. */
static void unpack(lua_State *L, int keep, int from, int n, const char **s, tt_tensor **t)
{
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, keep, 2 * (from + i) + 1);
        lua_rawgeti(L, keep, 2 * (from + i) + 2);
        if (t) {
            s[i] = lua_tostring(L, -2);
            t[i] = ltt_testtensor(L, -1);
        } else {
            s[2 * i] = lua_tostring(L, -2);
            s[2 * i + 1] = lua_tostring(L, -1);
        }
        lua_pop(L, 2);                          /* keep holds them */
    }
}

static int l_save(lua_State *L)
{
    const char *path = ltt_checkcstring(L, 1, "save", "the path");
    if (!lua_istable(L, 2))
        return ltt_error(L, "save: the tensors must be a table, got a %s; " HINT_TENSORS, luaL_typename(L, 2));
    int has_meta = !lua_isnoneornil(L, 3);
    if (has_meta && !lua_istable(L, 3))
        return ltt_error(L, "save: the metadata must be a table of strings, got a %s; " HINT_TENSORS,
                         luaL_typename(L, 3));
    lua_settop(L, 3);
    lua_newtable(L);                            /* 4: keep */
    int nmeta = has_meta ? collect(L, 3, 4, 0, MAX_TENSORS, check_meta_entry) : 0;
    int n = collect(L, 2, 4, nmeta, MAX_TENSORS, check_tensor_entry);
    ltt_sandbox_check_write(L, path);
    const char **names = lua_newuserdatauv(L, (size_t)(n + 2 * nmeta + 1) * sizeof *names, 0);
    tt_tensor **tensors = lua_newuserdatauv(L, (size_t)(n + 1) * sizeof *tensors, 0);
    const char **meta = names + n;
    unpack(L, 4, 0, nmeta, meta, NULL);
    unpack(L, 4, nmeta, n, names, tensors);
    /* a finalizer run by the allocations above may have closed one */
    for (int i = 0; i < n; i++)
        if (tensors[i]->storage == NULL)
            return ltt_error(L, "save: tensor '%s' was closed during the call (by a finalizer); "
                             "hint: keep it open until the save returns", names[i]);
    ltt_hold(L, "save", n, tensors);
    ltt_unhold(L, n, tensors, tt_save(path, n, names, (const tt_tensor *const *)tensors, nmeta, meta));
    ltt_sandbox_wrote(L, path);
    return 0;
}

/* The loaded file, freed by the garbage collector if anything below raises. */
static int loaded_gc(lua_State *L)
{
    tt_loaded_free(lua_touserdata(L, 1));
    return 0;
}

static int l_load(lua_State *L)
{
    const char *path = ltt_checkcstring(L, 1, "load", "the path");
    ltt_sandbox_check_read(L, path);
    tt_loaded *f = lua_newuserdatauv(L, sizeof *f, 0);
    memset(f, 0, sizeof *f);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, loaded_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    ltt_check(L, tt_load(f, path));
    lua_createtable(L, 0, f->n);
    for (int i = 0; i < f->n; i++) {
        tt_tensor *t = ltt_newtensor(L);
        *t = f->tensors[i];                     /* the reference moves to the userdata */
        memset(&f->tensors[i], 0, sizeof f->tensors[i]);
        lua_setfield(L, -2, f->names[i]);
    }
    lua_createtable(L, 0, f->nmeta);
    for (int i = 0; i < f->nmeta; i++) {
        lua_pushstring(L, f->meta[2 * i + 1]);
        lua_setfield(L, -2, f->meta[2 * i]);
    }
    return 2;
}

void ltt_open_io(lua_State *L)
{
    lua_pushcfunction(L, l_save);
    lua_setfield(L, -2, "save");
    lua_pushcfunction(L, l_load);
    lua_setfield(L, -2, "load");
}
