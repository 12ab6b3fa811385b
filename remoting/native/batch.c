/* SEND_BATCH_MESSAGE bodies (remoting/message.py python_decode_batch_body) and the per-entry
 * work of a batch put either side of packing (broker/store/batch_records.py). */
#include "speedups.h"

/* One entry of a batch body: (TOTALSIZE, MAGIC, BODYCRC, FLAG, BODYLENGTH, body,
 * PROPERTIESLENGTH int16, properties). */
typedef struct {
    int32_t flag;
    Py_ssize_t body_at, body_length, props_at, props_length, next;
} batch_entry;

static int all_ascii(const unsigned char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i] & 0x80) return 0;
    return 1;
}

/* The entry at `pos`, checked in the reference's order; -1 with `error_type` raised. With
 * `props` non-NULL the properties are decoded into it, else only checked to be UTF-8. */
static int parse_entry(const unsigned char *data, Py_ssize_t len, Py_ssize_t pos,
                       PyObject *error_type, batch_entry *e, PyObject **props) {
    if (len - pos < 22) {
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

static const Py_buffer *byte_view(PyObject *view) {
    Py_buffer *buf = PyMemoryView_GET_BUFFER(view);
    if (!PyBuffer_IsContiguous(buf, 'C') || buf->itemsize != 1) {
        PyErr_SetString(PyExc_ValueError, "a contiguous byte view is needed");
        return NULL;
    }
    return buf;
}

/* decode_batch_body(view, entry_type, error_type) -> [entry_type(flag, body view, props str)] */
PyObject *decode_batch_body(PyObject *self, PyObject *args) {
    PyObject *view, *entry_type, *error_type;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyMemoryView_Type, &view, &PyType_Type, &entry_type,
                          &error_type))
        return NULL;
    const Py_buffer *buf = byte_view(view);
    if (buf == NULL) return NULL;
    const unsigned char *data = (const unsigned char *)buf->buf;
    Py_ssize_t pos = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    PyTypeObject *type = (PyTypeObject *)entry_type;
    while (pos < buf->len) {
        batch_entry e;
        PyObject *props = NULL;
        if (parse_entry(data, buf->len, pos, error_type, &e, &props) < 0) goto fail;
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

/* batch_records(view, batch properties bytes, fixed size, max body, max properties,
 *               error_type, crc32) -> (records, total, refused)
 * records: (flag, body view, properties bytes, size, body CRC) per entry, its properties
 * followed by the batch's (a \x02 between when both are non-empty and the entry's does not
 * end with one). refused: the index of the first entry whose body or properties are over the
 * limit (the last record), or -1. The whole body is checked either way. */
PyObject *batch_records(PyObject *self, PyObject *args) {
    PyObject *view, *error_type, *crc32;
    Py_buffer batch_props;
    Py_ssize_t fixed_size, max_body, max_props;
    if (!PyArg_ParseTuple(args, "O!y*nnnOO", &PyMemoryView_Type, &view, &batch_props,
                          &fixed_size, &max_body, &max_props, &error_type, &crc32))
        return NULL;
    PyObject *records = NULL, *result = NULL;
    const Py_buffer *buf = byte_view(view);
    if (buf == NULL) goto done;
    records = PyList_New(0);
    if (records == NULL) goto done;
    const unsigned char *data = (const unsigned char *)buf->buf;
    Py_ssize_t pos = 0, total = 0, refused = -1;
    while (pos < buf->len) {
        batch_entry e;
        if (parse_entry(data, buf->len, pos, error_type, &e, NULL) < 0) goto done;
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
        PyObject *body = PySequence_GetSlice(view, e.body_at, e.body_at + e.body_length);
        PyObject *crc = body == NULL ? NULL : PyObject_CallOneArg(crc32, body);
        unsigned long crc_value = crc == NULL ? 0 : PyLong_AsUnsignedLongMask(crc);
        Py_XDECREF(crc);
        PyObject *record = NULL;
        if (body != NULL && !PyErr_Occurred())
            record = Py_BuildValue("(iNNnk)", (int)e.flag, body, props, size,
                                   crc_value & 0x7FFFFFFFul);
        else {
            Py_XDECREF(body);
            Py_DECREF(props);
        }
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

/* "%s%016X" of a message id: the 32-char prefix (store host and port) and the offset. */
static PyObject *msg_id(PyObject *prefix, long long offset) {
    static const char hex[] = "0123456789ABCDEF";
    Py_ssize_t n = PyUnicode_GET_LENGTH(prefix);
    PyObject *id = PyUnicode_New(n + 16, 127);
    if (id == NULL) return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(id);
    const Py_UCS1 *in = PyUnicode_1BYTE_DATA(prefix);
    memcpy(out, in, n);
    unsigned long long u = (unsigned long long)offset;
    for (int i = 15; i >= 0; i--) {
        out[n + i] = hex[u & 0xF];
        u >>= 4;
    }
    return id;
}

/* batch_requests(records, msg id prefix, topic, queue id, first phys offset, first queue
 * offset, store timestamp, sys flag, request_type) -> (msg ids, dispatch requests)
 * For records as batch_records makes them, once they are packed back to back. */
PyObject *batch_requests(PyObject *self, PyObject *args) {
    PyObject *records, *prefix, *topic, *queue_id, *store_ts, *sys_flag, *request_type;
    long long phys_offset, queue_offset;
    if (!PyArg_ParseTuple(args, "O!UUOLLOOO!", &PyList_Type, &records, &prefix, &topic,
                          &queue_id, &phys_offset, &queue_offset, &store_ts, &sys_flag,
                          &PyType_Type, &request_type))
        return NULL;
    if (!PyUnicode_IS_ASCII(prefix)) {
        PyErr_SetString(PyExc_ValueError, "a message id prefix is hex digits");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(records);
    PyObject *ids = PyList_New(count), *requests = PyList_New(count), *result = NULL;
    if (ids == NULL || requests == NULL) goto done;
    PyTypeObject *type = (PyTypeObject *)request_type;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *record = PyList_GET_ITEM(records, i);
        if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) != 5 ||
            !PyBytes_Check(PyTuple_GET_ITEM(record, 2))) {
            PyErr_SetString(PyExc_TypeError,
                            "a record is a (flag, body, properties bytes, size, crc) tuple");
            goto done;
        }
        PyObject *props = PyTuple_GET_ITEM(record, 2), *size = PyTuple_GET_ITEM(record, 3);
        long long size_value = PyLong_AsLongLong(size);
        if (size_value == -1 && PyErr_Occurred()) goto done;
        PyObject *id = msg_id(prefix, phys_offset);
        if (id == NULL) goto done;
        PyList_SET_ITEM(ids, i, id);
        PyObject *fields = dispatch_fields_of(PyBytes_AS_STRING(props), PyBytes_GET_SIZE(props));
        if (fields == NULL) goto done;
        PyObject *request = type->tp_alloc(type, 11);
        PyObject *phys_o = PyLong_FromLongLong(phys_offset);
        PyObject *queue_offset_o = PyLong_FromLongLong(queue_offset);
        PyObject *properties = PyDict_New();
        if (request == NULL || phys_o == NULL || queue_offset_o == NULL || properties == NULL) {
            Py_DECREF(fields);
            Py_XDECREF(request);
            Py_XDECREF(phys_o);
            Py_XDECREF(queue_offset_o);
            Py_XDECREF(properties);
            goto done;
        }
        PyObject *items[11] = {topic,
                               queue_id,
                               phys_o,
                               size,
                               PyTuple_GET_ITEM(fields, 0),
                               store_ts,
                               queue_offset_o,
                               PyTuple_GET_ITEM(fields, 1),
                               PyTuple_GET_ITEM(fields, 2),
                               sys_flag,
                               properties};
        for (int k = 0; k < 11; k++) {
            if (k != 2 && k != 6 && k != 10) Py_INCREF(items[k]);
            PyTuple_SET_ITEM(request, k, items[k]);
        }
        Py_DECREF(fields);
        PyList_SET_ITEM(requests, i, request);
        phys_offset += size_value;
        queue_offset += 1;
    }
    result = PyTuple_Pack(2, ids, requests);
done:
    Py_XDECREF(ids);
    Py_XDECREF(requests);
    return result;
}
