/*
** head_groups.c — the MHA / GQA / MQA diagram behind tt.head_groups (core
** layer): one panel per variant, query heads on top, K/V heads below, a
** line from each query head to the K/V head it reads, and the KV-cache
** size of the variant next to MHA's. Drawn with canvas.c's canvas and
** font.c's bitmap font.
*/
#include <stdio.h>
#include <string.h>

#include "figure.h"
#include "font.h"
#include "tt_internal.h"

#define INK      0x1f1f1fu   /* titles, labels (as in heatmap.c) */
#define INK_SOFT 0x555555u   /* row names, captions */
#define RULE     0xe4e4e4u   /* the line between two panels */

/* Pixel sizes and the rules that place them. */
enum {
    M = 36,               /* outer margin */
    BOX_H = 34,           /* a head's box */
    LINES_H = 84,         /* between the two rows of boxes */
    PANEL_GAP = 34,       /* between two panels (the rule sits in its middle) */
    ROWS_MAX_W = 1280,    /* the boxes' row stays under this... */
    PITCH_MAX = 76,       /* ...with boxes no wider apart than this */
    PITCH_MIN = 14,       /* and no closer (many heads: the figure grows) */
    BOX_GAP_MIN = 3,      /* between two boxes: pitch/8, at least this */
    LABEL_PAD = 6,        /* a box label's room on the sides, together */
    ROW_NAME_GAP = 18,    /* "query heads" to the first box */
    TITLE_MIN_W = 360,    /* a figure title wraps no narrower */
    TITLE_GAP = 24,       /* under the figure title */
    TEXT_GAP = 12,        /* under a panel title, above and under a caption */
    BOX_RADIUS = 5,
    QBOX_BORDER = 2,      /* query boxes: a tint with the group's colour as border */
    LINE_W = 2,
};
#define QBOX_TINT 0.28        /* how much of the group colour fills a query box */
#define DARK_LUMA 0.55        /* K/V boxes lighter than this get dark labels */

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

/* Where everything goes, from the options alone. */
typedef struct hg_layout {
    int Q, NV;
    char ptitle[TT_HEAD_GROUPS_MAX_VARIANTS][160];   /* "GQA: 8 query heads share 2 K/V heads" */
    char caption[TT_HEAD_GROUPS_MAX_VARIANTS][160];  /* "4 query heads per K/V head; KV cache: ..." */
    int pitch, box_w;       /* box spacing and width along a row */
    int lscale;             /* box label size (0: no labels, the boxes are too narrow) */
    int gx;                 /* left edge of the boxes */
    int W, H, title_h, ptitle_h, caption_h, panel_h;
    tt_font_title title;
} hg_layout;

static const char *const ROW_Q = "query heads", *const ROW_KV = "K/V heads";

static void hg_texts(hg_layout *L, const tt_head_groups_opts *opts)
{
    const int Q = L->Q;
    for (int v = 0; v < L->NV; v++) {
        const int g = opts->kv_heads[v], per = Q / g;
        const char *name = opts->titles && opts->titles[v] ? opts->titles[v] : variant_name(Q, g);
        if (g == Q)
            snprintf(L->ptitle[v], sizeof L->ptitle[v], "%.60s: %d query head%s, each with its own K/V head",
                     name, Q, Q == 1 ? "" : "s");
        else
            snprintf(L->ptitle[v], sizeof L->ptitle[v], "%.60s: %d query heads share %d K/V head%s", name,
                     Q, g, g == 1 ? "" : "s");
        const int d = gcd(g, Q);
        if (g == Q)
            snprintf(L->caption[v], sizeof L->caption[v], "1 query head per K/V head; KV cache: the MHA size");
        else
            snprintf(L->caption[v], sizeof L->caption[v], "%d query heads per K/V head; KV cache: %d/%d "
                     "of MHA's", per, g / d, Q / d);
    }
}

/* Texts first: they decide the width. Boxes: a pitch that keeps the row
   under ROWS_MAX_W; labels in the largest size that fits. */
static void hg_layout_compute(hg_layout *L, const tt_head_groups_opts *opts)
{
    L->Q = opts->q_heads;
    L->NV = opts->nvariants;
    hg_texts(L, opts);
    const int Q = L->Q;
    L->pitch = imax(imin(ROWS_MAX_W / Q, PITCH_MAX), PITCH_MIN);
    L->box_w = L->pitch - imax(L->pitch / 8, BOX_GAP_MIN);
    L->lscale = 0;
    char kvlab[16];   /* the widest label */
    snprintf(kvlab, sizeof kvlab, "KV%d", Q);
    for (int sc = 2; sc >= 1 && !L->lscale; sc--)
        if (tt_font_width(kvlab, sc, 0) + LABEL_PAD <= L->box_w) L->lscale = sc;
    const int name_w = imax(tt_font_width(ROW_Q, 2, 0), tt_font_width(ROW_KV, 2, 0)) + ROW_NAME_GAP;
    const int rows_w = Q * L->pitch;
    int text_w = 0;
    for (int v = 0; v < L->NV; v++)
        text_w = imax(text_w, imax(tt_font_width(L->ptitle[v], 2, TT_FONT_BOLD),
                                   tt_font_width(L->caption[v], 2, 0)));
    const int content_w = imax(name_w + rows_w, text_w);
    tt_font_title_layout(&L->title, opts->title, imax(content_w, TITLE_MIN_W));
    L->W = imax(content_w, L->title.w) + 2 * M;
    L->gx = (L->W - (name_w + rows_w)) / 2 + name_w;
    L->title_h = L->title.nlines ? L->title.h + TITLE_GAP : 0;
    L->ptitle_h = L->caption_h = TT_FONT_LINE * 2 + TEXT_GAP;
    L->panel_h = L->ptitle_h + BOX_H + LINES_H + BOX_H + TEXT_GAP + L->caption_h;
    L->H = M + L->title_h + L->NV * L->panel_h + (L->NV - 1) * PANEL_GAP + M - TEXT_GAP;
}

/* A box's label, centred. */
static void hg_box_label(tt_canvas *out, const hg_layout *L, int x, int y, const char *lab, uint32_t ink)
{
    const int w = tt_font_width(lab, L->lscale, 0);
    tt_font_draw(out, x + (L->box_w - w) / 2, y + (BOX_H - TT_FONT_CAP * L->lscale) / 2, lab, L->lscale, 0,
                 ink);
}

/* Panel v: its title, the row names, the lines from each query head to
   its K/V head, the boxes, the caption. */
static void hg_draw_panel(tt_canvas *out, const hg_layout *L, tt_head_groups_geom *geom, int v, int g)
{
    const int Q = L->Q, per = Q / g, W = L->W, gx = L->gx, pitch = L->pitch, box_w = L->box_w;
    const int py = M + L->title_h + v * (L->panel_h + PANEL_GAP);
    const int qy = py + L->ptitle_h, kvy = qy + BOX_H + LINES_H;
    if (v > 0) tt_canvas_fill_rect(out, M, py - PANEL_GAP / 2, W - 2 * M, 1, RULE);
    tt_font_draw(out, (W - tt_font_width(L->ptitle[v], 2, TT_FONT_BOLD)) / 2, py, L->ptitle[v], 2,
                 TT_FONT_BOLD, INK);
    tt_font_draw(out, gx - ROW_NAME_GAP - tt_font_width(ROW_Q, 2, 0), qy + (BOX_H - TT_FONT_CAP * 2) / 2,
                 ROW_Q, 2, 0, INK_SOFT);
    tt_font_draw(out, gx - ROW_NAME_GAP - tt_font_width(ROW_KV, 2, 0), kvy + (BOX_H - TT_FONT_CAP * 2) / 2,
                 ROW_KV, 2, 0, INK_SOFT);

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
        tt_canvas_line(out, x0, qy + BOX_H, x1, kvy, LINE_W, tt_fig_colour(k));
    }
    for (int h = 0; h < Q; h++) {
        const int k = h / per, x = gx + h * pitch + (pitch - box_w) / 2;
        const uint32_t c = tt_fig_colour(k);
        tt_canvas_round_rect(out, x, qy, box_w, BOX_H, BOX_RADIUS, tint(c, QBOX_TINT), c, QBOX_BORDER);
        if (L->lscale) {
            char lab[16];
            snprintf(lab, sizeof lab, "Q%d", h + 1);
            hg_box_label(out, L, x, qy, lab, INK);
        }
        if (geom) geom->q_x[h] = x;
    }
    for (int k = 0; k < g; k++) {
        const uint32_t c = tt_fig_colour(k);
        tt_canvas_round_rect(out, kvx[k], kvy, box_w, BOX_H, BOX_RADIUS, c, c, 0);
        if (L->lscale) {
            char lab[16];
            snprintf(lab, sizeof lab, "KV%d", k + 1);
            hg_box_label(out, L, kvx[k], kvy, lab, tt_rgb_luma(c) > DARK_LUMA ? INK : 0xffffffu);
        }
        if (geom) geom->kv_x[v][k] = kvx[k];
    }
    tt_font_draw(out, (W - tt_font_width(L->caption[v], 2, 0)) / 2, kvy + BOX_H + TEXT_GAP, L->caption[v], 2,
                 0, INK_SOFT);
    if (geom) {
        geom->q_y[v] = qy;
        geom->kv_y[v] = kvy;
    }
}

tt_status tt_head_groups_render(tt_canvas *out, tt_head_groups_geom *geom,
                                const tt_head_groups_opts *opts)
{
    out->w = out->h = 0;
    out->px = NULL;
    out->vec = NULL;
    tt_status st = check_opts(opts);
    if (st != TT_OK) return st;
    hg_layout L;
    hg_layout_compute(&L, opts);
    st = tt_canvas_init(out, L.W, L.H);
    if (st != TT_OK) return st;
    if (geom) {
        memset(geom, 0, sizeof *geom);
        geom->width = L.W;
        geom->height = L.H;
        geom->npanels = L.NV;
        geom->box_w = L.box_w;
        geom->box_h = BOX_H;
    }
    tt_font_title_draw(out, &L.title, L.W / 2, M, INK);
    for (int v = 0; v < L.NV; v++) hg_draw_panel(out, &L, geom, v, opts->kv_heads[v]);
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
