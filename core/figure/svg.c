/*
** svg.c — a canvas's display list, written as SVG (core layer). Same layout
** and colours as the PNG: rectangles on the pixel grid (crisp edges),
** anti-aliased lines, curves and rounded boxes, hatches as <pattern>s in
** canvas coordinates, and text as <text> stretched to the bitmap font's
** box. Bytes are deterministic: fixed number formats, no dates.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "font.h"
#include "svg.h"
#include "tt_internal.h"

/* ===== The display list ===== */

enum { OP_RECT, OP_FRAME, OP_LINE, OP_POLYLINE, OP_TRIANGLE, OP_ROUND_RECT, OP_HATCH, OP_TEXT };

/* One drawn primitive. Pixel boxes in x, y, w, h; a is a frame's or
   border's width, a hatch's kinds, an offset into pts (lines, polylines,
   triangles) or str (text); b a corner radius, a point count, or a text's
   scale << 8 | flags. */
typedef struct item {
    int32_t x, y, w, h;
    uint32_t rgb, rgb2;
    int32_t a, b;
    uint8_t op;
} item;

struct tt_svg {
    item *it;
    size_t n, cap;
    double *pts;
    size_t npts, cappts;
    char *str;
    size_t nstr, capstr;
    int overflow;   /* more than TT_SVG_MAX_ITEMS: dropped */
    int oom;        /* a recording failed for memory (or the cap): dropped */
    int64_t held;   /* bytes of it counted against the memory cap */
};

tt_svg *tt__svg_new(void)
{
    return calloc(1, sizeof(tt_svg));
}

static void drop(tt_svg *v)
{
    tt__mem_release(v->held);
    v->held = 0;
    free(v->it); free(v->pts); free(v->str);
    v->it = NULL; v->pts = NULL; v->str = NULL;
    v->n = v->cap = v->npts = v->cappts = v->nstr = v->capstr = 0;
}

void tt__svg_free(tt_svg *v)
{
    if (!v) return;
    drop(v);
    free(v);
}

/* Grows *p (of *cap elements of size sz) to hold need; 0 when out of
   memory or past the memory cap, which counts the growth in *held. */
static int grow(void **p, size_t *cap, size_t need, size_t sz, int64_t *held)
{
    if (need <= *cap) return 1;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    const int64_t more = (int64_t)((c - *cap) * sz);
    if (tt__mem_reserve(more)) return 0;
    void *q = realloc(*p, c * sz);
    if (!q) {
        tt__mem_release(more);
        return 0;
    }
    *held += more;
    *p = q;
    *cap = c;
    return 1;
}

/* A new item, or NULL when the list is full, dropped or out of memory. */
static item *add(tt_svg *v, int op)
{
    if (!v || v->overflow || v->oom) return NULL;
    if (v->n >= TT_SVG_MAX_ITEMS) { v->overflow = 1; drop(v); return NULL; }
    if (!grow((void **)&v->it, &v->cap, v->n + 1, sizeof *v->it, &v->held)) { v->oom = 1; drop(v); return NULL; }
    item *e = &v->it[v->n++];
    memset(e, 0, sizeof *e);
    e->op = (uint8_t)op;
    return e;
}

/* Room for k doubles; their offset, or -1. */
static long add_pts(tt_svg *v, const double *d, size_t k)
{
    if (!grow((void **)&v->pts, &v->cappts, v->npts + k, sizeof *v->pts, &v->held)) { v->oom = 1; drop(v); return -1; }
    memcpy(v->pts + v->npts, d, k * sizeof *d);
    v->npts += k;
    return (long)(v->npts - k);
}

/* A rectangle-shaped item; a run continuing the last one on its row
   (same look, same rows, touching on the left) widens it instead. */
static void add_box(tt_svg *v, int op, int x, int y, int w, int h, uint32_t rgb, int a)
{
    if (!v || w <= 0 || h <= 0) return;
    if (v->n && !v->overflow && !v->oom) {
        item *l = &v->it[v->n - 1];
        if (l->op == op && l->rgb == rgb && l->a == a && l->y == y && l->h == h && l->x + l->w == x) {
            l->w += w;
            return;
        }
    }
    item *e = add(v, op);
    if (!e) return;
    e->x = x; e->y = y; e->w = w; e->h = h; e->rgb = rgb; e->a = a;
}

void tt__svg_rect(tt_svg *v, int x, int y, int w, int h, uint32_t rgb)
{
    add_box(v, OP_RECT, x, y, w, h, rgb, 0);
}

void tt__svg_hatch(tt_svg *v, int x, int y, int w, int h, unsigned kinds)
{
    add_box(v, OP_HATCH, x, y, w, h, 0, (int)kinds);
}

void tt__svg_frame(tt_svg *v, int x, int y, int w, int h, int t, uint32_t rgb)
{
    if (w <= 0 || h <= 0 || t <= 0) return;
    if (2 * t >= w || 2 * t >= h) { tt__svg_rect(v, x, y, w, h, rgb); return; }   /* all border */
    item *e = add(v, OP_FRAME);
    if (!e) return;
    e->x = x; e->y = y; e->w = w; e->h = h; e->rgb = rgb; e->a = t;
}

void tt__svg_round_rect(tt_svg *v, int x, int y, int w, int h, int r, uint32_t fill,
                        uint32_t border, int bw)
{
    if (w <= 0 || h <= 0) return;
    item *e = add(v, OP_ROUND_RECT);
    if (!e) return;
    e->x = x; e->y = y; e->w = w; e->h = h; e->rgb = fill; e->rgb2 = border;
    e->a = bw > 0 ? bw : 0;
    e->b = r > 0 ? r : 0;
}

/* An item over k doubles (points, then the width). */
static void add_shape(tt_svg *v, int op, const double *d, size_t k, int npoints, uint32_t rgb)
{
    item *e = add(v, op);
    if (!e) return;
    const long off = add_pts(v, d, k);
    if (off < 0) return;   /* the list was dropped */
    e->a = (int32_t)off;
    e->b = npoints;
    e->rgb = rgb;
}

void tt__svg_line(tt_svg *v, double x0, double y0, double x1, double y1, double width,
                  uint32_t rgb)
{
    const double d[5] = { x0, y0, x1, y1, width };
    add_shape(v, OP_LINE, d, 5, 2, rgb);
}

void tt__svg_triangle(tt_svg *v, const double xy[6], uint32_t rgb)
{
    add_shape(v, OP_TRIANGLE, xy, 6, 3, rgb);
}

void tt__svg_polyline(tt_svg *v, const double (*pt)[2], int n, double width, uint32_t rgb)
{
    if (!v || n < 1 || n > 1000000) return;
    double *d = malloc(((size_t)n * 2 + 1) * sizeof *d);
    if (!d) { v->oom = 1; drop(v); return; }
    for (int k = 0; k < n; k++) { d[2 * k] = pt[k][0]; d[2 * k + 1] = pt[k][1]; }
    d[2 * n] = width;
    add_shape(v, OP_POLYLINE, d, (size_t)n * 2 + 1, n, rgb);
    free(d);
}

void tt__svg_text(tt_svg *v, int x, int y, const char *s, int scale, int flags, uint32_t rgb,
                  int width)
{
    if (!s[0] || width <= 0) return;
    item *e = add(v, OP_TEXT);
    if (!e) return;
    const size_t len = strlen(s) + 1;
    if (!grow((void **)&v->str, &v->capstr, v->nstr + len, 1, &v->held)) { v->oom = 1; drop(v); return; }
    memcpy(v->str + v->nstr, s, len);
    e->x = x; e->y = y; e->w = width; e->rgb = rgb;
    e->a = (int32_t)v->nstr;
    e->b = scale << 8 | (flags & 0xff);
    v->nstr += len;
}

/* ===== Writing ===== */

/* A coordinate: two decimals at most, trailing zeros trimmed ("12.5",
   "3"), never "-0": the same number always prints the same. */
static void put_num(tt_strbuf *b, double v)
{
    char t[64];
    if (!isfinite(v) || fabs(v) > 1e9) v = 0.0;
    snprintf(t, sizeof t, "%.2f", v);
    char *e = t + strlen(t);
    while (e[-1] == '0') *--e = '\0';
    if (e[-1] == '.') *--e = '\0';
    tt_strbuf_str(b, strcmp(t, "-0") ? t : "0");
}

static void put_rgb(tt_strbuf *b, uint32_t rgb) { tt_strbuf_fmt(b, "#%06x", (unsigned)(rgb & 0xffffffu)); }

/* s as XML character data: markup characters escaped, UTF-8 kept; what
   XML cannot hold (control bytes, broken UTF-8) becomes '?', as the bitmap
   font draws it, and the font's ellipsis byte becomes U+2026. */
static void put_text(tt_strbuf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const unsigned char c = *p;
        if (c == '&') tt_strbuf_str(b, "&amp;");
        else if (c == '<') tt_strbuf_str(b, "&lt;");
        else if (c == '>') tt_strbuf_str(b, "&gt;");
        else if (c == '"') tt_strbuf_str(b, "&quot;");
        else if (c == '\'') tt_strbuf_str(b, "&#39;");
        else if (c == (unsigned char)TT_FONT_ELLIPSIS) tt_strbuf_str(b, "\xe2\x80\xa6");
        else if (c == '\n' || c == '\t') tt_strbuf_add(b, (const char *)p, 1);
        else if (c < 0x20) tt_strbuf_str(b, "?");
        else if (c < 0x80) tt_strbuf_add(b, (const char *)p, 1);
        else {
            const int n = tt_utf8_len(p, 4);   /* the NUL ends any sequence */
            if (n) { tt_strbuf_add(b, (const char *)p, (size_t)n); p += n; continue; }
            tt_strbuf_str(b, "?");
            p++;
            while ((*p & 0xc0) == 0x80) p++;   /* one '?' a broken sequence */
            continue;
        }
        p++;
    }
}

/* Hatch tiles in canvas coordinates, so that neighbouring cells join up
   as in the PNG. A stripe (x + y) % 8 < k of pixels is the band of pixel
   centres 0.5 <= X + Y <= k + 0.5 (mod 8). */
static void put_defs(tt_strbuf *b, unsigned used)
{
    tt_strbuf_str(b, "<defs>\n");
    if (used & 1u << 4)
        tt_strbuf_fmt(b, "<pattern id=\"tt-hatch\" patternUnits=\"userSpaceOnUse\" width=\"8\" height=\"8\">"
                "<rect width=\"8\" height=\"8\" fill=\"#%06x\"/>"
                "<path d=\"M0.5 0H3.5L0 3.5V0.5ZM8 0.5V3.5L3.5 8H0.5Z\" fill=\"#%06x\"/></pattern>\n",
                (unsigned)TT_FIG_HATCH_LIGHT, (unsigned)TT_FIG_HATCH_DARK);
    /* mask kinds: strokes only; the cell's background is its own rect */
    static const char *const tile[TT_FIG_MASK_KINDS][2] = {
        { "8", "M0.5 0H2.5L0 2.5V0.5ZM8 0.5V2.5L2.5 8H0.5Z" },      /* diagonal / */
        { "7", "M0 0H7V1H1V7H0Z" },                                /* cross hatch */
        { "8", "M0 0H1.5L8 6.5V8H7.5L0 0.5ZM7.5 0H8V0.5ZM0 6.5V8H1.5Z" },   /* diagonal \ */
        { "4", "M0 0H2V2H0Z" },                                     /* dots */
    };
    for (int k = 0; k < TT_FIG_MASK_KINDS; k++)
        if (used & 1u << k)
            tt_strbuf_fmt(b, "<pattern id=\"tt-mask%d\" patternUnits=\"userSpaceOnUse\" width=\"%s\" "
                    "height=\"%s\"><path d=\"%s\" fill=\"#%06x\"/></pattern>\n", k, tile[k][0],
                    tile[k][0], tile[k][1], (unsigned)tt__mask_rgb(k, 1));
    for (int k = 0; k < TT_FIG_MASK_KINDS; k++)   /* white strokes over a cell's own colour */
        if (used & 1u << (k + 5))
            tt_strbuf_fmt(b, "<pattern id=\"tt-mask%dw\" patternUnits=\"userSpaceOnUse\" width=\"%s\" "
                    "height=\"%s\"><path d=\"%s\" fill=\"#ffffff\"/></pattern>\n", k, tile[k][0],
                    tile[k][0], tile[k][1]);
    tt_strbuf_str(b, "</defs>\n");
}

static void put_box(tt_strbuf *b, const item *e)
{
    tt_strbuf_fmt(b, "x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"", (int)e->x, (int)e->y, (int)e->w, (int)e->h);
}

static void put_points(tt_strbuf *b, const double *d, int n)
{
    tt_strbuf_str(b, " points=\"");
    for (int k = 0; k < n; k++) {
        if (k) tt_strbuf_str(b, " ");
        put_num(b, d[2 * k]);
        tt_strbuf_str(b, ",");
        put_num(b, d[2 * k + 1]);
    }
    tt_strbuf_str(b, "\"");
}

/* Text: the baseline sits under the bitmap's cap line (row 6), the size
   makes a monospace cell as wide as a bitmap cell (5 + 1 of 10 units), and
   textLength stretches it to the bitmap text's width, so its box lands on
   the PNG's within a pixel or two. Up text turns about its start. */
static void put_text_item(tt_strbuf *b, const tt_svg *v, const item *e)
{
    const int scale = e->b >> 8, flags = e->b & 0xff;
    const int up = flags & TT_FONT_UP;
    const int bx = up ? e->x + TT_FONT_CAP * scale : e->x;
    const int by = up ? e->y + e->w : e->y + TT_FONT_CAP * scale;
    tt_strbuf_fmt(b, "<text x=\"%d\" y=\"%d\" font-size=\"%d\" textLength=\"%d\" "
            "lengthAdjust=\"spacingAndGlyphs\" fill=", bx, by, 10 * scale, (int)e->w + scale);
    tt_strbuf_str(b, "\"");
    put_rgb(b, e->rgb);
    tt_strbuf_str(b, "\"");
    if (flags & TT_FONT_BOLD) tt_strbuf_str(b, " font-weight=\"bold\"");
    if (up) tt_strbuf_fmt(b, " transform=\"rotate(-90 %d %d)\"", bx, by);
    tt_strbuf_str(b, ">");
    put_text(b, v->str + e->a);
    tt_strbuf_str(b, "</text>\n");
}

static void put_item(tt_strbuf *b, const tt_svg *v, const item *e)
{
    const double *d = v->pts ? v->pts + e->a : NULL;   /* a figure of boxes alone has no points */
    switch (e->op) {
    case OP_RECT:
        tt_strbuf_str(b, "<rect ");
        put_box(b, e);
        tt_strbuf_str(b, " fill=\"");
        put_rgb(b, e->rgb);
        tt_strbuf_str(b, "\"/>\n");
        break;
    case OP_FRAME: {   /* a stroke centred t/2 inside the box */
        const double t = e->a;
        tt_strbuf_str(b, "<rect x=\"");
        put_num(b, e->x + t / 2); tt_strbuf_str(b, "\" y=\""); put_num(b, e->y + t / 2);
        tt_strbuf_fmt(b, "\" width=\"%d\" height=\"%d\" fill=\"none\" stroke-width=\"%d\" stroke=\"",
                (int)(e->w - e->a), (int)(e->h - e->a), (int)e->a);
        put_rgb(b, e->rgb);
        tt_strbuf_str(b, "\"/>\n");
        break;
    }
    case OP_ROUND_RECT: {   /* the border as a stroke centred bw/2 inside */
        const double bw = e->a, h = bw / 2;
        tt_strbuf_str(b, "<rect x=\"");
        put_num(b, e->x + h); tt_strbuf_str(b, "\" y=\""); put_num(b, e->y + h);
        tt_strbuf_str(b, "\" width=\""); put_num(b, e->w - bw);
        tt_strbuf_str(b, "\" height=\""); put_num(b, e->h - bw);
        tt_strbuf_str(b, "\" rx=\""); put_num(b, fmax(e->b - h, 0.0));
        tt_strbuf_str(b, "\" fill=\""); put_rgb(b, e->rgb);
        if (e->a > 0) {
            tt_strbuf_str(b, "\" stroke=\""); put_rgb(b, e->rgb2);
            tt_strbuf_fmt(b, "\" stroke-width=\"%d", (int)e->a);
        }
        tt_strbuf_str(b, "\" shape-rendering=\"geometricPrecision\"/>\n");
        break;
    }
    case OP_LINE:
        tt_strbuf_str(b, "<line x1=\""); put_num(b, d[0]);
        tt_strbuf_str(b, "\" y1=\""); put_num(b, d[1]);
        tt_strbuf_str(b, "\" x2=\""); put_num(b, d[2]);
        tt_strbuf_str(b, "\" y2=\""); put_num(b, d[3]);
        tt_strbuf_str(b, "\" stroke-width=\""); put_num(b, d[4]);
        tt_strbuf_str(b, "\" stroke-linecap=\"round\" stroke=\""); put_rgb(b, e->rgb);
        tt_strbuf_str(b, "\" shape-rendering=\"geometricPrecision\"/>\n");
        break;
    case OP_POLYLINE:
        tt_strbuf_str(b, "<polyline");
        put_points(b, d, e->b);
        tt_strbuf_str(b, " fill=\"none\" stroke-width=\""); put_num(b, d[2 * e->b]);
        tt_strbuf_str(b, "\" stroke-linecap=\"round\" stroke-linejoin=\"round\" stroke=\"");
        put_rgb(b, e->rgb);
        tt_strbuf_str(b, "\" shape-rendering=\"geometricPrecision\"/>\n");
        break;
    case OP_TRIANGLE:
        tt_strbuf_str(b, "<polygon");
        put_points(b, d, 3);
        tt_strbuf_str(b, " fill=\""); put_rgb(b, e->rgb);
        tt_strbuf_str(b, "\" shape-rendering=\"geometricPrecision\"/>\n");
        break;
    case OP_HATCH: {
        const unsigned kinds = (unsigned)e->a & ~TT_SVG_HATCH_STROKES;
        if (!kinds) {
            tt_strbuf_str(b, "<rect ");
            put_box(b, e);
            tt_strbuf_str(b, " fill=\"url(#tt-hatch)\"/>\n");
            break;
        }
        int first = 0;
        while (!(kinds >> first & 1)) first++;
        if (!((unsigned)e->a & TT_SVG_HATCH_STROKES)) {
            tt_strbuf_str(b, "<rect ");   /* the lowest kind's background, every kind's strokes over it */
            put_box(b, e);
            tt_strbuf_str(b, " fill=\"");
            put_rgb(b, tt__mask_rgb(first, 0));
            tt_strbuf_str(b, "\"/>\n");
        }
        for (int k = 0; k < TT_FIG_MASK_KINDS; k++)
            if (kinds >> k & 1) {
                tt_strbuf_str(b, "<rect ");
                put_box(b, e);
                tt_strbuf_fmt(b, " fill=\"url(#tt-mask%d%s)\"/>\n", k,
                              (unsigned)e->a & TT_SVG_HATCH_STROKES ? "w" : "");
            }
        break;
    }
    case OP_TEXT:
        put_text_item(b, v, e);
        break;
    }
}

/* The whole document into b. */
static void put_document(tt_strbuf *b, const tt_canvas *c, const tt_png_meta *meta)
{
    const tt_svg *v = c->vec;
    tt_strbuf_str(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    tt_strbuf_fmt(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"'DejaVu Sans Mono', Menlo, Consolas, monospace\" "
            "shape-rendering=\"crispEdges\" xml:space=\"preserve\">\n", c->w, c->h, c->w, c->h);
    /* what the PNG keeps in its tEXt chunks */
    if (meta && meta->title && meta->title[0]) {
        tt_strbuf_str(b, "<title>");
        put_text(b, meta->title);
        tt_strbuf_str(b, "</title>\n");
    }
    tt_strbuf_str(b, "<desc>Software: tensortrace " TT_VERSION);
    const char *keys[3] = { "Source", "Shape", "Title" };
    const char *vals[3] = { meta ? meta->source : NULL, meta ? meta->shape : NULL,
                            meta ? meta->title : NULL };
    for (int k = 0; k < 3; k++)
        if (vals[k] && vals[k][0]) {
            tt_strbuf_fmt(b, "\n%s: ", keys[k]);
            put_text(b, vals[k]);
        }
    tt_strbuf_str(b, "</desc>\n");
    unsigned used = 0;   /* bits 0..3 mask kinds, bit 4 the -inf hatch, 5..8 white strokes */
    for (size_t k = 0; k < v->n; k++)
        if (v->it[k].op == OP_HATCH)
            used |= !v->it[k].a ? 1u << 4
                    : (unsigned)v->it[k].a & TT_SVG_HATCH_STROKES ? ((unsigned)v->it[k].a & 0xfu) << 5
                    : (unsigned)v->it[k].a;
    if (used) put_defs(b, used);
    tt_strbuf_fmt(b, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", c->w, c->h);
    for (size_t k = 0; k < v->n; k++) put_item(b, v, &v->it[k]);
    tt_strbuf_str(b, "</svg>\n");
}

static int emit_buffer(FILE *fp, void *ctx, char errtext[128])
{
    const tt_strbuf *b = ctx;
    if (fwrite(b->p, 1, b->n, fp) != b->n) {
        snprintf(errtext, 128, "short write");
        return 1;
    }
    return 0;
}

int tt_figure_path_is_svg(const char *path)
{
    const size_t n = strlen(path);
    if (n < 4) return 0;
    const char *e = path + n - 4;
    return e[0] == '.' && (e[1] | 0x20) == 's' && (e[2] | 0x20) == 'v' && (e[3] | 0x20) == 'g';
}

tt_status tt_svg_write(const char *path, const tt_canvas *c, const tt_png_meta *meta)
{
    if (!c->vec || c->vec->oom)
        return tt__err(TT_ENOMEM, "cannot write '%s': out of memory (or past --max-memory) recording the "
                       "figure; hint: write a .png, or raise the cap", path);
    if (c->vec->overflow)
        return tt__err(TT_EARG, "cannot write '%s': more than %d shapes, too many for an SVG; "
                       "hint: write a .png, or draw fewer cells (e.g. x:narrow)", path, TT_SVG_MAX_ITEMS);
    tt_strbuf b = { .capped = 1 };      /* an SVG of a big figure is large: it counts */
    put_document(&b, c, meta);
    if (b.oom) {
        tt_strbuf_free(&b);
        return tt__err(TT_ENOMEM, "cannot write '%s': out of memory (or past --max-memory); "
                       "hint: write a .png, or raise the cap", path);
    }
    const tt_status st = tt__write_file(path, "figure", emit_buffer, &b);
    tt_strbuf_free(&b);
    return st;
}
