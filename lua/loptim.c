/*
** loptim.c — tt.optim: SGD and AdamW over a list of parameters. Each is a
** userdata owning a core optimizer (core/ops/optim.c: the update loops and
** the state); __gc and __close free it. Rank 2 (lauxtt.h).
*/
#include <string.h>

#include "lauxtt.h"
#include "lttlib.h"

#define LTT_OPTIM "tt.Optimizer"

typedef struct loptim {
    tt_optim *o;                /* NULL once closed */
} loptim;

static loptim *checkoptim(lua_State *L)
{
    loptim *u = luaL_checkudata(L, 1, LTT_OPTIM);
    if (!u->o) ltt_error(L, "optimizer: it was closed");
    return u;
}

/* The options are read before the parameters are checked (an options
   table's __index may run a script's code). */
static int new_optim(lua_State *L, tt_optim_kind kind)
{
    const char *name = kind == TT_OPTIM_SGD ? "SGD" : "AdamW";
    static const char *const sgd_known[] = {"lr", "momentum", "weight_decay", NULL};
    static const char *const adamw_known[] = {"lr", "betas", "eps", "weight_decay", NULL};
    lua_settop(L, 2);
    ltt_check_opts(L, 2, name, kind == TT_OPTIM_SGD ? sgd_known : adamw_known);
    int opts = lua_istable(L, 2) ? 2 : 0;
    tt_optim_opts o = {0};
    o.lr = ltt_optnumber(L, opts, name, "lr", 1e-3);
    if (kind == TT_OPTIM_SGD) {
        o.momentum = ltt_optnumber(L, opts, name, "momentum", 0);
        o.weight_decay = ltt_optnumber(L, opts, name, "weight_decay", 0);
    } else {
        o.eps = ltt_optnumber(L, opts, name, "eps", 1e-8);
        o.weight_decay = ltt_optnumber(L, opts, name, "weight_decay", 1e-2);
        o.beta1 = 0.9, o.beta2 = 0.999;
        if (opts && lua_getfield(L, opts, "betas") != LUA_TNIL) {
            if (!lua_istable(L, -1) || lua_rawlen(L, -1) != 2 || lua_rawgeti(L, -1, 1) != LUA_TNUMBER
                || lua_rawgeti(L, -2, 2) != LUA_TNUMBER)
                return ltt_error(L, "AdamW: option 'betas' must be a list of two numbers, as {0.9, 0.999}");
            o.beta1 = lua_tonumber(L, -2);
            o.beta2 = lua_tonumber(L, -1);
        }
        lua_settop(L, 2);
    }
    int n;
    tt_tensor **params = ltt_checktensorlist(L, 1, name, "params", &n);
    if (n == 0) return ltt_error(L, "%s: params is an empty list; hint: pass m:parameters()", name);
    loptim *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->o = NULL;                        /* closed until made: a failure leaves nothing to free */
    luaL_setmetatable(L, LTT_OPTIM);
    ltt_hold(L, name, n, params);
    tt_status st = tt_optim_new(&u->o, kind, n, (const tt_tensor *const *)params, &o);
    ltt_unhold(L, n, params, st);
    return 1;
}

static int ltt_sgd(lua_State *L) { return new_optim(L, TT_OPTIM_SGD); }
static int ltt_adamw(lua_State *L) { return new_optim(L, TT_OPTIM_ADAMW); }

static int o_step(lua_State *L)
{
    ltt_check(L, tt_optim_step(checkoptim(L)->o));
    return 0;
}

static int o_zero_grad(lua_State *L)
{
    tt_optim_zero_grad(checkoptim(L)->o);
    return 0;
}

static int o_gc(lua_State *L)
{
    loptim *u = luaL_checkudata(L, 1, LTT_OPTIM);
    tt_optim_free(u->o);
    u->o = NULL;
    return 0;
}

static int o_tostring(lua_State *L)
{
    loptim *u = luaL_checkudata(L, 1, LTT_OPTIM);
    if (!u->o) {
        lua_pushliteral(L, "Optimizer (closed)");
        return 1;
    }
    const tt_optim_opts *o = tt_optim_options(u->o);
    char s[256];
    if (tt_optim_kind_of(u->o) == TT_OPTIM_SGD)
        snprintf(s, sizeof s, "SGD(%d params, lr=%g, momentum=%g, weight_decay=%g)", tt_optim_count(u->o), o->lr,
                 o->momentum, o->weight_decay);
    else
        snprintf(s, sizeof s, "AdamW(%d params, lr=%g, betas={%g, %g}, eps=%g, weight_decay=%g)",
                 tt_optim_count(u->o), o->lr, o->beta1, o->beta2, o->eps, o->weight_decay);
    lua_pushstring(L, s);
    return 1;
}

static const luaL_Reg optim_meth[] = {
    {"step", o_step}, {"zero_grad", o_zero_grad}, {NULL, NULL}
};

/* opt.lr reads the learning rate; the methods otherwise. */
static int o_index(lua_State *L)
{
    loptim *u = checkoptim(L);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "lr") == 0) {
        lua_pushnumber(L, tt_optim_options(u->o)->lr);
        return 1;
    }
    for (const luaL_Reg *r = optim_meth; r->name; r++)
        if (strcmp(k, r->name) == 0) {
            lua_pushcfunction(L, r->func);
            return 1;
        }
    return ltt_error(L, "optimizer: no field '%s' (fields: lr, step, zero_grad)", k);
}

/* opt.lr = x sets it for the next steps (a schedule). */
static int o_newindex(lua_State *L)
{
    loptim *u = checkoptim(L);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "lr") != 0) return ltt_error(L, "optimizer: only 'lr' can be set, not '%s'", k);
    double lr = luaL_checknumber(L, 3);
    if (!(lr >= 0)) return ltt_error(L, "optimizer: lr must be >= 0, got %g", lr);
    tt_optim_options(u->o)->lr = lr;
    return 0;
}

static const luaL_Reg optim_metameth[] = {
    {"__index", o_index}, {"__newindex", o_newindex}, {"__gc", o_gc}, {"__close", o_gc},
    {"__tostring", o_tostring}, {NULL, NULL}
};

static const luaL_Reg optimlib[] = {
    {"SGD", ltt_sgd}, {"AdamW", ltt_adamw}, {NULL, NULL}
};

/* tt.optim in the table on top, and the optimizers' metatable. */
void ltt_open_optim(lua_State *L)
{
    luaL_newmetatable(L, LTT_OPTIM);
    luaL_setfuncs(L, optim_metameth, 0);
    lua_pushliteral(L, LTT_OPTIM);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);
    luaL_newlib(L, optimlib);
    lua_setfield(L, -2, "optim");
}
