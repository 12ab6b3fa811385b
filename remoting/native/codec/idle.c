/* idle_wait: the selector's idle sleep in one call (remoting/idle_sleep.py idle_wait_reference,
 * the twin, says what it decides and why). A lock-step client's request costs one such sleep,
 * and its ~100 bytecodes of checks were a sixth of a found pull's Python.
 *
 * It reads Trio's runner the way the twin does (its run queue, the idle waiters, the autojump
 * threshold, the tasks still to run in the current batch, the first entry of its deadline
 * heap), calls the flush (the sender's kick) and waits in the sleep's epoll with the GIL
 * released. One difference: a signal interrupting the wait runs its handlers and declines
 * (None: the selector goes through Trio's wait, which sees the signal's wake-up byte), where
 * select.epoll.poll would wait again for the rest of the timeout.
 *
 * A sleep is ~1 per lock-step request, so what it costs in the C-API counts: Trio's objects
 * are read at their slots, the clock is read here when it is perf_counter's, and serve_lone
 * (lone_loop.c) takes the ready sockets as an array from idle_wait_events, so that a lone
 * one needs no list of tuples (idle_wait builds that list for its Python callers). */
#include "codec.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <time.h>

static PyObject *s_runq, *s_waiting, *s_autojump, *s_tasks, *s_next_send, *s_heap,
    *s_registered, *s_next_deadline, *s_clock, *s_sleep_time;

static int intern_names(void) {
    if (s_sleep_time != NULL) return 1;
    s_runq = PyUnicode_InternFromString("runq");
    s_waiting = PyUnicode_InternFromString("waiting_for_idle");
    s_autojump = PyUnicode_InternFromString("clock_autojump_threshold");
    s_tasks = PyUnicode_InternFromString("tasks");
    s_next_send = PyUnicode_InternFromString("_next_send_fn");
    s_heap = PyUnicode_InternFromString("_heap");
    s_registered = PyUnicode_InternFromString("_registered_deadline");
    s_next_deadline = PyUnicode_InternFromString("next_deadline");
    s_clock = PyUnicode_InternFromString("clock");
    s_sleep_time = PyUnicode_InternFromString("deadline_to_sleep_time");
    return s_runq && s_waiting && s_autojump && s_tasks && s_next_send && s_heap &&
           s_registered && s_next_deadline && s_clock && s_sleep_time;
}

/* Each attribute read here is a __slots__ member of Trio's attrs classes (Runner, Task,
 * Deadlines, CancelScope): read at its offset (slots.h), which saves PyObject_GetAttr's
 * generic lookup, ~5 a sleep; anything else (the tests' plain objects, another Trio) goes the
 * generic way. The caches hold offsets only: Deadlines._heap is rebound when pruned. */
static SlotCache c_runq, c_waiting, c_autojump, c_tasks, c_next_send, c_heap, c_registered;

/* The attribute's truth: 1, 0, or -1 on an error. */
static int attr_true(PyObject *obj, PyObject *name, SlotCache *cache) {
    PyObject *value = slot_get(obj, name, cache);
    if (value == NULL) return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

/* 1 when Trio has something to do now (the sleep declines), 0 when not, -1 on an error. */
static int trio_busy(PyObject *runner, int resumed) {
    int busy = attr_true(runner, s_runq, &c_runq);
    if (busy) return busy;
    if ((busy = attr_true(runner, s_waiting, &c_waiting)) != 0) return busy;
    PyObject *autojump = slot_get(runner, s_autojump, &c_autojump);
    if (autojump == NULL) return -1;
    busy = !PyFloat_CheckExact(autojump) || PyFloat_AS_DOUBLE(autojump) != INFINITY;
    Py_DECREF(autojump);
    if (busy || !resumed) return busy;
    /* A task of the batch the caller was resumed in, still to run: its next send is set. */
    PyObject *tasks = slot_get(runner, s_tasks, &c_tasks);
    if (tasks == NULL) return -1;
    Py_ssize_t n = PyObject_Size(tasks);
    PyObject *iter = n < 0 || n > IDLE_MAX_TASKS ? NULL : PyObject_GetIter(tasks);
    Py_DECREF(tasks);
    if (iter == NULL) return n > IDLE_MAX_TASKS ? 1 : -1;
    PyObject *task;
    while (!busy && (task = PyIter_Next(iter)) != NULL) {
        PyObject *next_send = slot_get(task, s_next_send, &c_next_send);
        Py_DECREF(task);
        if (next_send == NULL) busy = -1;
        else {
            busy = next_send != Py_None;
            Py_DECREF(next_send);
        }
    }
    Py_DECREF(iter);
    return busy == 0 && PyErr_Occurred() ? -1 : busy;
}

/* Python's deadline != registered: 1, 0, or -1 on an error. Two floats (Trio's) compare as
 * float's own != does (NaN included); anything else as Python's !=, with no identity
 * shortcut (PyObject_RichCompareBool takes one). */
static int deadline_moved(PyObject *deadline, PyObject *registered) {
    if (PyFloat_CheckExact(deadline) && PyFloat_CheckExact(registered))
        return PyFloat_AS_DOUBLE(deadline) != PyFloat_AS_DOUBLE(registered);
    PyObject *stale = PyObject_RichCompare(deadline, registered, Py_NE);
    int truth = stale == NULL ? -1 : PyObject_IsTrue(stale);
    Py_XDECREF(stale);
    return truth;
}

/* Trio's first current deadline (the heap's first entry, else next_deadline's answer) as a
 * new reference; Py_None when the heap is empty. */
static PyObject *first_deadline(PyObject *deadlines) {
    PyObject *heap = slot_get(deadlines, s_heap, &c_heap);
    if (heap == NULL) return NULL;
    if (!PyList_CheckExact(heap)) {
        Py_DECREF(heap);
        PyErr_SetString(PyExc_TypeError, "idle_wait: Trio's deadline heap is not a list");
        return NULL;
    }
    if (PyList_GET_SIZE(heap) == 0) {
        Py_DECREF(heap);
        Py_RETURN_NONE;
    }
    PyObject *first = PyList_GET_ITEM(heap, 0);
    Py_INCREF(first);
    Py_DECREF(heap);
    if (!PyTuple_CheckExact(first) || PyTuple_GET_SIZE(first) != 3) {
        Py_DECREF(first);
        PyErr_SetString(PyExc_TypeError, "idle_wait: a deadline entry is not a 3-tuple");
        return NULL;
    }
    PyObject *deadline = PyTuple_GET_ITEM(first, 0);
    Py_INCREF(deadline);
    PyObject *registered = slot_get(PyTuple_GET_ITEM(first, 2), s_registered, &c_registered);
    Py_DECREF(first);
    int is_stale = registered == NULL ? -1 : deadline_moved(deadline, registered);
    Py_XDECREF(registered);
    if (is_stale != 0) {
        Py_DECREF(deadline);
        return is_stale < 0 ? NULL : PyObject_CallMethodNoArgs(deadlines, s_next_deadline);
    }
    return deadline;
}

/* time.perf_counter, kept when it reads clock_gettime(CLOCK_MONOTONIC) (CPython on Linux; its
 * time.get_clock_info says so), else Py_None. A sleep whose clock is this one reads the clock
 * here instead of calling it: the same reading, without a call and a float a sleep. */
static PyObject *monotonic_counter;

static int find_monotonic_counter(void) {
    PyObject *time = PyImport_ImportModule("time");
    PyObject *counter = time == NULL ? NULL : PyObject_GetAttrString(time, "perf_counter");
    PyObject *info = counter == NULL ? NULL
                                     : PyObject_CallMethod(time, "get_clock_info", "s",
                                                           "perf_counter");
    PyObject *how = info == NULL ? NULL : PyObject_GetAttrString(info, "implementation");
    Py_XDECREF(info);
    Py_XDECREF(time);
    if (how == NULL) {
        Py_XDECREF(counter);
        return -1;
    }
    int known = PyUnicode_Check(how) &&
                PyUnicode_CompareWithASCIIString(how, "clock_gettime(CLOCK_MONOTONIC)") == 0 &&
                PyCFunction_Check(counter);
    Py_DECREF(how);
    if (!known) Py_SETREF(counter, Py_NewRef(Py_None));
    monotonic_counter = counter;
    return 0;
}

/* perf_counter's reading as it makes it (CPython's pytime.c: nanoseconds as an integer, then
 * _PyTime_AsSecondsDouble's division); 0 with *now set, -1 when out of its range (the caller
 * calls perf_counter, which raises as it would). */
static int monotonic_now(double *now) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0 || ts.tv_sec > INT64_MAX / 1000000000 - 1)
        return -1;
    int64_t ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    volatile double d; /* as CPython's: no rounding changed by the optimiser */
    if (ns % 1000000000 == 0)
        d = (double)(ns / 1000000000);
    else {
        d = (double)ns;
        d /= 1e9;
    }
    *now = d;
    return 0;
}

/* The clock's reading, by the clock's own call unless it is the one read here; -1 on an
 * error. */
static int clock_now(PyObject *clock, double *now_s) {
    if (clock == monotonic_counter && monotonic_now(now_s) == 0) return 0;
    PyObject *now = PyObject_CallNoArgs(clock);
    if (now == NULL) return -1;
    *now_s = PyFloat_AsDouble(now);
    Py_DECREF(now);
    return *now_s == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* The sleep's timeout in seconds: *seconds, 1 when the deadline is due (decline), 0 to sleep,
 * -1 on an error. */
static int sleep_time(const IdleState *st, double *seconds) {
    PyObject *deadline = first_deadline(st->deadlines);
    if (deadline == NULL) return -1;
    if (deadline == Py_None) {
        Py_DECREF(deadline);
        *seconds = IDLE_MAX_SLEEP_S;
        return 0;
    }
    double timeout;
    if (st->offset == Py_None) {
        PyObject *clock = PyObject_GetAttr(st->runner, s_clock);
        PyObject *left =
            clock == NULL ? NULL : PyObject_CallMethodOneArg(clock, s_sleep_time, deadline);
        Py_XDECREF(clock);
        Py_DECREF(deadline);
        if (left == NULL) return -1;
        timeout = PyFloat_AsDouble(left);
        Py_DECREF(left);
    } else {
        double at = PyFloat_AsDouble(deadline), now_s;
        Py_DECREF(deadline);
        if ((at == -1.0 && PyErr_Occurred()) || clock_now(st->perf_counter, &now_s) < 0)
            return -1;
        timeout = at - PyFloat_AS_DOUBLE(st->offset) - now_s;
    }
    if (timeout == -1.0 && PyErr_Occurred()) return -1;
    if (isnan(timeout)) {
        PyErr_SetString(PyExc_ValueError, "idle_wait: the sleep time is NaN");
        return -1;
    }
    if (timeout <= 0) return 1;
    *seconds = timeout < IDLE_MAX_SLEEP_S ? timeout : IDLE_MAX_SLEEP_S;
    return 0;
}

/* The wait itself: how many sockets are ready in events[], 0 when nothing (or Trio's epoll, or
 * a signal) woke it, -1 on an error. */
static int wait_ready(int epoll_fd, int trio_fd, double seconds, struct epoll_event *events) {
    /* epoll.poll's rounding: up to the next millisecond. */
    int ms = (int)ceil(seconds * 1000.0);
    int n;
    Py_BEGIN_ALLOW_THREADS
    n = epoll_wait(epoll_fd, events, IDLE_MAX_EVENTS, ms);
    Py_END_ALLOW_THREADS
    if (n < 0) {
        if (errno != EINTR) {
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        return PyErr_CheckSignals() < 0 ? -1 : 0;
    }
    for (int i = 0; i < n; i++)
        if (events[i].data.fd == trio_fd) return 0;
    return n;
}

/* The ready sockets as select.epoll.poll lists them: [(fd, mask), ...]. */
PyObject *idle_events_list(const struct epoll_event *events, int n) {
    PyObject *ready = PyList_New(n);
    for (int i = 0; ready != NULL && i < n; i++) {
        PyObject *fd = PyLong_FromLong(events[i].data.fd);
        PyObject *mask = fd == NULL ? NULL : PyLong_FromUnsignedLong(events[i].events);
        PyObject *event = mask == NULL ? NULL : PyTuple_New(2);
        if (event == NULL) {
            Py_XDECREF(fd);
            Py_XDECREF(mask);
            Py_CLEAR(ready);
            break;
        }
        PyTuple_SET_ITEM(event, 0, fd);
        PyTuple_SET_ITEM(event, 1, mask);
        PyList_SET_ITEM(ready, i, event);
    }
    return ready;
}

int idle_state(PyObject *state, IdleState *st) {
    PyObject *offset = NULL;
    if (PyTuple_CheckExact(state) && PyTuple_GET_SIZE(state) == 7)
        offset = PyTuple_GET_ITEM(state, 2);
    if (offset == NULL || !(offset == Py_None || PyFloat_CheckExact(offset)) ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(state, 4)) ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(state, 5))) {
        PyErr_SetString(PyExc_TypeError,
                        "idle_wait((runner, deadlines, offset, epoll, epoll_fd, trio_fd, "
                        "perf_counter), flush, resumed)");
        return -1;
    }
    int overflow;
    long epoll_fd = PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(state, 4), &overflow);
    long trio_fd = overflow ? -1 : PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(state, 5), &overflow);
    if (overflow || epoll_fd < 0 || epoll_fd > INT_MAX || trio_fd < 0 || trio_fd > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "idle_wait: a descriptor out of range");
        return -1;
    }
    if (!intern_names() || (monotonic_counter == NULL && find_monotonic_counter() < 0))
        return -1;
    *st = (IdleState){PyTuple_GET_ITEM(state, 0), PyTuple_GET_ITEM(state, 1), offset,
                      PyTuple_GET_ITEM(state, 6), (int)epoll_fd, (int)trio_fd};
    return 0;
}

int idle_wait_events(const IdleState *st, PyObject *flush, int resumed,
                     struct epoll_event *events) {
    int busy = trio_busy(st->runner, resumed);
    if (busy) return busy < 0 ? -1 : 0;
    double seconds;
    int due = sleep_time(st, &seconds);
    if (due) return due < 0 ? -1 : 0;
    if (flush != Py_None) { /* what Trio's before_io_wait would have done: the kick */
        PyObject *flushed = PyObject_CallNoArgs(flush);
        if (flushed == NULL) return -1;
        Py_DECREF(flushed);
    }
    return wait_ready(st->epoll_fd, st->trio_fd, seconds, events);
}

/* idle_wait(state, flush, resumed) -> [(fd, mask), ...] | None; state is (runner, deadlines,
 * clock offset or None, the sleep's epoll (the twin's; unused here) and its descriptor, Trio's
 * epoll descriptor, perf_counter). */
PyObject *idle_wait(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    IdleState st;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "idle_wait(state, flush, resumed)");
        return NULL;
    }
    if (idle_state(args[0], &st) < 0) return NULL;
    int resumed = PyObject_IsTrue(args[2]);
    if (resumed < 0) return NULL;
    struct epoll_event events[IDLE_MAX_EVENTS];
    int n = idle_wait_events(&st, args[1], resumed, events);
    if (n <= 0) return n < 0 ? NULL : Py_NewRef(Py_None);
    return idle_events_list(events, n);
}
