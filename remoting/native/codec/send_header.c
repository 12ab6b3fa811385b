/* SEND_MESSAGE / SEND_MESSAGE_V2's custom header and the message's property string
 * (remoting/send_header.py python_decode_send_header, remoting/message.py
 * python_string_to_properties): the two per-request parses of every send.
 *
 * decode_send_header is a fast path, not a second decoder: it takes only the plain form every
 * client sends (each value an ASCII string, numbers as [+-]digits within their Java type, both
 * topics already known valid) and returns None for anything else, so the Python decoder, the
 * reference, refuses or accepts every other input with its own remark. */
#include "codec.h"
#include <limits.h>

#define SEND_FIELDS 14

/* SendMessageRequestHeader's fields in order, by their wire names in SEND_MESSAGE and in
 * SEND_MESSAGE_V2 (whose batch 'm' comes after maxReconsumeTimes 'l' in its own class). */
typedef enum { F_STR, F_TOPIC, F_INT, F_SYSFLAG, F_LONG, F_BOOL } FieldType;
typedef struct {
    const char *v1, *v2;
    FieldType type;
    int required;
} SendField;

static const SendField send_fields[SEND_FIELDS] = {
    {"producerGroup", "a", F_STR, 1},
    {"topic", "b", F_TOPIC, 1},
    {"defaultTopic", "c", F_TOPIC, 1},
    {"defaultTopicQueueNums", "d", F_INT, 1},
    {"queueId", "e", F_INT, 1},
    {"sysFlag", "f", F_SYSFLAG, 1},
    {"bornTimestamp", "g", F_LONG, 1},
    {"flag", "h", F_INT, 1},
    {"properties", "i", F_STR, 0},
    {"reconsumeTimes", "j", F_INT, 0},
    {"unitMode", "k", F_BOOL, 0},
    {"batch", "m", F_BOOL, 0},
    {"maxReconsumeTimes", "l", F_INT, 0},
    {"bname", "n", F_STR, 0},
};

/* Interned key strings, made once: a dict lookup by an interned str compares pointers. */
static PyObject *keys[2][SEND_FIELDS];

static int make_keys(void) {
    if (keys[0][0] != NULL) return 0;
    for (int i = 0; i < SEND_FIELDS; i++) {
        keys[0][i] = PyUnicode_InternFromString(send_fields[i].v1);
        keys[1][i] = PyUnicode_InternFromString(send_fields[i].v2);
        if (keys[0][i] == NULL || keys[1][i] == NULL) return -1;
    }
    return 0;
}

/* An ASCII [+-]digits string within [low, high] into *out; 0 when it is not one (the Python
 * decoder then judges it: int() also takes spaces, underscores and non-ASCII digits). */
int plain_integer(PyObject *s, long long low, long long high, long long *out) {
    if (!PyUnicode_IS_ASCII(s)) return 0;
    return plain_integer_bytes((const char *)PyUnicode_1BYTE_DATA(s), PyUnicode_GET_LENGTH(s),
                               low, high, out);
}

/* plain_integer on n ASCII bytes (send_scan.c reads them from the header itself). */
int plain_integer_bytes(const char *p, Py_ssize_t n, long long low, long long high,
                        long long *out) {
    Py_ssize_t i = 0;
    int negative = 0;
    if (n > 0 && (p[0] == '-' || p[0] == '+')) {
        negative = p[0] == '-';
        i = 1;
    }
    if (i == n || n - i > 19) return 0; /* 19 digits hold every long */
    unsigned long long magnitude = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        magnitude = magnitude * 10 + (unsigned long long)(p[i] - '0');
    }
    /* |LONG_MIN| = 2^63 is the largest magnitude either bound allows */
    if (magnitude > (1ULL << 63)) return 0;
    long long value;
    if (negative)
        value = magnitude == (1ULL << 63) ? LLONG_MIN : -(long long)magnitude;
    else if (magnitude > (unsigned long long)LLONG_MAX)
        return 0;
    else
        value = (long long)magnitude;
    if (value < low || value > high) return 0;
    *out = value;
    return 1;
}

/* Boolean.parseBoolean on an ASCII string; 0 for a non-ASCII one (left to the Python
 * decoder: str.lower() maps a few non-ASCII letters to ASCII ones). */
static int plain_bool(PyObject *s, int *out) {
    if (!PyUnicode_IS_ASCII(s)) return 0;
    const char *p = (const char *)PyUnicode_1BYTE_DATA(s);
    *out = PyUnicode_GET_LENGTH(s) == 4 && (p[0] | 0x20) == 't' && (p[1] | 0x20) == 'r' &&
           (p[2] | 0x20) == 'u' && (p[3] | 0x20) == 'e';
    return 1;
}

/* decode_send_header(ext, v2, valid_topics) -> the 14 values of SendMessageRequestHeader, in
 * its order, or None when the Python decoder must judge the header. */
PyObject *decode_send_header(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyDict_CheckExact(args[0]) || !PyAnySet_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "decode_send_header(dict, bool, set)");
        return NULL;
    }
    PyObject *ext = args[0], *topics = args[2];
    int v2 = PyObject_IsTrue(args[1]);
    if (v2 < 0 || make_keys() < 0) return NULL;
    PyObject *values[SEND_FIELDS] = {NULL};
    for (int i = 0; i < SEND_FIELDS; i++) {
        const SendField *f = &send_fields[i];
        PyObject *raw = PyDict_GetItemWithError(ext, keys[v2][i]);
        if (raw == NULL) {
            if (PyErr_Occurred()) goto fail;
            if (f->required) goto defer;
            values[i] = f->type == F_BOOL ? Py_NewRef(Py_False) : Py_NewRef(Py_None);
            continue;
        }
        if (!PyUnicode_CheckExact(raw)) goto defer;
        long long number;
        int truth;
        switch (f->type) {
        case F_STR:
            values[i] = Py_NewRef(raw);
            break;
        case F_TOPIC: {
            int known = PySet_Contains(topics, raw);
            if (known < 0) goto fail;
            if (!known) goto defer; /* names.topic_problem checks it and remembers it */
            values[i] = Py_NewRef(raw);
            break;
        }
        case F_INT:
        case F_SYSFLAG:
            if (!plain_integer(raw, INT32_MIN, INT32_MAX, &number)) goto defer;
            if (f->type == F_SYSFLAG) number &= SEND_SYS_FLAG_MASK;
            values[i] = PyLong_FromLongLong(number);
            break;
        case F_LONG:
            if (!plain_integer(raw, LLONG_MIN, LLONG_MAX, &number)) goto defer;
            values[i] = PyLong_FromLongLong(number);
            break;
        case F_BOOL:
            if (!plain_bool(raw, &truth)) goto defer;
            values[i] = Py_NewRef(truth ? Py_True : Py_False);
            break;
        }
        if (values[i] == NULL) goto fail;
    }
    PyObject *out = PyTuple_New(SEND_FIELDS);
    if (out == NULL) goto fail;
    for (int i = 0; i < SEND_FIELDS; i++) PyTuple_SET_ITEM(out, i, values[i]);
    return out;
defer:
    for (int i = 0; i < SEND_FIELDS; i++) Py_XDECREF(values[i]);
    Py_RETURN_NONE;
fail:
    for (int i = 0; i < SEND_FIELDS; i++) Py_XDECREF(values[i]);
    return NULL;
}

/* string_to_properties(text) -> dict: Java's string2messageProperties. Segments split at
 * PROPERTY_SEPARATOR (2); a segment's name runs to its first NAME_VALUE_SEPARATOR (1), and
 * segments with an empty name or value (or no separator) are dropped; later names win. */
PyObject *string_to_properties(PyObject *self, PyObject *text) {
    PyObject *out = PyDict_New();
    if (out == NULL || text == Py_None) return out;
    if (!PyUnicode_Check(text)) {
        Py_DECREF(out);
        PyErr_Format(PyExc_TypeError, "properties are a str, not %.100s",
                     Py_TYPE(text)->tp_name);
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), start = 0;
    while (start < n) {
        Py_ssize_t end = start, sep = -1;
        for (; end < n; end++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, end);
            if (c == 2) break;
            if (c == 1 && sep < 0) sep = end;
        }
        if (sep > start && sep + 1 < end) {
            PyObject *name = PyUnicode_Substring(text, start, sep);
            PyObject *value = name ? PyUnicode_Substring(text, sep + 1, end) : NULL;
            int failed = value == NULL || PyDict_SetItem(out, name, value) < 0;
            Py_XDECREF(name);
            Py_XDECREF(value);
            if (failed) {
                Py_DECREF(out);
                return NULL;
            }
        }
        start = end + 1;
    }
    return out;
}
