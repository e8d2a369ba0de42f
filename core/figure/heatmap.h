/*
** heatmap.h — what heatmap.c (the layout steps) hands heatmap_draw.c (the
** drawing steps): the layout's sizes, the figure's colours and the heatmap
** struct of positions. Private to core/figure/.
*/
#ifndef TT_HEATMAP_H
#define TT_HEATMAP_H

#include <stdint.h>

#include "figure.h"
#include "font.h"
#include "tt_internal.h"

/* Palette of the figure furniture. */
#define INK      0x1f1f1fu   /* titles, labels */
#define INK_SOFT 0x555555u   /* axis titles, notes */
#define RULE     0x9a9a9au   /* frames, ticks */

/* One axis of tick labels: which data indices get a label, and how. */
typedef struct axis_labels {
    int n;                 /* labels shown */
    int64_t *idx;          /* data index of each */
    char (*text)[48];
    int scale, vertical, step_gt1;
    int extent;            /* widest label (along its own direction) */
} axis_labels;

/* Legend entries right of the grid: what each special look means. */
typedef enum { LEG_NINF, LEG_NAN, LEG_MASK, LEG_CATEGORY } legend_kind;
typedef struct legend_entry {
    legend_kind kind;
    int k;              /* mask kind or category index */
    char text[64];
} legend_entry;
#define LEGEND_MAX (2 + TT_FIG_MASK_KINDS + TT_FIG_NCOLOURS)

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
    HM_LABEL_GRID_W = 1400,    /* cells grow to HM_LABEL_CELL while the grid fits: one panel ... */
    HM_LABEL_GRID_W_P = 2900,  /* ... a grid of panels */
    HM_LABEL_GRID_H = 1600,
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
    int boolean;               /* a bool tensor drawn as two categories */
    /* the shown grid: one cell per br x bc block */
    int64_t br, bc, nshown;
    int rows, cols, down, limit;
    float *vals;               /* [P, rows, cols] */
    uint8_t *mbits;            /* mask kinds of each shown cell, or NULL */
    /* colour scale */
    tt__fig_stats s;
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

/* The drawing steps: the title, each panel, the axis titles, the colour
   bar and the legend, at the positions the layout steps put in h. */
void tt__heatmap_draw(const heatmap *h, tt_canvas *out);

#endif
