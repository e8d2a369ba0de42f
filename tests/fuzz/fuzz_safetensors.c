/*
** fuzz_safetensors.c — libFuzzer harness for tt_load, the safetensors
** reader: a file is untrusted input. An input is one of
**   'J' HEADER 0x00 DATA   the JSON header alone; the harness writes the
**                          8-byte length in front (so the fuzzer reaches
**                          the JSON without guessing the length)
**   anything else          the whole file, length prefix included
** A load that fails must carry a message naming the file. A load that
** succeeds must hold what the header said (each tensor's bytes inside the
** file, BOOL bytes 0 or 1), and save -> load must give back the same
** names, metadata, dtypes, shapes and bytes. Build and run: make fuzz-parsers.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], in_path[96], out_path[96];

static void remove_dir(void)
{
    unlink(in_path);
    unlink(out_path);
    rmdir(dir);
}

static void write_file(const char *path, const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL) abort();
    if ((na && fwrite(a, 1, na, f) != na) || (nb && fwrite(b, 1, nb, f) != nb)) abort();
    if (fclose(f) != 0) abort();
}

static void fail(const char *what, const char *name)
{
    fprintf(stderr, "fuzz_safetensors: %s ('%s')\n", what, name ? name : "");
    abort();
}

static size_t nbytes(const tt_tensor *t) { return (size_t)tt_numel(t) * tt_dtype_size(t->dtype); }

static const uint8_t *bytes_of(const tt_tensor *t)
{
    return (const uint8_t *)t->storage->data + (size_t)t->offset * tt_dtype_size(t->dtype);
}

static void check_loaded(const tt_loaded *f, size_t file_size)
{
    size_t total = 0;
    for (int i = 0; i < f->n; i++) {
        const tt_tensor *t = &f->tensors[i];
        if (f->names[i] == NULL || strcmp(f->names[i], "__metadata__") == 0) fail("a bad name", f->names[i]);
        if (!tt_is_contiguous(t)) fail("a loaded tensor is not contiguous", f->names[i]);
        if (t->dtype != TT_FLOAT32 && t->dtype != TT_INT64 && t->dtype != TT_BOOL && t->dtype != TT_BFLOAT16
            && t->dtype != TT_FLOAT16) fail("a bad dtype", f->names[i]);
        total += nbytes(t);
        if (t->dtype == TT_BOOL) {
            const uint8_t *b = bytes_of(t);
            for (size_t k = 0; k < nbytes(t); k++)
                if (b[k] > 1) fail("a BOOL byte other than 0 or 1 was accepted", f->names[i]);
        }
    }
    if (total > file_size) fail("the tensors hold more bytes than the file", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 20) return 0;
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fuzz_safetensors.XXXXXX");
        if (mkdtemp(dir) == NULL) abort();
        snprintf(in_path, sizeof in_path, "%s/in.safetensors", dir);
        snprintf(out_path, sizeof out_path, "%s/out.safetensors", dir);
        atexit(remove_dir);
    }
    size_t file_size = size;
    if (size >= 1 && data[0] == 'J') {
        const uint8_t *h = data + 1, *end = data + size;
        const uint8_t *nul = memchr(h, 0, (size_t)(end - h));
        size_t hlen = nul ? (size_t)(nul - h) : (size_t)(end - h);
        const uint8_t *rest = nul ? nul + 1 : end;
        uint8_t len8[8];
        for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
        uint8_t *buf = malloc(8 + hlen + 1);
        if (buf == NULL) abort();
        memcpy(buf, len8, 8);
        memcpy(buf + 8, h, hlen);
        write_file(in_path, buf, 8 + hlen, rest, (size_t)(end - rest));
        file_size = 8 + hlen + (size_t)(end - rest);
        free(buf);
    } else {
        write_file(in_path, data, size, NULL, 0);
    }

    tt_loaded f;
    if (tt_load(&f, in_path) != TT_OK) {
        if (strstr(tt_errmsg(), in_path) == NULL) fail("a failed load does not name the file", tt_errmsg());
        if (f.n || f.nmeta || f.names || f.tensors || f.meta) fail("a failed load left results behind", NULL);
        return 0;
    }
    check_loaded(&f, file_size);

    /* round trip: what was read saves, and reads back the same */
    const tt_tensor **ts = malloc(((size_t)f.n + 1) * sizeof *ts);
    if (ts == NULL) abort();
    for (int i = 0; i < f.n; i++) ts[i] = &f.tensors[i];
    if (tt_save(out_path, f.n, (const char *const *)f.names, ts, f.nmeta, (const char *const *)f.meta) != TT_OK)
        fail("a loaded file does not save", tt_errmsg());
    free(ts);
    tt_loaded g;
    if (tt_load(&g, out_path) != TT_OK) fail("a saved file does not load", tt_errmsg());
    if (g.n != f.n || g.nmeta != f.nmeta) fail("the round trip changed the counts", NULL);
    for (int i = 0; i < f.n; i++) {
        int j = 0;
        while (j < g.n && strcmp(g.names[j], f.names[i]) != 0) j++;
        if (j == g.n) fail("the round trip lost a tensor", f.names[i]);
        const tt_tensor *a = &f.tensors[i], *b = &g.tensors[j];
        if (a->dtype != b->dtype || a->ndim != b->ndim) fail("the round trip changed a dtype or rank", f.names[i]);
        for (int d = 0; d < a->ndim; d++)
            if (a->shape[d] != b->shape[d]) fail("the round trip changed a shape", f.names[i]);
        if (nbytes(a) && memcmp(bytes_of(a), bytes_of(b), nbytes(a)) != 0)
            fail("the round trip changed the bytes", f.names[i]);
    }
    for (int k = 0; k < f.nmeta; k++) {
        int j = 0;
        while (j < g.nmeta && strcmp(g.meta[2 * j], f.meta[2 * k]) != 0) j++;
        if (j == g.nmeta || strcmp(g.meta[2 * j + 1], f.meta[2 * k + 1]) != 0) fail("the round trip changed __metadata__", f.meta[2 * k]);
    }
    tt_loaded_free(&g);
    tt_loaded_free(&f);
    return 0;
}
