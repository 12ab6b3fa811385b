/* finish_plain_round: the end of a selector round whose requests were all answered with reply
 * frames (a round of plain sends), in one call: remoting/reading.py finish_round takes it
 * first, and its twin, finish_plain_round_reference in remoting/receive.py, says what it does.
 * Per connection that loop was ~25 Python bytecodes around the sender's call and ~10 after it;
 * here they are attribute reads and writes, with no frame per connection.
 *
 * All or nothing before any reply leaves: a round with one connection that is not the common
 * case (a result that is not a frame, a closed connection, a oneway request, writes not the
 * sender's or of another sender) is left whole to Python (None). After the sender's one call
 * a connection whose answer is not the common one (a failed write, over the high-water mark)
 * or that must be looked at (its in-flight table full, its writes paused) is handed back with
 * its answer, for Python to finish as finish_round does. */
#include "codec.h"

static PyObject *s_closed, *s_writes, *s_wclosed, *s_sender, *s_handle, *s_flag, *s_queued,
    *s_in_read_batch, *s_in_flight, *s_full, *s_paused, *s_send_each;

static int intern_names(void) {
    if (s_send_each != NULL) return 1;
    s_closed = PyUnicode_InternFromString("closed");
    s_writes = PyUnicode_InternFromString("_writes");
    s_wclosed = PyUnicode_InternFromString("_closed");
    s_sender = PyUnicode_InternFromString("_sender");
    s_handle = PyUnicode_InternFromString("_handle");
    s_flag = PyUnicode_InternFromString("flag");
    s_queued = PyUnicode_InternFromString("queued");
    s_in_read_batch = PyUnicode_InternFromString("_in_read_batch");
    s_in_flight = PyUnicode_InternFromString("_in_flight");
    s_full = PyUnicode_InternFromString("full");
    s_paused = PyUnicode_InternFromString("paused");
    s_send_each = PyUnicode_InternFromString("send_each");
    return s_closed && s_writes && s_wclosed && s_sender && s_handle && s_flag && s_queued &&
           s_in_read_batch && s_in_flight && s_full && s_paused && s_send_each;
}

/* Each read's and write's slot cache (slots.h): the connection's, its writes' and its
 * in-flight table's attributes are __slots__ members (remoting/connection.py), read at their
 * offsets; anything else as Python reads it. */
static SlotCache at_closed, at_flag, at_full, at_handle, at_in_flight, at_paused, at_sender,
    at_wclosed, at_writes, to_in_read_batch, to_queued;

/* 1 when obj.name is exactly want, 0 when not; -1 on an error (left set). */
static int attr_is(PyObject *obj, PyObject *name, PyObject *want, SlotCache *site) {
    PyObject *value = slot_get(obj, name, site);
    if (value == NULL) return -1;
    Py_DECREF(value);
    return value == want;
}

/* Phase 1 for one connection: 1 the common case (its writes in *writes, its handle appended
 * to handles), 0 not, -1 an error. Reads only. */
static int fast_one(PyObject *connection, PyObject *request, PyObject *frame,
                    PyObject *writes_type, PyObject *sender, PyObject *handles,
                    PyObject **writes) {
    if (!PyBytes_CheckExact(frame)) return 0;
    int open = attr_is(connection, s_closed, Py_False, &at_closed);
    if (open <= 0) return open;
    PyObject *flag = slot_get(request, s_flag, &at_flag);
    if (flag == NULL) return -1;
    long value = PyLong_CheckExact(flag) ? PyLong_AsLong(flag) : -1;
    Py_DECREF(flag);
    if (value == -1) return PyErr_Occurred() ? -1 : 0;
    if (value & 2) return 0; /* RPC_ONEWAY: no reply */
    PyObject *w = slot_get(connection, s_writes, &at_writes);
    if (w == NULL) return -1;
    int fast = (PyObject *)Py_TYPE(w) == writes_type;
    if (fast) fast = attr_is(w, s_wclosed, Py_False, &at_wclosed);
    if (fast > 0) fast = attr_is(w, s_sender, sender, &at_sender);
    PyObject *handle = fast > 0 ? slot_get(w, s_handle, &at_handle) : NULL;
    if (fast > 0 && handle == NULL) fast = -1;
    if (fast > 0 && !PyLong_CheckExact(handle)) fast = 0;
    if (fast > 0 && PyList_Append(handles, handle) < 0) fast = -1;
    Py_XDECREF(handle);
    if (fast > 0)
        *writes = w;
    else
        Py_DECREF(w);
    return fast;
}

/* Phase 3 for one connection whose answer is a byte count within the mark: 1 done, 0 to be
 * looked at by Python (in-flight full or paused), -1 an error. */
static int settle_one(PyObject *connection, PyObject *w, PyObject *answer) {
    if (slot_set(w, s_queued, answer, &to_queued) < 0) return -1;
    if (slot_set(connection, s_in_read_batch, Py_False, &to_in_read_batch) < 0) return -1;
    PyObject *in_flight = slot_get(connection, s_in_flight, &at_in_flight);
    if (in_flight == NULL) return -1;
    PyObject *full = slot_get(in_flight, s_full, &at_full);
    Py_DECREF(in_flight);
    if (full == NULL) return -1;
    int busy = PyObject_IsTrue(full);
    Py_DECREF(full);
    if (busy != 0) return busy < 0 ? -1 : 0;
    PyObject *paused = slot_get(w, s_paused, &at_paused);
    if (paused == NULL) return -1;
    busy = PyObject_IsTrue(paused);
    Py_DECREF(paused);
    return busy < 0 ? -1 : !busy;
}

static int add_tail(PyObject *tail, Py_ssize_t index, PyObject *answer) {
    PyObject *pair = Py_BuildValue("(nO)", index, answer);
    if (pair == NULL) return -1;
    int appended = PyList_Append(tail, pair);
    Py_DECREF(pair);
    return appended;
}

/* What the tail says of connection i: nothing (its answer taken and nothing to look at), None
 * (taken, its pause to be looked at), the answer (not taken: Python's _sent takes it) or the
 * exception of a bug met taking it (that connection closes alone). -1: no tail entry made. */
static int settle_at(PyObject *tail, Py_ssize_t i, PyObject *connection, PyObject *w,
                     PyObject *answer, long long high_water) {
    if (PyLong_CheckExact(answer)) {
        int overflow;
        long long queued = PyLong_AsLongLongAndOverflow(answer, &overflow);
        if (!overflow && queued <= high_water) {
            int done = settle_one(connection, w, answer);
            if (done > 0) return 0;
            if (done == 0) return add_tail(tail, i, Py_None);
            PyObject *exc = take_error();
            if (exc == NULL) return -1;
            int added = add_tail(tail, i, exc);
            Py_DECREF(exc);
            return added;
        }
    }
    return add_tail(tail, i, answer);
}

/* finish_plain_round(owners, staged, frames, writes_type, sender, high_water) -> list | None */
PyObject *finish_plain_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    static const char usage[] =
        "finish_plain_round(owners, staged, frames, writes_type, sender, high_water)";
    if (nargs != 6 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1]) ||
        !PyType_Check(args[3]) || !PyLong_CheckExact(args[5])) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    long long high_water = PyLong_AsLongLong(args[5]);
    if (high_water == -1 && PyErr_Occurred()) return NULL;
    if (!intern_names()) return NULL;
    PyObject *owners = args[0], *staged = args[1], *frames = args[2];
    Py_ssize_t n = PyList_GET_SIZE(owners);
    if (!PyList_CheckExact(frames) || PyList_GET_SIZE(staged) != n || PyList_GET_SIZE(frames) != n)
        Py_RETURN_NONE; /* finish_round's own loop judges (and refuses) these */
    /* Snapshots: the attribute reads below may run Python code that changes the lists. */
    PyObject *who = PyList_GetSlice(owners, 0, n), *what = PyList_GetSlice(staged, 0, n);
    PyObject *out = PyList_GetSlice(frames, 0, n);
    PyObject *handles = PyList_New(0), *writes = PyList_New(0), *answers = NULL, *tail = NULL;
    if (!who || !what || !out || !handles || !writes) goto done;
    int fast = 1;
    for (Py_ssize_t i = 0; i < n && fast > 0; i++) {
        PyObject *w = NULL;
        fast = fast_one(PyList_GET_ITEM(who, i), PyList_GET_ITEM(what, i),
                        PyList_GET_ITEM(out, i), args[3], args[4], handles, &w);
        if (fast > 0) {
            fast = PyList_Append(writes, w) < 0 ? -1 : 1;
            Py_DECREF(w);
        }
    }
    if (fast < 0) /* Python's own loop meets that error again, with that connection's handling */
        PyErr_Clear();
    if (fast <= 0 || n == 0) {
        tail = Py_None;
        Py_INCREF(tail);
        goto done;
    }
    PyObject *got = PyObject_CallMethodObjArgs(args[4], s_send_each, handles, out, NULL);
    if (got == NULL) goto done;
    if (!PyList_CheckExact(got) || PyList_GET_SIZE(got) != n) {
        Py_DECREF(got);
        PyErr_SetString(PyExc_TypeError, "send_each: one answer per reply");
        goto done;
    }
    /* A tuple of them: settling runs attribute code, which must not change what is walked. */
    answers = PyList_AsTuple(got);
    Py_DECREF(got);
    if (answers == NULL) goto done;
    tail = PyList_New(0);
    for (Py_ssize_t i = 0; tail != NULL && i < n; i++) {
        PyObject *answer = PyTuple_GET_ITEM(answers, i);
        Py_INCREF(answer);
        if (settle_at(tail, i, PyList_GET_ITEM(who, i), PyList_GET_ITEM(writes, i), answer,
                      high_water) < 0)
            Py_CLEAR(tail);
        Py_DECREF(answer);
    }
done:
    Py_XDECREF(who);
    Py_XDECREF(what);
    Py_XDECREF(out);
    Py_XDECREF(handles);
    Py_XDECREF(writes);
    Py_XDECREF(answers);
    return tail;
}
