/*
** view.c — the views' header math, untraced: new shapes, strides, offsets
** and names over the same storage (reshape and contiguous copy only when
** the strides leave no choice). core/ops/view.c traces them.
*/
#include <stdio.h>
#include <string.h>

#include "tt_internal.h"

static void shape_args(char *buf, size_t n, int ndim, const int64_t *shape)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < ndim && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? "," : "", (long long)shape[i]);
}

/* Resolves one -1 in shape against numel; checks the count matches. */
static tt_status infer_shape(const char *op, const tt_tensor *a, int ndim, const int64_t *shape,
                             int64_t *res)
{
    char shp[256];
    if (ndim < 0 || ndim > TT_MAX_DIMS)
        return tt__err(TT_EARG, "%s: %d dims requested but at most %d are supported", op, ndim, TT_MAX_DIMS);
    int infer = -1;
    int64_t known = 1, nz = 1;       /* nz: product of the nonzero sizes (bounds the strides) */
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == -1) {
            if (infer >= 0) return tt__err(TT_EARG, "%s: only one size may be -1", op);
            infer = i;
        } else if (shape[i] < 0) {
            return tt__err(TT_EARG, "%s: invalid size %lld at dim %d", op, (long long)shape[i], i + 1);
        } else {
            if (shape[i] && nz > INT64_MAX / 8 / shape[i])
                return tt__err(TT_EARG, "%s: requested shape is too large", op);
            known *= shape[i];
            if (shape[i]) nz *= shape[i];
        }
        res[i] = shape[i];
    }
    int64_t n = tt_numel(a);
    char want[256];
    shape_args(want, sizeof want, ndim, shape);
    if (infer >= 0) {
        if (known == 0 || n % known != 0)
            return tt__err(TT_ESHAPE, "%s: cannot infer -1 in [%s] for %s (%lld elements)", op, want,
                           tt_shape_str(a, shp, sizeof shp), (long long)n);
        res[infer] = n / known;
    } else if (known != n) {
        return tt__err(TT_ESHAPE, "%s: shape [%s] has %lld elements but %s has %lld", op, want,
                       (long long)known, tt_shape_str(a, shp, sizeof shp), (long long)n);
    }
    return TT_OK;
}

/* Strides that let a be seen as shape without copying, or 0 when none
   exist: old dims are grouped into chunks that are contiguous among
   themselves, and each chunk is split across the new dims it covers. */
static int view_strides(const tt_tensor *a, int ndim, const int64_t *shape, int64_t *stride)
{
    int64_t n = tt_numel(a);
    if (n == 0 || a->ndim == 0) {
        tt__contig_strides(ndim, shape, stride);
        return 1;
    }
    int view_d = ndim - 1;
    int64_t chunk_base = a->ndim ? a->stride[a->ndim - 1] : 1;
    int64_t tensor_numel = 1, view_numel = 1;
    for (int d = a->ndim - 1; d >= 0; d--) {
        tensor_numel *= a->shape[d];
        /* a chunk ends where the next outer dim is not contiguous with it */
        if (d == 0 || (a->shape[d - 1] != 1 && a->stride[d - 1] != tensor_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                stride[view_d] = view_numel * chunk_base;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return 0;
            if (d > 0) {
                chunk_base = a->stride[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

/* Names survive where leading or trailing dims are unchanged. */
static void reshape_names(const tt_tensor *a, tt_tensor *out)
{
    const char *names[TT_MAX_DIMS] = {0};
    int i = 0;
    for (; i < a->ndim && i < out->ndim && a->shape[i] == out->shape[i]; i++) names[i] = a->names[i];
    for (int j = 1; j <= a->ndim && j <= out->ndim; j++) {
        int ia = a->ndim - j, io = out->ndim - j;
        if (io < i || a->shape[ia] != out->shape[io]) break;
        names[io] = a->names[ia];
    }
    tt__set_names(out, names);   /* [N=1] viewed as [1,1] would name both dims N */
}

tt_status tt__view(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape, int may_copy)
{
    const char *op = may_copy ? "reshape" : "view";
    int64_t res[TT_MAX_DIMS], stride[TT_MAX_DIMS];
    memset(out, 0, sizeof *out);
    tt_status st = infer_shape(op, a, ndim, shape, res);
    if (st) return st;
    if (view_strides(a, ndim, res, stride)) {
        tt__view_of(out, a);
        out->ndim = ndim;
        memcpy(out->shape, res, (size_t)ndim * sizeof *res);
        memcpy(out->stride, stride, (size_t)ndim * sizeof *stride);
    } else if (!may_copy) {
        char shp[256], want[256], str[128];
        shape_args(want, sizeof want, ndim, res);
        shape_args(str, sizeof str, a->ndim, a->stride);
        return tt__err(TT_ESHAPE, "view: %s with strides (%s) cannot be viewed as [%s] without a copy; "
                       "hint: use x:reshape(...) or x:contiguous():view(...)",
                       tt_shape_str(a, shp, sizeof shp), str, want);
    } else {
        tt_tensor c;
        st = tt__contiguous(&c, a, "contiguous");
        if (st) return st;
        tt__view_of(out, &c);
        tt_tensor_release(&c);
        out->ndim = ndim;
        memcpy(out->shape, res, (size_t)ndim * sizeof *res);
        tt__contig_strides(ndim, res, out->stride);
    }
    reshape_names(a, out);
    return TT_OK;
}

tt_status tt__transpose(tt_tensor *out, const tt_tensor *a, int d1, int d2, const char *op)
{
    memset(out, 0, sizeof *out);
    tt_status st = tt__check_dim(op, a, d1, 0);
    if (st == TT_OK) st = tt__check_dim(op, a, d2, 0);
    if (st) return st;
    tt__view_of(out, a);
    int64_t t;
    t = out->shape[d1]; out->shape[d1] = out->shape[d2]; out->shape[d2] = t;
    t = out->stride[d1]; out->stride[d1] = out->stride[d2]; out->stride[d2] = t;
    const char *n = out->names[d1]; out->names[d1] = out->names[d2]; out->names[d2] = n;
    return TT_OK;
}

tt_status tt__mT(tt_tensor *out, const tt_tensor *a)
{
    if (a->ndim < 2) {
        char shp[256];
        memset(out, 0, sizeof *out);
        return tt__err(TT_EARG, "mT: needs at least 2 dims, got %s", tt_shape_str(a, shp, sizeof shp));
    }
    return tt__transpose(out, a, a->ndim - 2, a->ndim - 1, "mT");
}

/* "2, 1, 3": the first k entries of perm, 1-based (an error's words). */
static void perm_text(char *buf, size_t n, const int *perm, int k)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < k && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%d", i ? ", " : "", perm[i] + 1);
}

tt_status tt__permute(tt_tensor *out, const tt_tensor *a, const int *perm)
{
    int seen[TT_MAX_DIMS] = {0};
    memset(out, 0, sizeof *out);
    for (int i = 0; i < a->ndim; i++) {
        if (perm[i] < 0 || perm[i] >= a->ndim || seen[perm[i]]++) {
            char shp[256], args[64];
            perm_text(args, sizeof args, perm, i + 1);
            return tt__err(TT_EARG, "permute: (%s...) is not a permutation of the %d dims of %s", args,
                           a->ndim, tt_shape_str(a, shp, sizeof shp));
        }
    }
    tt__view_of(out, a);
    for (int i = 0; i < a->ndim; i++) {
        out->shape[i] = a->shape[perm[i]];
        out->stride[i] = a->stride[perm[i]];
        out->names[i] = a->names[perm[i]];
    }
    return TT_OK;
}

tt_status tt__narrow(tt_tensor *out, const tt_tensor *a, int d, int64_t start, int64_t len, const char *op)
{
    memset(out, 0, sizeof *out);
    tt_status st = tt__check_dim(op, a, d, 0);
    if (st) return st;
    if (start < 0 || len < 0 || start > a->shape[d] || len > a->shape[d] - start) {
        char shp[256];
        return tt__err(TT_EARG, "%s: range start %lld, length %lld is outside dim %d of %s (size %lld)",
                       op, (long long)start + 1, (long long)len, d + 1, tt_shape_str(a, shp, sizeof shp),
                       (long long)a->shape[d]);
    }
    tt__view_of(out, a);
    out->offset += start * a->stride[d];
    out->shape[d] = len;
    return TT_OK;
}

tt_status tt__select(tt_tensor *out, const tt_tensor *a, int d, int64_t i)
{
    tt_status st = tt__check_dim("select", a, d, 0);
    memset(out, 0, sizeof *out);
    if (st) return st;
    if (i < 0 || i >= a->shape[d]) {
        char shp[256];
        return tt__err(TT_EARG, "select: index %lld out of range for dim %d of %s (valid 1..%lld)",
                       (long long)i + 1, d + 1, tt_shape_str(a, shp, sizeof shp), (long long)a->shape[d]);
    }
    tt__view_of(out, a);
    out->offset += i * a->stride[d];
    for (int j = d; j < a->ndim - 1; j++) {
        out->shape[j] = a->shape[j + 1];
        out->stride[j] = a->stride[j + 1];
        out->names[j] = a->names[j + 1];
    }
    out->ndim--;
    out->names[out->ndim] = NULL;
    return TT_OK;
}

tt_status tt__expand(tt_tensor *out, const tt_tensor *a, int ndim, const int64_t *shape)
{
    tt_status st = TT_OK;
    char shp[256], want[256];
    memset(out, 0, sizeof *out);
    shape_args(want, sizeof want, ndim > TT_MAX_DIMS ? TT_MAX_DIMS : ndim, shape);
    if (ndim < a->ndim || ndim > TT_MAX_DIMS) {
        st = tt__err(TT_ESHAPE, "expand: cannot expand %s to [%s] (%s)", tt_shape_str(a, shp, sizeof shp), want,
                     ndim > TT_MAX_DIMS ? "too many dims" : "fewer dims than the tensor");
    } else {
        tt_tensor r = *a;
        int lead = ndim - a->ndim;
        for (int i = 0; i < ndim && st == TT_OK; i++) {
            int j = i - lead;
            int64_t cur = j >= 0 ? a->shape[j] : 1;
            int64_t want_i = shape[i] == -1 && j >= 0 ? cur : shape[i];
            if (want_i < 0 || (cur != 1 && cur != want_i)) {
                st = tt__err(TT_ESHAPE, "expand: cannot expand %s to [%s]: dim %d has size %lld, only size-1 "
                             "dims can grow", tt_shape_str(a, shp, sizeof shp), want, i + 1, (long long)cur);
                break;
            }
            r.shape[i] = want_i;
            r.stride[i] = (j < 0 || (cur == 1 && want_i != 1)) ? 0 : a->stride[j];
            r.names[i] = j >= 0 ? a->names[j] : NULL;
        }
        int64_t n;
        if (st == TT_OK) st = tt__numel_checked("expand", ndim, r.shape, &n);   /* no wrapped numel */
        if (st == TT_OK) {
            r.ndim = ndim;
            tt__view_of(out, &r);
        }
    }
    return st;
}

tt_status tt__unsqueeze(tt_tensor *out, const tt_tensor *a, int d)
{
    tt_status st = tt__check_dim("unsqueeze", a, d, 1);
    memset(out, 0, sizeof *out);
    if (st == TT_OK && a->ndim >= TT_MAX_DIMS)
        st = tt__err(TT_EARG, "unsqueeze: a tensor has at most %d dims", TT_MAX_DIMS);
    if (st == TT_OK) {
        tt__view_of(out, a);
        for (int j = a->ndim; j > d; j--) {
            out->shape[j] = a->shape[j - 1];
            out->stride[j] = a->stride[j - 1];
            out->names[j] = a->names[j - 1];
        }
        out->shape[d] = 1;
        out->stride[d] = d < a->ndim ? a->shape[d] * a->stride[d] : 1;
        out->names[d] = NULL;
        out->ndim++;
    }
    return st;
}

tt_status tt__squeeze(tt_tensor *out, const tt_tensor *a, int d)
{
    tt_status st = d >= 0 ? tt__check_dim("squeeze", a, d, 0) : TT_OK;
    memset(out, 0, sizeof *out);
    if (st == TT_OK) {
        tt__view_of(out, a);
        int k = 0;
        for (int j = 0; j < a->ndim; j++) {
            int drop = a->shape[j] == 1 && (d < 0 || j == d);
            if (drop) continue;
            out->shape[k] = a->shape[j];
            out->stride[k] = a->stride[j];
            out->names[k] = a->names[j];
            k++;
        }
        for (int j = k; j < TT_MAX_DIMS; j++) out->names[j] = NULL;
        out->ndim = k;
    }
    return st;
}

tt_status tt__clone(tt_tensor *out, const tt_tensor *a, const char *op)
{
    tt_status st = tt__alloc(out, op, a->dtype, a->ndim, a->shape, a->names);
    if (st == TT_OK) tt__copy(out, a);
    return st;
}

tt_status tt__contiguous(tt_tensor *out, const tt_tensor *a, const char *op)
{
    if (!tt_is_contiguous(a)) return tt__clone(out, a, op);
    tt__view_of(out, a);
    return TT_OK;
}

tt_status tt__named(tt_tensor *out, const tt_tensor *a, const char *const *names)
{
    tt_status st = TT_OK;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < a->ndim && st == TT_OK; i++)
        for (int j = 0; j < i; j++)
            if (names[i] && names[i] == names[j]) {
                st = tt__err(TT_EARG, "named: name '%s' is used for dims %d and %d", names[i], j + 1, i + 1);
                break;
            }
    if (st == TT_OK) {
        tt__view_of(out, a);
        for (int i = 0; i < a->ndim; i++) out->names[i] = names[i];
    }
    return st;
}

tt_status tt__pieces(const char *op, const tt_tensor *a, int d, int64_t piece, int max, int64_t *n)
{
    tt_status st = tt__check_dim(op, a, d, 0);
    if (st) return st;
    int64_t size = a->shape[d];
    *n = size == 0 ? 1 : size / piece + (size % piece != 0);   /* ceil without overflow */
    if (*n > max) return tt__err(TT_EARG, "%s: %lld pieces is more than the %d allowed", op, (long long)*n, max);
    return TT_OK;
}
