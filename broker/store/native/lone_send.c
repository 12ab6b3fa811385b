/* LoneSend: a server's request handler that answers a lone plain send (a sync client's
 * SEND_MESSAGE or SEND_MESSAGE_V2) with no Python frame in its common case (issue 27,
 * lonesend round). The chain it stands in for, and falls back to, is the server's own
 * handle_request > SendMessageProcessor.handle > plain_send_reply > broker_takes_plain >
 * _store_plain (broker/processor/send_plain.py): ~150 bytecodes and six frames a send that
 * read the same gates and called the same two C functions as this does.
 *
 * Each call reads every gate again from the objects Python keeps them in (nothing is cached across
 * calls but the code it stands in for and constants; the objects it keeps, the request list, the
 * reply and the processor table's key objects, hold no gate's value): the request's code is
 * SEND_MESSAGE or SEND_MESSAGE_V2, the server has no ACL hook (`authorize` None: with ACL on,
 * every request takes the Python path, where it is checked), the server's processor for the code
 * is still this processor's `handle`, the processor's `plain_mode`, the broker's permission has
 * PERM_WRITE, it is not fenced, it asks for no in-sync slaves, the connection keeps its born host.
 * Then plain_send_rows (the codec's, handed in) and plain_pass (this module's),
 * with the arguments _store_plain gives them. Its reply is the chain's: EncodedReply(0,
 * replies). Anything else goes the Python way, from where it stopped:
 *   - a gate closed, or an odd value in one (a read that raises an Exception included): the
 *     server's handle_request, looked up on the server at each call, from its start (nothing
 *     was changed: the gates are reads);
 *   - plain_send_rows' None (a request that is not plain): handle_request too (the rows are
 *     a pure function of the request and the tables, which it reads again);
 *   - plain_pass' other returns (None, what follows an append, an empty list): `rest`
 *     (send_plain.lone_rest), which does what the chain does after plain_pass.
 * An exception from plain_send_rows, plain_pass or `rest` propagates as it did out of the
 * chain (answer_lone hands it to _failure_response). Pure mode builds none of this: the
 * servers call handle_request (send_plain.lone_front says when one is built).
 *
 * Unlike the rest of the module this calls back into Python, but only to fall back; and the
 * reply is made as EncodedReply's __init__ makes it (its two slots set), which the tests hold
 * to the chain's reply slot by slot. */
#include "store.h"

enum {
    N_CODE, N_AUTHORIZE, N_PROCESSORS, N_PLAIN_MODE, N_BROKER, N_CONFIG, N_PERMISSION,
    N_REGISTRAR, N_FENCED, N_MIN_IN_SYNC, N_BORN_HOST, N_CLUSTER, N_QUEUE_BOUNDS, N_LOOKUP,
    N_STORE, N_STATS, N_PUT_ITEMS, N_BUFFERS, N_HANDLE_REQUEST, N_NAMES,
};
static const char *const spelled[N_NAMES] = {
    "code", "authorize", "processors", "plain_mode", "broker", "config", "broker_permission",
    "registrar", "fenced", "min_in_sync_slaves", "born_host", "broker_cluster_name",
    "queue_bounds", "lookup", "store", "stats", "put_items", "buffers", "handle_request",
};
static PyObject *names[N_NAMES];
static SlotCache sites[N_NAMES], reply_sites[2];

static int intern_names(void) { return intern_table(names, spelled, N_NAMES); }

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    /* what it stands in for, fixed when made: the server, the send processor and the function
     * its handle binds; the codec's plain_send_rows and the arguments _store_plain passes
     * that are module constants; EncodedReply; send_plain.lone_rest */
    PyObject *server, *processor, *handle, *plain_rows, *topics, *specials, *pieces, *heard,
        *reply_type, *rest;
    long code_v1, code_v2, perm_write;
    /* Objects a send made only for C to read back, kept for the next send (NULL: none yet):
     * the one-request list handed to plain_rows (out of here while in use, so a send inside
     * a send makes its own), and the last reply, used again once nobody else holds it (never
     * for a reply type with a __dict__ or weak references, where what was kept could be seen
     * from outside). ~0.3k of a send's instructions were their allocations and deallocations
     * (callgrind). */
    PyObject *kept_requests, *kept_reply;
    int reuse_reply;
    /* The processor table's own key objects for the two codes, found once (table_key). */
    PyObject *table_keys[2];
} LoneSend;

void send_taken_release(SendTaken *t) {
    Py_XDECREF(t->config);
    Py_XDECREF(t->cluster);
    Py_XDECREF(t->host);
    Py_XDECREF(t->lookup);
    Py_XDECREF(t->store);
    Py_XDECREF(t->put_items);
}

static PyObject *get(PyObject *o, int name) { return slot_get(o, names[name], &sites[name]); }

/* o.<name> is `want` (1), is not (0), -1 on an error. */
static int get_is(PyObject *o, int name, PyObject *want) {
    PyObject *v = get(o, name);
    if (v == NULL) return -1;
    Py_DECREF(v);
    return v == want;
}

/* o.<name> as an exact int's value, in *out (1), or 0 when it is not one; -1 on an error. */
static int get_long(PyObject *o, int name, long *out) {
    PyObject *v = get(o, name);
    if (v == NULL) return -1;
    int overflow = 0;
    *out = PyLong_CheckExact(v) ? PyLong_AsLongAndOverflow(v, &overflow) : 0;
    int exact = PyLong_CheckExact(v) && !overflow;
    Py_DECREF(v);
    return exact;
}

/* The key to look the code up with in the processor table: the table's own int object for
 * it when one was found, so the lookup meets it by identity (the request's code is another
 * object: an int compare, ~0.15k a send, callgrind). Looked for once; a table rebuilt since
 * finds the entry by equality as it would with the request's code, so what the lookup answers
 * never depends on this. A new reference. */
static PyObject *table_key(LoneSend *self, PyObject *table, PyObject *code, long value) {
    PyObject **kept = &self->table_keys[value == self->code_v1 ? 0 : 1];
    if (*kept == NULL) {
        Py_ssize_t pos = 0;
        PyObject *key, *entry;
        while (PyDict_Next(table, &pos, &key, &entry)) {
            int overflow = 0;
            if (PyLong_CheckExact(key) && PyLong_AsLongAndOverflow(key, &overflow) == value &&
                !overflow) {
                *kept = Py_NewRef(key);
                break;
            }
        }
        if (*kept == NULL) *kept = Py_NewRef(code);
    }
    return Py_NewRef(*kept);
}

/* The server side of the gates: the code, no ACL, the processor table's entry the send
 * processor's handle. 1 open, 0 closed, -1 an error. */
static int server_gates(LoneSend *self, PyObject *request) {
    PyObject *code = get(request, N_CODE);
    if (code == NULL) return -1;
    int overflow = 0;
    long value = PyLong_CheckExact(code) ? PyLong_AsLongAndOverflow(code, &overflow) : 0;
    int open = PyLong_CheckExact(code) && !overflow &&
               (value == self->code_v1 || value == self->code_v2);
    if (open) open = get_is(self->server, N_AUTHORIZE, Py_None);
    PyObject *table = open > 0 ? get(self->server, N_PROCESSORS) : NULL;
    if (table != NULL) {
        PyObject *key = PyDict_CheckExact(table) ? table_key(self, table, code, value) : NULL;
        PyObject *entry = key != NULL ? PyDict_GetItemWithError(table, key) : NULL;
        Py_XDECREF(key);
        open = entry != NULL && PyMethod_Check(entry) &&
               PyMethod_GET_SELF(entry) == self->processor &&
               PyMethod_GET_FUNCTION(entry) == self->handle;
        if (PyErr_Occurred()) open = -1;
        Py_DECREF(table);
    } else if (open > 0)
        open = -1;
    Py_DECREF(code);
    return open;
}

/* broker_takes_plain's gates (in its order) and, given a connection, its kept born host.
 * 1 open, 0 closed, -1 an error. */
static int broker_gates(long perm_write, PyObject *broker, PyObject *connection, SendTaken *t) {
    long value;
    int open = get_long(t->config, N_PERMISSION, &value);
    if (open <= 0 || !(value & perm_write)) return open < 0 ? -1 : 0;
    PyObject *registrar = get(broker, N_REGISTRAR);
    if (registrar == NULL) return -1;
    open = get_is(registrar, N_FENCED, Py_None);
    Py_DECREF(registrar);
    if (open > 0) open = get_long(broker, N_MIN_IN_SYNC, &value);
    if (open <= 0 || value != 0) return open < 0 ? -1 : 0;
    if (connection == NULL) return 1;
    if ((t->host = get(connection, N_BORN_HOST)) == NULL) return -1;
    return PyTuple_CheckExact(t->host) && PyTuple_GET_SIZE(t->host) > 0;
}

/* broker_takes_plain's gates, then what _store_plain reads: 1 with `t` filled, 0 closed, -1
 * an error (`t` is released by the caller either way). With a connection, its kept born host
 * too (LoneSend); without, the round's caller reads each connection's (RoundSend). */
int send_gates(PyObject *processor, long perm_write, PyObject *connection, SendTaken *t) {
    if (intern_names() < 0) return -1;
    int open = get_is(processor, N_PLAIN_MODE, Py_True);
    if (open <= 0) return open;
    PyObject *broker = get(processor, N_BROKER), *bounds = NULL, *stats = NULL;
    if (broker == NULL) return -1;
    open = -1;
    if ((t->config = get(broker, N_CONFIG)) != NULL &&
        (open = broker_gates(perm_write, broker, connection, t)) > 0) {
        open = -1;
        if ((t->cluster = get(t->config, N_CLUSTER)) != NULL &&
            (bounds = get(processor, N_QUEUE_BOUNDS)) != NULL &&
            (t->lookup = get(bounds, N_LOOKUP)) != NULL &&
            (t->store = get(broker, N_STORE)) != NULL && (stats = get(broker, N_STATS)) != NULL &&
            (t->put_items = get(stats, N_PUT_ITEMS)) != NULL)
            open = 1;
    }
    Py_DECREF(broker);
    Py_XDECREF(bounds);
    Py_XDECREF(stats);
    return open;
}

/* Every gate of a lone send: the server's, then send_gates with the connection. */
static int gates(LoneSend *self, PyObject *connection, PyObject *request, SendTaken *t) {
    int open = server_gates(self, request);
    if (open <= 0) return open;
    return send_gates(self->processor, self->perm_write, connection, t);
}

/* EncodedReply(0, replies), its slots set as its __init__ sets them: the kept reply when
 * only this front holds it (what the last caller had of it is gone), else a new one. */
static PyObject *encoded_reply(LoneSend *self, PyObject *replies) {
    PyTypeObject *type = (PyTypeObject *)self->reply_type;
    PyObject *reply = self->kept_reply != NULL && Py_REFCNT(self->kept_reply) == 1
                          ? Py_NewRef(self->kept_reply) : type->tp_alloc(type, 0);
    if (reply == NULL) return NULL;
    if (self->reuse_reply && reply != self->kept_reply)
        Py_XSETREF(self->kept_reply, Py_NewRef(reply));
    PyObject *zero = PyLong_FromLong(0);
    if (zero == NULL || slot_set(reply, names[N_CODE], zero, &reply_sites[0]) < 0 ||
        slot_set(reply, names[N_BUFFERS], replies, &reply_sites[1]) < 0)
        Py_CLEAR(reply);
    Py_XDECREF(zero);
    return reply;
}

/* [request] for plain_rows: the kept list when nobody else holds it, else a new one. */
static PyObject *take_requests(LoneSend *self, PyObject *request) {
    PyObject *requests = self->kept_requests;
    self->kept_requests = NULL;
    if (requests != NULL && Py_REFCNT(requests) == 1 && PyList_GET_SIZE(requests) == 1) {
        Py_SETREF(PyList_GET_ITEM(requests, 0), Py_NewRef(request));
        return requests;
    }
    Py_XDECREF(requests);
    if ((requests = PyList_New(1)) != NULL) PyList_SET_ITEM(requests, 0, Py_NewRef(request));
    return requests;
}

/* The list back, the request out of it (a list plain_rows kept is left to it). */
static void keep_requests(LoneSend *self, PyObject *requests) {
    if (Py_REFCNT(requests) == 1 && PyList_GET_SIZE(requests) == 1 &&
        self->kept_requests == NULL) {
        Py_SETREF(PyList_GET_ITEM(requests, 0), Py_NewRef(Py_None));
        self->kept_requests = requests;
    } else {
        Py_DECREF(requests);
    }
}

/* The plain send's rows, pass and reply, the gates open: 1 with the answer in *answer, 0
 * when the rows say it is not a plain send (nothing done), -1 on an error. */
static int store_plain(LoneSend *self, PyObject *connection, PyObject *request, SendTaken *t,
                       PyObject **answer) {
    PyObject *requests = take_requests(self, request);
    if (requests == NULL) return -1;
    PyObject *row_args[6] = {requests, self->topics, t->lookup, self->specials, t->cluster,
                             t->host};
    PyObject *rows = PyObject_Vectorcall(self->plain_rows, row_args, 6, NULL);
    keep_requests(self, requests);
    if (rows == NULL || rows == Py_None) {
        Py_XDECREF(rows);
        return rows == NULL ? -1 : 0;
    }
    PyObject *pass_args[6] = {t->store, rows, self->pieces, t->put_items, t->cluster,
                              self->heard};
    PyObject *passed = plain_pass(NULL, pass_args, 6);
    if (passed != NULL && PyList_CheckExact(passed) && PyList_GET_SIZE(passed) > 0)
        *answer = encoded_reply(self, passed);
    else if (passed != NULL) {
        PyObject *rest_args[6] = {self->processor, connection, request, rows, passed,
                                  t->cluster};
        *answer = PyObject_Vectorcall(self->rest, rest_args, 6, NULL);
    }
    Py_DECREF(rows);
    Py_XDECREF(passed);
    return *answer == NULL ? -1 : 1;
}

/* The whole chain in Python: server.handle_request(connection, request). */
static PyObject *fall_back(LoneSend *self, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    Py_ssize_t total = n + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    PyObject *small[4], **call = total < 4 ? small : PyMem_New(PyObject *, total + 1);
    if (call == NULL) return PyErr_NoMemory();
    call[0] = self->server;
    for (Py_ssize_t i = 0; i < total; i++) call[i + 1] = args[i];
    PyObject *result = PyObject_VectorcallMethod(names[N_HANDLE_REQUEST], call, n + 1, kwnames);
    if (call != small) PyMem_Free(call);
    return result;
}

/* A failed read at a gate: closed (the error cleared) unless it is out of memory or not an
 * Exception (-1, left set); the Python path reads the same values and says what they are. */
int send_closed_by_error(void) {
    if (PyErr_ExceptionMatches(PyExc_MemoryError) || !PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyErr_Clear();
    return 0;
}

static PyObject *lone_send_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames) {
    LoneSend *self = (LoneSend *)callable;
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL)
        return fall_back(self, args, nargsf, kwnames);
    if (intern_names() < 0) return NULL;
    SendTaken t = {0};
    PyObject *answer = NULL;
    int open = gates(self, args[0], args[1], &t);
    if (open < 0) open = send_closed_by_error();
    if (open > 0) open = store_plain(self, args[0], args[1], &t, &answer);
    send_taken_release(&t);
    if (open < 0) return NULL;
    return open ? answer : fall_back(self, args, nargsf, kwnames);
}

static PyObject *lone_send_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static const char usage[] =
        "LoneSend(server, processor, handle function, plain_rows, topics set, specials "
        "frozenset, pieces tuple, heard set, reply type, rest, (code, code), perm_write)";
    PyObject *o[10];
    long codes[2], perm;
    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) ||
        !PyArg_ParseTuple(args, "OOOOOOOOOO(ll)l", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &o[7], &o[8], &o[9], &codes[0], &codes[1], &perm) ||
        !PyFunction_Check(o[2]) || !PyCallable_Check(o[3]) || !PySet_CheckExact(o[4]) ||
        !PyFrozenSet_CheckExact(o[5]) || !PyTuple_CheckExact(o[6]) || !PyAnySet_Check(o[7]) ||
        !PyType_Check(o[8]) || !PyCallable_Check(o[9]) || perm <= 0) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    if (intern_names() < 0) return NULL;
    /* the reply is made by setting its two slots (encoded_reply): a type without them is
     * refused here, before any send could be stored and then fail to be answered */
    PyTypeObject *reply = (PyTypeObject *)o[8];
    if (slot_member(reply, names[N_CODE]) == NULL || slot_member(reply, names[N_BUFFERS]) == NULL ||
        reply->tp_itemsize != 0) {
        PyErr_SetString(PyExc_TypeError, "LoneSend: the reply type must have code and buffers "
                                         "slots");
        return NULL;
    }
    LoneSend *self = (LoneSend *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    PyObject **fields[10] = {&self->server, &self->processor, &self->handle, &self->plain_rows,
                             &self->topics, &self->specials, &self->pieces, &self->heard,
                             &self->reply_type, &self->rest};
    for (int i = 0; i < 10; i++) *fields[i] = Py_NewRef(o[i]);
    self->code_v1 = codes[0];
    self->code_v2 = codes[1];
    self->perm_write = perm;
    self->reuse_reply = reply->tp_weaklistoffset == 0 && reply->tp_dictoffset == 0;
    self->vectorcall = lone_send_call;
    return (PyObject *)self;
}

static int lone_send_traverse(LoneSend *self, visitproc visit, void *arg) {
    Py_VISIT(self->server);
    Py_VISIT(self->processor);
    Py_VISIT(self->handle);
    Py_VISIT(self->plain_rows);
    Py_VISIT(self->topics);
    Py_VISIT(self->specials);
    Py_VISIT(self->pieces);
    Py_VISIT(self->heard);
    Py_VISIT(self->reply_type);
    Py_VISIT(self->rest);
    Py_VISIT(self->kept_requests);
    Py_VISIT(self->kept_reply);
    Py_VISIT(self->table_keys[0]);
    Py_VISIT(self->table_keys[1]);
    return 0;
}

static int lone_send_clear(LoneSend *self) {
    Py_CLEAR(self->server);
    Py_CLEAR(self->processor);
    Py_CLEAR(self->handle);
    Py_CLEAR(self->plain_rows);
    Py_CLEAR(self->topics);
    Py_CLEAR(self->specials);
    Py_CLEAR(self->pieces);
    Py_CLEAR(self->heard);
    Py_CLEAR(self->reply_type);
    Py_CLEAR(self->rest);
    Py_CLEAR(self->kept_requests);
    Py_CLEAR(self->kept_reply);
    Py_CLEAR(self->table_keys[0]);
    Py_CLEAR(self->table_keys[1]);
    return 0;
}

static void lone_send_dealloc(LoneSend *self) {
    PyObject_GC_UnTrack(self);
    lone_send_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject LoneSendType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "broker.store._native.LoneSend",
    .tp_basicsize = sizeof(LoneSend),
    .tp_dealloc = (destructor)lone_send_dealloc,
    .tp_vectorcall_offset = offsetof(LoneSend, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A server's request handler answering lone plain sends in C, else as its "
              "handle_request (broker/processor/send_plain.py lone_front).",
    .tp_traverse = (traverseproc)lone_send_traverse,
    .tp_clear = (inquiry)lone_send_clear,
    .tp_new = lone_send_new,
};
