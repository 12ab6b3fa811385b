/* Java's String.hashCode, and the fields dispatch reads from a properties string. */
#include "speedups.h"

/* Over UTF-16 code units, as Java sees the string; mod 2^32. Continues `h` over the code
 * points [start, end) of `text`, so a concatenation needs no new string. */
uint32_t java_hash_range(uint32_t h, PyObject *text, Py_ssize_t start, Py_ssize_t end) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *s = (const Py_UCS1 *)data;
        for (Py_ssize_t i = start; i < end; i++) h = 31u * h + s[i];
    } else if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *s = (const Py_UCS2 *)data;
        for (Py_ssize_t i = start; i < end; i++) h = 31u * h + s[i];
    } else {
        const Py_UCS4 *s = (const Py_UCS4 *)data;
        for (Py_ssize_t i = start; i < end; i++) {
            Py_UCS4 c = s[i];
            if (c > 0xFFFF) { /* a surrogate pair in UTF-16 */
                c -= 0x10000;
                h = 31u * h + (0xD800u + (c >> 10));
                h = 31u * h + (0xDC00u + (c & 0x3FF));
            } else {
                h = 31u * h + c;
            }
        }
    }
    return h;
}

uint32_t unsigned_java_hash(PyObject *text) {
    return java_hash_range(0, text, 0, PyUnicode_GET_LENGTH(text));
}

PyObject *java_hash(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "java_hash takes a str, not %.100s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    return PyLong_FromLong((long)(int32_t)unsigned_java_hash(arg));
}

/* dispatch_fields(properties text) -> (tags code, KEYS, UNIQ_KEY, DELAY or None)
 * What dispatch needs of an encoded properties string (NAME \x01 VALUE, \x02-separated), read
 * as Java's string2messageProperties leaves it: a name runs to the first \x01 of its segment,
 * empty values count as absent, a later duplicate wins. The tags code is the TAGS value's
 * String.hashCode (0 without one). The reference: broker/store/batch_records.py
 * python_dispatch_fields. */
PyObject *dispatch_fields(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "dispatch_fields takes a str");
        return NULL;
    }
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(arg, &len);
    if (text == NULL) return NULL;
    return dispatch_fields_of(text, len);
}

/* dispatch_fields over the UTF-8 bytes of a properties string. */
PyObject *dispatch_fields_of(const char *text, Py_ssize_t len) {
    /* [start, end) of the last non-empty value of each name */
    const char *found[4][2] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    static const char *names[4] = {"TAGS", "KEYS", "UNIQ_KEY", "DELAY"};
    static const Py_ssize_t name_lengths[4] = {4, 4, 8, 5};
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *segment_end = memchr(p, '\x02', end - p);
        if (segment_end == NULL) segment_end = end;
        const char *sep = memchr(p, '\x01', segment_end - p);
        if (sep != NULL && sep + 1 < segment_end) {
            Py_ssize_t name_length = sep - p;
            for (int i = 0; i < 4; i++) {
                if (name_length == name_lengths[i] && memcmp(p, names[i], name_length) == 0) {
                    found[i][0] = sep + 1;
                    found[i][1] = segment_end;
                    break;
                }
            }
        }
        p = segment_end + 1;
    }
    PyObject *values[4] = {NULL, NULL, NULL, NULL};
    long tags_code = 0;
    for (int i = 0; i < 4; i++) {
        if (found[i][0] != NULL) {
            values[i] = PyUnicode_DecodeUTF8(found[i][0], found[i][1] - found[i][0], NULL);
        } else if (i == 1 || i == 2) {
            values[i] = PyUnicode_New(0, 0);
        } else {
            values[i] = Py_None;
            Py_INCREF(Py_None);
        }
        if (values[i] == NULL) {
            for (int j = 0; j < i; j++) Py_DECREF(values[j]);
            return NULL;
        }
    }
    if (values[0] != Py_None) tags_code = (long)(int32_t)unsigned_java_hash(values[0]);
    PyObject *result = Py_BuildValue("lNNN", tags_code, values[1], values[2], values[3]);
    Py_DECREF(values[0]);
    return result;
}
