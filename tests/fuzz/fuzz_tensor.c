/*
** fuzz_tensor.c — libFuzzer harness for the nested-table parser of
** tt.tensor (and the operands of tt.allclose), driven through Lua. The
** input is a little stack program that builds a Lua value:
**   '{' push a new table       '}' pop a value and append it to the table below
**   'n' DIGITS push a number   '.' NaN   'i' inf   '-' -inf   'b' true  'f' false
**   's' a string   '_' nil   'L' DIGITS  give the table on top a __len
**   'E' give the table on top an __index that raises   'B' ask for dtype bool
** The bottom value goes to tt.tensor; a result is checked by round trip.
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>
#include <lualib.h>
#include <lauxlib.h>

#include "lauxtt.h"
#include "lsandbox.h"
#include "lttlib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static lua_State *L;

static int raiser(lua_State *l) { return luaL_error(l, "boom"); }
static int len_of(lua_State *l) { lua_pushvalue(l, lua_upvalueindex(1)); return 1; }

/* Runs in protected mode: builds the value, calls tt.tensor, checks it. */
static int run(lua_State *l)
{
    const uint8_t *d = lua_touserdata(l, 1);
    size_t n = (size_t)lua_tointeger(l, 2), i = 0;
    int want_bool = 0;
    lua_settop(l, 0);
    int base = 0;
    while (i < n) {
        uint8_t c = d[i++];
        long long v = 0;
        int digits = 0;
        if (c == 'n' || c == 'L') {
            int neg = i < n && d[i] == '-';
            if (neg) i++;
            while (i < n && d[i] >= '0' && d[i] <= '9' && digits < 18) { v = v * 10 + (d[i++] - '0'); digits++; }
            if (neg) v = -v;
        }
        if (lua_gettop(l) > 200) break;
        luaL_checkstack(l, 4, "fuzz");
        int pushed = 1;
        switch (c) {
        case '{': lua_newtable(l); pushed = 0; break;
        case '}':                        /* close the table on top into the one below */
            pushed = 0;
            if (lua_gettop(l) >= 2 && lua_istable(l, -2)) lua_rawseti(l, -2, (lua_Integer)lua_rawlen(l, -2) + 1);
            break;
        case 'n': lua_pushinteger(l, v); break;
        case '.': lua_pushnumber(l, NAN); break;
        case 'i': lua_pushnumber(l, INFINITY); break;
        case '-': lua_pushnumber(l, -INFINITY); break;
        case 'h': lua_pushnumber(l, 0.5); break;
        case 'b': lua_pushboolean(l, 1); break;
        case 'f': lua_pushboolean(l, 0); break;
        case 's': lua_pushliteral(l, "x"); break;
        case '_': lua_pushnil(l); break;
        case 'B': want_bool = 1; pushed = 0; break;
        case 'L':
            pushed = 0;
            if (lua_istable(l, -1)) {
                lua_createtable(l, 0, 1);
                lua_pushinteger(l, v);
                lua_pushcclosure(l, len_of, 1);
                lua_setfield(l, -2, "__len");
                lua_setmetatable(l, -2);
            }
            break;
        case 'E':
            pushed = 0;
            if (lua_istable(l, -1)) {
                lua_createtable(l, 0, 1);
                lua_pushcfunction(l, raiser);
                lua_setfield(l, -2, "__index");
                lua_setmetatable(l, -2);
            }
            break;
        default: pushed = 0; break;
        }
        /* a value inside a table literal becomes its next element */
        if (pushed && lua_gettop(l) >= 2 && lua_istable(l, -2)) lua_rawseti(l, -2, (lua_Integer)lua_rawlen(l, -2) + 1);
    }
    if (lua_gettop(l) == base) return 0;
    lua_settop(l, 1);
    lua_getglobal(l, "tt");
    lua_getfield(l, -1, "tensor");
    lua_pushvalue(l, 1);
    if (want_bool) lua_pushliteral(l, "bool");
    if (lua_pcall(l, want_bool ? 2 : 1, 1, 0) != LUA_OK) {
        if (lua_type(l, -1) != LUA_TSTRING) abort();   /* every error is a message */
        return 0;
    }
    tt_tensor *t = ltt_totensor(l, -1);
    if (t == NULL) abort();
    int64_t numel = tt_numel(t);
    /* round trip: totable gives a table of the same shape */
    lua_getfield(l, -1, "totable");
    lua_pushvalue(l, -2);
    lua_call(l, 1, 1);
    lua_getglobal(l, "tt");
    lua_getfield(l, -1, "tensor");
    lua_pushvalue(l, -3);
    if (want_bool) lua_pushliteral(l, "bool");
    if (lua_pcall(l, want_bool ? 2 : 1, 1, 0) == LUA_OK) {
        tt_tensor *u = ltt_totensor(l, -1);
        if (u == NULL || (numel > 0 && (u->ndim != t->ndim || tt_numel(u) != numel))) abort();
    }
    /* and tostring does not trip over it */
    luaL_tolstring(l, 3, NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2048) return 0;
    if (L == NULL) {
        L = ltt_newstate(64 << 20);        /* the interpreter's capped heap */
        luaL_openlibs(L);
        luaL_requiref(L, "tt", luaopen_tt, 1);
        lua_pop(L, 1);
        tt_set_max_memory(64 << 20);
    }
    lua_pushcfunction(L, run);
    lua_pushlightuserdata(L, (void *)data);
    lua_pushinteger(L, (lua_Integer)size);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
        if (lua_type(L, -1) != LUA_TSTRING) abort();
        lua_pop(L, 1);
    }
    lua_settop(L, 0);
    lua_gc(L, LUA_GCCOLLECT, 0);
    return 0;
}
