/*
** ltrace.h — the trace of the `tt` Lua library (ltrace.c): what main.c
** starts and stops, and what the tensor functions tell it. Rank 2 (lauxtt.h).
*/
#ifndef LTRACE_H
#define LTRACE_H

#include "lauxtt.h"

typedef enum { LTT_TRACE_OFF, LTT_TRACE_SHAPES, LTT_TRACE_VALUES } ltt_trace_mode;
/* Starts tracing to stdout at `mode` and, when json_path != NULL, JSON
   Lines to that file. Returns 0 and an error in *err on failure. */
int ltt_trace_start(lua_State *L, ltt_trace_mode mode, const char *json_path, const char **err);
/* Prints the events still held back (call before any other output). */
void ltt_trace_flush(void);
void ltt_trace_stop(void);
/* While muted (nesting count), events are not shown (parameter init). */
void ltt_trace_mute(int on);
/* t was given its label (updates held-back events and tt.flow): rows
   showing an older tensor with that label mark it "(previous)", unless it
   is the same values (a detach() of t keeps t's label). */
void ltt_trace_label(const tt_tensor *t);
/* The row of a check that passed (fn "assert_close") or of allclose's
   answer ok, in place of the rows of its line that made its operands from
   constants (Lua tables, tt.ones...); on a line with no other row it gets
   the line's header. Call after comparing a and b. */
void ltt_trace_check(const char *fn, const tt_tensor *a, const tt_tensor *b, double rtol, double atol, int ok);
/* The row "✓ what" of another check that passed (tt.gradcheck), under its
   line like assert_close's, and counted by the report. */
void ltt_trace_passed(const char *what);
/* Registers source text for a chunk name ("=(command line)", stdin). */
void ltt_trace_source(const char *chunkname, const char *text);

#endif
