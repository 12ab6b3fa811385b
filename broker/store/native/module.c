/* broker.store._native: the store's per-message work in C, beside the Python it mirrors.
 *
 * Every function and the AppendCursor type have a pure-Python twin in broker/store/ that is the
 * reference: the tests run both on the same inputs and require the same bytes, results, state
 * and errors. broker/store/store_native.py loads this module through remoting/native_loader.py,
 * which checks ABI_VERSION and the constants below against the Python side and falls back to
 * the pure code (logging why once) when it is absent, stale or switched off
 * (ROCKETMQ_TRIO_PURE=1 or ROCKETMQ_TRIO_PURE_STORE=1). It needs nothing of remoting._codec:
 * the record layout is compiled in from remoting/native/record_layout.h.
 *
 * The seam: buffers and plain values in, new objects out. Nothing here calls back into
 * Python but LoneSend and RoundSend (lone_send.c, round_send.c: a server's request handler
 * and round processor, which hand what they do not take to the Python path), and nothing
 * reads or sets an attribute of a Python object but put_cq_runs, pull_found, plain_pass,
 * LoneSend and RoundSend (consume_queue.c, pull_found.c, plain_pass.c, lone_send.c and
 * round_send.c say which and why; plain_pass calls the CommitLog's clock, the
 * builtin now_ms in the broker). The state it mutates is its own (the AppendCursor's table,
 * the counters of PutCounters and StatsCounter, counters.c), the bytes of a buffer it was
 * handed (a mapped segment), and
 * the attributes those two name (a queue's positions, a found pull's stats counters). The one
 * tuple type it fills, DispatchRequest, is handed to it, and its field order is exported for
 * the import-time check.
 *
 * Every write is bounds-checked against the buffer before anything is written. Calls run with
 * the GIL held (a few microseconds each, less than a thread hop), but for populate_write and sync_range. */
#include "store.h"

PyObject *RecordRefused;

const char *const dispatch_request_fields[DR_FIELDS] = {
    "topic",           "queue_id",   "commit_log_offset",
    "msg_size",        "tags_code",  "store_timestamp",
    "consume_queue_offset", "keys",  "uniq_key",
    "sys_flag",        "properties",
};

PyObject *new_request(PyTypeObject *type, PyObject *items[DR_FIELDS]) {
    PyObject *request = type->tp_alloc(type, DR_FIELDS);
    int complete = request != NULL;
    for (int i = 0; i < DR_FIELDS; i++) {
        if (items[i] == NULL) complete = 0;
        if (request != NULL)
            PyTuple_SET_ITEM(request, i, items[i]);
        else
            Py_XDECREF(items[i]);
    }
    if (!complete) Py_CLEAR(request); /* its dealloc takes what was made */
    return request;
}

PyObject *message_id(PyObject *prefix, long long phys_offset) {
    static const char hex[] = "0123456789ABCDEF";
    Py_ssize_t n = PyUnicode_GET_LENGTH(prefix);
    PyObject *id = PyUnicode_New(n + 16, 127);
    if (id == NULL) return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(id);
    memcpy(out, PyUnicode_1BYTE_DATA(prefix), n);
    unsigned long long u = (unsigned long long)phys_offset;
    for (int i = 15; i >= 0; i--) {
        out[n + i] = hex[u & 0xF];
        u >>= 4;
    }
    return id;
}

static PyMethodDef methods[] = {
    {"dispatch_fields", dispatch_fields, METH_O,
     "(tags code, KEYS, UNIQ_KEY, DELAY) of an encoded properties string."},
    {"batch_plan", batch_plan, METH_VARARGS,
     "batch_records without an object per entry, for AppendCursor.put_batch_dispatch."},
    {"pack_cq_units", pack_cq_units, METH_VARARGS,
     "ConsumeQueue units of dispatch requests, back to back (consume_queue.py)."},
    {"put_cq_runs", (PyCFunction)(void (*)(void))put_cq_runs, METH_FASTCALL,
     "A plain pass's ConsumeQueue units into their queues (consume_queue_table.py)."},
    {"index_requests", index_requests, METH_VARARGS,
     "Index the keys and unique keys of dispatch requests (broker/store/index_file.py)."},
    {"index_put_keys", index_put_keys, METH_VARARGS,
     "Index a batch put's packed key entries (broker/store/index_file.py)."},
    {"index_request", index_request, METH_VARARGS,
     "All of one record's index entries, or none when they do not all fit (index_file.py)."},
    {"index_put_entries", index_put_entries, METH_VARARGS,
     "Add (key hash, phy offset) entries to an IndexFile (broker/store/index_file.py)."},
    {"populate_write", populate_write, METH_VARARGS,
     "Fault in a mapping's pages for writing, without the GIL (MADV_POPULATE_WRITE)."},
    {"sync_range", sync_range, METH_VARARGS,
     "fdatasync of a range of a mapping only (msync MS_SYNC), without the GIL."},
    {"scan_units", (PyCFunction)(void (*)(void))scan_units, METH_FASTCALL,
     "A pull's units to record slices while they stay in one segment (broker/store/reads.py)."},
    {"scan_runs", (PyCFunction)(void (*)(void))scan_runs, METH_FASTCALL,
     "scan_units, adjacent records joined into one slice (a pull's reply body)."},
    {"put_rows", (PyCFunction)(void (*)(void))put_rows, METH_FASTCALL,
     "Plain sends appended and answered in one call (broker/store/group_put.py)."},
    {"plain_pass", (PyCFunction)(void (*)(void))plain_pass, METH_FASTCALL,
     "A round of plain sends' store pass in one call (broker/store/plain_pass.py)."},
    {"now_ms", now_ms, METH_NOARGS, "The wall clock in ms (broker/store/mapped_file_queue.py)."},
    {"pull_found", (PyCFunction)(void (*)(void))pull_found, METH_FASTCALL,
     "A found pull's read, reply head and stats in one call (broker/store/reads_found.py)."},
    {"plain_dispatch", plain_dispatch, METH_O,
     "Dispatch requests packed as put_rows packs its own (broker/store/plain_dispatch.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "broker.store._native", "The store's per-message work in C.", -1,
    methods,
};

static int add_constants(PyObject *m) {
    static const struct {
        const char *name;
        long value;
    } constants[] = {
        {"ABI_VERSION", STORE_ABI_VERSION},
        {"CQ_UNIT_SIZE", CQ_UNIT_SIZE},
        {"CQ_FILLER_SIZE", CQ_FILLER_SIZE},
        {"INDEX_HEADER_SIZE", INDEX_HEADER_SIZE},
        {"INDEX_SLOT_SIZE", INDEX_SLOT_SIZE},
        {"INDEX_ENTRY_SIZE", INDEX_ENTRY_SIZE},
        {"MAX_TOPIC_BYTES", MAX_TOPIC_BYTES},
        {"MAX_PROPERTIES_BYTES", MAX_PROPERTIES_BYTES},
        {"TRANSACTION_NOT_QUEUED_BIT", TRANSACTION_NOT_QUEUED_BIT},
        {"INDEX_REQUEST_MAX_KEYS", INDEX_REQUEST_MAX_KEYS},
        {"BATCH_KEY_SIZE", BATCH_KEY_SIZE},
        {"TRANSACTION_ROLLBACK_TYPE", TRANSACTION_ROLLBACK_TYPE},
        {"REMOTING_VERSION", REMOTING_VERSION},
    };
    for (size_t i = 0; i < sizeof constants / sizeof *constants; i++)
        if (PyModule_AddIntConstant(m, constants[i].name, constants[i].value) < 0) return -1;
    if (add_layout_constants(m) < 0) return -1;
    PyObject *bounds = PyTuple_New(PUT_BUCKETS);
    if (bounds == NULL) return -1;
    for (int i = 0; i < PUT_BUCKETS; i++) {
        PyObject *bound = PyLong_FromLongLong(put_bucket_bounds_ms[i]);
        if (bound == NULL) {
            Py_DECREF(bounds);
            return -1;
        }
        PyTuple_SET_ITEM(bounds, i, bound);
    }
    int added = PyModule_AddObjectRef(m, "PUT_BUCKET_BOUNDS_MS", bounds);
    Py_DECREF(bounds);
    if (added < 0) return -1;
    return add_field_names(m, "DISPATCH_REQUEST_FIELDS", dispatch_request_fields, DR_FIELDS);
}

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&AppendCursorType) < 0 || PyType_Ready(&PutCountersType) < 0 ||
        PyType_Ready(&StatsCounterType) < 0 || PyType_Ready(&LoneSendType) < 0 ||
        PyType_Ready(&RoundSendType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    RecordRefused = PyErr_NewExceptionWithDoc(
        "broker.store._native.RecordRefused",
        "A message the CommitLog does not take: args are (PutMessageStatus name, remark).",
        NULL, NULL);
    if (RecordRefused == NULL || add_constants(m) < 0 ||
        PyModule_AddObjectRef(m, "RecordRefused", RecordRefused) < 0 ||
        PyModule_AddObjectRef(m, "AppendCursor", (PyObject *)&AppendCursorType) < 0 ||
        PyModule_AddObjectRef(m, "PutCounters", (PyObject *)&PutCountersType) < 0 ||
        PyModule_AddObjectRef(m, "StatsCounter", (PyObject *)&StatsCounterType) < 0 ||
        PyModule_AddObjectRef(m, "LoneSend", (PyObject *)&LoneSendType) < 0 ||
        PyModule_AddObjectRef(m, "RoundSend", (PyObject *)&RoundSendType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
