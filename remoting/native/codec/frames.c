/* The complete frames at the front of a read (remoting/frame.py FrameDecoder.next_frame, the
 * reference), cut in one call instead of one Python call per frame: issue 27's pipelined sends
 * bring dozens per 64 KiB read.
 *
 * split_frames(frame_type, buffer, pos, max_frame_bytes) -> (frames, pos): Frame tuples
 * (serialize_type, header, body) for each complete frame from pos whose length is within
 * [4, max_frame_bytes], serialize type 0 or 1 and header within the frame; it stops at the first
 * frame that is incomplete or not so, which the reference then waits for or refuses. */
#include "codec.h"

static uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

PyObject *split_frames(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyType_Check(args[0]) || !PyBytes_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "split_frames(frame_type, bytes, pos, max_frame_bytes)");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)args[0];
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(args[1]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[1]);
    Py_ssize_t pos = PyLong_AsSsize_t(args[2]);
    long long max_frame = PyLong_AsLongLong(args[3]);
    if (PyErr_Occurred()) return NULL;
    if (pos < 0 || pos > size) return PyErr_Format(PyExc_ValueError, "pos %zd outside", pos);
    PyObject *frames = PyList_New(0);
    if (frames == NULL) return NULL;
    while (size - pos >= 8) {
        int32_t length = (int32_t)be32(data + pos);
        uint32_t mark = be32(data + pos + 4);
        if (length < 4 || length > max_frame || size - pos < 4 + (Py_ssize_t)length) break;
        uint32_t serialize_type = mark >> 24, header_length = mark & 0x00FFFFFF;
        if (serialize_type > 1 || (Py_ssize_t)header_length > (Py_ssize_t)length - 4) break;
        Py_ssize_t header_end = pos + 8 + header_length, frame_end = pos + 4 + length;
        PyObject *frame = type->tp_alloc(type, 3);
        if (frame == NULL) goto error;
        PyObject *kind = PyLong_FromLong((long)serialize_type);
        PyObject *header = PyBytes_FromStringAndSize((const char *)data + pos + 8, header_length);
        PyObject *body = PyBytes_FromStringAndSize((const char *)data + header_end,
                                                   frame_end - header_end);
        if (kind == NULL || header == NULL || body == NULL) {
            Py_XDECREF(kind);
            Py_XDECREF(header);
            Py_XDECREF(body);
            Py_DECREF(frame);
            goto error;
        }
        PyTuple_SET_ITEM(frame, 0, kind);
        PyTuple_SET_ITEM(frame, 1, header);
        PyTuple_SET_ITEM(frame, 2, body);
        int appended = PyList_Append(frames, frame);
        Py_DECREF(frame);
        if (appended < 0) goto error;
        pos = frame_end;
    }
    return Py_BuildValue("(Nn)", frames, pos);
error:
    Py_DECREF(frames);
    return NULL;
}

/* whole_frame(frame_type, data, max_frame_bytes) -> Frame or None: data as one frame when it
 * is exactly one complete frame that split_frames would cut (a lone request's read), else None
 * (remoting/frame.py FrameDecoder.whole_frame, the reference, says the same). */
PyObject *whole_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyType_Check(args[0]) ||
        !PyType_IsSubtype((PyTypeObject *)args[0], &PyTuple_Type) ||
        !PyBytes_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "whole_frame(frame_type, bytes, max_frame_bytes)");
        return NULL;
    }
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
    PyObject *kind = PyLong_FromLong((long)serialize_type);
    PyObject *header = PyBytes_FromStringAndSize((const char *)data + 8, header_length);
    PyObject *body = PyBytes_FromStringAndSize((const char *)data + header_end, size - header_end);
    PyObject *frame = type->tp_alloc(type, 3);
    if (kind == NULL || header == NULL || body == NULL || frame == NULL) {
        Py_XDECREF(kind);
        Py_XDECREF(header);
        Py_XDECREF(body);
        Py_XDECREF(frame);
        return NULL;
    }
    PyTuple_SET_ITEM(frame, 0, kind);
    PyTuple_SET_ITEM(frame, 1, header);
    PyTuple_SET_ITEM(frame, 2, body);
    return frame;
}
