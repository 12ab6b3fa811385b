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
static PyObject *whole(PyObject *const *args, Py_ssize_t nargs, int scan, const char *usage) {
    if (!frame_args(args, nargs, 3, usage)) return NULL;
    PyTypeObject *type = (PyTypeObject *)args[0];
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(args[1]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[1]);
    long long max_frame = PyLong_AsLongLong(args[2]);
    if (max_frame == -1 && PyErr_Occurred()) return NULL;
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

PyObject *whole_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return whole(args, nargs, 0, "whole_frame(frame_type, bytes, max_frame_bytes)");
}

PyObject *whole_command(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return whole(args, nargs, 1, "whole_command(frame_type, bytes, max_frame_bytes)");
}
