/*
** font.h — the project's own bitmap font (ASCII 32..126 plus an ellipsis),
** drawn into a tt_canvas at integer scales. Used by figure.c and flow.c.
*/
#ifndef TT_FONT_H
#define TT_FONT_H

#include <stddef.h>
#include <stdint.h>
#include "figure.h"

/* Glyph grid: 5 columns, 9 rows; capitals and digits fill rows 0..6
   (row 6 is the baseline), descenders use rows 7..8. */
#define TT_FONT_CAP 7       /* cap height in pixels at scale 1 */
#define TT_FONT_HEIGHT 9    /* cap + descender */
#define TT_FONT_LINE 11     /* line pitch */

/* The byte that draws as the ellipsis glyph ("\xe2\x80\xa6" in UTF-8 too). */
#define TT_FONT_ELLIPSIS '\x7f'

enum {
    TT_FONT_BOLD = 1,   /* each pixel one unit wider: titles */
    TT_FONT_UP = 2      /* rotated a quarter turn: reads bottom to top */
};

/* Width in pixels of s at scale (the length along the text direction).
   Bytes outside ASCII draw as '?' (one per UTF-8 sequence). */
int tt_font_width(const char *s, int scale, int flags);

/* Draws s with the top of its cap height at (x, y). With TT_FONT_UP, (x, y)
   is the top-left corner of the rotated text box (tt_font_width tall,
   TT_FONT_HEIGHT*scale wide), and the first character is at the bottom. */
void tt_font_draw(tt_canvas *c, int x, int y, const char *s, int scale, int flags,
                  uint32_t rgb);

/* Copies s into out (size n), shortened with an ellipsis so that it is at
   most maxw pixels wide; returns the width of what was copied. */
int tt_font_fit(char *out, size_t n, const char *s, int scale, int flags, int maxw);

#endif
