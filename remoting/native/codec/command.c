/* A JSON command header's values (remoting/command.py _decode_json_header, the reference).
 *
 * plain_command takes what orjson parsed and returns (code, language, version, opaque, flag,
 * remark, extFields) when the header is in the plain form every client sends: the four numbers
 * ints in [0, 2^31), language and remark strings or absent, extFields an object of strings.
 * Anything else gives None and the Python decoder converts or refuses it. */
#include "codec.h"

static PyObject *k_code, *k_opaque, *k_flag, *k_version, *k_language, *k_remark, *k_ext, *java;

static int make_names(void) {
    if (java != NULL) return 0;
    k_code = PyUnicode_InternFromString("code");
    k_opaque = PyUnicode_InternFromString("opaque");
    k_flag = PyUnicode_InternFromString("flag");
    k_version = PyUnicode_InternFromString("version");
    k_language = PyUnicode_InternFromString("language");
    k_remark = PyUnicode_InternFromString("remark");
    k_ext = PyUnicode_InternFromString("extFields");
    java = PyUnicode_InternFromString("JAVA");
    return k_code && k_opaque && k_flag && k_version && k_language && k_remark && k_ext && java
               ? 0
               : -1;
}

/* 1: *out is the header's int (absent: 0); 0: not a plain one; -1: error. */
static int java_int(PyObject *data, PyObject *key, int required, long *out) {
    PyObject *v = PyDict_GetItemWithError(data, key);
    if (v == NULL) {
        if (PyErr_Occurred()) return -1;
        *out = 0;
        return !required;
    }
    if (!PyLong_CheckExact(v)) return 0;
    int overflow;
    long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || n < 0 || n > INT32_MAX) return 0;
    *out = (long)n;
    return 1;
}

/* 1: *out is a new reference to the str (or `absent`); 0: not plain; -1: error. */
static int plain_str(PyObject *data, PyObject *key, PyObject *absent, PyObject **out) {
    PyObject *v = PyDict_GetItemWithError(data, key);
    if (v == NULL && PyErr_Occurred()) return -1;
    if (v == NULL || (v == Py_None && absent == Py_None)) {
        *out = Py_NewRef(absent);
        return 1;
    }
    if (!PyUnicode_CheckExact(v)) return 0;
    *out = Py_NewRef(v);
    return 1;
}

PyObject *plain_command(PyObject *self, PyObject *data) {
    if (!PyDict_CheckExact(data)) Py_RETURN_NONE;
    if (make_names() < 0) return NULL;
    long code, opaque, flag, version;
    int got;
    if ((got = java_int(data, k_code, 1, &code)) <= 0 ||
        (got = java_int(data, k_opaque, 0, &opaque)) <= 0 ||
        (got = java_int(data, k_flag, 0, &flag)) <= 0 ||
        (got = java_int(data, k_version, 0, &version)) <= 0) {
        if (got < 0) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *language = NULL, *remark = NULL;
    if ((got = plain_str(data, k_language, java, &language)) <= 0) goto out;
    if ((got = plain_str(data, k_remark, Py_None, &remark)) <= 0) goto out;
    PyObject *ext = PyDict_GetItemWithError(data, k_ext);
    if (ext == NULL && PyErr_Occurred()) goto error;
    if (ext == NULL) ext = Py_None;
    if (ext != Py_None) {
        got = 0;
        if (!PyDict_CheckExact(ext)) goto out;
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(ext, &pos, &key, &value))
            if (!PyUnicode_CheckExact(value)) goto out;
    }
    PyObject *result = Py_BuildValue("(lOlllNO)", code, language, version, opaque, flag, remark,
                                     ext);
    Py_DECREF(language);
    return result; /* remark's reference went into the tuple (N) */
out:
    Py_XDECREF(language);
    Py_XDECREF(remark);
    if (got < 0) return NULL;
    Py_RETURN_NONE;
error:
    Py_XDECREF(language);
    Py_XDECREF(remark);
    return NULL;
}
