/*
** lfigures.c — tt.heatmap, tt.bars, tt.flow, tt.head_groups, tt.plot,
** tt.attend_figure: the Lua side of the figures. Turns an opts table into
** the core's option structs and a tensor view into a strided source the
** core reads in place (no copy, no trace event); core/figure/ draws.
** Order matters: every option is read first (an __index may run any Lua
** code, even close the tensor), each string stays on the stack until the
** end of the call, and only then is the tensor checked again and read.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lauxtt.h"
#include "lreport.h"
#include "lsandbox.h"
#include "lttlib.h"
#include "figure.h"

/* ===== Arguments ===== */

/* Row-major float copy of t (bool as 0/1); NULL when out of memory. Only
   for small tensors (a bar chart's at most 16 x 64). */
static float *to_floats(const tt_tensor *t, int64_t n)
{
    float *out = malloc((size_t)n * sizeof *out);
    if (out) tt_get_floats(t, out);
    return out;
}

/* Options. Every getter names the option in its error; the keys were
   checked against the op's list first (ltt_check_opts). */

/* A C string from Lua must not hold a NUL: the C side would stop there
   and draw (or write to) something else than asked. */
static const char *no_nul(lua_State *L, const char *s, size_t len, const char *op, const char *what)
{
    if (s && strlen(s) != len)
        ltt_error(L, "%s: %s contains a NUL byte (\\0); hint: C strings end there", op, what);
    return s;
}

/* opts.name as a string, or NULL when absent. The value stays on the
   stack for the rest of the call: an __index may return a string nothing
   else holds, and the collector must not free it while we draw. */
static const char *opt_string(lua_State *L, int opts, const char *op, const char *name)
{
    if (!opts) return NULL;
    luaL_checkstack(L, 2, "too many figure options");
    const int t = lua_getfield(L, opts, name);
    if (t == LUA_TNIL) { lua_pop(L, 1); return NULL; }
    if (t != LUA_TSTRING)
        ltt_error(L, "%s: option '%s' must be a string, not a %s", op, name, luaL_typename(L, -1));
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    char what[64];
    snprintf(what, sizeof what, "option '%s'", name);
    return no_nul(L, s, len, op, what);   /* left on the stack */
}

/* opts.name as a number; *has = 0 when absent. */
static double opt_number(lua_State *L, int opts, const char *op, const char *name, int *has)
{
    *has = 0;
    if (!opts) return 0.0;
    const int t = lua_getfield(L, opts, name);
    double v = 0.0;
    if (t != LUA_TNIL) {
        if (t != LUA_TNUMBER)
            ltt_error(L, "%s: option '%s' must be a number, not a %s", op, name, luaL_typename(L, -1));
        v = (double)lua_tonumber(L, -1);
        *has = 1;
    }
    lua_pop(L, 1);
    return v;
}

/* opts.decimals: an integer 0..8, or -1 when absent. */
static int opt_decimals(lua_State *L, int opts, const char *op)
{
    int has;
    const double d = opt_number(L, opts, op, "decimals", &has);
    if (!has) return -1;
    if (!(d >= 0 && d <= 8 && d == floor(d)))
        ltt_error(L, "%s: option 'decimals' must be a whole number from 0 to 8, not %g", op, d);
    return (int)d;
}

/* opts.name as a list of strings (numbers are converted; a nil hole keeps
   the default label). The pointer array is a userdata and converted
   strings live in an anchor table; both stay on the stack, so nothing
   leaks if a later check raises. */
static const char *const *opt_strings(lua_State *L, int opts, const char *op, const char *name, int *n)
{
    *n = 0;
    if (!opts) return NULL;
    const int t = lua_getfield(L, opts, name);
    if (t == LUA_TNIL) { lua_pop(L, 1); return NULL; }
    if (t != LUA_TTABLE)
        ltt_error(L, "%s: option '%s' must be a list of strings, not a %s", op, name, luaL_typename(L, -1));
    luaL_checkstack(L, 4, "too many figure options");
    const int list = lua_gettop(L);
    const lua_Integer len = luaL_len(L, list);
    if (len > 1000000) ltt_error(L, "%s: option '%s' has too many entries", op, name);
    const char **arr = lua_newuserdatauv(L, (size_t)(len ? len : 1) * sizeof *arr, 0);
    lua_createtable(L, (int)len, 0);   /* anchor */
    const int anchor = lua_gettop(L);
    for (lua_Integer i = 1; i <= len; i++) {
        const int et = lua_geti(L, list, i);
        if (et != LUA_TNIL && et != LUA_TSTRING && et != LUA_TNUMBER)
            ltt_error(L, "%s: option '%s' must be a list of strings (entry %lld is a %s)%s", op, name,
                      (long long)i, luaL_typename(L, -1),
                      et == LUA_TTABLE && strstr(name, "labels") && !strcmp(op, "heatmap")
                          ? "; hint: one list serves every panel; for tokens of their own, draw "
                            "each panel alone, e.g. x[1]"
                          : "");
        size_t slen = 0;
        arr[i - 1] = et == LUA_TNIL ? NULL : luaL_tolstring(L, -1, &slen);
        if (arr[i - 1]) {
            char what[96];
            snprintf(what, sizeof what, "option '%s' (entry %lld)", name, (long long)i);
            no_nul(L, arr[i - 1], slen, op, what);
            lua_rawseti(L, anchor, i);   /* keeps the string */
        }
        lua_pop(L, 1);
    }
    /* the list, the pointer array and the anchor stay on the stack */
    *n = (int)len;
    return arr;
}

/* Before any file is opened: the sandbox (--sandbox) may forbid the path
   (the PNG's temporary file goes in the same folder). */
static void check_write(lua_State *L, const char *path)
{
    ltt_sandbox_check_write(L, path);
}

/* After a figure file was written: it counts against the sandbox's quota
   (raises past a cap) and goes into the --report page. */
static void written(lua_State *L, const char *path, const char *title)
{
    ltt_sandbox_wrote(L, path);
    ltt_report_figure(path, title);
}

/* "file:line" of the calling script line, for the PNG's Source chunk. */
static void where(lua_State *L, char *buf, size_t n)
{
    luaL_where(L, 1);
    const char *w = lua_tostring(L, -1);
    size_t len = strlen(w);
    while (len && (w[len - 1] == ' ' || w[len - 1] == ':')) len--;
    if (len >= n) len = n - 1;
    memcpy(buf, w, len);
    buf[len] = '\0';
    lua_pop(L, 1);
}

/* ===== Where figures go ===== */

static char images_dir[4096];      /* --images DIR or TT_IMAGES; "" = paths as written */

void ltt_figures_set_images(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;           /* "out/" and "out" are one folder */
    if (n >= sizeof images_dir) n = sizeof images_dir - 1;
    memcpy(images_dir, dir, n);
    images_dir[n] = 0;
}

/* A path under "images/" (or "./images/") goes to DIR under --images DIR
   (or TT_IMAGES): that path is pushed and 1 returned; any other path, or
   no --images, stays as written (0, nothing pushed). */
static int images_path(lua_State *L, const char *path)
{
    const char *rest = strncmp(path, "images/", 7) == 0 ? path + 7 : strncmp(path, "./images/", 9) == 0 ? path + 9 : NULL;
    if (rest == NULL || !images_dir[0]) return 0;
    lua_pushfstring(L, "%s%s%s", images_dir, strcmp(images_dir, "/") == 0 ? "" : "/", rest);
    return 1;
}

/* The path argument: a string without NUL bytes. Lessons write their
   figures to "images/..." relative to where they run: with --images DIR
   (or TT_IMAGES) such a path goes to DIR instead, the argument at idx is
   replaced by it (it stays on the stack) and the function returns it.
   Other paths are written where they say. */
static const char *check_path(lua_State *L, int idx, const char *op)
{
    size_t len;
    const char *path = luaL_checklstring(L, idx, &len);
    no_nul(L, path, len, op, "the path");
    if (images_path(L, path)) {
        lua_replace(L, idx);
        return lua_tostring(L, idx);
    }
    struct stat st;
    if ((strncmp(path, "images/", 7) == 0 || strncmp(path, "./images/", 9) == 0)
        && (stat("images", &st) != 0 || !S_ISDIR(st.st_mode)))
        ltt_error(L, "%s: cannot write '%s': there is no folder 'images' here; hint: run from the folder that "
                  "holds images/, or pass --images DIR (or set TT_IMAGES=DIR) to write the figures there", op, path);
    return path;
}

/* tt.figure_path(path): where a figure written to path lands, so a lesson
   names the file it really wrote ("images/x.png", or DIR/x.png under
   --images DIR). */
static int ltt_figure_path(lua_State *L)
{
    size_t len;
    const char *path = luaL_checklstring(L, 1, &len);
    no_nul(L, path, len, "figure_path", "the path");
    if (!images_path(L, path)) lua_settop(L, 1);
    return 1;
}

/* ===== tt.heatmap(x, path [, opts]) ===== */

/* The strided source of tensor t seen as the figure's [P, R, C] (t is
   1-D, 2-D or 3-D; a missing leading dim has stride 0). */
static tt_fig_src fig_src(const tt_tensor *t)
{
    tt_fig_src src;
    src.f32 = t->dtype == TT_FLOAT32 ? tt_data_f32(t) : NULL;
    src.b8 = t->dtype == TT_BOOL ? tt_data_bool(t) : NULL;
    for (int k = 0; k < 3; k++) {
        const int d = t->ndim - 3 + k;
        src.stride[k] = d >= 0 ? t->stride[d] : 0;
    }
    return src;
}

/* A mask tensor at idx, checked against the figure tensor x: bool, and
   broadcastable to x's shape (each of its trailing dims equal or 1). */
static const tt_tensor *check_mask(lua_State *L, int idx, const tt_tensor *x, const char *what)
{
    const tt_tensor *m = ltt_totensor(L, idx);
    if (!m && luaL_testudata(L, idx, LTT_TENSOR)) ltt_error(L, "heatmap: %s is a closed tensor", what);
    if (!m)
        ltt_error(L, "heatmap: %s must be a bool tensor (true = hidden), not a %s", what,
                  luaL_typename(L, idx));
    char ms[256], xs[256];
    tt_shape_str(m, ms, sizeof ms);
    tt_shape_str(x, xs, sizeof xs);
    if (m->dtype != TT_BOOL)
        ltt_error(L, "heatmap: %s must be a bool tensor (true = hidden, as in masked_fill), got %s %s; "
                  "hint: a comparison such as w:eq(0) gives one", what, tt_dtype_name(m->dtype), ms);
    int ok = m->ndim <= x->ndim;
    for (int k = 1; ok && k <= m->ndim; k++) {
        const int64_t a = m->shape[m->ndim - k], b = x->shape[x->ndim - k];
        ok = a == b || a == 1;
    }
    if (!ok)
        ltt_error(L, "heatmap: %s %s does not broadcast to the figure's shape %s; hint: true = hidden, "
                  "one entry a cell (or size 1 to repeat)", what, ms, xs);
    return m;
}

/* m broadcast to x's figure shape [P, R, C]: stride 0 where m has size 1
   or no dim. */
static tt_fig_src mask_src(const tt_tensor *m, const tt_tensor *x)
{
    tt_fig_src src = { NULL, tt_data_bool(m), { 0, 0, 0 } };
    for (int k = 0; k < 3; k++) {
        const int dx = x->ndim - 3 + k, dm = m->ndim - 3 + k;
        if (dx >= 0 && dm >= 0 && m->shape[dm] == x->shape[dx] && x->shape[dx] > 1)
            src.stride[k] = m->stride[dm];
    }
    return src;
}

/* opts.mask: one bool tensor ("masked") or a table of named ones, kinds
   in the order of their sorted names. Each tensor and name is left on the
   stack (the tensor of kind k at pos[k]); returns the number of kinds. */
static int opt_masks(lua_State *L, int opts, const tt_tensor *x, const char **names, int *pos)
{
    if (!opts) return 0;
    luaL_checkstack(L, 2 * TT_FIG_MASK_KINDS + 4, "too many figure options");
    const int t = lua_getfield(L, opts, "mask");
    if (t == LUA_TNIL) { lua_pop(L, 1); return 0; }
    const int v = lua_gettop(L);
    if (t == LUA_TUSERDATA) {
        check_mask(L, v, x, "option 'mask'");
        names[0] = NULL;
        pos[0] = v;
        return 1;
    }
    if (t != LUA_TTABLE)
        ltt_error(L, "heatmap: option 'mask' must be a bool tensor or a table of named bool tensors "
                  "(e.g. {causal = m1, padding = m2}), not a %s", luaL_typename(L, v));
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, v)) {   /* collect the names (keys), raw */
        if (lua_type(L, -2) != LUA_TSTRING)
            ltt_error(L, "heatmap: option 'mask' as a table names each mask: {causal = m1, padding = m2} "
                      "(found a %s key)", luaL_typename(L, -2));
        if (n == TT_FIG_MASK_KINDS)
            ltt_error(L, "heatmap: option 'mask' has more than %d kinds; hint: combine some with |",
                      TT_FIG_MASK_KINDS);
        size_t len;
        const char *k = lua_tolstring(L, -2, &len);
        no_nul(L, k, len, "heatmap", "a name in option 'mask'");
        names[n++] = k;   /* the key lives in the table, which is on the stack */
        lua_pop(L, 1);
    }
    if (n == 0) ltt_error(L, "heatmap: option 'mask' is an empty table");
    for (int i = 1; i < n; i++)   /* sorted: the kinds do not depend on table order */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *tmp = names[j]; names[j] = names[j - 1]; names[j - 1] = tmp;
        }
    for (int i = 0; i < n; i++) {
        names[i] = lua_pushstring(L, names[i]);   /* the name, anchored */
        lua_pushvalue(L, -1);
        lua_rawget(L, v);                          /* its tensor above it */
        pos[i] = lua_gettop(L);
        char what[96];
        snprintf(what, sizeof what, "mask '%.60s'", names[i]);
        check_mask(L, -1, x, what);
    }
    return n;
}

/* opts.tiles = {rows, cols}: tile sizes for the borders. */
static void opt_tiles(lua_State *L, int opts, int *tr, int *tc)
{
    *tr = *tc = 0;
    if (!opts) return;
    const int t = lua_getfield(L, opts, "tiles");
    if (t == LUA_TNIL) { lua_pop(L, 1); return; }
    const int v = lua_gettop(L);
    if (t != LUA_TTABLE || luaL_len(L, v) != 2)
        ltt_error(L, "heatmap: option 'tiles' must be {rows, cols}: the tile size in cells");
    int out[2];
    for (int k = 0; k < 2; k++) {
        lua_geti(L, v, k + 1);
        const int isnum = lua_type(L, -1) == LUA_TNUMBER;
        const double d = isnum ? (double)lua_tonumber(L, -1) : 0.0;
        if (!isnum || !(d >= 1 && d <= 1e9 && d == floor(d)))
            ltt_error(L, "heatmap: option 'tiles' must be {rows, cols}, two whole numbers of cells "
                      "(entry %d is %s)", k + 1, isnum ? lua_tostring(L, -1) : luaL_typename(L, -1));
        out[k] = (int)d;
        lua_pop(L, 1);
    }
    *tr = out[0];
    *tc = out[1];
    lua_pop(L, 1);
}

/* tt.heatmap options:
     title         string (default: the tensor's label)
     xlabels       list of strings: column tokens, one a column (default 1..C)
     ylabels       list of strings: row tokens, one a row (default 1..R)
     xtitle        string: axis title across (default from the dim name, "Key")
     ytitle        string: axis title down (default from the dim name, "Query")
     panel_titles  list of strings: one a panel of a 3-D x (default
                   "head 1", ..., or "<dim name> 1", ... when dim 1 is named)
     annotate      boolean: values in the cells (default: on up to 16x16)
     decimals      whole number 0..8 (default from the data)
     cmap          "viridis", "diverging" (also "coolwarm", "RdBu"), "gray"
     vmin, vmax    numbers: ends of the colour scale
     colorbar      boolean (default true)
     row_scale     boolean: each row coloured on its own range
     downsample    "mean" (default) or "max": blocks of matrices over 1024
     mask          bool tensor, true = hidden (masked_fill's polarity),
                   broadcast to x: those cells hatched, legend "masked";
                   or {name = mask, ...}: a hatch and a legend entry a name
     row_sums      boolean: a margin column with each row's sum ("Σ row")
     categories    list of strings: x holds codes 1..n, drawn in distinct
                   colours with a legend of these names, no colour bar; a
                   bool x is drawn so by default (false light grey, true
                   blue, legend "false", "true"), and its two names are
                   those of false and true
     tiles         {rows, cols}: thick borders every rows rows, cols columns */
static const char *const heatmap_opts[] = {
    "title", "xlabels", "ylabels", "xtitle", "ytitle", "panel_titles", "annotate", "decimals",
    "cmap", "vmin", "vmax", "colorbar", "row_scale", "downsample", "mask", "row_sums",
    "categories", "tiles", NULL,
};

/* The axis titles a heatmap takes from x's dim names when none is given
   (in xbuf and ybuf, 64 bytes each); one name on both axes ("N", "N")
   says less than "Key (N)" and "Query (N)". */
static void titles_from_names(const tt_tensor *x, tt_heatmap_opts *o, char *xbuf, char *ybuf)
{
    const int nd = x->ndim;
    const char *xn = x->names[nd - 1], *yn = nd >= 2 ? x->names[nd - 2] : NULL;
    if (xn && yn && !strcmp(xn, yn)) {
        snprintf(xbuf, 64, "Key (%.40s)", xn);
        snprintf(ybuf, 64, "Query (%.40s)", yn);
        xn = xbuf;
        yn = ybuf;
    }
    if (!o->xtitle && xn) o->xtitle = xn;
    if (!o->ytitle && yn) o->ytitle = yn;
}

/* A 3-D x's panels named after its first dim ("B 1", "B 2", ...), unless
   it has no name or is the heads' (the panel's own number says it); the
   titles live in a userdata on the stack. */
static void panel_titles_from_dim(lua_State *L, const tt_tensor *x, tt_heatmap_opts *o)
{
    const int64_t P = x->shape[0];
    if (!x->names[0] || !strcmp(x->names[0], "H") || !strcmp(x->names[0], "head")) return;
    enum { TITLE = 48 };        /* 20 of the name, a space, up to 19 digits and a NUL */
    char **titles = lua_newuserdatauv(L, (size_t)P * (sizeof(char *) + TITLE), 0);
    char *text = (char *)(titles + P);
    for (int64_t p = 0; p < P; p++) {
        titles[p] = text + p * TITLE;
        snprintf(titles[p], TITLE, "%.20s %lld", x->names[0], (long long)p + 1);
    }
    o->panel_titles = (const char *const *)titles;
    o->npanel_titles = (int)P;
}

static int ltt_heatmap(lua_State *L)
{
    const tt_tensor *x = ltt_checktensor(L, 1);
    const char *path = check_path(L, 2, "heatmap");
    const int opts = lua_isnoneornil(L, 3) ? 0 : 3;
    ltt_check_opts(L, 3, "heatmap", heatmap_opts);
    char shape[256], source[256];
    tt_shape_str(x, shape, sizeof shape);
    if (x->ndim == 0 || x->ndim > 3)
        return ltt_error(L, "heatmap: expected a 2-D tensor (or 1-D: one row; 3-D: a grid of panels), got %s%s", shape,
                          x->ndim > 3 ? "; draw one slice, e.g. x[1]" : "");
    const int nd = x->ndim;
    const int64_t P = nd == 3 ? x->shape[0] : 1, R = nd >= 2 ? x->shape[nd - 2] : 1,
                  C = x->shape[nd - 1];

    /* 1. every option, before any tensor data is touched */
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);
    o.title = opt_string(L, opts, "heatmap", "title");
    if (!o.title) o.title = x->label;
    o.name = x->label;
    o.xtitle = opt_string(L, opts, "heatmap", "xtitle");
    o.ytitle = opt_string(L, opts, "heatmap", "ytitle");
    char xbuf[64], ybuf[64];
    titles_from_names(x, &o, xbuf, ybuf);
    o.xlabels = opt_strings(L, opts, "heatmap", "xlabels", &o.nxlabels);
    o.ylabels = opt_strings(L, opts, "heatmap", "ylabels", &o.nylabels);
    o.panel_titles = opt_strings(L, opts, "heatmap", "panel_titles", &o.npanel_titles);
    if (o.panel_titles && nd < 3)   /* the core cannot tell [R, C] from [1, R, C] */
        return ltt_error(L, "heatmap: panel_titles are for a 3-D tensor (one title a panel), got %.60s%s%s; "
                         "hint: title names a single matrix", x->label ? x->label : "",
                         x->label ? " " : "", shape);
    o.cmap = opt_string(L, opts, "heatmap", "cmap");
    o.downsample = opt_string(L, opts, "heatmap", "downsample");
    o.vmin = opt_number(L, opts, "heatmap", "vmin", &o.has_vmin);
    o.vmax = opt_number(L, opts, "heatmap", "vmax", &o.has_vmax);
    o.decimals = opt_decimals(L, opts, "heatmap");
    o.annotate = ltt_optflag(L, opts, "heatmap", "annotate", -1);
    o.colorbar = ltt_optflag(L, opts, "heatmap", "colorbar", -1);
    o.row_scale = ltt_optflag(L, opts, "heatmap", "row_scale", 0);
    o.row_sums = ltt_optflag(L, opts, "heatmap", "row_sums", 0);
    o.categories = opt_strings(L, opts, "heatmap", "categories", &o.ncategories);
    opt_tiles(L, opts, &o.tile_rows, &o.tile_cols);
    const char *mask_names[TT_FIG_MASK_KINDS];
    int mask_pos[TT_FIG_MASK_KINDS];
    const int nmasks = opt_masks(L, opts, x, mask_names, mask_pos);
    if (nd == 3 && P <= 64 && !o.panel_titles) panel_titles_from_dim(L, x, &o);
    where(L, source, sizeof source);
    o.meta.source = source;
    o.meta.shape = shape;
    o.meta.title = o.title;
    check_write(L, path);

    /* 2. an option's code may have closed a tensor: check again, then read */
    x = ltt_checktensor(L, 1);
    tt_fig_src masks[TT_FIG_MASK_KINDS];
    for (int k = 0; k < nmasks; k++) {
        char what[96];
        if (mask_names[k]) snprintf(what, sizeof what, "mask '%.60s'", mask_names[k]);
        else snprintf(what, sizeof what, "option 'mask'");
        masks[k] = mask_src(check_mask(L, mask_pos[k], x, what), x);
    }
    if (nmasks) {
        o.masks = masks;
        o.mask_names = mask_names;
        o.nmasks = nmasks;
    }
    tt_status st;
    if (tt_numel(x) == 0) {
        st = tt_heatmap_write(path, NULL, P, R, C, &o);   /* reports the empty shape */
    } else if (x->dtype == TT_INT64 || x->dtype == TT_BFLOAT16 || x->dtype == TT_FLOAT16) {
        /* ids and counts, 16-bit floats: drawn from a float copy (a
           userdata, so an error cannot leak it), exact (int64 up to 2^24) */
        float *f = lua_newuserdatauv(L, (size_t)tt_numel(x) * sizeof *f, 0);
        tt_get_floats(x, f);
        const tt_fig_src src = { .f32 = f, .stride = { R * C, C, 1 } };
        st = tt_heatmap_write_src(path, &src, P, R, C, &o);
    } else {
        const tt_fig_src src = fig_src(x);
        st = tt_heatmap_write_src(path, &src, P, R, C, &o);
    }
    if (st != TT_OK) return ltt_error(L, "%s", tt_errmsg());
    written(L, path, o.title);
    lua_pushstring(L, path);
    return 1;
}

/* ===== tt.bars(x, path [, opts]) ===== */

/* tt.bars options:
     title     string (default: the tensor's label)
     xlabels   list of strings: one a bar of a group (default 1..C)
     labels    list of strings: one a row (a vector is one), its group's title
     decimals  whole number 0..8 for the value labels (default from the data) */
static const char *const bars_opts[] = { "title", "xlabels", "labels", "decimals", NULL };

static int ltt_bars(lua_State *L)
{
    const tt_tensor *x = ltt_checktensor(L, 1);
    const char *path = check_path(L, 2, "bars");
    const int opts = lua_isnoneornil(L, 3) ? 0 : 3;
    ltt_check_opts(L, 3, "bars", bars_opts);
    char shape[256], source[256];
    tt_shape_str(x, shape, sizeof shape);
    if (x->ndim == 0 || x->ndim > 2)
        return ltt_error(L, "bars: expected a vector or a matrix (one group of bars a row), got %s%s",
                          shape, x->ndim > 2 ? "; hint: draw one slice, e.g. x[1], or use tt.heatmap" : "");
    const int64_t R = x->ndim == 2 ? x->shape[0] : 1, C = x->shape[x->ndim - 1];

    tt_bars_opts o;
    tt_bars_opts_init(&o);
    o.title = opt_string(L, opts, "bars", "title");
    if (!o.title) o.title = x->label;
    o.name = x->label;
    o.xlabels = opt_strings(L, opts, "bars", "xlabels", &o.nxlabels);
    o.series_labels = opt_strings(L, opts, "bars", "labels", &o.nseries);
    o.decimals = opt_decimals(L, opts, "bars");
    where(L, source, sizeof source);
    o.meta.source = source;
    o.meta.shape = shape;
    o.meta.title = o.title;

    check_write(L, path);
    x = ltt_checktensor(L, 1);   /* an option's code may have closed it */
    const int64_t n = tt_numel(x);
    tt_status st;
    if (n == 0 || R > 16 || C > 64) {   /* the core says what is wrong, no copy made */
        st = tt_bars_write(path, NULL, R, C, &o);
    } else {
        float *data = to_floats(x, n);
        if (!data) return ltt_error(L, "bars: out of memory copying %s", shape);
        st = tt_bars_write(path, data, R, C, &o);
        free(data);
    }
    if (st != TT_OK) return ltt_error(L, "%s", tt_errmsg());
    written(L, path, o.title);
    lua_pushstring(L, path);
    return 1;
}

/* ===== tt.flow(path [, opts]) ===== */

/* tt.flow options:
     title  string (default "Pipeline") */
static const char *const flow_opts[] = { "title", NULL };

static int ltt_flow(lua_State *L)
{
    const char *path = check_path(L, 1, "flow");
    const int opts = lua_isnoneornil(L, 2) ? 0 : 2;
    ltt_check_opts(L, 2, "flow", flow_opts);
    char source[256];
    tt_flow_opts o;
    memset(&o, 0, sizeof o);
    o.title = opt_string(L, opts, "flow", "title");
    where(L, source, sizeof source);
    o.meta.source = source;
    o.meta.title = o.title;
    check_write(L, path);
    if (tt_flow_write(path, &o) != TT_OK) return ltt_error(L, "%s", tt_errmsg());
    written(L, path, o.title ? o.title : "Pipeline");
    lua_pushstring(L, path);
    return 1;
}

/* ===== tt.head_groups(path, opts) ===== */

/* A positive whole number at the top of the stack (popped), naming what
   it is in the error. The core checks the ranges. */
static int pop_count(lua_State *L, const char *what)
{
    const int isnum = lua_type(L, -1) == LUA_TNUMBER;
    const double d = isnum ? (double)lua_tonumber(L, -1) : 0.0;
    if (!isnum || !(d >= 1 && d <= 1e6 && d == floor(d)))
        ltt_error(L, "head_groups: %s must be a positive whole number, not %s", what,
                  isnum ? lua_tostring(L, -1) : luaL_typename(L, -1));
    lua_pop(L, 1);
    return (int)d;
}

/* tt.head_groups options:
     q_heads   whole number 1..64: the query heads (required)
     kv_heads  list of whole numbers, each dividing q_heads: the K/V heads
               of each variant, one panel each (required), e.g. {8, 2, 1}
     titles    list of strings, one a variant (default "MHA", "GQA", "MQA"
               from the counts)
     title     string over the panels */
static const char *const head_groups_opts[] = { "title", "q_heads", "kv_heads", "titles", NULL };

static int ltt_head_groups(lua_State *L)
{
    const char *path = check_path(L, 1, "head_groups");
    luaL_checktype(L, 2, LUA_TTABLE);
    ltt_check_opts(L, 2, "head_groups", head_groups_opts);
    tt_head_groups_opts o;
    tt_head_groups_opts_init(&o);
    o.title = opt_string(L, 2, "head_groups", "title");
    if (lua_getfield(L, 2, "q_heads") == LUA_TNIL)
        return ltt_error(L, "head_groups: option 'q_heads' is missing (the number of query heads, e.g. 8)");
    o.q_heads = pop_count(L, "option 'q_heads'");
    const int t = lua_getfield(L, 2, "kv_heads");
    if (t == LUA_TNIL)
        return ltt_error(L, "head_groups: option 'kv_heads' is missing (the K/V heads of each variant, "
                         "e.g. {8, 2, 1})");
    if (t != LUA_TTABLE)
        return ltt_error(L, "head_groups: option 'kv_heads' must be a list of whole numbers, not a %s",
                         luaL_typename(L, -1));
    const int list = lua_gettop(L);
    const lua_Integer n = luaL_len(L, list);
    if (n > 1000) return ltt_error(L, "head_groups: option 'kv_heads' has too many entries");
    int *kv = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *kv, 0);   /* freed by the GC */
    for (lua_Integer i = 1; i <= n; i++) {
        char what[64];
        snprintf(what, sizeof what, "option 'kv_heads' (entry %lld)", (long long)i);
        lua_geti(L, list, i);
        kv[i - 1] = pop_count(L, what);
    }
    o.kv_heads = kv;
    o.nvariants = (int)n;
    o.titles = opt_strings(L, 2, "head_groups", "titles", &o.ntitles);
    char source[256];
    where(L, source, sizeof source);
    o.meta.source = source;
    o.meta.title = o.title;
    check_write(L, path);
    if (tt_head_groups_write(path, &o) != TT_OK) return ltt_error(L, "%s", tt_errmsg());
    written(L, path, o.title);
    lua_pushstring(L, path);
    return 1;
}

/* ===== tt.plot(series, path [, opts]) ===== */

/* Field key of series k (at idx) as doubles: a list of numbers or a 1-D
   tensor. The array is a userdata left on the stack. NULL when absent. */
static const double *series_values(lua_State *L, int idx, int k, const char *key, int64_t *n)
{
    *n = 0;
    const int t = lua_getfield(L, idx, key);
    if (t == LUA_TNIL) { lua_pop(L, 1); return NULL; }
    const int v = lua_gettop(L);
    const tt_tensor *x = ltt_testtensor(L, v);
    double *out;
    if (x) {
        char shape[256];
        tt_shape_str(x, shape, sizeof shape);
        if (x->storage == NULL) ltt_error(L, "plot: series %d's %s is a closed tensor", k, key);
        if (x->ndim != 1)
            ltt_error(L, "plot: series %d's %s must be a 1-D tensor or a list of numbers, got %s; "
                      "hint: x:view(-1) flattens it", k, key, shape);
        const int64_t len = x->shape[0];
        out = lua_newuserdatauv(L, (size_t)(len ? len : 1) * sizeof *out, 0);
        float *f = malloc((size_t)(len ? len : 1) * sizeof *f);   /* nothing raises until freed */
        if (!f) ltt_error(L, "plot: out of memory copying %s", shape);
        tt_get_floats(x, f);
        for (int64_t i = 0; i < len; i++) out[i] = f[i];
        free(f);
        *n = len;
    } else if (t == LUA_TTABLE) {
        const lua_Integer len = luaL_len(L, v);
        if (len > 100000000) ltt_error(L, "plot: series %d's %s has too many entries", k, key);
        out = lua_newuserdatauv(L, (size_t)(len ? len : 1) * sizeof *out, 0);
        for (lua_Integer i = 1; i <= len; i++) {
            if (lua_geti(L, v, i) != LUA_TNUMBER)
                ltt_error(L, "plot: series %d's %s must hold numbers (entry %lld is a %s)", k, key,
                          (long long)i, luaL_typename(L, -1));
            out[i - 1] = (double)lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
        *n = len;
    } else {
        ltt_error(L, "plot: series %d's %s must be a list of numbers or a 1-D tensor, not a %s", k, key,
                  luaL_typename(L, v));
        return NULL;
    }
    return out;   /* the value and the array stay on the stack */
}

/* One series table at idx: {name = ..., x = ..., y = ..., yerr = ...}. */
static void read_series(lua_State *L, int idx, int k, tt_plot_series *s)
{
    luaL_checkstack(L, 8, "too many series");
    if (lua_type(L, idx) != LUA_TTABLE)
        ltt_error(L, "plot: series %d must be a table {name = ..., x = {...}, y = {...}}, not a %s", k,
                  luaL_typename(L, idx));
    static const char *const keys[] = { "name", "x", "y", "yerr", NULL };
    ltt_check_opts(L, idx, "plot (a series)", keys);
    s->name = opt_string(L, idx, "plot", "name");
    s->x = series_values(L, idx, k, "x", &s->nx);
    s->y = series_values(L, idx, k, "y", &s->ny);
    s->yerr = series_values(L, idx, k, "yerr", &s->nyerr);
    if (!s->y)
        ltt_error(L, "plot: series %d%s%s%s has no y; hint: {name = \"loss\", x = steps, y = losses} "
                  "(x defaults to 1, 2, ...)", k, s->name ? " '" : "", s->name ? s->name : "",
                  s->name ? "'" : "");
}

/* tt.plot options:
     title, xtitle, ytitle  strings
     xlog, ylog   booleans: log axes, a tick a decade labelled 10^k
     legend       boolean (default: on for more than one series)
     markers      boolean (default: on when no series has over 20 points)
     ymin, ymax   numbers: fixed ends of the y axis (default: the data and its bars) */
static const char *const plot_opts[] = { "title", "xtitle", "ytitle", "xlog", "ylog", "legend",
                                         "markers", "ymin", "ymax", NULL };

/* opts.ymin or opts.ymax: a finite number, or NaN when absent. */
static double plot_end(lua_State *L, int opts, const char *name)
{
    int has;
    const double v = opt_number(L, opts, "plot", name, &has);
    if (has && !isfinite(v)) ltt_error(L, "plot: option '%s' must be a finite number, not %g", name, v);
    return has ? v : (double)NAN;
}

static int ltt_plot(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    const char *path = check_path(L, 2, "plot");
    const int opts = lua_isnoneornil(L, 3) ? 0 : 3;
    ltt_check_opts(L, 3, "plot", plot_opts);
    tt_plot_series series[TT_PLOT_MAX_SERIES];
    memset(series, 0, sizeof series);
    int ns;
    if (lua_getfield(L, 1, "y") != LUA_TNIL) {   /* one series given alone */
        lua_pop(L, 1);
        ns = 1;
        read_series(L, 1, 1, &series[0]);
    } else {
        lua_pop(L, 1);
        const lua_Integer n = luaL_len(L, 1);
        if (n == 0)
            return ltt_error(L, "plot: nothing to draw: no series; hint: tt.plot({{name = \"loss\", "
                             "x = steps, y = losses}}, path)");
        if (n > TT_PLOT_MAX_SERIES)
            return ltt_error(L, "plot: %lld series, at most %d fit one chart (one colour each); hint: "
                             "draw them in two charts", (long long)n, TT_PLOT_MAX_SERIES);
        ns = (int)n;
        for (int k = 0; k < ns; k++) {
            lua_geti(L, 1, k + 1);
            read_series(L, lua_gettop(L), k + 1, &series[k]);
        }
    }
    tt_plot_opts o;
    tt_plot_opts_init(&o);
    o.title = opt_string(L, opts, "plot", "title");
    o.xtitle = opt_string(L, opts, "plot", "xtitle");
    o.ytitle = opt_string(L, opts, "plot", "ytitle");
    o.xlog = ltt_optflag(L, opts, "plot", "xlog", 0);
    o.ylog = ltt_optflag(L, opts, "plot", "ylog", 0);
    o.legend = ltt_optflag(L, opts, "plot", "legend", -1);
    o.markers = ltt_optflag(L, opts, "plot", "markers", -1);
    o.ymin = plot_end(L, opts, "ymin");
    o.ymax = plot_end(L, opts, "ymax");
    char source[256], shape[64];
    where(L, source, sizeof source);
    snprintf(shape, sizeof shape, "%d series", ns);
    o.meta.source = source;
    o.meta.shape = shape;
    o.meta.title = o.title;
    check_write(L, path);
    if (tt_plot_write(path, series, ns, &o) != TT_OK) return ltt_error(L, "%s", tt_errmsg());
    written(L, path, o.title ? o.title : "plot");
    lua_pushstring(L, path);
    return 1;
}

/* ===== tt.attend_figure(q, K, V, path [, opts]) ===== */

/* tt.attend_figure options:
     title     string (default "One query's attention")
     labels    list of strings: the key tokens, one a row of K
     query     string: the query's token, named in the subtitle
     scale     number multiplying q.k (default 1/sqrt(Dh))
     decimals  whole number 0..8 (default 3) */
static const char *const attend_opts[] = { "title", "labels", "query", "scale", "decimals", NULL };

static int ltt_attend_figure(lua_State *L)
{
    const tt_tensor *q = ltt_checktensor(L, 1), *K = ltt_checktensor(L, 2), *V = ltt_checktensor(L, 3);
    const char *path = check_path(L, 4, "attend_figure");
    const int opts = lua_isnoneornil(L, 5) ? 0 : 5;
    ltt_check_opts(L, 5, "attend_figure", attend_opts);
    char qs[256], ks[256], vs[256];
    tt_shape_str(q, qs, sizeof qs);
    tt_shape_str(K, ks, sizeof ks);
    tt_shape_str(V, vs, sizeof vs);
    const int qok = q->ndim == 1 || (q->ndim == 2 && q->shape[0] == 1);
    if (!qok || K->ndim != 2 || V->ndim != 2)
        return ltt_error(L, "attend_figure: expected one query q [Dh] (or [1,Dh]), keys K [Nk,Dh] and values "
                         "V [Nk,Dv], got q %s, K %s, V %s%s", qs, ks, vs,
                         !qok && q->ndim == 2 ? "; hint: one query row, e.g. Q[3]" : "");
    const int64_t dh = q->shape[q->ndim - 1], nk = K->shape[0], dv = V->shape[1];
    if (K->shape[1] != dh)
        return ltt_error(L, "attend_figure: q %s and K %s differ in Dh (%lld vs %lld)", qs, ks, (long long)dh,
                         (long long)K->shape[1]);
    if (V->shape[0] != nk)
        return ltt_error(L, "attend_figure: K %s and V %s differ in the number of keys (%lld vs %lld); "
                         "hint: one value row a key", ks, vs, (long long)nk, (long long)V->shape[0]);
    if (dh > 1000000)
        return ltt_error(L, "attend_figure: q %s is too long to draw", qs);
    tt_attend_opts o;
    tt_attend_opts_init(&o);
    o.title = opt_string(L, opts, "attend_figure", "title");
    o.labels = opt_strings(L, opts, "attend_figure", "labels", &o.nlabels);
    o.query = opt_string(L, opts, "attend_figure", "query");
    o.scale = opt_number(L, opts, "attend_figure", "scale", &o.has_scale);
    o.decimals = opt_decimals(L, opts, "attend_figure");
    char source[256], shape[800];
    where(L, source, sizeof source);
    snprintf(shape, sizeof shape, "q %s, K %s, V %s", qs, ks, vs);
    o.meta.source = source;
    o.meta.shape = shape;
    o.meta.title = o.title;
    check_write(L, path);
    /* an option's code may have closed a tensor: check again, then read */
    q = ltt_checktensor(L, 1);
    K = ltt_checktensor(L, 2);
    V = ltt_checktensor(L, 3);
    tt_status st;
    if (nk == 0 || nk > TT_ATTEND_MAX_KEYS || dv == 0 || dv > TT_ATTEND_MAX_DV || dh == 0) {
        st = tt_attend_write(path, NULL, NULL, NULL, (int)(nk > 1000000 ? 1000000 : nk), (int)dh,
                             (int)(dv > 1000000 ? 1000000 : dv), &o);   /* the core says what is wrong */
    } else {
        float *buf = malloc((size_t)(dh + nk * dh + nk * dv) * sizeof *buf);
        if (!buf) return ltt_error(L, "attend_figure: out of memory copying %s", shape);
        tt_get_floats(q, buf);
        tt_get_floats(K, buf + dh);
        tt_get_floats(V, buf + dh + nk * dh);
        st = tt_attend_write(path, buf, buf + dh, buf + dh + nk * dh, (int)nk, (int)dh, (int)dv, &o);
        free(buf);
    }
    if (st != TT_OK) return ltt_error(L, "%s", tt_errmsg());
    written(L, path, o.title ? o.title : "One query's attention");
    lua_pushstring(L, path);
    return 1;
}

static const luaL_Reg figlib[] = {
    { "heatmap", ltt_heatmap },
    { "bars", ltt_bars },
    { "flow", ltt_flow },
    { "head_groups", ltt_head_groups },
    { "plot", ltt_plot },
    { "attend_figure", ltt_attend_figure },
    { "figure_path", ltt_figure_path },
    { NULL, NULL },
};

void ltt_open_figures(lua_State *L)
{
    luaL_setfuncs(L, figlib, 0);
}
