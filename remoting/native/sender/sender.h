/* The native sender's shared state (sender.c: the Python type; sender_thread.c: the thread
 * and everything it runs without the GIL). See sender.c for why it exists and its rules. */
#ifndef ROCKETMQ_TRIO_SENDER_H
#define ROCKETMQ_TRIO_SENDER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* What remoting/sender.py expects: bumped whenever the Python interface changes. */
#define SENDER_ABI_VERSION 3

#define MAX_IOV 256
#define SPARE_BUFS 8
#define MAX_EVENTS 64
/* Replies of another connection within this long mean the loop has company (write_now). */
#define COMPANY_NS 2000000

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct chunk {
    struct chunk *next;
    Py_ssize_t nbuf, index, offset; /* next buffer to write, bytes of it already written */
    Py_ssize_t cap;                 /* buffers it has room for */
    Py_buffer bufs[];
} chunk;

typedef struct conn {
    int fd, id, err;
    int queued, busy, blocked, closing, in_epoll;
    int owns_fd; /* set by remove(): the thread closes fd; until then Python owns it */
    chunk *head, *tail;
    Py_ssize_t pending;      /* bytes queued, not yet taken by the kernel */
    Py_ssize_t watch_below;  /* report once pending <= this; -1: nobody waits */
    struct conn *next_ready;
} conn;

typedef struct {
    PyObject_HEAD
    pthread_mutex_t mu;
    pthread_t thread;
    int started, stopping, closed, sleeping;
    int epfd, wake_fd, notice_fd;
    conn **slots;
    int nslots;
    conn *ready_head, *ready_tail;
    int nready, nblocked;
    /* Which connection queued last, when, and when another one did before it (write_now). */
    int last_id;
    int64_t last_at, other_at;
    chunk *done;
    /* One finished chunk of up to SPARE_BUFS buffers kept for the next send (GIL holders only:
     * queue_buffers and free_done): a lone reply's malloc and free, ~0.2k instructions. */
    chunk *spare;
    int *notices;
    int nnotices, cap_notices;
} Sender;

/* Mutex held: */
void sender_push_ready(Sender *s, conn *c);
conn *sender_pop_ready(Sender *s);
void sender_to_done(Sender *s, chunk *first);
void sender_wake(Sender *s);
/* Take a ready connection's chunks, write them with the mutex released, settle. */
void sender_service(Sender *s, conn *c, int on_thread);
/* The thread's body (pthread_create). */
void *sender_run_thread(void *arg);

#endif
