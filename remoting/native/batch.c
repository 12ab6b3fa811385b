/* SEND_BATCH_MESSAGE bodies (remoting/message.py python_decode_batch_body). */
#include "speedups.h"

/* decode_batch_body(view, entry_type, error_type) -> [entry_type(flag, body view, props str)]
 * view: a memoryview of the SEND_BATCH_MESSAGE body. Entries are (TOTALSIZE, MAGIC, BODYCRC,
 * FLAG, BODYLENGTH, body, PROPERTIESLENGTH int16, properties). */
PyObject *decode_batch_body(PyObject *self, PyObject *args) {
    PyObject *view, *entry_type, *error_type;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyMemoryView_Type, &view, &PyType_Type, &entry_type,
                          &error_type))
        return NULL;
    Py_buffer *buf = PyMemoryView_GET_BUFFER(view);
    if (!PyBuffer_IsContiguous(buf, 'C') || buf->itemsize != 1) {
        PyErr_SetString(PyExc_ValueError, "a contiguous byte view is needed");
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)buf->buf;
    Py_ssize_t len = buf->len, pos = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    PyTypeObject *type = (PyTypeObject *)entry_type;
    while (pos < len) {
        if (len - pos < 22) {
            PyErr_Format(error_type, "truncated batch entry at %zd", pos);
            goto fail;
        }
        int32_t total = get_i32(data + pos);
        int32_t flag = get_i32(data + pos + 12);
        int32_t body_length = get_i32(data + pos + 16);
        Py_ssize_t at = pos + 20;
        if (body_length < 0 || at + (Py_ssize_t)body_length + 2 > len) {
            PyErr_Format(error_type, "batch entry at %zd: body length %d does not fit", pos,
                         (int)body_length);
            goto fail;
        }
        Py_ssize_t body_at = at;
        at += body_length;
        int16_t props_length = get_i16(data + at);
        at += 2;
        if (props_length < 0 || at + props_length > len) {
            PyErr_Format(error_type, "batch entry at %zd: properties length %d does not fit", pos,
                         (int)props_length);
            goto fail;
        }
        PyObject *props = PyUnicode_DecodeUTF8((const char *)data + at, props_length, NULL);
        if (props == NULL) {
            PyErr_Clear();
            PyErr_Format(error_type, "batch entry at %zd: properties not UTF-8", pos);
            goto fail;
        }
        at += props_length;
        if (total != at - pos) {
            Py_DECREF(props);
            PyErr_Format(error_type, "batch entry at %zd: TOTALSIZE %d != %zd", pos, (int)total,
                         at - pos);
            goto fail;
        }
        PyObject *body = PySequence_GetSlice(view, body_at, body_at + body_length);
        PyObject *flag_o = PyLong_FromLong(flag);
        PyObject *entry = type->tp_alloc(type, 3);
        if (body == NULL || flag_o == NULL || entry == NULL) {
            Py_XDECREF(body);
            Py_XDECREF(flag_o);
            Py_XDECREF(entry);
            Py_DECREF(props);
            goto fail;
        }
        PyTuple_SET_ITEM(entry, 0, flag_o);
        PyTuple_SET_ITEM(entry, 1, body);
        PyTuple_SET_ITEM(entry, 2, props);
        int appended = PyList_Append(out, entry);
        Py_DECREF(entry);
        if (appended < 0) goto fail;
        pos = at;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}
