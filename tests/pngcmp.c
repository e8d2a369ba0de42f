/*
** pngcmp.c — exit 0 when two PNG files hold the same pixels, 1 when they
** differ (says where), 2 when one cannot be read. Used by test_lessons.sh.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure/figure.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: pngcmp a.png b.png\n");
        return 2;
    }
    uint8_t *a = NULL, *b = NULL;
    int wa, ha, wb, hb;
    if (tt_png_read_rgb(argv[1], &a, &wa, &ha) != TT_OK || tt_png_read_rgb(argv[2], &b, &wb, &hb) != TT_OK) {
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
    return rc;
}
