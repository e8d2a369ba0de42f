/*
** lio.c — tt.save(path, tensors [, metadata]) and tt.load(path): tensors
** to and from safetensors files (core/ops/safetensors.c). Under --sandbox a
** file is written only inside the --images folder and read only where the
** sandbox allows; each file written counts against the write quota.
*/
#include <stdlib.h>
#include <string.h>

#include "ltt.h"

/* Keys of t (stack index) that are strings, in a private array: the
   names, and the tensors they map to (checked). Raw traversal: no
   metamethod of the script's runs while we collect. */
typedef struct save_list {
    int n, cap;
    const char **names;
    tt_tensor **tensors;
} save_list;

/* The list's memory lives in a userdata on the stack, so an error (a bad
   entry, out of memory) frees it with the rest of the call. */
static void grow(lua_State *L, save_list *s, int anchor)
{
    int cap = s->cap ? 2 * s->cap : 16;
    size_t each = sizeof *s->names + sizeof *s->tensors;
    if ((size_t)cap > (size_t)1 << 24) luaL_error(L, "save: too many tensors (at most %d)", 1 << 24);
    char *mem = lua_newuserdatauv(L, (size_t)cap * each, 0);
    const char **names = (const char **)mem;
    tt_tensor **tensors = (tt_tensor **)(mem + (size_t)cap * sizeof *names);
    if (s->n) {
        memcpy(names, s->names, (size_t)s->n * sizeof *names);
        memcpy(tensors, s->tensors, (size_t)s->n * sizeof *tensors);
    }
    lua_replace(L, anchor);
    s->names = names;
    s->tensors = tensors;
    s->cap = cap;
}

static void collect_strings(lua_State *L, int idx, const char *what, int anchor, const char ***out, int *count)
{
    /* key/value pairs of strings, for the metadata */
    int n = 0, cap = 0;
    const char **kv = NULL;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
            ltt_error(L, "save: %s must map strings to strings, got %s = %s", what,
                      luaL_typename(L, -2), luaL_typename(L, -1));
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            if (cap > 1 << 20) ltt_error(L, "save: too many %s entries", what);
            const char **g = lua_newuserdatauv(L, (size_t)cap * 2 * sizeof *g, 0);
            if (n) memcpy(g, kv, (size_t)n * 2 * sizeof *g);
            lua_replace(L, anchor);
            kv = g;
        }
        kv[2 * n] = lua_tostring(L, -2);
        kv[2 * n + 1] = lua_tostring(L, -1);   /* kept alive by the table */
        n++;
        lua_pop(L, 1);
    }
    *out = kv;
    *count = n;
}

static int l_save(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    int has_meta = !lua_isnoneornil(L, 3);
    if (has_meta) luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    lua_pushnil(L);                 /* 4: the list's memory */
    lua_pushnil(L);                 /* 5: the metadata's memory */
    save_list s = {0};
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            ltt_error(L, "save: tensors are saved by name: key %s is a %s; hint: {name = tensor, ...}",
                      lua_type(L, -2) == LUA_TNUMBER ? lua_tostring(L, -2) : "", luaL_typename(L, -2));
        tt_tensor *t = ltt_totensor(L, -1);
        if (!t)
            ltt_error(L, "save: '%s' is a %s, not a tensor", lua_tostring(L, -2),
                      ltt_istensor(L, -1) ? "closed tensor" : luaL_typename(L, -1));
        if (s.n == s.cap) grow(L, &s, 4);
        s.names[s.n] = lua_tostring(L, -2);
        s.tensors[s.n] = t;
        s.n++;
        lua_pop(L, 1);
    }
    const char **meta = NULL;
    int nmeta = 0;
    if (has_meta) collect_strings(L, 3, "metadata", 5, &meta, &nmeta);
    ltt_sandbox_check_write(L, path);
    /* the tensors stay held through the core call (a finalizer run by the
       memory cap's collection may close one) */
    ltt_hold(L, "save", s.n, s.tensors);
    ltt_unhold(L, s.n, s.tensors, tt_save(path, s.n, s.names, (const tt_tensor *const *)s.tensors, nmeta, meta));
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
    const char *path = luaL_checkstring(L, 1);
    ltt_sandbox_check_read(L, path);
    tt_loaded *f = lua_newuserdatauv(L, sizeof *f, 0);
    memset(f, 0, sizeof *f);
    lua_newtable(L);
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
