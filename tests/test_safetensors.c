/*
** test_safetensors.c — tt_save / tt_load: round trips of awkward tensors,
** files made byte by byte here (so the layout is checked against the
** format, not against our own writer), and every malformed header case
** giving its message, never a crash.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "tt.h"

static char dir[64];

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* A file of an 8-byte length (hlen, or strlen(header) when hlen < 0), the
   header text, then data. */
static void write_raw(const char *path, long long hlen, const char *header, const void *data, size_t ndata)
{
    FILE *fp = fopen(path, "wb");
    unsigned char len8[8];
    put_le64(len8, hlen < 0 ? strlen(header) : (uint64_t)hlen);
    fwrite(len8, 1, 8, fp);
    fwrite(header, 1, strlen(header), fp);
    if (ndata) fwrite(data, 1, ndata, fp);
    fclose(fp);
}

static unsigned char *read_all(const char *path, long *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    *n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)*n + 1);
    if (fread(b, 1, (size_t)*n, fp) != (size_t)*n) *n = -1;
    fclose(fp);
    return b;
}

static int find(const tt_loaded *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->names[i], name) == 0) return i;
    return -1;
}

static int same_values(const tt_tensor *a, const tt_tensor *b)
{
    if (a->ndim != b->ndim || a->dtype != b->dtype) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    if (a->dtype != b->dtype) return 0;
    for (int64_t i = 0; i < tt_numel(a); i++) {
        if (a->dtype == TT_INT64 && tt_get_i64(a, i) != tt_get_i64(b, i)) return 0;
        double x = tt_get(a, i), y = tt_get(b, i);
        if (!(x == y || (x != x && y != y))) return 0;
    }
    return 1;
}

static void test_round_trip(void)
{
    char path[128];
    path_of(path, sizeof path, "rt.safetensors");
    int64_t s23[2] = {2, 3}, s4[1] = {4}, s05[2] = {0, 5};
    float v[6] = {1.5f, -2.0f, 3.25f, 1e-30f, -0.0f, 3.4e38f};
    uint8_t bv[4] = {1, 0, 0, 1};
    tt_tensor a = {0}, at = {0}, b = {0}, e = {0}, z = {0}, n = {0}, ids = {0}, idt = {0};
    int64_t iv[6] = {INT64_MIN, -1, 0, 7, (INT64_C(1) << 62) + 1, INT64_MAX};   /* beyond 2^53: bits kept */
    tt_from_buffer(&ids, TT_INT64, 2, s23, iv);
    tt_transpose(&idt, &ids, 0, 1);
    tt_from_buffer(&a, TT_FLOAT32, 2, s23, v);
    tt_transpose(&at, &a, 0, 1);              /* a strided view: saved as its values */
    tt_from_buffer(&b, TT_BOOL, 1, s4, bv);
    tt_empty(&e, TT_FLOAT32, 2, s05);
    tt_full(&z, TT_FLOAT32, 0, NULL, 7.0);    /* 0-d */
    int64_t s1[1] = {3};
    float nanv[3] = {NAN, INFINITY, -INFINITY};
    tt_from_buffer(&n, TT_FLOAT32, 1, s1, nanv);
    const char *names[] = {"w.T", "mask", "empty", "scalar", "special \"quoted\"\nname \xc3\xa9", "nonfinite",
                           "ids.T"};
    const tt_tensor *ts[] = {&at, &b, &e, &z, &a, &n, &idt};
    const char *meta[] = {"format", "pt", "note", "tensortrace \xe2\x9c\x93"};
    CHECK("save a mix of tensors", tt_save(path, 7, names, ts, 2, meta) == TT_OK);

    long nb;
    unsigned char *raw = read_all(path, &nb);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | raw[i];
    CHECK("the header length is a multiple of 8 (data aligned)", hlen % 8 == 0);
    CHECK("the header starts with '{'", raw[8] == '{');
    free(raw);

    tt_loaded f;
    CHECK("load it back", tt_load(&f, path) == TT_OK);
    CHECK("seven tensors", f.n == 7);
    for (int i = 0; i < 7; i++) {
        int k = find(&f, names[i]);
        CHECK(names[i], k >= 0 && same_values(&f.tensors[k], ts[i]));
        if (k >= 0) CHECK("loaded tensors are contiguous", tt_is_contiguous(&f.tensors[k]));
    }
    CHECK("metadata: two pairs", f.nmeta == 2);
    int seen = 0;
    for (int i = 0; i < f.nmeta; i++)
        for (int j = 0; j < 2; j++)
            if (strcmp(f.meta[2 * i], meta[2 * j]) == 0 && strcmp(f.meta[2 * i + 1], meta[2 * j + 1]) == 0) seen++;
    CHECK("metadata keys and values kept", seen == 2);
    tt_loaded_free(&f);
    tt_tensor *all[] = {&a, &at, &b, &e, &z, &n, &ids, &idt};
    for (int i = 0; i < 8; i++) tt_tensor_release(all[i]);
}

/* The bytes of a file, fixed by the format: our writer must produce them,
   and a file made by hand must load. */
static void test_known_bytes(void)
{
    char path[128];
    path_of(path, sizeof path, "known.safetensors");
    const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"i\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[8,24]},"
                      "\"m\":{\"dtype\":\"BOOL\",\"shape\":[1,3],\"data_offsets\":[24,27]}}";
    size_t hl = strlen(hdr), padded = (hl + 7) / 8 * 8;
    char header[256];
    memset(header, ' ', padded);
    memcpy(header, hdr, hl);
    header[padded] = 0;
    /* 1.0f = 00 00 80 3f, -2.5f = 00 00 20 c0 (little-endian IEEE 754);
       int64 300 = 2c 01 00.., -2 = fe ff .. ff (little-endian two's complement) */
    unsigned char data[27] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0,
                              0x2c, 0x01, 0, 0, 0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                              1, 0, 1};
    write_raw(path, -1, header, data, sizeof data);

    tt_loaded f;
    CHECK("a hand-made file loads", tt_load(&f, path) == TT_OK);
    int ka = find(&f, "a"), km = find(&f, "m"), ki = find(&f, "i");
    CHECK("i = int64 [300, -2]", ki >= 0 && f.tensors[ki].dtype == TT_INT64 && f.tensors[ki].ndim == 1 &&
          tt_get_i64(&f.tensors[ki], 0) == 300 && tt_get_i64(&f.tensors[ki], 1) == -2);
    CHECK("a = [1, -2.5]", ka >= 0 && f.tensors[ka].ndim == 1 && f.tensors[ka].shape[0] == 2 &&
          tt_get(&f.tensors[ka], 0) == 1.0 && tt_get(&f.tensors[ka], 1) == -2.5);
    CHECK("m = bool [1,3] {1,0,1}", km >= 0 && f.tensors[km].dtype == TT_BOOL && f.tensors[km].ndim == 2 &&
          f.tensors[km].shape[1] == 3 && tt_get(&f.tensors[km], 0) == 1 && tt_get(&f.tensors[km], 1) == 0 &&
          tt_get(&f.tensors[km], 2) == 1);
    CHECK("no metadata", f.nmeta == 0);

    /* our writer gives exactly these bytes for the same tensors */
    char out[128];
    path_of(out, sizeof out, "known2.safetensors");
    const char *names[] = {"m", "a", "i"};       /* any order in: sorted by name out */
    const tt_tensor *ts[] = {km >= 0 ? &f.tensors[km] : NULL, ka >= 0 ? &f.tensors[ka] : NULL,
                             ki >= 0 ? &f.tensors[ki] : NULL};
    if (ka >= 0 && km >= 0 && ki >= 0) {
        CHECK("save the loaded tensors", tt_save(out, 3, names, ts, 0, NULL) == TT_OK);
        long n1, n2;
        unsigned char *x = read_all(path, &n1), *y = read_all(out, &n2);
        CHECK("same bytes as the file made by hand", x && y && n1 == n2 && memcmp(x, y, (size_t)n1) == 0);
        free(x);
        free(y);
    }
    tt_loaded_free(&f);

    /* escapes a Python writer may use: \u00e9, a surrogate pair, \/ */
    path_of(path, sizeof path, "esc.safetensors");
    write_raw(path, -1, "{\"caf\\u00e9 \\ud83d\\ude00 a\\/b\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
              "\"__metadata__\":{\"k\":\"v\\n\"}}", data, 4);
    CHECK("JSON escapes in names", tt_load(&f, path) == TT_OK && f.n == 1 &&
          strcmp(f.names[0], "caf\xc3\xa9 \xf0\x9f\x98\x80 a/b") == 0 && f.tensors[0].ndim == 0 &&
          f.nmeta == 1 && strcmp(f.meta[1], "v\n") == 0);
    tt_loaded_free(&f);
}

static void expect_load_error(const char *descr, const char *path, const char *want)
{
    tt_loaded f;
    tt_status st = tt_load(&f, path);
    int ok = st != TT_OK && strstr(tt_errmsg(), want) != NULL && strstr(tt_errmsg(), path) != NULL;
    if (!ok) printf("  %s: got '%s'\n", descr, st == TT_OK ? "ok" : tt_errmsg());
    CHECK(descr, ok);
    CHECK("nothing left after a failed load", f.n == 0 && f.names == NULL && f.tensors == NULL);
    if (st == TT_OK) tt_loaded_free(&f);
}

static void bad_header(const char *descr, const char *header, size_t ndata, const char *want)
{
    char path[128];
    path_of(path, sizeof path, "bad.safetensors");
    static const unsigned char zeros[64] = {0};
    write_raw(path, -1, header, zeros, ndata);
    expect_load_error(descr, path, want);
}

static void test_malformed(void)
{
    char path[128];
    path_of(path, sizeof path, "short.safetensors");
    FILE *fp = fopen(path, "wb");
    fwrite("abc", 1, 3, fp);
    fclose(fp);
    expect_load_error("shorter than 8 bytes", path, "shorter than the 8-byte header length");

    path_of(path, sizeof path, "lying.safetensors");
    write_raw(path, 1000, "{}", NULL, 0);
    expect_load_error("header length past the file", path, "the header length says 1000 bytes but only 2 follow");
    /* a length near 2^64 must not be allocated */
    write_raw(path, (long long)0x7fffffffffffffffLL, "{}", NULL, 0);
    expect_load_error("a huge header length", path, "truncated?");
    write_raw(path, 0, "", NULL, 0);
    expect_load_error("an empty header", path, "a header of 0 bytes");

    path_of(path, sizeof path, "missing.safetensors");
    expect_load_error("no such file", path, "No such file");

    bad_header("not JSON", "[1,2]", 0, "does not start with '{'");
    bad_header("a cut header", "{\"a\":{\"dtype\":\"F32\"", 0, "the header ends");
    bad_header("unknown dtype", "{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
               "unsupported dtype 'F64' of tensor 'a' (F32, BF16, F16, I64 and BOOL are read)");
    bad_header("size does not match the shape",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,8]}}", 8,
               "tensor 'a' has data_offsets [0, 8] (8 bytes) but its shape and dtype need 16 bytes");
    bad_header("a gap between tensors",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12,
               "tensor 'b' starts at data byte 8 where 4 was expected");
    bad_header("overlapping tensors",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
               "tensor 'b' starts at data byte 4 where 8 was expected");
    bad_header("data after the last tensor", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 12,
               "the tensors hold 4 bytes of data but the file has 12 after the header");
    bad_header("data missing", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8,
               "the tensors hold 16 bytes of data but the file has 8");
    bad_header("a negative size", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
               "shape sizes must be non-negative integers");
    bad_header("a fractional size", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
               "shape sizes must be integers");
    bad_header("a shape too large to multiply",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}", 4,
               "the shape of 'a' is too large");
    bad_header("offsets the wrong way round", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4,
               "data_offsets must be [begin, end]");
    bad_header("nine dims", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
               "more than 8 dims");
    bad_header("no data_offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor 'a' lacks \"data_offsets\"");
    bad_header("two tensors of one name",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "two tensors are named 'a'");
    bad_header("metadata values not strings", "{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ values must be strings");
    bad_header("bytes after the object", "{}x", 0, "bytes after the closing '}'");
    bad_header("a NUL in a name", "{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", 4,
               "a NUL character in a name");
    bad_header("a lone surrogate", "{\"\\ud800\":{}}", 0, "a lone surrogate");
    bad_header("invalid UTF-8", "{\"\xff\":{}}", 0, "not valid UTF-8");
    bad_header("deep nesting in an unknown key",
               "{\"a\":{\"x\":[[[[[[[[[[[[1]]]]]]]]]]]],\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", 4,
               "nests too deeply");

    /* a BOOL byte other than 0 or 1 */
    path_of(path, sizeof path, "bool.safetensors");
    unsigned char two[2] = {1, 2};
    write_raw(path, -1, "{\"m\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}", two, 2);
    expect_load_error("a bool byte of 2", path, "BOOL tensor 'm' holds byte 2 at element 1");

    /* unknown keys of an entry are skipped, as other readers do */
    path_of(path, sizeof path, "extra.safetensors");
    unsigned char four[4] = {0, 0, 0x80, 0x3f};
    write_raw(path, -1, "{\"a\":{\"note\":{\"x\":[1,\"y\",true,null]},\"dtype\":\"F32\",\"shape\":[],"
              "\"data_offsets\":[0,4]}}", four, 4);
    tt_loaded f;
    CHECK("unknown keys are skipped", tt_load(&f, path) == TT_OK && f.n == 1 && tt_get(&f.tensors[0], 0) == 1.0);
    tt_loaded_free(&f);
}

static void expect_save_error(const char *descr, tt_status st, const char *want)
{
    int ok = st != TT_OK && strstr(tt_errmsg(), want) != NULL;
    if (!ok) printf("  %s: got '%s'\n", descr, st == TT_OK ? "ok" : tt_errmsg());
    CHECK(descr, ok);
}

static void test_save_errors(void)
{
    char path[128];
    path_of(path, sizeof path, "e.safetensors");
    int64_t s1[1] = {1};
    tt_tensor a = {0};
    tt_zeros(&a, TT_FLOAT32, 1, s1);
    const tt_tensor *two[] = {&a, &a};
    const char *dup[] = {"x", "x"}, *empty[] = {""}, *meta[] = {"__metadata__"}, *bad[] = {"\xc3("};
    expect_save_error("two tensors of one name", tt_save(path, 2, dup, two, 0, NULL), "two tensors are named 'x'");
    expect_save_error("an empty name", tt_save(path, 1, empty, two, 0, NULL), "non-empty name");
    expect_save_error("the metadata key as a name", tt_save(path, 1, meta, two, 0, NULL), "'__metadata__'");
    expect_save_error("a name not UTF-8", tt_save(path, 1, bad, two, 0, NULL), "not valid UTF-8");
    const char *ok1[] = {"x"}, *badmeta[] = {"k", "\xff"};
    expect_save_error("metadata not UTF-8", tt_save(path, 1, ok1, two, 1, badmeta), "metadata value '\\xff' is not valid UTF-8");
    CHECK("no file after a refused save", access(path, F_OK) != 0);
    char nodir[160];
    snprintf(nodir, sizeof nodir, "%s/no/such/e.safetensors", dir);
    expect_save_error("a missing folder", tt_save(nodir, 1, ok1, two, 0, NULL), "save: cannot write");
    tt_tensor_release(&a);
}

/* BF16 and F16: the bytes written down by hand from the formats */
static void test_half_bytes(void)
{
    char path[128];
    path_of(path, sizeof path, "half.safetensors");
    const char *hdr = "{\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,6]},"
                      "\"h\":{\"dtype\":\"F16\",\"shape\":[1,3],\"data_offsets\":[6,12]}}";
    size_t hl = strlen(hdr), padded = (hl + 7) / 8 * 8;
    char header[256];
    memset(header, ' ', padded);
    memcpy(header, hdr, hl);
    header[padded] = 0;
    /* bfloat16 1 = 3f80, -2 = c000, 0.5 = 3f00; float16 1 = 3c00, -2 = c000,
       65504 = 7bff; each little-endian, low byte first */
    unsigned char data[12] = {0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f, 0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b};
    write_raw(path, -1, header, data, sizeof data);
    tt_loaded f;
    CHECK("a hand-made BF16/F16 file loads", tt_load(&f, path) == TT_OK);
    int kb = find(&f, "b"), kh = find(&f, "h");
    CHECK("b = bfloat16 [1, -2, 0.5]", kb >= 0 && f.tensors[kb].dtype == TT_BFLOAT16 && f.tensors[kb].ndim == 1 &&
          tt_get(&f.tensors[kb], 0) == 1.0 && tt_get(&f.tensors[kb], 1) == -2.0 && tt_get(&f.tensors[kb], 2) == 0.5);
    CHECK("h = float16 [1,3] {1, -2, 65504}", kh >= 0 && f.tensors[kh].dtype == TT_FLOAT16 &&
          f.tensors[kh].ndim == 2 && tt_get(&f.tensors[kh], 0) == 1.0 && tt_get(&f.tensors[kh], 1) == -2.0 &&
          tt_get(&f.tensors[kh], 2) == 65504.0);
    if (kb >= 0 && kh >= 0) {
        char out[128];
        path_of(out, sizeof out, "half2.safetensors");
        const char *names[] = {"h", "b"};
        const tt_tensor *ts[] = {&f.tensors[kh], &f.tensors[kb]};
        CHECK("save BF16/F16", tt_save(out, 2, names, ts, 0, NULL) == TT_OK);
        long n1, n2;
        unsigned char *x = read_all(path, &n1), *y = read_all(out, &n2);
        CHECK("BF16/F16: the same bytes as the file made by hand", x && y && n1 == n2 && memcmp(x, y, (size_t)n1) == 0);
        free(x);
        free(y);
    }
    tt_loaded_free(&f);
    /* a strided 16-bit view is written in row-major order */
    float v[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    tt_tensor a, h, t;
    tt_from_buffer(&a, TT_FLOAT32, 2, shape, v);
    tt_to_dtype(&h, &a, TT_FLOAT16);
    tt_transpose(&t, &h, 0, 1);
    const char *name[] = {"t"};
    const tt_tensor *one[] = {&t};
    CHECK("save a transposed float16 view", tt_save(path, 1, name, one, 0, NULL) == TT_OK);
    long n;
    unsigned char *x = read_all(path, &n);
    /* 1, 4, 2, 5, 3, 6 as float16: 3c00 4400 4000 4500 4200 4600 */
    static const unsigned char want[12] = {0x00, 0x3c, 0x00, 0x44, 0x00, 0x40, 0x00, 0x45, 0x00, 0x42, 0x00, 0x46};
    CHECK("its bytes, transposed, little-endian", x && n >= 12 && memcmp(x + n - 12, want, 12) == 0);
    CHECK("its header names F16", x && n > 20 && strstr((const char *)x + 8, "\"dtype\":\"F16\",\"shape\":[3,2]") != NULL);
    free(x);
    tt_tensor_release(&a);
    tt_tensor_release(&h);
    tt_tensor_release(&t);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tt-st-XXXXXX");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 2; }
    test_round_trip();
    test_known_bytes();
    test_half_bytes();
    test_malformed();
    test_save_errors();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    tt_release_caches();
    return check_report();
}
