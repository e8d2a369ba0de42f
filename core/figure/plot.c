/*
** plot.c — line charts (core layer): one or several named series of
** (x, y) points on linear or log axes, for curves a lesson measures (a
** loss, FLOPs against N). Inputs are plain double arrays; drawn on
** canvas.c's canvas with font.c's font.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"
#include "font.h"
#include "tt_internal.h"

#define INK      0x1f1f1fu   /* title, tick labels, legend */
#define INK_SOFT 0x555555u   /* axis titles, the note */
#define RULE     0x9a9a9au   /* axes, ticks */
#define GRID     0xe4e4e4u   /* grid lines at the major ticks */
#define WHITE    0xffffffu

/* Pixel sizes of the layout. */
enum {
    PL_MARGIN = 36,        /* outer margin */
    PL_AREA_W = 640,       /* the plot area */
    PL_AREA_H = 400,
    PL_TITLE_GAP = 18,     /* below the title (and the note) */
    PL_TICK = 6,           /* major tick length, outside the area */
    PL_MINOR = 3,          /* minor tick length (log axes) */
    PL_TICK_GAP = 5,       /* tick to its label */
    PL_AXIS_TITLE_GAP = 14,/* tick labels to the axis title */
    PL_LEGEND_GAP = 28,    /* plot area to the legend */
    PL_LEGEND_PITCH = 32,  /* between legend entries */
    PL_LEGEND_LINE = 30,   /* the line sample of an entry */
    PL_LEGEND_TEXT_W = 260,/* entry text beyond this is shortened */
    PL_MARKER_MAX_N = 20,  /* markers by default up to this many points */
    PL_SUP_RISE = 7,       /* a 10^k exponent sits this much above the 10 */
    PL_LABEL_SPACE = 28,   /* at least this between two x tick labels */
};
#define PL_LINE_W 2.5
#define PL_MARKER_R 4.5
#define PL_BAR_W 2.0     /* error bars and their caps */
#define PL_CAP 5.0       /* a cap reaches this far either side of its bar */

/* Okabe & Ito's palette for colour-blind readers; yellow, the weakest on
   white, last. */
static const uint32_t OKABE_ITO[TT_PLOT_MAX_SERIES] = {
    0x0072b2u, 0xd55e00u, 0x009e73u, 0xcc79a7u, 0xe69f00u, 0x56b4e9u, 0x000000u, 0xf0e442u,
};

uint32_t tt_plot_colour(int k)
{
    return OKABE_ITO[((k % TT_PLOT_MAX_SERIES) + TT_PLOT_MAX_SERIES) % TT_PLOT_MAX_SERIES];
}

static int imax(int a, int b) { return a > b ? a : b; }

void tt_plot_opts_init(tt_plot_opts *o)
{
    memset(o, 0, sizeof *o);
    o->legend = -1;
    o->markers = -1;
    o->ymin = o->ymax = (double)NAN;
}

/* One axis: its ends (log10 on a log axis), ticks and their labels. */
typedef struct axis {
    int log;
    double lo, hi;
    int nt, nminor;
    double tick[TT_PLOT_MAX_TICKS];      /* values */
    double minor[TT_PLOT_MAX_TICKS * 8]; /* log10 of the 2..9 x 10^k */
    char text[TT_PLOT_MAX_TICKS][32];    /* linear: the label; log: the exponent */
    int label_w;                          /* widest label in pixels */
} axis;

static const char BASE10[] = "10";

static int label_width(const axis *a, int k)
{
    if (!a->log) return tt_font_width(a->text[k], 2, 0);
    return tt_font_width(BASE10, 2, 0) + 2 + tt_font_width(a->text[k], 2, 0);
}

/* Labels of linear ticks: from 10^4 on with a k, M, G, T or P suffix, one
   for the whole axis ("200k" ... "1.2M" would mix), to the decimals the
   step needs; below, as the heatmap writes numbers (d decimals). */
static void label_linear(axis *a, int d)
{
    double maxabs = 0.0;
    for (int k = 0; k < a->nt; k++) maxabs = fmax(maxabs, fabs(a->tick[k]));
    if (!(maxabs >= 1e4) || !isfinite(maxabs) || a->nt < 2) {
        for (int k = 0; k < a->nt; k++) tt__fig_fmt_num(a->text[k], sizeof a->text[0], a->tick[k], d);
        return;
    }
    static const char SUFFIX[] = "kMGTP";
    int u = (int)floor(log10(maxabs) / 3.0 + 1e-9);
    if (u > 5) u = 5;
    const double unit = pow(1000.0, u), step = (a->tick[1] - a->tick[0]) / unit;
    const int dec = step >= 1.0 - 1e-9 ? 0 : (int)ceil(-log10(step) - 1e-9);
    for (int k = 0; k < a->nt; k++) {
        snprintf(a->text[k], sizeof a->text[0], "%.*f%c", dec, a->tick[k] / unit, SUFFIX[u - 1]);
        if (a->tick[k] == 0.0) snprintf(a->text[k], sizeof a->text[0], "0");
    }
}

/* log10 of the nearest m x 10^k (m = 1..9, a minor tick) below or above e */
static double minor_below(double e)
{
    const double k = floor(e);
    return k + log10(floor(pow(10.0, e - k) + 1e-9));
}
static double minor_above(double e)
{
    const double k = floor(e), m = ceil(pow(10.0, e - k) - 1e-9);
    return m >= 10.0 ? k + 1.0 : k + log10(m);
}

/* Linear: the data and a margin, 1-2-5 ticks inside. Log: a tick a
   decade (every other decade and so on past ten), minor ticks at
   2..9 x 10^k when they fit; then the ends are the data and a margin out to
   the nearest minor tick (1500 ends at 2 x 10^3, not at 10^4), as long as
   two decade ticks stay inside; else, and when no minor ticks are drawn,
   whole decades. */
static void axis_setup(axis *a, double vmin, double vmax, int want, double fix_lo, double fix_hi)
{
    if (a->log) {
        /* fixed ends set the decades, so the ticks fit however far apart they are */
        const double dlo = log10(isnan(fix_lo) ? vmin : fix_lo), dhi = log10(isnan(fix_hi) ? vmax : fix_hi);
        double lo = floor(dlo), hi = ceil(dhi);
        if (hi <= lo) hi = lo + 1.0;
        const int decades = (int)(hi - lo), step = (decades + want - 1) / want;
        lo = floor(lo / step) * step;
        hi = ceil(hi / step) * step;
        const int minors = step == 1 && decades <= 8;
        if (minors) {
            const double pad = (dhi - dlo) * 0.03;
            const double l = minor_below(dlo - pad), h = minor_above(dhi + pad);
            if (floor(h + 1e-9) - ceil(l - 1e-9) >= 1.0) {
                lo = l;
                hi = h;
            }
        }
        if (!isnan(fix_lo)) lo = log10(fix_lo);
        if (!isnan(fix_hi)) hi = log10(fix_hi);
        a->lo = lo;
        a->hi = hi;
        a->nt = 0;
        for (double e = ceil(lo - 1e-9); e <= hi + 1e-9 && a->nt < TT_PLOT_MAX_TICKS; e += step) {
            a->tick[a->nt] = pow(10.0, e);
            snprintf(a->text[a->nt], sizeof a->text[0], "%d", (int)e);
            a->nt++;
        }
        a->nminor = 0;
        if (minors)
            for (double e = floor(lo); e < hi; e += 1.0)
                for (int m = 2; m <= 9; m++) {
                    const double me = e + log10((double)m);
                    if (me > lo + 1e-9 && me < hi - 1e-9 && a->nminor < TT_PLOT_MAX_TICKS * 8)
                        a->minor[a->nminor++] = me;
                }
    } else {
        double lo = vmin, hi = vmax;
        if (!(hi > lo)) {   /* one value: half its size either side of it */
            const double pad = lo != 0.0 ? fabs(lo) * 0.5 : 1.0;
            lo -= pad;
            hi += pad;
        } else {            /* a little room, so points do not sit on the frame */
            const double pad = (hi - lo) * 0.04;
            lo -= pad;
            hi += pad;
        }
        if (!isnan(fix_lo)) lo = fix_lo;
        if (!isnan(fix_hi)) hi = fix_hi;
        /* 1-2-5 ticks inside the axis; its ends need not be ticks, which
           would waste up to a step of the width */
        int d;
        const int nt = tt__fig_nice_ticks(lo, hi, want, a->tick, TT_PLOT_MAX_TICKS, &d);
        a->lo = lo;
        a->hi = hi;
        a->nt = nt;
        a->nminor = 0;
        label_linear(a, d);
    }
    a->label_w = 0;
    for (int k = 0; k < a->nt; k++) a->label_w = imax(a->label_w, label_width(a, k));
}

/* Pixels between neighbouring ticks along a PL_AREA_W axis. */
static double tick_gap(const axis *a)
{
    if (a->nt < 2) return PL_AREA_W;
    const double t0 = a->log ? log10(a->tick[0]) : a->tick[0], t1 = a->log ? log10(a->tick[1]) : a->tick[1];
    return (t1 - t0) / (a->hi - a->lo) * PL_AREA_W;
}

/* A tick label at (x, y) (top of the caps): "10" with a raised exponent on
   a log axis. */
static void draw_label(tt_canvas *c, const axis *a, int k, int x, int y)
{
    if (!a->log) {
        tt_font_draw(c, x, y, a->text[k], 2, 0, INK);
        return;
    }
    tt_font_draw(c, x, y, BASE10, 2, 0, INK);
    tt_font_draw(c, x + tt_font_width(BASE10, 2, 0) + 2, y - PL_SUP_RISE, a->text[k], 2, 0, INK);
}

/* The plot's layout. */
typedef struct plot {
    const tt_plot_series *s;
    int ns;
    const tt_plot_opts *o;
    axis xa, ya;
    int legend, markers;
    int64_t skipped;
    char note[96];
    char names[TT_PLOT_MAX_SERIES][80];
    int legend_w;
    tt_font_title title;
    int W, H, ax, ay, lx, ly, top_h;
} plot;

static double xv(const tt_plot_series *s, int64_t i) { return s->x ? s->x[i] : (double)(i + 1); }

static void series_name(char *buf, size_t n, const tt_plot_series *s, int k)
{
    if (s->name && s->name[0]) snprintf(buf, n, "'%.60s'", s->name);
    else snprintf(buf, n, "%d", k + 1);
}

/* Point i (x, y) of the series named nm, both finite: where the axes
   cannot show it. */
static tt_status check_point(const tt_plot_opts *o, const char *nm, int64_t i, double x, double y)
{
    if (o->xlog && x <= 0.0)
        return tt__err(TT_EARG, "plot: series %s has x = %g at point %lld, which a log x axis "
                       "cannot show (values must be > 0); hint: drop xlog, or the point",
                       nm, x, (long long)i + 1);
    if (o->ylog && y <= 0.0)
        return tt__err(TT_EARG, "plot: series %s has y = %g at point %lld, which a log y axis "
                       "cannot show (values must be > 0); hint: drop ylog, or the point",
                       nm, y, (long long)i + 1);
    if (y < o->ymin || y > o->ymax)
        return tt__err(TT_EARG, "plot: series %s has y = %g at point %lld, outside the y axis "
                       "fixed by %s = %g; hint: widen %s, or drop it", nm, y, (long long)i + 1,
                       y < o->ymin ? "ymin" : "ymax", y < o->ymin ? o->ymin : o->ymax,
                       y < o->ymin ? "ymin" : "ymax");
    return TT_OK;
}

/* The series' error bars: checked, and [*lo, *hi] widened to take them in
   (on a log axis only bottoms above 0; a fixed ymin/ymax cuts them). */
static tt_status check_yerr(const plot *p, const tt_plot_series *s, const char *nm, double *lo,
                            double *hi)
{
    if (!s->yerr) return TT_OK;
    if (s->nyerr != s->ny)
        return tt__err(TT_EARG, "plot: series %s has %lld yerr values and %lld y values; "
                       "hint: one half-width a point", nm, (long long)s->nyerr, (long long)s->ny);
    for (int64_t i = 0; i < s->ny; i++) {
        const double y = s->y[i], e = s->yerr[i];
        if (!isfinite(xv(s, i)) || !isfinite(y)) continue;
        if (!(e >= 0.0) || !isfinite(e))
            return tt__err(TT_EARG, "plot: series %s has yerr = %g at point %lld; yerr is the "
                           "half-width of an error bar, a number >= 0", nm, isnan(e) ? fabs(e) : e, (long long)i + 1);
        if (!p->o->ylog || y - e > 0.0) *lo = fmin(*lo, y - e);
        *hi = fmax(*hi, y + e);
    }
    return TT_OK;
}

/* Fixed y ends the y axis can have. */
static tt_status check_fixed(const tt_plot_opts *o)
{
    if (isinf(o->ymin) || isinf(o->ymax))
        return tt__err(TT_EARG, "plot: %s = %g; a fixed end must be a finite number",
                       isinf(o->ymin) ? "ymin" : "ymax", isinf(o->ymin) ? o->ymin : o->ymax);
    if (o->ylog && o->ymin <= 0.0)
        return tt__err(TT_EARG, "plot: ymin = %g, which a log y axis cannot show (must be > 0)", o->ymin);
    if (o->ylog && o->ymax <= 0.0)
        return tt__err(TT_EARG, "plot: ymax = %g, which a log y axis cannot show (must be > 0)", o->ymax);
    if (o->ymin >= o->ymax)
        return tt__err(TT_EARG, "plot: ymin = %g is not below ymax = %g", o->ymin, o->ymax);
    return TT_OK;
}

/* Checks the series and finds the data ranges (y: with the error bars). */
static tt_status plot_check(plot *p, double *xmin, double *xmax, double *ymin, double *ymax)
{
    *xmin = *ymin = INFINITY;
    *xmax = *ymax = -INFINITY;
    if (p->ns <= 0) return tt__err(TT_EARG, "plot: nothing to draw: no series");
    if (p->ns > TT_PLOT_MAX_SERIES)
        return tt__err(TT_EARG, "plot: %d series, at most %d fit one chart (one colour each); "
                       "hint: draw them in two charts", p->ns, TT_PLOT_MAX_SERIES);
    tt_status st = check_fixed(p->o);
    if (st != TT_OK) return st;
    p->skipped = 0;
    double elo = INFINITY, ehi = -INFINITY;
    for (int k = 0; k < p->ns; k++) {
        const tt_plot_series *s = &p->s[k];
        char nm[80];
        series_name(nm, sizeof nm, s, k);
        if (s->ny == 0 || (s->x && s->nx == 0))
            return tt__err(TT_EARG, "plot: series %s is empty (no points)", nm);
        if (s->x && s->nx != s->ny)
            return tt__err(TT_EARG, "plot: series %s has %lld x values and %lld y values; "
                           "hint: one x a y", nm, (long long)s->nx, (long long)s->ny);
        for (int64_t i = 0; i < s->ny; i++) {
            const double x = xv(s, i), y = s->y[i];
            if (!isfinite(x) || !isfinite(y)) { p->skipped++; continue; }
            if ((st = check_point(p->o, nm, i, x, y)) != TT_OK) return st;
            *xmin = fmin(*xmin, x); *xmax = fmax(*xmax, x);
            *ymin = fmin(*ymin, y); *ymax = fmax(*ymax, y);
        }
        if ((st = check_yerr(p, s, nm, &elo, &ehi)) != TT_OK) return st;
    }
    if (!(*xmin <= *xmax))
        return tt__err(TT_EARG, "plot: nothing to draw: no series has a finite point");
    *ymin = fmin(*ymin, elo);
    *ymax = fmax(*ymax, ehi);
    return TT_OK;
}

static void plot_layout(plot *p)
{
    const tt_plot_opts *o = p->o;
    int64_t maxn = 0;
    for (int k = 0; k < p->ns; k++) maxn = p->s[k].ny > maxn ? p->s[k].ny : maxn;
    p->legend = o->legend >= 0 ? o->legend : p->ns > 1;
    p->markers = o->markers >= 0 ? o->markers : maxn <= PL_MARKER_MAX_N;
    p->legend_w = 0;
    for (int k = 0; k < p->ns; k++) {
        char raw[80];
        if (p->s[k].name && p->s[k].name[0]) snprintf(raw, sizeof raw, "%s", p->s[k].name);
        else snprintf(raw, sizeof raw, "series %d", k + 1);
        p->legend_w = imax(p->legend_w, tt_font_fit(p->names[k], sizeof p->names[k], raw, 2, 0,
                                                    PL_LEGEND_TEXT_W));
    }
    p->legend_w += PL_LEGEND_LINE + 10;
    if (p->skipped)
        snprintf(p->note, sizeof p->note, "%lld point%s not finite (NaN or inf): not drawn",
                 (long long)p->skipped, p->skipped == 1 ? "" : "s");

    const int M = PL_MARGIN, cap2 = TT_FONT_CAP * 2;
    const int ytitle_w = o->ytitle && o->ytitle[0] ? TT_FONT_HEIGHT * 2 + PL_AXIS_TITLE_GAP : 0;
    p->ax = M + ytitle_w + p->ya.label_w + PL_TICK_GAP + PL_TICK;
    const int right = p->legend ? PL_LEGEND_GAP + p->legend_w : 0;
    const int W0 = p->ax + PL_AREA_W + right + M + p->xa.label_w / 2;
    tt_font_title_layout(&p->title, o->title, W0 - 2 * M);
    p->W = imax(W0, p->title.w + 2 * M);
    p->top_h = (p->title.nlines ? p->title.h + PL_TITLE_GAP : 0) + (p->skipped ? TT_FONT_LINE * 2 + 6 : 0);
    p->ay = M + p->top_h + (p->ya.log ? PL_SUP_RISE : 0) + TT_FONT_CAP;   /* room for the top label */
    const int xlab_h = PL_TICK + PL_TICK_GAP + (p->xa.log ? PL_SUP_RISE : 0) + cap2;
    const int xtitle_h = o->xtitle && o->xtitle[0] ? PL_AXIS_TITLE_GAP + TT_FONT_HEIGHT * 2 : 0;
    p->H = p->ay + PL_AREA_H + xlab_h + xtitle_h + M;
    p->lx = p->ax + PL_AREA_W + PL_LEGEND_GAP;
    p->ly = p->ay;
}

static double to_px(const axis *a, double v, int origin, int len, int flip)
{
    const double t = ((a->log ? log10(v) : v) - a->lo) / (a->hi - a->lo);
    return flip ? origin + (1.0 - t) * len : origin + t * len;
}

void tt_plot_point(const tt_plot_geom *g, int xlog, int ylog, double x, double y, double *px,
                   double *py)
{
    const double tx = ((xlog ? log10(x) : x) - g->xlo) / (g->xhi - g->xlo);
    const double ty = ((ylog ? log10(y) : y) - g->ylo) / (g->yhi - g->ylo);
    *px = g->ax + tx * g->aw;
    *py = g->ay + (1.0 - ty) * g->ah;
}

/* A marker of shape k % 5 centred on (x, y): circle, square, triangle,
   diamond, triangle down; a white rim keeps it apart from the lines. */
static void draw_marker(tt_canvas *c, int k, double x, double y, uint32_t rgb)
{
    const double r = PL_MARKER_R;
    switch (k % 5) {
    case 0: {
        const int d = (int)(2 * r + 1);
        tt_canvas_round_rect(c, (int)lround(x - r - 0.5), (int)lround(y - r - 0.5), d, d, d / 2, rgb, WHITE, 1);
        break;
    }
    case 1: {
        const int d = (int)(2 * r - 1);
        tt_canvas_fill_rect(c, (int)lround(x - d / 2.0), (int)lround(y - d / 2.0), d, d, rgb);
        break;
    }
    case 2: {
        const double t[6] = { x, y - r - 1, x + r + 1, y + r, x - r - 1, y + r };
        tt_canvas_triangle(c, t, rgb);
        break;
    }
    case 3: {
        const double a[6] = { x, y - r - 1, x + r + 1, y, x - r - 1, y };
        const double b[6] = { x - r - 1, y, x + r + 1, y, x, y + r + 1 };
        tt_canvas_triangle(c, a, rgb);
        tt_canvas_triangle(c, b, rgb);
        break;
    }
    default: {
        const double t[6] = { x - r - 1, y - r, x + r + 1, y - r, x, y + r + 1 };
        tt_canvas_triangle(c, t, rgb);
        break;
    }
    }
}

static void draw_axes(const plot *p, tt_canvas *c)
{
    const int ax = p->ax, ay = p->ay, aw = PL_AREA_W, ah = PL_AREA_H;
    /* grid and ticks */
    for (int k = 0; k < p->xa.nt; k++) {
        const int x = (int)lround(to_px(&p->xa, p->xa.tick[k], ax, aw, 0));
        tt_canvas_fill_rect(c, x, ay, 1, ah, GRID);
        tt_canvas_fill_rect(c, x, ay + ah, 1, PL_TICK, RULE);
        const int w = label_width(&p->xa, k);
        draw_label(c, &p->xa, k, x - w / 2, ay + ah + PL_TICK + PL_TICK_GAP + (p->xa.log ? PL_SUP_RISE : 0));
    }
    for (int k = 0; k < p->ya.nt; k++) {
        const int y = (int)lround(to_px(&p->ya, p->ya.tick[k], ay, ah, 1));
        tt_canvas_fill_rect(c, ax, y, aw, 1, GRID);
        tt_canvas_fill_rect(c, ax - PL_TICK, y, PL_TICK, 1, RULE);
        const int w = label_width(&p->ya, k);
        draw_label(c, &p->ya, k, ax - PL_TICK - PL_TICK_GAP - w, y - TT_FONT_CAP);
    }
    for (int k = 0; k < p->xa.nminor; k++) {
        const int x = (int)lround(ax + (p->xa.minor[k] - p->xa.lo) / (p->xa.hi - p->xa.lo) * aw);
        tt_canvas_fill_rect(c, x, ay + ah, 1, PL_MINOR, RULE);
    }
    for (int k = 0; k < p->ya.nminor; k++) {
        const int y = (int)lround(ay + (1.0 - (p->ya.minor[k] - p->ya.lo) / (p->ya.hi - p->ya.lo)) * ah);
        tt_canvas_fill_rect(c, ax - PL_MINOR, y, PL_MINOR, 1, RULE);
    }
    tt_canvas_frame(c, ax, ay, aw + 1, ah + 1, 1, RULE);
    /* axis titles */
    char fitted[128];
    const tt_plot_opts *o = p->o;
    if (o->xtitle && o->xtitle[0]) {
        const int w = tt_font_fit(fitted, sizeof fitted, o->xtitle, 2, 0, aw);
        const int y = ay + ah + PL_TICK + PL_TICK_GAP + (p->xa.log ? PL_SUP_RISE : 0) + TT_FONT_CAP * 2 +
                      PL_AXIS_TITLE_GAP;
        tt_font_draw(c, ax + (aw - w) / 2, y, fitted, 2, 0, INK_SOFT);
    }
    if (o->ytitle && o->ytitle[0]) {
        const int w = tt_font_fit(fitted, sizeof fitted, o->ytitle, 2, 0, ah);
        tt_font_draw(c, PL_MARGIN, ay + (ah - w) / 2, fitted, 2, TT_FONT_UP, INK_SOFT);
    }
}

/* Neighbouring points of a run in one pixel column reduced to the first,
   the lowest, the highest and the last, in their order (in place): the
   same pixels, at most four points a column, however long the series. */
static int64_t decimate(double (*pt)[2], int64_t n)
{
    int64_t out = 0;
    for (int64_t i = 0, j; i < n; i = j) {
        const double col = floor(pt[i][0]);
        int64_t lo = i, hi = i;
        for (j = i; j < n && floor(pt[j][0]) == col; j++) {
            if (pt[j][1] < pt[lo][1]) lo = j;
            if (pt[j][1] > pt[hi][1]) hi = j;
        }
        int64_t keep[4] = { i, lo < hi ? lo : hi, lo < hi ? hi : lo, j - 1 };
        for (int k = 0; k < 4; k++) {
            if (k > 0 && keep[k] <= keep[k - 1]) continue;   /* already written */
            /* out <= keep[k]: nothing still to read is overwritten */
            pt[out][0] = pt[keep[k]][0];
            pt[out][1] = pt[keep[k]][1];
            out++;
        }
    }
    return out;
}

/* A run of n points as polylines of at most PL_CHUNK points sharing their
   ends: the polyline's cost grows with its points times the pixels it
   spans, and a chunk of a long series spans few. */
#define PL_CHUNK 32
static void draw_run(tt_canvas *c, const double (*pt)[2], int64_t n, uint32_t rgb)
{
    if (n <= PL_CHUNK) {
        tt_canvas_polyline(c, pt, (int)n, PL_LINE_W, rgb);
        return;
    }
    for (int64_t i = 0; i + 1 < n; i += PL_CHUNK - 1) {
        const int64_t m = n - i < PL_CHUNK ? n - i : PL_CHUNK;
        tt_canvas_polyline(c, pt + i, (int)m, PL_LINE_W, rgb);
    }
}

/* Series k's error bars: a line from y - yerr to y + yerr on whole pixels
   (crisp, as wide as PL_BAR_W) with a cap at each end; an end past the
   axis is cut at it and has no cap. */
static void draw_bars(const plot *p, tt_canvas *c, int k)
{
    const tt_plot_series *s = &p->s[k];
    const uint32_t rgb = tt_plot_colour(k);
    const double bottom = p->ay + PL_AREA_H, top = p->ay;
    for (int64_t i = 0; s->yerr && i < s->ny; i++) {
        const double x = xv(s, i), y = s->y[i], e = s->yerr[i];
        if (!isfinite(x) || !isfinite(y) || !(e > 0.0)) continue;
        const double px = round(to_px(&p->xa, x, p->ax, PL_AREA_W, 0));
        const double lo = p->ya.log && y - e <= 0.0 ? HUGE_VAL : round(to_px(&p->ya, y - e, p->ay, PL_AREA_H, 1));
        const double hi = round(to_px(&p->ya, y + e, p->ay, PL_AREA_H, 1));
        const double y0 = fmin(lo, bottom), y1 = fmax(hi, top);
        tt_canvas_line(c, px, y0, px, y1, PL_BAR_W, rgb);
        if (lo <= bottom) tt_canvas_line(c, px - PL_CAP, y0, px + PL_CAP, y0, PL_BAR_W, rgb);
        if (hi >= top) tt_canvas_line(c, px - PL_CAP, y1, px + PL_CAP, y1, PL_BAR_W, rgb);
    }
}

/* Series k: its runs of finite points as polylines, its error bars, then
   the markers. */
static tt_status draw_series(const plot *p, tt_canvas *c, int k)
{
    const tt_plot_series *s = &p->s[k];
    const uint32_t rgb = tt_plot_colour(k);
    double (*pt)[2] = malloc((size_t)s->ny * sizeof *pt);
    if (!pt) return tt__err(TT_ENOMEM, "plot: out of memory for %lld points", (long long)s->ny);
    int64_t n = 0;
    for (int64_t i = 0; i <= s->ny; i++) {
        const int ok = i < s->ny && isfinite(xv(s, i)) && isfinite(s->y[i]);
        if (ok) {
            pt[n][0] = to_px(&p->xa, xv(s, i), p->ax, PL_AREA_W, 0);
            pt[n][1] = to_px(&p->ya, s->y[i], p->ay, PL_AREA_H, 1);
            n++;
        } else if (n) {   /* a run ends */
            draw_run(c, (const double (*)[2])pt, decimate(pt, n), rgb);
            n = 0;
        }
    }
    draw_bars(p, c, k);
    if (p->markers)
        for (int64_t i = 0; i < s->ny; i++)
            if (isfinite(xv(s, i)) && isfinite(s->y[i]))
                draw_marker(c, k, to_px(&p->xa, xv(s, i), p->ax, PL_AREA_W, 0),
                            to_px(&p->ya, s->y[i], p->ay, PL_AREA_H, 1), rgb);
    free(pt);
    return TT_OK;
}

static void draw_legend(const plot *p, tt_canvas *c)
{
    for (int k = 0; k < p->ns; k++) {
        const int y = p->ly + k * PL_LEGEND_PITCH + 11;
        const uint32_t rgb = tt_plot_colour(k);
        tt_canvas_line(c, p->lx, y + 0.5, p->lx + PL_LEGEND_LINE, y + 0.5, PL_LINE_W, rgb);
        if (p->markers) draw_marker(c, k, p->lx + PL_LEGEND_LINE / 2.0, y + 0.5, rgb);
        tt_font_draw(c, p->lx + PL_LEGEND_LINE + 10, y - TT_FONT_CAP, p->names[k], 2, 0, INK);
    }
}

tt_status tt_plot_render(tt_canvas *out, tt_plot_geom *geom, const tt_plot_series *series,
                         int nseries, const tt_plot_opts *opts)
{
    tt_plot_opts dflt;
    if (!opts) { tt_plot_opts_init(&dflt); opts = &dflt; }
    out->w = out->h = 0;
    out->px = NULL;
    out->vec = NULL;
    plot *p = calloc(1, sizeof *p);
    if (!p) return tt__err(TT_ENOMEM, "plot: out of memory");
    p->s = series;
    p->ns = nseries;
    p->o = opts;
    p->xa.log = opts->xlog;
    p->ya.log = opts->ylog;
    double xmin, xmax, ymin, ymax;
    tt_status st = plot_check(p, &xmin, &xmax, &ymin, &ymax);
    if (st == TT_OK) {
        /* as many x ticks as their labels leave room for */
        for (int want = 10; want >= 3; want--) {
            axis_setup(&p->xa, xmin, xmax, p->xa.log ? want : want - 2, (double)NAN, (double)NAN);
            if (tick_gap(&p->xa) >= p->xa.label_w + PL_LABEL_SPACE) break;
        }
        axis_setup(&p->ya, ymin, ymax, p->ya.log ? 10 : 6, opts->ymin, opts->ymax);
        plot_layout(p);
        st = tt_canvas_init(out, p->W, p->H);
    }
    if (st == TT_OK) {
        tt_font_title_draw(out, &p->title, p->W / 2, PL_MARGIN, INK);
        if (p->skipped)
            tt_font_draw(out, (p->W - tt_font_width(p->note, 2, 0)) / 2,
                         PL_MARGIN + (p->title.nlines ? p->title.h + PL_TITLE_GAP : 0), p->note, 2, 0,
                         INK_SOFT);
        draw_axes(p, out);
        for (int k = 0; k < p->ns && st == TT_OK; k++) st = draw_series(p, out, k);
        if (p->legend) draw_legend(p, out);
        if (st != TT_OK) tt_canvas_free(out);
    }
    if (st == TT_OK && geom) {
        memset(geom, 0, sizeof *geom);
        geom->width = p->W;
        geom->height = p->H;
        geom->ax = p->ax; geom->ay = p->ay; geom->aw = PL_AREA_W; geom->ah = PL_AREA_H;
        geom->xlo = p->xa.lo; geom->xhi = p->xa.hi; geom->ylo = p->ya.lo; geom->yhi = p->ya.hi;
        geom->nxticks = p->xa.nt;
        geom->nyticks = p->ya.nt;
        geom->xlabel_w = p->xa.label_w;
        memcpy(geom->xticks, p->xa.tick, sizeof geom->xticks);
        memcpy(geom->yticks, p->ya.tick, sizeof geom->yticks);
        geom->legend_x = p->lx;
        geom->legend_y = p->ly;
        geom->legend_n = p->legend ? p->ns : 0;
        geom->skipped = p->skipped;
    }
    free(p);
    return st;
}

typedef struct plot_call {
    const tt_plot_series *series;
    int nseries;
    const tt_plot_opts *opts;
} plot_call;

static tt_status plot_render_call(tt_canvas *out, const void *ctx)
{
    const plot_call *a = ctx;
    return tt_plot_render(out, NULL, a->series, a->nseries, a->opts);
}

tt_status tt_plot_write(const char *path, const tt_plot_series *series, int nseries,
                        const tt_plot_opts *opts)
{
    const plot_call a = { series, nseries, opts };
    return tt__figure_write("plot", path, plot_render_call, &a, opts ? &opts->meta : NULL);
}
