/* The complete frames at the front of a read (remoting/frame.py FrameDecoder.next_frame, the
 * reference), cut in one call instead of one Python call per frame: issue 27's pipelined sends
 * bring dozens per 64 KiB read.
 *
 * split_frames(frame_type, buffer, pos, max_frame_bytes) -> (frames, pos): Frame tuples
 * (serialize_type, header, body) for each complete frame from pos whose length is within
 * [4, max_frame_bytes], serialize type 0 or 1 and header within the frame; it stops at the first
 * frame that is incomplete or not so, which the reference then waits for or refuses.
 * split_commands and whole_command also scan each JSON frame's header in place (send_scan.c
 * scan_command_at), so a pipelined read's plain sends come out as commands with no Frame, no
 * header bytes for the scan and no Python call between them. */
#include "codec.h"

#include <errno.h>
#include <sys/socket.h>

static uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* A Frame tuple of the frame at data + pos (its header from pos + 8 to header_end). */
static PyObject *new_frame(PyTypeObject *type, uint32_t serialize_type, const unsigned char *data,
                           Py_ssize_t pos, Py_ssize_t header_end, Py_ssize_t frame_end) {
    PyObject *frame = type->tp_alloc(type, 3);
    if (frame == NULL) return NULL;
    PyObject *kind = PyLong_FromLong((long)serialize_type);
    PyObject *header = PyBytes_FromStringAndSize((const char *)data + pos + 8,
                                                 header_end - pos - 8);
    PyObject *body = PyBytes_FromStringAndSize((const char *)data + header_end,
                                               frame_end - header_end);
    if (kind == NULL || header == NULL || body == NULL) {
        Py_XDECREF(kind);
        Py_XDECREF(header);
        Py_XDECREF(body);
        Py_DECREF(frame);
        return NULL;
    }
    PyTuple_SET_ITEM(frame, 0, kind);
    PyTuple_SET_ITEM(frame, 1, header);
    PyTuple_SET_ITEM(frame, 2, body);
    return frame;
}

/* The arguments split and whole share: (frame_type, bytes, ...) with ``want`` in all; 0 and a
 * TypeError naming the call's usage otherwise. */
static int frame_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want,
                      const char *usage) {
    if (nargs != want || !PyType_Check(args[0]) ||
        !PyType_IsSubtype((PyTypeObject *)args[0], &PyTuple_Type) ||
        !PyBytes_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, usage);
        return 0;
    }
    return 1;
}

/* The split of both functions below; scan: each JSON frame's header scanned in place, a
 * command where the scan takes it, *frames counting the Frames made instead. */
static PyObject *split(PyObject *const *args, Py_ssize_t nargs, int scan, const char *usage) {
    if (!frame_args(args, nargs, 4, usage)) return NULL;
    PyTypeObject *type = (PyTypeObject *)args[0];
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(args[1]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[1]);
    Py_ssize_t pos = PyLong_AsSsize_t(args[2]);
    long long max_frame = PyLong_AsLongLong(args[3]);
    if (PyErr_Occurred()) return NULL;
    if (pos < 0 || pos > size) return PyErr_Format(PyExc_ValueError, "pos %zd outside", pos);
    PyObject *items = PyList_New(0);
    if (items == NULL) return NULL;
    Py_ssize_t frames = 0;
    while (size - pos >= 8) {
        int32_t length = (int32_t)be32(data + pos);
        uint32_t mark = be32(data + pos + 4);
        if (length < 4 || length > max_frame || size - pos < 4 + (Py_ssize_t)length) break;
        uint32_t serialize_type = mark >> 24, header_length = mark & 0x00FFFFFF;
        if (serialize_type > 1 || (Py_ssize_t)header_length > (Py_ssize_t)length - 4) break;
        Py_ssize_t header_end = pos + 8 + header_length, frame_end = pos + 4 + length;
        PyObject *item = NULL;
        if (scan && serialize_type == 0) {
            ScanInput in = {data + pos + 8, header_length, NULL, data + header_end,
                            frame_end - header_end, NULL};
            item = scan_command_at(&in);
            if (item == NULL) goto error;
            if (item == Py_None) Py_CLEAR(item); /* the scan's new reference: not plain */
        }
        if (item == NULL) {
            item = new_frame(type, serialize_type, data, pos, header_end, frame_end);
            if (item == NULL) goto error;
            frames++;
        }
        int appended = PyList_Append(items, item);
        Py_DECREF(item);
        if (appended < 0) goto error;
        pos = frame_end;
    }
    if (scan) return Py_BuildValue("(Nnn)", items, pos, frames);
    return Py_BuildValue("(Nn)", items, pos);
error:
    Py_DECREF(items);
    return NULL;
}

PyObject *split_frames(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return split(args, nargs, 0, "split_frames(frame_type, bytes, pos, max_frame_bytes)");
}

/* split_commands(frame_type, buffer, pos, max_frame_bytes) -> (items, pos, frames):
 * split_frames' cut, each JSON frame's header scanned in place by scan_send_command's scan
 * (remoting/command.py decode_command's fast path): its ScannedCommand, the header's and body's
 * bytes made for it alone; any frame the scan does not take is its Frame, as split_frames
 * makes it, for decode_command (frames: how many items are Frames). One call for a
 * pipelined read's dozens of sends: no Frame, header bytes or Python call between them. */
PyObject *split_commands(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return split(args, nargs, 1, "split_commands(frame_type, bytes, pos, max_frame_bytes)");
}

/* whole_frame(frame_type, data, max_frame_bytes) -> Frame or None: data as one frame when it
 * is exactly one complete frame that split_frames would cut (a lone request's read), else None
 * (remoting/frame.py FrameDecoder.whole_frame, the reference, says the same). whole_command:
 * the same, a JSON frame's header scanned as split_commands scans it (its command, else the
 * Frame). */
/* The judgement of whole(), on data[0, size): a new reference to the frame's command or Frame,
 * None when the data is not exactly one complete frame, NULL on an error. */
static PyObject *whole_of(PyTypeObject *type, const unsigned char *data, Py_ssize_t size,
                          long long max_frame, int scan) {
    if (size < 8) Py_RETURN_NONE;
    int32_t length = (int32_t)be32(data);
    uint32_t mark = be32(data + 4);
    uint32_t serialize_type = mark >> 24, header_length = mark & 0x00FFFFFF;
    /* length + 4 == size >= 8 also holds length within [4, size - 4]: no overflow below. */
    if (length < 4 || (Py_ssize_t)length != size - 4 || length > max_frame) Py_RETURN_NONE;
    if (serialize_type > 1 || (Py_ssize_t)header_length > (Py_ssize_t)length - 4) Py_RETURN_NONE;
    Py_ssize_t header_end = 8 + (Py_ssize_t)header_length;
    if (scan && serialize_type == 0) {
        ScanInput in = {data + 8, header_length, NULL, data + header_end, size - header_end, NULL};
        PyObject *command = scan_command_at(&in);
        if (command != Py_None) return command; /* or NULL: an error */
        Py_DECREF(command);
    }
    return new_frame(type, serialize_type, data, 0, header_end, size);
}

static PyObject *whole(PyObject *const *args, Py_ssize_t nargs, int scan, const char *usage) {
    if (!frame_args(args, nargs, 3, usage)) return NULL;
    long long max_frame = PyLong_AsLongLong(args[2]);
    if (max_frame == -1 && PyErr_Occurred()) return NULL;
    return whole_of((PyTypeObject *)args[0], (const unsigned char *)PyBytes_AS_STRING(args[1]),
                    PyBytes_GET_SIZE(args[1]), max_frame, scan);
}

PyObject *whole_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return whole(args, nargs, 0, "whole_frame(frame_type, bytes, max_frame_bytes)");
}

PyObject *whole_command(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return whole(args, nargs, 1, "whole_command(frame_type, bytes, max_frame_bytes)");
}

/* recv_command(sock, frame_type, max_frame_bytes, whole) -> what one recv of up to 64 KiB
 * (remoting/receive.py READ_CHUNK) from sock (a socket, or its descriptor) brought: b"" when
 * nothing was there (EAGAIN), None when the peer closed, and else, with whole true and the read
 * exactly one complete frame, whole_command's answer (the command, or the Frame the scan
 * declined), or the bytes read. OSError as socket.recv raises it. remoting/receive.py
 * recv_command_reference is the Python twin: the selector's read of a ready connection and its
 * judgement in one call, the bytes of a lone request's read made and freed here. */
#define READ_CHUNK 65536

/* One recv of up to READ_CHUNK from fd, judged as recv_command says (its answer, or NULL with
 * the error set); check_signals: run the signal handlers on EINTR, as socket.recv does (the
 * round's read, recv_round, leaves them to the interpreter's next check instead, so that one
 * connection's signal cannot lose the bytes already read from the others). */
/* The reads' buffer, the module's own (the GIL is held throughout a read and its judgement):
 * a lone request's read then allocates and frees no 64 KiB object, and touches the same lines
 * each time. A read that comes while it is in use (a finalizer that an allocation during the
 * judgement ran, reading a socket) takes a bytes object of its own, as every read did. */
static unsigned char read_buffer[READ_CHUNK];
static int read_buffer_busy;

/* recv of up to READ_CHUNK into buf: the count, 0 at EOF, -1 with the error set (b"" asked
 * for by *eagain on EAGAIN). */
static ssize_t recv_into(int fd, unsigned char *buf, int check_signals, int *eagain) {
    for (;;) {
        /* MSG_DONTWAIT: never blocks the event loop, whatever the socket's mode. */
        ssize_t n = recv(fd, buf, READ_CHUNK, MSG_DONTWAIT);
        if (n >= 0) return n;
        int err = errno;
        if (err == EINTR) {
            if (check_signals && PyErr_CheckSignals() < 0) return -1;
            continue;
        }
        if (err == EAGAIN || err == EWOULDBLOCK) {
            *eagain = 1;
            return -1;
        }
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
}

/* The judgement of n bytes read into buf; *own the bytes object buf is (taken when it becomes
 * the answer: *own is then NULL), else NULL. */
static PyObject *judged(PyObject **own, const unsigned char *buf, ssize_t n,
                        PyTypeObject *frame_type, long long max_frame, int whole_read) {
    if (whole_read) {
        PyObject *got = whole_of(frame_type, buf, (Py_ssize_t)n, max_frame, 1);
        if (got != Py_None) return got; /* or NULL: an error */
        Py_DECREF(got);
    }
    if (*own == NULL) return PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)n);
    PyObject *data = *own;
    *own = NULL;
    if (_PyBytes_Resize(&data, (Py_ssize_t)n) < 0) return NULL;
    return data;
}

PyObject *recv_judged(int fd, PyTypeObject *frame_type, long long max_frame, int whole_read,
                      int check_signals) {
    PyObject *own = NULL;
    unsigned char *buf = read_buffer;
    if (read_buffer_busy) {
        if ((own = PyBytes_FromStringAndSize(NULL, READ_CHUNK)) == NULL) return NULL;
        buf = (unsigned char *)PyBytes_AS_STRING(own);
    } else {
        read_buffer_busy = 1;
    }
    int eagain = 0;
    ssize_t n = recv_into(fd, buf, check_signals, &eagain);
    PyObject *out;
    if (n > 0)
        out = judged(&own, buf, n, frame_type, max_frame, whole_read);
    else if (n == 0)
        out = Py_NewRef(Py_None);
    else
        out = eagain ? PyBytes_FromStringAndSize(NULL, 0) : NULL;
    if (buf == read_buffer)
        read_buffer_busy = 0;
    else
        Py_XDECREF(own);
    return out;
}

PyObject *recv_command(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    static const char usage[] = "recv_command(sock, frame_type, max_frame_bytes, whole)";
    if (nargs != 4 || !PyType_Check(args[1]) ||
        !PyType_IsSubtype((PyTypeObject *)args[1], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    int fd = PyObject_AsFileDescriptor(args[0]);
    if (fd < 0) {
        if (PyErr_ExceptionMatches(PyExc_ValueError)) { /* a closed socket: as its recv says */
            PyErr_Clear();
            errno = EBADF;
            PyErr_SetFromErrno(PyExc_OSError);
        }
        return NULL;
    }
    long long max_frame = PyLong_AsLongLong(args[2]);
    if (max_frame == -1 && PyErr_Occurred()) return NULL;
    int whole_read = PyObject_IsTrue(args[3]);
    if (whole_read < 0) return NULL;
    return recv_judged(fd, (PyTypeObject *)args[1], max_frame, whole_read, 1);
}
