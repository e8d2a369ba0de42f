/*
** view.c — the traced view ops: each checks and builds its view through
** core/tensor/view.c and emits one event with its arguments as values.
*/
#include <stdio.h>
#include <string.h>

#include "tt_internal.h"

/* ===== The 0-based habit =====
   PyTorch's q.view(B, N, H, Dh).transpose(1, 2) counts dims from 0; here
   transpose(1, 2) swaps B and N instead of N and H, and every later shape
   still fits. Two patterns that only a 0-based reading explains get a note
   on their trace row:
   - a head split (a view or reshape that splits the last dim in two, into
     4 dims or more) transposed at once at (1, 2);
   - a transpose(1, 2) of 4 dims or more whose result (or its contiguous
     copy) is then viewed or reshaped into sizes that its dims do not group
     into, but would have had dims 2 and 3 been swapped instead (the merge
     of heads after attention).
   Correct code swaps (2, 3) or names the dims, and meets neither. */
static struct {
    uint64_t split;                 /* the last head split's result */
    uint64_t swapped;               /* the last transpose(1, 2)'s result, or its contiguous copy */
    int ndim;
    int64_t before[TT_MAX_DIMS];    /* that transpose's input */
    char note[256];                 /* for the event being left (cut to its note) */
} habit;

/* Whether dst's sizes are products of runs of src's neighbouring sizes
   (size-1 dims aside): a reshape that merges or splits dims, never mixes. */
static int groups_into(int ns, const int64_t *src, int nd, const int64_t *dst)
{
    int i = 0;
    for (int j = 0; j < nd; j++) {
        if (dst[j] == 1) continue;
        int64_t p = 1;
        while (i < ns && (src[i] == 1 || p < dst[j])) {
            if (src[i] == 0) return 1;          /* empty: nothing to mix */
            p *= src[i++];
        }
        if (p != dst[j]) return 0;
    }
    return 1;
}

static void habit_note(const char *what, const int64_t *shape, int ndim)
{
    if (!tt__tracing()) return;
    char sh[96];
    size_t len = 0;
    for (int i = 0; i < ndim && len < sizeof sh; i++)
        len += (size_t)snprintf(sh + len, sizeof sh - len, "%s%lld", i ? "," : "", (long long)shape[i]);
    snprintf(habit.note, sizeof habit.note, "%s [%s]; dims count from 1 here: PyTorch's transpose(1, 2) is "
             "transpose(2, 3)", what, sh);
}

/* After a view or reshape of a into out. */
static void habit_view(const tt_tensor *a, const tt_tensor *out)
{
    if (a->id == habit.swapped && habit.swapped && a->ndim == habit.ndim && a->ndim >= 4) {
        int64_t alt[TT_MAX_DIMS];
        memcpy(alt, habit.before, sizeof alt);
        alt[1] = habit.before[2];
        alt[2] = habit.before[1];
        if (!groups_into(a->ndim, a->shape, out->ndim, out->shape) && groups_into(a->ndim, alt, out->ndim, out->shape))
            habit_note("mixes dims: transpose(1, 2) swapped dims 1 and 2 of", habit.before, habit.ndim);
    }
    int split = out->ndim == a->ndim + 1 && out->ndim >= 4 && out->shape[out->ndim - 1] > 1
                && out->shape[out->ndim - 2] > 1;
    for (int i = 0; split && i < a->ndim - 1; i++) split = a->shape[i] == out->shape[i];
    if (split) habit.split = out->id;
}

/* An integer argument of a view op (tt_arg's key, show and value). */
typedef struct view_arg {
    const char *key, *show;
    int64_t v;
} view_arg;

/* Records the view for gradients (ga: the args its backward needs) and
   emits its event with its arguments (nargs of args; perm: permute's, of
   a's dims) and the habit's note; shared by the view ops below. */
static tt_status leave_view_ag(tt__opscope sc, tt_status st, tt_op op, tt_tensor *out, const tt_tensor *a,
                               int nargs, const view_arg *args, const int *perm, const tt__agargs *ga)
{
    tt_event ev;
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL)) st = tt__record(out, op, a, NULL, NULL, ga);
    if (st == TT_OK) {
        tt__event_init(&ev, op, out, a, NULL, NULL);
        ev.view = out->storage == a->storage;
        for (int i = 0; i < nargs; i++) tt__arg_int(&ev, args[i].key, args[i].show, args[i].v);
        if (perm) tt__arg_dims(&ev, "perm", perm, a->ndim);
        if (habit.note[0]) memcpy(ev.note, habit.note, sizeof ev.note < sizeof habit.note ? sizeof ev.note : sizeof habit.note);
        ev.note[sizeof ev.note - 1] = '\0';
    }
    habit.note[0] = '\0';
    return tt__op_leave(sc, st, &ev);
}

static tt_status leave_view(tt__opscope sc, tt_status st, tt_op op, tt_tensor *out, const tt_tensor *a,
                            int nargs, const view_arg *args)
{
    return leave_view_ag(sc, st, op, out, a, nargs, args, NULL, NULL);
}

tt_status tt_view(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__view(out, a, ndim, shape, 0);
    if (st == TT_OK && sc.outer) habit_view(a, out);
    return leave_view(sc, st, TT_OP_VIEW, out, a, 0, NULL);
}

tt_status tt_reshape(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__view(out, a, ndim, shape, 1);
    if (st == TT_OK && sc.outer) habit_view(a, out);
    return leave_view(sc, st, TT_OP_RESHAPE, out, a, 0, NULL);
}

tt_status tt_transpose(tt_tensor *out, const tt_tensor *a, int d1, int d2)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__transpose(out, a, d1, d2, "transpose");
    if (st == TT_OK && sc.outer && d1 + d2 == 1) {         /* dims 1 and 2 */
        if (a->id == habit.split) habit_note("swaps dims 1 and 2 of the head split", a->shape, a->ndim);
        if (a->ndim >= 4) {
            habit.swapped = out->id;
            habit.ndim = a->ndim;
            memcpy(habit.before, a->shape, sizeof habit.before);
        }
    }
    view_arg args[] = { { "dim1", "%lld", d1 + 1 }, { "dim2", "%lld", d2 + 1 } };
    return leave_view_ag(sc, st, TT_OP_TRANSPOSE, out, a, 2, args, NULL, &(tt__agargs){ .d = d1, .d2 = d2 });
}

tt_status tt_mT(tt_tensor *out, const tt_tensor *a)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__mT(out, a);
    return leave_view(sc, st, TT_OP_MT, out, a, 0, NULL);
}

tt_status tt_permute(tt_tensor *out, const tt_tensor *a, const int *perm)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__permute(out, a, perm);
    tt__agargs ga = {0};
    if (st == TT_OK) memcpy(ga.perm, perm, (size_t)a->ndim * sizeof *perm);
    return leave_view_ag(sc, st, TT_OP_PERMUTE, out, a, 0, NULL, perm, &ga);
}

tt_status tt_narrow(tt_tensor *out, const tt_tensor *a, int d, int64_t start, int64_t len)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__narrow(out, a, d, start, len, "narrow");
    view_arg args[] = { { "dim", "=%lld", d + 1 }, { "start", "=%lld", start + 1 }, { "len", "=%lld", len } };
    return leave_view_ag(sc, st, TT_OP_NARROW, out, a, 3, args, NULL, &(tt__agargs){ .d = d, .start = start, .len = len });
}

tt_status tt_select(tt_tensor *out, const tt_tensor *a, int d, int64_t i)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__select(out, a, d, i);
    view_arg args[] = { { "dim", "=%lld", d + 1 }, { "index", "=%lld", i + 1 } };
    return leave_view_ag(sc, st, TT_OP_SELECT, out, a, 2, args, NULL, &(tt__agargs){ .d = d, .start = i });
}

tt_status tt_expand(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__expand(out, a, ndim, shape);
    return leave_view(sc, st, TT_OP_EXPAND, out, a, 0, NULL);
}

tt_status tt_unsqueeze(tt_tensor *out, const tt_tensor *a, int d)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__unsqueeze(out, a, d);
    view_arg args[] = { { "dim", "=%lld", d + 1 } };
    return leave_view_ag(sc, st, TT_OP_UNSQUEEZE, out, a, 1, args, NULL, &(tt__agargs){ .d = d });
}

tt_status tt_squeeze(tt_tensor *out, const tt_tensor *a, int d)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__squeeze(out, a, d);
    view_arg args[] = { { "dim", "=%lld", d + 1 } };
    return leave_view(sc, st, TT_OP_SQUEEZE, out, a, d >= 0, args);
}

tt_status tt_contiguous(tt_tensor *out, const tt_tensor *a)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__contiguous(out, a, "contiguous");
    if (st == TT_OK && a->id == habit.swapped && habit.swapped) habit.swapped = out->id;
    return leave_view(sc, st, TT_OP_CONTIGUOUS, out, a, 0, NULL);
}

tt_status tt_clone(tt_tensor *out, const tt_tensor *a)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__clone(out, a, "clone");
    return leave_view(sc, st, TT_OP_CLONE, out, a, 0, NULL);
}

tt_status tt_named(tt_tensor *out, const tt_tensor *a, const char *const *names)
{
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__named(out, a, names);
    return leave_view(sc, st, TT_OP_NAMED, out, a, 0, NULL);
}

tt_status tt_flatten(tt_tensor *out, const tt_tensor *a, int start, int end)
{
    memset(out, 0, sizeof *out);
    char sa[256];
    int nd = a->ndim ? a->ndim : 1;     /* a 0-d tensor flattens to [1], as PyTorch */
    if (start < 0 || end >= nd || start > end)
        return tt__err(TT_EARG, "flatten: dims %d..%d are not a range of %s (start <= end, both in 1..%d)",
                       start + 1, end + 1, tt_shape_str(a, sa, sizeof sa), nd);
    int64_t shape[TT_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < a->ndim; i++) {
        if (i <= start || i > end) shape[n++] = a->shape[i];
        else shape[n - 1] *= a->shape[i];
    }
    if (a->ndim == 0) shape[n++] = 1;
    tt__opscope sc = tt__op_enter();
    tt_status st = tt__view(out, a, n, shape, 1);
    view_arg args[] = { { "start", "%lld", start + 1 }, { "end", "%lld", end + 1 } };
    return leave_view(sc, st, TT_OP_FLATTEN, out, a, 2, args);
}

tt_status tt_unbind(tt_tensor *outs, int max, int *count, const tt_tensor *a, int d)
{
    *count = 0;
    tt_status st = tt__check_dim("unbind", a, d, 0);
    if (st) return st;
    int64_t n = a->shape[d];
    if (n > max) return tt__err(TT_EARG, "unbind: %lld pieces is too many", (long long)n);
    for (int64_t i = 0; i < n; i++) {
        tt__opscope sc = tt__op_enter();
        st = tt__select(&outs[i], a, d, i);
        view_arg args[] = { { "piece", "%lld", i + 1 }, { "pieces", " of %lld", n }, { "dim", "=%lld", d + 1 } };
        st = leave_view_ag(sc, st, TT_OP_UNBIND, &outs[i], a, 3, args, NULL, &(tt__agargs){ .d = d, .start = i });
        if (st) {
            for (int64_t j = 0; j < i; j++) tt_tensor_release(&outs[j]);
            return st;
        }
    }
    *count = (int)n;
    return TT_OK;
}

tt_status tt_t(tt_tensor *out, const tt_tensor *a)
{
    memset(out, 0, sizeof *out);
    char sa[256];
    if (a->ndim > 2)
        return tt__err(TT_ESHAPE, "t: expects a tensor with at most 2 dims, got %s; hint: x:mT() swaps the last two, "
                       "x:transpose(d1, d2) any two", tt_shape_str(a, sa, sizeof sa));
    tt__opscope sc = tt__op_enter();
    tt_status st = a->ndim == 2 ? tt__transpose(out, a, 0, 1, "t") : tt__view(out, a, a->ndim, a->shape, 0);
    return leave_view_ag(sc, st, TT_OP_T, out, a, 0, NULL, NULL, &(tt__agargs){ .d = 0, .d2 = 1 });
}

/* Pieces of at most `piece` along d; shared by chunk and split. */
static tt_status pieces(tt_tensor *outs, int max, int *count, const tt_tensor *a, int64_t piece,
                        int d, tt_op op, const char *opname)
{
    *count = 0;
    int64_t n;
    tt_status st = tt__pieces(opname, a, d, piece, max, &n);
    if (st) return st;
    int64_t size = a->shape[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t start = i * piece, len = size - start < piece ? size - start : piece;
        tt__opscope sc = tt__op_enter();
        st = tt__narrow(&outs[i], a, d, start, len, opname);
        view_arg args[] = { { "piece", "%lld", i + 1 }, { "pieces", " of %lld", n }, { "dim", "=%lld", d + 1 } };
        st = leave_view_ag(sc, st, op, &outs[i], a, 3, args, NULL, &(tt__agargs){ .d = d, .start = start, .len = len });
        if (st) {
            for (int64_t j = 0; j < i; j++) tt_tensor_release(&outs[j]);
            return st;
        }
    }
    *count = (int)n;
    return TT_OK;
}

tt_status tt_chunk(tt_tensor *outs, int max, int *count, const tt_tensor *a, int64_t n, int d)
{
    *count = 0;
    if (n <= 0) return tt__err(TT_EARG, "chunk: number of chunks must be positive, got %lld", (long long)n);
    tt_status st = tt__check_dim("chunk", a, d, 0);
    if (st) return st;
    int64_t piece = a->shape[d] / n + (a->shape[d] % n != 0);   /* ceil without overflow */
    return pieces(outs, max, count, a, piece ? piece : 1, d, TT_OP_CHUNK, "chunk");
}

tt_status tt_split(tt_tensor *outs, int max, int *count, const tt_tensor *a, int64_t size, int d)
{
    *count = 0;
    if (size <= 0) return tt__err(TT_EARG, "split: split size must be positive, got %lld", (long long)size);
    return pieces(outs, max, count, a, size, d, TT_OP_SPLIT, "split");
}
