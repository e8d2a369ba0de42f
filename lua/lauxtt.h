/*
** lauxtt.h — the bottom of the `tt` Lua library (lua/), as lauxlib.h is
** Lua's: the tensor userdata (and the holds that keep it alive through a
** core call), argument checks, dims, options tables and errors. Indices and dims are converted from Lua's 1-based (and
** negative) form here, once.
**
** The files of lua/ depend downwards only (tests/layers.sh checks the
** includes; each file includes the headers of its own rank or below):
**
**   1  lauxtt                      (this file; calls nobody in lua/)
**   2  ltensor, lnn, loptim,       the parts of `tt` and the services of
**      lfigures, lio, lgradcheck,  the interpreter (ltrace.h, lsandbox.h,
**      ltrace, lsandbox, lreport   lreport.h, lttlib.h)
**   3  linit                       assembles `tt` from the parts (luaopen_tt)
**   4  main, lcompare, lexercise   the interpreter, its --compare and the
**                                 exercises (--exercise, --watch)
**
** A file below never calls one above: where it must (an error has to
** print the trace's held-back rows before its message), a file above
** registers a function with it (ltt_set_output_hook).
*/
#ifndef LAUXTT_H
#define LAUXTT_H

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

/* The userdata behind a tensor: its header, and how many core calls are
   reading it right now. Scripts can run in the middle of a binding (an
   options table's __index, a finalizer run by an allocation, the collection
   the memory cap triggers inside a core op), and such code may close a
   tensor the binding holds. A close asked while a core call holds the
   tensor waits for the call to end (hold/unhold below); any other close
   releases at once, and the binding checks its inputs again just before
   the core call. */
typedef struct ltensor {
    tt_tensor t;        /* first: the userdata's address is a tt_tensor * */
    int holds;          /* core calls in progress that read this tensor */
    int close_asked;    /* closed while held: release when the last hold ends */
} ltensor;

/* Raises tt_errmsg() as a Lua error (with file:line) unless st == TT_OK. */
void ltt_check(lua_State *L, tt_status st);
/* Out of line: the rare paths of the two below. */
void ltt_closed_during_call(lua_State *L, const char *op, int i);
void ltt_release_held(ltensor *u);

/* Each of in[0..n) (NULL entries skipped) must still be open: Lua code run
   since it was checked (a metamethod, a finalizer) may have closed it. */
static inline void ltt_check_open(lua_State *L, const char *op, int n, tt_tensor *const *in)
{
    for (int i = 0; i < n; i++)
        if (in[i] && in[i]->storage == NULL) ltt_closed_during_call(L, op, i);
}

/* Around a core call that reads in[0..n): ltt_hold checks they are open and
   makes a close asked during the call wait; ltt_unhold applies such closes,
   then raises st's error if any. Nothing between the two may raise. Inline:
   every op of every script passes here. */
static inline void ltt_hold(lua_State *L, const char *op, int n, tt_tensor *const *in)
{
    ltt_check_open(L, op, n, in);
    for (int i = 0; i < n; i++)
        if (in[i]) ((ltensor *)in[i])->holds++;
}

static inline void ltt_unhold(lua_State *L, int n, tt_tensor *const *in, tt_status st)
{
    for (int i = 0; i < n; i++) {
        ltensor *u = (ltensor *)in[i];
        if (u && --u->holds == 0 && u->close_asked) ltt_release_held(u);
    }
    if (st != TT_OK) ltt_check(L, st);
}

#define LTT_LEN(a) ((int)(sizeof(a) / sizeof *(a)))
/* The core call `call` with the tensors of the array `in` held; raises its
   error. (The comma operator runs ltt_hold before the call.) */
#define LTT_CALL_HELD(L, op, in, call) (ltt_hold(L, op, LTT_LEN(in), in), ltt_unhold(L, LTT_LEN(in), in, (call)))
/* The integer value of the number at idx, as math.tointeger gives it (2.0
   is one, 1.5 and strings are not): 1 and *v set, or 0. */
int ltt_tointeger(lua_State *L, int idx, int64_t *v);
/* The number at idx with its subtype: a Lua integer stays an exact
   integer (math.maxinteger included), a float is a float (2.0 too, as
   Python's 2.0 for PyTorch). */
tt_number ltt_number(lua_State *L, int idx);
/* A string argument that must not hold a NUL byte; `what` names it in
   the error. */
const char *ltt_checkcstring(lua_State *L, int idx, const char *op, const char *what);
/* luaL_error with printf formats (%lld, %g); runs the output hook first. */
int ltt_error(lua_State *L, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
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
/* The tensors of the Lua list at idx (read raw: no script code runs) in
   an array pushed as a userdata on the stack (collected with it); *n gets
   their count. An error names op and `what` when idx is no list of open
   tensors. */
tt_tensor **ltt_checktensorlist(lua_State *L, int idx, const char *op, const char *what, int *n);
/* opts.name as a number, dflt when absent; anything but a number is an
   error naming the option. */
double ltt_optnumber(lua_State *L, int opts, const char *op, const char *name, double dflt);

/* "did you mean": ltt_note_missing records that the key at stack index 2
   (an __index's key) is missing from the table at `table`, whose names the
   script writes after `prefix` ("" for a tensor's methods, "tt." for tt's
   functions). ltt_hint_misspelt gives msg, or, when msg is Lua's "a nil
   value (method 'sofmax')" (or field) for that key, msg with "; did you
   mean softmax?" pushed on the stack. */
void ltt_note_missing(lua_State *L, int table, const char *prefix);
const char *ltt_hint_misspelt(lua_State *L, const char *msg);

/* The output hook: the function that prints output held back (the trace's
   rows of the current line), run before anything else is printed out of
   turn: an error message (ltt_error), a limit's error, the report at exit.
   linit.c sets it to the trace's flush (ltt_trace_flush); NULL (the
   default) for none. */
void ltt_set_output_hook(void (*flush)(void));
/* Runs the output hook, if one is set. */
void ltt_flush_output(void);

/* The label hook: called by x:label(name) after the label is set, with
   the tensor and the Lua state whose script gave it (--compare keeps the
   labelled tensors this way); NULL (the default) for none. */
void ltt_set_label_hook(void (*hook)(lua_State *L, const tt_tensor *t));
/* The thread whose code runs while L's main thread waits in
   coroutine.resume (or a coroutine.wrap function): that coroutine, or the
   one it resumes, and so on; L when none. The trace takes a row's line from
   it. ltt_find_coroutines(L) first, once, with the standard libraries open. */
lua_State *ltt_running_thread(lua_State *L);
void ltt_find_coroutines(lua_State *L);
void ltt_label_hook(lua_State *L, const tt_tensor *t);

#endif
