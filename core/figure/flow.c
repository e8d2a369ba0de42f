/*
** flow.c — the pipeline lineage behind tt.flow (figure layer). It subscribes
** to the trace (tt_flow_start) and keeps every event in a bounded ring (the
** last FLOW_MAX_EVENTS since the last tt_flow_reset); labels arrive later
** by tensor id. tt_flow_write draws one
** box per labelled tensor and arrows for the ops between them, walking back
** through unlabelled intermediates to the nearest labelled ancestors.
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
#include "flow.h"
#include "font.h"
#include "tt_internal.h"

#define FLOW_MAX_EVENTS 4096   /* ring of recent events (~2.7 MB) */
#define FLOW_MAX_LABELS 1024   /* labels kept across sections, oldest dropped */
#define FLOW_MAX_NODES TT_FLOW_MAX_BOXES    /* boxes in one diagram */
#define FLOW_MAX_EDGES TT_FLOW_MAX_ARROWS
#define FLOW_EDGE_OPS 8        /* events remembered per arrow */
#define FLOW_MAX_ITEMS 400     /* boxes plus the waypoints of long arrows */

/* ===== Recording ===== */

typedef struct fshape {
    int ndim;
    int64_t shape[TT_MAX_DIMS];
    const char *names[TT_MAX_DIMS];   /* interned: live until exit */
} fshape;

typedef struct fevent {
    tt_op op;
    int nin, has_scalar;
    double scalar;
    uint64_t out, in[TT_TRACE_MAX_INPUTS];
    fshape oshape, ishape[TT_TRACE_MAX_INPUTS];
} fevent;

typedef struct flabel {
    uint64_t id;
    char text[48];
} flabel;

/* The ring is 2.7 MB, filled an event at a time: in static memory it
   faulted in 4 KiB at a time (lesson 14: 490 faults, 12 us each on this
   project's VM). So on Linux it is a 2 MiB-aligned block that asks for
   transparent huge pages, made at the first event; the static ring (which
   costs nothing untouched) serves where that block cannot be had. */
static fevent ring_static[FLOW_MAX_EVENTS];
static fevent *ring = ring_static;

static void ring_make(void)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    static int tried;
    if (tried) return;
    tried = 1;
    const size_t block = (size_t)2 << 20, n = (sizeof ring_static + block - 1) / block * block;
    void *p;
    if (posix_memalign(&p, block, n) != 0) return;
    (void)madvise(p, n, MADV_HUGEPAGE);
    ring = p;
#endif
}
static int64_t nrecorded;               /* since the last reset */
static flabel labels[FLOW_MAX_LABELS];
static int nlabels, label_next;

static void copy_shape(fshape *d, const tt_tensor *t)
{
    d->ndim = t->ndim;
    for (int i = 0; i < t->ndim && i < TT_MAX_DIMS; i++) {
        d->shape[i] = t->shape[i];
        d->names[i] = t->names[i];
    }
}

void tt_flow_record(const tt_event *ev)
{
    /* the pipeline is the forward pass: gradients and optimizer steps
       would draw arrows from each tensor back to itself */
    if (!ev || !ev->output || ev->phase != TT_PHASE_FORWARD) return;
    if (nrecorded == 0) ring_make();
    fevent *e = &ring[nrecorded % FLOW_MAX_EVENTS];
    e->op = ev->op;
    e->has_scalar = ev->has_scalar;
    e->scalar = ev->scalar;
    e->out = ev->output->id;
    copy_shape(&e->oshape, ev->output);
    e->nin = 0;
    for (int i = 0; i < ev->ninputs && i < TT_TRACE_MAX_INPUTS; i++) {
        if (!ev->inputs[i]) continue;
        e->in[e->nin] = ev->inputs[i]->id;
        copy_shape(&e->ishape[e->nin], ev->inputs[i]);
        e->nin++;
    }
    nrecorded++;
    if (ev->output->label) tt_flow_set_label(ev->output->id, ev->output->label);
}

static void record(const tt_event *ev, void *ud)
{
    (void)ud;
    tt_flow_record(ev);
}

tt_status tt_flow_start(void)
{
    return tt_trace_subscribe(record, NULL, 0);   /* shapes and ids only: no text */
}

void tt_flow_reset(void)
{
    nrecorded = 0;   /* labels stay: a tensor named before the section keeps its name */
}

static const char *label_of(uint64_t id)
{
    for (int i = 0; i < nlabels; i++)
        if (labels[i].id == id) return labels[i].text[0] ? labels[i].text : NULL;
    return NULL;
}

void tt_flow_set_label(uint64_t id, const char *label)
{
    flabel *slot = NULL;
    for (int i = 0; i < nlabels && !slot; i++)
        if (labels[i].id == id) slot = &labels[i];
    if (!slot) {
        if (nlabels < FLOW_MAX_LABELS) slot = &labels[nlabels++];
        else { slot = &labels[label_next]; label_next = (label_next + 1) % FLOW_MAX_LABELS; }
    }
    slot->id = id;
    snprintf(slot->text, sizeof slot->text, "%s", label ? label : "");
}

/* ===== The graph ===== */

typedef struct fnode {
    uint64_t id;
    const char *label;
    const fshape *shape;
    int producer;           /* event index in the window, or -1 */
} fnode;

typedef struct fedge {
    int from, to;           /* node indices */
    int nops, ops[FLOW_EDGE_OPS];   /* event indices, ascending */
} fedge;

typedef struct graph {
    const fevent *ev;       /* window: ev[0..nev) in order, via idx() */
    int64_t first;
    int nev;
    fnode node[FLOW_MAX_NODES];
    int nnodes;
    int overflow;           /* a labelled tensor found no room */
    fedge edge[FLOW_MAX_EDGES];
    int nedges;
    int *prod_key_idx;      /* open hash: id -> latest producing event */
    uint64_t *prod_key;
    int hsize;
} graph;

static const fevent *event_at(const graph *g, int k)
{
    return &ring[(g->first + k) % FLOW_MAX_EVENTS];
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
    return x;
}

static int producer_of(const graph *g, uint64_t id)
{
    for (uint64_t h = mix(id) & (uint64_t)(g->hsize - 1);; h = (h + 1) & (uint64_t)(g->hsize - 1)) {
        if (g->prod_key_idx[h] < 0) return -1;
        if (g->prod_key[h] == id) return g->prod_key_idx[h];
    }
}

static int node_of(const graph *g, uint64_t id)
{
    for (int i = 0; i < g->nnodes; i++)
        if (g->node[i].id == id) return i;
    return -1;
}

static void add_edge_ops(graph *g, int from, int to, const int *path, int depth)
{
    fedge *e = NULL;
    for (int i = 0; i < g->nedges && !e; i++)
        if (g->edge[i].from == from && g->edge[i].to == to) e = &g->edge[i];
    if (!e) {
        if (g->nedges == FLOW_MAX_EDGES) return;
        e = &g->edge[g->nedges++];
        e->from = from; e->to = to; e->nops = 0;
    }
    for (int d = 0; d < depth; d++) {   /* merge, keeping event order */
        const int k = path[d];
        int pos = 0, dup = 0;
        while (pos < e->nops && e->ops[pos] <= k) dup |= e->ops[pos++] == k;
        if (dup || e->nops == FLOW_EDGE_OPS) continue;
        memmove(&e->ops[pos + 1], &e->ops[pos], (size_t)(e->nops - pos) * sizeof e->ops[0]);
        e->ops[pos] = k;
        e->nops++;
    }
}

/* Depth-first walk back from event k (path holds the events so far, from
   the labelled tensor's producer down to k). */
static void walk(graph *g, int target, int k, int *path, int depth, uint8_t *seen)
{
    if (seen[k] || depth >= 64) return;
    seen[k] = 1;
    path[depth++] = k;
    const fevent *e = event_at(g, k);
    for (int i = 0; i < e->nin; i++) {
        const int from = node_of(g, e->in[i]);
        if (from >= 0) {
            if (from != target) add_edge_ops(g, from, target, path, depth);
            continue;
        }
        const int p = producer_of(g, e->in[i]);
        if (p >= 0 && p < k) walk(g, target, p, path, depth, seen);
    }
}

static void add_node(graph *g, uint64_t id, const fshape *shape, int producer)
{
    if (node_of(g, id) >= 0) return;
    const char *lab = label_of(id);
    if (!lab) return;
    if (g->nnodes == FLOW_MAX_NODES) { g->overflow = 1; return; }
    fnode *n = &g->node[g->nnodes++];
    n->id = id;
    n->label = lab;
    n->shape = shape;
    n->producer = producer;
}

static tt_status build_graph(graph *g)
{
    g->nev = (int)(nrecorded < FLOW_MAX_EVENTS ? nrecorded : FLOW_MAX_EVENTS);
    g->first = nrecorded - g->nev;
    g->nnodes = g->nedges = 0;
    g->hsize = 1;
    while (g->hsize < 2 * g->nev + 2) g->hsize *= 2;
    g->prod_key = malloc((size_t)g->hsize * sizeof *g->prod_key);
    g->prod_key_idx = malloc((size_t)g->hsize * sizeof *g->prod_key_idx);
    int *path = malloc(64 * sizeof *path);
    uint8_t *seen = malloc((size_t)g->nev + 1);
    if (!g->prod_key || !g->prod_key_idx || !path || !seen) {
        free(path); free(seen);
        return tt__err(TT_ENOMEM, "flow: out of memory");
    }
    for (int h = 0; h < g->hsize; h++) g->prod_key_idx[h] = -1;
    for (int k = 0; k < g->nev; k++) {
        const uint64_t id = event_at(g, k)->out;
        uint64_t h = mix(id) & (uint64_t)(g->hsize - 1);
        while (g->prod_key_idx[h] >= 0 && g->prod_key[h] != id) h = (h + 1) & (uint64_t)(g->hsize - 1);
        g->prod_key[h] = id;
        g->prod_key_idx[h] = k;   /* the latest wins */
    }
    /* boxes, in order of first appearance */
    for (int k = 0; k < g->nev; k++) {
        const fevent *e = event_at(g, k);
        for (int i = 0; i < e->nin; i++)
            add_node(g, e->in[i], &e->ishape[i], producer_of(g, e->in[i]));
        add_node(g, e->out, &e->oshape, producer_of(g, e->out));
    }
    for (int v = 0; v < g->nnodes; v++) {
        if (g->node[v].producer < 0) continue;
        memset(seen, 0, (size_t)g->nev + 1);
        walk(g, v, g->node[v].producer, path, 0, seen);
    }
    free(path);
    free(seen);
    return TT_OK;
}

static void free_graph(graph *g)
{
    free(g->prod_key);
    free(g->prod_key_idx);
}

static int imax_(int a, int b) { return a > b ? a : b; }

static void shape_text(char *buf, size_t n, const fshape *s)
{
    tt_tensor t = {0};
    t.ndim = s->ndim;
    for (int i = 0; i < s->ndim; i++) {
        t.shape[i] = s->shape[i];
        t.names[i] = s->names[i];
    }
    tt_shape_str(&t, buf, n);
}

/* "mT, matmul, div 8": the ops of an arrow, in order, without repeats. */
static void edge_text(char *buf, size_t n, const graph *g, const fedge *e)
{
    size_t len = 0;
    buf[0] = '\0';
    char seen[FLOW_EDGE_OPS][40];
    int nseen = 0;
    for (int i = 0; i < e->nops; i++) {
        const fevent *ev = event_at(g, e->ops[i]);
        if (ev->op == TT_OP_NAMED) continue;   /* naming dims is not a step */
        char one[40];
        if (ev->has_scalar) snprintf(one, sizeof one, "%s %g", tt_op_name(ev->op), ev->scalar);
        else snprintf(one, sizeof one, "%s", tt_op_name(ev->op));
        int dup = 0;
        for (int j = 0; j < nseen; j++) dup |= !strcmp(seen[j], one);
        if (dup) continue;
        memcpy(seen[nseen++], one, sizeof one);
        len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s", len ? ", " : "", one);
        if (len >= n) break;
    }
}

/* ===== Layout and drawing =====
   Top to bottom: a row per layer (longest path from a source); arrows
   that skip rows get a waypoint in each row they cross (Sugiyama-style), so
   they never run through a box. Arrow labels go last, into free space: each
   tries spots beside its arrow (middle first) and takes the best one that
   touches no box, arrow, arrow head or other label; when some label finds
   none, the rows move apart and everything is placed again. */

typedef struct item {
    int node;               /* node index, or -1 for a waypoint */
    int layer;
    double order, x;        /* barycentre order, centre x */
    int w, h;
    int pred;               /* waypoint: the item above it */
} item;

typedef struct frect { double x, y, w, h; } frect;

#define BOX_FILL   0xeaf1fbu
#define BOX_BORDER 0x4c72b0u
#define ARROW      0x6b7b8cu
#define EDGE_INK   0x3d4f61u
#define INK        0x1f1f1fu

#define ROWH 70             /* box height */
#define CURVE_STEPS 24      /* segments of one curved leg */
#define HEAD_LEN 11.0       /* arrow head: length and half width */
#define HEAD_HALF 6.5
#define LABEL_MAXW 240      /* edge labels wrap to this width ... */
#define LABEL_LINES 3       /* ... on at most this many lines */
#define INK_SOFT   0x555555u   /* a box's shape line */

enum {
    FLOW_MARGIN = 40,       /* outer margin */
    TITLE_GAP = 30,         /* below the title */
    TITLE_MIN_W = 1000,     /* the title wraps to at least this width */
    BOX_PAD = 36,           /* a box is its widest line plus this */
    BOX_TEXT_MAXW = 420,    /* box lines are shortened to this width */
    BOX_RADIUS = 10,        /* rounded corners ... */
    BOX_BORDER_W = 2,       /* ... and border of a box */
    BOX_LINE1_Y = 14,       /* label (bold) and shape lines, from the box top */
    BOX_LINE2_Y = 40,
    WAYPOINT_W = 24,        /* room a long arrow takes in a row it crosses */
    ITEM_GAP = 56,          /* least gap between neighbours in a row */
    ROW_GAP_MIN = 96,       /* between rows: at least this ... */
    ROW_GAP_LABEL = 60,     /* ... and the tallest label plus this, */
    ROW_GAP_STEP = 40,      /* widened by this while some label finds no spot */
    PLACE_ATTEMPTS = 6,
    ORDER_SWEEPS = 4,       /* barycentre sweeps ordering the rows */
};
#define ARROW_W 2.0         /* arrow line width */
#define ENDS_SPREAD 0.6     /* arrow ends spread over this part of a box's width */

/* Points of a leg from (x0, y0) down to (x1, y1): a cubic Bezier with
   vertical tangents at both ends, stopping short of the tip when an arrow
   head follows. Writes CURVE_STEPS + 1 points. */
static void leg_points(double x0, double y0, double x1, double y1, int head, double (*pt)[2])
{
    const double my = (y1 - y0) / 2.0, ye = y1 - (head ? HEAD_LEN - 2.0 : 0.0);
    for (int s = 0; s <= CURVE_STEPS; s++) {
        const double t = (double)s / CURVE_STEPS, u = 1.0 - t;
        pt[s][0] = u * u * u * x0 + 3 * u * u * t * x0 + 3 * u * t * t * x1 + t * t * t * x1;
        pt[s][1] = u * u * u * y0 + 3 * u * u * t * (y0 + my) + 3 * u * t * t * (y1 - my) + t * t * t * ye;
    }
}

static int rects_meet(const frect *a, const frect *b, double pad)
{
    return a->x - pad < b->x + b->w && b->x < a->x + a->w + pad &&
           a->y - pad < b->y + b->h && b->y < a->y + a->h + pad;
}

/* Whether segment p-q passes within pad of rectangle r (Liang-Barsky clip
   against the grown rectangle). */
static int segment_meets(const double *p, const double *q, const frect *r, double pad)
{
    const double x0 = r->x - pad, x1 = r->x + r->w + pad, y0 = r->y - pad, y1 = r->y + r->h + pad;
    const double dx = q[0] - p[0], dy = q[1] - p[1];
    const double pv[4] = { -dx, dx, -dy, dy }, qv[4] = { p[0] - x0, x1 - p[0], p[1] - y0, y1 - p[1] };
    double t0 = 0.0, t1 = 1.0;
    for (int k = 0; k < 4; k++) {
        if (pv[k] == 0.0) { if (qv[k] < 0.0) return 0; continue; }
        const double t = qv[k] / pv[k];
        if (pv[k] < 0.0) { if (t > t1) return 0; if (t > t0) t0 = t; }
        else { if (t < t0) return 0; if (t < t1) t1 = t; }
    }
    return t0 <= t1;
}

/* Everything an arrow label must keep clear of. */
typedef struct scene {
    const frect *box; int nbox;          /* boxes */
    const double (*pt)[2];               /* arrow polylines, back to back */
    const int *off, *npt; int narrow;    /* arrow i: pt[off[i] .. off[i]+npt[i]) */
    const frect *head;                   /* arrow heads */
    const frect *label; const int *placed;   /* labels so far */
} scene;

static int label_clear(const scene *sc, const frect *r)
{
    for (int b = 0; b < sc->nbox; b++)
        if (rects_meet(r, &sc->box[b], 8.0)) return 0;
    for (int i = 0; i < sc->narrow; i++) {
        if (rects_meet(r, &sc->head[i], 5.0)) return 0;
        if (sc->placed[i] && rects_meet(r, &sc->label[i], 12.0)) return 0;
        for (int k = 1; k < sc->npt[i]; k++)
            if (segment_meets(sc->pt[sc->off[i] + k - 1], sc->pt[sc->off[i] + k], r, 6.0)) return 0;
    }
    return 1;
}

/* Everything the drawing of a flow diagram needs, computed by the layout
   steps; freed by flow_free. */
typedef struct flow {
    graph *g;
    int ne, nlayers, nit;
    int layer[FLOW_MAX_NODES];
    item it[FLOW_MAX_ITEMS];           /* boxes (item v is node v), then waypoints */
    int route[FLOW_MAX_EDGES][2];      /* arrow i: first waypoint item and count */
    char (*boxtext)[2][96];            /* per box: label, shape */
    /* per arrow: ends, label lines, label rectangle, head; polylines */
    double (*ends)[4];
    char (*etext)[LABEL_LINES][TT_FONT_WRAP_LEN];
    frect *lab, *head;
    int *meta;                         /* the five int arrays below, in one block */
    int *nlines, *placed, *off, *npt, *onleft;
    double (*pt)[2];                   /* arrow i: pt[off[i] .. off[i]+npt[i]) */
    double bminx, bmaxx;               /* extent of boxes and waypoints */
    frect box[FLOW_MAX_NODES];         /* boxes as label obstacles */
    int rowgap, all_placed;
    /* canvas */
    int W, H, oy;
    double ox;
    tt_font_title title;
} flow;

static int row_y(const flow *f, int L)
{
    return L * (ROWH + f->rowgap);
}

static void flow_free(flow *f)
{
    free(f->boxtext); free(f->ends); free(f->etext); free(f->lab); free(f->meta); free(f->pt);
    if (f->g) free_graph(f->g);
    free(f->g);
}

/* The recorded graph: at least one box, not too many. */
static tt_status flow_graph(flow *f)
{
    f->g = calloc(1, sizeof *f->g);
    if (!f->g) return tt__err(TT_ENOMEM, "flow: out of memory");
    tt_status st = build_graph(f->g);
    if (st != TT_OK) return st;
    if (f->g->nnodes == 0)
        return tt__err(TT_EARG, "flow: nothing to draw: no labelled tensor since the last "
                       "tt.trace.section (name one with x:label(\"scores\"))");
    if (f->g->overflow)
        return tt__err(TT_EARG, "flow: more than %d labelled tensors since the last tt.trace.section, "
                       "too many for one figure; hint: start a tt.trace.section(\"...\") just before "
                       "the part to draw", FLOW_MAX_NODES);
    f->ne = f->g->nedges;
    return TT_OK;
}

/* 1. layers: longest path from a source */
static void flow_layers(flow *f)
{
    const graph *g = f->g;
    for (int pass = 0; pass < g->nnodes; pass++)
        for (int i = 0; i < f->ne; i++) {
            const fedge *e = &g->edge[i];
            if (f->layer[e->to] < f->layer[e->from] + 1) f->layer[e->to] = f->layer[e->from] + 1;
        }
    for (int v = 0; v < g->nnodes; v++) if (f->layer[v] + 1 > f->nlayers) f->nlayers = f->layer[v] + 1;
}

/* 2. items: boxes and waypoints; each edge's route is a list of items */
static tt_status flow_items(flow *f)
{
    const graph *g = f->g;
    const int ne = f->ne, n1 = ne ? ne : 1;
    f->boxtext = malloc((size_t)g->nnodes * sizeof *f->boxtext);
    f->ends = malloc((size_t)n1 * sizeof *f->ends);
    f->etext = malloc((size_t)n1 * sizeof *f->etext);
    f->lab = malloc((size_t)n1 * 2 * sizeof *f->lab);
    f->meta = malloc((size_t)n1 * 5 * sizeof *f->meta);
    if (!f->boxtext || !f->ends || !f->etext || !f->lab || !f->meta)
        return tt__err(TT_ENOMEM, "flow: out of memory");
    f->head = f->lab + n1;
    f->nlines = f->meta; f->placed = f->meta + ne; f->off = f->meta + 2 * ne;
    f->npt = f->meta + 3 * ne; f->onleft = f->meta + 4 * ne;
    for (int v = 0; v < g->nnodes; v++) {
        char (*bt)[96] = f->boxtext[v];
        snprintf(bt[0], 96, "%s", g->node[v].label);
        shape_text(bt[1], 96, g->node[v].shape);
        char tmp[96];
        const int w0 = tt_font_fit(tmp, sizeof tmp, bt[0], 2, TT_FONT_BOLD, BOX_TEXT_MAXW);
        snprintf(bt[0], 96, "%s", tmp);
        const int w1 = tt_font_fit(tmp, sizeof tmp, bt[1], 2, 0, BOX_TEXT_MAXW);
        snprintf(bt[1], 96, "%s", tmp);
        f->it[f->nit++] = (item){ v, f->layer[v], (double)v, 0.0, (w0 > w1 ? w0 : w1) + BOX_PAD, ROWH, -1 };
    }
    int total_pts = 0;
    for (int i = 0; i < ne; i++) {
        const fedge *e = &g->edge[i];
        f->route[i][0] = f->nit;
        f->route[i][1] = 0;
        int prev = e->from;
        for (int L = f->layer[e->from] + 1; L < f->layer[e->to] && f->nit < FLOW_MAX_ITEMS; L++) {
            f->it[f->nit] = (item){ -1, L, 0.0, 0.0, WAYPOINT_W, ROWH, prev };
            prev = f->nit++;
            f->route[i][1]++;
        }
        f->off[i] = total_pts;
        total_pts += (f->route[i][1] + 1) * (CURVE_STEPS + 1);
    }
    f->pt = malloc((size_t)(total_pts ? total_pts : 1) * sizeof *f->pt);
    if (!f->pt) return tt__err(TT_ENOMEM, "flow: out of memory");
    return TT_OK;
}

/* The item an arrow leaves last: its last waypoint, else its source box. */
static int last_hop(const flow *f, int i)
{
    return f->route[i][1] ? f->route[i][0] + f->route[i][1] - 1 : f->g->edge[i].from;
}

/* 3. order within rows: barycentre of the items above, a few sweeps */
static void flow_order(flow *f)
{
    item *it = f->it;
    for (int sweep = 0; sweep < ORDER_SWEEPS; sweep++)
        for (int L = 1; L < f->nlayers; L++)
            for (int a = 0; a < f->nit; a++) {
                if (it[a].layer != L) continue;
                double sum = 0.0;
                int n = 0;
                if (it[a].node < 0) { sum = it[it[a].pred].order; n = 1; }
                else
                    for (int i = 0; i < f->ne; i++) {
                        if (f->g->edge[i].to != it[a].node) continue;
                        sum += it[last_hop(f, i)].order; n++;
                    }
                if (n) it[a].order = sum / n + a * 1e-6;
            }
}

/* One row of step 4: its items in order, each pulled under its
   predecessors, pushed apart, then shifted back as a whole. */
static void flow_place_row(flow *f, int L, int *rowitems)
{
    item *it = f->it;
    int n = 0;
    for (int a = 0; a < f->nit; a++) if (it[a].layer == L) rowitems[n++] = a;
    for (int i = 1; i < n; i++)   /* insertion sort by order */
        for (int j = i; j > 0 && it[rowitems[j]].order < it[rowitems[j - 1]].order; j--) {
            const int t = rowitems[j]; rowitems[j] = rowitems[j - 1]; rowitems[j - 1] = t;
        }
    double want_sum = 0.0;
    for (int i = 0; i < n; i++) {
        item *a = &it[rowitems[i]];
        double want = 0.0;
        int m = 0;
        if (L > 0) {
            if (a->node < 0) { want = it[a->pred].x; m = 1; }
            else
                for (int k = 0; k < f->ne; k++) {
                    if (f->g->edge[k].to != a->node) continue;
                    want += it[last_hop(f, k)].x; m++;
                }
        }
        a->x = m ? want / m : 0.0;
        want_sum += a->x;
    }
    double pos = -1e18, placed_sum = 0.0;
    for (int i = 0; i < n; i++) {
        item *a = &it[rowitems[i]];
        const double minx = i ? pos + it[rowitems[i - 1]].w / 2.0 + ITEM_GAP + a->w / 2.0 : -1e18;
        if (L == 0 || a->x < minx) a->x = i ? minx : a->x;
        pos = a->x;
        placed_sum += a->x;
    }
    const double shift = n ? (want_sum - placed_sum) / n : 0.0;
    for (int i = 0; i < n; i++) it[rowitems[i]].x += shift;
}

/* 4. x: rows packed left to right in order */
static tt_status flow_xpos(flow *f)
{
    int *rowitems = malloc((size_t)f->nit * sizeof *rowitems);
    if (!rowitems) return tt__err(TT_ENOMEM, "flow: out of memory");
    for (int L = 0; L < f->nlayers; L++) flow_place_row(f, L, rowitems);
    free(rowitems);
    f->bminx = 1e18;
    f->bmaxx = -1e18;
    for (int a = 0; a < f->nit; a++) {
        const item *t = &f->it[a];
        if (t->x - t->w / 2.0 < f->bminx) f->bminx = t->x - t->w / 2.0;
        if (t->x + t->w / 2.0 > f->bmaxx) f->bmaxx = t->x + t->w / 2.0;
    }
    return TT_OK;
}

/* 5. label text: the ops of each arrow, wrapped at the commas; returns
   the tallest label's height */
static int flow_label_text(flow *f)
{
    int label_h_max = 0;
    for (int i = 0; i < f->ne; i++) {
        char full[160];
        int *nl = &f->nlines[i];
        edge_text(full, sizeof full, f->g, &f->g->edge[i]);
        /* break only between ops: "masked_fill -inf" stays whole */
        for (char *c = full; *c; c++) if (*c == ' ' && c > full && c[-1] != ',') *c = '\x01';
        *nl = full[0] ? tt_font_wrap(full, 2, 0, LABEL_MAXW, f->etext[i], LABEL_LINES) : 0;
        for (char *c = full; *c; c++) if (*c == '\x01') *c = ' ';
        for (int k = 0; k < *nl; k++)
            for (char *c = f->etext[i][k]; *c; c++) if (*c == '\x01') *c = ' ';
        if (full[0] && !*nl) {   /* one unbreakable name: shortened */
            *nl = 1;
            tt_font_fit(f->etext[i][0], sizeof f->etext[i][0], full, 2, 0, LABEL_MAXW + 100);
        }
        int w = 0;
        for (int k = 0; k < *nl; k++) w = imax_(w, tt_font_width(f->etext[i][k], 2, 0));
        f->lab[i] = (frect){ 0.0, 0.0, w, *nl ? (*nl - 1) * TT_FONT_LINE * 2 + TT_FONT_CAP * 2 : 0 };
        label_h_max = imax_(label_h_max, (int)f->lab[i].h);
    }
    return label_h_max;
}

/* 6. arrow ends: leave the source's bottom and enter the target's top at
   points spread over the box, ordered by the other end; then the
   polyline: a curve into each waypoint, its straight run, the last curve
   into the target */
static void flow_route(flow *f, int i)
{
    const graph *g = f->g;
    const item *it = f->it;
    const fedge *e = &g->edge[i];
    const int nway = f->route[i][1], first_way = f->route[i][0];
    const int en = nway ? first_way : e->to, last = last_hop(f, i);
    int nout = 0, kout = 0, nin = 0, kin = 0;
    for (int j = 0; j < f->ne; j++) {
        const fedge *o = &g->edge[j];
        const int fn = f->route[j][1] ? f->route[j][0] : o->to;          /* first hop */
        const int fl = last_hop(f, j);
        if (o->from == e->from) { nout++; kout += it[fn].x < it[en].x || (it[fn].x == it[en].x && j < i); }
        if (o->to == e->to) { nin++; kin += it[fl].x < it[last].x || (it[fl].x == it[last].x && j < i); }
    }
    const item *s0 = &it[e->from], *t = &it[e->to];
    double *end = f->ends[i];
    end[0] = s0->x + (s0->w * ENDS_SPREAD) * ((kout + 1.0) / (nout + 1.0) - 0.5);
    end[1] = row_y(f, s0->layer) + ROWH;
    end[2] = t->x + (t->w * ENDS_SPREAD) * ((kin + 1.0) / (nin + 1.0) - 0.5);
    end[3] = row_y(f, t->layer);
    f->head[i] = (frect){ end[2] - HEAD_HALF, end[3] - HEAD_LEN, 2 * HEAD_HALF, HEAD_LEN };
    double x0 = end[0], y0 = end[1];
    double (*pt)[2] = f->pt + f->off[i];
    f->npt[i] = 0;
    for (int w = 0; w < nway; w++) {
        const item *wp = &it[first_way + w];
        const double wy = row_y(f, wp->layer);
        leg_points(x0, y0, wp->x, wy, 0, pt + f->npt[i]);
        f->npt[i] += CURVE_STEPS + 1;
        x0 = wp->x;
        y0 = wy + ROWH;
    }
    leg_points(x0, y0, end[2], end[3], 1, pt + f->npt[i]);
    f->npt[i] += CURVE_STEPS + 1;
}

/* 7. the label of arrow i: candidates beside the last leg (middle first,
   on the outer side of the arrows entering that row), then beside the
   other legs; the cheapest one that is clear wins */
static void flow_place_label(flow *f, const scene *sc, int i)
{
    const double (*pt)[2] = (const double (*)[2])f->pt;
    const int *off = f->off, *npt = f->npt;
    double avg = 0.0, mine = 0.0;
    int n = 0;
    for (int j = 0; j < f->ne; j++) {
        if (f->layer[f->g->edge[j].to] != f->layer[f->g->edge[i].to]) continue;
        const double m = (pt[off[j] + npt[j] - CURVE_STEPS - 1][0] + f->ends[j][2]) / 2.0;
        avg += m; n++;
        if (j == i) mine = m;
    }
    const int pref_left = mine < avg / n - 1.0;
    static const double at[7] = { 0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8 };
    static const double dist[4] = { 10.0, 22.0, 40.0, 64.0 };
    const int nlegs = npt[i] / (CURVE_STEPS + 1);
    double best = 1e18;
    frect bestr = f->lab[i];
    int bestleft = 0;
    for (int leg = nlegs - 1; leg >= 0; leg--)
        for (int a = 0; a < 7; a++)
            for (int side = 0; side < 2; side++)
                for (int d = 0; d < 4; d++) {
                    const double *p = pt[off[i] + leg * (CURVE_STEPS + 1) + (int)lround(at[a] * CURVE_STEPS)];
                    const int left = side ? !pref_left : pref_left;
                    frect r = f->lab[i];
                    r.x = left ? p[0] - dist[d] - r.w : p[0] + dist[d];
                    r.y = p[1] - r.h / 2.0;
                    const double over = fmax(0.0, f->bminx - r.x) + fmax(0.0, r.x + r.w - f->bmaxx);
                    const double cost = fabs(at[a] - 0.5) * 100.0 + side * 30.0 + dist[d] * 0.6 +
                                        over * 1.5 + (nlegs - 1 - leg) * 60.0;
                    if (cost >= best || !label_clear(sc, &r)) continue;
                    best = cost;
                    bestr = r;
                    bestleft = left;
                }
    f->lab[i] = bestr;
    f->onleft[i] = bestleft;
    f->placed[i] = best < 1e18;
}

/* Steps 6 and 7 at the current row gap; 1 when every label found a
   clear spot. */
static int flow_route_all(flow *f)
{
    for (int v = 0; v < f->g->nnodes; v++)
        f->box[v] = (frect){ f->it[v].x - f->it[v].w / 2.0, row_y(f, f->it[v].layer), f->it[v].w, ROWH };
    for (int i = 0; i < f->ne; i++) flow_route(f, i);
    const scene sc = { f->box, f->g->nnodes, (const double (*)[2])f->pt, f->off, f->npt, f->ne,
                       f->head, f->lab, f->placed };
    int all = 1;
    for (int i = 0; i < f->ne; i++) f->placed[i] = 0;
    for (int i = 0; i < f->ne; i++) {
        if (!f->nlines[i]) continue;
        flow_place_label(f, &sc, i);
        if (!f->placed[i]) all = 0;
    }
    return all;
}

/* Rows move apart until every label is clear, a few times; then the
   labels still without a spot go beside the middle of their last leg. */
static void flow_place(flow *f, int label_h_max)
{
    f->rowgap = imax_(ROW_GAP_MIN, label_h_max + ROW_GAP_LABEL);
    for (int attempt = 0;; attempt++, f->rowgap += ROW_GAP_STEP) {
        f->all_placed = flow_route_all(f);
        if (f->all_placed) return;
        if (attempt == PLACE_ATTEMPTS - 1) break;
    }
    for (int i = 0; i < f->ne; i++) {
        if (!f->nlines[i] || f->placed[i]) continue;
        const double *p = f->pt[f->off[i] + f->npt[i] - 1 - CURVE_STEPS / 2];
        f->lab[i].x = p[0] + 10.0;
        f->lab[i].y = p[1] - f->lab[i].h / 2.0;
        f->onleft[i] = 0;
        f->placed[i] = 2;
    }
}

/* 8. canvas: everything drawn, plus the margin, and the title */
static void flow_canvas_size(flow *f, const tt_flow_opts *opts)
{
    double minx = f->bminx, maxx = f->bmaxx;
    for (int i = 0; i < f->ne; i++) {
        for (int k = 0; k < f->npt[i]; k++) {
            minx = fmin(minx, f->pt[f->off[i] + k][0] - 2.0);
            maxx = fmax(maxx, f->pt[f->off[i] + k][0] + 2.0);
        }
        minx = fmin(minx, f->head[i].x);
        maxx = fmax(maxx, f->head[i].x + f->head[i].w);
        if (f->nlines[i]) {
            minx = fmin(minx, f->lab[i].x - 4.0);
            maxx = fmax(maxx, f->lab[i].x + f->lab[i].w + 4.0);
        }
    }
    const int M = FLOW_MARGIN;
    const int diagram_w = (int)ceil(maxx - minx);
    tt_font_title_layout(&f->title, opts && opts->title ? opts->title : "Pipeline",
                         imax_(diagram_w, TITLE_MIN_W));
    f->W = imax_(diagram_w, f->title.w) + 2 * M;
    f->ox = floor((f->W - (maxx - minx)) / 2.0 - minx);
    f->oy = M + f->title.h + TITLE_GAP;
    f->H = f->oy + f->nlayers * ROWH + (f->nlayers - 1) * f->rowgap + M;
}

/* ----- drawing steps: arrows, then their labels, then the boxes on top ----- */

static void flow_draw_arrows(flow *f, tt_canvas *out)
{
    for (int i = 0; i < f->ne; i++) {
        double (*pt)[2] = f->pt + f->off[i];
        for (int k = 0; k < f->npt[i]; k++) {   /* to canvas coordinates */
            pt[k][0] += f->ox;
            pt[k][1] += f->oy;
        }
        tt_canvas_polyline(out, (const double (*)[2])pt, f->npt[i], ARROW_W, ARROW);
        const double x1 = f->ends[i][2] + f->ox, y1 = f->ends[i][3] + f->oy;
        const double tri[6] = { x1 - HEAD_HALF, y1 - HEAD_LEN, x1 + HEAD_HALF, y1 - HEAD_LEN, x1, y1 };
        tt_canvas_triangle(out, tri, ARROW);
    }
}

static void flow_draw_labels(const flow *f, tt_canvas *out)
{
    for (int i = 0; i < f->ne; i++) {
        if (!f->nlines[i]) continue;
        const frect *l = &f->lab[i];
        const int lx = (int)lround(l->x + f->ox), ly = (int)lround(l->y) + f->oy;
        for (int k = 0; k < f->nlines[i]; k++) {   /* lines flush towards the arrow */
            const int w = tt_font_width(f->etext[i][k], 2, 0);
            tt_font_draw(out, lx + (f->onleft[i] ? (int)l->w - w : 0), ly + k * TT_FONT_LINE * 2,
                         f->etext[i][k], 2, 0, EDGE_INK);
        }
    }
}

static void flow_draw_boxes(const flow *f, tt_canvas *out)
{
    for (int v = 0; v < f->g->nnodes; v++) {
        const item *a = &f->it[v];
        const char (*bt)[96] = (const char (*)[96])f->boxtext[v];
        const int x = (int)lround(a->x + f->ox - a->w / 2.0), y = row_y(f, a->layer) + f->oy;
        tt_canvas_round_rect(out, x, y, a->w, a->h, BOX_RADIUS, BOX_FILL, BOX_BORDER, BOX_BORDER_W);
        const int w0 = tt_font_width(bt[0], 2, TT_FONT_BOLD);
        const int w1 = tt_font_width(bt[1], 2, 0);
        tt_font_draw(out, x + (a->w - w0) / 2, y + BOX_LINE1_Y, bt[0], 2, TT_FONT_BOLD, INK);
        tt_font_draw(out, x + (a->w - w1) / 2, y + BOX_LINE2_Y, bt[1], 2, 0, INK_SOFT);
    }
}

static void flow_geom(const flow *f, tt_flow_geom *geom)
{
    memset(geom, 0, sizeof *geom);
    geom->width = f->W;
    geom->height = f->H;
    geom->nboxes = f->g->nnodes;
    for (int v = 0; v < f->g->nnodes; v++)
        geom->box[v] = (tt_flow_rect){ (int)lround(f->it[v].x + f->ox - f->it[v].w / 2.0),
                                       row_y(f, f->it[v].layer) + f->oy, f->it[v].w, ROWH };
    geom->narrows = f->ne;
    for (int i = 0; i < f->ne; i++) {
        const frect *hd = &f->head[i], *l = &f->lab[i];
        geom->head[i] = (tt_flow_rect){ (int)floor(hd->x + f->ox), (int)floor(hd->y) + f->oy,
                                        (int)ceil(hd->w) + 1, (int)ceil(hd->h) + 1 };
        if (f->nlines[i])
            geom->label[i] = (tt_flow_rect){ (int)lround(l->x + f->ox), (int)lround(l->y) + f->oy,
                                             (int)l->w, (int)l->h };
        geom->label_clear[i] = !f->nlines[i] || f->placed[i] == 1;
    }
    geom->all_clear = f->all_placed;
}

tt_status tt_flow_render(tt_canvas *out, tt_flow_geom *geom, const tt_flow_opts *opts)
{
    out->w = out->h = 0;
    out->px = NULL;
    out->vec = NULL;
    flow *f = calloc(1, sizeof *f);
    if (!f) return tt__err(TT_ENOMEM, "flow: out of memory");

    /* layout */
    tt_status st = flow_graph(f);
    if (st == TT_OK) { flow_layers(f); st = flow_items(f); }
    if (st == TT_OK) { flow_order(f); st = flow_xpos(f); }
    if (st == TT_OK) {
        flow_place(f, flow_label_text(f));
        flow_canvas_size(f, opts);
        st = tt_canvas_init(out, f->W, f->H);
    }
    if (st != TT_OK) goto done;

    /* drawing */
    tt_font_title_draw(out, &f->title, f->W / 2, FLOW_MARGIN, INK);
    flow_draw_arrows(f, out);
    flow_draw_labels(f, out);
    flow_draw_boxes(f, out);
    if (geom) flow_geom(f, geom);
done:
    flow_free(f);
    free(f);
    return st;
}

size_t tt_flow_describe(char *buf, size_t n)
{
    size_t len = 0;
    if (n) buf[0] = '\0';
    graph *g = calloc(1, sizeof *g);
    if (!g || build_graph(g) != TT_OK) { if (g) free_graph(g); free(g); return 0; }
    for (int v = 0; v < g->nnodes; v++) {
        char shp[96];
        shape_text(shp, sizeof shp, g->node[v].shape);
        len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s %s\n", g->node[v].label, shp);
    }
    for (int i = 0; i < g->nedges; i++) {
        char ops[160];
        edge_text(ops, sizeof ops, g, &g->edge[i]);
        len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s -> %s: %s\n",
                                g->node[g->edge[i].from].label, g->node[g->edge[i].to].label, ops);
    }
    free_graph(g);
    free(g);
    return len;
}

static tt_status flow_render_call(tt_canvas *out, const void *opts)
{
    return tt_flow_render(out, NULL, opts);
}

tt_status tt_flow_write(const char *path, const tt_flow_opts *opts)
{
    tt_png_meta meta = { NULL, NULL, NULL };
    if (opts) meta = opts->meta;
    if (!meta.title) meta.title = opts && opts->title ? opts->title : "Pipeline";
    return tt__figure_write("flow", path, flow_render_call, opts, &meta);
}
