/* serve_lone: a lock-step client's lone requests served in one call, sleep after sleep, without
 * going back to the selector's Python between them (remoting/lone_loop.py serve_lone_reference,
 * the twin, says what it returns), and LoneLooks, the selector's count of whether looks after a
 * lone read find work, as a C type both the loop and the selector's Python use.
 *
 * Under sync sends on 8 connections almost every request took one iteration of the selector's
 * loop: the idle sleep naming one socket, LoneLooks' looked and look_again, _read_lone's dict
 * lookups and answer_lone, the type check: ~40 Python bytecodes a request around two C calls.
 * Here the loop runs for as long as that common case holds (each sleep answered by exactly one
 * ready socket, a plain connection of the selector's, answer_lone's True), calling the same two
 * C functions (idle_wait, answer_lone) with the same arguments in the same order, and hands
 * anything else back at the step where it stopped: the selector carries on from there as its
 * own loop would have. A sleep that names several sockets is served here too when they are a
 * round's common case (round_loop.c serve_round), so lock-step senders on many connections stay
 * in this loop as well. Signals are checked before each further sleep, as the interpreter's
 * loop would between bytecodes. */
#include "codec.h"

#include <structmember.h>

typedef struct {
    PyObject_HEAD
    long long share;       /* of looks after lone reads that found work, in 1/LOOKS_ONE */
    long long since_probe; /* lone passes since the last probe, while looks do not pay */
} LoneLooks;

static int looks_paying(LoneLooks *looks) { return looks->share >= LOOKS_ENOUGH; }

static int looks_look_again(LoneLooks *looks) {
    if (looks_paying(looks)) return 1;
    if (++looks->since_probe < LOOKS_PROBE_EVERY) return 0;
    looks->since_probe = 0;
    return 1;
}

/* As Python's >> on ints: a floor (gcc's >> on a negative signed value is arithmetic). */
static void looks_looked(LoneLooks *looks, int found) {
    looks->share += ((found ? LOOKS_ONE : 0) - looks->share) >> LOOKS_WEIGHT_SHIFT;
}

static PyObject *paying(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(looks_paying((LoneLooks *)self));
}

static PyObject *look_again(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(looks_look_again((LoneLooks *)self));
}

static PyObject *looked(PyObject *self, PyObject *found) {
    int truth = PyObject_IsTrue(found);
    if (truth < 0) return NULL;
    looks_looked((LoneLooks *)self, truth);
    Py_RETURN_NONE;
}

static PyObject *looks_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) != 0 || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) {
        PyErr_SetString(PyExc_TypeError, "LoneLooks() takes no arguments");
        return NULL;
    }
    LoneLooks *looks = (LoneLooks *)type->tp_alloc(type, 0);
    if (looks != NULL) looks->share = LOOKS_ONE;
    return (PyObject *)looks;
}

static PyMethodDef looks_methods[] = {
    {"paying", paying, METH_NOARGS, "Whether such looks have lately been finding work."},
    {"look_again", look_again, METH_NOARGS,
     "Whether to look again after a lone pass (a probe counted when they do not pay)."},
    {"looked", looked, METH_O, "What the look after a lone pass found."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef looks_members[] = {
    {"share", T_LONGLONG, offsetof(LoneLooks, share), 0, NULL},
    {"since_probe", T_LONGLONG, offsetof(LoneLooks, since_probe), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject LoneLooksType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "remoting._codec.LoneLooks",
    .tp_basicsize = sizeof(LoneLooks),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The selector's LoneLooks (remoting/lone_loop.py LoneLooksReference, the twin).",
    .tp_new = looks_new,
    .tp_methods = looks_methods,
    .tp_members = looks_members,
};

/* The one ready socket's answer: NULL with *out set to what the selector finishes (the
 * descriptor alone when it is not a plain connection of the selector's, the connection with
 * answer_lone's result when not True or with the Exception it raised), NULL with *out NULL on
 * an error that propagates, Py_True (borrowed: served) otherwise. */
static PyObject *answer_one(PyObject *fd, PyObject *connections, PyObject *plain,
                            PyObject *kinds, PyObject **out) {
    *out = NULL;
    PyObject *connection = PyDict_GetItemWithError(connections, fd);
    PyObject *entry = connection == NULL ? NULL : PyDict_GetItemWithError(plain, fd);
    if (PyErr_Occurred()) return NULL;
    if (entry == NULL || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3 ||
        PyTuple_GET_ITEM(entry, 0) != connection) {
        *out = PyTuple_Pack(1, fd);
        return NULL;
    }
    Py_INCREF(entry); /* the handler may take it out of the selector's tables */
    connection = PyTuple_GET_ITEM(entry, 0);
    PyObject *call[3] = {entry, fd, kinds};
    PyObject *answer = answer_lone(NULL, call, 3);
    if (answer == Py_True) {
        Py_DECREF(answer);
        Py_DECREF(entry);
        return Py_True;
    }
    if (answer != NULL)
        *out = Py_BuildValue("(ON)", connection, answer);
    else if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyObject *exc = take_error();
        *out = exc == NULL ? NULL : Py_BuildValue("(OON)", connection, Py_None, exc);
    }
    Py_DECREF(entry);
    return NULL;
}

/* What serve_lone served last: what it returns when a sleep then declines. */
enum { SERVED_NONE, SERVED_LONE, SERVED_ROUND };

/* serve_lone(looks, idle_state, connections, plain, kinds, flush, resumed, lone_look,
 * round_handler) -> None | bool | Ellipsis | [(fd, mask), ...] | (fd,) | (connection, answer)
 * | (connection, None, exc) | (step, owners, staged, what). */
PyObject *serve_lone(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9 || !PyObject_TypeCheck(args[0], &LoneLooksType) ||
        !PyDict_CheckExact(args[2]) || !PyDict_CheckExact(args[3]) ||
        !PyTuple_CheckExact(args[4]) || PyTuple_GET_SIZE(args[4]) != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "serve_lone(looks, idle_state, connections, plain, kinds, flush, "
                        "resumed, lone_look, round_handler)");
        return NULL;
    }
    LoneLooks *looks = (LoneLooks *)args[0];
    int lone_look = PyObject_IsTrue(args[7]);
    if (lone_look < 0) return NULL;
    IdleState idle;
    if (idle_state(args[1], &idle) < 0) return NULL;
    int resumed = PyObject_IsTrue(args[6]);
    if (resumed < 0) return NULL;
    /* idle_wait by its parts: the sleep's events stay here, a lone one's socket goes to
     * answer_one as its descriptor, and only several (a round) make idle_wait's list. */
    struct epoll_event events[IDLE_MAX_EVENTS];
    for (int served = SERVED_NONE;;) {
        if (served && PyErr_CheckSignals() < 0) return NULL;
        int n = idle_wait_events(&idle, args[5], resumed, events);
        if (n < 0) return NULL;
        if (n == 0) {
            if (served == SERVED_NONE) Py_RETURN_NONE;
            /* After a round the selector looks again after a checkpoint, as after a pass of
             * several reads: not a lone look. */
            return served == SERVED_ROUND ? Py_NewRef(Py_Ellipsis) : PyBool_FromLong(lone_look);
        }
        /* In place of a look after a lone read: one that found nothing (the selector's
         * loop says why). */
        if (lone_look) looks_looked(looks, 0);
        resumed = 0;
        if (n != 1) {
            PyObject *ready = idle_events_list(events, n);
            if (ready == NULL || args[8] == Py_None) return ready;
            PyObject *out = serve_round(ready, args[2], args[3], args[4], args[8]);
            Py_DECREF(ready);
            if (out != Py_True) return out;
            /* A pass of several reads is not a lone read: no lone look follows it. */
            served = SERVED_ROUND;
            lone_look = 0;
            continue;
        }
        PyObject *fd = PyLong_FromLong(events[0].data.fd);
        if (fd == NULL) return NULL;
        PyObject *out;
        PyObject *answered = answer_one(fd, args[2], args[3], args[4], &out);
        Py_DECREF(fd);
        if (answered == NULL) return out;
        lone_look = looks_look_again(looks);
        served = SERVED_LONE;
    }
}
