/*
** heatmap_draw.c — a heatmap's drawing steps (core layer): the title, the
** panels' cells, numbers, tiles, row sums and tick labels, the axis titles,
** the colour bar and the legend, at the positions heatmap.c's layout steps
** computed (heatmap.h).
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "heatmap.h"
#include "svg.h"

/* A bool tensor's two colours: false light grey, true a strong blue,
   apart in colour and in grey print. */
static const uint32_t BOOL_RGB[2] = { 0xd8d8d8u, 0x2f6db5u };


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

/* Colour of category k (0-based). */
static uint32_t hm_cat_rgb(const heatmap *h, int k)
{
    return h->boolean ? BOOL_RGB[k] : tt_fig_colour(k);
}

/* Colour of a plain (unmasked, not -inf) cell on the range a..b. */
static uint32_t hm_cell_rgb(const heatmap *h, double v, double a, double scale)
{
    if (h->ncat) return hm_cat_rgb(h, (int)v - 1);   /* codes checked: 1..ncat */
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
            if (m && isnan(v) && !h->ncat) {   /* hidden and NaN: the NaN colour under the strokes */
                tt_canvas_fill_rect(out, x, y, cw - sep, ch - sep, TT_FIG_NAN_RGB);
                tt_canvas_hatch_strokes(out, x, y, cw - sep, ch - sep, m);
                continue;
            }
            if (m) { tt_canvas_hatch_kinds(out, x, y, cw - sep, ch - sep, m); continue; }
            if (isinf(v) && v < 0) { tt_canvas_hatch(out, x, y, cw - sep, ch - sep); continue; }
            const uint32_t rgb = hm_cell_rgb(h, v, a, scale);
            if (cw == 1 && ch == 1) {   /* the common big case: no clipping to do */
                tt__svg_rect(out->vec, x, y, 1, 1, rgb);
                tt__canvas_put(out, x, y, rgb);
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
            tt__fig_fmt_num(buf, sizeof buf, v, h->decimals);
            const int w = tt_font_width(buf, h->ascale, 0), hgt = TT_FONT_CAP * h->ascale;
            if (w + HM_ANNOT_MIN_PAD > cw - sep) continue;
            const int x = px0 + j * cw + (cw - sep - w) / 2;
            const int y = my + i * ch + (ch - sep - hgt) / 2;
            uint32_t ink;
            if (m && isnan(v)) {   /* "NaN" as on a plain NaN cell */
                tt_canvas_fill_rect(out, x - pad, y - pad, w + 2 * pad, hgt + 2 * pad, TT_FIG_NAN_RGB);
                ink = WHITE;
            } else if (m) {
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
        tt__fig_fmt_num(buf, sizeof buf, h->rsum[p * h->rows + i], h->decimals);
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
        case LEG_CATEGORY: tt_canvas_fill_rect(out, x, y, s, s, hm_cat_rgb(h, e->k)); break;
        }
        tt_canvas_frame(out, x - 1, y - 1, s + 2, s + 2, 1, RULE);
        tt_font_draw(out, x + s + HM_LEGEND_TEXT_GAP, y + s / 2 - TT_FONT_CAP, e->text, 2, 0, INK);
    }
}

void tt__heatmap_draw(const heatmap *h, tt_canvas *out)
{
    hm_draw_title(h, out);
    for (int64_t p = 0; p < h->P; p++) hm_draw_panel(h, out, p);
    hm_draw_axis_titles(h, out);
    if (h->colorbar) hm_draw_colorbar(h, out);
    hm_draw_legend(h, out);
}
