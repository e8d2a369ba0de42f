/*
** flow.c — the pipeline lineage behind tt.flow (core layer). Every traced
** event is kept in a bounded ring (the last FLOW_MAX_EVENTS since the last
** tt_flow_reset); labels arrive later by tensor id. tt_flow_write draws one
** box per labelled tensor and arrows for the ops between them, walking back
** through unlabelled intermediates to the nearest labelled ancestors.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"
#include "font.h"
#include "tt_internal.h"

#define FLOW_MAX_EVENTS 4096   /* ring of recent events (~2.7 MB) */
#define FLOW_MAX_LABELS 1024   /* labels kept across sections, oldest dropped */
#define FLOW_MAX_NODES 40      /* boxes in one diagram */
#define FLOW_MAX_EDGES 160
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

static fevent ring[FLOW_MAX_EVENTS];
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
    if (!ev || !ev->output) return;
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
    if (g->nnodes == FLOW_MAX_NODES || node_of(g, id) >= 0) return;
    const char *lab = label_of(id);
    if (!lab) return;
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

static void shape_text(char *buf, size_t n, const fshape *s)
{
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < s->ndim && len < n; i++) {
        const char *sep = i ? "," : "";
        if (s->names[i])
            len += (size_t)snprintf(buf + len, n - len, "%s%s=%lld", sep, s->names[i], (long long)s->shape[i]);
        else
            len += (size_t)snprintf(buf + len, n - len, "%s%lld", sep, (long long)s->shape[i]);
    }
    if (len < n) snprintf(buf + len, n - len, "]");
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
   they never run through a box. */

typedef struct item {
    int node;               /* node index, or -1 for a waypoint */
    int layer;
    double order, x;        /* barycentre order, centre x */
    int w, h;
    int pred;               /* waypoint: the item above it */
} item;

#define BOX_FILL   0xeaf1fbu
#define BOX_BORDER 0x4c72b0u
#define ARROW      0x6b7b8cu
#define EDGE_INK   0x3d4f61u
#define INK        0x1f1f1fu

static void arrow_curve(tt_canvas *c, double x0, double y0, double x1, double y1, int head)
{
    /* cubic Bezier with vertical tangents at both ends */
    const double my = (y1 - y0) / 2.0;
    double px = x0, py = y0;
    const int steps = 40;
    for (int s = 1; s <= steps; s++) {
        const double t = (double)s / steps, u = 1.0 - t;
        const double bx = u * u * u * x0 + 3 * u * u * t * x0 + 3 * u * t * t * x1 + t * t * t * x1;
        const double by = u * u * u * y0 + 3 * u * u * t * (y0 + my) + 3 * u * t * t * (y1 - my) + t * t * t * (y1 - (head ? 9.0 : 0.0));
        tt_canvas_line(c, px, py, bx, by, 2.0, ARROW);
        px = bx; py = by;
    }
    if (head) {
        const double tri[6] = { x1 - 6.5, y1 - 11.0, x1 + 6.5, y1 - 11.0, x1, y1 };
        tt_canvas_triangle(c, tri, ARROW);
    }
}

/* Index of an earlier label (0..i-1) that the rectangle would touch, or -1. */
static int collide(int (*lab)[4], char (*etext)[160], int i, int lx, int ly,
                   int lw, int lh)
{
    for (int k = 0; k < i; k++)
        if (etext[k][0] && lx < lab[k][0] + lab[k][2] + 12 && lab[k][0] < lx + lw + 12 &&
            ly < lab[k][1] + lab[k][3] + 8 && lab[k][1] < ly + lh + 8)
            return k;
    return -1;
}

tt_status tt_flow_render(tt_canvas *out, const tt_flow_opts *opts)
{
    out->w = out->h = 0;
    out->px = NULL;
    graph *g = calloc(1, sizeof *g);
    if (!g) return tt__err(TT_ENOMEM, "flow: out of memory");
    tt_status st = build_graph(g);
    if (st != TT_OK) { free_graph(g); free(g); return st; }
    if (g->nnodes == 0) {
        free_graph(g); free(g);
        return tt__err(TT_EARG, "flow: nothing to draw: no labelled tensor since the last "
                       "tt.trace.section (name one with x:label(\"scores\"))");
    }

    /* 1. layers: longest path from a source */
    int layer[FLOW_MAX_NODES] = { 0 };
    for (int pass = 0; pass < g->nnodes; pass++)
        for (int i = 0; i < g->nedges; i++) {
            const fedge *e = &g->edge[i];
            if (layer[e->to] < layer[e->from] + 1) layer[e->to] = layer[e->from] + 1;
        }
    int nlayers = 0;
    for (int v = 0; v < g->nnodes; v++) if (layer[v] + 1 > nlayers) nlayers = layer[v] + 1;

    /* 2. items: boxes and waypoints; each edge's route is a list of items */
    static item it[FLOW_MAX_ITEMS];
    int nit = 0;
    int route[FLOW_MAX_EDGES][2];   /* first waypoint item and count */
    char (*boxtext)[2][96] = malloc((size_t)g->nnodes * sizeof *boxtext);
    if (!boxtext) { free_graph(g); free(g); return tt__err(TT_ENOMEM, "flow: out of memory"); }
    for (int v = 0; v < g->nnodes; v++) {
        snprintf(boxtext[v][0], 96, "%s", g->node[v].label);
        shape_text(boxtext[v][1], 96, g->node[v].shape);
        char tmp[96];
        const int w0 = tt_font_fit(tmp, sizeof tmp, boxtext[v][0], 2, TT_FONT_BOLD, 420);
        snprintf(boxtext[v][0], 96, "%s", tmp);
        const int w1 = tt_font_fit(tmp, sizeof tmp, boxtext[v][1], 2, 0, 420);
        snprintf(boxtext[v][1], 96, "%s", tmp);
        it[nit] = (item){ v, layer[v], (double)v, 0.0, (w0 > w1 ? w0 : w1) + 36, 70, -1 };
        nit++;
    }
    for (int i = 0; i < g->nedges; i++) {
        const fedge *e = &g->edge[i];
        route[i][0] = nit;
        route[i][1] = 0;
        int prev = e->from;
        for (int L = layer[e->from] + 1; L < layer[e->to] && nit < FLOW_MAX_ITEMS; L++) {
            it[nit] = (item){ -1, L, 0.0, 0.0, 24, 70, prev };
            prev = nit++;
            route[i][1]++;
        }
    }

    /* 3. order within rows: barycentre of the items above, a few sweeps */
    for (int sweep = 0; sweep < 4; sweep++)
        for (int L = 1; L < nlayers; L++)
            for (int a = 0; a < nit; a++) {
                if (it[a].layer != L) continue;
                double sum = 0.0;
                int n = 0;
                if (it[a].node < 0) { sum = it[it[a].pred].order; n = 1; }
                else
                    for (int i = 0; i < g->nedges; i++) {
                        if (g->edge[i].to != it[a].node) continue;
                        const int src = route[i][1] ? route[i][0] + route[i][1] - 1 : g->edge[i].from;
                        sum += it[src].order; n++;
                    }
                if (n) it[a].order = sum / n + a * 1e-6;
            }

    /* 4. x: rows packed left to right in order, each pulled under its
       predecessors, then pushed apart */
    const int gap = 56;
    int *rowitems = malloc((size_t)nit * sizeof *rowitems);
    if (!rowitems) { free(boxtext); free_graph(g); free(g); return tt__err(TT_ENOMEM, "flow: out of memory"); }
    for (int L = 0; L < nlayers; L++) {
        int n = 0;
        for (int a = 0; a < nit; a++) if (it[a].layer == L) rowitems[n++] = a;
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
                    for (int k = 0; k < g->nedges; k++) {
                        if (g->edge[k].to != a->node) continue;
                        const int src = route[k][1] ? route[k][0] + route[k][1] - 1 : g->edge[k].from;
                        want += it[src].x; m++;
                    }
            }
            a->x = m ? want / m : 0.0;
            want_sum += a->x;
        }
        double pos = -1e18, placed_sum = 0.0;
        for (int i = 0; i < n; i++) {
            item *a = &it[rowitems[i]];
            const double minx = i ? pos + it[rowitems[i - 1]].w / 2.0 + gap + a->w / 2.0 : -1e18;
            if (L == 0 || a->x < minx) a->x = i ? minx : a->x;
            pos = a->x;
            placed_sum += a->x;
        }
        const double shift = n ? (want_sum - placed_sum) / n : 0.0;
        for (int i = 0; i < n; i++) it[rowitems[i]].x += shift;
    }
    free(rowitems);

    /* 5. arrow ends: leave the source's bottom and enter the target's top
       at points spread over the box, ordered by where the other end is */
    const int rowh = 70, rowgap = 96;
#define ROWY(L) ((L) * (rowh + rowgap))
    double (*ends)[4] = malloc((size_t)(g->nedges ? g->nedges : 1) * sizeof *ends);
    char (*etext)[160] = malloc((size_t)(g->nedges ? g->nedges : 1) * sizeof *etext);
    int (*lab)[4] = malloc((size_t)(g->nedges ? g->nedges : 1) * sizeof *lab);
    if (!ends || !etext || !lab) {
        free(ends); free(etext); free(lab); free(boxtext); free_graph(g); free(g);
        return tt__err(TT_ENOMEM, "flow: out of memory");
    }
    for (int i = 0; i < g->nedges; i++) {
        const fedge *e = &g->edge[i];
        const int nway = route[i][1], first_way = route[i][0];
        const int en = nway ? first_way : e->to, last = nway ? first_way + nway - 1 : e->from;
        int nout = 0, kout = 0, nin = 0, kin = 0;
        for (int j = 0; j < g->nedges; j++) {
            const fedge *f = &g->edge[j];
            const int fn = route[j][1] ? route[j][0] : f->to;          /* first hop */
            const int fl = route[j][1] ? route[j][0] + route[j][1] - 1 : f->from;
            if (f->from == e->from) { nout++; kout += it[fn].x < it[en].x || (it[fn].x == it[en].x && j < i); }
            if (f->to == e->to) { nin++; kin += it[fl].x < it[last].x || (it[fl].x == it[last].x && j < i); }
        }
        const item *s0 = &it[e->from], *t = &it[e->to];
        ends[i][0] = s0->x + (s0->w * 0.6) * ((kout + 1.0) / (nout + 1.0) - 0.5);
        ends[i][1] = ROWY(s0->layer) + rowh;
        ends[i][2] = t->x + (t->w * 0.6) * ((kin + 1.0) / (nin + 1.0) - 0.5);
        ends[i][3] = ROWY(t->layer);
    }

    /* 6. labels beside the last leg of each arrow, on the outer side of the
       arrows entering that row, moved off the labels placed before */
    double minx = 1e18, maxx = -1e18;
    for (int a = 0; a < nit; a++) {
        if (it[a].x - it[a].w / 2.0 < minx) minx = it[a].x - it[a].w / 2.0;
        if (it[a].x + it[a].w / 2.0 > maxx) maxx = it[a].x + it[a].w / 2.0;
    }
    double *mid = malloc((size_t)(g->nedges ? g->nedges : 1) * sizeof *mid);
    if (!mid) {
        free(ends); free(etext); free(lab); free(boxtext); free_graph(g); free(g);
        return tt__err(TT_ENOMEM, "flow: out of memory");
    }
    for (int i = 0; i < g->nedges; i++) {
        const int nway = route[i][1];
        mid[i] = ((nway ? it[route[i][0] + nway - 1].x : ends[i][0]) + ends[i][2]) / 2.0;
    }
    for (int i = 0; i < g->nedges; i++) {
        char full[160];
        edge_text(full, sizeof full, g, &g->edge[i]);
        const int lw = tt_font_fit(etext[i], sizeof etext[i], full, 2, 0, 300), lh = TT_FONT_CAP * 2;
        /* left of the arrow when it is left of the others entering this row */
        double avg = 0.0;
        int n = 0;
        for (int j = 0; j < g->nedges; j++)
            if (layer[g->edge[j].to] == layer[g->edge[i].to]) { avg += mid[j]; n++; }
        const int left = mid[i] < avg / n - 1.0;
        /* try the middle of the leg, then lower, then higher; then slide out */
        const int nway = route[i][1];
        const double x0 = nway ? it[route[i][0] + nway - 1].x : ends[i][0];
        const double y0 = nway ? ROWY(it[route[i][0] + nway - 1].layer) + rowh : ends[i][1];
        const double x1 = ends[i][2], y1 = ends[i][3];
        static const double at[3] = { 0.5, 0.78, 0.24 };
        int lx = 0, ly = 0, hit = -1;
        for (int tries = 0; tries < 15; tries++) {
            if (tries < 3) {
                const double f = at[tries], sm = f * f * (3.0 - 2.0 * f);   /* the curve's x */
                const double cx = x0 + (x1 - x0) * sm;
                lx = left ? (int)cx - 12 - lw : (int)cx + 12;
                ly = (int)(y0 + (y1 - y0) * f) - lh / 2;
            } else if (hit >= 0) {
                lx = left ? lab[hit][0] - 20 - lw : lab[hit][0] + lab[hit][2] + 20;
            }
            hit = collide(lab, etext, i, lx, ly, lw, lh);
            if (hit < 0) break;
            if (tries == 2) {   /* back to the middle before sliding */
                lx = left ? (int)((x0 + x1) / 2.0) - 12 - lw : (int)((x0 + x1) / 2.0) + 12;
                ly = (int)((y0 + y1) / 2.0) - lh / 2;
                if ((hit = collide(lab, etext, i, lx, ly, lw, lh)) < 0) break;
            }
        }
        lab[i][0] = lx; lab[i][1] = ly; lab[i][2] = lw; lab[i][3] = lh;
        if (etext[i][0] && lx - 4 < minx) minx = lx - 4;
        if (etext[i][0] && lx + lw + 4 > maxx) maxx = lx + lw + 4;
    }
    free(mid);

    /* 7. canvas, title, arrows, labels */
    const char *title = opts && opts->title ? opts->title : "Pipeline";
    const int M = 40, title_h = TT_FONT_LINE * 3 + 24;
    int W = (int)(maxx - minx) + 2 * M;
    const int tw = tt_font_width(title, 3, TT_FONT_BOLD);
    if (W < tw + 2 * M) W = tw + 2 * M;
    const double ox = (W - (maxx - minx)) / 2.0 - minx;
    const int oy = M + title_h;
    const int H = oy + nlayers * rowh + (nlayers - 1) * rowgap + M;
    st = tt_canvas_init(out, W, H);
    if (st != TT_OK) {
        free(ends); free(etext); free(lab); free(boxtext); free_graph(g); free(g);
        return st;
    }
    char fitted[256];
    const int ftw = tt_font_fit(fitted, sizeof fitted, title, 3, TT_FONT_BOLD, W - 2 * M);
    tt_font_draw(out, (W - ftw) / 2, M, fitted, 3, TT_FONT_BOLD, INK);
    for (int i = 0; i < g->nedges; i++) {
        double x0 = ends[i][0] + ox, y0 = ends[i][1] + oy;
        for (int w = 0; w < route[i][1]; w++) {
            const item *wp = &it[route[i][0] + w];
            const double wx = wp->x + ox, wy = ROWY(wp->layer) + oy;
            arrow_curve(out, x0, y0, wx, wy, 0);
            tt_canvas_line(out, wx, wy, wx, wy + rowh, 2.0, ARROW);
            x0 = wx; y0 = wy + rowh;
        }
        arrow_curve(out, x0, y0, ends[i][2] + ox, ends[i][3] + oy, 1);
    }
    for (int i = 0; i < g->nedges; i++) {
        if (!etext[i][0]) continue;
        const int lx = lab[i][0] + (int)lround(ox), ly = lab[i][1] + oy;
        tt_canvas_fill_rect(out, lx - 4, ly - 4, lab[i][2] + 8, lab[i][3] + 8, 0xffffffu);
        tt_font_draw(out, lx, ly, etext[i], 2, 0, EDGE_INK);
    }

    /* 8. boxes on top */
    for (int v = 0; v < g->nnodes; v++) {
        const item *a = &it[v];
        const int x = (int)lround(a->x + ox - a->w / 2.0), y = ROWY(a->layer) + oy;
        tt_canvas_round_rect(out, x, y, a->w, a->h, 10, BOX_FILL, BOX_BORDER, 2);
        const int w0 = tt_font_width(boxtext[v][0], 2, TT_FONT_BOLD);
        const int w1 = tt_font_width(boxtext[v][1], 2, 0);
        tt_font_draw(out, x + (a->w - w0) / 2, y + 14, boxtext[v][0], 2, TT_FONT_BOLD, INK);
        tt_font_draw(out, x + (a->w - w1) / 2, y + 40, boxtext[v][1], 2, 0, 0x555555u);
    }
#undef ROWY
    free(ends);
    free(lab);
    free(etext);
    free(boxtext);
    free_graph(g);
    free(g);
    return TT_OK;
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

tt_status tt_flow_write(const char *path, const tt_flow_opts *opts)
{
    tt_canvas c;
    tt_status st = tt_flow_render(&c, opts);
    if (st != TT_OK) return st;
    tt_png_meta meta = { NULL, NULL, NULL };
    if (opts) meta = opts->meta;
    if (!meta.title) meta.title = opts && opts->title ? opts->title : "Pipeline";
    st = tt__figure_save("flow", path, &c, &meta);
    tt_canvas_free(&c);
    return st;
}
