/*
** test_pattern.c — tt_rearrange and tt_einsum: rearrange against compositions
** of view ops, einsum against a float64 loop over every index; view-ness,
** names, trace events, and every error message; both backwards against
** float64 references.
*/
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tt.h"
#include "check.h"

/* SHAPE(2, 5, 12) expands to: 3, (int64_t[]){2, 5, 12} */
#define SHAPE(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

/* ===== Helpers ===== */

/* Contiguous float32 tensor whose elements are all different: k + 0.25. */
static tt_tensor seq(int ndim, const int64_t *shape)
{
    tt_tensor t;
    if (tt_empty(&t, TT_FLOAT32, ndim, shape) != TT_OK) {
        printf("tt_empty failed: %s\n", tt_errmsg());
        exit(2);
    }
    float *p = tt_data_f32(&t);
    for (int64_t k = 0; k < tt_numel(&t); k++)
        p[k] = (float)k + 0.25f;
    return t;
}

static tt_tensor randn(int ndim, const int64_t *shape)
{
    tt_tensor t;
    if (tt_randn(&t, ndim, shape) != TT_OK) {
        printf("tt_randn failed: %s\n", tt_errmsg());
        exit(2);
    }
    return t;
}

/* Same shape and the same values, element by element (in logical order). */
static int same_values(const tt_tensor *x, const tt_tensor *y)
{
    if (!x->storage || !y->storage || x->ndim != y->ndim)
        return 0;
    for (int i = 0; i < x->ndim; i++)
        if (x->shape[i] != y->shape[i])
            return 0;
    for (int64_t k = 0; k < tt_numel(x); k++)
        if (tt_get(x, k) != tt_get(y, k))
            return 0;
    return 1;
}

static int shape_is(const tt_tensor *t, int ndim, const int64_t *shape)
{
    if (!t->storage || t->ndim != ndim)
        return 0;
    for (int i = 0; i < ndim; i++)
        if (t->shape[i] != shape[i])
            return 0;
    return 1;
}

/* names given as "b h s d", with "-" for an unnamed dim */
static int names_are(const tt_tensor *t, const char *want)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", want);
    int d = 0;
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " "), d++) {
        if (d >= t->ndim)
            return 0;
        const char *nm = t->names[d];
        if (strcmp(tok, "-") == 0 ? nm != NULL : (!nm || strcmp(nm, tok) != 0)) {
            printf("  dim %d named '%s', want '%s'\n", d, nm ? nm : "(null)", tok);
            return 0;
        }
    }
    return d == t->ndim;
}

/* tt_rearrange with sizes written "h=3 d=4" */
static tt_status rr(tt_tensor *out, const tt_tensor *a, const char *pattern, const char *sizes)
{
    char buf[256], names[16][32];
    const char *np[16];
    int64_t vals[16];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", sizes ? sizes : "");
    for (char *tok = strtok(buf, " "); tok && n < 16; tok = strtok(NULL, " "), n++) {
        char *eq = strchr(tok, '=');
        *eq = '\0';
        snprintf(names[n], sizeof names[n], "%s", tok);
        np[n] = names[n];
        vals[n] = strtoll(eq + 1, NULL, 10);
    }
    return tt_rearrange(out, a, pattern, n, np, vals);
}

/* The failure is st_want and the message holds every given fragment. */
static void expect_err(const char *descr, tt_status st, tt_status st_want, const tt_tensor *out, ...)
{
    const char *msg = tt_errmsg();
    int ok = st == st_want && out->storage == NULL;
    va_list ap;
    va_start(ap, out);
    for (const char *frag; (frag = va_arg(ap, const char *)) != NULL;)
        if (!strstr(msg, frag)) {
            printf("  missing \"%s\"\n", frag);
            ok = 0;
        }
    va_end(ap);
    if (!ok)
        printf("  status %d (want %d), message: %s\n", (int)st, (int)st_want, msg);
    CHECK(descr, ok);
}

/* ===== Trace sink ===== */

static int nevents;
static tt_event last;
static char last_args[64];

static void sink(const tt_event *ev, void *ud)
{
    (void)ud;
    nevents++;
    last = *ev;
    memcpy(last_args, ev->args, sizeof last_args);
}

/* ===== rearrange ===== */

static void test_rearrange_split_merge(void)
{
    tt_tensor x = seq(SHAPE(2, 5, 12)), y, r1, r2, back;

    /* split heads: b s (h d) -> b h s d == view [2,5,3,4] + permute(0,2,1,3) */
    tt_status st = rr(&y, &x, "b s (h d) -> b h s d", "h=3");
    CHECK("split heads ok", st == TT_OK);
    tt_view(&r1, &x, SHAPE(2, 5, 3, 4));
    tt_permute(&r2, &r1, (int[]){0, 2, 1, 3});
    CHECK("split heads shape", shape_is(&y, SHAPE(2, 3, 5, 4)));
    CHECK("split heads values", same_values(&y, &r2));
    CHECK("split heads is a view", y.storage == x.storage);
    CHECK("split heads names", names_are(&y, "b h s d"));
    CHECK("split heads fresh id", y.id != x.id && y.id != 0);

    /* the other size given instead */
    tt_tensor y2;
    st = rr(&y2, &x, "b s (h d) -> b h s d", "d=4");
    CHECK("split heads by d", st == TT_OK && same_values(&y2, &r2));
    tt_tensor_release(&y2);
    /* both given, consistent */
    st = rr(&y2, &x, "b s (h d) -> b h s d", "h=3 d=4");
    CHECK("split heads by h and d", st == TT_OK && same_values(&y2, &r2));
    tt_tensor_release(&y2);

    /* merge heads: b h s d -> b s (h d) needs a copy (h and s swap) */
    st = rr(&back, &y, "b h s d -> b s (h d)", NULL);
    CHECK("merge heads ok", st == TT_OK);
    CHECK("merge heads round trip", same_values(&back, &x));
    CHECK("merge heads of the split view is a view again", back.storage == x.storage);
    CHECK("merge heads names", names_are(&back, "b s h*d"));
    tt_tensor_release(&back);

    /* merge heads of a contiguous [b,h,s,d]: h and s swap, so it copies */
    tt_tensor yc;
    tt_contiguous(&yc, &y);
    st = rr(&back, &yc, "b h s d -> b s (h d)", NULL);
    CHECK("merge heads ok (contiguous input)", st == TT_OK && same_values(&back, &x));
    CHECK("merge heads copies", back.storage != yc.storage && back.storage != x.storage);
    CHECK("merge heads result contiguous", tt_is_contiguous(&back));
    tt_tensor_release(&back);

    /* merging dims that are contiguous stays a view */
    tt_tensor z;
    st = rr(&z, &r1, "b s h d -> b s (h d)", NULL);
    CHECK("merge contiguous is a view", st == TT_OK && z.storage == x.storage && same_values(&z, &x));
    tt_tensor_release(&z);

    tt_tensor_release(&r1);
    tt_tensor_release(&r2);
    tt_tensor_release(&yc);
    tt_tensor_release(&y);
    tt_tensor_release(&x);
}

static void test_rearrange_views(void)
{
    /* transpose */
    tt_tensor x = seq(SHAPE(3, 7)), y, r;
    tt_status st = rr(&y, &x, "i j -> j i", NULL);
    tt_transpose(&r, &x, 0, 1);
    CHECK("transpose", st == TT_OK && same_values(&y, &r) && y.storage == x.storage);
    CHECK("transpose strides", y.stride[0] == 1 && y.stride[1] == 7);
    CHECK("transpose names", names_are(&y, "j i"));
    tt_tensor_release(&y);
    tt_tensor_release(&r);

    /* identity is a fresh view */
    st = rr(&y, &x, "a b -> a b", NULL);
    CHECK("identity", st == TT_OK && same_values(&y, &x) && y.storage == x.storage && y.id != x.id);
    CHECK("identity names", names_are(&y, "a b"));
    tt_tensor_release(&y);
    tt_tensor_release(&x);

    /* split a non-contiguous dim: still a view */
    tt_tensor base = seq(SHAPE(12, 5)), xt, r1, r2;
    tt_transpose(&xt, &base, 0, 1);                     /* [5,12], strides (1,5) */
    st = rr(&y, &xt, "s (h d) -> h s d", "h=4");
    tt_view(&r1, &xt, SHAPE(5, 4, 3));
    tt_permute(&r2, &r1, (int[]){1, 0, 2});
    CHECK("split of a transposed dim", st == TT_OK && same_values(&y, &r2));
    CHECK("split of a transposed dim is a view", y.storage == base.storage);
    tt_tensor_release(&y);
    tt_tensor_release(&r1);
    tt_tensor_release(&r2);

    /* flatten of a transposed tensor: must copy, values in logical order */
    st = rr(&y, &xt, "a b -> (a b)", NULL);
    tt_reshape(&r1, &xt, SHAPE(60));
    CHECK("flatten transposed copies", st == TT_OK && same_values(&y, &r1) && y.storage != base.storage);
    CHECK("flatten names", names_are(&y, "a*b"));
    tt_tensor_release(&y);
    tt_tensor_release(&r1);

    /* narrowed input: split and keep a view, merge across the gap copies */
    tt_tensor nar;
    tt_narrow(&nar, &base, 1, 1, 3);                    /* [12,3], strides (5,1) */
    st = rr(&y, &nar, "(a b) c -> a b c", "a=3");
    tt_view(&r1, &nar, SHAPE(3, 4, 3));
    CHECK("split narrowed", st == TT_OK && same_values(&y, &r1) && y.storage == base.storage);
    tt_tensor_release(&y);
    tt_tensor_release(&r1);
    st = rr(&y, &nar, "(a b) c -> a (b c)", "a=3");
    tt_reshape(&r1, &nar, SHAPE(3, 12));
    CHECK("merge across a gap copies", st == TT_OK && same_values(&y, &r1) && y.storage != base.storage);
    tt_tensor_release(&y);
    tt_tensor_release(&r1);
    st = rr(&y, &nar, "(a b) c -> (a b) c", "a=3");
    CHECK("split-then-merge back is a view", st == TT_OK && same_values(&y, &nar) && y.storage == base.storage);
    CHECK("(a b) name", names_are(&y, "a*b c"));
    tt_tensor_release(&y);
    tt_tensor_release(&nar);
    tt_tensor_release(&xt);
    tt_tensor_release(&base);

    /* two groups on each side, recombined */
    x = seq(SHAPE(6, 12));
    st = rr(&y, &x, "(a b) (c d) -> (c a) (d b)", "a=2 c=3");
    tt_view(&r1, &x, SHAPE(2, 3, 3, 4));
    tt_permute(&r2, &r1, (int[]){2, 0, 3, 1});
    tt_reshape(&r, &r2, SHAPE(6, 12));
    CHECK("(a b) (c d) -> (c a) (d b)", st == TT_OK && same_values(&y, &r));
    CHECK("recombined names", names_are(&y, "c*a d*b"));
    tt_tensor_release(&y);
    tt_tensor_release(&r);
    tt_tensor_release(&r1);
    tt_tensor_release(&r2);

    /* image-like: b (h w) c -> b c h w, non-square */
    tt_tensor img = seq(SHAPE(2, 15, 4));
    st = rr(&y, &img, "b (h w) c -> b c h w", "w=5");
    tt_view(&r1, &img, SHAPE(2, 3, 5, 4));
    tt_permute(&r2, &r1, (int[]){0, 3, 1, 2});
    CHECK("b (h w) c -> b c h w", st == TT_OK && same_values(&y, &r2) && y.storage == img.storage);
    tt_tensor_release(&y);
    tt_tensor_release(&r1);
    tt_tensor_release(&r2);
    tt_tensor_release(&img);
    tt_tensor_release(&x);
}

static void test_rearrange_ellipsis_units(void)
{
    tt_tensor x = seq(SHAPE(2, 3, 4, 5)), xn, y, r;
    tt_named(&xn, &x, (const char *[]){tt_intern("B"), tt_intern("H"), NULL, tt_intern("D")});

    /* ellipsis on both sides */
    tt_status st = rr(&y, &xn, "... i j -> ... j i", NULL);
    tt_transpose(&r, &x, 2, 3);
    CHECK("... i j -> ... j i", st == TT_OK && same_values(&y, &r) && y.storage == x.storage);
    CHECK("ellipsis keeps the input's names", names_are(&y, "B H j i"));
    tt_tensor_release(&y);
    tt_tensor_release(&r);

    st = rr(&y, &xn, "b ... -> ... b", NULL);
    tt_permute(&r, &x, (int[]){1, 2, 3, 0});
    CHECK("b ... -> ... b", st == TT_OK && same_values(&y, &r));
    CHECK("b ... -> ... b names", names_are(&y, "H - D b"));
    tt_tensor_release(&y);
    tt_tensor_release(&r);

    /* '...' standing for no dims at all */
    tt_tensor v = seq(SHAPE(5));
    st = rr(&y, &v, "... i -> i ...", NULL);
    CHECK("... for zero dims", st == TT_OK && same_values(&y, &v));
    tt_tensor_release(&y);

    /* '...' in the middle with a split after it */
    st = rr(&y, &x, "b ... (p q) -> b p ... q", "q=1");
    tt_view(&r, &x, SHAPE(2, 3, 4, 5, 1));
    tt_tensor r2;
    tt_permute(&r2, &r, (int[]){0, 3, 1, 2, 4});
    CHECK("b ... (p q) -> b p ... q", st == TT_OK && same_values(&y, &r2));
    tt_tensor_release(&y);
    tt_tensor_release(&r);
    tt_tensor_release(&r2);

    /* flatten: '...' inside a group on the right */
    st = rr(&y, &xn, "b ... -> b (...)", NULL);
    tt_reshape(&r, &x, SHAPE(2, 60));
    CHECK("b ... -> b (...)", st == TT_OK && same_values(&y, &r) && y.storage == x.storage);
    CHECK("(...) is unnamed when a dim is", names_are(&y, "b -"));
    tt_tensor_release(&y);
    tt_tensor_release(&r);
    tt_tensor xn2;
    tt_named(&xn2, &x, (const char *[]){tt_intern("B"), tt_intern("H"), tt_intern("N"), tt_intern("D")});
    st = rr(&y, &xn2, "b ... -> b (...)", NULL);
    CHECK("(...) joins the input's names", st == TT_OK && names_are(&y, "b H*N*D"));
    tt_tensor_release(&y);
    st = rr(&y, &xn2, "... d -> (... d)", NULL);
    CHECK("(... d)", st == TT_OK && names_are(&y, "B*H*N*d") && shape_is(&y, SHAPE(120)));
    tt_tensor_release(&y);
    tt_tensor_release(&xn2);

    /* unit axes: add with 1 and (), remove, inside groups */
    tt_tensor m = seq(SHAPE(3, 4));
    st = rr(&y, &m, "b d -> b 1 d", NULL);
    tt_view(&r, &m, SHAPE(3, 1, 4));
    CHECK("b d -> b 1 d", st == TT_OK && same_values(&y, &r) && y.storage == m.storage);
    CHECK("unit axis unnamed", names_are(&y, "b - d"));
    tt_tensor_release(&y);
    st = rr(&y, &m, "b d -> () b () d", NULL);
    tt_tensor r4;
    tt_view(&r4, &m, SHAPE(1, 3, 1, 4));
    CHECK("() adds unit axes", st == TT_OK && same_values(&y, &r4) && names_are(&y, "- b - d"));
    tt_tensor_release(&y);
    tt_tensor_release(&r4);
    tt_tensor u;
    st = rr(&u, &r, "b 1 d -> d b", NULL);
    tt_tensor mt;
    tt_transpose(&mt, &m, 0, 1);
    CHECK("b 1 d -> d b", st == TT_OK && same_values(&u, &mt) && u.storage == m.storage);
    tt_tensor_release(&u);
    st = rr(&u, &r, "b () d -> (b 1 d)", NULL);
    tt_tensor flat;
    tt_reshape(&flat, &m, SHAPE(12));
    CHECK("b () d -> (b 1 d)", st == TT_OK && same_values(&u, &flat) && names_are(&u, "b*d"));
    tt_tensor_release(&u);
    tt_tensor_release(&flat);
    tt_tensor_release(&mt);
    tt_tensor_release(&r);

    /* to and from 0 dims */
    tt_tensor one = seq(SHAPE(1, 1)), s;
    st = rr(&s, &one, "1 () ->", NULL);
    CHECK("1 () -> gives 0-d", st == TT_OK && s.ndim == 0 && tt_get(&s, 0) == 0.25);
    tt_tensor back;
    st = rr(&back, &s, "-> 1 1 1", NULL);
    CHECK("-> 1 1 1 from 0-d", st == TT_OK && shape_is(&back, SHAPE(1, 1, 1)) && tt_get(&back, 0) == 0.25);
    tt_tensor_release(&back);
    tt_tensor_release(&s);
    tt_tensor_release(&one);

    /* bool tensors rearrange too */
    tt_tensor mask;
    tt_causal_mask(&mask, 3, 4, 1);
    st = rr(&y, &mask, "i j -> j i", NULL);
    CHECK("bool rearrange", st == TT_OK && y.dtype == TT_BOOL && tt_get(&y, 1) == tt_get(&mask, 4));
    tt_tensor_release(&y);
    tt_tensor_release(&mask);

    /* zero-length dims */
    tt_tensor z = seq(SHAPE(0, 6)), zr;
    st = rr(&zr, &z, "n (a b) -> b n a", "a=2");
    CHECK("zero-length dim", st == TT_OK && shape_is(&zr, SHAPE(3, 0, 2)));
    tt_tensor_release(&zr);
    tt_tensor_release(&z);

    tt_tensor_release(&m);
    tt_tensor_release(&v);
    tt_tensor_release(&xn);
    tt_tensor_release(&x);
}

static void test_rearrange_trace(void)
{
    tt_tensor x = seq(SHAPE(2, 5, 12)), y;
    tt_trace_subscribe(sink, NULL, 1);
    nevents = 0;
    tt_status st = rr(&y, &x, "b s (h d) -> b h s d", "h=3");
    CHECK("one event for a view rearrange", st == TT_OK && nevents == 1);
    CHECK("event op", last.op == TT_OP_REARRANGE);
    CHECK("event view", last.view == 1);
    CHECK("event args", strcmp(last_args, "\"b s (h d) -> b h s d\", h=3") == 0);
    if (strcmp(last_args, "\"b s (h d) -> b h s d\", h=3") != 0)
        printf("  args: %s\n", last_args);
    /* sizes show in the pattern's order, whatever order they were given in */
    nevents = 0;
    tt_tensor w;
    st = rr(&w, &x, "b s (h d) -> b h s d", "d=4 h=3");
    CHECK("event args in the pattern's order", st == TT_OK && strcmp(last_args, "\"b s (h d) -> b h s d\", h=3, d=4") == 0);
    tt_tensor_release(&w);
    nevents = 0;
    tt_tensor z, yc;
    tt_contiguous(&yc, &y);
    nevents = 0;
    st = rr(&z, &yc, "b h s d -> b s (h d)", NULL);
    CHECK("one event for a copying rearrange", st == TT_OK && nevents == 1 && last.view == 0);
    tt_tensor_release(&z);
    tt_tensor_release(&yc);
    nevents = 0;
    st = rr(&z, &y, "b h s d -> b s (h d) q", NULL);
    CHECK("no event on failure", st != TT_OK && nevents == 0);
    nevents = 0;
    char longpat[200];
    snprintf(longpat, sizeof longpat, "%s", "batch seq (heads head_dim) -> batch heads seq head_dim");
    st = rr(&z, &x, longpat, "heads=3");
    CHECK("long pattern: one event, args cut", st == TT_OK && nevents == 1 && strlen(last_args) == 63
          && strcmp(last_args + 60, "...") == 0);
    tt_tensor_release(&z);
    tt_trace_unsubscribe(sink, NULL);
    tt_tensor_release(&y);
    tt_tensor_release(&x);
}

static void test_rearrange_errors(void)
{
    tt_tensor x = seq(SHAPE(2, 7, 12)), y = {0}, m = seq(SHAPE(2, 5));
    tt_status st;

    st = rr(&y, &x, "b s (h d) -> b h s d", "h=5");
    expect_err("cannot split", st, TT_ESHAPE, &y,
               "rearrange: \"b s (h d) -> b h s d\": cannot split axis '(h d)' of length 12 into h=5 groups",
               "; input [2,7,12]", NULL);
    st = rr(&y, &m, "b s d -> b d", NULL);
    expect_err("rank", st, TT_ESHAPE, &y,
               "rearrange: \"b s d -> b d\": pattern has 3 axes on the left but the input [2,5] has 2 dims", NULL);
    st = rr(&y, &m, "a b c ... -> a b c ...", NULL);
    expect_err("rank with ...", st, TT_ESHAPE, &y, "pattern has 3 axes besides '...' on the left but the input [2,5] has 2 dims", NULL);
    st = rr(&y, &x, "b s d -> b d", NULL);
    expect_err("missing on the right", st, TT_EARG, &y,
               "rearrange: \"b s d -> b d\": axis 's' is missing on the right", "; input [2,7,12]", NULL);
    st = rr(&y, &x, "b s d -> b s d x", NULL);
    expect_err("missing on the left", st, TT_EARG, &y, "axis 'x' is missing on the left", NULL);
    st = rr(&y, &x, "b s d -> b s d", "q=3");
    expect_err("unknown size", st, TT_EARG, &y, "a size is given for 'q', which is not in the pattern", NULL);
    st = rr(&y, &x, "b s d -> b s d", "s=7 s=7");
    expect_err("size twice", st, TT_EARG, &y, "the size of 's' is given twice", NULL);
    st = rr(&y, &x, "b s d -> b s d", "s=-7");
    expect_err("negative size", st, TT_EARG, &y, "size s=-7 is negative", NULL);
    st = rr(&y, &x, "b h h -> b h", NULL);
    expect_err("duplicate left", st, TT_EARG, &y, "axis 'h' appears twice on the left", NULL);
    st = rr(&y, &x, "b s d -> b (s s) d", NULL);
    expect_err("duplicate right", st, TT_EARG, &y, "axis 's' appears twice on the right", NULL);
    st = rr(&y, &x, "... s ... -> s", NULL);
    expect_err("two ellipses", st, TT_EARG, &y, "'...' appears twice on the left", NULL);
    st = rr(&y, &x, "b s (h d -> b s h d", NULL);
    expect_err("unclosed (", st, TT_EARG, &y, "unbalanced parentheses on the left: '(' without ')'", NULL);
    st = rr(&y, &x, "b s d -> b s d)", NULL);
    expect_err("stray )", st, TT_EARG, &y, "unbalanced parentheses on the right: ')' without '('", NULL);
    st = rr(&y, &x, "b s d -> b ((s d))", NULL);
    expect_err("nested", st, TT_EARG, &y, "nested parentheses on the right", NULL);
    st = rr(&y, &x, "b s d", NULL);
    expect_err("no arrow", st, TT_EARG, &y, "rearrange: \"b s d\": no '->' in the pattern", NULL);
    st = rr(&y, &x, "b s d -> b s d -> b s d", NULL);
    expect_err("two arrows", st, TT_EARG, &y, "'->' appears twice", NULL);
    st = rr(&y, &x, "b ... -> b", NULL);
    expect_err("ellipsis one side", st, TT_EARG, &y, "'...' is on the left but not on the right", NULL);
    st = rr(&y, &x, "b s d -> ...", NULL);
    expect_err("ellipsis other side", st, TT_EARG, &y, "'...' is on the right but not on the left", NULL);
    st = rr(&y, &x, "b (...) -> b ...", NULL);
    expect_err("ellipsis in left group", st, TT_EARG, &y, "'...' inside parentheses on the left", NULL);
    st = rr(&y, &x, "b s (h d) -> b h s d", NULL);
    expect_err("two unknowns", st, TT_EARG, &y,
               "cannot infer both 'h' and 'd' in '(h d)' of length 12: give one of them in the sizes", NULL);
    st = rr(&y, &x, "b s h -> b s h", "s=8");
    expect_err("given size differs", st, TT_ESHAPE, &y, "axis 's' has length 7 but s=8 was given", NULL);
    st = rr(&y, &x, "b s (h d) -> b h s d", "h=2 d=5");
    expect_err("product differs", st, TT_ESHAPE, &y, "axis '(h d)' has length 12 but h=2 x d=5 make 10", NULL);
    st = rr(&y, &x, "b 1 d -> b d", NULL);
    expect_err("unit axis of length 7", st, TT_ESHAPE, &y, "axis '1' has length 7; a unit axis needs length 1", NULL);
    st = rr(&y, &x, "b () d -> b d", NULL);
    expect_err("() of length 7", st, TT_ESHAPE, &y, "axis '()' has length 7; a unit axis needs length 1", NULL);
    st = rr(&y, &x, "b s d -> b s d 2", NULL);
    expect_err("number other than 1", st, TT_EARG, &y, "'2' on the right is not an axis", NULL);
    st = rr(&y, &x, "b s d -> b s*d", NULL);
    expect_err("bad character", st, TT_EARG, &y, "unexpected character '*' on the right", NULL);
    st = rr(&y, &x, "b s d -> b s d..", NULL);
    expect_err("two dots", st, TT_EARG, &y, "a '.' that is not part of '...'", NULL);
    /* einops' grammar: identifiers that neither start nor end with '_',
       and '...' standing apart from names */
    st = rr(&y, &x, "b s _d -> b s _d", NULL);
    expect_err("name starting with _", st, TT_EARG, &y, "axis name '_d' on the left starts or ends with '_'", NULL);
    st = rr(&y, &x, "b s d -> b s d_", NULL);
    expect_err("name ending with _", st, TT_EARG, &y, "axis name 'd_' on the right starts or ends with '_'", NULL);
    st = rr(&y, &x, "b s _ -> b s _", NULL);
    expect_err("_ alone", st, TT_EARG, &y, "axis name '_' on the left starts or ends with '_'", NULL);
    st = rr(&y, &x, "...pre -> pre...", NULL);
    expect_err("... glued before a name", st, TT_EARG, &y, "'...pre' on the left glues '...' to a name", NULL);
    st = rr(&y, &x, "... pre -> pre...", NULL);
    expect_err("... glued after a name", st, TT_EARG, &y, "'pre...' on the right glues '...' to a name", NULL);
    st = rr(&y, &x, "b (s...) d -> b s d", NULL);
    expect_err("... glued inside a group", st, TT_EARG, &y, "'s...' on the left glues", NULL);
    st = rr(&y, &x, "b s d -> b s*d", NULL);
    expect_err("bad character names the token", st, TT_EARG, &y, "unexpected character '*' on the right, in 's*d'", NULL);
    st = rr(&y, &x, "b seq_len d -> b d seq_len", NULL);
    CHECK("inner underscores are fine", st == TT_OK && y.shape[2] == 7);
    tt_tensor_release(&y);
    st = rr(&y, &x, "b ...->b ...", NULL);
    CHECK("'...' next to '->' is fine", st == TT_OK);
    tt_tensor_release(&y);
    st = rr(&y, &x, "b ... d -> (b)... d", NULL);
    CHECK("'...' right after ')' is a token of its own, as in einops", st == TT_OK && y.ndim == 3 && y.shape[1] == 7);
    tt_tensor_release(&y);
    st = rr(&y, &x, "b s (h d) -> b h s d", "h=0");
    expect_err("split by 0", st, TT_ESHAPE, &y, "cannot split axis '(h d)' of length 12", NULL);
    st = rr(&y, &x, "b s d -> b s d 1 1 1 1 1 1", NULL);
    expect_err("too many dims", st, TT_ESHAPE, &y, "the result would have more than 8 dims", NULL);
    tt_tensor x512 = seq(SHAPE(512)), x2 = seq(SHAPE(2, 1, 3));
    st = rr(&y, &x512, "(a b c d e f g h i) -> (i h g f e d c b a)", "a=2 b=2 c=2 d=2 e=2 f=2 g=2 h=2");
    expect_err("too many axes", st, TT_ESHAPE, &y, "needs 9 separate axes at once (at most 8)", NULL);
    /* axes of length 1 do not count against the limit */
    st = rr(&y, &x2, "(a b c d e f g h) (i j k l m n o p) q -> q (p o n m l k j i) (h g f e d c b a)",
            "a=1 b=1 c=1 d=1 e=1 f=1 g=1 i=1 j=1 k=1 l=1 m=1 n=1 o=1");
    CHECK("length-1 axes are free", st == TT_OK && shape_is(&y, SHAPE(3, 1, 2)) && tt_get(&y, 1) == tt_get(&x2, 3));
    if (st != TT_OK)
        printf("  %s\n", tt_errmsg());
    tt_tensor_release(&y);
    tt_tensor_release(&x2);
    tt_tensor_release(&x512);
    st = tt_rearrange(&y, &x, "b s d -> b s d", 1, (const char *[]){NULL}, (const int64_t[]){3});
    expect_err("unnamed size", st, TT_EARG, &y, "size 1 has no name", NULL);

    tt_tensor_release(&m);
    tt_tensor_release(&x);
}

/* ===== einsum ===== */

/* The float64 reference: terms (one letter per operand dim, comma
   separated) -> out letters, by a loop over every index combination. Dims
   of length 1 broadcast. Returns malloc'd values in the output's row-major
   order; *n gets their count. */
static double *ref_einsum(const char *terms, const char *outl, const tt_tensor *const *list, int nops, int64_t *n)
{
    char letters[32];
    int64_t size[32];
    int nl = 0;
    const char *op_terms[8];
    char buf[128];
    snprintf(buf, sizeof buf, "%s", terms);
    int k = 0;
    for (char *t = buf; k < nops; t++) {      /* not strtok: terms may be empty */
        op_terms[k++] = t;
        t = strchr(t, ',');
        if (!t)
            break;
        *t = '\0';
    }
    for (int i = 0; i < nops; i++)
        for (int d = 0; op_terms[i][d]; d++) {
            char c = op_terms[i][d];
            int j = 0;
            while (j < nl && letters[j] != c)
                j++;
            if (j == nl) {
                letters[nl] = c;
                size[nl++] = 1;
            }
            if (list[i]->shape[d] > size[j])
                size[j] = list[i]->shape[d];
        }
    int64_t nout = 1, total = 1;
    for (int j = 0; outl[j]; j++)
        for (int l = 0; l < nl; l++)
            if (letters[l] == outl[j])
                nout *= size[l];
    for (int l = 0; l < nl; l++)
        total *= size[l];
    double *ref = calloc((size_t)(nout ? nout : 1), sizeof *ref);
    int64_t idx[32] = {0};
    for (int64_t it = 0; it < total; it++) {
        int64_t r = it;
        for (int l = nl - 1; l >= 0; l--) {
            idx[l] = r % size[l];
            r /= size[l];
        }
        double prod = 1;
        for (int i = 0; i < nops; i++) {
            int64_t off = 0;
            for (int d = 0; op_terms[i][d]; d++) {
                int l = (int)(strchr(letters, op_terms[i][d]) - letters);
                int64_t ix = list[i]->shape[d] == 1 ? 0 : idx[l];
                off = off * list[i]->shape[d] + ix;
            }
            prod *= tt_get(list[i], off);
        }
        int64_t o = 0;
        for (int j = 0; outl[j]; j++) {
            int l = (int)(memchr(letters, outl[j], (size_t)nl) ? (char *)memchr(letters, outl[j], (size_t)nl) - letters : 0);
            o = o * size[l] + idx[l];
        }
        ref[o] += prod;
    }
    *n = nout;
    return ref;
}

/* tt_einsum(spec, ops) against ref_einsum(terms -> outl). */
static void einsum_case(const char *spec, const char *terms, const char *outl, int nops, ...)
{
    const tt_tensor *list[8];
    va_list ap;
    va_start(ap, nops);
    for (int i = 0; i < nops; i++)
        list[i] = va_arg(ap, const tt_tensor *);
    va_end(ap);
    tt_tensor out;
    tt_status st = tt_einsum(&out, spec, list, nops);
    char descr[160];
    snprintf(descr, sizeof descr, "einsum \"%s\"", spec);
    if (st != TT_OK) {
        printf("  %s: %s\n", descr, tt_errmsg());
        CHECK(descr, 0);
        return;
    }
    int64_t n;
    double *ref = ref_einsum(terms, outl, list, nops, &n);
    CHECK(descr, tt_numel(&out) == n && out.ndim == (int)strlen(outl));
    float *got = malloc((size_t)(n ? n : 1) * sizeof *got);
    for (int64_t i = 0; i < n && i < tt_numel(&out); i++)
        got[i] = (float)tt_get(&out, i);
    check_close(descr, got, ref, (long)n, 1e-5, 1e-5);
    free(got);
    free(ref);
    tt_tensor_release(&out);
}

static void test_einsum_values(void)
{
    tt_manual_seed(11);
    tt_tensor q = randn(SHAPE(2, 3, 5, 4)), k = randn(SHAPE(2, 3, 6, 4)), v = randn(SHAPE(2, 3, 6, 7));
    tt_tensor w = randn(SHAPE(2, 3, 5, 6));
    tt_tensor a = randn(SHAPE(5, 3)), b = randn(SHAPE(4, 3)), c = randn(SHAPE(3, 7));
    tt_tensor x = randn(SHAPE(2, 5, 3)), x2 = randn(SHAPE(2, 6, 3)), sq = randn(SHAPE(4, 4));
    tt_tensor k3 = randn(SHAPE(3, 6, 4)), q1 = randn(SHAPE(2, 1, 5, 4));
    tt_tensor u = randn(SHAPE(5)), u2 = randn(SHAPE(5)), t7 = randn(SHAPE(7));
    tt_tensor e42 = randn(SHAPE(4, 2)), e72 = randn(SHAPE(7, 2)), b1 = randn(SHAPE(1, 3));

    einsum_case("i d, j d -> i j", "id,jd", "ij", 2, &a, &b);
    einsum_case("b h i d, b h j d -> b h i j", "bhid,bhjd", "bhij", 2, &q, &k);
    einsum_case("b h i j, b h j d -> b h i d", "bhij,bhjd", "bhid", 2, &w, &v);
    einsum_case("b h i d, b h j d -> b h j i", "bhid,bhjd", "bhji", 2, &q, &k);
    einsum_case("... i d, ... j d -> ... i j", "XYid,XYjd", "XYij", 2, &q, &k);
    einsum_case("... i d, ... j d -> ... i j", "XYid,Yjd", "XYij", 2, &q, &k3);     /* ... of 2 and 1 dims */
    einsum_case("... i d, ... j d -> ... i j", "XYid,XYjd", "XYij", 2, &q1, &k);    /* length-1 broadcast */
    einsum_case("b n d, d e -> b n e", "bnd,de", "bne", 2, &x, &c);
    einsum_case("bid,bjd->bij", "bid,bjd", "bij", 2, &x, &x2);
    einsum_case("bhid,bhjd->bhij", "bhid,bhjd", "bhij", 2, &q, &k);
    einsum_case("ij,jk", "ij,jk", "ik", 2, &a, &c);                 /* implicit output */
    einsum_case("ij,kj", "ij,kj", "ik", 2, &a, &b);
    einsum_case("i j -> j i", "ij", "ji", 1, &a);
    einsum_case("i j -> i", "ij", "i", 1, &a);
    einsum_case("i j -> j", "ij", "j", 1, &a);
    einsum_case("i j ->", "ij", "", 1, &a);
    einsum_case("i i -> i", "ii", "i", 1, &sq);
    einsum_case("i i ->", "ii", "", 1, &sq);
    einsum_case("ii", "ii", "", 1, &sq);                            /* implicit: the trace */
    einsum_case("i, j -> i j", "i,j", "ij", 2, &u, &t7);
    einsum_case("i, i ->", "i,i", "", 2, &u, &u2);
    einsum_case("i, i -> i", "i,i", "i", 2, &u, &u2);
    einsum_case("i d, j d, j e -> i e", "id,jd,je", "ie", 3, &a, &b, &e42);
    einsum_case("b h i d, b h j d, b h j e -> b h i e", "bhid,bhjd,bhje", "bhie", 3, &q, &k, &v);
    einsum_case("i j, j k, k l -> l i", "ij,jk,kl", "li", 3, &a, &c, &e72);
    einsum_case("... i, ... i -> i", "i,i", "i", 2, &u, &u2);          /* '...' of no dims */
    einsum_case("... i, ... i -> i", "Xi,Xi", "i", 2, &a, &a);          /* '...' dims summed */
    einsum_case("... i, ... i -> i", "Xi,Xi", "i", 2, &a, &b1);         /* ... and broadcast */
    einsum_case("... i, ... i -> ... i", "Xi,Xi", "Xi", 2, &a, &b1);
    einsum_case("ij, jk -> ik", "ij,jk", "ik", 2, &a, &c);              /* NumPy style, spaces around */
    einsum_case("bid,bjd -> bij", "bid,bjd", "bij", 2, &x, &x2);
    einsum_case(" ij , jk ", "ij,jk", "ik", 2, &a, &c);
    einsum_case("... d -> d", "XYZd", "d", 1, &q);
    einsum_case("a b c d -> d a c", "abcd", "dac", 1, &q);
    einsum_case("seq dim, key dim -> seq key", "sd,kd", "sk", 2, &a, &b);
    einsum_case("b h i d, b h j d -> b i j", "bhid,bhjd", "bij", 2, &q, &k);    /* h contracted too */

    tt_tensor *all[] = {&q, &k, &v, &w, &a, &b, &c, &x, &x2, &sq, &k3, &q1, &u, &u2, &t7, &e42, &e72, &b1};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tt_tensor_release(all[i]);
}

static void test_einsum_more(void)
{
    tt_manual_seed(5);
    /* batched attention with the keys given transposed (strided input) */
    tt_tensor q = randn(SHAPE(2, 3, 5, 4)), kt = randn(SHAPE(2, 3, 4, 6)), k;
    tt_mT(&k, &kt);                                     /* [2,3,6,4], not contiguous */
    einsum_case("b h i d, b h j d -> b h i j", "bhid,bhjd", "bhij", 2, &q, &k);
    /* axes summed first: d only in the first, e only in the second */
    tt_tensor x = randn(SHAPE(2, 5, 3)), y = randn(SHAPE(2, 6, 4));
    einsum_case("b i d, b j e -> b i j", "bid,bje", "bij", 2, &x, &y);
    einsum_case("b i d, b j e -> i", "bid,bje", "i", 2, &x, &y);
    /* Hadamard and a batch of dot products */
    tt_tensor h1 = randn(SHAPE(3, 5)), h2 = randn(SHAPE(3, 5));
    einsum_case("b n, b n -> b n", "bn,bn", "bn", 2, &h1, &h2);
    einsum_case("b n, b n -> b", "bn,bn", "b", 2, &h1, &h2);
    einsum_case("b n, b n -> n b", "bn,bn", "nb", 2, &h1, &h2);
    /* no contracted axis with free axes on both sides: broadcast multiply */
    tt_tensor o1 = randn(SHAPE(3, 4)), o2 = randn(SHAPE(3, 6)), p1 = randn(SHAPE(2, 5, 3)), p2 = randn(SHAPE(5, 3));
    einsum_case("b i, b j -> b j i", "bi,bj", "bji", 2, &o1, &o2);
    einsum_case("b i, b j -> i b j", "bi,bj", "ibj", 2, &o1, &o2);
    einsum_case("b n d, n d -> d b n", "bnd,nd", "dbn", 2, &p1, &p2);
    einsum_case("n d, b n d -> b n", "nd,bnd", "bn", 2, &p2, &p1);   /* d contracted: matmul again */
    tt_tensor_release(&o1);
    tt_tensor_release(&o2);
    tt_tensor_release(&p1);
    tt_tensor_release(&p2);
    /* a diagonal inside a contraction */
    tt_tensor sq = randn(SHAPE(4, 4)), vec = randn(SHAPE(4, 2));
    einsum_case("i i, i k -> k", "ii,ik", "k", 2, &sq, &vec);
    /* classic spec with '...' */
    tt_tensor kk = randn(SHAPE(2, 3, 6, 4));
    einsum_case("...id,...jd->...ij", "XYid,XYjd", "XYij", 2, &q, &kk);
    /* a 0-d operand */
    tt_tensor s0;
    tt_full(&s0, TT_FLOAT32, 0, NULL, 2.5);
    einsum_case(", i j -> j i", ",ij", "ji", 2, &s0, &h1);
    /* many batch dims: 7 batch axes plus M and N force the batch to flatten */
    tt_tensor big1 = randn(SHAPE(2, 1, 2, 1, 2, 1, 3, 2)), big2 = randn(SHAPE(2, 1, 2, 1, 2, 1, 2, 3));
    einsum_case("a b c d e f i k, a b c d e f k j -> a b c d e f i j", "abcdefik,abcdefkj", "abcdefij", 2,
                &big1, &big2);

    /* one-operand permutation is a view; names come from the spec */
    tt_tensor out;
    const tt_tensor *one[1] = {&h1};
    tt_status st = tt_einsum(&out, "i j -> j i", one, 1);
    CHECK("einsum permutation is a view", st == TT_OK && out.storage == h1.storage && out.id != h1.id);
    CHECK("einsum names", names_are(&out, "j i"));
    tt_tensor_release(&out);

    /* names: '...' dims take the inputs' names */
    tt_tensor qn;
    tt_named(&qn, &q, (const char *[]){tt_intern("B"), tt_intern("H"), tt_intern("N"), tt_intern("Dh")});
    const tt_tensor *two[2] = {&qn, &k};
    st = tt_einsum(&out, "... i d, ... j d -> ... i j", two, 2);
    CHECK("einsum ... names", st == TT_OK && names_are(&out, "B H i j"));
    tt_tensor_release(&out);
    /* names on the inputs never clash inside (the result is named from the spec) */
    tt_tensor kn;
    tt_named(&kn, &k, (const char *[]){tt_intern("X"), tt_intern("Y"), tt_intern("Nk"), tt_intern("Q")});
    const tt_tensor *two2[2] = {&qn, &kn};
    st = tt_einsum(&out, "b h i d, b h j d -> b h i j", two2, 2);
    CHECK("einsum ignores the inputs' names", st == TT_OK && names_are(&out, "b h i j"));
    tt_tensor_release(&out);

    /* one event, with FLOPs: 2 * b*h*i*j*d */
    tt_trace_subscribe(sink, NULL, 1);
    nevents = 0;
    const tt_tensor *qk[2] = {&q, &k};
    st = tt_einsum(&out, "b h i d, b h j d -> b h i j", qk, 2);
    CHECK("einsum one event", st == TT_OK && nevents == 1 && last.op == TT_OP_EINSUM);
    CHECK("einsum flops", last.flops == 2.0 * 2 * 3 * 5 * 6 * 4);
    CHECK("einsum event not a view", last.view == 0 && last.ninputs == 2);
    CHECK("einsum args", strcmp(last_args, "\"b h i d, b h j d -> b h i j\"") == 0);
    tt_tensor_release(&out);
    nevents = 0;
    const tt_tensor *hh[2] = {&h1, &h2};
    st = tt_einsum(&out, "b n, b n -> b n", hh, 2);
    CHECK("Hadamard: one event, b*n FLOPs", st == TT_OK && nevents == 1 && last.flops == 3.0 * 5);
    tt_tensor_release(&out);
    nevents = 0;
    st = tt_einsum(&out, "b n, b n -> b", hh, 2);
    CHECK("batched dot: 2*b*n FLOPs", st == TT_OK && nevents == 1 && last.flops == 2.0 * 3 * 5);
    tt_tensor_release(&out);
    nevents = 0;
    st = tt_einsum(&out, "i j -> j i", one, 1);
    CHECK("einsum view event", st == TT_OK && nevents == 1 && last.view == 1 && last.flops == 0);
    tt_tensor_release(&out);
    tt_tensor a5 = randn(SHAPE(2, 3)), b5 = randn(SHAPE(3, 4)), c5 = randn(SHAPE(4, 5)), d5 = randn(SHAPE(5, 2));
    const tt_tensor *four[4] = {&a5, &b5, &c5, &d5};
    nevents = 0;
    st = tt_einsum(&out, "i j, j k, k l, l m -> i m", four, 4);
    CHECK("4 operands: one event", st == TT_OK && nevents == 1 && last.ninputs == 4 && last.ninputs_total == 4);
    if (!(st == TT_OK && nevents == 1 && last.ninputs == 4 && last.ninputs_total == 4))
        printf("  st %d, %d events, ninputs %d of %d\n", (int)st, nevents, last.ninputs, last.ninputs_total);
    /* ((2x3 @ 3x4) @ 4x5) @ 5x2 */
    CHECK("4 operands flops", last.flops == 2.0 * (2 * 3 * 4 + 2 * 4 * 5 + 2 * 5 * 2));
    tt_tensor_release(&out);
    einsum_case("i j, j k, k l, l m -> i m", "ij,jk,kl,lm", "im", 4, &a5, &b5, &c5, &d5);
    nevents = 0;
    const tt_tensor *bad[2] = {&q, &h1};
    st = tt_einsum(&out, "b h i d, b h j d -> b h i j", bad, 2);
    CHECK("einsum no event on failure", st != TT_OK && nevents == 0);
    tt_trace_unsubscribe(sink, NULL);

    tt_tensor_release(&a5);
    tt_tensor_release(&b5);
    tt_tensor_release(&c5);
    tt_tensor_release(&d5);
    tt_tensor_release(&kn);
    tt_tensor_release(&qn);
    tt_tensor_release(&big1);
    tt_tensor_release(&big2);
    tt_tensor_release(&s0);
    tt_tensor_release(&kk);
    tt_tensor_release(&sq);
    tt_tensor_release(&vec);
    tt_tensor_release(&h1);
    tt_tensor_release(&h2);
    tt_tensor_release(&x);
    tt_tensor_release(&y);
    tt_tensor_release(&k);
    tt_tensor_release(&kt);
    tt_tensor_release(&q);
}

static void test_einsum_errors(void)
{
    tt_tensor a = seq(SHAPE(5, 3)), b = seq(SHAPE(6, 4)), c = seq(SHAPE(4, 3)), out = {0};
    tt_tensor q = seq(SHAPE(2, 3, 5)), k = seq(SHAPE(3, 6, 5)), sq = seq(SHAPE(3, 4));
    const tt_tensor *ab[2] = {&a, &b}, *ac[2] = {&a, &c}, *a1[1] = {&a}, *qk[2] = {&q, &k};
    tt_status st;

    st = tt_einsum(&out, "i d, j d -> i j", ab, 2);
    expect_err("axis length mismatch", st, TT_ESHAPE, &out,
               "einsum: \"i d, j d -> i j\": axis 'd' has length 3 in operand 1 [5,3] but 4 in operand 2 [6,4]", NULL);
    st = tt_einsum(&out, "i d, j d -> i j", a1, 1);
    expect_err("operand count", st, TT_EARG, &out, "the spec has 2 operands but 1 tensor was given", NULL);
    st = tt_einsum(&out, "i d -> i", ac, 2);
    expect_err("operand count 2", st, TT_EARG, &out, "the spec has 1 operand but 2 tensors were given", NULL);
    st = tt_einsum(&out, "i d, j d e -> i j", ac, 2);
    expect_err("rank", st, TT_ESHAPE, &out, "operand 2 has 3 axes in the spec but is [4,3] (2 dims)", NULL);
    st = tt_einsum(&out, "i d, j d -> i k", ac, 2);
    expect_err("output axis not in inputs", st, TT_EARG, &out, "output axis 'k' is not in any input",
               "; inputs [5,3], [4,3]", NULL);
    st = tt_einsum(&out, "i d, j d -> i i", ac, 2);
    expect_err("output axis twice", st, TT_EARG, &out, "axis 'i' appears twice in the output", NULL);
    st = tt_einsum(&out, "i d, j d", ac, 2);
    expect_err("no arrow", st, TT_EARG, &out, "no '->' in the spec", NULL);
    st = tt_einsum(&out, "i d, j d -> i j -> i", ac, 2);
    expect_err("two arrows", st, TT_EARG, &out, "'->' appears twice", NULL);
    st = tt_einsum(&out, "(i d), j d -> i j", ac, 2);
    expect_err("parentheses", st, TT_EARG, &out, "parentheses are not allowed in einsum", NULL);
    st = tt_einsum(&out, "... i ..., j d -> i j", ac, 2);
    expect_err("two ... in a term", st, TT_EARG, &out, "'...' appears twice in operand 1", NULL);
    st = tt_einsum(&out, "i d, j d -> i, j", ac, 2);
    expect_err("two outputs", st, TT_EARG, &out, "',' after '->'", NULL);
    st = tt_einsum(&out, "i d, j d -> i 1", ac, 2);
    expect_err("number", st, TT_EARG, &out, "'1' in the output is not an axis name", NULL);
    st = tt_einsum(&out, "i d, j $ -> i j", ac, 2);
    expect_err("bad character", st, TT_EARG, &out, "unexpected character '$' in operand 2", NULL);
    st = tt_einsum(&out, "i _d, j _d -> i j", ac, 2);
    expect_err("einsum name starting with _", st, TT_EARG, &out, "axis name '_d' in operand 1 starts or ends", NULL);
    st = tt_einsum(&out, "...i d, ... j d -> ... i j", ac, 2);
    expect_err("einsum ... glued", st, TT_EARG, &out, "'...i' in operand 1 glues '...' to a name", NULL);
    st = tt_einsum(&out, "...id,...jd->...ij", ac, 2);
    CHECK("classic spec: '...' glued to letters as NumPy allows", st == TT_OK);
    tt_tensor_release(&out);
    st = tt_einsum(&out, "i2,j2->ij", ac, 2);
    expect_err("digit in a classic spec", st, TT_EARG, &out, "unexpected character '2' in operand 1", NULL);
    st = tt_einsum(&out, "... i d, ... j d -> ... i j", qk, 2);
    expect_err("... does not broadcast", st, TT_ESHAPE, &out,
               "the dims under '...' do not broadcast: operand 1 is [2,3,5] but operand 2 is [3,6,5]", NULL);
    const tt_tensor *s1[1] = {&sq};
    st = tt_einsum(&out, "i i -> i", s1, 1);
    expect_err("diagonal of unequal lengths", st, TT_ESHAPE, &out,
               "axis 'i' repeats in operand 1 [3,4] with lengths 3 and 4", NULL);
    const tt_tensor *ca[2] = {&c, &a};
    st = tt_einsum(&out, "i j, jk -> i k", ca, 2);
    expect_err("multi-letter names hint", st, TT_ESHAPE, &out, "operand 2 has 1 axis in the spec but is [5,3] (2 dims)",
               "axis names are separated by spaces", NULL);
    tt_tensor v5 = seq(SHAPE(5));
    const tt_tensor *v1[1] = {&v5};
    st = tt_einsum(&out, "seq -> seq", v1, 1);
    expect_err("one-letter reading hint", st, TT_ESHAPE, &out, "operand 1 has 3 axes in the spec but is [5] (1 dim)",
               "reads one letter per axis", NULL);
    tt_tensor_release(&v5);
    tt_tensor mask;
    tt_causal_mask(&mask, 5, 3, 1);
    const tt_tensor *mb[2] = {&mask, &c};
    st = tt_einsum(&out, "i d, j d -> i j", mb, 2);
    expect_err("bool operand", st, TT_EARG, &out, "operand 1 is bool; einsum needs float32", NULL);
    st = tt_einsum(&out, "i d -> i", ab, 0);
    expect_err("no tensors", st, TT_EARG, &out, "einsum: needs a spec and at least one tensor", NULL);
    tt_tensor big = seq(SHAPE(1, 1, 1, 1, 1)), big2 = seq(SHAPE(1, 1, 1, 1, 1));
    const tt_tensor *bb[2] = {&big, &big2};
    st = tt_einsum(&out, "a b c d e, f g h i j -> a b c d e f g h i j", bb, 2);
    expect_err("too many output dims", st, TT_ESHAPE, &out, "the result would have 10 dims (at most 8)", NULL);

    tt_tensor_release(&big);
    tt_tensor_release(&big2);
    tt_tensor_release(&mask);
    tt_tensor_release(&sq);
    tt_tensor_release(&q);
    tt_tensor_release(&k);
    tt_tensor_release(&a);
    tt_tensor_release(&b);
    tt_tensor_release(&c);
}

/* ===== Gradients =====
   The backward of rearrange and einsum against float64 references: for
   rearrange, where each input element went (the forward applied to the
   elements' own indices); for einsum, a loop over every index
   combination. The loss is sum(out * w), w random. */

/* The gradients of sum(out * w) for list[0..nops) (cloned to leaves that
   require grad): malloc'd floats in got[i]; out's shape in oshape/ondim. */
typedef tt_status (*pattern_fn)(tt_tensor *out, const tt_tensor *const *list, int n, const void *arg);

static tt_status call_einsum(tt_tensor *out, const tt_tensor *const *list, int n, const void *spec)
{
    return tt_einsum(out, spec, list, n);
}

/* Runs f on leaves made from list (views of them when a source is
   strided: the leaf is the strided view itself) and backward with w
   (fresh randn shaped as the output, returned in *w). */
static int backward_of(pattern_fn f, const void *arg, const tt_tensor *const *list, int n, tt_tensor *w,
                       float **got)
{
    tt_tensor leaf[8], out;
    const tt_tensor *lp[8];
    for (int i = 0; i < n; i++) {
        tt_detach(&leaf[i], list[i]);
        tt_requires_grad_(&leaf[i], 1);
        lp[i] = &leaf[i];
    }
    tt_status st = f(&out, lp, n, arg);
    if (st == TT_OK) {
        tt_randn(w, out.ndim, out.shape);
        st = tt_backward(&out, w);
        tt_tensor_release(&out);
    }
    if (st != TT_OK)
        printf("  backward: %s\n", tt_errmsg());
    for (int i = 0; i < n; i++) {
        got[i] = calloc((size_t)tt_numel(list[i]) + 1, sizeof(float));
        if (st == TT_OK && tt_grad(&leaf[i]))
            tt_get_floats(tt_grad(&leaf[i]), got[i]);
        tt_tensor_release(&leaf[i]);
    }
    return st == TT_OK;
}

/* d sum(out * w) / d operand `which`, in float64: every index combination
   adds w[out] times the other operands' product to the element of
   operand `which` it reads (a broadcast length-1 dim reads element 0, so
   it sums; a repeated letter reads the diagonal, so only that gets any). */
static double *ref_einsum_grad(const char *terms, const char *outl, const tt_tensor *const *list, int nops,
                               const tt_tensor *w, int which)
{
    char letters[32], buf[128];
    int64_t size[32];
    int nl = 0, k = 0;
    const char *op_terms[8];
    snprintf(buf, sizeof buf, "%s", terms);
    for (char *t = buf; k < nops; t++) {
        op_terms[k++] = t;
        t = strchr(t, ',');
        if (!t)
            break;
        *t = '\0';
    }
    for (int i = 0; i < nops; i++)
        for (int d = 0; op_terms[i][d]; d++) {
            char c = op_terms[i][d];
            int j = 0;
            while (j < nl && letters[j] != c)
                j++;
            if (j == nl) {
                letters[nl] = c;
                size[nl++] = 1;
            }
            if (list[i]->shape[d] > size[j])
                size[j] = list[i]->shape[d];
        }
    letters[nl] = '\0';
    int64_t total = 1;
    for (int l = 0; l < nl; l++)
        total *= size[l];
    double *ref = calloc((size_t)tt_numel(list[which]) + 1, sizeof *ref);
    int64_t idx[32] = {0}, off[8];
    for (int64_t it = 0; it < total; it++) {
        int64_t r = it;
        for (int l = nl - 1; l >= 0; l--) {
            idx[l] = r % size[l];
            r /= size[l];
        }
        double prod = 1;
        for (int i = 0; i < nops; i++) {
            off[i] = 0;
            for (int d = 0; op_terms[i][d]; d++) {
                int l = (int)(strchr(letters, op_terms[i][d]) - letters);
                off[i] = off[i] * list[i]->shape[d] + (list[i]->shape[d] == 1 ? 0 : idx[l]);
            }
            if (i != which)
                prod *= tt_get(list[i], off[i]);
        }
        int64_t o = 0;
        for (int j = 0; outl[j]; j++) {
            int l = (int)(strchr(letters, outl[j]) - letters);
            o = o * size[l] + idx[l];
        }
        ref[off[which]] += prod * tt_get(w, o);
    }
    return ref;
}

/* The backward of tt_einsum(spec) for every operand against the loop. */
static void einsum_grad_case(const char *spec, const char *terms, const char *outl, int nops, ...)
{
    const tt_tensor *list[8];
    va_list ap;
    va_start(ap, nops);
    for (int i = 0; i < nops; i++)
        list[i] = va_arg(ap, const tt_tensor *);
    va_end(ap);
    float *got[8];
    tt_tensor w = {0};
    char descr[160];
    snprintf(descr, sizeof descr, "einsum backward \"%s\"", spec);
    CHECK(descr, backward_of(call_einsum, spec, list, nops, &w, got));
    for (int i = 0; i < nops; i++) {
        if (w.storage) {
            double *ref = ref_einsum_grad(terms, outl, list, nops, &w, i);
            char d[200];
            snprintf(d, sizeof d, "%s: operand %d", descr, i + 1);
            check_close(d, got[i], ref, (long)tt_numel(list[i]), 1e-4, 1e-4);
            free(ref);
        }
        free(got[i]);
    }
    tt_tensor_release(&w);
}

static void test_einsum_backward(void)
{
    tt_manual_seed(21);
    tt_tensor a = randn(SHAPE(5, 3)), c = randn(SHAPE(3, 7)), bt = randn(SHAPE(3, 4)), b;
    tt_mT(&b, &bt);                                             /* [4,3], strided */
    tt_tensor q = randn(SHAPE(2, 3, 5, 4)), kt = randn(SHAPE(2, 3, 4, 6)), k, v = randn(SHAPE(2, 3, 6, 7));
    tt_mT(&k, &kt);                                             /* [2,3,6,4], strided */
    tt_tensor q1 = randn(SHAPE(2, 1, 5, 4)), k3 = randn(SHAPE(3, 6, 4));
    tt_tensor sq = randn(SHAPE(4, 4)), bsq = randn(SHAPE(3, 4, 4)), u = randn(SHAPE(5)), t7 = randn(SHAPE(7));
    tt_tensor x = randn(SHAPE(2, 5, 3)), y = randn(SHAPE(2, 6, 4)), b1 = randn(SHAPE(1, 3));
    tt_tensor e72 = randn(SHAPE(7, 2)), e23 = randn(SHAPE(2, 3));

    einsum_grad_case("i d, j d -> i j", "id,jd", "ij", 2, &a, &b);
    einsum_grad_case("i j, j k -> k i", "ij,jk", "ki", 2, &a, &c);
    einsum_grad_case("b h i d, b h j d -> b h i j", "bhid,bhjd", "bhij", 2, &q, &k);
    einsum_grad_case("b h i d, b h j d -> b i j", "bhid,bhjd", "bij", 2, &q, &k);       /* h contracted */
    einsum_grad_case("b h i d, b h j d, b h j e -> b h i e", "bhid,bhjd,bhje", "bhie", 3, &q, &k, &v);
    einsum_grad_case("i j, j k, k l, l m -> m i", "ij,jk,kl,lm", "mi", 4, &a, &c, &e72, &e23);
    einsum_grad_case("... i d, ... j d -> ... i j", "XYid,XYjd", "XYij", 2, &q1, &k);   /* length-1 broadcast */
    einsum_grad_case("... i d, ... j d -> ... i j", "XYid,Yjd", "XYij", 2, &q, &k3);    /* '...' of 2 and 1 dims */
    einsum_grad_case("... i, ... i -> i", "Xi,Xi", "i", 2, &a, &b1);
    einsum_grad_case("b i d, b j e -> b i j", "bid,bje", "bij", 2, &x, &y);   /* d, e summed: broadcast back */
    einsum_grad_case("b i d, b j e -> i", "bid,bje", "i", 2, &x, &y);
    einsum_grad_case("i, j -> i j", "i,j", "ij", 2, &u, &t7);                    /* outer */
    einsum_grad_case("i, i ->", "i,i", "", 2, &u, &u);                           /* one tensor twice */
    einsum_grad_case("i i -> i", "ii", "i", 1, &sq);                             /* diagonal */
    einsum_grad_case("i i ->", "ii", "", 1, &sq);                                /* trace */
    einsum_grad_case("b i i -> i b", "bii", "ib", 1, &bsq);
    einsum_grad_case("i j, j j -> i", "ij,jj", "i", 2, &bt, &sq);                 /* a diagonal and a matmul */
    einsum_grad_case("i j -> j i", "ij", "ji", 1, &b);
    einsum_grad_case("i j ->", "ij", "", 1, &b);
    einsum_grad_case("bid,bjd->bij", "bid,bjd", "bij", 2, &x, &x);
    einsum_grad_case("ij,jk", "ij,jk", "ik", 2, &a, &c);                         /* implicit output */

    tt_tensor *all[] = {&a, &c, &bt, &b, &q, &kt, &k, &v, &q1, &k3, &sq, &bsq, &u, &t7, &x, &y, &b1, &e72, &e23};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tt_tensor_release(all[i]);
}

static tt_status call_rearrange(tt_tensor *out, const tt_tensor *const *list, int n, const void *arg)
{
    (void)n;
    const char *const *pat = arg;       /* pattern, sizes */
    return rr(out, list[0], pat[0], pat[1]);
}

/* The gradient of a rearrange: input element e went to some output place
   p (found by rearranging the indices 0..n-1 themselves), so its gradient
   is w[p]. */
static void rearrange_grad_case(const tt_tensor *a, const char *pattern, const char *sizes)
{
    const char *arg[2] = {pattern, sizes};
    const tt_tensor *list[1] = {a};
    float *got;
    tt_tensor w = {0}, ids, where;
    char descr[160];
    snprintf(descr, sizeof descr, "rearrange backward \"%s\"", pattern);
    CHECK(descr, backward_of(call_rearrange, arg, list, 1, &w, &got));
    int64_t n = tt_numel(a);
    tt_arange(&ids, 0, (double)n, 1);
    tt_tensor shaped;
    tt_reshape(&shaped, &ids, a->ndim, a->shape);
    if (w.storage && rr(&where, &shaped, pattern, sizes) == TT_OK) {
        double *ref = calloc((size_t)n + 1, sizeof *ref);
        for (int64_t p = 0; p < n; p++)
            ref[(int64_t)tt_get(&where, p)] = tt_get(&w, p);
        check_close(descr, got, ref, (long)n, 0, 0);
        free(ref);
        tt_tensor_release(&where);
    }
    free(got);
    tt_tensor_release(&ids);
    tt_tensor_release(&shaped);
    tt_tensor_release(&w);
}

static void test_rearrange_backward(void)
{
    tt_manual_seed(22);
    tt_tensor x = randn(SHAPE(2, 5, 12)), xt = randn(SHAPE(2, 12, 5)), s;
    tt_transpose(&s, &xt, 1, 2);                        /* [2,5,12], strided */
    rearrange_grad_case(&x, "b s (h d) -> b h s d", "h=3");
    rearrange_grad_case(&s, "b s (h d) -> b h s d", "h=4");
    rearrange_grad_case(&s, "b s (h d) -> b s d h", "d=2");
    rearrange_grad_case(&x, "b s (h d) -> (b h) (d s)", "h=3");   /* a merge that copies */
    rearrange_grad_case(&s, "b s d -> d b s", NULL);
    rearrange_grad_case(&s, "b s d -> b 1 s () d", NULL);          /* units */
    rearrange_grad_case(&x, "... (h d) -> ... d h", "h=2");        /* ellipsis */
    rearrange_grad_case(&s, "b ... -> (b ...)", NULL);
    tt_tensor one = randn(SHAPE(1, 3, 1));
    rearrange_grad_case(&one, "a b c -> c b a", NULL);             /* length-1 axes left out */
    rearrange_grad_case(&one, "a b 1 -> (a b)", NULL);
    tt_tensor_release(&x);
    tt_tensor_release(&xt);
    tt_tensor_release(&s);
    tt_tensor_release(&one);
}

int main(void)
{
    int64_t mem0 = tt_memory_in_use();
    test_rearrange_split_merge();
    test_rearrange_views();
    test_rearrange_ellipsis_units();
    test_rearrange_trace();
    test_rearrange_errors();
    test_einsum_values();
    test_einsum_more();
    test_einsum_errors();
    test_rearrange_backward();
    test_einsum_backward();
    CHECK("no tensor memory leaked", tt_memory_in_use() == mem0);
    return check_report();
}
