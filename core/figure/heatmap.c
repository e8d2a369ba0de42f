/*
** heatmap.c — heatmaps (core layer): one matrix or a grid of panels (one a
** head), cells coloured on a map, numbers in small ones, -inf hatched,
** NaN in its own colour, masks, categories, row sums, tile borders, big
** matrices drawn one cell a block. Here the layout steps (a struct of
** positions from the data and the options, heatmap.h); heatmap_draw.c the
** drawing steps, on canvas.c's canvas. Inputs are plain float arrays or
** strided sources.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heatmap.h"

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

/* ===== Heatmap ===== */

/* The least cell pitch of a full-size (scale 2) token label, clear of the
   next one, descenders included. */
#define HM_LABEL_CELL (2 * TT_FONT_HEIGHT + 2)

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
        tt__fig_fmt_num(buf, sizeof buf, vals[k], decimals);
        if (!strcmp(buf, last)) continue;   /* runs of equal values are common */
        w = imax(w, tt_font_width(buf, scale, 0));
        memcpy(last, buf, sizeof last);
    }
    return w;
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

void tt_heatmap_opts_init(tt_heatmap_opts *o)
{
    memset(o, 0, sizeof *o);
    o->annotate = -1;
    o->colorbar = -1;
    o->decimals = -1;
    o->max_annotate = 16;
}


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
        if (px < HM_LABEL_CELL) {
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


static void legend_add(legend_entry *leg, int *n, legend_kind kind, int k, const char *text)
{
    leg[*n].kind = kind;
    leg[*n].k = k;
    tt_font_fit(leg[*n].text, sizeof leg[*n].text, text, 2, 0, 260);
    (*n)++;
}



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
        return tt__fig_count_err("heatmap", "xlabels", opts->nxlabels, C, "column", each, tname, hint);
    }
    if (opts->ylabels && opts->nylabels != R) {
        char hint[96];
        if (R == 1) snprintf(hint, sizeof hint, "this is one row; xlabels name its %lld column%s",
                             (long long)C, C == 1 ? "" : "s");
        else if (opts->nylabels == C) snprintf(hint, sizeof hint, "ylabels name the rows (queries), "
                                               "xlabels the columns (keys)");
        else snprintf(hint, sizeof hint, "one label a row (\"\" for a blank one)");
        return tt__fig_count_err("heatmap", "ylabels", opts->nylabels, R, "row", each, tname, hint);
    }
    if (opts->panel_titles && opts->npanel_titles != P)
        return tt__fig_count_err("heatmap", "panel_titles", opts->npanel_titles, P, "panel", "", tname,
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
    if (h->boolean) {
        if (opts->categories && opts->ncategories != 2)
            return tt__err(TT_EARG, "heatmap: %d categor%s for the bool tensor %s; hint: it takes two, "
                           "the names of false and true, e.g. {\"hidden\", \"may attend\"}",
                           opts->ncategories, opts->ncategories == 1 ? "y" : "ies", tname);
        h->ncat = 2;
    }
    /* codes: a block mean would invent categories */
    h->use_max = h->ncat > 0 || (opts->downsample && !strcmp(opts->downsample, "max"));
    if (opts->downsample && strcmp(opts->downsample, "max") && strcmp(opts->downsample, "mean"))
        return tt__err(TT_EARG, "heatmap: unknown downsample '%s' (use 'mean' or 'max')",
                       opts->downsample);
    if (opts->masks && (opts->nmasks < 1 || opts->nmasks > TT_FIG_MASK_KINDS))
        return tt__err(TT_EARG, "heatmap: %d masks; one to %d kinds can be told apart",
                       opts->nmasks, TT_FIG_MASK_KINDS);
    if (opts->categories && !h->boolean && (h->ncat < 1 || h->ncat > TT_FIG_NCOLOURS))
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
    tt__fig_fmt_num(vb, sizeof vb, v, v == floor(v) ? 0 : 2);
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
    for (int64_t k = 0; k < h->nshown && h->boolean; k++) h->vals[k] += 1.0f;   /* codes: false 1, true 2 */
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
    h->s = tt__fig_data_stats(h->vals, h->nshown);
    const tt__fig_stats s = h->s;
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
        const tt__fig_stats rs = tt__fig_data_stats(h->vals + k * h->cols, h->cols);
        double a = rs.fmin, b = rs.fmax;
        if (!rs.nfinite) a = 0.0, b = 1.0;
        else if (h->cmap == TT_CMAP_DIVERGING) { b = rs.maxabs > 0 ? rs.maxabs : 1.0; a = -b; }
        else if (!(b > a)) a = b - 1.0;   /* a lone value takes the top colour */
        h->rlo[k] = a;
        h->rhi[k] = b;
    }
    return TT_OK;
}

/* Whether grows rows of panels of rows label-size cells fit HM_LABEL_GRID_H. */
static int label_rows_fit(int64_t P, int gcols, int rows)
{
    const int64_t grows = (P + gcols - 1) / gcols;
    return grows * rows * HM_LABEL_CELL + (grows - 1) * HM_FIT_GAP_Y <= HM_LABEL_GRID_H;
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
                                       : tt__fig_auto_decimals(h->vals, h->nshown, h->s.maxabs);
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
    /* token labels: cells grow so that every token gets a full-size label,
       while the grid stays within a slide's reach */
    const int lw = P == 1 ? HM_LABEL_GRID_W : HM_LABEL_GRID_W_P;
    if ((opts->xlabels || opts->ylabels) && !h->down && cell < HM_LABEL_CELL &&
        gcols * cols * HM_LABEL_CELL + (gcols - 1) * HM_PANEL_GAP <= lw &&
        label_rows_fit(P, gcols, rows))
        cell = HM_LABEL_CELL;
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
            h->nticks = tt__fig_nice_ticks(h->lo, h->hi, 5, h->tickval, 16, &td);
            for (int k = 0; k < h->nticks; k++) tt__fig_fmt_num(h->ticktext[k], 32, h->tickval[k], td);
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
        tt__fig_fmt_num(buf, sizeof buf, sum, h->decimals);
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
    int ninf_plain = 0, nan = 0;   /* -inf shown as such, not under a mask; NaN shows under one too */
    unsigned kinds = 0;
    for (int64_t k = 0; k < h->nshown; k++) {
        const unsigned m = h->mbits ? h->mbits[k] : 0;
        kinds |= m;
        if (!m && isinf(h->vals[k]) && h->vals[k] < 0) ninf_plain = 1;
        if (isnan(h->vals[k])) nan = 1;
    }
    for (int k = 0; k < h->ncat; k++) {
        char t[32];
        if (h->boolean) snprintf(t, sizeof t, "%s", k ? "true" : "false");
        else snprintf(t, sizeof t, "%d", k + 1);
        legend_add(h->legend, &h->legend_n, LEG_CATEGORY, k,
                   opts->categories && opts->categories[k] ? opts->categories[k] : t);
    }
    for (int k = 0; k < (opts->masks ? opts->nmasks : 0); k++)
        if (kinds >> k & 1)
            legend_add(h->legend, &h->legend_n, LEG_MASK, k,
                       opts->mask_names && opts->mask_names[k] ? opts->mask_names[k] : "masked");
    if (ninf_plain) legend_add(h->legend, &h->legend_n, LEG_NINF, 0, "-inf (masked)");
    if (nan && !h->ncat) legend_add(h->legend, &h->legend_n, LEG_NAN, 0, "NaN");
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
    geom->xlabel_n = h->xlab.n; geom->xlabel_scale = h->xlab.scale;
    geom->ylabel_n = h->ylab.n; geom->ylabel_scale = h->ylab.scale;
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
    h->boolean = src->b8 && !opts->cmap && !opts->has_vmin && !opts->has_vmax && !opts->row_scale &&
                 !opts->row_sums;
    char shp[256];
    if (opts->meta.shape) snprintf(shp, sizeof shp, "%s", opts->meta.shape);
    else if (P == 1) snprintf(shp, sizeof shp, "[%lld,%lld]", (long long)R, (long long)C);
    else snprintf(shp, sizeof shp, "[%lld,%lld,%lld]", (long long)P, (long long)R, (long long)C);
    tt__fig_what(h->tname, sizeof h->tname, opts->name, shp);

    /* layout: each step fills in h from the data, the options and the
       steps before it */
    tt_status st = hm_check(h);
    if (st == TT_OK) st = hm_gather(h, src);
    if (st == TT_OK) st = hm_scale(h);
    if (st == TT_OK) { hm_cells(h); st = hm_labels(h); }
    if (st == TT_OK) st = hm_row_sums(h);
    if (st == TT_OK) { hm_legend(h); hm_place(h); st = tt_canvas_init(out, h->W, h->H); }
    if (st != TT_OK) goto done;

    tt__heatmap_draw(h, out);
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
