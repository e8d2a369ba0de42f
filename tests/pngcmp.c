/*
** pngcmp.c — exit 0 when two PNG files hold the same pixels, 1 when they
** differ (says where), 2 when one cannot be read. With --text, their text
** chunks (tEXt, in order: the software, the script line that drew it, the
** shape, the title) must be the same too: the bytes a figure is written
** with then depend only on the deflate build. Used by test_golden.sh.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure/figure.h"

/* The tEXt chunks of a PNG file, each "key=value\n", into buf (NUL-
   terminated, cut at n - 1 bytes); 0, or -1 when it is not a PNG. */
static int text_chunks(const char *path, char *buf, size_t n)
{
    static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    FILE *f = fopen(path, "rb");
    unsigned char head[8];
    size_t used = 0;
    buf[0] = '\0';
    if (!f || fread(head, 1, 8, f) != 8 || memcmp(head, sig, 8) != 0) {
        if (f) fclose(f);
        return -1;
    }
    while (fread(head, 1, 8, f) == 8) {   /* length, type; then the body and its CRC */
        unsigned long len = (unsigned long)head[0] << 24 | (unsigned long)head[1] << 16
                          | (unsigned long)head[2] << 8 | head[3];
        if (memcmp(head + 4, "tEXt", 4) != 0) {
            if (fseek(f, (long)len + 4, SEEK_CUR) != 0) break;
            continue;
        }
        for (unsigned long i = 0; i < len; i++) {
            int c = fgetc(f);
            if (c == EOF) break;
            if (used + 1 < n) buf[used++] = c == 0 ? '=' : (char)c;   /* key NUL value */
        }
        if (used + 1 < n) buf[used++] = '\n';
        buf[used] = '\0';
        if (fseek(f, 4, SEEK_CUR) != 0) break;
    }
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    int text = argc == 4 && strcmp(argv[1], "--text") == 0;
    if ((argc != 3 && !text) || (argc == 3 && argv[1][0] == '-')) {
        fprintf(stderr, "usage: pngcmp [--text] a.png b.png\n");
        return 2;
    }
    const char *pa = argv[argc - 2], *pb = argv[argc - 1];
    uint8_t *a = NULL, *b = NULL;
    int wa, ha, wb, hb;
    if (tt_png_read_rgb(pa, &a, &wa, &ha) != TT_OK || tt_png_read_rgb(pb, &b, &wb, &hb) != TT_OK) {
        fprintf(stderr, "pngcmp: %s\n", tt_errmsg());
        free(a);
        return 2;
    }
    int rc = 0;
    if (wa != wb || ha != hb) {
        printf("pngcmp: sizes differ: %dx%d vs %dx%d\n", wa, ha, wb, hb);
        rc = 1;
    } else {
        long diff = 0, first = -1;
        for (long i = 0; i < (long)wa * ha * 3; i++)
            if (a[i] != b[i] && diff++ == 0) first = i / 3;
        if (diff) {
            printf("pngcmp: %ld channel values differ, first at x=%ld y=%ld\n", diff, first % wa, first / wa);
            rc = 1;
        }
    }
    free(a);
    free(b);
    static char ta[1 << 16], tb[1 << 16];
    if (text && (text_chunks(pa, ta, sizeof ta) != 0 || text_chunks(pb, tb, sizeof tb) != 0)) {
        fprintf(stderr, "pngcmp: cannot read the chunks of %s or %s\n", pa, pb);
        return 2;
    }
    if (text && strcmp(ta, tb) != 0) {
        printf("pngcmp: text chunks differ:\n%s--- vs ---\n%s", ta, tb);
        rc = 1;
    }
    return rc;
}
