/*
** lttlib.h — the parts of `tt`, as lualib.h lists Lua's libraries: each
** sets its fields in the table on top; linit.c calls them from one list.
** Rank 2 (lauxtt.h).
*/
#ifndef LTTLIB_H
#define LTTLIB_H

#include "lauxtt.h"

void ltt_open_tensor(lua_State *L);       /* ltensor.c: tt.Tensor, creation, ops, checks */
void ltt_open_nn(lua_State *L);           /* lnn.c: tt.nn */
void ltt_open_optim(lua_State *L);        /* loptim.c: tt.optim */
void ltt_open_trace(lua_State *L);        /* ltrace.c: tt.trace */
void ltt_open_figures(lua_State *L);      /* lfigures.c: tt.heatmap, tt.bars, tt.flow, tt.head_groups, tt.plot, tt.attend_figure */
void ltt_open_io(lua_State *L);           /* lio.c: tt.save, tt.load */
void ltt_open_gradcheck(lua_State *L);    /* lgradcheck.c: tt.gradcheck */

/* lfigures.c: the folder that takes the figures a script writes to
   "images/..." (--images DIR, TT_IMAGES); main.c has checked that it is a
   writable folder. Unset: the paths are written as they are. */
void ltt_figures_set_images(const char *dir);

/* The whole of `tt` (linit.c): for main.c and require "tt". */
int luaopen_tt(lua_State *L);

#endif
