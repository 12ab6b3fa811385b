/* A custom header's values in their plain form (remoting/header_codec.py PlainHeader, whose
 * reference is decode_header: the one place a header value is parsed and checked).
 *
 * decode_plain_header(ext, fields) -> the header's values in field order, or None.
 * ``fields`` is what header_codec.plain_fields made of the class once: per field a tuple
 * (wire key, kind, required, low, high, names, default) with kind 0 a str, 1 an integer within
 * [low, high], 2 a name found in ``names`` (the valid names seen already). Only the plain form
 * is taken: every value a str, integers as ASCII [+-]digits within their range, names already
 * known; anything else (a missing required field, a bad or new name, a value out of range or
 * with spaces) returns None and the reference judges it, with its remark. */
#include "codec.h"
#include <limits.h>

enum { K_STR = 0, K_INT = 1, K_NAME = 2 };
#define MAX_FIELDS 32

PyObject *decode_plain_header(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[0]) || !PyTuple_CheckExact(args[1]) ||
        PyTuple_GET_SIZE(args[1]) > MAX_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "decode_plain_header(dict, tuple of <= 32 fields)");
        return NULL;
    }
    PyObject *ext = args[0], *fields = args[1];
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    PyObject *out = PyTuple_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *field = PyTuple_GET_ITEM(fields, i);
        if (!PyTuple_CheckExact(field) || PyTuple_GET_SIZE(field) != 7) {
            PyErr_SetString(PyExc_TypeError, "a field is (key, kind, required, low, high, "
                                             "names, default)");
            goto fail;
        }
        PyObject *raw = PyDict_GetItemWithError(ext, PyTuple_GET_ITEM(field, 0));
        if (raw == NULL) {
            if (PyErr_Occurred()) goto fail;
            int required = PyObject_IsTrue(PyTuple_GET_ITEM(field, 2));
            if (required < 0) goto fail;
            if (required) goto defer;
            PyTuple_SET_ITEM(out, i, Py_NewRef(PyTuple_GET_ITEM(field, 6)));
            continue;
        }
        if (!PyUnicode_CheckExact(raw)) goto defer;
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(field, 1));
        if (kind == -1 && PyErr_Occurred()) goto fail;
        PyObject *value = NULL;
        if (kind == K_INT) {
            long long low = PyLong_AsLongLong(PyTuple_GET_ITEM(field, 3));
            long long high = PyLong_AsLongLong(PyTuple_GET_ITEM(field, 4));
            if (PyErr_Occurred()) goto fail;
            long long number;
            if (!plain_integer(raw, low, high, &number)) goto defer;
            value = PyLong_FromLongLong(number);
            if (value == NULL) goto fail;
        } else if (kind == K_NAME) {
            PyObject *names = PyTuple_GET_ITEM(field, 5);
            if (!PyAnySet_Check(names)) {
                PyErr_SetString(PyExc_TypeError, "a name field's names are a set");
                goto fail;
            }
            int known = PySet_Contains(names, raw);
            if (known < 0) goto fail;
            if (!known) goto defer; /* the reference checks it and remembers it */
            value = Py_NewRef(raw);
        } else if (kind == K_STR) {
            value = Py_NewRef(raw);
        } else {
            PyErr_Format(PyExc_ValueError, "no field kind %ld", kind);
            goto fail;
        }
        PyTuple_SET_ITEM(out, i, value);
    }
    return out;
defer:
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    Py_DECREF(out);
    return NULL;
}
