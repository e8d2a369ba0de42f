/*
** lsandbox.c — limits and the --sandbox mode of the interpreter: a capped
** Lua allocator, the timeout/instruction hook with a watchdog for long C
** operations, and the sandbox that takes away os/io escape hatches and
** confines file access (writes under --images, reads under the script's
** folder). Used by main.c; lfigures.c and lio.c check their files here.
*/
#if !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700       /* realpath */
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lua.h>
#include <lualib.h>
#include <lauxlib.h>

#include "lauxtt.h"
#include "lsandbox.h"
#include "figure.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* ===== The Lua heap cap ===== */

static struct {
    lua_Alloc f;
    void *ud;
    lua_State *L;               /* the main thread: the line of a refusal */
    int64_t used, cap;
    int hit;
    char why[512];              /* the last refusal, as the message to show */
} heap;

/* Words the refusal: the script line (when the stack may be read from
   inside the allocator), what was asked (Lua passes a new object's type in
   osize) and the budget. */
static void note_refusal(const void *ptr, size_t osize, size_t nsize)
{
    char where[256] = "", ask[32], old[32], cap[32], lua[32], tens[32], what[160];
#if LUA_VERSION_RELEASE_NUM <= 50404
    /* up to 5.4.4 the stack and its frames stay valid while Lua allocates
       (5.4.6 turns them into offsets while the stack is reallocated) */
    lua_Debug ar;
    for (int level = 0; heap.L && lua_getstack(heap.L, level, &ar); level++)
        if (lua_getinfo(heap.L, "Sl", &ar) && ar.currentline > 0) {
            snprintf(where, sizeof where, "%s:%d: ", ar.short_src, ar.currentline);
            break;
        }
#endif
    tt_fmt_bytes(ask, sizeof ask, (double)nsize);
    if (ptr) {
        tt_fmt_bytes(old, sizeof old, (double)osize);
        snprintf(what, sizeof what, "growing a Lua block (a table, string buffer or stack) from %s to %s", old, ask);
    } else {
        const char *kind = osize == LUA_TSTRING ? "a string" : osize == LUA_TTABLE ? "a table"
                         : osize == LUA_TUSERDATA ? "a userdata" : osize == LUA_TFUNCTION ? "a function"
                         : osize == LUA_TTHREAD ? "a coroutine" : "a Lua block";
        snprintf(what, sizeof what, "%s of %s", kind, ask);
    }
    tt_fmt_bytes(cap, sizeof cap, (double)heap.cap);
    tt_fmt_bytes(lua, sizeof lua, (double)heap.used);
    tt_fmt_bytes(tens, sizeof tens, (double)tt_memory_in_use());
    snprintf(heap.why, sizeof heap.why, "%snot enough memory: %s would pass the cap of %s "
             "(Lua data %s, tensors %s); hint: raise it with --max-memory", where, what, cap, lua, tens);
}

/* Growth beyond the cap fails (Lua then collects and raises "not enough
   memory"); shrinking never fails, as Lua requires. Tensors count too:
   their storage is outside the Lua heap but inside the same budget. */
static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    size_t old = ptr ? osize : 0;
    if (nsize > old && heap.cap > 0 &&
        (int64_t)(nsize - old) > heap.cap - heap.used - tt_memory_in_use()) {
        heap.hit = 1;
        note_refusal(ptr, osize, nsize);
        return NULL;
    }
    void *p = heap.f(heap.ud, ptr, osize, nsize);
    if (p != NULL || nsize == 0) heap.used += (int64_t)nsize - (int64_t)old;
    return p;
}

lua_State *ltt_newstate(int64_t max_bytes)
{
    lua_State *L = luaL_newstate();
    if (L == NULL) return NULL;
    heap.f = lua_getallocf(L, &heap.ud);
    heap.L = L;
    heap.used = (int64_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + lua_gc(L, LUA_GCCOUNTB, 0);
    heap.cap = max_bytes > 0 ? max_bytes : 0;
    heap.hit = 0;
    lua_setallocf(L, capped_alloc, NULL);
    return L;
}

int ltt_heap_cap_hit(char *msg, size_t n)
{
    int h = heap.hit;
    heap.hit = 0;
    if (h && msg && n) snprintf(msg, n, "%s", heap.why);
    return h;
}

/* ===== Timeout and instruction budget ===== */

#define HOOK_STEP 1000          /* VM instructions between two checks */
#define STOP_GRACE 1.0          /* seconds a limit error gets to unwind (handlers, finalizers) */

enum { LIMIT_TIME = 1, LIMIT_INSTR = 2 };

static struct {
    double timeout;             /* seconds; 0 = none */
    long long max_instr;        /* 0 = none */
    double deadline;            /* monotonic seconds */
    long long used;
    int fired;                  /* 0, or the limit whose error was raised */
} lim;

static double now_s(void) { return (double)tt_now_ns() * 1e-9; }

/* The figure being drawn, for the watchdog's message: set when a figure
   function checks its path, cleared once it has written or Lua code runs
   again (the hook). */
static struct {
    char path[PATH_MAX];
    atomic_int on;
} drawing;

/* Raises with the file:line of the running Lua function (level 0: a hook
   runs inside it, not in a call of its own). */
static int limit_error(lua_State *L, const char *what)
{
    lua_Debug ar;
    char where[256] = "";
    if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0)
        snprintf(where, sizeof where, "%s:%d: ", ar.short_src, ar.currentline);
    ltt_flush_output();
    lua_pushfstring(L, "%s%s", where, what);
    return lua_error(L);
}

/* The watchdog stops the process where the Lua hook cannot act: a single
   long C operation (a huge matmul), and Lua code that runs with hooks off
   (__gc finalizers, message handlers after a limit error, finalizers at
   exit). Its message says where the time went. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int started, quit;
    double hard;                /* monotonic seconds; 0 = disarmed */
    int fired;                  /* lim.fired, for this thread */
    int exiting;                /* lua_close is running the finalizers */
    double timeout;
    long long max_instr;
    int fd;                     /* where its message goes */
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .fd = 2};

void ltt_limits_message_fd(int fd)
{
    pthread_mutex_lock(&wd.mu);
    wd.fd = fd;
    pthread_mutex_unlock(&wd.mu);
}

/* In the watchdog thread, wd.mu held: says what ran, removes the written
   file's temporary, ends the process. */
static void hard_stop(void)
{
    char head[160], place[PATH_MAX + 64], msg[PATH_MAX + 320];
    const char *what = "file", *file = tt_file_in_progress(&what);
    if (wd.fired == LIMIT_INSTR)
        snprintf(head, sizeof head, "instruction limit: the script ran more than %lld Lua instructions "
                 "(--max-instructions)", wd.max_instr);
    else
        snprintf(head, sizeof head, "timeout: the script ran longer than %g s (--timeout)", wd.timeout);
    if (wd.exiting)
        snprintf(place, sizeof place, "in a __gc finalizer run at exit (finalizers run without Lua hooks)");
    else if (file)
        snprintf(place, sizeof place, "while writing the %s '%s'", what, file);
    else if (tt_op_running())
        snprintf(place, sizeof place, "inside a tensor operation");
    else if (atomic_load(&drawing.on))
        snprintf(place, sizeof place, "while drawing the figure '%s'", drawing.path);
    else if (wd.fired)
        snprintf(place, sizeof place, "in an error handler or __gc finalizer that ran on after the error "
                 "(Lua hooks are off there)");
    else
        snprintf(place, sizeof place, "in a __gc finalizer or a long or blocked Lua library call "
                 "(an open or read waiting on a FIFO, pipe or terminal, say; Lua hooks run in neither)");
    snprintf(msg, sizeof msg, "tensortrace: %s and was stopped %s\n", head, place);
    tt_file_stop_writes();
    if (ftrylockfile(stdout) == 0) {    /* the script's output so far, unless stdout is busy */
        fflush(stdout);
        funlockfile(stdout);
    }
    ssize_t r = write(wd.fd, msg, strlen(msg));
    (void)r;
    _exit(1);
}

static void *watchdog(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wd.mu);
    while (!wd.quit) {
        if (wd.hard <= 0) {
            pthread_cond_wait(&wd.cv, &wd.mu);
            continue;
        }
        double left = wd.hard - now_s();
        if (left <= 0) hard_stop();
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + left;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&wd.cv, &wd.mu, &ts);
    }
    pthread_mutex_unlock(&wd.mu);
    return NULL;
}

/* Starts the thread once; 0 when it cannot be started. */
static int watchdog_start(void)
{
    if (wd.started) return 1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_destroy(&wd.cv);
    pthread_cond_init(&wd.cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&wd.th, NULL, watchdog, NULL) != 0) return 0;
    wd.started = 1;
    return 1;
}

/* Sets the hard stop (0: none); the state the message reads is updated
   under the same lock. */
static void watchdog_set(double hard, int fired, int exiting)
{
    if (hard > 0 && !watchdog_start()) return;
    if (!wd.started) return;
    pthread_mutex_lock(&wd.mu);
    wd.hard = hard;
    wd.fired = fired;
    wd.exiting = exiting;
    wd.timeout = lim.timeout;
    wd.max_instr = lim.max_instr;
    pthread_cond_signal(&wd.cv);
    pthread_mutex_unlock(&wd.mu);
}

static double hard_now(void)
{
    double h = 0;
    pthread_mutex_lock(&wd.mu);
    if (wd.started) h = wd.hard;
    pthread_mutex_unlock(&wd.mu);
    return h;
}

static void limit_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lim.used += lua_gethookcount(L);
    atomic_store(&drawing.on, 0);           /* back in Lua code */
    char msg[160];
    int which;
    if (lim.timeout > 0 && now_s() > lim.deadline) {
        which = LIMIT_TIME;
        snprintf(msg, sizeof msg, "timeout: the script ran longer than %g s (--timeout)", lim.timeout);
    } else if (lim.max_instr > 0 && lim.used > lim.max_instr) {
        which = LIMIT_INSTR;
        snprintf(msg, sizeof msg, "instruction limit: the script ran more than %lld Lua instructions "
                 "(--max-instructions)", lim.max_instr);
    } else {
        return;
    }
    if (!lim.fired) {
        /* Lua runs message handlers and finalizers with hooks off: what
           runs there after this error only the watchdog can stop */
        lim.fired = which;
        double h = hard_now(), soon = now_s() + STOP_GRACE;
        watchdog_set(h > 0 && h < soon ? h : soon, which, 0);
    }
    /* From now on check at every instruction of this coroutine, so that a
       pcall in a loop cannot swallow the error forever. */
    lua_sethook(L, limit_hook, LUA_MASKCOUNT, 1);
    limit_error(L, msg);
}

void ltt_limits_start(lua_State *L, double timeout, long long max_instructions)
{
    lim.timeout = timeout > 0 ? timeout : 0;
    lim.max_instr = max_instructions > 0 ? max_instructions : 0;
    lim.used = 0;
    lim.fired = 0;
    lim.deadline = now_s() + lim.timeout;
    if (lim.timeout > 0 || lim.max_instr > 0) lua_sethook(L, limit_hook, LUA_MASKCOUNT, HOOK_STEP);
    else lua_sethook(L, NULL, 0, 0);
    double grace = lim.timeout * 0.25 < 1.0 ? 1.0 : lim.timeout * 0.25;
    watchdog_set(lim.timeout > 0 ? lim.deadline + grace : 0, 0, 0);
}

void ltt_limits_pause(lua_State *L)
{
    lua_sethook(L, NULL, 0, 0);
    watchdog_set(0, 0, 0);
}

void ltt_limits_exit(void)
{
    double h = hard_now(), soon = now_s() + STOP_GRACE;
    if (h > 0) watchdog_set(h > soon ? h : soon, lim.fired, 1);   /* at least STOP_GRACE to free */
    else if (lim.timeout > 0) watchdog_set(now_s() + lim.timeout, lim.fired, 1);   /* the REPL */
}

void ltt_limits_done(void)
{
    if (!wd.started) return;
    pthread_mutex_lock(&wd.mu);
    wd.quit = 1;
    pthread_cond_signal(&wd.cv);
    pthread_mutex_unlock(&wd.mu);
    pthread_join(wd.th, NULL);
    wd.started = wd.quit = 0;
}

/* ===== Sandbox: paths ===== */

static struct {
    int on;
    char images[PATH_MAX];      /* resolved; "" when the folder is missing */
    char images_arg[PATH_MAX];  /* as given, for messages */
    char root[PATH_MAX];        /* the script's folder, resolved */
} sbx;
static char also_read[PATH_MAX];    /* --read DIR, resolved; "" = none (kept across opens) */

/* --sandbox --compare: a submission reads its own file, the data files the
   reference declares and the --read folder, never another input of the
   check (a classmate's file, the reference) nor a file written since the
   grading began (the reference's figures, a classmate's output). Set after
   ltt_sandbox_open. */
static struct {
    int on;
    char own[PATH_MAX];
    char **deny;                /* resolved */
    int ndeny;
    const char *const *data;    /* resolved; the caller's */
    int ndata;
    struct timespec since;
} grading;

/* path is root or inside it (both resolved, no trailing slash but "/") */
static int is_under(const char *path, const char *root)
{
    size_t n = strlen(root);
    if (n == 0) return 0;
    if (n == 1 && root[0] == '/') return path[0] == '/';
    return strncmp(path, root, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* Splits path into its folder (resolved into dir) and last component.
   Returns 0 with errno set when the folder does not resolve. */
static int resolve_parent(const char *path, char *dir, const char **base)
{
    char tmp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        snprintf(tmp, sizeof tmp, ".");
        *base = path;
    } else {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof tmp) { errno = ENAMETOOLONG; return 0; }
        memcpy(tmp, path, n);
        tmp[n] = 0;
        if (n == 0) snprintf(tmp, sizeof tmp, "/");
        *base = slash + 1;
    }
    return realpath(tmp, dir) != NULL;
}

static int path_error(lua_State *L, const char *verb, const char *path, const char *why)
{
    return ltt_error(L, "sandbox: cannot %s '%s': %s", verb, path, why);
}

/* What a path that is no regular file is ("a FIFO"), NULL for a regular
   or missing file. Opening a FIFO waits for its other end, forever (only
   the watchdog would end it), and a folder or device is no file to read. */
static const char *not_regular(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode)) return NULL;
    return S_ISDIR(st.st_mode) ? "a folder" : S_ISFIFO(st.st_mode) ? "a FIFO"
         : S_ISCHR(st.st_mode) ? "a character device" : S_ISSOCK(st.st_mode) ? "a socket" : "a device";
}

/* Raises unless path may be written; full gets its resolved form. */
static void writable(lua_State *L, const char *path, char full[PATH_MAX])
{
    char dir[PATH_MAX], why[PATH_MAX + 128];
    const char *base;
    if (path == NULL || *path == 0) path_error(L, "write", "", "empty file name");
    if (strlen(path) >= PATH_MAX) path_error(L, "write", path, "the name is too long");
    if (sbx.images[0] == 0) {
        if (sbx.images_arg[0] == 0) snprintf(why, sizeof why, "no file may be written (--images DIR allows one folder)");
        else snprintf(why, sizeof why, "files may be written only under '%s', which does not exist", sbx.images_arg);
        path_error(L, "write", path, why);
    }
    if (!resolve_parent(path, dir, &base)) {
        if (errno == ENOENT) snprintf(why, sizeof why, "its folder does not exist");
        else snprintf(why, sizeof why, "%s", strerror(errno));
        path_error(L, "write", path, why);
    }
    if (*base == 0 || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        path_error(L, "write", path, "not a file name");
    if (!is_under(dir, sbx.images)) {
        snprintf(why, sizeof why, "files may be written only under '%s' (--images)", sbx.images_arg);
        path_error(L, "write", path, why);
    }
    struct stat st;
    if (snprintf(full, PATH_MAX, "%s/%s", dir, base) >= PATH_MAX)
        path_error(L, "write", path, "the path is too long");
    if (lstat(full, &st) == 0 && S_ISLNK(st.st_mode))
        path_error(L, "write", path, "it is a symbolic link");
    const char *kind = not_regular(full);
    if (kind) {
        snprintf(why, sizeof why, "not a regular file (%s); --sandbox writes regular files only", kind);
        path_error(L, "write", path, why);
    }
}


/* may_read under --compare, of the resolved path res. */
static int may_read_graded(const char *res, char *why, size_t n)
{
    if (strcmp(res, grading.own) == 0) return 1;
    for (int i = 0; i < grading.ndeny; i++)
        if (strcmp(res, grading.deny[i]) == 0) {
            snprintf(why, n, "it is another file of this check (the reference or another submission)");
            return 0;
        }
    struct stat st;
    if (stat(res, &st) == 0 && (st.st_mtim.tv_sec > grading.since.tv_sec ||
            (st.st_mtim.tv_sec == grading.since.tv_sec && st.st_mtim.tv_nsec >= grading.since.tv_nsec))) {
        snprintf(why, n, "it was written while the submissions are graded");
        return 0;
    }
    for (int i = 0; i < grading.ndata; i++)
        if (strcmp(res, grading.data[i]) == 0) return 1;
    if (also_read[0] && is_under(res, also_read)) return 1;
    snprintf(why, n, "a checked script reads only its own file, the data files the reference declares ('-- reads:')%s",
             also_read[0] ? " and the --read folder" : "; hint: --read DIR allows one more folder");
    return 0;
}

void ltt_sandbox_grading(const char *own, const char *const *inputs, int n, const char *const *data, int ndata,
                         const struct timespec *since)
{
    for (int i = 0; i < grading.ndeny; i++) free(grading.deny[i]);
    free(grading.deny);
    memset(&grading, 0, sizeof grading);
    if (own == NULL) return;
    grading.on = 1;
    if (realpath(own, grading.own) == NULL) grading.own[0] = 0;
    grading.since = *since;
    grading.data = data;
    grading.ndata = ndata;
    grading.deny = calloc((size_t)n + 1, sizeof *grading.deny);
    for (int i = 0; grading.deny && i < n; i++) {
        char res[PATH_MAX];
        if (realpath(inputs[i], res) && strcmp(res, grading.own) != 0 && (grading.deny[grading.ndeny] = strdup(res)))
            grading.ndeny++;
    }
}

/* 1 when path may be read: it resolves under the script's folder or the
   images folder; a missing file is judged by its folder (the open then
   fails as usual). */
static int may_read(const char *path, char *why, size_t n)
{
    char res[PATH_MAX];
    const char *base;
    if (strlen(path) >= PATH_MAX) { snprintf(why, n, "the name is too long"); return 0; }
    if (realpath(path, res) == NULL && !resolve_parent(path, res, &base)) return 1;   /* cannot be opened */
    if (grading.on) return may_read_graded(res, why, n);
    if (is_under(res, sbx.root) || (sbx.images[0] && is_under(res, sbx.images))
        || (also_read[0] && is_under(res, also_read))) return 1;
    snprintf(why, n, also_read[0] ? "files may be read only under the script's folder and the --read folder"
                                  : "files may be read only under the script's folder; hint: --read DIR allows one more");
    return 0;
}

int ltt_sandbox_check_read(lua_State *L, const char *path)
{
    char why[256];
    if (!sbx.on) return 1;
    if (!may_read(path, why, sizeof why)) return path_error(L, "read", path, why);
    const char *kind = not_regular(path);
    if (kind) {
        snprintf(why, sizeof why, "not a regular file (%s); --sandbox reads regular files only", kind);
        return path_error(L, "read", path, why);
    }
    return 1;
}

/* A file name argument: strings and numbers (which the originals accept
   too, as "123"), converted in place so the original sees what we checked;
   NULL for other types. A NUL byte would cut the name short in C: refused. */
static const char *name_arg(lua_State *L, int idx, const char *verb)
{
    if (lua_type(L, idx) != LUA_TSTRING && lua_type(L, idx) != LUA_TNUMBER) return NULL;
    size_t len;
    const char *name = lua_tolstring(L, idx, &len);
    if (strlen(name) != len) {
        const char *shown = lua_pushfstring(L, "%s\\0%s", name, name + strlen(name) + 1);
        path_error(L, verb, shown, "the name contains a NUL byte");
    }
    return name;
}

/* ===== Sandbox: the write quota =====
   Bytes written (io writes, figure files, holes made by seeking past the
   end) and files written (each path counted once: opened for writing or
   written as a figure), over the whole run. */

static struct {
    int64_t max_bytes, max_files;   /* 0 = no cap */
    int64_t bytes, files;
} quota = {.max_bytes = LTT_DEFAULT_MAX_WRITE, .max_files = LTT_DEFAULT_MAX_FILES};

void ltt_sandbox_set_quota(int64_t max_bytes, int64_t max_files)
{
    quota.max_bytes = max_bytes > 0 ? max_bytes : 0;
    quota.max_files = max_files > 0 ? max_files : 0;
}

static int bytes_error(lua_State *L, const char *path, int64_t more)
{
    char cap[32], done[32], add[32];
    tt_fmt_bytes(cap, sizeof cap, (double)quota.max_bytes);
    tt_fmt_bytes(done, sizeof done, (double)quota.bytes);
    tt_fmt_bytes(add, sizeof add, (double)more);
    return ltt_error(L, "sandbox: write quota: %s%s%s%s would pass the cap of %s on bytes written "
                     "(%s so far); hint: raise it with --max-write SIZE", more > 0 ? "writing " : "",
                     more > 0 ? add : "", path ? (more > 0 ? " to " : "writing ") : "", path ? path : "", cap, done);
}

static int files_error(lua_State *L, const char *path)
{
    return ltt_error(L, "sandbox: file quota: writing '%s' would pass the cap of %lld files written "
                     "(--max-files); hint: raise it with --max-files N", path, (long long)quota.max_files);
}

/* The set of files written, in the registry, keyed by resolved path. */
static int written_before(lua_State *L, const char *full)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &quota) != LUA_TTABLE) {
        lua_pop(L, 1);
        return 0;
    }
    int seen = lua_getfield(L, -1, full) != LUA_TNIL;
    lua_pop(L, 2);
    return seen;
}

static void note_written(lua_State *L, const char *full)
{
    if (written_before(L, full)) return;
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &quota) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &quota);
    }
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, full);
    lua_pop(L, 1);
    quota.files++;
}

/* Before opening path (resolved: full) for writing or writing a figure to
   it: raises when a cap is already reached. */
static void check_quota(lua_State *L, const char *path, const char *full)
{
    if (quota.max_bytes > 0 && quota.bytes >= quota.max_bytes) bytes_error(L, path, 0);
    if (quota.max_files > 0 && quota.files >= quota.max_files && !written_before(L, full))
        files_error(L, path);
}

/* A name that came from the stack (luaL_checkstring gives the string's own
   bytes, so the pointer finds it): refused when a NUL byte cut it short. */
static void check_not_cut(lua_State *L, const char *path)
{
    for (int i = 1, top = lua_gettop(L); i <= top; i++)
        if (lua_type(L, i) == LUA_TSTRING && lua_tostring(L, i) == path) {
            name_arg(L, i, "write");
            return;
        }
}

int ltt_sandbox_check_write(lua_State *L, const char *path)
{
    char full[PATH_MAX];
    atomic_store(&drawing.on, 0);
    snprintf(drawing.path, sizeof drawing.path, "%s", path);
    atomic_store(&drawing.on, 1);
    if (!sbx.on) return 1;
    check_not_cut(L, path);
    writable(L, path, full);
    check_quota(L, path, full);
    return 1;
}

int64_t ltt_sandbox_write_room(void)
{
    if (!sbx.on || quota.max_bytes <= 0) return -1;
    return quota.bytes < quota.max_bytes ? quota.max_bytes - quota.bytes : 0;
}

void ltt_sandbox_count_write(int64_t bytes) { quota.bytes += bytes; }

/* Counts n more bytes; raises, having written nothing, past the cap. */
static void charge(lua_State *L, int64_t n)
{
    if (quota.max_bytes > 0 && n > quota.max_bytes - quota.bytes) bytes_error(L, NULL, n);
    quota.bytes += n;
}

void ltt_sandbox_wrote(lua_State *L, const char *path)
{
    char dir[PATH_MAX], full[PATH_MAX];
    const char *base;
    struct stat st;
    atomic_store(&drawing.on, 0);
    if (!sbx.on || !resolve_parent(path, dir, &base) || stat(path, &st) != 0) return;
    if (snprintf(full, sizeof full, "%s/%s", dir, base) >= (int)sizeof full) return;
    quota.bytes += (int64_t)st.st_size;
    note_written(L, full);
    if (quota.max_bytes > 0 && quota.bytes > quota.max_bytes) bytes_error(L, path, 0);
    if (quota.max_files > 0 && quota.files > quota.max_files) files_error(L, path);
}

/* ===== Sandbox: wrapped library functions ===== */

static int forbidden(lua_State *L)
{
    return ltt_error(L, "sandbox: '%s' is not available with --sandbox", lua_tostring(L, lua_upvalueindex(1)));
}

/* Calls upvalue 1 with all the arguments; returns all its results. */
static int call_orig(lua_State *L)
{
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
}

/* Opens (or makes the default output) a file for writing: the path
   checks, the file quota, then the original; counts the file once open. */
static int open_for_write(lua_State *L, const char *path)
{
    char full[PATH_MAX];
    writable(L, path, full);
    check_quota(L, path, full);
    int n = call_orig(L);
    if (n > 0 && lua_toboolean(L, 1)) note_written(L, full);
    return n;
}

static int sb_io_open(lua_State *L)
{
    const char *path = name_arg(L, 1, "open");
    if (path == NULL) path = luaL_checkstring(L, 1);
    const char *mode = luaL_optstring(L, 2, "r");
    if (strpbrk(mode, "wa+")) return open_for_write(L, path);
    ltt_sandbox_check_read(L, path);
    return call_orig(L);
}

static int sb_read_arg1(lua_State *L)          /* io.lines, io.input */
{
    const char *path = name_arg(L, 1, "read");
    if (path) ltt_sandbox_check_read(L, path);
    return call_orig(L);
}

static int sb_io_output(lua_State *L)          /* io.output(name) opens it "w" */
{
    const char *path = name_arg(L, 1, "write");
    return path ? open_for_write(L, path) : call_orig(L);
}

static int sb_os_remove(lua_State *L)
{
    char full[PATH_MAX];
    const char *path = name_arg(L, 1, "write");
    if (path) writable(L, path, full);
    return call_orig(L);
}

static int sb_os_rename(lua_State *L)
{
    char full[PATH_MAX];
    const char *from = name_arg(L, 1, "write"), *to = name_arg(L, 2, "write");
    writable(L, from ? from : luaL_checkstring(L, 1), full);
    writable(L, to ? to : luaL_checkstring(L, 2), full);
    return call_orig(L);
}

/* The environment may hold secrets: every variable reads as unset but
   tensortrace's own settings (TT_*: TT_TRACE_NO_TIMES, TT_IMAGES...), which
   a lesson may follow as the binary does. */
static int sb_getenv(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    const char *v = strncmp(name, "TT_", 3) == 0 ? getenv(name) : NULL;
    if (v) lua_pushstring(L, v);
    else lua_pushnil(L);
    return 1;
}

/* Bytes that write(...) puts out from argument `first` on: strings as
   they are, numbers as liolib formats them (other values: the original
   raises). */
static int64_t write_size(lua_State *L, int first)
{
    int64_t n = 0;
    for (int i = first, top = lua_gettop(L); i <= top; i++) {
        if (lua_type(L, i) == LUA_TNUMBER) {
            n += lua_isinteger(L, i)
                 ? snprintf(NULL, 0, LUA_INTEGER_FMT, (LUAI_UACINT)lua_tointeger(L, i))
                 : snprintf(NULL, 0, LUA_NUMBER_FMT, (LUAI_UACNUMBER)lua_tonumber(L, i));
        } else if (lua_type(L, i) == LUA_TSTRING) {
            n += (int64_t)lua_rawlen(L, i);
        }
    }
    return n;
}

/* An open file on disk (stdout and stderr are not the quota's business). */
static FILE *disk_file(lua_State *L, int idx)
{
    luaL_Stream *p = luaL_testudata(L, idx, LUA_FILEHANDLE);
    if (p == NULL || p->closef == NULL || p->f == NULL || p->f == stdout || p->f == stderr) return NULL;
    return p->f;
}

static int sb_file_write(lua_State *L)         /* file:write(...) */
{
    if (disk_file(L, 1)) charge(L, write_size(L, 2));
    return call_orig(L);
}

static int sb_io_write(lua_State *L)           /* io.write(...): to the default output */
{
    lua_getfield(L, LUA_REGISTRYINDEX, "_IO_output");   /* liolib's key for it */
    FILE *f = disk_file(L, -1);
    lua_pop(L, 1);
    if (f) charge(L, write_size(L, 1));
    return call_orig(L);
}

/* file:seek past the end of a file open for writing: the next write
   makes a file that long, so the hole counts as written. */
static int sb_file_seek(lua_State *L)
{
    FILE *f = disk_file(L, 1);
    int n = call_orig(L);
    int flags = f ? fcntl(fileno(f), F_GETFL) : -1;
    struct stat st;
    if (flags == -1 || (flags & O_ACCMODE) == O_RDONLY || fflush(f) != 0 || fstat(fileno(f), &st) != 0)
        return n;
    off_t pos = ftello(f);
    if (pos > st.st_size) {
        int64_t hole = (int64_t)(pos - st.st_size);
        if (quota.max_bytes > 0 && hole > quota.max_bytes - quota.bytes) fseeko(f, st.st_size, SEEK_SET);
        charge(L, hole);
    }
    return n;
}

/* load(chunk [, name [, mode [, env]]]) as the base library's, written
   out here so that the unrestricted load is nowhere to be reached: text
   chunks only, and a name "@file" becomes "=file" (the trace reads the
   lines of "@" chunks from the file, which would read around the sandbox). */
#define LOAD_SLOT 5                             /* keeps the reader's last piece */

static const char *load_reader(lua_State *L, void *ud, size_t *size)
{
    (void)ud;
    luaL_checkstack(L, 2, "too many nested functions");
    lua_pushvalue(L, 1);
    lua_call(L, 0, 1);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        *size = 0;
        return NULL;
    }
    if (!lua_isstring(L, -1)) luaL_error(L, "reader function must return a string");
    lua_replace(L, LOAD_SLOT);
    return lua_tolstring(L, LOAD_SLOT, size);
}

static int sb_load(lua_State *L)
{
    size_t len;
    const char *s = lua_tolstring(L, 1, &len);
    int env = !lua_isnone(L, 4) ? 4 : 0;
    const char *name = luaL_optstring(L, 2, s ? s : "=(load)");
    luaL_optstring(L, 3, "t");                  /* mode: checked, then text regardless */
    if (s == NULL) luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, LOAD_SLOT);
    if (name[0] == '@') name = lua_pushfstring(L, "=%s", name + 1);
    else lua_pushstring(L, name);               /* anchored above the reader's slot */
    int status = s ? luaL_loadbufferx(L, s, len, name, "t") : lua_load(L, load_reader, NULL, name, "t");
    if (status != LUA_OK) {
        luaL_pushfail(L);
        lua_insert(L, -2);
        return 2;
    }
    if (env) {                                  /* env is the first upvalue */
        lua_pushvalue(L, env);
        if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
    }
    return 1;
}

/* luaL_loadfilex in text mode, the message naming the file. */
static int load_text_file(lua_State *L, const char *path)
{
    int status = luaL_loadfilex(L, path, "t");
    if (status == LUA_ERRSYNTAX && strstr(lua_tostring(L, -1), "binary chunk")) {
        lua_pushfstring(L, "%s: %s; --sandbox runs Lua source only", path ? path : "stdin", lua_tostring(L, -1));
        lua_remove(L, -2);
    }
    return status;
}

/* loadfile(path [, mode [, env]]) with the read check, text only. */
static int sb_loadfile(lua_State *L)
{
    const char *path = name_arg(L, 1, "read");
    int env = !lua_isnone(L, 3) ? 3 : 0;
    if (path) ltt_sandbox_check_read(L, path);
    else luaL_optstring(L, 1, NULL);
    if (load_text_file(L, path) != LUA_OK) {
        luaL_pushfail(L);
        lua_insert(L, -2);
        return 2;
    }
    if (env) {                                  /* as luaB_loadfile: env is the first upvalue */
        lua_pushvalue(L, env);
        if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
    }
    return 1;
}

static int sb_dofile(lua_State *L)
{
    const char *path = name_arg(L, 1, "read");
    if (path) ltt_sandbox_check_read(L, path);
    else luaL_optstring(L, 1, NULL);
    lua_settop(L, 1);
    if (load_text_file(L, path) != LUA_OK) return lua_error(L);
    lua_call(L, 0, LUA_MULTRET);
    return lua_gettop(L) - 1;
}

/* package.searchers[2] for the sandbox: Lua files on package.path that
   resolve under the readable folders, text only. */
static int sb_searcher(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    lua_getglobal(L, "package");
    if (lua_getfield(L, -1, "path") != LUA_TSTRING) return luaL_error(L, "'package.path' must be a string");
    const char *path = lua_tostring(L, -1);
    name = luaL_gsub(L, name, ".", "/");
    lua_pushliteral(L, "");                     /* the files tried, for the message */
    int tried = lua_gettop(L);
    for (const char *p = path; *p;) {
        const char *e = strchr(p, ';');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char tmpl[PATH_MAX], why[128];
        if (len > 0 && len < sizeof tmpl) {
            memcpy(tmpl, p, len);
            tmpl[len] = 0;
            const char *file = luaL_gsub(L, tmpl, "?", name);
            FILE *f = NULL;
            if (may_read(file, why, sizeof why) && !not_regular(file) && (f = fopen(file, "r")) != NULL) {
                fclose(f);
                if (load_text_file(L, file) != LUA_OK)
                    return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s",
                                      lua_tostring(L, 1), file, lua_tostring(L, -1));
                lua_pushstring(L, file);
                return 2;
            }
            lua_pushvalue(L, tried);
            lua_pushfstring(L, "\n\tno file '%s'", file);
            lua_concat(L, 2);
            lua_replace(L, tried);
            lua_pop(L, 1);                      /* file */
        }
        p += len;
        if (*p == ';') p++;
    }
    lua_settop(L, tried);
    return 1;
}

/* t[name] = f, with the old t[name] as upvalue 1 when wrap, else the
   name for messages; t is at idx. */
static void set_field_fn(lua_State *L, int idx, const char *label, const char *name, lua_CFunction f, int wrap)
{
    idx = lua_absindex(L, idx);
    if (wrap) lua_getfield(L, idx, name);
    else lua_pushstring(L, label);
    lua_pushcclosure(L, f, 1);
    lua_setfield(L, idx, name);
}

static void set_fn(lua_State *L, const char *lib, const char *name, lua_CFunction f, int wrap)
{
    if (lib) {
        if (lua_getglobal(L, lib) != LUA_TTABLE) { lua_pop(L, 1); return; }
    } else {
        lua_pushglobaltable(L);
    }
    lua_pushfstring(L, "%s%s%s", lib ? lib : "", lib ? "." : "", name);
    set_field_fn(L, -2, lua_tostring(L, -1), name, f, wrap);
    lua_pop(L, 2);
}

int ltt_sandbox_also_read(const char *dir, const char **err)
{
    struct stat st;
    if (realpath(dir, also_read) == NULL || stat(also_read, &st) != 0 || !S_ISDIR(st.st_mode)) {
        also_read[0] = 0;
        *err = "the --read folder does not exist";
        return 0;
    }
    return 1;
}

void ltt_sandbox_close(void)
{
    sbx.on = 0;
}

int ltt_sandbox_open(lua_State *L, const char *images_dir, int images_given, const char *read_dir,
                     const char **err)
{
    memset(&sbx, 0, sizeof sbx);
    quota.bytes = quota.files = 0;
    snprintf(sbx.images_arg, sizeof sbx.images_arg, "%s", images_dir);
    if (realpath(images_dir, sbx.images) == NULL) {
        sbx.images[0] = 0;
        if (images_given) { *err = "the --images folder does not exist"; return 0; }
    } else {
        struct stat st;
        if (stat(sbx.images, &st) != 0 || !S_ISDIR(st.st_mode)) { *err = "--images is not a folder"; return 0; }
    }
    if (realpath(read_dir, sbx.root) == NULL) { *err = "cannot resolve the script's folder"; return 0; }
    sbx.on = 1;
    int top = lua_gettop(L);

    static const char *const gone[][2] = {
        {"os", "execute"}, {"io", "popen"}, {"os", "tmpname"}, {"io", "tmpfile"},
        {"os", "setlocale"}, {"package", "loadlib"}, {"package", "searchpath"},
    };
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) set_fn(L, gone[i][0], gone[i][1], forbidden, 0);
    set_fn(L, "io", "open", sb_io_open, 1);
    set_fn(L, "io", "lines", sb_read_arg1, 1);
    set_fn(L, "io", "input", sb_read_arg1, 1);
    set_fn(L, "io", "output", sb_io_output, 1);
    set_fn(L, "io", "write", sb_io_write, 1);
    set_fn(L, "os", "remove", sb_os_remove, 1);
    set_fn(L, "os", "rename", sb_os_rename, 1);
    set_fn(L, "os", "getenv", sb_getenv, 0);
    set_fn(L, NULL, "load", sb_load, 0);
    set_fn(L, NULL, "loadfile", sb_loadfile, 0);
    set_fn(L, NULL, "dofile", sb_dofile, 0);

    /* the methods of every file handle: writes count against the quota */
    luaL_getmetatable(L, LUA_FILEHANDLE);
    if (lua_istable(L, -1) && lua_getfield(L, -1, "__index") == LUA_TTABLE) {
        set_field_fn(L, -1, "write", "write", sb_file_write, 1);
        set_field_fn(L, -1, "seek", "seek", sb_file_seek, 1);
    }
    lua_settop(L, top);

    /* require: preloaded modules and Lua files only; no C modules */
    if (lua_getglobal(L, "package") == LUA_TTABLE) {
        lua_pushfstring(L, "%s/?.lua;%s/?/init.lua", sbx.root, sbx.root);
        lua_setfield(L, -2, "path");
        lua_pushliteral(L, "");
        lua_setfield(L, -2, "cpath");
        lua_createtable(L, 2, 0);
        if (lua_getfield(L, -2, "searchers") == LUA_TTABLE) lua_geti(L, -1, 1);   /* the preload searcher */
        else lua_pushnil(L);
        lua_remove(L, -2);
        lua_rawseti(L, -2, 1);
        lua_pushcfunction(L, sb_searcher);
        lua_rawseti(L, -2, 2);
        lua_setfield(L, -2, "searchers");
    }
    lua_pop(L, 1);

    /* debug only as traceback: the rest reaches the originals through
       upvalues (getupvalue), the call stack (getinfo "f", getlocal) and
       the registry, and drops the hooks (sethook); they raise instead */
    lua_createtable(L, 0, 20);
    if (lua_getglobal(L, "debug") == LUA_TTABLE) {
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "traceback") != 0) {
                lua_pop(L, 1);
                lua_pushfstring(L, "debug.%s", lua_tostring(L, -1));
                lua_pushcclosure(L, forbidden, 1);
            }
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_settable(L, -5);
        }
    }
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_setglobal(L, "debug");
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_insert(L, -2);
    lua_setfield(L, -2, "debug");
    lua_pop(L, 1);
    return 1;
}
