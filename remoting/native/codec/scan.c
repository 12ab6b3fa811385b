/* Scanning CommitLog records back (remoting/record.py python_scan_record). */
#include "codec.h"
#include <stdarg.h>
#include <zlib.h>

/* Given once by remoting/record.py: the RecordScan type (a tuple subclass whose fields are
 * RECORD_SCAN_FIELDS, checked there at import) and the four RecordKind members. Values held,
 * never called. */
static PyObject *scan_type, *kind_message, *kind_blank, *kind_end, *kind_corrupt;

PyObject *configure_scan(PyObject *self, PyObject *args) {
    PyObject *t, *m, *b, *e, *c;
    if (!PyArg_ParseTuple(args, "O!OOOO", &PyType_Type, &t, &m, &b, &e, &c)) return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)t, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "RecordScan is a tuple subclass");
        return NULL;
    }
    Py_XSETREF(scan_type, Py_NewRef(t));
    Py_XSETREF(kind_message, Py_NewRef(m));
    Py_XSETREF(kind_blank, Py_NewRef(b));
    Py_XSETREF(kind_end, Py_NewRef(e));
    Py_XSETREF(kind_corrupt, Py_NewRef(c));
    Py_RETURN_NONE;
}

/* RecordScan(kind, size, topic, queue_id, queue_offset, phys_offset, sys_flag,
 * store_timestamp, properties, reason); steals topic, properties and reason. */
static PyObject *new_scan(PyObject *kind, long long size, PyObject *topic, long queue_id,
                          long long queue_offset, long long phys_offset, long sys_flag,
                          long long store_ts, PyObject *properties, PyObject *reason) {
    PyObject *empty = NULL;
    if (topic == NULL || properties == NULL || reason == NULL) {
        empty = PyUnicode_New(0, 0);
        if (empty == NULL) goto fail;
        if (topic == NULL) topic = (Py_INCREF(empty), empty);
        if (properties == NULL) properties = (Py_INCREF(empty), empty);
        if (reason == NULL) reason = (Py_INCREF(empty), empty);
        Py_DECREF(empty);
    }
    PyTypeObject *type = (PyTypeObject *)scan_type;
    PyObject *scan = type->tp_alloc(type, 10);
    if (scan == NULL) goto fail;
    PyObject *items[10] = {
        (Py_INCREF(kind), kind),       PyLong_FromLongLong(size),     topic,
        PyLong_FromLong(queue_id),     PyLong_FromLongLong(queue_offset),
        PyLong_FromLongLong(phys_offset), PyLong_FromLong(sys_flag),
        PyLong_FromLongLong(store_ts), properties,                    reason,
    };
    int ok = 1;
    for (int i = 0; i < 10; i++) {
        if (items[i] == NULL) ok = 0;
        PyTuple_SET_ITEM(scan, i, items[i]);
    }
    if (!ok) {
        Py_DECREF(scan);
        return NULL;
    }
    return scan;
fail:
    Py_XDECREF(topic);
    Py_XDECREF(properties);
    Py_XDECREF(reason);
    return NULL;
}

static PyObject *corrupt(const char *format, ...) {
    va_list args;
    va_start(args, format);
    PyObject *reason = PyUnicode_FromFormatV(format, args);
    va_end(args);
    if (reason == NULL) return NULL;
    return new_scan(kind_corrupt, 0, NULL, 0, 0, 0, 0, 0, NULL, reason);
}

/* scan_record(view, pos, check_crc) -> RecordScan: remoting/record.py python_scan_record. */
PyObject *scan_record(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"view", "pos", "check_crc", NULL};
    PyObject *view;
    Py_ssize_t pos;
    int check_crc = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "On|$p", keywords, &view, &pos, &check_crc))
        return NULL;
    if (scan_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure_scan was not called");
        return NULL;
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(view, &buf, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *data = (const unsigned char *)buf.buf;
    PyObject *result = NULL;
    Py_ssize_t available = buf.len - pos;
    if (pos < 0) {
        PyErr_SetString(PyExc_ValueError, "negative position");
        goto done;
    }
    if (available < 8) {
        result = new_scan(kind_end, 0, NULL, 0, 0, 0, 0, 0, NULL,
                          PyUnicode_FromString("segment ends"));
        goto done;
    }
    const unsigned char *p = data + pos;
    int32_t total = get_i32(p), magic = get_i32(p + 4);
    if (magic == BLANK_MAGIC_CODE) {
        result = new_scan(kind_blank, total, NULL, 0, 0, 0, 0, 0, NULL, NULL);
        goto done;
    }
    if (magic != MESSAGE_MAGIC_CODE) {
        if (total == 0 && magic == 0)
            result = new_scan(kind_end, 0, NULL, 0, 0, 0, 0, 0, NULL,
                              PyUnicode_FromString("zeros"));
        else
            result = corrupt("bad magic code 0x%x", (unsigned int)magic);
        goto done;
    }
    if (total < RECORD_FIXED_BYTES || total > available) {
        result = corrupt("size %d does not fit (%zd bytes left)", (int)total, available);
        goto done;
    }
    int32_t sys_flag = get_i32(p + 36);
    Py_ssize_t born = (sys_flag & BORNHOST_V6_FLAG) ? 16 : 4;
    Py_ssize_t store = (sys_flag & STOREHOSTADDRESS_V6_FLAG) ? 16 : 4;
    Py_ssize_t header = 80 + born + store;
    if (total < header + 3) {
        result = corrupt("size %d does not fit its header", (int)total);
        goto done;
    }
    int32_t crc = get_i32(p + 8), queue_id = get_i32(p + 12);
    int64_t queue_offset = (int64_t)(((uint64_t)(uint32_t)get_i32(p + 20) << 32) |
                                     (uint32_t)get_i32(p + 24));
    int64_t phys_offset = (int64_t)(((uint64_t)(uint32_t)get_i32(p + 28) << 32) |
                                    (uint32_t)get_i32(p + 32));
    const unsigned char *ts = p + 52 + born;
    int64_t store_ts =
        (int64_t)(((uint64_t)(uint32_t)get_i32(ts) << 32) | (uint32_t)get_i32(ts + 4));
    int32_t body_length = get_i32(p + 76 + born + store);
    Py_ssize_t at = header + (Py_ssize_t)body_length; /* relative to the record */
    if (body_length < 0 || at >= total) {
        result = corrupt("body length %d does not fit", (int)body_length);
        goto done;
    }
    Py_ssize_t topic_length = p[at];
    Py_ssize_t props_at = at + 1 + topic_length;
    if (props_at + 2 > total) {
        result = corrupt("topic runs past the record");
        goto done;
    }
    Py_ssize_t props_length = get_i16(p + props_at);
    if (header + 3 + body_length + topic_length + props_length != total) {
        result = corrupt("fields do not add up to TOTALSIZE %d", (int)total);
        goto done;
    }
    if (check_crc) {
        unsigned long computed = crc32_z(0L, p + header, (size_t)body_length);
        if ((long)crc != (long)(computed & 0x7FFFFFFFul)) {
            result = corrupt("body CRC mismatch");
            goto done;
        }
    }
    PyObject *topic = PyUnicode_DecodeUTF8((const char *)p + at + 1, topic_length, NULL);
    PyObject *properties =
        topic == NULL ? NULL
                      : PyUnicode_DecodeUTF8((const char *)p + props_at + 2, props_length, NULL);
    if (properties == NULL) {
        Py_XDECREF(topic);
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) goto done;
        PyErr_Clear();
        result = corrupt("topic or properties not UTF-8");
        goto done;
    }
    result = new_scan(kind_message, total, topic, queue_id, queue_offset, phys_offset, sys_flag,
                      store_ts, properties, NULL);
done:
    PyBuffer_Release(&buf);
    return result;
}
