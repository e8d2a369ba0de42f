/*
** figure.h — figures for teaching: heatmaps, bar charts, the flow diagram.
** Rendering (canvas.c, font.c, and one file a figure kind: heatmap.c,
** bars.c, plot.c, attend.c, flow.c, head_groups.c) draws into an RGB
** canvas that also records what it draws; png.c writes the pixels (the
** only file that includes <png.h>), svg.c the recording. Inputs are plain
** arrays, not tensors.
*/
#ifndef TT_FIGURE_H
#define TT_FIGURE_H

#include <stdint.h>
#include <stdio.h>
#include "tt.h"

/* PNG tEXt chunks written with every figure (NULL fields are skipped).
   "Software" is always written. */
typedef struct tt_png_meta {
    const char *source;   /* "lessons/03_causal_mask.lua:42" */
    const char *shape;    /* "[B=2,N=5,N=5]" */
    const char *title;
} tt_png_meta;

/* RGB canvas, 3 bytes per pixel, row stride = 3*w. vec is the display
list of what was drawn (svg.c), for SVG output; NULL when it could not be
allocated. */
typedef struct tt_canvas {
    int w, h;
    uint8_t *px;
    size_t px_size;     /* bytes allocated at px (canvas.c keeps freed buffers) */
    struct tt_svg *vec;
} tt_canvas;

/* ===== Canvas drawing (canvas.c; shared by every figure) =====
   Colours are 0xRRGGBB. Everything clips to the canvas. */

/* A white w x h canvas; TT_ENOMEM when too large. Free with tt_canvas_free
   (accepts an empty canvas). */
tt_status tt_canvas_init(tt_canvas *c, int w, int h);
void tt_canvas_free(tt_canvas *c);
uint32_t tt_canvas_get(const tt_canvas *c, int x, int y);
void tt_canvas_fill_rect(tt_canvas *c, int x, int y, int w, int h, uint32_t rgb);
/* Outline of thickness t inside the rectangle. */
void tt_canvas_frame(tt_canvas *c, int x, int y, int w, int h, int t, uint32_t rgb);
/* Anti-aliased line of the given width between two points. */
void tt_canvas_line(tt_canvas *c, double x0, double y0, double x1, double y1,
                    double width, uint32_t rgb);
/* Anti-aliased polyline through n points (pt[k] = {x, y}), without the
   darker joints of one line a segment. */
void tt_canvas_polyline(tt_canvas *c, const double (*pt)[2], int n, double width, uint32_t rgb);
/* Anti-aliased filled triangle (arrow heads). */
void tt_canvas_triangle(tt_canvas *c, const double xy[6], uint32_t rgb);
/* Rounded rectangle: filled, with a border of width bw (0: none). */
void tt_canvas_round_rect(tt_canvas *c, int x, int y, int w, int h, int r,
                          uint32_t fill, uint32_t border, int bw);
/* Grey diagonal hatching over a rectangle: the look of masked (-inf) cells.
   The stripes follow x + y of the canvas, so neighbouring cells join up. */
void tt_canvas_hatch(tt_canvas *c, int x, int y, int w, int h);
/* Hatching of mask kinds over a rectangle: kinds is a bit set (bit k =
   kind k < TT_FIG_MASK_KINDS); the background is the lowest kind's, the
   strokes of every kind are drawn over it, so a cell under two masks shows
   both patterns. Kind 0 diagonal, 1 cross hatch, 2 the other diagonal,
   3 dots, each in its own colour. Follows canvas coordinates as above. */
#define TT_FIG_MASK_KINDS 4
void tt_canvas_hatch_kinds(tt_canvas *c, int x, int y, int w, int h, unsigned kinds);
/* The same strokes in white, without the background, over what is drawn
   there (a masked NaN cell keeps its NaN colour under them). */
void tt_canvas_hatch_strokes(tt_canvas *c, int x, int y, int w, int h, unsigned kinds);

/* ===== Colour maps (pure functions) ===== */

typedef enum tt_cmap {
    TT_CMAP_VIRIDIS = 0,    /* sequential, perceptually uniform: weights */
    TT_CMAP_DIVERGING,      /* blue - white - red, centred: scores */
    TT_CMAP_GRAY            /* black to white */
} tt_cmap;

#define TT_FIG_NAN_RGB     0xe8198cu   /* NaN cells: magenta, in no map */
#define TT_FIG_HATCH_LIGHT 0xdcdcdcu   /* -inf cells: light grey ... */
#define TT_FIG_HATCH_DARK  0xa6a6a6u   /* ... with darker stripes */

/* "viridis", "diverging" (also "coolwarm", "RdBu"), "gray"; -1 if unknown. */
int tt_cmap_from_name(const char *name);
/* Colour at t in [0, 1] (clamped; NaN gives TT_FIG_NAN_RGB). */
uint32_t tt_cmap_rgb(tt_cmap map, double t);
/* Position of v on [vmin, vmax] clamped to [0, 1]; -inf 0, +inf 1, NaN NaN. */
double tt_cmap_norm(double v, double vmin, double vmax);
/* Perceived brightness 0..1 of a colour (decides annotation text colour). */
double tt_rgb_luma(uint32_t rgb);

/* Writes an 8-bit RGB PNG to path via a temporary file + rename; no time
   chunk, fixed compression, so the same pixels give the same bytes.
   TT_EIO with "path: reason" on failure (no file left behind). */
tt_status tt_png_write_rgb(const char *path, const uint8_t *px, int w, int h,
                           int stride, const tt_png_meta *meta);
/* Reads an 8-bit RGB PNG (for tests): *px malloc'd, caller frees. */
tt_status tt_png_read_rgb(const char *path, uint8_t **px, int *w, int *h);

/* Writes canvas c's recording as SVG (svg.c): the PNG's layout and
   colours, text as <text>, the meta in <title> and <desc>; written like
   the PNG (tt__write_file), deterministic bytes. TT_EARG when the figure
   drew more than TT_SVG_MAX_ITEMS shapes, TT_ENOMEM, TT_EIO. */
tt_status tt_svg_write(const char *path, const tt_canvas *c, const tt_png_meta *meta);
/* 1 when path ends in ".svg" (any case): figures are then written as SVG. */
int tt_figure_path_is_svg(const char *path);

/* A [P, R, C] array read in place through element strides (0 for a
   broadcast dim): float32 (f32) or bool (b8, drawn as 0/1), exactly one
   non-NULL. Lets a tensor of any layout be drawn without a copy. */
typedef struct tt_fig_src {
    const float *f32;
    const uint8_t *b8;
    int64_t stride[3];
} tt_fig_src;

/* Distinct categorical colours (seaborn "deep"); categories and
   head_groups use them in order. */
#define TT_FIG_NCOLOURS 8
uint32_t tt_fig_colour(int k);

typedef struct tt_heatmap_opts {
    const char *title;
    const char *name;    /* the tensor's label, for error messages (may be NULL) */
    /* Token lists (may be NULL). When given, xlabels has one entry a column
       (C), ylabels one a row (R) and panel_titles one a panel (P); a NULL
       entry keeps the number. Other lengths are TT_EARG. */
    const char *const *xlabels; int nxlabels;   /* column tokens */
    const char *const *ylabels; int nylabels;   /* row tokens */
    const char *xtitle, *ytitle;                /* NULL: "Key", "Query" */
    const char *const *panel_titles; int npanel_titles;  /* NULL: "head 1".. */
    int annotate;        /* -1 auto (on when R, C <= 16), 0 off, 1 on */
    const char *cmap;    /* NULL auto, "viridis", "diverging", "gray" */
    int has_vmin, has_vmax;
    double vmin, vmax;
    int colorbar;        /* -1 auto (on), 0 off, 1 on */
    int decimals;        /* -1 auto */
    int row_scale;       /* colour each row on its own min..max */
    const char *downsample;  /* NULL/"mean" or "max": blocks of big matrices */
    int max_annotate;    /* auto annotation up to this many rows/cols (16) */
    /* Masks, true = hidden (masked_fill's polarity): nmasks (at most
       TT_FIG_MASK_KINDS) [P, R, C] sources, broadcast with 0 strides.
       Mask k hatches its cells with kind k (tt_canvas_hatch_kinds), over
       any value, -inf included; mask_names[k] is its legend entry ("masked"
       when NULL). A downsampled cell is hatched when any of its block is. */
    const tt_fig_src *masks;
    const char *const *mask_names;
    int nmasks;
    /* A margin column right of each panel with each row's sum ("Σ row"),
       neutral grey, same decimals; TT_EARG when rows are downsampled. */
    int row_sums;
    /* Categorical heatmap: the data are codes 1..ncategories (whole
       numbers, else TT_EARG naming the cell), each drawn in
       tt_fig_colour(code - 1) with a legend entry, no colour bar; at most
       TT_FIG_NCOLOURS. Blocks of a downsampled one show their largest code. */
    const char *const *categories;
    int ncategories;
    /* Tile borders: a thick line every tile_rows rows and tile_cols
       columns (0: none). */
    int tile_rows, tile_cols;
    tt_png_meta meta;
} tt_heatmap_opts;

/* Where things landed in a rendered heatmap (for tests and callers that
   post-process). Shown cell (p, i, j) of panel p covers
   x0 + (p % gcols)*dx + j*cell_w, y0 + (p / gcols)*dy + i*cell_h. Each shown
   cell stands for block_r x block_c data cells (1 x 1 unless downsampled). */
typedef struct tt_heatmap_geom {
    int width, height;
    int gcols, grows, dx, dy;
    int x0, y0, cell_w, cell_h;
    int rows, cols;              /* shown cells per panel */
    int block_r, block_c;
    int bar_x, bar_y, bar_w, bar_h;   /* colour bar; bar_w == 0 when off */
    int annotate_scale;          /* font scale of annotations; 0 when none */
    int annotate_w;              /* widest annotation in pixels (0: none) */
    int decimals;                /* decimals of the annotations */
    tt_cmap cmap;
    double vmin, vmax;
    int sums_x, sums_w;          /* row-sum margin of panel 0; sums_w == 0 when off */
    /* legend entry k: a 22x22 swatch at legend_x, legend_y + 32*k */
    int legend_x, legend_y, legend_n;
    /* tick labels shown on each axis, and their font scale */
    int xlabel_n, xlabel_scale, ylabel_n, ylabel_scale;
} tt_heatmap_geom;

/* Renders the heatmap into *out (initialised here; free with
   tt_canvas_free) without writing a file; geom may be NULL. Same errors as
   tt_heatmap_write except TT_EIO. */
tt_status tt_heatmap_render(tt_canvas *out, tt_heatmap_geom *geom, const float *data,
                            int64_t P, int64_t R, int64_t C, const tt_heatmap_opts *opts);

/* Heatmap of a contiguous [P, R, C] float array: P == 1 one panel, else a
   grid of P panels sharing one colour scale. -inf cells hatched grey, NaN
   cells in their own colour. TT_EARG for empty input, more than 64 panels,
   non-finite vmin/vmax, an unknown cmap or downsample, or a label list of
   the wrong length; TT_EIO when the file cannot be written. */
tt_status tt_heatmap_write(const char *path, const float *data, int64_t P, int64_t R,
                           int64_t C, const tt_heatmap_opts *opts);
/* The same from a strided source: data are read in one pass straight
   into the shown grid (block mean or max when downsampled), so memory is
   bounded by the figure, not by the tensor. */
tt_status tt_heatmap_render_src(tt_canvas *out, tt_heatmap_geom *geom, const tt_fig_src *src,
                                int64_t P, int64_t R, int64_t C, const tt_heatmap_opts *opts);
tt_status tt_heatmap_write_src(const char *path, const tt_fig_src *src, int64_t P, int64_t R,
                               int64_t C, const tt_heatmap_opts *opts);
void tt_heatmap_opts_init(tt_heatmap_opts *o);

typedef struct tt_bars_opts {
    const char *title;
    const char *name;    /* the tensor's label, for error messages (may be NULL) */
    /* When given (non-NULL), exactly one entry a column, one a row; a NULL
       entry keeps the default. Other lengths are TT_EARG. */
    const char *const *xlabels; int nxlabels;       /* one per column */
    const char *const *series_labels; int nseries;  /* one per row (panel title) */
    int decimals;                                   /* -1 auto */
    tt_png_meta meta;
} tt_bars_opts;

/* Bar chart of a contiguous [R, C] array: R groups of bars side by side
   (R == 1 for a vector), one panel per row. TT_EARG for empty input, more
   than 16 rows or 64 columns, or a label list of the wrong length. */
tt_status tt_bars_write(const char *path, const float *data, int64_t R, int64_t C,
                        const tt_bars_opts *opts);
/* The same into a canvas (initialised here), no file. */
tt_status tt_bars_render(tt_canvas *out, const float *data, int64_t R, int64_t C,
                         const tt_bars_opts *opts);
void tt_bars_opts_init(tt_bars_opts *o);

typedef struct tt_flow_opts {
    const char *title;
    tt_png_meta meta;
} tt_flow_opts;

/* Draws the pipeline recorded since the last tt_flow_reset (see flow.c):
   one box per labelled tensor, arrows annotated with the ops between them.
   TT_EARG when nothing labelled was recorded. */
tt_status tt_flow_write(const char *path, const tt_flow_opts *opts);
#define TT_FLOW_MAX_BOXES 40
#define TT_FLOW_MAX_ARROWS 160

typedef struct tt_flow_rect { int x, y, w, h; } tt_flow_rect;

/* Where things landed in a rendered flow diagram, in canvas pixels (for
   tests). Arrow i's label is label[i] (w == 0: an arrow without ops). */
typedef struct tt_flow_geom {
    int width, height;
    int nboxes, narrows;
    tt_flow_rect box[TT_FLOW_MAX_BOXES];
    tt_flow_rect head[TT_FLOW_MAX_ARROWS];     /* arrow heads */
    tt_flow_rect label[TT_FLOW_MAX_ARROWS];
    /* label i found a spot clear of boxes, arrows, heads and labels;
       all_clear: every label did */
    uint8_t label_clear[TT_FLOW_MAX_ARROWS];
    int all_clear;
} tt_flow_geom;

/* The same into a canvas (initialised here), no file; geom may be NULL. */
tt_status tt_flow_render(tt_canvas *out, tt_flow_geom *geom, const tt_flow_opts *opts);
/* The recorded graph as text (boxes "label [shape]", then arrows
   "from -> to: op, op"), one a line, into buf (size n, always terminated);
   returns the length it needed. For tests and debugging. */
size_t tt_flow_describe(char *buf, size_t n);

/* Writes canvas c as SVG when path ends in ".svg" (any case), else as PNG;
   on failure the message is "what: cannot write 'path': reason". */
tt_status tt__figure_save(const char *what, const char *path, const tt_canvas *c,
                          const tt_png_meta *meta);
/* Renders a figure into a fresh canvas, render(out, ctx), and saves it to
   path as tt__figure_save does: the one path of every *_write function.
   A canvas rendered for a PNG path records no SVG shapes. */
typedef tt_status (*tt_figure_render_fn)(tt_canvas *out, const void *ctx);
tt_status tt__figure_write(const char *what, const char *path, tt_figure_render_fn render,
                           const void *ctx, const tt_png_meta *meta);

/* ===== Shared by the figure files (canvas.c) ===== */

/* One pixel, not recorded for SVG: for a caller that records its own
   shape (a heatmap's one-pixel cells). */
void tt__canvas_put(tt_canvas *c, int x, int y, uint32_t rgb);
/* Numbers as the figures write them ("-0.00" as "0.00", "%.2e" from 1e6
   on), and 1-2-5 ticks. */
void tt__fig_fmt_num(char *buf, size_t n, double v, int decimals);
int tt__fig_nice_ticks(double lo, double hi, int want, double *ticks, int max, int *decimals);
/* Decimals that show values of this size and spread: integers none. */
int tt__fig_auto_decimals(const float *v, int64_t n, double maxabs);
/* The range of the finite values, and whether -inf or NaN occur. */
typedef struct tt__fig_stats {
    double fmin, fmax, maxabs;
    int64_t nfinite;
    int has_ninf, has_nan;
} tt__fig_stats;
tt__fig_stats tt__fig_data_stats(const float *v, int64_t n);
/* "scores [Nq=4,Nk=4]" into buf, or the shape alone without a name. */
const char *tt__fig_what(char *buf, size_t n, const char *name, const char *shape);
/* TT_EARG for a label list of the wrong length (see canvas.c). */
tt_status tt__fig_count_err(const char *op, const char *opt, int given, int64_t want,
                            const char *unit, const char *each, const char *tensor,
                            const char *hint);

/* ===== Line charts (plot.c) ===== */

#define TT_PLOT_MAX_SERIES 8
#define TT_PLOT_MAX_TICKS 24

/* One line: n points (x[i], y[i]). A point with a non-finite coordinate
   is not drawn (the line breaks there) and a note under the title counts
   them. yerr, when not NULL, holds nyerr (== ny) half-widths >= 0: a
   bar from y - yerr to y + yerr at each point, in the series' colour. */
typedef struct tt_plot_series {
    const char *name;    /* legend entry; NULL: "series k" */
    const double *x, *y;
    int64_t nx, ny;      /* must be equal and > 0 */
    const double *yerr;
    int64_t nyerr;
} tt_plot_series;

typedef struct tt_plot_opts {
    const char *title, *xtitle, *ytitle;
    int xlog, ylog;      /* decades, ticks labelled 10^k; values must be > 0 */
    int legend;          /* -1 auto (on for more than one series), 0 off, 1 on */
    int markers;         /* -1 auto (on when no series has more than 20 points) */
    double ymin, ymax;   /* fixed ends of the y axis; NaN (the default): from the data and bars */
    tt_png_meta meta;
} tt_plot_opts;

/* Where things landed (for tests): the plot area, its axes' ranges (the
   log10 of the values on a log axis) and ticks (values, not logs). */
typedef struct tt_plot_geom {
    int width, height;
    int ax, ay, aw, ah;              /* plot area: x right, y down */
    double xlo, xhi, ylo, yhi;       /* axis ends, in log10 on a log axis */
    int nxticks, nyticks;
    double xticks[TT_PLOT_MAX_TICKS], yticks[TT_PLOT_MAX_TICKS];
    int xlabel_w;                    /* widest x tick label, pixels */
    int legend_x, legend_y, legend_n;    /* entry k's line at legend_y + 32*k + 11 */
    int64_t skipped;                 /* non-finite points left out */
} tt_plot_geom;

void tt_plot_opts_init(tt_plot_opts *o);
/* Pixel position of the data point (x, y) in a rendered plot. */
void tt_plot_point(const tt_plot_geom *g, int xlog, int ylog, double x, double y, double *px,
                   double *py);
/* Line chart of nseries series (1..TT_PLOT_MAX_SERIES), each in its colour of a
   colour-blind-safe palette (Okabe & Ito) and its own marker shape, the
   legend right of the plot area (never over the data). TT_EARG naming the
   series (and the point, 1-based) for: no series, an empty series, x and
   y of different lengths, a value <= 0 on a log axis, no finite point at
   all, yerr of the wrong length or with a value that is negative or not
   finite, a point outside a fixed ymin/ymax (bars are cut at them), and
   ymin >= ymax. Renders into *out (initialised here); geom may be NULL. */
tt_status tt_plot_render(tt_canvas *out, tt_plot_geom *geom, const tt_plot_series *series,
                         int nseries, const tt_plot_opts *opts);
tt_status tt_plot_write(const char *path, const tt_plot_series *series, int nseries,
                        const tt_plot_opts *opts);
/* Colour of series k (0-based). */
uint32_t tt_plot_colour(int k);

/* ===== One query's attention (attend.c) ===== */

#define TT_ATTEND_MAX_KEYS 32
#define TT_ATTEND_MAX_DV 16

typedef struct tt_attend_opts {
    const char *title;                       /* NULL: "One query's attention" */
    const char *const *labels; int nlabels;  /* key tokens, one a key (NULL: 1, 2, ...) */
    const char *query;                       /* the query's token, in the subtitle (may be NULL) */
    int has_scale;
    double scale;                            /* default 1/sqrt(Dh) */
    int decimals;                            /* -1: 3 */
    tt_png_meta meta;
} tt_attend_opts;

/* Where things landed (for tests): key j's row spans row_y + j*row_h
   (row_h - 4 of cells); its dot product cell starts at dot_x, its score
   cell at score_x, its weight
   cell at weight_x (both col_w wide); value d of v_j at v_x + d*cell_w,
   of a_j v_j at av_x + d*cell_w; the output row at out_y, same columns
   as a_j v_j. */
typedef struct tt_attend_geom {
    int width, height;
    int row_y, row_h, col_w, cell_w;
    int dot_x, score_x, weight_x, v_x, av_x, out_y;
} tt_attend_geom;

void tt_attend_opts_init(tt_attend_opts *o);
/* The numbers the figure shows, in float64: dots[j] = q.k_j (dots may be
   NULL), scores[j] = scale * dots[j], weights = softmax(scores),
   scaled[j*Dv + d] = weights[j] * V[j][d], out[d] = the sum over j of
   scaled. q is [Dh], K [Nk, Dh], V [Nk, Dv], row-major. */
void tt_attend_compute(const float *q, const float *K, const float *V, int nk, int dh, int dv,
                       double scale, double *dots, double *scores, double *weights, double *scaled,
                       double *out);
/* One query against its keys, side by side: the dot products, the
   scores (the dot products times the scale), the softmax weights, the
   value rows v_j, the rows scaled by their weights a_j v_j and, under
   them, their sum: the output. Every number annotated.
   TT_EARG for no keys, more than TT_ATTEND_MAX_KEYS keys or
   TT_ATTEND_MAX_DV value columns, or a label list of the wrong length. */
tt_status tt_attend_render(tt_canvas *out, tt_attend_geom *geom, const float *q, const float *K,
                           const float *V, int nk, int dh, int dv, const tt_attend_opts *opts);
tt_status tt_attend_write(const char *path, const float *q, const float *K, const float *V, int nk,
                          int dh, int dv, const tt_attend_opts *opts);

/* ===== Head groups (head_groups.c): the MHA / GQA / MQA diagram ===== */

#define TT_HEAD_GROUPS_MAX_Q 64
#define TT_HEAD_GROUPS_MAX_VARIANTS 8

typedef struct tt_head_groups_opts {
    const char *title;                  /* over the panels (NULL: none) */
    int q_heads;                        /* 1..TT_HEAD_GROUPS_MAX_Q */
    /* one panel a variant: its number of K/V heads, each dividing q_heads */
    const int *kv_heads; int nvariants; /* 1..TT_HEAD_GROUPS_MAX_VARIANTS */
    /* one name a variant, or NULL: "MHA", "GQA", "MQA" from the counts;
       a NULL entry also takes that name */
    const char *const *titles; int ntitles;
    tt_png_meta meta;
} tt_head_groups_opts;

/* Where things landed (for tests): query box h of every panel covers
   q_x[h], q_y[p], box_w x box_h; K/V box k of panel p covers kv_x[p][k],
   kv_y[p]. */
typedef struct tt_head_groups_geom {
    int width, height, npanels, box_w, box_h;
    int q_x[TT_HEAD_GROUPS_MAX_Q];
    int q_y[TT_HEAD_GROUPS_MAX_VARIANTS], kv_y[TT_HEAD_GROUPS_MAX_VARIANTS];
    int kv_x[TT_HEAD_GROUPS_MAX_VARIANTS][TT_HEAD_GROUPS_MAX_Q];
} tt_head_groups_geom;

void tt_head_groups_opts_init(tt_head_groups_opts *o);
/* One panel a variant: query heads Q1..Qn in a row, K/V heads below, a
   line from query head h (1-based) to the K/V head it reads,
   ceil(h / (q_heads / kv_heads)); each group in its tt_fig_colour; the
   panel title with the counts and a caption with the KV-cache size next
   to MHA's. Renders into *out (initialised here; free with
   tt_canvas_free); geom may be NULL. TT_EARG when q_heads is out of
   range, a kv_heads entry does not divide it, there are no or too many
   variants, or ntitles differs from nvariants. */
tt_status tt_head_groups_render(tt_canvas *out, tt_head_groups_geom *geom,
                                const tt_head_groups_opts *opts);
/* The same written to path (tt__figure_save); TT_EIO when it cannot be. */
tt_status tt_head_groups_write(const char *path, const tt_head_groups_opts *opts);

#endif
