/*
** test_trace.c — the trace layer: subscribers (order, duplicates, the text
** fields written only while a text reader listens) and the numbers as the
** trace shows them (trace/format.c), the backward pass's rows and the
** groups that fold many ops into one row.
*/
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "tt_internal.h"

static int ok(tt_status st)
{
    if (st != TT_OK) printf("  unexpected error: %s\n", tt_errmsg());
    return st == TT_OK;
}

/* Subscribers hear each event in the order they came; the args are written
   only while one of them reads the text. */
static char heard[16], name_a = 'A', name_b = 'B';
static void hear(const tt_event *ev, void *ud)
{
    size_t n = strlen(heard);
    if (n + 2 < sizeof heard) { heard[n] = *(char *)ud; heard[n + 1] = ev->args[0] ? '+' : '-'; heard[n + 2] = 0; }
}

static void test_subscribers(void)
{
    tt_tensor a, out;
    ok(tt_rand(&a, 2, (int64_t[]){2, 3}));
    tt_trace_subscribe(hear, &name_a, 0);
    tt_trace_subscribe(hear, &name_b, 1);
    tt_trace_subscribe(hear, &name_a, 0);                /* again: no second delivery */
    ok(tt_softmax(&out, &a, 1));
    tt_tensor_release(&out);
    CHECK("subscribers: in order, args written for a text reader", strcmp(heard, "A+B+") == 0);
    heard[0] = 0;
    tt_trace_unsubscribe(hear, &name_b);
    ok(tt_softmax(&out, &a, 1));
    tt_tensor_release(&out);
    CHECK("subscribers: no text reader left, no args written", strcmp(heard, "A-") == 0);
    tt_trace_unsubscribe(hear, &name_a);
    tt_trace_unsubscribe(hear, &name_a);                 /* not there: nothing */
    heard[0] = 0;
    ok(tt_softmax(&out, &a, 1));
    tt_tensor_release(&out);
    CHECK("subscribers: none left hear nothing", heard[0] == 0);
    tt_tensor_release(&a);
}

/* The numbers as the trace shows them (trace/format.c). */
static void test_number_forms(void)
{
    char b[32];
    tt_fmt_flops(b, sizeof b, 25600);
    CHECK("flops: one digit, k", strcmp(b, "25.6 kFLOP") == 0);
    tt_fmt_flops(b, sizeof b, 2.5e12);
    CHECK("flops: up to T", strcmp(b, "2.5 TFLOP") == 0);
    tt_fmt_flops(b, sizeof b, 640);
    CHECK("flops: a whole number under 1000", strcmp(b, "640 FLOP") == 0);
    tt_fmt_si(b, sizeof b, 16777216, 2, "B");
    CHECK("si: the summary's two digits", strcmp(b, "16.78 MB") == 0);
    tt_fmt_si(b, sizeof b, 2.5e12, 2, "FLOP");
    CHECK("si: stops at G", strcmp(b, "2500.00 GFLOP") == 0);
    tt_fmt_bytes(b, sizeof b, 1572864);
    CHECK("bytes: binary units", strcmp(b, "1.5 MiB") == 0);
    tt_fmt_bytes(b, sizeof b, 640);
    CHECK("bytes: under 1 KiB", strcmp(b, "640 bytes") == 0);
}

/* What a collector heard: phase, op, FLOPs, the text and JSON of each event. */
#define HEARD_MAX 16
static struct { int n; tt_phase phase[HEARD_MAX]; tt_op op[HEARD_MAX]; double flops[HEARD_MAX];
                char text[HEARD_MAX][256], json[HEARD_MAX][2048]; } got;

static void collect(const tt_event *ev, void *ud)
{
    (void)ud;
    if (got.n == HEARD_MAX) return;
    got.phase[got.n] = ev->phase;
    got.op[got.n] = ev->op;
    got.flops[got.n] = ev->flops;
    tt_event_format(ev, got.text[got.n], sizeof got.text[0]);
    tt_event_json(ev, got.n, "t.lua", 7, got.json[got.n], sizeof got.json[0]);
    got.n++;
}

/* loss = sum(A @ B), A [2,3] named (N, D) and labelled "A", B [3,4]
   labelled "B": backward gives one row per node, sum's then matmul's, with
   the gradients' dims and the labels they flow to; matmul's row counts
   its two matmuls (dA = g @ B^T: 2*2*4*3, dB = A^T @ g: 2*3*2*4 FLOPs) and
   none of the inner ops emits a row of its own. */
static void test_backward_rows(void)
{
    tt_tensor a0, a, b, y, loss;
    ok(tt_rand(&a0, 2, (int64_t[]){2, 3}));
    ok(tt_named(&a, &a0, (const char *[]){tt_intern("N"), tt_intern("D")}));
    ok(tt_rand(&b, 2, (int64_t[]){3, 4}));
    a.label = tt_intern("A");
    b.label = tt_intern("B");
    ok(tt_requires_grad_(&a, 1));
    ok(tt_requires_grad_(&b, 1));
    ok(tt_matmul(&y, &a, &b));
    ok(tt_reduce(&loss, TT_OP_SUM, &y, -1, 0));
    tt_trace_stats_reset();
    got.n = 0;
    tt_trace_subscribe(collect, NULL, 1);
    ok(tt_backward(&loss, NULL));
    tt_trace_unsubscribe(collect, NULL);
    CHECK("backward: one row per node, no row of the ops inside", got.n == 2);
    CHECK("backward: the rows are phase backward",
          got.phase[0] == TT_PHASE_BACKWARD && got.phase[1] == TT_PHASE_BACKWARD);
    CHECK("backward: sum's node first, then matmul's", got.op[0] == TT_OP_SUM && got.op[1] == TT_OP_MATMUL);
    CHECK("backward: sum's row", strcmp(got.text[0], "grad sum         grad[] -> grad[N=2,4]") == 0);
    CHECK("backward: matmul's row: gradient arriving, the two it gives, FLOPs of both matmuls",
          strcmp(got.text[1], "grad matmul      grad[N=2,4] -> grad of A[N=2,D=3], grad of B[3,4]   96 FLOP") == 0);
    if (got.n == 2) printf("  %s\n  %s\n", got.text[0], got.text[1]);
    CHECK("backward: JSON has the phase", strstr(got.json[1], "\"op\":\"matmul\",\"phase\":\"backward\"") != NULL);
    CHECK("backward: JSON lists every gradient with the label it flows to",
          strstr(got.json[1], "\"grads\":[{\"shape\":[2,3],") != NULL
          && strstr(got.json[1], "\"label\":\"B\"}]") != NULL);
    const tt_op_stats *bw = tt_trace_stats(TT_PHASE_BACKWARD, TT_OP_MATMUL);
    CHECK("stats: the backward's matmul row counted in its phase", bw->calls == 1 && bw->flops == 96);
    CHECK("stats: the ops inside count in no forward row",
          tt_trace_stats(TT_PHASE_FORWARD, TT_OP_MATMUL)->calls == 0
          && tt_trace_stats(TT_PHASE_FORWARD, TT_OP_MUL)->calls == 0);
    tt_tensor fwd;
    got.n = 0;
    tt_trace_subscribe(collect, NULL, 1);
    ok(tt_matmul(&fwd, &a, &b));
    tt_trace_unsubscribe(collect, NULL);
    CHECK("forward: JSON says so", got.n == 1 && strstr(got.json[0], "\"op\":\"matmul\",\"phase\":\"forward\"") != NULL);
    tt_tensor *all[] = {&a0, &a, &b, &y, &loss, &fwd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tt_tensor_release(all[i]);
}

/* A group (an optimizer step's hook) folds the ops run directly inside
   into one event: a composite op's own inner ops are not counted twice,
   a group inside another adds to it, and nothing inside emits. */
static void test_groups(void)
{
    tt_tensor a, s1, s2, e;
    ok(tt_rand(&a, 2, (int64_t[]){4, 8}));
    got.n = 0;
    tt_trace_subscribe(collect, NULL, 1);                 /* einsum is built of public ops: its own count */
    ok(tt_einsum(&e, "i j, i j -> i", (const tt_tensor *[]){&a, &a}, 2));
    tt_trace_unsubscribe(collect, NULL);
    tt_tensor_release(&e);
    double einsum_flops = got.n == 1 ? got.flops[0] : -1;
    CHECK("group: einsum alone is one event with FLOPs", got.n == 1 && einsum_flops > 0);
    got.n = 0;
    tt_trace_subscribe(collect, NULL, 1);
    tt__group outer, inner;
    tt__group_enter(&outer);
    ok(tt_binary(&s1, TT_OP_MUL, &a, &a));                /* 32 FLOP */
    tt__group_enter(&inner);
    ok(tt_einsum(&e, "i j, i j -> i", (const tt_tensor *[]){&a, &a}, 2));
    tt_event iev;
    tt__event_init(&iev, TT_OP_EINSUM, NULL, &a, NULL, NULL);
    iev.phase = TT_PHASE_STEP;
    ok(tt__group_leave(&inner, TT_OK, &iev));
    ok(tt_softmax(&s2, &a, 1));                           /* 5 per element: 160 FLOP */
    tt_event ev;
    tt__event_init(&ev, TT_OP_ADD, NULL, &a, NULL, NULL);
    ev.phase = TT_PHASE_STEP;
    ok(tt__group_leave(&outer, TT_OK, &ev));
    tt_trace_unsubscribe(collect, NULL);
    CHECK("group: one event for all", got.n == 1 && got.phase[0] == TT_PHASE_STEP && got.op[0] == TT_OP_ADD);
    CHECK("group: FLOPs of the ops inside, the inner group's included", got.n == 1 && got.flops[0] == 32 + einsum_flops + 160);
    if (got.n == 1) printf("  %s (%g FLOP)\n", got.text[0], got.flops[0]);
    CHECK("group: a step's row has no arrow", got.n == 1 && strstr(got.text[0], "->") == NULL);
    CHECK("group: JSON of a step", got.n == 1 && strstr(got.json[0], "\"phase\":\"step\"") != NULL
          && strstr(got.json[0], "\"output\":null") != NULL);
    tt_tensor_release(&e);
    got.n = 0;
    tt_trace_subscribe(collect, NULL, 1);
    ok(tt_binary(&e, TT_OP_ADD, &a, &a));
    tt_trace_unsubscribe(collect, NULL);
    CHECK("group: the depth is back: an op after it emits", got.n == 1 && got.phase[0] == TT_PHASE_FORWARD);
    tt_tensor_release(&s1);
    tt_tensor_release(&s2);
    tt_tensor_release(&e);
    tt_tensor_release(&a);
}

/* sdpa's backward runs its own kernel, not ops: its row counts the
   kernel's work. Per visible (query, key) pair: S = QK^T again (2 Dh),
   dV and dP (2 Dv each), dQ and dK (2 Dh each). Heads 2, Nq 3, Nk 5,
   Dh 4, Dv 6, causal lower-right: 3 + 4 + 5 = 12 pairs a head. */
static void test_sdpa_backward_flops(void)
{
    tt_tensor q, k, v, o, loss;
    ok(tt_rand(&q, 3, (int64_t[]){2, 3, 4}));
    ok(tt_rand(&k, 3, (int64_t[]){2, 5, 4}));
    ok(tt_rand(&v, 3, (int64_t[]){2, 5, 6}));
    ok(tt_requires_grad_(&q, 1));
    ok(tt_requires_grad_(&v, 1));
    got.n = 0;
    tt_trace_subscribe(collect, NULL, 1);
    ok(tt_sdpa(&o, NULL, &q, &k, &v, NULL, 1, NAN, NULL));
    ok(tt_reduce(&loss, TT_OP_SUM, &o, -1, 0));
    ok(tt_backward(&loss, NULL));
    tt_trace_unsubscribe(collect, NULL);
    CHECK("sdpa: forward, sum, and the two backward rows", got.n == 4 && got.op[3] == TT_OP_SDPA
          && got.phase[3] == TT_PHASE_BACKWARD);
    CHECK("sdpa: the forward counts 2 (Dh + Dv) a pair", got.n == 4 && got.flops[0] == 2.0 * 2 * 12 * (4 + 6));
    CHECK("sdpa: the backward counts 2 (3 Dh + 2 Dv) a pair", got.n == 4 && got.flops[3] == 2.0 * 2 * 12 * (3 * 4 + 2 * 6));
    CHECK("sdpa: gradients shown only for the inputs that need one",
          got.n == 4 && strstr(got.text[3], "-> grad[2,3,4], grad[2,5,6]") != NULL);
    if (got.n == 4) printf("  %s\n", got.text[3]);
    tt_tensor *all[] = {&q, &k, &v, &o, &loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tt_tensor_release(all[i]);
}

/* ===== An op's arguments as values, and the text derived from them ===== */

static struct { int n; tt_arg argv[TT_EVENT_MAX_ARGS]; char strs[TT_EVENT_MAX_ARGS][256]; char args[64]; } last;

static void keep_args(const tt_event *ev, void *ud)
{
    (void)ud;
    last.n = ev->nargs;
    memcpy(last.argv, ev->argv, sizeof last.argv);
    for (int i = 0; i < ev->nargs; i++)
        if (ev->argv[i].kind == TT_ARG_STR) {   /* borrowed for the callback only */
            snprintf(last.strs[i], sizeof last.strs[i], "%s", ev->argv[i].v.s);
            last.argv[i].v.s = last.strs[i];
        }
    snprintf(last.args, sizeof last.args, "%s", ev->args);
}

static const tt_arg *arg_of(const char *key)
{
    for (int i = 0; i < last.n; i++)
        if (strcmp(last.argv[i].key, key) == 0) return &last.argv[i];
    return NULL;
}

static int int_arg(const char *key, tt_argkind kind, int64_t v)
{
    const tt_arg *a = arg_of(key);
    return a && a->kind == kind && a->v.i == v;
}

static void test_argument_values(void)
{
    tt_tensor x, q, r, w;
    ok(tt_randn(&x, 3, (int64_t[]){2, 3, 4}));
    ok(tt_randn(&q, 4, (int64_t[]){1, 2, 5, 4}));
    tt_trace_subscribe(keep_args, NULL, 1);
    ok(tt_reduce(&r, TT_OP_SUM, &x, 2, 1));
    tt_tensor_release(&r);
    CHECK("argv: sum's dim as written (1-based) and keepdim",
          last.n == 2 && int_arg("dim", TT_ARG_INT, 3) && int_arg("keepdim", TT_ARG_BOOL, 1));
    CHECK("argv: sum's text from them", strcmp(last.args, "dim=3, keepdim") == 0);
    ok(tt_permute(&r, &x, (const int[]){2, 0, 1}));
    tt_tensor_release(&r);
    const tt_arg *perm = arg_of("perm");
    CHECK("argv: permute's dims, 1-based", perm && perm->kind == TT_ARG_DIMS && perm->n == 3 && perm->v.dims[0] == 3
          && perm->v.dims[1] == 1 && perm->v.dims[2] == 2 && strcmp(last.args, "3, 1, 2") == 0);
    tt_sdpa_opts o = { NULL, NULL, 0, 1, 0.25, 2, 1, 0.0 };
    ok(tt_sdpa_ex(&r, &w, &q, &q, &q, &o, NULL));
    tt_tensor_release(&r);
    tt_tensor_release(&w);
    const tt_arg *scale = arg_of("scale");
    CHECK("argv: sdpa's whole option set (a window is causal)", int_arg("causal", TT_ARG_BOOL, 1)
          && scale && scale->kind == TT_ARG_NUM && scale->v.f == 0.25 && int_arg("window", TT_ARG_INT, 2)
          && int_arg("sinks", TT_ARG_INT, 1) && int_arg("alibi", TT_ARG_BOOL, 1) && int_arg("weights", TT_ARG_BOOL, 1)
          && arg_of("mask") == NULL && arg_of("dropout") == NULL);
    CHECK("argv: sdpa's text", strcmp(last.args, "causal, scale=0.25, window=2, sinks=1, alibi, weights") == 0);
    /* a pattern longer than the text: the value keeps it whole */
    const char *spec = "batch channel height width, batch channel height other -> batch channel width other";
    ok(tt_einsum(&r, spec, (const tt_tensor *[]){&q, &q}, 2));
    tt_tensor_release(&r);
    const tt_arg *pat = arg_of("pattern");
    CHECK("argv: einsum's pattern whole", pat && pat->kind == TT_ARG_STR && strcmp(pat->v.s, spec) == 0);
    CHECK("argv: the text cut at 63 bytes, with ...", strlen(last.args) == 63 && strcmp(last.args + 60, "...") == 0
          && strncmp(last.args, "\"batch channel", 14) == 0);
    tt_trace_unsubscribe(keep_args, NULL);
    /* the text of values: a glued one, a bool's two words, a hidden one */
    tt_event ev;
    tt__event_init(&ev, TT_OP_UNBIND, NULL, NULL, NULL, NULL);
    tt__arg_int(&ev, "piece", "%lld", 2);
    tt__arg_int(&ev, "pieces", " of %lld", 3);
    tt__arg_bool(&ev, "interleaved", "interleaved|half-split", 0);
    tt__arg_num(&ev, "base", "=%S", 500);
    tt__arg_int(&ev, "kept", NULL, 7);
    char buf[64];
    CHECK("args text: joined, the bool's false word, a scalar as written, hidden left out",
          strcmp(tt_event_args_text(&ev, buf, sizeof buf), "2 of 3, half-split, base=500.0") == 0);
    tt_tensor_release(&x);
    tt_tensor_release(&q);
}

int main(void)
{
    test_subscribers();
    test_number_forms();
    test_backward_rows();
    test_groups();
    test_sdpa_backward_flops();
    test_argument_values();
    tt_release_caches();
    return check_report();
}
