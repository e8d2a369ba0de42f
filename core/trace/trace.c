/*
** trace.c — the op log: scopes around every public op, one event per
** outermost op, per-kind statistics. The text and JSON forms of an event
** are in format.c.
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

/* ===== Scopes and dispatch ===== */

tt_trace_fn tt__trace_sink;
static void *sink_ud;
static int depth;
static tt_op_stats stats[TT_OP_COUNT];

void tt_trace_set_sink(tt_trace_fn fn, void *ud)
{
    tt__trace_sink = fn;
    sink_ud = ud;
}

int tt_trace_active(void) { return tt__trace_sink != NULL; }

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
    tt_flow_record(ev);
    if (tt__trace_sink) tt__trace_sink(ev, sink_ud);
    return st;
}

const tt_op_stats *tt_trace_stats(tt_op op)
{
    return op >= 0 && op < TT_OP_COUNT ? &stats[op] : NULL;
}

void tt_trace_stats_reset(void) { memset(stats, 0, sizeof stats); }
