/*
** lnn.c — tt.nn: layers with parameters. tt.nn.Linear(in, out [, {bias}])
** is a callable userdata holding its weight and bias tensors.
*/
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

static int linear_index(lua_State *L)
{
    luaL_checkudata(L, 1, "tt.Linear");
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "weight") == 0) lua_getiuservalue(L, 1, 1);
    else if (strcmp(k, "bias") == 0) lua_getiuservalue(L, 1, 2);
    else if (strcmp(k, "in_features") == 0 || strcmp(k, "out_features") == 0) {
        lua_getiuservalue(L, 1, 1);
        tt_tensor *w = ltt_checktensor(L, -1);
        lua_pushinteger(L, w->shape[k[0] == 'i' ? 1 : 0]);
    } else lua_pushnil(L);
    return 1;
}

static int linear_tostring(lua_State *L)
{
    luaL_checkudata(L, 1, "tt.Linear");
    lua_getiuservalue(L, 1, 1);
    tt_tensor *w = ltt_checktensor(L, -1);
    lua_getiuservalue(L, 1, 2);
    lua_pushfstring(L, "Linear(in_features=%d, out_features=%d, bias=%s)", (int)w->shape[1], (int)w->shape[0],
                    lua_isnil(L, -1) ? "false" : "true");
    return 1;
}

/* Uniform(-1/sqrt(in), 1/sqrt(in)) from the seeded generator, as PyTorch's
   default init bound; creation is not traced (it is not part of the math). */
static void uniform_param(lua_State *L, int ndim, const int64_t *shape, double bound)
{
    tt_tensor *t = ltt_newtensor(L);
    tt_tensor r = {0};
    tt_status st = tt_rand(&r, ndim, shape);
    if (st != TT_OK) ltt_trace_mute(0);
    if (st == TT_OK) {
        float *p = tt_data_f32(&r);
        int64_t n = tt_numel(&r);
        for (int64_t i = 0; i < n; i++) p[i] = (float)((2.0 * (double)p[i] - 1.0) * bound);
        *t = r;
    }
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

/* tt.nn in the table on top, and the tt.Linear metatable. */
void ltt_open_nn(lua_State *L)
{
    luaL_newmetatable(L, "tt.Linear");
    lua_pushliteral(L, "tt.Linear");
    lua_setfield(L, -2, "__metatable");
    lua_pushcfunction(L, linear_call);
    lua_setfield(L, -2, "__call");
    lua_pushcfunction(L, linear_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, linear_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);

    lua_newtable(L);
    lua_pushcfunction(L, ltt_linear);
    lua_setfield(L, -2, "Linear");
    lua_setfield(L, -2, "nn");
}
