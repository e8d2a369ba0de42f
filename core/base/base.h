/*
** base.h — the lowest layer of the core: status codes and the error
** message, interned strings, storage (refcounts, the buffer cache, the
** memory cap), the atomic file writer. Includes nothing of the core; tt.h
** re-exports the public half, the tt__ half is for the core's own files.
*/
#ifndef TT_BASE_H
#define TT_BASE_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define TT__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TT__PRINTF(f, a)
#endif

/* ===== Status and errors (error.c) ===== */

typedef enum tt_status {
    TT_OK = 0,
    TT_ENOMEM,   /* allocation failed or memory cap exceeded */
    TT_ESHAPE,   /* shapes do not fit together */
    TT_EARG,     /* a bad argument (dim out of range, wrong dtype, ...) */
    TT_EIO       /* file could not be written */
} tt_status;

/* The message of the last failure ("op: what is wrong [shapes]; hint").
   Static buffer: valid until the next failing call. */
const char *tt_errmsg(void);
#define TT__ERRMSG_SIZE 1024    /* the buffer's size, terminator included */
/* Sets the message returned by tt_errmsg and returns st. */
tt_status tt__err(tt_status st, const char *fmt, ...) TT__PRINTF(2, 3);

/* ===== Interned strings (intern.c) ===== */

/* Interned copy of s: equal strings give equal pointers; lives until exit
   (dim names and labels). Their bytes count against the memory cap: NULL
   (tt_errmsg says why) when out of memory or when s would pass the cap. */
const char *tt_intern(const char *s);
/* Frees every interned string (at exit: no name may be used afterwards). */
void tt__intern_free(void);

/* ===== Storage and the memory cap (storage.c) ===== */

/* Refcounted flat buffer. bool elements are one byte (0 or 1). version
   counts the writes into it after it was made (an optimizer step, an
   in-place op), as PyTorch's version counter: a tensor saved for backward
   remembers it, and backward() refuses a saved tensor written since. */
typedef struct tt_storage {
    void *data;
    int64_t nbytes;
    int refcount;
    int64_t version;
} tt_storage;

/* Memory: cap on live tensor bytes (0 = none); current and peak usage. */
void tt_set_max_memory(int64_t bytes);
int64_t tt_get_max_memory(void);
int64_t tt_memory_in_use(void);
int64_t tt_memory_peak(void);
void tt_memory_reset_peak(void);
/* Called when an allocation would pass the memory cap, before giving up:
   the interpreter collects garbage tensors there. */
void tt_set_reclaim(void (*fn)(void *ud), void *ud);

/* Storage: zeroed when zero != 0; counts against the memory cap. */
tt_status tt__storage_new(tt_storage **out, int64_t nbytes, int zero);
void tt__storage_retain(tt_storage *s);
void tt__storage_release(tt_storage *s);
/* Frees the buffers kept for reuse (at exit). */
void tt__storage_drop_cache(void);
/* Other C memory a script's call controls (a figure's canvas): counted
   against the memory cap like tensors; TT_ENOMEM with the cap's message
   when it would pass. Release the same amount when freed. */
tt_status tt__mem_reserve(int64_t bytes);
void tt__mem_release(int64_t bytes);
/* The same for interned strings, counted apart so that the cap's message
   can say how much of the use they are; tt__names_forget when all go. */
tt_status tt__names_reserve(int64_t bytes);
void tt__names_forget(void);

/* A size in binary units, as memory messages give it: "1.5 MiB", "640 bytes"
   (storage.c: the memory cap's messages use it; so do the sandbox's). */
void tt_fmt_bytes(char *buf, size_t n, double bytes);

/* ===== A growing text buffer (strbuf.c) ===== */

/* Start it zeroed ({0}); capped = 1 counts its memory against the memory
   cap. Appends that cannot get memory set oom and do nothing after it; p is
   NUL-terminated whenever n > 0. tt_strbuf_free leaves it empty, reusable. */
typedef struct tt_strbuf {
    char *p;
    size_t n, cap;
    int oom;
    int capped;
    int64_t held;           /* bytes counted against the cap */
} tt_strbuf;
void tt_strbuf_add(tt_strbuf *b, const char *s, size_t n);
void tt_strbuf_str(tt_strbuf *b, const char *s);
void tt_strbuf_fmt(tt_strbuf *b, const char *fmt, ...) TT__PRINTF(2, 3);
void tt_strbuf_vfmt(tt_strbuf *b, const char *fmt, va_list ap);
void tt_strbuf_free(tt_strbuf *b);

/* ===== Atomic file writes (file.c) ===== */

/* The one atomic file writer (figures, safetensors): emit writes the bytes
   into fp and returns 0, or nonzero with the reason in errtext. The file
   appears at path complete or not at all (a temporary + rename; removed on
   failure). TT_EIO "cannot write 'path': reason". what names the kind of
   file for the watchdog's message ("figure", "checkpoint"). */
typedef int (*tt_file_emit)(FILE *fp, void *ctx, char errtext[128]);
tt_status tt__write_file(const char *path, const char *what, tt_file_emit emit, void *ctx);
/* For a hard stop from another thread (the --timeout watchdog): the path of
   the file being written (NULL when none) and, in *what, its kind; and, for
   a process about to _exit, stopping all writes: the temporary of the one in
   progress is removed and no later one can make another (the writer blocks). */
const char *tt_file_in_progress(const char **what);
void tt_file_stop_writes(void);

#endif
