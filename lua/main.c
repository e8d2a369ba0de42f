/*
** main.c — the tensortrace command: runs a script, a chunk (-e) or the
** REPL with the `tt` module loaded and the trace on. Errors go to stderr
** with file:line and a traceback; exit 1 for a script error, 2 for usage.
*/
#include <errno.h>
#include <signal.h>
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
#include "lcompare.h"
#include "lreport.h"
#include "lsandbox.h"
#include "ltrace.h"
#include "lttlib.h"

#define PROGNAME "tensortrace"

static const char usage_text[] =
    "usage: " PROGNAME " [options] script.lua [args...]   run a lesson or any script\n"
    "       " PROGNAME " [options] -e 'lua code'          run a chunk\n"
    "       " PROGNAME "                                  interactive REPL\n"
    "       " PROGNAME " --compare REF.lua MINE.lua [more.lua...] [-- args...]\n"
    "                                  check scripts against a reference\n"
    "       " PROGNAME " --exercise NN|NAME|PATH [--watch]   check an exercise\n"
    "       " PROGNAME " --exercises                        list the exercises, done and next\n"
    "options:\n"
    "  -q, --quiet                  no trace (same as --trace=off)\n"
    "  --trace=off|shapes|values    shapes (default): one line per op; values: also print small results\n"
    "  --trace-json FILE            also write the trace as JSON Lines\n"
    "  --report FILE.html           also write the run as one self-contained HTML page\n"
    "                               (narrative, trace, figures, checks, error)\n"
    "  --precision N                digits after the point in printed tensors and --trace=values (default 4)\n"
    "  --seed N                     seed of tt.randn / tt.rand (default 0)\n"
    "  --threads N                  kernel threads (default: all cores; env TT_NUM_THREADS)\n"
    "  --max-memory SIZE            cap on tensor and Lua memory, e.g. 512M or 2G; 0 = none;\n"
    "                               at least 1M (default: half the RAM; 1G or half the RAM\n"
    "                               with --sandbox)\n"
    "  --timeout SECONDS            stop a runaway script with an error, also in __gc finalizers,\n"
    "                               error handlers and at exit (default with --sandbox: 30)\n"
    "  --max-instructions N         stop the script after N Lua VM instructions (e.g. 1e9)\n"
    "  --images DIR                 where figures go: a path 'images/NAME' a script draws to is\n"
    "                               written as DIR/NAME (env TT_IMAGES; default: images/ of the\n"
    "                               current folder, as written)\n"
    "  --sandbox                    for others' scripts: no os/io escape hatches, text chunks\n"
    "                               only, writes only under the --images folder (default\n"
    "                               images), reads only under the script's folder\n"
    "  --max-write SIZE             --sandbox: cap on bytes written (default 256M; 0 = none)\n"
    "  --max-files N                --sandbox: cap on files written (default 1000; 0 = none)\n"
    "  --read DIR                   --sandbox: the script may also read under DIR (e.g. lessons,\n"
    "                               for an exercise that loads lessons/lib and lessons/data)\n"
    "checking (--compare, --exercise):\n"
    "  --compare REF MINE...        run REF and each MINE with the same seed and args; compare\n"
    "                               REF's labelled tensors with MINE's: shape, names, dtype,\n"
    "                               values; explain the first mismatch; one line per file when\n"
    "                               there are several; exit 1 when one does not match\n"
    "                               with --sandbox: each MINE in a process of its own, under\n"
    "                               the limits and the sandbox (reads only itself and --read,\n"
    "                               writes only under --images); REF runs as it is\n"
    "  --compare-tol RTOL,ATOL      value tolerance (default 1e-4,1e-5)\n"
    "  --compare-json FILE          also write the verdict as JSON (several files: one per line)\n"
    "  --compare-csv FILE           also write a CSV row per file: verdict, score\n"
    "  --recheck 'N = 7'            check on other inputs (REF's `-- recheck:` line)\n"
    "  --compare-figure PATH        expected | yours | difference at the first mismatch (PNG/SVG)\n"
    "  --exercise NN|NAME|PATH      check lessons/exercises/NN_*.lua (or your copy at PATH)\n"
    "                               against its solution; the result goes to the progress file\n"
    "  --exercises                  list the exercises with ✓/✗ and the next one to do\n"
    "  --watch                      check again each time the file is saved (Linux inotify)\n"
    "  the progress file: $XDG_STATE_HOME/tensortrace/progress, else\n"
    "  ~/.local/state/tensortrace/progress (delete it to start over)\n"
    "  --version, --help\n";

typedef struct options {
    ltt_trace_mode trace;
    const char *json;
    const char *report;          /* --report FILE.html */
    const char *chunk;           /* -e */
    const char *script;
    int script_arg;              /* argv index of the script */
    long long seed;
    int threads;
    long long max_memory;        /* -1: not given */
    double timeout;              /* -1: not given */
    long long max_instructions;
    int sandbox;
    const char *images;          /* --images or TT_IMAGES; NULL: neither */
    long long max_write;         /* -1: not given */
    long long max_files;         /* -1: not given */
    const char *read;            /* --read DIR (with --sandbox); NULL: none */
    int compare;                 /* --compare */
    const char *exercise;        /* --exercise WHAT */
    int exercises;               /* --exercises */
    int watch;
    double rtol, atol;
    const char *compare_json, *compare_csv, *compare_figure, *recheck;
    const char **files;          /* --compare's scripts (argv entries) */
    int nfiles;
    int args_at;                 /* argv index of the scripts' first argument (after "--"); 0: none */
} options;

/* Below this the interpreter itself (about 32K of Lua data) and any tensor
   hardly fit: a smaller --max-memory is a usage error, never a PANIC. */
#define MIN_MAX_MEMORY (1LL << 20)

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROGNAME ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(try '" PROGNAME " --help')\n");
    return 2;
}

/* "2G", "512M", "100K", "1000000" -> bytes; "0" -> 0; -1 when malformed. */
static long long parse_size(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 0) || (s[0] != '0' && s[0] != '.' && !(s[0] >= '1' && s[0] <= '9'))) return -1;
    double mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1024.0; end++; break;
    case 'm': case 'M': mul = 1048576.0; end++; break;
    case 'g': case 'G': mul = 1073741824.0; end++; break;
    case 't': case 'T': mul = 1099511627776.0; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end || v * mul > 9e18) return -1;
    return (long long)(v * mul);
}

/* Value of "--opt=value" or "--opt value"; advances *i for the latter. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=') return argv[*i] + n + 1;
    if (strcmp(argv[*i], name) == 0) return *i + 1 < argc ? argv[++*i] : NULL;
    return NULL;
}

static int is_opt(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == 0 || arg[n] == '=');
}

/* --compare-json, --compare-csv and --recheck: the field of o that a
   takes a value for (and its name), NULL for another argument. */
static const char **check_opt(options *o, const char *a, const char **name)
{
    static const char *const names[] = { "--compare-json", "--compare-csv", "--recheck" };
    const char **fields[] = { &o->compare_json, &o->compare_csv, &o->recheck };
    for (int k = 0; k < 3; k++)
        if (is_opt(a, names[k])) {
            *name = names[k];
            return fields[k];
        }
    return NULL;
}

/* What an option parser returns besides an exit status: OPT_STOP (the
   script or chunk starts here: parse_args returns -1), OPT_NEXT (taken, go
   on), OPT_UNKNOWN (not one of its options). */
enum { OPT_STOP = -1, OPT_NEXT = -2, OPT_UNKNOWN = -3 };

/* The options of a run: trace, report, seed, threads; -q, -e, --help, --version. */
static int run_opt(int argc, char **argv, int *ip, options *o)
{
    int i = *ip;
    const char *a = argv[i], *v;
    if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
        o->trace = LTT_TRACE_OFF;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        fputs(usage_text, stdout);
        return 0;
    } else if (strcmp(a, "--version") == 0 || strcmp(a, "-v") == 0) {
        printf(PROGNAME " " TT_VERSION " (%s)\n", LUA_RELEASE);
        return 0;
    } else if (strcmp(a, "-e") == 0) {
        if (i + 1 >= argc) return usage_error("'-e' needs a chunk of Lua code%s", "");
        o->chunk = argv[++i];
        o->script_arg = i + 1;
        return OPT_STOP;
    } else if (is_opt(a, "--trace")) {
        if ((v = opt_value(argc, argv, &i, "--trace")) == NULL) return usage_error("'--trace' needs off, shapes or values%s", "");
        if (strcmp(v, "off") == 0) o->trace = LTT_TRACE_OFF;
        else if (strcmp(v, "shapes") == 0) o->trace = LTT_TRACE_SHAPES;
        else if (strcmp(v, "values") == 0) o->trace = LTT_TRACE_VALUES;
        else return usage_error("unknown trace level '%s' (expected off, shapes or values)", v);
    } else if (is_opt(a, "--trace-json")) {
        if ((v = opt_value(argc, argv, &i, "--trace-json")) == NULL || !*v) return usage_error("'--trace-json' needs a file name%s", "");
        o->json = v;
    } else if (is_opt(a, "--report")) {
        if ((v = opt_value(argc, argv, &i, "--report")) == NULL || !*v) return usage_error("'--report' needs a file name, e.g. lesson.html%s", "");
        o->report = v;
    } else if (is_opt(a, "--precision")) {
        char *end;
        if ((v = opt_value(argc, argv, &i, "--precision")) == NULL) return usage_error("'--precision' needs a number of digits%s", "");
        long n = strtol(v, &end, 10);
        if (*end || end == v || n < 0 || n > TT_PRINT_PRECISION_MAX)
            return usage_error("'--precision' needs a number of digits from 0 to 16, got '%s'", v);
        tt_set_print_precision((int)n);
    } else if (is_opt(a, "--seed")) {
        char *end;
        if ((v = opt_value(argc, argv, &i, "--seed")) == NULL) return usage_error("'--seed' needs a number%s", "");
        o->seed = strtoll(v, &end, 10);
        if (*end || end == v) return usage_error("'--seed' needs an integer, got '%s'", v);
    } else if (is_opt(a, "--threads")) {
        char *end;
        if ((v = opt_value(argc, argv, &i, "--threads")) == NULL) return usage_error("'--threads' needs a number%s", "");
        long n = strtol(v, &end, 10);
        if (*end || end == v || n < 1 || n > 1024) return usage_error("'--threads' needs a count from 1 to 1024, got '%s'", v);
        o->threads = (int)n;
    } else {
        return OPT_UNKNOWN;
    }
    *ip = i;
    return OPT_NEXT;
}

/* The limits and the sandbox. */
static int limit_opt(int argc, char **argv, int *ip, options *o)
{
    int i = *ip;
    const char *a = argv[i], *v;
    if (is_opt(a, "--max-memory")) {
        if ((v = opt_value(argc, argv, &i, "--max-memory")) == NULL) return usage_error("'--max-memory' needs a size like 2G%s", "");
        o->max_memory = parse_size(v);
        if (o->max_memory < 0) return usage_error("'--max-memory' needs a size like 512M or 2G, got '%s'", v);
        if (o->max_memory > 0 && o->max_memory < MIN_MAX_MEMORY)
            return usage_error("'--max-memory %s' is below the minimum of 1M (0 lifts the cap); "
                               "hint: a size without a unit is in bytes, e.g. 512M", v);
    } else if (is_opt(a, "--timeout")) {
        char *end;
        if ((v = opt_value(argc, argv, &i, "--timeout")) == NULL) return usage_error("'--timeout' needs seconds%s", "");
        o->timeout = strtod(v, &end);
        if (*end || end == v || !(o->timeout > 0) || o->timeout > 1e9)
            return usage_error("'--timeout' needs a positive number of seconds, got '%s'", v);
    } else if (is_opt(a, "--max-instructions")) {
        char *end;
        if ((v = opt_value(argc, argv, &i, "--max-instructions")) == NULL) return usage_error("'--max-instructions' needs a count%s", "");
        double n = strtod(v, &end);
        if (*end || end == v || !(n >= 1) || n > 9e18 || (v[0] < '0' || v[0] > '9'))
            return usage_error("'--max-instructions' needs a positive count like 1e9, got '%s'", v);
        o->max_instructions = (long long)n;
    } else if (strcmp(a, "--sandbox") == 0) {
        o->sandbox = 1;
    } else if (is_opt(a, "--max-write")) {
        if ((v = opt_value(argc, argv, &i, "--max-write")) == NULL) return usage_error("'--max-write' needs a size like 256M%s", "");
        o->max_write = parse_size(v);
        if (o->max_write < 0) return usage_error("'--max-write' needs a size like 64M or 1G, got '%s'", v);
    } else if (is_opt(a, "--max-files")) {
        char *end;
        if ((v = opt_value(argc, argv, &i, "--max-files")) == NULL) return usage_error("'--max-files' needs a count%s", "");
        o->max_files = strtoll(v, &end, 10);
        if (*end || end == v || o->max_files < 0)
            return usage_error("'--max-files' needs a count like 1000 (0 = none), got '%s'", v);
    } else if (is_opt(a, "--read")) {
        if ((v = opt_value(argc, argv, &i, "--read")) == NULL || !*v) return usage_error("'--read' needs a folder%s", "");
        o->read = v;
    } else if (is_opt(a, "--images")) {
        if ((v = opt_value(argc, argv, &i, "--images")) == NULL || !*v) return usage_error("'--images' needs a folder%s", "");
        o->images = v;
    } else {
        return OPT_UNKNOWN;
    }
    *ip = i;
    return OPT_NEXT;
}

/* --compare, --exercise, --exercises, --watch and the options of a check. */
static int checking_opt(int argc, char **argv, int *ip, options *o)
{
    int i = *ip;
    const char *a = argv[i], *v, *name, **field;
    if (strcmp(a, "--compare") == 0) {
        o->compare = 1;
    } else if (is_opt(a, "--exercise")) {
        if ((v = opt_value(argc, argv, &i, "--exercise")) == NULL || !*v)
            return usage_error("'--exercise' needs an exercise: a number, a name or your copy's path%s", "");
        o->exercise = v;
    } else if (strcmp(a, "--exercises") == 0) {
        o->exercises = 1;
    } else if (strcmp(a, "--watch") == 0) {
        o->watch = 1;
    } else if (is_opt(a, "--compare-tol")) {
        char *end, *end2;
        if ((v = opt_value(argc, argv, &i, "--compare-tol")) == NULL) return usage_error("'--compare-tol' needs RTOL,ATOL%s", "");
        o->rtol = strtod(v, &end);
        if (end == v || *end != ',' || !(o->rtol >= 0) || o->rtol > 1e6) return usage_error("'--compare-tol' needs RTOL,ATOL like 1e-4,1e-5, got '%s'", v);
        o->atol = strtod(end + 1, &end2);
        if (end2 == end + 1 || *end2 || !(o->atol >= 0) || o->atol > 1e30) return usage_error("'--compare-tol' needs RTOL,ATOL like 1e-4,1e-5, got '%s'", v);
    } else if ((field = check_opt(o, a, &name)) != NULL) {
        if ((v = opt_value(argc, argv, &i, name)) == NULL || !*v)
            return usage_error(field == &o->recheck ? "'%s' needs inputs like 'N = 7'" : "'%s' needs a file name", name);
        *field = v;
    } else if (is_opt(a, "--compare-figure")) {
        if ((v = opt_value(argc, argv, &i, "--compare-figure")) == NULL || !*v) return usage_error("'--compare-figure' needs a file name, e.g. check.png%s", "");
        o->compare_figure = v;
    } else {
        return OPT_UNKNOWN;
    }
    *ip = i;
    return OPT_NEXT;
}

/* Fills o from the command line; returns -1 to go on and run, or the exit
   status (0 after --help or --version, 2 on a usage error). */
static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->trace = LTT_TRACE_SHAPES;
    o->max_memory = -1;
    o->timeout = -1;
    o->max_write = -1;
    o->max_files = -1;
    o->rtol = 1e-4;
    o->atol = 1e-5;
    static const char *files[1024];
    o->files = files;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (o->compare || o->exercise) {      /* checking: files and options in any order */
            if (strcmp(a, "--") == 0) {
                o->args_at = i + 1;
                return -1;
            }
            if (a[0] != '-') {
                if (o->exercise) return usage_error("'--exercise' checks one exercise; unexpected '%s'", a);
                if (o->nfiles == LTT_LEN(files)) return usage_error("'--compare' takes at most 1024 scripts%s", "");
                files[o->nfiles++] = a;
                continue;
            }
        }
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            o->script = a;
            o->script_arg = i;
            return -1;
        }
        if (strcmp(a, "--") == 0) {
            if (i + 1 < argc) {
                o->script = argv[i + 1];
                o->script_arg = i + 1;
            }
            return -1;
        }
        int r = run_opt(argc, argv, &i, o);
        if (r == OPT_UNKNOWN) r = limit_opt(argc, argv, &i, o);
        if (r == OPT_UNKNOWN) r = checking_opt(argc, argv, &i, o);
        if (r == OPT_UNKNOWN) return usage_error("unknown option '%s'", a);
        if (r != OPT_NEXT) return r;
    }
    return -1;
}

/* ===== Running chunks ===== */

static double timeout_s;          /* 0 = none */
static long long max_instr;       /* 0 = none */
static int text_only;             /* --sandbox: no binary chunks from anywhere */

static int msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    msg = ltt_hint_misspelt(L, msg);   /* x:sofmax(): "did you mean softmax?" */
    ltt_report_error_where(L);
    luaL_traceback(L, L, msg, 1);
    return 1;
}

static int report(lua_State *L, int status)
{
    if (status != LUA_OK) {
        ltt_trace_flush();
        fflush(stdout);
        char why[512];
        if (status == LUA_ERRMEM && ltt_heap_cap_hit(why, sizeof why)) {
            fprintf(stderr, PROGNAME ": %s\n", why);
            ltt_report_error(why);
        } else {
            const char *msg = lua_tostring(L, -1);
            fprintf(stderr, PROGNAME ": %s\n", msg ? msg : "(error object is not a string)");
            ltt_report_error(msg ? msg : "(error object is not a string)");
        }
        lua_pop(L, 1);
    }
    return status;
}

static int docall(lua_State *L, int narg, int nres)
{
    int base = lua_gettop(L) - narg;
    lua_pushcfunction(L, msghandler);
    lua_insert(L, base);
    int status = lua_pcall(L, narg, nres, base);
    lua_remove(L, base);
    return status;
}

/* The global `arg` table as lua.c makes it: script at 0, its args 1..n. */
static void create_arg_table(lua_State *L, int argc, char **argv, int script)
{
    lua_createtable(L, argc - script, script + 1);
    for (int i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - script);
    }
    lua_setglobal(L, "arg");
}

static int run_script(lua_State *L, const char *path, int argc, char **argv, int script_arg)
{
    int status = luaL_loadfilex(L, strcmp(path, "-") == 0 ? NULL : path, text_only ? "t" : NULL);
    if (status == LUA_ERRSYNTAX && text_only && strstr(lua_tostring(L, -1), "binary chunk")) {
        lua_pushfstring(L, "%s: %s; --sandbox runs Lua source only", path, lua_tostring(L, -1));
        lua_remove(L, -2);
    }
    if (status != LUA_OK) return report(L, status);  /* LUA_ERRFILE: exit 2 */
    int n = 0;
    for (int i = script_arg + 1; i < argc; i++, n++) lua_pushstring(L, argv[i]);
    return report(L, docall(L, n, 0));
}

/* ===== REPL ===== */

/* Ctrl-C: at a prompt it drops the line (and a chunk being continued); in
   a running chunk it raises "interrupted" at the next Lua instruction, as
   lua.c does (a long C operation finishes first), and keeps raising until
   the chunk has ended, so a pcall in a loop cannot swallow it. */
static volatile sig_atomic_t got_sigint;
static lua_State *volatile running;       /* the REPL's state while a chunk runs */

static void interrupt_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_sethook(L, interrupt_hook, LUA_MASKCOUNT, 1);
    luaL_error(L, "interrupted (Ctrl-C)");
}

static void on_sigint(int sig)
{
    (void)sig;
    got_sigint = 1;
    lua_State *L = running;
    if (L) lua_sethook(L, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

/* No SA_RESTART: a read waiting at the prompt returns with EINTR. */
static void catch_sigint(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

/* read_line returns the line typed (to free), or NULL at the end of input
   or (*interrupted set) when Ctrl-C dropped the line. */
#if defined(TT_HAVE_READLINE)
#include <sys/select.h>
#include <readline/readline.h>
#include <readline/history.h>
static char *rl_line;
static int rl_have_line;
static void on_line(char *line)
{
    rl_line = line;
    rl_have_line = 1;
    rl_callback_handler_remove();
}
/* readline's callback interface, so that Ctrl-C reaches us (as Python's
   REPL does it): select() returns EINTR, and the line is dropped. */
static char *read_line(const char *prompt, int *interrupted)
{
    *interrupted = 0;
    got_sigint = 0;
    rl_catch_signals = 0;
    rl_line = NULL;
    rl_have_line = 0;
    /* SIGINT waits while readline works; pselect lets it in, atomically */
    sigset_t block, waiting;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &waiting);
    sigdelset(&waiting, SIGINT);
    rl_callback_handler_install(prompt, on_line);
    int fd = fileno(rl_instream ? rl_instream : stdin);
    while (!rl_have_line) {
        fd_set fds;
        FD_ZERO(&fds);
        FD_SET(fd, &fds);
        int r = got_sigint ? -1 : pselect(fd + 1, &fds, NULL, NULL, NULL, &waiting);
        if (got_sigint) errno = EINTR;
        if (r > 0) {
            rl_callback_read_char();
        } else if (r < 0 && errno == EINTR) {
            if (!got_sigint) continue;
            got_sigint = 0;
            rl_free_line_state();
            rl_callback_sigcleanup();
            rl_cleanup_after_signal();
            rl_callback_handler_remove();
            sigprocmask(SIG_UNBLOCK, &block, NULL);
            *interrupted = 1;
            return NULL;
        } else if (r < 0) {
            rl_callback_handler_remove();
            break;
        }
    }
    sigprocmask(SIG_UNBLOCK, &block, NULL);
    return rl_line;
}
static void remember(const char *line) { if (*line) add_history(line); }
#else
#include <sys/select.h>
/* Without readline: the line is read a byte at a time with read(2), each
   wait in pselect with SIGINT let in atomically. SIGINT is blocked from
   before the prompt is written, so a Ctrl-C typed as soon as the prompt
   shows is taken by the wait, never lost in a read that goes on blocking.
   stdin is unbuffered (repl), so a chunk's io.read sees what follows. */
static char *read_line(const char *prompt, int *interrupted)
{
    static char buf[4096];
    size_t n = 0;
    int more = 1, eof = 0;
    sigset_t block, old, waiting;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &old);
    waiting = old;
    sigdelset(&waiting, SIGINT);
    *interrupted = 0;
    got_sigint = 0;
    fputs(prompt, stdout);
    fflush(stdout);
    const int fd = fileno(stdin);
    while (more && n < sizeof buf - 1) {
        fd_set fds;
        FD_ZERO(&fds);
        FD_SET(fd, &fds);
        int r = pselect(fd + 1, &fds, NULL, NULL, NULL, &waiting);
        if (got_sigint) {           /* the line typed so far goes */
            *interrupted = 1;
            break;
        }
        if (r < 0 && errno == EINTR) continue;
        char c;
        ssize_t k = r < 0 ? -1 : read(fd, &c, 1);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {               /* end of input: a last line without "\n" still counts */
            more = 0;
            eof = n == 0;
        } else if (c == '\n') {
            more = 0;
        } else {
            buf[n++] = c;
        }
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (*interrupted || eof) return NULL;
    buf[n] = 0;
    char *copy = malloc(n + 1);
    if (copy) memcpy(copy, buf, n + 1);
    return copy;
}
static void remember(const char *line) { (void)line; }
#endif

static int incomplete(lua_State *L, int status)
{
    if (status == LUA_ERRSYNTAX) {
        size_t lmsg;
        const char *msg = lua_tolstring(L, -1, &lmsg);
        if (lmsg >= 5 && strcmp(msg + lmsg - 5, "<eof>") == 0) {
            lua_pop(L, 1);
            return 1;
        }
    }
    return 0;
}

/* Compiles the buffer as "return <expr>" first, then as a statement. */
static int load_repl_chunk(lua_State *L, const char *code)
{
    static const char *chunkname = "=stdin";
    lua_pushfstring(L, "return %s;", code);
    const char *ret = lua_tostring(L, -1);
    int status = luaL_loadbufferx(L, ret, strlen(ret), chunkname, text_only ? "t" : NULL);
    lua_remove(L, -2);
    if (status == LUA_OK) {
        ltt_trace_source(chunkname, code);   /* the headers show what was typed */
        return status;
    }
    lua_pop(L, 1);
    status = luaL_loadbufferx(L, code, strlen(code), chunkname, text_only ? "t" : NULL);
    if (status == LUA_OK) ltt_trace_source(chunkname, code);
    return status;
}

static void print_results(lua_State *L)
{
    int n = lua_gettop(L);
    if (n == 0) return;
    luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
    lua_getglobal(L, "print");
    lua_insert(L, 1);
    if (lua_pcall(L, n, 0, 0) != LUA_OK)
        fprintf(stderr, PROGNAME ": error calling 'print' (%s)\n", lua_tostring(L, -1));
}

static void repl(lua_State *L)
{
    printf(PROGNAME " " TT_VERSION " — tensors of attention, traced. %s\n"
           "Type Lua; the global 'tt' is loaded. Expressions print their value. Ctrl-D quits.\n",
           LUA_RELEASE);
    catch_sigint();
#if !defined(TT_HAVE_READLINE)
    setvbuf(stdin, NULL, _IONBF, 0);      /* read_line reads fd 0 itself */
#endif
    for (;;) {
        int interrupted;
        char *line = read_line("tt> ", &interrupted);
        if (line == NULL && interrupted) {
            fputs("\n", stdout);          /* Ctrl-C at the prompt: a fresh one */
            continue;
        }
        if (line == NULL) break;
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        luaL_addstring(&b, line);
        remember(line);
        free(line);
        luaL_pushresult(&b);
        int status;
        /* keep reading lines while the chunk is incomplete */
        int dropped = 0;
        while ((status = load_repl_chunk(L, lua_tostring(L, -1))) != LUA_OK && incomplete(L, status)) {
            char *more = read_line("  > ", &dropped);
            if (more == NULL) break;
            remember(more);
            lua_pushliteral(L, "\n");
            lua_pushstring(L, more);
            free(more);
            lua_concat(L, 3);
        }
        if (dropped) {                   /* Ctrl-C at "  > ": the unfinished chunk goes */
            fputs("\n", stdout);
            lua_settop(L, 0);
            continue;
        }
        if (status == LUA_OK) {
            lua_remove(L, -2);           /* the source text */
            ltt_limits_start(L, timeout_s, max_instr);
            got_sigint = 0;
            running = L;
            status = docall(L, 0, LUA_MULTRET);
            running = NULL;
            ltt_limits_pause(L);
            if (got_sigint) fputs("\n", stdout);   /* past the terminal's "^C" */
            ltt_trace_flush();
            if (status == LUA_OK) print_results(L);
            else report(L, status);
        } else {
            if (lua_type(L, -1) == LUA_TSTRING) report(L, status);
            else lua_pop(L, 1);
            lua_pop(L, 1);
        }
        lua_settop(L, 0);
    }
    putchar('\n');
}

/* ===== main ===== */

static int open_tt(lua_State *L)
{
    luaL_requiref(L, "tt", luaopen_tt, 1);   /* global tt and package.loaded.tt */
    lua_pop(L, 1);
    return 0;
}

/* Half the physical memory (0 when unknown): the default cap, so that a
   runaway script gets an error rather than the OOM killer. */
static long long default_max_memory(int sandbox)
{
    long long half = 0;
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) half = (long long)pages / 2 * page;
#endif
    if (sandbox && (half == 0 || half > (1LL << 30))) return 1LL << 30;
    return half;
}

/* The folder of the script (for --sandbox reads); "." for -e and the REPL. */
static const char *script_dir(const char *script, char *buf, size_t n)
{
    const char *slash = script ? strrchr(script, '/') : NULL;
    if (script == NULL || strcmp(script, "-") == 0 || slash == NULL) return ".";
    size_t len = (size_t)(slash - script);
    if (len == 0) return "/";
    if (len >= n) len = n - 1;
    memcpy(buf, script, len);
    buf[len] = 0;
    return buf;
}

/* --compare, --exercise, --exercises. */
static int check_main(const options *o, int argc, char **argv)
{
    if (o->exercises) {
        if (o->compare || o->exercise || o->script) return usage_error("'--exercises' lists the exercises; it takes no script%s", "");
        return ltt_exercises_list();
    }
    if (o->json || o->chunk)
        return usage_error("'%s' does not apply to --compare and --exercise", o->json ? "--trace-json" : "-e");
    if (!o->sandbox && (o->max_write >= 0 || o->max_files >= 0 || o->read))
        return usage_error("'%s' only applies with --sandbox",
                           o->read ? "--read" : o->max_write >= 0 ? "--max-write" : "--max-files");
    const char *rerr;
    if (o->read && !ltt_sandbox_also_read(o->read, &rerr)) return usage_error("--read: no folder '%s'", o->read);
    ltt_compare_opts c;
    memset(&c, 0, sizeof c);
    if (o->compare && o->exercise) return usage_error("'--compare' and '--exercise' do not go together%s", "");
    if (o->compare) {
        if (o->nfiles < 2) return usage_error("'--compare' needs a reference and at least one script: --compare REF.lua MINE.lua%s", "");
        c.ref = o->files[0];
        c.mine = o->files + 1;
        c.nmine = o->nfiles - 1;
    } else if (!ltt_exercise_resolve(o->exercise, &c)) {
        return 2;
    }
    c.args = o->args_at ? argv + o->args_at : NULL;
    c.nargs = o->args_at ? argc - o->args_at : 0;
    c.seed = o->seed;
    c.rtol = o->rtol;
    c.atol = o->atol;
    c.json = o->compare_json;
    c.csv = o->compare_csv;
    c.variant = o->recheck;
    c.figure = o->compare_figure;
    c.report = o->report;
    c.report_argc = argc;
    c.report_argv = argv;
    c.timeout = o->timeout > 0 ? o->timeout : o->sandbox ? 30 : 60;
    c.max_instructions = o->max_instructions;
    c.max_memory = o->max_memory >= 0 ? o->max_memory : default_max_memory(o->sandbox);
    c.sandbox = o->sandbox;
    c.images = o->images;
    c.max_write = o->max_write;
    c.max_files = o->max_files;
    if (o->threads > 0) tt_set_num_threads(o->threads);
    tt_set_max_memory(c.max_memory);
    int code = o->watch ? ltt_compare_watch(&c) : ltt_compare(&c);
    ltt_limits_done();
    tt_release_caches();
    return code;
}

/* The figures' folder (--images or TT_IMAGES), tried now rather than at a
   lesson's first figure. Returns -1 to go on, or the exit status. */
static int open_images(options *o)
{
    const char *images_from = "--images";
    if (o->images == NULL && getenv("TT_IMAGES") && *getenv("TT_IMAGES")) {
        o->images = getenv("TT_IMAGES");
        images_from = "TT_IMAGES";
    }
    if (o->images) {
        struct stat st;
        const char *why = stat(o->images, &st) != 0 ? "the folder does not exist (make it with mkdir -p)"
                        : !S_ISDIR(st.st_mode) ? "not a folder"
                        : access(o->images, W_OK | X_OK) != 0 ? "the folder cannot be written" : NULL;
        if (why) {
            fprintf(stderr, PROGNAME ": %s '%s': %s\n(try '" PROGNAME " --help')\n", images_from, o->images, why);
            return 2;
        }
        ltt_figures_set_images(o->images);
    }
    return -1;
}

/* --report: the path comes from the person running the command, so
   --sandbox does not restrict it; it is tried now, not after the run.
   Returns -1 to go on, or the exit status. */
static int open_report(const options *o, int argc, char **argv)
{
    if (!o->report) return -1;
    const char *why = NULL;
    if (!o->script && !o->chunk) return usage_error("'--report' needs a script or -e chunk to run%s", "");
    if (!ltt_report_open(o->report, argc, argv, o->seed, o->script, &why)) {
        fprintf(stderr, PROGNAME ": cannot write the report '%s': %s\n(try '" PROGNAME " --help')\n", o->report, why);
        return 2;
    }
    return -1;
}

/* --sandbox and its options for the script's state; 0 when they cannot
   apply, said on stderr. */
static int open_sandbox(lua_State *L, const options *o)
{
    char dir[4096];
    const char *images = o->images ? o->images : "images", *err = NULL;
    if (!o->sandbox || (o->read && !ltt_sandbox_also_read(o->read, &err))) {
        if (!o->sandbox)
            fprintf(stderr, PROGNAME ": '%s' only applies with --sandbox\n(try '" PROGNAME " --help')\n",
                    o->read ? "--read" : o->max_write >= 0 ? "--max-write" : "--max-files");
        else
            fprintf(stderr, PROGNAME ": --read: %s ('%s')\n", err, o->read);
        return 0;
    }
    text_only = 1;
    ltt_sandbox_set_quota(o->max_write >= 0 ? o->max_write : LTT_DEFAULT_MAX_WRITE,
                          o->max_files >= 0 ? o->max_files : LTT_DEFAULT_MAX_FILES);
    if (!ltt_sandbox_open(L, images, o->images != NULL, script_dir(o->script, dir, sizeof dir), &err)) {
        fprintf(stderr, PROGNAME ": --sandbox: %s ('%s')\n", err, images);
        return 0;
    }
    return 1;
}

/* Runs the -e chunk, the script or the REPL; returns the Lua status. */
static int run_chosen(lua_State *L, const options *o, int argc, char **argv)
{
    int status = LUA_OK;
    if (o->chunk) {
        create_arg_table(L, argc, argv, o->script_arg - 1);
        ltt_trace_source("=(command line)", o->chunk);
        status = luaL_loadbufferx(L, o->chunk, strlen(o->chunk), "=(command line)", text_only ? "t" : NULL);
        if (status == LUA_OK) status = docall(L, 0, 0);
        report(L, status);
    } else if (o->script) {
        create_arg_table(L, argc, argv, o->script_arg);
        status = run_script(L, o->script, argc, argv, o->script_arg);
    } else {
        create_arg_table(L, argc, argv, 0);
        ltt_limits_pause(L);             /* each chunk gets its own clock */
        repl(L);
    }
    return status;
}

int main(int argc, char **argv)
{
    options o;
    int r = parse_args(argc, argv, &o);
    if (r >= 0) return r;
    if (o.compare || o.exercise || o.exercises) return check_main(&o, argc, argv);
    if (o.watch || o.compare_json || o.compare_csv || o.compare_figure || o.recheck)
        return usage_error("'%s' goes with --compare or --exercise", o.watch ? "--watch" : o.compare_json ? "--compare-json"
                           : o.compare_csv ? "--compare-csv" : o.recheck ? "--recheck" : "--compare-figure");

    int code = open_images(&o);
    if (code < 0) code = open_report(&o, argc, argv);
    if (code >= 0) return code;
    if (o.threads > 0) tt_set_num_threads(o.threads);
    long long mem_cap = o.max_memory >= 0 ? o.max_memory : default_max_memory(o.sandbox);
    tt_set_max_memory(mem_cap);
    timeout_s = o.timeout > 0 ? o.timeout : o.sandbox ? 30 : 0;
    max_instr = o.max_instructions;
    tt_manual_seed((uint64_t)o.seed);

    lua_State *L = ltt_newstate(mem_cap);
    if (L == NULL) {
        fprintf(stderr, PROGNAME ": cannot create the Lua state (out of memory)\n");
        return 1;
    }
    luaL_openlibs(L);
    open_tt(L);
    const char *err = NULL;
    if (!ltt_trace_start(L, o.trace, o.json, &err)) {
        fprintf(stderr, PROGNAME ": %s '%s': %s\n", err, o.json, strerror(errno));
        lua_close(L);
        return 2;
    }
    if ((o.sandbox || o.max_write >= 0 || o.max_files >= 0 || o.read) && !open_sandbox(L, &o)) {
        ltt_trace_stop();
        lua_close(L);
        return 2;
    }
    ltt_limits_start(L, timeout_s, max_instr);

    int status = run_chosen(L, &o, argc, argv);
    lua_sethook(L, NULL, 0, 0);
    ltt_limits_exit();                   /* finalizers at lua_close stay under the watchdog */
    ltt_trace_stop();
    lua_close(L);
    ltt_limits_done();
    int report_ok = ltt_report_finish();     /* after lua_close: what finalizers print is in */
    tt_release_caches();
    if (status == LUA_ERRFILE) return 2;   /* the script named on the command line is missing */
    return status == LUA_OK && report_ok ? 0 : 1;
}
