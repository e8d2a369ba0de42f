/*
** font.c — a small hand-drawn bitmap font for figure text (core layer).
** Glyphs are drawn below as "font sheets": eight glyphs a strip, one string
** per pixel row, '#' = ink. Proportional spacing, digits kept equal width.
*/
#include <stdio.h>
#include <string.h>

#include "font.h"
#include "svg.h"

/* ===== The glyphs ===== */

#define GLYPHS_PER_STRIP 8
#define NSTRIPS 13          /* ASCII 32..126, the ellipsis, then the Greek strip */
#define GLYPH_SIGMA 96      /* capital sigma, UTF-8 "\xce\xa3": the row-sum margin */
/* Math signs for figure text, by their UTF-8 sequence. */
static const struct { const char *utf8; int glyph; } MATH_SIGNS[] = {
    { "\xc2\xb7", 97 },       /* middle dot: q·k */
    { "\xc2\xb2", 98 },       /* superscript two: N² */
    { "\xc3\x97", 99 },       /* multiplication sign */
    { "\xe2\x88\x9a", 100 },  /* square root */
    { "\xe2\x86\x92", 101 },  /* rightwards arrow */
};

static const char *const SHEET[NSTRIPS][TT_FONT_HEIGHT] = {
    {   /*  space   !       "       #       $       %       &       '   */
        "..... ..#.. .#.#. .#.#. ..#.. ##... .##.. ..#..",
        "..... ..#.. .#.#. .#.#. .#### ##..# #..#. ..#..",
        "..... ..#.. .#.#. ##### #.#.. ...#. #.#.. .#...",
        "..... ..#.. ..... .#.#. .###. ..#.. .#... .....",
        "..... ..#.. ..... ##### ..#.# .#... #.#.# .....",
        "..... ..... ..... .#.#. ####. #..## #..#. .....",
        "..... ..#.. ..... .#.#. ..#.. ...## .##.# .....",
        "..... ..... ..... ..... ..... ..... ..... .....",
        "..... ..... ..... ..... ..... ..... ..... .....",
    }, {/*  (       )       *       +       ,       -       .       /   */
        "...#. .#... ..... ..... ..... ..... ..... ....#",
        "..#.. ..#.. ..#.. ..#.. ..... ..... ..... ....#",
        ".#... ...#. #.#.# ..#.. ..... ..... ..... ...#.",
        ".#... ...#. .###. ##### ..... ####. ..... ..#..",
        ".#... ...#. #.#.# ..#.. ..... ..... ..... .#...",
        "..#.. ..#.. ..#.. ..#.. .##.. ..... .##.. #....",
        "...#. .#... ..... ..... .##.. ..... .##.. #....",
        "..... ..... ..... ..... ..#.. ..... ..... .....",
        "..... ..... ..... ..... .#... ..... ..... .....",
    }, {/*  0       1       2       3       4       5       6       7   */
        ".###. ..#.. .###. .###. ...#. ##### ..##. #####",
        "#...# .##.. #...# #...# ..##. #.... .#... ....#",
        "#..## ..#.. ....# ....# .#.#. ####. #.... ...#.",
        "#.#.# ..#.. ...#. ..##. #..#. ....# ####. ..#..",
        "##..# ..#.. ..#.. ....# ##### ....# #...# .#...",
        "#...# ..#.. .#... #...# ...#. #...# #...# .#...",
        ".###. .###. ##### .###. ...#. .###. .###. .#...",
        "..... ..... ..... ..... ..... ..... ..... .....",
        "..... ..... ..... ..... ..... ..... ..... .....",
    }, {/*  8       9       :       ;       <       =       >       ?   */
        ".###. .###. ..... ..... ...#. ..... .#... .###.",
        "#...# #...# .##.. .##.. ..#.. ..... ..#.. #...#",
        "#...# #...# .##.. .##.. .#... ##### ...#. ....#",
        ".###. .#### ..... ..... #.... ..... ....# ...#.",
        "#...# ....# .##.. .##.. .#... ##### ...#. ..#..",
        "#...# ...#. .##.. .##.. ..#.. ..... ..#.. .....",
        ".###. .##.. ..... ..#.. ...#. ..... .#... ..#..",
        "..... ..... ..... .#... ..... ..... ..... .....",
        "..... ..... ..... ..... ..... ..... ..... .....",
    }, {/*  @       A       B       C       D       E       F       G   */
        ".###. .###. ####. .###. ###.. ##### ##### .###.",
        "#...# #...# #...# #...# #..#. #.... #.... #...#",
        "#.### #...# #...# #.... #...# #.... #.... #....",
        "#.#.# ##### ####. #.... #...# ####. ####. #.###",
        "#.### #...# #...# #.... #...# #.... #.... #...#",
        "#.... #...# #...# #...# #..#. #.... #.... #...#",
        ".###. #...# ####. .###. ###.. ##### #.... .####",
        "..... ..... ..... ..... ..... ..... ..... .....",
        "..... ..... ..... ..... ..... ..... ..... .....",
    }, {/*  H       I       J       K       L       M       N       O   */
        "#...# .###. ..### #...# #.... #...# #...# .###.",
        "#...# ..#.. ...#. #..#. #.... ##.## #...# #...#",
        "#...# ..#.. ...#. #.#.. #.... #.#.# ##..# #...#",
        "##### ..#.. ...#. ##... #.... #.#.# #.#.# #...#",
        "#...# ..#.. ...#. #.#.. #.... #...# #..## #...#",
        "#...# ..#.. #..#. #..#. #.... #...# #...# #...#",
        "#...# .###. .##.. #...# ##### #...# #...# .###.",
        "..... ..... ..... ..... ..... ..... ..... .....",
        "..... ..... ..... ..... ..... ..... ..... .....",
    }, {/*  P       Q       R       S       T       U       V       W   */
        "####. .###. ####. .#### ##### #...# #...# #...#",
        "#...# #...# #...# #.... ..#.. #...# #...# #...#",
        "#...# #...# #...# #.... ..#.. #...# #...# #...#",
        "####. #...# ####. .###. ..#.. #...# #...# #.#.#",
        "#.... #.#.# #.#.. ....# ..#.. #...# #...# #.#.#",
        "#.... #..#. #..#. ....# ..#.. #...# .#.#. #.#.#",
        "#.... .##.# #...# ####. ..#.. .###. ..#.. .#.#.",
        "..... ..... ..... ..... ..... ..... ..... .....",
        "..... ..... ..... ..... ..... ..... ..... .....",
    }, {/*  X       Y       Z       [       \       ]       ^       _   */
        "#...# #...# ##### .###. #.... .###. ..#.. .....",
        "#...# #...# ....# .#... #.... ...#. .#.#. .....",
        ".#.#. .#.#. ...#. .#... .#... ...#. #...# .....",
        "..#.. ..#.. ..#.. .#... ..#.. ...#. ..... .....",
        ".#.#. ..#.. .#... .#... ...#. ...#. ..... .....",
        "#...# ..#.. #.... .#... ....# ...#. ..... .....",
        "#...# ..#.. ##### .###. ....# .###. ..... .....",
        "..... ..... ..... ..... ..... ..... ..... #####",
        "..... ..... ..... ..... ..... ..... ..... .....",
    }, {/*  `       a       b       c       d       e       f       g   */
        ".#... ..... #.... ..... ....# ..... ..##. .....",
        "..#.. ..... #.... ..... ....# ..... .#..# .....",
        "...#. .###. ####. .###. .#### .###. .#... .####",
        "..... ....# #...# #.... #...# #...# ###.. #...#",
        "..... .#### #...# #.... #...# ##### .#... #...#",
        "..... #...# #...# #...# #...# #.... .#... #...#",
        "..... .#### ####. .###. .#### .###. .#... .####",
        "..... ..... ..... ..... ..... ..... ..... ....#",
        "..... ..... ..... ..... ..... ..... ..... .###.",
    }, {/*  h       i       j       k       l       m       n       o   */
        "#.... ..#.. ...#. #.... .##.. ..... ..... .....",
        "#.... ..... ..... #.... ..#.. ..... ..... .....",
        "#.##. .##.. ..##. #..#. ..#.. ##.#. #.##. .###.",
        "##..# ..#.. ...#. #.#.. ..#.. #.#.# ##..# #...#",
        "#...# ..#.. ...#. ##... ..#.. #.#.# #...# #...#",
        "#...# ..#.. ...#. #.#.. ..#.. #.#.# #...# #...#",
        "#...# .###. ...#. #..#. .###. #.#.# #...# .###.",
        "..... ..... #..#. ..... ..... ..... ..... .....",
        "..... ..... .##.. ..... ..... ..... ..... .....",
    }, {/*  p       q       r       s       t       u       v       w   */
        "..... ..... ..... ..... .#... ..... ..... .....",
        "..... ..... ..... ..... .#... ..... ..... .....",
        "####. .#### #.##. .#### ###.. #...# #...# #...#",
        "#...# #...# ##..# #.... .#... #...# #...# #...#",
        "#...# #...# #.... .###. .#... #...# #...# #.#.#",
        "#...# #...# #.... ....# .#..# #..## .#.#. #.#.#",
        "####. .#### #.... ####. ..##. .##.# ..#.. .#.#.",
        "#.... ....# ..... ..... ..... ..... ..... .....",
        "#.... ....# ..... ..... ..... ..... ..... .....",
    }, {/*  x       y       z       {       |       }       ~     ellipsis */
        "..... ..... ..... ...## ..#.. ##... ..... .....",
        "..... ..... ..... ..#.. ..#.. ..#.. ..... .....",
        "#...# #...# ##### ..#.. ..#.. ..#.. .#... .....",
        ".#.#. #...# ...#. .#... ..#.. ...#. #.#.# .....",
        "..#.. #...# ..#.. ..#.. ..#.. ..#.. ...#. .....",
        ".#.#. #...# .#... ..#.. ..#.. ..#.. ..... .....",
        "#...# .#### ##### ...## ..#.. ##... ..... #.#.#",
        "..... ....# ..... ..... ..#.. ..... ..... .....",
        "..... .###. ..... ..... ..... ..... ..... .....",
    }, {/*  Sigma   middot  sup 2   times   sqrt    arrow   (unused)      */
        "##### ..... .##.. ..... ..### ..... ..... .....",
        "#.... ..... #..#. #...# ..#.. ..#.. ..... .....",
        ".#... ..... ..#.. .#.#. ..#.. ...#. ..... .....",
        "..#.. ##... .#... ..#.. ..#.. ##### ..... .....",
        ".#... ##... ####. .#.#. #.#.. ...#. ..... .....",
        "#.... ..... ..... #...# .##.. ..#.. ..... .....",
        "##### ..... ..... ..... ..#.. ..... ..... .....",
        "..... ..... ..... ..... ..... ..... ..... .....",
        "..... ..... ..... ..... ..... ..... ..... .....",
    },
};

/* ===== Decoded glyphs ===== */

typedef struct glyph {
    uint8_t rows[TT_FONT_HEIGHT];   /* bit 4 = leftmost column */
    uint8_t left, width;            /* inked columns */
} glyph;

static glyph GLYPH[GLYPHS_PER_STRIP * NSTRIPS];
static int decoded;

static void decode(void)
{
    for (int g = 0; g < GLYPHS_PER_STRIP * NSTRIPS; g++) {
        const int strip = g / GLYPHS_PER_STRIP, col0 = (g % GLYPHS_PER_STRIP) * 6;
        int lo = 5, hi = -1;
        for (int r = 0; r < TT_FONT_HEIGHT; r++) {
            uint8_t bits = 0;
            for (int k = 0; k < 5; k++)
                if (SHEET[strip][r][col0 + k] == '#') {
                    bits |= (uint8_t)(0x10 >> k);
                    if (k < lo) lo = k;
                    if (k > hi) hi = k;
                }
            GLYPH[g].rows[r] = bits;
        }
        if (g >= '0' - 32 && g <= '9' - 32) lo = 0, hi = 4;   /* digits line up */
        if (hi < 0) lo = 0, hi = 2;                           /* space */
        GLYPH[g].left = (uint8_t)lo;
        GLYPH[g].width = (uint8_t)(hi - lo + 1);
    }
    decoded = 1;
}

/* Next glyph of s (advancing *s): ASCII as is, UTF-8 "…" as the ellipsis,
   "\xce\xa3" (capital sigma) and the MATH_SIGNS as themselves, any other
   multi-byte sequence as '?'. */
static const glyph *next_glyph(const char **s)
{
    const unsigned char *p = (const unsigned char *)*s;
    int g;
    if (*p < 0x80) {
        g = (*p < 32) ? '?' - 32 : *p - 32;      /* 127 is the ellipsis */
        p++;
    } else if (p[0] == 0xe2 && p[1] == 0x80 && p[2] == 0xa6) {
        g = TT_FONT_ELLIPSIS - 32;
        p += 3;
    } else if (p[0] == 0xce && p[1] == 0xa3) {
        g = GLYPH_SIGMA;
        p += 2;
    } else {
        g = '?' - 32;
        for (size_t k = 0; k < sizeof MATH_SIGNS / sizeof MATH_SIGNS[0]; k++) {
            const size_t n = strlen(MATH_SIGNS[k].utf8);
            if (!strncmp((const char *)p, MATH_SIGNS[k].utf8, n)) {
                g = MATH_SIGNS[k].glyph;
                p += n - 1;   /* the last byte below */
                break;
            }
        }
        p++;
        while ((*p & 0xc0) == 0x80) p++;         /* skip continuation bytes */
    }
    *s = (const char *)p;
    return &GLYPH[g];
}

/* ===== Measuring and drawing ===== */

static int advance(const glyph *gl, int scale, int flags)
{
    return (gl->width + 1) * scale + ((flags & TT_FONT_BOLD) ? 1 : 0);
}

int tt_font_width(const char *s, int scale, int flags)
{
    if (!decoded) decode();
    int w = 0;
    while (*s) w += advance(next_glyph(&s), scale, flags);
    return w > 0 ? w - scale : 0;   /* no trailing gap */
}

static void put(tt_canvas *c, int x, int y, uint32_t rgb)
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    uint8_t *p = c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
    p[0] = (uint8_t)(rgb >> 16);
    p[1] = (uint8_t)(rgb >> 8);
    p[2] = (uint8_t)rgb;
}

void tt_font_draw(tt_canvas *c, int x, int y, const char *s, int scale, int flags,
                  uint32_t rgb)
{
    if (!decoded) decode();
    const int bold = (flags & TT_FONT_BOLD) ? 1 : 0;
    const int total = (flags & TT_FONT_UP) ? tt_font_width(s, scale, flags) : 0;
    tt__svg_text(c->vec, x, y, s, scale, flags, rgb, total ? total : tt_font_width(s, scale, flags));
    int pen = 0;   /* along the text direction */
    while (*s) {
        const glyph *gl = next_glyph(&s);
        for (int r = 0; r < TT_FONT_HEIGHT; r++)
            for (int k = 0; k < gl->width; k++) {
                if (!(gl->rows[r] & (0x10 >> (gl->left + k)))) continue;
                /* one font pixel = a scale x scale block (+1 wide when bold) */
                for (int dy = 0; dy < scale; dy++)
                    for (int dx = 0; dx < scale + bold; dx++) {
                        const int u = pen + k * scale + dx, v = r * scale + dy;
                        if (flags & TT_FONT_UP) put(c, x + v, y + total - 1 - u, rgb);
                        else put(c, x + u, y + v, rgb);
                    }
            }
        pen += advance(gl, scale, flags);
    }
}

int tt_font_fit(char *out, size_t n, const char *s, int scale, int flags, int maxw)
{
    if (n == 0) return 0;
    size_t len = strlen(s);
    if (len >= n) len = n - 1;
    memcpy(out, s, len);
    out[len] = '\0';
    int w = tt_font_width(out, scale, flags);
    if (w <= maxw && len == strlen(s)) return w;
    /* drop whole UTF-8 sequences from the end until text + ellipsis fits */
    while (len > 0) {
        do len--; while (len > 0 && ((unsigned char)out[len] & 0xc0) == 0x80);
        if (len + 2 > n) continue;
        out[len] = TT_FONT_ELLIPSIS;
        out[len + 1] = '\0';
        w = tt_font_width(out, scale, flags);
        if (w <= maxw) return w;
    }
    out[0] = '\0';
    return 0;
}

/* ===== Wrapping ===== */

/* Greedy fill of the words of s into lines at most maxw wide ('\n' always
   breaks). Returns the line count, or -1 when a word alone is too wide or
   a line would not fit TT_FONT_WRAP_LEN; fills out (when not NULL) with up
   to maxlines lines. */
static int wrap_greedy(const char *s, int scale, int flags, int maxw,
                       char (*out)[TT_FONT_WRAP_LEN], int maxlines)
{
    char line[TT_FONT_WRAP_LEN], cand[TT_FONT_WRAP_LEN];
    int nlines = 0;
    size_t len = 0;
    line[0] = '\0';
    const char *p = s;
    for (;;) {
        while (*p == ' ') p++;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\n') p++;
        const size_t wl = (size_t)(p - w);
        if (wl) {
            if (wl >= sizeof cand) return -1;
            if (len) snprintf(cand, sizeof cand, "%s %.*s", line, (int)wl, w);
            else snprintf(cand, sizeof cand, "%.*s", (int)wl, w);
            if (len && (strlen(cand) >= sizeof cand - 1 || tt_font_width(cand, scale, flags) > maxw)) {
                if (out && nlines < maxlines) memcpy(out[nlines], line, len + 1);
                nlines++;
                snprintf(cand, sizeof cand, "%.*s", (int)wl, w);
            }
            if (tt_font_width(cand, scale, flags) > maxw) return -1;
            len = strlen(cand);
            memcpy(line, cand, len + 1);
        }
        while (*p == ' ') p++;
        if (*p == '\n' || *p == '\0') {
            if (len || *p == '\n') {
                if (out && nlines < maxlines) memcpy(out[nlines], line, len + 1);
                nlines++;
            }
            len = 0;
            line[0] = '\0';
            if (*p == '\0') break;
            p++;
        }
    }
    return nlines;
}

int tt_font_wrap(const char *s, int scale, int flags, int maxw,
                 char (*out)[TT_FONT_WRAP_LEN], int maxlines)
{
    const int n = wrap_greedy(s, scale, flags, maxw, NULL, 0);
    if (n <= 0 || n > maxlines) return 0;
    /* balance: the narrowest width that still needs no more lines */
    int lo = 1, hi = maxw;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        const int k = wrap_greedy(s, scale, flags, mid, NULL, 0);
        if (k > 0 && k <= n) hi = mid;
        else lo = mid + 1;
    }
    return wrap_greedy(s, scale, flags, hi, out, maxlines);
}

/* ===== Titles ===== */

void tt_font_title_layout(tt_font_title *t, const char *s, int maxw)
{
    /* large on one or two lines, then body size on up to three */
    static const int try_scale[5] = { 3, 3, 2, 2, 2 }, try_lines[5] = { 1, 2, 1, 2, 3 };
    memset(t, 0, sizeof *t);
    if (!s || !s[0]) return;
    for (int k = 0; k < 5; k++) {
        const int n = tt_font_wrap(s, try_scale[k], TT_FONT_BOLD, maxw, t->line, try_lines[k]);
        if (n > 0) { t->scale = try_scale[k]; t->nlines = n; break; }
    }
    if (!t->nlines) {   /* a word wider than the room: shorten one line */
        t->scale = 2;
        t->nlines = 1;
        tt_font_fit(t->line[0], sizeof t->line[0], s, 2, TT_FONT_BOLD, maxw);
        for (char *c = t->line[0]; *c; c++) if (*c == '\n') *c = ' ';
    }
    for (int k = 0; k < t->nlines; k++) {
        const int w = tt_font_width(t->line[k], t->scale, TT_FONT_BOLD);
        if (w > t->w) t->w = w;
    }
    t->h = (t->nlines - 1) * TT_FONT_LINE * t->scale + TT_FONT_HEIGHT * t->scale;
}

void tt_font_title_draw(tt_canvas *c, const tt_font_title *t, int cx, int y, uint32_t rgb)
{
    for (int k = 0; k < t->nlines; k++)
        tt_font_draw(c, cx - tt_font_width(t->line[k], t->scale, TT_FONT_BOLD) / 2,
                     y + k * TT_FONT_LINE * t->scale, t->line[k], t->scale, TT_FONT_BOLD, rgb);
}
