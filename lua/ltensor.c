/*
** ltensor.c — the tensor part of `tt`: creation functions, the "tt.Tensor"
** metatable (methods and operators) and the checks.
** Every call converts Lua arguments, calls one core op, and turns a
** failure into a Lua error that carries the script's file:line.
*/
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lauxtt.h"
#include "ltrace.h"
#include "lttlib.h"

/* ===== Argument helpers of the tensor functions ===== */

/* A tensor operand that may also be a number (binops, allclose): the
   tensor, or NULL for anything else; a closed tensor is an error that
   names the op rather than "got userdata". */
static tt_tensor *opttensor(lua_State *L, int idx, const char *op)
{
    tt_tensor *t = ltt_testtensor(L, idx);
    if (t && t->storage == NULL) ltt_error(L, "%s: tensor was closed (argument %d)", op, idx);
    return t;
}

static int optdim(lua_State *L, int idx, const tt_tensor *t, int def, const char *op)
{
    return lua_isnoneornil(L, idx) ? def : ltt_checkdim(L, idx, t, 0, op);
}

/* Shape from varargs of integers or one table, starting at idx; stops at
   the first non-number (dtype strings, values). Returns ndim. */
static int checkshape(lua_State *L, int idx, int64_t *shape, const char *op, int *next)
{
    int n = 0;
    if (lua_istable(L, idx)) {
        lua_Integer len = luaL_len(L, idx);
        if (len > TT_MAX_DIMS) ltt_error(L, "%s: %d dims given, at most %d are supported", op, (int)len, TT_MAX_DIMS);
        for (lua_Integer i = 1; i <= len; i++) {
            lua_geti(L, idx, i);
            if (!ltt_tointeger(L, -1, &shape[n]))
                ltt_error(L, "%s: size %d must be an integer, got %s", op, (int)i,
                           lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
            n++;
            lua_pop(L, 1);
        }
        if (next) *next = idx + 1;
        return n;
    }
    int top = lua_gettop(L);
    for (; idx <= top && lua_type(L, idx) == LUA_TNUMBER; idx++) {
        if (n == TT_MAX_DIMS) ltt_error(L, "%s: more than %d dims given", op, TT_MAX_DIMS);
        if (!ltt_tointeger(L, idx, &shape[n]))
            ltt_error(L, "%s: size %d must be an integer, got %s", op, n + 1, lua_tostring(L, idx));
        n++;
    }
    if (next) *next = idx;
    return n;
}

static void check_sizes(lua_State *L, int ndim, const int64_t *shape, const char *op)
{
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) ltt_error(L, "%s: size %lld at dim %d is negative", op, (long long)shape[i], i + 1);
}

/* The dtype named s (PyTorch's names, and "float", "long", "half"); 0 if none. */
static int dtype_named(const char *s, tt_dtype *dt)
{
    static const struct { const char *name; tt_dtype dt; } names[] = {
        {"float32", TT_FLOAT32}, {"float", TT_FLOAT32}, {"bool", TT_BOOL}, {"int64", TT_INT64}, {"long", TT_INT64},
        {"bfloat16", TT_BFLOAT16}, {"float16", TT_FLOAT16}, {"half", TT_FLOAT16},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0) {
            *dt = names[i].dt;
            return 1;
        }
    return 0;
}

static tt_dtype optdtype(lua_State *L, int idx, const char *op)
{
    if (lua_isnoneornil(L, idx)) return TT_FLOAT32;
    const char *s = ltt_checkcstring(L, idx, op, "dtype");
    tt_dtype dt = TT_FLOAT32;
    if (!dtype_named(s, &dt))
        ltt_error(L, "%s: unknown dtype '%s' (expected \"float32\", \"bfloat16\", \"float16\", \"int64\" or \"bool\")",
                  op, s);
    return dt;
}

static void push_ints(lua_State *L, int n, const int64_t *v)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushinteger(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

/* ===== Creation ===== */

/* tt.tensor(nested_table [, dtype]): walk once for the shape (rejecting
   ragged tables), then fill a flat buffer. */
typedef struct nested {
    int ndim;
    int64_t shape[TT_MAX_DIMS];
    int has_bool, has_number;
} nested;

static void nested_shape(lua_State *L, int idx, int depth, nested *nt, const char *path)
{
    if (lua_istable(L, idx)) {
        if (depth >= TT_MAX_DIMS) ltt_error(L, "tensor: table nested deeper than %d levels", TT_MAX_DIMS);
        lua_Integer len = luaL_len(L, idx);
        if (len < 0) ltt_error(L, "tensor: %s has a negative length (%lld)", path, (long long)len);
        if (depth == nt->ndim) {
            nt->shape[depth] = len;
            nt->ndim++;
        } else if (depth > nt->ndim || nt->shape[depth] != len) {
            ltt_error(L, "tensor: ragged nested table: %s has %lld elements where %lld were expected", path,
                       (long long)len, (long long)(depth < nt->ndim ? nt->shape[depth] : 0));
        }
        if (len > 0) {
            lua_geti(L, idx, 1);
            char sub[128];
            snprintf(sub, sizeof sub, "%s[1]", path);
            nested_shape(L, lua_gettop(L), depth + 1, nt, sub);
            lua_pop(L, 1);
        }
        return;
    }
    if (depth != nt->ndim) ltt_error(L, "tensor: ragged nested table: %s is a %s where a table was expected",
                                      path, luaL_typename(L, idx));
}

static void nested_fill(lua_State *L, int idx, int depth, const nested *nt, tt_dtype dt, char *buf,
                        int64_t *pos, char *path, size_t pathlen)
{
    if (depth == nt->ndim) {
        int ty = lua_type(L, idx);
        if (ty == LUA_TTABLE)
            ltt_error(L, "tensor: ragged nested table: %s is a table where a value was expected", path);
        if (ty != LUA_TNUMBER && ty != LUA_TBOOLEAN)
            ltt_error(L, "tensor: %s is a %s, expected a number%s", path, luaL_typename(L, idx),
                       dt == TT_BOOL ? " or boolean" : "");
        double v = ty == LUA_TBOOLEAN ? (double)lua_toboolean(L, idx) : lua_tonumber(L, idx);
        if (dt == TT_INT64) {
            lua_Integer iv;
            if (lua_isinteger(L, idx)) iv = lua_tointeger(L, idx);
            else if (fabs(v) < 9223372036854775808.0) iv = (lua_Integer)v;   /* truncates, as PyTorch */
            else iv = LUA_MININTEGER;
            /* an integer is exact to 64 bits; a float past 2^53 has lost its low digits already */
            if (!lua_isinteger(L, idx) && (fabs(v) > 9007199254740992.0 || isnan(v)))
                ltt_error(L, "tensor: %s is the float %.17g, beyond 2^53 where a float no longer holds every "
                          "integer; hint: write it as a Lua integer (9007199254740993, not 2^53 + 1: ^ gives a float)",
                          path, v);
            ((int64_t *)buf)[*pos] = iv;
        } else if (dt == TT_BOOL) ((uint8_t *)buf)[*pos] = v != 0.0;
        else if (dt == TT_FLOAT32) ((float *)buf)[*pos] = (float)v;
        else ((uint16_t *)buf)[*pos] = tt_half_from_float(dt, (float)v);   /* as PyTorch: via float32 */
        (*pos)++;
        return;
    }
    if (!lua_istable(L, idx))
        ltt_error(L, "tensor: ragged nested table: %s is a %s where a table was expected", path, luaL_typename(L, idx));
    lua_Integer len = luaL_len(L, idx);
    if (len != nt->shape[depth])
        ltt_error(L, "tensor: ragged nested table: %s has %lld elements where %lld were expected", path,
                   (long long)len, (long long)nt->shape[depth]);
    size_t base = strlen(path);
    for (lua_Integer i = 1; i <= len; i++) {
        snprintf(path + base, pathlen - base, "[%lld]", (long long)i);
        lua_geti(L, idx, i);
        nested_fill(L, lua_gettop(L), depth + 1, nt, dt, buf, pos, path, pathlen);
        lua_pop(L, 1);
    }
    path[base] = 0;
}

/* A tensor from the nested table (or number or boolean) at idx, pushed on
   the stack; the dtype is the string at dtidx, or with dtidx == 0 (or nil
   there) bool when the first leaf is a boolean. Errors are raised from the
   C function that called this one, so they carry the script's file:line. */
static tt_tensor *from_nested(lua_State *L, int idx, int dtidx)
{
    idx = lua_absindex(L, idx);
    luaL_checkstack(L, TT_MAX_DIMS + 8, "tensor");   /* one slot per level, and a few */
    nested nt = {0};
    nested_shape(L, idx, 0, &nt, "t");
    tt_dtype dt = TT_FLOAT32;
    if (dtidx && !lua_isnoneornil(L, dtidx)) dt = optdtype(L, dtidx, "tensor");
    else {
        lua_pushvalue(L, idx);
        for (int d = 0; d < nt.ndim && lua_istable(L, -1); d++) {
            if (nt.shape[d] == 0) break;
            lua_geti(L, -1, 1);
            lua_remove(L, -2);
        }
        if (lua_type(L, -1) == LUA_TBOOLEAN) dt = TT_BOOL;
        lua_pop(L, 1);
    }
    int64_t n = 1;
    for (int i = 0; i < nt.ndim; i++) {
        if (nt.shape[i] && n > INT64_MAX / 8 / nt.shape[i])   /* a __len can claim anything */
            ltt_error(L, "tensor: nested table is too large (dim %d has %lld elements)", i + 1,
                      (long long)nt.shape[i]);
        n *= nt.shape[i];
    }
    /* the buffer is a userdata so a Lua error while filling cannot leak it */
    char *buf = lua_newuserdatauv(L, (size_t)(n ? n : 1) * tt_dtype_size(dt), 0);
    int64_t pos = 0;
    char path[512] = "t";
    nested_fill(L, idx, 0, &nt, dt, buf, &pos, path, sizeof path);
    tt_tensor *t = ltt_newtensor(L);
    ltt_check(L, tt_from_buffer(t, dt, nt.ndim, nt.shape, buf));
    lua_remove(L, -2);                  /* the buffer */
    return t;
}

static int ltt_tensor_new(lua_State *L)
{
    int ty = lua_type(L, 1);
    if (ty != LUA_TTABLE && ty != LUA_TNUMBER && ty != LUA_TBOOLEAN)
        return luaL_argerror(L, 1, lua_pushfstring(L, "nested table or number expected, got %s", luaL_typename(L, 1)));
    from_nested(L, 1, 2);
    return 1;
}

/* tt.zeros / tt.ones / tt.rand / tt.randn share shape parsing. */
static int create(lua_State *L, int kind, const char *op)
{
    int64_t shape[TT_MAX_DIMS];
    int next;
    int ndim = checkshape(L, 1, shape, op, &next);
    check_sizes(L, ndim, shape, op);
    int named = next > 1 && lua_type(L, next) == LUA_TSTRING;     /* a dtype after the sizes */
    tt_dtype dt = kind <= 1 || named ? optdtype(L, next, op) : TT_FLOAT32;
    if (kind > 1 && !lua_isnone(L, next) && !named)
        ltt_error(L, "%s: sizes must be integers, got %s", op, luaL_typename(L, next));
    if (kind > 1 && !tt_dtype_is_float(dt))
        ltt_error(L, "%s: draws floats, not %s; hint: tt.randint(lo, hi, shape...) for integers", op,
                  tt_dtype_name(dt));
    tt_tensor *t = ltt_newtensor(L);
    tt_status st = kind == 0 ? tt_zeros(t, dt, ndim, shape)
                 : kind == 1 ? tt_ones(t, dt, ndim, shape)
                 : tt_random(t, kind == 2 ? TT_OP_RAND : TT_OP_RANDN, dt, ndim, shape);
    ltt_check(L, st);
    return 1;
}

static int ltt_zeros(lua_State *L) { return create(L, 0, "zeros"); }
static int ltt_ones(lua_State *L) { return create(L, 1, "ones"); }
static int ltt_rand(lua_State *L) { return create(L, 2, "rand"); }
static int ltt_randn(lua_State *L) { return create(L, 3, "randn"); }

/* tt.randint(lo, hi, sizes...): int64 in [lo, hi), as PyTorch's. */
static int ltt_randint(lua_State *L)
{
    int64_t lo, hi, shape[TT_MAX_DIMS];
    if (!ltt_tointeger(L, 1, &lo) || !ltt_tointeger(L, 2, &hi))
        return ltt_error(L, "randint: expects integers lo, hi then sizes: tt.randint(0, 10, 2, 3)");
    int next;
    int ndim = checkshape(L, 3, shape, "randint", &next);
    check_sizes(L, ndim, shape, "randint");
    if (!lua_isnone(L, next))
        return ltt_error(L, "randint: sizes must be integers, got %s", luaL_typename(L, next));
    tt_tensor *t = ltt_newtensor(L);
    ltt_check(L, tt_randint(t, lo, hi, ndim, shape));
    return 1;
}

/* tt.full(sizes..., value [, dtype]) or tt.full({sizes}, value [, dtype]) */
static int ltt_full(lua_State *L)
{
    int64_t shape[TT_MAX_DIMS];
    int top = lua_gettop(L);
    tt_dtype dt = TT_FLOAT32;
    if (top >= 2 && lua_type(L, top) == LUA_TSTRING) {
        dt = optdtype(L, top, "full");
        lua_settop(L, --top);
    }
    int ndim;
    tt_number v;
    if (lua_istable(L, 1)) {
        ndim = checkshape(L, 1, shape, "full", NULL);
        luaL_checknumber(L, 2);
        v = ltt_number(L, 2);
    } else {
        if (top < 1 || lua_type(L, top) != LUA_TNUMBER)
            return ltt_error(L, "full: expects sizes then a value: tt.full(2, 3, 0.5) or tt.full({2, 3}, 0.5)");
        v = ltt_number(L, top);
        lua_settop(L, top - 1);
        ndim = checkshape(L, 1, shape, "full", NULL);
    }
    check_sizes(L, ndim, shape, "full");
    tt_tensor *t = ltt_newtensor(L);
    ltt_check(L, tt_full_number(t, dt, ndim, shape, v));
    return 1;
}

/* tt.arange(n [, dtype]), tt.arange(a, b [, step] [, dtype]): Lua
   integers count in integers (exact to the ends of the int64 range),
   any float in doubles (float32 only) */
static int ltt_arange(lua_State *L)
{
    int top = lua_gettop(L);
    tt_dtype dt = TT_FLOAT32;
    if (top >= 2 && lua_type(L, top) == LUA_TSTRING) {
        dt = optdtype(L, top, "arange");
        lua_settop(L, --top);
    }
    int nb = lua_isnoneornil(L, 2) ? 1 : lua_isnoneornil(L, 3) ? 2 : 3;
    for (int i = 1; i <= nb; i++) luaL_checknumber(L, i);
    int ints = 1;
    for (int i = 1; i <= nb; i++) ints &= lua_isinteger(L, i);
    tt_tensor *t = ltt_newtensor(L);
    if (ints) {
        int64_t a = nb == 1 ? 0 : lua_tointeger(L, 1), b = lua_tointeger(L, nb == 1 ? 1 : 2);
        ltt_check(L, tt_arange_int(t, dt, a, b, nb == 3 ? lua_tointeger(L, 3) : 1));
        return 1;
    }
    if (dt != TT_FLOAT32)
        return ltt_error(L, "arange: %s counts from integer bounds and step; got a float among them (%s); "
                         "hint: math.tointeger(x), or tt.arange(...):long()", tt_dtype_name(dt),
                         lua_tostring(L, !lua_isinteger(L, 1) ? 1 : !lua_isinteger(L, 2) ? 2 : 3));
    double a = nb == 1 ? 0 : lua_tonumber(L, 1), b = lua_tonumber(L, nb == 1 ? 1 : 2);
    ltt_check(L, tt_arange(t, a, b, nb == 3 ? lua_tonumber(L, 3) : 1));
    return 1;
}

static int ltt_eye(lua_State *L)
{
    lua_Integer n = luaL_checkinteger(L, 1), m = luaL_optinteger(L, 2, n);
    if (n < 0 || m < 0) return ltt_error(L, "eye: sizes must be non-negative, got %lld, %lld", (long long)n, (long long)m);
    tt_tensor *t = ltt_newtensor(L);
    ltt_check(L, tt_eye(t, n, m));
    return 1;
}

static int ltt_manual_seed(lua_State *L)
{
    tt_manual_seed((uint64_t)luaL_checkinteger(L, 1));
    return 0;
}

static int ltt_clock(lua_State *L)
{
    lua_pushnumber(L, (lua_Number)tt_now_ns() * 1e-9);
    return 1;
}

/* tt.kernel_path([path]): "avx512_bf16", "avx512", "avx2" or "scalar", the path the
   kernels run on, so a script that times something can say what it timed.
   With a path, the ops run on it from then on ("auto": the CPU's choice):
   the portable "scalar" path gives the same bits on every machine, and a
   script can time one path against another. */
static int ltt_kernel_path(lua_State *L)
{
    if (!lua_isnoneornil(L, 1)) {
        const char *want = luaL_checkstring(L, 1);
        static const char *const known[] = {"avx512_bf16", "avx512", "avx2", "scalar", "auto", NULL};
        int k = 0;
        while (known[k] && strcmp(known[k], want) != 0) k++;
        if (!known[k])
            return luaL_error(L, "kernel_path: unknown path '%s' (paths: avx512_bf16, avx512, avx2, scalar, auto)", want);
        if (!tt_set_kernel_path(want))
            return luaL_error(L, "kernel_path: this machine (or build) cannot run the %s path; "
                              "it runs %s; hint: \"scalar\" runs everywhere", want, tt_kernel_path());
    }
    lua_pushstring(L, tt_kernel_path());
    return 1;
}

/* tt.isatty(fd): whether file descriptor fd (0 stdin, 1 stdout, 2 stderr)
   is a terminal, so a script can print progress for a person watching and
   nothing into a file or a pipe. */
static int ltt_isatty(lua_State *L)
{
    lua_Integer fd = luaL_checkinteger(L, 1);
    luaL_argcheck(L, fd >= 0 && fd <= INT_MAX, 1, "file descriptor must be >= 0");
    lua_pushboolean(L, isatty((int)fd) == 1);
    return 1;
}

/* ===== Inspection ===== */

/* A shape: a plain list of sizes with a metatable "tt.Shape" that prints
   it as [5,64] (as PyTorch prints torch.Size with its sizes), compares
   it by value with == (x.shape == y.shape, x.shape == {5, 64}), joins it
   with .. and makes it callable, so that x.shape, x.shape() and
   x:shape() all give it. */
#define LTT_SHAPE "tt.Shape"

/* "[5,64]": the table's raw entries, whatever a script put in them */
static int shape_tostring(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addchar(&b, '[');
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
    for (lua_Integer i = 1; i <= n; i++) {
        if (i > 1) luaL_addchar(&b, ',');
        lua_rawgeti(L, 1, i);
        luaL_tolstring(L, -1, NULL);
        lua_remove(L, -2);
        luaL_addvalue(&b);
    }
    luaL_addchar(&b, ']');
    luaL_pushresult(&b);
    return 1;
}

/* x.shape() and x:shape(): the shape itself */
static int shape_call(lua_State *L)
{
    lua_settop(L, 1);
    return 1;
}

static int shape_eq(lua_State *L)
{
    int same = lua_istable(L, 1) && lua_istable(L, 2) && lua_rawlen(L, 1) == lua_rawlen(L, 2);
    for (lua_Integer i = 1; same && i <= (lua_Integer)lua_rawlen(L, 1); i++) {
        lua_rawgeti(L, 1, i);
        lua_rawgeti(L, 2, i);
        same = lua_compare(L, -1, -2, LUA_OPEQ);
        lua_pop(L, 2);
    }
    lua_pushboolean(L, same);
    return 1;
}

static int shape_concat(lua_State *L)
{
    luaL_tolstring(L, 1, NULL);
    luaL_tolstring(L, 2, NULL);
    lua_concat(L, 2);
    return 1;
}

static void push_shape(lua_State *L, const tt_tensor *t)
{
    push_ints(L, t->ndim, t->shape);
    if (luaL_newmetatable(L, LTT_SHAPE)) {
        static const luaL_Reg meta[] = {
            {"__tostring", shape_tostring}, {"__call", shape_call}, {"__eq", shape_eq},
            {"__concat", shape_concat}, {NULL, NULL}
        };
        luaL_setfuncs(L, meta, 0);
    }
    lua_setmetatable(L, -2);
}

static int t_shape(lua_State *L)
{
    push_shape(L, ltt_checktensor(L, 1));
    return 1;
}

static int t_size(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    if (lua_isnoneornil(L, 2)) return t_shape(L);
    lua_pushinteger(L, t->shape[ltt_checkdim(L, 2, t, 0, "size")]);
    return 1;
}

static int t_dim(lua_State *L) { lua_pushinteger(L, ltt_checktensor(L, 1)->ndim); return 1; }
static int t_numel(lua_State *L) { lua_pushinteger(L, tt_numel(ltt_checktensor(L, 1))); return 1; }
static int t_offset(lua_State *L) { lua_pushinteger(L, ltt_checktensor(L, 1)->offset); return 1; }
static int t_dtype(lua_State *L) { lua_pushstring(L, tt_dtype_name(ltt_checktensor(L, 1)->dtype)); return 1; }
static int t_is_contiguous(lua_State *L) { lua_pushboolean(L, tt_is_contiguous(ltt_checktensor(L, 1))); return 1; }

static int t_stride(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    if (lua_isnoneornil(L, 2)) push_ints(L, t->ndim, t->stride);
    else lua_pushinteger(L, t->stride[ltt_checkdim(L, 2, t, 0, "stride")]);
    return 1;
}

static int t_shares_storage(lua_State *L)
{
    lua_pushboolean(L, ltt_checktensor(L, 1)->storage == ltt_checktensor(L, 2)->storage);
    return 1;
}

static void push_elem(lua_State *L, const tt_tensor *t, int64_t flat)
{
    if (t->storage == NULL)             /* closed by a finalizer an allocation ran */
        ltt_error(L, "totable: tensor was closed during the call (by a finalizer)");
    if (t->dtype == TT_INT64) {
        lua_pushinteger(L, tt_get_i64(t, flat));
        return;
    }
    double v = tt_get(t, flat);
    if (t->dtype == TT_BOOL) lua_pushboolean(L, v != 0.0);
    else lua_pushnumber(L, v);
}

static int t_item(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    if (tt_numel(t) != 1) {
        char shp[256];
        return ltt_error(L, "item: needs a tensor with exactly one element, got %s (%lld elements)",
                          tt_shape_str(t, shp, sizeof shp), (long long)tt_numel(t));
    }
    push_elem(L, t, 0);
    return 1;
}

static void totable_rec(lua_State *L, const tt_tensor *t, int d, int64_t *flat)
{
    if (d == t->ndim) {
        push_elem(L, t, (*flat)++);
        return;
    }
    lua_createtable(L, (int)t->shape[d], 0);
    for (int64_t i = 0; i < t->shape[d]; i++) {
        totable_rec(L, t, d + 1, flat);
        lua_rawseti(L, -2, i + 1);
    }
}

static int t_totable(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    int64_t flat = 0;
    luaL_checkstack(L, TT_MAX_DIMS + 4, "totable");
    totable_rec(L, t, 0, &flat);
    return 1;
}

static int t_tostring(lua_State *L)
{
    tt_tensor *t = ltt_testtensor(L, 1);
    if (t == NULL) return luaL_typeerror(L, 1, LTT_TENSOR);
    if (t->storage == NULL) {
        lua_pushliteral(L, "tensor (closed)");
        return 1;
    }
    char *s = tt_tensor_format(t);
    if (s == NULL) return ltt_error(L, "tostring: out of memory");
    lua_pushstring(L, s);
    free(s);
    return 1;
}

static int t_len(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    if (t->ndim == 0) return ltt_error(L, "#: a 0-d tensor has no length; use x:item()");
    lua_pushinteger(L, t->shape[0]);
    return 1;
}

static int t_label(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    if (lua_isnoneornil(L, 2)) {
        if (t->label) lua_pushstring(L, t->label);
        else lua_pushnil(L);
        return 1;
    }
    t->label = tt_intern(ltt_checkcstring(L, 2, "label", "the label"));
    ltt_trace_label(t);
    ltt_label_hook(L, t);
    lua_settop(L, 1);
    return 1;
}

static int t_names(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    lua_createtable(L, t->ndim, 1);
    for (int i = 0; i < t->ndim; i++) {      /* "_" for an unnamed dim: no holes */
        lua_pushstring(L, t->names[i] ? t->names[i] : "_");
        lua_rawseti(L, -2, i + 1);
    }
    lua_pushinteger(L, t->ndim);
    lua_setfield(L, -2, "n");
    return 1;
}

static int t_named(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    const char *names[TT_MAX_DIMS] = {0};
    int table = lua_istable(L, 2);
    lua_Integer given = table ? luaL_len(L, 2) : lua_gettop(L) - 1;
    int64_t n;
    if (table && lua_getfield(L, 2, "n") != LUA_TNIL) {
        if (!ltt_tointeger(L, -1, &n) || n < 0 || n > TT_MAX_DIMS)
            return ltt_error(L, "named: field 'n' must be a count of names from 0 to %d, got %s", TT_MAX_DIMS,
                             lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
        given = (int)n;
    }
    if (table) lua_pop(L, 1);
    if (given != t->ndim) {
        char shp[256];
        return ltt_error(L, "named: %lld names given for %s, which has %d dims", (long long)given,
                          tt_shape_str(t, shp, sizeof shp), t->ndim);
    }
    for (int i = 0; i < t->ndim; i++) {
        int idx = i + 2;
        if (table) { lua_geti(L, 2, i + 1); idx = -1; }
        if (lua_type(L, idx) == LUA_TSTRING && strcmp(lua_tostring(L, idx), "_") != 0)   /* "_": unnamed */
            names[i] = tt_intern(ltt_checkcstring(L, idx, "named", "a name"));
        else if (lua_type(L, idx) == LUA_TSTRING) {}
        else if (!lua_isnil(L, idx) && !(lua_isboolean(L, idx) && !lua_toboolean(L, idx)))
            return ltt_error(L, "named: name %d must be a string or nil, got %s", i + 1, luaL_typename(L, idx));
        if (table) lua_pop(L, 1);
    }
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    ltt_hold(L, "named", LTT_LEN(in), in);
    ltt_unhold(L, LTT_LEN(in), in, tt_named(out, t, names));
    return 1;
}

/* ===== Views ===== */

static int t_view_like(lua_State *L, int may_copy)
{
    const char *op = may_copy ? "reshape" : "view";
    tt_tensor *t = ltt_checktensor(L, 1);
    int64_t shape[TT_MAX_DIMS];
    int next;
    int ndim = checkshape(L, 2, shape, op, &next);
    if (!lua_isnone(L, next)) return ltt_error(L, "%s: sizes must be integers, got %s", op, luaL_typename(L, next));
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, op, in, may_copy ? tt_reshape(out, t, ndim, shape) : tt_view(out, t, ndim, shape));
    return 1;
}

static int t_view(lua_State *L) { return t_view_like(L, 0); }
static int t_reshape(lua_State *L) { return t_view_like(L, 1); }

static int t_transpose(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    int d1 = ltt_checkdim(L, 2, t, 0, "transpose"), d2 = ltt_checkdim(L, 3, t, 0, "transpose");
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "transpose", in, tt_transpose(out, t, d1, d2));
    return 1;
}

static int t_mT(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "mT", in, tt_mT(out, t));
    return 1;
}

static int t_permute(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    int perm[TT_MAX_DIMS];
    int table = lua_istable(L, 2);
    lua_Integer given = table ? luaL_len(L, 2) : lua_gettop(L) - 1;
    if (given != t->ndim) {
        char shp[256];
        return ltt_error(L, "permute: %lld dims given for %s, which has %d", (long long)given,
                         tt_shape_str(t, shp, sizeof shp), t->ndim);
    }
    for (int i = 0; i < t->ndim; i++) {
        if (table) {
            lua_geti(L, 2, i + 1);
            perm[i] = ltt_checkdim(L, lua_gettop(L), t, 0, "permute");
            lua_pop(L, 1);
        } else {
            perm[i] = ltt_checkdim(L, i + 2, t, 0, "permute");
        }
    }
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "permute", in, tt_permute(out, t, perm));
    return 1;
}

static int t_narrow(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    int d = ltt_checkdim(L, 2, t, 0, "narrow");
    lua_Integer start = luaL_checkinteger(L, 3), len = luaL_checkinteger(L, 4);
    int64_t size = t->shape[d];
    lua_Integer first = start < 0 ? start + size + 1 : start;     /* -1 is the last position */
    if (start <= 0 && (first < 1 || len < 0 || first - 1 > size - len)) {   /* say what the script wrote */
        char shp[256];
        return ltt_error(L, "narrow: range start %lld, length %lld is outside dim %d of %s (size %lld); %s",
                         (long long)start, (long long)len, d + 1, tt_shape_str(t, shp, sizeof shp), (long long)size,
                         start == 0 ? "Lua counts from 1" : "-1 is the last position");
    }
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "narrow", in, tt_narrow(out, t, d, first - 1, len));
    return 1;
}

static int select_impl(lua_State *L, tt_tensor *t, int d, lua_Integer i)
{
    char shp[256];
    int64_t size = t->shape[d];
    if (i == 0)
        return ltt_error(L, "select: index 0 is not valid for dim %d of %s; Lua counts from 1", d + 1,
                          tt_shape_str(t, shp, sizeof shp));
    if (i < 0) {                        /* -1 is the last; errors say what the script wrote */
        if (i < -size)
            return ltt_error(L, "select: index %lld out of range for dim %d of %s (valid 1..%lld or -%lld..-1)",
                             (long long)i, d + 1, tt_shape_str(t, shp, sizeof shp), (long long)size, (long long)size);
        i += size + 1;
    }
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "select", in, tt_select(out, t, d, i - 1));
    return 1;
}

static int t_select(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    int d = ltt_checkdim(L, 2, t, 0, "select");
    return select_impl(L, t, d, luaL_checkinteger(L, 3));
}

static int t_expand(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    int64_t shape[TT_MAX_DIMS];
    int ndim = checkshape(L, 2, shape, "expand", NULL);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "expand", in, tt_expand(out, t, ndim, shape));
    return 1;
}

static int t_unsqueeze(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    int d = ltt_checkdim(L, 2, t, 1, "unsqueeze");
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "unsqueeze", in, tt_unsqueeze(out, t, d));
    return 1;
}

static int t_squeeze(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    int d = optdim(L, 2, t, -1, "squeeze");
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "squeeze", in, tt_squeeze(out, t, d));
    return 1;
}

static int t_contiguous(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "contiguous", in, tt_contiguous(out, t));
    return 1;
}

static int t_clone(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "clone", in, tt_clone(out, t));
    return 1;
}

/* chunk and split return a Lua list of views. */
static int pieces(lua_State *L, int is_chunk)
{
    const char *op = is_chunk ? "chunk" : "split";
    tt_tensor *t = ltt_checktensor(L, 1);
    lua_Integer n = luaL_checkinteger(L, 2);
    int d = optdim(L, 3, t, 0, op);
    if (n <= 0) return ltt_error(L, "%s: %s must be positive, got %lld", op, is_chunk ? "number of chunks" : "split size", (long long)n);
    int64_t size = t->shape[d];
    int64_t count = size == 0 ? 1 : is_chunk ? (n < size ? n : size) : size / n + (size % n != 0);
    if (count > 1000000) return ltt_error(L, "%s: %lld pieces is too many", op, (long long)count);
    /* Every userdata is made first: between the core call and the moves
       below nothing allocates, so no error can strand a reference. */
    tt_tensor **dst = lua_newuserdatauv(L, (size_t)count * sizeof *dst, 0);
    tt_tensor *outs = lua_newuserdatauv(L, (size_t)count * sizeof *outs, 0);
    lua_createtable(L, (int)count, 0);
    for (int i = 0; i < count; i++) {
        dst[i] = ltt_newtensor(L);
        lua_rawseti(L, -2, i + 1);
    }
    int got = 0;
    tt_tensor *in[] = {t};
    LTT_CALL_HELD(L, op, in, is_chunk ? tt_chunk(outs, (int)count, &got, t, n, d) : tt_split(outs, (int)count, &got, t, n, d));
    for (int i = 0; i < got; i++) *dst[i] = outs[i];    /* the references move into the userdata */
    for (int i = got; i < count; i++) {                 /* fewer pieces than planned */
        lua_pushnil(L);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* x:unbind([d]): a Lua list of the selects along d (default 1), as PyTorch */
static int t_unbind(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    int d = optdim(L, 2, t, 0, "unbind");
    int64_t count = t->shape[d];
    if (count > 1000000) return ltt_error(L, "unbind: %lld pieces is too many", (long long)count);
    tt_tensor **dst = lua_newuserdatauv(L, (size_t)(count ? count : 1) * sizeof *dst, 0);
    tt_tensor *outs = lua_newuserdatauv(L, (size_t)(count ? count : 1) * sizeof *outs, 0);
    lua_createtable(L, (int)count, 0);
    for (int i = 0; i < count; i++) {
        dst[i] = ltt_newtensor(L);
        lua_rawseti(L, -2, i + 1);
    }
    int got = 0;
    tt_tensor *in[] = {t};
    LTT_CALL_HELD(L, "unbind", in, tt_unbind(outs, (int)count, &got, t, d));
    for (int i = 0; i < got; i++) *dst[i] = outs[i];
    return 1;
}

/* x:flatten([start [, end]]): dims start..end (default 1..-1) into one */
static int t_flatten(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor one = *t;                 /* a 0-d tensor takes dims 1 and -1 as [1]'s */
    if (one.ndim == 0) one.ndim = 1, one.shape[0] = 1;
    int start = optdim(L, 2, &one, 0, "flatten"), end = optdim(L, 3, &one, one.ndim - 1, "flatten");
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "flatten", in, tt_flatten(out, t, start, end));
    return 1;
}

static int t_t(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "t", in, tt_t(out, t));
    return 1;
}

static int t_isnan(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "isnan", in, tt_isnan(out, t));
    return 1;
}

/* x:any([d [, keepdim]]), x:all(...) */
static int any_all(lua_State *L, int all)
{
    const char *name = all ? "all" : "any";
    tt_tensor *t = ltt_checktensor(L, 1);
    int d = optdim(L, 2, t, -1, name);
    int keep = lua_toboolean(L, 3);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, name, in, (all ? tt_all : tt_any)(out, t, d, keep));
    return 1;
}

static int t_any(lua_State *L) { return any_all(L, 0); }
static int t_all(lua_State *L) { return any_all(L, 1); }

/* x:norm([p [, d [, keepdim]]]): PyTorch's Tensor.norm; p = 2 by default,
   math.huge (or "inf") for max |x|, "fro" is 2 */
static int t_norm(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    double p = 2;
    if (lua_type(L, 2) == LUA_TSTRING) {
        const char *ps = lua_tostring(L, 2);
        if (strcmp(ps, "fro") == 0) p = 2;
        else if (strcmp(ps, "inf") == 0) p = HUGE_VAL;
        else return ltt_error(L, "norm: p must be a number, \"fro\" or \"inf\", got \"%s\"", ps);
    } else if (!lua_isnoneornil(L, 2)) {
        if (lua_type(L, 2) != LUA_TNUMBER) return ltt_error(L, "norm: p must be a number, got %s", luaL_typename(L, 2));
        p = lua_tonumber(L, 2);
    }
    int d = optdim(L, 3, t, -1, "norm");
    int keep = lua_toboolean(L, 4);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "norm", in, tt_norm(out, t, p, d, keep));
    return 1;
}

/* tt.where(cond, a, b): PyTorch's torch.where; a and b tensors or numbers */
static int ltt_where(lua_State *L)
{
    lua_settop(L, 3);
    tt_tensor *cond = ltt_checktensor(L, 1);
    tt_tensor *ab[2] = {opttensor(L, 2, "where"), opttensor(L, 3, "where")};
    for (int i = 0; i < 2; i++)
        if (!ab[i] && lua_type(L, i + 2) != LUA_TNUMBER)
            return ltt_error(L, "where: argument %d must be a tensor or a number, got %s", i + 2, luaL_typename(L, i + 2));
    tt_tensor *out = ltt_newtensor(L), *in[] = {cond, ab[0], ab[1]};
    LTT_CALL_HELD(L, "where", in, tt_where(out, cond, ab[0], ltt_number(L, 2), ab[1], ltt_number(L, 3)));
    return 1;
}

/* tt.rope(x, positions [, {interleaved = false, base = 10000}]):
   rotary position embedding; interleaved = false is HF's rotate_half */
static int ltt_rope(lua_State *L)
{
    tt_tensor *x = ltt_checktensor(L, 1);
    if (!ltt_testtensor(L, 2))
        return ltt_error(L, "rope: positions must be a tensor (int64 or float32), got a %s; hint: tt.arange(N)",
                         luaL_typename(L, 2));
    tt_tensor *pos = ltt_checktensor(L, 2);
    static const char *const known[] = {"interleaved", "base", NULL};
    ltt_check_opts(L, 3, "rope", known);
    int opts = lua_istable(L, 3) ? 3 : 0;
    int interleaved = ltt_optflag(L, opts, "rope", "interleaved", 0);
    double base = ltt_optnumber(L, opts, "rope", "base", 10000);
    tt_tensor *out = ltt_newtensor(L), *in[] = {x, pos};
    LTT_CALL_HELD(L, "rope", in, tt_rope(out, x, pos, base, interleaved));
    return 1;
}

/* tt.dropout(x, p [, train]): PyTorch's F.dropout; train false (default
   true) gives x itself */
static int ltt_dropout(lua_State *L)
{
    tt_tensor *x = ltt_checktensor(L, 1);
    double p = luaL_checknumber(L, 2);
    int train = lua_isnoneornil(L, 3) ? 1 : (luaL_checktype(L, 3, LUA_TBOOLEAN), lua_toboolean(L, 3));
    if (!train) {
        if (!(p >= 0 && p <= 1)) return ltt_error(L, "dropout: p must be a probability in [0, 1], got %g", p);
        lua_settop(L, 1);
        return 1;
    }
    tt_tensor *out = ltt_newtensor(L), *in[] = {x};
    LTT_CALL_HELD(L, "dropout", in, tt_dropout(out, x, p));
    return 1;
}

static int t_chunk(lua_State *L) { return pieces(L, 1); }
static int t_split(lua_State *L) { return pieces(L, 0); }

/* ===== Arithmetic and comparisons ===== */

/* The ops of the op table's elementwise and reduction rows: one closure
   each, the op as its upvalue (registered in ltt_open_tensor). */
static tt_op op_upvalue(lua_State *L)
{
    return (tt_op)lua_tointeger(L, lua_upvalueindex(1));
}

/* a op b, either a number: the metamethods (__add, ...) */
static int binop(lua_State *L)
{
    tt_op op = op_upvalue(L);
    const char *name = tt_op_name(op);
    tt_tensor *a = opttensor(L, 1, name), *b = opttensor(L, 2, name);
    if (a && b) {
        tt_tensor *out = ltt_newtensor(L), *in[] = {a, b};
        LTT_CALL_HELD(L, name, in, tt_binary(out, op, a, b));
        return 1;
    }
    int ti = a ? 1 : 2, si = a ? 2 : 1;
    if (!(a || b)) return ltt_error(L, "%s: expects a tensor operand, got %s and %s", name, luaL_typename(L, 1), luaL_typename(L, 2));
    if (lua_type(L, si) != LUA_TNUMBER) {
        char shp[256];
        return ltt_error(L, "%s: expects a tensor or a number, got %s %s %s", name,
                          a ? tt_shape_str(a, shp, sizeof shp) : luaL_typename(L, 1), name,
                          a ? luaL_typename(L, 2) : tt_shape_str(b, shp, sizeof shp));
    }
    tt_tensor *out = ltt_newtensor(L), *in[] = {a ? a : b};
    LTT_CALL_HELD(L, name, in, tt_binary_number(out, op, a ? a : b, ltt_number(L, si), ti == 2));
    return 1;
}

/* x:maximum(y), x:eq(y), ...: as the metamethods with x a tensor */
static int binop_method(lua_State *L)
{
    ltt_checktensor(L, 1);
    return binop(L);
}

static int unop(lua_State *L)
{
    tt_op op = op_upvalue(L);
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, tt_op_name(op), in, tt_unary(out, op, t));
    return 1;
}

static int convert(lua_State *L, tt_dtype dt)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    static const char *method[] = { [TT_FLOAT32] = "float", [TT_BOOL] = "bool", [TT_INT64] = "long",
                                    [TT_BFLOAT16] = "bfloat16", [TT_FLOAT16] = "half" };
    LTT_CALL_HELD(L, method[dt], in, tt_to_dtype(out, t, dt));
    return 1;
}

static int t_float(lua_State *L) { return convert(L, TT_FLOAT32); }
static int t_bfloat16(lua_State *L) { return convert(L, TT_BFLOAT16); }
static int t_half(lua_State *L) { return convert(L, TT_FLOAT16); }
/* x:to(dtype), PyTorch's x.to(torch.bfloat16) with the dtype's name */
static int t_to(lua_State *L)
{
    ltt_checktensor(L, 1);
    if (lua_type(L, 2) != LUA_TSTRING)
        return ltt_error(L, "to: expects a dtype name (\"float32\", \"bfloat16\", \"float16\", \"int64\", \"bool\"), got %s",
                         luaL_typename(L, 2));
    tt_dtype dt = optdtype(L, 2, "to");
    lua_settop(L, 1);
    return convert(L, dt);
}

/* tt.finfo(dtype): a float dtype's limits, as torch.finfo gives them. */
static int ltt_finfo(lua_State *L)
{
    tt_dtype dt = lua_isnoneornil(L, 1) ? TT_FLOAT32 : optdtype(L, 1, "finfo");
    static const struct { int bits; double eps, max, tiny, resolution; } F[] = {
        [TT_FLOAT32] = { 32, 0x1p-23, 0x1.fffffep127, 0x1p-126, 1e-6 },
        [TT_BFLOAT16] = { 16, 0x1p-7, 0x1.fep127, 0x1p-126, 0.01 },
        [TT_FLOAT16] = { 16, 0x1p-10, 65504.0, 0x1p-14, 0.001 },
    };
    if (!tt_dtype_is_float(dt))
        return ltt_error(L, "finfo: %s is not a float dtype; hint: finfo takes \"float32\", \"bfloat16\" or \"float16\"",
                         tt_dtype_name(dt));
    lua_createtable(L, 0, 8);
    lua_pushinteger(L, F[dt].bits);
    lua_setfield(L, -2, "bits");
    lua_pushnumber(L, F[dt].eps);
    lua_setfield(L, -2, "eps");
    lua_pushnumber(L, F[dt].max);
    lua_setfield(L, -2, "max");
    lua_pushnumber(L, -F[dt].max);
    lua_setfield(L, -2, "min");
    lua_pushnumber(L, F[dt].tiny);
    lua_setfield(L, -2, "tiny");
    lua_pushnumber(L, F[dt].tiny);
    lua_setfield(L, -2, "smallest_normal");
    lua_pushnumber(L, F[dt].resolution);
    lua_setfield(L, -2, "resolution");
    lua_pushstring(L, tt_dtype_name(dt));
    lua_setfield(L, -2, "dtype");
    return 1;
}
static int t_bool(lua_State *L) { return convert(L, TT_BOOL); }
static int t_long(lua_State *L) { return convert(L, TT_INT64); }

/* ===== Reductions ===== */

static int reduce_op(lua_State *L, tt_op op)
{
    const char *name = tt_op_name(op);
    tt_tensor *t = ltt_checktensor(L, 1);
    int d = optdim(L, 2, t, -1, name);
    int keep = lua_toboolean(L, 3);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, name, in, tt_reduce(out, op, t, d, keep));
    return 1;
}

static int reduce(lua_State *L) { return reduce_op(L, op_upvalue(L)); }

/* x:max() -> 0-d tensor; x:max(d [, keepdim]) -> values, 1-based indices */
static int maxmin(lua_State *L, int is_min)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    if (lua_isnoneornil(L, 2)) return reduce_op(L, is_min ? TT_OP_MIN : TT_OP_MAX);
    int d = ltt_checkdim(L, 2, t, 0, is_min ? "min" : "max");
    int keep = lua_toboolean(L, 3);
    tt_tensor *v = ltt_newtensor(L);
    tt_tensor *i = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, is_min ? "min" : "max", in, tt_max_dim(v, i, t, d, keep, is_min));
    return 2;
}

static int t_max(lua_State *L) { return maxmin(L, 0); }
static int t_min(lua_State *L) { return maxmin(L, 1); }

/* ===== Linear algebra and attention pieces ===== */

static int ltt_matmul(lua_State *L)
{
    tt_tensor *a = ltt_checktensor(L, 1), *b = ltt_checktensor(L, 2);
    tt_tensor *out = ltt_newtensor(L), *in[] = {a, b};
    LTT_CALL_HELD(L, "matmul", in, tt_matmul(out, a, b));
    return 1;
}

/* x:softmax(d), x:log_softmax(d): the dim is required (PyTorch warns without one) */
static int softmax_dim(lua_State *L, int log)
{
    const char *name = log ? "log_softmax" : "softmax";
    tt_tensor *t = ltt_checktensor(L, 1);
    if (lua_isnoneornil(L, 2)) {
        char shp[256];
        return ltt_error(L, "%s: dim is required for %s; hint: attention normalises over the keys, x:%s(-1)",
                          name, tt_shape_str(t, shp, sizeof shp), name);
    }
    int d = ltt_checkdim(L, 2, t, 0, name);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, name, in, (log ? tt_log_softmax : tt_softmax)(out, t, d));
    return 1;
}

static int t_softmax(lua_State *L) { return softmax_dim(L, 0); }
static int t_log_softmax(lua_State *L) { return softmax_dim(L, 1); }

/* x:gelu([approximate]): "none" (the exact erf form, the default) or "tanh" */
static int t_gelu(lua_State *L)
{
    static const char *const forms[] = {"none", "tanh", NULL};
    tt_tensor *t = ltt_checktensor(L, 1);
    const char *form = luaL_optstring(L, 2, "none");
    int i = 0;
    while (forms[i] && strcmp(forms[i], form) != 0) i++;
    if (!forms[i])
        return luaL_argerror(L, 2, lua_pushfstring(L, "approximate must be 'none' or 'tanh', got '%s'", form));
    tt_op op = i == 1 ? TT_OP_GELU_TANH : TT_OP_GELU;
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "gelu", in, tt_unary(out, op, t));
    return 1;
}

static int t_masked_fill(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *m = ltt_checktensor(L, 2);
    luaL_checknumber(L, 3);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t, m};
    LTT_CALL_HELD(L, "masked_fill", in, tt_masked_fill_number(out, t, m, ltt_number(L, 3)));
    return 1;
}

/* ===== In-place ops: each returns x itself, as PyTorch's ===== */

/* x:add_(y), x:sub_(y), x:mul_(y), x:div_(y): y a tensor or a number */
static int inplace_binary(lua_State *L, tt_op op, const char *name)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *b = opttensor(L, 2, name);
    if (!b && lua_type(L, 2) != LUA_TNUMBER)
        return ltt_error(L, "%s: expects a tensor or a number, got %s", name, luaL_typename(L, 2));
    tt_number s = b ? tt_num_i(0) : ltt_number(L, 2);
    tt_tensor *in[] = {t, b ? b : t};
    LTT_CALL_HELD(L, name, in, tt_binary_(t, op, b, b ? NULL : &s));
    lua_settop(L, 1);
    return 1;
}

static int t_add_(lua_State *L) { return inplace_binary(L, TT_OP_ADD, "add_"); }
static int t_sub_(lua_State *L) { return inplace_binary(L, TT_OP_SUB, "sub_"); }
static int t_mul_(lua_State *L) { return inplace_binary(L, TT_OP_MUL, "mul_"); }
static int t_div_(lua_State *L) { return inplace_binary(L, TT_OP_DIV, "div_"); }

static int t_masked_fill_(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *m = ltt_checktensor(L, 2);
    luaL_checknumber(L, 3);
    tt_tensor *in[] = {t, m};
    LTT_CALL_HELD(L, "masked_fill_", in, tt_masked_fill_(t, m, ltt_number(L, 3)));
    lua_settop(L, 1);
    return 1;
}

static int t_fill_(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    luaL_checknumber(L, 2);
    tt_tensor *in[] = {t};
    LTT_CALL_HELD(L, "fill_", in, tt_fill_(t, ltt_number(L, 2)));
    lua_settop(L, 1);
    return 1;
}

static int t_zero_(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *in[] = {t};
    LTT_CALL_HELD(L, "zero_", in, tt_zero_(t));
    lua_settop(L, 1);
    return 1;
}

static int t_copy_(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *src = ltt_checktensor(L, 2);
    tt_tensor *in[] = {t, src};
    LTT_CALL_HELD(L, "copy_", in, tt_copy_(t, src));
    lua_settop(L, 1);
    return 1;
}

/* x:index_select(d, index), x:gather(d, index): index int64, 1-based */
static int indexing(lua_State *L, tt_op op)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    int d = ltt_checkdim(L, 2, t, 0, tt_op_name(op));
    tt_tensor *ix = ltt_checktensor(L, 3);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t, ix};
    LTT_CALL_HELD(L, tt_op_name(op), in, op == TT_OP_GATHER ? tt_gather(out, t, d, ix) : tt_index_select(out, t, d, ix));
    return 1;
}

static int t_index_select(lua_State *L) { return indexing(L, TT_OP_INDEX_SELECT); }
static int t_gather(lua_State *L) { return indexing(L, TT_OP_GATHER); }

static int tri(lua_State *L, int upper)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    lua_Integer k = luaL_optinteger(L, 2, 0);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, upper ? "triu" : "tril", in, upper ? tt_triu(out, t, k) : tt_tril(out, t, k));
    return 1;
}

static int t_tril(lua_State *L) { return tri(L, 0); }
static int t_triu(lua_State *L) { return tri(L, 1); }

static int ltt_causal_mask(lua_State *L)
{
    lua_Integer nq = luaL_checkinteger(L, 1), nk = luaL_optinteger(L, 2, nq);
    const char *align = lua_isnoneornil(L, 3) ? "lower_right" : ltt_checkcstring(L, 3, "causal_mask", "align");
    int lower_right = strcmp(align, "lower_right") == 0;
    if (!lower_right && strcmp(align, "upper_left") != 0)
        return ltt_error(L, "causal_mask: align must be \"lower_right\" or \"upper_left\", got \"%s\"", align);
    if (nq < 0 || nk < 0)
        return ltt_error(L, "causal_mask: sizes must be non-negative, got %lld, %lld", (long long)nq, (long long)nk);
    tt_tensor *out = ltt_newtensor(L);
    ltt_check(L, tt_causal_mask(out, nq, nk, lower_right));
    return 1;
}

static int t_repeat_interleave(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    lua_Integer r = luaL_checkinteger(L, 2);
    if (r < 0) return ltt_error(L, "repeat_interleave: repeats must be non-negative, got %lld", (long long)r);
    int flatten = lua_isnoneornil(L, 3);
    int d = flatten ? 0 : ltt_checkdim(L, 3, t, 0, "repeat_interleave");
    lua_settop(L, 3);
    tt_tensor *src = t;
    if (flatten) {                         /* no dim: flatten first, as PyTorch */
        src = ltt_newtensor(L);
        tt_tensor *in[] = {t};
        int64_t flat = -1;
        LTT_CALL_HELD(L, "repeat_interleave", in, tt_reshape(src, t, 1, &flat));
    }
    tt_tensor *out = ltt_newtensor(L), *in[] = {src};
    LTT_CALL_HELD(L, "repeat_interleave", in, tt_repeat_interleave(out, src, r, d));
    return 1;
}

/* tt.cat(list, d) / tt.stack(list, d): list of tensors. The tensors are
   kept alive in a table of our own (not on the stack, whose size is
   limited, nor in the script's list, which its metamethods may change). */
static int joinop(lua_State *L, int is_stack)
{
    const char *op = is_stack ? "stack" : "cat";
    lua_settop(L, 2);
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer len = luaL_len(L, 1);
    if (len <= 0) return ltt_error(L, "%s: expects a non-empty list of tensors", op);
    if (len > INT_MAX / (lua_Integer)sizeof(tt_tensor *))
        return ltt_error(L, "%s: the list has %lld elements, at most %d are supported", op, (long long)len,
                         (int)(INT_MAX / sizeof(tt_tensor *)));
    int n = (int)len;
    tt_tensor **list = lua_newuserdatauv(L, (size_t)n * sizeof *list, 0);
    lua_createtable(L, n, 0);
    int keep = lua_gettop(L);
    for (int i = 0; i < n; i++) {
        lua_geti(L, 1, i + 1);
        list[i] = ltt_testtensor(L, -1);
        if (list[i] == NULL)
            return ltt_error(L, "%s: element %d of the list is a %s, expected a tensor", op, i + 1, luaL_typename(L, -1));
        if (list[i]->storage == NULL) return ltt_error(L, "%s: element %d of the list is a closed tensor", op, i + 1);
        lua_rawseti(L, keep, i + 1);
    }
    int d = 0;
    if (!lua_isnoneornil(L, 2)) d = ltt_checkdim(L, 2, list[0], is_stack, op);
    tt_tensor *out = ltt_newtensor(L);
    ltt_hold(L, op, n, list);
    ltt_unhold(L, n, list, is_stack ? tt_stack(out, (const tt_tensor *const *)list, n, d)
                                    : tt_cat(out, (const tt_tensor *const *)list, n, d));
    return 1;
}

static int ltt_cat(lua_State *L) { return joinop(L, 0); }
static int ltt_stack(lua_State *L) { return joinop(L, 1); }

/* opts.name as a whole number >= lo (0 when absent): window and sinks.
   Only window = 0 needs its bound here (to C it means "no window"); the
   core checks the rest of the options (tt_sdpa_ex). */
static int64_t sdpa_optcount(lua_State *L, const char *name, lua_Integer lo, const char *what)
{
    lua_getfield(L, 4, name);
    if (lua_isnil(L, -1)) { lua_pop(L, 1); return 0; }
    int64_t n = 0;
    if (!ltt_tointeger(L, -1, &n)) {
        if (lua_type(L, -1) == LUA_TNUMBER)
            return ltt_error(L, "sdpa: %s must be a whole number (%s), got %s", name, what, lua_tostring(L, -1));
        return ltt_error(L, "sdpa: %s must be a whole number (%s), got %s", name, what, luaL_typename(L, -1));
    }
    if (n < lo)
        return ltt_error(L, "sdpa: %s must be at least %lld (%s), got %lld", name, (long long)lo, what, (long long)n);
    lua_pop(L, 1);
    return n;
}

/* A tensor option at stack index idx (nil: none) */
static tt_tensor *sdpa_opttensor(lua_State *L, int idx, const char *name, const char *what)
{
    if (lua_isnil(L, idx)) return NULL;
    tt_tensor *t = ltt_testtensor(L, idx);
    if (t == NULL) ltt_error(L, "sdpa: %s must be a %s tensor, got %s", name, what, luaL_typename(L, idx));
    else if (t->storage == NULL) ltt_error(L, "sdpa: the %s tensor was closed", name);
    return t;   /* ltt_error does not return */
}

/* The options are read before the tensors are checked: an options table
   may run a script's code (its __index), which may close a tensor. */
static int ltt_sdpa(lua_State *L)
{
    static const char *const known[] = {"causal", "mask", "scale", "weights", "bias", "alibi", "window",
                                        "sinks", "dropout", NULL};
    lua_settop(L, 4);
    ltt_check_opts(L, 4, "sdpa", known);
    tt_sdpa_opts o = { NULL, NULL, 0, 0, NAN, 0, 0, 0.0 };   /* scale NaN: the default 1/sqrt(Dh) */
    int want_w = 0;
    if (lua_istable(L, 4)) {
        o.causal = ltt_optflag(L, 4, "sdpa", "causal", 0);
        want_w = ltt_optflag(L, 4, "sdpa", "weights", 0);
        o.alibi = ltt_optflag(L, 4, "sdpa", "alibi", 0);
        o.window = sdpa_optcount(L, "window", 1, "the keys each query sees");
        o.sinks = sdpa_optcount(L, "sinks", LUA_MININTEGER, "the first keys kept beside the window");
        o.dropout = ltt_optnumber(L, 4, "sdpa", "dropout", 0.0);
        lua_getfield(L, 4, "scale");
        if (!lua_isnil(L, -1)) {
            if (lua_type(L, -1) != LUA_TNUMBER) return ltt_error(L, "sdpa: scale must be a number, got %s", luaL_typename(L, -1));
            o.scale = lua_tonumber(L, -1);
            /* NaN is the C API's default scale: refused here, in tt_sdpa_ex's words */
            if (isnan(o.scale)) return ltt_error(L, "sdpa: scale must be a finite float32, got nan");
        }
        lua_getfield(L, 4, "mask");     /* index 6: stays on the stack while we use it */
        lua_getfield(L, 4, "bias");     /* index 7 */
    } else {
        lua_pushnil(L);
        lua_pushnil(L);
        lua_pushnil(L);
    }
    tt_tensor *mask = sdpa_opttensor(L, 6, "mask", "bool");
    tt_tensor *bias = sdpa_opttensor(L, 7, "bias", "float");
    o.mask = mask;
    o.bias = bias;
    tt_tensor *q = ltt_checktensor(L, 1), *k = ltt_checktensor(L, 2), *v = ltt_checktensor(L, 3);
    tt_tensor *out = ltt_newtensor(L);
    tt_tensor *w = want_w ? ltt_newtensor(L) : NULL;
    int64_t empty = 0;
    tt_tensor *in[] = {q, k, v, mask, bias};
    LTT_CALL_HELD(L, "sdpa", in, tt_sdpa_ex(out, w, q, k, v, &o, &empty));
    return want_w ? 2 : 1;
}

/* tt.cross_entropy(logits, targets [, {ignore_index = n, reduction = "mean"|"sum"|"none"}]);
   the options first, as sdpa's */
static int ltt_cross_entropy(lua_State *L)
{
    static const char *const known[] = {"ignore_index", "reduction", NULL};
    static const char *const reductions[] = {"mean", "sum", "none", NULL};
    lua_settop(L, 3);
    ltt_check_opts(L, 3, "cross_entropy", known);
    lua_Integer ignore = -100;
    int red = TT_REDUCTION_MEAN;
    if (lua_istable(L, 3)) {
        lua_getfield(L, 3, "ignore_index");
        if (!lua_isnil(L, -1) && !lua_isinteger(L, -1))
            return ltt_error(L, "cross_entropy: ignore_index must be an integer, got %s", luaL_typename(L, -1));
        if (!lua_isnil(L, -1)) ignore = lua_tointeger(L, -1);
        lua_getfield(L, 3, "reduction");
        if (!lua_isnil(L, -1)) {
            const char *r = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
            for (red = 0; reductions[red] && strcmp(reductions[red], r) != 0; red++) {}
            if (!reductions[red])
                return ltt_error(L, "cross_entropy: reduction must be \"mean\", \"sum\" or \"none\", got %s%s%s",
                                 *r ? "\"" : "", *r ? r : luaL_typename(L, -1), *r ? "\"" : "");
        }
    }
    tt_tensor *x = ltt_checktensor(L, 1), *t = ltt_checktensor(L, 2);
    tt_tensor *out = ltt_newtensor(L);
    tt_tensor *in[] = {x, t};
    LTT_CALL_HELD(L, "cross_entropy", in, tt_cross_entropy(out, x, t, ignore, (tt_reduction)red));
    return 1;
}

/* ===== einops ===== */

/* The axis lengths table at idx ({h = 8}) into names and sizes (room for
   64); returns their count. */
static int pattern_sizes(lua_State *L, int idx, const char *op, const char **names, int64_t *sizes)
{
    int n = 0;
    if (lua_isnoneornil(L, idx)) return 0;
    if (!lua_istable(L, idx)) ltt_error(L, "%s: sizes must be a table, e.g. {h = 8}, got %s", op, luaL_typename(L, idx));
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (n == 64) ltt_error(L, "%s: too many sizes", op);
        if (lua_type(L, -2) != LUA_TSTRING || !ltt_tointeger(L, -1, &sizes[n]))
            ltt_error(L, "%s: sizes must map axis names to integers, e.g. {h = 8}", op);
        names[n++] = tt_intern(ltt_checkcstring(L, -2, op, "an axis name in sizes"));
        lua_pop(L, 1);
    }
    return n;
}

static int ltt_rearrange(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    const char *pattern = ltt_checkcstring(L, 2, "rearrange", "the pattern");
    const char *names[64];
    int64_t sizes[64];
    int n = pattern_sizes(L, 3, "rearrange", names, sizes);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "rearrange", in, tt_rearrange(out, t, pattern, n, names, sizes));
    return 1;
}

/* tt.reduce(x, pattern, reduction [, sizes]): einops.reduce */
static int ltt_reduce(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    const char *pattern = ltt_checkcstring(L, 2, "reduce", "the pattern");
    if (lua_isnoneornil(L, 3))
        return ltt_error(L, "reduce: \"%s\" needs a reduction: \"sum\", \"mean\", \"max\", \"min\", \"any\" or \"all\"",
                         pattern);
    const char *reduction = ltt_checkcstring(L, 3, "reduce", "the reduction");
    const char *names[64];
    int64_t sizes[64];
    int n = pattern_sizes(L, 4, "reduce", names, sizes);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "reduce", in, tt_reduce_pattern(out, t, pattern, reduction, n, names, sizes));
    return 1;
}

/* tt["repeat"](x, pattern [, sizes]), also tt.einrepeat: einops.repeat
   (repeat is a Lua keyword, so tt.repeat does not parse) */
static int ltt_repeat(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    const char *pattern = ltt_checkcstring(L, 2, "repeat", "the pattern");
    const char *names[64];
    int64_t sizes[64];
    int n = pattern_sizes(L, 3, "repeat", names, sizes);
    tt_tensor *out = ltt_newtensor(L), *in[] = {t};
    LTT_CALL_HELD(L, "repeat", in, tt_repeat(out, t, pattern, n, names, sizes));
    return 1;
}

static int ltt_einsum(lua_State *L)
{
    const char *spec = ltt_checkcstring(L, 1, "einsum", "the pattern");
    int n = lua_gettop(L) - 1;
    if (n < 1) return ltt_error(L, "einsum: \"%s\" needs at least one tensor", spec);
    if (n > 16) return ltt_error(L, "einsum: at most 16 tensors, got %d", n);
    tt_tensor *list[16];
    for (int i = 0; i < n; i++) list[i] = ltt_checktensor(L, i + 2);
    tt_tensor *out = ltt_newtensor(L);
    ltt_hold(L, "einsum", n, list);
    ltt_unhold(L, n, list, tt_einsum(out, spec, (const tt_tensor *const *)list, n));
    return 1;
}

/* ===== Checks: allclose and assert_close ===== */

/* A tensor from argument idx: a tensor, a number, or a nested table. The
   tensor stays on the stack at the returned index. */
static tt_tensor *operand(lua_State *L, int idx, const char *op)
{
    tt_tensor *t = opttensor(L, idx, op);
    if (t) return t;
    int ty = lua_type(L, idx);
    if (ty != LUA_TNUMBER && ty != LUA_TTABLE && ty != LUA_TBOOLEAN)
        ltt_error(L, "%s: expected a tensor, number or nested table, got %s", op, luaL_typename(L, idx));
    t = from_nested(L, idx, 0);         /* in this frame: its errors get file:line */
    lua_replace(L, idx);
    return t;
}

typedef struct closeness {
    int64_t bad, n, first;
    double got, want, tol;
} closeness;

static void compare(lua_State *L, const char *op, tt_tensor *a, tt_tensor *b, double rtol, double atol,
                    closeness *c)
{
    char sa[256], sb[256];
    tt_tensor *in[] = {a, b};           /* the loop below runs no Lua code: a check is enough */
    ltt_check_open(L, op, LTT_LEN(in), in);
    int same = a->ndim == b->ndim;
    for (int i = 0; same && i < a->ndim; i++) same = a->shape[i] == b->shape[i];
    if (!same && tt_numel(b) != 1)
        ltt_error(L, "%s: shapes differ: %s vs %s", op, tt_shape_str(a, sa, sizeof sa), tt_shape_str(b, sb, sizeof sb));
    memset(c, 0, sizeof *c);
    c->first = -1;
    c->n = tt_numel(a);
    for (int64_t i = 0; i < c->n; i++) {
        double x = tt_get(a, i), y = tt_get(b, same ? i : 0);
        double tol = atol + rtol * fabs(y);
        int ok = (isnan(x) && isnan(y)) || x == y || fabs(x - y) <= tol;
        if (!ok) {
            if (c->bad++ == 0) {
                c->first = i;
                c->got = x;
                c->want = y;
                c->tol = tol;
            }
        }
    }
}

static int ltt_allclose(lua_State *L)
{
    lua_settop(L, 4);
    tt_tensor *a = operand(L, 1, "allclose"), *b = operand(L, 2, "allclose");
    closeness c;
    double rtol = luaL_optnumber(L, 3, 1e-5), atol = luaL_optnumber(L, 4, 1e-8);
    compare(L, "allclose", a, b, rtol, atol, &c);
    ltt_trace_check("allclose", a, b, rtol, atol, c.bad == 0);
    lua_pushboolean(L, c.bad == 0);
    return 1;
}

static int ltt_assert_close(lua_State *L)
{
    lua_settop(L, 5);
    tt_tensor *a = operand(L, 1, "assert_close"), *b = operand(L, 2, "assert_close");
    /* PyTorch's float32 defaults */
    double rtol = luaL_optnumber(L, 3, 1.3e-6), atol = luaL_optnumber(L, 4, 1e-5);
    const char *msg = luaL_optstring(L, 5, NULL);
    closeness c;
    compare(L, "assert_close", a, b, rtol, atol, &c);
    if (c.bad == 0) {
        ltt_trace_check("assert_close", a, b, rtol, atol, 1);   /* one row, not the literals' */
        return 0;
    }
    /* position of the first mismatch as 1-based indices */
    char pos[128] = "";
    size_t len = 0;
    int64_t rem = c.first, idx[TT_MAX_DIMS];
    for (int i = a->ndim - 1; i >= 0; i--) {
        idx[i] = rem % a->shape[i];
        rem /= a->shape[i];
    }
    for (int i = 0; i < a->ndim; i++)
        len += (size_t)snprintf(pos + len, sizeof pos - len, "%s%lld", i ? "," : "", (long long)idx[i] + 1);
    char sa[256];
    return ltt_error(L, "assert_close: %s%s%lld of %lld elements of %s differ; first at [%s]: %.7g vs %.7g "
                      "(|diff| %.3g > tolerance %.3g)", msg ? msg : "", msg ? ": " : "",
                      (long long)c.bad, (long long)c.n, tt_shape_str(a, sa, sizeof sa), pos, c.got, c.want,
                      fabs(c.got - c.want), c.tol);
}

/* ===== Gradients ===== */

static int t_requires_grad_(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    int flag = lua_isnoneornil(L, 2) ? 1 : lua_toboolean(L, 2);
    ltt_check(L, tt_requires_grad_(t, flag));
    lua_settop(L, 1);
    return 1;
}

/* y:backward([grad] [, opts]) with opts {retain_graph = bool} (or
   PyTorch's positional y:backward(grad, true)); y:backward{...} too */
static int t_backward(lua_State *L)
{
    static const char *const known[] = {"retain_graph", NULL};
    tt_tensor *t = ltt_checktensor(L, 1);
    int ga = 2, oa = 3;
    if (lua_istable(L, 2) && !ltt_testtensor(L, 2)) ga = 0, oa = 2;      /* y:backward{retain_graph = true} */
    tt_tensor *g = ga == 0 || lua_isnoneornil(L, ga) ? NULL : ltt_checktensor(L, ga);
    int retain = 0;
    if (lua_isboolean(L, oa)) {
        retain = lua_toboolean(L, oa);
    } else if (!lua_isnoneornil(L, oa)) {
        if (!lua_istable(L, oa))
            return ltt_error(L, "backward: options must be a table such as {retain_graph = true}, got a %s",
                             luaL_typename(L, oa));
        ltt_check_opts(L, oa, "backward", known);
        retain = ltt_optflag(L, oa, "backward", "retain_graph", 0);
    }
    ltt_check(L, tt_backward_retain(t, g, retain));
    return 0;
}

static int t_detach(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    tt_tensor *out = ltt_newtensor(L);
    ltt_check(L, tt_detach(out, t));
    return 1;
}

/* x.requires_grad, x.grad (nil until a backward reaches x), x.grad_fn */
static int grad_field(lua_State *L, tt_tensor *t, const char *k)
{
    if (strcmp(k, "shape") == 0) {          /* x.shape, as PyTorch; callable: x:shape() */
        push_shape(L, t);
    } else if (strcmp(k, "T") == 0 || strcmp(k, "ndim") == 0) {   /* PyTorch's properties, methods here */
        return ltt_error(L, "tensor: x.%s is PyTorch's; hint: %s", k,
                         k[0] == 'T' ? "x:t() transposes a matrix, x:mT() the last two dims" : "x:dim()");
    } else if (strcmp(k, "requires_grad") == 0) {
        lua_pushboolean(L, tt_tensor_requires_grad(t));
    } else if (strcmp(k, "grad") == 0) {
        const tt_tensor *g = tt_grad(t);
        if (g) ltt_check(L, tt_detach(ltt_newtensor(L), g));
        else lua_pushnil(L);
    } else if (strcmp(k, "grad_fn") == 0) {
        const char *n = tt_grad_fn_name(t);
        if (n) lua_pushstring(L, n);
        else lua_pushnil(L);
    } else {
        return 0;
    }
    return 1;
}

/* x.grad = nil or a tensor shaped as x; nothing else is assignable */
static int t_newindex(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    if (lua_type(L, 2) == LUA_TNUMBER || lua_type(L, 2) == LUA_TTABLE || ltt_testtensor(L, 2))
        return ltt_error(L, "index: x[...] = v is not supported: tensors are not changed in place here; hint: "
                         "y = tt.where(mask, v, x) or y = x:masked_fill(mask, v) makes the changed tensor");
    const char *k = lua_tostring(L, 2);
    if (k && strcmp(k, "grad") == 0) {
        ltt_check(L, tt_set_grad(t, lua_isnil(L, 3) ? NULL : ltt_checktensor(L, 3)));
        return 0;
    }
    return ltt_error(L, "tensor: cannot set field '%s'; hint: only x.grad can be assigned (a tensor or nil)",
                     k ? k : luaL_typename(L, 2));
}

/* tt.no_grad(fn, ...): fn's results, run with recording off; the mode
   comes back even when fn raises (the error is raised again) */
static int ltt_no_grad(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    int was = tt_set_grad_enabled(0);
    int st = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
    tt_set_grad_enabled(was);
    if (st != LUA_OK) return lua_error(L);
    return lua_gettop(L);
}

/* tt.autocast(dtype, fn, ...): fn's results, run under torch.autocast's
   rules (core/ops/autocast.c); dtype "bfloat16" or "float16", or a table
   {dtype = ..., enabled = bool} (enabled = false: autocast off inside, as
   torch's enabled=False). The setting comes back when fn returns or
   raises; a yield out of fn is an error, as the setting cannot follow a
   coroutine out (it would hold in the code that resumed it). */
static tt_dtype autocast_dtype(lua_State *L)
{
    static const char *const known[] = {"dtype", "enabled", NULL};
    const char *s = NULL;
    int enabled = 1;
    if (lua_istable(L, 1)) {
        ltt_check_opts(L, 1, "autocast", known);
        enabled = ltt_optflag(L, 1, "autocast", "enabled", 1);
        lua_getfield(L, 1, "dtype");
        s = lua_isnil(L, -1) ? "bfloat16" : lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        if (s == NULL)
            ltt_error(L, "autocast: dtype must be a string, got %s", luaL_typename(L, -1));
        lua_pop(L, 1);
    } else if (lua_type(L, 1) == LUA_TSTRING) {
        s = lua_tostring(L, 1);
    } else {
        ltt_error(L, "autocast: expects a dtype (\"bfloat16\" or \"float16\") or {dtype = ..., enabled = ...}, "
                  "got %s; hint: tt.autocast(\"bfloat16\", fn, ...)", luaL_typename(L, 1));
    }
    tt_dtype dt = TT_INT64;
    if (!dtype_named(s, &dt) || !tt_dtype_is_float(dt) || dt == TT_FLOAT32)
        ltt_error(L, "autocast: dtype must be \"bfloat16\" or \"float16\", got '%s'; hint: %s", s,
                  dt == TT_FLOAT32 ? "float32 is what runs outside tt.autocast; "
                  "tt.autocast({enabled = false}, fn) turns it off inside one"
                  : strcmp(s, "bf16") == 0 ? "did you mean \"bfloat16\"?"
                  : strcmp(s, "fp16") == 0 || strcmp(s, "f16") == 0 ? "did you mean \"float16\"?"
                  : "autocast runs matmul and sdpa in one of the 16-bit dtypes");
    return enabled ? dt : TT_FLOAT32;
}

static int ltt_autocast(lua_State *L)
{
    tt_dtype dt = autocast_dtype(L), was;
    if (lua_type(L, 2) != LUA_TFUNCTION) {       /* or a callable: a module */
        if (luaL_getmetafield(L, 2, "__call") != LUA_TNIL) lua_pop(L, 1);
        else if (ltt_testtensor(L, 2))
            ltt_error(L, "autocast: expects the function to run, got a tensor (the result of calling it "
                      "already, outside autocast); hint: tt.autocast(dtype, model, x) or "
                      "tt.autocast(dtype, function() return model(x) end)");
        else
            ltt_error(L, "autocast: expects the function to run after the dtype, got %s; hint: "
                      "tt.autocast(dtype, fn, ...) runs fn(...)", luaL_typename(L, 2));
    }
    lua_remove(L, 1);
    ltt_check(L, tt_set_autocast(dt, &was));
    int st = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
    tt_set_autocast(was, NULL);
    if (st != LUA_OK) {
        const char *m = lua_tostring(L, -1);
        if (m && strcmp(m, "attempt to yield across a C-call boundary") == 0)
            return ltt_error(L, "autocast: fn yielded, and the autocast setting cannot leave with a coroutine "
                             "(it would hold in the code that resumed it); hint: yield outside tt.autocast, "
                             "or call tt.autocast inside the coroutine between its yields");
        return lua_error(L);
    }
    return lua_gettop(L);
}

/* ===== Registration ===== */

/* x[{i, j, ...}]: PyTorch's x[i, j, ...], one entry a dim from the first:
   an integer selects (its dim goes, as x[i] does), a range {first, last}
   keeps the positions first..last of its dim (both inclusive, -1 the
   last, as Torch7's x[{{2, 4}}]), {} or {first} keeps the whole dim or from
   first on. Each step is a traced select or narrow: a view. */
static int index_table(lua_State *L)
{
    tt_tensor *t = ltt_checktensor(L, 1);
    char shp[256];
    lua_Integer n = (lua_Integer)lua_rawlen(L, 2);
    if (n > t->ndim)
        return ltt_error(L, "index: %lld indices for %s, which has %d dims", (long long)n,
                         tt_shape_str(t, shp, sizeof shp), t->ndim);
    lua_settop(L, 2);
    lua_pushvalue(L, 1);                /* 3: the tensor so far */
    int d = 0;
    for (lua_Integer k = 1; k <= n; k++) {
        tt_tensor *cur = ltt_checktensor(L, 3);
        lua_rawgeti(L, 2, k);           /* 4: the entry */
        int isint;
        lua_Integer i = lua_tointegerx(L, 4, &isint);
        if (isint) {
            int64_t size = cur->shape[d];
            if (i == 0 || i > size || i < -size)  /* entry k is the script's dim k */
                return ltt_error(L, "index: x[{...}] entry %lld: index %lld is outside dim %lld of %s (valid 1..%lld "
                                 "or -%lld..-1)%s", (long long)k, (long long)i, (long long)k,
                                 tt_shape_str(t, shp, sizeof shp), (long long)size, (long long)size,
                                 i == 0 ? "; Lua counts from 1" : "");
            select_impl(L, cur, d, i);
        } else if (lua_istable(L, 4)) {
            int64_t size = cur->shape[d];
            lua_Integer first = 1, last = size;
            for (int e = 1; e <= 2; e++) {
                if (lua_rawgeti(L, 4, e) != LUA_TNIL) {
                    lua_Integer v = lua_tointegerx(L, -1, &isint);
                    if (!isint)
                        return ltt_error(L, "index: entry %lld of x[{...}]: a range holds integers, got %s",
                                         (long long)k, luaL_typename(L, -1));
                    if (e == 1) first = v; else last = v;
                }
                lua_pop(L, 1);
            }
            lua_Integer f = first < 0 ? first + size + 1 : first, l = last < 0 ? last + size + 1 : last;
            if (f < 1 || l > size || f > l + 1)
                return ltt_error(L, "index: range {%lld, %lld} is outside dim %lld of %s (size %lld); a range is {first, last}, "
                                 "both included%s",
                                 (long long)first, (long long)last, (long long)k, tt_shape_str(t, shp, sizeof shp),
                                 (long long)size, first == 0 ? ", and Lua counts from 1" : "");
            tt_tensor *out = ltt_newtensor(L), *in[] = {cur};
            LTT_CALL_HELD(L, "narrow", in, tt_narrow(out, cur, d, f - 1, l - f + 1));
            d++;
        } else {
            return ltt_error(L, "index: entry %lld of x[{...}] must be an integer or a range {first, last}, got %s",
                             (long long)k, lua_type(L, 4) == LUA_TNUMBER ? lua_tostring(L, 4) : luaL_typename(L, 4));
        }
        lua_replace(L, 3);
        lua_settop(L, 3);
    }
    return 1;
}

/* a < b, a <= b (and a > b, a >= b, which Lua turns into them with the
   operands swapped): Lua makes the result one boolean, so a tensor of
   comparisons cannot come from an operator */
static int t_compare(lua_State *L)
{
    int le = (int)lua_tointeger(L, lua_upvalueindex(1));
    char sa[256], sb[256];
    tt_tensor *a = ltt_testtensor(L, 1), *b = ltt_testtensor(L, 2);
    const char *x = a && a->storage ? tt_shape_str(a, sa, sizeof sa) : luaL_typename(L, 1);
    const char *y = b && b->storage ? tt_shape_str(b, sb, sizeof sb) : luaL_typename(L, 2);
    return ltt_error(L, "%s: %s %s %s: a comparison operator gives Lua one boolean, never a tensor; "
                     "hint: write x:%s(y) for x %s y and x:%s(y) for x %s y (Lua runs x %s y as y %s x)",
                     le ? "le" : "lt", x, le ? "<=" : "<", y, le ? "le" : "lt", le ? "<=" : "<",
                     le ? "ge" : "gt", le ? ">=" : ">", le ? ">=" : ">", le ? "<=" : "<");
}

static int t_index(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TTABLE) return index_table(L);
    if (ltt_testtensor(L, 2)) {
        char shp[256];
        tt_tensor *ix = ltt_testtensor(L, 2);
        return ltt_error(L, "index: x[t] with a tensor t is not supported (t is %s %s); hint: "
                         "x:index_select(d, idx) for int64 indices, tt.where(mask, x, 0) or "
                         "x:masked_fill(~mask, 0) for a bool mask", ix->storage ? tt_dtype_name(ix->dtype) : "a closed",
                         ix->storage ? tt_shape_str(ix, shp, sizeof shp) : "tensor");
    }
    if (lua_type(L, 2) == LUA_TNUMBER) {       /* x[i]: select on dim 1 */
        tt_tensor *t = ltt_checktensor(L, 1);
        int isint;
        lua_Integer i = lua_tointegerx(L, 2, &isint);   /* 2.0 (from argmax) is fine */
        if (!isint) return ltt_error(L, "index: x[i] needs a whole number, got %s", lua_tostring(L, 2));
        if (t->ndim == 0) return ltt_error(L, "index: a 0-d tensor cannot be indexed; use x:item()");
        return select_impl(L, t, 0, i);
    }
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));     /* the methods table */
    if (lua_isnil(L, -1) && lua_type(L, 2) == LUA_TSTRING) {
        int n = grad_field(L, ltt_checktensor(L, 1), lua_tostring(L, 2));
        if (n) return n;
        ltt_note_missing(L, lua_upvalueindex(1), "");   /* x:sofmax(): "did you mean softmax?" */
    }
    return 1;
}

static const luaL_Reg tensor_meth[] = {
    {"size", t_size}, {"dim", t_dim}, {"numel", t_numel},
    {"stride", t_stride}, {"offset", t_offset}, {"dtype", t_dtype},
    {"is_contiguous", t_is_contiguous}, {"shares_storage", t_shares_storage},
    {"item", t_item}, {"totable", t_totable}, {"label", t_label},
    {"named", t_named}, {"names", t_names},
    {"view", t_view}, {"reshape", t_reshape}, {"transpose", t_transpose}, {"mT", t_mT},
    {"permute", t_permute}, {"narrow", t_narrow}, {"select", t_select}, {"expand", t_expand},
    {"unsqueeze", t_unsqueeze}, {"squeeze", t_squeeze}, {"contiguous", t_contiguous},
    {"clone", t_clone}, {"chunk", t_chunk}, {"split", t_split},
    {"requires_grad_", t_requires_grad_}, {"backward", t_backward}, {"detach", t_detach},
    {"float", t_float}, {"bool", t_bool}, {"long", t_long}, {"bfloat16", t_bfloat16}, {"half", t_half}, {"to", t_to},
    {"index_select", t_index_select}, {"gather", t_gather}, {"max", t_max}, {"min", t_min},
    {"matmul", ltt_matmul}, {"softmax", t_softmax}, {"masked_fill", t_masked_fill},
    {"log_softmax", t_log_softmax}, {"gelu", t_gelu},
    {"tril", t_tril}, {"triu", t_triu}, {"repeat_interleave", t_repeat_interleave},
    {"unbind", t_unbind}, {"flatten", t_flatten}, {"t", t_t}, {"isnan", t_isnan},
    {"any", t_any}, {"all", t_all}, {"norm", t_norm},
    {"add_", t_add_}, {"sub_", t_sub_}, {"mul_", t_mul_}, {"div_", t_div_}, {"masked_fill_", t_masked_fill_},
    {"fill_", t_fill_}, {"zero_", t_zero_}, {"copy_", t_copy_},
    {NULL, NULL}
};

static const luaL_Reg tensor_metameth[] = {
    {"__tostring", t_tostring}, {"__len", t_len},   /* __index: a closure, below */
    {"__gc", ltt_tensor_gc}, {"__close", ltt_tensor_gc}, {"__newindex", t_newindex},
    {NULL, NULL}
};

/* The operators, each an op of the table; such an op is no method. */
static const struct { const char *event; tt_op op; } operators[] = {
    {"__add", TT_OP_ADD}, {"__sub", TT_OP_SUB}, {"__mul", TT_OP_MUL}, {"__div", TT_OP_DIV},
    {"__pow", TT_OP_POW}, {"__unm", TT_OP_NEG},
    {"__band", TT_OP_AND}, {"__bor", TT_OP_OR}, {"__bxor", TT_OP_XOR}, {"__bnot", TT_OP_NOT},
};

static int is_operator(tt_op op)
{
    for (size_t i = 0; i < sizeof operators / sizeof operators[0]; i++)
        if (operators[i].op == op) return 1;
    return 0;
}

/* The closure of op's kind (binop for an operator), its op as upvalue;
   NULL for an op with its own binding. */
static lua_CFunction op_closure(tt_op op, int as_operator)
{
    switch (tt_op_kind(op)) {
    case TT_OPK_BINARY: return as_operator ? binop : binop_method;
    case TT_OPK_UNARY: return unop;
    case TT_OPK_REDUCE: return reduce;
    default: return NULL;
    }
}

/* The metamethods of the operators into the table on top, and into the
   methods table below it every other elementwise and reduction op under its
   name (unless tensor_meth has it: max and min). */
static void set_op_functions(lua_State *L)
{
    for (size_t i = 0; i < sizeof operators / sizeof operators[0]; i++) {
        lua_pushinteger(L, operators[i].op);
        lua_pushcclosure(L, op_closure(operators[i].op, 1), 1);
        lua_setfield(L, -3, operators[i].event);
    }
    for (int op = 0; op < TT_OP_COUNT; op++) {
        lua_CFunction f = op_closure((tt_op)op, 0);
        if (!f || is_operator((tt_op)op)) continue;
        int taken = lua_getfield(L, -1, tt_op_name((tt_op)op)) != LUA_TNIL;
        lua_pop(L, 1);
        if (taken) continue;
        lua_pushinteger(L, op);
        lua_pushcclosure(L, f, 1);
        lua_setfield(L, -2, tt_op_name((tt_op)op));
    }
    /* PyTorch's method names of the arithmetic operators: x:add(y), x:sub(y),
       x:mul(y), x:div(y), x:pow(y), x:neg() (and, or and not are Lua's keywords) */
    static const tt_op arith[] = {TT_OP_ADD, TT_OP_SUB, TT_OP_MUL, TT_OP_DIV, TT_OP_POW, TT_OP_NEG};
    for (size_t i = 0; i < sizeof arith / sizeof arith[0]; i++) {
        lua_pushinteger(L, arith[i]);
        lua_pushcclosure(L, op_closure(arith[i], 0), 1);
        lua_setfield(L, -2, tt_op_name(arith[i]));
    }
}

static const luaL_Reg ttlib[] = {
    {"tensor", ltt_tensor_new}, {"zeros", ltt_zeros}, {"ones", ltt_ones}, {"full", ltt_full},
    {"arange", ltt_arange}, {"eye", ltt_eye}, {"randn", ltt_randn}, {"rand", ltt_rand}, {"randint", ltt_randint},
    {"manual_seed", ltt_manual_seed}, {"no_grad", ltt_no_grad}, {"autocast", ltt_autocast}, {"matmul", ltt_matmul}, {"cat", ltt_cat}, {"stack", ltt_stack},
    {"causal_mask", ltt_causal_mask}, {"sdpa", ltt_sdpa}, {"cross_entropy", ltt_cross_entropy},
    {"rearrange", ltt_rearrange}, {"einsum", ltt_einsum},
    {"allclose", ltt_allclose}, {"assert_close", ltt_assert_close}, {"clock", ltt_clock},
    {"isatty", ltt_isatty}, {"kernel_path", ltt_kernel_path}, {"softmax", t_softmax}, {"log_softmax", t_log_softmax},
    {"where", ltt_where}, {"rope", ltt_rope}, {"dropout", ltt_dropout}, {"reduce", ltt_reduce}, {"repeat", ltt_repeat}, {"einrepeat", ltt_repeat},
    {"finfo", ltt_finfo},
    {NULL, NULL}
};

/* The tensor metatable, and tt's creation functions, ops and checks in the
   table on top. */
void ltt_open_tensor(lua_State *L)
{
    luaL_newmetatable(L, LTT_TENSOR);
    luaL_setfuncs(L, tensor_metameth, 0);
    /* getmetatable(x) gives this name, not the table: a script cannot call
       __gc by hand or change the methods (debug.getmetatable still can,
       so every metamethod stays safe on any tensor, closed or not) */
    lua_pushliteral(L, LTT_TENSOR);
    lua_setfield(L, -2, "__metatable");
    for (int le = 0; le <= 1; le++) {
        lua_pushinteger(L, le);
        lua_pushcclosure(L, t_compare, 1);
        lua_setfield(L, -2, le ? "__le" : "__lt");
    }
    luaL_newlib(L, tensor_meth);
    set_op_functions(L);
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, t_index, 1);        /* methods as an upvalue: no lookup by name */
    lua_setfield(L, -3, "__index");
    lua_setfield(L, -2, "methods");
    ltt_register_tensor_mt(L);
    lua_pop(L, 1);
    luaL_setfuncs(L, ttlib, 0);
}
