/*
** trace.c — the op log: scopes around every public op, one event per
** outermost op, delivered to the subscribers in the order they came (the
** per-kind statistics first; the interpreter's trace and the flow figure's
** lineage subscribe). The text and JSON forms of an event are in format.c.
*/
#include <string.h>
#include <time.h>

#include "tt_internal.h"

static const char *const TT_OP_NAME[] = {
    "none",
    "tensor", "empty", "zeros", "ones", "full", "arange", "eye", "rand", "randn",
    "view", "reshape", "transpose", "mT", "permute", "narrow",
    "select", "expand", "unsqueeze", "squeeze", "contiguous",
    "clone", "named", "chunk", "split",
    "add", "sub", "mul", "div", "pow", "maximum", "minimum",
    "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor",
    "neg", "exp", "log", "sqrt", "abs", "not", "float", "bool",
    "sum", "mean", "max", "min", "argmax", "argmin", "std", "var",
    "softmax", "masked_fill", "tril", "triu", "causal_mask",
    "repeat_interleave", "cat", "stack", "matmul", "sdpa",
    "rearrange", "einsum",
};
_Static_assert(sizeof TT_OP_NAME / sizeof TT_OP_NAME[0] == TT_OP_COUNT, "TT_OP_NAME out of sync with tt_op");

const char *tt_op_name(tt_op op)
{
    return op >= 0 && op < TT_OP_COUNT ? TT_OP_NAME[op] : "?";
}

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

void tt__event_init(tt_event *ev, tt_op op, const tt_tensor *out,
                    const tt_tensor *a, const tt_tensor *b, const tt_tensor *c)
{
    /* field by field: the two text buffers are most of the struct, and
       only their first byte needs clearing */
    ev->op = op;
    ev->ninputs = 0;
    for (int i = 0; i < TT_TRACE_MAX_INPUTS; i++) ev->inputs[i] = NULL;
    ev->output = out;
    ev->view = ev->has_scalar = ev->scalar_first = 0;
    ev->scalar = 0;
    ev->args[0] = ev->note[0] = 0;
    ev->flops = ev->bytes = 0;
    ev->ns = 0;
    const tt_tensor *in[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (in[i]) ev->inputs[ev->ninputs++] = in[i];
    ev->ninputs_total = ev->ninputs;
    if (out && out->storage) {
        double b_out = (double)tt_numel(out) * (double)tt_dtype_size(out->dtype);
        ev->bytes = b_out;
        for (int i = 0; i < ev->ninputs; i++)
            ev->bytes += (double)tt_numel(ev->inputs[i]) * (double)tt_dtype_size(ev->inputs[i]->dtype);
    }
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
