/* The store's put counters and the broker's stats items as C int64s (issue 27, passstate):
 * PutCounters, the base of broker/store/stats.py StoreStats, and StatsCounter, the base of
 * broker/stats.py StatsItem. Their twins are broker/store/counters.py's PythonPutCounters and
 * PythonStatsCounter, which pure mode uses (tests/unit/store/test_counters.py holds the two to
 * the same values and errors).
 *
 * Why: plain_pass counts a round's sends in these. As Python ints each addition was a read, a
 * PyNumber_Add, a new int and a set through the generic attribute API (~20 a pass); here
 * plain_pass checks the type once and adds to the struct. Python reads and sets the same
 * fields through member descriptors (one place holds each value), so the stats services,
 * metrics, brokerStatus and statsAll read what they read before.
 *
 * The counters are Java's longs: an addition past int64 raises OverflowError, here and in the
 * twin, where Java would wrap (2^63 bytes or ns: not reached by a running broker). */
#include "store.h"

#include <structmember.h>

/* The bucket of a put's elapsed time in putMessageDistributeTime (bisect_left on the bounds in
 * ms; under 1 ms the first). */
int put_bucket(long long elapsed_ns) {
    if (elapsed_ns < 1000000) return 0;
    long long ms = elapsed_ns / 1000000;
    int i = 0;
    while (i < PUT_BUCKETS && put_bucket_bounds_ms[i] < ms) i++;
    return i;
}

static int overflowed(void) {
    PyErr_SetString(PyExc_OverflowError, "a put counter past int64");
    return -1;
}

int put_counters_add(PutCounts *c, long long messages, long long size) {
    long long times, bytes;
    if (__builtin_add_overflow(c->times_total, messages, &times) ||
        __builtin_add_overflow(c->size_total, size, &bytes))
        return overflowed();
    c->times_total = times;
    c->size_total = bytes;
    return 0;
}

int put_counters_times(PutCounts *c, long long elapsed_ns, long long puts) {
    long long spent, sum, bucket;
    int at = put_bucket(elapsed_ns);
    if (__builtin_mul_overflow(elapsed_ns, puts, &spent) ||
        __builtin_add_overflow(c->time_sum_ns, spent, &sum) ||
        __builtin_add_overflow(c->distribution[at], puts, &bucket))
        return overflowed();
    c->time_sum_ns = sum;
    c->distribution[at] = bucket;
    if (elapsed_ns > c->time_max_ns) c->time_max_ns = elapsed_ns;
    return 0;
}

/* n int64 arguments of a FASTCALL method, or -1 with TypeError/OverflowError. */
static int int_args(PyObject *const *args, Py_ssize_t nargs, int n, long long *out,
                    const char *usage) {
    if (nargs != n) {
        PyErr_Format(PyExc_TypeError, "%s", usage);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (!PyLong_Check(args[i])) {
            PyErr_Format(PyExc_TypeError, "%s", usage);
            return -1;
        }
        if ((out[i] = as_long_long(args[i])) == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

static PyObject *on_put(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long v[2];
    if (int_args(args, nargs, 2, v, "on_put(count, size)") < 0 ||
        put_counters_add(&((PutCounters *)self)->n, v[0], v[1]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *on_put_times(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long v[2];
    if (int_args(args, nargs, 2, v, "on_put_times(elapsed_ns, count)") < 0 ||
        put_counters_times(&((PutCounters *)self)->n, v[0], v[1]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *on_put_time(PyObject *self, PyObject *arg) {
    long long v[1];
    if (int_args(&arg, 1, 1, v, "on_put_time(elapsed_ns)") < 0 ||
        put_counters_times(&((PutCounters *)self)->n, v[0], 1) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* on_put and on_put_times in one call: both checked before either adds. */
static PyObject *on_put_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long v[4];
    if (int_args(args, nargs, 4, v, "on_put_run(messages, size, elapsed_ns, puts)") < 0)
        return NULL;
    PutCounts *c = &((PutCounters *)self)->n, was = *c;
    if (put_counters_add(c, v[0], v[1]) < 0 || put_counters_times(c, v[2], v[3]) < 0) {
        *c = was;
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *distribution(PyObject *self, void *unused) {
    PutCounts *c = &((PutCounters *)self)->n;
    PyObject *list = PyList_New(PUT_BUCKETS + 1);
    for (int i = 0; list != NULL && i <= PUT_BUCKETS; i++) {
        PyObject *n = PyLong_FromLongLong(c->distribution[i]);
        if (n == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, n);
    }
    return list;
}

static PyMethodDef put_counters_methods[] = {
    {"on_put", (PyCFunction)(void (*)(void))on_put, METH_FASTCALL,
     "count messages of size bytes in all were stored."},
    {"on_put_times", (PyCFunction)(void (*)(void))on_put_times, METH_FASTCALL,
     "count put requests took elapsed_ns each (Java counts whole ms in its buckets)."},
    {"on_put_time", on_put_time, METH_O, "A put request took elapsed_ns."},
    {"on_put_run", (PyCFunction)(void (*)(void))on_put_run, METH_FASTCALL,
     "on_put(messages, size) and on_put_times(elapsed_ns, puts) in one call."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef put_counters_members[] = {
    {"put_message_times_total", T_LONGLONG, offsetof(PutCounters, n.times_total), 0, NULL},
    {"put_message_size_total", T_LONGLONG, offsetof(PutCounters, n.size_total), 0, NULL},
    {"put_time_sum_ns", T_LONGLONG, offsetof(PutCounters, n.time_sum_ns), 0, NULL},
    {"put_time_max_ns", T_LONGLONG, offsetof(PutCounters, n.time_max_ns), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef put_counters_getset[] = {
    {"put_distribution", distribution, NULL,
     "The puts per bucket of PUT_BUCKET_BOUNDS_MS (a new list; the last bucket open-ended).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject PutCountersType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "broker.store._native.PutCounters",
    .tp_basicsize = sizeof(PutCounters),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "StoreStats' put counters as int64s (broker/store/counters.py's twin).",
    .tp_new = PyType_GenericNew,
    .tp_methods = put_counters_methods,
    .tp_members = put_counters_members,
    .tp_getset = put_counters_getset,
};

static PyMemberDef stats_counter_members[] = {
    {"value", T_LONGLONG, offsetof(StatsCounter, value), 0, NULL},
    {"times", T_LONGLONG, offsetof(StatsCounter, times), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject StatsCounterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "broker.store._native.StatsCounter",
    .tp_basicsize = sizeof(StatsCounter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A StatsItem's running value and times as int64s (broker/store/counters.py).",
    .tp_new = PyType_GenericNew,
    .tp_members = stats_counter_members,
};
