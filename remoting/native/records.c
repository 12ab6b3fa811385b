/* Packing CommitLog records (remoting/record.py python_pack_records_into). */
#include "speedups.h"

/* One record at p, fields in the order of remoting/record.py HEADERS; the size was checked
 * against the room left by the caller. */
void write_record(unsigned char *p, const RecordFields *f) {
    put_i32(p, f->size);
    put_i32(p + 4, 0); /* the magic code goes in last: the record's commit marker */
    put_i32(p + 8, f->crc);
    put_i32(p + 12, f->queue_id);
    put_i32(p + 16, f->flag);
    put_i64(p + 20, f->queue_offset);
    put_i64(p + 28, f->phys_offset);
    put_i32(p + 36, f->sys_flag);
    put_i64(p + 40, f->born_ts);
    unsigned char *q = p + 48;
    memcpy(q, f->born->buf, f->born->len);
    q += f->born->len;
    put_i32(q, f->born_port);
    q += 4;
    put_i64(q, f->store_ts);
    q += 8;
    memcpy(q, f->store->buf, f->store->len);
    q += f->store->len;
    put_i32(q, f->store_port);
    q += 4;
    put_i32(q, f->reconsume_times);
    q += 4;
    put_i64(q, f->prepared);
    q += 8;
    put_i32(q, (int32_t)f->body->len);
    q += 4;
    memcpy(q, f->body->buf, f->body->len);
    q += f->body->len;
    *q++ = (unsigned char)f->topic->len;
    memcpy(q, f->topic->buf, f->topic->len);
    q += f->topic->len;
    put_i16(q, (int16_t)f->props_len);
    q += 2;
    memcpy(q, f->props, f->props_len);
    /* Everything else must be in memory before the marker, even if the process dies here. */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    put_i32(p + 4, MESSAGE_MAGIC_CODE);
}

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
    if (topic.len > 255) {
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
        PyObject *flag_o, *body_o, *props_o, *size_o, *crc_o;
        if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) != 5) {
            PyErr_SetString(PyExc_TypeError,
                            "a record is a (flag, body, properties, size, crc) tuple");
            goto done;
        }
        flag_o = PyTuple_GET_ITEM(record, 0);
        body_o = PyTuple_GET_ITEM(record, 1);
        props_o = PyTuple_GET_ITEM(record, 2);
        size_o = PyTuple_GET_ITEM(record, 3);
        crc_o = PyTuple_GET_ITEM(record, 4);
        long flag = PyLong_AsLong(flag_o);
        long size = PyLong_AsLong(size_o);
        long crc = PyLong_AsLong(crc_o);
        if (PyErr_Occurred()) goto done;
        if (!PyBytes_Check(props_o)) {
            PyErr_SetString(PyExc_TypeError, "properties must be bytes");
            goto done;
        }
        Py_ssize_t props_len = PyBytes_GET_SIZE(props_o);
        if (PyObject_GetBuffer(body_o, &body, PyBUF_SIMPLE) < 0) goto done;
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
        if (props_len > 32767 || body.len > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "properties or body too long for the layout");
            goto done;
        }
        RecordFields f = {
            .size = (int32_t)size, .crc = (int32_t)crc, .queue_id = queue_id,
            .flag = (int32_t)flag, .sys_flag = sys_flag, .born_port = born_port,
            .store_port = store_port, .reconsume_times = reconsume_times,
            .queue_offset = queue_offset, .phys_offset = phys_offset, .born_ts = born_ts,
            .store_ts = store_ts, .prepared = prepared, .born = &born, .store = &store,
            .body = &body, .topic = &topic, .props = PyBytes_AS_STRING(props_o),
            .props_len = props_len,
        };
        write_record(base + pos, &f);
        PyBuffer_Release(&body);
        body.obj = NULL;
        pos += size;
        phys_offset += size;
        queue_offset += 1;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    if (body.obj != NULL) PyBuffer_Release(&body);
    Py_XDECREF(seq);
    PyBuffer_Release(&out);
    PyBuffer_Release(&topic);
    PyBuffer_Release(&born);
    PyBuffer_Release(&store);
    return result;
}

/* pack_cq_units(buffer, position, requests) -> None
 * ConsumeQueue units (phys offset int64, size int32, tags code int64) of DispatchRequest tuples
 * (fields 2, 3 and 4), back to back from `position`. The reference: broker/store/consume_queue.py
 * python_pack_cq_units. */
PyObject *pack_cq_units(PyObject *self, PyObject *args) {
    Py_buffer out;
    Py_ssize_t pos;
    PyObject *requests;
    if (!PyArg_ParseTuple(args, "w*nO", &out, &pos, &requests)) return NULL;
    PyObject *result = NULL;
    PyObject *seq = PySequence_Fast(requests, "requests must be a sequence");
    if (seq == NULL) goto done;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    if (pos < 0 || pos > out.len || count > (out.len - pos) / 20) {
        PyErr_Format(PyExc_IndexError, "%zd units at %zd do not fit in %zd bytes", count, pos,
                     out.len);
        goto done;
    }
    unsigned char *p = (unsigned char *)out.buf + pos;
    for (Py_ssize_t i = 0; i < count; i++, p += 20) {
        PyObject *request = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(request) || PyTuple_GET_SIZE(request) < 5) {
            PyErr_SetString(PyExc_TypeError, "a request is a DispatchRequest");
            goto done;
        }
        long long phys = PyLong_AsLongLong(PyTuple_GET_ITEM(request, 2));
        long size = PyLong_AsLong(PyTuple_GET_ITEM(request, 3));
        long long tags = PyLong_AsLongLong(PyTuple_GET_ITEM(request, 4));
        if (PyErr_Occurred()) goto done;
        if (size < INT32_MIN || size > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "a unit's size is an int32");
            goto done;
        }
        put_i64(p, phys);
        put_i32(p + 8, (int32_t)size);
        put_i64(p + 12, tags);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(seq);
    PyBuffer_Release(&out);
    return result;
}
