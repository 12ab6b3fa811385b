/* SEND_BATCH_MESSAGE bodies (remoting/message.py python_decode_batch_body). */
#include "codec.h"
#include "batch_body.h"

/* decode_batch_body(view, entry_type, error_type) -> [entry_type(flag, body view, props str)]
 * entry_type: remoting.message.BatchEntry, a tuple subclass whose fields are
 * BATCH_ENTRY_FIELDS (checked at import); error_type: MessageDecodeError. */
PyObject *decode_batch_body(PyObject *self, PyObject *args) {
    PyObject *view, *entry_type, *error_type;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyMemoryView_Type, &view, &PyType_Type, &entry_type,
                          &error_type))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)entry_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "a batch entry type is a tuple subclass");
        return NULL;
    }
    const Py_buffer *buf = byte_view(view);
    if (buf == NULL) return NULL;
    const unsigned char *data = (const unsigned char *)buf->buf;
    Py_ssize_t pos = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    PyTypeObject *type = (PyTypeObject *)entry_type;
    while (pos < buf->len) {
        BatchEntry e;
        PyObject *props = NULL;
        if (parse_batch_entry(data, buf->len, pos, error_type, &e, &props) < 0) goto fail;
        PyObject *body = PySequence_GetSlice(view, e.body_at, e.body_at + e.body_length);
        PyObject *flag_o = PyLong_FromLong(e.flag);
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
        pos = e.next;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}
