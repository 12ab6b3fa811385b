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
 * handler's result or exception. The connection's attributes are read and set as round.c and
 * finish.c do; the sender's send and write_now are called through its Python object. */
#include "codec.h"

static PyObject *s_closed, *s_empty, *s_flag, *s_handler, *s_writes, *s_in_read_batch,
    *s_flush, *s_buffers, *s_wclosed, *s_sender, *s_handle, *s_send, *s_write_now, *s_queued,
    *s_paused, *s_pause, *s_answer, *s_sent, *s_in_flight, *s_full, *s_keep_reading;

static int intern_names(void) {
    if (s_keep_reading != NULL) return 1;
#define INTERN(var, text) \
    if ((var = PyUnicode_InternFromString(text)) == NULL) return 0
    INTERN(s_closed, "closed");
    INTERN(s_empty, "empty");
    INTERN(s_flag, "flag");
    INTERN(s_handler, "request_handler");
    INTERN(s_writes, "_writes");
    INTERN(s_in_read_batch, "_in_read_batch");
    INTERN(s_flush, "flush");
    INTERN(s_buffers, "buffers");
    INTERN(s_wclosed, "_closed");
    INTERN(s_sender, "_sender");
    INTERN(s_handle, "_handle");
    INTERN(s_send, "send");
    INTERN(s_write_now, "write_now");
    INTERN(s_queued, "queued");
    INTERN(s_paused, "paused");
    INTERN(s_pause, "_pause");
    INTERN(s_answer, "answer");
    INTERN(s_sent, "_sent");
    INTERN(s_in_flight, "_in_flight");
    INTERN(s_full, "full");
    INTERN(s_keep_reading, "_keep_reading");
#undef INTERN
    return 1;
}

/* 1 when obj.name is exactly want, 0 when not, -1 on an error. */
static int attr_is(PyObject *obj, PyObject *name, PyObject *want) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) return -1;
    Py_DECREF(value);
    return value == want;
}

/* The read batch ends on the way out of an error the handler raised that is not an Exception:
 * _in_read_batch = False and, when open, the connection's writes flushed; the error kept. */
static PyObject *end_batch_raising(PyObject *connection) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyObject_SetAttr(connection, s_in_read_batch, Py_False) == 0 &&
        attr_is(connection, s_closed, Py_False) == 1) {
        PyObject *writes = PyObject_GetAttr(connection, s_writes);
        PyObject *done = writes == NULL ? NULL : PyObject_CallMethodNoArgs(writes, s_flush);
        Py_XDECREF(writes);
        Py_XDECREF(done);
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return NULL;
}

/* The sender's writes of a reply (ThreadWrites.answer's, writes' _closed known False): the
 * buffers handed over and written at once; the pause over the high-water mark. Whether reading
 * goes on (1), pauses (0), or -1 on an error. */
static int thread_answer(PyObject *writes, PyObject *buffers, PyObject *high_water) {
    PyObject *sender = PyObject_GetAttr(writes, s_sender);
    PyObject *handle = sender == NULL ? NULL : PyObject_GetAttr(writes, s_handle);
    PyObject *queued = handle == NULL ? NULL
                                      : PyObject_CallMethodObjArgs(sender, s_send, handle,
                                                                   buffers, NULL);
    int ok = -1;
    if (queued == NULL) {
        if (handle != NULL && (PyErr_ExceptionMatches(PyExc_OSError) ||
                               PyErr_ExceptionMatches(PyExc_RuntimeError))) {
            /* the write failed, or the sender stopped: _sent closes the connection */
            PyObject *exc = take_error();
            PyObject *done = exc == NULL ? NULL : PyObject_CallMethodOneArg(writes, s_sent, exc);
            Py_XDECREF(exc);
            ok = done == NULL ? -1 : 1;
            Py_XDECREF(done);
        }
        goto out;
    }
    if (PyObject_SetAttr(writes, s_queued, queued) < 0) goto out;
    int over = PyObject_RichCompareBool(queued, high_water, Py_GT);
    if (over < 0) goto out;
    if (over) {
        int paused = attr_is(writes, s_paused, Py_True);
        if (paused < 0) goto out;
        PyObject *done = paused ? Py_NewRef(Py_None) : PyObject_CallMethodNoArgs(writes, s_pause);
        if (done == NULL) goto out;
        Py_DECREF(done);
    }
    PyObject *written = PyObject_CallMethodOneArg(sender, s_write_now, handle);
    if (written == NULL) goto out;
    Py_DECREF(written);
    ok = attr_is(writes, s_paused, Py_False);
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
    if (PyObject_SetAttr(connection, s_in_read_batch, Py_False) < 0) return NULL;
    PyObject *writes = PyObject_GetAttr(connection, s_writes);
    if (writes == NULL) return NULL;
    PyObject *buffers = PyObject_GetAttr(result, s_buffers);
    int ok = -1;
    if (buffers != NULL) {
        int fast = (PyObject *)Py_TYPE(writes) == thread_type
                       ? attr_is(writes, s_wclosed, Py_False) : 0;
        if (fast > 0)
            ok = thread_answer(writes, buffers, high_water);
        else if (fast == 0) {
            PyObject *answered = PyObject_CallMethodOneArg(writes, s_answer, buffers);
            ok = answered == NULL ? -1 : PyObject_IsTrue(answered);
            Py_XDECREF(answered);
        }
        Py_DECREF(buffers);
    }
    Py_DECREF(writes);
    if (ok < 0) return NULL;
    if (ok) {
        PyObject *in_flight = PyObject_GetAttr(connection, s_in_flight);
        int room = in_flight == NULL ? -1 : attr_is(in_flight, s_full, Py_False);
        Py_XDECREF(in_flight);
        if (room < 0) return NULL;
        if (room) Py_RETURN_TRUE;
    }
    return PyObject_CallMethodNoArgs(connection, s_keep_reading);
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
                   ? attr_is(connection, s_closed, Py_False) : 0;
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
    PyObject *flag = PyObject_GetAttr(got, s_flag);
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
    if (!intern_names()) return NULL;
    PyObject *connection = PyTuple_GET_ITEM(args[0], 0);
    int ready = attr_is(connection, s_closed, Py_False);
    if (ready > 0) ready = attr_is(PyTuple_GET_ITEM(args[0], 1), s_empty, Py_True);
    if (ready <= 0) return ready < 0 ? NULL : Py_NewRef(Py_Ellipsis);
    PyTypeObject *frame_type = (PyTypeObject *)PyTuple_GET_ITEM(args[2], 0);
    PyObject *got = recv_judged((int)fd, frame_type, max_frame, 1, 1);
    if (got == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_OSError)) return NULL;
        if ((got = take_error()) == NULL) return NULL;
        return Py_BuildValue("(N)", got);
    }
    int wanted = wants_answer(got, frame_type);
    PyObject *handler = wanted > 0 ? PyObject_GetAttr(connection, s_handler) : NULL;
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
