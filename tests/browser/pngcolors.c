/*
** pngcolors.c — prints "WIDTH HEIGHT COLOURS" of a PNG (distinct RGB
** values): the browser test's measure of a screenshot that is not blank.
*/
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS (1u << 20)   /* open addressing over 24-bit colours; more than any screenshot has */

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: pngcolors FILE.png\n");
        return 2;
    }
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&img, argv[1])) {
        fprintf(stderr, "pngcolors: %s: %s\n", argv[1], img.message);
        return 1;
    }
    img.format = PNG_FORMAT_RGB;
    size_t n = PNG_IMAGE_SIZE(img);
    uint8_t *px = malloc(n);
    uint32_t *seen = calloc(SLOTS, sizeof *seen);   /* colour + 1; 0 = empty */
    if (px == NULL || seen == NULL || !png_image_finish_read(&img, NULL, px, 0, NULL)) {
        fprintf(stderr, "pngcolors: %s: %s\n", argv[1], px && seen ? img.message : "out of memory");
        return 1;
    }
    unsigned long colours = 0;
    for (size_t i = 0; i + 2 < n && colours < SLOTS / 2; i += 3) {
        uint32_t c = (uint32_t)px[i] << 16 | (uint32_t)px[i + 1] << 8 | px[i + 2];
        uint32_t h = (c * 2654435761u) >> 12 & (SLOTS - 1);
        while (seen[h] && seen[h] != c + 1) h = (h + 1) & (SLOTS - 1);
        if (!seen[h]) {
            seen[h] = c + 1;
            colours++;
        }
    }
    printf("%u %u %lu\n", img.width, img.height, colours);
    free(px);
    free(seen);
    return 0;
}
