/*
** pattern.c — einops patterns: tt_rearrange and tt_einsum, with their parsers.
** Both are compositions of the public view ops, tt_reduce and tt_matmul, run
** in nested trace scopes, so that a call shows as exactly one trace event.
*/
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tt_internal.h"

/* ===== Tokens =====

   One side of a pattern ("b s (h d)") is a list of groups, one per tensor
   dim: a bare axis, '...', or a parenthesised list of axes. Axes are named
   identifiers, the unit axis '1', or '...'. einsum terms use the same
   tokenizer without groups and units, or one letter per axis (see einsum). */

#define PAT_NAME_MAX 32         /* identifier length + 1 */
#define PAT_MAX_AXES 40         /* tokens on one side */
#define PAT_MAX_GROUPS 16
#define PAT_MAX_ELEM 48         /* elementary axes after '...' expands */

enum { AX_NAMED, AX_UNIT, AX_ELLIPSIS };

typedef struct pat_axis {
    int kind;
    char name[PAT_NAME_MAX];
} pat_axis;

typedef struct pat_group {
    int first, count;           /* axes[first .. first+count) */
    int paren;
} pat_group;

typedef struct pat_side {
    pat_axis axes[PAT_MAX_AXES];
    int naxes;
    pat_group groups[PAT_MAX_GROUPS];
    int ngroups;
    int ellipsis;               /* index in axes[] of '...', or -1 */
    int ellipsis_group;         /* the group holding it, or -1 */
} pat_side;

/* How a side may be written. */
enum {
    PS_GROUPS = 1,              /* '(' ... ')' and '()' allowed */
    PS_UNITS = 2,               /* '1' allowed */
    PS_REPEAT = 4,              /* a name may repeat (einsum diagonals) */
    PS_LETTERS = 8              /* one letter per axis (classic einsum) */
};

/* What error messages name: the op, the pattern and the inputs' shapes. */
typedef struct pat_ctx {
    const char *op;
    const char *text;
    const tt_tensor *const *inputs;
    int ninputs;                /* 0 while parsing: shapes add nothing there */
} pat_ctx;

static tt_status pat_verr(const pat_ctx *c, tt_status st, int shapes, const char *fmt, va_list ap)
{
    char msg[320], tail[200] = "";
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (shapes && c->ninputs > 0) {
        size_t len = (size_t)snprintf(tail, sizeof tail, "; %s ", c->ninputs == 1 ? "input" : "inputs");
        for (int i = 0; i < c->ninputs && len < sizeof tail; i++) {
            char s[128];
            tt_shape_str(c->inputs[i], s, sizeof s);
            len += (size_t)snprintf(tail + len, sizeof tail - len, "%s%s", i ? ", " : "", s);
        }
    }
    return tt__err(st, "%s: \"%.160s\": %s%s", c->op, c->text, msg, tail);
}

/* The message with the inputs' shapes appended ("; input [2,5,512]"). */
static tt_status pat_err(const pat_ctx *c, tt_status st, const char *fmt, ...) TT__PRINTF(3, 4);
static tt_status pat_err(const pat_ctx *c, tt_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st = pat_verr(c, st, 1, fmt, ap);
    va_end(ap);
    return st;
}

/* The message alone, for messages that already show the shapes. */
static tt_status pat_err_bare(const pat_ctx *c, tt_status st, const char *fmt, ...) TT__PRINTF(3, 4);
static tt_status pat_err_bare(const pat_ctx *c, tt_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st = pat_verr(c, st, 0, fmt, ap);
    va_end(ap);
    return st;
}

static int is_ident_start(int ch) { return isalpha(ch) || ch == '_'; }
static int is_ident_char(int ch) { return isalnum(ch) || ch == '_'; }

/* The token [p, p + len) as an axis: '...', '1' (where flags allow it)
   or a name; an error naming it otherwise. */
static tt_status read_axis(const pat_ctx *c, const char *p, int len, const char *where, int flags,
                           const pat_side *side, pat_axis *axp)
{
    pat_axis ax;
    unsigned char ch = (unsigned char)*p;
    if (len == 3 && strncmp(p, "...", 3) == 0) {
        if (side->ellipsis >= 0)
            return pat_err(c, TT_EARG, "'...' appears twice %s", where);
        ax.kind = AX_ELLIPSIS;
        strcpy(ax.name, "...");
    } else if (memchr(p, '.', (size_t)len)) {
        int glued = 0;
        for (int i = 0; i + 3 <= len && !glued; i++) glued = strncmp(p + i, "...", 3) == 0;
        if (glued)
            return pat_err(c, TT_EARG, "'%.*s' %s glues '...' to a name; write them apart, e.g. '... x'",
                           len, p, where);
        return pat_err(c, TT_EARG, "a '.' that is not part of '...' %s, in '%.*s'", where, len, p);
    } else if (isdigit(ch) && !(flags & PS_LETTERS)) {
        if (!(flags & PS_UNITS))
            return pat_err(c, TT_EARG, "'%.*s' %s is not an axis name", len, p, where);
        if (len != 1 || ch != '1')
            return pat_err(c, TT_EARG, "'%.*s' %s is not an axis: only '1' may stand for an "
                           "unnamed axis (of length 1)", len, p, where);
        ax.kind = AX_UNIT;
        strcpy(ax.name, "1");
    } else {
        for (int i = 0; i < len; i++) {
            int good = (flags & PS_LETTERS) ? isalpha((unsigned char)p[i])
                     : i == 0 ? is_ident_start((unsigned char)p[i]) : is_ident_char((unsigned char)p[i]);
            if (!good) {
                if (len == 1)
                    return pat_err(c, TT_EARG, "unexpected character '%c' %s", p[i], where);
                return pat_err(c, TT_EARG, "unexpected character '%c' %s, in '%.*s'", p[i], where, len, p);
            }
        }
        if (p[0] == '_' || p[len - 1] == '_')
            return pat_err(c, TT_EARG, "axis name '%.*s' %s starts or ends with '_', which einops "
                           "does not allow", len, p, where);
        if (len >= PAT_NAME_MAX)
            return pat_err(c, TT_EARG, "axis name '%.*s...' %s is too long (at most %d characters)",
                           PAT_NAME_MAX - 1, p, where, PAT_NAME_MAX - 1);
        ax.kind = AX_NAMED;
        memcpy(ax.name, p, (size_t)len);
        ax.name[len] = '\0';
    }
    *axp = ax;
    return TT_OK;
}

/* Parses [s, end) into side; `where` ("on the left", "in operand 2", ...) names it in
   errors. */
static tt_status parse_side(const pat_ctx *c, const char *s, const char *end,
                            const char *where, int flags, pat_side *side)
{
    side->naxes = side->ngroups = 0;
    side->ellipsis = side->ellipsis_group = -1;
    int open = -1;              /* group being filled, or -1 */
    const char *p = s;
    while (p < end) {
        unsigned char ch = (unsigned char)*p;
        if (isspace(ch)) {
            p++;
            continue;
        }
        if (ch == '(' || ch == ')') {
            if (!(flags & PS_GROUPS))
                return pat_err(c, TT_EARG, "parentheses are not allowed in %s (use tt.rearrange to "
                               "split or merge axes)", c->op);
            if (ch == '(') {
                if (open >= 0)
                    return pat_err(c, TT_EARG, "nested parentheses %s", where);
                if (side->ngroups == PAT_MAX_GROUPS)
                    return pat_err(c, TT_EARG, "too many axes %s", where);
                open = side->ngroups++;
                side->groups[open] = (pat_group){side->naxes, 0, 1};
            } else {
                if (open < 0)
                    return pat_err(c, TT_EARG, "unbalanced parentheses %s: ')' without '('", where);
                open = -1;
            }
            p++;
            continue;
        }
        pat_axis ax;
        /* einops' grammar: a token runs to the next space or parenthesis and
           is '...', '1' (where allowed) or an identifier that neither starts
           nor ends with '_'. The classic spec ("bid,bjd->bij") reads one
           letter at a time, with '...' glued to them as NumPy allows. */
        const char *q = p;
        if (flags & PS_LETTERS) q = *p == '.' ? p + 3 : p + 1;
        else while (q < end && !isspace((unsigned char)*q) && *q != '(' && *q != ')') q++;
        if (q > end) q = end;
        int len = (int)(q - p);
        tt_status st = read_axis(c, p, len, where, flags, side, &ax);
        if (st != TT_OK)
            return st;
        p = q;
        if (side->naxes == PAT_MAX_AXES)
            return pat_err(c, TT_EARG, "too many axes %s", where);
        if (ax.kind == AX_NAMED && !(flags & PS_REPEAT))
            for (int i = 0; i < side->naxes; i++)
                if (side->axes[i].kind == AX_NAMED && strcmp(side->axes[i].name, ax.name) == 0)
                    return pat_err(c, TT_EARG, "axis '%s' appears twice %s", ax.name, where);
        int g = open;
        if (g >= 0) {
            side->groups[g].count++;
        } else {
            if (side->ngroups == PAT_MAX_GROUPS)
                return pat_err(c, TT_EARG, "too many axes %s", where);
            g = side->ngroups++;
            side->groups[g] = (pat_group){side->naxes, 1, 0};
        }
        if (ax.kind == AX_ELLIPSIS) {
            side->ellipsis = side->naxes;
            side->ellipsis_group = g;
        }
        side->axes[side->naxes++] = ax;
    }
    if (open >= 0)
        return pat_err(c, TT_EARG, "unbalanced parentheses %s: '(' without ')'", where);
    return TT_OK;
}

/* Index of the named axis `name` in side, or -1. */
static int side_find(const pat_side *side, const char *name)
{
    for (int i = 0; i < side->naxes; i++)
        if (side->axes[i].kind == AX_NAMED && strcmp(side->axes[i].name, name) == 0)
            return i;
    return -1;
}

/* The group as written: "h", "(h d)", "()". */
static const char *group_text(const pat_side *side, int g, char *buf, size_t n)
{
    const pat_group *gr = &side->groups[g];
    size_t len = 0;
    buf[0] = '\0';
    if (gr->paren)
        len += (size_t)snprintf(buf + len, n - len, "(");
    for (int i = 0; i < gr->count && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? " " : "", side->axes[gr->first + i].name);
    if (gr->paren && len < n)
        snprintf(buf + len, n - len, ")");
    return buf;
}

/* a*b, saturating at INT64_MAX (a, b >= 0): an impossible product then
   fails the length checks instead of wrapping around. */
static int64_t mul_sat(int64_t a, int64_t b)
{
    if (a != 0 && b > INT64_MAX / a)
        return INT64_MAX;
    return a * b;
}

/* Replaces *t by *next (the result of a step on it). */
static void step(tt_tensor *t, tt_tensor *next)
{
    tt_tensor_release(t);
    *t = *next;
    next->storage = NULL;
}

static int is_identity(const int *perm, int n)
{
    for (int i = 0; i < n; i++)
        if (perm[i] != i)
            return 0;
    return 1;
}

/* The pattern, reduce's reduction (NULL for the others) and the sizes as
   the Lua call takes them: shown '"pattern", h=8, w=3', cut with "..."
   when long. The sizes come in the order of order[] (their axes' order in
   the pattern, not the caller's: a Lua table has none). */
static void event_args(tt_event *ev, const char *pattern, const char *reduction, int nsizes, const int *order,
                       const char *const *names, const int64_t *sizes)
{
    tt__arg_str(ev, "pattern", reduction ? "\"%.160s\"" : "\"%.200s\"", pattern);
    if (reduction) tt__arg_str(ev, "reduction", "\"%s\"", reduction);
    for (int i = 0; i < nsizes; i++)
        tt__arg_size(ev, names[order ? order[i] : i], sizes[order ? order[i] : i]);
    ev->pattern = pattern;
}

/* ===== rearrange =====

   "b s (h d) -> b h s d", {h = 8}:
     1. reshape the input into its elementary axes [b, s, h, d] (splitting a
        dim is always a view; unit axes are dropped),
     2. permute them into the right side's order [b, h, s, d] (a view),
     3. reshape into the right side's grouping (a copy only when the
        strides do not allow the merge, e.g. "b h s d -> b s (h d)").
   Elementary axes that come from one input dim and stay neighbours are kept
   together, and those of length 1 are left out: that changes nothing but
   the number of dims the intermediate needs (at most TT_MAX_DIMS).

   Output dim names: a bare axis is named by its identifier ("h"); a
   composed group by its members joined with '*' ("h*d", so a trace row reads
   [b=2,s=5,h*d=512]: the length is h times d, and the name has no spaces);
   dims matched by '...' keep the input's names; '1' and '()' are unnamed. */

typedef struct elem_axis {
    int64_t size;
    int dim;                    /* the input dim it comes from */
    const char *name;           /* for '...' dims: the input dim's name */
} elem_axis;

/* Name of right group g ("h", "h*d", an input name for '...', or NULL). */
static const char *group_name(const pat_side *R, int g, const elem_axis *elem, int ell_elem, int E)
{
    const pat_group *gr = &R->groups[g];
    char buf[160];
    size_t len = 0;
    int members = 0;
    buf[0] = '\0';
    for (int i = 0; i < gr->count; i++) {
        const pat_axis *ax = &R->axes[gr->first + i];
        if (ax->kind == AX_UNIT)
            continue;
        int n = ax->kind == AX_ELLIPSIS ? E : 1;
        for (int k = 0; k < n; k++) {
            const char *nm = ax->kind == AX_ELLIPSIS ? elem[ell_elem + k].name : ax->name;
            if (!nm)
                return NULL;    /* an unnamed input dim inside: no name */
            len += (size_t)snprintf(buf + len, len < sizeof buf ? sizeof buf - len : 0, "%s%s",
                                    members ? "*" : "", nm);
            members++;
        }
    }
    if (members == 0 || len >= sizeof buf)
        return NULL;
    return tt_intern(buf);
}

/* What rearrange works out from the pattern, step by step. */
typedef struct ra_plan {
    pat_side L, R;
    int E;                      /* dims under '...' */
    int given[PAT_MAX_AXES];    /* per left axis: index into sizes, or -1 */
    elem_axis elem[PAT_MAX_ELEM];
    int nelem;
    int elem_of[PAT_MAX_AXES];  /* per left axis: its first elementary axis, -1 for units */
    int order[PAT_MAX_ELEM], norder;   /* the right side's order of the elementary axes */
    int64_t oshape[TT_MAX_DIMS];
    const char *onames[TT_MAX_DIMS];
    int ondim;
} ra_plan;

/* The two sides of the pattern, '...' on both or neither. */
static tt_status ra_parse(pat_ctx *c, const char *pattern, ra_plan *p)
{
    const char *arrow = strstr(pattern, "->");
    if (!arrow)
        return pat_err(c, TT_EARG, "no '->' in the pattern");
    if (strstr(arrow + 2, "->"))
        return pat_err(c, TT_EARG, "'->' appears twice");
    tt_status st = parse_side(c, pattern, arrow, "on the left", PS_GROUPS | PS_UNITS, &p->L);
    if (st == TT_OK)
        st = parse_side(c, arrow + 2, arrow + strlen(arrow), "on the right", PS_GROUPS | PS_UNITS, &p->R);
    if (st != TT_OK)
        return st;
    if ((p->L.ellipsis >= 0) != (p->R.ellipsis >= 0))
        return pat_err(c, TT_EARG, "'...' is on the %s but not on the %s",
                       p->L.ellipsis >= 0 ? "left" : "right", p->L.ellipsis >= 0 ? "right" : "left");
    if (p->L.ellipsis >= 0 && p->L.groups[p->L.ellipsis_group].paren)
        return pat_err(c, TT_EARG, "'...' inside parentheses on the left: its dims cannot be split");
    return TT_OK;
}

/* The input's rank against the left side; every axis on both sides; the
   sizes given, each for an axis of the pattern (size_order: their indices
   in the order their axes appear on the left). */
static tt_status ra_check(pat_ctx *c, const tt_tensor *a, int nsizes, const char *const *size_names,
                          const int64_t *sizes, int *size_order, ra_plan *p)
{
    const pat_side *L = &p->L, *R = &p->R;
    char ashape[160];
    tt_shape_str(a, ashape, sizeof ashape);
    int fixed = L->ngroups - (L->ellipsis >= 0);
    if (L->ellipsis >= 0 ? a->ndim < fixed : a->ndim != fixed)
        return pat_err_bare(c, TT_ESHAPE, "pattern has %d ax%s%s on the left but the input %s has %d dim%s",
                            fixed, fixed == 1 ? "is" : "es", L->ellipsis >= 0 ? " besides '...'" : "", ashape,
                            a->ndim, a->ndim == 1 ? "" : "s");
    p->E = L->ellipsis >= 0 ? a->ndim - fixed : 0;
    for (int i = 0; i < R->naxes; i++)
        if (R->axes[i].kind == AX_NAMED && side_find(L, R->axes[i].name) < 0)
            return pat_err(c, TT_EARG, "axis '%s' is missing on the left (rearrange cannot create axes "
                           "other than '1' or '()')", R->axes[i].name);
    for (int i = 0; i < L->naxes; i++)
        if (L->axes[i].kind == AX_NAMED && side_find(R, L->axes[i].name) < 0)
            return pat_err(c, TT_EARG, "axis '%s' is missing on the right (rearrange never drops an axis: "
                           "reduce or select it first)", L->axes[i].name);
    for (int i = 0; i < L->naxes; i++)
        p->given[i] = -1;
    for (int j = 0; j < nsizes; j++) {
        if (!size_names || !size_names[j] || !sizes)
            return pat_err(c, TT_EARG, "size %d has no name", j + 1);
        int i = side_find(L, size_names[j]);
        if (i < 0)
            return pat_err(c, TT_EARG, "a size is given for '%s', which is not in the pattern", size_names[j]);
        if (p->given[i] >= 0)
            return pat_err(c, TT_EARG, "the size of '%s' is given twice", size_names[j]);
        if (sizes[j] < 0)
            return pat_err(c, TT_EARG, "size %s=%lld is negative", size_names[j], (long long)sizes[j]);
        p->given[i] = j;
    }
    for (int i = 0, k = 0; i < L->naxes; i++)
        if (p->given[i] >= 0)
            size_order[k++] = p->given[i];
    return TT_OK;
}

/* Left group g, input dim d of length len, as elementary axes: the sizes
   given, and at most one inferred. */
static tt_status ra_group(pat_ctx *c, int g, int d, int64_t len, const int64_t *sizes, ra_plan *p)
{
    const pat_side *L = &p->L;
    const pat_group *gr = &L->groups[g];
    char gtext[128], known_text[160] = "";
    group_text(L, g, gtext, sizeof gtext);
    int64_t known = 1;
    int unknown = -1, nunknown = 0;
    size_t ktl = 0;
    for (int i = gr->first; i < gr->first + gr->count; i++) {
        if (L->axes[i].kind == AX_UNIT)
            continue;
        if (p->given[i] >= 0) {
            known = mul_sat(known, sizes[p->given[i]]);
            if (ktl < sizeof known_text)
                ktl += (size_t)snprintf(known_text + ktl, sizeof known_text - ktl, "%s%s=%lld",
                                        ktl ? " x " : "", L->axes[i].name, (long long)sizes[p->given[i]]);
        } else {
            if (nunknown++ == 1)
                return pat_err(c, TT_EARG, "cannot infer both '%s' and '%s' in '%s' of length %lld: "
                               "give one of them in the sizes", L->axes[unknown].name, L->axes[i].name,
                               gtext, (long long)len);
            unknown = i;
        }
    }
    if (nunknown == 0 && known != len) {
        if (gr->count == 1 && L->axes[gr->first].kind == AX_NAMED)
            return pat_err(c, TT_ESHAPE, "axis '%s' has length %lld but %s was given",
                           gtext, (long long)len, known_text);
        if (ktl == 0)
            return pat_err(c, TT_ESHAPE, "axis '%s' has length %lld; a unit axis needs length 1",
                           gtext, (long long)len);
        return pat_err(c, TT_ESHAPE, "axis '%s' has length %lld but %s make %lld",
                       gtext, (long long)len, known_text, (long long)known);
    }
    if (nunknown == 1 && (known == 0 ? len != 0 : len % known != 0))
        return pat_err(c, TT_ESHAPE, "cannot split axis '%s' of length %lld into %s groups "
                       "(%lld is not a multiple of %lld)", gtext, (long long)len, known_text,
                       (long long)len, (long long)known);
    if (nunknown == 1 && known == 0)
        return pat_err(c, TT_ESHAPE, "cannot infer '%s' in '%s' of length 0 when %s",
                       L->axes[unknown].name, gtext, known_text);
    for (int i = gr->first; i < gr->first + gr->count; i++) {
        p->elem_of[i] = -1;
        if (L->axes[i].kind == AX_UNIT)
            continue;
        if (p->nelem == PAT_MAX_ELEM)
            return pat_err(c, TT_ESHAPE, "too many axes");
        p->elem_of[i] = p->nelem;
        p->elem[p->nelem++] = (elem_axis){i == unknown ? len / known : sizes[p->given[i]], d, NULL};
    }
    return TT_OK;
}

/* 1. elementary axes: sizes of each left group, inferring at most one */
static tt_status ra_elements(pat_ctx *c, const tt_tensor *a, const int64_t *sizes, ra_plan *p)
{
    const pat_side *L = &p->L;
    p->nelem = 0;
    for (int g = 0, d = 0; g < L->ngroups; g++) {
        if (g == L->ellipsis_group) {
            if (p->nelem + p->E > PAT_MAX_ELEM)
                return pat_err(c, TT_ESHAPE, "too many axes");
            p->elem_of[L->groups[g].first] = p->nelem;
            for (int k = 0; k < p->E; k++, d++)
                p->elem[p->nelem++] = (elem_axis){a->shape[d], d, a->names[d]};
            continue;
        }
        tt_status st = ra_group(c, g, d, a->shape[d], sizes, p);
        if (st != TT_OK)
            return st;
        d++;
    }
    return TT_OK;
}

/* 2. the right side's order of the elementary axes, and its grouping */
static tt_status ra_right(pat_ctx *c, ra_plan *p)
{
    const pat_side *L = &p->L, *R = &p->R;
    int E = p->E, ell_elem = L->ellipsis >= 0 ? p->elem_of[L->ellipsis] : 0;
    p->norder = p->ondim = 0;
    for (int g = 0; g < R->ngroups; g++) {
        const pat_group *gr = &R->groups[g];
        int top_ellipsis = (g == R->ellipsis_group && !gr->paren);
        int ndims = top_ellipsis ? E : 1;
        if (p->ondim + ndims > TT_MAX_DIMS)
            return pat_err(c, TT_ESHAPE, "the result would have more than %d dims", TT_MAX_DIMS);
        int64_t len = 1;
        for (int i = gr->first; i < gr->first + gr->count; i++) {
            const pat_axis *ax = &R->axes[i];
            if (ax->kind == AX_UNIT)
                continue;
            int first = ax->kind == AX_ELLIPSIS ? ell_elem : p->elem_of[side_find(L, ax->name)];
            int n = ax->kind == AX_ELLIPSIS ? E : 1;
            for (int k = 0; k < n; k++) {
                p->order[p->norder++] = first + k;
                len = mul_sat(len, p->elem[first + k].size);
            }
        }
        if (top_ellipsis) {
            for (int k = 0; k < E; k++) {
                p->oshape[p->ondim] = p->elem[ell_elem + k].size;
                p->onames[p->ondim++] = p->elem[ell_elem + k].name;
            }
        } else {
            p->oshape[p->ondim] = len;
            p->onames[p->ondim++] = group_name(R, g, p->elem, ell_elem, E);
        }
    }
    return TT_OK;
}

/* blocks: runs of elementary axes of one input dim that stay neighbours
   (splitting a block again in step 3 is always a view). Axes of length 1
   go: where they sit changes no element's place. bshape: the blocks in
   the input's order; perm: where each block of the right's order is. */
static tt_status ra_blocks(pat_ctx *c, ra_plan *p, int64_t *bshape, int *perm, int *nblock)
{
    const elem_axis *elem = p->elem;
    int *order = p->order, j2 = 0, nb = 0;
    for (int j = 0; j < p->norder; j++)
        if (elem[order[j]].size != 1)
            order[j2++] = order[j];
    p->norder = j2;
    int block_first[PAT_MAX_ELEM];       /* in right order: index into order[] */
    for (int j = 0; j < p->norder; j++)
        if (!(j > 0 && order[j] == order[j - 1] + 1 && elem[order[j]].dim == elem[order[j - 1]].dim))
            block_first[nb++] = j;
    if (nb > TT_MAX_DIMS)
        return pat_err(c, TT_ESHAPE, "the pattern needs %d separate axes at once (at most %d)",
                       nb, TT_MAX_DIMS);
    for (int b = 0; b < nb; b++) {       /* each block's rank in the input's order */
        int rank = 0;
        for (int b2 = 0; b2 < nb; b2++)
            rank += order[block_first[b2]] < order[block_first[b]];
        int end = b + 1 < nb ? block_first[b + 1] : p->norder;
        int64_t size = 1;
        for (int j = block_first[b]; j < end; j++)
            size = mul_sat(size, elem[order[j]].size);
        bshape[rank] = size;
        perm[b] = rank;
    }
    *nblock = nb;
    return TT_OK;
}

/* *out = a rearranged; size_order gets the sizes' indices in the order
   their axes appear on the left, ga the blocks and their permutation (for
   the backward). */
static tt_status rearrange_impl(tt_tensor *out, const tt_tensor *a, const char *pattern, int nsizes,
                                const char *const *size_names, const int64_t *sizes, int *size_order,
                                tt__agargs *ga)
{
    pat_ctx c = {"rearrange", pattern, NULL, 0};
    ra_plan plan, *p = &plan;
    int64_t bshape[TT_MAX_DIMS];
    int perm[TT_MAX_DIMS], nblock = 0;
    tt_status st = ra_parse(&c, pattern, p);
    if (st == TT_OK) {
        c.inputs = &a;
        c.ninputs = 1;
        st = ra_check(&c, a, nsizes, size_names, sizes, size_order, p);
    }
    if (st == TT_OK) st = ra_elements(&c, a, sizes, p);
    if (st == TT_OK) st = ra_right(&c, p);
    if (st == TT_OK) st = ra_blocks(&c, p, bshape, perm, &nblock);
    tt_tensor t = {0}, u = {0};
    if (st == TT_OK) {      /* 3. reshape into the blocks, permute them, reshape to the result */
        ga->d = nblock;
        memcpy(ga->blocks, bshape, (size_t)nblock * sizeof *bshape);
        memcpy(ga->perm, perm, (size_t)nblock * sizeof *perm);
        st = tt_reshape(&t, a, nblock, bshape);
    }
    if (st == TT_OK && !is_identity(perm, nblock)) {
        st = tt_permute(&u, &t, perm);
        step(&t, &u);
    }
    int same = st == TT_OK && t.ndim == p->ondim;
    for (int i = 0; same && i < p->ondim; i++)
        same = t.shape[i] == p->oshape[i];
    if (st == TT_OK && !same) {
        st = tt_reshape(&u, &t, p->ondim, p->oshape);
        step(&t, &u);
    }
    if (st == TT_OK) {
        tt__set_names(&t, p->onames);
        *out = t;
    } else tt_tensor_release(&t);
    return st;
}

tt_status tt_rearrange(tt_tensor *out, const tt_tensor *a, const char *pattern,
                       int nsizes, const char *const *size_names, const int64_t *sizes)
{
    memset(out, 0, sizeof *out);
    if (!a || !a->storage || !pattern)
        return tt__err(TT_EARG, "rearrange: needs a tensor and a pattern");
    if (nsizes < 0 || (nsizes > 0 && (!size_names || !sizes)))
        return tt__err(TT_EARG, "rearrange: bad sizes");
    if (nsizes > PAT_MAX_AXES)
        return tt__err(TT_EARG, "rearrange: \"%.160s\": %d sizes for at most %d axes", pattern, nsizes,
                       PAT_MAX_AXES);
    int size_order[PAT_MAX_AXES];
    tt__opscope sc = tt__op_enter();
    tt__agargs ga = {0};
    tt_status st = rearrange_impl(out, a, pattern, nsizes, size_names, sizes, size_order, &ga);
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL)) st = tt__record(out, TT_OP_REARRANGE, a, NULL, NULL, &ga);
    tt_event ev;
    tt__event_init(&ev, TT_OP_REARRANGE, out, a, NULL, NULL);
    if (st == TT_OK) {
        ev.view = out->storage == a->storage;
        event_args(&ev, pattern, NULL, nsizes, size_order, size_names, sizes);
    }
    return tt__op_leave(sc, st, &ev);
}

/* ===== reduce and repeat =====

   einops' other two verbs, built on rearrange:
   reduce "L -> R", op: the axes of L missing on R are reduced.
     1. rearrange "L -> E r1 .. rk": E the axes of R in R's order (each its
        own dim), then the reduced axes, each its own dim (so every axis's
        length can be read off),
     2. the reduced dims merged into one (a reshape) and reduced with op,
     3. rearrange "E -> R" (groups and units of R).
   repeat "L -> R", {c = 3}: the axes of R missing on L are new, of the
   lengths given.
     1. rearrange "L -> E": the axes of L in R's order,
     2. a length-1 dim at each new axis, expanded to its length (a view),
     3. rearrange "E' -> R" (E' every axis of R in order): a copy where a
        repeated axis is merged with others.
   '...' must be on both sides or neither. Each one's gradient is the other
   (sum's is a repeat, repeat's a sum), read from the reversed pattern with
   every axis's length: the node keeps "R -> L\na=2 b=3 ..." as its spec. */

typedef struct pat_sizes {
    int n;
    const char *names[PAT_MAX_AXES];     /* interned */
    int64_t sizes[PAT_MAX_AXES];
} pat_sizes;

/* Appends the text of s to buf (with a space first when not empty). */
static void put(char *buf, size_t cap, const char *s)
{
    size_t len = strlen(buf);
    if (len + strlen(s) + 2 < cap) snprintf(buf + len, cap - len, "%s%s", len ? " " : "", s);
}

/* A failure inside a step, renamed: "rearrange: "<intermediate>": why" becomes
   "<op>: "<the script's pattern>": why". */
static tt_status step_err(const pat_ctx *c, tt_status st)
{
    char why[512];
    const char *m = tt_errmsg(), *q = strstr(m, "\": ");
    snprintf(why, sizeof why, "%s", q ? q + 3 : m);
    return tt__err(st, "%s: \"%.160s\": %s", c->op, c->text, why);
}

/* The two sides of text, checked for the verb: reduce wants R's named axes on
   L, repeat L's on R; '...' on both sides or neither. */
static tt_status verb_sides(const pat_ctx *c, const char *text, pat_side *L, pat_side *R, int is_repeat)
{
    const char *arrow = strstr(text, "->");
    if (!arrow) return pat_err(c, TT_EARG, "no '->' in the pattern");
    if (strstr(arrow + 2, "->")) return pat_err(c, TT_EARG, "'->' appears twice");
    tt_status st = parse_side(c, text, arrow, "on the left", PS_GROUPS | PS_UNITS, L);
    if (st == TT_OK) st = parse_side(c, arrow + 2, arrow + strlen(arrow), "on the right", PS_GROUPS | PS_UNITS, R);
    if (st) return st;
    if ((L->ellipsis >= 0) != (R->ellipsis >= 0))
        return pat_err(c, TT_EARG, "'...' is on the %s but not on the %s (%s)", L->ellipsis >= 0 ? "left" : "right",
                       L->ellipsis >= 0 ? "right" : "left",
                       is_repeat ? "repeat names every new axis" : "reduce names the axes it reduces");
    const pat_side *from = is_repeat ? L : R, *to = is_repeat ? R : L;
    for (int i = 0; i < from->naxes; i++)
        if (from->axes[i].kind == AX_NAMED && side_find(to, from->axes[i].name) < 0)
            return pat_err(c, TT_EARG, is_repeat ? "axis '%s' is missing on the right (repeat never drops an axis; "
                                                   "hint: tt.reduce removes axes)"
                                                 : "axis '%s' is missing on the left (reduce never makes an axis; "
                                                   "hint: tt.repeat makes new axes)", from->axes[i].name);
    return TT_OK;
}

/* The sizes the script gave for axes of side s (rearrange takes no others). */
static void sizes_on(const pat_side *s, int n, const char *const *names, const int64_t *sizes, pat_sizes *out)
{
    out->n = 0;
    for (int j = 0; j < n; j++)
        if (side_find(s, names[j]) >= 0) {
            out->names[out->n] = names[j];
            out->sizes[out->n++] = sizes[j];
        }
}

/* "R -> L\na=2 b=3": the reversed pattern and every named axis's length */
static const char *reversed_spec(const char *text, const pat_sizes *all)
{
    const char *arrow = strstr(text, "->");
    char buf[1024];
    size_t len = (size_t)snprintf(buf, sizeof buf, "%s -> %.*s\n", arrow + 2, (int)(arrow - text), text);
    for (int i = 0; i < all->n && len < sizeof buf; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s=%lld", i ? " " : "", all->names[i],
                                (long long)all->sizes[i]);
    return len < sizeof buf ? tt_intern(buf) : NULL;
}

/* The reversed spec back into its pattern (in buf) and sizes. */
static tt_status read_spec(const char *spec, char *buf, size_t cap, pat_sizes *sz)
{
    const char *nl = strrchr(spec, '\n');     /* the last: a pattern may hold newlines (a [[long string]]) */
    if (!nl || (size_t)(nl - spec) >= cap) return tt__err(TT_EARG, "backward: bad einops spec");
    memcpy(buf, spec, (size_t)(nl - spec));
    buf[nl - spec] = '\0';
    sz->n = 0;
    for (const char *p = nl + 1; *p && sz->n < PAT_MAX_AXES;) {
        char name[PAT_NAME_MAX];
        long long v;
        int used;
        if (sscanf(p, " %31[^=]=%lld%n", name, &v, &used) != 2) break;
        sz->names[sz->n] = tt_intern(name);
        sz->sizes[sz->n++] = v;
        p += used;
    }
    return TT_OK;
}

static const char *const REDUCTIONS[] = {"sum", "mean", "max", "min", "any", "all", NULL};
static const tt_op REDUCTION_OPS[] = {TT_OP_SUM, TT_OP_MEAN, TT_OP_MAX, TT_OP_MIN, TT_OP_ANY, TT_OP_ALL};

static tt_status reduce_impl_pattern(tt_tensor *out, const tt_tensor *a, const char *text, tt_op red,
                                     int nsizes, const char *const *names, const int64_t *sizes,
                                     pat_sizes *all)
{
    pat_ctx c = {"reduce", text, &a, 1};
    pat_side L, R;
    tt_status st = verb_sides(&c, text, &L, &R, 0);
    if (st) return st;
    char p1[1024] = "", p3[1024] = "", e[512] = "";
    int k = 0, named = 0;
    for (int i = 0; i < R.naxes; i++)
        if (R.axes[i].kind != AX_UNIT) {
            put(e, sizeof e, R.axes[i].name);
            named += R.axes[i].kind == AX_NAMED;
        }
    snprintf(p1, sizeof p1, "%.*s -> %s", (int)(strstr(text, "->") - text), text, e);
    for (int i = 0; i < L.naxes; i++)
        if (L.axes[i].kind == AX_NAMED && side_find(&R, L.axes[i].name) < 0) {
            put(p1, sizeof p1, L.axes[i].name);
            k++;
        }
    snprintf(p3, sizeof p3, "%s -> %s", e, strstr(text, "->") + 2);
    pat_sizes given;
    sizes_on(&L, nsizes, names, sizes, &given);
    int order[PAT_MAX_AXES];
    tt__agargs ga = {0};
    tt_tensor t = {0}, u = {0};
    st = rearrange_impl(&t, a, p1, given.n, given.names, given.sizes, order, &ga);
    if (st) return step_err(&c, st);
    /* every named axis's length, from the dims of step 1 */
    int E = t.ndim - named - k, d = 0;
    all->n = 0;
    for (int i = 0; i < R.naxes; i++) {
        if (R.axes[i].kind == AX_ELLIPSIS) d += E;
        else if (R.axes[i].kind == AX_NAMED) {
            all->names[all->n] = tt_intern(R.axes[i].name);
            all->sizes[all->n++] = t.shape[d++];
        }
    }
    int64_t merged[TT_MAX_DIMS], K = 1;
    for (int i = 0; i < L.naxes; i++)
        if (L.axes[i].kind == AX_NAMED && side_find(&R, L.axes[i].name) < 0) {
            all->names[all->n] = tt_intern(L.axes[i].name);
            all->sizes[all->n++] = t.shape[d];
            K *= t.shape[d++];
        }
    /* no axis reduced ("a b -> b a"): a rearrange, whose any/all is each
       element's truth (the merge below would add a 9th dim to an 8-dim t) */
    if (k == 0) {
        if ((red == TT_OP_ANY || red == TT_OP_ALL) && (st = tt_to_dtype(&u, &t, TT_BOOL)) == TT_OK) step(&t, &u);
        if (st) st = step_err(&c, st);
    }
    if (k > 0) {
        memcpy(merged, t.shape, (size_t)(t.ndim - k) * sizeof *merged);
        merged[t.ndim - k] = K;
        if ((st = tt_reshape(&u, &t, t.ndim - k + 1, merged)) == TT_OK) step(&t, &u);
    }
    int last = t.ndim - 1;
    if (st == TT_OK && k > 0) {
        st = red == TT_OP_ANY ? tt_any(&u, &t, last, 0) : red == TT_OP_ALL ? tt_all(&u, &t, last, 0)
                                                                              : tt_reduce(&u, red, &t, last, 0);
        if (st == TT_OK) step(&t, &u);
        else st = step_err(&c, st);
    }
    if (st == TT_OK) {
        if ((st = rearrange_impl(&u, &t, p3, 0, NULL, NULL, order, &ga)) == TT_OK) step(&t, &u);
        else st = step_err(&c, st);
    }
    if (st) {
        tt_tensor_release(&t);
        return st;
    }
    *out = t;
    return TT_OK;
}

tt_status tt_reduce_pattern(tt_tensor *out, const tt_tensor *a, const char *pattern, const char *reduction,
                            int nsizes, const char *const *size_names, const int64_t *sizes)
{
    memset(out, 0, sizeof *out);
    if (!a || !a->storage || !pattern || !reduction) return tt__err(TT_EARG, "reduce: needs a tensor, a pattern and a reduction");
    if (nsizes < 0 || nsizes > PAT_MAX_AXES || (nsizes > 0 && (!size_names || !sizes)))
        return tt__err(TT_EARG, "reduce: bad sizes");
    int r = 0;
    while (REDUCTIONS[r] && strcmp(REDUCTIONS[r], reduction) != 0) r++;
    if (!REDUCTIONS[r])
        return tt__err(TT_EARG, "reduce: \"%.160s\": unknown reduction '%.40s' (expected \"sum\", \"mean\", \"max\", "
                       "\"min\", \"any\" or \"all\")", pattern, reduction);
    tt_op red = REDUCTION_OPS[r];
    tt__opscope sc = tt__op_enter();
    pat_sizes all;
    tt_status st = reduce_impl_pattern(out, a, pattern, red, nsizes, size_names, sizes, &all);
    if (st == TT_OK && red != TT_OP_ANY && red != TT_OP_ALL && tt__grad_wanted(sc, a, NULL)) {
        const char *spec = reversed_spec(pattern, &all);
        st = spec ? tt__record(out, TT_OP_REDUCE, a, NULL, NULL, &(tt__agargs){ .spec = spec, .len = red })
                  : tt__err(TT_EARG, "reduce: \"%.160s\": the pattern is too long to differentiate", pattern);
        if (st) tt_tensor_release(out);
    }
    tt_event ev;
    tt__event_init(&ev, TT_OP_REDUCE, out, a, NULL, NULL);
    if (st == TT_OK) {
        ev.view = out->storage == a->storage;          /* a pattern that reduces no axis */
        ev.flops = ev.view ? 0 : (double)tt_numel(a);
        event_args(&ev, pattern, reduction, nsizes, NULL, size_names, sizes);
    }
    return tt__op_leave(sc, st, &ev);
}

static tt_status repeat_impl(tt_tensor *out, const tt_tensor *a, const char *text, int nsizes,
                             const char *const *names, const int64_t *sizes, pat_sizes *all)
{
    pat_ctx c = {"repeat", text, &a, 1};
    pat_side L, R;
    tt_status st = verb_sides(&c, text, &L, &R, 1);
    if (st) return st;
    for (int j = 0; j < nsizes; j++)
        if (side_find(&L, names[j]) < 0 && side_find(&R, names[j]) < 0)
            return pat_err(&c, TT_EARG, "a size is given for '%s', which is not in the pattern", names[j]);
    char p1[1024] = "", p3[1024] = "", e1[512] = "", e3[512] = "";
    int named = 0;
    for (int i = 0; i < R.naxes; i++) {
        if (R.axes[i].kind == AX_UNIT) continue;
        put(e3, sizeof e3, R.axes[i].name);
        if (R.axes[i].kind == AX_NAMED && side_find(&L, R.axes[i].name) < 0) continue;
        put(e1, sizeof e1, R.axes[i].name);
        named += R.axes[i].kind == AX_NAMED;
    }
    snprintf(p1, sizeof p1, "%.*s -> %s", (int)(strstr(text, "->") - text), text, e1);
    snprintf(p3, sizeof p3, "%s -> %s", e3, strstr(text, "->") + 2);
    pat_sizes given;
    sizes_on(&L, nsizes, names, sizes, &given);
    int order[PAT_MAX_AXES];
    tt__agargs ga = {0};
    tt_tensor t = {0}, u = {0};
    st = rearrange_impl(&t, a, p1, given.n, given.names, given.sizes, order, &ga);
    if (st) return step_err(&c, st);
    /* the new axes: length 1, then expanded */
    int E = t.ndim - named, d = 0, nd = 0;
    int64_t ones[TT_MAX_DIMS], full[TT_MAX_DIMS];
    all->n = 0;
    for (int i = 0; i < R.naxes && st == TT_OK; i++) {
        const pat_axis *ax = &R.axes[i];
        if (ax->kind == AX_UNIT) continue;
        if (ax->kind == AX_ELLIPSIS) {
            for (int k = 0; k < E && nd < TT_MAX_DIMS; k++, nd++) ones[nd] = full[nd] = t.shape[d++];
            continue;
        }
        if (nd == TT_MAX_DIMS) {
            st = pat_err(&c, TT_ESHAPE, "the pattern needs more than %d separate axes at once", TT_MAX_DIMS);
            break;
        }
        int64_t len = -1;
        if (side_find(&L, ax->name) >= 0) len = ones[nd] = t.shape[d++];
        else {
            for (int j = 0; j < nsizes; j++)
                if (strcmp(names[j], ax->name) == 0) len = sizes[j];
            if (len < 0) {
                st = pat_err(&c, TT_EARG, "axis '%s' is new on the right: give its length, e.g. {%s = 2}",
                             ax->name, ax->name);
                break;
            }
            ones[nd] = 1;
        }
        full[nd++] = len;
        all->names[all->n] = tt_intern(ax->name);
        all->sizes[all->n++] = len;
    }
    if (st == TT_OK) {
        /* a failing step names itself ("expand: shape ... is too large"):
           said as repeat's, with the pattern */
        if ((st = tt_reshape(&u, &t, nd, ones)) == TT_OK) step(&t, &u);
        if (st == TT_OK && (st = tt_expand(&u, &t, nd, full)) == TT_OK) step(&t, &u);
        if (st == TT_OK && (st = rearrange_impl(&u, &t, p3, 0, NULL, NULL, order, &ga)) == TT_OK) step(&t, &u);
        if (st) st = step_err(&c, st);
    }
    if (st) {
        tt_tensor_release(&t);
        return st;
    }
    *out = t;
    return TT_OK;
}

tt_status tt_repeat(tt_tensor *out, const tt_tensor *a, const char *pattern, int nsizes,
                    const char *const *size_names, const int64_t *sizes)
{
    memset(out, 0, sizeof *out);
    if (!a || !a->storage || !pattern) return tt__err(TT_EARG, "repeat: needs a tensor and a pattern");
    if (nsizes < 0 || nsizes > PAT_MAX_AXES || (nsizes > 0 && (!size_names || !sizes)))
        return tt__err(TT_EARG, "repeat: bad sizes");
    for (int j = 0; j < nsizes; j++)
        if (sizes[j] < 0)
            return tt__err(TT_EARG, "repeat: \"%.160s\": size %s=%lld is negative", pattern, size_names[j],
                           (long long)sizes[j]);
    tt__opscope sc = tt__op_enter();
    pat_sizes all;
    tt_status st = repeat_impl(out, a, pattern, nsizes, size_names, sizes, &all);
    if (st == TT_OK && tt__grad_wanted(sc, a, NULL)) {
        const char *spec = reversed_spec(pattern, &all);
        st = spec ? tt__record(out, TT_OP_REPEAT, a, NULL, NULL, &(tt__agargs){ .spec = spec })
                  : tt__err(TT_EARG, "repeat: \"%.160s\": the pattern is too long to differentiate", pattern);
        if (st) tt_tensor_release(out);
    }
    tt_event ev;
    tt__event_init(&ev, TT_OP_REPEAT, out, a, NULL, NULL);
    if (st == TT_OK) {
        ev.view = out->storage == a->storage;
        event_args(&ev, pattern, NULL, nsizes, NULL, size_names, sizes);
    }
    return tt__op_leave(sc, st, &ev);
}

/* The backward of both (backward.c calls these): repeat's gradient is the
   sum over its new axes; reduce's is the gradient repeated back (mean: over
   the count; max and min: to the elements equal to the result, split among
   ties, as tt_reduce's). */
tt_status tt__repeat_grad(tt_tensor *out, const char *spec, const tt_tensor *g)
{
    char text[1024];
    pat_sizes sz;
    tt_status st = read_spec(spec, text, sizeof text, &sz);
    return st ? st : tt_reduce_pattern(out, g, text, "sum", sz.n, sz.names, sz.sizes);
}

tt_status tt__reduce_grad(tt_tensor *out, const char *spec, tt_op red, const tt_tensor *a, const tt_tensor *y,
                          const tt_tensor *g)
{
    char text[1024], fwd[1024];
    pat_sizes sz;
    tt_status st = read_spec(spec, text, sizeof text, &sz);
    if (st) return st;
    memset(out, 0, sizeof *out);
    tt_tensor gr = {0}, t = {0}, u = {0};
    if ((st = tt_repeat(&gr, g, text, sz.n, sz.names, sz.sizes))) return st;
    if (red == TT_OP_SUM) {
        *out = gr;
        return TT_OK;
    }
    if (red == TT_OP_MEAN) {
        double count = (double)tt_numel(a) / (double)(tt_numel(y) ? tt_numel(y) : 1);
        st = tt_binary_scalar(out, TT_OP_DIV, &gr, count, 0);
        tt_tensor_release(&gr);
        return st;
    }
    /* max, min: hit = (a == y repeated); g * hit / (the hits' count repeated) */
    const char *arrow = strstr(text, "->");
    snprintf(fwd, sizeof fwd, "%s -> %.*s", arrow + 2, (int)(arrow - text), text);
    st = tt_repeat(&t, y, text, sz.n, sz.names, sz.sizes);
    if (st == TT_OK && (st = tt_binary(&u, TT_OP_EQ, a, &t)) == TT_OK) step(&t, &u);
    if (st == TT_OK && (st = tt_to_dtype(&u, &t, TT_FLOAT32)) == TT_OK) step(&t, &u);
    tt_tensor cnt = {0}, cr = {0};
    if (st == TT_OK) st = tt_reduce_pattern(&cnt, &t, fwd, "sum", sz.n, sz.names, sz.sizes);
    if (st == TT_OK) st = tt_repeat(&cr, &cnt, text, sz.n, sz.names, sz.sizes);
    if (st == TT_OK && (st = tt_binary(&u, TT_OP_MUL, &gr, &t)) == TT_OK) step(&t, &u);
    if (st == TT_OK) st = tt_binary(out, TT_OP_DIV, &t, &cr);
    tt_tensor_release(&gr);
    tt_tensor_release(&t);
    tt_tensor_release(&cnt);
    tt_tensor_release(&cr);
    return st;
}

/* ===== einsum =====

   "b h i d, b h j d -> b h i j": each axis is batch (in both operands and
   the result), contracted (in both, not in the result), or free (in one
   operand only). Axes in one operand only that the result drops are summed
   first (tt_reduce). Then the operands are permuted and reshaped into
   [batch..., M, K] and [batch..., K, N] (views when the strides allow), one
   tt_matmul contracts them, and the product is reshaped and permuted into
   the output's order. Three or more operands contract left to right. A name
   that repeats in one operand ("i i -> i") takes the diagonal, as a view.

   Named axes must agree in length exactly (a mismatch is a bug worth an
   error); dims under '...' broadcast (NumPy rules, right-aligned). Without
   '...' in the output, the '...' dims are summed, as numpy.einsum does.
   A spec without whitespace inside its terms is read one letter per axis,
   as NumPy and PyTorch read it ("bid,bjd->bij", "ij, jk -> ik"); only then
   may '->' be left out, the output being every letter that occurs once, in
   alphabetical order (after the '...' dims).

   A pair with no contracted axis (a Hadamard or outer product) is a
   broadcast multiply (tt_binary) instead: 1 x 1 matmuls would be slow.

   FLOPs: 2*B*M*N*K per contraction (2 * the product of the lengths of every
   axis it involves), B*M*N for a product without contraction, plus one add
   per element for each summed axis. */

#define ES_MAX_OPERANDS 16
#define ES_MAX_IDS 64

typedef struct es_spec {
    int nids;                           /* distinct axes: names, then '...' dims */
    char name[ES_MAX_IDS][PAT_NAME_MAX];
    int64_t size[ES_MAX_IDS];
    int owner[ES_MAX_IDS];              /* the operand that fixed the length */
    const char *dimname[ES_MAX_IDS];    /* for '...' dims: an input's name */
    double flops;
} es_spec;

/* A working operand: a header we own and the axis id of each of its dims. */
typedef struct es_op {
    tt_tensor t;
    int ids[TT_MAX_DIMS];
} es_op;

static int es_find(const es_op *x, int id)
{
    for (int d = 0; d < x->t.ndim; d++)
        if (x->ids[d] == id)
            return d;
    return -1;
}

/* Removes dim d from the header (a broadcast length-1 dim, or the second
   copy of a diagonal once its stride is folded into the first). */
static void es_drop_dim(es_op *x, int d)
{
    for (int i = d; i + 1 < x->t.ndim; i++) {
        x->t.shape[i] = x->t.shape[i + 1];
        x->t.stride[i] = x->t.stride[i + 1];
        x->t.names[i] = x->t.names[i + 1];
        x->ids[i] = x->ids[i + 1];
    }
    x->t.ndim--;
}

/* Sums out every dim of x whose id is not marked in keep[]. */
static tt_status es_sum_out(es_spec *sp, es_op *x, const char *keep)
{
    /* several axes of a 16-bit operand: summed in float32, rounded once */
    const tt_dtype dt = x->t.dtype;
    int nsum = 0;
    for (int d = 0; d < x->t.ndim; d++)
        nsum += !keep[x->ids[d]];
    if (nsum > 1 && tt__is_half(dt)) {
        tt_tensor f = {0};
        const tt_tensor *w = &x->t;
        tt_status st = tt__widen(&f, "einsum", &w);
        if (st != TT_OK)
            return st;
        step(&x->t, &f);
    }
    for (int d = x->t.ndim - 1; d >= 0; d--) {
        if (keep[x->ids[d]])
            continue;
        tt_tensor u = {0};
        sp->flops += (double)tt_numel(&x->t);
        tt_status st = tt_reduce(&u, TT_OP_SUM, &x->t, d, 0);
        if (st != TT_OK)
            return st;
        step(&x->t, &u);
        for (int i = d; i < x->t.ndim; i++)
            x->ids[i] = x->ids[i + 1];
    }
    return tt__round_to(&x->t, "einsum", dt);
}

/* Permutes x so that its ids follow order[0..n) (a permutation of them). */
static tt_status es_permute(es_op *x, const int *order, int n)
{
    int perm[TT_MAX_DIMS];
    for (int i = 0; i < n; i++)
        perm[i] = es_find(x, order[i]);
    if (is_identity(perm, n))
        return TT_OK;
    tt_tensor u = {0};
    tt_status st = tt_permute(&u, &x->t, perm);
    if (st != TT_OK)
        return st;
    step(&x->t, &u);
    for (int i = 0; i < n; i++)
        x->ids[i] = order[i];
    return TT_OK;
}

static tt_status es_reshape(tt_tensor *t, int ndim, const int64_t *shape)
{
    tt_tensor u = {0};
    tt_status st = tt_reshape(&u, t, ndim, shape);
    if (st == TT_OK)
        step(t, &u);
    return st;
}

/* A pair's ids by role: batch (in both and kept), m (a's own), n (b's
   own) in the result's order, k (contracted) in a's order; the sizes
   their products make. */
typedef struct es_roles {
    int bat[TT_MAX_DIMS], m[TT_MAX_DIMS], n[TT_MAX_DIMS], k[TT_MAX_DIMS];
    int nbat, nm, nn, nk;
    int64_t B, M, N, K;
} es_roles;

static void es_classify(const es_spec *sp, const es_op *a, const es_op *b, const int *keep, int nkeep,
                        const char *in_keep, es_roles *r)
{
    r->nbat = r->nm = r->nn = r->nk = 0;
    r->B = r->M = r->N = r->K = 1;
    for (int i = 0; i < nkeep; i++) {
        int id = keep[i], ia = es_find(a, id) >= 0, ib = es_find(b, id) >= 0;
        if (ia && ib) {
            r->bat[r->nbat++] = id;
            r->B = mul_sat(r->B, sp->size[id]);
        } else if (ia) {
            r->m[r->nm++] = id;
            r->M = mul_sat(r->M, sp->size[id]);
        } else {
            r->n[r->nn++] = id;
            r->N = mul_sat(r->N, sp->size[id]);
        }
    }
    for (int d = 0; d < a->t.ndim; d++)
        if (!in_keep[a->ids[d]]) {
            r->k[r->nk++] = a->ids[d];
            r->K = mul_sat(r->K, sp->size[a->ids[d]]);
        }
}

/* Nothing to contract (a Hadamard or outer product): a broadcast multiply
   [batch..., m..., 1...] * [batch..., 1..., n...], which is what 1 x 1
   matmuls would compute, many times slower; res in keep's order. */
static tt_status es_pair_mul(es_spec *sp, es_op *a, es_op *b, const es_roles *r, const int *keep, int nkeep,
                          es_op *res)
{
    int order[TT_MAX_DIMS], no = 0;
    int64_t shape[TT_MAX_DIMS];
    sp->flops += (double)r->B * (double)r->M * (double)r->N;
    for (int i = 0; i < r->nbat; i++) order[no++] = r->bat[i];
    for (int i = 0; i < r->nm; i++) order[no++] = r->m[i];
    for (int i = 0; i < no; i++) shape[i] = sp->size[order[i]];
    for (int i = 0; i < r->nn; i++) shape[no + i] = 1;
    tt_status st = es_permute(a, order, no);
    if (st == TT_OK)
        st = es_reshape(&a->t, no + r->nn, shape);
    no = r->nbat;
    for (int i = 0; i < r->nn; i++) order[no++] = r->n[i];
    for (int i = 0; i < r->nbat; i++) shape[i] = sp->size[r->bat[i]];
    for (int i = 0; i < r->nm; i++) shape[r->nbat + i] = 1;
    for (int i = 0; i < r->nn; i++) shape[r->nbat + r->nm + i] = sp->size[r->n[i]];
    if (st == TT_OK)
        st = es_permute(b, order, no);
    if (st == TT_OK)
        st = es_reshape(&b->t, r->nbat + r->nm + r->nn, shape);
    if (st == TT_OK)
        st = tt_binary(&res->t, TT_OP_MUL, &a->t, &b->t);
    if (st != TT_OK)
        return st;
    no = 0;
    for (int i = 0; i < r->nbat; i++) res->ids[no++] = r->bat[i];
    for (int i = 0; i < r->nm; i++) res->ids[no++] = r->m[i];
    for (int i = 0; i < r->nn; i++) res->ids[no++] = r->n[i];
    return es_permute(res, keep, nkeep);
}

/* a -> [batch..., M, K], b -> [batch..., K, N], one matmul, then
   [batch..., M, N] -> [batch..., m..., n...] -> keep's order. The batch
   dims are flattened into one only when they are too many to keep apart. */
static tt_status es_pair_matmul(es_spec *sp, es_op *a, es_op *b, const es_roles *r, const int *keep, int nkeep,
                             es_op *res)
{
    int order[TT_MAX_DIMS], no = 0, ns = 0;
    int64_t shape[TT_MAX_DIMS];
    sp->flops += 2.0 * (double)r->B * (double)r->M * (double)r->N * (double)r->K;
    if (r->nbat + 2 > TT_MAX_DIMS)
        shape[ns++] = r->B;
    else
        for (int i = 0; i < r->nbat; i++)
            shape[ns++] = sp->size[r->bat[i]];
    for (int i = 0; i < r->nbat; i++) order[no++] = r->bat[i];
    for (int i = 0; i < r->nm; i++) order[no++] = r->m[i];
    for (int i = 0; i < r->nk; i++) order[no++] = r->k[i];
    shape[ns] = r->M;
    shape[ns + 1] = r->K;
    tt_status st = es_permute(a, order, no);
    if (st == TT_OK)
        st = es_reshape(&a->t, ns + 2, shape);
    no = r->nbat;
    for (int i = 0; i < r->nk; i++) order[no++] = r->k[i];
    for (int i = 0; i < r->nn; i++) order[no++] = r->n[i];
    shape[ns] = r->K;
    shape[ns + 1] = r->N;
    if (st == TT_OK)
        st = es_permute(b, order, no);
    if (st == TT_OK)
        st = es_reshape(&b->t, ns + 2, shape);
    if (st == TT_OK)
        st = tt_matmul(&res->t, &a->t, &b->t);
    if (st != TT_OK)
        return st;
    no = 0;
    for (int i = 0; i < r->nbat; i++) order[no++] = r->bat[i];
    for (int i = 0; i < r->nm; i++) order[no++] = r->m[i];
    for (int i = 0; i < r->nn; i++) order[no++] = r->n[i];
    for (int i = 0; i < no; i++) {
        shape[i] = sp->size[order[i]];
        res->ids[i] = order[i];
    }
    st = es_reshape(&res->t, no, shape);
    if (st == TT_OK)
        st = es_permute(res, keep, nkeep);
    return st;
}

/* res = the contraction of a and b with exactly the axes keep[0..nkeep), in
   that order (each in a or b). Consumes a and b, success or not. */
static tt_status es_pair(es_spec *sp, es_op *a, es_op *b, const int *keep, int nkeep, es_op *res)
{
    char in_keep[ES_MAX_IDS] = {0}, keep_a[ES_MAX_IDS], keep_b[ES_MAX_IDS];
    for (int i = 0; i < nkeep; i++)
        in_keep[keep[i]] = 1;
    for (int id = 0; id < ES_MAX_IDS; id++) {
        keep_a[id] = in_keep[id] || es_find(b, id) >= 0;    /* the others: summed first */
        keep_b[id] = in_keep[id] || es_find(a, id) >= 0;
    }
    res->t.storage = NULL;
    tt_status st = es_sum_out(sp, a, keep_a);
    if (st == TT_OK)
        st = es_sum_out(sp, b, keep_b);
    if (st == TT_OK) {
        es_roles r;
        es_classify(sp, a, b, keep, nkeep, in_keep, &r);
        st = r.nk == 0 ? es_pair_mul(sp, a, b, &r, keep, nkeep, res) : es_pair_matmul(sp, a, b, &r, keep, nkeep, res);
    }
    tt_tensor_release(&a->t);
    tt_tensor_release(&b->t);
    if (st != TT_OK)
        tt_tensor_release(&res->t);
    return st;
}

/* The id of name (added when new), or -1 when the table is full. */
static int es_id(es_spec *sp, const char *name, int add)
{
    for (int i = 0; i < sp->nids; i++)
        if (strcmp(sp->name[i], name) == 0)
            return i;
    if (!add || sp->nids == ES_MAX_IDS)
        return -1;
    snprintf(sp->name[sp->nids], PAT_NAME_MAX, "%s", name);
    sp->size[sp->nids] = -1;
    sp->dimname[sp->nids] = NULL;
    return sp->nids++;
}

static int cmp_name(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Whether some term of spec has whitespace inside it (not just around the
   ',' and '->' separators): then axis names are words. */
static int es_spaced_terms(const char *spec)
{
    int seen_word = 0, gap = 0;
    for (const char *p = spec; *p; p++) {
        if (*p == ',' || (p[0] == '-' && p[1] == '>')) {
            seen_word = gap = 0;
            p += *p == '-';
        } else if (isspace((unsigned char)*p)) {
            gap = seen_word;
        } else {
            if (gap)
                return 1;
            seen_word = 1;
        }
    }
    return 0;
}

/* Parses spec into the operand terms and the output term (term[n]);
   *letters tells whether it is read one letter per axis. */
static tt_status es_parse(const pat_ctx *c, const char *spec, int n, pat_side *term, int *has_output,
                          int *letters_out)
{
    const char *arrow = strstr(spec, "->");
    const char *end = spec + strlen(spec);
    int letters = !es_spaced_terms(spec);
    int flags = PS_REPEAT | (letters ? PS_LETTERS : 0);
    *letters_out = letters;
    if (arrow && strstr(arrow + 2, "->"))
        return pat_err(c, TT_EARG, "'->' appears twice");
    if (!arrow && !letters)
        return pat_err(c, TT_EARG, "no '->' in the spec (e.g. \"i d, j d -> i j\")");
    const char *lhs_end = arrow ? arrow : end;
    int nterms = 0;
    for (const char *p = spec;;) {
        const char *q = memchr(p, ',', (size_t)(lhs_end - p));
        if (!q)
            q = lhs_end;
        if (nterms == ES_MAX_OPERANDS)
            return pat_err(c, TT_EARG, "more than %d operands", ES_MAX_OPERANDS);
        char where[32];
        snprintf(where, sizeof where, "in operand %d", nterms + 1);
        tt_status st = parse_side(c, p, q, where, flags, &term[nterms++]);
        if (st != TT_OK)
            return st;
        if (q == lhs_end)
            break;
        p = q + 1;
    }
    if (arrow) {
        if (memchr(arrow + 2, ',', (size_t)(end - arrow - 2)))
            return pat_err(c, TT_EARG, "',' after '->': einsum has one output");
        tt_status st = parse_side(c, arrow + 2, end, "in the output", letters ? PS_LETTERS : 0, &term[nterms]);
        if (st != TT_OK)
            return st;
    }
    if (nterms != n)
        return pat_err(c, TT_EARG, "the spec has %d operand%s but %d tensor%s given",
                       nterms, nterms == 1 ? "" : "s", n, n == 1 ? " was" : "s were");
    *has_output = arrow != NULL;
    return TT_OK;
}

/* Axis ids and lengths of every operand dim (opids), checked across
   operands; E = the number of dims '...' stands for. */
static tt_status es_axes(const pat_ctx *c, const pat_side *term, const tt_tensor *const *list, int n,
                         int letters, es_spec *sp, int (*opids)[TT_MAX_DIMS], int *E_out)
{
    int E = 0;
    for (int i = 0; i < n; i++) {
        int named = term[i].naxes - (term[i].ellipsis >= 0);
        int nd = list[i]->ndim;
        if (term[i].ellipsis >= 0 ? nd < named : nd != named) {
            char s[128];
            int multi = 0;      /* "ij" read as one name: say how names are split */
            for (int j = 0; j < term[i].naxes; j++)
                multi |= term[i].axes[j].kind == AX_NAMED && strlen(term[i].axes[j].name) > 1;
            const char *hint = "";
            if (multi && nd > named)
                hint = "; axis names are separated by spaces (a spec without spaces inside its terms "
                       "reads one letter per axis)";
            else if (letters && nd < named && named > 1)
                hint = "; a spec without spaces inside its terms reads one letter per axis (separate "
                       "multi-letter names with spaces, e.g. \"seq d -> d seq\")";
            return pat_err_bare(c, TT_ESHAPE, "operand %d has %d ax%s%s in the spec but is %s (%d dim%s)%s",
                                i + 1, named, named == 1 ? "is" : "es", term[i].ellipsis >= 0 ? " besides '...'" : "",
                                tt_shape_str(list[i], s, sizeof s), nd, nd == 1 ? "" : "s", hint);
        }
        if (term[i].ellipsis >= 0 && nd - named > E)
            E = nd - named;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < term[i].naxes; j++)
            if (term[i].axes[j].kind == AX_NAMED && es_id(sp, term[i].axes[j].name, 1) < 0)
                return pat_err(c, TT_EARG, "more than %d axis names", ES_MAX_IDS);
    int first_ell = sp->nids;
    if (first_ell + E > ES_MAX_IDS)
        return pat_err(c, TT_EARG, "more than %d axes", ES_MAX_IDS);
    for (int k = 0; k < E; k++) {
        char nm[PAT_NAME_MAX];
        snprintf(nm, sizeof nm, "...%d", k);
        es_id(sp, nm, 1);
    }
    for (int i = 0; i < n; i++) {
        const tt_tensor *t = list[i];
        int e = t->ndim - (term[i].naxes - (term[i].ellipsis >= 0));
        int d = 0;
        for (int j = 0; j < term[i].naxes; j++) {
            const pat_axis *ax = &term[i].axes[j];
            int nids = ax->kind == AX_ELLIPSIS ? e : 1;
            for (int k = 0; k < nids; k++, d++) {
                int id = ax->kind == AX_ELLIPSIS ? first_ell + E - e + k : es_id(sp, ax->name, 0);
                int64_t len = t->shape[d];
                opids[i][d] = id;
                if (sp->size[id] < 0 || (ax->kind == AX_ELLIPSIS && sp->size[id] == 1 && len != 1)) {
                    sp->size[id] = len;
                    sp->owner[id] = i;
                    sp->dimname[id] = t->names[d];
                    continue;
                }
                if (ax->kind == AX_ELLIPSIS && (len == 1 || len == sp->size[id])) {
                    if (len == sp->size[id] && !sp->dimname[id])
                        sp->dimname[id] = t->names[d];
                    continue;
                }
                if (len == sp->size[id])
                    continue;
                char s1[128], s2[128];
                tt_shape_str(list[sp->owner[id]], s1, sizeof s1);
                tt_shape_str(t, s2, sizeof s2);
                if (ax->kind == AX_ELLIPSIS)
                    return pat_err_bare(c, TT_ESHAPE, "the dims under '...' do not broadcast: operand %d "
                                        "is %s but operand %d is %s", sp->owner[id] + 1, s1, i + 1, s2);
                if (sp->owner[id] == i)
                    return pat_err_bare(c, TT_ESHAPE, "axis '%s' repeats in operand %d %s with lengths "
                                        "%lld and %lld (a diagonal needs equal lengths)", ax->name, i + 1,
                                        s2, (long long)sp->size[id], (long long)len);
                return pat_err_bare(c, TT_ESHAPE, "axis '%s' has length %lld in operand %d %s but %lld "
                                    "in operand %d %s", ax->name, (long long)sp->size[id],
                                    sp->owner[id] + 1, s1, (long long)len, i + 1, s2);
            }
        }
    }
    *E_out = E;
    return TT_OK;
}

/* A spec read against its operands: the axes, each operand dim's axis id
   and the output's ids. */
typedef struct es_plan {
    es_spec sp;
    int opids[ES_MAX_OPERANDS][TT_MAX_DIMS];
    int first_ell;                      /* the '...' dims' first id */
    int oids[ES_MAX_IDS], nout;
} es_plan;

static tt_status es_plan_make(pat_ctx *c, const char *spec, const tt_tensor *const *list, int n, es_plan *p)
{
    pat_side term[ES_MAX_OPERANDS + 1];    /* the operands, then the output */
    int has_output = 0, letters = 0;
    tt_status st = es_parse(c, spec, n, term, &has_output, &letters);
    if (st != TT_OK)
        return st;
    c->inputs = list;
    c->ninputs = n;
    for (int i = 0; i < n; i++)
        if (!tt_dtype_is_float(list[i]->dtype))
            return pat_err(c, TT_EARG, "operand %d is %s; einsum needs float32 (use :float())", i + 1,
                           tt_dtype_name(list[i]->dtype));
    es_spec *sp = &p->sp;
    memset(sp, 0, sizeof *sp);
    int E = 0;
    st = es_axes(c, term, list, n, letters, sp, p->opids, &E);
    if (st != TT_OK)
        return st;
    int first_ell = p->first_ell = sp->nids - E;

    /* the output's axes */
    int *oids = p->oids, nout = 0;
    const pat_side *oterm = &term[n];
    if (has_output) {
        for (int j = 0; j < oterm->naxes; j++) {
            const pat_axis *ax = &oterm->axes[j];
            if (ax->kind == AX_ELLIPSIS) {
                for (int k = 0; k < E; k++)
                    oids[nout++] = first_ell + k;
                continue;
            }
            int id = es_id(sp, ax->name, 0);
            if (id < 0)
                return pat_err(c, TT_EARG, "output axis '%s' is not in any input", ax->name);
            for (int i = 0; i < nout; i++)
                if (oids[i] == id)
                    return pat_err(c, TT_EARG, "axis '%s' appears twice in the output", ax->name);
            oids[nout++] = id;
        }
    } else {
        const char *once[ES_MAX_IDS];
        int nonce = 0;
        for (int k = 0; k < E; k++)
            oids[nout++] = first_ell + k;
        for (int id = 0; id < first_ell; id++) {
            int count = 0;
            for (int i = 0; i < n; i++)
                for (int d = 0; d < list[i]->ndim; d++)
                    count += p->opids[i][d] == id;
            if (count == 1)
                once[nonce++] = sp->name[id];
        }
        qsort(once, (size_t)nonce, sizeof once[0], cmp_name);
        for (int i = 0; i < nonce; i++)
            oids[nout++] = es_id(sp, once[i], 0);
    }
    if (nout > TT_MAX_DIMS)
        return pat_err(c, TT_ESHAPE, "the result would have %d dims (at most %d)", nout, TT_MAX_DIMS);
    p->nout = nout;
    return TT_OK;
}

/* x = operand i as a working operand: a header on t (its storage retained),
   unnamed (the result is named from the spec), diagonals taken (a repeated
   axis' strides folded into its first dim), length-1 dims that '...'
   broadcasts dropped. */
static void es_take(const es_plan *p, es_op *x, const tt_tensor *t, int i)
{
    tt__view_of(&x->t, t);
    memcpy(x->ids, p->opids[i], sizeof p->opids[i]);
    for (int d = 0; d < TT_MAX_DIMS; d++)
        x->t.names[d] = NULL;
    for (int d = x->t.ndim - 1; d >= 0; d--) {
        int id = x->ids[d], first = es_find(x, id);
        if (first < d) {
            x->t.stride[first] += x->t.stride[d];
            es_drop_dim(x, d);
        } else if (x->t.shape[d] != p->sp.size[id]) {
            es_drop_dim(x, d);
        }
    }
}

/* *res = the working operands ops[0..n) contracted left to right into the
   axes final[0..nfinal) (each in some operand), keeping at each step what
   final or a later operand needs. Consumes ops. */
static tt_status es_contract(const pat_ctx *c, es_spec *sp, es_op *ops, int n, const int *final, int nfinal,
                             es_op *res)
{
    es_op cur = ops[0];
    int next = 1;
    tt_status st = TT_OK;
    if (n == 1) {
        char keep[ES_MAX_IDS] = {0};
        for (int i = 0; i < nfinal; i++)
            keep[final[i]] = 1;
        st = es_sum_out(sp, &cur, keep);
        if (st == TT_OK)
            st = es_permute(&cur, final, nfinal);
    }
    for (; st == TT_OK && next < n; next++) {
        char need[ES_MAX_IDS] = {0};
        int keep[ES_MAX_IDS], nkeep = 0;
        for (int i = 0; i < nfinal; i++)
            need[final[i]] = 1;
        for (int i = next + 1; i < n; i++)
            for (int d = 0; d < ops[i].t.ndim; d++)
                need[ops[i].ids[d]] = 1;
        if (next == n - 1) {
            memcpy(keep, final, sizeof final[0] * (size_t)nfinal);
            nkeep = nfinal;
        } else {
            const es_op *two[2] = {&cur, &ops[next]};
            for (int s = 0; s < 2; s++)
                for (int d = 0; d < two[s]->t.ndim; d++)
                    if (need[two[s]->ids[d]] == 1) {
                        need[two[s]->ids[d]] = 2;
                        keep[nkeep++] = two[s]->ids[d];
                    }
            if (nkeep > TT_MAX_DIMS) {
                st = pat_err(c, TT_ESHAPE, "an intermediate result would have %d dims (at most %d)",
                             nkeep, TT_MAX_DIMS);
                break;
            }
        }
        es_op r;
        st = es_pair(sp, &cur, &ops[next], keep, nkeep, &r);
        cur = r;
    }
    for (int i = next; i < n; i++)      /* operands a failure left unused */
        tt_tensor_release(&ops[i].t);
    if (st != TT_OK) {
        tt_tensor_release(&cur.t);
        return st;
    }
    *res = cur;
    return TT_OK;
}

static tt_status einsum_impl(tt_tensor *out, const char *spec, const tt_tensor *const *list, int n,
                             double *flops)
{
    pat_ctx c = {"einsum", spec, NULL, 0};
    es_plan *p = malloc(sizeof *p);
    if (!p)
        return tt__err(TT_ENOMEM, "einsum: out of memory");
    tt_status st = es_plan_make(&c, spec, list, n, p);
    es_op ops[ES_MAX_OPERANDS], cur;
    for (int i = 0; st == TT_OK && i < n; i++)
        es_take(p, &ops[i], list[i], i);
    if (st == TT_OK)
        st = es_contract(&c, &p->sp, ops, n, p->oids, p->nout, &cur);
    if (st == TT_OK) {
        const char *onames[TT_MAX_DIMS];
        for (int i = 0; i < p->nout; i++) {
            int id = p->oids[i];
            onames[i] = id >= p->first_ell ? p->sp.dimname[id] : tt_intern(p->sp.name[id]);
        }
        tt__set_names(&cur.t, onames);
        *out = cur.t;
        *flops = p->sp.flops;
    }
    free(p);
    return st;
}

/* The gradient of operand i: g (with the output's axes) contracted with
   the other operands into operand i's own axes; the axes nothing else has
   (summed by the forward) broadcast back; then shaped as operand i, its
   diagonal (a repeated axis) written into zeros. */
tt_status tt__einsum_grad(tt_tensor *out, const char *spec, const tt_tensor *ops, int n,
                          const tt_tensor *g, int i)
{
    memset(out, 0, sizeof *out);
    const tt_tensor *list[ES_MAX_OPERANDS];
    for (int j = 0; j < n; j++)
        list[j] = &ops[j];
    pat_ctx c = {"einsum", spec, NULL, 0};
    es_plan *p = malloc(sizeof *p);
    if (!p)
        return tt__err(TT_ENOMEM, "einsum: backward: out of memory");
    tt_status st = es_plan_make(&c, spec, list, n, p);
    if (st != TT_OK) {
        free(p);
        return st;
    }
    /* the contraction's operands: g, then every operand but i */
    es_op w[ES_MAX_OPERANDS], mine, cur;
    tt__view_of(&w[0].t, g);
    for (int d = 0; d < TT_MAX_DIMS; d++)
        w[0].t.names[d] = NULL;
    memcpy(w[0].ids, p->oids, sizeof w[0].ids);
    for (int j = 0, k = 1; j < n; j++)
        if (j != i)
            es_take(p, &w[k++], list[j], j);
    es_take(p, &mine, list[i], i);

    /* operand i's axes: those another term has, and the full shape */
    int present[TT_MAX_DIMS], npresent = 0, nd = mine.t.ndim;
    int64_t part[TT_MAX_DIMS], full[TT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        int id = mine.ids[d], seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = es_find(&w[k], id) >= 0;
        if (seen)
            present[npresent++] = id;
        full[d] = p->sp.size[id];
        part[d] = seen ? full[d] : 1;
    }
    st = es_contract(&c, &p->sp, w, n, present, npresent, &cur);
    tt_tensor u = {0};
    if (st == TT_OK)
        st = es_reshape(&cur.t, nd, part);
    if (st == TT_OK && (st = tt_expand(&u, &cur.t, nd, full)) == TT_OK)
        step(&cur.t, &u);
    int diagonal = 0;
    for (int d = 0; d < list[i]->ndim; d++)
        for (int e = 0; e < d; e++)
            diagonal |= p->opids[i][d] == p->opids[i][e];
    if (st == TT_OK && !diagonal) {
        st = tt_reshape(out, &cur.t, list[i]->ndim, list[i]->shape);
    } else if (st == TT_OK) {
        st = tt_zeros(out, TT_FLOAT32, list[i]->ndim, list[i]->shape);
        if (st == TT_OK) {
            es_op z;
            es_take(p, &z, out, i);
            tt__copy(&z.t, &cur.t);
            tt_tensor_release(&z.t);
        }
    }
    tt_tensor_release(&cur.t);
    tt_tensor_release(&mine.t);
    free(p);
    return st;
}

tt_status tt_einsum(tt_tensor *out, const char *spec, const tt_tensor *const *list, int n)
{
    memset(out, 0, sizeof *out);
    if (!spec || n < 1 || !list)
        return tt__err(TT_EARG, "einsum: needs a spec and at least one tensor");
    for (int i = 0; i < n; i++)
        if (!list[i] || !list[i]->storage)
            return tt__err(TT_EARG, "einsum: operand %d is not a tensor", i + 1);
    tt__autocast ac;
    if (n <= TT__AC_MAX && tt__autocast_enter(&ac, TT__AC_LOW, n, list))
        return tt__autocast_leave(&ac, ac.st ? ac.st : tt_einsum(out, spec, ac.in, n));
    tt__opscope sc = tt__op_enter();
    double flops = 0;
    tt_status st = einsum_impl(out, spec, list, n, &flops);
    if (st == TT_OK) {
        const char *kept = tt_intern(spec);
        st = kept ? tt__record_list(sc, out, TT_OP_EINSUM, list, n, &(tt__agargs){ .spec = kept })
                  : tt__err(TT_ENOMEM, "einsum: out of memory");
        if (st != TT_OK)
            tt_tensor_release(out);
    }
    tt_event ev;
    tt__event_init(&ev, TT_OP_EINSUM, out, list[0], n > 1 ? list[1] : NULL, n > 2 ? list[2] : NULL);
    if (st == TT_OK) {
        if (n > 3)
            ev.inputs[3] = list[3];
        ev.ninputs = n < TT_TRACE_MAX_INPUTS ? n : TT_TRACE_MAX_INPUTS;
        ev.ninputs_total = n;
        for (int i = 0; i < n; i++)
            ev.view |= out->storage == list[i]->storage;
        ev.flops = flops;
        event_args(&ev, spec, NULL, 0, NULL, NULL, NULL);
    }
    return tt__op_leave(sc, st, &ev);
}
