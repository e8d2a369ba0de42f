/*
** head_groups.c — the MHA / GQA / MQA diagram behind tt.head_groups (core
** layer): one panel per variant, query heads on top, K/V heads below, a
** line from each query head to the K/V head it reads, and the KV-cache
** size of the variant next to MHA's. Drawn with figure.c's canvas and
** font.c's bitmap font.
*/
#include <stdio.h>
#include <string.h>

#include "figure.h"
#include "font.h"
#include "tt_internal.h"

#define INK      0x1f1f1fu   /* titles, labels (as in figure.c) */
#define INK_SOFT 0x555555u   /* row names, captions */

#define M        36          /* outer margin */
#define BOX_H    34
#define LINES_H  84          /* between the two rows of boxes */
#define PANEL_GAP 34

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

/* c mixed with white: t = 0 white, 1 c. */
static uint32_t tint(uint32_t c, double t)
{
    uint32_t out = 0;
    for (int s = 0; s <= 16; s += 8) {
        const double v = 255.0 - (255.0 - (double)((c >> s) & 0xff)) * t;
        out |= (uint32_t)(v + 0.5) << s;
    }
    return out;
}

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

void tt_head_groups_opts_init(tt_head_groups_opts *o)
{
    memset(o, 0, sizeof *o);
}

/* "MHA" when every query head has its own K/V head, "MQA" when one K/V
   head serves them all, "GQA" in between. */
static const char *variant_name(int q, int g)
{
    return g == q ? "MHA" : g == 1 ? "MQA" : "GQA";
}

static tt_status check_opts(const tt_head_groups_opts *o)
{
    if (o->q_heads < 1 || o->q_heads > TT_HEAD_GROUPS_MAX_Q)
        return tt__err(TT_EARG, "head_groups: q_heads must be a whole number from 1 to %d, got %d",
                       TT_HEAD_GROUPS_MAX_Q, o->q_heads);
    if (!o->kv_heads || o->nvariants < 1 || o->nvariants > TT_HEAD_GROUPS_MAX_VARIANTS)
        return tt__err(TT_EARG, "head_groups: kv_heads must list 1 to %d variants (one panel each), "
                       "got %d", TT_HEAD_GROUPS_MAX_VARIANTS, o->kv_heads ? o->nvariants : 0);
    for (int v = 0; v < o->nvariants; v++) {
        const int g = o->kv_heads[v];
        if (g < 1 || g > o->q_heads || o->q_heads % g != 0)
            return tt__err(TT_EARG, "head_groups: kv_heads[%d] = %d does not divide q_heads = %d; "
                           "hint: each K/V head serves the same number of query heads, so the "
                           "count of K/V heads divides %d", v + 1, g, o->q_heads, o->q_heads);
    }
    if (o->titles && o->ntitles != o->nvariants)
        return tt__err(TT_EARG, "head_groups: %d title%s for the %d variant%s in kv_heads; hint: "
                       "one title a variant, e.g. {\"MHA\", \"GQA\", \"MQA\"}", o->ntitles,
                       o->ntitles == 1 ? "" : "s", o->nvariants, o->nvariants == 1 ? "" : "s");
    return TT_OK;
}

tt_status tt_head_groups_render(tt_canvas *out, tt_head_groups_geom *geom,
                                const tt_head_groups_opts *opts)
{
    out->w = out->h = 0;
    out->px = NULL;
    out->vec = NULL;
    tt_status st = check_opts(opts);
    if (st != TT_OK) return st;
    const int Q = opts->q_heads, NV = opts->nvariants;

    /* texts first: they decide the width */
    char ptitle[TT_HEAD_GROUPS_MAX_VARIANTS][160], caption[TT_HEAD_GROUPS_MAX_VARIANTS][160];
    for (int v = 0; v < NV; v++) {
        const int g = opts->kv_heads[v], per = Q / g;
        const char *name = opts->titles && opts->titles[v] ? opts->titles[v] : variant_name(Q, g);
        if (g == Q)
            snprintf(ptitle[v], sizeof ptitle[v], "%.60s: %d query head%s, each with its own K/V head",
                     name, Q, Q == 1 ? "" : "s");
        else
            snprintf(ptitle[v], sizeof ptitle[v], "%.60s: %d query heads share %d K/V head%s", name, Q,
                     g, g == 1 ? "" : "s");
        const int d = gcd(g, Q);
        if (g == Q)
            snprintf(caption[v], sizeof caption[v], "1 query head per K/V head; KV cache: the MHA size");
        else
            snprintf(caption[v], sizeof caption[v], "%d query heads per K/V head; KV cache: %d/%d "
                     "of MHA's", per, g / d, Q / d);
    }

    /* boxes: a pitch that keeps the figure under ~1400 pixels; labels in
       the largest size that fits (none below 10 pixels a box) */
    const int pitch = imax(imin(1280 / Q, 76), 14);
    const int box_w = pitch - imax(pitch / 8, 3);
    int lscale = 0;
    char kvlab[16];   /* the widest label */
    snprintf(kvlab, sizeof kvlab, "KV%d", Q);
    for (int s = 2; s >= 1 && !lscale; s--)
        if (tt_font_width(kvlab, s, 0) + 6 <= box_w) lscale = s;
    const char *row_q = "query heads", *row_kv = "K/V heads";
    const int name_w = imax(tt_font_width(row_q, 2, 0), tt_font_width(row_kv, 2, 0)) + 18;
    const int rows_w = Q * pitch;
    int text_w = 0;
    for (int v = 0; v < NV; v++)
        text_w = imax(text_w, imax(tt_font_width(ptitle[v], 2, TT_FONT_BOLD), tt_font_width(caption[v], 2, 0)));
    const int content_w = imax(name_w + rows_w, text_w);
    tt_font_title title;
    tt_font_title_layout(&title, opts->title, imax(content_w, 360));
    const int W = imax(content_w, title.w) + 2 * M;
    const int gx = (W - (name_w + rows_w)) / 2 + name_w;   /* left edge of the boxes */
    const int title_h = title.nlines ? title.h + 24 : 0;
    const int ptitle_h = TT_FONT_LINE * 2 + 12, caption_h = TT_FONT_LINE * 2 + 12;
    const int panel_h = ptitle_h + BOX_H + LINES_H + BOX_H + 12 + caption_h;
    const int H = M + title_h + NV * panel_h + (NV - 1) * PANEL_GAP + M - 12;
    st = tt_canvas_init(out, W, H);
    if (st != TT_OK) return st;
    if (geom) {
        memset(geom, 0, sizeof *geom);
        geom->width = W;
        geom->height = H;
        geom->npanels = NV;
        geom->box_w = box_w;
        geom->box_h = BOX_H;
    }

    tt_font_title_draw(out, &title, W / 2, M, INK);
    for (int v = 0; v < NV; v++) {
        const int g = opts->kv_heads[v], per = Q / g;
        const int py = M + title_h + v * (panel_h + PANEL_GAP);
        const int qy = py + ptitle_h, kvy = qy + BOX_H + LINES_H;
        if (v > 0) tt_canvas_fill_rect(out, M, py - PANEL_GAP / 2, W - 2 * M, 1, 0xe4e4e4u);
        tt_font_draw(out, (W - tt_font_width(ptitle[v], 2, TT_FONT_BOLD)) / 2, py, ptitle[v], 2,
                     TT_FONT_BOLD, INK);
        tt_font_draw(out, gx - 18 - tt_font_width(row_q, 2, 0), qy + (BOX_H - TT_FONT_CAP * 2) / 2,
                     row_q, 2, 0, INK_SOFT);
        tt_font_draw(out, gx - 18 - tt_font_width(row_kv, 2, 0), kvy + (BOX_H - TT_FONT_CAP * 2) / 2,
                     row_kv, 2, 0, INK_SOFT);

        /* K/V head k sits under the middle of its group of query heads */
        int kvx[TT_HEAD_GROUPS_MAX_Q];
        for (int k = 0; k < g; k++)
            kvx[k] = gx + k * per * pitch + (pitch - box_w) / 2 + (per - 1) * pitch / 2;
        /* lines first, so the boxes sit on top of their ends:
           query head h (0-based) reads K/V head h / per */
        for (int h = 0; h < Q; h++) {
            const int k = h / per;
            const double x0 = gx + h * pitch + (pitch - box_w) / 2 + box_w / 2.0;
            const double x1 = kvx[k] + box_w / 2.0;
            tt_canvas_line(out, x0, qy + BOX_H, x1, kvy, 2.0, tt_fig_colour(k));
        }
        for (int h = 0; h < Q; h++) {
            const int k = h / per, x = gx + h * pitch + (pitch - box_w) / 2;
            const uint32_t c = tt_fig_colour(k);
            tt_canvas_round_rect(out, x, qy, box_w, BOX_H, 5, tint(c, 0.28), c, 2);
            if (lscale) {
                char lab[16];
                snprintf(lab, sizeof lab, "Q%d", h + 1);
                const int w = tt_font_width(lab, lscale, 0);
                tt_font_draw(out, x + (box_w - w) / 2, qy + (BOX_H - TT_FONT_CAP * lscale) / 2, lab,
                             lscale, 0, INK);
            }
            if (geom) geom->q_x[h] = x;
        }
        for (int k = 0; k < g; k++) {
            const uint32_t c = tt_fig_colour(k);
            tt_canvas_round_rect(out, kvx[k], kvy, box_w, BOX_H, 5, c, c, 0);
            if (lscale) {
                char lab[16];
                snprintf(lab, sizeof lab, "KV%d", k + 1);
                const int w = tt_font_width(lab, lscale, 0);
                tt_font_draw(out, kvx[k] + (box_w - w) / 2, kvy + (BOX_H - TT_FONT_CAP * lscale) / 2,
                             lab, lscale, 0, tt_rgb_luma(c) > 0.55 ? INK : 0xffffffu);
            }
            if (geom) geom->kv_x[v][k] = kvx[k];
        }
        tt_font_draw(out, (W - tt_font_width(caption[v], 2, 0)) / 2, kvy + BOX_H + 12, caption[v], 2, 0,
                     INK_SOFT);
        if (geom) {
            geom->q_y[v] = qy;
            geom->kv_y[v] = kvy;
        }
    }
    return TT_OK;
}

static tt_status head_groups_render_call(tt_canvas *out, const void *opts)
{
    return tt_head_groups_render(out, NULL, opts);
}

tt_status tt_head_groups_write(const char *path, const tt_head_groups_opts *opts)
{
    return tt__figure_write("head_groups", path, head_groups_render_call, opts, &opts->meta);
}
