/*
** lnn.c — tt.nn: modules (Linear, Embedding, LayerNorm, RMSNorm, Dropout,
** and the block's FeedForward, Attention and Block, made of those), each
** a callable userdata holding its parameters or its parts as user values,
** and clip_grad_norm. Forward passes are the ordinary ops (traced, and
** recorded for backward like any other).
*/
#include <float.h>
#include <stddef.h>
#include <math.h>
#include <string.h>

#include "lauxtt.h"
#include "ltrace.h"
#include "lttlib.h"

/* Every module's userdata starts with this: whether it is in training
   mode (m:train(), m:eval(); only Dropout behaves differently). */
typedef struct modhead {
    int training;
} modhead;

static void *new_module(lua_State *L, size_t size, int nuv, const char *mt)
{
    modhead *h = lua_newuserdatauv(L, size, nuv);
    memset(h, 0, size);
    h->training = 1;
    luaL_setmetatable(L, mt);
    return h;
}

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
    tt_dtype ac = tt_autocast_dtype();
    if (ac != TT_FLOAT32 && b->dtype != ac && tt_dtype_is_float(b->dtype)) {
        /* autocast: PyTorch's linear is one op that casts its bias too */
        tt_tensor *bc = ltt_newtensor(L), *in_b[] = {b};
        LTT_CALL_HELD(L, "Linear", in_b, tt_autocast_to(bc, b, ac));
        b = bc;
    }
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
    new_module(L, sizeof(modhead), 2, "tt.Linear");
    int ud = lua_gettop(L);
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
    new_module(L, sizeof(modhead), 2, "tt.Embedding");
    int ud = lua_gettop(L);
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
    modhead head;
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
    if (tt_autocast_dtype() != TT_FLOAT32 && (x->dtype == TT_BFLOAT16 || x->dtype == TT_FLOAT16)) {
        /* autocast: a norm runs in float32 (in torch.autocast's float32 list) */
        tt_tensor *xf = ltt_newtensor(L), *in_x[] = {x};
        LTT_CALL_HELD(L, op, in_x, tt_autocast_to(xf, x, TT_FLOAT32));
        x = xf;
    }
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
    normdata *nd = new_module(L, sizeof *nd, 2, layer ? "tt.LayerNorm" : "tt.RMSNorm");
    nd->eps = eps;
    nd->dim = dim;
    int ud = lua_gettop(L);
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

/* ===== Dropout =====
   Dropout(p): tt.dropout in training mode, x itself after m:eval(). */

typedef struct dropdata {
    modhead head;
    double p;
} dropdata;

static int dropout_call(lua_State *L)
{
    dropdata *d = luaL_checkudata(L, 1, "tt.Dropout");
    tt_tensor *x = ltt_checktensor(L, 2);
    if (!d->head.training || d->p == 0) {
        lua_settop(L, 2);
        return 1;
    }
    tt_tensor *y = ltt_newtensor(L), *in[] = {x};
    LTT_CALL_HELD(L, "Dropout", in, tt_dropout(y, x, d->p));
    return 1;
}

static int ltt_dropout_new(lua_State *L)
{
    double p = luaL_optnumber(L, 1, 0.5);
    if (!(p >= 0 && p <= 1)) return ltt_error(L, "Dropout: p must be a probability in [0, 1], got %g", p);
    dropdata *d = new_module(L, sizeof *d, 0, "tt.Dropout");
    d->p = p;
    return 1;
}

/* ===== The block: FeedForward, Attention, Block =====
   Modules made of modules: each part is a user value (a Linear, a norm,
   ...), called through Lua as a script would call it, so the trace and
   autograd see the same ops. Linear layers have no bias unless bias = true
   (as LLaMA). */

/* Calls part `slot` of the module at 1 on the value at idx (and, when
   opts > 0, the options at opts); leaves nres results on top. */
static void call_part(lua_State *L, int slot, int idx, int opts, int nres)
{
    lua_getiuservalue(L, 1, slot);
    lua_pushvalue(L, idx);
    if (opts) lua_pushvalue(L, opts);
    lua_call(L, opts ? 2 : 1, nres);
}

static tt_tensor *un1(lua_State *L, const char *op, tt_op k, tt_tensor *a)
{
    tt_tensor *y = ltt_newtensor(L), *in[] = {a};
    LTT_CALL_HELD(L, op, in, tt_unary(y, k, a));
    return y;
}

/* A new Linear(in, out, {bias = bias}) on top. */
static void new_linear(lua_State *L, int64_t in, int64_t out, int bias);

static void check_last(lua_State *L, const char *op, tt_tensor *x, int64_t dim)
{
    if (x->ndim == 0 || x->shape[x->ndim - 1] != dim) {
        char sx[256];
        ltt_error(L, "%s: input %s does not end in dim=%lld", op, tt_shape_str(x, sx, sizeof sx), (long long)dim);
    }
}

/* FeedForward(dim [, {hidden, activation = "gelu" | "swiglu", bias}]):
   gelu: down_proj(gelu(up_proj(x))); swiglu (LLaMA's): down_proj(silu(gate_proj(x)) * up_proj(x)),
   silu(z) = z * sigmoid(z). Parts: gate_proj (swiglu only), up_proj, down_proj. */
typedef struct ffndata {
    modhead head;
    int64_t dim, hidden;
    int swiglu;
} ffndata;

static int ffn_call(lua_State *L)
{
    ffndata *f = luaL_checkudata(L, 1, "tt.FeedForward");
    tt_tensor *x = ltt_checktensor(L, 2);
    check_last(L, "FeedForward", x, f->dim);
    lua_settop(L, 2);
    call_part(L, 2, 2, 0, 1);                               /* 3: up */
    tt_tensor *up = ltt_checktensor(L, 3);
    if (f->swiglu) {
        call_part(L, 1, 2, 0, 1);                           /* 4: gate */
        tt_tensor *g = ltt_checktensor(L, 4);
        tt_tensor *silu = bin(L, "FeedForward", TT_OP_MUL, g, un1(L, "FeedForward", TT_OP_SIGMOID, g));
        bin(L, "FeedForward", TT_OP_MUL, silu, up);
    } else {
        un1(L, "FeedForward", TT_OP_GELU, up);
    }
    call_part(L, 3, lua_gettop(L), 0, 1);
    return 1;
}

static int64_t opt_size(lua_State *L, int opts, const char *op, const char *name, int64_t dflt)
{
    if (!opts) return dflt;
    int t = lua_getfield(L, opts, name);
    int64_t v = dflt;
    if (t != LUA_TNIL && !ltt_tointeger(L, -1, &v))
        ltt_error(L, "%s: option '%s' must be an integer, not a %s", op, name, luaL_typename(L, -1));
    lua_pop(L, 1);
    return v;
}

/* option `name`: one of the choices (index), dflt when absent */
static int opt_choice(lua_State *L, int opts, const char *op, const char *name, const char *const *choices, int dflt)
{
    if (!opts) return dflt;
    if (lua_getfield(L, opts, name) == LUA_TNIL) {
        lua_pop(L, 1);
        return dflt;
    }
    const char *v = lua_tostring(L, -1);
    for (int i = 0; v && choices[i]; i++)
        if (strcmp(v, choices[i]) == 0) {
            lua_pop(L, 1);
            return i;
        }
    return ltt_error(L, "%s: option '%s' must be \"%s\" or \"%s\", got %s", op, name, choices[0], choices[1],
                     v ? v : luaL_typename(L, -1));
}

static const char *const ACTIVATIONS[] = {"gelu", "swiglu", NULL};
static const char *const NORMS[] = {"rmsnorm", "layernorm", NULL};

/* SwiGLU's default width: 2/3 of 4 dim (the same parameters as GELU's 4
   dim with two matrices), rounded up to a multiple of 8, as Meta's llama
   rounds to multiple_of */
static int64_t default_hidden(int64_t dim, int swiglu)
{
    return swiglu ? (8 * dim / 3 + 7) / 8 * 8 : 4 * dim;
}

static int ltt_feedforward(lua_State *L)
{
    lua_Integer dim = luaL_checkinteger(L, 1);
    static const char *const known[] = {"hidden", "activation", "bias", NULL};
    ltt_check_opts(L, 2, "FeedForward", known);
    int opts = lua_istable(L, 2) ? 2 : 0;
    int swiglu = opt_choice(L, opts, "FeedForward", "activation", ACTIVATIONS, 0);
    int bias = ltt_optflag(L, opts, "FeedForward", "bias", 0);
    int64_t hidden = opt_size(L, opts, "FeedForward", "hidden", dim > 0 ? default_hidden(dim, swiglu) : 1);
    if (dim <= 0 || hidden <= 0)
        return ltt_error(L, "FeedForward: dim and hidden must be positive, got %lld, %lld", (long long)dim,
                         (long long)hidden);
    ffndata *f = new_module(L, sizeof *f, 3, "tt.FeedForward");
    f->dim = dim;
    f->hidden = hidden;
    f->swiglu = swiglu;
    int ud = lua_gettop(L);
    if (swiglu) {
        new_linear(L, dim, hidden, bias);
        lua_setiuservalue(L, ud, 1);
    }
    new_linear(L, dim, hidden, bias);
    lua_setiuservalue(L, ud, 2);
    new_linear(L, hidden, dim, bias);
    lua_setiuservalue(L, ud, 3);
    lua_settop(L, ud);
    return 1;
}

/* Attention(dim, heads [, {kv_heads, causal = true, rope = false,
   rope_base = 10000, bias}]): multi-head self-attention through tt.sdpa,
   x [..., N, dim] -> [..., N, dim]; kv_heads < heads is GQA (MQA at 1),
   K/V heads shared without copies. rope: tt.rope on q and k at positions
   0..N-1 (half-split). attn(x, {weights = true}) also returns the weights
   [..., heads, N, N]. Parts: q_proj, k_proj, v_proj, o_proj. */
typedef struct attndata {
    modhead head;
    int64_t dim, heads, kv_heads;
    int causal, rope;
    double rope_base;
} attndata;

/* h [..., N, nh * hd] -> [..., nh, N, hd] */
static tt_tensor *split_heads(lua_State *L, tt_tensor *h, int64_t nh, int64_t hd)
{
    int nd = h->ndim;
    int64_t shape[TT_MAX_DIMS];
    memcpy(shape, h->shape, (size_t)nd * sizeof *shape);
    shape[nd - 1] = nh;
    shape[nd] = hd;
    tt_tensor *r = ltt_newtensor(L), *in[] = {h};
    LTT_CALL_HELD(L, "Attention", in, tt_reshape(r, h, nd + 1, shape));
    tt_tensor *t = ltt_newtensor(L), *in2[] = {r};
    LTT_CALL_HELD(L, "Attention", in2, tt_transpose(t, r, nd - 2, nd - 1));
    return t;
}

static int attn_call(lua_State *L)
{
    attndata *a = luaL_checkudata(L, 1, "tt.Attention");
    tt_tensor *x = ltt_checktensor(L, 2);
    static const char *const known[] = {"weights", NULL};
    ltt_check_opts(L, 3, "Attention", known);
    int want_w = ltt_optflag(L, lua_istable(L, 3) ? 3 : 0, "Attention", "weights", 0);
    check_last(L, "Attention", x, a->dim);
    if (x->ndim < 2) {
        char sx[256];
        return ltt_error(L, "Attention: input %s must be [..., N, %lld] (tokens, then features)",
                         tt_shape_str(x, sx, sizeof sx), (long long)a->dim);
    }
    lua_settop(L, 2);
    const int64_t hd = a->dim / a->heads, n = x->shape[x->ndim - 2];
    int qkv[3];
    for (int i = 0; i < 3; i++) {
        call_part(L, i + 1, 2, 0, 1);
        split_heads(L, ltt_checktensor(L, -1), i == 0 ? a->heads : a->kv_heads, hd);
        qkv[i] = lua_gettop(L);
    }
    if (a->rope) {
        tt_tensor *pos = ltt_newtensor(L);
        ltt_check(L, tt_arange(pos, 0, (double)n, 1));
        for (int i = 0; i < 2; i++) {
            tt_tensor *t = ltt_checktensor(L, qkv[i]), *r = ltt_newtensor(L), *in[] = {t, pos};
            LTT_CALL_HELD(L, "Attention", in, tt_rope(r, t, pos, a->rope_base, 0));
            qkv[i] = lua_gettop(L);
        }
    }
    lua_getfield(L, LUA_REGISTRYINDEX, "tt.nn.sdpa");       /* tt.sdpa itself, whatever its options */
    for (int i = 0; i < 3; i++) lua_pushvalue(L, qkv[i]);
    lua_createtable(L, 0, 2);
    lua_pushboolean(L, a->causal);
    lua_setfield(L, -2, "causal");
    lua_pushboolean(L, want_w);
    lua_setfield(L, -2, "weights");
    lua_call(L, 4, 2);
    int w = lua_gettop(L);
    tt_tensor *o = ltt_checktensor(L, w - 1);
    tt_tensor *ot = ltt_newtensor(L), *in[] = {o};
    LTT_CALL_HELD(L, "Attention", in, tt_transpose(ot, o, o->ndim - 3, o->ndim - 2));
    int64_t shape[TT_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
    tt_tensor *merged = ltt_newtensor(L), *in2[] = {ot};
    LTT_CALL_HELD(L, "Attention", in2, tt_reshape(merged, ot, x->ndim, shape));
    call_part(L, 4, lua_gettop(L), 0, 1);
    if (!want_w) return 1;
    lua_pushvalue(L, w);
    return 2;
}

static int ltt_attention(lua_State *L)
{
    lua_Integer dim = luaL_checkinteger(L, 1), heads = luaL_checkinteger(L, 2);
    static const char *const known[] = {"kv_heads", "causal", "rope", "rope_base", "bias", NULL};
    ltt_check_opts(L, 3, "Attention", known);
    int opts = lua_istable(L, 3) ? 3 : 0;
    int64_t kv = opt_size(L, opts, "Attention", "kv_heads", heads);
    int causal = ltt_optflag(L, opts, "Attention", "causal", 1), rope = ltt_optflag(L, opts, "Attention", "rope", 0);
    int bias = ltt_optflag(L, opts, "Attention", "bias", 0);
    double base = ltt_optnumber(L, opts, "Attention", "rope_base", 10000);
    if (dim <= 0 || heads <= 0 || dim % heads != 0)
        return ltt_error(L, "Attention: dim %lld must be a positive multiple of heads %lld", (long long)dim,
                         (long long)heads);
    if (kv <= 0 || heads % kv != 0)
        return ltt_error(L, "Attention: kv_heads %lld must divide heads %lld (GQA: each K/V head serves heads/kv_heads query heads)",
                         (long long)kv, (long long)heads);
    if (rope && (dim / heads) % 2 != 0)
        return ltt_error(L, "Attention: rope needs an even head dim, got %lld (dim %lld / heads %lld)",
                         (long long)(dim / heads), (long long)dim, (long long)heads);
    if (rope && !(base > 0)) return ltt_error(L, "Attention: rope_base must be positive, got %g", base);
    attndata *a = new_module(L, sizeof *a, 4, "tt.Attention");
    *a = (attndata){ .head = {1}, .dim = dim, .heads = heads, .kv_heads = kv, .causal = causal, .rope = rope,
                     .rope_base = base };
    int ud = lua_gettop(L);
    const int64_t hd = dim / heads, outs[4] = {dim, kv * hd, kv * hd, dim};
    for (int i = 0; i < 4; i++) {
        new_linear(L, dim, outs[i], bias);
        lua_setiuservalue(L, ud, i + 1);
    }
    lua_settop(L, ud);
    return 1;
}

/* Block(dim, heads [, opts]): a pre-norm transformer block,
   h = x + attn(attn_norm(x)); out = h + ffn(ffn_norm(h)), with dropout
   after each part when dropout > 0. opts: norm = "rmsnorm" | "layernorm",
   activation = "swiglu" | "gelu", hidden, kv_heads, rope, rope_base, bias,
   dropout. block(x, {weights = true}) also returns attention's weights.
   Parts: attn_norm, attn, ffn_norm, ffn, dropout (nil at 0). */
typedef struct blockdata {
    modhead head;
    int64_t dim;
} blockdata;

static int block_call(lua_State *L)
{
    blockdata *b = luaL_checkudata(L, 1, "tt.Block");
    tt_tensor *x = ltt_checktensor(L, 2);
    static const char *const known[] = {"weights", NULL};
    ltt_check_opts(L, 3, "Block", known);
    int want_w = ltt_optflag(L, lua_istable(L, 3) ? 3 : 0, "Block", "weights", 0);
    check_last(L, "Block", x, b->dim);
    lua_settop(L, 3);
    int has_drop = lua_getiuservalue(L, 1, 5) != LUA_TNIL;
    lua_pop(L, 1);
    call_part(L, 1, 2, 0, 1);                               /* 4: attn_norm(x) */
    call_part(L, 2, 4, want_w ? 3 : 0, 2);                  /* 5, 6: attn(...), weights (or nil) */
    if (has_drop) call_part(L, 5, 5, 0, 1);
    tt_tensor *a = ltt_checktensor(L, has_drop ? 7 : 5);
    bin(L, "Block", TT_OP_ADD, x, a);                       /* h: the residual stream */
    int h = lua_gettop(L);
    call_part(L, 3, h, 0, 1);
    call_part(L, 4, lua_gettop(L), 0, 1);
    if (has_drop) call_part(L, 5, lua_gettop(L), 0, 1);
    bin(L, "Block", TT_OP_ADD, ltt_checktensor(L, h), ltt_checktensor(L, -1));
    if (!want_w) return 1;
    lua_pushvalue(L, 6);
    return 2;
}

static int ltt_block(lua_State *L)
{
    lua_Integer dim = luaL_checkinteger(L, 1), heads = luaL_checkinteger(L, 2);
    static const char *const known[] = {"norm", "activation", "hidden", "kv_heads", "rope", "rope_base", "bias",
                                        "dropout", NULL};
    ltt_check_opts(L, 3, "Block", known);
    int opts = lua_istable(L, 3) ? 3 : 0;
    int layer = opt_choice(L, opts, "Block", "norm", NORMS, 0);
    int swiglu = !opt_choice(L, opts, "Block", "activation", (const char *const[]){"swiglu", "gelu", NULL}, 0);
    double p = ltt_optnumber(L, opts, "Block", "dropout", 0);
    if (!(p >= 0 && p <= 1)) return ltt_error(L, "Block: dropout must be a probability in [0, 1], got %g", p);
    if (dim <= 0) return ltt_error(L, "Block: dim must be positive, got %lld", (long long)dim);
    blockdata *b = new_module(L, sizeof *b, 5, "tt.Block");
    b->dim = dim;
    int ud = lua_gettop(L);
    for (int part = 0; part < 2; part++) {
        lua_pushcfunction(L, layer ? ltt_layernorm : ltt_rmsnorm);
        lua_pushinteger(L, dim);
        lua_call(L, 1, 1);
        lua_setiuservalue(L, ud, 2 * part + 1);
        /* the attention's or the ffn's options, from the block's */
        static const char *const attn_keys[] = {"kv_heads", "rope", "rope_base", "bias", NULL};
        static const char *const ffn_keys[] = {"hidden", "bias", NULL};
        lua_pushcfunction(L, part ? ltt_feedforward : ltt_attention);
        lua_pushinteger(L, dim);
        if (!part) lua_pushinteger(L, heads);
        lua_newtable(L);
        for (const char *const *k = part ? ffn_keys : attn_keys; opts && *k; k++) {
            lua_getfield(L, opts, *k);
            lua_setfield(L, -2, *k);
        }
        if (part) {
            lua_pushstring(L, swiglu ? "swiglu" : "gelu");
            lua_setfield(L, -2, "activation");
        }
        lua_call(L, part ? 2 : 3, 1);
        lua_setiuservalue(L, ud, 2 * part + 2);
    }
    if (p > 0) {
        lua_pushcfunction(L, ltt_dropout_new);
        lua_pushnumber(L, p);
        lua_call(L, 1, 1);
        lua_setiuservalue(L, ud, 5);
    }
    lua_settop(L, ud);
    return 1;
}

/* ===== What every module has ===== */

/* The kinds of module: metatable, name, forward, and its user values in
   order: parameters (weight, bias; nil when off) for a leaf, parts for
   a module made of modules. parameters() lists them in that order. */
typedef struct modkind {
    const char *mt, *name;
    lua_CFunction call;
    const char *const *slots;
    int composite;
} modkind;

static const char *const PARAM_NAMES[] = {"weight", "bias", NULL};
static const char *const FFN_PARTS[] = {"gate_proj", "up_proj", "down_proj", NULL};
static const char *const ATTN_PARTS[] = {"q_proj", "k_proj", "v_proj", "o_proj", NULL};
static const char *const BLOCK_PARTS[] = {"attn_norm", "attn", "ffn_norm", "ffn", "dropout", NULL};
static const char *const NO_SLOTS[] = {NULL};

static const modkind KINDS[] = {
    {"tt.Linear", "Linear", linear_call, PARAM_NAMES, 0},
    {"tt.Embedding", "Embedding", embedding_call, PARAM_NAMES, 0},
    {"tt.LayerNorm", "LayerNorm", layernorm_call, PARAM_NAMES, 0},
    {"tt.RMSNorm", "RMSNorm", rmsnorm_call, PARAM_NAMES, 0},
    {"tt.Dropout", "Dropout", dropout_call, NO_SLOTS, 0},
    {"tt.FeedForward", "FeedForward", ffn_call, FFN_PARTS, 1},
    {"tt.Attention", "Attention", attn_call, ATTN_PARTS, 1},
    {"tt.Block", "Block", block_call, BLOCK_PARTS, 1},
};

static const modkind *testmodule(lua_State *L, int idx)
{
    for (size_t i = 0; i < sizeof KINDS / sizeof *KINDS; i++)
        if (luaL_testudata(L, idx, KINDS[i].mt)) return &KINDS[i];
    return NULL;
}

static const modkind *checkmodule(lua_State *L, int idx)
{
    const modkind *k = testmodule(L, idx);
    if (!k) luaL_typeerror(L, idx, "tt.nn module");
    return k;
}

static void new_linear(lua_State *L, int64_t in, int64_t out, int bias)
{
    lua_pushcfunction(L, ltt_linear);
    lua_pushinteger(L, in);
    lua_pushinteger(L, out);
    lua_createtable(L, 0, 1);
    lua_pushboolean(L, bias);
    lua_setfield(L, -2, "bias");
    lua_call(L, 3, 1);
}

/* The module at idx's parameters appended to the list at list (k of them
   so far), named prefix..name when named: parts in order, recursively. */
static void add_parameters(lua_State *L, int idx, int list, int *k, const char *prefix, int named)
{
    const modkind *kind = checkmodule(L, idx);
    for (int i = 0; kind->slots[i]; i++) {
        if (lua_getiuservalue(L, idx, i + 1) == LUA_TNIL) {
            lua_pop(L, 1);
            continue;
        }
        const char *name = lua_pushfstring(L, "%s%s", prefix, kind->slots[i]);
        if (kind->composite) {
            const char *sub = lua_pushfstring(L, "%s.", name);
            add_parameters(L, lua_gettop(L) - 2, list, k, sub, named);
            lua_pop(L, 3);
            continue;
        }
        if (named) {
            lua_createtable(L, 2, 0);
            lua_rotate(L, -2, 1);
            lua_rawseti(L, -2, 1);                          /* {name, */
            lua_rotate(L, -2, 1);
            lua_rawseti(L, -2, 2);                          /*  tensor} */
        } else {
            lua_pop(L, 1);
        }
        lua_rawseti(L, list, ++*k);
    }
}

/* m:parameters(): the tensors in order (weight, then bias; parts in
   order), absent ones left out. named: m:named_parameters(), a list of
   {name, tensor} ("attn.q_proj.weight"). */
static int list_parameters(lua_State *L, int named)
{
    checkmodule(L, 1);
    lua_settop(L, 1);
    lua_newtable(L);
    int k = 0;
    add_parameters(L, 1, 2, &k, "", named);
    return 1;
}

static int m_parameters(lua_State *L) { return list_parameters(L, 0); }
static int m_named_parameters(lua_State *L) { return list_parameters(L, 1); }

/* m:train([mode]) (default true) and m:eval(): the mode of m and of its
   parts; they return m, as PyTorch's */
static void set_training(lua_State *L, int idx, int mode)
{
    const modkind *k = checkmodule(L, idx);
    ((modhead *)lua_touserdata(L, idx))->training = mode;
    for (int i = 0; k->composite && k->slots[i]; i++) {
        if (lua_getiuservalue(L, idx, i + 1) != LUA_TNIL) set_training(L, lua_gettop(L), mode);
        lua_pop(L, 1);
    }
}

static int m_train(lua_State *L)
{
    checkmodule(L, 1);
    int mode = lua_isnoneornil(L, 2) ? 1 : (luaL_checktype(L, 2, LUA_TBOOLEAN), lua_toboolean(L, 2));
    set_training(L, 1, mode);
    lua_settop(L, 1);
    return 1;
}

static int m_eval(lua_State *L)
{
    checkmodule(L, 1);
    set_training(L, 1, 0);
    lua_settop(L, 1);
    return 1;
}

/* a kind's size fields: name -> offset of an int64_t in its data */
typedef struct sizefield {
    lua_CFunction call;
    const char *name;
    size_t off;
} sizefield;

static const sizefield SIZE_FIELDS[] = {
    {ffn_call, "dim", offsetof(ffndata, dim)}, {ffn_call, "hidden", offsetof(ffndata, hidden)},
    {attn_call, "dim", offsetof(attndata, dim)}, {attn_call, "heads", offsetof(attndata, heads)},
    {attn_call, "kv_heads", offsetof(attndata, kv_heads)}, {block_call, "dim", offsetof(blockdata, dim)},
};

/* Fields: the parameters or parts (nil when off), training, the sizes and
   options, the methods. */
static int module_index(lua_State *L)
{
    const modkind *k = checkmodule(L, 1);
    const char *key = luaL_checkstring(L, 2);
    for (int i = 0; k->slots[i]; i++)
        if (strcmp(key, k->slots[i]) == 0) {
            lua_getiuservalue(L, 1, i + 1);
            return 1;
        }
    for (size_t i = 0; i < sizeof SIZE_FIELDS / sizeof *SIZE_FIELDS; i++)
        if (SIZE_FIELDS[i].call == k->call && strcmp(key, SIZE_FIELDS[i].name) == 0) {
            int64_t v;
            memcpy(&v, (const char *)lua_touserdata(L, 1) + SIZE_FIELDS[i].off, sizeof v);
            lua_pushinteger(L, v);
            return 1;
        }
    if (strcmp(key, "parameters") == 0) lua_pushcfunction(L, m_parameters);
    else if (strcmp(key, "named_parameters") == 0) lua_pushcfunction(L, m_named_parameters);
    else if (strcmp(key, "train") == 0) lua_pushcfunction(L, m_train);
    else if (strcmp(key, "eval") == 0) lua_pushcfunction(L, m_eval);
    else if (strcmp(key, "training") == 0) lua_pushboolean(L, ((modhead *)lua_touserdata(L, 1))->training);
    else if (k->call == dropout_call && strcmp(key, "p") == 0) lua_pushnumber(L, ((dropdata *)lua_touserdata(L, 1))->p);
    else if (k->call == ffn_call && strcmp(key, "activation") == 0)
        lua_pushstring(L, ACTIVATIONS[((ffndata *)lua_touserdata(L, 1))->swiglu]);
    else if (k->call == linear_call && (strcmp(key, "in_features") == 0 || strcmp(key, "out_features") == 0)) {
        lua_getiuservalue(L, 1, 1);
        tt_tensor *w = ltt_checktensor(L, -1);
        lua_pushinteger(L, w->shape[key[0] == 'i' ? 1 : 0]);
    } else if (k->call == embedding_call && (strcmp(key, "num_embeddings") == 0 || strcmp(key, "embedding_dim") == 0)) {
        lua_getiuservalue(L, 1, 1);
        tt_tensor *w = ltt_checktensor(L, -1);
        lua_pushinteger(L, w->shape[key[0] == 'n' ? 0 : 1]);
    } else if ((k->call == layernorm_call || k->call == rmsnorm_call) && strcmp(key, "eps") == 0) {
        lua_pushnumber(L, ((normdata *)lua_touserdata(L, 1))->eps);
    } else if ((k->call == layernorm_call || k->call == rmsnorm_call) && strcmp(key, "normalized_shape") == 0) {
        lua_pushinteger(L, ((normdata *)lua_touserdata(L, 1))->dim);
    } else lua_pushnil(L);
    return 1;
}

static int module_tostring(lua_State *L)
{
    const modkind *k = checkmodule(L, 1);
    const void *data = lua_touserdata(L, 1);
    char s[200];
    if (k->call == dropout_call) {
        snprintf(s, sizeof s, "Dropout(p=%g)", ((const dropdata *)data)->p);
        lua_pushstring(L, s);
        return 1;
    }
    if (k->call == ffn_call) {
        const ffndata *f = data;
        snprintf(s, sizeof s, "FeedForward(%lld, hidden=%lld, activation=%s)", (long long)f->dim,
                 (long long)f->hidden, ACTIVATIONS[f->swiglu]);
        lua_pushstring(L, s);
        return 1;
    }
    if (k->call == attn_call) {
        const attndata *a = data;
        snprintf(s, sizeof s, "Attention(%lld, heads=%lld, kv_heads=%lld, causal=%s, rope=%s)", (long long)a->dim,
                 (long long)a->heads, (long long)a->kv_heads, a->causal ? "true" : "false", a->rope ? "true" : "false");
        lua_pushstring(L, s);
        return 1;
    }
    if (k->call == block_call) {                 /* Block(its parts) */
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        luaL_addstring(&b, "Block(");
        for (int i = 0; i < 5; i++) {
            if (lua_getiuservalue(L, 1, i + 1) == LUA_TNIL) {
                lua_pop(L, 1);
                continue;
            }
            if (i > 0) luaL_addstring(&b, ", ");
            luaL_tolstring(L, -1, NULL);
            lua_remove(L, -2);
            luaL_addvalue(&b);
        }
        luaL_addstring(&b, ")");
        luaL_pushresult(&b);
        return 1;
    }
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
    const normdata *nd = data;
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
    {"Dropout", ltt_dropout_new}, {"FeedForward", ltt_feedforward}, {"Attention", ltt_attention}, {"Block", ltt_block},
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
    lua_getfield(L, -1, "sdpa");                /* Attention calls tt.sdpa as a script does */
    lua_setfield(L, LUA_REGISTRYINDEX, "tt.nn.sdpa");
    luaL_newlib(L, nnlib);
    lua_setfield(L, -2, "nn");
}
