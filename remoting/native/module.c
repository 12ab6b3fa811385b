/* remoting._speedups: native versions of the store's per-message inner loops.
 *
 * Every function here has a pure-Python twin (remoting/java_hash.py, remoting/record.py,
 * remoting/message.py, broker/store/index_file.py) that is the reference: the tests run both
 * on the same inputs and require the same bytes and results. The Python modules pick these up
 * when the extension was built and fall back to their own code otherwise (or when
 * ROCKETMQ_TRIO_PURE=1).
 *
 * They run with the GIL held: each call is a few microseconds, less than a thread hop.
 * Every write is bounds-checked against the buffer before anything is written.
 *
 * One exception has no twin: Sender (sender.c), the servers' writer thread. Without it the
 * event loop writes replies itself (remoting/connection.py), which is the reference behaviour.
 */
#include "speedups.h"

static PyMethodDef methods[] = {
    {"java_hash", java_hash, METH_O, "Java's String.hashCode as a signed 32-bit int."},
    {"pack_records_into", pack_records_into, METH_VARARGS,
     "Write CommitLog records back to back (remoting.record.pack_records_into)."},
    {"pack_cq_units", pack_cq_units, METH_VARARGS,
     "ConsumeQueue units of dispatch requests, back to back (consume_queue.py)."},
    {"decode_batch_body", decode_batch_body, METH_VARARGS,
     "The entries of a SEND_BATCH_MESSAGE body (remoting.message.decode_batch_body)."},
    {"batch_records", batch_records, METH_VARARGS,
     "A batch body's records with the batch properties (broker/store/batch_records.py)."},
    {"batch_requests", batch_requests, METH_VARARGS,
     "Message ids and dispatch requests of a packed batch (broker/store/batch_records.py)."},
    {"index_requests", index_requests, METH_VARARGS,
     "Index the keys and unique keys of dispatch requests (broker/store/index_file.py)."},
    {"index_put_entries", index_put_entries, METH_VARARGS,
     "Add (key hash, phy offset) entries to an IndexFile (broker/store/index_file.py)."},
    {"configure_scan", configure_scan, METH_VARARGS,
     "RecordScan, the RecordKind members and zlib.crc32, for scan_record."},
    {"scan_record", (PyCFunction)(void (*)(void))scan_record, METH_VARARGS | METH_KEYWORDS,
     "What dispatch and recovery need from the record at a position (remoting.record)."},
    {"dispatch_fields", dispatch_fields, METH_O,
     "(tags code, KEYS, UNIQ_KEY, DELAY) of an encoded properties string."},
    {"append_message", (PyCFunction)(void (*)(void))append_message, METH_FASTCALL,
     "Check and pack a single message's CommitLog record (broker/store/message_record.py)."},
    {"configure_put", configure_put, METH_VARARGS,
     "The exception, CRC and result types put_single uses (broker/store/message_record.py)."},
    {"put_single", (PyCFunction)(void (*)(void))put_single, METH_FASTCALL,
     "Append a single message with the CommitLog's bookkeeping (message_record.py)."},
    {"dispatch_single", (PyCFunction)(void (*)(void))dispatch_single, METH_FASTCALL,
     "A single message's ConsumeQueue unit and index entries (broker/store/dispatch.py)."},
    {"populate_write", populate_write, METH_VARARGS,
     "Fault in a mapping's pages for writing, without the GIL (MADV_POPULATE_WRITE)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "remoting._speedups", "Native twins of the store's inner loops.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && add_sender_type(m) < 0) Py_CLEAR(m);
    return m;
}
