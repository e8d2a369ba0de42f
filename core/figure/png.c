/*
** png.c — canvas -> 8-bit RGB PNG, and back (for tests). The only file that
** includes <png.h>, and the one atomic writer of every figure format
** (tt__write_file, used by svg.c too). A figure is never seen half-written: on Linux it is
** encoded into an unnamed O_TMPFILE (a SIGKILL leaves nothing behind), then
** linked under a temporary name and renamed into place; elsewhere, or when
** the filesystem refuses O_TMPFILE, into ".name.tt-tmp-PID", which a later
** write into the same folder removes once PID is gone. Bytes are
** deterministic.
*/
#define _GNU_SOURCE                   /* O_TMPFILE */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <png.h>

#include "figure.h"
#include "tt_internal.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

#define PNG_LEVEL 6                   /* zlib level: fixed, for stable bytes */
#define PNG_FILTERS PNG_FILTER_SUB    /* fixed filter: cheap and good on flat areas */

/* libpng's error callback longjmps; keep its text for our message. */
static void on_error(png_structp png, png_const_charp msg)
{
    char *buf = png_get_error_ptr(png);
    snprintf(buf, 128, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png; (void)msg;   /* nothing a figure writer can act on */
}

/* Encodes into an open file. The only function that calls setjmp: every
   libpng call is in here, and it returns 0, or 2 for a libpng problem with
   the reason in errtext (as gregbook's writepng does). Nothing the handler
   reads (png, info) changes after setjmp, so no local needs volatile. */
static int encode(FILE *fp, png_bytep *rows, int w, int h, const tt_png_meta *meta,
                  char errtext[128])
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, errtext, on_error,
                                              on_warning);
    if (!png) { snprintf(errtext, 128, "out of memory"); return 2; }
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        snprintf(errtext, 128, "out of memory");
        return 2;
    }
    png_text chunks[4];
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return 2;
    }
    png_init_io(png, fp);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
    png_set_compression_level(png, PNG_LEVEL);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTERS);

    /* tEXt: no dates, so the same figure gives the same bytes */
    int n = 0;
    const char *keys[4] = { "Software", "Source", "Shape", "Title" };
    const char *vals[4] = { "tensortrace " TT_VERSION, meta ? meta->source : NULL,
                            meta ? meta->shape : NULL, meta ? meta->title : NULL };
    for (int i = 0; i < 4; i++) {
        if (!vals[i] || !vals[i][0]) continue;
        memset(&chunks[n], 0, sizeof chunks[n]);
        chunks[n].compression = PNG_TEXT_COMPRESSION_NONE;
        chunks[n].key = (png_charp)(uintptr_t)keys[i];
        chunks[n].text = (png_charp)(uintptr_t)vals[i];
        chunks[n].text_length = strlen(vals[i]);
        n++;
    }
    if (n) png_set_text(png, info, chunks, n);

    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, info);        /* REQUIRED */
    png_destroy_write_struct(&png, &info);
    return 0;
}

/* ===== Temporary files =====
   The write in progress, for a hard stop from another thread (the
   watchdog of --timeout): the figure's path, and its temporary's name once
   it has one. `busy` is set after the names and cleared before they change. */
static struct {
    char path[PATH_MAX];
    char tmp[PATH_MAX];           /* "" while the file has no name */
    atomic_int busy;
} cur;

#define TMP_MARK ".tt-tmp-"

const char *tt_png_in_progress(void)
{
    return atomic_load(&cur.busy) ? cur.path : NULL;
}

void tt_png_discard_temp(void)
{
    if (atomic_load(&cur.busy) && cur.tmp[0]) unlink(cur.tmp);
}

/* Removes ".*.tt-tmp-PID" files in dir whose process is gone: what a
   process killed mid-write left. Once per folder and process. */
static void clean_stale(const char *dir)
{
    static char last[PATH_MAX];
    if (strcmp(last, dir) == 0) return;
    snprintf(last, sizeof last, "%s", dir);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *mark = e->d_name[0] == '.' ? strstr(e->d_name, TMP_MARK) : NULL;
        if (!mark) continue;
        char *end;
        long pid = strtol(mark + strlen(TMP_MARK), &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char full[PATH_MAX];
        if (snprintf(full, sizeof full, "%s/%s", dir, e->d_name) < (int)sizeof full) unlink(full);
    }
    closedir(d);
}

/* Opens the file to encode into: an unnamed O_TMPFILE in dir when the
   system has one (*named = 0), else the named temporary tmp (*named = 1).
   -1 with errno on failure. */
static int open_temp(const char *dir, const char *tmp, int *named)
{
#if defined(O_TMPFILE)
    if (access("/proc/self/fd", X_OK) == 0) {
        int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
        if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) {
            *named = 0;
            return fd;
        }
    }
#endif
    *named = 1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)   /* a leftover of ours */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    return fd;
}

/* ===== Atomic writes (every figure format) ===== */

tt_status tt__write_file(const char *path, tt_file_emit emit, void *ctx)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char dir[PATH_MAX], tmp[PATH_MAX];
    int dlen = slash == path ? 1 : slash ? (int)(slash - path) : 1;
    if (snprintf(dir, sizeof dir, "%.*s", dlen, slash ? path : ".") >= (int)sizeof dir ||
        snprintf(tmp, sizeof tmp, "%s/.%s" TMP_MARK "%ld", dir, base, (long)getpid()) >= (int)sizeof tmp)
        return tt__err(TT_EIO, "cannot write '%s': the path is too long", path);
    clean_stale(dir);

    atomic_store(&cur.busy, 0);
    snprintf(cur.path, sizeof cur.path, "%s", path);
    snprintf(cur.tmp, sizeof cur.tmp, "%s", tmp);
    int named = 1;
    int fd = open_temp(dir, tmp, &named);
    if (!named) cur.tmp[0] = 0;
    atomic_store(&cur.busy, 1);

    tt_status st = TT_OK;
    FILE *fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (fd >= 0 && !fp) {
        int e = errno;
        close(fd);
        errno = e;
    }
    if (!fp && errno == ENOENT && slash)     /* say which folder is missing */
        st = tt__err(TT_EIO, "cannot write '%s': folder '%.*s' does not exist", path,
                     (int)(slash - path), path);
    else if (!fp) {
        st = tt__err(TT_EIO, "cannot write '%s': %s", path, strerror(errno));
    } else {
        char errtext[128] = "";
        int rc = emit(fp, ctx, errtext);
        int werr = fflush(fp) != 0 || ferror(fp);
        int saved = errno;
        if (rc != 0)
            st = tt__err(TT_EIO, "cannot write '%s': %s", path, werr ? strerror(saved) : errtext);
        else if (werr)
            st = tt__err(TT_EIO, "cannot write '%s': %s", path, strerror(saved));
        if (st == TT_OK && !named) {          /* give the finished file its temporary name */
            char proc[64];
            snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(fp));
            atomic_store(&cur.busy, 0);
            snprintf(cur.tmp, sizeof cur.tmp, "%s", tmp);
            atomic_store(&cur.busy, 1);
            if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) != 0 &&
                (errno != EEXIST || unlink(tmp) != 0 ||
                 linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) != 0))
                st = tt__err(TT_EIO, "cannot write '%s': %s", path, strerror(errno));
        }
        if (fclose(fp) != 0 && st == TT_OK)
            st = tt__err(TT_EIO, "cannot write '%s': %s", path, strerror(errno));
        if (st == TT_OK && rename(tmp, path) != 0)
            st = tt__err(TT_EIO, "cannot write '%s': %s", path, strerror(errno));
        if (st != TT_OK) unlink(tmp);
    }
    atomic_store(&cur.busy, 0);
    return st;
}

/* ===== PNG ===== */

typedef struct png_job {
    png_bytep *rows;
    int w, h;
    const tt_png_meta *meta;
} png_job;

static int emit_png(FILE *fp, void *ctx, char errtext[128])
{
    const png_job *j = ctx;
    return encode(fp, j->rows, j->w, j->h, j->meta, errtext);
}

tt_status tt_png_write_rgb(const char *path, const uint8_t *px, int w, int h,
                           int stride, const tt_png_meta *meta)
{
    if (w <= 0 || h <= 0 || stride < 3 * w)
        return tt__err(TT_EARG, "cannot write '%s': bad image size %dx%d", path, w, h);
    png_bytep *rows = malloc((size_t)h * sizeof *rows);   /* before setjmp */
    if (!rows) return tt__err(TT_ENOMEM, "cannot write '%s': out of memory", path);
    for (int y = 0; y < h; y++) rows[y] = (png_bytep)(uintptr_t)(px + (size_t)y * (size_t)stride);
    png_job job = { rows, w, h, meta };
    tt_status st = tt__write_file(path, emit_png, &job);
    free(rows);
    return st;
}

tt_status tt_png_read_rgb(const char *path, uint8_t **px, int *w, int *h)
{
    /* the simplified API needs no setjmp of ours */
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    *px = NULL;
    if (!png_image_begin_read_from_file(&img, path))
        return tt__err(TT_EIO, "cannot read '%s': %s", path, img.message);
    img.format = PNG_FORMAT_RGB;
    uint8_t *buf = malloc(PNG_IMAGE_SIZE(img));
    if (!buf) {
        png_image_free(&img);
        return tt__err(TT_ENOMEM, "cannot read '%s': out of memory", path);
    }
    if (!png_image_finish_read(&img, NULL, buf, 0, NULL)) {
        free(buf);
        png_image_free(&img);
        return tt__err(TT_EIO, "cannot read '%s': %s", path, img.message);
    }
    *px = buf;
    *w = (int)img.width;
    *h = (int)img.height;
    return TT_OK;
}
