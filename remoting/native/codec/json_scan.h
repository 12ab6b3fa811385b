/* The JSON lexer the command header scans share (json_scan.c; send_scan.c uses it).
 *
 * Strict plain JSON only, read in place: strings of printable ASCII whose escapes are \" \\
 * \/ \b \f \n \r \t or \u00XX below 0x80 (each decoding to the one byte orjson decodes it
 * to), integers -?(0|[1-9][0-9]*) with a digit limit and no fraction or exponent, true, false,
 * null, JSON's four whitespace bytes between tokens. Every function returns 0 for anything
 * else, and the scan then returns None so the orjson path decides. */
#ifndef ROCKETMQ_TRIO_JSON_SCAN_H
#define ROCKETMQ_TRIO_JSON_SCAN_H

#include "codec.h"

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

static inline void skip_ws(Cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
        c->p++;
}

/* A string at the cursor (on its opening quote) into *s; 0 when not in the strict form. */
int scan_string(Cursor *c, Span *s);
/* An integer of at most max_digits digits ('-' only when allow_sign); 0 when not one. */
int scan_integer(Cursor *c, Span *s, int allow_sign, int max_digits);
int scan_literal(Cursor *c, const char *word, JsonKind kind, Span *s);
/* A string, integer, true, false or null. */
int scan_value(Cursor *c, Span *s, int max_digits);
/* `"key" :` with the key unescaped. */
int scan_key(Cursor *c, Span *key);
/* After a member: 1 at ',' (consumed), 2 at '}' (consumed), 0 otherwise. */
int member_end(Cursor *c);
/* A key span equal to the NUL-terminated name. */
int key_is(const Span *key, const char *name);
/* A new ASCII str of a string span, its escapes decoded. */
PyObject *span_str(const Span *s);

/* The last few strs made for one field, kept for the next request's same bytes. */
#define KEPT 4
typedef struct {
    PyObject *strs[KEPT];
    int next;
} Kept;
PyObject *kept_str(Kept *kept, const Span *s);

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
