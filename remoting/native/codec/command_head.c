/* A reply's frame head: length prefix, header length and JSON header (remoting/command.py
 * encode_command with _encode_json_header, the reference, which orjson writes).
 *
 * json_frame_head writes only what needs no escaping: every string printable ASCII without '"'
 * or '\\', every number within a long. Otherwise it returns None and orjson writes the header,
 * so both give the same bytes for every command. */
#include "codec.h"
#include <stdio.h>

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Out;

static int put(Out *o, const char *s, Py_ssize_t n) {
    if (o->len + n > o->cap) {
        Py_ssize_t cap = (o->cap + n) * 2;
        char *p = PyMem_Realloc(o->p, cap);
        if (p == NULL) return -1;
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    return 0;
}

/* 1 written, 0 needs escaping (or is not an exact str), -1 memory */
static int put_plain_str(Out *o, PyObject *s) {
    if (!PyUnicode_CheckExact(s) || !PyUnicode_IS_ASCII(s)) return 0;
    const char *p = (const char *)PyUnicode_1BYTE_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] == '"' || p[i] == '\\' || p[i] == 0x7F) return 0;
    if (put(o, "\"", 1) < 0 || put(o, p, n) < 0 || put(o, "\"", 1) < 0) return -1;
    return 1;
}

static int put_int(Out *o, const char *key, PyObject *v) {
    if (!PyLong_CheckExact(v)) return 0;
    int overflow;
    long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) return 0;
    if (n == -1 && PyErr_Occurred()) return -1;
    char buf[64];
    int k = snprintf(buf, sizeof buf, "%s%lld", key, n);
    return put(o, buf, k) < 0 ? -1 : 1;
}

/* json_frame_head(code, ext, flag, language, opaque, remark, version, body_length) -> bytes
 * or None. */
PyObject *json_frame_head(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "json_frame_head takes 8 arguments");
        return NULL;
    }
    PyObject *ext = args[1], *remark = args[5];
    Py_ssize_t body_length = PyLong_AsSsize_t(args[7]);
    if (body_length == -1 && PyErr_Occurred()) return NULL;
    Out o = {PyMem_Malloc(512), 8, 512}; /* the first 8 bytes: the prefix, written last */
    if (o.p == NULL) return PyErr_NoMemory();
    int ok = put_int(&o, "{\"code\":", args[0]);
    if (ok > 0 && ext != Py_None) {
        if (!PyDict_Check(ext)) ok = 0;
        else if (PyDict_GET_SIZE(ext) > 0) {
            ok = put(&o, ",\"extFields\":{", 14) < 0 ? -1 : 1;
            Py_ssize_t pos = 0, n = 0;
            PyObject *key, *value;
            while (ok > 0 && PyDict_Next(ext, &pos, &key, &value)) {
                if (n++ && put(&o, ",", 1) < 0) ok = -1;
                if (ok > 0) ok = put_plain_str(&o, key);
                if (ok > 0) ok = put(&o, ":", 1) < 0 ? -1 : 1;
                if (ok > 0) ok = put_plain_str(&o, value);
            }
            if (ok > 0) ok = put(&o, "}", 1) < 0 ? -1 : 1;
        }
    }
    if (ok > 0) ok = put_int(&o, ",\"flag\":", args[2]);
    if (ok > 0) ok = put(&o, ",\"language\":", 12) < 0 ? -1 : 1;
    if (ok > 0) ok = put_plain_str(&o, args[3]);
    if (ok > 0) ok = put_int(&o, ",\"opaque\":", args[4]);
    if (ok > 0 && remark != Py_None) {
        ok = put(&o, ",\"remark\":", 10) < 0 ? -1 : 1;
        if (ok > 0) ok = put_plain_str(&o, remark);
    }
    if (ok > 0) ok = put(&o, ",\"serializeTypeCurrentRPC\":\"JSON\"", 33) < 0 ? -1 : 1;
    if (ok > 0) ok = put_int(&o, ",\"version\":", args[6]);
    if (ok > 0) ok = put(&o, "}", 1) < 0 ? -1 : 1;
    PyObject *out = NULL;
    if (ok < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
    } else if (ok == 0) {
        out = Py_NewRef(Py_None);
    } else {
        /* [total length][serialize type 0 (JSON) << 24 | header length], both big-endian */
        Py_ssize_t header_length = o.len - 8;
        if (header_length > 0xFFFFFF || 4 + header_length + body_length > INT32_MAX) {
            out = Py_NewRef(Py_None); /* the reference says what is wrong */
        } else {
            uint32_t total = BE32((uint32_t)(4 + header_length + body_length));
            uint32_t word = BE32((uint32_t)header_length);
            memcpy(o.p, &total, 4);
            memcpy(o.p + 4, &word, 4);
            out = PyBytes_FromStringAndSize(o.p, o.len);
        }
    }
    PyMem_Free(o.p);
    return out;
}
