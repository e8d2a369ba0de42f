/*
** pngcolors.c — for the browser test.
**   pngcolors A.png         prints "WIDTH HEIGHT COLOURS" (distinct RGB
**                           values): a screenshot that is not blank has many.
**   pngcolors A.png B.png   prints "MATCHED TOTAL": how many of A's pixels
**                           have a pixel of nearly the same colour at most one
**                           pixel away in B (B cropped or padded to A's size):
**                           a figure's PNG against its SVG as a browser drew it.
*/
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS (1u << 20)   /* open addressing over 24-bit colours; more than any screenshot has */
#define NEAR 40            /* per channel: anti-aliasing and colour management differ */

static uint8_t *load(const char *path, unsigned *w, unsigned *h)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&img, path)) {
        fprintf(stderr, "pngcolors: %s: %s\n", path, img.message);
        return NULL;
    }
    img.format = PNG_FORMAT_RGB;
    uint8_t *px = malloc(PNG_IMAGE_SIZE(img));
    if (px == NULL || !png_image_finish_read(&img, NULL, px, 0, NULL)) {
        fprintf(stderr, "pngcolors: %s: %s\n", path, px ? img.message : "out of memory");
        free(px);
        return NULL;
    }
    *w = img.width;
    *h = img.height;
    return px;
}

static int colours(const char *path)
{
    unsigned w, h;
    uint8_t *px = load(path, &w, &h);
    uint32_t *seen = calloc(SLOTS, sizeof *seen);   /* colour + 1; 0 = empty */
    if (px == NULL || seen == NULL) return 1;
    const size_t n = (size_t)w * h * 3;
    unsigned long count = 0;
    for (size_t i = 0; i + 2 < n && count < SLOTS / 2; i += 3) {
        uint32_t c = (uint32_t)px[i] << 16 | (uint32_t)px[i + 1] << 8 | px[i + 2];
        uint32_t k = (c * 2654435761u) >> 12 & (SLOTS - 1);
        while (seen[k] && seen[k] != c + 1) k = (k + 1) & (SLOTS - 1);
        if (!seen[k]) {
            seen[k] = c + 1;
            count++;
        }
    }
    printf("%u %u %lu\n", w, h, count);
    free(px);
    free(seen);
    return 0;
}

static int matched(const char *pa, const char *pb)
{
    unsigned aw, ah, bw, bh;
    uint8_t *a = load(pa, &aw, &ah), *b = load(pb, &bw, &bh);
    if (a == NULL || b == NULL) return 1;
    unsigned long hit = 0;
    for (unsigned y = 0; y < ah; y++)
        for (unsigned x = 0; x < aw; x++) {
            const uint8_t *p = a + ((size_t)y * aw + x) * 3;
            int found = 0;
            for (int dy = -1; dy <= 1 && !found; dy++)
                for (int dx = -1; dx <= 1 && !found; dx++) {
                    const long yy = (long)y + dy, xx = (long)x + dx;
                    if (yy < 0 || xx < 0 || yy >= (long)bh || xx >= (long)bw) continue;
                    const uint8_t *q = b + ((size_t)yy * bw + (size_t)xx) * 3;
                    found = abs(p[0] - q[0]) <= NEAR && abs(p[1] - q[1]) <= NEAR && abs(p[2] - q[2]) <= NEAR;
                }
            hit += (unsigned long)found;
        }
    printf("%lu %lu\n", hit, (unsigned long)aw * ah);
    free(a);
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2) return colours(argv[1]);
    if (argc == 3) return matched(argv[1], argv[2]);
    fprintf(stderr, "usage: pngcolors A.png [B.png]\n");
    return 2;
}
