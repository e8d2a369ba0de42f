/*
** canvas.c — what every figure draws with (core layer): the RGB canvas and
** its primitives (rectangles, anti-aliased lines, hatches), the colour
** maps, numbers and ticks as the figures write them, the messages they
** share, and the one path by which a figure reaches its file. The figure
** kinds are their own files: heatmap.c, bars.c, plot.c, attend.c, flow.c,
** head_groups.c; png.c and svg.c write the pixels and the recording.
*/
#ifdef __linux__
#define _DEFAULT_SOURCE                 /* MADV_HUGEPAGE */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "figure.h"
#include "svg.h"
#include "tt_internal.h"

#define MAX_PIXELS (64L * 1024 * 1024)

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

/* ===== Canvas ===== */

/* Whether new canvases record their drawing for SVG. tt__figure_write turns
   it off while it renders for a PNG path: the list of a big heatmap is tens
   of MB that a PNG never reads. */
static int want_vectors = 1;

/* A fresh 2-4 MB canvas cost a page fault per 4 KiB on first touch (540
   for a 1000x700 figure, a third of lesson 04's CPU time on a VM). So
   canvas buffers are whole 2 MiB blocks that ask Linux for transparent
   huge pages (faulted in 2 MiB at a time where THP is in "madvise" mode; a
   hint whose failure is ignored), and the buffer of a freed canvas is kept
   for the next one, so that reuse does not hang on what malloc does with a
   freed block. Under --max-memory nothing is kept: the cap sees every byte. */
#define CANVAS_BLOCK ((size_t)2 << 20)

static uint8_t *kept_px;                /* one buffer of kept_size bytes, or NULL */
static size_t kept_size;

static uint8_t *canvas_buffer(size_t n, size_t *size)
{
    if (kept_px && kept_size >= n) {
        uint8_t *p = kept_px;
        *size = kept_size;
        kept_px = NULL;
        return p;
    }
    *size = (n + CANVAS_BLOCK - 1) / CANVAS_BLOCK * CANVAS_BLOCK;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    void *p;
    if (posix_memalign(&p, CANVAS_BLOCK, *size) != 0) return NULL;
    (void)madvise(p, *size, MADV_HUGEPAGE);
    return p;
#else
    return aligned_alloc(64, *size);
#endif
}

static void canvas_buffer_free(uint8_t *p, size_t size)
{
    if (p && !tt_get_max_memory() && size >= kept_size) {
        free(kept_px);                  /* the larger of the two is kept */
        kept_px = p;
        kept_size = size;
        return;
    }
    free(p);
}

tt_status tt_canvas_init(tt_canvas *c, int w, int h)
{
    c->w = c->h = 0;
    c->px = NULL;
    c->px_size = 0;
    c->vec = NULL;
    if (w <= 0 || h <= 0 || (long)w * (long)h > MAX_PIXELS)
        return tt__err(TT_ENOMEM, "figure: a %dx%d image is too large", w, h);
    size_t n = (size_t)w * (size_t)h * 3;
    if (tt__mem_reserve((int64_t)n)) {
        char why[200];
        snprintf(why, sizeof why, "%s", tt_errmsg());
        return tt__err(TT_ENOMEM, "figure: a %dx%d image: %s", w, h, why);
    }
    c->px = canvas_buffer(n, &c->px_size);
    if (!c->px) {
        tt__mem_release((int64_t)n);
        return tt__err(TT_ENOMEM, "figure: out of memory for a %dx%d image", w, h);
    }
    memset(c->px, 0xff, n);
    c->vec = want_vectors ? tt__svg_new() : NULL;   /* NULL: pixels only, and an SVG write says why */
    c->w = w;
    c->h = h;
    return TT_OK;
}

void tt_canvas_free(tt_canvas *c)
{
    if (!c) return;
    if (c->px) tt__mem_release((int64_t)c->w * c->h * 3);
    canvas_buffer_free(c->px, c->px_size);
    tt__svg_free(c->vec);
    c->px = NULL;
    c->px_size = 0;
    c->vec = NULL;
    c->w = c->h = 0;
}

static uint8_t *at(const tt_canvas *c, int x, int y)
{
    return c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
}

uint32_t tt_canvas_get(const tt_canvas *c, int x, int y)
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return 0xffffffu;
    const uint8_t *p = at(c, x, y);
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static void put(tt_canvas *c, int x, int y, uint32_t rgb)
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    uint8_t *p = at(c, x, y);
    p[0] = (uint8_t)(rgb >> 16);
    p[1] = (uint8_t)(rgb >> 8);
    p[2] = (uint8_t)rgb;
}


/* put for the figure files: one pixel, not recorded for SVG. */
void tt__canvas_put(tt_canvas *c, int x, int y, uint32_t rgb)
{
    put(c, x, y, rgb);
}

/* Mixes rgb over the pixel with coverage a in [0, 1]. */
static void blend(tt_canvas *c, int x, int y, uint32_t rgb, double a)
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h || a <= 0.0) return;
    if (a >= 1.0) { put(c, x, y, rgb); return; }
    uint8_t *p = at(c, x, y);
    for (int k = 0; k < 3; k++) {
        const double src = (double)((rgb >> (16 - 8 * k)) & 0xff);
        p[k] = (uint8_t)lround(p[k] + (src - p[k]) * a);
    }
}

/* Pixels only: the primitives record themselves once, then draw with this. */
static void fill_px(tt_canvas *c, int x, int y, int w, int h, uint32_t rgb)
{
    int x1 = x + w, y1 = y + h;
    if (x < 0) x = 0;
    if (y < 0) y = 0;
    if (x1 > c->w) x1 = c->w;
    if (y1 > c->h) y1 = c->h;
    if (x >= x1 || y >= y1) return;
    const uint8_t r = (uint8_t)(rgb >> 16), g = (uint8_t)(rgb >> 8), b = (uint8_t)rgb;
    for (int yy = y; yy < y1; yy++) {
        uint8_t *p = at(c, x, yy);
        for (int xx = x; xx < x1; xx++, p += 3) { p[0] = r; p[1] = g; p[2] = b; }
    }
}

/* Clips a rectangle to the canvas; 0 when nothing is left. */
static int clip(const tt_canvas *c, int *x, int *y, int *w, int *h)
{
    const int x1 = imin(*x + *w, c->w), y1 = imin(*y + *h, c->h);
    *x = imax(*x, 0);
    *y = imax(*y, 0);
    *w = x1 - *x;
    *h = y1 - *y;
    return *w > 0 && *h > 0;
}

void tt_canvas_fill_rect(tt_canvas *c, int x, int y, int w, int h, uint32_t rgb)
{
    if (!clip(c, &x, &y, &w, &h)) return;
    tt__svg_rect(c->vec, x, y, w, h, rgb);
    fill_px(c, x, y, w, h, rgb);
}

void tt_canvas_frame(tt_canvas *c, int x, int y, int w, int h, int t, uint32_t rgb)
{
    tt__svg_frame(c->vec, x, y, w, h, t, rgb);
    fill_px(c, x, y, w, t, rgb);
    fill_px(c, x, y + h - t, w, t, rgb);
    fill_px(c, x, y, t, h, rgb);
    fill_px(c, x + w - t, y, t, h, rgb);
}

static double clamp01(double v) { return v < 0.0 ? 0.0 : v > 1.0 ? 1.0 : v; }

void tt_canvas_line(tt_canvas *c, double x0, double y0, double x1, double y1,
                    double width, uint32_t rgb)
{
    tt__svg_line(c->vec, x0, y0, x1, y1, width, rgb);
    /* coverage from the distance of each pixel centre to the segment */
    const double hw = width / 2.0, dx = x1 - x0, dy = y1 - y0;
    const double len2 = dx * dx + dy * dy;
    const int xa = (int)floor(fmin(x0, x1) - hw - 1.0), xb = (int)ceil(fmax(x0, x1) + hw + 1.0);
    const int ya = (int)floor(fmin(y0, y1) - hw - 1.0), yb = (int)ceil(fmax(y0, y1) + hw + 1.0);
    for (int y = ya < 0 ? 0 : ya; y <= yb && y < c->h; y++)
        for (int x = xa < 0 ? 0 : xa; x <= xb && x < c->w; x++) {
            const double px = x + 0.5, py = y + 0.5;
            double t = len2 > 0.0 ? ((px - x0) * dx + (py - y0) * dy) / len2 : 0.0;
            t = clamp01(t);
            const double d = hypot(px - (x0 + t * dx), py - (y0 + t * dy));
            blend(c, x, y, rgb, clamp01(hw + 0.5 - d));
        }
}

/* The x range of row py that segment p-q can reach: the part of the
   segment within reach of the row, widened by reach and a pixel for
   rounding. Outside it a pixel's coverage is 0, so a diagonal segment
   visits a band along itself, not its bounding box. */
static void segment_span(const double *p, const double *q, double py, double reach,
                         double *xa, double *xb)
{
    double t0 = 0.0, t1 = 1.0;
    const double dy = q[1] - p[1];
    if (dy != 0.0) {
        t0 = clamp01((py - reach - p[1]) / dy);
        t1 = clamp01((py + reach - p[1]) / dy);
    }
    const double x0 = p[0] + t0 * (q[0] - p[0]), x1 = p[0] + t1 * (q[0] - p[0]);
    *xa = fmin(x0, x1) - reach - 1.0;
    *xb = fmax(x0, x1) + reach + 1.0;
}

void tt_canvas_polyline(tt_canvas *c, const double (*pt)[2], int n, double width, uint32_t rgb)
{
    /* one blend a pixel, from its distance to the nearest segment: joints
       do not darken as they would with a line per segment */
    if (n < 1) return;
    tt__svg_polyline(c->vec, pt, n, width, rgb);
    const double hw = width / 2.0, reach = hw + 1.0;
    const int nseg = n > 1 ? n - 1 : 1;
    double ya = pt[0][1], yb = pt[0][1];
    for (int k = 1; k < n; k++) { ya = fmin(ya, pt[k][1]); yb = fmax(yb, pt[k][1]); }
    for (int y = imax((int)floor(ya - reach), 0); y <= (int)ceil(yb + reach) && y < c->h; y++) {
        const double py = y + 0.5;
        double xa = 1e18, xb = -1e18;
        for (int k = 0; k < nseg; k++) {
            const double *p = pt[k], *q = pt[n > 1 ? k + 1 : k];
            if (py < fmin(p[1], q[1]) - reach || py > fmax(p[1], q[1]) + reach) continue;
            double sa, sb;
            segment_span(p, q, py, reach, &sa, &sb);
            xa = fmin(xa, sa);
            xb = fmax(xb, sb);
        }
        if (xa > xb) continue;
        for (int x = imax((int)floor(xa), 0); x <= (int)ceil(xb) && x < c->w; x++) {
            const double px = x + 0.5;
            double d = 1e18;
            for (int k = 0; k < nseg; k++) {
                const double *p = pt[k], *q = pt[n > 1 ? k + 1 : k];
                /* a segment more than reach away along x or y cannot be the
                   nearest one of a pixel it covers */
                if (py < fmin(p[1], q[1]) - reach || py > fmax(p[1], q[1]) + reach ||
                    px < fmin(p[0], q[0]) - reach || px > fmax(p[0], q[0]) + reach) continue;
                const double dx = q[0] - p[0], dy = q[1] - p[1], len2 = dx * dx + dy * dy;
                const double t = len2 > 0.0 ? clamp01(((px - p[0]) * dx + (py - p[1]) * dy) / len2) : 0.0;
                d = fmin(d, hypot(px - (p[0] + t * dx), py - (p[1] + t * dy)));
            }
            blend(c, x, y, rgb, clamp01(hw + 0.5 - d));
        }
    }
}

static double edge(double ax, double ay, double bx, double by, double px, double py)
{
    return (bx - ax) * (py - ay) - (by - ay) * (px - ax);
}

void tt_canvas_triangle(tt_canvas *c, const double xy[6], uint32_t rgb)
{
    const int xa = (int)floor(fmin(xy[0], fmin(xy[2], xy[4]))), xb = (int)ceil(fmax(xy[0], fmax(xy[2], xy[4])));
    const int ya = (int)floor(fmin(xy[1], fmin(xy[3], xy[5]))), yb = (int)ceil(fmax(xy[1], fmax(xy[3], xy[5])));
    const double area = edge(xy[0], xy[1], xy[2], xy[3], xy[4], xy[5]);
    if (area == 0.0) return;
    tt__svg_triangle(c->vec, xy, rgb);
    for (int y = ya; y <= yb; y++)
        for (int x = xa; x <= xb; x++) {
            int in = 0;   /* 4x4 samples a pixel */
            for (int s = 0; s < 16; s++) {
                const double px = x + (s % 4 + 0.5) / 4.0, py = y + (s / 4 + 0.5) / 4.0;
                const double e0 = edge(xy[0], xy[1], xy[2], xy[3], px, py) * area;
                const double e1 = edge(xy[2], xy[3], xy[4], xy[5], px, py) * area;
                const double e2 = edge(xy[4], xy[5], xy[0], xy[1], px, py) * area;
                in += e0 >= 0.0 && e1 >= 0.0 && e2 >= 0.0;
            }
            blend(c, x, y, rgb, in / 16.0);
        }
}

void tt_canvas_round_rect(tt_canvas *c, int x, int y, int w, int h, int r,
                          uint32_t fill, uint32_t border, int bw)
{
    tt__svg_round_rect(c->vec, x, y, w, h, r, fill, border, bw);
    const double cx = x + w / 2.0, cy = y + h / 2.0;
    const double hx = w / 2.0 - r, hy = h / 2.0 - r;
    for (int yy = y; yy < y + h; yy++)
        for (int xx = x; xx < x + w; xx++) {
            /* signed distance to the rounded box (negative inside); hypot(v, 0)
               is v exactly, so only the corners pay for hypot */
            const double qx = fabs(xx + 0.5 - cx) - hx, qy = fabs(yy + 0.5 - cy) - hy;
            const double ox = fmax(qx, 0.0), oy = fmax(qy, 0.0);
            const double len = ox == 0.0 ? oy : oy == 0.0 ? ox : hypot(ox, oy);
            const double out = len + fmin(fmax(qx, qy), 0.0) - r;
            if (bw > 0) {
                blend(c, xx, yy, border, clamp01(0.5 - out));
                blend(c, xx, yy, fill, clamp01(0.5 - (out + bw)));
            } else {
                blend(c, xx, yy, fill, clamp01(0.5 - out));
            }
        }
}

void tt_canvas_hatch(tt_canvas *c, int x, int y, int w, int h)
{
    if (!clip(c, &x, &y, &w, &h)) return;
    tt__svg_hatch(c->vec, x, y, w, h, 0);
    for (int yy = y; yy < y + h; yy++)
        for (int xx = x; xx < x + w; xx++)
            put(c, xx, yy, (xx + yy) % 8 < 3 ? TT_FIG_HATCH_DARK : TT_FIG_HATCH_LIGHT);
}

/* Mask kinds: a light background and strokes, each kind its own colour
   and pattern, so that they tell apart in grey print too. */
static const uint32_t MASK_BG[TT_FIG_MASK_KINDS] = { 0xf6e7d2u, 0xdfe8f3u, 0xeadff0u, 0xdff0e0u };
static const uint32_t MASK_INK[TT_FIG_MASK_KINDS] = { 0xb0641eu, 0x2e5d92u, 0x7b4a9cu, 0x2f7d3bu };

uint32_t tt__mask_rgb(int kind, int ink)
{
    return (ink ? MASK_INK : MASK_BG)[kind];
}

static int mask_stroke(int kind, int x, int y)
{
    switch (kind) {
    case 0: return (x + y) % 8 < 2;                  /* diagonal / */
    case 1: return x % 7 == 0 || y % 7 == 0;         /* cross hatch */
    case 2: return ((x - y) % 8 + 8) % 8 < 2;        /* diagonal \ */
    default: return x % 4 < 2 && y % 4 < 2;          /* dots */
    }
}

/* The strokes of kinds over a rectangle; with_bg, in their colours on the
   lowest kind's background, else in white over what is there. */
static void hatch_kinds(tt_canvas *c, int x, int y, int w, int h, unsigned kinds, int with_bg)
{
    kinds &= (1u << TT_FIG_MASK_KINDS) - 1;
    if (!kinds || !clip(c, &x, &y, &w, &h)) return;
    tt__svg_hatch(c->vec, x, y, w, h, with_bg ? kinds : kinds | TT_SVG_HATCH_STROKES);
    int first = 0;
    while (!(kinds >> first & 1)) first++;
    for (int yy = y; yy < y + h; yy++)
        for (int xx = x; xx < x + w; xx++) {
            uint32_t rgb = MASK_BG[first];
            int stroke = 0;
            for (int k = 0; k < TT_FIG_MASK_KINDS; k++)
                if ((kinds >> k & 1) && mask_stroke(k, xx, yy)) rgb = with_bg ? MASK_INK[k] : 0xffffffu, stroke = 1;
            if (with_bg || stroke) put(c, xx, yy, rgb);
        }
}

void tt_canvas_hatch_kinds(tt_canvas *c, int x, int y, int w, int h, unsigned kinds)
{
    hatch_kinds(c, x, y, w, h, kinds, 1);
}

void tt_canvas_hatch_strokes(tt_canvas *c, int x, int y, int w, int h, unsigned kinds)
{
    hatch_kinds(c, x, y, w, h, kinds, 0);
}

/* ===== Colour maps ===== */

/* viridis (van der Walt & Smith, matplotlib 2.0) at t = 0, 0.1, ..., 1 */
static const uint8_t VIRIDIS[11][3] = {
    { 68, 1, 84 }, { 72, 36, 117 }, { 65, 68, 135 }, { 53, 95, 141 }, { 42, 120, 142 },
    { 33, 145, 140 }, { 34, 168, 132 }, { 68, 191, 112 }, { 122, 209, 81 },
    { 189, 223, 38 }, { 253, 231, 37 },
};

/* ColorBrewer RdBu, 11 classes (Brewer), reversed: low blue, high red */
static const uint8_t DIVERGING[11][3] = {
    { 5, 48, 97 }, { 33, 102, 172 }, { 67, 147, 195 }, { 146, 197, 222 },
    { 209, 229, 240 }, { 247, 247, 247 }, { 253, 219, 199 }, { 244, 165, 130 },
    { 214, 96, 77 }, { 178, 24, 43 }, { 103, 0, 31 },
};

int tt_cmap_from_name(const char *name)
{
    if (!strcmp(name, "viridis")) return TT_CMAP_VIRIDIS;
    if (!strcmp(name, "diverging") || !strcmp(name, "coolwarm") || !strcmp(name, "RdBu"))
        return TT_CMAP_DIVERGING;
    if (!strcmp(name, "gray") || !strcmp(name, "grey")) return TT_CMAP_GRAY;
    return -1;
}

uint32_t tt_cmap_rgb(tt_cmap map, double t)
{
    if (isnan(t)) return TT_FIG_NAN_RGB;
    t = clamp01(t);
    if (map == TT_CMAP_GRAY) {
        const uint32_t v = (uint32_t)lround(t * 255.0);
        return v << 16 | v << 8 | v;
    }
    const uint8_t (*tab)[3] = map == TT_CMAP_DIVERGING ? DIVERGING : VIRIDIS;
    const double f = t * 10.0;
    int i = (int)f;
    if (i > 9) i = 9;
    const double u = f - i;
    uint32_t rgb = 0;
    for (int k = 0; k < 3; k++)
        rgb = rgb << 8 | (uint32_t)lround(tab[i][k] + (tab[i + 1][k] - tab[i][k]) * u);
    return rgb;
}

double tt_cmap_norm(double v, double vmin, double vmax)
{
    if (isnan(v)) return v;
    if (isinf(v)) return v > 0 ? 1.0 : 0.0;
    if (!(vmax > vmin)) return 1.0;
    /* in halves: exact, and no overflow for ends near +-DBL_MAX */
    return clamp01((v / 2 - vmin / 2) / (vmax / 2 - vmin / 2));
}

/* seaborn's "deep" palette */
static const uint32_t DEEP[TT_FIG_NCOLOURS] = {
    0x4c72b0u, 0xdd8452u, 0x55a868u, 0xc44e52u, 0x8172b3u, 0x937860u, 0xda8bc3u, 0x8c8c8cu,
};

uint32_t tt_fig_colour(int k)
{
    return DEEP[((k % TT_FIG_NCOLOURS) + TT_FIG_NCOLOURS) % TT_FIG_NCOLOURS];
}

double tt_rgb_luma(uint32_t rgb)
{
    return (0.2126 * ((rgb >> 16) & 0xff) + 0.7152 * ((rgb >> 8) & 0xff) + 0.0722 * (rgb & 0xff))
           / 255.0;
}

/* ===== Numbers and ticks ===== */

void tt__fig_fmt_num(char *buf, size_t n, double v, int decimals)
{
    if (isnan(v)) snprintf(buf, n, "NaN");
    else if (isinf(v)) snprintf(buf, n, v > 0 ? "inf" : "-inf");
    else if (fabs(v) >= 1e6) snprintf(buf, n, "%.2e", v);
    else snprintf(buf, n, "%.*f", decimals, v);
    if (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1)) /* "-0.00" */
        memmove(buf, buf + 1, strlen(buf));
}

/* Decimals that show values of this size and spread: integers none. */
int tt__fig_auto_decimals(const float *v, int64_t n, double maxabs)
{
    int integral = 1;
    for (int64_t i = 0; i < n && integral; i++)
        if (isfinite(v[i]) && v[i] != floorf(v[i])) integral = 0;
    if (integral) return 0;
    if (maxabs >= 100.0) return 0;
    if (maxabs >= 10.0) return 1;
    return 2;
}

/* Up to max "nice" ticks (1, 2, 5 x 10^k steps) in [lo, hi]; returns the
   count and the decimals their labels need. */
int tt__fig_nice_ticks(double lo, double hi, int want, double *ticks, int max, int *decimals)
{
    const double raw = (hi - lo) / want;
    if (!(raw > 0.0 && isfinite(raw))) {   /* a range past the doubles: its two ends */
        ticks[0] = lo;
        ticks[1] = hi;
        *decimals = 2;
        return max >= 2 ? 2 : 0;
    }
    const double mag = pow(10.0, floor(log10(raw)));
    const double r = raw / mag;
    const double step = (r < 1.5 ? 1.0 : r < 3.0 ? 2.0 : r < 7.0 ? 5.0 : 10.0) * mag;
    const int d = -(int)floor(log10(step) + 1e-9);
    *decimals = d > 0 ? d : 0;
    int n = 0;
    for (double t = ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9 && n < max; t += step)
        ticks[n++] = fabs(t) < step * 1e-9 ? 0.0 : t;
    return n;
}

/* The range of the finite values, and whether -inf or NaN occur. */
tt__fig_stats tt__fig_data_stats(const float *v, int64_t n)
{
    tt__fig_stats s = { INFINITY, -INFINITY, 0.0, 0, 0, 0 };
    for (int64_t i = 0; i < n; i++) {
        const double x = v[i];
        if (isfinite(x)) {
            if (x < s.fmin) s.fmin = x;
            if (x > s.fmax) s.fmax = x;
            s.nfinite++;
        } else if (isnan(x)) {
            s.has_nan = 1;
        } else if (x < 0) {
            s.has_ninf = 1;
        }
    }
    if (s.nfinite) s.maxabs = fmax(fabs(s.fmin), fabs(s.fmax));
    return s;
}

/* ===== The one way to a file ===== */

tt_status tt__figure_save(const char *what, const char *path, const tt_canvas *c,
                          const tt_png_meta *meta)
{
    tt_status st = tt_figure_path_is_svg(path) ? tt_svg_write(path, c, meta)
                                               : tt_png_write_rgb(path, c->px, c->w, c->h, 3 * c->w, meta);
    if (st != TT_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tt_errmsg());   /* tt__err overwrites it */
        tt__err(st, "%s: %s", what, msg);
    }
    return st;
}

tt_status tt__figure_write(const char *what, const char *path, tt_figure_render_fn render,
                           const void *ctx, const tt_png_meta *meta)
{
    tt_canvas c;
    const int vec = want_vectors;
    want_vectors = tt_figure_path_is_svg(path);
    tt_status st = render(&c, ctx);
    want_vectors = vec;
    if (st != TT_OK) return st;
    st = tt__figure_save(what, path, &c, meta);
    tt_canvas_free(&c);
    return st;
}

/* ===== Messages ===== */

/* "scores [Nq=4,Nk=4]", or the shape alone when the tensor has no label. */
const char *tt__fig_what(char *buf, size_t n, const char *name, const char *shape)
{
    if (name && name[0]) snprintf(buf, n, "%.60s %s", name, shape);
    else snprintf(buf, n, "%s", shape);
    return buf;
}

/* A label list of the wrong length: given entries of option opt for want
   units ("column") of each ("" or " of each panel") of the tensor. Without
   the error, a short list ends in numbers and a long one loses its tail
   without a word, which hides tokens of another sentence and swapped
   rows and columns. */
tt_status tt__fig_count_err(const char *op, const char *opt, int given, int64_t want,
                            const char *unit, const char *each, const char *tensor, const char *hint)
{
    const size_t len = strlen(opt) - (given == 1);   /* "1 xlabel", "3 xlabels" */
    return tt__err(TT_EARG, "%s: %d %.*s for the %lld %s%s%s of %s; hint: %s", op, given, (int)len,
                   opt, (long long)want, unit, want == 1 ? "" : "s", each, tensor, hint);
}
