/* remoting._codec: native twins of the record codec's per-record loops, used by every process
 * (broker, NameServer, clients, the Spark job).
 *
 * Every function has a pure-Python twin (remoting/java_hash.py, remoting/record.py,
 * remoting/message.py, remoting/send_header.py, remoting/command.py, remoting/frame.py) that is
 * the reference:
 * the tests run both on the same inputs and require the same bytes and results (the fast paths
 * of a request's headers and a reply's head return None for what the reference must judge). remoting/record.py loads this module through
 * remoting/extension.py, which checks ABI_VERSION and the constants below against the Python
 * side and falls back to the pure code (logging why once) when it is absent, stale or switched
 * off (ROCKETMQ_TRIO_PURE=1 or ROCKETMQ_TRIO_PURE_CODEC=1).
 *
 * The seam: buffers and plain values in, new objects out. Nothing here reads an attribute of a
 * Python object or calls back into Python; the two tuple types it fills (RecordScan,
 * BatchEntry) are handed to it, and their field orders are exported for the import-time check;
 * so is the command class the header scan fills (remoting/command.py ScannedCommand, its slots
 * handed as their member descriptors). plain_send_rows, the exception, reads its requests'
 * attributes and asks the caller's bound_of; recv_round and finish_plain_round read and set a
 * connection's; idle_wait reads Trio's runner (idle.c says why).
 * Every write is bounds-checked against the buffer before anything is written. They run with
 * the GIL held (idle_wait's wait excepted): each call is a few microseconds, less than a thread
 * hop. */
#include "codec.h"

static PyMethodDef methods[] = {
    {"java_hash", java_hash, METH_O, "Java's String.hashCode as a signed 32-bit int."},
    {"pack_records_into", pack_records_into, METH_VARARGS,
     "Write CommitLog records back to back (remoting.record.pack_records_into)."},
    {"decode_batch_body", decode_batch_body, METH_VARARGS,
     "The entries of a SEND_BATCH_MESSAGE body (remoting.message.decode_batch_body)."},
    {"configure_scan", configure_scan, METH_VARARGS,
     "The RecordScan type and the RecordKind members scan_record returns."},
    {"scan_record", (PyCFunction)(void (*)(void))scan_record, METH_VARARGS | METH_KEYWORDS,
     "What dispatch and recovery need from the record at a position (remoting.record)."},
    {"decode_send_header", (PyCFunction)(void (*)(void))decode_send_header, METH_FASTCALL,
     "SEND_MESSAGE(_V2)'s header values in their plain form, else None (remoting.send_header)."},
    {"decode_plain_header", (PyCFunction)(void (*)(void))decode_plain_header, METH_FASTCALL,
     "A custom header's values in their plain form, else None (remoting.header_codec)."},
    {"json_frame_head", (PyCFunction)(void (*)(void))json_frame_head, METH_FASTCALL,
     "A command's frame prefix and JSON header when nothing needs escaping, else None "
     "(remoting.command.encode_command)."},
    {"split_frames", (PyCFunction)(void (*)(void))split_frames, METH_FASTCALL,
     "The complete plain frames at the front of a read (remoting.frame.FrameDecoder)."},
    {"split_commands", (PyCFunction)(void (*)(void))split_commands, METH_FASTCALL,
     "A read's complete plain frames, JSON headers scanned to commands (remoting.frame)."},
    {"whole_command", (PyCFunction)(void (*)(void))whole_command, METH_FASTCALL,
     "whole_frame, a JSON header scanned to its command as split_commands does."},
    {"recv_command", (PyCFunction)(void (*)(void))recv_command, METH_FASTCALL,
     "One recv of a ready socket, judged as whole_command (remoting.receive)."},
    {"recv_round", (PyCFunction)(void (*)(void))recv_round, METH_FASTCALL,
     "A selector round's reads: the plain connections' lone requests staged (remoting.receive)."},
    {"finish_plain_round", (PyCFunction)(void (*)(void))finish_plain_round, METH_FASTCALL,
     "A round of reply frames handed to the sender and its read batches ended (remoting.receive)."},
    {"whole_frame", (PyCFunction)(void (*)(void))whole_frame, METH_FASTCALL,
     "A read that is exactly one plain frame as that frame, else None (remoting.frame)."},
    {"plain_send_rows", (PyCFunction)(void (*)(void))plain_send_rows, METH_FASTCALL,
     "Plain sends' append values, else None (broker/processor/send_plain.py)."},
    {"configure_send_scan", configure_send_scan, METH_VARARGS,
     "The ScannedCommand class, its slots and the lazy extFields scan_send_command fills."},
    {"configure_header_scan", configure_header_scan, METH_VARARGS,
     "A request code whose header scan_send_command reads too, with its plain_fields."},
    {"scan_send_command", (PyCFunction)(void (*)(void))scan_send_command, METH_FASTCALL,
     "A SEND_MESSAGE(_V2) JSON header read from its bytes in its strict plain form into a "
     "ScannedCommand, else None (remoting.command)."},
    {"answer_lone", (PyCFunction)(void (*)(void))answer_lone, METH_FASTCALL,
     "A lone request's read, handler call and encoded reply in one call (remoting.receive)."},
    {"idle_wait", (PyCFunction)(void (*)(void))idle_wait, METH_FASTCALL,
     "The selector's idle sleep: Trio's state checked, the kick, the wait (remoting.idle_sleep)."},
    {"serve_lone", (PyCFunction)(void (*)(void))serve_lone, METH_FASTCALL,
     "Lock-step clients' lone requests and rounds served sleep after sleep (remoting.lone_loop)."},
    {"plain_command", plain_command, METH_O,
     "A JSON command header's values in their plain form, else None (remoting.command)."},
    {"string_to_properties", string_to_properties, METH_O,
     "Java's string2messageProperties (remoting.message.string_to_properties)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "remoting._codec", "Native twins of the record codec's loops.", -1,
    methods,
};

/* LoneLooks, with its bounds as the module's constants and PROBE_EVERY as the class's (the
 * twin's class attribute). */
static int add_looks_type(PyObject *m) {
    if (PyType_Ready(&LoneLooksType) < 0) return -1;
    PyObject *probe = PyLong_FromLong(LOOKS_PROBE_EVERY);
    int set = probe == NULL ? -1 : PyDict_SetItemString(LoneLooksType.tp_dict, "PROBE_EVERY", probe);
    Py_XDECREF(probe);
    if (set < 0) return -1;
    PyType_Modified(&LoneLooksType);
    Py_INCREF(&LoneLooksType);
    if (PyModule_AddObject(m, "LoneLooks", (PyObject *)&LoneLooksType) < 0) {
        Py_DECREF(&LoneLooksType);
        return -1;
    }
    return PyModule_AddIntConstant(m, "LOOKS_PROBE_EVERY", LOOKS_PROBE_EVERY) < 0 ||
                   PyModule_AddIntConstant(m, "LOOKS_ONE", LOOKS_ONE) < 0 ||
                   PyModule_AddIntConstant(m, "LOOKS_ENOUGH", LOOKS_ENOUGH) < 0 ||
                   PyModule_AddIntConstant(m, "LOOKS_WEIGHT_SHIFT", LOOKS_WEIGHT_SHIFT) < 0
               ? -1 : 0;
}

PyMODINIT_FUNC PyInit__codec(void) {
    static const char *const scan_fields[] = {
        "kind", "size", "topic", "queue_id", "queue_offset", "phys_offset", "sys_flag",
        "store_timestamp", "properties", "reason",
    };
    static const char *const entry_fields[] = {"flag", "body", "properties"};
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "ABI_VERSION", CODEC_ABI_VERSION) < 0 ||
        add_layout_constants(m) < 0 ||
        PyModule_AddIntConstant(m, "SEND_SYS_FLAG_MASK", SEND_SYS_FLAG_MASK) < 0 ||
        PyModule_AddIntConstant(m, "IDLE_MAX_TASKS", IDLE_MAX_TASKS) < 0 ||
        PyModule_AddIntConstant(m, "IDLE_MAX_EVENTS", IDLE_MAX_EVENTS) < 0 ||
        PyModule_AddObject(m, "IDLE_MAX_SLEEP_S", PyFloat_FromDouble(IDLE_MAX_SLEEP_S)) < 0 ||
        add_looks_type(m) < 0 ||
        add_field_names(m, "RECORD_SCAN_FIELDS", scan_fields, 10) < 0 ||
        add_field_names(m, "BATCH_ENTRY_FIELDS", entry_fields, 3) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
