/* The send header's values from a scan's spans (send_scan.c): each the reference's result for
 * it, decode_send_header (send_header.c) on the extFields the orjson path would build, so the
 * tests hold the two to the same tuples (tests/unit/remoting/test_send_scan.py). */
#include "send_scan.h"
#include <limits.h>
#include <string.h>

static Kept kept_fields[SEND_FIELDS];

/* Eight ASCII digits at p as their number, -1 when one is not a digit: a lane a step (each
 * step's lanes stay below their width, so nothing carries between them). */
static inline long long eight_digits(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    const uint64_t threes = 0x3030303030303030ULL, high = 0xF0F0F0F0F0F0F0F0ULL;
    if ((v & high) != threes || ((v + 0x0606060606060606ULL) & high) != threes) return -1;
    v &= 0x0F0F0F0F0F0F0F0FULL;                               /* the first digit lowest */
    v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFULL;          /* two digits a 16-bit lane */
    v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFULL;        /* four a 32-bit lane */
    return (long long)((v * 10000 + (v >> 32)) & 0xFFFFFFFFULL); /* eight */
}

/* A plain string span as an integer within [low, high] into *out (plain_integer_bytes' answer;
 * digits only, the usual case, read here: one digit, or up to 8 then eight at once). */
static inline int text_integer(const Span *s, long long low, long long high, long long *out) {
    const unsigned char *p = s->at;
    Py_ssize_t n = s->len;
    long long value = -1;
    if (n == 1) {
        value = (unsigned)(p[0] - '0') <= 9 ? p[0] - '0' : -1;
    } else if (n >= 8 && n <= 16) {
        long long head = 0;
        Py_ssize_t i = 0;
        for (; i < n - 8 && (unsigned)(p[i] - '0') <= 9; i++) head = head * 10 + (p[i] - '0');
        long long tail = i == n - 8 ? eight_digits(p + i) : -1;
        value = tail < 0 ? -1 : head * 100000000LL + tail;
    }
    if (value >= 0) {
        if (value < low || value > high) return 0;
        *out = value;
        return 1;
    }
    return plain_integer_bytes((const char *)p, n, low, high, out);
}

/* The last born timestamp's int, kept: consecutive sends of a client often share their
 * millisecond. */
static PyObject *kept_born;
static long long kept_born_value;

static PyObject *born_int(long long number) {
    if (kept_born != NULL && kept_born_value == number) return Py_NewRef(kept_born);
    PyObject *out = PyLong_FromLongLong(number);
    if (out != NULL) {
        Py_XSETREF(kept_born, Py_NewRef(out));
        kept_born_value = number;
    }
    return out;
}

/* The values of the send header's fields from their spans, each the reference's result for
 * it (decode_send_header on the extFields the orjson path builds); NULL when the reference
 * would not take it plainly (no error set) or on an error (set). */

/* A string field (producerGroup, bname): a number's string is rare, left to Python. */
static inline PyObject *text_value(const Span *s, Kept *kept) {
    return s->kind == J_STR ? kept_str(kept, s) : NULL;
}

/* A topic: no escape (names.topic_problem judges any other) */
static inline PyObject *topic_value(const Span *s, Kept *kept) {
    return s->kind == J_STR && !s->escaped ? kept_str(kept, s) : NULL;
}

/* Boolean.parseBoolean of the string; a number's string is never "true". */
static inline PyObject *bool_value(const Span *s) {
    if (s->kind == J_STR && s->escaped) return NULL;
    int truth = s->kind == J_TRUE ||
                (s->kind == J_STR && s->len == 4 && (s->at[0] | 0x20) == 't' &&
                 (s->at[1] | 0x20) == 'r' && (s->at[2] | 0x20) == 'u' && (s->at[3] | 0x20) == 'e');
    return Py_NewRef(truth ? Py_True : Py_False);
}

/* An integer within [low, high]: a plain string's, or an integer's (its decimal string). */
static inline int int_of(const Span *s, long long number, long long low, long long high,
                         long long *out) {
    if (s->kind == J_INT) {
        *out = number;
        return number >= low && number <= high;
    }
    return s->kind == J_STR && !s->escaped && text_integer(s, low, high, out);
}

PyObject *small_ints[SMALL];

static inline __attribute__((always_inline)) PyObject *int_value(const Span *s, long long number) {
    long long n;
    return int_of(s, number, INT32_MIN, INT32_MAX, &n) ? int_object(n) : NULL;
}

/* The send header's 14 values (decode_send_header's tuple), Py_None when one is not plain. */
PyObject *send_values(const Scan *st, int table) {
    const Span *e = st->ext[table];
    const long long *n = st->ext_int[table];
    unsigned seen = st->ext_seen[table];
    if ((seen & 0xFF) != 0xFF) Py_RETURN_NONE; /* the first eight are required */
    long long sys_flag, born;
    int plain_sys = int_of(&e[5], n[5], INT32_MIN, INT32_MAX, &sys_flag);
    int plain_born = int_of(&e[6], n[6], LLONG_MIN, LLONG_MAX, &born);
#define OPTIONAL(i, value, absent) ((seen >> (i)) & 1 ? (value) : Py_NewRef(absent))
    PyObject *v[SEND_FIELDS] = {
        text_value(&e[0], &kept_fields[0]),
        topic_value(&e[1], &kept_fields[1]),
        topic_value(&e[2], &kept_fields[2]),
        int_value(&e[3], n[3]),
        int_value(&e[4], n[4]),
        plain_sys ? int_object(sys_flag & SEND_SYS_FLAG_MASK) : NULL,
        plain_born ? born_int(born) : NULL,
        int_value(&e[7], n[7]),
        /* the properties differ from send to send: not kept */
        OPTIONAL(8, e[8].kind == J_STR ? span_str(&e[8]) : NULL, Py_None),
        OPTIONAL(9, int_value(&e[9], n[9]), Py_None),
        OPTIONAL(10, bool_value(&e[10]), Py_False),
        OPTIONAL(11, bool_value(&e[11]), Py_False),
        OPTIONAL(12, int_value(&e[12], n[12]), Py_None),
        OPTIONAL(13, text_value(&e[13], &kept_fields[13]), Py_None),
    };
#undef OPTIONAL
    PyObject *out = NULL;
    for (int i = 0; i < SEND_FIELDS; i++)
        if (v[i] == NULL) goto not_made;
    if ((out = PyTuple_New(SEND_FIELDS)) == NULL) goto not_made;
    memcpy(&PyTuple_GET_ITEM(out, 0), v, sizeof v); /* the references move into the tuple */
    return out;
not_made: /* a value not plain (None), or an error */
    for (int i = 0; i < SEND_FIELDS; i++) Py_XDECREF(v[i]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

int send_values_init(void) {
    for (int i = 0; i < SMALL; i++)
        if (small_ints[i] == NULL && (small_ints[i] = PyLong_FromLong(i)) == NULL) return -1;
    return 0;
}
