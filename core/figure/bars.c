/*
** bars.c — bar charts (core layer): a vector, or each row of a small
** matrix in a panel of its own, on one value axis with nice ticks, every
** bar labelled with its value. Drawn on canvas.c's canvas.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"
#include "font.h"
#include "tt_internal.h"

/* Palette of the figure furniture. */
#define INK      0x1f1f1fu   /* titles, labels */
#define INK_SOFT 0x555555u   /* axis titles, notes */
#define RULE     0x9a9a9au   /* frames, ticks */
#define GRID     0xe4e4e4u   /* bar chart grid lines */

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

/* ===== Bar charts ===== */

void tt_bars_opts_init(tt_bars_opts *o)
{
    memset(o, 0, sizeof *o);
    o->decimals = -1;
}


/* Pixel sizes of the bar chart layout. */
enum {
    BARS_MARGIN = 36,          /* outer margin */
    BARS_PLOT_H = 320,         /* height of the value axis */
    BARS_PANEL_GAP = 44,       /* between panels */
    BARS_MAX_W = 1500,         /* the panels' total width aims below this */
    BARS_PANEL_PAD = 16,       /* a panel is its bars plus this */
    BARS_MIN_PITCH = 22,       /* bar pitch: at least ... */
    BARS_PITCH_FIT = 110,      /* ... up to this to fill the panel width ... */
    BARS_MAX_PITCH = 220,      /* ... and up to this for long labels */
    BARS_FILL_W = 420,         /* bars of a panel spread over this width */
    BARS_TICK_GAP = 12,        /* value ticks to the first panel */
    BARS_TITLE_GAP = 18,       /* below the title */
    BARS_ROW_GAP = 20,         /* between rows of panels */
    BARS_LABEL_GAP = 6,        /* bar end to its value label */
    BARS_TICK_LEN = 5,         /* value ticks left of the axis ... */
    BARS_TICK_TEXT = 9,        /* ... and their labels this far left */
    BARS_INSET = 8,            /* first bar's slot from the axis */
    BARS_CAT_GAP = 8,          /* axis bottom to the category labels */
};
#define ZERO_LINE 0x404040u

/* A bar chart's layout, computed from the data and the options. */
typedef struct bars {
    const tt_bars_opts *o;
    const float *data;
    int nr, nc, decimals;
    double lo, hi;             /* the value axis */
    double ticks[16];
    int nt, tickw;
    char ticktext[16][32];
    char catlab[64][2][TT_FONT_WRAP_LEN];   /* category labels, up to two lines */
    int lscale, catlines;
    int pcols, prows, pitch, barw, pw;
    int W, ax, xoff, top, H, stitle_h, vlab_h, pdy;
    tt_font_title title;
} bars;

static tt_status bars_check(const tt_bars_opts *opts, int64_t R, int64_t C)
{
    char shp[256], tname[320];
    if (opts->meta.shape) snprintf(shp, sizeof shp, "%s", opts->meta.shape);
    else snprintf(shp, sizeof shp, "[%lld,%lld]", (long long)R, (long long)C);
    tt__fig_what(tname, sizeof tname, opts->name, shp);
    if (R <= 0 || C <= 0)
        return tt__err(TT_EARG, "bars: nothing to draw: the tensor %s is empty", tname);
    if (R > 16 || C > 64)
        return tt__err(TT_EARG, "bars: %s is too big for a bar chart (at most 16 rows of 64 "
                       "values); hint: tt.heatmap draws it", tname);
    if (opts->xlabels && opts->nxlabels != C)
        return tt__fig_count_err("bars", "xlabels", opts->nxlabels, C, "bar", R > 1 ? " of each row" : "", tname,
                         R > 1 && opts->nxlabels == R
                             ? "xlabels name the bars (columns), labels the rows"
                             : "one label a bar (\"\" for a blank one)");
    if (opts->series_labels && opts->nseries != R) {
        char hint[96];
        if (R == 1) snprintf(hint, sizeof hint, "this is one row; xlabels name its %lld bar%s",
                             (long long)C, C == 1 ? "" : "s");
        else if (opts->nseries == C) snprintf(hint, sizeof hint, "labels name the rows (one title a "
                                              "panel), xlabels the bars");
        else snprintf(hint, sizeof hint, "one label a row, the title of its panel");
        return tt__fig_count_err("bars", "labels", opts->nseries, R, "row", "", tname, hint);
    }
    return TT_OK;
}

/* Value axis: nice ticks over [min(0, min), max(0, max)], widened to
   whole steps. */
static void bars_value_axis(bars *b, const tt__fig_stats *s)
{
    double lo = s->nfinite ? fmin(0.0, s->fmin) : 0.0, hi = s->nfinite ? fmax(0.0, s->fmax) : 1.0;
    if (!(hi > lo)) hi = lo + 1.0;
    int td, nt = tt__fig_nice_ticks(lo, hi, 5, b->ticks, 16, &td);
    const double step = nt >= 2 ? b->ticks[1] - b->ticks[0] : hi - lo;
    if (b->ticks[0] > lo + 1e-12) lo = b->ticks[0] - step;
    if (b->ticks[nt - 1] < hi - 1e-12) hi = b->ticks[nt - 1] + step;
    b->nt = tt__fig_nice_ticks(lo, hi, 5, b->ticks, 16, &td);
    for (int k = 0; k < b->nt; k++) {
        tt__fig_fmt_num(b->ticktext[k], 32, b->ticks[k], td);
        b->tickw = imax(b->tickw, tt_font_width(b->ticktext[k], 2, 0));
    }
    b->lo = lo;
    b->hi = hi;
}

/* Category labels: the bar pitch grows (up to a total width) to fit the
   widest on one line; labels still too wide wrap onto two lines, then
   all drop to the small size, and only then are shortened. */
static void bars_categories(bars *b)
{
    const int nc = b->nc;
    char names[64][48];
    int widest = 0;
    for (int j = 0; j < nc; j++) {
        if (j < b->o->nxlabels && b->o->xlabels[j]) snprintf(names[j], sizeof names[j], "%s", b->o->xlabels[j]);
        else snprintf(names[j], sizeof names[j], "%d", j + 1);
        widest = imax(widest, tt_font_width(names[j], 2, 0));
    }
    const int gap = BARS_PANEL_GAP;
    b->pcols = imin(b->nr, 4);
    b->prows = (b->nr + b->pcols - 1) / b->pcols;
    const int pitch_cap = imax(((BARS_MAX_W - (b->pcols - 1) * gap) / b->pcols - BARS_PANEL_PAD) / nc,
                               BARS_MIN_PITCH);
    const int pitch = imax(imin(imax(BARS_FILL_W / nc, BARS_MIN_PITCH), BARS_PITCH_FIT),
                           imin(widest + BARS_MIN_PITCH, imin(pitch_cap, BARS_MAX_PITCH)));
    b->pitch = pitch;
    b->barw = pitch * 2 / 3;
    b->pw = nc * pitch + BARS_PANEL_PAD;
    int lscale = 0, catlines = 1;
    for (int sc = 2; sc >= 1 && !lscale; sc--) {
        int ok = 1, most = 1;
        for (int j = 0; j < nc && ok; j++) {
            const int n = tt_font_wrap(names[j], sc, 0, pitch - 6, b->catlab[j], 2);
            ok = n > 0 || !names[j][0];
            most = imax(most, n);
        }
        if (ok) { lscale = sc; catlines = most; }
    }
    if (!lscale) {   /* shortened, small, one line */
        lscale = 1;
        catlines = 1;
        for (int j = 0; j < nc; j++) {
            tt_font_fit(b->catlab[j][0], sizeof b->catlab[j][0], names[j], 1, 0, pitch - 4);
            b->catlab[j][1][0] = '\0';
        }
    } else {
        for (int j = 0; j < nc; j++) {   /* rewrap: a label may have used one line */
            const int n = tt_font_wrap(names[j], lscale, 0, pitch - 6, b->catlab[j], 2);
            if (n == 0) b->catlab[j][0][0] = '\0';
            if (n < 2) b->catlab[j][1][0] = '\0';
        }
    }
    b->lscale = lscale;
    b->catlines = catlines;
}

/* Positions of the panels and the canvas size. */
static void bars_place(bars *b)
{
    const int M = BARS_MARGIN;
    b->ax = M + b->tickw + BARS_TICK_GAP;            /* left edge of the first panel */
    const int W0 = b->ax + b->pcols * b->pw + (b->pcols - 1) * BARS_PANEL_GAP + M;
    tt_font_title_layout(&b->title, b->o->title, W0 - 2 * M);
    b->W = imax(W0, b->title.w + 2 * M);
    b->xoff = (b->W - W0) / 2;
    const int title_h = b->title.nlines ? b->title.h + BARS_TITLE_GAP : 0;
    b->stitle_h = b->nr > 1 || b->o->nseries > 0 ? TT_FONT_LINE * 2 + 8 : 0;
    b->vlab_h = TT_FONT_LINE * 2 + 6;   /* head room for value labels */
    const int xlab_h = TT_FONT_LINE * b->lscale * b->catlines + 10;
    b->pdy = b->stitle_h + b->vlab_h + BARS_PLOT_H + xlab_h + BARS_ROW_GAP;
    b->top = M + title_h;
    b->H = b->top + b->prows * b->pdy + M - BARS_ROW_GAP;
}

/* The y of value v on a panel whose value axis starts at y0. */
static int bars_y(const bars *b, int y0, double v)
{
    return y0 + (int)lround((b->hi - v) / (b->hi - b->lo) * BARS_PLOT_H);
}

/* Bar j of panel p, its value label and its category label. */
static void bars_draw_bar(const bars *b, tt_canvas *out, int p, int j, int x0, int y0)
{
    const int pitch = b->pitch, barw = b->barw;
    const int yzero = bars_y(b, y0, 0.0);
    const double v = b->data[p * b->nc + j];
    const int bx = x0 + BARS_INSET + j * pitch + (pitch - barw) / 2;
    char buf[32];
    tt__fig_fmt_num(buf, sizeof buf, v, b->decimals);
    int labely;
    if (!isnan(v)) {
        const double vc = v > b->hi ? b->hi : v < b->lo ? b->lo : v;
        const int y = bars_y(b, y0, vc);
        const int ytop = imin(y, yzero), ybot = imax(y, yzero);
        tt_canvas_fill_rect(out, bx, ytop, barw, imax(ybot - ytop, 1), tt_fig_colour(p));
        labely = v >= 0 ? ytop - BARS_LABEL_GAP - TT_FONT_CAP * 2 : ybot + BARS_LABEL_GAP;
    } else {
        labely = yzero - BARS_LABEL_GAP - TT_FONT_CAP * 2;   /* NaN: just the word */
    }
    const int vs = tt_font_width(buf, 2, 0) <= pitch - 2 ? 2 : 1;
    const int w = tt_font_width(buf, vs, 0);
    if (w <= pitch)
        tt_font_draw(out, bx + (barw - w) / 2, labely + (vs == 1 ? TT_FONT_CAP : 0), buf,
                     vs, 0, isnan(v) ? TT_FIG_NAN_RGB : INK);
    /* category label under the axis, centred under its bar */
    for (int k = 0; k < 2 && b->catlab[j][k][0]; k++) {
        const int lw = tt_font_width(b->catlab[j][k], b->lscale, 0);
        tt_font_draw(out, bx + (barw - lw) / 2, y0 + BARS_PLOT_H + BARS_CAT_GAP + k * TT_FONT_LINE * b->lscale,
                     b->catlab[j][k], b->lscale, 0, INK);
    }
}

/* Panel p: its title, the value grid and ticks, the bars, the zero line. */
static void bars_draw_panel(const bars *b, tt_canvas *out, int p)
{
    const int pw = b->pw, ph = BARS_PLOT_H;
    const int x0 = b->xoff + b->ax + (p % b->pcols) * (pw + BARS_PANEL_GAP), py = b->top + (p / b->pcols) * b->pdy;
    const int y0 = py + b->stitle_h + b->vlab_h;   /* top of the value axis */
    if (b->stitle_h) {
        char name[64], fitted[64];
        if (p < b->o->nseries && b->o->series_labels[p])
            snprintf(name, sizeof name, "%s", b->o->series_labels[p]);
        else
            snprintf(name, sizeof name, "row %d", p + 1);
        const int w = tt_font_fit(fitted, sizeof fitted, name, 2, 0, pw + BARS_PANEL_GAP - 8);
        tt_font_draw(out, x0 + (pw - w) / 2, py, fitted, 2, 0, INK);
    }
    for (int k = 0; k < b->nt; k++) {
        const int y = bars_y(b, y0, b->ticks[k]);
        tt_canvas_fill_rect(out, x0, y, pw, 1, GRID);
        if (p % b->pcols == 0) {
            tt_canvas_fill_rect(out, x0 - BARS_TICK_LEN, y, BARS_TICK_LEN, 1, RULE);
            tt_font_draw(out, x0 - BARS_TICK_TEXT - tt_font_width(b->ticktext[k], 2, 0), y - TT_FONT_CAP,
                         b->ticktext[k], 2, 0, INK);
        }
    }
    tt_canvas_fill_rect(out, x0, y0, 1, ph + 1, RULE);
    for (int j = 0; j < b->nc; j++) bars_draw_bar(b, out, p, j, x0, y0);
    tt_canvas_fill_rect(out, x0, bars_y(b, y0, 0.0), pw, 1, ZERO_LINE);
}

tt_status tt_bars_render(tt_canvas *out, const float *data, int64_t R, int64_t C,
                         const tt_bars_opts *opts)
{
    tt_bars_opts dflt;
    if (!opts) { tt_bars_opts_init(&dflt); opts = &dflt; }
    out->w = out->h = 0;
    out->px = NULL;
    out->vec = NULL;
    tt_status st = bars_check(opts, R, C);
    if (st != TT_OK) return st;
    bars *b = calloc(1, sizeof *b);   /* the label buffers: kept off the stack */
    if (!b) return tt__err(TT_ENOMEM, "bars: out of memory");
    b->o = opts;
    b->data = data;
    b->nr = (int)R;
    b->nc = (int)C;
    const tt__fig_stats s = tt__fig_data_stats(data, R * C);
    b->decimals = opts->decimals >= 0 ? imin(opts->decimals, 8) : tt__fig_auto_decimals(data, R * C, s.maxabs);
    bars_value_axis(b, &s);
    bars_categories(b);
    bars_place(b);
    st = tt_canvas_init(out, b->W, b->H);
    if (st == TT_OK) {
        tt_font_title_draw(out, &b->title, b->W / 2, BARS_MARGIN, INK);
        for (int p = 0; p < b->nr; p++) bars_draw_panel(b, out, p);
    }
    free(b);
    return st;
}

typedef struct bars_call {
    const float *data;
    int64_t R, C;
    const tt_bars_opts *opts;
} bars_call;

static tt_status bars_render_call(tt_canvas *out, const void *ctx)
{
    const bars_call *a = ctx;
    return tt_bars_render(out, a->data, a->R, a->C, a->opts);
}

tt_status tt_bars_write(const char *path, const float *data, int64_t R, int64_t C,
                        const tt_bars_opts *opts)
{
    const bars_call a = { data, R, C, opts };
    return tt__figure_write("bars", path, bars_render_call, &a, opts ? &opts->meta : NULL);
}
