/* A single message's CommitLog record, checked and packed in one call
 * (broker/store/message_record.py python_append_message); put.c's put_single packs with it. */
#include "speedups.h"

#define MAX_TOPIC_BYTES 127
#define MAX_PROPERTIES_BYTES 32767
#define END_FILE_MIN_BLANK_LENGTH 8

enum { PROPERTIES, BODY, FLAG, SYS_FLAG, BORN_TS, BORN_HOST, RECONSUME, PREPARED, QUEUE_ID, N_ATTRS };
static const char *attr_names[N_ATTRS] = {
    "properties", "body", "flag", "sys_flag", "born_timestamp", "born_host", "reconsume_times",
    "prepared_transaction_offset", "queue_id",
};
static PyObject *attr_keys[N_ATTRS];

/* The refusal the CommitLog answers the sender with: refused_type(status, remark). */
static void refuse(PyObject *refused_type, const char *status, PyObject *remark) {
    if (remark == NULL) return;
    PyObject *args = Py_BuildValue("(sN)", status, remark);
    if (args == NULL) return;
    PyErr_SetObject(refused_type, args);
    Py_DECREF(args);
}

static int as_long_long(PyObject *o, long long *out) {
    *out = PyLong_AsLongLong(o);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* Packs msg's record at `position` of `mm` (the segment starting at `start`): the record's
 * size once packed, with *fields the message's message_fields tuple (a new reference); minus
 * its size when it does not fit (with the 8-byte BLANK filler) in what is left, nothing
 * written; 0 with an exception set when it cannot be packed (refused_type for a message the
 * log does not take, checked in the reference's order). */
Py_ssize_t pack_message(Py_buffer *mm, Py_ssize_t position, long long start, PyObject *msg,
                        const Py_buffer *topic, long long queue_offset, long long store_ts,
                        const Py_buffer *store, long long store_port, Py_ssize_t max_body,
                        PyObject *refused_type, PyObject *crc32, PyObject **fields_out) {
    if (attr_keys[0] == NULL)
        for (int i = 0; i < N_ATTRS; i++)
            if ((attr_keys[i] = PyUnicode_InternFromString(attr_names[i])) == NULL) return 0;
    PyObject *attrs[N_ATTRS] = {NULL};
    PyObject *fields = NULL;
    Py_buffer body = {0}, born = {0};
    Py_ssize_t result = 0;
    long long flag, sys_flag, born_ts, reconsume, prepared, queue_id, born_port;
    for (int i = 0; i < N_ATTRS; i++)
        if ((attrs[i] = PyObject_GetAttr(msg, attr_keys[i])) == NULL) goto done;
    fields = message_fields_of(attrs[PROPERTIES]);
    if (fields == NULL) goto done;
    if (PyObject_GetBuffer(attrs[BODY], &body, PyBUF_SIMPLE) < 0) goto done;
    Py_ssize_t props_len = PyBytes_GET_SIZE(PyTuple_GET_ITEM(fields, 0));
    if (topic->len > MAX_TOPIC_BYTES) {
        refuse(refused_type, "MESSAGE_ILLEGAL",
               PyUnicode_FromFormat("topic is %zd bytes, max %d", topic->len, MAX_TOPIC_BYTES));
        goto done;
    }
    if (props_len > MAX_PROPERTIES_BYTES) {
        refuse(refused_type, "PROPERTIES_SIZE_EXCEEDED",
               PyUnicode_FromFormat("properties are %zd bytes, max %d", props_len,
                                    MAX_PROPERTIES_BYTES));
        goto done;
    }
    if (body.len > max_body) {
        refuse(refused_type, "MESSAGE_ILLEGAL",
               PyUnicode_FromFormat("body is %zd bytes, max %zd", body.len, max_body));
        goto done;
    }
    PyObject *host = attrs[BORN_HOST];
    if (!PyTuple_Check(host) || PyTuple_GET_SIZE(host) != 2) {
        PyErr_SetString(PyExc_TypeError, "born_host is an (address, port) tuple");
        goto done;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(host, 0), &born, PyBUF_SIMPLE) < 0) goto done;
    if (as_long_long(PyTuple_GET_ITEM(host, 1), &born_port) < 0 ||
        as_long_long(attrs[FLAG], &flag) < 0 || as_long_long(attrs[SYS_FLAG], &sys_flag) < 0 ||
        as_long_long(attrs[BORN_TS], &born_ts) < 0 ||
        as_long_long(attrs[RECONSUME], &reconsume) < 0 ||
        as_long_long(attrs[PREPARED], &prepared) < 0 ||
        as_long_long(attrs[QUEUE_ID], &queue_id) < 0)
        goto done;
    if ((born.len != 4 && born.len != 16) || (store->len != 4 && store->len != 16)) {
        PyErr_SetString(PyExc_ValueError, "host addresses are 4 or 16 bytes");
        goto done;
    }
    Py_ssize_t size = record_size(body.len, topic->len, props_len, born.len, store->len);
    if (position < 0 || position > mm->len) {
        PyErr_Format(PyExc_IndexError, "position %zd outside a %zd-byte segment", position,
                     mm->len);
        goto done;
    }
    if (size + END_FILE_MIN_BLANK_LENGTH > mm->len - position) {
        result = -size;
        goto done;
    }
    PyObject *crc = PyObject_CallOneArg(crc32, attrs[BODY]);
    if (crc == NULL) goto done;
    unsigned long crc_value = PyLong_AsUnsignedLongMask(crc);
    Py_DECREF(crc);
    if (PyErr_Occurred()) goto done;
    if (born.len == 16) sys_flag |= BORNHOST_V6_FLAG;
    if (store->len == 16) sys_flag |= STOREHOSTADDRESS_V6_FLAG;
    RecordFields f = {
        .size = (int32_t)size, .crc = (int32_t)(crc_value & 0x7FFFFFFFul),
        .queue_id = (int32_t)queue_id, .flag = (int32_t)flag, .sys_flag = (int32_t)sys_flag,
        .born_port = (int32_t)born_port, .store_port = (int32_t)store_port,
        .reconsume_times = (int32_t)reconsume, .queue_offset = queue_offset,
        .phys_offset = start + position, .born_ts = born_ts, .store_ts = store_ts,
        .prepared = prepared, .born = &born, .store = store, .body = &body, .topic = topic,
        .props = PyBytes_AS_STRING(PyTuple_GET_ITEM(fields, 0)), .props_len = props_len,
    };
    write_record((unsigned char *)mm->buf + position, &f);
    *fields_out = fields;
    fields = NULL;
    result = size;
done:
    for (int i = 0; i < N_ATTRS; i++) Py_XDECREF(attrs[i]);
    Py_XDECREF(fields);
    if (body.obj != NULL) PyBuffer_Release(&body);
    if (born.obj != NULL) PyBuffer_Release(&born);
    return result;
}

/* append_message(mm, position, start_offset, msg, topic, queue_offset, store_timestamp,
 *                store_address, store_port, max_body, refused_type, crc32)
 *   -> (size, tags code, KEYS, UNIQ_KEY) once packed at `position`, or the record's size alone
 *      when it does not fit (with the 8-byte BLANK filler) in what is left of `mm`.
 * msg: a MessageExtBrokerInner; topic: its topic in UTF-8. A message the log does not take
 * raises refused_type(status name, remark), checked in the reference's order. */
PyObject *append_message(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "append_message takes 12 arguments");
        return NULL;
    }
    PyObject *fields = NULL, *result = NULL;
    Py_buffer mm = {0}, topic = {0}, store = {0};
    Py_ssize_t position, max_body;
    long long start, queue_offset, store_ts, store_port;
    if (PyObject_GetBuffer(args[0], &mm, PyBUF_WRITABLE) < 0) goto done;
    position = PyLong_AsSsize_t(args[1]);
    if (position == -1 && PyErr_Occurred()) goto done;
    if (as_long_long(args[2], &start) < 0) goto done;
    if (!PyBytes_Check(args[4]) || !PyBytes_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError, "the topic and store address are bytes");
        goto done;
    }
    if (PyObject_GetBuffer(args[4], &topic, PyBUF_SIMPLE) < 0) goto done;
    if (PyObject_GetBuffer(args[7], &store, PyBUF_SIMPLE) < 0) goto done;
    if (as_long_long(args[5], &queue_offset) < 0 || as_long_long(args[6], &store_ts) < 0 ||
        as_long_long(args[8], &store_port) < 0)
        goto done;
    max_body = PyLong_AsSsize_t(args[9]);
    if (max_body == -1 && PyErr_Occurred()) goto done;
    Py_ssize_t size = pack_message(&mm, position, start, args[3], &topic, queue_offset,
                                   store_ts, &store, store_port, max_body, args[10], args[11],
                                   &fields);
    if (size < 0) {
        result = PyLong_FromSsize_t(-size);
    } else if (size > 0) {
        PyObject *size_o = PyLong_FromSsize_t(size);
        if (size_o == NULL) goto done;
        result = PyTuple_Pack(4, size_o, PyTuple_GET_ITEM(fields, 1),
                              PyTuple_GET_ITEM(fields, 2), PyTuple_GET_ITEM(fields, 3));
        Py_DECREF(size_o);
    }
done:
    Py_XDECREF(fields);
    if (mm.obj != NULL) PyBuffer_Release(&mm);
    if (topic.obj != NULL) PyBuffer_Release(&topic);
    if (store.obj != NULL) PyBuffer_Release(&store);
    return result;
}
