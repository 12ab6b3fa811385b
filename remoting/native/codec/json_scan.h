/* The JSON lexer the command header scans share (json_scan.c; send_scan.c uses it).
 *
 * Strict plain JSON only, read in place: strings of printable ASCII whose escapes are \" \\
 * \/ \b \f \n \r \t or \u00XX below 0x80 (each decoding to the one byte orjson decodes it
 * to), integers -?(0|[1-9][0-9]*) with a digit limit and no fraction or exponent, true, false,
 * null, JSON's four whitespace bytes between tokens. Every step returns 0 (or NULL) for
 * anything else, and the scan then returns None so the orjson path decides. No step reads a
 * byte at or past the end it is given (a header may end its buffer). */
#ifndef ROCKETMQ_TRIO_JSON_SCAN_H
#define ROCKETMQ_TRIO_JSON_SCAN_H

#include "codec.h"
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef enum { J_NONE, J_STR, J_INT, J_TRUE, J_FALSE, J_NULL } JsonKind;

/* A scanned value: a string's bytes between its quotes, or an integer's digits. */
typedef struct {
    const unsigned char *at;
    Py_ssize_t len;
    JsonKind kind;
    int escaped;
} Span;

typedef struct {
    const unsigned char *p, *end;
} Cursor;

/* The lexer's steps are inline: the scans call them twenty-odd times a header, and as calls
 * into another unit each paid its prologue and its spans' stores and loads (lonefront round's
 * profile: the lexer's calls were a third of a send's scan). */

/* 1 for the bytes a string takes as they are: printable ASCII but the quote and the backslash. */
extern const unsigned char json_plain_byte[256];
/* A hex digit's value + 1, 0 for any other byte. */
extern const unsigned char json_hex_digit[256];

static inline const unsigned char *ws_end(const unsigned char *p, const unsigned char *end) {
    /* one compare for the usual case, a token byte (all above ' ') */
    while (p < end && *p <= ' ' && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

static inline void skip_ws(Cursor *c) { c->p = ws_end(c->p, c->end); }

/* The first byte in [p, end) that is not a string's plain byte, or end. Sixteen bytes a step
 * where sixteen are left before end (never a byte past it: a header may end its buffer). SSE2
 * is x86-64's baseline; elsewhere a byte a step. */
static inline const unsigned char *plain_run_end(const unsigned char *p, const unsigned char *end) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(' '), del = _mm_set1_epi8(0x7F);
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        /* signed: a byte above 0x7F is negative, so below ' ' as a control byte is */
        __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote),
                                                 _mm_cmpeq_epi8(x, backslash)),
                                    _mm_or_si128(_mm_cmplt_epi8(x, space), _mm_cmpeq_epi8(x, del)));
        unsigned mask = (unsigned)_mm_movemask_epi8(stop);
        if (mask) return p + __builtin_ctz(mask);
        p += 16;
    }
#endif
    while (p < end && json_plain_byte[*p]) p++;
    return p;
}

/* The length of the escape at p (on its backslash) when in the strict form: 6 for \u00XX
 * below 0x80, 2 for \" \\ \/ \b \f \n \r \t; 0 otherwise. */
static inline int escape_length(const unsigned char *p, const unsigned char *end) {
    if (end - p < 2) return 0;
    if (p[1] == 'u')
        return end - p >= 6 && p[2] == '0' && p[3] == '0' && p[4] >= '0' && p[4] <= '7' &&
                       json_hex_digit[p[5]]
                   ? 6
                   : 0;
    switch (p[1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': return 2;
    default: return 0;
    }
}

/* The closing quote of a string whose bytes start at p (after its opening quote), how many
 * bytes shorter its escapes decode into *escaped; NULL when not in the strict form. */
static inline __attribute__((always_inline)) const unsigned char *
string_end(const unsigned char *p, const unsigned char *end, int *escaped) {
    int saved = 0;
    for (;;) {
        p = plain_run_end(p, end);
        if (p >= end) return NULL;
        if (*p == '"') {
            *escaped = saved;
            return p;
        }
        int n = *p == '\\' ? escape_length(p, end) : 0; /* else a control byte, DEL, not ASCII */
        if (n == 0) return NULL;
        p += n;
        saved += n - 1;
    }
}

/* A string at the cursor (on its opening quote) into *s; 0 when not in the strict form.
 * s->escaped: how many bytes shorter its escapes decode (0: the bytes are the string). */
static inline __attribute__((always_inline)) int scan_string(Cursor *c, Span *s) {
    const unsigned char *at = c->p + 1;
    int escaped;
    const unsigned char *close = string_end(at, c->end, &escaped);
    if (close == NULL) return 0;
    *s = (Span){at, close - at, J_STR, escaped};
    c->p = close + 1;
    return 1;
}

/* An integer at the cursor: -?(0|[1-9][0-9]*) of at most max_digits digits (at most 18),
 * followed by neither a fraction nor an exponent, its value into *value; 0 when not one. */
/* An integer at the cursor: -?(0|[1-9][0-9]*) of at most max_digits digits (at most 18),
 * followed by neither a fraction nor an exponent, its value into *value; 0 when not one. */
static inline int scan_integer(Cursor *c, Span *s, int allow_sign, int max_digits,
                               long long *value) {
    const unsigned char *p = c->p, *end = c->end;
    int negative = p < end && *p == '-';
    if (negative && !allow_sign) return 0;
    const unsigned char *digits = p + negative;
    unsigned long long n = 0; /* wraps past 19 digits, which max_digits refuses */
    for (p = digits; p < end && (unsigned)(*p - '0') <= 9; p++) n = n * 10 + (*p - '0');
    Py_ssize_t count = p - digits;
    if (count == 0 || count > max_digits || (count > 1 && digits[0] == '0')) return 0;
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return 0;
    *s = (Span){c->p, p - c->p, J_INT, 0};
    *value = negative ? -(long long)n : (long long)n;
    c->p = p;
    return 1;
}

/* One of the literals true, false, null (n bytes of word) at the cursor. */
static inline int scan_literal(Cursor *c, const char *word, Py_ssize_t n, JsonKind kind,
                               Span *s) {
    if (c->end - c->p < n || memcmp(c->p, word, (size_t)n) != 0) return 0;
    *s = (Span){c->p, n, kind, 0};
    c->p += n;
    return 1;
}

/* A string, integer (its value into *value), true, false or null. */
static inline int scan_value(Cursor *c, Span *s, int max_digits, long long *value) {
    if (c->p >= c->end) return 0;
    switch (*c->p) {
    case '"': return scan_string(c, s);
    case 't': return scan_literal(c, "true", 4, J_TRUE, s);
    case 'f': return scan_literal(c, "false", 5, J_FALSE, s);
    case 'n': return scan_literal(c, "null", 4, J_NULL, s);
    default: return scan_integer(c, s, 1, max_digits, value);
    }
}

/* `"key" :` at the cursor, the key with no escape; 0 when not one. A one-byte key with its
 * colon right after (a SEND_MESSAGE_V2 header's fourteen) is read in place. */
static inline int scan_key(Cursor *c, Span *key) {
    const unsigned char *p = c->p, *end = c->end;
    if (end - p >= 4 && p[0] == '"' && json_plain_byte[p[1]] && p[2] == '"' && p[3] == ':') {
        *key = (Span){p + 1, 1, J_STR, 0};
        c->p = ws_end(p + 4, end);
        return 1;
    }
    p = ws_end(p, end);
    if (p >= end || *p != '"') return 0;
    const unsigned char *at = p + 1;
    p = plain_run_end(at, end);
    if (p >= end || *p != '"') return 0; /* an escape, a control byte or the end */
    *key = (Span){at, p - at, J_STR, 0};
    p = ws_end(p + 1, end);
    if (p >= end || *p != ':') return 0;
    c->p = ws_end(p + 1, end);
    return 1;
}

/* After a member: 1 at ',' (consumed), 2 at '}' (consumed), 0 otherwise. */
static inline int member_end(Cursor *c) {
    const unsigned char *p = ws_end(c->p, c->end);
    if (p >= c->end) return 0;
    c->p = p + 1;
    return *p == ',' ? 1 : *p == '}' ? 2 : 0;
}

/* A new ASCII str of a string span, its escapes decoded. */
PyObject *span_str(const Span *s);

/* The last few strs made for one field, kept for the next request's same bytes. */
#define KEPT 4
typedef struct {
    PyObject *strs[KEPT];
    int next, hit; /* the slot the next new str takes; the one found last */
} Kept;
PyObject *kept_str_search(Kept *kept, const Span *s);

/* n bytes at a and b equal: up to 32 compared by two loads each (overlapping), never a byte
 * outside either; longer ones by memcmp. */
static inline int same_bytes(const unsigned char *a, const unsigned char *b, Py_ssize_t n) {
#if defined(__SSE2__)
    if (n >= 16 && n <= 32) {
        __m128i a0 = _mm_loadu_si128((const __m128i *)a), b0 = _mm_loadu_si128((const __m128i *)b);
        __m128i a1 = _mm_loadu_si128((const __m128i *)(a + n - 16));
        __m128i b1 = _mm_loadu_si128((const __m128i *)(b + n - 16));
        __m128i same = _mm_and_si128(_mm_cmpeq_epi8(a0, b0), _mm_cmpeq_epi8(a1, b1));
        return _mm_movemask_epi8(same) == 0xFFFF;
    }
#endif
    if (n >= 8 && n <= 16) {
        uint64_t a0, a1, b0, b1;
        memcpy(&a0, a, 8), memcpy(&a1, a + n - 8, 8), memcpy(&b0, b, 8), memcpy(&b1, b + n - 8, 8);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    if (n >= 4 && n < 8) {
        uint32_t a0, a1, b0, b1;
        memcpy(&a0, a, 4), memcpy(&a1, a + n - 4, 4), memcpy(&b0, b, 4), memcpy(&b1, b + n - 4, 4);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    if (n < 4) {
        for (Py_ssize_t i = 0; i < n; i++)
            if (a[i] != b[i]) return 0;
        return 1;
    }
    return memcmp(a, b, (size_t)n) == 0;
}

/* kept_str: the str found last tried here, the others and a new one by kept_str_search. */
static inline __attribute__((always_inline)) PyObject *kept_str(Kept *kept, const Span *s) {
    PyObject *k = kept->strs[kept->hit];
    if (k != NULL && !s->escaped && PyUnicode_GET_LENGTH(k) == s->len &&
        same_bytes(PyUnicode_1BYTE_DATA(k), s->at, s->len))
        return Py_NewRef(k);
    return kept_str_search(kept, s);
}

/* What a field's value is when the reference must judge it (None is a value). */
#define NOT_PLAIN Py_NotImplemented

/* extFields' members as they came, for a header class other than the send's (header_scan.c);
 * more than MAX_MEMBERS leaves that class to the orjson path. */
#define MAX_MEMBERS 32
typedef struct {
    Span keys[MAX_MEMBERS], values[MAX_MEMBERS];
    int count, overflow;
} Members;

/* header_scan.c: the slot of a registered code, -1 for none; its values from the members in
 * its fields' order, Py_None when one is not plain. */
int header_scan_index(long code);
PyObject *header_scan_values(int at, const Members *m);

#endif
