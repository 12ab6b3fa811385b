/* Sender: connections' outgoing bytes written by a native thread that never takes the GIL.
 *
 * Why: on loopback a send() runs the receiving side's TCP stack and wakes the reader, and in a
 * VM that wake-up is a costly inter-processor interrupt. py-spy and perf put ~25% of a busy
 * broker's event-loop thread in sendmsg. The bytes are queued here during a scheduler pass and
 * leave at its end (remoting/sender.py calls kick() before each I/O wait): written by kick()
 * itself with the GIL released while the thread sleeps (waking it cost more than the writes),
 * by the thread when a write would block, a connection is being removed, or it is awake.
 *
 * Rules that keep it safe:
 * - The thread writes to the connection's own descriptor (one per connection: a dup() each
 *   cost the broker a third of its descriptors). Python keeps it open until remove(), which
 *   hands it over; the thread closes it after its last write. So the number is never reused
 *   for another socket while the thread may still write to it.
 * - Bytes are never copied: each queued chunk holds Py_buffer views of the objects it was given.
 *   The thread only reads buf/len; releasing the views needs the GIL, so finished chunks wait
 *   on a list that the next call from Python (which holds the GIL) releases.
 * - A connection's chunks leave in the order they were queued; one thread at a time writes a
 *   connection (the "busy" mark), under one mutex that guards every list and mark.
 * - Writes never block: what the kernel does not take waits for EPOLLOUT on this thread's own
 *   epoll; other connections go on meanwhile.
 * - A connection whose queued bytes fall to the level Python asked to watch (or that failed) is
 *   reported through an eventfd, so the loop can wake writers waiting for room.
 *
 * This file is the Python type (called with the GIL held); the thread is in sender_thread.c.
 */
#include "sender.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* ------------------------------------------------------------------ Python side (GIL held) */

/* The finished chunks taken off the done list (mutex held). */
static chunk *take_done(Sender *s) {
    chunk *done = s->done;
    __atomic_store_n(&s->done, NULL, __ATOMIC_RELAXED);
    return done;
}

/* A chunk's memory: kept as the spare when there is none and it is small (GIL held). */
static void drop_chunk(Sender *s, chunk *ch) {
    if (s->spare == NULL && ch->cap <= SPARE_BUFS) s->spare = ch;
    else PyMem_RawFree(ch);
}

/* Their views released and their memory dropped (GIL held). */
static void free_done(Sender *s, chunk *done) {
    while (done) {
        chunk *next = done->next;
        for (Py_ssize_t i = 0; i < done->nbuf; i++) PyBuffer_Release(&done->bufs[i]);
        drop_chunk(s, done);
        done = next;
    }
}

/* A chunk with room for n buffers: the spare when it has it (GIL held). Made with room for
 * exactly n (queued chunks are never larger than what they hold: a backlog of small replies
 * costs what it did); a lone client's replies have one shape, so the spare fits the next. */
static chunk *new_chunk(Sender *s, Py_ssize_t n) {
    Py_ssize_t cap = n > 0 ? n : 1;
    chunk *ch = s->spare;
    if (ch != NULL && ch->cap >= n) s->spare = NULL;
    else if ((ch = PyMem_RawMalloc(sizeof(chunk) + sizeof(Py_buffer) * (size_t)cap)) != NULL)
        ch->cap = cap;
    return ch;
}

static void release_done(Sender *s) {
    /* Nothing finished: no lock. Only the mutex's holders add to the list, so an empty peek is
     * what taking the mutex a moment earlier would have seen; the chunks added after it are
     * released by the next call, as they would have been. */
    if (__atomic_load_n(&s->done, __ATOMIC_RELAXED) == NULL) return;
    pthread_mutex_lock(&s->mu);
    chunk *done = take_done(s);
    pthread_mutex_unlock(&s->mu);
    free_done(s, done);
}

/* The connection behind an id Python holds (mutex held); NULL with the error set. */
static conn *lookup(Sender *s, int id) {
    if (s->closed) {
        PyErr_SetString(PyExc_RuntimeError, "the sender is closed");
        return NULL;
    }
    if (id < 0 || id >= s->nslots || s->slots[id] == NULL || s->slots[id]->closing) {
        PyErr_Format(PyExc_KeyError, "no connection %d on this sender", id);
        return NULL;
    }
    return s->slots[id];
}

/* The connection an id argument names, with the mutex held; NULL (mutex free, error set) else. */
static conn *lock_conn(Sender *s, PyObject *arg) {
    int id = (int)PyLong_AsLong(arg);
    if (id == -1 && PyErr_Occurred()) return NULL;
    pthread_mutex_lock(&s->mu);
    conn *c = lookup(s, id);
    if (!c) pthread_mutex_unlock(&s->mu);
    return c;
}

static PyObject *Sender_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (!PyArg_ParseTuple(args, ":Sender")) return NULL;
    Sender *s = (Sender *)type->tp_alloc(type, 0);
    if (!s) return NULL;
    s->epfd = s->wake_fd = s->notice_fd = -1;
    s->last_id = -1;
    pthread_mutex_init(&s->mu, NULL);
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->notice_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (s->epfd < 0 || s->wake_fd < 0 || s->notice_fd < 0 ||
        epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wake_fd, &ev) != 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        Py_DECREF(s);
        return NULL;
    }
    /* Signals are the main thread's (Python's rule): the thread starts with them all blocked. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, sender_run_thread, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        PyErr_SetFromErrno(PyExc_OSError);
        Py_DECREF(s);
        return NULL;
    }
    s->started = 1;
    return (PyObject *)s;
}

static PyObject *Sender_close(Sender *s, PyObject *unused) {
    if (s->closed) Py_RETURN_NONE;
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->stopping = 1;
        sender_wake(s);
        pthread_mutex_unlock(&s->mu);
        Py_BEGIN_ALLOW_THREADS
        pthread_join(s->thread, NULL);
        Py_END_ALLOW_THREADS
        s->started = 0;
    }
    s->closed = 1;
    for (int i = 0; i < s->nslots; i++) {
        conn *c = s->slots[i];
        if (!c) continue;
        sender_to_done(s, c->head);
        if (c->owns_fd) close(c->fd); /* else Python's, still open there */
        free(c);
        s->slots[i] = NULL;
    }
    release_done(s);
    Py_RETURN_NONE;
}

static void Sender_dealloc(Sender *s) {
    PyObject *r = Sender_close(s, NULL);
    Py_XDECREF(r);
    if (s->epfd >= 0) close(s->epfd);
    if (s->wake_fd >= 0) close(s->wake_fd);
    if (s->notice_fd >= 0) close(s->notice_fd);
    free(s->slots);
    free(s->notices);
    PyMem_RawFree(s->spare);
    pthread_mutex_destroy(&s->mu);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

/* add(fd) -> id: the thread writes to fd from now on; the caller keeps it open until remove. */
static PyObject *Sender_add(Sender *s, PyObject *arg) {
    int fd = PyObject_AsFileDescriptor(arg);
    if (fd < 0) return NULL;
    if (s->closed) return PyErr_Format(PyExc_RuntimeError, "the sender is closed");
    conn *c = calloc(1, sizeof(conn));
    if (!c) return PyErr_NoMemory();
    c->fd = fd;
    c->watch_below = -1;
    pthread_mutex_lock(&s->mu);
    int id = 0;
    while (id < s->nslots && s->slots[id]) id++;
    if (id == s->nslots) {
        int n = s->nslots ? s->nslots * 2 : 64;
        conn **grown = realloc(s->slots, sizeof(conn *) * (size_t)n);
        if (!grown) {
            pthread_mutex_unlock(&s->mu);
            free(c);
            return PyErr_NoMemory();
        }
        memset(grown + s->nslots, 0, sizeof(conn *) * (size_t)(n - s->nslots));
        s->slots = grown;
        s->nslots = n;
    }
    c->id = id;
    s->slots[id] = c;
    pthread_mutex_unlock(&s->mu);
    return PyLong_FromLong(id);
}

/* send(id, buffers) -> bytes queued for the connection after this. Raises OSError once a write
 * of it failed. Nothing leaves before the next kick(). */
/* Queue items[0..n) (bytes-like) for connection id: the bytes it has queued now, or NULL with
 * the error set (OSError once a write of it failed, KeyError for an unknown id, RuntimeError
 * once the sender is closed). */
static PyObject *queue_buffers(Sender *s, int id, PyObject *const *items, Py_ssize_t n) {
    chunk *ch = new_chunk(s, n);
    if (!ch) return PyErr_NoMemory();
    ch->next = NULL;
    ch->nbuf = ch->index = ch->offset = 0;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_buffer *b = &ch->bufs[ch->nbuf];
        if (PyObject_GetBuffer(items[i], b, PyBUF_SIMPLE) != 0) goto fail;
        if (b->len == 0) {
            PyBuffer_Release(b);
            continue;
        }
        total += b->len;
        ch->nbuf++;
    }
    pthread_mutex_lock(&s->mu);
    conn *c = lookup(s, id);
    if (c && c->err) {
        errno = c->err;
        PyErr_SetFromErrno(PyExc_OSError);
        c = NULL;
    }
    if (!c) {
        pthread_mutex_unlock(&s->mu);
        goto fail;
    }
    int64_t now = now_ns();
    if (id != s->last_id) {
        s->other_at = s->last_at;
        s->last_id = id;
    }
    s->last_at = now;
    if (total) {
        if (c->tail) c->tail->next = ch;
        else c->head = ch;
        c->tail = ch;
        c->pending += total;
        sender_push_ready(s, c);
    }
    Py_ssize_t pending = c->pending;
    pthread_mutex_unlock(&s->mu);
    if (!total) drop_chunk(s, ch);
    return PyLong_FromSsize_t(pending);
fail:
    for (Py_ssize_t j = 0; j < ch->nbuf; j++) PyBuffer_Release(&ch->bufs[j]);
    drop_chunk(s, ch);
    return NULL;
}

static PyObject *Sender_send(Sender *s, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "send(id, buffers)");
    int id = (int)PyLong_AsLong(args[0]);
    if (id == -1 && PyErr_Occurred()) return NULL;
    release_done(s);
    PyObject *seq = PySequence_Fast(args[1], "buffers must be a sequence");
    if (!seq) return NULL;
    PyObject *pending =
        queue_buffers(s, id, PySequence_Fast_ITEMS(seq), PySequence_Fast_GET_SIZE(seq));
    Py_DECREF(seq);
    return pending;
}

/* send_each(ids, frames) -> list: send(ids[i], (frames[i],)) for each i, in order, in one call
 * (a selector round's replies, one per connection: remoting/writes.py reply_round). Each item
 * is what that send returned, or the exception it raised (the others are still queued). */
static PyObject *Sender_send_each(Sender *s, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1]) ||
        PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1]))
        return PyErr_Format(PyExc_TypeError, "send_each(ids, frames): two lists of one length");
    Py_ssize_t n = PyList_GET_SIZE(args[0]);
    release_done(s);
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *frame = PyList_GET_ITEM(args[1], i);
        Py_INCREF(frame); /* a buffer's exporter may run code that changes the list */
        int id = (int)PyLong_AsLong(PyList_GET_ITEM(args[0], i));
        PyObject *got = id == -1 && PyErr_Occurred() ? NULL : queue_buffers(s, id, &frame, 1);
        Py_DECREF(frame);
        if (got == NULL) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            Py_XDECREF(type);
            Py_XDECREF(tb);
            if (value == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            got = value;
        }
        PyList_SET_ITEM(out, i, got);
    }
    return out;
}

/* Write the one ready connection here, without the GIL (mutex held, released on return). */
static void write_alone(Sender *s) {
    conn *c = sender_pop_ready(s);
    PyThreadState *ts = PyEval_SaveThread();
    sender_service(s, c, 0);
    /* what it wrote, released here while the mutex is held anyway (the next call's
     * release_done then takes no lock for it) */
    chunk *done = take_done(s);
    pthread_mutex_unlock(&s->mu);
    PyEval_RestoreThread(ts);
    free_done(s, done);
}

/* Write every connection ready now here, one sendmsg each, without the GIL (mutex held,
 * released on return). What is left (a connection being removed, a write that would block,
 * or the thread woken meanwhile) is the thread's. */
static void write_ready(Sender *s) {
    int n = s->nready;
    PyThreadState *ts = PyEval_SaveThread();
    while (n-- > 0 && s->sleeping && s->ready_head && !s->ready_head->closing)
        sender_service(s, sender_pop_ready(s), 0);
    if (s->nready && s->sleeping) sender_wake(s);
    pthread_mutex_unlock(&s->mu);
    PyEval_RestoreThread(ts);
}

/* kick(): start writing what send() queued. While the thread sleeps, the ready connections
 * are written right here: waking it (an eventfd write, in a VM an inter-processor interrupt,
 * and the thread's own wake-up) cost more than the writes it took over. With 8 sync senders
 * each scheduler pass has 3-4 connections' replies: written here, the broker's CPU per
 * message fell by a fifth (docs/scaling.md). The thread keeps the writes that would block
 * and the connections being removed. */
static PyObject *Sender_kick(Sender *s, PyObject *const *unused, Py_ssize_t nargs) {
    /* kick(timeout=None): Trio calls it as the before_io_wait hook itself, with the wait's
     * timeout, which it does not need (a Python method in between was a frame per I/O wait). */
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "kick() takes at most 1 argument");
        return NULL;
    }
    if (s->closed) Py_RETURN_NONE;
    release_done(s);
    /* Nothing ready: no lock. Only this thread (the GIL's) queues while the writer thread
     * sleeps, and that thread readies connections only while awake, when a kick leaves them
     * to it; so an empty peek is what the mutex's holder would have seen. */
    if (__atomic_load_n(&s->nready, __ATOMIC_RELAXED) == 0) Py_RETURN_NONE;
    pthread_mutex_lock(&s->mu);
    if (s->nready && s->sleeping) {
        write_ready(s);
        Py_RETURN_NONE;
    }
    pthread_mutex_unlock(&s->mu);
    Py_RETURN_NONE;
}

/* write_now(id) -> bool: False when id's replies wait for the next kick. It writes them at once
 * when the loop has no company: the thread sleeps, id
 * alone has replies and no other connection queued any lately. A lone client then gets its
 * reply before the loop's bookkeeping instead of after it (~15% of a round trip); with other
 * clients busy, the loop is better off leaving the write to the thread. */
static PyObject *Sender_write_now(Sender *s, PyObject *arg) {
    if (s->closed) Py_RETURN_TRUE;
    conn *c = lock_conn(s, arg);
    if (!c) return NULL;
    if (!c->queued) {
        pthread_mutex_unlock(&s->mu);
        Py_RETURN_TRUE;
    }
    if (s->nready == 1 && s->sleeping && s->last_id == c->id &&
        now_ns() - s->other_at > COMPANY_NS) {
        write_alone(s);
        Py_RETURN_TRUE;
    }
    pthread_mutex_unlock(&s->mu);
    Py_RETURN_FALSE;
}

static PyObject *Sender_pending(Sender *s, PyObject *arg) {
    conn *c = lock_conn(s, arg);
    if (!c) return NULL;
    Py_ssize_t pending = c->pending;
    pthread_mutex_unlock(&s->mu);
    return PyLong_FromSsize_t(pending);
}

/* watch(id, level) -> bool: report id through notice_fd once its queued bytes are <= level (or
 * it failed). False when that is already so: nothing will be reported. */
static PyObject *Sender_watch(Sender *s, PyObject *args) {
    int id;
    Py_ssize_t level;
    if (!PyArg_ParseTuple(args, "in", &id, &level)) return NULL;
    if (level < 0) return PyErr_Format(PyExc_ValueError, "level must be >= 0, not %zd", level);
    pthread_mutex_lock(&s->mu);
    conn *c = lookup(s, id);
    int armed = c && c->pending > level && !c->err;
    if (c) c->watch_below = armed ? level : -1;
    pthread_mutex_unlock(&s->mu);
    return c ? PyBool_FromLong(armed) : NULL;
}

/* notices() -> [id, ...]: connections whose watch fired since the last call. */
static PyObject *Sender_notices(Sender *s, PyObject *unused) {
    uint64_t count;
    ssize_t rc = read(s->notice_fd, &count, sizeof count);
    (void)rc;
    pthread_mutex_lock(&s->mu);
    PyObject *ids = PyList_New(s->nnotices);
    if (ids) {
        for (int i = 0; i < s->nnotices; i++) {
            PyObject *v = PyLong_FromLong(s->notices[i]);
            if (!v) {
                Py_CLEAR(ids);
                break;
            }
            PyList_SET_ITEM(ids, i, v);
        }
        if (ids) s->nnotices = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return ids;
}

/* remove(id, fd) -> bool: no more sends, and fd (the one add() was given) is the thread's: it
 * writes what the kernel takes at once, then closes it (a reply queued just before a close
 * still leaves). False once the sender is closed: the caller keeps fd. */
static PyObject *Sender_remove(Sender *s, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "remove(id, fd)");
    int fd = (int)PyLong_AsLong(args[1]);
    if (fd == -1 && PyErr_Occurred()) return NULL;
    if (s->closed) Py_RETURN_FALSE;
    conn *c = lock_conn(s, args[0]);
    if (!c) return NULL;
    if (c->fd != fd) {
        pthread_mutex_unlock(&s->mu);
        return PyErr_Format(PyExc_ValueError, "connection %d writes to fd %d, not %d", c->id,
                            c->fd, fd);
    }
    c->owns_fd = 1;
    c->closing = 1;
    if (c->blocked) {
        c->blocked = 0;
        s->nblocked--;
    }
    sender_push_ready(s, c);
    sender_wake(s);
    pthread_mutex_unlock(&s->mu);
    Py_RETURN_TRUE;
}

static PyObject *Sender_notice_fd(Sender *s, void *closure) { return PyLong_FromLong(s->notice_fd); }

static PyMethodDef Sender_methods[] = {
    {"add", (PyCFunction)Sender_add, METH_O, "add(fd) -> id: write for this socket from now on."},
    {"send", (PyCFunction)(void (*)(void))Sender_send, METH_FASTCALL,
     "send(id, buffers) -> bytes queued for it (the buffers are held, not copied)."},
    {"send_each", (PyCFunction)(void (*)(void))Sender_send_each, METH_FASTCALL,
     "send_each(ids, frames) -> list: each send(ids[i], (frames[i],))'s answer or exception."},
    {"kick", (PyCFunction)(void (*)(void))Sender_kick, METH_FASTCALL,
     "kick(timeout=None): start writing what was queued."},
    {"write_now", (PyCFunction)Sender_write_now, METH_O,
     "write_now(id) -> bool: write id's queue at once if no other connection is busy; False "
     "when the bytes wait for the next kick."},
    {"pending", (PyCFunction)Sender_pending, METH_O, "Bytes queued for a connection."},
    {"watch", (PyCFunction)Sender_watch, METH_VARARGS,
     "watch(id, level) -> bool: report id once its queued bytes are <= level."},
    {"notices", (PyCFunction)Sender_notices, METH_NOARGS, "Ids whose watch fired."},
    {"remove", (PyCFunction)(void (*)(void))Sender_remove, METH_FASTCALL,
     "remove(id, fd) -> bool: no more sends for id; the thread takes fd, writes what the "
     "kernel takes and closes it. False once the sender is closed (the caller keeps fd)."},
    {"close", (PyCFunction)Sender_close, METH_NOARGS, "Stop the thread and drop everything."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Sender_getset[] = {
    {"notice_fd", (getter)Sender_notice_fd, NULL, "Readable when notices() has ids.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SenderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "remoting._sender.Sender",
    .tp_basicsize = sizeof(Sender),
    .tp_dealloc = (destructor)Sender_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Writes connections' outgoing bytes from a native thread (remoting/sender.py).",
    .tp_methods = Sender_methods,
    .tp_getset = Sender_getset,
    .tp_new = Sender_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "remoting._sender",
    "The servers' reply writer thread (remoting/sender.py). No pure twin: without it the event "
    "loop writes replies itself.",
    -1, NULL,
};

PyMODINIT_FUNC PyInit__sender(void) {
    if (PyType_Ready(&SenderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "ABI_VERSION", SENDER_ABI_VERSION) < 0 ||
        PyModule_AddObjectRef(m, "Sender", (PyObject *)&SenderType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
