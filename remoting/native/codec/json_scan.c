/* The JSON lexer of the command header scans (send_scan.c): strict plain JSON only, read in
 * place; anything it does not take makes the scan answer None and the orjson path decide
 * (json_scan.h says what is taken). */
#include "json_scan.h"
#include <string.h>

static int hex_value(unsigned char h) {
    if (h >= '0' && h <= '9') return h - '0';
    if (h >= 'a' && h <= 'f') return h - 'a' + 10;
    if (h >= 'A' && h <= 'F') return h - 'A' + 10;
    return -1;
}

/* The \uXXXX at p (p[0] == 'u', 4 bytes checked present) as one ASCII byte, else -1: \u00 then
 * 0-7 then a hex digit (a property separator is \u0001 or \u0002, eight a send). */
static int ascii_escape(const unsigned char *p) {
    if (p[1] != '0' || p[2] != '0' || p[3] < '0' || p[3] > '7') return -1;
    int y = hex_value(p[4]);
    return y < 0 ? -1 : (p[3] - '0') * 16 + y;
}

static int simple_escape(unsigned char e) {
    switch (e) {
    case '"': return '"';
    case '\\': return '\\';
    case '/': return '/';
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    default: return -1;
    }
}

/* 1 for the bytes a string takes as they are (printable ASCII but the quote and the
 * backslash), 0 for those it stops or looks at: one load a byte where the tests were four. */
#define ROW(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
static const unsigned char plain_byte[256] = {
    ROW(0), ROW(0),                                 /* 0x00-0x1F: control bytes */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20-0x2F: '"' is 0x22 */
    ROW(1), ROW(1),                                 /* 0x30-0x4F */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50-0x5F: '\\' is 0x5C */
    ROW(1),                                         /* 0x60-0x6F */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, /* 0x70-0x7F: DEL is 0x7F */
    ROW(0), ROW(0), ROW(0), ROW(0), ROW(0), ROW(0), ROW(0), ROW(0), /* 0x80-0xFF */
};
#undef ROW

/* A string at the cursor (on its opening quote) into *s; 0 when not in the strict form.
 * s->escaped: how many bytes shorter its escapes decode (0: the bytes are the string). */
int scan_string(Cursor *c, Span *s) {
    const unsigned char *p = c->p + 1, *end = c->end;
    s->at = p;
    s->kind = J_STR;
    s->escaped = 0;
    for (;;) {
        while (p < end && plain_byte[*p]) p++;
        if (p >= end) return 0;
        if (*p == '"') {
            s->len = p - s->at;
            c->p = p + 1;
            return 1;
        }
        if (*p != '\\' || end - p < 2) return 0; /* a control byte, DEL or not ASCII */
        if (p[1] == 'u') {
            if (end - p < 6 || ascii_escape(p + 1) < 0) return 0;
            p += 6;
            s->escaped += 5;
        } else {
            if (simple_escape(p[1]) < 0) return 0;
            p += 2;
            s->escaped += 1;
        }
    }
}

/* An integer at the cursor: -?(0|[1-9][0-9]*) of at most max_digits digits, followed by
 * neither a fraction nor an exponent; 0 when not one. */
int scan_integer(Cursor *c, Span *s, int allow_sign, int max_digits) {
    const unsigned char *p = c->p, *end = c->end;
    s->at = p;
    s->kind = J_INT;
    s->escaped = 0;
    if (p < end && *p == '-') {
        if (!allow_sign) return 0;
        p++;
    }
    const unsigned char *digits = p;
    while (p < end && *p >= '0' && *p <= '9') p++;
    Py_ssize_t n = p - digits;
    if (n == 0 || n > max_digits || (n > 1 && digits[0] == '0')) return 0;
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return 0;
    s->len = p - s->at;
    c->p = p;
    return 1;
}

int scan_literal(Cursor *c, const char *word, JsonKind kind, Span *s) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
    s->at = c->p;
    s->len = (Py_ssize_t)n;
    s->kind = kind;
    s->escaped = 0;
    c->p += n;
    return 1;
}

/* A value of the kinds the scan knows (string, integer, true, false, null). */
int scan_value(Cursor *c, Span *s, int max_digits) {
    if (c->p >= c->end) return 0;
    switch (*c->p) {
    case '"': return scan_string(c, s);
    case 't': return scan_literal(c, "true", J_TRUE, s);
    case 'f': return scan_literal(c, "false", J_FALSE, s);
    case 'n': return scan_literal(c, "null", J_NULL, s);
    default: return scan_integer(c, s, 1, max_digits);
    }
}

/* `"key" :` at the cursor, the key unescaped; 0 when not one. A one-byte key with its colon
 * right after (a SEND_MESSAGE_V2 header's fourteen) is read in place. */
int scan_key(Cursor *c, Span *key) {
    const unsigned char *p = c->p;
    if (c->end - p >= 4 && p[0] == '"' && plain_byte[p[1]] && p[2] == '"' && p[3] == ':') {
        *key = (Span){p + 1, 1, J_STR, 0};
        c->p = p + 4;
        skip_ws(c);
        return 1;
    }
    skip_ws(c);
    if (c->p >= c->end || *c->p != '"' || !scan_string(c, key) || key->escaped) return 0;
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':') return 0;
    c->p++;
    skip_ws(c);
    return 1;
}

/* After a member: 1 at ',' (consumed), 2 at '}' (consumed), 0 otherwise. */
int member_end(Cursor *c) {
    skip_ws(c);
    if (c->p >= c->end) return 0;
    unsigned char ch = *c->p++;
    return ch == ',' ? 1 : ch == '}' ? 2 : 0;
}

int key_is(const Span *key, const char *name) {
    /* the first byte first: names differ there mostly, and a name ends at its NUL */
    return key->len > 0 && key->at[0] == (unsigned char)name[0] &&
           strncmp((const char *)key->at, name, (size_t)key->len) == 0 && name[key->len] == 0;
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
    const unsigned char *p = s->at, *end = s->at + s->len;
    while (p < end) { /* the scan checked every escape: each decodes to one byte */
        if (*p != '\\') {
            *w++ = *p++;
        } else if (p[1] == 'u') {
            *w++ = (Py_UCS1)ascii_escape(p + 1);
            p += 6;
        } else {
            *w++ = (Py_UCS1)simple_escape(p[1]);
            p += 2;
        }
    }
    return out;
}

/* The last few strings made for one field, kept: a producer group, topic or language repeats
 * from request to request, and a kept str is not allocated again and keeps its hash (the
 * valid-topic set and the topic table look it up). */
PyObject *kept_str(Kept *kept, const Span *s) {
    if (s->escaped) return span_str(s);
    for (int i = 0; i < KEPT; i++) {
        PyObject *k = kept->strs[i];
        if (k != NULL && PyUnicode_GET_LENGTH(k) == s->len &&
            memcmp(PyUnicode_1BYTE_DATA(k), s->at, (size_t)s->len) == 0)
            return Py_NewRef(k);
    }
    PyObject *out = span_str(s);
    if (out == NULL) return NULL;
    Py_XSETREF(kept->strs[kept->next], Py_NewRef(out));
    kept->next = (kept->next + 1) % KEPT;
    return out;
}
