/*
** lnn.c — tt.nn: modules with parameters (Linear, Embedding, LayerNorm,
** RMSNorm), each
** a callable userdata holding its parameters as user values, and
** clip_grad_norm. Forward passes are the ordinary ops (traced, and
** recorded for backward like any other).
*/
#include <float.h>
#include <math.h>
#include <string.h>

#include "lauxtt.h"
#include "ltrace.h"
#include "lttlib.h"

/* A table {weight = [out,in], bias = [out] or nil} with metatable
   "tt.Linear", callable: proj(x) = x @ weight^T + bias. */
static int linear_call(lua_State *L)
{
    luaL_checkudata(L, 1, "tt.Linear");
    tt_tensor *x = ltt_checktensor(L, 2);
    lua_getiuservalue(L, 1, 1);
    tt_tensor *w = ltt_checktensor(L, -1);
    lua_getiuservalue(L, 1, 2);
    tt_tensor *b = ltt_totensor(L, -1);
    if (x->ndim == 0 || x->shape[x->ndim - 1] != w->shape[1]) {
        char sx[256], sw[256];
        return ltt_error(L, "Linear: input %s does not end in in_features=%lld (weight %s)",
                          tt_shape_str(x, sx, sizeof sx), (long long)w->shape[1], tt_shape_str(w, sw, sizeof sw));
    }
    tt_tensor *wt = ltt_newtensor(L), *in_w[] = {w};
    LTT_CALL_HELD(L, "Linear", in_w, tt_mT(wt, w));
    tt_tensor *y = ltt_newtensor(L), *in_xw[] = {x, wt};
    LTT_CALL_HELD(L, "Linear", in_xw, tt_matmul(y, x, wt));
    if (b == NULL) return 1;
    tt_tensor *yb = ltt_newtensor(L), *in_yb[] = {y, b};
    LTT_CALL_HELD(L, "Linear", in_yb, tt_binary(yb, TT_OP_ADD, y, b));
    return 1;
}

/* Uniform(-1/sqrt(in), 1/sqrt(in)) from the seeded generator, as PyTorch's
   default init bound; creation is not traced (it is not part of the math). */
static void uniform_param(lua_State *L, int ndim, const int64_t *shape, double bound)
{
    tt_tensor *t = ltt_newtensor(L);
    tt_tensor r = {0};
    tt_status st = tt_rand(&r, ndim, shape);
    if (st == TT_OK) {
        float *p = tt_data_f32(&r);
        int64_t n = tt_numel(&r);
        for (int64_t i = 0; i < n; i++) p[i] = (float)((2.0 * (double)p[i] - 1.0) * bound);
        *t = r;
        st = tt_requires_grad_(t, 1);
    }
    if (st != TT_OK) ltt_trace_mute(0);
    ltt_check(L, st);
}

static int ltt_linear(lua_State *L)
{
    lua_Integer in = luaL_checkinteger(L, 1), out = luaL_checkinteger(L, 2);
    static const char *const known[] = {"bias", NULL};
    ltt_check_opts(L, 3, "Linear", known);
    int bias = ltt_optflag(L, lua_istable(L, 3) ? 3 : 0, "Linear", "bias", 1);
    if (in <= 0 || out <= 0)
        return ltt_error(L, "Linear: in_features and out_features must be positive, got %lld, %lld",
                          (long long)in, (long long)out);
    lua_newuserdatauv(L, 0, 2);
    int ud = lua_gettop(L);
    luaL_setmetatable(L, "tt.Linear");
    double bound = 1.0 / sqrt((double)in);
    int64_t wshape[2] = {out, in}, bshape[1] = {out};
    ltt_trace_mute(1);
    uniform_param(L, 2, wshape, bound);
    lua_setiuservalue(L, ud, 1);
    if (bias) {
        uniform_param(L, 1, bshape, bound);
        lua_setiuservalue(L, ud, 2);
    }
    ltt_trace_mute(0);
    lua_settop(L, ud);
    return 1;
}

/* ===== Embedding =====
   A table of num rows of dim, weight [num, dim]; emb(ids) for int64 ids of
   any shape (1..num) is ids.shape..[dim]: index_select of the flattened
   ids, so the backward scatter-adds (a repeated id gets the sum). */
static int embedding_call(lua_State *L)
{
    luaL_checkudata(L, 1, "tt.Embedding");
    tt_tensor *ids = ltt_checktensor(L, 2);
    lua_getiuservalue(L, 1, 1);
    tt_tensor *w = ltt_checktensor(L, -1);
    char si[256];
    if (ids->dtype != TT_INT64)
        return ltt_error(L, "Embedding: ids must be int64, got %s %s; hint: ids:long()",
                         tt_dtype_name(ids->dtype), tt_shape_str(ids, si, sizeof si));
    int64_t n = tt_numel(ids);
    for (int64_t k = 0; k < n; k++) {
        int64_t id = tt_get_i64(ids, k);
        if (id < 1 || id > w->shape[0])
            return ltt_error(L, "Embedding: id %lld out of range 1..%lld (num_embeddings) in ids %s%s",
                             (long long)id, (long long)w->shape[0], tt_shape_str(ids, si, sizeof si),
                             id == 0 ? "; hint: ids count from 1" : "");
    }
    if (ids->ndim + 1 > TT_MAX_DIMS)
        return ltt_error(L, "Embedding: ids %s have too many dims (the result adds one; at most %d)",
                         tt_shape_str(ids, si, sizeof si), TT_MAX_DIMS);
    tt_tensor *flat = ltt_newtensor(L), *in_ids[] = {ids};
    LTT_CALL_HELD(L, "Embedding", in_ids, tt_reshape(flat, ids, 1, &n));
    tt_tensor *rows = ltt_newtensor(L), *in_sel[] = {w, flat};
    LTT_CALL_HELD(L, "Embedding", in_sel, tt_index_select(rows, w, 0, flat));
    int64_t shape[TT_MAX_DIMS];
    memcpy(shape, ids->shape, (size_t)ids->ndim * sizeof *shape);
    shape[ids->ndim] = w->shape[1];
    tt_tensor *y = ltt_newtensor(L), *in_rows[] = {rows};
    LTT_CALL_HELD(L, "Embedding", in_rows, tt_reshape(y, rows, ids->ndim + 1, shape));
    return 1;
}

/* N(0, 1) from the seeded generator, as PyTorch's init; untraced */
static int ltt_embedding(lua_State *L)
{
    lua_Integer num = luaL_checkinteger(L, 1), dim = luaL_checkinteger(L, 2);
    if (num <= 0 || dim <= 0)
        return ltt_error(L, "Embedding: num_embeddings and embedding_dim must be positive, got %lld, %lld",
                         (long long)num, (long long)dim);
    lua_newuserdatauv(L, 0, 2);
    int ud = lua_gettop(L);
    luaL_setmetatable(L, "tt.Embedding");
    int64_t shape[2] = {num, dim};
    ltt_trace_mute(1);
    tt_tensor *t = ltt_newtensor(L);
    tt_status st = tt_randn(t, 2, shape);
    if (st == TT_OK) st = tt_requires_grad_(t, 1);
    ltt_trace_mute(0);
    ltt_check(L, st);
    lua_setiuservalue(L, ud, 1);
    lua_settop(L, ud);
    return 1;
}

/* ===== Normalization: LayerNorm, RMSNorm =====
   Both over the last dim, from the ordinary ops so that autograd covers
   them: LayerNorm(x) = (x - mean) / sqrt(var + eps) * weight + bias with
   the biased variance; RMSNorm(x) = x / sqrt(mean(x^2) + eps) * weight. */

typedef struct normdata {
    double eps;
    int64_t dim;
} normdata;

static tt_tensor *bin(lua_State *L, const char *op, tt_op k, tt_tensor *a, tt_tensor *b)
{
    tt_tensor *y = ltt_newtensor(L), *in[] = {a, b};
    LTT_CALL_HELD(L, op, in, tt_binary(y, k, a, b));
    return y;
}

static tt_tensor *mean_last(lua_State *L, const char *op, tt_tensor *a)
{
    tt_tensor *y = ltt_newtensor(L), *in[] = {a};
    LTT_CALL_HELD(L, op, in, tt_reduce(y, TT_OP_MEAN, a, a->ndim - 1, 1));
    return y;
}

/* sqrt(a + eps) */
static tt_tensor *sqrt_eps(lua_State *L, const char *op, tt_tensor *a, double eps)
{
    tt_tensor *s = ltt_newtensor(L), *in[] = {a};
    LTT_CALL_HELD(L, op, in, tt_binary_scalar(s, TT_OP_ADD, a, eps, 0));
    tt_tensor *y = ltt_newtensor(L), *in2[] = {s};
    LTT_CALL_HELD(L, op, in2, tt_unary(y, TT_OP_SQRT, s));
    return y;
}

static int norm_call(lua_State *L, const char *mt, int layer)
{
    const char *op = layer ? "LayerNorm" : "RMSNorm";
    normdata *nd = luaL_checkudata(L, 1, mt);
    tt_tensor *x = ltt_checktensor(L, 2);
    if (x->ndim == 0 || x->shape[x->ndim - 1] != nd->dim) {
        char sx[256];
        return ltt_error(L, "%s: input %s does not end in normalized_shape=%lld", op,
                         tt_shape_str(x, sx, sizeof sx), (long long)nd->dim);
    }
    lua_getiuservalue(L, 1, 1);
    tt_tensor *w = ltt_totensor(L, -1);
    lua_getiuservalue(L, 1, 2);
    tt_tensor *b = ltt_totensor(L, -1);
    tt_tensor *y;
    if (layer) {
        tt_tensor *xc = bin(L, op, TT_OP_SUB, x, mean_last(L, op, x));
        tt_tensor *var = mean_last(L, op, bin(L, op, TT_OP_MUL, xc, xc));
        y = bin(L, op, TT_OP_DIV, xc, sqrt_eps(L, op, var, nd->eps));
    } else {
        tt_tensor *ms = mean_last(L, op, bin(L, op, TT_OP_MUL, x, x));
        y = bin(L, op, TT_OP_DIV, x, sqrt_eps(L, op, ms, nd->eps));
    }
    if (w) y = bin(L, op, TT_OP_MUL, y, w);
    if (b) y = bin(L, op, TT_OP_ADD, y, b);
    return 1;
}

static int layernorm_call(lua_State *L) { return norm_call(L, "tt.LayerNorm", 1); }
static int rmsnorm_call(lua_State *L) { return norm_call(L, "tt.RMSNorm", 0); }

/* A parameter of `value` (1 or 0) everywhere, requiring grad, untraced. */
static void const_param(lua_State *L, int64_t dim, double value)
{
    tt_tensor *t = ltt_newtensor(L);
    tt_status st = tt_full(t, TT_FLOAT32, 1, &dim, value);
    if (st == TT_OK) st = tt_requires_grad_(t, 1);
    if (st != TT_OK) ltt_trace_mute(0);
    ltt_check(L, st);
}

static int new_norm(lua_State *L, int layer)
{
    const char *op = layer ? "LayerNorm" : "RMSNorm";
    static const char *const layer_known[] = {"eps", "elementwise_affine", "bias", NULL};
    static const char *const rms_known[] = {"eps", "elementwise_affine", NULL};
    lua_Integer dim = luaL_checkinteger(L, 1);
    ltt_check_opts(L, 2, op, layer ? layer_known : rms_known);
    int opts = lua_istable(L, 2) ? 2 : 0;
    /* RMSNorm: PyTorch's eps=None is the dtype's machine epsilon */
    double eps = ltt_optnumber(L, opts, op, "eps", layer ? 1e-5 : (double)FLT_EPSILON);
    int affine = ltt_optflag(L, opts, op, "elementwise_affine", 1);
    int bias = layer && ltt_optflag(L, opts, op, "bias", 1);
    if (dim <= 0) return ltt_error(L, "%s: normalized_shape must be positive, got %lld", op, (long long)dim);
    if (!(eps >= 0)) return ltt_error(L, "%s: eps must be >= 0, got %g", op, eps);
    normdata *nd = lua_newuserdatauv(L, sizeof *nd, 2);
    nd->eps = eps;
    nd->dim = dim;
    int ud = lua_gettop(L);
    luaL_setmetatable(L, layer ? "tt.LayerNorm" : "tt.RMSNorm");
    ltt_trace_mute(1);
    if (affine) {
        const_param(L, dim, 1);
        lua_setiuservalue(L, ud, 1);
        if (bias) {
            const_param(L, dim, 0);
            lua_setiuservalue(L, ud, 2);
        }
    }
    ltt_trace_mute(0);
    lua_settop(L, ud);
    return 1;
}

static int ltt_layernorm(lua_State *L) { return new_norm(L, 1); }
static int ltt_rmsnorm(lua_State *L) { return new_norm(L, 0); }

/* ===== What every module has ===== */

/* The kinds of module: metatable, name, forward. Every kind keeps its
   parameters as user values 1 and 2 (weight, bias; nil when off): the
   order parameters() lists them. */
typedef struct modkind {
    const char *mt, *name;
    lua_CFunction call;
} modkind;

static const modkind KINDS[] = {
    {"tt.Linear", "Linear", linear_call},
    {"tt.Embedding", "Embedding", embedding_call},
    {"tt.LayerNorm", "LayerNorm", layernorm_call},
    {"tt.RMSNorm", "RMSNorm", rmsnorm_call},
};
static const char *const PARAM_NAMES[] = {"weight", "bias"};
#define NPARAMS 2

static const modkind *checkmodule(lua_State *L, int idx)
{
    for (size_t i = 0; i < sizeof KINDS / sizeof *KINDS; i++)
        if (luaL_testudata(L, idx, KINDS[i].mt)) return &KINDS[i];
    luaL_typeerror(L, idx, "tt.nn module");
    return NULL;
}

/* m:parameters(): the tensors in order (weight, then bias), absent ones
   left out. named: m:named_parameters(), a list of {name, tensor}. */
static int list_parameters(lua_State *L, int named)
{
    checkmodule(L, 1);
    lua_newtable(L);
    int k = 0;
    for (int i = 0; i < NPARAMS; i++) {
        if (lua_getiuservalue(L, 1, i + 1) == LUA_TNIL) {
            lua_pop(L, 1);
            continue;
        }
        if (named) {
            lua_createtable(L, 2, 0);
            lua_pushstring(L, PARAM_NAMES[i]);
            lua_rawseti(L, -2, 1);
            lua_rotate(L, -2, 1);
            lua_rawseti(L, -2, 2);
        }
        lua_rawseti(L, -2, ++k);
    }
    return 1;
}

static int m_parameters(lua_State *L) { return list_parameters(L, 0); }
static int m_named_parameters(lua_State *L) { return list_parameters(L, 1); }

/* Fields: weight, bias (nil when off), the sizes and options, the methods. */
static int module_index(lua_State *L)
{
    const modkind *k = checkmodule(L, 1);
    const char *key = luaL_checkstring(L, 2);
    for (int i = 0; i < NPARAMS; i++)
        if (strcmp(key, PARAM_NAMES[i]) == 0) {
            lua_getiuservalue(L, 1, i + 1);
            return 1;
        }
    if (strcmp(key, "parameters") == 0) lua_pushcfunction(L, m_parameters);
    else if (strcmp(key, "named_parameters") == 0) lua_pushcfunction(L, m_named_parameters);
    else if (k->call == linear_call && (strcmp(key, "in_features") == 0 || strcmp(key, "out_features") == 0)) {
        lua_getiuservalue(L, 1, 1);
        tt_tensor *w = ltt_checktensor(L, -1);
        lua_pushinteger(L, w->shape[key[0] == 'i' ? 1 : 0]);
    } else if (k->call == embedding_call && (strcmp(key, "num_embeddings") == 0 || strcmp(key, "embedding_dim") == 0)) {
        lua_getiuservalue(L, 1, 1);
        tt_tensor *w = ltt_checktensor(L, -1);
        lua_pushinteger(L, w->shape[key[0] == 'n' ? 0 : 1]);
    } else if (k->call == embedding_call) {
        lua_pushnil(L);
    } else if (k->call != linear_call && strcmp(key, "eps") == 0) {
        lua_pushnumber(L, ((normdata *)lua_touserdata(L, 1))->eps);
    } else if (k->call != linear_call && strcmp(key, "normalized_shape") == 0) {
        lua_pushinteger(L, ((normdata *)lua_touserdata(L, 1))->dim);
    } else lua_pushnil(L);
    return 1;
}

static int module_tostring(lua_State *L)
{
    const modkind *k = checkmodule(L, 1);
    int has_w = lua_getiuservalue(L, 1, 1) != LUA_TNIL, has_b = lua_getiuservalue(L, 1, 2) != LUA_TNIL;
    if (k->call == linear_call) {
        tt_tensor *w = ltt_checktensor(L, -2);
        lua_pushfstring(L, "Linear(in_features=%d, out_features=%d, bias=%s)", (int)w->shape[1], (int)w->shape[0],
                        has_b ? "true" : "false");
        return 1;
    }
    if (k->call == embedding_call) {
        tt_tensor *w = ltt_checktensor(L, -2);
        lua_pushfstring(L, "Embedding(%d, %d)", (int)w->shape[0], (int)w->shape[1]);
        return 1;
    }
    const normdata *nd = lua_touserdata(L, 1);
    char s[160];
    snprintf(s, sizeof s, "%s(%lld, eps=%g, elementwise_affine=%s%s)", k->name, (long long)nd->dim, nd->eps,
             has_w ? "true" : "false", k->call == layernorm_call && has_w ? (has_b ? ", bias=true" : ", bias=false") : "");
    lua_pushstring(L, s);
    return 1;
}

/* ===== Gradient clipping ===== */

/* tt.nn.clip_grad_norm(params, max_norm): the total L2 norm of the
   gradients (a number), after scaling them to max_norm when above. */
static int ltt_clip_grad_norm(lua_State *L)
{
    double max_norm = luaL_checknumber(L, 2);
    if (!(max_norm >= 0)) return ltt_error(L, "clip_grad_norm: max_norm must be >= 0, got %g", max_norm);
    int n;
    tt_tensor **params = ltt_checktensorlist(L, 1, "clip_grad_norm", "params", &n);
    double total = 0;
    ltt_hold(L, "clip_grad_norm", n, params);
    tt_status st = tt_clip_grad_norm(n, params, max_norm, &total);
    ltt_unhold(L, n, params, st);
    lua_pushnumber(L, total);
    return 1;
}

static const luaL_Reg nnlib[] = {
    {"Linear", ltt_linear}, {"Embedding", ltt_embedding}, {"LayerNorm", ltt_layernorm}, {"RMSNorm", ltt_rmsnorm},
    {"clip_grad_norm", ltt_clip_grad_norm}, {NULL, NULL}
};

/* tt.nn in the table on top, and a metatable per kind of module. */
void ltt_open_nn(lua_State *L)
{
    for (size_t i = 0; i < sizeof KINDS / sizeof *KINDS; i++) {
        luaL_newmetatable(L, KINDS[i].mt);
        lua_pushstring(L, KINDS[i].mt);
        lua_setfield(L, -2, "__metatable");
        lua_pushcfunction(L, KINDS[i].call);
        lua_setfield(L, -2, "__call");
        lua_pushcfunction(L, module_index);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, module_tostring);
        lua_setfield(L, -2, "__tostring");
        lua_pop(L, 1);
    }
    luaL_newlib(L, nnlib);
    lua_setfield(L, -2, "nn");
}
