/* RoundSend: the broker's round processor (RemotingServer.register_round) for a selector
 * round of plain sends, every ready connection's lone SEND_MESSAGE or SEND_MESSAGE_V2, with
 * no Python frame in its common case (issue 27, roundsend round). What it stands in for, and
 * hands everything else to, is send_plain.plain_round(processor, connections, requests),
 * which read the same gates and called the same two C functions in ~105 bytecodes a round.
 *
 * Each call reads every gate again where Python keeps it (send_gates, lone_send.c:
 * plain_mode, PERM_WRITE, not fenced, no in-sync slaves asked) and each connection's kept
 * born host (an exact, non-empty tuple). The ACL hook is not its to ask: handle_round asks a
 * round processor only when the server has none, and with ACL on every request is checked
 * in Python. Then plain_send_rows and plain_pass with plain_round's arguments, and the
 * results list as plain_round returns it. Anything else goes the Python way, from where it
 * stopped:
 *   - a gate closed, an odd value in one or a read that raises an Exception, a connection
 *     without a kept born host (its first send) or of another kind, a call of another shape:
 *     plain_round from its start (nothing was changed: these are reads);
 *   - plain_send_rows' None (a request that is not a plain send): None, as plain_round
 *     returns it (the server's general path then judges the round);
 *   - plain_pass' other returns (None, what follows an append, fewer results than
 *     requests): `rest` (send_plain.round_rest), plain_round's own tail after the pass.
 * An exception from the rows, the pass or `rest` propagates, as out of plain_round (the
 * server answers every request of the round with it).
 *
 * Its `serve` method is what the server hands its selector in place of handle_round
 * (RemotingServer.register_round's handler): handle_round's test (no ACL hook, this the
 * server's round processor, both read at each call) and its ends (an Exception: every
 * request answers it; None: the server's _handle_runs) in C, else handle_round itself. So a
 * common round runs no Python frame between the selector and the store. Pure mode builds
 * none of this (send_plain.round_front): the server calls plain_round itself, the
 * reference, from handle_round. */
#include "store.h"

enum { N_BORN_HOST, N_AUTHORIZE, N_ROUND_PROCESSOR, N_HANDLE_ROUND, N_HANDLE_RUNS, N_NAMES };
static const char *const spelled[N_NAMES] = {
    "born_host", "authorize", "round_processor", "handle_round", "_handle_runs",
};
static PyObject *names[N_NAMES];
static SlotCache sites[N_NAMES];

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    /* fixed when made: the server, the send processor, the codec's plain_send_rows and the
     * arguments plain_round passes that are module constants, plain_round itself and its
     * tail */
    PyObject *server, *processor, *plain_rows, *topics, *specials, *pieces, *heard, *round,
        *rest;
    long perm_write;
} RoundSend;

/* plain_round(processor, *args, **kwargs): the whole round in Python. */
static PyObject *fall_back(RoundSend *self, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    Py_ssize_t total = n + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    PyObject *small[4], **call = total < 4 ? small : PyMem_New(PyObject *, total + 1);
    if (call == NULL) return PyErr_NoMemory();
    call[0] = self->processor;
    for (Py_ssize_t i = 0; i < total; i++) call[i + 1] = args[i];
    PyObject *result = PyObject_Vectorcall(self->round, call, n + 1, kwnames);
    if (call != small) PyMem_Free(call);
    return result;
}

/* Each connection's kept born host, in a new list in *hosts: 1, or 0 when the round is not
 * one this takes whole (not two lists of one length, a connection with no kept host or one
 * that is not an exact tuple), -1 on a failed read. */
static int round_hosts(PyObject *connections, PyObject *requests, PyObject **hosts) {
    if (!PyList_CheckExact(connections) || !PyList_CheckExact(requests)) return 0;
    Py_ssize_t n = PyList_GET_SIZE(connections);
    if (n == 0 || PyList_GET_SIZE(requests) != n) return 0;
    PyObject *list = PyList_New(n);
    if (list == NULL) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* a read may run Python (a property on a connection of another kind), which may
         * change the list: held, and its length checked before each item is taken */
        if (PyList_GET_SIZE(connections) != n) {
            Py_DECREF(list);
            return 0;
        }
        PyObject *connection = Py_NewRef(PyList_GET_ITEM(connections, i));
        PyObject *host = slot_get(connection, names[N_BORN_HOST], &sites[N_BORN_HOST]);
        Py_DECREF(connection);
        if (host == NULL || !PyTuple_CheckExact(host) || PyTuple_GET_SIZE(host) == 0) {
            Py_XDECREF(host);
            Py_DECREF(list);
            return host == NULL ? -1 : 0;
        }
        PyList_SET_ITEM(list, i, host);
    }
    *hosts = list;
    return 1;
}

/* The round's rows, pass and results, the gates open: the results (a list, or None when a
 * request is not a plain send), or NULL on an error. */
static PyObject *store_round(RoundSend *self, PyObject *const *args, SendTaken *t,
                             PyObject *hosts) {
    PyObject *row_args[6] = {args[1], self->topics, t->lookup, self->specials, t->cluster, hosts};
    PyObject *rows = PyObject_Vectorcall(self->plain_rows, row_args, 6, NULL);
    if (rows == NULL || rows == Py_None) return rows;
    PyObject *pass_args[6] = {t->store, rows, self->pieces, t->put_items, t->cluster,
                              self->heard};
    PyObject *results = plain_pass(NULL, pass_args, 6);
    if (results != NULL &&
        !(PyList_CheckExact(results) && PyList_GET_SIZE(results) >= PyList_GET_SIZE(args[1]))) {
        PyObject *rest_args[6] = {self->processor, args[0], args[1], rows, results, t->cluster};
        PyObject *passed = results;
        results = PyObject_Vectorcall(self->rest, rest_args, 6, NULL);
        Py_DECREF(passed);
    }
    Py_DECREF(rows);
    return results;
}

static PyObject *round_send_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames) {
    RoundSend *self = (RoundSend *)callable;
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL)
        return fall_back(self, args, nargsf, kwnames);
    SendTaken t = {0};
    PyObject *hosts = NULL, *results = NULL;
    int open = send_gates(self->processor, self->perm_write, NULL, &t);
    if (open > 0) open = round_hosts(args[0], args[1], &hosts);
    if (open < 0) open = send_closed_by_error();
    if (open > 0) {
        results = store_round(self, args, &t, hosts);
        if (results == NULL) open = -1;
    }
    send_taken_release(&t);
    Py_XDECREF(hosts);
    if (open < 0) return NULL;
    return open ? results : fall_back(self, args, nargsf, kwnames);
}

/* server.<name>(*args, **kwargs): handle_round, or what it runs past its round processor. */
static PyObject *server_call(RoundSend *self, int name, PyObject *const *args, Py_ssize_t n,
                             PyObject *kwnames) {
    Py_ssize_t total = n + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    PyObject *small[4], **call = total < 4 ? small : PyMem_New(PyObject *, total + 1);
    if (call == NULL) return PyErr_NoMemory();
    call[0] = self->server;
    for (Py_ssize_t i = 0; i < total; i++) call[i + 1] = args[i];
    PyObject *result = PyObject_VectorcallMethod(names[name], call, n + 1, kwnames);
    if (call != small) PyMem_Free(call);
    return result;
}

/* handle_round's own test: no ACL hook, and this the round processor it would ask. 1 open,
 * 0 closed, -1 an error. */
static int server_gates(RoundSend *self) {
    PyObject *authorize = slot_get(self->server, names[N_AUTHORIZE], &sites[N_AUTHORIZE]);
    if (authorize == NULL) return -1;
    Py_DECREF(authorize);
    if (authorize != Py_None) return 0;
    PyObject *whole = slot_get(self->server, names[N_ROUND_PROCESSOR], &sites[N_ROUND_PROCESSOR]);
    if (whole == NULL) return -1;
    Py_DECREF(whole);
    return whole == (PyObject *)self;
}

/* [exc] * n for the Exception set: handle_round's answer to a round processor that raised. */
static PyObject *every_one_fails(Py_ssize_t n) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL) PyException_SetTraceback(value, traceback);
    PyObject *results = PyList_New(n);
    for (Py_ssize_t i = 0; results != NULL && i < n; i++)
        PyList_SET_ITEM(results, i, Py_NewRef(value));
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    return results;
}

/* RoundSend.serve(connections, requests): the server's handle_round, given to the selector
 * in its place (RemotingServer.register_round's handler). With no ACL hook and this the
 * server's round processor, the round as handle_round asks it of this, then _handle_runs
 * when that is None; else handle_round itself, from its start (nothing was done: these are
 * reads). */
static PyObject *round_send_serve(RoundSend *self, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames) {
    int open = nargs == 2 && kwnames == NULL && PyList_CheckExact(args[1]) ? server_gates(self)
                                                                           : 0;
    if (open < 0) open = send_closed_by_error();
    if (open <= 0)
        return open < 0 ? NULL : server_call(self, N_HANDLE_ROUND, args, nargs, kwnames);
    PyObject *results = round_send_call((PyObject *)self, args, 2, NULL);
    if (results == NULL)
        return PyErr_ExceptionMatches(PyExc_Exception)
                   ? every_one_fails(PyList_GET_SIZE(args[1]))
                   : NULL;
    if (results != Py_None) return results;
    Py_DECREF(results);
    return server_call(self, N_HANDLE_RUNS, args, 2, NULL);
}

static PyMethodDef round_send_methods[] = {
    {"serve", (PyCFunction)(void (*)(void))round_send_serve, METH_FASTCALL | METH_KEYWORDS,
     "serve(connections, requests): the server's handle_round, the round taken here when it "
     "would ask this."},
    {NULL, NULL, 0, NULL},
};

static PyObject *round_send_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static const char usage[] =
        "RoundSend(server, processor, plain_rows, topics set, specials frozenset, pieces "
        "tuple, heard set, plain_round, rest, perm_write)";
    PyObject *o[9];
    long perm;
    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) ||
        !PyArg_ParseTuple(args, "OOOOOOOOOl", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &perm) ||
        !PyCallable_Check(o[2]) || !PySet_CheckExact(o[3]) || !PyFrozenSet_CheckExact(o[4]) ||
        !PyTuple_CheckExact(o[5]) || !PyAnySet_Check(o[6]) || !PyCallable_Check(o[7]) ||
        !PyCallable_Check(o[8]) || perm <= 0) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    if (intern_table(names, spelled, N_NAMES) < 0) return NULL;
    RoundSend *self = (RoundSend *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    PyObject **fields[9] = {&self->server, &self->processor, &self->plain_rows, &self->topics,
                            &self->specials, &self->pieces, &self->heard, &self->round,
                            &self->rest};
    for (int i = 0; i < 9; i++) *fields[i] = Py_NewRef(o[i]);
    self->perm_write = perm;
    self->vectorcall = round_send_call;
    return (PyObject *)self;
}

static int round_send_traverse(RoundSend *self, visitproc visit, void *arg) {
    Py_VISIT(self->server);
    Py_VISIT(self->processor);
    Py_VISIT(self->plain_rows);
    Py_VISIT(self->topics);
    Py_VISIT(self->specials);
    Py_VISIT(self->pieces);
    Py_VISIT(self->heard);
    Py_VISIT(self->round);
    Py_VISIT(self->rest);
    return 0;
}

static int round_send_clear(RoundSend *self) {
    Py_CLEAR(self->server);
    Py_CLEAR(self->processor);
    Py_CLEAR(self->plain_rows);
    Py_CLEAR(self->topics);
    Py_CLEAR(self->specials);
    Py_CLEAR(self->pieces);
    Py_CLEAR(self->heard);
    Py_CLEAR(self->round);
    Py_CLEAR(self->rest);
    return 0;
}

static void round_send_dealloc(RoundSend *self) {
    PyObject_GC_UnTrack(self);
    round_send_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject RoundSendType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "broker.store._native.RoundSend",
    .tp_basicsize = sizeof(RoundSend),
    .tp_dealloc = (destructor)round_send_dealloc,
    .tp_vectorcall_offset = offsetof(RoundSend, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A server's round processor answering a selector round of plain sends in C, "
              "else as plain_round (broker/processor/send_plain.py round_front).",
    .tp_traverse = (traverseproc)round_send_traverse,
    .tp_clear = (inquiry)round_send_clear,
    .tp_methods = round_send_methods,
    .tp_new = round_send_new,
};
