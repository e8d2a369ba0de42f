/*
** fuzz_writers.c — libFuzzer harness for everything tensortrace writes
** from a script's strings: the JSON Lines trace, the --report page and
** SVG figures. The input is up to 8 strings split at the byte 0x1E (any
** other byte may be in them: NUL, '<', invalid UTF-8); a string "*K..."
** is its rest repeated to K x 128 KiB (megabyte labels). A fixed script
** puts them where a script can: section titles, tensor labels and dim
** names, print and io.write, figure titles, axis labels and legends, an
** assert_close message, the script's name and command line, an error.
** Afterwards every JSON line must parse strictly, every SVG must be
** well-formed XML of tensortrace's own elements, and the page HTML whose
** only elements, attributes and script are tensortrace's (wellformed.h).
** Build and run: make fuzz-parsers.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lua.h>
#include <lualib.h>
#include <lauxlib.h>

#include "lreport.h"
#include "lsandbox.h"
#include "ltrace.h"
#include "lttlib.h"
#include "tt.h"
#include "wellformed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NSTR 8

static const char script[] =
    "local S, dir = ...\n"
    "local function try(f, ...) pcall(f, ...) end\n"
    "tt.trace.section(S[1])\n"
    "local x = tt.tensor{{1, -2, 3}, {0.5, 4, -1}}\n"
    "try(function() x = x:label(S[2]) end)\n"
    "try(function() x = x:named(S[3], S[4]) end)\n"
    "local y = x:softmax(-1)\n"
    "try(function() y = y:label(S[3]) end)\n"
    "print(S[4])\n"
    "io.write(S[5], '\\n')\n"
    "try(tt.heatmap, y, dir .. '/h.svg', {title = S[6], xlabels = {S[1], S[2], S[3]}, ylabels = {S[4], S[5]},\n"
    "    xtitle = S[7], ytitle = S[8], annotate = true})\n"
    "try(tt.bars, tt.tensor{1, 2, 3}, dir .. '/b.svg', {title = S[2], xlabels = {S[6], S[7], S[8]}})\n"
    "try(tt.plot, {{name = S[5], x = {1, 2, 3}, y = {1, 4, 9}}}, dir .. '/p.svg',\n"
    "    {title = S[3], xtitle = S[4], ytitle = S[1], legend = true})\n"
    "tt.trace.section(S[8])\n"
    "try(tt.assert_close, x, x + 1, 1e-5, 1e-5, S[6])\n"
    "local z = (y * 2):sum()\n"
    "if #S[8] % 2 == 1 then error(S[7], 0) end\n";

static char dir[64];

static void remove_dir(void)
{
    static const char *const names[] = { "r.html", "t.jsonl", "h.svg", "b.svg", "p.svg" };
    char path[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    char *buf = NULL;
    size_t cap = 0, len = 0, k;
    do {
        if (cap - len < 65536) {
            char *nb = realloc(buf, cap = cap * 2 + 65536 + 1);
            if (nb == NULL) { free(buf); fclose(f); return NULL; }
            buf = nb;
        }
        k = fread(buf + len, 1, cap - len - 1, f);
        len += k;
    } while (k > 0);
    fclose(f);
    buf[len] = 0;
    *n = len;
    return buf;
}

static void check_file(const char *name, int kind, const char *const *strs)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t n = 0;
    char *s = read_all(path, &n);
    if (s == NULL) return;                  /* that writer refused the input: fine */
    unlink(path);
    int ok = 1;
    wf_at = NULL;
    if (kind == 'j') {
        for (char *line = s, *nl; ok && line < s + n; line = nl + 1) {
            nl = memchr(line, '\n', (size_t)(s + n - line));
            if (nl == NULL) { ok = wf_fail("JSON: the last line has no newline"); break; }
            ok = wf_json_line(line, (size_t)(nl - line));
        }
    } else {
        ok = strlen(s) == n ? wf_markup(s, n, kind == 'h') : wf_fail("markup: a NUL byte");
    }
    if (!ok) {
        fprintf(stderr, "fuzz_writers: %s is not well-formed and inert: %s\n", name, wf_why);
        if (wf_at) fprintf(stderr, "  near: %.120s\n", (const char *)wf_at);
        for (int i = 0; i < NSTR; i++) fprintf(stderr, "  S[%d] = %.200s\n", i + 1, strs[i]);
        abort();
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192) return 0;
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fuzz_writers.XXXXXX");
        if (mkdtemp(dir) == NULL) abort();
        atexit(remove_dir);
    }
    /* the strings, with lengths (they may hold NUL) */
    char *strs[NSTR];
    size_t lens[NSTR];
    size_t at = 0;
    for (int i = 0; i < NSTR; i++) {
        size_t e = at;
        while (e < size && data[e] != 0x1e) e++;
        size_t n = e > at ? e - at : 0;
        const uint8_t *src = at < size ? data + at : (const uint8_t *)"";
        size_t total = n;
        if (n >= 2 && src[0] == '*' && src[1] >= '1' && src[1] <= '9') {
            src += 2;
            n -= 2;
            total = n ? (size_t)(data[at + 1] - '0') << 17 : 0;
        }
        strs[i] = malloc(total + 1);
        if (strs[i] == NULL) abort();
        for (size_t k = 0; k < total; k++) strs[i][k] = (char)src[k % n];
        strs[i][total] = 0;
        lens[i] = total;
        at = e + 1;
    }

    char html[128], json[128];
    snprintf(html, sizeof html, "%s/r.html", dir);
    snprintf(json, sizeof json, "%s/t.jsonl", dir);
    char *argv[] = { (char *)"tensortrace", (char *)"--report", html, (char *)"-e", strs[0], NULL };
    const char *why = NULL;
    if (!ltt_report_open(html, 5, argv, 0, strs[1], &why)) abort();
    tt_manual_seed(0);
    lua_State *L = ltt_newstate((int64_t)1 << 30);
    if (L == NULL) abort();
    luaL_openlibs(L);
    luaL_requiref(L, "tt", luaopen_tt, 1);
    lua_pop(L, 1);
    const char *err = NULL;
    if (!ltt_trace_start(L, LTT_TRACE_OFF, json, &err)) abort();
    ltt_trace_source("=(command line)", script);
    if (luaL_loadbufferx(L, script, sizeof script - 1, "=(command line)", "t") != LUA_OK) abort();
    lua_createtable(L, NSTR, 0);
    for (int i = 0; i < NSTR; i++) {
        lua_pushlstring(L, strs[i], lens[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_pushstring(L, dir);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        ltt_report_error(msg ? msg : "(error object is not a string)");
        lua_pop(L, 1);
    }
    ltt_trace_stop();
    lua_close(L);
    ltt_report_finish();

    check_file("t.jsonl", 'j', (const char *const *)strs);
    check_file("r.html", 'h', (const char *const *)strs);
    check_file("h.svg", 's', (const char *const *)strs);
    check_file("b.svg", 's', (const char *const *)strs);
    check_file("p.svg", 's', (const char *const *)strs);
    for (int i = 0; i < NSTR; i++) free(strs[i]);
    return 0;
}
