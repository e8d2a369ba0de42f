/*
** figure.c — heatmaps and bar charts drawn into an RGB canvas (core layer).
** The canvas primitives and colour maps here are shared with flow.c; the
** PNG encoding lives in png.c. Inputs are plain float arrays, not tensors.
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
#include "font.h"
#include "svg.h"
#include "tt_internal.h"

#define MAX_PIXELS (64L * 1024 * 1024)

/* Palette of the figure furniture. */
#define INK      0x1f1f1fu   /* titles, labels */
#define INK_SOFT 0x555555u   /* axis titles, notes */
#define RULE     0x9a9a9au   /* frames, ticks */
#define GRID     0xe4e4e4u   /* bar chart grid lines */

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

void tt_canvas_hatch_kinds(tt_canvas *c, int x, int y, int w, int h, unsigned kinds)
{
    kinds &= (1u << TT_FIG_MASK_KINDS) - 1;
    if (!kinds || !clip(c, &x, &y, &w, &h)) return;
    tt__svg_hatch(c->vec, x, y, w, h, kinds);
    int first = 0;
    while (!(kinds >> first & 1)) first++;
    for (int yy = y; yy < y + h; yy++)
        for (int xx = x; xx < x + w; xx++) {
            uint32_t rgb = MASK_BG[first];
            for (int k = 0; k < TT_FIG_MASK_KINDS; k++)
                if ((kinds >> k & 1) && mask_stroke(k, xx, yy)) rgb = MASK_INK[k];
            put(c, xx, yy, rgb);
        }
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

static void fmt_num(char *buf, size_t n, double v, int decimals)
{
    if (isnan(v)) snprintf(buf, n, "NaN");
    else if (isinf(v)) snprintf(buf, n, v > 0 ? "inf" : "-inf");
    else if (fabs(v) >= 1e6) snprintf(buf, n, "%.2e", v);
    else snprintf(buf, n, "%.*f", decimals, v);
    if (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1)) /* "-0.00" */
        memmove(buf, buf + 1, strlen(buf));
}

/* Decimals that show values of this size and spread: integers none. */
static int auto_decimals(const float *v, int64_t n, double maxabs)
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
static int nice_ticks(double lo, double hi, int want, double *ticks, int max, int *decimals)
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

void tt__fig_fmt_num(char *buf, size_t n, double v, int decimals)
{
    fmt_num(buf, n, v, decimals);
}

int tt__fig_nice_ticks(double lo, double hi, int want, double *ticks, int max, int *decimals)
{
    return nice_ticks(lo, hi, want, ticks, max, decimals);
}

/* Smallest of 1, 2, 5, 10, 20, 50, ... that is >= x. */
static int64_t nice_up(double x)
{
    for (int64_t m = 1;; m *= 10) {
        if (x <= m) return m;
        if (x <= 2 * m) return 2 * m;
        if (x <= 5 * m) return 5 * m;
    }
}


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
static const char *what(char *buf, size_t n, const char *name, const char *shape)
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
static tt_status count_err(const char *op, const char *opt, int given, int64_t want,
                           const char *unit, const char *each, const char *tensor, const char *hint)
{
    const size_t len = strlen(opt) - (given == 1);   /* "1 xlabel", "3 xlabels" */
    return tt__err(TT_EARG, "%s: %d %.*s for the %lld %s%s%s of %s; hint: %s", op, given, (int)len,
                   opt, (long long)want, unit, want == 1 ? "" : "s", each, tensor, hint);
}

/* ===== Heatmap ===== */

/* Margin between an annotation and its cell's edges, by font scale. */
static const int ANNOT_PAD[3] = { 0, 5, 12 };

/* Size in pixels that a panel aims at, by panel count and grid columns. */
static int panel_target(int64_t P, int gcols)
{
    return P == 1 ? 560 : gcols <= 2 ? 440 : gcols <= 4 ? 300 : 220;
}

/* Width of the widest annotation of vals at this font scale. */
static int widest_number(const float *vals, int64_t n, int decimals, int scale)
{
    int w = 0;
    char last[32] = "";
    for (int64_t k = 0; k < n; k++) {
        char buf[32];
        fmt_num(buf, sizeof buf, vals[k], decimals);
        if (!strcmp(buf, last)) continue;   /* runs of equal values are common */
        w = imax(w, tt_font_width(buf, scale, 0));
        memcpy(last, buf, sizeof last);
    }
    return w;
}

void tt_heatmap_opts_init(tt_heatmap_opts *o)
{
    memset(o, 0, sizeof *o);
    o->annotate = -1;
    o->colorbar = -1;
    o->decimals = -1;
    o->max_annotate = 16;
}

/* One axis of tick labels: which data indices get a label, and how. */
typedef struct axis_labels {
    int n;                 /* labels shown */
    int64_t *idx;          /* data index of each */
    char (*text)[48];
    int scale, vertical, step_gt1;
    int extent;            /* widest label (along its own direction) */
} axis_labels;

static void axis_free(axis_labels *a)
{
    free(a->idx);
    free(a->text);
}

/* Picks the labels of an axis of n data cells at px pixels each (px may be
   fractional when downsampled); names may be NULL. cross: room along the
   text direction is unlimited (row labels) or the label must fit the pitch
   (column labels: else vertical). */
static tt_status axis_pick(axis_labels *a, int64_t n, double px, const char *const *names,
                           int nnames, int columns)
{
    memset(a, 0, sizeof *a);
    const int tokens = names != NULL && nnames > 0;
    int64_t step = 1;
    a->scale = 2;
    if (tokens) {
        /* thinner cells: every step-th token at full size, step as small
           as lets the glyphs (descenders included) sit clear of each other:
           every other one on the 9-pixel cells of a panel grid */
        if (px < 22.0) {
            if (px >= 11.0) a->scale = 1;
            else step = (int64_t)ceil(2.0 * TT_FONT_HEIGHT / px);
        }
        if (columns) {   /* across when the labels fit their pitch */
            int widest = 0;
            for (int64_t i = 0; i < n && i < nnames; i++)
                if (names[i]) widest = imax(widest, tt_font_width(names[i], 2, 0));
            if (widest + 6 <= px * (double)step) a->vertical = 0;
            else a->vertical = 1;
        }
    } else {
        /* numbers: horizontal, thinned so that they do not touch */
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)n);
        const double need = columns ? tt_font_width(buf, 2, 0) + 16.0 : 28.0;
        if (px < need) step = nice_up(need / px);
    }
    a->step_gt1 = step > 1;
    int64_t cap = n / step + 2;
    a->idx = malloc((size_t)cap * sizeof *a->idx);
    a->text = malloc((size_t)cap * sizeof *a->text);
    if (!a->idx || !a->text) {
        axis_free(a);
        return tt__err(TT_ENOMEM, "heatmap: out of memory for labels");
    }
    const int maxlen = a->scale == 2 ? 150 : 90;
    for (int64_t i = 0; i < n; i++) {
        int show;
        if (step == 1) show = 1;
        else if (tokens) show = i % step == 0;
        else show = (i + 1) % step == 0 || (i == 0 && step >= 10);
        if (!show) continue;
        const char *s = tokens && i < nnames && names[i] ? names[i] : NULL;
        char num[24];
        if (!s) { snprintf(num, sizeof num, "%lld", (long long)i + 1); s = num; }
        int w = tt_font_fit(a->text[a->n], sizeof a->text[a->n], s, a->scale, 0, maxlen);
        a->extent = imax(a->extent, w);
        a->idx[a->n++] = i;
    }
    return TT_OK;
}

typedef struct stats {
    double fmin, fmax, maxabs;
    int64_t nfinite;
    int has_ninf, has_nan;
} stats;

static stats data_stats(const float *v, int64_t n)
{
    stats s = { INFINITY, -INFINITY, 0.0, 0, 0, 0 };
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

static double src_at(const tt_fig_src *src, int64_t off)
{
    return src->f32 ? (double)src->f32[off] : src->b8[off] ? 1.0 : 0.0;
}

/* One pass over src [P, R, C] into the shown grid dst [P, rows, cols],
   each shown cell the block mean or max of br x bc data cells: memory
   grows with the grid, never with the tensor. Mean of the finite values;
   a block with none is NaN if it holds a NaN, else its infinity; in a
   block max, +inf wins. */
static tt_status gather(float *dst, const tt_fig_src *src, int64_t P, int64_t R, int64_t C,
                        int64_t br, int64_t bc, int rows, int cols, int use_max)
{
    const int64_t sp = src->stride[0], sr = src->stride[1], sc = src->stride[2];
    if (br == 1 && bc == 1) {   /* every cell shown: a strided copy */
        for (int64_t p = 0; p < P; p++)
            for (int64_t r = 0; r < R; r++) {
                float *o = dst + (p * R + r) * C;
                const int64_t base = p * sp + r * sr;
                if (src->f32) for (int64_t c = 0; c < C; c++) o[c] = src->f32[base + c * sc];
                else for (int64_t c = 0; c < C; c++) o[c] = src->b8[base + c * sc] ? 1.0f : 0.0f;
            }
        return TT_OK;
    }
    double *acc = malloc((size_t)cols * sizeof *acc);
    int64_t *cnt = malloc((size_t)cols * sizeof *cnt);
    uint8_t *seen = malloc((size_t)cols);   /* 1 NaN, 2 +inf, 4 -inf */
    if (!acc || !cnt || !seen) {
        free(acc); free(cnt); free(seen);
        return tt__err(TT_ENOMEM, "heatmap: out of memory downsampling");
    }
    for (int64_t p = 0; p < P; p++)
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) { acc[j] = use_max ? -HUGE_VAL : 0.0; cnt[j] = 0; seen[j] = 0; }
            for (int64_t r = i * br; r < (i + 1) * br && r < R; r++) {
                const int64_t base = p * sp + r * sr;
                for (int j = 0; j < cols; j++) {
                    const int64_t c1 = (j + 1) * bc < C ? (j + 1) * bc : C;
                    if (src->b8) {   /* bool: finite 0/1, the common big mask */
                        int64_t ones = 0;
                        for (int64_t c = j * bc; c < c1; c++) ones += src->b8[base + c * sc] != 0;
                        if (use_max) { if (ones && acc[j] < 1.0) acc[j] = 1.0; else if (acc[j] < 0.0) acc[j] = 0.0; }
                        else acc[j] += (double)ones;
                        cnt[j] += c1 - j * bc;
                        continue;
                    }
                    for (int64_t c = j * bc; c < c1; c++) {
                        const double x = src->f32[base + c * sc];
                        if (isfinite(x)) {
                            if (use_max) { if (x > acc[j]) acc[j] = x; }
                            else acc[j] += x;
                            cnt[j]++;
                        } else {
                            seen[j] |= isnan(x) ? 1 : x > 0 ? 2 : 4;
                        }
                    }
                }
            }
            float *o = dst + ((size_t)p * (size_t)rows + (size_t)i) * (size_t)cols;
            for (int j = 0; j < cols; j++) {
                if (cnt[j]) o[j] = (float)(use_max ? acc[j] : acc[j] / (double)cnt[j]);
                else o[j] = (seen[j] & 1) ? NAN : (seen[j] & 2) ? INFINITY : -INFINITY;
                if (use_max && (seen[j] & 2)) o[j] = INFINITY;
            }
        }
    free(acc); free(cnt); free(seen);
    return TT_OK;
}

/* ORs bit into bits [P, rows, cols] for each shown cell whose block holds
   a true (nonzero) mask element. */
static void gather_mask(uint8_t *bits, uint8_t bit, const tt_fig_src *m, int64_t P, int64_t R,
                        int64_t C, int64_t br, int64_t bc, int rows, int cols)
{
    for (int64_t p = 0; p < P; p++)
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) {
                uint8_t *b = bits + (p * rows + i) * cols + j;
                for (int64_t r = i * br; r < (i + 1) * br && r < R && !(*b & bit); r++)
                    for (int64_t c = j * bc; c < (j + 1) * bc && c < C; c++)
                        if (src_at(m, p * m->stride[0] + r * m->stride[1] + c * m->stride[2]) != 0.0) {
                            *b |= bit;
                            break;
                        }
            }
}

/* Legend entries right of the grid: what each special look means. */
typedef enum { LEG_NINF, LEG_NAN, LEG_MASK, LEG_CATEGORY } legend_kind;
typedef struct legend_entry {
    legend_kind kind;
    int k;              /* mask kind or category index */
    char text[64];
} legend_entry;
#define LEGEND_MAX (2 + TT_FIG_MASK_KINDS + TT_FIG_NCOLOURS)

static void legend_add(legend_entry *leg, int *n, legend_kind kind, int k, const char *text)
{
    leg[*n].kind = kind;
    leg[*n].k = k;
    tt_font_fit(leg[*n].text, sizeof leg[*n].text, text, 2, 0, 260);
    (*n)++;
}

/* Pixel sizes of the heatmap layout. */
enum {
    HM_MARGIN = 36,            /* outer margin */
    HM_MIN_TEXT_W = 360,       /* a title or note wraps to at least this width */
    HM_MAX_CELL = 120,         /* largest cell side */
    HM_MIN_STRIP = 40,         /* a thin strip (few rows or columns) is at least this thick */
    HM_SEP_MIN = 24,           /* cells this big get white rules between them */
    HM_PANEL_GAP = 36,         /* between panel columns */
    HM_PANEL_GAP_Y = 26,       /* below each row of panels */
    HM_FIT_GAP_Y = 60,         /* room between panel rows assumed when fitting numbers */
    HM_LABEL_GAP = 8,          /* matrix edge to its tick labels */
    HM_LABEL_PAD = 10,         /* a tick-label band is its widest label plus this */
    HM_TICK_LEN = 4,           /* tick marks of thinned labels */
    HM_PATCH_PAD = 3,          /* plain patch round a number on a hatch */
    HM_ANNOT_MIN_PAD = 4,      /* a number needs this much spare width in its cell */
    HM_TITLE_GAP = 16,         /* below the title */
    HM_NOTE_GAP = 8,           /* between the title and the note */
    HM_BAR_GAP = 28,           /* grid to the colour bar or legend */
    HM_BAR_W = 20,             /* colour bar width ... */
    HM_BAR_MIN_H = 160,        /* ... and least height */
    HM_BAR_TICK = 5,           /* colour bar tick length */
    HM_BAR_TEXT_GAP = 10,      /* colour bar to its tick labels */
    HM_SWATCH = 22,            /* legend swatch side */
    HM_LEGEND_PITCH = 32,      /* legend entry spacing */
    HM_LEGEND_TEXT_GAP = 10,   /* swatch to its text */
    HM_LEGEND_GAP = 26,        /* colour bar to the legend under it */
    HM_ROW_SUMS_GAP = 10,      /* between a panel and its row-sum margin */
    HM_MAX_PANELS = 64,
    HM_LUT = 1024,             /* colour lookup entries */
};
#define ROW_SUMS_BG 0xf0f0f0u
#define TILE_INK 0x202020u
#define PATCH_INK 0x3a3a3au    /* numbers over a hatch */
#define WHITE 0xffffffu

/* Everything a heatmap's drawing needs, computed from the data and the
   options by the layout steps; freed by hm_free. */
typedef struct heatmap {
    const tt_heatmap_opts *o;
    int64_t P, R, C;
    char tname[320];           /* "scores [Nq=4,Nk=4]" for messages */
    int cmap, ncat, use_max;
    /* the shown grid: one cell per br x bc block */
    int64_t br, bc, nshown;
    int rows, cols, down, limit;
    float *vals;               /* [P, rows, cols] */
    uint8_t *mbits;            /* mask kinds of each shown cell, or NULL */
    /* colour scale */
    stats s;
    double lo, hi;
    double *rlo, *rhi;         /* per-row ranges (row_scale), or NULL */
    uint32_t lut[HM_LUT];
    /* cells and their numbers */
    int decimals, annotate, ascale, reduced;
    int gcols, grows, cw, ch, mw, mh, sep;
    /* labels, colour bar ticks, note */
    axis_labels ylab, xlab;
    int colorbar, nticks, tickw;
    char ticktext[16][32];
    double tickval[16];
    const char *xtitle, *ytitle;
    char note[160];
    /* row sums */
    double *rsum;
    int rs_scale, rs_w, rs_lab_scale, rs_lab_up, rs_total;
    legend_entry legend[LEGEND_MAX];
    int legend_n;
    /* positions */
    int W, H, ox, gx, gy, ptitle_h, xlab_h, dx, dy, grid_w, grid_h, title_h;
    int bar_x, bar_y, bar_w, bar_h, legend_x, legend_y;
    tt_font_title title;
    char notes[2][TT_FONT_WRAP_LEN];
    int nnotes;
} heatmap;

static const char RS_LABEL[] = "\xce\xa3 row";

static void hm_free(heatmap *h)
{
    axis_free(&h->ylab);
    axis_free(&h->xlab);
    free(h->rlo); free(h->rhi); free(h->vals); free(h->mbits); free(h->rsum);
}

/* 1. check the arguments */
static tt_status hm_check(heatmap *h)
{
    const tt_heatmap_opts *opts = h->o;
    const int64_t P = h->P, R = h->R, C = h->C;
    const char *tname = h->tname;
    if (P <= 0 || R <= 0 || C <= 0)
        return tt__err(TT_EARG, "heatmap: nothing to draw: the tensor %s is empty", tname);
    if (P > HM_MAX_PANELS)
        return tt__err(TT_EARG, "heatmap: %s has %lld panels, too many for one figure (at most 64); "
                       "hint: draw a slice such as x[1] or x:narrow(1, 1, 8)", tname, (long long)P);
    /* label lists: one entry a column, row and panel; the labels of a
       downsampled axis still count its data cells, not its blocks */
    const char *each = P > 1 ? " of each panel" : "";
    if (opts->xlabels && opts->nxlabels != C) {
        const char *hint = opts->nxlabels == R && R != C
            ? "xlabels name the columns (keys), ylabels the rows (queries)"
            : "one label a column (\"\" for a blank one)";
        return count_err("heatmap", "xlabels", opts->nxlabels, C, "column", each, tname, hint);
    }
    if (opts->ylabels && opts->nylabels != R) {
        char hint[96];
        if (R == 1) snprintf(hint, sizeof hint, "this is one row; xlabels name its %lld column%s",
                             (long long)C, C == 1 ? "" : "s");
        else if (opts->nylabels == C) snprintf(hint, sizeof hint, "ylabels name the rows (queries), "
                                               "xlabels the columns (keys)");
        else snprintf(hint, sizeof hint, "one label a row (\"\" for a blank one)");
        return count_err("heatmap", "ylabels", opts->nylabels, R, "row", each, tname, hint);
    }
    if (opts->panel_titles && opts->npanel_titles != P)
        return count_err("heatmap", "panel_titles", opts->npanel_titles, P, "panel", "", tname,
                         "one title a panel (dim 1); title names the whole figure");
    if (opts->has_vmin && !isfinite(opts->vmin))
        return tt__err(TT_EARG, "heatmap: vmin must be a finite number (got %s)",
                       isnan(opts->vmin) ? "NaN" : opts->vmin > 0 ? "inf" : "-inf");
    if (opts->has_vmax && !isfinite(opts->vmax))
        return tt__err(TT_EARG, "heatmap: vmax must be a finite number (got %s)",
                       isnan(opts->vmax) ? "NaN" : opts->vmax > 0 ? "inf" : "-inf");
    if (opts->has_vmin && opts->has_vmax && !(opts->vmin < opts->vmax))
        return tt__err(TT_EARG, "heatmap: vmin (%g) must be less than vmax (%g)",
                       opts->vmin, opts->vmax);
    h->cmap = -1;
    if (opts->cmap && (h->cmap = tt_cmap_from_name(opts->cmap)) < 0)
        return tt__err(TT_EARG, "heatmap: unknown cmap '%s' (use 'viridis', 'diverging' "
                       "or 'gray')", opts->cmap);
    h->ncat = opts->categories ? opts->ncategories : 0;
    /* codes: a block mean would invent categories */
    h->use_max = h->ncat > 0 || (opts->downsample && !strcmp(opts->downsample, "max"));
    if (opts->downsample && strcmp(opts->downsample, "max") && strcmp(opts->downsample, "mean"))
        return tt__err(TT_EARG, "heatmap: unknown downsample '%s' (use 'mean' or 'max')",
                       opts->downsample);
    if (opts->masks && (opts->nmasks < 1 || opts->nmasks > TT_FIG_MASK_KINDS))
        return tt__err(TT_EARG, "heatmap: %d masks; one to %d kinds can be told apart",
                       opts->nmasks, TT_FIG_MASK_KINDS);
    if (opts->categories && (h->ncat < 1 || h->ncat > TT_FIG_NCOLOURS))
        return tt__err(TT_EARG, "heatmap: %d categories; one to %d have colours of their own",
                       h->ncat, TT_FIG_NCOLOURS);
    if (opts->tile_rows < 0 || opts->tile_cols < 0)
        return tt__err(TT_EARG, "heatmap: tiles must be positive sizes");
    return TT_OK;
}

/* The error for a shown value k that is no category code. */
static tt_status hm_category_err(const heatmap *h, int64_t k)
{
    const double v = h->vals[k];
    const int64_t p = k / ((int64_t)h->rows * h->cols), i = k / h->cols % h->rows, j = k % h->cols;
    char vb[32], cell[96];
    fmt_num(vb, sizeof vb, v, v == floor(v) ? 0 : 2);
    if (h->P > 1) snprintf(cell, sizeof cell, "panel %lld, cell (%lld, %lld)", (long long)p + 1,
                           (long long)(i * h->br + 1), (long long)(j * h->bc + 1));
    else snprintf(cell, sizeof cell, "cell (%lld, %lld)", (long long)(i * h->br + 1),
                  (long long)(j * h->bc + 1));
    return tt__err(TT_EARG, "heatmap: categories: %s of %s holds %s, not a category code "
                   "1..%d; hint: the tensor holds 1-based codes into categories", cell,
                   h->tname, vb, h->ncat);
}

/* 2. big matrices: one shown cell per block, read in one pass */
static tt_status hm_gather(heatmap *h, const tt_fig_src *src)
{
    const tt_heatmap_opts *opts = h->o;
    const int64_t P = h->P, R = h->R, C = h->C;
    h->limit = P > 1 ? 512 : 1024;
    h->br = (R + h->limit - 1) / h->limit;
    h->bc = (C + h->limit - 1) / h->limit;
    h->rows = (int)((R + h->br - 1) / h->br);
    h->cols = (int)((C + h->bc - 1) / h->bc);
    h->down = h->br > 1 || h->bc > 1;
    if (opts->row_sums && h->br > 1)
        return tt__err(TT_EARG, "heatmap: row_sums: %s has %lld rows, too many to show each "
                       "one's sum (at most %d); hint: draw a slice with x:narrow", h->tname,
                       (long long)R, h->limit);
    h->nshown = P * h->rows * h->cols;
    h->vals = malloc((size_t)h->nshown * sizeof *h->vals);
    h->mbits = opts->masks ? calloc((size_t)h->nshown, 1) : NULL;
    if (!h->vals || (opts->masks && !h->mbits))
        return tt__err(TT_ENOMEM, "heatmap: out of memory for %lld shown cells", (long long)h->nshown);
    tt_status st = gather(h->vals, src, P, R, C, h->br, h->bc, h->rows, h->cols, h->use_max);
    if (st != TT_OK) return st;
    for (int k = 0; opts->masks && k < opts->nmasks; k++)
        gather_mask(h->mbits, (uint8_t)(1u << k), &opts->masks[k], P, R, C, h->br, h->bc,
                    h->rows, h->cols);
    for (int64_t k = 0; k < h->nshown && h->ncat; k++) {
        const double v = h->vals[k];
        if (!(v >= 1 && v <= h->ncat && v == floor(v))) return hm_category_err(h, k);
    }
    return TT_OK;
}

/* 3. colour scale: automatic from the data, the options override */
static tt_status hm_scale(heatmap *h)
{
    const tt_heatmap_opts *opts = h->o;
    h->s = data_stats(h->vals, h->nshown);
    const stats s = h->s;
    if (h->cmap < 0) h->cmap = s.nfinite && s.fmin < 0 ? TT_CMAP_DIVERGING : TT_CMAP_VIRIDIS;
    double lo = 0.0, hi = 1.0;
    if (s.nfinite) {
        if (h->cmap == TT_CMAP_DIVERGING) {
            hi = s.maxabs > 0 ? s.maxabs : 1.0;
            lo = -hi;
        } else {
            lo = s.fmin >= 0 && s.fmax <= 1 ? 0.0 : s.fmin;
            hi = s.fmax;
            if (!(hi > lo)) { lo = hi - 0.5; hi = lo + 1.0; }
        }
    }
    if (opts->has_vmin) lo = opts->vmin;
    if (opts->has_vmax) hi = opts->vmax;
    if (!(hi > lo)) {   /* one override crossed the automatic other end */
        const double span = fmax(fabs(opts->has_vmin ? lo : hi), 1.0);
        if (opts->has_vmin) hi = lo + span;
        else lo = hi - span;
    }
    h->lo = lo;
    h->hi = hi;
    for (int i = 0; i < HM_LUT; i++) h->lut[i] = tt_cmap_rgb((tt_cmap)h->cmap, i / (HM_LUT - 1.0));
    if (!opts->row_scale) return TT_OK;

    /* per-row scales (row_scale): each shown row on its own range */
    const int64_t nrows = h->P * h->rows;
    h->rlo = malloc((size_t)nrows * sizeof *h->rlo);
    h->rhi = malloc((size_t)nrows * sizeof *h->rhi);
    if (!h->rlo || !h->rhi) return tt__err(TT_ENOMEM, "heatmap: out of memory");
    for (int64_t k = 0; k < nrows; k++) {
        const stats rs = data_stats(h->vals + k * h->cols, h->cols);
        double a = rs.fmin, b = rs.fmax;
        if (!rs.nfinite) a = 0.0, b = 1.0;
        else if (h->cmap == TT_CMAP_DIVERGING) { b = rs.maxabs > 0 ? rs.maxabs : 1.0; a = -b; }
        else if (!(b > a)) a = b - 1.0;   /* a lone value takes the top colour */
        h->rlo[k] = a;
        h->rhi[k] = b;
    }
    return TT_OK;
}

/* 4. annotations: numbers inside small matrices; 5. cell size: grown,
   within a limit, until the widest number fits with a margin of
   ANNOT_PAD[scale] on each side; else smaller text, then fewer decimals,
   then no numbers */
static void hm_cells(heatmap *h)
{
    const tt_heatmap_opts *opts = h->o;
    const int64_t P = h->P;
    const int rows = h->rows, cols = h->cols;
    int decimals = opts->decimals >= 0 ? imin(opts->decimals, 8)
                                       : auto_decimals(h->vals, h->nshown, h->s.maxabs);
    const int maxa = opts->max_annotate > 0 ? opts->max_annotate : 16;
    /* categories: the colours and the legend say it; numbers only on request */
    int annotate = !h->down && (opts->annotate < 0 ? (!h->ncat && h->R <= maxa && h->C <= maxa)
                                                   : opts->annotate > 0);
    int gcols = P <= 4 ? (int)P : P <= 8 ? 4 : (int)ceil(sqrt((double)P));
    const int big = imax(rows, cols);
    int cell = imin(imax(panel_target(P, gcols) / big, 1), HM_MAX_CELL);
    const int max_grid_w = P == 1 ? 1040 : 1600, max_grid_h = P == 1 ? 1040 : 1400;
    int ascale = 0, reduced = 0;
    const int smallest = TT_FONT_CAP + 2 * ANNOT_PAD[1];   /* "0" at scale 1 */
    if (annotate && (gcols * cols * smallest > max_grid_w || rows * smallest > max_grid_h))
        annotate = 0;
    while (annotate && !ascale) {
        /* big text in the usual grid, big text with the panels in fewer
           columns, small text: the first that fits */
        for (int k = 0; k < 3 && !ascale; k++) {
            const int sc = k < 2 ? 2 : 1;
            const int gc = k == 1 ? imin(gcols, (int)ceil(sqrt((double)P))) : gcols;
            if (k == 1 && gc == gcols) continue;
            const int gr = (int)((P + gc - 1) / gc);
            const int need = imax(widest_number(h->vals, h->nshown, decimals, sc) + 2 * ANNOT_PAD[sc],
                                  TT_FONT_CAP * sc + 2 * ANNOT_PAD[sc]);
            const int c2 = imax(imin(imax(panel_target(P, gc) / big, 1), HM_MAX_CELL), need);
            if (gc * cols * c2 + (gc - 1) * HM_PANEL_GAP <= max_grid_w &&
                gr * rows * c2 + (gr - 1) * HM_FIT_GAP_Y <= max_grid_h) {
                cell = c2;
                gcols = gc;
                ascale = sc;
            }
        }
        if (ascale) break;
        if (decimals > 0) { decimals--; reduced = 1; }
        else annotate = 0;
    }
    h->decimals = decimals;
    h->annotate = annotate;
    h->ascale = ascale;
    h->reduced = reduced;
    h->gcols = gcols;
    h->grows = (int)((P + gcols - 1) / gcols);
    const int target = panel_target(P, gcols);
    h->ch = imax(cell, imin(HM_MIN_STRIP, target / rows));   /* thin strips stay visible */
    h->cw = imax(cell, imin(HM_MIN_STRIP, target / cols));
    h->mw = cols * h->cw;
    h->mh = rows * h->ch;
    h->sep = h->cw >= HM_SEP_MIN && h->ch >= HM_SEP_MIN;   /* white rules between big cells */
}

/* 6. labels: ticks of both axes, the colour bar's, the axis titles and a
   note under the title when the figure shows less than was asked */
static tt_status hm_labels(heatmap *h)
{
    const tt_heatmap_opts *opts = h->o;
    tt_status st = axis_pick(&h->ylab, h->R, (double)h->ch / (double)h->br, opts->ylabels,
                             opts->nylabels, 0);
    if (st == TT_OK)
        st = axis_pick(&h->xlab, h->C, (double)h->cw / (double)h->bc, opts->xlabels, opts->nxlabels, 1);
    if (st != TT_OK) return st;

    h->colorbar = opts->colorbar != 0 && !h->ncat;   /* categories have a legend instead */
    if (h->colorbar) {
        if (opts->row_scale && h->cmap == TT_CMAP_DIVERGING) {   /* each row centred on 0 */
            snprintf(h->ticktext[0], 32, "+row max|x|"); h->tickval[0] = h->hi;
            snprintf(h->ticktext[1], 32, "0"); h->tickval[1] = (h->lo + h->hi) / 2.0;
            snprintf(h->ticktext[2], 32, "-row max|x|"); h->tickval[2] = h->lo;
            h->nticks = 3;
        } else if (opts->row_scale) {
            snprintf(h->ticktext[0], 32, "row max"); h->tickval[0] = h->hi;
            snprintf(h->ticktext[1], 32, "row min"); h->tickval[1] = h->lo;
            h->nticks = 2;
        } else {
            int td;
            h->nticks = nice_ticks(h->lo, h->hi, 5, h->tickval, 16, &td);
            for (int k = 0; k < h->nticks; k++) fmt_num(h->ticktext[k], 32, h->tickval[k], td);
        }
        for (int k = 0; k < h->nticks; k++) h->tickw = imax(h->tickw, tt_font_width(h->ticktext[k], 2, 0));
    }

    h->xtitle = opts->xtitle ? opts->xtitle : "Key";
    h->ytitle = opts->ytitle ? opts->ytitle : "Query";
    const long long R = h->R, C = h->C;
    if (h->down)
        snprintf(h->note, sizeof h->note, "%lldx%lld shown as %dx%d: block %s of %lldx%lld", R, C,
                 h->rows, h->cols, h->use_max ? "max" : "mean", (long long)h->br, (long long)h->bc);
    else if (!h->annotate && opts->annotate > 0)
        snprintf(h->note, sizeof h->note, "%lldx%lld cells: too many to print their values", R, C);
    else if (h->reduced && opts->decimals >= 0)
        snprintf(h->note, sizeof h->note, "values rounded to %d decimal%s to fit the cells",
                 h->decimals, h->decimals == 1 ? "" : "s");
    return TT_OK;
}

/* Row sums: each row's true sum (in double; -inf and NaN stay), printed
   like the annotations, in a margin column as tall as the cells. */
static tt_status hm_row_sums(heatmap *h)
{
    h->rs_lab_scale = 2;
    if (!h->o->row_sums) return TT_OK;
    const int ch = h->ch;
    h->rs_scale = h->annotate ? h->ascale
                  : ch >= TT_FONT_CAP * 2 + 6 ? 2 : ch >= TT_FONT_CAP + 3 ? 1 : 0;
    if (!h->rs_scale)
        return tt__err(TT_EARG, "heatmap: row_sums: the %d rows of %s are too thin (%d pixels) "
                       "to print their sums; hint: draw fewer rows, e.g. x:narrow(1, 1, 64)",
                       h->rows, h->tname, ch);
    const int64_t nrows = h->P * h->rows;
    h->rsum = malloc((size_t)nrows * sizeof *h->rsum);
    if (!h->rsum) return tt__err(TT_ENOMEM, "heatmap: out of memory");
    int widest = 0;
    for (int64_t k = 0; k < nrows; k++) {
        double sum = 0.0;
        for (int j = 0; j < h->cols; j++) sum += (double)h->vals[k * h->cols + j];
        h->rsum[k] = sum;
        char buf[32];
        fmt_num(buf, sizeof buf, sum, h->decimals);
        widest = imax(widest, tt_font_width(buf, h->rs_scale, 0));
    }
    h->rs_w = imax(h->cw, widest + 2 * ANNOT_PAD[h->rs_scale]);
    /* its column title sits with the column labels: across when it fits */
    const int lw = tt_font_width(RS_LABEL, 2, 0);
    if (lw > h->rs_w + HM_ROW_SUMS_GAP) {
        if (tt_font_width(RS_LABEL, 1, 0) <= h->rs_w + HM_ROW_SUMS_GAP) h->rs_lab_scale = 1;
        else h->rs_lab_up = 1;
    }
    h->rs_total = HM_ROW_SUMS_GAP + h->rs_w;
    return TT_OK;
}

/* Legend: one entry for each look the cells use. */
static void hm_legend(heatmap *h)
{
    const tt_heatmap_opts *opts = h->o;
    int ninf_plain = 0, nan_plain = 0;   /* shown as such, not under a mask */
    unsigned kinds = 0;
    for (int64_t k = 0; k < h->nshown; k++) {
        const unsigned m = h->mbits ? h->mbits[k] : 0;
        kinds |= m;
        if (!m && isinf(h->vals[k]) && h->vals[k] < 0) ninf_plain = 1;
        if (!m && isnan(h->vals[k])) nan_plain = 1;
    }
    for (int k = 0; k < h->ncat; k++) {
        char t[32];
        snprintf(t, sizeof t, "%d", k + 1);
        legend_add(h->legend, &h->legend_n, LEG_CATEGORY, k,
                   opts->categories[k] ? opts->categories[k] : t);
    }
    for (int k = 0; k < (opts->masks ? opts->nmasks : 0); k++)
        if (kinds >> k & 1)
            legend_add(h->legend, &h->legend_n, LEG_MASK, k,
                       opts->mask_names && opts->mask_names[k] ? opts->mask_names[k] : "masked");
    if (ninf_plain) legend_add(h->legend, &h->legend_n, LEG_NINF, 0, "-inf (masked)");
    if (nan_plain && !h->ncat) legend_add(h->legend, &h->legend_n, LEG_NAN, 0, "NaN");
}

/* 7. positions (outer margin HM_MARGIN; grid of panels at gx, gy). The
   width comes from the grid and what sits beside it; a long title or note
   wraps (or shrinks) to that width rather than widening the figure, which
   only grows to HM_MIN_TEXT_W for very narrow grids. */
static void hm_place(heatmap *h)
{
    const int64_t P = h->P;
    const int M = HM_MARGIN;
    h->ptitle_h = P > 1 ? TT_FONT_LINE * 2 + 4 : 0;
    const int ytitle_w = h->ytitle[0] ? TT_FONT_HEIGHT * 2 + 14 : 0;
    const int ylab_w = h->ylab.extent + HM_LABEL_PAD;
    h->xlab_h = (h->xlab.vertical ? h->xlab.extent : TT_FONT_HEIGHT * h->xlab.scale) + HM_LABEL_PAD;
    if (h->o->row_sums)
        h->xlab_h = imax(h->xlab_h, (h->rs_lab_up ? tt_font_width(RS_LABEL, 2, 0)
                                                  : TT_FONT_HEIGHT * h->rs_lab_scale) + HM_LABEL_PAD);
    const int xtitle_h = h->xtitle[0] ? TT_FONT_LINE * 2 + 6 : 0;
    const int inner_xlab = P > 1 && P % h->gcols != 0 && h->grows > 1;
    const int pw = h->mw + h->rs_total;   /* a panel with its row-sum margin */
    h->dx = pw + HM_PANEL_GAP;
    h->dy = h->ptitle_h + h->mh + (inner_xlab ? h->xlab_h : 0) + HM_PANEL_GAP_Y;
    h->grid_w = h->gcols * pw + (h->gcols - 1) * HM_PANEL_GAP;
    h->grid_h = (h->grows - 1) * h->dy + h->ptitle_h + h->mh;
    int right_w = h->colorbar ? HM_BAR_GAP + HM_BAR_W + HM_BAR_TEXT_GAP + h->tickw : 0;
    int legend_w = 0;
    for (int k = 0; k < h->legend_n; k++)
        legend_w = imax(legend_w, HM_SWATCH + HM_LEGEND_TEXT_GAP + tt_font_width(h->legend[k].text, 2, 0));
    if (h->legend_n) right_w = imax(right_w, HM_BAR_GAP + legend_w);

    const int content_w = ytitle_w + ylab_w + h->grid_w + right_w;
    int W = content_w + 2 * M;
    const int text_w = imax(W - 2 * M, HM_MIN_TEXT_W);
    tt_font_title_layout(&h->title, h->o->title, text_w);
    int notes_w = 0;
    if (h->note[0]) {
        h->nnotes = tt_font_wrap(h->note, 2, 0, text_w, h->notes, 2);
        if (!h->nnotes) h->nnotes = 1, tt_font_fit(h->notes[0], sizeof h->notes[0], h->note, 2, 0, text_w);
        for (int k = 0; k < h->nnotes; k++) notes_w = imax(notes_w, tt_font_width(h->notes[k], 2, 0));
    }
    W = imax(W, imax(h->title.w, notes_w) + 2 * M);
    h->ox = (W - content_w) / 2;   /* left edge of the content */
    h->title_h = h->title.nlines ? h->title.h + HM_TITLE_GAP : 0;
    const int note_h = h->nnotes ? h->nnotes * TT_FONT_LINE * 2 + 6 : 0;
    h->gx = h->ox + ytitle_w + ylab_w;
    h->gy = M + (h->title_h ? h->title_h + HM_NOTE_GAP : 0) + note_h;
    h->bar_x = h->gx + h->grid_w + HM_BAR_GAP;
    h->bar_y = h->gy + h->ptitle_h;
    h->bar_w = h->colorbar ? HM_BAR_W : 0;
    h->bar_h = imax(h->grid_h - h->ptitle_h, HM_BAR_MIN_H);
    h->legend_x = h->colorbar ? h->bar_x : h->gx + h->grid_w + HM_BAR_GAP;
    h->legend_y = h->colorbar ? h->bar_y + h->bar_h + HM_LEGEND_GAP : h->bar_y;
    int H = imax(h->gy + h->grid_h + h->xlab_h + xtitle_h + M,
                 h->legend_n ? h->legend_y + h->legend_n * HM_LEGEND_PITCH + M : 0);
    h->H = imax(H, h->colorbar ? h->bar_y + h->bar_h + M : 0);
    h->W = W;
}

/* ----- drawing steps ----- */

static void hm_draw_title(const heatmap *h, tt_canvas *out)
{
    tt_font_title_draw(out, &h->title, h->W / 2, HM_MARGIN, INK);
    for (int k = 0; k < h->nnotes; k++)
        tt_font_draw(out, (h->W - tt_font_width(h->notes[k], 2, 0)) / 2,
                     HM_MARGIN + (h->title_h ? h->title_h + HM_NOTE_GAP : 0) + k * TT_FONT_LINE * 2,
                     h->notes[k], 2, 0, INK_SOFT);
}

static void hm_draw_panel_title(const heatmap *h, tt_canvas *out, int64_t p, int px0, int py0)
{
    const tt_heatmap_opts *opts = h->o;
    char pt[64], fitted[64];
    if (opts->panel_titles && p < opts->npanel_titles && opts->panel_titles[p])
        snprintf(pt, sizeof pt, "%s", opts->panel_titles[p]);
    else
        snprintf(pt, sizeof pt, "head %lld", (long long)p + 1);
    const int w = tt_font_fit(fitted, sizeof fitted, pt, 2, 0, h->mw);
    tt_font_draw(out, px0 + (h->mw - w) / 2, py0, fitted, 2, 0, INK);
}

/* Colour of a plain (unmasked, not -inf) cell on the range a..b. */
static uint32_t hm_cell_rgb(const heatmap *h, double v, double a, double scale)
{
    if (h->ncat) return tt_fig_colour((int)v - 1);   /* codes checked: 1..ncat */
    if (isnan(v)) return TT_FIG_NAN_RGB;
    if (isinf(v)) return h->lut[HM_LUT - 1];
    /* !(t > 0) also catches NaN from a range that overflowed */
    const double t = (v / 2 - a / 2) * scale;
    return h->lut[!(t > 0.0) ? 0 : t >= HM_LUT - 1.0 ? HM_LUT - 1 : (int)(t + 0.5)];
}

static void hm_draw_cells(const heatmap *h, tt_canvas *out, int64_t p, int px0, int my)
{
    const int rows = h->rows, cols = h->cols, cw = h->cw, ch = h->ch, sep = h->sep;
    for (int i = 0; i < rows; i++) {
        const float *row = h->vals + (p * rows + i) * cols;
        const double a = h->rlo ? h->rlo[p * rows + i] : h->lo, b = h->rhi ? h->rhi[p * rows + i] : h->hi;
        /* halves: the same numbers, but a range near +-DBL_MAX does not overflow */
        const double scale = b > a ? (HM_LUT - 1.0) / (b / 2 - a / 2) : 0.0;
        for (int j = 0; j < cols; j++) {
            const double v = row[j];
            const int x = px0 + j * cw, y = my + i * ch;
            const unsigned m = h->mbits ? h->mbits[(p * rows + i) * cols + j] : 0;
            if (m) { tt_canvas_hatch_kinds(out, x, y, cw - sep, ch - sep, m); continue; }
            if (isinf(v) && v < 0) { tt_canvas_hatch(out, x, y, cw - sep, ch - sep); continue; }
            const uint32_t rgb = hm_cell_rgb(h, v, a, scale);
            if (cw == 1 && ch == 1) {   /* the common big case: no clipping to do */
                tt__svg_rect(out->vec, x, y, 1, 1, rgb);
                put(out, x, y, rgb);
            } else {
                tt_canvas_fill_rect(out, x, y, cw - sep, ch - sep, rgb);
            }
        }
    }
}

/* Numbers in the cells, dark on light and light on dark. */
static void hm_draw_numbers(const heatmap *h, tt_canvas *out, int64_t p, int px0, int my)
{
    const int rows = h->rows, cols = h->cols, cw = h->cw, ch = h->ch, sep = h->sep;
    const int pad = HM_PATCH_PAD;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            const double v = h->vals[(p * rows + i) * cols + j];
            const unsigned m = h->mbits ? h->mbits[(p * rows + i) * cols + j] : 0;
            if (m && v == 0.0) continue;   /* the hatch says it: a masked weight of exactly 0 */
            char buf[32];
            fmt_num(buf, sizeof buf, v, h->decimals);
            const int w = tt_font_width(buf, h->ascale, 0), hgt = TT_FONT_CAP * h->ascale;
            if (w + HM_ANNOT_MIN_PAD > cw - sep) continue;
            const int x = px0 + j * cw + (cw - sep - w) / 2;
            const int y = my + i * ch + (ch - sep - hgt) / 2;
            uint32_t ink;
            if (m) {
                tt_canvas_fill_rect(out, x - pad, y - pad, w + 2 * pad, hgt + 2 * pad, WHITE);
                ink = PATCH_INK;
            } else if (isinf(v) && v < 0) {   /* a plain patch keeps the text legible */
                tt_canvas_fill_rect(out, x - pad, y - pad, w + 2 * pad, hgt + 2 * pad, TT_FIG_HATCH_LIGHT);
                ink = PATCH_INK;
            } else {
                ink = tt_rgb_luma(tt_canvas_get(out, px0 + j * cw, my + i * ch)) > 0.5 ? INK : WHITE;
            }
            tt_font_draw(out, x, y, buf, h->ascale, 0, ink);
        }
}

/* Tile borders: a thick line every tile_rows rows and tile_cols columns,
   and round the matrix. */
static void hm_draw_tiles(const heatmap *h, tt_canvas *out, int px0, int my)
{
    const tt_heatmap_opts *opts = h->o;
    const int sep = h->sep;
    for (int64_t r = opts->tile_rows; opts->tile_rows > 0 && r < h->R; r += opts->tile_rows)
        tt_canvas_fill_rect(out, px0, my + (int)(r / h->br) * h->ch - 2 + !sep, h->mw - sep, 3, TILE_INK);
    for (int64_t c = opts->tile_cols; opts->tile_cols > 0 && c < h->C; c += opts->tile_cols)
        tt_canvas_fill_rect(out, px0 + (int)(c / h->bc) * h->cw - 2 + !sep, my, 3, h->mh - sep, TILE_INK);
    tt_canvas_frame(out, px0 - 2, my - 2, h->mw - sep + 4, h->mh - sep + 4, 2, TILE_INK);
}

/* The row-sum margin; its title with the column labels of the bottom
   panels. */
static void hm_draw_row_sums(const heatmap *h, tt_canvas *out, int64_t p, int px0, int my)
{
    const int sx = px0 + h->mw + HM_ROW_SUMS_GAP, rs_w = h->rs_w, sep = h->sep;
    tt_canvas_frame(out, sx - 1, my - 1, rs_w + 2, h->mh + 2, 1, RULE);
    for (int i = 0; i < h->rows; i++) {
        char buf[32];
        fmt_num(buf, sizeof buf, h->rsum[p * h->rows + i], h->decimals);
        const int y = my + i * h->ch;
        tt_canvas_fill_rect(out, sx, y, rs_w - sep, h->ch - sep, ROW_SUMS_BG);
        const int w = tt_font_width(buf, h->rs_scale, 0);
        tt_font_draw(out, sx + (rs_w - sep - w) / 2, y + (h->ch - sep - TT_FONT_CAP * h->rs_scale) / 2,
                     buf, h->rs_scale, 0, INK);
    }
    if (p + h->gcols < h->P) return;
    const int ly = my + h->mh + HM_LABEL_GAP;
    if (h->rs_lab_up) {
        tt_font_draw(out, sx + rs_w / 2 - TT_FONT_CAP, ly, RS_LABEL, 2, TT_FONT_UP, INK);
    } else {
        const int lw = tt_font_width(RS_LABEL, h->rs_lab_scale, 0);
        tt_font_draw(out, sx + (rs_w - lw) / 2, ly, RS_LABEL, h->rs_lab_scale, 0, INK);
    }
}

/* Row labels on the left column of panels, column labels below the panels
   that have none under them. */
static void hm_draw_tick_labels(const heatmap *h, tt_canvas *out, int64_t p, int px0, int my)
{
    const axis_labels *ylab = &h->ylab, *xlab = &h->xlab;
    if (p % h->gcols == 0)
        for (int k = 0; k < ylab->n; k++) {
            const int cy = my + (int)(ylab->idx[k] / h->br) * h->ch + h->ch / 2;
            const int w = tt_font_width(ylab->text[k], ylab->scale, 0);
            tt_font_draw(out, px0 - HM_LABEL_GAP - w, cy - TT_FONT_CAP * ylab->scale / 2, ylab->text[k],
                         ylab->scale, 0, INK);
            if (ylab->step_gt1) tt_canvas_fill_rect(out, px0 - 1 - HM_TICK_LEN, cy, HM_TICK_LEN, 1, RULE);
        }
    if (p + h->gcols < h->P) return;
    const int ly = my + h->mh + HM_LABEL_GAP;
    for (int k = 0; k < xlab->n; k++) {
        const int cx = px0 + (int)(xlab->idx[k] / h->bc) * h->cw + h->cw / 2;
        const int w = tt_font_width(xlab->text[k], xlab->scale, 0);
        if (xlab->vertical)
            tt_font_draw(out, cx - TT_FONT_CAP * xlab->scale / 2, ly, xlab->text[k], xlab->scale,
                         TT_FONT_UP, INK);
        else
            tt_font_draw(out, cx - w / 2, ly, xlab->text[k], xlab->scale, 0, INK);
        if (xlab->step_gt1) tt_canvas_fill_rect(out, cx, my + h->mh + 1, 1, HM_TICK_LEN, RULE);
    }
}

static void hm_draw_panel(const heatmap *h, tt_canvas *out, int64_t p)
{
    const int px0 = h->gx + (int)(p % h->gcols) * h->dx, py0 = h->gy + (int)(p / h->gcols) * h->dy;
    const int my = py0 + h->ptitle_h;
    if (h->P > 1) hm_draw_panel_title(h, out, p, px0, py0);
    tt_canvas_frame(out, px0 - 1, my - 1, h->mw + 2, h->mh + 2, 1, RULE);
    hm_draw_cells(h, out, p, px0, my);
    if (h->annotate) hm_draw_numbers(h, out, p, px0, my);
    if (h->o->tile_rows > 0 || h->o->tile_cols > 0) hm_draw_tiles(h, out, px0, my);
    if (h->o->row_sums) hm_draw_row_sums(h, out, p, px0, my);
    hm_draw_tick_labels(h, out, p, px0, my);
}

/* Axis titles, centred on the grid. */
static void hm_draw_axis_titles(const heatmap *h, tt_canvas *out)
{
    char fitted[96];
    if (h->xtitle[0]) {
        const int w = tt_font_fit(fitted, sizeof fitted, h->xtitle, 2, 0, h->grid_w);
        tt_font_draw(out, h->gx + (h->grid_w - w) / 2, h->gy + h->grid_h + h->xlab_h + 4, fitted, 2, 0,
                     INK_SOFT);
    }
    if (h->ytitle[0]) {
        const int span = h->grid_h - h->ptitle_h;
        const int w = tt_font_fit(fitted, sizeof fitted, h->ytitle, 2, 0, span);
        tt_font_draw(out, h->ox, h->bar_y + (span - w) / 2, fitted, 2, TT_FONT_UP, INK_SOFT);
    }
}

/* Colour bar: top is vmax. */
static void hm_draw_colorbar(const heatmap *h, tt_canvas *out)
{
    const int bx = h->bar_x, by = h->bar_y, bw = h->bar_w, bh = h->bar_h;
    for (int y = 0; y < bh; y++)
        tt_canvas_fill_rect(out, bx, by + y, bw, 1, tt_cmap_rgb((tt_cmap)h->cmap, 1.0 - (y + 0.5) / bh));
    tt_canvas_frame(out, bx - 1, by - 1, bw + 2, bh + 2, 1, RULE);
    for (int k = 0; k < h->nticks; k++) {
        const int y = by + (int)lround((1.0 - tt_cmap_norm(h->tickval[k], h->lo, h->hi)) * (bh - 1));
        tt_canvas_fill_rect(out, bx + bw + 1, y, HM_BAR_TICK, 1, INK_SOFT);
        tt_font_draw(out, bx + bw + HM_BAR_TEXT_GAP, y - TT_FONT_CAP, h->ticktext[k], 2, 0, INK);
    }
}

static void hm_draw_legend(const heatmap *h, tt_canvas *out)
{
    const int x = h->legend_x, s = HM_SWATCH;
    for (int k = 0; k < h->legend_n; k++) {
        const legend_entry *e = &h->legend[k];
        const int y = h->legend_y + k * HM_LEGEND_PITCH;
        switch (e->kind) {
        case LEG_NAN: tt_canvas_fill_rect(out, x, y, s, s, TT_FIG_NAN_RGB); break;
        case LEG_NINF: tt_canvas_hatch(out, x, y, s, s); break;
        case LEG_MASK: tt_canvas_hatch_kinds(out, x, y, s, s, 1u << e->k); break;
        case LEG_CATEGORY: tt_canvas_fill_rect(out, x, y, s, s, tt_fig_colour(e->k)); break;
        }
        tt_canvas_frame(out, x - 1, y - 1, s + 2, s + 2, 1, RULE);
        tt_font_draw(out, x + s + HM_LEGEND_TEXT_GAP, y + s / 2 - TT_FONT_CAP, e->text, 2, 0, INK);
    }
}

static void hm_geom(const heatmap *h, tt_heatmap_geom *geom)
{
    geom->width = h->W; geom->height = h->H;
    geom->gcols = h->gcols; geom->grows = h->grows; geom->dx = h->dx; geom->dy = h->dy;
    geom->x0 = h->gx; geom->y0 = h->gy + h->ptitle_h; geom->cell_w = h->cw; geom->cell_h = h->ch;
    geom->rows = h->rows; geom->cols = h->cols; geom->block_r = (int)h->br; geom->block_c = (int)h->bc;
    geom->bar_x = h->bar_x; geom->bar_y = h->bar_y; geom->bar_w = h->bar_w;
    geom->bar_h = h->colorbar ? h->bar_h : 0;
    geom->annotate_scale = h->annotate ? h->ascale : 0;
    geom->annotate_w = h->annotate ? widest_number(h->vals, h->nshown, h->decimals, h->ascale) : 0;
    geom->decimals = h->decimals;
    geom->cmap = (tt_cmap)h->cmap; geom->vmin = h->lo; geom->vmax = h->hi;
    geom->sums_x = h->o->row_sums ? h->gx + h->mw + HM_ROW_SUMS_GAP : 0; geom->sums_w = h->rs_w;
    geom->legend_x = h->legend_x; geom->legend_y = h->legend_y; geom->legend_n = h->legend_n;
}

tt_status tt_heatmap_render(tt_canvas *out, tt_heatmap_geom *geom, const float *data,
                            int64_t P, int64_t R, int64_t C, const tt_heatmap_opts *opts)
{
    const tt_fig_src src = { data, NULL, { R * C, C, 1 } };
    return tt_heatmap_render_src(out, geom, &src, P, R, C, opts);
}

tt_status tt_heatmap_render_src(tt_canvas *out, tt_heatmap_geom *geom, const tt_fig_src *src,
                                int64_t P, int64_t R, int64_t C, const tt_heatmap_opts *opts)
{
    tt_heatmap_opts dflt;
    if (!opts) { tt_heatmap_opts_init(&dflt); opts = &dflt; }
    out->w = out->h = 0;
    out->px = NULL;
    out->vec = NULL;
    heatmap *h = malloc(sizeof *h);   /* the LUT and text buffers: kept off the stack */
    if (!h) return tt__err(TT_ENOMEM, "heatmap: out of memory");
    memset(h, 0, sizeof *h);
    h->o = opts;
    h->P = P; h->R = R; h->C = C;
    char shp[256];
    if (opts->meta.shape) snprintf(shp, sizeof shp, "%s", opts->meta.shape);
    else if (P == 1) snprintf(shp, sizeof shp, "[%lld,%lld]", (long long)R, (long long)C);
    else snprintf(shp, sizeof shp, "[%lld,%lld,%lld]", (long long)P, (long long)R, (long long)C);
    what(h->tname, sizeof h->tname, opts->name, shp);

    /* layout: each step fills in h from the data, the options and the
       steps before it */
    tt_status st = hm_check(h);
    if (st == TT_OK) st = hm_gather(h, src);
    if (st == TT_OK) st = hm_scale(h);
    if (st == TT_OK) { hm_cells(h); st = hm_labels(h); }
    if (st == TT_OK) st = hm_row_sums(h);
    if (st == TT_OK) { hm_legend(h); hm_place(h); st = tt_canvas_init(out, h->W, h->H); }
    if (st != TT_OK) goto done;

    /* drawing */
    hm_draw_title(h, out);
    for (int64_t p = 0; p < P; p++) hm_draw_panel(h, out, p);
    hm_draw_axis_titles(h, out);
    if (h->colorbar) hm_draw_colorbar(h, out);
    hm_draw_legend(h, out);
    if (geom) hm_geom(h, geom);
done:
    hm_free(h);
    free(h);
    return st;
}

tt_status tt_heatmap_write(const char *path, const float *data, int64_t P, int64_t R,
                           int64_t C, const tt_heatmap_opts *opts)
{
    const tt_fig_src src = { data, NULL, { R * C, C, 1 } };
    return tt_heatmap_write_src(path, &src, P, R, C, opts);
}

typedef struct heatmap_call {
    const tt_fig_src *src;
    int64_t P, R, C;
    const tt_heatmap_opts *opts;
} heatmap_call;

static tt_status heatmap_render_call(tt_canvas *out, const void *ctx)
{
    const heatmap_call *a = ctx;
    return tt_heatmap_render_src(out, NULL, a->src, a->P, a->R, a->C, a->opts);
}

tt_status tt_heatmap_write_src(const char *path, const tt_fig_src *src, int64_t P, int64_t R,
                               int64_t C, const tt_heatmap_opts *opts)
{
    const heatmap_call a = { src, P, R, C, opts };
    return tt__figure_write("heatmap", path, heatmap_render_call, &a, opts ? &opts->meta : NULL);
}

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
    what(tname, sizeof tname, opts->name, shp);
    if (R <= 0 || C <= 0)
        return tt__err(TT_EARG, "bars: nothing to draw: the tensor %s is empty", tname);
    if (R > 16 || C > 64)
        return tt__err(TT_EARG, "bars: %s is too big for a bar chart (at most 16 rows of 64 "
                       "values); hint: tt.heatmap draws it", tname);
    if (opts->xlabels && opts->nxlabels != C)
        return count_err("bars", "xlabels", opts->nxlabels, C, "bar", R > 1 ? " of each row" : "", tname,
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
        return count_err("bars", "labels", opts->nseries, R, "row", "", tname, hint);
    }
    return TT_OK;
}

/* Value axis: nice ticks over [min(0, min), max(0, max)], widened to
   whole steps. */
static void bars_value_axis(bars *b, const stats *s)
{
    double lo = s->nfinite ? fmin(0.0, s->fmin) : 0.0, hi = s->nfinite ? fmax(0.0, s->fmax) : 1.0;
    if (!(hi > lo)) hi = lo + 1.0;
    int td, nt = nice_ticks(lo, hi, 5, b->ticks, 16, &td);
    const double step = nt >= 2 ? b->ticks[1] - b->ticks[0] : hi - lo;
    if (b->ticks[0] > lo + 1e-12) lo = b->ticks[0] - step;
    if (b->ticks[nt - 1] < hi - 1e-12) hi = b->ticks[nt - 1] + step;
    b->nt = nice_ticks(lo, hi, 5, b->ticks, 16, &td);
    for (int k = 0; k < b->nt; k++) {
        fmt_num(b->ticktext[k], 32, b->ticks[k], td);
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
    fmt_num(buf, sizeof buf, v, b->decimals);
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
    const stats s = data_stats(data, R * C);
    b->decimals = opts->decimals >= 0 ? imin(opts->decimals, 8) : auto_decimals(data, R * C, s.maxabs);
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
