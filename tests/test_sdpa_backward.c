/*
** test_sdpa_backward.c — the fused attention backward (tk_sdpa_backward and
** its reference) and forward, with and without the options (bias, ALiBi,
** window, sinks, dropout), against the explicit formula computed here in
** float64 with whole Nq x Nk matrices, itself checked by finite
** differences; on every SIMD path this CPU can run, and 1 vs 2 vs 3
** threads bit for bit.
*/
#include <float.h>
#include <math.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernel/kernels.h"
#include "tt.h"

#define DINF ((double)INFINITY)

static uint64_t rng = 7;

static double urand(void)   /* splitmix64 -> [0, 1) */
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

/* ===== Cases ===== */

enum { M_NONE, M_RAND, M_BCAST, M_KEYPAD, M_UPLEFT };
static const char *const mask_name[] = { "", " mask", " mask[1,1,Nq,Nk]", " key padding",
                                         " upper-left causal mask" };

typedef struct tcase {
    int64_t B, Hq, Hkv, Nq, Nk, Dh, Dv;
    int causal, mask, layout;   /* layout 1: q, v stored [B,N,H,D], k with d outermost; dO
                                   and the gradients [B,N,H,D] with padded rows (layouts) */
} tcase;

/* layout 1's gradient layouts: [B, N, H, D] with PAD unused floats after
   each position's H*D (the kernel must write rows only, and all of them) */
#define PAD 3
static void grad_strides(int lay, int64_t H, int64_t N, int64_t D, int64_t *s)
{
    if (lay == 0) { s[2] = D; s[1] = N * D; s[0] = H * N * D; }
    else { s[1] = D; s[2] = H * D + PAD; s[0] = N * s[2]; }
}

/* x [B, H, N, D] with strides s, gathered into a contiguous copy */
static float *gather(const float *x, int64_t B, int64_t H, int64_t N, int64_t D, const int64_t *s)
{
    float *y = malloc((size_t)(B * H * N * D > 0 ? B * H * N * D : 1) * sizeof(float));
    for (int64_t t = 0; t < B * H * N * D; t++)
        y[t] = x[t / (H * N * D) * s[0] + t / (N * D) % H * s[1] + t / D % N * s[2] + t % D];
    return y;
}

/* The options of the case run now (set before prob_make). bias: none,
   [B, Hq, Nq, Nk], [Hq, Nq, Nk] (over the batch) or [Nk] (over all but
   keys). */
enum { BI_NONE, BI_FULL, BI_HEADS, BI_KEYS };
static struct { int bias, alibi; int64_t window, sinks; float dropout; } opt;

/* The problem: float inputs in the kernel's argument block, plus dO. */
typedef struct prob {
    tk_sdpa_bwd_args a;
    float *q, *k, *v, *out, *dout, *lse;
    float *dout_s;              /* layout 1: dout as the kernel reads it, padded rows */
    uint8_t *mask;
    float *bias;
} prob;

static float *frand(int64_t n, double amp)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++) p[i] = (float)(amp * (2.0 * urand() - 1.0));
    return p;
}

static void strides4(int lay, int64_t H, int64_t N, int64_t D, int dfirst, int64_t *s)
{
    if (lay == 0) { s[3] = 1; s[2] = D; s[1] = N * D; s[0] = H * N * D; }
    else if (!dfirst) { s[3] = 1; s[1] = D; s[2] = H * D; s[0] = N * H * D; }
    else { s[2] = 1; s[3] = N; s[1] = D * N; s[0] = H * D * N; }
}

/* Inputs, a mask of the case's kind, and the forward's out and lse. */
static void prob_make(prob *p, const tcase *c)
{
    tk_sdpa_bwd_args *a = &p->a;
    memset(p, 0, sizeof *p);
    a->B = c->B; a->Hq = c->Hq; a->Hkv = c->Hkv; a->Nq = c->Nq; a->Nk = c->Nk;
    a->Dh = c->Dh; a->Dv = c->Dv; a->causal = c->causal;
    a->scale = (float)(1.0 / sqrt((double)c->Dh));
    int64_t s[4];
    strides4(c->layout, c->Hq, c->Nq, c->Dh, 0, s);
    a->qs_b = s[0]; a->qs_h = s[1]; a->qs_n = s[2]; a->qs_d = s[3];
    strides4(c->layout, c->Hkv, c->Nk, c->Dh, 1, s);
    a->ks_b = s[0]; a->ks_h = s[1]; a->ks_n = s[2]; a->ks_d = s[3];
    strides4(c->layout, c->Hkv, c->Nk, c->Dv, 0, s);
    a->vs_b = s[0]; a->vs_h = s[1]; a->vs_n = s[2]; a->vs_d = s[3];
    p->q = frand(c->B * c->Hq * c->Nq * c->Dh, 2.0);   /* peaked rows too */
    p->k = frand(c->B * c->Hkv * c->Nk * c->Dh, 2.0);
    p->v = frand(c->B * c->Hkv * c->Nk * c->Dv, 1.0);
    p->dout = frand(c->B * c->Hq * c->Nq * c->Dv, 1.0);
    a->q = p->q; a->k = p->k; a->v = p->v; a->dout = p->dout;

    int64_t Nq = c->Nq, Nk = c->Nk;
    if (c->mask == M_RAND) {             /* [B, Hq, Nq, Nk]; row 1 of (0, 0) all false */
        int64_t n = c->B * c->Hq * Nq * Nk;
        p->mask = malloc((size_t)n);
        for (int64_t t = 0; t < n; t++) p->mask[t] = urand() < 0.7;
        if (Nq > 1) memset(p->mask + Nk, 0, (size_t)Nk);
        a->ms_b = c->Hq * Nq * Nk; a->ms_h = Nq * Nk; a->ms_q = Nk; a->ms_k = 1;
    } else if (c->mask == M_BCAST) {     /* one [Nq, Nk] for all; the last row all false */
        p->mask = malloc((size_t)(Nq * Nk));
        for (int64_t t = 0; t < Nq * Nk; t++) p->mask[t] = urand() < 0.5;
        memset(p->mask + (Nq - 1) * Nk, 0, (size_t)Nk);
        a->ms_q = Nk; a->ms_k = 1;
    } else if (c->mask == M_KEYPAD) {    /* [B, 1, 1, Nk]: batch b sees its first keys */
        p->mask = malloc((size_t)(c->B * Nk));
        for (int64_t b = 0; b < c->B; b++)
            for (int64_t j = 0; j < Nk; j++) p->mask[b * Nk + j] = j < Nk - 3 * b - 1;
        a->ms_b = Nk; a->ms_k = 1;
    } else if (c->mask == M_UPLEFT) {    /* [Nq, Nk]: query i sees keys j <= i */
        p->mask = malloc((size_t)(Nq * Nk));
        for (int64_t i = 0; i < Nq; i++)
            for (int64_t j = 0; j < Nk; j++) p->mask[i * Nk + j] = j <= i;
        a->ms_q = Nk; a->ms_k = 1;
    }
    a->mask = p->mask;
    tk_sdpa_opts *o = &a->o;
    if (opt.bias != BI_NONE) {
        int64_t n = opt.bias == BI_FULL ? c->B * c->Hq * Nq * Nk : opt.bias == BI_HEADS ? c->Hq * Nq * Nk : Nk;
        p->bias = frand(n, 1.5);
        o->bias = p->bias;
        o->bs_k = 1;
        if (opt.bias != BI_KEYS) { o->bs_q = Nk; o->bs_h = Nq * Nk; }
        if (opt.bias == BI_FULL) o->bs_b = c->Hq * Nq * Nk;
    }
    o->alibi = opt.alibi;
    o->window = opt.window;
    o->sinks = opt.sinks;
    o->dropout = opt.dropout;
    o->seed = 0x5eed0000u + (uint64_t)Nq;
    if (o->window > 0) a->causal = 1;    /* as the front-end sets it */

    p->out = malloc((size_t)(c->B * c->Hq * Nq * c->Dv) * sizeof(float));
    p->lse = malloc((size_t)(c->B * c->Hq * Nq) * sizeof(float));
    tk_sdpa_args f = {
        a->B, a->Hq, a->Hkv, a->Nq, a->Nk, a->Dh, a->Dv,
        a->q, a->qs_b, a->qs_h, a->qs_n, a->qs_d,
        a->k, a->ks_b, a->ks_h, a->ks_n, a->ks_d,
        a->v, a->vs_b, a->vs_h, a->vs_n, a->vs_d,
        a->mask, a->ms_b, a->ms_h, a->ms_q, a->ms_k,
        a->causal, a->scale, p->out, NULL, p->lse, a->o, TK_SDPA_F32,
    };
    tk_sdpa(&f);
    a->out = p->out; a->lse = p->lse;
    if (c->layout) {                     /* dO read through strides: a copy with padded rows */
        int64_t gs[3];
        grad_strides(1, c->Hq, Nq, c->Dv, gs);
        p->dout_s = frand(c->B * gs[0], 1.0);
        for (int64_t t = 0; t < c->B * c->Hq * Nq * c->Dv; t++)
            p->dout_s[t / (c->Hq * Nq * c->Dv) * gs[0] + t / (Nq * c->Dv) % c->Hq * gs[1]
                      + t / c->Dv % Nq * gs[2] + t % c->Dv] = p->dout[t];
        a->layouts = 1;
        a->dout = p->dout_s;
        a->dos_b = gs[0]; a->dos_h = gs[1]; a->dos_n = gs[2]; a->dos_d = 1;
        grad_strides(1, c->Hq, Nq, c->Dh, gs);
        a->dqs_b = gs[0]; a->dqs_h = gs[1]; a->dqs_n = gs[2];
        grad_strides(1, c->Hkv, Nk, c->Dh, gs);
        a->dks_b = gs[0]; a->dks_h = gs[1]; a->dks_n = gs[2];
        grad_strides(1, c->Hkv, Nk, c->Dv, gs);
        a->dvs_b = gs[0]; a->dvs_h = gs[1]; a->dvs_n = gs[2];
    }
}

static void prob_free(prob *p)
{
    free(p->q); free(p->k); free(p->v); free(p->out); free(p->dout); free(p->lse); free(p->mask);
    free(p->dout_s); free(p->bias);
}

/* ===== The explicit formula, float64 ===== */

/* ALiBi's slopes as the paper's code lists them: get_slopes(n) for n a
   power of two is 2^(-8/n) raised to 1, 2, ..., n; else the slopes of the
   largest power of two below, then get_slopes(2n)[0::2] for the rest. */
static double alibi_slope(int64_t h, int64_t H)
{
    int64_t n = 1;
    while (n * 2 <= H) n *= 2;
    if (h < n) return pow(pow(2.0, -8.0 / (double)n), (double)(h + 1));
    return pow(pow(2.0, -8.0 / (double)(2 * n)), (double)(2 * (h - n) + 1));
}

/* Dropout's draw as the kernels define it: splitmix64 of seed + (n + 1)
   golden steps, its top 24 bits over 2^24. */
static double drop_draw(uint64_t seed, uint64_t n)
{
    uint64_t z = seed + (n + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (double)((z ^ (z >> 31)) >> 40) / 16777216.0;
}

/* From double copies of q, k, v (the strides of a), the bias and dO: S, P,
   O, dP, dS as whole matrices per head, then the gradients (contiguous,
   dk and dv summed over each group; dbias, if not NULL, per score). loss
   (if not NULL) gets sum(dO∘O); O (if not NULL) the output. Also the
   visibility of each row (vis[row] = 0: no visible key). */
static void explicit_fwd_bwd(const tk_sdpa_bwd_args *a, const double *q, const double *k, const double *v,
                             const double *bias, const double *dO, double *dq, double *dk, double *dv,
                             double *dbias, double *Oall, double *Wall, double *loss, char *vis)
{
    const tk_sdpa_opts *o = &a->o;
    double kept = o->dropout > 0 ? 1.0 / (1.0 - (double)o->dropout) : 1.0;
    int64_t Nq = a->Nq, Nk = a->Nk, Dh = a->Dh, Dv = a->Dv, G = a->Hq / a->Hkv;
    double *S = malloc((size_t)(Nq * Nk) * sizeof(double)), *P = malloc((size_t)(Nq * Nk) * sizeof(double));
    double *dP = malloc((size_t)(Nq * Nk) * sizeof(double)), *O = malloc((size_t)(Nq * Dv) * sizeof(double));
    double *Z = malloc((size_t)(Nq * Nk) * sizeof(double));
    memset(dk, 0, (size_t)(a->B * a->Hkv * Nk * Dh) * sizeof(double));
    memset(dv, 0, (size_t)(a->B * a->Hkv * Nk * Dv) * sizeof(double));
    if (loss) *loss = 0.0;
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t h = 0; h < a->Hq; h++) {
            int64_t hk = h / G;
            const double *Q = q + b * a->qs_b + h * a->qs_h;
            const double *K = k + b * a->ks_b + hk * a->ks_h, *V = v + b * a->vs_b + hk * a->vs_h;
            const double *g = dO + (b * a->Hq + h) * Nq * Dv;
            double *gq = dq + (b * a->Hq + h) * Nq * Dh;
            double *gk = dk + (b * a->Hkv + hk) * Nk * Dh, *gv = dv + (b * a->Hkv + hk) * Nk * Dv;
            int64_t row0 = (b * a->Hq + h) * Nq;
            for (int64_t i = 0; i < Nq; i++) {          /* S and P = softmax over the visible */
                double m = -DINF, sum = 0.0;
                int64_t pos = i + Nk - Nq;              /* the query's position among the keys */
                for (int64_t j = 0; j < Nk; j++) {
                    int see = !a->causal || j <= pos;
                    if (o->window > 0) see = see && j <= pos && (pos - j < o->window || j < o->sinks);
                    if (see && a->mask) see = a->mask[b * a->ms_b + h * a->ms_h + i * a->ms_q + j * a->ms_k];
                    double d = 0.0;
                    for (int64_t e = 0; e < Dh; e++) d += Q[i * a->qs_n + e * a->qs_d] * K[j * a->ks_n + e * a->ks_d];
                    d *= (double)a->scale;
                    if (bias) d += bias[b * o->bs_b + h * o->bs_h + i * o->bs_q + j * o->bs_k];
                    if (o->alibi) d -= alibi_slope(h, a->Hq) * fabs((double)(pos - j));
                    S[i * Nk + j] = see ? d : -DINF;
                    if (S[i * Nk + j] > m) m = S[i * Nk + j];
                    Z[i * Nk + j] = o->dropout > 0 && drop_draw(o->seed, (uint64_t)((row0 + i) * Nk + j)) < (double)o->dropout
                                    ? 0.0 : kept;
                }
                vis[(b * a->Hq + h) * Nq + i] = m > -DINF;
                for (int64_t j = 0; j < Nk; j++) {
                    P[i * Nk + j] = m > -DINF ? exp(S[i * Nk + j] - m) : 0.0;
                    sum += P[i * Nk + j];
                }
                for (int64_t j = 0; j < Nk; j++) {
                    if (sum > 0) P[i * Nk + j] /= sum;
                    if (Wall) Wall[(row0 + i) * Nk + j] = P[i * Nk + j] * Z[i * Nk + j];
                }
            }
            for (int64_t i = 0; i < Nq; i++)             /* O = (P∘Z) V; dP = (dO Vᵀ)∘Z */
                for (int64_t e = 0; e < Dv; e++) {
                    double x = 0.0;
                    for (int64_t j = 0; j < Nk; j++) x += P[i * Nk + j] * Z[i * Nk + j] * V[j * a->vs_n + e * a->vs_d];
                    O[i * Dv + e] = x;
                    if (Oall) Oall[(row0 + i) * Dv + e] = x;
                    if (loss) *loss += g[i * Dv + e] * x;
                }
            for (int64_t i = 0; i < Nq; i++)
                for (int64_t j = 0; j < Nk; j++) {
                    double d = 0.0;
                    for (int64_t e = 0; e < Dv; e++) d += g[i * Dv + e] * V[j * a->vs_n + e * a->vs_d];
                    dP[i * Nk + j] = d * Z[i * Nk + j];
                }
            for (int64_t i = 0; i < Nq; i++) {           /* dS = P∘(dP - rowsum(dO∘O)), in dP */
                double D = 0.0;
                for (int64_t e = 0; e < Dv; e++) D += g[i * Dv + e] * O[i * Dv + e];
                for (int64_t j = 0; j < Nk; j++) {
                    dP[i * Nk + j] = P[i * Nk + j] * (dP[i * Nk + j] - D);
                    if (dbias) dbias[(row0 + i) * Nk + j] = dP[i * Nk + j];
                }
            }
            for (int64_t i = 0; i < Nq; i++)             /* dQ = scale dS K */
                for (int64_t e = 0; e < Dh; e++) {
                    double d = 0.0;
                    for (int64_t j = 0; j < Nk; j++) d += dP[i * Nk + j] * K[j * a->ks_n + e * a->ks_d];
                    gq[i * Dh + e] = d * (double)a->scale;
                }
            for (int64_t j = 0; j < Nk; j++) {           /* dK += scale dSᵀ Q; dV += Pᵀ dO */
                for (int64_t e = 0; e < Dh; e++) {
                    double d = 0.0;
                    for (int64_t i = 0; i < Nq; i++) d += dP[i * Nk + j] * Q[i * a->qs_n + e * a->qs_d];
                    gk[j * Dh + e] += d * (double)a->scale;
                }
                for (int64_t e = 0; e < Dv; e++) {
                    double d = 0.0;
                    for (int64_t i = 0; i < Nq; i++) d += P[i * Nk + j] * Z[i * Nk + j] * g[i * Dv + e];
                    gv[j * Dv + e] += d;
                }
            }
        }
    free(S); free(P); free(dP); free(O); free(Z);
}


static double *to_double(const float *x, int64_t n)
{
    double *d = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++) d[i] = (double)x[i];
    return d;
}

/* ===== Finite differences: the explicit formula is the gradient ===== */

/* d loss / d x for every element of q, k, v by central differences of the
   float64 forward, against explicit_bwd. h = 1e-5: truncation ~h^2 |f'''|
   ~ 1e-10, rounding ~1e-16 / h ~ 1e-11; so 1e-7 is a tight bound. */
static void test_fd(const char *what)
{
    tcase c = { 1, 2, 1, 4, 5, 3, 2, 1, M_RAND, 1 };
    if (opt.window) c = (tcase){ 1, 2, 1, 6, 9, 3, 2, 1, M_RAND, 1 };
    prob p;
    prob_make(&p, &c);
    tk_sdpa_bwd_args *a = &p.a;
    int64_t nq = c.Hq * c.Nq * c.Dh, nk = c.Hkv * c.Nk * c.Dh, nv = c.Hkv * c.Nk * c.Dv, ns = c.Hq * c.Nq * c.Nk;
    double *q = to_double(p.q, nq), *k = to_double(p.k, nk), *v = to_double(p.v, nv);
    double *g = to_double(p.dout, c.Hq * c.Nq * c.Dv);
    double *bias = p.bias ? to_double(p.bias, ns) : NULL;   /* BI_FULL: one per score */
    double dq[128], dk[128], dv[128], db[128], dq2[128], dk2[128], dv2[128], db2[128], lp, lm;
    char vis[16];
    explicit_fwd_bwd(a, q, k, v, bias, g, dq, dk, dv, db, NULL, NULL, NULL, vis);
    double *xs[4] = { q, k, v, bias }, *gs[4] = { dq, dk, dv, db };
    double worst = 0.0;
    for (int t = 0; t < (bias ? 4 : 3); t++) {
        int64_t D = t == 2 ? c.Dv : c.Dh, N = t == 0 ? c.Nq : c.Nk, H = t == 0 ? c.Hq : c.Hkv, s[4];
        if (t < 3) strides4(c.layout, H, N, D, t == 1, s);
        for (int64_t i = 0; i < (t < 3 ? H * N * D : ns); i++) {   /* element (h, n, d) of [H, N, D] */
            double *x = t == 3 ? bias + i : xs[t] + (i / (N * D)) * s[1] + (i / D % N) * s[2] + (i % D) * s[3];
            double x0 = *x, hh = 1e-5;
            *x = x0 + hh;
            explicit_fwd_bwd(a, q, k, v, bias, g, dq2, dk2, dv2, db2, NULL, NULL, &lp, vis);
            *x = x0 - hh;
            explicit_fwd_bwd(a, q, k, v, bias, g, dq2, dk2, dv2, db2, NULL, NULL, &lm, vis);
            *x = x0;
            double fd = (lp - lm) / (2 * hh);
            if (fabs(fd - gs[t][i]) > worst) worst = fabs(fd - gs[t][i]);
        }
    }
    printf("  finite differences%s: max |fd - explicit| = %.2g\n", what, worst);
    char m[160];
    snprintf(m, sizeof m, "explicit float64 backward%s matches finite differences (1e-7)", what);
    CHECK(m, worst < 1e-7);
    free(q); free(k); free(v); free(g); free(bias);
    prob_free(&p);
}

/* ===== Kernel against the explicit formula ===== */

static double max_abs(const double *x, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) if (fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

/* max |x - ref| over `norm`. */
static double rel_err(const float *x, const double *ref, int64_t n, double norm)
{
    double e = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - ref[i]);
        if (!(d <= e)) e = d;            /* NaN sticks */
    }
    return e / norm;
}

typedef struct grads { float *dq, *dk, *dv, *db; } grads;

static void grads_alloc(grads *g, const tcase *c)
{
    g->db = opt.bias != BI_NONE ? malloc((size_t)(c->B * c->Hq * c->Nq * c->Nk) * sizeof(float)) : NULL;
    g->dq = malloc((size_t)(c->B * c->Hq * c->Nq * c->Dh) * sizeof(float));
    g->dk = malloc((size_t)(c->B * c->Hkv * c->Nk * c->Dh) * sizeof(float));
    g->dv = malloc((size_t)(c->B * c->Hkv * c->Nk * c->Dv) * sizeof(float));
}

/* Runs the kernel or the reference into g (contiguous). In layout 1 the
   kernel writes padded buffers, gathered into g afterwards; *pads_kept
   says whether the padding was left alone. */
static int grads_run(prob *p, grads *g, int use_ref, const tcase *c, int *pads_kept)
{
    tk_sdpa_bwd_args *a = &p->a;
    int64_t sq[3], sk[3], sv[3];
    grad_strides(c->layout, a->Hq, a->Nq, a->Dh, sq);
    grad_strides(c->layout, a->Hkv, a->Nk, a->Dh, sk);
    grad_strides(c->layout, a->Hkv, a->Nk, a->Dv, sv);
    int64_t n[3] = { a->B * sq[0], a->B * sk[0], a->B * sv[0] };
    float *buf[3];
    for (int t = 0; t < 3; t++) {
        buf[t] = c->layout ? malloc((size_t)(n[t] > 0 ? n[t] : 1) * sizeof(float)) : t == 0 ? g->dq : t == 1 ? g->dk : g->dv;
        for (int64_t i = 0; i < n[t]; i++) buf[t][i] = 555.0f;   /* every element must be written */
    }
    a->dq = buf[0]; a->dk = buf[1]; a->dv = buf[2];
    a->dbias = g->db;
    if (g->db) memset(g->db, 0, (size_t)(a->B * a->Hq * a->Nq * a->Nk) * sizeof(float));
    int r = use_ref ? tk_sdpa_backward_ref(a) : tk_sdpa_backward(a);
    *pads_kept = 1;
    if (c->layout) {
        float *gq = gather(buf[0], a->B, a->Hq, a->Nq, a->Dh, sq), *gk = gather(buf[1], a->B, a->Hkv, a->Nk, a->Dh, sk);
        float *gv = gather(buf[2], a->B, a->Hkv, a->Nk, a->Dv, sv);
        memcpy(g->dq, gq, (size_t)(a->B * a->Hq * a->Nq * a->Dh) * sizeof(float));
        memcpy(g->dk, gk, (size_t)(a->B * a->Hkv * a->Nk * a->Dh) * sizeof(float));
        memcpy(g->dv, gv, (size_t)(a->B * a->Hkv * a->Nk * a->Dv) * sizeof(float));
        int64_t *ss[3] = { sq, sk, sv };
        for (int t = 0; t < 3; t++) {
            for (int64_t i = 0; i < n[t]; i++)
                if (i % ss[t][2] >= ss[t][2] - PAD) *pads_kept &= buf[t][i] == 555.0f;
            free(buf[t]);
        }
        free(gq); free(gk); free(gv);
    }
    return r;
}

static int grads_same(const grads *x, const grads *y, const tcase *c)
{
    if (x->db && memcmp(x->db, y->db, (size_t)(c->B * c->Hq * c->Nq * c->Nk) * sizeof(float)) != 0) return 0;
    return memcmp(x->dq, y->dq, (size_t)(c->B * c->Hq * c->Nq * c->Dh) * sizeof(float)) == 0 &&
           memcmp(x->dk, y->dk, (size_t)(c->B * c->Hkv * c->Nk * c->Dh) * sizeof(float)) == 0 &&
           memcmp(x->dv, y->dv, (size_t)(c->B * c->Hkv * c->Nk * c->Dv) * sizeof(float)) == 0;
}

static void grads_free(grads *g) { free(g->dq); free(g->dk); free(g->dv); free(g->db); }

/* Tolerance, relative to the largest gradient entry. Inputs are the
   same floats, so the error is float32 arithmetic: the forward's O and lse
   (rounded, then exp(s - lse) carries |s| u), dot products of Dh or Dv
   terms and sums of up to Nk (dQ) or G*Nq (dK, dV) terms, accumulated in
   blocks. Observed up to 7e-7 (kernel and reference alike: the rounded O
   and lse dominate); 5e-6 leaves a margin of ~7 while an error in any one
   term of a sum (a wrong mask bit, a skipped block, a missing head) is far
   larger. */
#define TOL_KERNEL 5e-6
#define TOL_REF 5e-6
static double worst_kernel, worst_ref, worst_fwd;   /* printed at the end */

static void run_case(const tcase *c, int with_ref)
{
    char descr[200];
    static const char *const bias_name[] = { "", " bias", " bias[Hq,Nq,Nk]", " bias[Nk]" };
    char os[96];
    snprintf(os, sizeof os, "%s%s", bias_name[opt.bias], opt.alibi ? " alibi" : "");
    if (opt.window) snprintf(os + strlen(os), sizeof os - strlen(os), " window=%lld sinks=%lld", (long long)opt.window,
                             (long long)opt.sinks);
    if (opt.dropout > 0) snprintf(os + strlen(os), sizeof os - strlen(os), " dropout=%g", (double)opt.dropout);
    snprintf(descr, sizeof descr, "[%s] B%lld Hq%lld Hkv%lld Nq%lld Nk%lld Dh%lld Dv%lld%s%s%s%s",
             tk_simd_path(), (long long)c->B, (long long)c->Hq, (long long)c->Hkv, (long long)c->Nq,
             (long long)c->Nk, (long long)c->Dh, (long long)c->Dv, c->causal ? " causal" : "",
             mask_name[c->mask], c->layout ? " strided" : "", os);
    prob p;
    prob_make(&p, c);
    int64_t nq = c->B * c->Hq * c->Nq * c->Dh, nk = c->B * c->Hkv * c->Nk * c->Dh;
    int64_t nv = c->B * c->Hkv * c->Nk * c->Dv, nqd = c->B * c->Hq * c->Nq * c->Dv;
    double *q = to_double(p.q, c->B * c->Hq * c->Nq * c->Dh), *k = to_double(p.k, nk);
    double *v = to_double(p.v, nv), *g = to_double(p.dout, nqd);
    double *rq = malloc((size_t)nq * sizeof(double)), *rk = malloc((size_t)nk * sizeof(double));
    double *rv = malloc((size_t)nv * sizeof(double));
    char *vis = malloc((size_t)(c->B * c->Hq * c->Nq));
    int64_t ns = c->B * c->Hq * c->Nq * c->Nk, nbias = opt.bias == BI_NONE ? 0 : opt.bias == BI_FULL ? ns
                 : opt.bias == BI_HEADS ? c->Hq * c->Nq * c->Nk : c->Nk;
    double *bias = p.bias ? to_double(p.bias, nbias) : NULL;
    double *rdb = malloc((size_t)ns * sizeof(double)), *rO = malloc((size_t)nqd * sizeof(double));
    double *rW = malloc((size_t)ns * sizeof(double));
    explicit_fwd_bwd(&p.a, q, k, v, bias, g, rq, rk, rv, rdb, rO, rW, NULL, vis);

    grads r[3];
    char m[400];
    /* the forward: the tiled kernel's out (prob_make ran it), the
       reference's, and the weights (the tiled kernel with weights asked) */
    {
        tk_sdpa_bwd_args *a = &p.a;
        float *o2 = malloc((size_t)nqd * sizeof(float)), *w = malloc((size_t)ns * sizeof(float));
        tk_sdpa_args f = {
            a->B, a->Hq, a->Hkv, a->Nq, a->Nk, a->Dh, a->Dv,
            a->q, a->qs_b, a->qs_h, a->qs_n, a->qs_d, a->k, a->ks_b, a->ks_h, a->ks_n, a->ks_d,
            a->v, a->vs_b, a->vs_h, a->vs_n, a->vs_d, a->mask, a->ms_b, a->ms_h, a->ms_q, a->ms_k,
            a->causal, a->scale, o2, NULL, NULL, a->o, TK_SDPA_F32,
        };
        double on = fmax(max_abs(rO, nqd), 1e-30);
        double e1 = rel_err(p.out, rO, nqd, on);
        tk_sdpa_ref(&f);
        double e2 = rel_err(o2, rO, nqd, on);
        f.weights = w;
        tk_sdpa(&f);
        double e3 = rel_err(w, rW, ns, 1.0), e4 = rel_err(o2, rO, nqd, on);
        snprintf(m, sizeof m, "%s: forward out (kernel, reference, with weights) and weights within %g "
                 "(%.2g %.2g %.2g %.2g)", descr, TOL_KERNEL, e1, e2, e4, e3);
        CHECK(m, e1 <= TOL_KERNEL && e2 <= TOL_KERNEL && e3 <= TOL_KERNEL && e4 <= TOL_KERNEL);
        worst_fwd = fmax(worst_fwd, fmax(fmax(e1, e2), fmax(e3, e4)));
        free(o2); free(w);
    }
    for (int t = 1; t <= 3; t++) {
        grads_alloc(&r[t - 1], c);
        tt_set_num_threads(t);
        int pads;
        snprintf(m, sizeof m, "%s: returns 0 (%d threads)", descr, t);
        CHECK(m, grads_run(&p, &r[t - 1], 0, c, &pads) == 0);
        snprintf(m, sizeof m, "%s: writes the gradients' rows only (%d threads)", descr, t);
        CHECK(m, pads);
    }
    /* the scale: the largest gradient entry of the three (a gradient may be
       exactly 0, as dq is with a single key) */
    double norm = fmax(fmax(max_abs(rq, nq), max_abs(rk, nk)), fmax(max_abs(rv, nv), 1e-30));
    double eq = rel_err(r[0].dq, rq, nq, norm), ek = rel_err(r[0].dk, rk, nk, norm);
    double ev = rel_err(r[0].dv, rv, nv, norm);
    snprintf(m, sizeof m, "%s: dq dk dv within %g (%.2g %.2g %.2g)", descr, TOL_KERNEL, eq, ek, ev);
    CHECK(m, eq <= TOL_KERNEL && ek <= TOL_KERNEL && ev <= TOL_KERNEL);
    if (r[0].db) {   /* d score, relative to its largest entry */
        double dn = fmax(max_abs(rdb, ns), 1e-30), eb = rel_err(r[0].db, rdb, ns, dn);
        snprintf(m, sizeof m, "%s: d bias per score within %g (%.2g)", descr, TOL_KERNEL, eb);
        CHECK(m, eb <= TOL_KERNEL);
        worst_kernel = fmax(worst_kernel, eb);
    }
    worst_kernel = fmax(worst_kernel, fmax(eq, fmax(ek, ev)));
    int zero = 1;                        /* rows with no visible key: exactly zero */
    for (int64_t row = 0; row < c->B * c->Hq * c->Nq; row++)
        for (int64_t e = 0; e < c->Dh && !vis[row]; e++) zero &= r[0].dq[row * c->Dh + e] == 0.0f;
    snprintf(m, sizeof m, "%s: rows with no visible key get zero dq", descr);
    CHECK(m, zero);
    snprintf(m, sizeof m, "%s: 1, 2, 3 threads bit-identical", descr);
    CHECK(m, grads_same(&r[0], &r[1], c) && grads_same(&r[0], &r[2], c));
    if (tk_sdpa_small_fits(tk_kern_now(), c->Nq, c->Nk, c->Dh, c->Dv, 1)) {
        grads t;
        grads_alloc(&t, c);
        int pads;
        tk_sdpa_small(0);
        grads_run(&p, &t, 0, c, &pads);
        tk_sdpa_small(1);
        snprintf(m, sizeof m, "%s: the small-shape kernel gives the tiled kernel's bits", descr);
        CHECK(m, grads_same(&r[0], &t, c));
        grads_free(&t);
    }
    if (with_ref) {
        grads f;
        grads_alloc(&f, c);
        int pads;
        grads_run(&p, &f, 1, c, &pads);
        snprintf(m, sizeof m, "%s: reference writes the gradients' rows only", descr);
        CHECK(m, pads);
        eq = rel_err(f.dq, rq, nq, norm); ek = rel_err(f.dk, rk, nk, norm); ev = rel_err(f.dv, rv, nv, norm);
        double eb = f.db ? rel_err(f.db, rdb, ns, fmax(max_abs(rdb, ns), 1e-30)) : 0.0;
        snprintf(m, sizeof m, "%s: reference within %g (%.2g %.2g %.2g %.2g)", descr, TOL_REF, eq, ek, ev, eb);
        CHECK(m, eq <= TOL_REF && ek <= TOL_REF && ev <= TOL_REF && eb <= TOL_REF);
        worst_ref = fmax(worst_ref, fmax(eq, fmax(ek, ev)));
        grads_free(&f);
    }
    for (int t = 0; t < 3; t++) grads_free(&r[t]);
    free(q); free(k); free(v); free(g); free(rq); free(rk); free(rv); free(vis);
    free(bias); free(rdb); free(rO); free(rW);
    prob_free(&p);
}

/* Small shapes with a non-finite input (the path's kn->sdpa_bwd_head hands
   such a head to the tiled kernel): the tiled kernel's bits, NaN or inf
   where the poisoned key, row or lse reaches, finite where it cannot. */
static void test_small_nonfinite(void)
{
    static const tcase c = { 1, 2, 1, 64, 64, 16, 16, 1, M_NONE, 0 };
    enum { P_K, P_V, P_Q, P_DOUT, P_LSE, P_N };
    static const char *const name[] = { "k NaN", "v inf", "q NaN", "dout inf", "lse NaN" };
    if (!tk_sdpa_small_fits(tk_kern_now(), c.Nq, c.Nk, c.Dh, c.Dv, 1)) return;
    for (int w = 0; w < P_N; w++) {
        prob p;
        prob_make(&p, &c);
        int64_t j = 40, row = 64 + 50;   /* key 40; row 50 of query head 1 */
        if (w == P_K) p.k[j * 16 + 3] = NAN;
        if (w == P_V) p.v[j * 16 + 3] = INFINITY;
        if (w == P_Q) p.q[row * 16 + 3] = NAN;
        if (w == P_DOUT) p.dout[row * 16 + 3] = INFINITY;
        if (w == P_LSE) p.lse[row] = NAN;
        grads g, t;
        grads_alloc(&g, &c);
        grads_alloc(&t, &c);
        int pads;
        grads_run(&p, &g, 0, &c, &pads);
        tk_sdpa_small(0);
        grads_run(&p, &t, 0, &c, &pads);
        tk_sdpa_small(1);
        char m[200];
        snprintf(m, sizeof m, "[%s] small shapes, %s: the tiled kernel's bits", tk_simd_path(), name[w]);
        CHECK(m, grads_same(&g, &t, &c));
        /* key 40 is seen by rows 40 on; row 50 of head 1 sees keys 0 to 50 */
        int bad_dk = 0, fin_dq0 = 1;
        for (int e = 0; e < 16; e++) {
            bad_dk |= !isfinite(g.dk[(w == P_K || w == P_V ? j : 0) * 16 + e]) || (w == P_V && !isfinite(g.dv[j * 16 + e]));
            fin_dq0 &= isfinite(g.dq[e]);
        }
        snprintf(m, sizeof m, "[%s] small shapes, %s: reaches the gradients it feeds, not row 0's dq",
                 tk_simd_path(), name[w]);
        CHECK(m, bad_dk && fin_dq0);
        grads_free(&g); grads_free(&t);
        prob_free(&p);
    }
}


/* ===== 16-bit q, k, v (bfloat16, float16) =====
   The inputs are rounded to the dtype, and the float64 formula above runs
   on those exact values. The kernels convert tiles to float32 on load, so
   their only 16-bit roundings are P's before P V (and before dV = P^T dO)
   and out's. The bound, element by element, with u the dtype's unit
   roundoff (2^-8 bfloat16, 2^-11 float16) and p~ = p z the weights V is
   multiplied by (z the dropout factor):
     out = sum_j r(e_j) z_j v_j / l with e_j = exp(s_j - m) <= 1 and l the
     unrounded sum (>= 1), r(e) = e (1 + d), |d| <= u, so
     |out - exact| <= u sum_j p~_j |v_j|        (P rounded)
                    + u |exact|                 (out rounded once)
                    + e32 sum_j p~_j |v_j|      (float32 arithmetic)
   e32 = 2^-24 (4 + Nk + 2 scale Dh max|q| max|k|): the scores' dot
   products (Dh terms) moving P by up to twice their error, the Nk-term
   sums, exp and the division. float16 adds its subnormals' absolute
   steps: 2^-25 per P below 2^-14 (at most Nk of them, over l >= 1) and
   2^-25 on out. The backward: dV = P^T dO with P rounded, so
   |dV - exact| <= (u + e32) sum_i p~_ij |dO_i|; D = rowsum(dO o out) takes
   the rounded out, off by beta_i <= sum_e |dO_ie| bound(out_ie), which
   moves dS_ij = P_ij (dP_ij - D_i) by P_ij beta_i, so dQ_i by at most
   scale beta_i max|k| and dK_j by scale max|q| sum_i P_ij beta_i; plus the
   float32 kernel's own error (TOL_KERNEL of the largest gradient). The
   sums of p~|v|, p~|dO| and of P over a column come from the same formula
   run on |v|, |dO| and ones. */
static double worst_half[2];   /* the largest error over its bound, per dtype */

static double unit_round(int hf) { return hf == TK_SDPA_BF16 ? 0x1p-8 : 0x1p-11; }

static uint16_t to16(int hf, float x) { return hf == TK_SDPA_BF16 ? tk_bf16_from_f32(x) : tk_f16_from_f32(x); }
static float from16(int hf, uint16_t h) { return hf == TK_SDPA_BF16 ? tk_bf16_to_f32(h) : tk_f16_to_f32(h); }

/* x (n floats) rounded to the dtype in place; its bits in a new array. */
static uint16_t *round_in_place(int hf, float *x, int64_t n)
{
    uint16_t *h = malloc((size_t)(n > 0 ? n : 1) * sizeof(uint16_t));
    for (int64_t i = 0; i < n; i++) { h[i] = to16(hf, x[i]); x[i] = from16(hf, h[i]); }
    return h;
}

static double *abs_copy(const double *x, int64_t n)
{
    double *y = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++) y[i] = fabs(x[i]);
    return y;
}

/* The largest |got - want| / bound (NaN when a bound is broken by a NaN). */
static double over_bound(const float *got, const double *want, const double *bound, int64_t n)
{
    double w = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double r = fabs((double)got[i] - want[i]) / bound[i];
        if (!(r <= w)) w = r;
    }
    return w;
}

static void run_half(const tcase *c, int hf)
{
    const char *dt = hf == TK_SDPA_BF16 ? "bfloat16" : "float16";
    char descr[240], m[400];
    static const char *const bias_name[] = { "", " bias", " bias[Hq,Nq,Nk]", " bias[Nk]" };
    snprintf(descr, sizeof descr, "[%s] %s B%lld Hq%lld Hkv%lld Nq%lld Nk%lld Dh%lld Dv%lld%s%s%s%s%s%s%s",
             tk_simd_path(), dt, (long long)c->B, (long long)c->Hq, (long long)c->Hkv, (long long)c->Nq,
             (long long)c->Nk, (long long)c->Dh, (long long)c->Dv, c->causal ? " causal" : "", mask_name[c->mask],
             c->layout ? " strided" : "", bias_name[opt.bias], opt.alibi ? " alibi" : "",
             opt.window ? " window" : "", opt.dropout > 0 ? " dropout" : "");
    prob p;
    prob_make(&p, c);
    tk_sdpa_bwd_args *a = &p.a;
    int64_t nq = c->B * c->Hq * c->Nq * c->Dh, nk = c->B * c->Hkv * c->Nk * c->Dh;
    int64_t nv = c->B * c->Hkv * c->Nk * c->Dv, nqd = c->B * c->Hq * c->Nq * c->Dv, rows = c->B * c->Hq * c->Nq;
    uint16_t *qh = round_in_place(hf, p.q, nq), *kh = round_in_place(hf, p.k, nk), *vh = round_in_place(hf, p.v, nv);
    double *q = to_double(p.q, nq), *k = to_double(p.k, nk), *v = to_double(p.v, nv), *g = to_double(p.dout, nqd);
    double *va = abs_copy(v, nv), *ga = abs_copy(g, nqd), *ones = malloc((size_t)nqd * sizeof(double));
    for (int64_t i = 0; i < nqd; i++) ones[i] = 1.0;
    int64_t nbias = opt.bias == BI_NONE ? 0 : opt.bias == BI_FULL ? rows * c->Nk
                    : opt.bias == BI_HEADS ? c->Hq * c->Nq * c->Nk : c->Nk;
    double *bias = p.bias ? to_double(p.bias, nbias) : NULL;
    double *rq = malloc((size_t)nq * sizeof(double)), *rk = malloc((size_t)nk * sizeof(double));
    double *rv = malloc((size_t)nv * sizeof(double)), *rO = malloc((size_t)nqd * sizeof(double));
    double *tq = malloc((size_t)nq * sizeof(double)), *tk = malloc((size_t)nk * sizeof(double));
    double *pva = malloc((size_t)nqd * sizeof(double)), *pga = malloc((size_t)nv * sizeof(double));
    double *col = malloc((size_t)nv * sizeof(double));
    char *vis = malloc((size_t)rows);
    explicit_fwd_bwd(a, q, k, v, bias, g, rq, rk, rv, NULL, rO, NULL, NULL, vis);
    explicit_fwd_bwd(a, q, k, va, bias, ga, tq, tk, pga, NULL, pva, NULL, NULL, vis);   /* sum p~|v|, sum p~|dO| */
    tk_sdpa_bwd_args nodrop = *a;
    nodrop.o.dropout = 0.0f;
    explicit_fwd_bwd(&nodrop, q, k, v, bias, ones, tq, tk, col, NULL, NULL, NULL, NULL, vis);   /* sum_i P_ij */

    double u = unit_round(hf), mq = max_abs(q, nq), mk = max_abs(k, nk), mv = max_abs(v, nv), mg = max_abs(g, nqd);
    double e32 = 0x1p-24 * (4.0 + (double)c->Nk + 2.0 * (double)a->scale * (double)c->Dh * mq * mk);
    double sub = hf == TK_SDPA_F16 ? 0x1p-25 : 0.0;   /* float16's subnormal step, halved */
    double *bO = malloc((size_t)nqd * sizeof(double));
    for (int64_t i = 0; i < nqd; i++) bO[i] = (u + e32) * pva[i] + u * fabs(rO[i]) + sub * ((double)c->Nk * mv + 1.0) + 1e-30;

    /* the forward on 1, 2, 3 threads */
    uint16_t *oh[3];
    float *lse[3], *of = malloc((size_t)nqd * sizeof(float));
    tk_sdpa_args f = {
        a->B, a->Hq, a->Hkv, a->Nq, a->Nk, a->Dh, a->Dv,
        (const float *)(const void *)qh, a->qs_b, a->qs_h, a->qs_n, a->qs_d,
        (const float *)(const void *)kh, a->ks_b, a->ks_h, a->ks_n, a->ks_d,
        (const float *)(const void *)vh, a->vs_b, a->vs_h, a->vs_n, a->vs_d,
        a->mask, a->ms_b, a->ms_h, a->ms_q, a->ms_k, a->causal, a->scale, NULL, NULL, NULL, a->o, hf,
    };
    int same = 1;
    for (int t = 0; t < 3; t++) {
        oh[t] = malloc((size_t)nqd * sizeof(uint16_t));
        lse[t] = malloc((size_t)rows * sizeof(float));
        f.out = (float *)(void *)oh[t];
        f.lse = lse[t];
        tt_set_num_threads(t + 1);
        tk_sdpa(&f);
        if (t > 0) same &= memcmp(oh[t], oh[0], (size_t)nqd * 2) == 0 && memcmp(lse[t], lse[0], (size_t)rows * 4) == 0;
    }
    for (int64_t i = 0; i < nqd; i++) of[i] = from16(hf, oh[0][i]);
    double wo = over_bound(of, rO, bO, nqd);
    int zero = 1;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t e = 0; e < c->Dv && !vis[r]; e++) zero &= oh[0][r * c->Dv + e] == 0;
    snprintf(m, sizeof m, "%s: forward within its bound (worst %.2f of it), rows with no key zero", descr, wo);
    CHECK(m, wo <= 1.0 && zero);
    snprintf(m, sizeof m, "%s: forward 1, 2, 3 threads bit-identical", descr);
    CHECK(m, same);
    /* the reference (the kernels' fallback) within the same bound */
    uint16_t *o2 = malloc((size_t)nqd * sizeof(uint16_t));
    f.out = (float *)(void *)o2;
    f.lse = NULL;
    tk_sdpa_ref(&f);
    for (int64_t i = 0; i < nqd; i++) of[i] = from16(hf, o2[i]);
    double wr = over_bound(of, rO, bO, nqd);
    snprintf(m, sizeof m, "%s: reference forward within the bound (worst %.2f of it)", descr, wr);
    CHECK(m, wr <= 1.0);

    /* the backward from the 16-bit out and lse */
    a->q = (const float *)(const void *)qh; a->k = (const float *)(const void *)kh;
    a->v = (const float *)(const void *)vh; a->out = (const float *)(const void *)oh[0];
    a->lse = lse[0]; a->half = hf;
    double *beta = calloc((size_t)rows, sizeof(double)), bmax = 0.0;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t e = 0; e < c->Dv; e++) beta[r] += fabs(g[r * c->Dv + e]) * bO[r * c->Dv + e];
        bmax = fmax(bmax, beta[r]);
    }
    double norm = fmax(fmax(max_abs(rq, nq), max_abs(rk, nk)), fmax(max_abs(rv, nv), 1e-30));
    double slack = TOL_KERNEL * norm, sc = (double)a->scale;
    double *bq = malloc((size_t)nq * sizeof(double)), *bk = malloc((size_t)nk * sizeof(double));
    double *bv = malloc((size_t)nv * sizeof(double));
    for (int64_t i = 0; i < nq; i++) bq[i] = sc * beta[i / c->Dh] * mk + slack;
    for (int64_t i = 0; i < nk; i++) bk[i] = sc * mq * bmax * col[i / c->Dh * c->Dv] + slack;
    for (int64_t i = 0; i < nv; i++) bv[i] = (u + e32) * pga[i] + sub * (double)(c->Nq * c->Hq) * mg + slack;
    if (hf == TK_SDPA_BF16 && tk_kern_now()->ukernel_bf16) {
        /* vdpbf16ps takes dO and dS rounded to bfloat16 too: dV gets
           u sum_i p~_ij |dO_i| more; dP_ij moves by u A_ij (A_ij = sum_e
           |dO_ie| |v_je| <= |dO_i|_1 max|v|) and dS's rounding adds u |dS_ij|
           <= u scale P_ij (z |dP_ij| + |D_i|), |D_i| <= |dO_i|_1 z max|v|: so
           dS_ij moves by at most 3.1 u z scale P_ij |dO_i|_1 max|v| (z the
           largest dropout factor), dQ_i by that times max|k| (sum_j P_ij <=
           1) and dK_j by it times max|q| max_i |dO_i|_1 sum_i P_ij */
        double z = a->o.dropout > 0.0f ? 1.0 / (1.0 - (double)a->o.dropout) : 1.0, l1max = 0.0;
        double *l1 = calloc((size_t)rows, sizeof(double));
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t e = 0; e < c->Dv; e++) l1[r] += fabs(g[r * c->Dv + e]);
            l1max = fmax(l1max, l1[r]);
        }
        double ds = 3.1 * u * z * sc * mv;
        for (int64_t i = 0; i < nv; i++) bv[i] += u * pga[i];
        for (int64_t i = 0; i < nq; i++) bq[i] += ds * l1[i / c->Dh] * mk;
        for (int64_t i = 0; i < nk; i++) bk[i] += ds * mq * l1max * col[i / c->Dh * c->Dv];
        free(l1);
    }
    grads r[3];
    for (int t = 0; t < 3; t++) {
        grads_alloc(&r[t], c);
        tt_set_num_threads(t + 1);
        int pads;
        CHECK("16-bit backward returns 0", grads_run(&p, &r[t], 0, c, &pads) == 0);
        snprintf(m, sizeof m, "%s: backward writes the gradients' rows only", descr);
        CHECK(m, pads);
    }
    double w1 = over_bound(r[0].dq, rq, bq, nq), w2 = over_bound(r[0].dk, rk, bk, nk);
    double w3 = over_bound(r[0].dv, rv, bv, nv);
    snprintf(m, sizeof m, "%s: dq dk dv within their bounds (worst %.2f %.2f %.2f of them)", descr, w1, w2, w3);
    CHECK(m, w1 <= 1.0 && w2 <= 1.0 && w3 <= 1.0);
    snprintf(m, sizeof m, "%s: backward 1, 2, 3 threads bit-identical", descr);
    CHECK(m, grads_same(&r[0], &r[1], c) && grads_same(&r[0], &r[2], c));
    grads fr;
    grads_alloc(&fr, c);
    int pads;
    grads_run(&p, &fr, 1, c, &pads);
    double x1 = over_bound(fr.dq, rq, bq, nq), x2 = over_bound(fr.dk, rk, bk, nk), x3 = over_bound(fr.dv, rv, bv, nv);
    snprintf(m, sizeof m, "%s: reference backward within the bounds (%.2f %.2f %.2f)", descr, x1, x2, x3);
    CHECK(m, x1 <= 1.0 && x2 <= 1.0 && x3 <= 1.0);
    int d = hf == TK_SDPA_F16;
    worst_half[d] = fmax(worst_half[d], fmax(fmax(wo, wr), fmax(w1, fmax(w2, w3))));
    grads_free(&fr);
    for (int t = 0; t < 3; t++) { grads_free(&r[t]); free(oh[t]); free(lse[t]); }
    a->q = p.q; a->k = p.k; a->v = p.v;   /* prob_free frees these */
    free(qh); free(kh); free(vh); free(q); free(k); free(v); free(g); free(va); free(ga); free(ones); free(bias);
    free(rq); free(rk); free(rv); free(rO); free(tq); free(tk); free(pva); free(pga); free(col); free(vis);
    free(bO); free(of); free(o2); free(beta); free(bq); free(bk); free(bv);
    prob_free(&p);
}


/* The path's round_half (P's rounding) against half.c's round trip, bit
   for bit: a spread of float bit patterns (every 65521st, so every
   exponent, NaNs and infs included) in rows of 37 (vector tails). */
static void test_round_half(void)
{
    for (int hf = TK_SDPA_BF16; hf <= TK_SDPA_F16; hf++) {
        float x[37], y[37];
        int bad = 0;
        for (uint64_t u = 0; u < 0x100000000ull && !bad; u += 37 * 65521ull) {
            for (int t = 0; t < 37; t++) {
                uint32_t b = (uint32_t)(u + (uint64_t)t * 65521ull);
                memcpy(&x[t], &b, 4);
                y[t] = from16(hf, to16(hf, x[t]));
            }
            tk_sdpa_round(tk_kern_now(), hf, 37, x);
            bad = memcmp(x, y, sizeof x) != 0;
        }
        char m[120];
        snprintf(m, sizeof m, "[%s] P rounded to %s: half.c's bits", tk_simd_path(), hf == TK_SDPA_BF16 ? "bfloat16" : "float16");
        CHECK(m, !bad);
        const tk_kern *kn = tk_kern_now();
        if (kn->sdpa_exp_sum_half) {   /* the fused pass: the two passes' bits, its sum unrounded */
            float s[301], p1[301], p2[301];
            for (int t = 0; t < 301; t++) s[t] = (float)(-12.0 * urand());
            for (int n = 0; n <= 301 && !bad; n += 7) {
                float a1 = kn->sdpa_exp_sum_half(n, s, 0.0f, p1, hf == TK_SDPA_BF16);
                float a2 = kn->sdpa_exp_sum(n, s, 0.0f, p2);
                tk_sdpa_round(kn, hf, n, p2);
                bad = a1 != a2 || memcmp(p1, p2, (size_t)n * sizeof(float)) != 0;
            }
            snprintf(m, sizeof m, "[%s] exp and %s rounding in one pass: the two passes' bits", tk_simd_path(),
                     hf == TK_SDPA_BF16 ? "bfloat16" : "float16");
            CHECK(m, !bad);
        }
    }
}

/* avx512_bf16's exp pass for the pairs' P V: bfloat16 bits of sdpa_exp_sum's
   values (half.c's rounding), 0 allowed below FLT_MIN, and its very sum. */
static void test_exp_sum_bf16(void)
{
    const tk_kern *kn = tk_kern_now();
    if (!kn->sdpa_exp_sum_bf16) return;
    float s[301], p[301];
    uint16_t y[301];
    for (int t = 0; t < 301; t++) s[t] = (float)(t % 5 == 0 ? -90.0 - 20.0 * urand() : -12.0 * urand());
    int bad = 0;
    for (int n = 0; n <= 301 && !bad; n += 7) {
        float a1 = kn->sdpa_exp_sum_bf16(n, s, 0.0f, y), a2 = kn->sdpa_exp_sum(n, s, 0.0f, p);
        bad = a1 != a2;
        for (int t = 0; t < n; t++)
            bad |= y[t] != tk_bf16_from_f32(p[t]) && !(p[t] < FLT_MIN && y[t] == 0);
    }
    char m[120];
    snprintf(m, sizeof m, "[%s] exp pass to bfloat16 bits: half.c's bits of the float32 pass, its sum", tk_simd_path());
    CHECK(m, !bad);
}

/* avx512_bf16's one pass for the pairs backward's P and dS: the bits of
   the separate passes (exp_sum, the two products and the difference,
   half_from_f32), zeros from n to nk; and within a bfloat16 rounding of
   float64's exp(s - lse) and (p scale)(dp - D). Masked scores (-inf), an
   exp below FLT_MIN, lengths 0..300 across vector tails. */
static void test_p_ds_bf16(void)
{
    const tk_kern *kn = tk_kern_now();
    if (!kn->sdpa_bwd_p_ds_bf16) return;
    enum { L = 301 };
    float s[L], dp[L], pf[L], sp[L], dsf[L];
    uint16_t p16[L + 8], d16[L + 8], pw[L], dw[L];
    const float lse = 3.25f, D = 0.375f, scale = 0.14433757f;   /* 1/sqrt(48): not a power of 2 */
    for (int t = 0; t < L; t++) {
        s[t] = t % 11 == 3 ? -INFINITY : t % 5 == 0 ? (float)(-95.0 - 20.0 * urand()) : (float)(6.0 * urand() - 3.0);
        dp[t] = (float)(2.0 * urand() - 1.0);
    }
    int same = 1, close = 1, zeros = 1;
    double worst = 0.0;
    for (int n = 0; n <= 300; n += n < 40 ? 1 : 13) {
        int64_t nk = n + (n % 3) * 5 < L ? n + (n % 3) * 5 : n;
        memset(p16, 0xff, sizeof p16);
        memset(d16, 0xff, sizeof d16);
        kn->sdpa_bwd_p_ds_bf16(n, nk, s, lse, dp, D, scale, p16, d16);
        kn->exp_sum(n, s, lse, pf);                    /* the separate passes */
        kn->ew_binary(TK_EW_MUL, n, pf, 1, &scale, 0, sp);
        kn->ew_binary(TK_EW_SUB, n, dp, 1, &D, 0, dsf);
        kn->ew_binary(TK_EW_MUL, n, sp, 1, dsf, 1, dsf);
        kn->half_from_f32(1, n, pf, pw);
        kn->half_from_f32(1, n, dsf, dw);
        for (int t = 0; t < n; t++) {
            same &= p16[t] == pw[t] && d16[t] == dw[t];
            double pe = exp((double)s[t] - (double)lse), de = pe * (double)scale * ((double)dp[t] - (double)D);
            double ep = fabs((double)tk_bf16_to_f32(p16[t]) - pe), ed = fabs((double)tk_bf16_to_f32(d16[t]) - de);
            /* a bfloat16 rounding (2^-8 relative), plus exp's few float32 ulps */
            double bp = 0x1p-8 * pe + 1e-6 * pe + 1e-38, bd = 0x1p-8 * fabs(de) + 1e-6 * pe + 1e-38;
            close &= ep <= bp && ed <= bd;
            worst = fmax(worst, fmax(ep / bp, ed / bd));
        }
        for (int64_t t = n; t < nk; t++) zeros &= p16[t] == 0 && d16[t] == 0;
        zeros &= p16[nk] == 0xffff && d16[nk] == 0xffff;   /* nothing past nk */
    }
    char m[160];
    snprintf(m, sizeof m, "[%s] backward's P and dS in one pass: the separate passes' bfloat16 bits", tk_simd_path());
    CHECK(m, same);
    snprintf(m, sizeof m, "[%s] ... within a bfloat16 rounding of float64 (worst %.2f of the bound)", tk_simd_path(), worst);
    CHECK(m, close);
    snprintf(m, sizeof m, "[%s] ... zeros from n to nk, nothing written past nk", tk_simd_path());
    CHECK(m, zeros);
}

/* A hidden key's v is never read, on every path: causal with Nk = Nq + 1,
   the first 12 query rows see keys 0..12 (odd: on avx512_bf16 the pad of
   the last pair would read key 13), and v of key 13 is inf. Those rows are
   finite; the later rows, which see it, are not. */
static void test_hidden_v(void)
{
    enum { NQ = 24, NK = 25, D = 16 };
    uint16_t q[NQ * D], k[NK * D], v[NK * D], o[NQ * D];
    for (int i = 0; i < NQ * D; i++) q[i] = tk_bf16_from_f32((float)urand() - 0.5f);
    for (int i = 0; i < NK * D; i++) {
        k[i] = tk_bf16_from_f32((float)urand() - 0.5f);
        v[i] = tk_bf16_from_f32(i / D == 13 ? INFINITY : (float)urand() - 0.5f);
    }
    const float *qp = (const float *)(const void *)q, *kp = (const float *)(const void *)k;
    const float *vp = (const float *)(const void *)v;
    tk_sdpa_args f = { 1, 1, 1, NQ, NK, D, D, qp, 0, 0, D, 1, kp, 0, 0, D, 1, vp, 0, 0, D, 1,
                       NULL, 0, 0, 0, 0, 1, 0.25f, (float *)(void *)o, NULL, NULL, {0}, TK_SDPA_BF16 };
    tk_sdpa(&f);
    int early = 1, late = 1;
    for (int i = 0; i < NQ * D; i++) {
        float x = tk_bf16_to_f32(o[i]);
        if (i / D < 12) early &= isfinite(x);
        else late &= !isfinite(x);
    }
    char m[160];
    snprintf(m, sizeof m, "[%s] bfloat16: rows that do not see key 13 stay finite when its v is inf; those that do, not",
             tk_simd_path());
    CHECK(m, early && late);
}

/* One bfloat16 forward (into o, lse) and backward of Nq queries and Nk
   keys, causal or not, Dh = 16, unit strides; 1 if the backward ran. */
static int bf16_attention(int64_t Nq, int64_t Nk, int causal, const uint16_t *q, const uint16_t *k,
                          const uint16_t *v, uint16_t *o, float *lse, const float *dout, float *dq, float *dk,
                          float *dv)
{
    int64_t D = 16;
    const float *qp = (const float *)(const void *)q, *kp = (const float *)(const void *)k;
    const float *vp = (const float *)(const void *)v;
    tk_sdpa_args f = { 1, 1, 1, Nq, Nk, D, D, qp, 0, 0, D, 1, kp, 0, 0, D, 1, vp, 0, 0, D, 1,
                       NULL, 0, 0, 0, 0, causal, 0.25f, (float *)(void *)o, NULL, lse, {0}, TK_SDPA_BF16 };
    tk_sdpa(&f);
    tk_sdpa_bwd_args b = { 1, 1, 1, Nq, Nk, D, D, qp, 0, 0, D, 1, kp, 0, 0, D, 1, vp, 0, 0, D, 1,
                           NULL, 0, 0, 0, 0, causal, 0.25f, (const float *)(const void *)o, dout, lse, dq, dk, dv,
                           0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, {0}, NULL, TK_SDPA_BF16 };
    return tk_sdpa_backward(&b) == 0;
}

/* The backward's blocks: causal with Nk = Nq + 1, the first block of 64
   rows sees keys 0..64, so its dQ product ends at an odd key inside the
   chunk; key 65, seen by no row of it, has an inf in k. Its rows' dq stay
   finite (a pair (64, 65) would multiply a 0 of dS by that inf). */
static void test_hidden_k_backward(void)
{
    enum { NQ = 127, NK = 128, D = 16 };
    static uint16_t q[NQ * D], k[NK * D], v[NK * D], o[NQ * D];
    static float lse[NQ], dout[NQ * D], dq[NQ * D], dk[NK * D], dv[NK * D];
    for (int i = 0; i < NQ * D; i++) { q[i] = tk_bf16_from_f32((float)urand() - 0.5f); dout[i] = (float)urand() - 0.5f; }
    for (int i = 0; i < NK * D; i++) {
        k[i] = tk_bf16_from_f32(i / D == 65 ? INFINITY : (float)urand() - 0.5f);
        v[i] = tk_bf16_from_f32((float)urand() - 0.5f);
    }
    int ok = bf16_attention(NQ, NK, 1, q, k, v, o, lse, dout, dq, dk, dv), fin = 1;
    for (int i = 0; i < 64 * D; i++) fin &= isfinite(dq[i]);
    char m[160];
    snprintf(m, sizeof m, "[%s] bfloat16 backward: rows that do not see key 65 keep a finite dq when its k is inf",
             tk_simd_path());
    CHECK(m, ok && fin);
}

/* A NaN in one query block's dO stays in its rows. Not causal, Nq = 128
   (two blocks of 64 rows), Nk = 256 + 33: a full key chunk, then 33 keys,
   an odd count that fills its chunk, so on avx512_bf16 dQ reads the last
   pair of each dS row in place, pad included. dO is NaN in rows 64..127
   only; rows 0..63 keep a finite dq. The pad holds whatever the thread's
   last block left there (here the first chunk's NaN dS of rows 64..127)
   unless the backward zeroes it; one thread, so that block and the next
   chunk's share a scratch. */
static void test_dq_pad_backward(void)
{
    enum { NQ = 128, NK = 289, D = 16 };
    static uint16_t q[NQ * D], k[NK * D], v[NK * D], o[NQ * D];
    static float lse[NQ], dout[NQ * D], dq[NQ * D], dk[NK * D], dv[NK * D];
    for (int i = 0; i < NQ * D; i++) {
        q[i] = tk_bf16_from_f32((float)urand() - 0.5f);
        dout[i] = i / D >= 64 ? NAN : (float)urand() - 0.5f;
    }
    for (int i = 0; i < NK * D; i++) {
        k[i] = tk_bf16_from_f32((float)urand() - 0.5f);
        v[i] = tk_bf16_from_f32((float)urand() - 0.5f);
    }
    int threads = tt_get_num_threads();
    tt_set_num_threads(1);
    int ok = bf16_attention(NQ, NK, 0, q, k, v, o, lse, dout, dq, dk, dv), fin = 1, nan = 1;
    tt_set_num_threads(threads);
    for (int i = 0; i < NQ * D; i++) {
        if (i / D < 64) fin &= isfinite(dq[i]);
        else nan &= isnan(dq[i]);
    }
    char m[200];
    snprintf(m, sizeof m, "[%s] bfloat16 backward, 33 keys in the last chunk: a NaN in dO of rows 64..127 "
             "stays out of rows 0..63's dq", tk_simd_path());
    CHECK(m, ok && fin && nan);
}

/* No N x N buffer: bfloat16 attention at N = 4096 (a float32 score matrix
   would be 64 MiB), forward and backward, grows the peak RSS by a few MiB
   at most (what grows with N: lse, D, the dQ lanes, about 1 MiB here).
   A run at N = 256 first touches what does not grow with N (the threads'
   scratch). Under ASan the kernels run but the RSS is not read: its fake
   stacks alone add some 11 MiB. */
static void test_half_memory(void)
{
    int64_t N = 4096, D = 16;
    struct rusage r0, r1;
    uint16_t *x = malloc((size_t)(N * D) * 2), *o = malloc((size_t)(N * D) * 2);
    float *lse = malloc((size_t)N * 4), *dout = malloc((size_t)(N * D) * 4), *dq = malloc((size_t)(N * D) * 4);
    float *dk = malloc((size_t)(N * D) * 4), *dv = malloc((size_t)(N * D) * 4);
    for (int64_t i = 0; i < N * D; i++) { x[i] = tk_bf16_from_f32((float)urand()); dout[i] = 1.0f; }
    int ok = bf16_attention(256, 256, 1, x, x, x, o, lse, dout, dq, dk, dv);
    getrusage(RUSAGE_SELF, &r0);
    ok &= bf16_attention(N, N, 1, x, x, x, o, lse, dout, dq, dk, dv);
    getrusage(RUSAGE_SELF, &r1);
#ifdef CHECK_UNDER_ASAN
    CHECK("bfloat16 sdpa N = 4096 forward + backward ran", ok);
#else
    double mib = (double)(r1.ru_maxrss - r0.ru_maxrss) / 1024.0;
    char m[160];
    snprintf(m, sizeof m, "bfloat16 sdpa N = 4096 forward + backward: peak RSS grew %.1f MiB (< 16; N x N floats: 64)", mib);
    CHECK(m, ok && mib < 16.0);
    printf("  bfloat16 sdpa N = 4096 causal, forward + backward: peak RSS +%.1f MiB\n", mib);
#endif
    free(x); free(o); free(lse); free(dout); free(dq); free(dk); free(dv);
}

static const tcase cases[] = {
    /* B  Hq Hkv Nq   Nk   Dh  Dv causal mask    layout */
    { 1, 1, 1,   1,   1,  8,  8, 0, M_NONE,   0 },
    { 1, 2, 2,   7,   7, 16, 16, 1, M_NONE,   0 },
    { 2, 4, 2,  65, 130, 32, 24, 1, M_NONE,   1 },   /* Nq < Nk: lower-right */
    { 1, 4, 1, 130,  65, 24, 40, 1, M_NONE,   0 },   /* Nq > Nk: first rows see nothing; MQA */
    { 1, 8, 1, 257, 257, 64, 64, 1, M_NONE,   0 },   /* G = 8, two key chunks, one key over */
    { 2, 2, 2, 130, 257, 16,  8, 0, M_RAND,   1 },
    { 1, 4, 4, 257, 130, 40, 32, 0, M_BCAST,  0 },
    { 2, 4, 2,  65, 200,  8, 16, 0, M_KEYPAD, 0 },
    { 1, 2, 1, 200, 130, 16, 16, 0, M_UPLEFT, 1 },   /* upper-left causal, Nq > Nk */
    { 1, 2, 2, 130, 200, 16, 16, 1, M_RAND,   0 },   /* causal and a mask */
    { 1, 1, 1,1100,1100, 32, 32, 1, M_NONE,   0 },   /* five key chunks over four lanes */
    { 2, 4, 2, 600, 600, 16, 16, 1, M_NONE,   1 },   /* three lanes summed into strided dq; GQA */
    { 1, 2, 2,  70,  70,  5,  7, 1, M_NONE,   1 },   /* odd head sizes, strided */
    /* small shapes (N <= 64, Dh, Dv <= 16): the path's kn->sdpa_bwd_head */
    { 2, 4, 2,  64,  64, 16, 16, 1, M_NONE,   1 },   /* the lesson model's, GQA, strided */
    { 1, 2, 2,  37,  64, 16, 16, 1, M_NONE,   0 },   /* causal Nq < Nk */
    { 1, 4, 1,  64,  37, 13,  9, 1, M_NONE,   1 },   /* Nq > Nk: empty rows; MQA, odd sizes */
    { 2, 2, 2,  33,  50, 16, 16, 0, M_RAND,   1 },
    { 1, 2, 1,  64,  64, 16, 16, 0, M_UPLEFT, 0 },
    { 1, 2, 2,  64,  63, 16, 16, 1, M_RAND,   0 },   /* causal and a mask */
    { 2, 2, 2,   5,  64,  8, 16, 0, M_KEYPAD, 0 },
};

/* The options, alone and together, at awkward sizes: blocks of 512 (the
   forward) and 256 keys (the backward) cut by the band, W = 1, W >= N,
   sinks beyond the window and beyond a block, Nq < Nk and Nq > Nk, H not a
   power of two for ALiBi, small shapes (which the options keep off the
   paths' small-shape kernels). */
typedef struct ocase {
    tcase c;
    int bias, alibi;
    int64_t window, sinks;
    float dropout;
} ocase;

static const ocase ocases[] = {
    /*  B  Hq Hkv Nq   Nk   Dh  Dv causal mask   layout   bias      alibi window sinks dropout */
    { { 2, 4, 2,  65, 130, 16,  8, 0, M_NONE,   1 }, BI_FULL,  0,    0,    0, 0.0f },
    { { 1, 4, 2, 130, 200, 16, 16, 1, M_RAND,   0 }, BI_HEADS, 0,    0,    0, 0.0f },
    { { 1, 2, 1, 130,  65, 24, 40, 1, M_NONE,   1 }, BI_KEYS,  0,    0,    0, 0.0f },
    { { 1, 4, 2, 257, 257, 32, 32, 1, M_NONE,   0 }, BI_NONE,  1,    0,    0, 0.0f },
    { { 1, 6, 3,  70, 140,  8,  8, 0, M_NONE,   1 }, BI_NONE,  1,    0,    0, 0.0f },
    { { 1, 2, 1, 100, 100, 16, 16, 0, M_NONE,   0 }, BI_NONE,  0,    1,    0, 0.0f },
    { { 2, 2, 1, 300, 700, 32, 24, 1, M_NONE,   1 }, BI_NONE,  0,   37,    0, 0.0f },
    { { 1, 2, 2, 600, 600, 16, 16, 1, M_NONE,   0 }, BI_NONE,  0, 2000,    0, 0.0f },
    { { 1, 2, 1,1100,1100, 16,  8, 1, M_NONE,   0 }, BI_NONE,  0,   64,    4, 0.0f },
    { { 2, 2, 2, 300, 300, 16, 16, 0, M_KEYPAD, 1 }, BI_NONE,  0,    3,   10, 0.0f },
    { { 1, 1, 1,1300,1300,  8,  8, 1, M_NONE,   0 }, BI_NONE,  0,   50,  600, 0.0f },
    { { 1, 2, 2, 130, 257, 16,  8, 0, M_NONE,   1 }, BI_NONE,  0,    0,    0, 0.3f },
    { { 1, 4, 2, 600, 600, 16, 16, 1, M_NONE,   0 }, BI_HEADS, 0,  100,    0, 0.5f },
    { { 1, 4, 1, 300, 333, 16, 16, 1, M_RAND,   1 }, BI_NONE,  1,   70,    5, 0.2f },
    { { 2, 4, 2,  64,  64, 16, 16, 1, M_NONE,   1 }, BI_FULL,  0,    0,    0, 0.0f },
    { { 1, 2, 2,  64,  64, 16, 16, 1, M_NONE,   0 }, BI_NONE,  0,   16,    2, 0.1f },
    { { 1, 2, 1, 100,  40, 16, 16, 1, M_NONE,   1 }, BI_KEYS,  0,    7,    2, 0.0f },   /* Nq > Nk: empty rows */
};

int main(void)
{
    /* avx512_bf16 differs from avx512 only in bfloat16 products: its bf16 cases alone */
    static const char *paths[] = { "scalar", "avx2", "avx512", "avx512_bf16" };
    test_half_memory();   /* first: the peak RSS has not been raised yet */
    test_fd("");
    opt.bias = BI_FULL; opt.window = 3; opt.sinks = 1; opt.dropout = 0.3f;
    test_fd(" with bias, window 3, sinks 1, dropout 0.3");
    opt.bias = BI_NONE; opt.window = 0; opt.sinks = 0; opt.dropout = 0.0f; opt.alibi = 1;
    test_fd(" with alibi");
    opt.alibi = 0;
    int first = 1;
    for (int pth = 0; pth < 4; pth++) {
        if (!tk_simd_force(paths[pth])) { printf("  path %s: not on this CPU or build\n", paths[pth]); continue; }
        int bf16_only = pth == 3;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0] && !bf16_only; i++) run_case(&cases[i], first);
        if (!bf16_only) test_small_nonfinite();
        if (!bf16_only) test_round_half();
        test_exp_sum_bf16();
        test_p_ds_bf16();
        test_hidden_v();
        test_hidden_k_backward();
        test_dq_pad_backward();
        for (size_t i = 0; i < sizeof ocases / sizeof ocases[0] && !bf16_only; i++) {
            const ocase *o = &ocases[i];
            opt.bias = o->bias; opt.alibi = o->alibi; opt.window = o->window; opt.sinks = o->sinks;
            opt.dropout = o->dropout;
            run_case(&o->c, first);
        }
        memset(&opt, 0, sizeof opt);
        /* 16-bit: plain cases at awkward sizes and layouts, then the options */
        static const int hcases[] = { 2, 3, 5, 8, 12, 15 }, hocases[] = { 0, 3, 6, 9, 13, 16 };
        for (int hf = TK_SDPA_BF16; hf <= (bf16_only ? TK_SDPA_BF16 : TK_SDPA_F16); hf++) {
            for (size_t i = 0; i < sizeof hcases / sizeof hcases[0]; i++) run_half(&cases[hcases[i]], hf);
            for (size_t i = 0; i < sizeof hocases / sizeof hocases[0]; i++) {
                const ocase *o = &ocases[hocases[i]];
                opt.bias = o->bias; opt.alibi = o->alibi; opt.window = o->window; opt.sinks = o->sinks;
                opt.dropout = o->dropout;
                run_half(&o->c, hf);
            }
            memset(&opt, 0, sizeof opt);
        }
        printf("  path %s: 16-bit forward and backward within their bounds (worst so far: bfloat16 %.2f, float16 %.2f)\n",
               paths[pth], worst_half[0], worst_half[1]);
        first = 0;
    }
    tk_simd_force(NULL);
    tt_set_num_threads(0);
    printf("  worst error over the largest gradient: kernel %.2g, reference %.2g; forward %.2g\n", worst_kernel,
           worst_ref, worst_fwd);
    printf("  16-bit: worst error over its derived bound: bfloat16 %.2f, float16 %.2f\n", worst_half[0], worst_half[1]);
    return check_report();
}
