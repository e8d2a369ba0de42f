/*
** svg.h — the vector side of a tt_canvas (core layer, internal). Every
** canvas keeps a display list next to its pixels: each primitive appends
** one item (runs of equal rectangles in a row merge), and tt_svg_write
** turns the list into SVG. Only canvas.c and font.c record (and heatmap.c
** its one-pixel cells); the PNG path never reads the list.
*/
#ifndef TT_SVG_H
#define TT_SVG_H

#include <stdint.h>
#include "figure.h"

/* At most this many items (after merging); beyond it the recording is
   dropped and an SVG write is refused (a PNG is still fine). */
#define TT_SVG_MAX_ITEMS (1 << 20)

typedef struct tt_svg tt_svg;

/* A new, empty display list; NULL when out of memory. tt__svg_free
   accepts NULL. */
tt_svg *tt__svg_new(void);
void tt__svg_free(tt_svg *v);

/* The recorders, one a canvas primitive, same arguments (rectangles
   already clipped to the canvas). Each accepts v == NULL. */
void tt__svg_rect(tt_svg *v, int x, int y, int w, int h, uint32_t rgb);
void tt__svg_frame(tt_svg *v, int x, int y, int w, int h, int t, uint32_t rgb);
void tt__svg_line(tt_svg *v, double x0, double y0, double x1, double y1, double width,
                  uint32_t rgb);
void tt__svg_polyline(tt_svg *v, const double (*pt)[2], int n, double width, uint32_t rgb);
void tt__svg_triangle(tt_svg *v, const double xy[6], uint32_t rgb);
void tt__svg_round_rect(tt_svg *v, int x, int y, int w, int h, int r, uint32_t fill,
                        uint32_t border, int bw);
/* kinds == 0: the grey -inf hatch; else a bit set of mask kinds, on the
   lowest kind's background, or, with TT_SVG_HATCH_STROKES set, the
   strokes alone, in white. */
#define TT_SVG_HATCH_STROKES 0x100u
void tt__svg_hatch(tt_svg *v, int x, int y, int w, int h, unsigned kinds);
/* Bitmap text s as drawn by tt_font_draw at (x, y); width is its
   tt_font_width, which the SVG text is stretched to. */
void tt__svg_text(tt_svg *v, int x, int y, const char *s, int scale, int flags, uint32_t rgb,
                  int width);

/* Colours of mask kind k (canvas.c): its background, or its strokes. */
uint32_t tt__mask_rgb(int kind, int ink);

#endif
