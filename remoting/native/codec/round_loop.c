/* serve_round: a sleep that names several plain connections, each with one lone request (sync
 * senders on many connections), served inside serve_lone's loop (lone_loop.c) as the selector's
 * _read_round serves it: recv_round, the server's round handler, finish_round's common case
 * (finish_plain_round), in the same calls with the same arguments, and no Python frame of the
 * selector's between them. remoting/lone_loop.py serve_round_reference is the twin.
 *
 * Under sync sends on 8 connections about half the store passes came from such rounds, and the
 * selector's Python around them (_pass, _read_events, _read_round, finish_round, the checkpoint
 * after a pass of several reads) was the last Python on that path. Anything but the common
 * case is handed back at the step where it stopped, as (step, owners, staged, what), for the
 * selector to finish as _read_round would have: step 0 after recv_round (what: its rest, when
 * some connection's read brought anything else or one connection was staged), step 1 after
 * the handler (what: its results, when finish_plain_round declined them or the writes are not
 * the sender's), step 2 after finish_plain_round (what: the tail it handed back). */
#include "codec.h"

static PyObject *s_writes, *s_sender;

static PyObject *back(int step, PyObject *owners, PyObject *staged, PyObject *what) {
    return Py_BuildValue("(iOOO)", step, owners, staged, what);
}

/* The handler's results; a round handler's bug (an Exception) answers every request of the
 * round, as the selector's _read_round does. */
static PyObject *handle(PyObject *handler, PyObject *owners, PyObject *staged) {
    PyObject *call[2] = {owners, staged};
    PyObject *results = PyObject_Vectorcall(handler, call, 2, NULL);
    if (results != NULL || !PyErr_ExceptionMatches(PyExc_Exception)) return results;
    PyObject *exc = take_error();
    if (exc == NULL) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(staged);
    results = PyList_New(count);
    for (Py_ssize_t i = 0; results != NULL && i < count; i++)
        PyList_SET_ITEM(results, i, Py_NewRef(exc));
    Py_DECREF(exc);
    return results;
}

/* finish_round's common case: Py_True (borrowed) when finished whole, else the hand-back (or
 * NULL on an error that propagates, as it would out of finish_round). An attribute that
 * cannot be read is left to finish_round, which meets it again. */
static PyObject *finish(PyObject *owners, PyObject *staged, PyObject *results, PyObject *kinds) {
    /* slots of a Connection and its ThreadWrites, read at their offsets (slots.h) */
    static SlotCache at_writes, at_sender;
    if (PyList_GET_SIZE(owners) == 0) /* the handler emptied them */
        return back(1, owners, staged, results);
    PyObject *w = slot_get(PyList_GET_ITEM(owners, 0), s_writes, &at_writes);
    PyObject *sender = NULL;
    if (w != NULL && (PyObject *)Py_TYPE(w) == PyTuple_GET_ITEM(kinds, 2))
        sender = slot_get(w, s_sender, &at_sender);
    Py_XDECREF(w);
    if (sender == NULL) {
        if (PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
            PyErr_Clear();
        }
        return back(1, owners, staged, results);
    }
    PyObject *call[6] = {owners, staged, results, PyTuple_GET_ITEM(kinds, 2), sender,
                         PyTuple_GET_ITEM(kinds, 3)};
    PyObject *tail = finish_plain_round(NULL, call, 6);
    Py_DECREF(sender);
    if (tail == NULL) return NULL;
    if (tail == Py_None) {
        Py_DECREF(tail);
        return back(1, owners, staged, results);
    }
    if (PyList_CheckExact(tail) && PyList_GET_SIZE(tail) == 0) {
        Py_DECREF(tail);
        return Py_True;
    }
    PyObject *out = back(2, owners, staged, tail);
    Py_DECREF(tail);
    return out;
}

/* serve_round(ready, connections, plain, kinds, handler): Py_True (borrowed) when the round
 * was served whole, else a new reference to the hand-back; NULL on an error that propagates. */
PyObject *serve_round(PyObject *ready, PyObject *connections, PyObject *plain, PyObject *kinds,
                      PyObject *handler) {
    if (s_sender == NULL) {
        s_writes = PyUnicode_InternFromString("_writes");
        s_sender = PyUnicode_InternFromString("_sender");
        if (s_writes == NULL || s_sender == NULL) return NULL;
    }
    PyObject *call[4] = {ready, connections, plain, PyTuple_GET_ITEM(kinds, 0)};
    PyObject *read = recv_round(NULL, call, 4);
    if (read == NULL) return NULL;
    PyObject *owners = PyTuple_GET_ITEM(read, 0), *staged = PyTuple_GET_ITEM(read, 1),
             *rest = PyTuple_GET_ITEM(read, 2);
    PyObject *out = Py_True;
    Py_ssize_t count = PyList_GET_SIZE(owners);
    if (PyList_GET_SIZE(rest) != 0 || count == 1) {
        out = back(0, owners, staged, rest);
    } else if (count > 1) {
        PyObject *results = handle(handler, owners, staged);
        out = results == NULL ? NULL : finish(owners, staged, results, kinds);
        Py_XDECREF(results);
    }
    Py_DECREF(read);
    return out;
}
