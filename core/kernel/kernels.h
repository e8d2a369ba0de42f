/*
** kernels.h — compute kernels on raw pointers. They never see tt_tensor and
** assume valid arguments (the op front-ends in core/ops/ check everything).
** Strides count elements. *_ref variants are the scalar references, always
** compiled; the dispatching entry points pick SIMD paths at run time.
*/
#ifndef TK_KERNELS_H
#define TK_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* ===== Threads ===== */

/* The thread count (TT_NUM_THREADS, else all cores, chosen at first use);
   n <= 0 means all cores. tk_threads_stop joins the pool's workers and
   frees their scratch; the pool starts again on the next parallel call.
   The public tt_set_num_threads & co. (tt.h) forward to these. */
void tk_set_num_threads(int n);
int tk_get_num_threads(void);
void tk_threads_stop(void);

/* Runs fn(ctx, begin, end) over disjoint ranges covering [0, n) on the
   persistent pool; blocks until all are done. The ranges (a few a thread,
   at least `grain` long) depend only on n, grain and the thread count;
   which thread takes which depends on timing, so fn's results must not.
   Calls from inside a running task run serially. */
typedef void (*tk_range_fn)(void *ctx, int64_t begin, int64_t end);
void tk_parallel_for(int64_t n, int64_t grain, tk_range_fn fn, void *ctx);

/* ===== 16-bit floats (half.c) =====
   bfloat16 and float16 as raw bits. float32 to 16 bits rounds to nearest,
   ties to even: a NaN stays NaN (quiet, its sign kept), float16 overflows
   to inf from 65520 and has subnormals down to 2^-24. 16 bits to float32 is
   exact (a float16 NaN comes out quiet). bf16 != 0 picks bfloat16, else
   float16. The one-value functions and the _ref loops are portable C; the
   bulk tk_half_* run the current path's vector conversions (AVX-512F,
   AVX2 with F16C), which give the same bits as the _ref loops. */
uint16_t tk_bf16_from_f32(float f);
float tk_bf16_to_f32(uint16_t h);
uint16_t tk_f16_from_f32(float f);
float tk_f16_to_f32(uint16_t h);
void tk_half_from_f32(int bf16, int64_t n, const float *x, uint16_t *y);
void tk_half_to_f32(int bf16, int64_t n, const uint16_t *x, float *y);
void tk_half_from_f32_ref(int bf16, int64_t n, const float *x, uint16_t *y);
void tk_half_to_f32_ref(int bf16, int64_t n, const uint16_t *x, float *y);

/* ===== GEMM ===== */

/* For each batch b < nbatch: C_b[M,N] = A_b[M,K] * B_b[K,N] (overwritten;
   K == 0 gives zeros). A_b element (i,p) is a[aoff[b] + i*rsa + p*csa];
   likewise B and C. Any strides (0 for broadcast, transposed, ...). */
void tk_gemm_batch(int64_t nbatch, int64_t M, int64_t N, int64_t K,
                   const float *a, const int64_t *aoff, int64_t rsa, int64_t csa,
                   const float *b, const int64_t *boff, int64_t rsb, int64_t csb,
                   float *c, const int64_t *coff, int64_t rsc, int64_t csc);
/* The same with 16-bit operands: ta, tb are each TK_F32, TK_BF16 or TK_F16
   (a, b point at that type; offsets and strides count its elements). The
   packers convert to float32 as they pack, so the products and sums are
   float32 and C gets the bits tk_gemm_batch gives on float32 copies of A
   and B laid out with the same strides; but when both are TK_BF16 and the
   path has ukernel_bf16 (avx512_bf16), the packers keep bfloat16 pairs and
   the micro-kernel takes two products an instruction: other bits (the
   sums' order, subnormals as 0), still the same on any thread count. */
enum { TK_F32, TK_BF16, TK_F16 };
void tk_gemm_batch_typed(int64_t nbatch, int64_t M, int64_t N, int64_t K,
                         int ta, const void *a, const int64_t *aoff, int64_t rsa, int64_t csa,
                         int tb, const void *b, const int64_t *boff, int64_t rsb, int64_t csb,
                         float *c, const int64_t *coff, int64_t rsc, int64_t csc);
/* tk_gemm_batch_typed with C of type tc (TK_BF16 or TK_F16: c, offsets and
   strides count 16-bit values): each element rounded once from the float32
   value tk_gemm_batch_typed would give, the same bits. When K fits one
   cache block (bfloat16 pairs: K up to 2048) each tile is rounded as it
   leaves L1 (no float32 C); otherwise a float32 C from tk_alloc (under the
   memory cap) holds the earlier blocks' sums and the last block's tiles
   are rounded as they are stored. 0, or -1 when the cap or malloc refuses
   that C (tt_errmsg says which). */
int tk_gemm_batch_round(int64_t nbatch, int64_t M, int64_t N, int64_t K,
                        int ta, const void *a, const int64_t *aoff, int64_t rsa, int64_t csa,
                        int tb, const void *b, const int64_t *boff, int64_t rsb, int64_t csb,
                        int tc, uint16_t *c, const int64_t *coff, int64_t rsc, int64_t csc);
void tk_gemm_batch_ref(int64_t nbatch, int64_t M, int64_t N, int64_t K,
                       const float *a, const int64_t *aoff, int64_t rsa, int64_t csa,
                       const float *b, const int64_t *boff, int64_t rsb, int64_t csb,
                       float *c, const int64_t *coff, int64_t rsc, int64_t csc);

/* ===== Rows and columns: softmax, exp, reductions ===== */

/* y[r, :] = softmax(x[r, :]) for nrows contiguous rows of length n
   (row stride n). Stable (subtracts the row max); an all -inf row gives NaN.
   x == y allowed. */
void tk_softmax_rows(int64_t nrows, int64_t n, const float *x, float *y);
void tk_softmax_rows_ref(int64_t nrows, int64_t n, const float *x, float *y);
/* y[r, :] = x - max - log(sum(exp(x - max))) over each row, as softmax's
   rows; an all -inf row gives NaN (as softmax and PyTorch). x == y allowed.
   Returns 0, or -1 if it could not get its scratch row. */
int tk_log_softmax_rows(int64_t nrows, int64_t n, const float *x, float *y);
void tk_log_softmax_rows_ref(int64_t nrows, int64_t n, const float *x, float *y);

/* y[i] = exp(x[i]) for n contiguous floats (x == y allowed). */
void tk_exp_vec(int64_t n, const float *x, float *y);
void tk_exp_vec_ref(int64_t n, const float *x, float *y);

/* b[j*ldb + i] = a[i*lda + j] for i < rows, j < cols: a block of a
   transposed view gathered (iter.c's tiles), one thread. */
void tk_transpose(int64_t rows, int64_t cols, const float *a, int64_t lda, float *b, int64_t ldb);

/* Softmax over n for contiguous x, y viewed as [outer, n, inner] (x == y
   allowed); an all -inf column gives NaN. Neighbouring columns go through
   the passes side by side, so every access runs along contiguous rows. */
void tk_softmax_cols(int64_t outer, int64_t n, int64_t inner, const float *x, float *y);
/* The same for log_softmax (x - max - log(sum(exp(x - max)))). */
void tk_log_softmax_cols(int64_t outer, int64_t n, int64_t inner, const float *x, float *y);

/* Cross-entropy of nrows contiguous rows of n logits against 0-based
   targets t (t < 0: ignored, loss 0, row not read). loss[r] = log-sum-exp
   - x[t], max-subtracted; stats[2r], stats[2r+1] get the row's max and
   sum of exp(x - max) for the backward (an all -inf row: NaN). Returns 0,
   or -1 if it could not get its scratch row. */
int tk_cross_entropy_rows(int64_t nrows, int64_t n, const float *x, const int64_t *t,
                          float *loss, float *stats);
/* dx[r] = (softmax(x[r]) - onehot(t[r])) * g[r * gstride] from stats;
   ignored rows get zeros. */
void tk_cross_entropy_backward_rows(int64_t nrows, int64_t n, const float *x, const int64_t *t,
                                    const float *stats, const float *g, int64_t gstride, float *dx);

/* Reductions of lines: tk_reduce_lines reduces nb <= TK_RED_BLOCK lines side
   by side, line i holding x[i*si + j*sd] for j < R; v[i] gets the value and,
   for MAX/MIN, ix[i] the 1-based index of the first extremum (NaN wins;
   R >= 1 there). SUM/MEAN/VAR/STD sum in double; VAR and STD divide by
   R - 1 (NaN when R < 2), MEAN by R (NaN when R == 0). */
enum { TK_RED_SUM, TK_RED_MEAN, TK_RED_VAR, TK_RED_STD, TK_RED_MAX, TK_RED_MIN };
#define TK_RED_BLOCK 64         /* neighbouring lines share the cache lines a strided pass reads */
/* A contiguous line's sum goes in TK_SUM_CHAINS double chains (element j
   to chain j % TK_SUM_CHAINS, in order), folded by tk_sum_fold; every path
   keeps that order, so the bits do not depend on the path. */
#define TK_SUM_CHAINS 32
static inline double tk_sum_fold(double *s)
{
    for (int w = TK_SUM_CHAINS / 2; w > 0; w /= 2)
        for (int k = 0; k < w; k++) s[k] += s[k + w];
    return s[0];
}
void tk_reduce_lines(int op, const float *x, int64_t nb, int64_t si, int64_t R, int64_t sd,
                     float *v, float *ix);

/* ===== Elementwise =====
   One row of n elements; the output o is contiguous, each input has stride
   sx / sy of 1 (contiguous) or 0 (one broadcast scalar). These run on the
   calling thread: the op front-end shares the rows out. Results never depend
   on where a row starts (tails use the same arithmetic). */

/* The elementwise op codes, one list for every row function below (each
   takes the codes its comment names). A code's scalar expression is written
   once, in ref.c; a SIMD path vectorizes the codes it knows and runs the
   reference row for the others, so a new op needs no SIMD code. */
enum {
    TK_EW_ADD, TK_EW_SUB, TK_EW_MUL, TK_EW_DIV, TK_EW_POW, TK_EW_MAX, TK_EW_MIN,
    TK_EW_EQ, TK_EW_NE, TK_EW_LT, TK_EW_LE, TK_EW_GT, TK_EW_GE, TK_EW_AND, TK_EW_OR, TK_EW_XOR,
    TK_EW_NEG, TK_EW_ABS, TK_EW_SQRT, TK_EW_EXP, TK_EW_LOG, TK_EW_NOT,
    TK_EW_RELU, TK_EW_GELU, TK_EW_GELU_TANH, TK_EW_TANH, TK_EW_SIGMOID,
    TK_EW_GELU_BWD, TK_EW_GELU_TANH_BWD,
    TK_EW_SIN, TK_EW_COS,
    TK_EW_COUNT
};

/* Binary float ops: ADD SUB MUL DIV POW MAX MIN. ADD..DIV are IEEE-exact,
   so every path gives the bits of the scalar expression; MAX/MIN are
   tk_max_nan / tk_min_nan below; POW is powf, except that tk_ew_binary runs
   a row whose y is a broadcast 2 as x*x (exact, and the common case).
   And two backward codes: GELU_BWD and GELU_TANH_BWD give x * gelu'(y), x
   the output's gradient and y the input (the reference row on every path;
   gelu' is 0 at -inf and 1 at inf, its limits). */
void tk_ew_binary(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy, float *o);
void tk_ew_binary_ref(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy, float *o);
/* The NaN rule of max and min, written once for every scalar path (the
   SIMD paths build the same from vector max/min and a NaN blend): NaN
   propagates, x's when both are NaN; on equal operands (0 vs -0), y. */
static inline float tk_max_nan(float x, float y) { return (x > y || isnan(x)) ? x : y; }
static inline float tk_min_nan(float x, float y) { return (x < y || isnan(x)) ? x : y; }
/* Comparisons to bool bytes 0/1: EQ NE LT LE GT GE (ordered: NaN compares
   false; NE true). */
void tk_ew_compare(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy, uint8_t *o);
void tk_ew_compare_ref(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy, uint8_t *o);
/* Unary float ops: NEG ABS SQRT EXP LOG and the activations. NEG, ABS,
   SQRT, RELU are exact. EXP as tk_exp_vec (TANH and SIGMOID on the SIMD
   paths are built on it, within 1e-6 relative); LOG within 2 ulp of the
   exact result on the SIMD paths (1.15 at worst over all positive floats; logf on the scalar one); log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN
   stays NaN. The activations: RELU (exact; NaN stays NaN), GELU (exact
   form, x * Phi(x) through erfcf: accurate where Phi is tiny), GELU_TANH
   (PyTorch's tanh form, written x * sigmoid(2z) so it does not cancel for
   negative x), TANH, SIGMOID (1 / (1 + exp(-x))); gelu(-inf) is NaN (-inf
   * 0), as PyTorch's formula gives. o == x allowed. */
void tk_ew_unary(int op, int64_t n, const float *x, float *o);
void tk_ew_unary_ref(int op, int64_t n, const float *x, float *o);
/* One row of rotary embedding: d floats (d even), pair i turned by the
   angle whose cosine and sine are c[i], s[i] (0 <= i < d/2); by minus it
   when inverse. interleaved: pairs (2i, 2i+1), else (i, i + d/2). y == x
   allowed. */
void tk_rope_row(int64_t d, const float *x, float *y, const float *c, const float *s, int interleaved, int inverse);
/* Bool bytes (0/1) to bool bytes, scalar only: EQ NE AND OR XOR, and NOT
   (o == x allowed). */
void tk_ew_logic(int op, int64_t n, const uint8_t *x, int64_t sx, const uint8_t *y, int64_t sy, uint8_t *o);
void tk_ew_logic_unary(int op, int64_t n, const uint8_t *x, uint8_t *o);
/* int64 rows, scalar loops (ref.c): ADD SUB MUL (wrapping as two's
   complement) POW MAX MIN to int64; EQ NE LT LE GT GE to bool bytes; NEG ABS. */
void tk_ew_i64(int op, int64_t n, const int64_t *x, int64_t sx, const int64_t *y, int64_t sy, int64_t *o);
void tk_ew_i64_compare(int op, int64_t n, const int64_t *x, int64_t sx, const int64_t *y, int64_t sy, uint8_t *o);
void tk_ew_i64_unary(int op, int64_t n, const int64_t *x, int64_t *o);
/* o[i] = m[i*sm] ? v : x[i*sx] (any non-zero byte is true); sx, sm 0 or 1. */
void tk_ew_masked_fill(int64_t n, const float *x, int64_t sx, const uint8_t *m, int64_t sm,
                       float v, float *o);
void tk_ew_masked_fill_ref(int64_t n, const float *x, int64_t sx, const uint8_t *m, int64_t sm,
                           float v, float *o);

/* ===== Fused attention ===== */

/* 16-bit attention: with half = TK_SDPA_BF16 or TK_SDPA_F16, q, k, v and
   out (the backward's q, k, v and out too) point at uint16_t bits of that
   dtype, cast to float * (strides still count elements). Tiles are
   converted to float32 as they are packed, products accumulate in
   float32, and P is rounded to the dtype before P V (FlashAttention's
   rounding: the row sums are the unrounded ones); out is rounded once.
   On a path with ukernel_bf16 the bfloat16 forward packs Q, K and V as
   bfloat16 pairs instead and takes Q K^T (scaled as it is stored) and
   P V with two products an instruction, P stored as bfloat16 rows; its
   backward takes all five products so, dout and dS rounded to bfloat16
   for them (as FlashAttention keeps them in the inputs' dtype).
   The weights, lse, dout and the gradients stay float32. */
enum { TK_SDPA_F32 = 0, TK_SDPA_BF16 = 1, TK_SDPA_F16 = 2 };

/* Element i of an operand that is float32 or (half) 16-bit bits. */
static inline float tk_sdpa_ld(int half, const float *p, int64_t i)
{
    if (!half) return p[i];
    uint16_t h = ((const uint16_t *)(const void *)p)[i];
    return half == TK_SDPA_BF16 ? tk_bf16_to_f32(h) : tk_f16_to_f32(h);
}

/* p advanced by off elements of its dtype (float32, or 16-bit when half). */
static inline const float *tk_sdpa_at(int half, const float *p, int64_t off)
{
    return (const float *)(const void *)((const char *)p + off * (half ? 2 : 4));
}

/* rows x cols elements of a 16-bit operand p (element (r, c) at r rs + c
   cs) as a contiguous float32 block, row after row. */
void tk_sdpa_rows_f32(int half, int64_t rows, int64_t cols, const float *p, int64_t rs, int64_t cs, float *dst);

/* P rounded to the 16-bit dtype in place, through kn->round_half when the
   path has it (same bits as the portable round trip). */
struct tk_kern;
void tk_sdpa_round(const struct tk_kern *kn, int half, int64_t n, float *x);

/* B = flattened batch; query head h reads kv head h / (Hq / Hkv).
   Element strides for q: (qs_b, qs_h, qs_n, qs_d); same for k, v.
   mask: NULL or bool with strides (ms_b, ms_h, ms_q, ms_k) (0 = broadcast),
   true = may attend. causal: lower-right (query i sees keys j <= i + Nk - Nq).
   out: contiguous [B, Hq, Nq, Dv]. weights: NULL or contiguous [B, Hq, Nq, Nk].
   lse: NULL or contiguous [B, Hq, Nq], each row's log-sum-exp of its scaled
   visible scores (max + log of the sum: what the backward needs to
   recompute the weights); -inf for a row with no visible key, NaN for a
   row the formula makes NaN.
   Rows with no visible key (causal, mask) give zeros (and zero weights);
   other rows follow the formula, NaN and inf included. Returns the number
   of such rows (-1 if it could not get memory). */
/* The options beside mask and causal (all 0: none). Score (i, j) is
   scale q.k + bias[b, h, i, j] (strides bs_*, 0 = broadcast; NULL: none)
   - alibi slope_h |i + off - j| (off = Nk - Nq; tk_alibi_slope). window W
   (the kernels' caller sets causal too): query i sees keys j in
   (i + off - W, i + off], and the first `sinks` keys up to i + off. dropout
   p > 0: weight (i, j) of row r = b Hq Nq + h Nq + i is kept, times
   1 / (1 - p), when tk_sdpa_keep(seed, r Nk + j) is at least p, else 0
   (the row sums and lse are the undropped ones). */
typedef struct tk_sdpa_opts {
    const float *bias; int64_t bs_b, bs_h, bs_q, bs_k;
    int alibi;
    int64_t window, sinks;
    float dropout;
    uint64_t seed;
} tk_sdpa_opts;

static inline int tk_sdpa_opts_any(const tk_sdpa_opts *o)
{
    return o->bias || o->alibi || o->window > 0 || o->dropout > 0.0f;
}

/* ALiBi's slope of head h of H (Press et al.): 2^(-8(h+1)/H) when H is a
   power of two; else the n = 2^floor(log2 H) heads' slopes, then every
   other slope of 2n heads' for the H - n heads left. */
float tk_alibi_slope(int64_t h, int64_t H);

/* Whether the window keeps key j for query i (causal is checked apart). */
static inline int tk_sdpa_band(const tk_sdpa_opts *o, int64_t i, int64_t j, int64_t off)
{
    return o->window <= 0 || j > i + off - o->window || j < o->sinks;
}

/* The bias and ALiBi terms of score (i, j) of head (b, h). */
static inline float tk_sdpa_extra(const tk_sdpa_opts *o, float slope, int64_t b, int64_t h, int64_t i,
                                  int64_t j, int64_t off)
{
    float x = o->bias ? o->bias[b * o->bs_b + h * o->bs_h + i * o->bs_q + j * o->bs_k] : 0.0f;
    int64_t d = i + off - j;
    return o->alibi ? x - slope * (float)(d < 0 ? -d : d) : x;
}

/* Dropout's draw for element n of the scores: uniform in [0, 1) on a
   2^-24 grid, from a splitmix64 hash of seed and n (so the backward draws
   the same without storing a mask). */
static inline float tk_sdpa_keep(uint64_t seed, uint64_t n)
{
    uint64_t z = seed + (n + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (float)((z ^ (z >> 31)) >> 40) * (1.0f / 16777216.0f);
}

typedef struct tk_sdpa_args {
    int64_t B, Hq, Hkv, Nq, Nk, Dh, Dv;
    const float *q; int64_t qs_b, qs_h, qs_n, qs_d;
    const float *k; int64_t ks_b, ks_h, ks_n, ks_d;
    const float *v; int64_t vs_b, vs_h, vs_n, vs_d;
    const uint8_t *mask; int64_t ms_b, ms_h, ms_q, ms_k;
    int causal;
    float scale;
    float *out;
    float *weights;
    float *lse;
    tk_sdpa_opts o;
    int half;       /* TK_SDPA_F32, or q, k, v and out hold 16-bit bits (below) */
} tk_sdpa_args;

int64_t tk_sdpa(const tk_sdpa_args *a);
int64_t tk_sdpa_ref(const tk_sdpa_args *a);

/* Backward of tk_sdpa, FlashAttention-2 style: the weights are
   recomputed block by block from the forward's lse, never stored whole.
   q, k, v, mask, causal, scale as in tk_sdpa_args; out (the forward's) and
   dout contiguous [B, Hq, Nq, Dv]; lse as the forward saved it. Writes dq
   [B, Hq, Nq, Dh], dk [B, Hkv, Nk, Dh], dv [B, Hkv, Nk, Dv], contiguous and
   overwritten; dk and dv summed over the query heads sharing their kv head.
   A row with no visible key (lse -inf) gets and gives zero gradient; a NaN
   row gives NaN. Bit-identical for any thread count. Returns 0, or -1 if it
   could not get memory.
   layouts (optional, 0 = the contiguous layouts above): dout is read
   through dos_* and dq, dk, dv are written through their row strides
   (each row's elements adjacent), so a gradient can take its input's
   layout ([B, N, H, D] after a transpose) and the front-end copies
   neither way. The rows written must not overlap. */
typedef struct tk_sdpa_bwd_args {
    int64_t B, Hq, Hkv, Nq, Nk, Dh, Dv;
    const float *q; int64_t qs_b, qs_h, qs_n, qs_d;
    const float *k; int64_t ks_b, ks_h, ks_n, ks_d;
    const float *v; int64_t vs_b, vs_h, vs_n, vs_d;
    const uint8_t *mask; int64_t ms_b, ms_h, ms_q, ms_k;
    int causal;
    float scale;
    const float *out, *dout, *lse;
    float *dq, *dk, *dv;
    int layouts;
    int64_t dos_b, dos_h, dos_n, dos_d;
    int64_t dqs_b, dqs_h, dqs_n, dks_b, dks_h, dks_n, dvs_b, dvs_h, dvs_n;
    tk_sdpa_opts o;
    float *dbias;   /* NULL, or [B, Hq, Nq, Nk] zeroed by the caller: d loss / d score where visible */
    int half;       /* as tk_sdpa_args: q, k, v and out 16-bit; P rounded before dV = P^T dO */
} tk_sdpa_bwd_args;

int tk_sdpa_backward(const tk_sdpa_bwd_args *a);
int tk_sdpa_backward_ref(const tk_sdpa_bwd_args *a);

/* Whether a head of these sizes goes to the path's small-shape sdpa kernel
   (kn->sdpa_head, or kn->sdpa_bwd_head when backward); tk_sdpa_small(0)
   sends every head to the tiled kernels, as tests do to compare the two
   bit for bit (1, the default, restores). */
struct tk_kern;
int tk_sdpa_small_fits(const struct tk_kern *kn, int64_t Nq, int64_t Nk, int64_t Dh, int64_t Dv, int backward);
void tk_sdpa_small(int on);

/* ===== Dispatch control (tests and benchmarks) ===== */

/* "avx512_bf16", "avx512", "avx2" or "scalar": the path the dispatchers use now. */
const char *tk_simd_path(void);
/* Force a path ("avx512_bf16", "avx512", "avx2", "scalar"); returns 0 if this CPU or build
   cannot run it. NULL restores the automatic choice. */
int tk_simd_force(const char *path);

/* ===== Internal: shared by the files of core/kernel/ ===== */

/* The per-thread scratch buffers, one per use that may be live at once. */
enum {
    TK_SCRATCH_PACK_A,      /* GEMM: the packed A block */
    TK_SCRATCH_PACK_B,      /* GEMM: the packed B panel */
    TK_SCRATCH_TILE,        /* GEMM: a C tile for strided C; log_softmax, cross-entropy: one exp row */
    TK_SCRATCH_HALF,        /* GEMM: 16-bit rows converted to float32 on their way into a packer */
    TK_SCRATCH_SDPA_K,      /* sdpa: K of one head as B slivers */
    TK_SCRATCH_SDPA_V,      /* sdpa: V of one head as B slivers */
    TK_SCRATCH_SDPA_Q,      /* sdpa: the scaled Q block as A slivers */
    TK_SCRATCH_SDPA_S,      /* sdpa: the scores of one key block */
    TK_SCRATCH_SDPA_P,      /* sdpa: one sliver of probabilities */
    TK_SCRATCH_SDPA_O,      /* sdpa: the output accumulators and row statistics */
    TK_SCRATCH_SDPA_BWD,    /* sdpa backward: a task's packed blocks and row sums */
    TK_SCRATCH_SDPA_F32,    /* sdpa: 16-bit rows converted to float32 before packing */
    TK_SCRATCH_SDPA_LANES,  /* sdpa backward, the calling thread: D, bfloat16 dO, the extra dQ lanes */
    TK_SCRATCH_COUNT
};
/* Per-thread buffer for `slot`, 64-byte aligned, kept and grown between
   calls (shrinks only by tk_scratch_trim). NULL when out of memory. */
void *tk_scratch(int slot, size_t bytes);
/* Frees the calling thread's buffer for `slot` if it holds more than keep
   bytes: a big one-off need is not kept for the life of the thread. */
void tk_scratch_trim(int slot, size_t keep);
/* A whole-result temporary (the float32 C of a 16-bit GEMM): counted
   against the memory cap (base.h) like a figure's canvas, so --max-memory
   bounds it; NULL, with the cap's or malloc's message in tt_errmsg, when
   it would pass the cap or malloc fails. From the calling thread, never a
   pool worker (the cap's counters are plain ints). tk_free takes the same
   byte count back; NULL is fine. */
void *tk_alloc(size_t bytes);
void tk_free(void *p, size_t bytes);

/* One SIMD path: micro-tile, cache blocks and the row primitives.
   ukernel: C[m,n] = (acc ? C + : ) Ap*Bp over kc, Ap an mr-row sliver
   (kc columns of mr), Bp an nr-column sliver (kc rows of nr); C has row
   stride rsc and unit column stride; m <= mr, n <= nr (edges inside). */
typedef struct tk_kern {
    const char *name;
    int mr, nr;
    int64_t kc, mc, nc;
    int blocks_from_caches;   /* kc, mc: upper bounds, fitted to L1/L2 at run time (gemm.c) */
    void (*ukernel)(int64_t kc, const float *ap, const float *bp, float *c,
                    int64_t rsc, int m, int n, int acc);
    /* optional: the same with the A sliver read in place from mr rows of a
       row-major A (row stride rsa, m == mr), for products too narrow to
       repay packing A */
    void (*ukernel_rows)(int64_t kc, const float *a, int64_t rsa, const float *bp, float *c,
                         int64_t rsc, int n, int acc);
    void (*axpy)(int64_t n, float s, const float *x, float *y);     /* y += s*x */
    void (*exp_vec)(int64_t n, const float *x, float *y);
    float (*row_max)(int64_t n, const float *x);                    /* -inf if n == 0 */
    float (*exp_sum)(int64_t n, const float *x, float m, float *y); /* y = exp(x-m); sum */
    /* optional: exp_sum's result and bits, fetching n floats at next
       into L1 meanwhile (softmax's next row: its reads overlap this row's
       arithmetic instead of waiting for it) */
    float (*exp_sum_next)(int64_t n, const float *x, float m, float *y, const float *next);
    void (*scale)(int64_t n, float s, const float *x, float *y);     /* y = s*x */
    /* optional: reduction lines (rows.c has the portable ones). sum_line:
       n contiguous floats in double as TK_SUM_CHAINS says; sum_cols:
       acc[i] += x[j*sd + i] in double for i < nb, j < R in order */
    double (*sum_line)(int64_t n, const float *x);
    void (*sum_cols)(int64_t nb, int64_t R, const float *x, int64_t sd, double *acc);
    /* optional fast packers for some strides (else the portable ones):
       same layout as the portable pack_a/pack_b in gemm.c; return 0
       when they do not handle these strides */
    int (*pack_a)(int64_t mc, int64_t kc, const float *a, int64_t rs, int64_t cs, float *dst);
    int (*pack_b)(int64_t kc, int64_t nc, const float *b, int64_t rs, int64_t cs, float *dst);
    /* elementwise rows, as tk_ew_* above */
    void (*ew_binary)(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy,
                      float *o);
    void (*ew_compare)(int op, int64_t n, const float *x, int64_t sx, const float *y, int64_t sy,
                       uint8_t *o);
    void (*ew_unary)(int op, int64_t n, const float *x, float *o);
    void (*ew_masked_fill)(int64_t n, const float *x, int64_t sx, const uint8_t *m, int64_t sm,
                           float v, float *o);
    /* 16-bit conversions, as tk_half_from_f32 / tk_half_to_f32 (the _ref bits) */
    void (*half_from_f32)(int bf16, int64_t n, const float *x, uint16_t *y);
    void (*half_to_f32)(int bf16, int64_t n, const uint16_t *x, float *y);
    /* optional: tk_transpose's whole 16 x 16 (or 8 x 8) blocks; returns the
       columns it did (a multiple of the block), the rest is portable */
    int64_t (*transpose)(int64_t rows, int64_t cols, const float *a, int64_t lda, float *b, int64_t ldb);
    /* optional, sdpa: exp_sum for x <= m (scores less their max); results
       below FLT_MIN may flush to 0, which no row sum can see */
    float (*sdpa_exp_sum)(int64_t n, const float *x, float m, float *y);
    /* optional, sdpa at small shapes (Nq, Nk <= sdpa_small_n, Dh, Dv <= 16,
       no weights): head (b, h) whole, the tiled kernel's bits; returns its
       rows with no visible key, or -1: run the tiled kernel on it */
    int64_t (*sdpa_head)(const tk_sdpa_args *a, int64_t b, int64_t h);
    int64_t sdpa_small_n;
    /* optional, the backward at those shapes: kv head (b, hk) and its group
       whole, the tiled kernel's bits (D: rowsum(dO o O) per query row, a
       with its layouts filled in); 0, or -1: run the tiled kernel on it */
    int (*sdpa_bwd_head)(const tk_sdpa_bwd_args *a, const float *D, int64_t b, int64_t hk);
    /* optional, 16-bit sdpa: x rounded in place to bfloat16 (bf16) or
       float16 values, the bits of tk_*_from_f32 then back */
    void (*round_half)(int bf16, int64_t n, float *x);
    /* optional, 16-bit sdpa without dropout: sdpa_exp_sum with y rounded as
       round_half rounds it, in the same pass; the sum of the unrounded y */
    float (*sdpa_exp_sum_half)(int64_t n, const float *x, float m, float *y, int bf16);
    /* optional: a GEMM tile (m x n, row stride nr) rounded into a 16-bit C
       (row stride rsc, unit columns), half_from_f32's bits */
    void (*half_tile)(int bf16, const float *tmp, int m, int n, uint16_t *c, int64_t rsc);
    /* optional, bfloat16 products two at a time (AVX512_BF16's vdpbf16ps):
       C[m,n] = (acc ? C + : ) alpha Ap*Bp over kp pairs of k, Ap kp steps
       of mr pairs (a(i, 2p), a(i, 2p + 1)), Bp kp steps of nr pairs (b(2p,
       j), b(2p + 1, j)), an odd kc padded with 0; products exact, sums
       float32 (each lane's pair in the instruction's order), subnormal
       inputs and sums read and written as 0. The packers take mc x kc A
       or kc x nc B bfloat16 with any strides into those layouts (0: not
       handled, gemm.c packs). ukernel_rows_bf16: the A pairs read in place
       from mr rows of a row-major bfloat16 A (row stride rsa, 2 kp values
       each, m == mr); sdpa_exp_sum_bf16: sdpa_exp_sum with y's bfloat16
       bits stored instead (round_half's values), the unrounded sum. */
    void (*ukernel_bf16)(int64_t kp, const uint16_t *ap, const uint16_t *bp, float *c, int64_t rsc,
                         int m, int n, int acc, float alpha);
    void (*ukernel_rows_bf16)(int64_t kp, const uint16_t *a, int64_t rsa, const uint16_t *bp, float *c,
                              int64_t rsc, int n, int acc);
    /* optional: ukernel_bf16 (acc 0, alpha 1) into a bfloat16 C (row
       stride rsc, unit columns), each sum rounded as half_tile rounds it */
    void (*ukernel_bf16_round)(int64_t kp, const uint16_t *ap, const uint16_t *bp, uint16_t *c, int64_t rsc,
                               int m, int n);
    int (*pack_a_bf16)(int64_t mc, int64_t kc, const uint16_t *a, int64_t rs, int64_t cs, uint16_t *dst);
    int (*pack_b_bf16)(int64_t kc, int64_t nc, const uint16_t *b, int64_t rs, int64_t cs, uint16_t *dst);
    float (*sdpa_exp_sum_bf16)(int64_t n, const float *x, float m, uint16_t *y);
    /* optional, the bfloat16 sdpa backward (pairs) without dropout or a
       bias gradient: one row's P = exp(s - lse) and dS = (P scale)(dp - D)
       for its n visible keys as bfloat16 bits into p16 and d16, 0 from n
       to nk; the bits of exp_sum, the separate products and half_from_f32 */
    void (*sdpa_bwd_p_ds_bf16)(int64_t n, int64_t nk, const float *s, float lse, const float *dp, float D,
                               float scale, uint16_t *p16, uint16_t *d16);
} tk_kern;

/* Micro-kernel operands: A (mc x kc, any strides) as mr-row slivers, B
   (kc x nc) as nr-column slivers, k-major, zero padded to whole slivers;
   the path's fast packer where it handles the strides, else portable. */
void tk_pack_a(const tk_kern *kn, int64_t mc, int64_t kc, const float *a, int64_t rs, int64_t cs,
               float *dst);
void tk_pack_b(const tk_kern *kn, int64_t kc, int64_t nc, const float *b, int64_t rs, int64_t cs,
               float *dst);

/* bfloat16 A (mc x kc) and B (kc x nc), any strides, as ukernel_bf16's
   pair slivers (the path needs ukernel_bf16). */
void tk_pack_a_pairs(const tk_kern *kn, int64_t mc, int64_t kc, const uint16_t *a, int64_t rs, int64_t cs,
                     uint16_t *dst);
void tk_pack_b_pairs(const tk_kern *kn, int64_t kc, int64_t nc, const uint16_t *b, int64_t rs, int64_t cs,
                     uint16_t *dst);

/* The vector exp and log of both SIMD paths, one set of constants so the
   paths cannot drift apart (they give the same bits). ln 2 = LN2_HI +
   LN2_LO, LN2_HI with few bits so n * LN2_HI is exact.
   exp: n = round(8 x log2e) = 8k + j (adding TK_EXP_SHIFT rounds, and
   leaves n in the low bits), r = x - n ln2/8 (|r| <= ln2/16), exp x =
   2^k T (1 + q): T = tk_exp_tab[j] = 2^(j/8) looked up in registers, q =
   r (1 + r (c2 + r (c3 + r c4))) (minimax, 1.7e-10 relative) and T + T q
   one fma, so the one rounding is the last (worst 0.913 ulp over every
   float in [-87.3, 88.7]).
   log: x = 2^k z, z in [z0, 2 z0) with z0 = 0.70833 (bits TK_LOG_OFF):
   k and z come from x's bits minus TK_LOG_OFF, whose next 3 bits pick
   one of 8 intervals of z. Interval i has c = 1/tk_log_invc[i] (exactly 1
   for the one holding 1, so there r = z - 1 exactly and nothing cancels),
   log x = k ln2 + log c + log(1 + r), r = z/c - 1 by one fma, |r| < 0.061,
   log(1 + r) = r + r^2 P(r), P of degree 3 fitted (minimax) to
   (log(1 + r) - r)/r^2 on the r of all 8 intervals (error 7e-9 relative
   to log(1 + r)), coefficients highest first, evaluated as
   (p0 r + p1) r^2 + (p2 r + p3) (two fmas deep, not three). Each invc
   is the float near the interval's middle whose log c = tk_log_c[i] is
   a multiple of 2^-17 to within 1.4e-10 (Gal's
   accurate tables: searched among 2^17 floats), so one table holds log c
   and k LN2_HI + log c is exact. tests/test_kernels.c measures the error
   over the positive floats. */
#define TK_LOG2E 1.44269504f
#define TK_LN2_HI 0.693359375f
#define TK_LN2_LO (-2.12194440e-4f)
#define TK_EXP_SHIFT 12582912.0f         /* 1.5 * 2^23 */
#define TK_EXP_LO (-87.3365402f)         /* the least float x with exp x >= FLT_MIN */
static const float tk_exp_tab[8] = {
    1.0f, 1.090507746e+00f, 1.189207077e+00f, 1.296839595e+00f,
    1.414213538e+00f, 1.542210817e+00f, 1.681792855e+00f, 1.834008098e+00f,
};
static const float tk_exp_poly[3] = { 4.166043216e-02f, 1.666802588e-01f, 5.000000128e-01f };
#define TK_LOG_OFF 0x3f355556           /* the bits of z0 = 0.70833337 */
static const float tk_log_invc[8] = {
    1.352956057e+00f, 1.242736340e+00f, 1.152935266e+00f, 1.071902514e+00f,
    1.0f, 9.086782932e-01f, 8.152427077e-01f, 7.415284514e-01f,
};
static const float tk_log_c[8] = {
    -0.302291870117f, -0.217315673828f, -0.142311096191f, -0.0694351196289f,
    0.0f, 0.0957641601562f, 0.20426940918f, 0.299041748047f,
};
static const float tk_log_poly[4] = { 1.982360333e-01f, -2.506415248e-01f, 3.333375752e-01f, -4.999995232e-01f };

/* tanh on the SIMD paths: Cephes tanhf, x + x^3 P(x^2) on |x| < 0.625
   (P's coefficients highest first), 1 - 2 / (exp(2|x|) + 1) above, the
   sign put back. sigmoid: e = exp(-|x|), 1 / (1 + e) or e / (1 + e) by
   the sign (as ref.c: no overflow, no cancellation). */
#define TK_TANH_SMALL 0.625f
static const float tk_tanh_poly[5] = {
    -5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f, -3.33332819422e-1f,
};

extern const tk_kern tk_kern_scalar;
#ifdef __wasm_simd128__
extern const tk_kern tk_kern_wasm;   /* the page's portable path: scalar's bits on 128-bit lanes (ref.c) */
#endif
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(TT_NO_SIMD)
#define TK_X86_SIMD 1
extern const tk_kern tk_kern_avx2;
extern const tk_kern tk_kern_avx512;
extern const tk_kern tk_kern_avx512_bf16;   /* avx512 and AVX512_BF16's bfloat16 micro-kernel */
#endif
/* The path the dispatchers use now (see tk_simd_force). */
const tk_kern *tk_kern_now(void);

#endif
