/* SEND_BATCH_MESSAGE bodies (docs/spec/message-format.md §9): one entry's bounds, checked in
 * the order of remoting/message.py python_decode_batch_body. Shared, static, by the record
 * codec (decode_batch_body) and the store (batch_records). */
#ifndef ROCKETMQ_TRIO_BATCH_BODY_H
#define ROCKETMQ_TRIO_BATCH_BODY_H

#include "record_layout.h"

/* One entry: (TOTALSIZE, MAGIC, BODYCRC, FLAG, BODYLENGTH, body, PROPERTIESLENGTH int16,
 * properties). */
#define BATCH_ENTRY_FIXED_BYTES 22

typedef struct {
    int32_t flag;
    Py_ssize_t body_at, body_length, props_at, props_length, next;
} BatchEntry;

static inline int all_ascii(const unsigned char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i] & 0x80) return 0;
    return 1;
}

/* The entry at `pos`; -1 with `error_type` raised. With `props` non-NULL the properties are
 * decoded into it, else only checked to be UTF-8. */
static inline int parse_batch_entry(const unsigned char *data, Py_ssize_t len, Py_ssize_t pos,
                                    PyObject *error_type, BatchEntry *e, PyObject **props) {
    if (len - pos < BATCH_ENTRY_FIXED_BYTES) {
        PyErr_Format(error_type, "truncated batch entry at %zd", pos);
        return -1;
    }
    int32_t total = get_i32(data + pos);
    e->flag = get_i32(data + pos + 12);
    int32_t body_length = get_i32(data + pos + 16);
    Py_ssize_t at = pos + 20;
    if (body_length < 0 || at + (Py_ssize_t)body_length + 2 > len) {
        PyErr_Format(error_type, "batch entry at %zd: body length %d does not fit", pos,
                     (int)body_length);
        return -1;
    }
    e->body_at = at;
    e->body_length = body_length;
    at += body_length;
    int16_t props_length = get_i16(data + at);
    at += 2;
    if (props_length < 0 || at + props_length > len) {
        PyErr_Format(error_type, "batch entry at %zd: properties length %d does not fit", pos,
                     (int)props_length);
        return -1;
    }
    e->props_at = at;
    e->props_length = props_length;
    if (props != NULL || !all_ascii(data + at, props_length)) {
        PyObject *text = PyUnicode_DecodeUTF8((const char *)data + at, props_length, NULL);
        if (text == NULL) {
            PyErr_Clear();
            PyErr_Format(error_type, "batch entry at %zd: properties not UTF-8", pos);
            return -1;
        }
        if (props != NULL)
            *props = text;
        else
            Py_DECREF(text);
    }
    at += props_length;
    if (total != at - pos) {
        if (props != NULL) Py_CLEAR(*props);
        PyErr_Format(error_type, "batch entry at %zd: TOTALSIZE %d != %zd", pos, (int)total,
                     at - pos);
        return -1;
    }
    e->next = at;
    return 0;
}

/* A memoryview's buffer, when it is contiguous bytes; NULL with ValueError else. */
static inline const Py_buffer *byte_view(PyObject *view) {
    Py_buffer *buf = PyMemoryView_GET_BUFFER(view);
    if (!PyBuffer_IsContiguous(buf, 'C') || buf->itemsize != 1) {
        PyErr_SetString(PyExc_ValueError, "a contiguous byte view is needed");
        return NULL;
    }
    return buf;
}

#endif
