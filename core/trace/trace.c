/*
** trace.c — the op log: scopes around every public op, one event per
** outermost op, delivered to the subscribers in the order they came (the
** per-kind statistics first; the interpreter's trace and the flow figure's
** lineage subscribe). The text and JSON forms of an event are in format.c.
*/
#include <string.h>
#include <time.h>

#include "tt_internal.h"

/* ===== Subscribers ===== */

typedef struct subscriber {
    tt_trace_fn fn;
    void *ud;
    int wants_text;
} subscriber;

static void count_stats(const tt_event *ev, void *ud);

/* The stats table is the first subscriber, always there. */
static subscriber subs[TT_TRACE_MAX_SUBSCRIBERS] = {{count_stats, NULL, 0}};
static int nsubs = 1;
int tt__trace_text_readers;

static int find_subscriber(tt_trace_fn fn, void *ud)
{
    for (int i = 0; i < nsubs; i++)
        if (subs[i].fn == fn && subs[i].ud == ud) return i;
    return -1;
}

tt_status tt_trace_subscribe(tt_trace_fn fn, void *ud, int wants_text)
{
    if (find_subscriber(fn, ud) >= 0) return TT_OK;
    if (nsubs == TT_TRACE_MAX_SUBSCRIBERS)
        return tt__err(TT_EARG, "trace: no room for another subscriber (%d at most)", TT_TRACE_MAX_SUBSCRIBERS);
    subs[nsubs++] = (subscriber){fn, ud, wants_text != 0};
    tt__trace_text_readers += wants_text != 0;
    return TT_OK;
}

void tt_trace_unsubscribe(tt_trace_fn fn, void *ud)
{
    int i = find_subscriber(fn, ud);
    if (i < 0) return;
    tt__trace_text_readers -= subs[i].wants_text;
    for (nsubs--; i < nsubs; i++) subs[i] = subs[i + 1];   /* the others keep their order */
}

/* ===== Scopes ===== */

static int depth;

int tt_op_running(void) { return depth > 0; }

int64_t tt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

tt__opscope tt__op_enter(void)
{
    tt__opscope sc;
    sc.outer = depth++ == 0;
    sc.t0 = sc.outer ? tt_now_ns() : 0;
    return sc;
}

tt_status tt__op_leave(tt__opscope sc, tt_status st, tt_event *ev)
{
    depth--;
    if (!sc.outer || st != TT_OK) return st;
    ev->ns = tt_now_ns() - sc.t0;
    if (ev->view) ev->bytes = 0;         /* a view moves no data */
    for (int i = 0; i < nsubs; i++) subs[i].fn(ev, subs[i].ud);
    return st;
}

/* ===== Stats ===== */

static tt_op_stats stats[TT_OP_COUNT];

static void count_stats(const tt_event *ev, void *ud)
{
    (void)ud;
    tt_op_stats *s = &stats[ev->op];
    s->calls++;
    s->flops += ev->flops;
    s->bytes += ev->bytes;
    s->ns += ev->ns;
    if (ev->output && !ev->view) {
        int64_t nb = tt_numel(ev->output) * (int64_t)tt_dtype_size(ev->output->dtype);
        if (nb > s->max_bytes) {
            s->max_bytes = nb;
            tt_shape_str(ev->output, s->max_shape, sizeof s->max_shape);
        }
    }
}

const tt_op_stats *tt_trace_stats(tt_op op)
{
    return op >= 0 && op < TT_OP_COUNT ? &stats[op] : NULL;
}

void tt_trace_stats_reset(void) { memset(stats, 0, sizeof stats); }
