/*
** linit.c — assembles the `tt` table from its parts, as Lua's own linit.c
** opens the standard libraries from one list. luaopen_tt is what main.c
** and `require "tt"` (tt.so) call.
*/
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

int luaopen_tt(lua_State *L)
{
    ltt_find_coroutines(L);
    lua_newtable(L);
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) parts[i](L);
    lua_pushliteral(L, TT_VERSION);
    lua_setfield(L, -2, "version");
    return 1;
}
