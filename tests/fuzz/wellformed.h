/*
** wellformed.h — the checks the writer harnesses run on what was written:
** a strict JSON value (one trace line), an SVG document as XML, and the
** --report page as HTML, each against the vocabulary tensortrace itself
** writes. An element or attribute outside it, an event handler, a second
** <script>, a comment or CDATA section, a bare '<' or '&' in text, a
** character XML forbids or bytes that are not UTF-8 mean a script's string
** got through unescaped: the check names it and the harness aborts.
** Header-only: included by the fuzz harnesses alone.
*/
#ifndef TT_WELLFORMED_H
#define TT_WELLFORMED_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The checker is not what is fuzzed: no coverage feedback from it (its
   branches would steer the fuzzer toward the checker's own paths), and a
   megabyte page is checked at full speed. */
#ifdef __clang__
#pragma clang attribute push(__attribute__((no_sanitize("coverage"))), apply_to = function)
#endif

static const char *wf_why;   /* what the last failed check saw */
static const unsigned char *wf_at;   /* and near where, in markup */

static int wf_fail(const char *why)
{
    wf_why = why;
    return 0;
}

/* One UTF-8 sequence at p (n bytes left): its code point, or -1. */
static long wf_utf8(const unsigned char *p, size_t n, int *len)
{
    unsigned c = p[0];
    int k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (k == 0 || (size_t)k > n) return -1;
    long cp = k == 1 ? (long)c : k == 2 ? (long)(c & 0x1f) : k == 3 ? (long)(c & 0x0f) : (long)(c & 0x07);
    for (int i = 1; i < k; i++) {
        if ((p[i] & 0xc0) != 0x80) return -1;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    static const long least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
    *len = k;
    return cp;
}

/* XML 1.0's Char production */
static int wf_xml_char(long cp)
{
    return cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0xd7ff) ||
           (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
}

/* ===== JSON (RFC 8259), strictly ===== */

typedef struct { const unsigned char *p, *end; int depth; } wf_json;

static void wf_ws(wf_json *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static int wf_hex4(wf_json *j, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++, j->p++) {
        if (j->p >= j->end) return 0;
        unsigned c = *j->p;
        unsigned d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
                     c >= 'A' && c <= 'F' ? c - 'A' + 10 : 16;
        if (d == 16) return 0;
        *v = *v << 4 | d;
    }
    return 1;
}

static int wf_json_string(wf_json *j)
{
    j->p++;                                  /* the opening quote */
    while (j->p < j->end) {
        unsigned c = *j->p;
        if (c == '"') { j->p++; return 1; }
        if (c < 0x20) return wf_fail("JSON: a raw control character in a string");
        if (c == '\\') {
            j->p++;
            if (j->p >= j->end) return wf_fail("JSON: a string ends in a backslash");
            c = *j->p++;
            if (c == 'u') {
                unsigned v, w;
                if (!wf_hex4(j, &v)) return wf_fail("JSON: a bad \\u escape");
                if (v >= 0xdc00 && v <= 0xdfff) return wf_fail("JSON: a lone low surrogate");
                if (v >= 0xd800 && v <= 0xdbff) {
                    if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u') return wf_fail("JSON: a lone high surrogate");
                    j->p += 2;
                    if (!wf_hex4(j, &w) || w < 0xdc00 || w > 0xdfff) return wf_fail("JSON: a lone high surrogate");
                }
            } else if (!strchr("\"\\/bfnrt", (int)c) || c == 0) {
                return wf_fail("JSON: an unknown escape");
            }
            continue;
        }
        int k;
        if (wf_utf8(j->p, (size_t)(j->end - j->p), &k) < 0) return wf_fail("JSON: bytes that are not UTF-8");
        j->p += k;
    }
    return wf_fail("JSON: an unterminated string");
}

static int wf_json_value(wf_json *j);

static int wf_json_number(wf_json *j)
{
    const unsigned char *s = j->p;
    if (j->p < j->end && *j->p == '-') j->p++;
    if (j->p < j->end && *j->p == '0') j->p++;
    else if (j->p < j->end && *j->p >= '1' && *j->p <= '9') while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    else return wf_fail("JSON: not a value");
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return wf_fail("JSON: a number without digits after '.'");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return wf_fail("JSON: an exponent without digits");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    return j->p > s;
}

static int wf_json_value(wf_json *j)
{
    wf_ws(j);
    if (j->p >= j->end) return wf_fail("JSON: a value is missing");
    if (++j->depth > 200) return wf_fail("JSON: nested too deep");
    int ok = 1;
    switch (*j->p) {
    case '{': case '[': {
        const unsigned char close = *j->p == '{' ? '}' : ']';
        const int obj = close == '}';
        j->p++;
        wf_ws(j);
        if (j->p < j->end && *j->p == close) { j->p++; break; }
        for (;;) {
            if (obj) {
                wf_ws(j);
                if (j->p >= j->end || *j->p != '"') { ok = wf_fail("JSON: an object key is not a string"); break; }
                if (!(ok = wf_json_string(j))) break;
                wf_ws(j);
                if (j->p >= j->end || *j->p != ':') { ok = wf_fail("JSON: ':' is missing"); break; }
                j->p++;
            }
            if (!(ok = wf_json_value(j))) break;
            wf_ws(j);
            if (j->p < j->end && *j->p == ',') { j->p++; continue; }
            if (j->p < j->end && *j->p == close) { j->p++; break; }
            ok = wf_fail("JSON: ',' or a closing bracket is missing");
            break;
        }
        break;
    }
    case '"': ok = wf_json_string(j); break;
    case 't': ok = j->end - j->p >= 4 && !memcmp(j->p, "true", 4) ? (j->p += 4, 1) : wf_fail("JSON: not a value"); break;
    case 'f': ok = j->end - j->p >= 5 && !memcmp(j->p, "false", 5) ? (j->p += 5, 1) : wf_fail("JSON: not a value"); break;
    case 'n': ok = j->end - j->p >= 4 && !memcmp(j->p, "null", 4) ? (j->p += 4, 1) : wf_fail("JSON: not a value"); break;
    default: ok = wf_json_number(j); break;
    }
    j->depth--;
    return ok;
}

/* s[0..n) is exactly one JSON value (an object, for a trace line) */
static int wf_json_line(const char *s, size_t n)
{
    wf_json j = { (const unsigned char *)s, (const unsigned char *)s + n, 0 };
    wf_ws(&j);
    if (j.p >= j.end || *j.p != '{') return wf_fail("JSON: a trace line is not an object");
    if (!wf_json_value(&j)) return 0;
    wf_ws(&j);
    return j.p == j.end ? 1 : wf_fail("JSON: bytes after the value");
}

/* ===== markup: SVG (XML) and the report page (HTML) ===== */

static const char *const wf_svg_elements[] = {
    "svg", "title", "desc", "defs", "pattern", "rect", "path", "line", "polyline", "polygon", "text", NULL };
static const char *const wf_html_elements[] = {
    "html", "head", "meta", "title", "style", "body", "div", "header", "p", "h1", "h2", "dl", "dt", "dd",
    "code", "span", "button", "nav", "ol", "li", "a", "main", "section", "details", "summary", "pre",
    "figure", "figcaption", "img", "footer", "script", NULL };
static const char *const wf_attributes[] = {
    "alt", "charset", "class", "content", "d", "fill", "font-family", "font-size", "font-weight", "height",
    "hidden", "href", "id", "lang", "name", "open", "patternUnits", "points", "rx", "shape-rendering", "src",
    "stroke", "stroke-linecap", "stroke-linejoin", "stroke-width", "textLength", "lengthAdjust", "transform",
    "type", "version", "viewBox", "width", "x", "xml:space", "xmlns", "y", "title", "role", "aria-label", "aria-labelledby", "tabindex",
    "encoding", "text-anchor", "dominant-baseline", "opacity", "fill-opacity", "stroke-opacity",
    "x1", "x2", "y1", "y2", NULL };

static int wf_in(const char *const *list, const char *s, size_t n)
{
    for (int i = 0; list[i]; i++)
        if (strlen(list[i]) == n && memcmp(list[i], s, n) == 0) return 1;
    return 0;
}

static int wf_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == ':' || c == '_';
}

/* Text or an attribute value up to a stop byte: every character one XML
   allows, '&' only as an entity, no '<'. */
static int wf_text(const unsigned char **pp, const unsigned char *end, unsigned char stop)
{
    const unsigned char *p = *pp;
    while (p < end && *p != stop) {
        if (*p == '<') break;
        if (*p == '&') {
            const unsigned char *e = p + 1;
            while (e < end && e - p < 12 && *e != ';') e++;
            if (e >= end || *e != ';') return wf_fail("markup: a bare '&'");
            size_t n = (size_t)(e - p - 1);
            const char *ent = (const char *)p + 1;
            if (n >= 2 && ent[0] == '#') {
                long cp = strtol(ent[1] == 'x' ? ent + 2 : ent + 1, NULL, ent[1] == 'x' ? 16 : 10);
                if (!wf_xml_char(cp)) return wf_fail("markup: a character reference XML forbids");
            } else if (!(n == 3 && !memcmp(ent, "amp", 3)) && !(n == 2 && !memcmp(ent, "lt", 2)) &&
                       !(n == 2 && !memcmp(ent, "gt", 2)) && !(n == 4 && !memcmp(ent, "quot", 4)) &&
                       !(n == 4 && !memcmp(ent, "apos", 4))) {
                return wf_fail("markup: an unknown entity");
            }
            p = e + 1;
            continue;
        }
        int k;
        long cp = wf_utf8(p, (size_t)(end - p), &k);
        if (cp < 0) return wf_fail("markup: bytes that are not UTF-8");
        if (!wf_xml_char(cp)) return wf_fail("markup: a character XML forbids");
        p += k;
    }
    *pp = p;
    return 1;
}

#define WF_DEPTH 64

/* The markup in s[0..n): html = 0 for an SVG file (XML: one svg root), 1
   for the report page (<!DOCTYPE html>, one <script> and one <style>, whose
   bodies are tensortrace's own and end at their first closing tag).
   Elements and attributes come from the lists above; an attribute named
   on..., a src that is not a data: image, a href that
   is not a #fragment (so no javascript: URL), and any comment, CDATA or processing instruction
   after the prolog fail. */
static int wf_markup(const char *text, size_t n, int html)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + n;
    char stack[WF_DEPTH][24];
    int depth = 0, roots = 0, scripts = 0, styles = 0;
    if (html) {
        static const char doctype[] = "<!DOCTYPE html>";
        if (n < sizeof doctype - 1 || memcmp(p, doctype, sizeof doctype - 1)) return wf_fail("HTML: no doctype");
        p += sizeof doctype - 1;
    } else if (n >= 5 && !memcmp(p, "<?xml", 5)) {
        const unsigned char *e = (const unsigned char *)strstr((const char *)p, "?>");
        if (e == NULL || e >= end) return wf_fail("SVG: an unterminated prolog");
        p = e + 2;
    }
    while (p < end) {
        if (*p != '<') {
            if (depth == 0 && !html) {
                if (*p != '\n' && *p != ' ' && *p != '\t' && *p != '\r') return wf_fail("SVG: text outside the root");
                p++;
                continue;
            }
            if (!wf_text(&p, end, '<')) return 0;
            continue;
        }
        p++;
        if (p < end && (*p == '!' || *p == '?')) return wf_fail("markup: a comment, CDATA or declaration in the body");
        const int closing = p < end && *p == '/';
        if (closing) p++;
        const unsigned char *name = p;
        while (p < end && wf_name_char(*p)) p++;
        size_t nlen = (size_t)(p - name);
        if (nlen == 0 || nlen >= sizeof stack[0]) return wf_fail("markup: a '<' that starts no element");
        if (!wf_in(wf_svg_elements, (const char *)name, nlen) &&
            !(html && wf_in(wf_html_elements, (const char *)name, nlen)))
            return wf_fail("markup: an element tensortrace never writes");
        if (closing) {
            if (p >= end || *p != '>') return wf_fail("markup: a bad closing tag");
            p++;
            if (depth == 0 || strlen(stack[depth - 1]) != nlen || memcmp(stack[depth - 1], name, nlen))
                return wf_fail("markup: a closing tag that does not match");
            depth--;
            continue;
        }
        /* attributes */
        int self_closing = 0;
        for (;;) {
            while (p < end && (*p == ' ' || *p == '\n' || *p == '\t')) p++;
            if (p >= end) return wf_fail("markup: an unterminated tag");
            if (*p == '>') { p++; break; }
            if (*p == '/' && p + 1 < end && p[1] == '>') { p += 2; self_closing = 1; break; }
            const unsigned char *an = p;
            while (p < end && wf_name_char(*p)) p++;
            size_t alen = (size_t)(p - an);
            if (alen == 0) return wf_fail("markup: junk in a tag");
            if (!wf_in(wf_attributes, (const char *)an, alen)) return wf_fail("markup: an attribute tensortrace never writes");
            if (p + 1 >= end || p[0] != '=' || p[1] != '"') return wf_fail("markup: an attribute without a quoted value");
            p += 2;
            const unsigned char *v = p;
            if (!wf_text(&p, end, '"')) return 0;
            if (p >= end || *p != '"') return wf_fail("markup: an attribute value with '<' or no end");
            size_t vlen = (size_t)(p - v);
            p++;
            char val[64] = "";
            memcpy(val, v, vlen < sizeof val - 1 ? vlen : sizeof val - 1);
            for (char *c = val; *c; c++) if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
            wf_at = an;
            if (alen == 3 && !memcmp(an, "src", 3) && strncmp(val, "data:image/png;base64,", 22) &&
                strncmp(val, "data:image/svg+xml;base64,", 26))
                return wf_fail("markup: a src that is not an embedded image");
            if (alen == 4 && !memcmp(an, "href", 4) && val[0] != '#') return wf_fail("markup: a href that leaves the page");
        }
        if (depth == 0) roots++;
        if (!html && roots > 1) return wf_fail("SVG: more than one root element");
        static const char *const voids[] = { "meta", "img", NULL };
        if (self_closing || (html && wf_in(voids, (const char *)name, nlen))) continue;
        if (depth == WF_DEPTH) return wf_fail("markup: nested too deep");
        memcpy(stack[depth], name, nlen);
        stack[depth++][nlen] = 0;
        const int is_script = nlen == 6 && !memcmp(name, "script", 6), is_style = nlen == 5 && !memcmp(name, "style", 5);
        if (html && (is_script || is_style)) {
            /* raw text up to the first closing tag: tensortrace's own code, once */
            if ((is_script ? ++scripts : ++styles) > 1) return wf_fail("HTML: a second <script> or <style>");
            const char *close = is_script ? "</script>" : "</style>";
            const unsigned char *e = (const unsigned char *)strstr((const char *)p, close);
            if (e == NULL || e >= end) return wf_fail("HTML: an unterminated <script> or <style>");
            p = e;
        }
    }
    if (depth) return wf_fail("markup: elements left open");
    if (roots == 0) return wf_fail("markup: empty document");
    if (html && scripts != 1) return wf_fail("HTML: the page's script is missing");
    return 1;
}

#ifdef __clang__
#pragma clang attribute pop
#endif

#endif
