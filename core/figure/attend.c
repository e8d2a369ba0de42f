/*
** attend.c — one query's attention as a worked example (core layer): the
** dot products of the query with each key, the scores (the dot products
** scaled), the softmax weights, the value
** rows, the rows scaled by their weights and their sum, the output, side
** by side with every number written in. The numbers are computed here, in
** float64, from the real q, K and V; the figure asserts nothing.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"
#include "font.h"
#include "tt_internal.h"

#define INK      0x1f1f1fu   /* title, numbers, headers */
#define INK_SOFT 0x555555u   /* second header lines, the softmax arrow */
#define WHITE    0xffffffu

/* Pixel sizes of the layout. */
enum {
    AT_MARGIN = 36,
    AT_ROW_H = 48,         /* a key's row; its cells are 4 px less */
    AT_CELL_GAP = 4,       /* between rows, and between a vector's cells (half) */
    AT_NUM_PAD = 28,       /* a cell is its widest number plus this */
    AT_MIN_COL = 84,       /* score and weight cells at least this wide */
    AT_MIN_CELL = 64,      /* value cells at least this wide */
    AT_LABEL_GAP = 16,     /* token labels to the score column */
    AT_LABEL_MAX_W = 160,  /* labels beyond this are shortened */
    AT_ARROW_GAP = 120,    /* score column to weight column: the softmax arrow */
    AT_SCALE_GAP = 96,     /* dot product column to score column: the scaling arrow */
    AT_OP_GAP = 48,        /* around the x and = of each row */
    AT_TITLE_GAP = 14,     /* below the title and the subtitle */
    AT_HEAD_GAP = 10,      /* headers to the first row */
    AT_SUM_GAP = 16,       /* last row to the output row */
};

void tt_attend_opts_init(tt_attend_opts *o)
{
    memset(o, 0, sizeof *o);
    o->decimals = -1;
}

static int imax(int a, int b) { return a > b ? a : b; }

void tt_attend_compute(const float *q, const float *K, const float *V, int nk, int dh, int dv,
                       double scale, double *dots, double *scores, double *weights, double *scaled,
                       double *out)
{
    double mx = -INFINITY;
    for (int j = 0; j < nk; j++) {
        double s = 0.0;
        for (int d = 0; d < dh; d++) s += (double)q[d] * (double)K[(size_t)j * dh + d];
        if (dots) dots[j] = s;
        scores[j] = s * scale;
        mx = fmax(mx, scores[j]);
    }
    double total = 0.0;
    for (int j = 0; j < nk; j++) {
        weights[j] = exp(scores[j] - mx);   /* less the max: no overflow, same ratios */
        total += weights[j];
    }
    for (int j = 0; j < nk; j++) weights[j] /= total;
    for (int d = 0; d < dv; d++) out[d] = 0.0;
    for (int j = 0; j < nk; j++)
        for (int d = 0; d < dv; d++) {
            scaled[(size_t)j * dv + d] = weights[j] * (double)V[(size_t)j * dv + d];
            out[d] += scaled[(size_t)j * dv + d];
        }
}

/* The figure's numbers and layout. */
typedef struct attend {
    const tt_attend_opts *o;
    const float *V;
    int nk, dh, dv, decimals, vdecimals;
    double scale;
    double dots[TT_ATTEND_MAX_KEYS], scores[TT_ATTEND_MAX_KEYS], weights[TT_ATTEND_MAX_KEYS];
    double scaled[TT_ATTEND_MAX_KEYS * TT_ATTEND_MAX_DV], out[TT_ATTEND_MAX_DV];
    double dmax, smax, vmax;           /* colour ranges: |dot products|, |scores|, |values| */
    int ddecimals;                     /* whole dot products without decimals */
    char labels[TT_ATTEND_MAX_KEYS][64];
    char subtitle[256];
    char head[5][2][80];               /* score, weight, v, a v, q.k: two lines each */
    char scale_text[80];               /* over the scaling arrow: "/ √2" */
    tt_font_title title;
    tt_attend_geom g;
} attend;

static int whole(double v) { return isfinite(v) && v == floor(v) && fabs(v) < 1e6; }

/* Header h, line k, centred over [x, x + w). */
static void draw_head(tt_canvas *c, const attend *a, int h, int x, int w, int y)
{
    for (int k = 0; k < 2; k++) {
        const char *s = a->head[h][k];
        tt_font_draw(c, x + (w - tt_font_width(s, 2, k ? 0 : TT_FONT_BOLD)) / 2, y + k * TT_FONT_LINE * 2, s, 2,
                     k ? 0 : TT_FONT_BOLD, k ? INK_SOFT : INK);
    }
}

static int head_w(const attend *a, int h)
{
    return imax(tt_font_width(a->head[h][0], 2, TT_FONT_BOLD), tt_font_width(a->head[h][1], 2, 0));
}

/* A cell of colour rgb with its number centred in a legible ink. */
static void draw_cell(tt_canvas *c, int x, int y, int w, int h, uint32_t rgb, double v, int decimals)
{
    char buf[32];
    tt__fig_fmt_num(buf, sizeof buf, v, decimals);
    tt_canvas_fill_rect(c, x, y, w, h, rgb);
    const int tw = tt_font_width(buf, 2, 0);
    tt_font_draw(c, x + (w - tw) / 2, y + (h - TT_FONT_CAP * 2) / 2, buf, 2, 0,
                 tt_rgb_luma(rgb) > 0.5 ? INK : WHITE);
}

static uint32_t centred(double v, double vmax)
{
    return tt_cmap_rgb(TT_CMAP_DIVERGING, isnan(v) ? v : 0.5 + v / (2.0 * vmax));
}

static int widest(const double *v, int n, int decimals)
{
    int w = 0;
    char buf[32];
    for (int i = 0; i < n; i++) {
        tt__fig_fmt_num(buf, sizeof buf, v[i], decimals);
        w = imax(w, tt_font_width(buf, 2, 0));
    }
    return w;
}

static tt_status attend_check(const attend *a)
{
    if (a->nk <= 0 || a->dh <= 0 || a->dv <= 0)
        return tt__err(TT_EARG, "attend_figure: nothing to draw: %d keys of size %d, values of size %d",
                       a->nk, a->dh, a->dv);
    if (a->nk > TT_ATTEND_MAX_KEYS)
        return tt__err(TT_EARG, "attend_figure: %d keys, at most %d fit one figure; hint: take the "
                       "first keys, e.g. K:narrow(1, 1, %d) and V:narrow(1, 1, %d)",
                       a->nk, TT_ATTEND_MAX_KEYS, TT_ATTEND_MAX_KEYS, TT_ATTEND_MAX_KEYS);
    if (a->dv > TT_ATTEND_MAX_DV)
        return tt__err(TT_EARG, "attend_figure: values of size %d, at most %d columns fit one figure; "
                       "hint: draw a few, e.g. V:narrow(2, 1, 8)", a->dv, TT_ATTEND_MAX_DV);
    if (a->o->labels && a->o->nlabels != a->nk)
        return tt__err(TT_EARG, "attend_figure: %d label%s for the %d key%s; hint: one token a key (a row "
                       "of K)", a->o->nlabels, a->o->nlabels == 1 ? "" : "s", a->nk, a->nk == 1 ? "" : "s");
    if (a->o->has_scale && !isfinite(a->o->scale))
        return tt__err(TT_EARG, "attend_figure: scale must be a finite number, not %g", a->o->scale);
    return TT_OK;
}

/* Texts: labels, headers, the subtitle with q and the scale. */
static void attend_texts(attend *a, const float *q)
{
    const tt_attend_opts *o = a->o;
    for (int j = 0; j < a->nk; j++) {
        char raw[64];
        if (o->labels && o->labels[j]) snprintf(raw, sizeof raw, "%s", o->labels[j]);
        else snprintf(raw, sizeof raw, "%d", j + 1);
        tt_font_fit(a->labels[j], sizeof a->labels[j], raw, 2, 0, AT_LABEL_MAX_W);
    }
    char sc[64];
    tt__fig_fmt_num(sc, sizeof sc, a->scale, a->decimals);
    snprintf(a->head[0][0], sizeof a->head[0][0], "score");
    if (o->has_scale) snprintf(a->head[0][1], sizeof a->head[0][1], "q\xc2\xb7k \xc3\x97 %s", sc);
    else snprintf(a->head[0][1], sizeof a->head[0][1], "q\xc2\xb7k / \xe2\x88\x9a%d", a->dh);
    snprintf(a->head[1][0], sizeof a->head[1][0], "weight a");
    a->head[1][1][0] = '\0';   /* the arrow says softmax */
    snprintf(a->head[2][0], sizeof a->head[2][0], "value v");
    a->head[2][1][0] = '\0';
    snprintf(a->head[3][0], sizeof a->head[3][0], "a \xc3\x97 v");
    snprintf(a->head[3][1], sizeof a->head[3][1], "scaled rows");
    snprintf(a->head[4][0], sizeof a->head[4][0], "q\xc2\xb7k");
    snprintf(a->head[4][1], sizeof a->head[4][1], "dot product");
    if (o->has_scale) snprintf(a->scale_text, sizeof a->scale_text, "\xc3\x97 %s", sc);
    else snprintf(a->scale_text, sizeof a->scale_text, "/ \xe2\x88\x9a%d", a->dh);

    /* "query t3: q = [1, 1]   scale 1/√2 = 0.707" */
    int qwhole = 1;
    for (int d = 0; d < a->dh; d++) qwhole &= whole(q[d]);
    char qs[160];
    size_t n = o->query ? (size_t)snprintf(qs, sizeof qs, "query %.40s: q = [", o->query)
                        : (size_t)snprintf(qs, sizeof qs, "q = [");
    for (int d = 0; d < a->dh && d < 8; d++) {
        char buf[32];
        tt__fig_fmt_num(buf, sizeof buf, q[d], qwhole ? 0 : a->decimals);
        n += (size_t)snprintf(qs + n, sizeof qs - n, "%s%s", d ? ", " : "", buf);
    }
    snprintf(qs + n, sizeof qs - n, "%s]", a->dh > 8 ? ", \x7f" : "");
    if (o->has_scale) snprintf(a->subtitle, sizeof a->subtitle, "%s   scale %s", qs, sc);
    else snprintf(a->subtitle, sizeof a->subtitle, "%s   scale 1/\xe2\x88\x9a%d = %s", qs, a->dh, sc);
}

static void attend_place(attend *a)
{
    tt_attend_geom *g = &a->g;
    const int nums_w = imax(imax(widest(a->scores, a->nk, a->decimals), widest(a->weights, a->nk, a->decimals)),
                            widest(a->dots, a->nk, a->ddecimals));
    g->col_w = imax(imax(nums_w + AT_NUM_PAD, AT_MIN_COL),
                    imax(imax(head_w(a, 0), head_w(a, 1)), head_w(a, 4)) + 8);
    int vw = 0;
    for (int j = 0; j < a->nk; j++) {
        double row[TT_ATTEND_MAX_DV];
        for (int d = 0; d < a->dv; d++) row[d] = a->V[(size_t)j * a->dv + d];
        vw = imax(vw, widest(row, a->dv, a->vdecimals));
    }
    vw = imax(vw, imax(widest(a->scaled, a->nk * a->dv, a->decimals), widest(a->out, a->dv, a->decimals)));
    g->cell_w = imax(vw + AT_NUM_PAD, AT_MIN_CELL);
    const int heads_w = imax(head_w(a, 2), head_w(a, 3)) + 8;
    if (g->cell_w * a->dv < heads_w) g->cell_w = (heads_w + a->dv - 1) / a->dv;

    int lw = 0;
    for (int j = 0; j < a->nk; j++) lw = imax(lw, tt_font_width(a->labels[j], 2, 0));
    const int M = AT_MARGIN;
    g->dot_x = M + lw + AT_LABEL_GAP;
    g->score_x = g->dot_x + g->col_w + imax(AT_SCALE_GAP, tt_font_width(a->scale_text, 2, 0) + 40);
    g->weight_x = g->score_x + g->col_w + AT_ARROW_GAP;
    g->v_x = g->weight_x + g->col_w + AT_OP_GAP;
    g->av_x = g->v_x + a->dv * g->cell_w + AT_OP_GAP;
    const int W0 = g->av_x + a->dv * g->cell_w + AT_LABEL_GAP + tt_font_width("output", 2, TT_FONT_BOLD) + M;
    tt_font_title_layout(&a->title, a->o->title ? a->o->title : "One query's attention", W0 - 2 * M);
    g->width = imax(W0, a->title.w + 2 * M);
    const int sub_y = M + (a->title.nlines ? a->title.h + AT_TITLE_GAP : 0);
    g->row_y = sub_y + TT_FONT_LINE * 2 + AT_TITLE_GAP + 2 * TT_FONT_LINE * 2 + AT_HEAD_GAP;
    g->row_h = AT_ROW_H;
    g->out_y = g->row_y + a->nk * AT_ROW_H + AT_SUM_GAP;
    g->height = g->out_y + AT_ROW_H + M;
}

/* A horizontal arrow from x0 to x1 at y, its name over it. */
static void draw_arrow(tt_canvas *c, double x0, double x1, double y, const char *name)
{
    tt_canvas_line(c, x0, y, x1 - 10, y, 2.5, INK_SOFT);
    const double head[6] = { x1, y, x1 - 14, y - 7, x1 - 14, y + 7 };
    tt_canvas_triangle(c, head, INK_SOFT);
    const int tw = tt_font_width(name, 2, 0);
    tt_font_draw(c, (int)((x0 + x1 - tw) / 2), (int)y - 10 - TT_FONT_CAP * 2, name, 2, 0, INK_SOFT);
}

static void attend_draw(const attend *a, tt_canvas *c)
{
    const tt_attend_geom *g = &a->g;
    const int M = AT_MARGIN, ch = AT_ROW_H - AT_CELL_GAP, cw = g->cell_w;
    tt_font_title_draw(c, &a->title, g->width / 2, M, INK);
    const int sub_y = M + (a->title.nlines ? a->title.h + AT_TITLE_GAP : 0);
    char fitted[256];
    const int sw = tt_font_fit(fitted, sizeof fitted, a->subtitle, 2, 0, g->width - 2 * M);
    tt_font_draw(c, (g->width - sw) / 2, sub_y, fitted, 2, 0, INK_SOFT);
    const int head_y = g->row_y - AT_HEAD_GAP - 2 * TT_FONT_LINE * 2;
    draw_head(c, a, 4, g->dot_x, g->col_w, head_y);
    draw_head(c, a, 0, g->score_x, g->col_w, head_y);
    draw_head(c, a, 1, g->weight_x, g->col_w, head_y);
    draw_head(c, a, 2, g->v_x, a->dv * cw, head_y);
    draw_head(c, a, 3, g->av_x, a->dv * cw, head_y);

    for (int j = 0; j < a->nk; j++) {
        const int y = g->row_y + j * AT_ROW_H, mid = y + ch / 2;
        tt_font_draw(c, g->dot_x - AT_LABEL_GAP - tt_font_width(a->labels[j], 2, 0), mid - TT_FONT_CAP,
                     a->labels[j], 2, 0, INK);
        draw_cell(c, g->dot_x, y, g->col_w, ch, centred(a->dots[j], a->dmax), a->dots[j], a->ddecimals);
        draw_cell(c, g->score_x, y, g->col_w, ch, centred(a->scores[j], a->smax), a->scores[j], a->decimals);
        draw_cell(c, g->weight_x, y, g->col_w, ch, tt_cmap_rgb(TT_CMAP_VIRIDIS, a->weights[j]), a->weights[j],
                  a->decimals);
        for (int d = 0; d < a->dv; d++) {
            const double v = a->V[(size_t)j * a->dv + d], s = a->scaled[(size_t)j * a->dv + d];
            draw_cell(c, g->v_x + d * cw, y, cw - AT_CELL_GAP / 2, ch, centred(v, a->vmax), v, a->vdecimals);
            draw_cell(c, g->av_x + d * cw, y, cw - AT_CELL_GAP / 2, ch, centred(s, a->vmax), s, a->decimals);
        }
        /* a_j x v_j = ... : the operators of the row */
        const double xc = g->weight_x + g->col_w + AT_OP_GAP / 2.0, r = 6.0;
        tt_canvas_line(c, xc - r, mid - r, xc + r, mid + r, 2.0, INK);
        tt_canvas_line(c, xc - r, mid + r, xc + r, mid - r, 2.0, INK);
        const double ec = g->v_x + a->dv * cw + AT_OP_GAP / 2.0 - 1;
        tt_canvas_fill_rect(c, (int)(ec - r), mid - 5, (int)(2 * r), 2, INK);
        tt_canvas_fill_rect(c, (int)(ec - r), mid + 3, (int)(2 * r), 2, INK);
    }
    /* the scaling and softmax: arrows across all rows, each with its name */
    const double ay = g->row_y + (a->nk * AT_ROW_H - AT_CELL_GAP) / 2.0;
    draw_arrow(c, g->dot_x + g->col_w + 14, g->score_x - 14, ay, a->scale_text);
    draw_arrow(c, g->score_x + g->col_w + 14, g->weight_x - 14, ay, "softmax");

    /* the sum: a rule under the scaled rows, the output row, the weights' total */
    const int oy = g->out_y, omid = oy + ch / 2;
    tt_canvas_fill_rect(c, g->av_x, oy - AT_SUM_GAP / 2 - 1, a->dv * cw - AT_CELL_GAP / 2, 2, INK);
    const int sigw = tt_font_width("\xce\xa3", 2, TT_FONT_BOLD);
    tt_font_draw(c, g->av_x - AT_OP_GAP / 2 - sigw / 2, omid - TT_FONT_CAP, "\xce\xa3", 2, TT_FONT_BOLD, INK);
    for (int d = 0; d < a->dv; d++)
        draw_cell(c, g->av_x + d * cw, oy, cw - AT_CELL_GAP / 2, ch, centred(a->out[d], a->vmax), a->out[d],
                  a->decimals);
    tt_font_draw(c, g->av_x + a->dv * cw + AT_LABEL_GAP - 2, omid - TT_FONT_CAP, "output", 2, TT_FONT_BOLD, INK);
    double total = 0.0;
    for (int j = 0; j < a->nk; j++) total += a->weights[j];
    char buf[48], num[32];
    tt__fig_fmt_num(num, sizeof num, total, a->decimals);
    snprintf(buf, sizeof buf, "\xce\xa3 = %s", num);
    tt_font_draw(c, g->weight_x + (g->col_w - tt_font_width(buf, 2, 0)) / 2, omid - TT_FONT_CAP, buf, 2, 0,
                 INK_SOFT);
}

tt_status tt_attend_render(tt_canvas *out, tt_attend_geom *geom, const float *q, const float *K,
                           const float *V, int nk, int dh, int dv, const tt_attend_opts *opts)
{
    tt_attend_opts dflt;
    if (!opts) { tt_attend_opts_init(&dflt); opts = &dflt; }
    out->w = out->h = 0;
    out->px = NULL;
    out->vec = NULL;
    attend *a = calloc(1, sizeof *a);
    if (!a) return tt__err(TT_ENOMEM, "attend_figure: out of memory");
    a->o = opts;
    a->V = V;
    a->nk = nk;
    a->dh = dh;
    a->dv = dv;
    tt_status st = attend_check(a);
    if (st == TT_OK) {
        a->decimals = opts->decimals >= 0 ? (opts->decimals > 8 ? 8 : opts->decimals) : 3;
        a->scale = opts->has_scale ? opts->scale : 1.0 / sqrt((double)dh);
        tt_attend_compute(q, K, V, nk, dh, dv, a->scale, a->dots, a->scores, a->weights, a->scaled, a->out);
        int vwhole = 1, dwhole = 1;
        a->dmax = a->smax = a->vmax = 0.0;
        for (int j = 0; j < nk; j++) {
            dwhole &= whole(a->dots[j]);
            if (isfinite(a->dots[j])) a->dmax = fmax(a->dmax, fabs(a->dots[j]));
            if (isfinite(a->scores[j])) a->smax = fmax(a->smax, fabs(a->scores[j]));
            for (int d = 0; d < dv; d++) {
                const double v = V[(size_t)j * dv + d];
                vwhole &= whole(v);
                if (isfinite(v)) a->vmax = fmax(a->vmax, fabs(v));
            }
        }
        if (!(a->dmax > 0.0)) a->dmax = 1.0;
        if (!(a->smax > 0.0)) a->smax = 1.0;
        a->ddecimals = dwhole ? 0 : a->decimals;
        if (!(a->vmax > 0.0)) a->vmax = 1.0;
        a->vdecimals = vwhole ? 0 : a->decimals;
        attend_texts(a, q);
        attend_place(a);
        st = tt_canvas_init(out, a->g.width, a->g.height);
    }
    if (st == TT_OK) {
        attend_draw(a, out);
        if (geom) *geom = a->g;
    }
    free(a);
    return st;
}

typedef struct attend_call {
    const float *q, *K, *V;
    int nk, dh, dv;
    const tt_attend_opts *opts;
} attend_call;

static tt_status attend_render_call(tt_canvas *out, const void *ctx)
{
    const attend_call *a = ctx;
    return tt_attend_render(out, NULL, a->q, a->K, a->V, a->nk, a->dh, a->dv, a->opts);
}

tt_status tt_attend_write(const char *path, const float *q, const float *K, const float *V, int nk,
                          int dh, int dv, const tt_attend_opts *opts)
{
    const attend_call a = { q, K, V, nk, dh, dv, opts };
    return tt__figure_write("attend_figure", path, attend_render_call, &a, opts ? &opts->meta : NULL);
}
