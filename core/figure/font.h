/*
** font.h — the project's own bitmap font (ASCII 32..126, an ellipsis, Σ,
** the signs · ² × √ →) drawn into a tt_canvas at integer scales. Used by
** every figure file.
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
   Besides ASCII, UTF-8 "\xe2\x80\xa6" (ellipsis), "\xce\xa3" (capital
   sigma) and the signs · ² × √ → have glyphs; other bytes outside ASCII
   draw as '?' (one per UTF-8 sequence). */
int tt_font_width(const char *s, int scale, int flags);

/* Draws s with the top of its cap height at (x, y). With TT_FONT_UP, (x, y)
   is the top-left corner of the rotated text box (tt_font_width tall,
   TT_FONT_HEIGHT*scale wide), and the first character is at the bottom. */
void tt_font_draw(tt_canvas *c, int x, int y, const char *s, int scale, int flags,
                  uint32_t rgb);

/* Copies s into out (size n), shortened with an ellipsis so that it is at
   most maxw pixels wide; returns the width of what was copied. */
int tt_font_fit(char *out, size_t n, const char *s, int scale, int flags, int maxw);

/* Longest line tt_font_wrap writes, terminator included. */
#define TT_FONT_WRAP_LEN 256

/* Breaks s at spaces into at most maxlines lines of at most maxw pixels,
   as even in width as the breaks allow ('\n' in s always breaks). Writes
   the lines into out[0..k) and returns k; returns 0 when s cannot be set
   that way (a word wider than maxw, or more lines needed). */
int tt_font_wrap(const char *s, int scale, int flags, int maxw,
                 char (*out)[TT_FONT_WRAP_LEN], int maxlines);

/* A figure title set in bold to fit maxw pixels: large (scale 3) on one or
   two lines, else body size (scale 2) on up to three, else one line
   shortened with an ellipsis. nlines == 0 for an empty title; w and h are
   the extent of the set text (h includes the last line's descenders). */
typedef struct tt_font_title {
    int scale, nlines, w, h;
    char line[3][TT_FONT_WRAP_LEN];
} tt_font_title;
void tt_font_title_layout(tt_font_title *t, const char *s, int maxw);
/* Draws the lines centred on x = cx, the first cap line's top at y. */
void tt_font_title_draw(tt_canvas *c, const tt_font_title *t, int cx, int y, uint32_t rgb);

#endif
