/* remoting._codec: native twins of the record codec's per-record loops (remoting/record.py,
 * remoting/message.py, remoting/java_hash.py). The pure-Python functions are the reference. */
#ifndef ROCKETMQ_TRIO_CODEC_H
#define ROCKETMQ_TRIO_CODEC_H

#include "record_layout.h"
#include "slots.h"

#include <sys/epoll.h>

/* What remoting/record.py expects: bumped whenever a function's arguments or results change. */
#define CODEC_ABI_VERSION 16

PyObject *java_hash(PyObject *self, PyObject *arg);
PyObject *pack_records_into(PyObject *self, PyObject *args);
PyObject *configure_scan(PyObject *self, PyObject *args);
PyObject *scan_record(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *decode_batch_body(PyObject *self, PyObject *args);
PyObject *decode_send_header(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *string_to_properties(PyObject *self, PyObject *text);
PyObject *plain_command(PyObject *self, PyObject *data);
PyObject *json_frame_head(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *split_frames(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *whole_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *decode_plain_header(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* An ASCII [+-]digits str within [low, high] into *out: 1, else 0 (send_header.c). */
int plain_integer(PyObject *s, long long low, long long high, long long *out);
int plain_integer_bytes(const char *p, Py_ssize_t n, long long low, long long high,
                        long long *out);
PyObject *scan_send_command(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* A JSON header's bytes to scan, and the header and body objects when the caller has them
 * (else NULL: made from the spans for a command only). */
typedef struct {
    const unsigned char *at;
    Py_ssize_t len;
    PyObject *header;
    const unsigned char *body_at;
    Py_ssize_t body_len;
    PyObject *body;
} ScanInput;
PyObject *scan_command_at(const ScanInput *in);
/* reused_bytes.c: bytes of p[0, n), an object of the pool's that nothing else holds any more
 * rewritten when there is one of that size, else a new one the pool keeps. */
#define BYTES_POOL 8
#define BYTES_POOL_MAX 16384
typedef struct {
    PyObject *items[BYTES_POOL];
    int next;
} BytesPool;
PyObject *reused_bytes(BytesPool *pool, const unsigned char *p, Py_ssize_t n);
PyObject *split_commands(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *whole_command(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *recv_command(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* recv_command's read and judgement of one descriptor (frames.c), for recv_round (round.c). */
PyObject *recv_judged(int fd, PyTypeObject *frame_type, long long max_frame, int whole_read,
                      int check_signals);
PyObject *recv_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* round.c's, for answer_lone (lone.c): a read batch begun (_ios += 1, _in_read_batch = True;
 * -1 on an error), and the pending error taken as its exception object (NULL if none). */
int begin_batch(PyObject *connection);
PyObject *take_error(void);
PyObject *answer_lone(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *finish_plain_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *configure_send_scan(PyObject *self, PyObject *args);
PyObject *configure_header_scan(PyObject *self, PyObject *args);
PyObject *plain_send_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *idle_wait(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* idle_wait's parts, for serve_lone (lone_loop.c), which keeps a lone sleep's one socket out
 * of the list: its state checked (0, or -1 with the TypeError or ValueError idle_wait raises),
 * the sleep (how many sockets are ready in events[], IDLE_MAX_EVENTS of room; 0 where idle_wait
 * answers None; -1 on an error), and the list idle_wait answers for them. */
typedef struct {
    PyObject *runner, *deadlines, *offset, *perf_counter; /* borrowed from the state */
    int epoll_fd, trio_fd;
} IdleState;
int idle_state(PyObject *state, IdleState *st);
int idle_wait_events(const IdleState *st, PyObject *flush, int resumed,
                     struct epoll_event *events);
PyObject *idle_events_list(const struct epoll_event *events, int n);
/* lone_loop.c: the selector's LoneLooks as a C type, and its lone requests' loop. */
extern PyTypeObject LoneLooksType;
PyObject *serve_lone(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* round_loop.c: a sleep's round of plain connections served for serve_lone (Py_True, borrowed,
 * when served whole; else what the selector finishes, or NULL on an error). */
PyObject *serve_round(PyObject *ready, PyObject *connections, PyObject *plain, PyObject *kinds,
                      PyObject *handler);

/* The idle sleep's bounds (idle.c; remoting/idle_sleep.py's MAX_TASKS, MAX_EVENTS and
 * MAX_SLEEP_S, held equal at load). */
#define IDLE_MAX_TASKS 256
#define IDLE_MAX_EVENTS 64
#define IDLE_MAX_SLEEP_S 86400.0

/* LoneLooks' share and probe (remoting/lone_loop.py's PROBE_EVERY, LOOKS_ONE, LOOKS_ENOUGH and
 * LOOKS_WEIGHT_SHIFT, held equal at load). */
#define LOOKS_PROBE_EVERY 16
#define LOOKS_ONE 1024
#define LOOKS_ENOUGH 32
#define LOOKS_WEIGHT_SHIFT 3

/* The MessageSysFlag bits a client decides (remoting/wire_types.py CLIENT_SYS_FLAG_BITS): the
 * rest of a sent sysFlag is cleared. */
#define SEND_SYS_FLAG_MASK 0x70F

#endif
