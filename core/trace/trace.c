/*
** trace.c — the op log: scopes around every public op, one event per
** outermost op or per group (a backward node, an optimizer step), delivered
** to the subscribers in the order they came (the per-kind statistics first;
** the interpreter's trace and the flow figure's lineage subscribe). The
** text and JSON forms of an event are in format.c.
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
static tt__group *group;                 /* the innermost open group, or NULL */

int tt_op_running(void) { return depth > 0; }

int64_t tt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* An op's clock. clock_gettime costs 70-100 ns on this VM's kvm-clock
   (two a tiny op, a fifth of its time with the trace off), the CPU's
   time-stamp counter 20-35 ns: where there is one, ns are the counter's
   ticks at the rate measured against the clock since the first op, from
   an anchor the clock re-reads every 2^24 ticks (a few ms), so no error
   builds up; a counter that goes back (another core) re-anchors too. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <x86intrin.h>
#define ANCHOR_TICKS ((uint64_t)1 << 24)

static int64_t op_clock(void)
{
    static int64_t first_ns, anchor_ns;
    static uint64_t first_tsc, anchor_tsc;
    static double ns_per_tick;            /* 0 until 10 ms have passed */
    uint64_t tsc = __rdtsc();
    if (ns_per_tick > 0 && tsc - anchor_tsc < ANCHOR_TICKS)
        return anchor_ns + (int64_t)((double)(tsc - anchor_tsc) * ns_per_tick);
    int64_t ns = tt_now_ns();
    if (first_tsc == 0 || tsc <= first_tsc) {
        first_ns = ns;
        first_tsc = tsc;
        ns_per_tick = 0;
    } else if (ns - first_ns >= 10000000) {
        ns_per_tick = (double)(ns - first_ns) / (double)(tsc - first_tsc);
    }
    anchor_ns = ns;
    anchor_tsc = tsc;
    return ns;
}
#else
static int64_t op_clock(void) { return tt_now_ns(); }
#endif

tt__opscope tt__op_enter(void)
{
    tt__opscope sc;
    sc.outer = depth++ == 0;
    sc.t0 = sc.outer ? op_clock() : 0;
    return sc;
}

static void emit(tt_event *ev)
{
    if (ev->nargs > 0 && tt__tracing()) tt_event_args_text(ev, ev->args, sizeof ev->args);
    for (int i = 0; i < nsubs; i++) subs[i].fn(ev, subs[i].ud);
}

tt_status tt__op_leave(tt__opscope sc, tt_status st, tt_event *ev)
{
    depth--;
    if (st != TT_OK) return st;
    if (ev->view) ev->bytes = 0;         /* a view moves no data */
    if (group && depth == group->level) {
        group->flops += ev->flops;
        group->bytes += ev->bytes;
    }
    if (!sc.outer) return st;
    int64_t ns = op_clock() - sc.t0;
    ev->ns = ns > 0 ? ns : 0;            /* a re-anchor inside a tiny op may land a few ns back */
    emit(ev);
    return st;
}

/* ===== Groups ===== */

void tt__group_enter(tt__group *g)
{
    g->outer = group;
    g->level = ++depth;
    g->flops = g->bytes = 0;
    g->t0 = tt_now_ns();
    group = g;
}

tt_status tt__group_leave(tt__group *g, tt_status st, tt_event *ev)
{
    depth--;
    group = g->outer;
    if (st != TT_OK) return st;
    ev->flops += g->flops;
    ev->bytes += g->bytes;
    ev->ns = tt_now_ns() - g->t0;
    if (group) {                         /* folded into the enclosing group's row */
        group->flops += ev->flops;
        group->bytes += ev->bytes;
    } else {
        emit(ev);
    }
    return st;
}

void tt__group_add_flops(double flops)
{
    if (group) group->flops += flops;
}

/* ===== Stats ===== */

static tt_op_stats stats[TT_PHASE_COUNT][TT_OP_COUNT];

static void count_stats(const tt_event *ev, void *ud)
{
    (void)ud;
    tt_op_stats *s = &stats[ev->phase][ev->op];
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

const tt_op_stats *tt_trace_stats(tt_phase phase, tt_op op)
{
    int ok = op >= 0 && op < TT_OP_COUNT && phase >= 0 && phase < TT_PHASE_COUNT;
    return ok ? &stats[phase][op] : NULL;
}

const char *tt_phase_name(tt_phase phase)
{
    static const char *const names[] = {
        [TT_PHASE_FORWARD] = "forward", [TT_PHASE_BACKWARD] = "backward", [TT_PHASE_STEP] = "step",
    };
    _Static_assert(sizeof names / sizeof names[0] == TT_PHASE_COUNT, "one name per phase");
    return phase >= 0 && phase < TT_PHASE_COUNT ? names[phase] : "?";
}

void tt_trace_stats_reset(void) { memset(stats, 0, sizeof stats); }
