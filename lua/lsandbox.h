/*
** lsandbox.h — limits and sandbox of the interpreter (lsandbox.c): the
** capped heap, time and instruction limits, the watchdog, and the file
** rules of --sandbox. Rank 2 (lauxtt.h).
*/
#ifndef LSANDBOX_H
#define LSANDBOX_H

#include "lauxtt.h"

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
/* The file descriptor the watchdog writes its message to (2 unless set):
   --compare keeps it on the terminal while the script's stderr is captured. */
void ltt_limits_message_fd(int fd);
/* --sandbox: removes os.execute, io.popen, package.loadlib, C modules,
   binary chunks and the debug library (but traceback); file writes only
   under images_dir, reads only under read_dir (and images_dir); realpath
   defeats "..", absolute paths and symlinks; a NUL byte in a name is an
   error. images_given: a missing images_dir is then an error rather than
   "no writes at all". Returns 0 and a message in *err on failure. */
int ltt_sandbox_open(lua_State *L, const char *images_dir, int images_given, const char *read_dir,
                     const char **err);
/* --read DIR: a folder the sandboxed script may also read (e.g. the
   lessons/ a submission's dofile reaches), set before ltt_sandbox_open and
   kept by it. Returns 0 and a message in *err when DIR is not a folder. */
int ltt_sandbox_also_read(const char *dir, const char **err);
/* --sandbox --compare, after ltt_sandbox_open: the checked script own may
   read itself, the files data[0..ndata) (resolved paths: the data the
   reference declares) and the --read folder, never inputs[0..n) (the
   reference, the other submissions) nor a file modified at or after since
   (the grading's start: the reference's figures, another submission's
   output). own NULL ends this mode. */
struct timespec;
void ltt_sandbox_grading(const char *own, const char *const *inputs, int n, const char *const *data, int ndata,
                         const struct timespec *since);
/* Turns the sandbox's file rules off again (--compare: for the engine's
   own figure and JSON after a checked script ran under them). */
void ltt_sandbox_close(void);
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
/* With the sandbox on, raises unless path may be read; returns 1 otherwise. */
int ltt_sandbox_check_read(lua_State *L, const char *path);
/* After a figure was written to path: counts its bytes and the file against
   the quota; raises when that passes a cap (the file stays). */
void ltt_sandbox_wrote(lua_State *L, const char *path);
/* For the --report page, written at exit (no Lua state to raise on): the
   bytes --max-write still allows (-1: no cap, or no --sandbox), and the
   page's bytes counted once written. */
int64_t ltt_sandbox_write_room(void);
void ltt_sandbox_count_write(int64_t bytes);

#endif
