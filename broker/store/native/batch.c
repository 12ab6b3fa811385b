/* A batch put's records before packing (broker/store/batch_records.py
 * python_batch_records): each entry's properties followed by the batch's, its size and CRC. */
#include "store.h"
#include "batch_body.h"

/* batch_records(view, batch properties bytes, fixed size, max body, max properties,
 *               error_type) -> (records, total, refused)
 * records: (flag, body view, properties bytes, size, body CRC) per entry, its properties
 * followed by the batch's (a \x02 between when both are non-empty and the entry's does not
 * end with one). refused: the index of the first entry whose body or properties are over the
 * limit (the last record), or -1. The whole body is checked either way; a malformed one raises
 * error_type (MessageDecodeError). */
PyObject *batch_records(PyObject *self, PyObject *args) {
    PyObject *view, *error_type;
    Py_buffer batch_props;
    Py_ssize_t fixed_size, max_body, max_props;
    if (!PyArg_ParseTuple(args, "O!y*nnnO", &PyMemoryView_Type, &view, &batch_props,
                          &fixed_size, &max_body, &max_props, &error_type))
        return NULL;
    PyObject *records = NULL, *result = NULL;
    const Py_buffer *buf = byte_view(view);
    if (buf == NULL) goto done;
    records = PyList_New(0);
    if (records == NULL) goto done;
    const unsigned char *data = (const unsigned char *)buf->buf;
    Py_ssize_t pos = 0, total = 0, refused = -1;
    while (pos < buf->len) {
        BatchEntry e;
        if (parse_batch_entry(data, buf->len, pos, error_type, &e, NULL) < 0) goto done;
        if (refused >= 0) { /* the rest is only checked, as the reference decodes it all */
            pos = e.next;
            continue;
        }
        int separate = e.props_length > 0 && batch_props.len > 0 &&
                       data[e.props_at + e.props_length - 1] != '\x02';
        Py_ssize_t props_length = e.props_length + separate + batch_props.len;
        PyObject *props = PyBytes_FromStringAndSize(NULL, props_length);
        if (props == NULL) goto done;
        char *p = PyBytes_AS_STRING(props);
        memcpy(p, data + e.props_at, e.props_length);
        if (separate) p[e.props_length] = '\x02';
        memcpy(p + e.props_length + separate, batch_props.buf, batch_props.len);
        Py_ssize_t size = fixed_size + e.body_length + props_length;
        unsigned long crc = body_crc(data + e.body_at, (size_t)e.body_length) & 0x7FFFFFFFul;
        PyObject *body = PySequence_GetSlice(view, e.body_at, e.body_at + e.body_length);
        if (body == NULL) {
            Py_DECREF(props);
            goto done;
        }
        PyObject *record = Py_BuildValue("(iNNnk)", (int)e.flag, body, props, size, crc);
        if (record == NULL) goto done;
        int appended = PyList_Append(records, record);
        Py_DECREF(record);
        if (appended < 0) goto done;
        if (props_length > max_props || e.body_length > max_body)
            refused = PyList_GET_SIZE(records) - 1;
        total += size;
        pos = e.next;
    }
    result = Py_BuildValue("(Onn)", records, total, refused);
done:
    Py_XDECREF(records);
    PyBuffer_Release(&batch_props);
    return result;
}
