/* answer_lone: a lone request's read, handler call and reply in one call (remoting/receive.py
 * answer_lone_reference, the twin, says what it returns; remoting/selector.py calls it for the
 * one socket an idle sleep names). A lock-step client's request (a pull of 32, a sync send)
 * went through on_readable, _answer_lone, the writes' answer and their ~150 bytecodes around
 * one recv, the handler and two sender calls.
 *
 * Only the common case is taken here: an open plain connection (the selector's round entry)
 * whose decoder holds nothing, a read that is one whole frame scanned to a request that wants
 * an answer, a handler returning an encoded reply (EncodedReply) on an open connection whose
 * replies the server's sender writes. Anything else goes back to the connection's own code at
 * the step it stopped (ReadBatches.lone_rest): nothing read, what the read brought, or the
 * handler's result or exception. What is read and set here (the connection's, its writes',
 * the sender's send and write_now) is read at its __slots__ offset while the type's own lookup
 * names the slot (slots.h), else as Python reads it: a subclass, a property or a replaced
 * object takes the generic path (tests/unit/remoting/test_answer_lone_slots.py). */
#include "codec.h"

enum {
    N_CLOSED, N_EMPTY, N_FLAG, N_HANDLER, N_WRITES, N_IN_READ_BATCH, N_FLUSH, N_BUFFERS,
    N_WCLOSED, N_SENDER, N_HANDLE, N_SEND, N_WRITE_NOW, N_QUEUED, N_PAUSED, N_PAUSE, N_ANSWER,
    N_SENT, N_IN_FLIGHT, N_FULL, N_KEEP_READING, N_NAMES
};
static PyObject *names[N_NAMES];
static const char *const spelled[N_NAMES] = {
    "closed", "empty", "flag", "request_handler", "_writes", "_in_read_batch", "flush",
    "buffers", "_closed", "_sender", "_handle", "send", "write_now", "queued", "paused",
    "_pause", "answer", "_sent", "_in_flight", "full", "_keep_reading",
};
/* Where each name's slot was last found, reading and setting apart (slots.h): the connection,
 * its writes, sender, decoder and in-flight table, the command and the reply keep what is read
 * here in __slots__ (remoting/connection.py says why), so each read is an offset's. */
static SlotCache get_sites[N_NAMES], set_sites[N_NAMES];

static PyObject *get(PyObject *o, int name) { return slot_get(o, names[name], &get_sites[name]); }

static int set(PyObject *o, int name, PyObject *v) {
    return slot_set(o, names[name], v, &set_sites[name]);
}

/* 1 when obj.name is exactly want, 0 when not, -1 on an error. */
static int attr_is(PyObject *obj, int name, PyObject *want) {
    PyObject *value = get(obj, name);
    if (value == NULL) return -1;
    Py_DECREF(value);
    return value == want;
}

/* obj.name(*args) as PyObject_CallMethod* calls it, the name read as get() reads it. */
static PyObject *call(PyObject *obj, int name, PyObject *const *args, size_t nargs) {
    PyObject *method = get(obj, name);
    if (method == NULL) return NULL;
    PyObject *result = PyObject_Vectorcall(method, args, nargs, NULL);
    Py_DECREF(method);
    return result;
}

/* The read batch ends on the way out of an error the handler raised that is not an Exception:
 * _in_read_batch = False and, when open, the connection's writes flushed; the error kept. */
static PyObject *end_batch_raising(PyObject *connection) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (set(connection, N_IN_READ_BATCH, Py_False) == 0 &&
        attr_is(connection, N_CLOSED, Py_False) == 1) {
        PyObject *writes = get(connection, N_WRITES);
        PyObject *done =
            writes == NULL ? NULL : PyObject_CallMethodNoArgs(writes, names[N_FLUSH]);
        Py_XDECREF(writes);
        Py_XDECREF(done);
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return NULL;
}

/* queued > high_water: two exact ints within a C long compared as C values (the sender's
 * answer and the module constant; a rich compare was ~90 instructions a reply), anything else
 * as Python compares them. 1, 0, or -1 on an error. */
static int queued_over(PyObject *queued, PyObject *high_water) {
    if (PyLong_CheckExact(queued) && PyLong_CheckExact(high_water)) {
        int over_q = 0, over_h = 0;
        long q = PyLong_AsLongAndOverflow(queued, &over_q);
        long h = PyLong_AsLongAndOverflow(high_water, &over_h);
        if (!over_q && !over_h) return q > h;
    }
    return PyObject_RichCompareBool(queued, high_water, Py_GT);
}

/* The sender's writes of a reply (ThreadWrites.answer's, writes' _closed known False): the
 * buffers handed over and written at once; the pause over the high-water mark. Whether reading
 * goes on (1), pauses (0), or -1 on an error. */
static int thread_answer(PyObject *writes, PyObject *buffers, PyObject *high_water) {
    PyObject *sender = get(writes, N_SENDER);
    PyObject *handle = sender == NULL ? NULL : get(writes, N_HANDLE);
    PyObject *send_args[2] = {handle, buffers};
    PyObject *queued = handle == NULL ? NULL : call(sender, N_SEND, send_args, 2);
    int ok = -1;
    if (queued == NULL) {
        if (handle != NULL && (PyErr_ExceptionMatches(PyExc_OSError) ||
                               PyErr_ExceptionMatches(PyExc_RuntimeError))) {
            /* the write failed, or the sender stopped: _sent closes the connection */
            PyObject *exc = take_error();
            PyObject *done =
                exc == NULL ? NULL : PyObject_CallMethodOneArg(writes, names[N_SENT], exc);
            Py_XDECREF(exc);
            ok = done == NULL ? -1 : 1;
            Py_XDECREF(done);
        }
        goto out;
    }
    if (set(writes, N_QUEUED, queued) < 0) goto out;
    int over = queued_over(queued, high_water);
    if (over < 0) goto out;
    if (over) {
        int paused = attr_is(writes, N_PAUSED, Py_True);
        if (paused < 0) goto out;
        PyObject *done =
            paused ? Py_NewRef(Py_None) : PyObject_CallMethodNoArgs(writes, names[N_PAUSE]);
        if (done == NULL) goto out;
        Py_DECREF(done);
    }
    PyObject *written = call(sender, N_WRITE_NOW, &handle, 1);
    if (written == NULL) goto out;
    Py_DECREF(written);
    ok = attr_is(writes, N_PAUSED, Py_False);
out:
    Py_XDECREF(sender);
    Py_XDECREF(handle);
    Py_XDECREF(queued);
    return ok;
}

/* The encoded reply's way out, the handler's result known to be one and the connection open:
 * the read batch ended, the writes' answer (the sender's, or writes.answer), then
 * on_readable's answer (_keep_reading when paused or the in-flight table is full). */
static PyObject *reply(PyObject *connection, PyObject *result, PyObject *thread_type,
                       PyObject *high_water) {
    if (set(connection, N_IN_READ_BATCH, Py_False) < 0) return NULL;
    PyObject *writes = get(connection, N_WRITES);
    if (writes == NULL) return NULL;
    PyObject *buffers = get(result, N_BUFFERS);
    int ok = -1;
    if (buffers != NULL) {
        int fast = (PyObject *)Py_TYPE(writes) == thread_type
                       ? attr_is(writes, N_WCLOSED, Py_False) : 0;
        if (fast > 0)
            ok = thread_answer(writes, buffers, high_water);
        else if (fast == 0) {
            PyObject *answered = PyObject_CallMethodOneArg(writes, names[N_ANSWER], buffers);
            ok = answered == NULL ? -1 : PyObject_IsTrue(answered);
            Py_XDECREF(answered);
        }
        Py_DECREF(buffers);
    }
    Py_DECREF(writes);
    if (ok < 0) return NULL;
    if (ok) {
        PyObject *in_flight = get(connection, N_IN_FLIGHT);
        int room = in_flight == NULL ? -1 : attr_is(in_flight, N_FULL, Py_False);
        Py_XDECREF(in_flight);
        if (room < 0) return NULL;
        if (room) Py_RETURN_TRUE;
    }
    return PyObject_CallMethodNoArgs(connection, names[N_KEEP_READING]);
}

/* The handler's call, the read batch begun: the reply's way out, else (command, result, None)
 * or (command, None, exception) for ReadBatches.answered. */
static PyObject *handle(PyObject *connection, PyObject *handler, PyObject *command,
                        PyObject *kinds) {
    if (begin_batch(connection) < 0) return NULL;
    PyObject *call_args[2] = {connection, command};
    PyObject *result = PyObject_Vectorcall(handler, call_args, 2, NULL);
    if (result == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return end_batch_raising(connection);
        PyObject *exc = take_error();
        return exc == NULL ? NULL : Py_BuildValue("(OON)", command, Py_None, exc);
    }
    int open = (PyObject *)Py_TYPE(result) == PyTuple_GET_ITEM(kinds, 1)
                   ? attr_is(connection, N_CLOSED, Py_False) : 0;
    if (open <= 0) {
        if (open < 0) {
            Py_DECREF(result);
            return end_batch_raising(connection);
        }
        return Py_BuildValue("(ONO)", command, result, Py_None);
    }
    PyObject *answer =
        reply(connection, result, PyTuple_GET_ITEM(kinds, 2), PyTuple_GET_ITEM(kinds, 3));
    Py_DECREF(result);
    return answer;
}

/* Whether got is a scanned request that wants an answer: its flag an int with neither
 * RPC_RESPONSE nor RPC_ONEWAY set. -1 on an error. */
static int wants_answer(PyObject *got, PyTypeObject *frame_type) {
    if (PyBytes_CheckExact(got) || got == Py_None || PyObject_TypeCheck(got, frame_type))
        return 0;
    PyObject *flag = get(got, N_FLAG);
    if (flag == NULL) return -1;
    long value = PyLong_CheckExact(flag) ? PyLong_AsLong(flag) : 3;
    Py_DECREF(flag);
    if (value == -1 && PyErr_Occurred()) return -1;
    return !(value & 3);
}

/* answer_lone(entry, fd, kinds) -> True | False | Ellipsis | (got,) | (command, result, exc);
 * entry is the selector's (connection, decoder, max_frame_bytes), kinds (Frame, EncodedReply,
 * ThreadWrites, WRITE_HIGH_WATER). */
PyObject *answer_lone(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    static const char usage[] = "answer_lone((connection, decoder, max_frame_bytes), fd, "
                                "(frame_type, reply_type, writes_type, high_water))";
    if (nargs != 3 || !PyTuple_CheckExact(args[0]) || PyTuple_GET_SIZE(args[0]) != 3 ||
        !PyLong_CheckExact(args[1]) || !PyTuple_CheckExact(args[2]) ||
        PyTuple_GET_SIZE(args[2]) != 4 || !PyType_Check(PyTuple_GET_ITEM(args[2], 0)) ||
        !PyType_IsSubtype((PyTypeObject *)PyTuple_GET_ITEM(args[2], 0), &PyTuple_Type) ||
        !PyType_Check(PyTuple_GET_ITEM(args[2], 1)) ||
        !PyType_Check(PyTuple_GET_ITEM(args[2], 2)) ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(args[2], 3))) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    int overflow;
    long fd = PyLong_AsLongAndOverflow(args[1], &overflow);
    long long max_frame = PyLong_AsLongLong(PyTuple_GET_ITEM(args[0], 2));
    if (max_frame == -1 && PyErr_Occurred()) return NULL;
    if (overflow || fd < 0 || fd > INT_MAX || max_frame < 0) {
        PyErr_SetString(PyExc_ValueError, "answer_lone: a descriptor or bound out of range");
        return NULL;
    }
    if (intern_table(names, spelled, N_NAMES) < 0) return NULL;
    PyObject *connection = PyTuple_GET_ITEM(args[0], 0);
    int ready = attr_is(connection, N_CLOSED, Py_False);
    if (ready > 0) ready = attr_is(PyTuple_GET_ITEM(args[0], 1), N_EMPTY, Py_True);
    if (ready <= 0) return ready < 0 ? NULL : Py_NewRef(Py_Ellipsis);
    PyTypeObject *frame_type = (PyTypeObject *)PyTuple_GET_ITEM(args[2], 0);
    PyObject *got = recv_judged((int)fd, frame_type, max_frame, 1, 1);
    if (got == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_OSError)) return NULL;
        if ((got = take_error()) == NULL) return NULL;
        return Py_BuildValue("(N)", got);
    }
    int wanted = wants_answer(got, frame_type);
    PyObject *handler = wanted > 0 ? get(connection, N_HANDLER) : NULL;
    if (wanted < 0 || (wanted > 0 && handler == NULL)) {
        Py_DECREF(got);
        return NULL;
    }
    if (handler == NULL || handler == Py_None) {
        Py_XDECREF(handler);
        return Py_BuildValue("(N)", got);
    }
    PyObject *answer = handle(connection, handler, got, args[2]);
    Py_DECREF(handler);
    Py_DECREF(got);
    return answer;
}
