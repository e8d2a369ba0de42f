/*
** png.c — canvas -> 8-bit RGB PNG, and back (for tests). The only file that
** includes <png.h>. Written through the atomic writer tt__write_file
** (core/base/file.c), as every figure format is. Bytes are deterministic.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "figure.h"
#include "tt_internal.h"

/* Fixed (for stable bytes) and chosen by measurement on the 36 lesson
   figures (27 Mpx, best of 9): zlib level 3 with the Up filter encodes them
   in 222 ms and 1.06 MB, against 544 ms and 0.93 MB for level 6 with Sub
   (what we had). Up suits our figures: heatmap cells, bars and flat
   backgrounds repeat the row above. Levels 1-3 are zlib's fast matcher
   (Up: 191-222 ms, 1.06-1.16 MB); from level 4 the lazy matcher doubles
   the time (433 ms at 4) for 0.79 MB; Paeth or several filters per row
   cost 1.7-2x the time for no smaller file. */
#define PNG_LEVEL 3
#define PNG_FILTERS PNG_FILTER_UP

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
    tt_status st = tt__write_file(path, "figure", emit_png, &job);
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
