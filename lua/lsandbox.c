/*
** lsandbox.c — limits and the --sandbox mode of the interpreter: a capped
** Lua allocator, the timeout/instruction hook with a watchdog for long C
** operations, and the sandbox that takes away os/io escape hatches and
** confines file access (writes under --images, reads under the script's
** folder). Used by main.c; lfigures.c may call ltt_sandbox_check_write.
*/
#if !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700       /* realpath */
#endif
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lua.h>
#include <lualib.h>
#include <lauxlib.h>

#include "ltt.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* ===== The Lua heap cap ===== */

static struct {
    lua_Alloc f;
    void *ud;
    int64_t used, cap;
    int hit;
} heap;

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
    heap.used = (int64_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + lua_gc(L, LUA_GCCOUNTB, 0);
    heap.cap = max_bytes > 0 ? max_bytes : 0;
    heap.hit = 0;
    lua_setallocf(L, capped_alloc, NULL);
    return L;
}

int ltt_heap_cap_hit(void)
{
    int h = heap.hit;
    heap.hit = 0;
    return h;
}

/* ===== Timeout and instruction budget ===== */

#define HOOK_STEP 1000          /* VM instructions between two checks */

static struct {
    double timeout;             /* seconds; 0 = none */
    long long max_instr;        /* 0 = none */
    double deadline;            /* monotonic seconds */
    long long used;
} lim;

static double now_s(void) { return (double)tt_now_ns() * 1e-9; }

/* Raises with the file:line of the running Lua function (level 0: a hook
   runs inside it, not in a call of its own). */
static int limit_error(lua_State *L, const char *what)
{
    lua_Debug ar;
    char where[256] = "";
    if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0)
        snprintf(where, sizeof where, "%s:%d: ", ar.short_src, ar.currentline);
    ltt_trace_flush();
    lua_pushfstring(L, "%s%s", where, what);
    return lua_error(L);
}

static void limit_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lim.used += lua_gethookcount(L);
    char msg[160];
    if (lim.timeout > 0 && now_s() > lim.deadline)
        snprintf(msg, sizeof msg, "timeout: the script ran longer than %g s (--timeout)", lim.timeout);
    else if (lim.max_instr > 0 && lim.used > lim.max_instr)
        snprintf(msg, sizeof msg, "instruction limit: the script ran more than %lld Lua instructions "
                 "(--max-instructions)", lim.max_instr);
    else
        return;
    /* From now on check at every instruction of this coroutine, so that a
       pcall in a loop cannot swallow the error forever. */
    lua_sethook(L, limit_hook, LUA_MASKCOUNT, 1);
    limit_error(L, msg);
}

/* The watchdog stops the process when a single C operation (a huge matmul)
   runs past the deadline, where the Lua hook cannot act. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int started;
    double hard;                /* monotonic seconds; 0 = disarmed */
    char msg[200];
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *watchdog(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wd.mu);
    for (;;) {
        if (wd.hard <= 0) {
            pthread_cond_wait(&wd.cv, &wd.mu);
            continue;
        }
        double left = wd.hard - now_s();
        if (left <= 0) {
            ssize_t r = write(2, wd.msg, strlen(wd.msg));
            (void)r;
            _exit(1);
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + left;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&wd.cv, &wd.mu, &ts);
    }
    return NULL;
}

static void watchdog_arm(double hard)
{
    if (!wd.started && hard > 0) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_destroy(&wd.cv);
        pthread_cond_init(&wd.cv, &ca);
        pthread_condattr_destroy(&ca);
        if (pthread_create(&wd.th, NULL, watchdog, NULL) != 0) return;
        pthread_detach(wd.th);
        wd.started = 1;
    }
    if (!wd.started) return;
    pthread_mutex_lock(&wd.mu);
    wd.hard = hard;
    pthread_cond_signal(&wd.cv);
    pthread_mutex_unlock(&wd.mu);
}

void ltt_limits_start(lua_State *L, double timeout, long long max_instructions)
{
    lim.timeout = timeout > 0 ? timeout : 0;
    lim.max_instr = max_instructions > 0 ? max_instructions : 0;
    lim.used = 0;
    lim.deadline = now_s() + lim.timeout;
    if (lim.timeout > 0 || lim.max_instr > 0) lua_sethook(L, limit_hook, LUA_MASKCOUNT, HOOK_STEP);
    else lua_sethook(L, NULL, 0, 0);
    if (lim.timeout > 0) {
        double grace = lim.timeout * 0.25 < 1.0 ? 1.0 : lim.timeout * 0.25;
        snprintf(wd.msg, sizeof wd.msg, "tensortrace: timeout: the script ran longer than %g s (--timeout) "
                 "and was stopped inside a tensor operation\n", lim.timeout);
        watchdog_arm(lim.deadline + grace);
    }
}

void ltt_limits_pause(lua_State *L)
{
    lua_sethook(L, NULL, 0, 0);
    if (wd.started) watchdog_arm(0);
}

/* ===== Sandbox: paths ===== */

static struct {
    int on;
    char images[PATH_MAX];      /* resolved; "" when the folder is missing */
    char images_arg[PATH_MAX];  /* as given, for messages */
    char root[PATH_MAX];        /* the script's folder, resolved */
} sbx;

int ltt_sandbox_active(void) { return sbx.on; }

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

int ltt_sandbox_check_write(lua_State *L, const char *path)
{
    if (!sbx.on) return 1;
    char dir[PATH_MAX], full[PATH_MAX], why[PATH_MAX + 128];
    const char *base;
    if (path == NULL || *path == 0) return path_error(L, "write", "", "empty file name");
    if (strlen(path) >= PATH_MAX) return path_error(L, "write", path, "the name is too long");
    if (sbx.images[0] == 0) {
        snprintf(why, sizeof why, "files may be written only under '%s', which does not exist", sbx.images_arg);
        return path_error(L, "write", path, why);
    }
    if (!resolve_parent(path, dir, &base)) {
        if (errno == ENOENT) snprintf(why, sizeof why, "its folder does not exist");
        else snprintf(why, sizeof why, "%s", strerror(errno));
        return path_error(L, "write", path, why);
    }
    if (*base == 0 || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return path_error(L, "write", path, "not a file name");
    if (!is_under(dir, sbx.images)) {
        snprintf(why, sizeof why, "files may be written only under '%s' (--images)", sbx.images_arg);
        return path_error(L, "write", path, why);
    }
    struct stat st;
    if (snprintf(full, sizeof full, "%s/%s", dir, base) >= (int)sizeof full)
        return path_error(L, "write", path, "the path is too long");
    if (lstat(full, &st) == 0 && S_ISLNK(st.st_mode))
        return path_error(L, "write", path, "it is a symbolic link");
    return 1;
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
    if (is_under(res, sbx.root) || (sbx.images[0] && is_under(res, sbx.images))) return 1;
    snprintf(why, n, "files may be read only under the script's folder");
    return 0;
}

int ltt_sandbox_check_read(lua_State *L, const char *path)
{
    char why[128];
    if (!sbx.on || may_read(path, why, sizeof why)) return 1;
    return path_error(L, "read", path, why);
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

static int sb_io_open(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    const char *mode = luaL_optstring(L, 2, "r");
    if (strpbrk(mode, "wa+")) ltt_sandbox_check_write(L, path);
    else ltt_sandbox_check_read(L, path);
    return call_orig(L);
}

/* A file name argument: strings and numbers (which the originals accept
   too, as "123"), converted in place so the original sees what we checked. */
static const char *name_arg(lua_State *L, int idx)
{
    return lua_type(L, idx) == LUA_TSTRING || lua_type(L, idx) == LUA_TNUMBER ? lua_tostring(L, idx) : NULL;
}

static int sb_read_arg1(lua_State *L)          /* io.lines, io.input */
{
    const char *path = name_arg(L, 1);
    if (path) ltt_sandbox_check_read(L, path);
    return call_orig(L);
}

static int sb_write_arg1(lua_State *L)         /* io.output, os.remove */
{
    const char *path = name_arg(L, 1);
    if (path) ltt_sandbox_check_write(L, path);
    return call_orig(L);
}

static int sb_os_rename(lua_State *L)
{
    ltt_sandbox_check_write(L, luaL_checkstring(L, 1));
    ltt_sandbox_check_write(L, luaL_checkstring(L, 2));
    return call_orig(L);
}

static int sb_getenv(lua_State *L)
{
    luaL_checkstring(L, 1);
    lua_pushnil(L);                             /* as if unset */
    return 1;
}

/* load(chunk [, name [, mode [, env]]]): text chunks only, and a name
   "@file" becomes "=file": the trace reads the source lines of "@" chunks
   from the file, which would read around the sandbox. */
static int sb_load(lua_State *L)
{
    int n = lua_gettop(L);
    if (n < 3) lua_settop(L, 3);
    if (lua_type(L, 2) == LUA_TSTRING && lua_tostring(L, 2)[0] == '@') {
        lua_pushfstring(L, "=%s", lua_tostring(L, 2) + 1);
        lua_replace(L, 2);
    }
    lua_pushliteral(L, "t");
    lua_replace(L, 3);
    if (n < 4) lua_settop(L, 3);               /* no env: keep the globals */
    return call_orig(L);
}

/* loadfile(path [, mode [, env]]) with the read check, text only. */
static int sb_loadfile(lua_State *L)
{
    const char *path = luaL_optstring(L, 1, NULL);
    int env = !lua_isnone(L, 3) ? 3 : 0;
    if (path) ltt_sandbox_check_read(L, path);
    if (luaL_loadfilex(L, path, "t") != LUA_OK) {
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
    const char *path = luaL_optstring(L, 1, NULL);
    lua_settop(L, 1);
    if (path) ltt_sandbox_check_read(L, path);
    if (luaL_loadfilex(L, path, "t") != LUA_OK) return lua_error(L);
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
            if (may_read(file, why, sizeof why) && (f = fopen(file, "r")) != NULL) {
                fclose(f);
                if (luaL_loadfilex(L, file, "t") != LUA_OK)
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

static void set_fn(lua_State *L, const char *lib, const char *name, lua_CFunction f, int wrap)
{
    if (lib) {
        if (lua_getglobal(L, lib) != LUA_TTABLE) { lua_pop(L, 1); return; }
    } else {
        lua_pushglobaltable(L);
    }
    if (wrap) lua_getfield(L, -1, name);        /* the original as upvalue 1 */
    else lua_pushfstring(L, "%s%s%s", lib ? lib : "", lib ? "." : "", name);
    lua_pushcclosure(L, f, 1);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

/* tt.heatmap(x, path, ...), tt.bars(x, path, ...), tt.flow(path, ...):
   upvalue 1 the original, upvalue 2 the index of the path argument. */
static int sb_figure(lua_State *L)
{
    int idx = (int)lua_tointeger(L, lua_upvalueindex(2));
    const char *path = name_arg(L, idx);
    if (path) {
        ltt_sandbox_check_write(L, path);
        lua_pushfstring(L, "%s.tmp", path);     /* the PNG writer's temporary */
        ltt_sandbox_check_write(L, lua_tostring(L, -1));
        lua_pop(L, 1);
    }
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
}

static void wrap_figure(lua_State *L, const char *name, int path_arg)
{
    if (lua_getglobal(L, "tt") != LUA_TTABLE) { lua_pop(L, 1); return; }
    if (lua_getfield(L, -1, name) == LUA_TFUNCTION) {
        lua_pushinteger(L, path_arg);
        lua_pushcclosure(L, sb_figure, 2);
        lua_setfield(L, -2, name);
    } else {
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

int ltt_sandbox_open(lua_State *L, const char *images_dir, int images_given, const char *read_dir,
                     const char **err)
{
    memset(&sbx, 0, sizeof sbx);
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

    static const char *const gone[][2] = {
        {"os", "execute"}, {"io", "popen"}, {"os", "tmpname"}, {"io", "tmpfile"},
        {"os", "setlocale"}, {"package", "loadlib"}, {"package", "searchpath"},
    };
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) set_fn(L, gone[i][0], gone[i][1], forbidden, 0);
    set_fn(L, "io", "open", sb_io_open, 1);
    set_fn(L, "io", "lines", sb_read_arg1, 1);
    set_fn(L, "io", "input", sb_read_arg1, 1);
    set_fn(L, "io", "output", sb_write_arg1, 1);
    set_fn(L, "os", "remove", sb_write_arg1, 1);
    set_fn(L, "os", "rename", sb_os_rename, 1);
    set_fn(L, "os", "getenv", sb_getenv, 0);
    set_fn(L, NULL, "load", sb_load, 1);
    set_fn(L, NULL, "loadfile", sb_loadfile, 0);
    set_fn(L, NULL, "dofile", sb_dofile, 0);

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

    /* debug would reach the originals through upvalues and drop the hooks */
    lua_createtable(L, 0, 2);
    if (lua_getglobal(L, "debug") == LUA_TTABLE) {
        lua_getfield(L, -1, "traceback");
        lua_setfield(L, -3, "traceback");
        lua_getfield(L, -1, "getinfo");
        lua_setfield(L, -3, "getinfo");
    }
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_setglobal(L, "debug");
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_insert(L, -2);
    lua_setfield(L, -2, "debug");
    lua_pop(L, 1);

    wrap_figure(L, "heatmap", 2);
    wrap_figure(L, "bars", 2);
    wrap_figure(L, "flow", 1);
    return 1;
}
