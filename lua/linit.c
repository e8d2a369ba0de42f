/*
** linit.c — assembles the `tt` table from its parts, as Lua's own linit.c
** opens the standard libraries from one list. luaopen_tt is what main.c
** and `require "tt"` (tt.so) call.
*/
#include <stdio.h>

#include "lauxtt.h"
#include "ltrace.h"
#include "lttlib.h"

/* Each part sets its fields in the table on top. */
static void (*const parts[])(lua_State *L) = {
    ltt_open_tensor,        /* ltensor.c: tt.Tensor, creation, ops, checks */
    ltt_open_nn,            /* lnn.c: tt.nn */
    ltt_open_optim,         /* loptim.c: tt.optim */
    ltt_open_trace,         /* ltrace.c: tt.trace */
    ltt_open_figures,       /* lfigures.c: tt.heatmap, tt.bars, tt.flow, tt.head_groups, tt.plot, tt.attend_figure */
    ltt_open_io,            /* lio.c: tt.save, tt.load */
    ltt_open_gradcheck,     /* lgradcheck.c: tt.gradcheck */
};

/* A name missing from tt or one of its libraries is nil, as in any table,
   and noted for the error that follows: tt.sofmax(x) says "did you mean
   tt.softmax?". */
static int missing(lua_State *L)
{
    ltt_note_missing(L, 1, lua_tostring(L, lua_upvalueindex(1)));
    return 0;
}

static void note_misses(lua_State *L, int table, const char *prefix)
{
    table = lua_absindex(L, table);
    lua_createtable(L, 0, 1);
    lua_pushstring(L, prefix);
    lua_pushcclosure(L, missing, 1);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, table);
}

int luaopen_tt(lua_State *L)
{
    static const char *const libraries[] = {"nn", "optim", "trace"};
    ltt_find_coroutines(L);
    lua_newtable(L);
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) parts[i](L);
    lua_pushliteral(L, TT_VERSION);
    lua_setfield(L, -2, "version");
    const int tt = lua_gettop(L);
    for (size_t i = 0; i < sizeof libraries / sizeof *libraries; i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "tt.%s.", libraries[i]);
        if (lua_getfield(L, -1, libraries[i]) == LUA_TTABLE && lua_getmetatable(L, -1) == 0) note_misses(L, -1, prefix);
        lua_settop(L, tt);
    }
    note_misses(L, -1, "tt.");
    return 1;
}
