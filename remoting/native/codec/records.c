/* Packing CommitLog records (remoting/record.py python_pack_records_into). */
#include "codec.h"

/* pack_records_into(buffer, pos, records, topic, queue id, queue offset, phys offset, sys flag,
 *                   born timestamp, born address, born port, store timestamp, store address,
 *                   store port, reconsume times, prepared offset) -> None
 * records: (flag, body, properties bytes, size, body CRC), written back to back from `pos`
 * with consecutive queue and phys offsets. */
PyObject *pack_records_into(PyObject *self, PyObject *args) {
    Py_buffer out, topic, born, store;
    Py_ssize_t pos;
    PyObject *records;
    int queue_id, sys_flag, born_port, store_port, reconsume_times;
    long long queue_offset, phys_offset, born_ts, store_ts, prepared;
    if (!PyArg_ParseTuple(args, "w*nOy*iLLiLy*iLy*iiL", &out, &pos, &records, &topic, &queue_id,
                          &queue_offset, &phys_offset, &sys_flag, &born_ts, &born, &born_port,
                          &store_ts, &store, &store_port, &reconsume_times, &prepared))
        return NULL;
    PyObject *result = NULL;
    PyObject *seq = NULL;
    Py_buffer body = {0};
    if ((born.len != 4 && born.len != 16) || (store.len != 4 && store.len != 16)) {
        PyErr_SetString(PyExc_ValueError, "host addresses are 4 or 16 bytes");
        goto done;
    }
    if (topic.len > MAX_TOPIC_LENGTH) {
        PyErr_SetString(PyExc_ValueError, "topic longer than 255 bytes");
        goto done;
    }
    if (born.len == 16) sys_flag |= BORNHOST_V6_FLAG;
    if (store.len == 16) sys_flag |= STOREHOSTADDRESS_V6_FLAG;
    seq = PySequence_Fast(records, "records must be a sequence");
    if (seq == NULL) goto done;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    unsigned char *base = (unsigned char *)out.buf;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *record = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) != 5) {
            PyErr_SetString(PyExc_TypeError,
                            "a record is a (flag, body, properties, size, crc) tuple");
            goto done;
        }
        PyObject *props_o = PyTuple_GET_ITEM(record, 2);
        long flag = PyLong_AsLong(PyTuple_GET_ITEM(record, 0));
        long size = PyLong_AsLong(PyTuple_GET_ITEM(record, 3));
        long crc = PyLong_AsLong(PyTuple_GET_ITEM(record, 4));
        if (PyErr_Occurred()) goto done;
        if (!PyBytes_Check(props_o)) {
            PyErr_SetString(PyExc_TypeError, "properties must be bytes");
            goto done;
        }
        Py_ssize_t props_len = PyBytes_GET_SIZE(props_o);
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(record, 1), &body, PyBUF_SIMPLE) < 0) goto done;
        Py_ssize_t expected = record_size(body.len, topic.len, props_len, born.len, store.len);
        if (expected != size) {
            PyErr_Format(PyExc_AssertionError, "record size %zd != declared %ld", expected, size);
            goto done;
        }
        if (pos < 0 || pos > out.len || size > out.len - pos) {
            PyErr_Format(PyExc_IndexError, "a %ld-byte record at %zd does not fit in %zd bytes",
                         size, pos, out.len);
            goto done;
        }
        if (props_len > MAX_PROPERTIES_LENGTH || body.len > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "properties or body too long for the layout");
            goto done;
        }
        RecordFields f = {
            .size = (int32_t)size, .crc = (int32_t)crc, .queue_id = queue_id,
            .flag = (int32_t)flag, .sys_flag = sys_flag, .born_port = born_port,
            .store_port = store_port, .reconsume_times = reconsume_times,
            .queue_offset = queue_offset, .phys_offset = phys_offset, .born_ts = born_ts,
            .store_ts = store_ts, .prepared = prepared,
            .born = born.buf, .born_len = born.len, .store = store.buf, .store_len = store.len,
            .body = body.buf, .body_len = body.len, .topic = topic.buf, .topic_len = topic.len,
            .props = (const unsigned char *)PyBytes_AS_STRING(props_o), .props_len = props_len,
        };
        write_record(base + pos, &f);
        PyBuffer_Release(&body);
        body.obj = NULL;
        pos += size;
        phys_offset += size;
        queue_offset += 1;
    }
    result = Py_NewRef(Py_None);
done:
    if (body.obj != NULL) PyBuffer_Release(&body);
    Py_XDECREF(seq);
    PyBuffer_Release(&out);
    PyBuffer_Release(&topic);
    PyBuffer_Release(&born);
    PyBuffer_Release(&store);
    return result;
}
