/*
** safetensors.c — tt_save / tt_load in the safetensors layout: 8-byte
** little-endian header length, a JSON header ({"name": {"dtype": "F32",
** "shape": [2, 3], "data_offsets": [0, 24]}, "__metadata__": {"k": "v"}}),
** then the tensors' bytes, one after another. A file written here opens in
** Python's safetensors and PyTorch, and theirs open here.
**
** A file is untrusted input: every number in the header is checked against
** the file's real size before anything of that size is allocated, the
** tensors' byte ranges must tile the data exactly (as the reference reader
** demands), and a BOOL byte other than 0 or 1 is refused. Each error names
** the file and what is wrong.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tt_internal.h"

/* The reference implementation's limit; real headers are a few MB at most. */
#define MAX_HEADER (100LL << 20)
#define MAX_DEPTH 8                 /* nesting we accept in a header */

static const struct { tt_dtype dt; const char *name; } DTYPES[] = {
    { TT_FLOAT32, "F32" },
    { TT_BOOL, "BOOL" },
    { TT_INT64, "I64" },
    { TT_BFLOAT16, "BF16" },
    { TT_FLOAT16, "F16" },
};

static const char *st_dtype_name(tt_dtype dt)
{
    for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
        if (DTYPES[i].dt == dt) return DTYPES[i].name;
    return NULL;
}

/* ===== Writing ===== */

typedef struct save_job {
    int n;
    const char *const *names;
    const tt_tensor *const *tensors;
    int *order;                 /* tensors sorted by name */
    int nmeta;
    const char *const *meta;    /* key, value, key, value, ... */
    char *header;
    size_t hlen;                /* padded with spaces to a multiple of 8 */
} save_job;

/* A JSON string: quotes, backslash and control characters escaped; the
   bytes are valid UTF-8 (checked by the caller). */
static void sb_json(tt_strbuf *b, const char *s)
{
    tt_strbuf_add(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') { tt_strbuf_add(b, "\\", 1); tt_strbuf_add(b, (const char *)p, 1); }
        else if (*p < 0x20) tt_strbuf_fmt(b, "\\u%04x", (unsigned)*p);
        else tt_strbuf_add(b, (const char *)p, 1);
    }
    tt_strbuf_add(b, "\"", 1);
}

static int valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left) {
        int k = tt_utf8_len(p, left);
        if (k == 0) return 0;
        p += k;
        left -= (size_t)k;
    }
    return 1;
}

/* s for a message when it is not valid UTF-8: bytes past ASCII and
   control bytes as \xNN, cut to fit buf. */
static const char *escaped(char *buf, size_t n, const char *s)
{
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && k + 5 < n; p++)
        k += (size_t)snprintf(buf + k, n - k, *p < 0x20 || *p >= 0x80 ? "\\x%02x" : "%c", *p);
    buf[k] = 0;
    return buf;
}

static const save_job *sort_job;
static int by_name(const void *x, const void *y)
{
    return strcmp(sort_job->names[*(const int *)x], sort_job->names[*(const int *)y]);
}

static const char *const *sort_meta;
static int by_key(const void *x, const void *y)
{
    return strcmp(sort_meta[2 * *(const int *)x], sort_meta[2 * *(const int *)y]);
}

static tt_status build_header(const char *path, save_job *j)
{
    tt_strbuf b = {0};
    tt_strbuf_str(&b, "{");
    int first = 1;
    if (j->nmeta > 0) {
        /* keys in order, as the tensors: a script's table comes in hash
           order, which changes from run to run, and the bytes must not */
        int *order = malloc((size_t)j->nmeta * sizeof *order);
        if (!order) {
            free(b.p);
            return tt__err(TT_ENOMEM, "save: out of memory for the header of '%s'", path);
        }
        for (int i = 0; i < j->nmeta; i++) order[i] = i;
        sort_meta = j->meta;
        qsort(order, (size_t)j->nmeta, sizeof *order, by_key);
        tt_strbuf_str(&b, "\"__metadata__\":{");
        for (int r = 0; r < j->nmeta; r++) {
            if (r) tt_strbuf_str(&b, ",");
            sb_json(&b, j->meta[2 * order[r]]);
            tt_strbuf_str(&b, ":");
            sb_json(&b, j->meta[2 * order[r] + 1]);
        }
        free(order);
        tt_strbuf_str(&b, "}");
        first = 0;
    }
    long long off = 0;
    for (int r = 0; r < j->n; r++) {
        const tt_tensor *t = j->tensors[j->order[r]];
        if (!first) tt_strbuf_str(&b, ",");
        first = 0;
        sb_json(&b, j->names[j->order[r]]);
        tt_strbuf_str(&b, ":{\"dtype\":\"");
        tt_strbuf_str(&b, st_dtype_name(t->dtype));
        tt_strbuf_str(&b, "\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) tt_strbuf_fmt(&b, d ? ",%lld" : "%lld", (long long)t->shape[d]);
        long long nb = (long long)tt_numel(t) * (long long)tt_dtype_size(t->dtype);
        tt_strbuf_fmt(&b, "],\"data_offsets\":[%lld,", off);
        tt_strbuf_fmt(&b, "%lld]}", off + nb);
        off += nb;
    }
    tt_strbuf_str(&b, "}");
    while (!b.oom && b.n % 8) tt_strbuf_str(&b, " ");   /* the data starts 8-aligned */
    if (b.oom) {
        free(b.p);
        return tt__err(TT_ENOMEM, "save: out of memory for the header of '%s'", path);
    }
    if ((long long)b.n > MAX_HEADER) {
        free(b.p);
        return tt__err(TT_EARG, "save: the header of '%s' would be %zu bytes, more than the %lld that "
                       "safetensors readers accept; hint: fewer tensors per file, or shorter names",
                       path, b.n, MAX_HEADER);
    }
    j->header = b.p;
    j->hlen = b.n;
    return TT_OK;
}

static int emit_safetensors(FILE *fp, void *ctx, char errtext[128])
{
    const save_job *j = ctx;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)j->hlen >> (8 * i));
    if (fwrite(len8, 1, 8, fp) != 8 || fwrite(j->header, 1, j->hlen, fp) != j->hlen) return -1;
    for (int r = 0; r < j->n; r++) {
        const tt_tensor *t = j->tensors[j->order[r]];
        size_t nb = (size_t)tt_numel(t) * tt_dtype_size(t->dtype);
        /* tt_save made every tensor contiguous first */
        if (nb && fwrite((const char *)t->storage->data + (size_t)t->offset * tt_dtype_size(t->dtype),
                         1, nb, fp) != nb) {
            snprintf(errtext, 128, "short write");
            return -1;
        }
    }
    return 0;
}

tt_status tt_save(const char *path, int n, const char *const *names, const tt_tensor *const *tensors,
                  int nmeta, const char *const *meta)
{
    char shown[96];
    for (int i = 0; i < n; i++) {
        if (!names[i][0]) return tt__err(TT_EARG, "save: a tensor needs a non-empty name; hint: {name = tensor, ...}");
        if (strcmp(names[i], "__metadata__") == 0)
            return tt__err(TT_EARG, "save: '__metadata__' is the format's own key; name the tensor otherwise");
        if (!valid_utf8(names[i]))
            return tt__err(TT_EARG, "save: tensor name '%s' is not valid UTF-8; hint: the header is JSON, "
                           "names are UTF-8 text", escaped(shown, sizeof shown, names[i]));
        if (!st_dtype_name(tensors[i]->dtype))
            return tt__err(TT_EARG, "save: tensor '%s' has dtype %s, which safetensors has no name for",
                           names[i], tt_dtype_name(tensors[i]->dtype));
        if (!tensors[i]->storage)
            return tt__err(TT_EARG, "save: tensor '%s' is empty (closed?)", names[i]);
    }
    for (int i = 0; i < 2 * nmeta; i++)
        if (!valid_utf8(meta[i]))
            return tt__err(TT_EARG, "save: metadata %s '%s' is not valid UTF-8; hint: the header is JSON, "
                           "metadata is UTF-8 text", i % 2 ? "value" : "key", escaped(shown, sizeof shown, meta[i]));

    save_job j = { n, names, NULL, NULL, nmeta, meta, NULL, 0 };
    tt_tensor *contig = calloc((size_t)n + 1, sizeof *contig);
    const tt_tensor **tp = calloc((size_t)n + 1, sizeof *tp);
    j.order = malloc(((size_t)n + 1) * sizeof *j.order);
    tt_status st = TT_OK;
    if (!contig || !tp || !j.order) {
        st = tt__err(TT_ENOMEM, "save: out of memory writing '%s'", path);
        goto done;
    }
    for (int i = 0; i < n && st == TT_OK; i++) {
        st = tt__contiguous(&contig[i], tensors[i], "save");
        tp[i] = &contig[i];
        j.order[i] = i;
    }
    if (st != TT_OK) goto done;
    j.tensors = tp;
    sort_job = &j;
    qsort(j.order, (size_t)n, sizeof *j.order, by_name);
    for (int r = 1; r < n; r++)
        if (strcmp(names[j.order[r]], names[j.order[r - 1]]) == 0) {
            st = tt__err(TT_EARG, "save: two tensors are named '%s'", names[j.order[r]]);
            goto done;
        }
    st = build_header(path, &j);
    if (st == TT_OK && (st = tt__write_file(path, "checkpoint", emit_safetensors, &j)) != TT_OK) {
        char why[TT__ERRMSG_SIZE];
        snprintf(why, sizeof why, "%s", tt_errmsg());
        st = tt__err(st, "save: %s", why);          /* the writer's message names no op */
    }
done:
    if (contig)
        for (int i = 0; i < n; i++) tt_tensor_release(&contig[i]);
    free(contig);
    free(tp);
    free(j.order);
    free(j.header);
    return st;
}

/* ===== Reading: a small strict JSON reader for the header ===== */

typedef struct reader {
    const char *start, *p, *end;
    const char *path;
    tt_status st;               /* first error, or TT_OK */
} reader;

static int fail(reader *r, const char *fmt, const char *what)
{
    if (r->st == TT_OK)
        r->st = tt__err(TT_EIO, "load: '%s' is not a safetensors file: %s%s", r->path, fmt, what ? what : "");
    return 0;
}

static void skip_ws(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static int expect(reader *r, char c)
{
    skip_ws(r);
    if (r->p < r->end && *r->p == c) { r->p++; return 1; }
    char what[64];
    if (r->p >= r->end) snprintf(what, sizeof what, "'%c' expected, the header ends", c);
    else snprintf(what, sizeof what, "'%c' expected at header byte %ld", c, (long)(r->p - r->start));
    return fail(r, "bad JSON in the header: ", what);
}

static void put_utf8(tt_strbuf *b, unsigned cp)
{
    char u[4];
    size_t k;
    if (cp < 0x80) { u[0] = (char)cp; k = 1; }
    else if (cp < 0x800) { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 63)); k = 2; }
    else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | cp >> 12); u[1] = (char)(0x80 | ((cp >> 6) & 63));
        u[2] = (char)(0x80 | (cp & 63)); k = 3;
    } else {
        u[0] = (char)(0xF0 | cp >> 18); u[1] = (char)(0x80 | ((cp >> 12) & 63));
        u[2] = (char)(0x80 | ((cp >> 6) & 63)); u[3] = (char)(0x80 | (cp & 63)); k = 4;
    }
    tt_strbuf_add(b, u, k);
}

static int hex4(reader *r, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        if (r->p >= r->end) return 0;
        char c = *r->p++;
        *v <<= 4;
        if (c >= '0' && c <= '9') *v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') *v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') *v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    return 1;
}

/* A JSON string into a malloc'd C string (NULL on error). A NUL inside is
   refused: names are C strings here. */
static char *read_string(reader *r)
{
    skip_ws(r);
    if (r->p >= r->end || *r->p != '"') { fail(r, "bad JSON in the header: a string expected", NULL); return NULL; }
    r->p++;
    const char *q = r->p;               /* the common case, plain ASCII: copied at once */
    while (q < r->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20 && (unsigned char)*q < 0x80) q++;
    if (q < r->end && *q == '"') {
        char *s = malloc((size_t)(q - r->p) + 1);
        if (!s) { r->st = tt__err(TT_ENOMEM, "load: out of memory reading '%s'", r->path); return NULL; }
        memcpy(s, r->p, (size_t)(q - r->p));
        s[q - r->p] = 0;
        r->p = q + 1;
        return s;
    }
    tt_strbuf b = {0};
    tt_strbuf_add(&b, "", 0);
    while (r->p < r->end && *r->p != '"') {
        unsigned char c = (unsigned char)*r->p;
        if (c < 0x20) { fail(r, "bad JSON in the header: a control character in a string", NULL); goto bad; }
        if (c != '\\') {
            int k = tt_utf8_len((const unsigned char *)r->p, (size_t)(r->end - r->p));
            if (k == 0) { fail(r, "the header is not valid UTF-8", NULL); goto bad; }
            tt_strbuf_add(&b, r->p, (size_t)k);
            r->p += k;
            continue;
        }
        r->p++;
        if (r->p >= r->end) break;
        char e = *r->p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char out[] = "\"\\/\b\f\n\r\t";
            tt_strbuf_add(&b, &out[simple - "\"\\/bfnrt"], 1);
        } else if (e == 'u') {
            unsigned cp, lo;
            if (!hex4(r, &cp)) { fail(r, "bad JSON in the header: a bad \\u escape", NULL); goto bad; }
            if (cp >= 0xD800 && cp < 0xDC00) {          /* a surrogate pair */
                if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u') {
                    fail(r, "bad JSON in the header: a lone surrogate", NULL); goto bad;
                }
                r->p += 2;
                if (!hex4(r, &lo) || lo < 0xDC00 || lo >= 0xE000) {
                    fail(r, "bad JSON in the header: a lone surrogate", NULL); goto bad;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                fail(r, "bad JSON in the header: a lone surrogate", NULL); goto bad;
            }
            if (cp == 0) { fail(r, "a NUL character in a name", NULL); goto bad; }
            put_utf8(&b, cp);
        } else {
            fail(r, "bad JSON in the header: a bad escape in a string", NULL); goto bad;
        }
    }
    if (r->p >= r->end) { fail(r, "bad JSON in the header: a string does not end", NULL); goto bad; }
    r->p++;
    if (b.oom) { r->st = tt__err(TT_ENOMEM, "load: out of memory reading '%s'", r->path); goto bad; }
    return b.p;
bad:
    free(b.p);
    return NULL;
}

/* A non-negative JSON integer that fits in int64. */
static int read_uint(reader *r, const char *what, int64_t *v)
{
    skip_ws(r);
    if (r->p >= r->end || *r->p < '0' || *r->p > '9')
        return fail(r, what, " must be non-negative integers");
    uint64_t x = 0;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
        if (x > (uint64_t)(INT64_MAX - 9) / 10) return fail(r, what, " holds a number too large");
        x = x * 10 + (uint64_t)(*r->p++ - '0');
    }
    if (r->p < r->end && (*r->p == '.' || *r->p == 'e' || *r->p == 'E'))
        return fail(r, what, " must be integers");
    *v = (int64_t)x;
    return 1;
}

/* Skips any JSON value (unknown keys of an entry), nesting at most MAX_DEPTH. */
static int skip_value(reader *r, int depth)
{
    skip_ws(r);
    if (r->p >= r->end) return fail(r, "bad JSON in the header: a value expected", NULL);
    if (depth > MAX_DEPTH) return fail(r, "the header nests too deeply", NULL);
    char c = *r->p;
    if (c == '"') { char *s = read_string(r); free(s); return s != NULL; }
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        r->p++;
        skip_ws(r);
        if (r->p < r->end && *r->p == close) { r->p++; return 1; }
        for (;;) {
            if (c == '{') {
                char *k = read_string(r);
                if (!k) return 0;
                free(k);
                if (!expect(r, ':')) return 0;
            }
            if (!skip_value(r, depth + 1)) return 0;
            skip_ws(r);
            if (r->p < r->end && *r->p == ',') { r->p++; continue; }
            return expect(r, close);
        }
    }
    while (r->p < r->end && (strchr("+-.eE", *r->p) || (*r->p >= '0' && *r->p <= '9') ||
                             (*r->p >= 'a' && *r->p <= 'z')))
        r->p++;
    return 1;
}

typedef struct entry {
    char *name;
    tt_dtype dt;
    int ndim;
    int64_t shape[TT_MAX_DIMS];
    int64_t begin, end;
} entry;

static int read_entry(reader *r, entry *e)
{
    int have_dtype = 0, have_shape = 0, have_offsets = 0;
    if (!expect(r, '{')) return 0;
    skip_ws(r);
    if (r->p < r->end && *r->p == '}') r->p++;
    else for (;;) {
        char *key = read_string(r);
        if (!key || !expect(r, ':')) { free(key); return 0; }
        int *have = strcmp(key, "dtype") == 0 ? &have_dtype : strcmp(key, "shape") == 0 ? &have_shape
                    : strcmp(key, "data_offsets") == 0 ? &have_offsets : NULL;
        if (have && *have) {            /* as the reference reader: which of the two would be meant? */
            char what[160];
            snprintf(what, sizeof what, "tensor '%.60s' has two \"%s\" fields", e->name, key);
            free(key);
            return fail(r, what, NULL);
        }
        if (strcmp(key, "dtype") == 0) {
            char *dt = read_string(r);
            if (!dt) { free(key); return 0; }
            size_t i = 0;
            while (i < sizeof DTYPES / sizeof DTYPES[0] && strcmp(DTYPES[i].name, dt) != 0) i++;
            if (i == sizeof DTYPES / sizeof DTYPES[0]) {
                char what[160];
                snprintf(what, sizeof what, "'%.40s' of tensor '%.60s' (F32, BF16, F16, I64 and BOOL are read)", dt, e->name);
                free(dt); free(key);
                return fail(r, "unsupported dtype ", what);
            }
            e->dt = DTYPES[i].dt;
            free(dt);
            have_dtype = 1;
        } else if (strcmp(key, "shape") == 0 || strcmp(key, "data_offsets") == 0) {
            int is_shape = key[0] == 's';
            int64_t v[TT_MAX_DIMS + 1];
            int n = 0;
            if (!expect(r, '[')) { free(key); return 0; }
            skip_ws(r);
            if (r->p < r->end && *r->p == ']') r->p++;
            else for (;;) {
                if (n == (is_shape ? TT_MAX_DIMS : 2)) {
                    free(key);
                    return fail(r, is_shape ? "a shape has more than 8 dims" : "data_offsets has more than 2 numbers",
                                NULL);
                }
                if (!read_uint(r, is_shape ? "shape sizes" : "data_offsets", &v[n++])) { free(key); return 0; }
                skip_ws(r);
                if (r->p < r->end && *r->p == ',') { r->p++; continue; }
                if (!expect(r, ']')) { free(key); return 0; }
                break;
            }
            if (is_shape) {
                e->ndim = n;
                memcpy(e->shape, v, (size_t)n * sizeof v[0]);
                have_shape = 1;
            } else {
                if (n != 2 || v[1] < v[0]) { free(key); return fail(r, "data_offsets must be [begin, end] with begin <= end", NULL); }
                e->begin = v[0];
                e->end = v[1];
                have_offsets = 1;
            }
        } else if (!skip_value(r, 1)) {
            free(key);
            return 0;
        }
        free(key);
        skip_ws(r);
        if (r->p < r->end && *r->p == ',') { r->p++; continue; }
        if (!expect(r, '}')) return 0;
        break;
    }
    if (!have_dtype || !have_shape || !have_offsets) {
        char what[96];
        snprintf(what, sizeof what, "tensor '%.60s' lacks %s", e->name,
                 !have_dtype ? "\"dtype\"" : !have_shape ? "\"shape\"" : "\"data_offsets\"");
        return fail(r, what, NULL);
    }
    return 1;
}

static int by_begin(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    return a->begin < b->begin ? -1 : a->begin > b->begin ? 1 : (a->end > b->end) - (a->end < b->end);
}

void tt_loaded_free(tt_loaded *f)
{
    for (int i = 0; i < f->n; i++) {
        free(f->names[i]);
        tt_tensor_release(&f->tensors[i]);
    }
    for (int i = 0; i < 2 * f->nmeta; i++) free(f->meta[i]);
    free(f->names);
    free(f->tensors);
    free(f->meta);
    memset(f, 0, sizeof *f);
}

/* The __metadata__ object: strings to strings, as the format says. */
static int read_metadata(reader *r, tt_loaded *f)
{
    if (!expect(r, '{')) return 0;
    skip_ws(r);
    if (r->p < r->end && *r->p == '}') { r->p++; return 1; }
    for (;;) {
        char *k = read_string(r);
        if (!k) return 0;
        if (!expect(r, ':')) { free(k); return 0; }
        skip_ws(r);
        if (r->p >= r->end || *r->p != '"') { free(k); return fail(r, "__metadata__ values must be strings", NULL); }
        char *v = read_string(r);
        if (!v) { free(k); return 0; }
        char **m = realloc(f->meta, (size_t)(f->nmeta + 1) * 2 * sizeof *m);
        if (!m) {
            free(k); free(v);
            r->st = tt__err(TT_ENOMEM, "load: out of memory reading '%s'", r->path);
            return 0;
        }
        f->meta = m;
        m[2 * f->nmeta] = k;
        m[2 * f->nmeta + 1] = v;
        f->nmeta++;
        skip_ws(r);
        if (r->p < r->end && *r->p == ',') { r->p++; continue; }
        return expect(r, '}');
    }
}

static int by_string(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

/* A __metadata__ key given twice is refused, as a tensor name given twice
   is: a reader that kept one of the two values would lose the other. */
static int distinct_meta_keys(reader *r, const tt_loaded *f)
{
    if (f->nmeta < 2) return 1;
    char **keys = malloc((size_t)f->nmeta * sizeof *keys);
    if (!keys) { r->st = tt__err(TT_ENOMEM, "load: out of memory reading '%s'", r->path); return 0; }
    for (int i = 0; i < f->nmeta; i++) keys[i] = f->meta[2 * i];
    qsort(keys, (size_t)f->nmeta, sizeof *keys, by_string);
    int ok = 1;
    for (int i = 1; i < f->nmeta && ok; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0) {
            char what[96];
            snprintf(what, sizeof what, "__metadata__ has two keys '%.60s'", keys[i]);
            ok = fail(r, what, NULL);
        }
    free(keys);
    return ok;
}

/* Whether the n entries' names differ, through a hash set (a header may
   name hundreds of thousands of tensors: comparing every pair took a
   minute at 200k). 0 with *twice set to a repeated name, or with *twice
   NULL when out of memory. */
static int distinct_names(const entry *es, int n, const char **twice)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)n) cap *= 2;
    int *slots = malloc(cap * sizeof *slots);           /* entry index + 1; 0 is empty */
    if (!slots) return 0;
    memset(slots, 0, cap * sizeof *slots);
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        uint64_t h = 1469598103934665603ull;            /* FNV-1a */
        for (const unsigned char *c = (const unsigned char *)es[i].name; *c; c++) h = (h ^ *c) * 1099511628211ull;
        for (size_t k = (size_t)h & (cap - 1);; k = (k + 1) & (cap - 1)) {
            if (slots[k] == 0) { slots[k] = i + 1; break; }
            if (strcmp(es[slots[k] - 1].name, es[i].name) == 0) { *twice = es[i].name; ok = 0; break; }
        }
    }
    free(slots);
    return ok;
}

/* Each entry's byte range against its shape and dtype; the ranges, sorted
   by where they begin, tile [0, datalen); the names distinct. 0 (r->st
   set) when one fails. */
static int check_entries(reader *r, entry *es, int n, int64_t datalen)
{
    char what[192];
    for (int i = 0; i < n; i++) {
        int64_t numel = 1;
        for (int d = 0; d < es[i].ndim; d++) {
            if (es[i].shape[d] && numel > INT64_MAX / 8 / es[i].shape[d]) {
                snprintf(what, sizeof what, "the shape of '%.60s' is too large", es[i].name);
                fail(r, what, NULL);
                return 0;
            }
            numel *= es[i].shape[d];
        }
        int64_t want = numel * (int64_t)tt_dtype_size(es[i].dt);
        if (es[i].end - es[i].begin != want) {
            snprintf(what, sizeof what, "tensor '%.60s' has data_offsets [%lld, %lld] (%lld bytes) but its "
                     "shape and dtype need %lld bytes", es[i].name, (long long)es[i].begin,
                     (long long)es[i].end, (long long)(es[i].end - es[i].begin), (long long)want);
            fail(r, what, NULL);
            return 0;
        }
    }
    /* in the order of their bytes: the reader then reads the data straight
       through, never seeking back (a seek drops stdio's buffer: a read
       call per tensor) */
    if (n) qsort(es, (size_t)n, sizeof *es, by_begin);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        if (es[i].begin != at) {
            snprintf(what, sizeof what, "tensor '%.60s' starts at data byte %lld where %lld was expected "
                     "(byte ranges must tile the data without gaps or overlaps)",
                     es[i].name, (long long)es[i].begin, (long long)at);
            fail(r, what, NULL);
            return 0;
        }
        at = es[i].end;
    }
    const char *twice = NULL;
    if (!distinct_names(es, n, &twice)) {
        if (twice) {
            snprintf(what, sizeof what, "two tensors are named '%.60s'", twice);
            fail(r, what, NULL);
        } else {
            r->st = tt__err(TT_ENOMEM, "load: out of memory reading '%s'", r->path);
        }
        return 0;
    }
    if (at != datalen) {
        snprintf(what, sizeof what, "the tensors hold %lld bytes of data but the file has %lld after the header",
                 (long long)at, (long long)datalen);
        fail(r, what, NULL);
        return 0;
    }
    return 1;
}

/* Parses the header into entries; checks each entry's size against its
   byte range and that the ranges tile [0, datalen). */
static tt_status parse_header(reader *r, tt_loaded *f, entry **out, int *count, int64_t datalen)
{
    entry *es = NULL;
    int n = 0, cap = 0, seen_meta = 0;
    if (!expect(r, '{')) goto bad;
    skip_ws(r);
    if (r->p < r->end && *r->p == '}') r->p++;
    else for (;;) {
        char *name = read_string(r);
        if (!name) goto bad;
        if (!expect(r, ':')) { free(name); goto bad; }
        if (strcmp(name, "__metadata__") == 0) {
            free(name);
            if (seen_meta++ || !read_metadata(r, f) || !distinct_meta_keys(r, f)) {
                if (r->st == TT_OK) fail(r, "two __metadata__ keys", NULL);
                goto bad;
            }
        } else {
            if (n == cap) {
                int nc = cap ? 2 * cap : 16;
                entry *g = realloc(es, (size_t)nc * sizeof *g);
                if (!g) { free(name); r->st = tt__err(TT_ENOMEM, "load: out of memory reading '%s'", r->path); goto bad; }
                es = g;
                cap = nc;
            }
            if (!name[0]) {         /* tt.save refuses one too: a name is a Lua table key */
                free(name);
                fail(r, "a tensor has an empty name", NULL);
                goto bad;
            }
            memset(&es[n], 0, sizeof es[n]);
            es[n].name = name;
            n++;
            if (!read_entry(r, &es[n - 1])) goto bad;
        }
        skip_ws(r);
        if (r->p < r->end && *r->p == ',') { r->p++; continue; }
        if (!expect(r, '}')) goto bad;
        break;
    }
    skip_ws(r);
    if (r->p != r->end) { fail(r, "bad JSON in the header: bytes after the closing '}'", NULL); goto bad; }

    if (!check_entries(r, es, n, datalen)) goto bad;
    *out = es;
    *count = n;
    return TT_OK;
bad:
    for (int i = 0; i < n; i++) free(es[i].name);
    free(es);
    return r->st;
}

tt_status tt_load(tt_loaded *f, const char *path)
{
    memset(f, 0, sizeof *f);
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return tt__err(TT_EIO, "load: cannot read '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return tt__err(TT_EIO, "load: cannot read '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return tt__err(TT_EIO, "load: '%s' is not a regular file (%s)", path,
                       S_ISDIR(sb.st_mode) ? "a folder" : S_ISFIFO(sb.st_mode) ? "a FIFO"
                       : S_ISCHR(sb.st_mode) ? "a character device" : S_ISSOCK(sb.st_mode) ? "a socket"
                       : "a device");
    }
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        close(fd);
        return tt__err(TT_EIO, "load: cannot read '%s': %s", path, strerror(errno));
    }
    tt_status st = TT_OK;
    char *header = NULL;
    entry *es = NULL;
    int n = 0;
    unsigned char len8[8];
    int64_t size = (int64_t)sb.st_size;
    if (size < 8 || fread(len8, 1, 8, fp) != 8) {
        st = tt__err(TT_EIO, "load: '%s' is not a safetensors file: %lld bytes, shorter than the "
                     "8-byte header length", path, (long long)size);
        goto done;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | len8[i];
    if (hlen > (uint64_t)(size - 8)) {
        st = tt__err(TT_EIO, "load: '%s' is not a safetensors file: the header length says %llu bytes "
                     "but only %lld follow (truncated?)", path, (unsigned long long)hlen, (long long)(size - 8));
        goto done;
    }
    if (hlen > (uint64_t)MAX_HEADER || hlen < 2) {
        st = tt__err(TT_EIO, "load: '%s' is not a safetensors file: a header of %llu bytes (2 to %lld allowed)",
                     path, (unsigned long long)hlen, (long long)MAX_HEADER);
        goto done;
    }
    header = malloc((size_t)hlen);
    if (!header) { st = tt__err(TT_ENOMEM, "load: out of memory reading '%s'", path); goto done; }
    if (fread(header, 1, (size_t)hlen, fp) != (size_t)hlen) {
        st = tt__err(TT_EIO, "load: cannot read '%s': %s", path, ferror(fp) ? strerror(errno) : "short read");
        goto done;
    }
    reader r = { header, header, header + hlen, path, TT_OK };
    while (r.end > r.p && r.end[-1] == ' ') r.end--;     /* the alignment padding */
    if (*r.p != '{') {
        st = tt__err(TT_EIO, "load: '%s' is not a safetensors file: the header does not start with '{'", path);
        goto done;
    }
    st = parse_header(&r, f, &es, &n, size - 8 - (int64_t)hlen);
    if (st != TT_OK) goto done;

    f->names = calloc((size_t)n + 1, sizeof *f->names);
    f->tensors = calloc((size_t)n + 1, sizeof *f->tensors);
    if (!f->names || !f->tensors) { st = tt__err(TT_ENOMEM, "load: out of memory reading '%s'", path); goto done; }
    for (int i = 0; i < n; i++) {
        st = tt__alloc(&f->tensors[i], "load", es[i].dt, es[i].ndim, es[i].shape, NULL);
        if (st != TT_OK) {
            char why[TT__ERRMSG_SIZE];          /* tt__err writes the buffer tt_errmsg reads */
            snprintf(why, sizeof why, "%s", tt_errmsg());
            st = tt__err(st, "load: tensor '%.60s' of '%s': %s", es[i].name, path, why);
            goto done;
        }
        f->names[i] = es[i].name;
        es[i].name = NULL;
        f->n = i + 1;
        size_t nb = (size_t)(es[i].end - es[i].begin);
        if (nb && (fread(f->tensors[i].storage->data, 1, nb, fp) != nb)) {   /* at its begin: ranges tile the data */
            st = tt__err(TT_EIO, "load: cannot read '%s': %s", path, ferror(fp) ? strerror(errno) : "short read");
            goto done;
        }
        if (es[i].dt == TT_BOOL) {
            const uint8_t *b = f->tensors[i].storage->data;
            for (size_t k = 0; k < nb; k++)
                if (b[k] > 1) {
                    st = tt__err(TT_EIO, "load: '%s' is not a safetensors file: BOOL tensor '%s' holds "
                                 "byte %u at element %zu (0 or 1 allowed)", path, f->names[i], b[k], k);
                    goto done;
                }
        }
    }
done:
    if (es) for (int i = 0; i < n; i++) free(es[i].name);
    free(es);
    free(header);
    fclose(fp);
    if (st != TT_OK) tt_loaded_free(f);
    return st;
}
