/*
** test_trace.c — the trace layer: subscribers (order, duplicates, the text
** fields written only while a text reader listens) and the numbers as the
** trace shows them (trace/format.c).
*/
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "tt.h"

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

int main(void)
{
    test_subscribers();
    test_number_forms();
    tt_release_caches();
    return check_report();
}
