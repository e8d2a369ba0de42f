/*
** test_figure.c — figures: colour maps, font, heatmaps, bars, flow, PNG.
** Every written PNG is decoded and checked pixel by pixel, with odd-sized,
** asymmetric inputs so that a transposed or flipped picture cannot pass.
** Output goes to a fresh temp directory, removed at the end.
*/
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "figure/figure.h"
#include "figure/flow.h"
#include "figure/font.h"
#include "tt_internal.h"


static char tmpdir[256];

static const char *tpath(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Whether a figure writer left a temporary file in the test folder: the
   ".name.tt-tmp-PID" fallback of png.c (O_TMPFILE leaves none by design). */
static int temp_left(void)
{
    DIR *d = opendir(tmpdir);
    int found = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        found |= strstr(e->d_name, ".tt-tmp-") != NULL;
    if (d) closedir(d);
    return found;
}

static uint32_t pix(const uint8_t *px, int w, int x, int y)
{
    const uint8_t *p = px + ((size_t)y * (size_t)w + (size_t)x) * 3;
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static int is_grey(uint32_t c) { return (c >> 16 & 0xff) == (c >> 8 & 0xff) && (c >> 8 & 0xff) == (c & 0xff); }

static int near_rgb(uint32_t a, uint32_t b, int tol)
{
    for (int k = 0; k < 24; k += 8)
        if (abs((int)(a >> k & 0xff) - (int)(b >> k & 0xff)) > tol) return 0;
    return 1;
}

/* Top-left interior pixel of shown cell (p, i, j). */
static void cell_xy(const tt_heatmap_geom *g, int p, int i, int j, int *x, int *y)
{
    *x = g->x0 + (p % g->gcols) * g->dx + j * g->cell_w + 2;
    *y = g->y0 + (p / g->gcols) * g->dy + i * g->cell_h + 2;
}

static char *slurp(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)*n + 1);
    if (b && fread(b, 1, (size_t)*n, f) != (size_t)*n) { free(b); b = NULL; }
    fclose(f);
    return b;
}

static int contains(const char *hay, long n, const char *needle)
{
    const size_t m = strlen(needle);
    for (long i = 0; i + (long)m <= n; i++)
        if (!memcmp(hay + i, needle, m)) return 1;
    return 0;
}

/* ===== Colour maps ===== */

static void test_cmap(void)
{
    CHECK("viridis starts at #440154", tt_cmap_rgb(TT_CMAP_VIRIDIS, 0.0) == 0x440154u);
    CHECK("viridis ends at #fde725", tt_cmap_rgb(TT_CMAP_VIRIDIS, 1.0) == 0xfde725u);
    CHECK("viridis clamps above 1", tt_cmap_rgb(TT_CMAP_VIRIDIS, 7.0) == 0xfde725u);
    CHECK("viridis midpoint #21918c", tt_cmap_rgb(TT_CMAP_VIRIDIS, 0.5) == 0x21918cu);
    CHECK("diverging centre is near white", tt_cmap_rgb(TT_CMAP_DIVERGING, 0.5) == 0xf7f7f7u);
    uint32_t lo = tt_cmap_rgb(TT_CMAP_DIVERGING, 0.0), hi = tt_cmap_rgb(TT_CMAP_DIVERGING, 1.0);
    CHECK("diverging low end is blue", (lo & 0xff) > (lo >> 16));
    CHECK("diverging high end is red", (hi >> 16) > (hi & 0xff));
    CHECK("gray ends", tt_cmap_rgb(TT_CMAP_GRAY, 0.0) == 0 && tt_cmap_rgb(TT_CMAP_GRAY, 1.0) == 0xffffffu);
    CHECK("NaN maps to the NaN colour", tt_cmap_rgb(TT_CMAP_VIRIDIS, NAN) == TT_FIG_NAN_RGB);
    int mono = 1;
    for (int i = 1; i <= 200; i++)
        mono &= tt_rgb_luma(tt_cmap_rgb(TT_CMAP_VIRIDIS, i / 200.0)) >
                tt_rgb_luma(tt_cmap_rgb(TT_CMAP_VIRIDIS, (i - 1) / 200.0));
    CHECK("viridis brightness rises monotonically", mono);
    CHECK("norm: linear", fabs(tt_cmap_norm(2.5, 0.0, 10.0) - 0.25) < 1e-12);
    const float got[3] = { (float)tt_cmap_norm(-1.0, -2.0, 2.0), (float)tt_cmap_norm(0.0, -2.0, 2.0),
                           (float)tt_cmap_norm(1.5, -2.0, 2.0) };
    const double want[3] = { 0.25, 0.5, 0.875 };
    check_close("norm: a diverging range", got, want, 3, 0.0, 1e-7);
    CHECK("norm: clamps", tt_cmap_norm(-3.0, 0.0, 1.0) == 0.0 && tt_cmap_norm(3.0, 0.0, 1.0) == 1.0);
    CHECK("norm: infinities", tt_cmap_norm(-INFINITY, 0.0, 1.0) == 0.0 && tt_cmap_norm(INFINITY, 0.0, 1.0) == 1.0);
    CHECK("norm: NaN stays NaN", isnan(tt_cmap_norm(NAN, 0.0, 1.0)));
    CHECK("cmap names", tt_cmap_from_name("viridis") == TT_CMAP_VIRIDIS &&
                        tt_cmap_from_name("diverging") == TT_CMAP_DIVERGING &&
                        tt_cmap_from_name("gray") == TT_CMAP_GRAY && tt_cmap_from_name("jet") == -1);
}

/* ===== Font ===== */

static void test_font(void)
{
    CHECK("width of 'L' at 1x is 5", tt_font_width("L", 1, 0) == 5);
    CHECK("width scales", tt_font_width("Key", 2, 0) == 2 * tt_font_width("Key", 1, 0));
    CHECK("digits are equal width", tt_font_width("1111", 1, 0) == tt_font_width("8888", 1, 0));
    CHECK("proportional: i narrower than m", tt_font_width("i", 1, 0) < tt_font_width("m", 1, 0));
    CHECK("UTF-8 sequence counts as one glyph", tt_font_width("\xc3\xa9", 1, 0) == tt_font_width("?", 1, 0));

    char out[64];
    int w = tt_font_fit(out, sizeof out, "a very long token label", 1, 0, 40);
    CHECK("fit: shortened to the width", w <= 40 && w > 0);
    CHECK("fit: ends with the ellipsis", out[strlen(out) - 1] == TT_FONT_ELLIPSIS);
    w = tt_font_fit(out, sizeof out, "cat", 2, 0, 200);
    CHECK("fit: short text unchanged", !strcmp(out, "cat") && w == tt_font_width("cat", 2, 0));

    /* 'L' has no symmetry: stem on the left, foot at the bottom */
    tt_canvas c;
    if (tt_canvas_init(&c, 12, 12) != TT_OK) { CHECK("canvas", 0); return; }
    tt_font_draw(&c, 1, 1, "L", 1, 0, 0x000000u);
    int stem = 1, foot = 1;
    for (int y = 0; y < 7; y++) stem &= tt_canvas_get(&c, 1, 1 + y) == 0;
    for (int x = 0; x < 5; x++) foot &= tt_canvas_get(&c, 1 + x, 7) == 0;
    CHECK("'L' stem on the left", stem);
    CHECK("'L' foot at the bottom", foot);
    CHECK("'L' top right is blank", tt_canvas_get(&c, 5, 1) == 0xffffffu);
    /* rotated a quarter turn: the foot becomes a column on the right going up,
       the stem the top row */
    tt_canvas_fill_rect(&c, 0, 0, 12, 12, 0xffffffu);
    tt_font_draw(&c, 1, 1, "L", 1, TT_FONT_UP, 0x000000u);
    int top = 1, side = 1;
    for (int x = 0; x < 7; x++) top &= tt_canvas_get(&c, 1 + x, 5) == 0;   /* stem */
    for (int y = 0; y < 5; y++) side &= tt_canvas_get(&c, 7, 1 + y) == 0;  /* foot */
    CHECK("rotated 'L': stem runs across the bottom", top);
    CHECK("rotated 'L': foot runs up the right", side);
    CHECK("rotated 'L': top left blank", tt_canvas_get(&c, 2, 1) == 0xffffffu);
    tt_canvas_free(&c);
}

/* ===== Heatmaps ===== */

/* 5 x 7 in [0, 1]: the maximum at (1, 5), -inf at (3, 0) and (3, 1), NaN
   at (4, 6). */
static void make_5x7(float *v)
{
    for (int i = 0; i < 35; i++) v[i] = (float)((i * 7) % 11) / 20.0f;
    v[1 * 7 + 5] = 1.0f;
    v[3 * 7 + 0] = v[3 * 7 + 1] = -INFINITY;
    v[4 * 7 + 6] = NAN;
}

static void test_heatmap_pixels(void)
{
    float v[35];
    make_5x7(v);
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);
    o.title = "weights";
    o.annotate = 0;
    tt_heatmap_geom g;
    tt_canvas c;
    if (tt_heatmap_render(&c, &g, v, 1, 5, 7, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    tt_canvas_free(&c);
    const char *path = tpath("h5x7.png");
    CHECK("heatmap written", tt_heatmap_write(path, v, 1, 5, 7, &o) == TT_OK);
    CHECK("no temporary file left", !temp_left());
    uint8_t *px;
    int w, h;
    if (tt_png_read_rgb(path, &px, &w, &h) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    CHECK("size matches the layout", w == g.width && h == g.height);
    CHECK("[0,1] data picks viridis on [0,1]", g.cmap == TT_CMAP_VIRIDIS && g.vmin == 0.0 && g.vmax == 1.0);
    CHECK("5 rows of 7 columns", g.rows == 5 && g.cols == 7);

    int x, y;
    cell_xy(&g, 0, 1, 5, &x, &y);
    CHECK("largest value has the top colour", pix(px, w, x, y) == tt_cmap_rgb(TT_CMAP_VIRIDIS, 1.0));
    cell_xy(&g, 0, 3, 1, &x, &y);   /* (1, 5) transposed / flipped would land elsewhere */
    CHECK("flipped position is not the top colour", pix(px, w, x, y) != tt_cmap_rgb(TT_CMAP_VIRIDIS, 1.0));
    cell_xy(&g, 0, 0, 0, &x, &y);
    CHECK("cell (0,0) has value 0: the bottom colour", pix(px, w, x, y) == tt_cmap_rgb(TT_CMAP_VIRIDIS, 0.0));
    cell_xy(&g, 0, 0, 1, &x, &y);
    CHECK("cell (0,1) = 0.35", near_rgb(pix(px, w, x, y), tt_cmap_rgb(TT_CMAP_VIRIDIS, 0.35), 2));

    /* masked cells: grey, two shades of hatching */
    int grey = 1, light = 0, dark = 0;
    cell_xy(&g, 0, 3, 0, &x, &y);
    for (int yy = y; yy < y + g.cell_h - 4; yy++)
        for (int xx = x; xx < x + g.cell_w - 4; xx++) {
            const uint32_t p = pix(px, w, xx, yy);
            grey &= is_grey(p);
            light += p == TT_FIG_HATCH_LIGHT;
            dark += p == TT_FIG_HATCH_DARK;
        }
    CHECK("-inf cell is grey", grey);
    CHECK("-inf cell is hatched (both shades)", light > 10 && dark > 10);
    cell_xy(&g, 0, 3, 2, &x, &y);
    CHECK("cell next to the masked ones is not hatched", !is_grey(pix(px, w, x, y)));
    cell_xy(&g, 0, 4, 6, &x, &y);
    CHECK("NaN cell has the NaN colour", pix(px, w, x, y) == TT_FIG_NAN_RGB);

    /* colour bar: brightest at the top, darker all the way down (8-bit
       rounding may wobble one step by a hair; 8 pixels apart it may not) */
    const int bx = g.bar_x + g.bar_w / 2;
    int mono = 1;
    for (int yy = g.bar_y + 1; yy < g.bar_y + g.bar_h; yy++) {
        const double l = tt_rgb_luma(pix(px, w, bx, yy));
        mono &= l <= tt_rgb_luma(pix(px, w, bx, yy - 1)) + 0.004;
        if (yy >= g.bar_y + 8) mono &= l < tt_rgb_luma(pix(px, w, bx, yy - 8));
    }
    CHECK("colour bar is monotonic", mono);
    CHECK("colour bar top is the top colour",
          near_rgb(pix(px, w, bx, g.bar_y), tt_cmap_rgb(TT_CMAP_VIRIDIS, 1.0), 3));
    CHECK("colour bar bottom is the bottom colour",
          near_rgb(pix(px, w, bx, g.bar_y + g.bar_h - 1), tt_cmap_rgb(TT_CMAP_VIRIDIS, 0.0), 3));

    /* legend swatches for -inf and NaN, right of the matrix */
    int nan_swatch = 0, hatch_swatch = 0;
    for (int yy = g.bar_y + g.bar_h; yy < h; yy++)
        for (int xx = g.bar_x; xx < w; xx++) {
            nan_swatch += pix(px, w, xx, yy) == TT_FIG_NAN_RGB;
            hatch_swatch += pix(px, w, xx, yy) == TT_FIG_HATCH_DARK;
        }
    CHECK("legend shows the NaN colour", nan_swatch > 100);
    CHECK("legend shows the hatching", hatch_swatch > 50);
    CHECK("white background", pix(px, w, 2, 2) == 0xffffffu && pix(px, w, w - 3, h - 3) == 0xffffffu);
    free(px);

    /* tEXt chunks, no time chunk */
    o.meta.source = "lessons/03_causal_mask.lua:42";
    o.meta.shape = "[Nq=5,Nk=7]";
    o.meta.title = "weights";
    CHECK("written with meta", tt_heatmap_write(path, v, 1, 5, 7, &o) == TT_OK);
    long n;
    char *bytes = slurp(path, &n);
    CHECK("file readable", bytes != NULL);
    if (bytes) {
        CHECK("tEXt Software", contains(bytes, n, "Software") && contains(bytes, n, "tensortrace"));
        CHECK("tEXt Source", contains(bytes, n, "lessons/03_causal_mask.lua:42"));
        CHECK("tEXt Shape", contains(bytes, n, "[Nq=5,Nk=7]"));
        CHECK("tEXt Title", contains(bytes, n, "Title"));
        CHECK("no tIME chunk", !contains(bytes, n, "tIME"));
        free(bytes);
    }
}

static int count_luma(const uint8_t *px, int w, int x, int y, int cw, int ch, double lo, double hi)
{
    int n = 0;
    for (int yy = y; yy < y + ch; yy++)
        for (int xx = x; xx < x + cw; xx++) {
            const double l = tt_rgb_luma(pix(px, w, xx, yy));
            n += l >= lo && l <= hi;
        }
    return n;
}

static void test_heatmap_annotations(void)
{
    /* 3 x 5: 0 (dark purple) at (0, 0), 1 (yellow) at (2, 3), -inf at (1, 4) */
    float v[15] = { 0.0f, 0.5f, 0.25f, 0.5f, 0.5f,
                    0.5f, 0.5f, 0.5f, 0.5f, -INFINITY,
                    0.5f, 0.5f, 0.5f, 1.0f, 0.5f };
    const char *toks[5] = { "The", "cat", "sat", "on", "a-rather-long-token" };
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);
    o.xlabels = toks;
    o.nxlabels = 5;
    tt_heatmap_geom g;
    tt_canvas c;
    if (tt_heatmap_render(&c, &g, v, 1, 3, 5, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    CHECK("small matrices are annotated by default", g.annotate_scale > 0);
    const char *path = tpath("annot.png");
    CHECK("annotated heatmap written", tt_heatmap_write(path, v, 1, 3, 5, &o) == TT_OK);
    uint8_t *px;
    int w, h;
    if (tt_png_read_rgb(path, &px, &w, &h) != TT_OK) { tt_canvas_free(&c); CHECK(tt_errmsg(), 0); return; }
    CHECK("decoded equals rendered", w == c.w && h == c.h && !memcmp(px, c.px, (size_t)w * h * 3));
    int x, y;
    cell_xy(&g, 0, 0, 0, &x, &y);
    CHECK("light text inside the dark cell", count_luma(px, w, x, y, g.cell_w - 4, g.cell_h - 4, 0.8, 1.0) > 10);
    cell_xy(&g, 0, 2, 3, &x, &y);
    CHECK("dark text inside the light cell", count_luma(px, w, x, y, g.cell_w - 4, g.cell_h - 4, 0.0, 0.3) > 10);
    cell_xy(&g, 0, 1, 4, &x, &y);
    CHECK("'-inf' written in the masked cell", count_luma(px, w, x, y, g.cell_w - 4, g.cell_h - 4, 0.0, 0.3) > 10);
    free(px);
    tt_canvas_free(&c);

    /* without annotations those cells are flat */
    o.annotate = 0;
    if (tt_heatmap_render(&c, &g, v, 1, 3, 5, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    cell_xy(&g, 0, 0, 0, &x, &y);
    CHECK("annotate=0: dark cell has no text", count_luma(c.px, c.w, x, y, g.cell_w - 4, g.cell_h - 4, 0.8, 1.0) == 0);
    cell_xy(&g, 0, 2, 3, &x, &y);
    CHECK("annotate=0: light cell has no text", count_luma(c.px, c.w, x, y, g.cell_w - 4, g.cell_h - 4, 0.0, 0.3) == 0);
    tt_canvas_free(&c);
}

static void test_heatmap_diverging_and_grid(void)
{
    /* scores with negatives: diverging, centred on 0 */
    float s[3 * 5];
    for (int i = 0; i < 15; i++) s[i] = (float)(i % 5) - 1.5f - (float)(i / 5) * 0.25f;
    s[2 * 5 + 0] = -4.0f;   /* the most negative */
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);
    o.annotate = 0;
    tt_heatmap_geom g;
    tt_canvas c;
    if (tt_heatmap_render(&c, &g, s, 1, 3, 5, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    CHECK("negatives pick the diverging map", g.cmap == TT_CMAP_DIVERGING);
    CHECK("diverging scale is symmetric", g.vmin == -g.vmax && g.vmax == 4.0);
    int x, y;
    cell_xy(&g, 0, 2, 0, &x, &y);
    CHECK("most negative cell has the bottom colour", tt_canvas_get(&c, x, y) == tt_cmap_rgb(TT_CMAP_DIVERGING, 0.0));
    tt_canvas_free(&c);

    /* vmin/vmax override */
    o.has_vmin = o.has_vmax = 1;
    o.vmin = -1.0;
    o.vmax = 1.0;
    if (tt_heatmap_render(&c, &g, s, 1, 3, 5, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    CHECK("vmin/vmax override", g.vmin == -1.0 && g.vmax == 1.0);
    cell_xy(&g, 0, 0, 4, &x, &y);   /* 2.5 clamps to the top */
    CHECK("values past vmax clamp to the top colour", tt_canvas_get(&c, x, y) == tt_cmap_rgb(TT_CMAP_DIVERGING, 1.0));
    tt_canvas_free(&c);

    /* a grid of 3 panels [3, 3, 5]: the maximum in panel 2 at (0, 4) */
    float p3[3 * 15];
    for (int i = 0; i < 45; i++) p3[i] = (float)(i % 7) / 10.0f;
    p3[2 * 15 + 0 * 5 + 4] = 1.0f;
    tt_heatmap_opts_init(&o);
    o.annotate = 0;
    if (tt_heatmap_render(&c, &g, p3, 3, 3, 5, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    CHECK("3 panels side by side", g.gcols == 3 && g.grows == 1);
    cell_xy(&g, 2, 0, 4, &x, &y);
    CHECK("panel 3's maximum has the top colour (shared scale)",
          tt_canvas_get(&c, x, y) == tt_cmap_rgb(TT_CMAP_VIRIDIS, 1.0));
    cell_xy(&g, 0, 0, 4, &x, &y);
    CHECK("the same cell of panel 1 does not", tt_canvas_get(&c, x, y) != tt_cmap_rgb(TT_CMAP_VIRIDIS, 1.0));
    tt_canvas_free(&c);

    /* 8 heads: a 4 x 2 grid */
    float p8[8 * 9];
    for (int i = 0; i < 72; i++) p8[i] = (float)i / 72.0f;
    if (tt_heatmap_render(&c, &g, p8, 8, 3, 3, NULL) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    CHECK("8 panels in 4 columns, 2 rows", g.gcols == 4 && g.grows == 2);
    tt_canvas_free(&c);

    /* per-row scaling: each row's maximum takes the top colour */
    float r[3 * 4] = { 0.1f, 0.2f, 0.9f, 0.3f,
                       0.01f, 0.03f, 0.02f, 0.0f,
                       0.5f, 0.4f, 0.45f, 0.41f };
    tt_heatmap_opts_init(&o);
    o.annotate = 0;
    o.row_scale = 1;
    if (tt_heatmap_render(&c, &g, r, 1, 3, 4, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    const uint32_t top = tt_cmap_rgb(TT_CMAP_VIRIDIS, 1.0), bottom = tt_cmap_rgb(TT_CMAP_VIRIDIS, 0.0);
    int ok = 1;
    const int maxj[3] = { 2, 1, 0 }, minj[3] = { 0, 3, 1 };
    for (int i = 0; i < 3; i++) {
        cell_xy(&g, 0, i, maxj[i], &x, &y);
        ok &= tt_canvas_get(&c, x, y) == top;
        cell_xy(&g, 0, i, minj[i], &x, &y);
        ok &= tt_canvas_get(&c, x, y) == bottom;
    }
    CHECK("row_scale: every row spans the whole map", ok);
    tt_canvas_free(&c);
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void test_heatmap_large(void)
{
    /* 2049 x 1537 (odd): causal -inf above the diagonal, a hot row 1000 */
    const int R = 2049, C = 1537;
    float *v = malloc((size_t)R * C * sizeof *v);
    if (!v) { CHECK("alloc", 0); return; }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            v[(size_t)i * C + j] = j > i ? -INFINITY : (float)((i + 3 * j) % 97) / 200.0f;
    for (int j = 0; j <= 1000 && j < C; j++) v[(size_t)1000 * C + j] = 1.0f;
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);
    o.title = "big";
    o.downsample = "max";
    tt_heatmap_geom g;
    tt_canvas c;
    if (tt_heatmap_render(&c, &g, v, 1, R, C, &o) != TT_OK) { free(v); CHECK(tt_errmsg(), 0); return; }
    CHECK("downsampled to at most 1024 per side", g.rows <= 1024 && g.cols <= 1024 && g.block_r == 3 && g.block_c == 2);
    CHECK("no annotations when downsampled", g.annotate_scale == 0);
    int x = g.x0 + 300, y = g.y0 + 1000 / 3;   /* block max over row 1000 */
    CHECK("hot row survives block max", tt_canvas_get(&c, x, y) == tt_cmap_rgb(TT_CMAP_VIRIDIS, 1.0));
    x = g.x0 + g.cols - 2;
    y = g.y0 + 2;
    CHECK("upper right corner is masked grey", is_grey(tt_canvas_get(&c, x, y)));
    tt_canvas_free(&c);
    free(v);

    /* speed (a benchmark line, not a timed test): 2048 x 2048 to a file */
    const int N = 2048;
    v = malloc((size_t)N * N * sizeof *v);
    if (!v) { CHECK("alloc", 0); return; }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) v[(size_t)i * N + j] = j > i ? -INFINITY : (float)((i ^ j) & 255) / 255.0f;
    const double t0 = seconds();
    CHECK("2048x2048 written", tt_heatmap_write(tpath("big.png"), v, 1, N, N, NULL) == TT_OK);
    printf("bench: 2048x2048 heatmap rendered and written in %.3f s\n", seconds() - t0);
    free(v);
}

static void test_heatmap_errors_and_determinism(void)
{
    float v[35];
    make_5x7(v);
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);

    /* determinism: byte-identical files */
    const char *a = tpath("det_a.png"), *b = tpath("det_b.png");
    CHECK("first copy", tt_heatmap_write(a, v, 1, 5, 7, &o) == TT_OK);
    CHECK("second copy", tt_heatmap_write(b, v, 1, 5, 7, &o) == TT_OK);
    long na, nb;
    char *ba = slurp(a, &na), *bb = slurp(b, &nb);
    CHECK("same input gives the same bytes", ba && bb && na == nb && !memcmp(ba, bb, (size_t)na));
    free(ba);
    free(bb);

    /* missing directory */
    const char *missing = tpath("no/such/dir/x.png");
    tt_status st = tt_heatmap_write(missing, v, 1, 5, 7, &o);
    CHECK("missing dir: TT_EIO", st == TT_EIO);
    CHECK("missing dir: message names the op and the path",
          strstr(tt_errmsg(), "heatmap: cannot write '") && strstr(tt_errmsg(), missing));
    CHECK("missing dir: message names the folder", strstr(tt_errmsg(), "does not exist") != NULL);
    CHECK("missing dir: no file", !exists(missing));

    /* the path is a directory: the rename fails, the temp file goes away */
    const char *dir = tpath("adir");
    mkdir(dir, 0755);
    st = tt_heatmap_write(dir, v, 1, 5, 7, &o);
    CHECK("path is a directory: TT_EIO", st == TT_EIO && strstr(tt_errmsg(), dir));
    CHECK("path is a directory: no temp file left", !temp_left());
    rmdir(dir);

    /* non-finite vmin, crossed limits, empty input, unknown cmap */
    const char *p = tpath("bad.png");
    o.has_vmin = 1;
    o.vmin = NAN;
    st = tt_heatmap_write(p, v, 1, 5, 7, &o);
    CHECK("NaN vmin: TT_EARG", st == TT_EARG && strstr(tt_errmsg(), "vmin") && strstr(tt_errmsg(), "finite"));
    CHECK("NaN vmin: no file", !exists(p));
    o.vmin = 0.0;
    o.has_vmax = 1;
    o.vmax = INFINITY;
    st = tt_heatmap_write(p, v, 1, 5, 7, &o);
    CHECK("inf vmax: TT_EARG", st == TT_EARG && strstr(tt_errmsg(), "vmax"));
    o.vmax = -1.0;
    st = tt_heatmap_write(p, v, 1, 5, 7, &o);
    CHECK("vmin >= vmax: TT_EARG", st == TT_EARG && strstr(tt_errmsg(), "less than"));
    tt_heatmap_opts_init(&o);
    st = tt_heatmap_write(p, v, 1, 0, 7, &o);
    CHECK("empty: TT_EARG", st == TT_EARG && strstr(tt_errmsg(), "empty"));
    o.cmap = "jet";
    st = tt_heatmap_write(p, v, 1, 5, 7, &o);
    CHECK("unknown cmap: TT_EARG naming it", st == TT_EARG && strstr(tt_errmsg(), "'jet'"));
    CHECK("failures left no file", !exists(p) && !temp_left());

    /* a written file is only ever complete: an existing figure survives a
       failed rewrite */
    CHECK("good file", tt_heatmap_write(p, v, 1, 5, 7, NULL) == TT_OK);
    o.cmap = NULL;
    o.has_vmin = 1;
    o.vmin = INFINITY;
    tt_heatmap_write(p, v, 1, 5, 7, &o);
    uint8_t *px;
    int w, h;
    CHECK("old figure still decodes after a failed rewrite", tt_png_read_rgb(p, &px, &w, &h) == TT_OK);
    if (px) free(px);
}

/* Label lists of the wrong length are errors in the core too (a C caller
   gets the same message as a script, without the tensor's label unless it
   gives opts.name); the right lengths still draw, labels per data cell
   even when the matrix is shown by blocks. */
static void test_label_counts(void)
{
    float v[35];
    make_5x7(v);
    const char *toks[8] = { "a", "b", "c", "d", "e", "f", "g", "h" };
    const char *p = tpath("labels.png");
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);
    o.xlabels = toks;
    o.nxlabels = 6;
    tt_status st = tt_heatmap_write(p, v, 1, 5, 7, &o);
    CHECK("6 xlabels for 7 columns: TT_EARG", st == TT_EARG);
    CHECK("xlabels count: message", !strcmp(tt_errmsg(), "heatmap: 6 xlabels for the 7 columns of [5,7]; "
                                                          "hint: one label a column (\"\" for a blank one)"));
    o.nxlabels = 5;
    o.name = "scores";
    o.meta.shape = "[Nq=5,Nk=7]";
    st = tt_heatmap_write(p, v, 1, 5, 7, &o);
    CHECK("xlabels count = rows: the swap hint, the name and the named shape",
          st == TT_EARG && !strcmp(tt_errmsg(), "heatmap: 5 xlabels for the 7 columns of scores [Nq=5,Nk=7]; "
                                                "hint: xlabels name the columns (keys), ylabels the rows (queries)"));
    o.nxlabels = 7;
    o.ylabels = toks;
    o.nylabels = 1;
    st = tt_heatmap_write(p, v, 1, 5, 7, &o);
    CHECK("1 ylabel for 5 rows", st == TT_EARG && strstr(tt_errmsg(), "heatmap: 1 ylabel for the 5 rows of scores"));
    o.nylabels = 5;
    o.panel_titles = toks;
    o.npanel_titles = 2;
    st = tt_heatmap_write(p, v, 1, 5, 7, &o);
    CHECK("2 panel titles for 1 panel", st == TT_EARG &&
          strstr(tt_errmsg(), "heatmap: 2 panel_titles for the 1 panel of scores [Nq=5,Nk=7]"));
    CHECK("label count errors leave no file", !exists(p) && !temp_left());
    o.npanel_titles = 1;
    CHECK("the right counts draw", tt_heatmap_write(p, v, 1, 5, 7, &o) == TT_OK);

    /* 3-D: the lists serve every panel */
    float v3[70];
    for (int i = 0; i < 70; i++) v3[i] = v[i % 35];
    tt_heatmap_opts_init(&o);
    o.xlabels = toks;
    o.nxlabels = 8;
    st = tt_heatmap_write(p, v3, 2, 5, 7, &o);
    CHECK("3-D: 8 xlabels for the 7 columns of each panel", st == TT_EARG &&
          strstr(tt_errmsg(), "heatmap: 8 xlabels for the 7 columns of each panel of [2,5,7]"));

    /* downsampled: the count is the data's, and the labels land on blocks */
    const int64_t R = 3, C = 1030;
    float *big = malloc((size_t)(R * C) * sizeof *big);
    const char **many = malloc((size_t)C * sizeof *many);
    if (!big || !many) { free(big); free(many); CHECK("out of memory", 0); return; }
    for (int64_t i = 0; i < R * C; i++) big[i] = (float)(i % 13);
    for (int64_t j = 0; j < C; j++) many[j] = "t";
    tt_heatmap_opts_init(&o);
    o.xlabels = many;
    o.nxlabels = (int)C / 2;   /* one a shown block: still wrong */
    tt_canvas c;
    st = tt_heatmap_render(&c, NULL, big, 1, R, C, &o);
    CHECK("downsampled: labels count the data columns", st == TT_EARG &&
          strstr(tt_errmsg(), "heatmap: 515 xlabels for the 1030 columns of [3,1030]"));
    o.nxlabels = (int)C;
    tt_heatmap_geom g;
    st = tt_heatmap_render(&c, &g, big, 1, R, C, &o);
    CHECK("downsampled with one label a data column draws", st == TT_OK && g.block_c == 2);
    if (st == TT_OK) tt_canvas_free(&c);
    free(many);
    free(big);

    /* bars: one xlabel a bar, one label a row; shapes as the caller gave them */
    const float b[6] = { 1, 2, 3, 4, 5, 6 };
    tt_bars_opts bo;
    tt_bars_opts_init(&bo);
    bo.xlabels = toks;
    bo.nxlabels = 2;
    st = tt_bars_write(p, b, 2, 3, &bo);
    CHECK("bars: 2 xlabels for 3 bars", st == TT_EARG &&
          !strcmp(tt_errmsg(), "bars: 2 xlabels for the 3 bars of each row of [2,3]; "
                               "hint: xlabels name the bars (columns), labels the rows"));
    bo.nxlabels = 3;
    bo.series_labels = toks;
    bo.nseries = 4;
    bo.name = "p";
    st = tt_bars_write(p, b, 2, 3, &bo);
    CHECK("bars: 4 labels for 2 rows", st == TT_EARG &&
          !strcmp(tt_errmsg(), "bars: 4 labels for the 2 rows of p [2,3]; hint: one label a row, the title of its panel"));
    bo.nseries = 2;
    CHECK("bars: the right counts draw", tt_bars_write(p, b, 2, 3, &bo) == TT_OK);
    tt_bars_opts_init(&bo);
    bo.meta.shape = "[70]";
    st = tt_bars_write(p, v3, 1, 70, &bo);
    CHECK("bars: too big names the shape given", st == TT_EARG &&
          strstr(tt_errmsg(), "bars: [70] is too big for a bar chart"));
    bo.meta.shape = "[0]";
    st = tt_bars_write(p, b, 1, 0, &bo);
    CHECK("bars: empty names the shape given", st == TT_EARG &&
          strstr(tt_errmsg(), "bars: nothing to draw: the tensor [0] is empty"));
}

/* ===== Bars ===== */

static void test_bars(void)
{
    /* the saturation figure: softmax of [0.2,0.5,0.8], [2,5,8], [20,50,80] */
    const float logits[9] = { 0.2f, 0.5f, 0.8f, 2, 5, 8, 20, 50, 80 };
    float v[9];
    for (int r = 0; r < 3; r++) {
        const double m = (double)logits[r * 3 + 2];
        double sum = 0.0;
        for (int j = 0; j < 3; j++) sum += exp((double)logits[r * 3 + j] - m);
        for (int j = 0; j < 3; j++) v[r * 3 + j] = (float)(exp((double)logits[r * 3 + j] - m) / sum);
    }
    tt_bars_opts o;
    tt_bars_opts_init(&o);
    const char *series[3] = { "[0.2,0.5,0.8]", "[2,5,8]", "[20,50,80]" };
    o.title = "softmax saturates";
    o.series_labels = series;
    o.nseries = 3;
    const char *path = tpath("bars.png");
    CHECK("bars written", tt_bars_write(path, v, 3, 3, &o) == TT_OK);
    uint8_t *px;
    int w, h;
    if (tt_png_read_rgb(path, &px, &w, &h) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    /* each series has its colour; the third panel's last bar is the tallest
       bar of all and its first bar is (almost) nothing */
    int minx[3] = { w, w, w }, maxx[3] = { -1, -1, -1 }, top[3][3];
    const uint32_t col[3] = { 0x4c72b0u, 0xdd8452u, 0x55a868u };
    for (int s = 0; s < 3; s++)
        for (int b = 0; b < 3; b++) top[s][b] = h;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int s = 0; s < 3; s++)
                if (pix(px, w, x, y) == col[s]) {
                    if (x < minx[s]) minx[s] = x;
                    if (x > maxx[s]) maxx[s] = x;
                }
    CHECK("three series colours, left to right", maxx[0] < minx[1] && maxx[1] < minx[2]);
    for (int s = 0; s < 3; s++) {
        const int span = maxx[s] - minx[s] + 1;
        for (int y = 0; y < h; y++)
            for (int x = minx[s]; x <= maxx[s]; x++)
                if (pix(px, w, x, y) == col[s]) {
                    const int b = (x - minx[s]) * 3 / span;
                    if (y < top[s][b]) top[s][b] = y;
                }
    }
    CHECK("series 1 bars rise left to right", top[0][0] > top[0][1] && top[0][1] > top[0][2]);
    CHECK("series 3: the last bar is the tallest of all", top[2][2] < top[1][2] && top[2][2] < top[0][2]);
    free(px);
    CHECK("bars: empty is an error", tt_bars_write(path, v, 0, 3, &o) == TT_EARG);
    CHECK("bars: missing dir is TT_EIO", tt_bars_write(tpath("nope/b.png"), v, 3, 3, &o) == TT_EIO &&
                                         strstr(tt_errmsg(), "bars: cannot write"));
}

/* ===== Flow ===== */

static tt_tensor mk(uint64_t id, int ndim, const int64_t *shape, const char *const *names)
{
    tt_tensor t;
    memset(&t, 0, sizeof t);
    t.id = id;
    t.ndim = ndim;
    for (int i = 0; i < ndim; i++) { t.shape[i] = shape[i]; t.names[i] = names ? names[i] : NULL; }
    return t;
}

static void emit(tt_op op, const tt_tensor *out, const tt_tensor *a, const tt_tensor *b)
{
    tt_event ev;
    memset(&ev, 0, sizeof ev);
    ev.op = op;
    ev.output = out;
    if (a) ev.inputs[ev.ninputs++] = a;
    if (b) ev.inputs[ev.ninputs++] = b;
    ev.ninputs_total = ev.ninputs;
    tt_flow_record(&ev);
}

static void test_flow(void)
{
    const char *nx[3] = { "B", "N", "D" }, *nq[3] = { "B", "N", "Dh" }, *ns[3] = { "B", "N", "N" };
    const int64_t sx[3] = { 2, 5, 16 }, sq[3] = { 2, 5, 8 }, st[3] = { 2, 8, 5 }, ss[3] = { 2, 5, 5 };
    const int64_t sw[2] = { 16, 8 };
    tt_flow_reset();
    tt_tensor X = mk(1001, 3, sx, nx), Wq = mk(1002, 2, sw, NULL), Wk = mk(1003, 2, sw, NULL);
    tt_tensor Q = mk(1004, 3, sq, nq), K = mk(1005, 3, sq, nq), Kt = mk(1006, 3, st, NULL);
    tt_tensor S0 = mk(1007, 3, ss, ns), S = mk(1008, 3, ss, ns), M = mk(1009, 2, ss + 1, NULL);
    tt_tensor SM = mk(1010, 3, ss, ns), Wt = mk(1011, 3, ss, ns);
    tt_flow_set_label(1001, "X");          /* labelled before the section */
    tt_flow_reset();
    emit(TT_OP_MATMUL, &Q, &X, &Wq);
    emit(TT_OP_MATMUL, &K, &X, &Wk);
    emit(TT_OP_MT, &Kt, &K, NULL);
    emit(TT_OP_MATMUL, &S0, &Q, &Kt);
    tt_event div;
    memset(&div, 0, sizeof div);
    div.op = TT_OP_DIV;
    div.output = &S;
    div.inputs[0] = &S0;
    div.ninputs = div.ninputs_total = 1;
    div.has_scalar = 1;
    div.scalar = 8.0;
    tt_flow_record(&div);
    emit(TT_OP_CAUSAL_MASK, &M, NULL, NULL);
    emit(TT_OP_MASKED_FILL, &SM, &S, &M);
    emit(TT_OP_SOFTMAX, &Wt, &SM, NULL);
    tt_flow_set_label(1004, "Q");
    tt_flow_set_label(1005, "K");
    tt_flow_set_label(1008, "scores");     /* labels arrive after the events */
    tt_flow_set_label(1011, "weights");

    char text[2048];
    tt_flow_describe(text, sizeof text);
    CHECK("flow: X box with named shape", strstr(text, "X [B=2,N=5,D=16]\n") != NULL);
    CHECK("flow: X -> Q via matmul", strstr(text, "X -> Q: matmul\n") != NULL);
    CHECK("flow: X -> K via matmul", strstr(text, "X -> K: matmul\n") != NULL);
    CHECK("flow: Q -> scores: matmul, div", strstr(text, "Q -> scores: matmul, div 8\n") != NULL);
    CHECK("flow: K -> scores walks through mT", strstr(text, "K -> scores: mT, matmul, div 8\n") != NULL);
    CHECK("flow: scores -> weights: masked_fill, softmax",
          strstr(text, "scores -> weights: masked_fill, softmax\n") != NULL);
    CHECK("flow: unlabelled weights matrices are no boxes", strstr(text, "[16,8]") == NULL);
    CHECK("flow: no arrow skips a labelled tensor", strstr(text, "X -> scores") == NULL &&
                                                  strstr(text, "Q -> weights") == NULL);
    if (check_failed) printf("%s", text);

    tt_flow_opts fo;
    memset(&fo, 0, sizeof fo);
    fo.title = "Causal self-attention";
    const char *path = tpath("flow.png");
    CHECK("flow written", tt_flow_write(path, &fo) == TT_OK);
    uint8_t *px;
    int w, h;
    if (tt_png_read_rgb(path, &px, &w, &h) == TT_OK) {
        int fill = 0;
        for (int i = 0; i < w * h; i++) fill += pix(px, w, i % w, i / w) == 0xeaf1fbu;
        CHECK("flow: boxes drawn", fill > 5 * 2000);
        free(px);
    } else {
        CHECK(tt_errmsg(), 0);
    }

    /* a new section forgets the events (labels stay) */
    tt_flow_reset();
    CHECK("flow: empty section is an error", tt_flow_write(tpath("flow2.png"), &fo) == TT_EARG &&
                                             strstr(tt_errmsg(), "nothing to draw"));
    CHECK("flow: error leaves no file", !exists(tpath("flow2.png")));

    /* bounded memory: far more events than the ring holds still work */
    tt_tensor a = mk(5000, 3, sq, nq), b;
    tt_flow_set_label(5000, "start");
    for (int i = 1; i <= 10000; i++) {
        b = mk(5000 + (uint64_t)i, 3, sq, nq);
        emit(TT_OP_ADD, &b, &a, NULL);
        a = b;
    }
    tt_flow_set_label(15000, "end");
    tt_flow_describe(text, sizeof text);
    CHECK("flow: the ring keeps the latest events", strstr(text, "end [B=2,N=5,Dh=8]") != NULL &&
                                                  strstr(text, "start") == NULL);
    tt_flow_reset();
}

/* ===== Layout: text that fits its room ===== */

static void test_wrap_and_titles(void)
{
    char lines[3][TT_FONT_WRAP_LEN];
    int n = tt_font_wrap("matmul, add, view, transpose", 2, 0, 200, lines, 3);
    CHECK("wrap: two balanced lines", n == 2 && !strcmp(lines[0], "matmul, add,") &&
                                      !strcmp(lines[1], "view, transpose"));
    CHECK("wrap: one line when it fits", tt_font_wrap("softmax", 2, 0, 200, lines, 3) == 1 &&
                                         !strcmp(lines[0], "softmax"));
    CHECK("wrap: a word wider than the room is 0", tt_font_wrap("a verylongwordindeed", 2, 0, 60, lines, 3) == 0);
    CHECK("wrap: more lines than allowed is 0", tt_font_wrap("a b c d e f", 2, 0, 10, lines, 3) == 0);
    CHECK("wrap: newline always breaks", tt_font_wrap("a\nb", 2, 0, 500, lines, 3) == 2 &&
                                         !strcmp(lines[0], "a") && !strcmp(lines[1], "b"));

    const char *long_title = "Causal tiles: 1 = full, 0.5 = diagonal (masked inside), 0 = skipped";
    tt_font_title t;
    tt_font_title_layout(&t, long_title, 660);
    int ok = t.nlines >= 2 && t.w <= 660;
    char joined[512] = "";
    for (int k = 0; k < t.nlines; k++) {
        ok &= tt_font_width(t.line[k], t.scale, TT_FONT_BOLD) <= 660;
        if (k) strcat(joined, " ");
        strcat(joined, t.line[k]);
    }
    CHECK("title: wrapped within the room, nothing dropped", ok && !strcmp(joined, long_title));
    tt_font_title_layout(&t, "Scores", 660);
    CHECK("title: short titles stay large on one line", t.nlines == 1 && t.scale == 3);
    tt_font_title_layout(&t, "", 660);
    CHECK("title: empty has no lines", t.nlines == 0 && t.h == 0);

    /* a long title does not widen a heatmap: the same width as without */
    float v[16];
    for (int i = 0; i < 16; i++) v[i] = (float)(i % 5) / 4.0f;
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);
    o.colorbar = 0;
    tt_heatmap_geom g0, g1;
    tt_canvas c;
    if (tt_heatmap_render(&c, &g0, v, 1, 4, 4, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    tt_canvas_free(&c);
    o.title = long_title;
    if (tt_heatmap_render(&c, &g1, v, 1, 4, 4, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    CHECK("heatmap: a long title keeps the width", g1.width == g0.width);
    CHECK("heatmap: the title takes height instead", g1.height > g0.height);
    tt_canvas_free(&c);
    /* a very narrow grid grows only to the minimum text width */
    o.title = "GQA, H=8 query heads, G=2 K/V heads";
    if (tt_heatmap_render(&c, &g1, v, 1, 8, 2, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    CHECK("heatmap: narrow grid, modest width", g1.width <= 360 + 2 * 36 + 8);
    tt_canvas_free(&c);
}

/* The annotations of every cell keep at least `pad` pixels from its edges:
   no pixel near the edge differs from the cell's own colour. */
static int annotations_clear_of_edges(const tt_canvas *c, const tt_heatmap_geom *g, int P, int pad)
{
    const int sep = g->cell_w >= 24 && g->cell_h >= 24;
    for (int p = 0; p < P; p++)
        for (int i = 0; i < g->rows; i++)
            for (int j = 0; j < g->cols; j++) {
                const int x0 = g->x0 + (p % g->gcols) * g->dx + j * g->cell_w;
                const int y0 = g->y0 + (p / g->gcols) * g->dy + i * g->cell_h;
                const int w = g->cell_w - sep, h = g->cell_h - sep;
                const uint32_t fill = tt_canvas_get(c, x0, y0);
                for (int y = y0; y < y0 + h; y++)
                    for (int x = x0; x < x0 + w; x++) {
                        const int edge = x < x0 + pad || x >= x0 + w - pad || y < y0 + pad || y >= y0 + h - pad;
                        if (edge && tt_canvas_get(c, x, y) != fill) return 0;
                    }
            }
    return 1;
}

static void test_heatmap_annotation_fit(void)
{
    /* four 6x6 panels of scores with two decimals (the reported case):
       every number keeps a margin inside its cell */
    float v[4 * 36];
    uint32_t seed = 12345;
    for (int i = 0; i < 4 * 36; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((int)(seed >> 9 & 0x3ff) - 512) / 128.0f;   /* -4.00 .. 3.99 */
    }
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);
    o.decimals = 2;
    tt_heatmap_geom g;
    tt_canvas c;
    if (tt_heatmap_render(&c, &g, v, 4, 6, 6, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    CHECK("annot fit: numbers at full size", g.annotate_scale == 2 && g.decimals == 2);
    CHECK("annot fit: cells wider than the numbers plus margins", g.cell_w - 1 >= g.annotate_w + 2 * 10);
    CHECK("annot fit: no ink within 8 px of a cell edge", annotations_clear_of_edges(&c, &g, 4, 8));
    CHECK("annot fit: the figure stays slide-sized", g.width <= 1800 && g.height <= 1600);
    tt_canvas_free(&c);

    /* the same with weights in [0, 1] */
    for (int i = 0; i < 4 * 36; i++) v[i] = fabsf(v[i]) / 4.0f;
    if (tt_heatmap_render(&c, &g, v, 4, 6, 6, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    CHECK("annot fit (weights): full size, margins", g.annotate_scale == 2 &&
          annotations_clear_of_edges(&c, &g, 4, 8));
    tt_canvas_free(&c);

    /* far too many cells for numbers: fewer decimals first, then none;
       never numbers that do not fit */
    float *big = malloc(8 * 16 * 16 * sizeof *big);
    if (!big) { CHECK("out of memory", 0); return; }
    for (int i = 0; i < 8 * 256; i++) big[i] = -123.456f + (float)i * 0.37f;
    o.decimals = 3;
    o.annotate = 1;
    if (tt_heatmap_render(&c, &g, big, 8, 16, 16, &o) != TT_OK) { free(big); CHECK(tt_errmsg(), 0); return; }
    CHECK("annot crowded: fewer decimals or none", g.annotate_scale == 0 || g.decimals < 3);
    if (g.annotate_scale)
        CHECK("annot crowded: what is shown fits", g.cell_w - 1 >= g.annotate_w + 2 * 5 &&
              annotations_clear_of_edges(&c, &g, 8, 4));
    tt_canvas_free(&c);
    free(big);
}

/* Horizontal extent of the ink below the bars: the category labels. */
static void test_bars_labels(void)
{
    const float v[5] = { 0.3f, 0.2f, 0.1f, 0.25f, 0.15f };
    const char *names[5] = { "Q/K/V proj", "scores", "softmax", "weights @ V", "output proj" };
    tt_bars_opts o;
    tt_bars_opts_init(&o);
    o.xlabels = names;
    o.nxlabels = 5;
    tt_canvas c;
    if (tt_bars_render(&c, v, 1, 5, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    int bottom = 0;   /* lowest bar pixel: the zero line */
    for (int y = 0; y < c.h; y++)
        for (int x = 0; x < c.w; x++) if (tt_canvas_get(&c, x, y) == 0x4c72b0u) bottom = y;
    /* runs of columns with ink below the axis, split at gaps of 14 px */
    int runs[16][2], nruns = 0, last = -100;
    for (int x = 0; x < c.w; x++) {
        int ink = 0;
        for (int y = bottom + 10; y < c.h && !ink; y++) ink = tt_canvas_get(&c, x, y) == 0x1f1f1fu;
        if (!ink) continue;
        if (x - last > 14 && nruns < 16) { runs[nruns][0] = x; nruns++; }
        if (nruns) runs[nruns - 1][1] = x;
        last = x;
    }
    int ok = nruns == 5;
    for (int j = 0; j < 5 && ok; j++)
        ok = runs[j][1] - runs[j][0] + 1 == tt_font_width(names[j], 2, 0);
    CHECK("bars: five labels, each whole at full size (no ellipsis)", ok);
    if (!ok) printf("    %d runs\n", nruns);
    tt_canvas_free(&c);

    /* many long labels in little room: wrapped or small, never touching */
    const char *many[12] = { "query projection", "key projection", "value projection", "scores",
                             "scale", "mask", "softmax", "dropout", "weights @ V", "concat heads",
                             "output projection", "residual" };
    float w[36];
    for (int i = 0; i < 36; i++) w[i] = (float)(i % 12 + 1);
    o.xlabels = many;
    o.nxlabels = 12;
    if (tt_bars_render(&c, w, 3, 12, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    CHECK("bars: three panels of twelve stay slide-sized", c.w <= 1700);
    tt_canvas_free(&c);
}

static int rect_overlap(const tt_flow_rect *a, const tt_flow_rect *b, int pad)
{
    return a->x - pad < b->x + b->w && b->x < a->x + a->w + pad &&
           a->y - pad < b->y + b->h && b->y < a->y + a->h + pad;
}

/* The multi-head pipeline of lesson 6: three long labels fan out of X, a
   long arrow from V skips two rows. */
static void test_flow_labels(void)
{
    const char *nx[3] = { "B", "N", "D" }, *nh[4] = { "B", "H", "N", "Dh" }, *ns[4] = { "B", "H", "N", "N" };
    const int64_t sx[3] = { 2, 6, 64 }, sh[4] = { 2, 4, 6, 16 }, ss[4] = { 2, 4, 6, 6 }, sw[2] = { 64, 64 };
    const int64_t s3[3] = { 2, 6, 64 }, s4[4] = { 2, 6, 4, 16 };
    tt_flow_reset();
    uint64_t id = 7000;
    tt_tensor X = mk(id++, 3, sx, nx), W = mk(id++, 2, sw, NULL);
    tt_flow_set_label(X.id, "X");
    tt_tensor proj[3];
    const char *pname[3] = { "Q", "K", "V" };
    for (int k = 0; k < 3; k++) {   /* matmul, add, view, transpose */
        tt_tensor a = mk(id++, 3, s3, NULL), b = mk(id++, 3, s3, NULL), r = mk(id++, 4, s4, NULL);
        proj[k] = mk(id++, 4, sh, nh);
        emit(TT_OP_MATMUL, &a, &X, &W);
        emit(TT_OP_ADD, &b, &a, NULL);
        emit(TT_OP_VIEW, &r, &b, NULL);
        emit(TT_OP_TRANSPOSE, &proj[k], &r, NULL);
        tt_flow_set_label(proj[k].id, pname[k]);
    }
    tt_tensor Kt = mk(id++, 4, sh, NULL), S = mk(id++, 4, ss, ns), Wt = mk(id++, 4, ss, ns);
    tt_tensor Hd = mk(id++, 4, sh, nh), Cc = mk(id++, 3, s3, NULL), Y = mk(id++, 3, s3, NULL);
    emit(TT_OP_MT, &Kt, &proj[1], NULL);
    emit(TT_OP_MATMUL, &S, &proj[0], &Kt);
    emit(TT_OP_SOFTMAX, &Wt, &S, NULL);
    emit(TT_OP_MATMUL, &Hd, &Wt, &proj[2]);
    emit(TT_OP_TRANSPOSE, &Cc, &Hd, NULL);
    emit(TT_OP_MATMUL, &Y, &Cc, &W);
    tt_flow_set_label(S.id, "Scores");
    tt_flow_set_label(Wt.id, "Weights");
    tt_flow_set_label(Hd.id, "Heads");
    tt_flow_set_label(Cc.id, "Concat");
    tt_flow_set_label(Y.id, "Y");

    char text[4096];
    tt_flow_describe(text, sizeof text);
    CHECK("flow labels: X -> V with its four ops", strstr(text, "X -> V: matmul, add, view, transpose\n") != NULL);
    tt_flow_opts fo;
    memset(&fo, 0, sizeof fo);
    fo.title = "Multi-head attention: split, attend per head, merge, W_O";
    tt_flow_geom g;
    tt_canvas c;
    if (tt_flow_render(&c, &g, &fo) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    CHECK("flow labels: 9 boxes, 10 arrows", g.nboxes == 9 && g.narrows == 10);
    if (g.nboxes != 9 || g.narrows != 10) printf("    %d boxes, %d arrows\n%s", g.nboxes, g.narrows, text);
    CHECK("flow labels: every label found a clear spot", g.all_clear);
    int inside = 1, off_boxes = 1, off_heads = 1, apart = 1, clean = 1;
    for (int i = 0; i < g.narrows; i++) {
        const tt_flow_rect *r = &g.label[i];
        if (r->w == 0) continue;
        inside &= r->x >= 0 && r->y >= 0 && r->x + r->w <= g.width && r->y + r->h <= g.height;
        for (int b = 0; b < g.nboxes; b++) off_boxes &= !rect_overlap(r, &g.box[b], 4);
        for (int k = 0; k < g.narrows; k++) {
            off_heads &= !rect_overlap(r, &g.head[k], 3);
            if (k != i && g.label[k].w) apart &= !rect_overlap(r, &g.label[k], 6);
        }
        /* around the text only white and text ink: no arrow crosses it */
        for (int y = r->y - 3; y < r->y + r->h + 3; y++)
            for (int x = r->x - 3; x < r->x + r->w + 3; x++) {
                const uint32_t p = tt_canvas_get(&c, x, y);
                if (p != 0xffffffu && p != 0x3d4f61u) clean = 0;
            }
    }
    CHECK("flow labels: inside the canvas", inside);
    CHECK("flow labels: off the boxes", off_boxes);
    CHECK("flow labels: off the arrow heads", off_heads);
    CHECK("flow labels: apart from each other", apart);
    CHECK("flow labels: no arrow runs through a label", clean);
    int heads_in = 1;
    for (int k = 0; k < g.narrows; k++)
        heads_in &= g.head[k].x >= 0 && g.head[k].x + g.head[k].w <= g.width;
    CHECK("flow labels: arrow heads inside the canvas", heads_in);
    tt_canvas_free(&c);
    tt_flow_reset();
}

/* ===== Main ===== */

/* Masks, row sums, categories and tiles on a 5x7 (asymmetric) matrix, and
   a strided source drawn exactly as its contiguous copy. */
static void test_heatmap_options(void)
{
    float v[35];
    make_5x7(v);
    /* mask kind 0: (1,4) and (3,0); kind 1: column 6 (broadcast, stride 0 down) */
    uint8_t m0[35] = { 0 }, m1[7] = { 0, 0, 0, 0, 0, 0, 1 };
    m0[1 * 7 + 4] = 1;
    m0[3 * 7 + 0] = 1;
    const tt_fig_src masks[2] = { { NULL, m0, { 35, 7, 1 } }, { NULL, m1, { 0, 0, 1 } } };
    const char *names[2] = { "causal", "padding" };
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);
    o.masks = masks; o.mask_names = names; o.nmasks = 2;
    o.annotate = 0;
    tt_canvas c;
    tt_heatmap_geom g;
    CHECK("masked heatmap renders", tt_heatmap_render(&c, &g, v, 1, 5, 7, &o) == TT_OK);
    int x, y;
    cell_xy(&g, 0, 1, 4, &x, &y);
    const int cw = g.cell_w - 4, ch = g.cell_h - 4;
    int kinds_seen = 0, plain = 1;
    for (int yy = y; yy < y + ch; yy++)
        for (int xx = x; xx < x + cw; xx++) {
            const uint32_t px = tt_canvas_get(&c, xx, yy);
            kinds_seen |= px == 0xb0641eu ? 1 : px == 0x2e5d92u ? 2 : 0;
        }
    CHECK("mask kind 0 hatches cell (1,4) in its colour only", kinds_seen == 1);
    cell_xy(&g, 0, 2, 6, &x, &y);
    kinds_seen = 0;
    for (int yy = y; yy < y + ch; yy++)
        for (int xx = x; xx < x + cw; xx++) {
            const uint32_t px = tt_canvas_get(&c, xx, yy);
            kinds_seen |= px == 0xb0641eu ? 1 : px == 0x2e5d92u ? 2 : 0;
        }
    CHECK("the broadcast mask hatches column 7 in kind 1", kinds_seen == 2);
    /* (4,6) is NaN under mask kind 1: the NaN colour stays, under white
       strokes of kind 1's pattern (a cross hatch, lines where x or y % 7 == 0) */
    cell_xy(&g, 0, 4, 6, &x, &y);
    int nan_px = 0, white_ok = 1, white_n = 0;
    for (int yy = y; yy < y + ch; yy++)
        for (int xx = x; xx < x + cw; xx++) {
            const uint32_t px = tt_canvas_get(&c, xx, yy);
            const int stroke = xx % 7 == 0 || yy % 7 == 0;
            nan_px += px == TT_FIG_NAN_RGB;
            white_n += px == 0xffffffu;
            white_ok &= px == (stroke ? 0xffffffu : TT_FIG_NAN_RGB);
        }
    CHECK("a masked NaN keeps its colour under white strokes of its kind", white_ok && nan_px > 20 && white_n > 20);
    cell_xy(&g, 0, 0, 4, &x, &y);   /* (0,4) is not masked: one plain colour */
    const uint32_t c0 = tt_canvas_get(&c, x, y);
    for (int yy = y; yy < y + ch; yy++)
        for (int xx = x; xx < x + cw; xx++) plain &= tt_canvas_get(&c, xx, yy) == c0;
    CHECK("an unmasked cell stays plain", plain);
    /* causal, padding, the -inf of make_5x7 that no mask covers, and its
       NaN, which shows under its mask */
    CHECK("four legend entries, right of the grid", g.legend_n == 4 &&
          g.legend_x > g.x0 + 7 * g.cell_w);
    CHECK("the last legend entry is NaN's colour",
          tt_canvas_get(&c, g.legend_x + 11, g.legend_y + 32 * 3 + 11) == TT_FIG_NAN_RGB);
    int strokes[2] = { 0, 0 };
    for (int k = 0; k < 2; k++)
        for (int yy = 0; yy < 22; yy++)
            for (int xx = 0; xx < 22; xx++)
                strokes[k] += tt_canvas_get(&c, g.legend_x + xx, g.legend_y + 32 * k + yy) == (k ? 0x2e5d92u : 0xb0641eu);
    CHECK("legend swatches: kind 0 then kind 1", strokes[0] > 20 && strokes[1] > 20);
    tt_canvas_free(&c);

    /* annotated: a masked cell holding exactly 0 shows the hatch alone; a
       masked cell with another value shows its number on a white patch */
    float z[35];
    memcpy(z, v, sizeof z);
    z[1 * 7 + 4] = 0.0f;                         /* masked, exactly 0 */
    z[3 * 7 + 0] = 0.25f;                        /* masked, not 0 */
    o.annotate = 1;
    CHECK("annotated masked heatmap renders", tt_heatmap_render(&c, &g, z, 1, 5, 7, &o) == TT_OK);
    int whites[2] = { 0, 0 };
    const int cells[2][2] = { { 1, 4 }, { 3, 0 } };
    for (int k = 0; k < 2; k++) {
        cell_xy(&g, 0, cells[k][0], cells[k][1], &x, &y);
        for (int yy = y; yy < y + ch; yy++)
            for (int xx = x; xx < x + cw; xx++) whites[k] += tt_canvas_get(&c, xx, yy) == 0xffffffu;
    }
    CHECK("a masked 0 carries no number (no white patch)", whites[0] == 0);
    CHECK("a masked 0.25 carries its number on a white patch", whites[1] > 20);
    tt_canvas_free(&c);
    o.annotate = 0;

    /* a strided (transposed) source draws as its contiguous copy */
    float vt[35];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 7; j++) vt[j * 5 + i] = v[i * 7 + j];
    const tt_fig_src st = { vt, NULL, { 35, 1, 5 } };
    tt_canvas c2;
    tt_heatmap_opts_init(&o);
    CHECK("strided render", tt_heatmap_render_src(&c2, NULL, &st, 1, 5, 7, &o) == TT_OK);
    CHECK("contiguous render", tt_heatmap_render(&c, NULL, v, 1, 5, 7, &o) == TT_OK);
    CHECK("strided == contiguous, pixel for pixel", c.w == c2.w && c.h == c2.h &&
          !memcmp(c.px, c2.px, (size_t)c.w * (size_t)c.h * 3));
    tt_canvas_free(&c); tt_canvas_free(&c2);

    /* row sums: margin right of the grid, neutral grey, ink in it */
    tt_heatmap_opts_init(&o);
    o.row_sums = 1;
    CHECK("row sums render", tt_heatmap_render(&c, &g, v, 1, 5, 7, &o) == TT_OK);
    CHECK("the margin sits right of column 7", g.sums_w > 0 && g.sums_x >= g.x0 + 7 * g.cell_w);
    CHECK("margin is neutral grey", tt_canvas_get(&c, g.sums_x + 2, g.y0 + 2) == 0xf0f0f0u);
    int ink = 0;
    for (int yy = g.y0 + 4 * g.cell_h; yy < g.y0 + 5 * g.cell_h; yy++)
        for (int xx = g.sums_x; xx < g.sums_x + g.sums_w; xx++)
            ink += tt_rgb_luma(tt_canvas_get(&c, xx, yy)) < 0.3;
    CHECK("row 5's sum is printed", ink > 10);
    tt_canvas_free(&c);

    /* huge colour range: 1 of eye(3) sits mid-scale (no int overflow) */
    const float eye[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 };
    tt_heatmap_opts_init(&o);
    o.has_vmin = o.has_vmax = 1; o.vmin = -1e308; o.vmax = 1e308; o.annotate = 0; o.cmap = "viridis";
    CHECK("eye(3) on [-1e308, 1e308]", tt_heatmap_render(&c, &g, eye, 1, 3, 3, &o) == TT_OK);
    cell_xy(&g, 0, 0, 0, &x, &y);
    CHECK("the value 1 takes the middle colour", near_rgb(tt_canvas_get(&c, x, y), tt_cmap_rgb(TT_CMAP_VIRIDIS, 0.5), 3));
    tt_canvas_free(&c);

    /* categories with tile borders: codes 1..3 in their colours, a legend */
    float codes[35];
    for (int k = 0; k < 35; k++) codes[k] = (float)(1 + (k / 7 + 2 * (k % 7)) % 3);
    const char *cats[3] = { "skipped", "computed", "masked" };
    tt_heatmap_opts_init(&o);
    o.categories = cats; o.ncategories = 3; o.tile_rows = 2; o.tile_cols = 3;
    CHECK("categories render", tt_heatmap_render(&c, &g, codes, 1, 5, 7, &o) == TT_OK);
    int ok = 1;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 7; j++) {
            cell_xy(&g, 0, i, j, &x, &y);
            ok &= tt_canvas_get(&c, x + 2, y + 2) == tt_fig_colour((int)codes[i * 7 + j] - 1);
        }
    CHECK("each cell in its category's colour", ok);
    CHECK("no colour bar with categories", g.bar_h == 0 && g.legend_n == 3);
    CHECK("legend swatch 3 in colour 3", tt_canvas_get(&c, g.legend_x + 10, g.legend_y + 64 + 10) == tt_fig_colour(2));
    CHECK("a tile border under row 2", tt_canvas_get(&c, g.x0 + g.cell_w / 2, g.y0 + 2 * g.cell_h - 1) == 0x202020u);
    CHECK("no border under row 1", tt_canvas_get(&c, g.x0 + g.cell_w / 2, g.y0 + g.cell_h + 3) != 0x202020u);
    CHECK("a tile border after column 3", tt_canvas_get(&c, g.x0 + 3 * g.cell_w - 1, g.y0 + g.cell_h / 2) == 0x202020u);
    tt_canvas_free(&c);
    codes[8] = 4;
    const tt_status bad = tt_heatmap_render(&c, NULL, codes, 1, 5, 7, &o);
    CHECK("a code past the categories is refused", bad == TT_EARG &&
          strstr(tt_errmsg(), "categories: cell (2, 2) of [5,7] holds 4, not a category code 1..3"));
}

/* tt_head_groups: boxes where the geometry says, in their group's colour;
   each query head's line reaches the K/V head ceil(h / (Q / G)); a K/V
   head sits under the middle of its group; bad options are TT_EARG. */
static void test_head_groups(void)
{
    const int kv[3] = { 8, 2, 1 };
    const char *const titles[3] = { "MHA", "GQA", "MQA" };
    tt_head_groups_opts o;
    tt_head_groups_opts_init(&o);
    o.title = "Query heads and their K/V heads";
    o.q_heads = 8;
    o.kv_heads = kv;
    o.nvariants = 3;
    o.titles = titles;
    o.ntitles = 3;
    tt_canvas c;
    tt_head_groups_geom g;
    CHECK("head_groups renders", tt_head_groups_render(&c, &g, &o) == TT_OK && c.px);
    if (!c.px) return;
    CHECK("head_groups: three panels", g.npanels == 3 && g.width == c.w && g.height == c.h);
    const int bw = g.box_w, bh = g.box_h;
    for (int v = 0; v < 3; v++) {
        const int per = 8 / kv[v];
        for (int h = 0; h < 8; h++) {   /* query box: its group's colour on the border */
            const uint32_t want = tt_fig_colour(h / per);
            CHECK("head_groups: query box border in its group's colour",
                  near_rgb(tt_canvas_get(&c, g.q_x[h] + 1, g.q_y[v] + bh / 2), want, 40));
            CHECK("head_groups: query box filled (not white)",
                  tt_canvas_get(&c, g.q_x[h] + 4, g.q_y[v] + 4) != 0xffffffu);
        }
        for (int k = 0; k < kv[v]; k++) {
            CHECK("head_groups: K/V box filled with its group's colour",
                  tt_canvas_get(&c, g.kv_x[v][k] + 3, g.kv_y[v] + bh - 5) == tt_fig_colour(k));
            /* under the middle of its query heads k*per .. (k+1)*per - 1 */
            const int mid = (g.q_x[k * per] + g.q_x[(k + 1) * per - 1]) / 2;
            CHECK("head_groups: K/V box under the middle of its group", abs(g.kv_x[v][k] - mid) <= 1);
        }
        CHECK("head_groups: no K/V box beyond the count", kv[v] == 8 || g.kv_x[v][kv[v]] == 0);
        /* the middle of each line is in the reader's group colour:
           query head h (1-based) reads K/V head ceil(h / per) */
        for (int h = 0; h < 8; h++) {
            const int k = h / per;
            const double x0 = g.q_x[h] + bw / 2.0, y0 = g.q_y[v] + bh;
            const double x1 = g.kv_x[v][k] + bw / 2.0, y1 = g.kv_y[v];
            const int mx = (int)((x0 + x1) / 2), my = (int)((y0 + y1) / 2);
            CHECK("head_groups: line pixel between a query head and its K/V head",
                  near_rgb(tt_canvas_get(&c, mx, my), tt_fig_colour(k), 60));
        }
    }
    /* GQA: Q1's line leans towards KV1, so straight below Q1 is blank */
    CHECK("head_groups: GQA line of Q1 is not vertical",
          tt_canvas_get(&c, g.q_x[0] + bw / 2, (g.q_y[1] + bh + g.kv_y[1]) / 2) == 0xffffffu);
    CHECK("head_groups: MHA K/V head h right under query head h",
          g.kv_x[0][0] == g.q_x[0] && g.kv_x[0][7] == g.q_x[7]);
    CHECK("head_groups: MQA's single K/V head under the middle",
          abs(g.kv_x[2][0] - (g.q_x[0] + g.q_x[7]) / 2) <= 1);

    /* written: the same pixels, decoded */
    CHECK("head_groups writes", tt_head_groups_write(tpath("head_groups.png"), &o) == TT_OK);
    uint8_t *px = NULL;
    int w = 0, h = 0;
    CHECK("head_groups PNG decodes", tt_png_read_rgb(tpath("head_groups.png"), &px, &w, &h) == TT_OK);
    CHECK("head_groups PNG holds the rendered pixels",
          px && w == c.w && h == c.h && !memcmp(px, c.px, (size_t)w * (size_t)h * 3));
    free(px);
    tt_canvas_free(&c);
    CHECK("head_groups: unwritable path is TT_EIO naming the figure",
          tt_head_groups_write(tpath("no/such/dir/h.png"), &o) == TT_EIO &&
          strstr(tt_errmsg(), "head_groups: ") != NULL);

    /* errors */
    const int three[1] = { 3 };
    tt_head_groups_opts bad = o;
    bad.q_heads = 0;
    CHECK("head_groups: q_heads 0 refused", tt_head_groups_render(&c, NULL, &bad) == TT_EARG &&
          strstr(tt_errmsg(), "q_heads must be a whole number from 1 to 64, got 0") && !c.px);
    bad.q_heads = 65;
    CHECK("head_groups: q_heads 65 refused", tt_head_groups_render(&c, NULL, &bad) == TT_EARG);
    bad = o;
    bad.kv_heads = three;
    bad.nvariants = 1;
    bad.titles = NULL;
    CHECK("head_groups: 3 K/V heads for 8 query heads refused",
          tt_head_groups_render(&c, NULL, &bad) == TT_EARG &&
          strstr(tt_errmsg(), "kv_heads[1] = 3 does not divide q_heads = 8"));
    bad = o;
    bad.ntitles = 2;
    CHECK("head_groups: title count checked", tt_head_groups_render(&c, NULL, &bad) == TT_EARG &&
          strstr(tt_errmsg(), "2 titles for the 3 variants"));
    bad = o;
    bad.nvariants = 0;
    CHECK("head_groups: no variant refused", tt_head_groups_render(&c, NULL, &bad) == TT_EARG);
    /* 64 query heads, the most: no labels fit, still drawn */
    const int sixty_four[2] = { 64, 4 };
    bad = o;
    bad.q_heads = 64;
    bad.kv_heads = sixty_four;
    bad.nvariants = 2;
    bad.titles = NULL;
    CHECK("head_groups: 64 query heads drawn", tt_head_groups_render(&c, &g, &bad) == TT_OK &&
          c.w <= 1600 && g.q_x[63] + g.box_w < c.w);
    tt_canvas_free(&c);
}

/* ===== SVG ===== */

/* The <rect .../> at x, y in the SVG text (the first one there, after the
   full-canvas background), with its width, height and fill; 0 if none. */
static int svg_rect_at(const char *svg, int x, int y, int *w, int *h, uint32_t *fill)
{
    char key[64];
    snprintf(key, sizeof key, "<rect x=\"%d\" y=\"%d\" ", x, y);
    const char *r = strstr(svg, key);
    unsigned rgb;
    if (!r || sscanf(r + strlen(key), "width=\"%d\" height=\"%d\" fill=\"#%6x\"", w, h, &rgb) != 3) return 0;
    *fill = rgb;
    return 1;
}

static int same_file(const char *a, const char *b)
{
    long na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    const int same = x && y && na == nb && !memcmp(x, y, (size_t)na);
    free(x); free(y);
    return same;
}

static void test_svg(void)
{
    /* 1. a heatmap's cells sit where the PNG's are, in the PNG's colours */
    float v[35];
    make_5x7(v);
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);
    o.title = "weights <script>alert(1)</script> & \"more\"";
    o.meta.source = "lessons/03_causal_mask.lua:42";
    o.meta.shape = "[Nq=5,Nk=7]";
    o.meta.title = o.title;
    static const char *const xl[7] = { "na\xc3\xafve", "bad\xff", "ctl\x01", "a&b", "<i>", "s", "t" };
    o.xlabels = xl;
    o.nxlabels = 7;
    tt_heatmap_geom g;
    tt_canvas c;
    if (tt_heatmap_render(&c, &g, v, 1, 5, 7, &o) != TT_OK) { CHECK(tt_errmsg(), 0); return; }
    const char *svg = tpath("h5x7.svg"), *png = tpath("h5x7s.png");
    CHECK("svg written", tt__figure_save("heatmap", svg, &c, &o.meta) == TT_OK);
    CHECK("png written", tt__figure_save("heatmap", png, &c, &o.meta) == TT_OK);
    tt_canvas_free(&c);
    uint8_t *px = NULL;
    int w = 0, h = 0;
    long n = 0;
    char *text = slurp(svg, &n);
    if (!text || tt_png_read_rgb(png, &px, &w, &h) != TT_OK) { CHECK("read back", 0); free(text); free(px); return; }
    char head[128];
    snprintf(head, sizeof head, "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\"", w, h, w, h);
    CHECK("svg: the PNG's size", strstr(text, head) != NULL);
    CHECK("svg: no PNG bytes", memcmp(text, "<?xml", 5) == 0 && !contains(text, n, "IHDR"));
    int cells = 0, placed = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 7; j++) {
            if (i == 3 && j < 2) continue;   /* -inf: a pattern, checked below */
            const int x = g.x0 + j * g.cell_w, y = g.y0 + i * g.cell_h;
            int rw, rh;
            uint32_t fill;
            cells++;
            if (!svg_rect_at(text, x, y, &rw, &rh, &fill)) continue;
            /* the rect covers the cell (less the white rule), in the PNG's colour */
            placed += (rw == g.cell_w || rw == g.cell_w - 1) && (rh == g.cell_h || rh == g.cell_h - 1) &&
                      fill == pix(px, w, x, y) && fill == pix(px, w, x + rw - 1, y + rh - 1) &&
                      pix(px, w, x + rw, y + rh) != fill && pix(px, w, x - 1, y - 1) != fill;
        }
    CHECK("svg: every cell a rect at the PNG cell's pixels and colour", cells == 33 && placed == cells);
    char inf[2][128];
    for (int j = 0; j < 2; j++)
        snprintf(inf[j], sizeof inf[j], "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                 "fill=\"url(#tt-hatch)\"/>", g.x0 + j * g.cell_w, g.y0 + 3 * g.cell_h, g.cell_w - 1, g.cell_h - 1);
    CHECK("svg: -inf cells hatched", strstr(text, inf[0]) && strstr(text, inf[1]));
    CHECK("svg: hatch pattern defined once", strstr(text, "<pattern id=\"tt-hatch\"") != NULL &&
          strstr(strstr(text, "<pattern id=\"tt-hatch\"") + 1, "<pattern id=\"tt-hatch\"") == NULL);
    CHECK("svg: text is text", contains(text, n, ">weights &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;more&quot;</text>"));
    CHECK("svg: no raw markup from the title", !contains(text, n, "<script"));
    CHECK("svg: UTF-8 kept", contains(text, n, ">na\xc3\xafve</text>"));
    CHECK("svg: broken UTF-8 and control bytes become '?'", contains(text, n, ">bad?</text>") &&
          contains(text, n, ">ctl?</text>") && !contains(text, n, "\xff") && !contains(text, n, "\x01"));
    CHECK("svg: labels escaped", contains(text, n, ">a&amp;b</text>") && contains(text, n, ">&lt;i&gt;</text>"));
    CHECK("svg: meta in desc", contains(text, n, "<desc>Software: tensortrace") &&
          contains(text, n, "Source: lessons/03_causal_mask.lua:42") && contains(text, n, "Shape: [Nq=5,Nk=7]"));
    CHECK("svg: numbers have at most 2 decimals", !contains(text, n, ".000") && !contains(text, n, "e+") &&
          !contains(text, n, "-0\""));
    free(text);
    free(px);

    /* 2. deterministic, written by every figure; ".SVG" counts */
    CHECK("heatmap svg twice", tt_heatmap_write(tpath("a.svg"), v, 1, 5, 7, &o) == TT_OK &&
          tt_heatmap_write(tpath("b.SVG"), v, 1, 5, 7, &o) == TT_OK);
    CHECK("same input, same bytes; .SVG is SVG", same_file(tpath("a.svg"), tpath("b.SVG")));
    CHECK("the render + save bytes equal the write's", same_file(tpath("a.svg"), svg));
    const float bars[6] = { 0.2f, 0.5f, 0.8f, 2.0f, -5.0f, 8.0f };
    CHECK("bars svg", tt_bars_write(tpath("bars.svg"), bars, 2, 3, NULL) == TT_OK);
    text = slurp(tpath("bars.svg"), &n);
    CHECK("bars svg has text and bars", text && contains(text, n, "</text>") &&
          contains(text, n, "fill=\"#4c72b0\"") && contains(text, n, "</svg>\n"));
    free(text);
    CHECK("no temporary file left", !temp_left());

    /* a downsampled heatmap: one rect a run of equal cells in a row */
    const int D = 1100;
    float *flat = malloc((size_t)D * D * sizeof *flat);
    if (!flat) { CHECK("alloc", 0); return; }
    for (size_t k = 0; k < (size_t)D * D; k++) flat[k] = (k % D) < D / 2 ? 0.25f : 0.75f;
    if (tt_heatmap_render(&c, &g, flat, 1, D, D, NULL) == TT_OK) {
        CHECK("flat svg", tt__figure_save("heatmap", tpath("flat.svg"), &c, NULL) == TT_OK);
        tt_canvas_free(&c);
        text = slurp(tpath("flat.svg"), &n);
        int rw = 0, rh = 0;
        uint32_t fill = 0;
        CHECK("runs merged: half a row in one rect", text && g.cell_w == 1 &&
              svg_rect_at(text, g.x0, g.y0 + 7, &rw, &rh, &fill) && rw == g.cols / 2 && rh == 1);
        CHECK("runs merged: a small file", n < 200000);
        free(text);
    }
    free(flat);

    /* 3. a failed write leaves nothing */
    const char *missing = tpath("nodir/x.svg");
    CHECK("missing folder: TT_EIO", tt_heatmap_write(missing, v, 1, 5, 7, &o) == TT_EIO);
    CHECK("missing folder: the message", strstr(tt_errmsg(), "heatmap: cannot write") &&
          strstr(tt_errmsg(), "folder") && strstr(tt_errmsg(), "does not exist"));
    CHECK("missing folder: no file", !exists(missing) && !temp_left());

    /* 4. too many shapes: refused, no file; the PNG of it is fine.
       4 panels of 512 x 512 distinct cells (no runs to merge) */
    const int P = 4, N = 512;
    float *big = malloc((size_t)P * N * N * sizeof *big);
    if (!big) { CHECK("alloc", 0); return; }
    for (size_t k = 0; k < (size_t)P * N * N; k++) big[k] = (float)((k * 2654435761u) % 1000u) / 1000.0f;
    const char *huge = tpath("huge.svg");
    const tt_status st = tt_heatmap_write(huge, big, P, N, N, NULL);
    CHECK("huge svg: TT_EARG", st == TT_EARG);
    CHECK("huge svg: says why and what to do", strstr(tt_errmsg(), "too many for an SVG") &&
          strstr(tt_errmsg(), "hint: write a .png"));
    CHECK("huge svg: no file", !exists(huge) && !temp_left());
    CHECK("huge png: fine", tt_heatmap_write(tpath("huge.png"), big, P, N, N, NULL) == TT_OK);
    free(big);
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        remove(p);
    }
    closedir(d);
    rmdir(dir);
}

/* ===== Line charts ===== */

/* Whether a pixel within r of (x, y) is near colour rgb. */
static int colour_near(const tt_canvas *c, double x, double y, int r, uint32_t rgb, int tol)
{
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++)
            if (near_rgb(tt_canvas_get(c, (int)x + dx, (int)y + dy), rgb, tol)) return 1;
    return 0;
}

static void test_plot_lines(void)
{
    /* two series of different lengths; the second's x not sorted */
    const double x0[5] = { 1, 2, 3, 4, 5 }, y0[5] = { 0.5, 2.5, 1.0, 3.5, 3.0 };
    const double x1[4] = { 0.5, 4.5, 2.0, 3.0 }, y1[4] = { -1.0, 2.0, 0.0, -0.5 };
    const tt_plot_series s[2] = { { "first", x0, y0, 5, 5, NULL, 0 }, { "second", x1, y1, 4, 4, NULL, 0 } };
    tt_plot_opts o;
    tt_plot_opts_init(&o);
    o.title = "Two series";
    tt_canvas c;
    tt_plot_geom g;
    CHECK("plot renders", tt_plot_render(&c, &g, s, 2, &o) == TT_OK);
    /* along every segment, at a quarter and three quarters: the series' colour */
    int along = 1;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i + 1 < (k ? 4 : 5); i++) {
            const double *xs = k ? x1 : x0, *ys = k ? y1 : y0;
            for (int q = 1; q <= 3; q += 2) {
                const double t = q / 4.0;
                double px, py;
                tt_plot_point(&g, 0, 0, xs[i] + t * (xs[i + 1] - xs[i]), ys[i] + t * (ys[i + 1] - ys[i]), &px, &py);
                along &= colour_near(&c, px, py, 1, tt_plot_colour(k), 40);
            }
        }
    CHECK("each series' colour lies along its segments", along);
    /* a point well away from both lines stays background */
    double px, py;
    tt_plot_point(&g, 0, 0, 5.0, -1.0, &px, &py);
    CHECK("away from the lines: no series colour",
          !colour_near(&c, px, py, 2, tt_plot_colour(0), 60) && !colour_near(&c, px, py, 2, tt_plot_colour(1), 60));
    /* markers by default for small series: the point's centre in full colour */
    tt_plot_point(&g, 0, 0, x0[2], y0[2], &px, &py);
    CHECK("a marker at a data point", tt_canvas_get(&c, (int)px, (int)py) == tt_plot_colour(0));
    /* the data inside the plot area; the axis covers them */
    CHECK("axis covers the data", g.xlo <= 0.5 && g.xhi >= 5.0 && g.ylo <= -1.0 && g.yhi >= 3.5);
    /* linear ticks: one 1-2-5 step, the axis ends on ticks */
    int even = g.nxticks >= 3 && g.nyticks >= 3;
    for (int a = 0; a < 2 && even; a++) {
        const double *t = a ? g.yticks : g.xticks;
        const int n = a ? g.nyticks : g.nxticks;
        const double step = t[1] - t[0], m = step / pow(10.0, floor(log10(step) + 1e-9));
        even &= fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9;
        for (int k = 1; k < n; k++) even &= fabs(t[k] - t[k - 1] - step) < step * 1e-9;
        const double lo = a ? g.ylo : g.xlo, hi = a ? g.yhi : g.xhi;
        even &= t[0] >= lo && t[0] - step < lo && t[n - 1] <= hi && t[n - 1] + step > hi;
    }
    CHECK("linear ticks: even 1-2-5 steps, every one inside the axis", even);
    /* the legend: right of the plot area (never over the data), one entry a series */
    CHECK("legend on for two series, outside the area", g.legend_n == 2 && g.legend_x > g.ax + g.aw);
    CHECK("legend entry 2 in the second colour",
          colour_near(&c, g.legend_x + 4, g.legend_y + 32 + 11, 1, tt_plot_colour(1), 30));
    /* the PNG holds the rendered pixels, and the same input the same bytes */
    const char *a = tpath("plot_a.png"), *b = tpath("plot_b.png");
    CHECK("plot writes", tt_plot_write(a, s, 2, &o) == TT_OK && tt_plot_write(b, s, 2, &o) == TT_OK);
    long na, nb;
    char *ba = slurp(a, &na), *bb = slurp(b, &nb);
    CHECK("plot: same input, same bytes", ba && bb && na == nb && !memcmp(ba, bb, (size_t)na));
    free(ba);
    free(bb);
    uint8_t *px8;
    int w, h;
    CHECK("plot PNG reads back", tt_png_read_rgb(a, &px8, &w, &h) == TT_OK);
    CHECK("plot PNG has the canvas' pixels", w == c.w && h == c.h && !memcmp(px8, c.px, (size_t)w * h * 3));
    free(px8);
    tt_canvas_free(&c);

    /* one series: no legend; markers off past 20 points */
    double xs[30], ys[30];
    for (int i = 0; i < 30; i++) { xs[i] = i; ys[i] = i * i; }
    const tt_plot_series one = { NULL, xs, ys, 30, 30, NULL, 0 };
    CHECK("one long series renders", tt_plot_render(&c, &g, &one, 1, NULL) == TT_OK);
    CHECK("one series: no legend", g.legend_n == 0);
    tt_plot_point(&g, 0, 0, xs[10], ys[10], &px, &py);
    int wide = 0;   /* a marker is ~9 px across; the line alone ~3 */
    for (int dx = -6; dx <= 6; dx++) wide += near_rgb(tt_canvas_get(&c, (int)px + dx, (int)py - 8), tt_plot_colour(0), 40);
    CHECK("no markers on 30 points: nothing 8 px above a point", wide == 0);
    tt_canvas_free(&c);
}

static void test_plot_log_and_gaps(void)
{
    const double x[6] = { 3, 20, 150, 900, 1500, 2000 };
    const double y[6] = { 9, 400, 22500, 810000, 2.25e6, 4e6 };
    const tt_plot_series s = { "N squared", x, y, 6, 6, NULL, 0 };
    tt_plot_opts o;
    tt_plot_opts_init(&o);
    o.xlog = o.ylog = 1;
    tt_canvas c;
    tt_plot_geom g;
    CHECK("log-log plot renders", tt_plot_render(&c, &g, &s, 1, &o) == TT_OK);
    /* x 3 .. 2000: the ends are the data and a little room, out to the
       nearest m x 10^k (2 and 3000), not the empty decades 1..2 and 3000..10^4 */
    int decades = g.nxticks == 3 && fabs(g.xlo - log10(2.0)) < 1e-12 && fabs(g.xhi - log10(3000.0)) < 1e-12;
    for (int k = 0; k < g.nxticks; k++) decades &= fabs(g.xticks[k] - pow(10.0, k + 1)) < 1e-9 * pow(10.0, k + 1);
    CHECK("log x axis from 2 to 3000, ticks at the decades 10 .. 10^3", decades);
    CHECK("log y axis (9 .. 4e6) from 6 to 6e6, ticks at 10 .. 10^6",
          fabs(g.ylo - log10(6.0)) < 1e-12 && fabs(g.yhi - log10(6e6)) < 1e-12 && g.nyticks == 6 &&
              fabs(g.yticks[0] - 10.0) < 1e-9);
    /* y = x^2 is a straight line on log-log: its midpoint in log space is on it */
    double px, py;
    tt_plot_point(&g, 1, 1, sqrt(20.0 * 150.0), sqrt(400.0 * 22500.0), &px, &py);
    CHECK("log-log: the curve's colour at the geometric midpoint", colour_near(&c, px, py, 1, tt_plot_colour(0), 40));
    /* the tick at 10^2 on the x axis: a tick mark below the area */
    tt_plot_point(&g, 1, 1, 100.0, 1.0, &px, &py);
    CHECK("a tick mark under 10^2", tt_canvas_get(&c, (int)lround(px), g.ay + g.ah + 4) != 0xffffffu);
    tt_plot_point(&g, 1, 1, 200.0, 1.0, &px, &py);
    CHECK("a short minor tick under 2 x 10^2", tt_canvas_get(&c, (int)lround(px), g.ay + g.ah + 2) != 0xffffffu &&
                                                  tt_canvas_get(&c, (int)lround(px), g.ay + g.ah + 4) == 0xffffffu);
    tt_canvas_free(&c);

    /* data inside one decade: the ends stay whole decades, so two ticks show */
    const double nx[3] = { 20, 40, 80 };
    const tt_plot_series ns = { "narrow", nx, nx, 3, 3, NULL, 0 };
    CHECK("narrow log plot renders", tt_plot_render(&c, &g, &ns, 1, &o) == TT_OK);
    CHECK("log axis inside one decade: 10 .. 100", g.xlo == 1.0 && g.xhi == 2.0 && g.nxticks == 2);
    tt_canvas_free(&c);

    /* NaN: the point is left out and the line breaks there */
    const double gx[5] = { 1, 2, 3, 4, 5 }, gy[5] = { 1, 5, NAN, 5, 1 };
    const tt_plot_series gs = { "gap", gx, gy, 5, 5, NULL, 0 };
    CHECK("plot with a NaN renders", tt_plot_render(&c, &g, &gs, 1, NULL) == TT_OK);
    CHECK("one point skipped", g.skipped == 1);
    tt_plot_point(&g, 0, 0, 3.0, 5.0, &px, &py);
    CHECK("no line across the NaN", !colour_near(&c, px, py, 2, tt_plot_colour(0), 60));
    tt_plot_point(&g, 0, 0, 1.5, 3.0, &px, &py);
    CHECK("the line before it is drawn", colour_near(&c, px, py, 1, tt_plot_colour(0), 40));
    tt_canvas_free(&c);
}

/* Long x tick labels: fewer ticks, never overlapping. */
static void test_plot_tick_room(void)
{
    const double x[2] = { 123456.0, 987654.0 }, y[2] = { 1, 2 };
    const tt_plot_series s = { "wide", x, y, 2, 2, NULL, 0 };
    tt_canvas c;
    tt_plot_geom g;
    CHECK("plot with wide x labels renders", tt_plot_render(&c, &g, &s, 1, NULL) == TT_OK);
    int room = g.nxticks >= 3;
    for (int k = 0; k + 1 < g.nxticks; k++)
        room &= (g.xticks[k + 1] - g.xticks[k]) / (g.xhi - g.xlo) * g.aw >= g.xlabel_w + 8;
    CHECK("x tick labels of six digits do not overlap", room && g.xlabel_w > 0);
    tt_canvas_free(&c);
    /* thirty decades: a tick every few, labels apart */
    const double lx[2] = { 1e-15, 1e15 }, ly[2] = { 1, 2 };
    const tt_plot_series ls = { "decades", lx, ly, 2, 2, NULL, 0 };
    tt_plot_opts o;
    tt_plot_opts_init(&o);
    o.xlog = 1;
    CHECK("plot over thirty decades renders", tt_plot_render(&c, &g, &ls, 1, &o) == TT_OK);
    CHECK("thirty decades: at most ten ticks, whole decades apart",
          g.nxticks >= 3 && g.nxticks <= 11 && fmod(log10(g.xticks[1] / g.xticks[0]) + 1e-9, 1.0) < 1e-6);
    tt_canvas_free(&c);
}

/* A long series: points sharing a pixel column are reduced, its spikes kept. */
static void test_plot_long_series(void)
{
    enum { N = 200000 };
    double *y = calloc(N, sizeof *y);
    if (!y) return;
    for (int i = 0; i < N; i++) y[i] = (i % 7) * 0.01;
    y[123457] = 10.0;    /* one spike up, one down, inside a column of many points */
    y[54321] = -10.0;
    const tt_plot_series s = { "long", NULL, y, N, N, NULL, 0 };
    tt_canvas c;
    tt_plot_geom g;
    const double t0 = (double)clock() / CLOCKS_PER_SEC;
    CHECK("a 200000-point series renders", tt_plot_render(&c, &g, &s, 1, NULL) == TT_OK);
    const double secs = (double)clock() / CLOCKS_PER_SEC - t0;
    CHECK("... in well under a few seconds", secs < 5.0);
    double px, py;
    tt_plot_point(&g, 0, 0, 123458.0, 10.0, &px, &py);
    CHECK("the spike up is drawn to its top", colour_near(&c, px, py + 1, 1, tt_plot_colour(0), 40));
    tt_plot_point(&g, 0, 0, 54322.0, -10.0, &px, &py);
    CHECK("the spike down is drawn to its bottom", colour_near(&c, px, py - 1, 1, tt_plot_colour(0), 40));
    tt_plot_point(&g, 0, 0, 123458.0, 5.0, &px, &py);
    CHECK("and through its middle", colour_near(&c, px, py, 1, tt_plot_colour(0), 40));
    tt_canvas_free(&c);
    free(y);
}

/* Count of needle in hay (n bytes). */
static int count_of(const char *hay, long n, const char *needle)
{
    int k = 0;
    const size_t m = strlen(needle);
    for (long i = 0; i + (long)m <= n; i++) k += !memcmp(hay + i, needle, m);
    return k;
}

/* Point i's error bar (half-width e) of series k: a cap of the series'
   colour on the rows of y + e and y - e, clear of them 4 rows outside. */
static int bar_at(const tt_canvas *c, const tt_plot_geom *g, int k, double x, double y, double e)
{
    double px, top, bot;
    tt_plot_point(g, 0, 0, x, y + e, &px, &top);
    tt_plot_point(g, 0, 0, x, y - e, &px, &bot);
    const int cx = (int)lround(px) + 3, t = (int)lround(top), b = (int)lround(bot);
    const uint32_t rgb = tt_plot_colour(k);
    return tt_canvas_get(c, cx, t) == rgb && tt_canvas_get(c, cx - 6, t - 1) == rgb &&
           tt_canvas_get(c, cx, b) == rgb && tt_canvas_get(c, cx - 6, b - 1) == rgb &&
           !colour_near(c, cx, t - 4, 0, rgb, 60) && !colour_near(c, cx, b + 3, 0, rgb, 60);
}

/* Error bars: at each point, of its own half-width, in the series'
   colour; the auto range takes them in, ymin/ymax fix it and cut them. */
static void test_plot_error_bars(void)
{
    const double x[3] = { 1, 2, 3 }, ya[3] = { 2, 5, 3 }, ea[3] = { 1.0, 0.25, 2.0 };
    const double yb[3] = { 9, 10, 9 }, eb[3] = { 0.5, 0.0, 0.5 };
    const tt_plot_series s[2] = { { "a", x, ya, 3, 3, ea, 3 }, { "b", x, yb, 3, 3, eb, 3 } };
    tt_canvas c;
    tt_plot_geom g;
    CHECK("plot with error bars renders", tt_plot_render(&c, &g, s, 2, NULL) == TT_OK);
    CHECK("the auto y range takes in the bars (1 below the lowest point's 2)", g.ylo <= 1.0 && g.yhi >= 10.0);
    int each = 1;
    for (int i = 0; i < 3; i++) each &= bar_at(&c, &g, 0, x[i], ya[i], ea[i]);
    CHECK("series a: a bar of its colour from y - yerr to y + yerr at each point, of that point's width", each);
    CHECK("series b: its bars in its own colour", bar_at(&c, &g, 1, 1, 9, 0.5) && bar_at(&c, &g, 1, 3, 9, 0.5));
    double px, py;
    tt_plot_point(&g, 0, 0, 2, 10 + 0.25, &px, &py);
    CHECK("yerr 0: no bar", !colour_near(&c, lround(px) + 3, py - 4, 1, tt_plot_colour(1), 60));
    tt_canvas_free(&c);

    tt_plot_opts o;
    tt_plot_opts_init(&o);
    o.ymin = 0.0;
    o.ymax = 12.0;
    const double yc[1] = { 0.5 }, ec[1] = { 1.0 }, xc[1] = { 2 };
    const tt_plot_series cut[2] = { s[0], { "cut", xc, yc, 1, 1, ec, 1 } };
    CHECK("plot with ymin, ymax renders", tt_plot_render(&c, &g, cut, 2, &o) == TT_OK);
    CHECK("ymin and ymax are the axis' ends", g.ylo == 0.0 && g.yhi == 12.0);
    tt_plot_point(&g, 0, 0, 2, 0.5 + 1.0, &px, &py);
    const int cx = (int)lround(px) + 3;
    CHECK("a bar past ymin: its top cap drawn", tt_canvas_get(&c, cx, (int)lround(py)) == tt_plot_colour(1));
    CHECK("... its bottom cut at the axis, no cap", !colour_near(&c, cx, g.ay + g.ah - 1, 1, tt_plot_colour(1), 60) &&
          tt_canvas_get(&c, cx - 3, g.ay + g.ah - 1) == tt_plot_colour(1) &&
          !colour_near(&c, cx - 3, g.ay + g.ah + 3, 1, tt_plot_colour(1), 60));
    tt_canvas_free(&c);

    /* log y: fixed ends are the axis' ends (log10), ticks and minor ticks
       fit even 600 decades apart */
    o.ylog = 1;
    o.ymin = 1.0;
    o.ymax = 1000.0;
    CHECK("log plot with ymin, ymax renders", tt_plot_render(&c, &g, s, 1, &o) == TT_OK);
    CHECK("log: ymin and ymax are the axis' ends", fabs(g.ylo) < 1e-12 && fabs(g.yhi - 3.0) < 1e-12);
    tt_canvas_free(&c);
    o.ymin = 1e-300;
    o.ymax = 1e300;
    CHECK("log plot over 600 fixed decades renders", tt_plot_render(&c, &g, s, 1, &o) == TT_OK);
    CHECK("... with its ends and a handful of decade ticks", fabs(g.ylo + 300.0) < 1e-9 &&
          fabs(g.yhi - 300.0) < 1e-9 && g.nyticks >= 3 && g.nyticks <= 12);
    tt_canvas_free(&c);

    /* the SVG: each bar and its two caps, lines of the series' colour */
    const char *svg = tpath("plot_bars.svg");
    CHECK("plot with bars writes SVG", tt_plot_write(svg, s, 1, NULL) == TT_OK);
    long n;
    char *text = slurp(svg, &n);
    CHECK("svg: three lines (bar, two caps) a bar of series a's colour",
          text && count_of(text, n, "stroke-width=\"2\" stroke-linecap=\"round\" stroke=\"#0072b2\"") == 9);
    free(text);
}

static void test_plot_errors(void)
{
    const double x[3] = { 1, 2, 3 }, y[3] = { 1, -2, 3 };
    tt_plot_opts o;
    tt_plot_opts_init(&o);
    tt_canvas c;
    CHECK("no series", tt_plot_render(&c, NULL, NULL, 0, &o) == TT_EARG &&
                           strstr(tt_errmsg(), "plot: nothing to draw: no series"));
    tt_plot_series s = { "loss", x, y, 3, 0, NULL, 0 };
    CHECK("empty series", tt_plot_render(&c, NULL, &s, 1, &o) == TT_EARG &&
                              strstr(tt_errmsg(), "plot: series 'loss' is empty"));
    s.ny = 2;
    CHECK("x and y lengths differ", tt_plot_render(&c, NULL, &s, 1, &o) == TT_EARG &&
                                        strstr(tt_errmsg(), "series 'loss' has 3 x values and 2 y values"));
    s.ny = 3;
    o.ylog = 1;
    CHECK("non-positive on a log axis: the series and the point",
          tt_plot_render(&c, NULL, &s, 1, &o) == TT_EARG &&
              strstr(tt_errmsg(), "series 'loss' has y = -2 at point 2, which a log y axis cannot show"));
    o.ylog = 0;
    o.xlog = 1;
    const double x0[3] = { 0, 1, 2 };
    s.x = x0;
    s.name = NULL;
    CHECK("zero on a log x axis: an unnamed series by number",
          tt_plot_render(&c, NULL, &s, 1, &o) == TT_EARG &&
              strstr(tt_errmsg(), "series 1 has x = 0 at point 1, which a log x axis"));
    const double nan3[3] = { NAN, NAN, NAN };
    const tt_plot_series ns = { "n", x, nan3, 3, 3, NULL, 0 };
    o.xlog = 0;
    CHECK("no finite point", tt_plot_render(&c, NULL, &ns, 1, &o) == TT_EARG &&
                                 strstr(tt_errmsg(), "no series has a finite point"));
    tt_plot_series many[TT_PLOT_MAX_SERIES + 1];
    for (int k = 0; k <= TT_PLOT_MAX_SERIES; k++) many[k] = (tt_plot_series){ NULL, x, x, 3, 3, NULL, 0 };
    CHECK("too many series", tt_plot_render(&c, NULL, many, TT_PLOT_MAX_SERIES + 1, &o) == TT_EARG &&
                                 strstr(tt_errmsg(), "at most 8 fit one chart"));
    CHECK("eight series are fine", tt_plot_render(&c, NULL, many, TT_PLOT_MAX_SERIES, &o) == TT_OK);
    tt_canvas_free(&c);
}

/* The math signs have glyphs of their own: none draws as '?', no two alike. */
static void test_font_signs(void)
{
    const char *signs[6] = { "?", "\xc2\xb7", "\xc2\xb2", "\xc3\x97", "\xe2\x88\x9a", "\xe2\x86\x92" };
    uint8_t ink[6][14 * 20];
    int ok = 1;
    for (int k = 0; k < 6; k++) {
        tt_canvas c;
        ok &= tt_canvas_init(&c, 14, 20) == TT_OK;
        tt_font_draw(&c, 1, 1, signs[k], 2, 0, 0x000000u);
        for (int i = 0; i < 14 * 20; i++) ink[k][i] = c.px[i * 3] < 128;
        tt_canvas_free(&c);
    }
    for (int a = 0; a < 6; a++)
        for (int b = a + 1; b < 6; b++) ok &= memcmp(ink[a], ink[b], sizeof ink[a]) != 0;
    CHECK("font: the signs · ² × √ → each have their own glyph", ok);
    CHECK("font: a sign counts as one glyph in a string",
          tt_font_width("q\xc2\xb7k", 2, 0) - tt_font_width("q?k", 2, 0) ==
              tt_font_width("\xc2\xb7", 2, 0) - tt_font_width("?", 2, 0));
}

/* ===== One query's attention ===== */

static void test_attend(void)
{
    /* the hand example of lesson 05: query 3 of Q = K = [[1,0],[0,1],[1,1]], V = [[1,0],[0,2],[1,1]] */
    const float q[2] = { 1, 1 }, K[6] = { 1, 0, 0, 1, 1, 1 }, V[6] = { 1, 0, 0, 2, 1, 1 };
    double dots[3], sc[3], w[3], scaled[6], out[2];
    tt_attend_compute(q, K, V, 3, 2, 2, 1.0 / sqrt(2.0), dots, sc, w, scaled, out);
    CHECK("attend: the dot products q.k_j of the hand example are 1, 1, 2",
          dots[0] == 1.0 && dots[1] == 1.0 && dots[2] == 2.0);
    /* by hand: scores 1/sqrt2, 1/sqrt2, sqrt2; weights e^s / sum */
    const double r2 = sqrt(2.0), e1 = exp(1 / r2), e3 = exp(r2), tot = 2 * e1 + e3;
    const double ref_w[3] = { e1 / tot, e1 / tot, e3 / tot };
    int ok = fabs(sc[0] - 1 / r2) < 1e-15 && fabs(sc[2] - r2) < 1e-15;
    for (int j = 0; j < 3; j++) ok &= fabs(w[j] - ref_w[j]) < 1e-15;
    CHECK("attend: scores and weights of the hand example", ok);
    CHECK("attend: weights 0.24825508, 0.24825508, 0.50348984",
          fabs(w[0] - 0.24825508) < 5e-9 && fabs(w[2] - 0.50348984) < 5e-9);
    CHECK("attend: scaled rows a_j v_j", fabs(scaled[3] - 2 * ref_w[1]) < 1e-15 && scaled[2] == 0.0);
    CHECK("attend: output [a1 + a3, 2 a2 + a3] = [0.7517, 1.0000]",
          fabs(out[0] - (ref_w[0] + ref_w[2])) < 1e-15 && fabs(out[1] - (2 * ref_w[1] + ref_w[2])) < 1e-15 &&
              fabs(out[0] - 0.75174492) < 5e-8);
    /* a large score: no overflow (the max is taken off first) */
    const float qb[1] = { 1000 }, Kb[2] = { 1, 0.999f }, Vb[2] = { 1, 2 };
    double sb[2], wb[2], ab[2], ob[1];
    tt_attend_compute(qb, Kb, Vb, 2, 1, 1, 1.0, NULL, sb, wb, ab, ob);
    CHECK("attend: large scores stay finite", isfinite(wb[0]) && fabs(wb[0] + wb[1] - 1.0) < 1e-12 && wb[0] > wb[1]);

    tt_attend_opts o;
    tt_attend_opts_init(&o);
    const char *labels[3] = { "t1", "t2", "t3" };
    o.labels = labels;
    o.nlabels = 3;
    tt_canvas c;
    tt_attend_geom g;
    CHECK("attend figure renders", tt_attend_render(&c, &g, q, K, V, 3, 2, 2, &o) == TT_OK);
    /* weight cells in viridis of their weight (a corner, away from the number) */
    int cells = 1;
    for (int j = 0; j < 3; j++)
        cells &= tt_canvas_get(&c, g.weight_x + 2, g.row_y + j * g.row_h + 2) == tt_cmap_rgb(TT_CMAP_VIRIDIS, w[j]);
    CHECK("attend: each weight cell in viridis of its weight", cells);
    /* the score column: t3's score is the largest, the darkest red of the diverging map */
    CHECK("attend: the largest score at the diverging map's top",
          tt_canvas_get(&c, g.score_x + 2, g.row_y + 2 * g.row_h + 2) == tt_cmap_rgb(TT_CMAP_DIVERGING, 1.0));
    /* the value v_2[2] = 2 is the largest value: the top of the map; v_1[2] = 0 the centre */
    CHECK("attend: value cells on a map centred on 0",
          tt_canvas_get(&c, g.v_x + g.cell_w + 2, g.row_y + g.row_h + 2) == tt_cmap_rgb(TT_CMAP_DIVERGING, 1.0) &&
              tt_canvas_get(&c, g.v_x + g.cell_w + 2, g.row_y + 2) == tt_cmap_rgb(TT_CMAP_DIVERGING, 0.5));
    /* the output row under the scaled rows, coloured by its value; numbers written in every cell */
    CHECK("attend: output cell 1 coloured by 0.7517 of 2",
          tt_canvas_get(&c, g.av_x + 2, g.out_y + 2) == tt_cmap_rgb(TT_CMAP_DIVERGING, 0.5 + out[0] / 4.0));
    int written = 0;
    for (int y = g.out_y; y < g.out_y + g.row_h - 4; y++)
        for (int x = g.av_x; x < g.av_x + g.cell_w - 2; x++)
            written += tt_rgb_luma(tt_canvas_get(&c, x, y)) < 0.3;
    CHECK("attend: the output's number is written in its cell", written > 20);
    CHECK("attend: the output row below the last key", g.out_y >= g.row_y + 3 * g.row_h);
    /* the dot products come first, left of the scores, on their own map
       centred on 0: t3's 2 at its top, t1's 1 half way up */
    CHECK("attend: the dot product column left of the scores", g.dot_x + g.col_w < g.score_x);
    CHECK("attend: dot product cells coloured by q.k_j",
          tt_canvas_get(&c, g.dot_x + 2, g.row_y + 2 * g.row_h + 2) == tt_cmap_rgb(TT_CMAP_DIVERGING, 1.0) &&
              tt_canvas_get(&c, g.dot_x + 2, g.row_y + 2) == tt_cmap_rgb(TT_CMAP_DIVERGING, 0.75));
    /* whole dot products are written whole: the ink of t3's cell is as wide as "2" */
    const uint32_t dbg = tt_canvas_get(&c, g.dot_x + 2, g.row_y + 2 * g.row_h + 2);
    int ink_x0 = 1 << 30, ink_x1 = -1;
    for (int y = g.row_y + 2 * g.row_h; y < g.row_y + 3 * g.row_h - 4; y++)
        for (int x = g.dot_x; x < g.dot_x + g.col_w; x++)
            if (tt_canvas_get(&c, x, y) != dbg) { ink_x0 = x < ink_x0 ? x : ink_x0; ink_x1 = x > ink_x1 ? x : ink_x1; }
    CHECK("attend: the dot product 2 is written as \"2\"",
          ink_x1 >= ink_x0 && ink_x1 - ink_x0 + 1 <= tt_font_width("2", 2, 0));
    tt_canvas_free(&c);

    /* determinism and the file */
    const char *a = tpath("attend_a.png"), *b = tpath("attend_b.png");
    CHECK("attend writes", tt_attend_write(a, q, K, V, 3, 2, 2, &o) == TT_OK &&
                               tt_attend_write(b, q, K, V, 3, 2, 2, &o) == TT_OK);
    long na, nb;
    char *ba = slurp(a, &na), *bb = slurp(b, &nb);
    CHECK("attend: same input, same bytes", ba && bb && na == nb && !memcmp(ba, bb, (size_t)na));
    free(ba);
    free(bb);

    /* errors */
    o.nlabels = 2;
    CHECK("attend: labels of the wrong length", tt_attend_render(&c, NULL, q, K, V, 3, 2, 2, &o) == TT_EARG &&
                                                    strstr(tt_errmsg(), "attend_figure: 2 labels for the 3 keys"));
    o.labels = NULL;
    o.nlabels = 0;
    CHECK("attend: too many keys", tt_attend_render(&c, NULL, q, K, V, 33, 2, 2, &o) == TT_EARG &&
                                       strstr(tt_errmsg(), "33 keys, at most 32 fit one figure"));
    CHECK("attend: values too wide", tt_attend_render(&c, NULL, q, K, V, 3, 2, 17, &o) == TT_EARG &&
                                         strstr(tt_errmsg(), "values of size 17, at most 16 columns"));
    CHECK("attend: no keys", tt_attend_render(&c, NULL, q, K, V, 0, 2, 2, &o) == TT_EARG &&
                                 strstr(tt_errmsg(), "attend_figure: nothing to draw: 0 keys"));
    o.has_scale = 1;
    o.scale = INFINITY;
    CHECK("attend: a non-finite scale", tt_attend_render(&c, NULL, q, K, V, 3, 2, 2, &o) == TT_EARG &&
                                            strstr(tt_errmsg(), "scale must be a finite number"));
}

/* A bool tensor (lesson 09's causal masks): two colours and a legend
   (false, true, or the names of categories), no colour bar; a cmap draws
   it as 0/1 on the map instead. */
static void test_heatmap_bool(void)
{
    /* [2, 3]: true where j <= i + 1, as a lower-right mask of 2 queries over 3 keys */
    const uint8_t b[6] = { 1, 1, 0, 1, 1, 1 };
    const tt_fig_src src = { NULL, b, { 6, 3, 1 } };
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);
    tt_canvas c;
    tt_heatmap_geom g;
    CHECK("bool heatmap renders", tt_heatmap_render_src(&c, &g, &src, 1, 2, 3, &o) == TT_OK);
    int x, y;
    cell_xy(&g, 0, 0, 0, &x, &y);
    const uint32_t t = tt_canvas_get(&c, x, y);
    cell_xy(&g, 0, 0, 2, &x, &y);
    const uint32_t f = tt_canvas_get(&c, x, y);
    CHECK("bool: true a strong blue, false light grey", t == 0x2f6db5u && f == 0xd8d8d8u);
    CHECK("bool: apart in grey print too", tt_rgb_luma(f) - tt_rgb_luma(t) > 0.4);
    CHECK("bool: a legend of two entries, no colour bar", g.legend_n == 2 && g.bar_w == 0);
    CHECK("bool: the legend swatches are the two colours",
          tt_canvas_get(&c, g.legend_x + 11, g.legend_y + 11) == f &&
              tt_canvas_get(&c, g.legend_x + 11, g.legend_y + 32 + 11) == t);
    CHECK("bool: no numbers in the cells", g.annotate_scale == 0);
    tt_canvas_free(&c);

    const char *names[3] = { "hidden", "may attend", "extra" };
    o.categories = names;
    o.ncategories = 2;
    CHECK("bool with two category names renders", tt_heatmap_render_src(&c, &g, &src, 1, 2, 3, &o) == TT_OK &&
                                                      g.legend_n == 2);
    tt_canvas_free(&c);
    o.ncategories = 3;
    CHECK("bool with three category names: an error",
          tt_heatmap_render_src(&c, &g, &src, 1, 2, 3, &o) == TT_EARG &&
              strstr(tt_errmsg(), "heatmap: 3 categories for the bool tensor [2,3]; hint: it takes two, "
                                  "the names of false and true"));
    o.categories = NULL;
    o.ncategories = 0;
    o.cmap = "viridis";
    CHECK("bool with a cmap renders", tt_heatmap_render_src(&c, &g, &src, 1, 2, 3, &o) == TT_OK);
    cell_xy(&g, 0, 0, 0, &x, &y);
    CHECK("bool with a cmap: 0/1 on the map, with its colour bar",
          tt_canvas_get(&c, x, y) == tt_cmap_rgb(TT_CMAP_VIRIDIS, 1.0) && g.bar_w > 0 && g.legend_n == 0);
    tt_canvas_free(&c);
}

/* Token labels of the heads figures (8 heads, 32 tokens, as lessons 06,
   07 and 14 draw; one head of 32, as lesson 09): the cells grow until
   every token gets a full-size label; a grid too big for that (8 heads of
   48 tokens) keeps its thin cells and labels every third token, at full
   size. */
static void token_grid(float *v, int P, int N, tt_heatmap_geom *g, tt_canvas *c)
{
    static const char ALPHA[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV";
    static char names[48][2];
    static const char *toks[48];
    for (int i = 0; i < N; i++) { names[i][0] = ALPHA[i]; names[i][1] = 0; toks[i] = names[i]; }
    tt_heatmap_opts o;
    tt_heatmap_opts_init(&o);
    o.xlabels = o.ylabels = toks;
    o.nxlabels = o.nylabels = N;
    o.annotate = 0;
    if (tt_heatmap_render(c, g, v, P, N, N, &o) != TT_OK) { CHECK(tt_errmsg(), 0); memset(g, 0, sizeof *g); }
}

static void test_heatmap_token_ticks(void)
{
    enum { P = 8, N = 32 };
    float *v = calloc((size_t)P * 48 * 48, sizeof *v);
    if (!v) return;
    tt_heatmap_geom g;
    tt_canvas c;
    token_grid(v, P, N, &g, &c);
    CHECK("8 panels of 32 tokens: cells of a full-size label", g.cell_w >= 20 && g.cell_h >= 20);
    CHECK("8 panels of 32 tokens: every token labelled at full size, both axes",
          g.xlabel_n == N && g.ylabel_n == N && g.xlabel_scale == 2 && g.ylabel_scale == 2);
    /* under the last panel: ink under columns 2 and 3; left of the first: beside rows 2 and 3 */
    int x, y;
    cell_xy(&g, P - 1, N - 1, 2, &x, &y);
    const int band = y - 2 + g.cell_h + 8;
    CHECK("x label under column 3", count_luma(c.px, c.w, x, band, g.cell_w - 4, 14, 0.0, 0.5) > 0);
    CHECK("x label under column 2", count_luma(c.px, c.w, x - g.cell_w, band, g.cell_w - 4, 14, 0.0, 0.5) > 0);
    CHECK("x labels upright: no ink 20 pixels below the band",
          count_luma(c.px, c.w, x, band + 20, g.cell_w - 4, 10, 0.0, 0.5) == 0);
    cell_xy(&g, 0, 2, 0, &x, &y);
    CHECK("y label beside row 3", count_luma(c.px, c.w, x - 2 - 8 - 12, y, 10, g.cell_h - 4, 0.0, 0.5) > 0);
    CHECK("y label beside row 2", count_luma(c.px, c.w, x - 2 - 8 - 12, y - g.cell_h, 10, g.cell_h - 4, 0.0, 0.5) > 0);
    CHECK("8 panels of 32 tokens: a slide-sized figure", g.width <= 3100 && g.height <= 1700);
    tt_canvas_free(&c);

    token_grid(v, 1, N, &g, &c);
    CHECK("one panel of 32 tokens: every token at full size",
          g.cell_w >= 20 && g.xlabel_n == N && g.ylabel_n == N && g.xlabel_scale == 2 && g.ylabel_scale == 2);
    tt_canvas_free(&c);

    token_grid(v, P, 48, &g, &c);
    CHECK("8 panels of 48 tokens: too many for full-size cells, every third token at full size",
          g.cell_w < 11 && g.xlabel_n == 16 && g.ylabel_n == 16 && g.xlabel_scale == 2);
    cell_xy(&g, P - 1, 47, 2, &x, &y);
    CHECK("thinned: no x label under column 2",
          count_luma(c.px, c.w, x - g.cell_w, y - 2 + g.cell_h + 8, g.cell_w - 4, 14, 0.0, 0.5) == 0);
    tt_canvas_free(&c);
    free(v);
}

/* A freed canvas's buffer is reused by the next canvas (no fresh page
   faults per figure), which still starts all white whatever was drawn
   before. */
static void test_canvas_reuse(void)
{
    tt_canvas a, b;
    CHECK("canvas: first", tt_canvas_init(&a, 37, 23) == TT_OK);
    tt_canvas_fill_rect(&a, 0, 0, 37, 23, 0x123456u);
    uint8_t *first = a.px;
    tt_canvas_free(&a);
    CHECK("canvas: second", tt_canvas_init(&b, 23, 37) == TT_OK);
    CHECK("canvas: the freed buffer is reused", b.px == first);
    int white = 1;
    for (int y = 0; y < 37; y++)
        for (int x = 0; x < 23; x++) white &= tt_canvas_get(&b, x, y) == 0xffffffu;
    CHECK("canvas: a reused buffer starts white", white);
    tt_canvas_fill_rect(&b, 0, 0, 23, 37, 0x654321u);
    CHECK("canvas: a canvas larger than the kept buffer", tt_canvas_init(&a, 1500, 1500) == TT_OK);
    white = 1;
    for (int y = 0; y < 1500; y += 7)
        for (int x = 0; x < 1500; x += 5) white &= tt_canvas_get(&a, x, y) == 0xffffffu;
    CHECK("canvas: a fresh buffer starts white", white);
    tt_canvas_free(&b);
    tt_canvas_free(&a);
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/tt_figure_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }
    test_cmap();
    test_font();
    test_heatmap_pixels();
    test_heatmap_annotations();
    test_heatmap_diverging_and_grid();
    test_heatmap_large();
    test_heatmap_errors_and_determinism();
    test_label_counts();
    test_bars();
    test_flow();
    test_wrap_and_titles();
    test_heatmap_annotation_fit();
    test_bars_labels();
    test_flow_labels();
    test_heatmap_options();
    test_heatmap_token_ticks();
    test_heatmap_bool();
    test_head_groups();
    test_svg();
    test_plot_lines();
    test_plot_log_and_gaps();
    test_plot_tick_room();
    test_plot_long_series();
    test_plot_errors();
    test_plot_error_bars();
    test_font_signs();
    test_attend();
    test_canvas_reuse();
    if (getenv("TT_KEEP_FIGURES")) printf("figures kept in %s\n", tmpdir);
    else remove_tree(tmpdir);
    return check_report();
}
