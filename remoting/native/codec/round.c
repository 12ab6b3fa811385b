/* recv_round: a selector round's reads in one call (remoting/receive.py recv_round_reference,
 * the twin, says what it returns; remoting/selector.py _read_round uses it). Under sync sends
 * on many connections a round finds 3-4 ready, each holding one plain request: read one by
 * one from Python, each cost a method call and a dozen attribute lookups around its recv.
 *
 * A connection is read here only when the selector listed it as plain (``plain[fd]`` is
 * (connection, decoder, max_frame_bytes): a server connection without TLS that groups its
 * requests) and, now, it is open and its decoder holds nothing; a read that is then exactly
 * one whole frame whose JSON header scans to a request is staged (the connection's I/O counted
 * and its read batch begun, as Connection.stage_read does). Everything else goes to the
 * connection's own path in ``rest``, with what was read: the bytes, the Frame the scan
 * declined, a response, b"" (EAGAIN), None (EOF), the exception of a failed read; Ellipsis
 * when nothing was read (stage_read reads it). So one connection's trouble is its own: the
 * others' reads are kept whatever it brought. */
#include "codec.h"

static PyObject *s_closed, *s_empty, *s_ios, *s_in_read_batch, *s_flag;

static int intern_names(void) {
    if (s_flag != NULL) return 1;
    s_closed = PyUnicode_InternFromString("closed");
    s_empty = PyUnicode_InternFromString("empty");
    s_ios = PyUnicode_InternFromString("_ios");
    s_in_read_batch = PyUnicode_InternFromString("_in_read_batch");
    s_flag = PyUnicode_InternFromString("flag");
    return s_closed && s_empty && s_ios && s_in_read_batch && s_flag;
}

/* Each read's slot cache (slots.h): the connection's, its decoder's and the command's
 * attributes are __slots__ members (remoting/connection.py, frame.py, command.py), read at
 * their offsets; anything else as Python reads it. */
static SlotCache at_closed, at_empty, at_flag;

/* 1 when the attribute is exactly ``want`` (True or False), 0 when not or on an error
 * (cleared: the connection's own path meets it again). */
static int attr_is(PyObject *obj, PyObject *name, PyObject *want, SlotCache *site) {
    PyObject *value = slot_get(obj, name, site);
    if (value == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(value);
    return value == want;
}

/* A pending error as the exception object (for ``rest``); NULL when it cannot be made. */
PyObject *take_error(void) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && tb != NULL) PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
}

static int add_rest(PyObject *rest, PyObject *connection, PyObject *got) {
    PyObject *pair = PyTuple_Pack(2, connection, got);
    if (pair == NULL) return -1;
    int appended = PyList_Append(rest, pair);
    Py_DECREF(pair);
    return appended;
}

/* The staged request's bookkeeping, stage_read's: _ios += 1, _in_read_batch = True. Both are
 * slots of a Connection (remoting/connection.py), read and set at their offsets (slots.h). */
static SlotCache ios_get, ios_set, batch_set;

/* ios + 1: an exact int below LONG_MAX as a C long (PyNumber_Add's dispatch was a third of
 * begin_batch), anything else as Python adds. */
static PyObject *count_one(PyObject *ios) {
    if (PyLong_CheckExact(ios)) {
        int overflow = 0;
        long value = PyLong_AsLongAndOverflow(ios, &overflow);
        if (!overflow && value < LONG_MAX) return PyLong_FromLong(value + 1);
    }
    PyObject *one = PyLong_FromLong(1);
    PyObject *next = one == NULL ? NULL : PyNumber_Add(ios, one);
    Py_XDECREF(one);
    return next;
}

int begin_batch(PyObject *connection) {
    if (!intern_names()) return -1;
    PyObject *ios = slot_get(connection, s_ios, &ios_get);
    if (ios == NULL) return -1;
    PyObject *next = count_one(ios);
    Py_DECREF(ios);
    if (next == NULL) return -1;
    int set = slot_set(connection, s_ios, next, &ios_set);
    Py_DECREF(next);
    if (set < 0) return -1;
    return slot_set(connection, s_in_read_batch, Py_True, &batch_set);
}

/* Whether got (not a Frame) is a request: its flag's RPC_RESPONSE bit clear. -1: an error. */
static int is_request(PyObject *got) {
    PyObject *flag = slot_get(got, s_flag, &at_flag);
    if (flag == NULL) return -1;
    if (!PyLong_Check(flag)) { /* not a command we know: the connection's path judges it */
        Py_DECREF(flag);
        return 0;
    }
    long value = PyLong_AsLong(flag);
    Py_DECREF(flag);
    if (value == -1 && PyErr_Occurred()) return -1;
    return !(value & 1);
}

/* One listed connection's read: 1 staged, 0 put in rest, -1 an error of the round itself. */
static int read_one(PyObject *connection, PyObject *entry, int fd, PyTypeObject *frame_type,
                    PyObject *owners, PyObject *staged, PyObject *rest) {
    long long max_frame = PyLong_AsLongLong(PyTuple_GET_ITEM(entry, 2));
    if (max_frame == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return add_rest(rest, connection, Py_Ellipsis);
    }
    if (!attr_is(connection, s_closed, Py_False, &at_closed) ||
        !attr_is(PyTuple_GET_ITEM(entry, 1), s_empty, Py_True, &at_empty))
        return add_rest(rest, connection, Py_Ellipsis);
    PyObject *got = recv_judged(fd, frame_type, max_frame, 1, 0);
    if (got == NULL && (got = take_error()) == NULL) return -1;
    int request = 0;
    if (!PyBytes_CheckExact(got) && got != Py_None && !PyExceptionInstance_Check(got) &&
        !PyObject_TypeCheck(got, frame_type)) {
        request = is_request(got);
        if (request > 0 && begin_batch(connection) < 0) request = -1;
        if (request < 0) { /* the connection's path raises it, and closes that one alone */
            Py_DECREF(got);
            if ((got = take_error()) == NULL) return -1;
            request = 0;
        }
    }
    int done;
    if (request)
        done = PyList_Append(owners, connection) < 0 || PyList_Append(staged, got) < 0 ? -1 : 1;
    else
        done = add_rest(rest, connection, got);
    Py_DECREF(got);
    return done;
}

/* The events' descriptors, checked before any read: a bad list reads nothing. */
static int event_fds(PyObject *events, int *fds) {
    Py_ssize_t n = PyTuple_GET_SIZE(events);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *event = PyTuple_GET_ITEM(events, i);
        if (!PyTuple_Check(event) || PyTuple_GET_SIZE(event) < 1 ||
            !PyLong_Check(PyTuple_GET_ITEM(event, 0))) {
            PyErr_SetString(PyExc_TypeError, "recv_round: events are (fd, mask) tuples");
            return -1;
        }
        int overflow;
        long fd = PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(event, 0), &overflow);
        if (overflow || fd < -1 || fd > INT_MAX) {
            PyErr_SetString(PyExc_ValueError, "recv_round: a descriptor out of range");
            return -1;
        }
        fds[i] = (int)fd;
    }
    return 0;
}

/* recv_round(events, connections, plain, frame_type) -> (owners, staged, rest). */
PyObject *recv_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    static const char usage[] = "recv_round(events, connections, plain, frame_type)";
    if (nargs != 4 || !PyList_Check(args[0]) || !PyDict_Check(args[1]) ||
        !PyDict_Check(args[2]) || !PyType_Check(args[3]) ||
        !PyType_IsSubtype((PyTypeObject *)args[3], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    if (!intern_names()) return NULL;
    /* A tuple of the events: the attribute reads below may run Python code, which must not
     * change what this loop walks. */
    PyObject *events = PyList_AsTuple(args[0]);
    if (events == NULL) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(events);
    int *fds = PyMem_Malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (fds == NULL) {
        Py_DECREF(events);
        return PyErr_NoMemory();
    }
    PyObject *owners = PyList_New(0), *staged = PyList_New(0), *rest = PyList_New(0);
    if (owners == NULL || staged == NULL || rest == NULL || event_fds(events, fds) < 0)
        goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = PyTuple_GET_ITEM(PyTuple_GET_ITEM(events, i), 0);
        PyObject *connection = PyDict_GetItemWithError(args[1], key);
        if (connection == NULL) {
            if (PyErr_Occurred()) goto error;
            continue; /* removed meanwhile: as the selector's loop skips it */
        }
        Py_INCREF(connection); /* the dict may change under the calls below */
        PyObject *entry = PyDict_GetItemWithError(args[2], key);
        int done;
        if (entry == NULL && PyErr_Occurred())
            done = -1;
        else if (entry == NULL || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3 ||
                 PyTuple_GET_ITEM(entry, 0) != connection || fds[i] < 0)
            done = add_rest(rest, connection, Py_Ellipsis);
        else {
            Py_INCREF(entry);
            done = read_one(connection, entry, fds[i], (PyTypeObject *)args[3], owners, staged,
                            rest);
            Py_DECREF(entry);
        }
        Py_DECREF(connection);
        if (done < 0) goto error;
    }
    PyMem_Free(fds);
    Py_DECREF(events);
    return Py_BuildValue("(NNN)", owners, staged, rest);
error:
    PyMem_Free(fds);
    Py_DECREF(events);
    Py_XDECREF(owners);
    Py_XDECREF(staged);
    Py_XDECREF(rest);
    return NULL;
}
