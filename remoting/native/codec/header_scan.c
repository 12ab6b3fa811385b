/* PULL_MESSAGE's and any other registered request's header scanned like a send's
 * (send_scan.c scans the command and extFields' members; this resolves the members against the
 * header class's plain fields). */
#include "json_scan.h"
#include <string.h>

/* Other requests scanned the same way: per code, the header class's fields as
 * remoting/header_codec.py plain_fields gives them (wire key, kind, required, low, high, names,
 * default), given once by configure_header_scan (broker/processor/pull.py gives
 * PULL_MESSAGE's). Their values are decode_plain_header's (plain_header.c) on the extFields
 * the orjson path would build. */
#define MAX_CODES 4
static struct {
    long code;
    PyObject *fields;
} header_specs[MAX_CODES];
static Kept kept_header[MAX_CODES][MAX_MEMBERS];

int header_scan_index(long code) {
    for (int i = 0; i < MAX_CODES; i++)
        if (header_specs[i].fields != NULL && header_specs[i].code == code) return i;
    return -1;
}

/* configure_header_scan(code, fields) */
PyObject *configure_header_scan(PyObject *self, PyObject *args) {
    long code;
    PyObject *spec;
    if (!PyArg_ParseTuple(args, "lO!", &code, &PyTuple_Type, &spec)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(spec);
    int ok = code != 10 && code != 310 && n <= MAX_MEMBERS /* not the sends */;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        PyObject *f = PyTuple_GET_ITEM(spec, i);
        ok = PyTuple_CheckExact(f) && PyTuple_GET_SIZE(f) == 7 &&
             PyUnicode_CheckExact(PyTuple_GET_ITEM(f, 0)) &&
             PyUnicode_IS_ASCII(PyTuple_GET_ITEM(f, 0)) && PyLong_Check(PyTuple_GET_ITEM(f, 1)) &&
             PyLong_Check(PyTuple_GET_ITEM(f, 3)) && PyLong_Check(PyTuple_GET_ITEM(f, 4));
        long kind = ok ? PyLong_AsLong(PyTuple_GET_ITEM(f, 1)) : -1;
        ok = ok && kind >= 0 && kind <= 2 && (kind != 2 || PyAnySet_Check(PyTuple_GET_ITEM(f, 5)));
    }
    if (PyErr_Occurred()) return NULL;
    int at = header_scan_index(code);
    for (int i = 0; at < 0 && i < MAX_CODES; i++)
        if (header_specs[i].fields == NULL) at = i;
    if (!ok || at < 0) {
        PyErr_SetString(PyExc_TypeError, "configure_header_scan(code, plain_fields tuple)");
        return NULL;
    }
    header_specs[at].code = code;
    Py_XSETREF(header_specs[at].fields, Py_NewRef(spec));
    Py_RETURN_NONE;
}

/* One field's value from its span, as decode_plain_header reads the reference's str. */
static PyObject *header_field(PyObject *f, const Span *v, Kept *kept) {
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(f, 1));
    int plain_text = v->kind == J_STR && !v->escaped;
    if (kind == 0) /* a str; a number's or boolean's string is left to Python */
        return v->kind == J_STR ? span_str(v) : Py_NewRef(NOT_PLAIN);
    if (!plain_text && !(kind == 1 && v->kind == J_INT)) return Py_NewRef(NOT_PLAIN);
    if (kind == 1) {
        long long low = PyLong_AsLongLong(PyTuple_GET_ITEM(f, 3));
        long long high = PyLong_AsLongLong(PyTuple_GET_ITEM(f, 4)), number;
        if (PyErr_Occurred()) return NULL;
        if (!plain_integer_bytes((const char *)v->at, v->len, low, high, &number))
            return Py_NewRef(NOT_PLAIN);
        return PyLong_FromLongLong(number);
    }
    PyObject *name = kept_str(kept, v); /* a name: one the reference has seen valid */
    if (name == NULL) return NULL;
    int known = PySet_Contains(PyTuple_GET_ITEM(f, 5), name);
    if (known > 0) return name;
    Py_DECREF(name);
    return known < 0 ? NULL : Py_NewRef(NOT_PLAIN);
}

/* The header class's values in field order, Py_None when one is not plain. */
PyObject *header_scan_values(int at, const Members *m) {
    PyObject *spec = header_specs[at].fields;
    Py_ssize_t n = PyTuple_GET_SIZE(spec);
    if (m->overflow) Py_RETURN_NONE;
    PyObject *out = PyTuple_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *f = PyTuple_GET_ITEM(spec, i), *key = PyTuple_GET_ITEM(f, 0), *v;
        const char *name = (const char *)PyUnicode_1BYTE_DATA(key);
        Py_ssize_t len = PyUnicode_GET_LENGTH(key);
        int found = -1, twice = 0;
        for (int j = 0; j < m->count; j++)
            if (m->keys[j].len == len && memcmp(m->keys[j].at, name, (size_t)len) == 0) {
                twice |= found >= 0; /* the last one wins in the reference: left to it */
                found = j;
            }
        if (twice) {
            v = Py_NewRef(NOT_PLAIN);
        } else if (found < 0) {
            int required = PyObject_IsTrue(PyTuple_GET_ITEM(f, 2));
            v = required < 0 ? NULL
                : required   ? Py_NewRef(NOT_PLAIN)
                             : Py_NewRef(PyTuple_GET_ITEM(f, 6));
        } else {
            v = header_field(f, &m->values[found], &kept_header[at][i]);
        }
        if (v == NULL || v == NOT_PLAIN) {
            Py_DECREF(out);
            if (v == NULL) return NULL;
            Py_DECREF(v);
            Py_RETURN_NONE;
        }
        PyTuple_SET_ITEM(out, i, v);
    }
    return out;
}

