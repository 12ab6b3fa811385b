/* A single message's append with the CommitLog's bookkeeping around it, in one call
 * (broker/store/message_record.py python_put_single, the reference). What the reference does
 * in Python for every message sent one at a time (offsets looked up and moved on, the message
 * id formatted, the result and dispatch request built) cost more than packing the record. */
#include "speedups.h"

static PyObject *refused_type, *crc32_func, *request_type, *append_type, *put_type, *put_ok;

enum { TABLE, CLOCK, STORE_ADDRESS, STORE_PORT, CONFIG, MAX_SIZE, PREFIX, LAST_PUT, MMAP,
       WROTE, START, TOPIC, QUEUE_ID, SYS_FLAG, PROPERTIES, N_NAMES };
static const char *names[N_NAMES] = {
    "topic_queue_table", "clock", "store_address", "store_port", "config", "max_message_size",
    "msg_id_prefix", "last_put_timestamp", "mmap", "wrote_position", "start_offset", "topic",
    "queue_id", "sys_flag", "properties",
};
static PyObject *keys[N_NAMES];

/* configure_put(RecordRefused, zlib.crc32, DispatchRequest, AppendMessageResult,
 *               PutMessageResult, PutMessageStatus.PUT_OK) */
PyObject *configure_put(PyObject *self, PyObject *args) {
    PyObject *given[6];
    if (!PyArg_ParseTuple(args, "OOO!O!O!O", &given[0], &given[1], &PyType_Type, &given[2],
                          &PyType_Type, &given[3], &PyType_Type, &given[4], &given[5]))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)given[2], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "the dispatch request type is a tuple subclass");
        return NULL;
    }
    for (int i = 0; i < N_NAMES; i++)
        if (keys[i] == NULL && (keys[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return NULL;
    PyObject **slots[6] = {&refused_type, &crc32_func, &request_type, &append_type, &put_type,
                           &put_ok};
    for (int i = 0; i < 6; i++) {
        Py_INCREF(given[i]);
        Py_XSETREF(*slots[i], given[i]);
    }
    Py_RETURN_NONE;
}

static int get_ll(PyObject *owner, int name, long long *out) {
    return get_attr_ll(owner, keys[name], out);
}

static int set_ll(PyObject *owner, int name, long long value) {
    return set_attr_ll(owner, keys[name], value);
}

static int set_ll_item(PyObject *dict, PyObject *key, long long value) {
    PyObject *o = PyLong_FromLongLong(value);
    if (o == NULL) return -1;
    int r = PyDict_SetItem(dict, key, o);
    Py_DECREF(o);
    return r;
}

/* The message id, the append result and the put result around them; request goes with it. */
static PyObject *put_outcome(PyObject *prefix, long long phys, Py_ssize_t size, long long ts,
                             long long queue_offset, PyObject *request) {
    char hex[17];
    snprintf(hex, sizeof hex, "%016llX", (unsigned long long)phys);
    PyObject *msg_id = PyUnicode_FromFormat("%U%s", prefix, hex);
    PyObject *ids = msg_id == NULL ? NULL : PyList_New(1);
    PyObject *result = NULL, *append = NULL;
    PyObject *numbers[4] = {PyLong_FromLongLong(phys), PyLong_FromSsize_t(size),
                            PyLong_FromLongLong(ts), PyLong_FromLongLong(queue_offset)};
    if (ids == NULL || !numbers[0] || !numbers[1] || !numbers[2] || !numbers[3]) goto done;
    Py_INCREF(msg_id);
    PyList_SET_ITEM(ids, 0, msg_id);
    /* wrote_offset, wrote_bytes, msg_id, msg_ids, store_timestamp, queue_offset */
    PyObject *append_args[6] = {numbers[0], numbers[1], msg_id, ids, numbers[2], numbers[3]};
    append = PyObject_Vectorcall(append_type, append_args, 6, NULL);
    if (append == NULL) goto done;
    PyObject *put_args[2] = {put_ok, append};
    PyObject *put = PyObject_Vectorcall(put_type, put_args, 2, NULL);
    if (put != NULL) result = PyTuple_Pack(2, put, request);
    Py_XDECREF(put);
done:
    for (int i = 0; i < 4; i++) Py_XDECREF(numbers[i]);
    Py_XDECREF(append);
    Py_XDECREF(ids);
    Py_XDECREF(msg_id);
    return result;
}

/* put_single(commit_log, mapped, msg) -> (PutMessageResult, DispatchRequest) | int
 * As python_put_single: msg appended at mapped's write position, the CommitLog's state moved
 * on; the record's size alone, nothing changed, when it does not fit. */
PyObject *put_single(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "put_single takes 3 arguments");
        return NULL;
    }
    if (put_ok == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure_put was not called");
        return NULL;
    }
    PyObject *commit_log = args[0], *mapped = args[1], *msg = args[2];
    PyObject *o[N_NAMES] = {NULL};
    PyObject *key = NULL, *stamp = NULL, *fields = NULL, *request = NULL, *result = NULL;
    Py_buffer mm = {0}, store = {0};
    long long sys_flag, queue_offset = 0, store_ts, store_port, max_size, position,
        start;
    static const int from_log[] = {TABLE, CLOCK, STORE_ADDRESS, CONFIG, PREFIX};
    for (size_t i = 0; i < sizeof from_log / sizeof *from_log; i++)
        if ((o[from_log[i]] = PyObject_GetAttr(commit_log, keys[from_log[i]])) == NULL)
            goto done;
    static const int from_msg[] = {TOPIC, QUEUE_ID, SYS_FLAG, PROPERTIES};
    for (size_t i = 0; i < sizeof from_msg / sizeof *from_msg; i++)
        if ((o[from_msg[i]] = PyObject_GetAttr(msg, keys[from_msg[i]])) == NULL) goto done;
    if ((o[MMAP] = PyObject_GetAttr(mapped, keys[MMAP])) == NULL) goto done;
    if (!PyDict_Check(o[TABLE]) || !PyUnicode_Check(o[TOPIC]) || !PyUnicode_Check(o[PREFIX]) ||
        !PyBytes_Check(o[STORE_ADDRESS])) {
        PyErr_SetString(PyExc_TypeError,
                        "put_single takes a CommitLog, a MappedFile and a MessageExtBrokerInner");
        goto done;
    }
    if (get_ll(commit_log, STORE_PORT, &store_port) < 0 ||
        get_ll(o[CONFIG], MAX_SIZE, &max_size) < 0 || get_ll(mapped, WROTE, &position) < 0 ||
        get_ll(mapped, START, &start) < 0)
        goto done;
    sys_flag = PyLong_AsLongLong(o[SYS_FLAG]);
    if (sys_flag == -1 && PyErr_Occurred()) goto done;
    Py_ssize_t topic_len;
    const char *topic_utf8 = PyUnicode_AsUTF8AndSize(o[TOPIC], &topic_len);
    if (topic_utf8 == NULL) goto done;
    Py_buffer topic = {.buf = (void *)topic_utf8, .len = topic_len};
    int queued = !(sys_flag & 0x4); /* a prepared (0x4) or rolled-back (0xC) half: no offset */
    key = PyTuple_Pack(2, o[TOPIC], o[QUEUE_ID]);
    if (key == NULL) goto done;
    if (queued) {
        PyObject *next = PyDict_GetItemWithError(o[TABLE], key); /* borrowed */
        if (next == NULL && PyErr_Occurred()) goto done;
        if (next != NULL && (queue_offset = PyLong_AsLongLong(next)) == -1 && PyErr_Occurred())
            goto done;
    }
    if ((stamp = PyObject_CallNoArgs(o[CLOCK])) == NULL) goto done;
    store_ts = PyLong_AsLongLong(stamp);
    if (store_ts == -1 && PyErr_Occurred()) goto done;
    if (PyObject_GetBuffer(o[MMAP], &mm, PyBUF_WRITABLE) < 0) goto done;
    if (PyObject_GetBuffer(o[STORE_ADDRESS], &store, PyBUF_SIMPLE) < 0) goto done;
    Py_ssize_t size = pack_message(&mm, (Py_ssize_t)position, start, msg, &topic, queue_offset,
                                   store_ts, &store, store_port, (Py_ssize_t)max_size,
                                   refused_type, crc32_func, &fields);
    if (size <= 0) {
        if (size < 0) result = PyLong_FromSsize_t(-size);
        goto done;
    }
    if (set_ll(mapped, WROTE, position + size) < 0) goto done;
    if (queued && set_ll_item(o[TABLE], key, queue_offset + 1) < 0) goto done;
    if (PyObject_SetAttr(commit_log, keys[LAST_PUT], stamp) < 0) goto done;
    long long phys = start + position;
    PyTypeObject *type = (PyTypeObject *)request_type;
    if ((request = type->tp_alloc(type, 11)) == NULL) goto done;
    PyObject *items[11] = {
        (Py_INCREF(o[TOPIC]), o[TOPIC]),
        (Py_INCREF(o[QUEUE_ID]), o[QUEUE_ID]),
        PyLong_FromLongLong(phys),
        PyLong_FromSsize_t(size),
        (Py_INCREF(PyTuple_GET_ITEM(fields, 1)), PyTuple_GET_ITEM(fields, 1)),
        (Py_INCREF(stamp), stamp),
        PyLong_FromLongLong(queue_offset),
        (Py_INCREF(PyTuple_GET_ITEM(fields, 2)), PyTuple_GET_ITEM(fields, 2)),
        (Py_INCREF(PyTuple_GET_ITEM(fields, 3)), PyTuple_GET_ITEM(fields, 3)),
        (Py_INCREF(o[SYS_FLAG]), o[SYS_FLAG]),
        (Py_INCREF(o[PROPERTIES]), o[PROPERTIES]),
    };
    int complete = 1;
    for (int i = 0; i < 11; i++) {
        if (items[i] == NULL) complete = 0;
        PyTuple_SET_ITEM(request, i, items[i]);
    }
    if (!complete) goto done; /* out of memory: the request's dealloc takes what was made */
    result = put_outcome(o[PREFIX], phys, size, store_ts, queue_offset, request);
done:
    for (int i = 0; i < N_NAMES; i++) Py_XDECREF(o[i]);
    Py_XDECREF(key);
    Py_XDECREF(stamp);
    Py_XDECREF(fields);
    Py_XDECREF(request);
    if (mm.obj != NULL) PyBuffer_Release(&mm);
    if (store.obj != NULL) PyBuffer_Release(&store);
    return result;
}
