/*
** ltt.h — shared by the files of the `tt` Lua library (lua/): the tensor
** userdata, argument helpers, and the trace glue. Indices and dims are
** converted from Lua's 1-based (and negative) form here, once.
*/
#ifndef LTT_H
#define LTT_H

#include <lua.h>
#include <lauxlib.h>

#include "tt.h"

#define LTT_TENSOR "tt.Tensor"

/* A new empty tensor userdata (metatable set) on the stack; fill it with a
   core call, then ltt_check. Empty userdata are harmless to collect. */
tt_tensor *ltt_newtensor(lua_State *L);
/* The tensor at idx (argument error otherwise, "tensor was closed" for a
   closed one). Lua code run afterwards (an options table's __index, a
   finalizer run by any allocation) may close it: check t->storage again
   after such code, before reading its data. */
tt_tensor *ltt_checktensor(lua_State *L, int idx);
tt_tensor *ltt_totensor(lua_State *L, int idx);      /* NULL if not one */
/* The tensor at idx, closed or not; NULL if not one. */
tt_tensor *ltt_testtensor(lua_State *L, int idx);
/* The table on top becomes the tensor metatable (it stays on the stack). */
void ltt_register_tensor_mt(lua_State *L);
/* __gc and __close of a tensor. */
int ltt_tensor_gc(lua_State *L);
/* Each of in[0..n) (NULL entries skipped) must still be open. */
void ltt_check_open(lua_State *L, const char *op, int n, tt_tensor *const *in);
/* Around a core call that reads in[0..n): ltt_hold checks they are open and
   makes a close asked during the call wait; ltt_unhold applies such closes,
   then raises st's error if any. Nothing between the two may raise. */
void ltt_hold(lua_State *L, const char *op, int n, tt_tensor *const *in);
void ltt_unhold(lua_State *L, int n, tt_tensor *const *in, tt_status st);
#define LTT_LEN(a) ((int)(sizeof(a) / sizeof *(a)))
/* The core call `call` with the tensors of the array `in` held; raises its
   error. (The comma operator runs ltt_hold before the call.) */
#define LTT_CALL_HELD(L, op, in, call) (ltt_hold(L, op, LTT_LEN(in), in), ltt_unhold(L, LTT_LEN(in), in, (call)))
/* The integer value of the number at idx, as math.tointeger gives it (2.0
   is one, 1.5 and strings are not): 1 and *v set, or 0. */
int ltt_tointeger(lua_State *L, int idx, int64_t *v);
/* A string argument that must not hold a NUL byte; `what` names it in
   the error. */
const char *ltt_checkcstring(lua_State *L, int idx, const char *op, const char *what);
/* luaL_error with printf formats (%lld, %g); flushes the trace first. */
int ltt_error(lua_State *L, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Raises tt_errmsg() as a Lua error (with file:line) unless st == TT_OK. */
void ltt_check(lua_State *L, tt_status st);
/* A dim argument: 1-based integer, negative from the end, or a dim name.
   allow_end accepts ndim+1 (unsqueeze). Returns the 0-based dim. */
int ltt_checkdim(lua_State *L, int idx, const tt_tensor *t, int allow_end, const char *op);

/* Options table at idx (nil allowed): an unknown key is an error that lists
   the known ones (NULL-terminated), so a typo never passes silently. */
void ltt_check_opts(lua_State *L, int idx, const char *op, const char *const *known);
/* opts.name (opts: a table's stack index, or 0 for none) as 1 or 0, dflt
   when absent; anything but a boolean is an error (a string "no" would
   otherwise count as true). */
int ltt_optflag(lua_State *L, int opts, const char *op, const char *name, int dflt);

/* Trace (ltrace.c). */
typedef enum { LTT_TRACE_OFF, LTT_TRACE_SHAPES, LTT_TRACE_VALUES } ltt_trace_mode;
/* Starts tracing to stdout at `mode` and, when json_path != NULL, JSON
   Lines to that file. Returns 0 and an error in *err on failure. */
int ltt_trace_start(lua_State *L, ltt_trace_mode mode, const char *json_path, const char **err);
/* Prints the events still held back (call before any other output). */
void ltt_trace_flush(void);
void ltt_trace_stop(void);
/* While muted (nesting count), events are not shown (parameter init). */
void ltt_trace_mute(int on);
/* A label given to tensor id (updates held-back events and tt.flow). */
void ltt_trace_label(uint64_t id, const char *label);
/* The row of a check that passed (fn "assert_close") or of allclose's
   answer ok, in place of the rows that made its operands from constants
   (Lua tables, tt.ones...); only on a line that made rows. Call after comparing a and b. */
void ltt_trace_check(const char *fn, const tt_tensor *a, const tt_tensor *b, double rtol, double atol, int ok);
/* Registers source text for a chunk name ("=(command line)", stdin). */
void ltt_trace_source(const char *chunkname, const char *text);
void ltt_open_trace(lua_State *L);        /* sets tt.trace in the table on top */
void ltt_open_figures(lua_State *L);      /* tt.heatmap, tt.bars, tt.flow */
void ltt_open_tensor(lua_State *L);       /* ltensor.c */
void ltt_open_nn(lua_State *L);           /* lnn.c */

int luaopen_tt(lua_State *L);

/* Limits and sandbox (lsandbox.c). */
/* luaL_newstate whose allocator fails once the Lua heap plus the tensors in
   use would pass max_bytes (0 = no cap); Lua then raises "not enough memory". */
lua_State *ltt_newstate(int64_t max_bytes);
/* 1 (once) when an allocation was refused by that cap since the last call;
   msg (n bytes, may be NULL) then gets the message to show: the script line
   where known, what was being allocated, the cap and the option to raise it. */
int ltt_heap_cap_hit(char *msg, size_t n);
/* (Re)starts the clock and the instruction budget before running a chunk:
   past timeout seconds or max_instructions VM instructions (0 = none) the
   running Lua code raises an error that pcall cannot swallow for long. A
   watchdog thread ends the process (exit status 1, a message saying where
   the time went) when a C operation runs 25% (at least 1 s) past the
   timeout, and when code Lua runs without hooks (message handlers,
   __gc finalizers) goes on 1 s after a limit's error. */
void ltt_limits_start(lua_State *L, double timeout, long long max_instructions);
void ltt_limits_pause(lua_State *L);       /* between REPL chunks */
/* Call before lua_close: the finalizers it runs stay under the watchdog
   (at least 1 s more; in the REPL, one more timeout). */
void ltt_limits_exit(void);
void ltt_limits_done(void);               /* after lua_close: stops the watchdog thread */
/* --sandbox: removes os.execute, io.popen, package.loadlib, C modules,
   binary chunks and the debug library (but traceback); file writes only
   under images_dir, reads only under read_dir (and images_dir); realpath
   defeats "..", absolute paths and symlinks; a NUL byte in a name is an
   error. images_given: a missing images_dir is then an error rather than
   "no writes at all". Returns 0 and a message in *err on failure. */
int ltt_sandbox_open(lua_State *L, const char *images_dir, int images_given, const char *read_dir,
                     const char **err);
int ltt_sandbox_active(void);
/* The sandbox's write quota (0 = no cap), set before ltt_sandbox_open:
   bytes written (io writes, figure files) and distinct files written over
   the run. Past a cap the write raises an error naming --max-write or
   --max-files. */
#define LTT_DEFAULT_MAX_WRITE (256LL << 20)
#define LTT_DEFAULT_MAX_FILES 1000
void ltt_sandbox_set_quota(int64_t max_bytes, int64_t max_files);
/* With the sandbox on, raises a Lua error ("sandbox: cannot write 'p': ...")
   unless path may be written; returns 1 otherwise (always when off). Call it
   before opening any file for writing. */
int ltt_sandbox_check_write(lua_State *L, const char *path);
int ltt_sandbox_check_read(lua_State *L, const char *path);
/* After a figure was written to path: counts its bytes and the file against
   the quota; raises when that passes a cap (the file stays). */
void ltt_sandbox_wrote(lua_State *L, const char *path);

/* The report (lreport.c): --report FILE.html, one self-contained page of
   the run. Every call below does nothing while no report is open. */
/* Checks that path can be written (a temporary file in its folder is made
   and removed: the page itself is written at exit, tmp + rename); records
   the command line, the seed and the script (NULL for -e) for the header.
   Returns 0 and a reason in *err otherwise. */
int ltt_report_open(const char *path, int argc, char **argv, long long seed, const char *script, const char **err);
int ltt_report_active(void);
/* A trace group's header: the line, its source text, then each caller
   outwards (file NULL: the same file as the line). */
void ltt_report_group(const char *file, int line, const char *source);
void ltt_report_caller(const char *file, int line);
/* An event row of the open group, from the event's fields (labels as the
   text trace shows them); values: the --trace=values text or NULL. */
void ltt_report_row(const tt_event *ev, const char *values);
/* A row that is no event: a check (the trace's "✓ checked ..." row of
   assert_close, or allclose's answer). */
void ltt_report_check(const char *text);
void ltt_report_section(const char *title);
/* print (is_write 0) or io.write is about to run with its arguments at
   1..top: their text goes into the narrative, as they will write it.
   print's arguments are converted to strings in place (tostring runs once). */
void ltt_report_output(lua_State *L, int is_write);
/* printf to stdout; the text also goes into the narrative. */
int ltt_report_printf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* After a figure file was written: embedded where the script wrote it
   (PNG as a data: URI, SVG inline), with its title (NULL: the path). */
void ltt_report_figure(const char *path, const char *title);
/* From the message handler: the script line where the error was raised. */
void ltt_report_error_where(lua_State *L);
/* The script's error as shown on stderr (message, traceback). */
void ltt_report_error(const char *msg);
/* Writes the page; 0 (and a message on stderr) when it cannot. */
int ltt_report_finish(void);

#endif
