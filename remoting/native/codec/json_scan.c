/* The JSON lexer of the command header scans (send_scan.c): strict plain JSON only, read in
 * place; anything it does not take makes the scan answer None and the orjson path decide
 * (json_scan.h says what is taken). */
#include "json_scan.h"
#include <string.h>

/* 1 for the bytes a string takes as they are (printable ASCII but the quote and the
 * backslash), 0 for those it stops or looks at. */
#define ROW(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
const unsigned char json_plain_byte[256] = {
    ROW(0), ROW(0),                                 /* 0x00-0x1F: control bytes */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20-0x2F: '"' is 0x22 */
    ROW(1), ROW(1),                                 /* 0x30-0x4F */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50-0x5F: '\\' is 0x5C */
    ROW(1),                                         /* 0x60-0x6F */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, /* 0x70-0x7F: DEL is 0x7F */
    ROW(0), ROW(0), ROW(0), ROW(0), ROW(0), ROW(0), ROW(0), ROW(0), /* 0x80-0xFF */
};

/* A hex digit's value + 1, 0 for any other byte. */
const unsigned char json_hex_digit[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
    ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15,
    ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};
#undef ROW

/* The byte a checked escape at p (on its backslash; escape_length took it) decodes to. */
static inline unsigned char escaped_byte(const unsigned char *p) {
    switch (p[1]) {
    case 'u': return (unsigned char)((p[4] - '0') * 16 + json_hex_digit[p[5]] - 1);
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    default: return p[1]; /* " \ / */
    }
}

/* A new ASCII str of a string span, its escapes decoded. */
PyObject *span_str(const Span *s) {
    PyObject *out = PyUnicode_New(s->len - s->escaped, 127);
    if (out == NULL) return NULL;
    Py_UCS1 *w = PyUnicode_1BYTE_DATA(out);
    if (!s->escaped) {
        memcpy(w, s->at, (size_t)s->len);
        return out;
    }
    /* the scan checked every escape: each decodes to one byte */
    const unsigned char *p = s->at, *end = s->at + s->len;
    Py_UCS1 *w_end = w + (s->len - s->escaped);
#if defined(__SSE2__)
    /* sixteen bytes copied a step, up to the next backslash; the bytes stored past it are
     * written again by the steps after (every byte below w_end is, in order) */
    const __m128i backslash = _mm_set1_epi8('\\');
    while (end - p >= 16 && w_end - w >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        _mm_storeu_si128((__m128i *)w, x);
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, backslash));
        if (mask == 0) {
            p += 16;
            w += 16;
            continue;
        }
        int k = __builtin_ctz(mask);
        w += k;
        p += k;
        *w++ = escaped_byte(p);
        p += p[1] == 'u' ? 6 : 2;
    }
#endif
    while (p < end) {
        if (*p != '\\') {
            *w++ = *p++;
        } else {
            *w++ = escaped_byte(p);
            p += p[1] == 'u' ? 6 : 2;
        }
    }
    return out;
}

/* The last few strings made for one field, kept: a producer group, topic or language repeats
 * from request to request, and a kept str is not allocated again and keeps its hash (the
 * valid-topic set and the topic table look it up). */
PyObject *kept_str_search(Kept *kept, const Span *s) {
    if (s->escaped) return span_str(s);
    for (int n = 0, i = kept->hit; n < KEPT; n++, i = (i + 1) % KEPT) { /* the last hit first */
        PyObject *k = kept->strs[i];
        if (k != NULL && PyUnicode_GET_LENGTH(k) == s->len &&
            same_bytes(PyUnicode_1BYTE_DATA(k), s->at, s->len)) {
            kept->hit = i;
            return Py_NewRef(k);
        }
    }
    PyObject *out = span_str(s);
    if (out == NULL) return NULL;
    Py_XSETREF(kept->strs[kept->next], Py_NewRef(out));
    kept->hit = kept->next;
    kept->next = (kept->next + 1) % KEPT;
    return out;
}
