/* Faulting in mapped pages ahead of the writer (broker/store/warm.py). */
#include "store.h"
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* populate_write(mapping, start, length) -> bool
 * Fault in the pages of [start, start + length) of a writable shared mapping, ready for writing,
 * without changing a byte (MADV_POPULATE_WRITE), with the GIL released: about 1 us a page in
 * bulk against ~14 us when an append faults them in one by one. False when the kernel does not
 * know the advice (before 5.14). */
PyObject *populate_write(PyObject *self, PyObject *args) {
    Py_buffer mapping;
    Py_ssize_t start, length;
    if (!PyArg_ParseTuple(args, "w*nn", &mapping, &start, &length)) return NULL;
    PyObject *result = NULL;
    if (start < 0 || length < 0 || start > mapping.len || length > mapping.len - start) {
        PyErr_SetString(PyExc_ValueError, "range outside the mapping");
        goto done;
    }
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)mapping.buf + (uintptr_t)start) & ~(uintptr_t)(page - 1);
    uintptr_t to = (uintptr_t)mapping.buf + (uintptr_t)(start + length);
    if ((uintptr_t)mapping.buf % (uintptr_t)page != 0) {
        PyErr_SetString(PyExc_ValueError, "the buffer is not a page-aligned mapping");
        goto done;
    }
    int rc = 0, err = 0;
    if (to > from) {
        Py_BEGIN_ALLOW_THREADS
        rc = madvise((void *)from, to - from, MADV_POPULATE_WRITE);
        err = errno;
        Py_END_ALLOW_THREADS
    }
    if (rc != 0 && err == EINVAL) {
        result = Py_False;
        Py_INCREF(result);
    } else if (rc != 0) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
    } else {
        result = Py_True;
        Py_INCREF(result);
    }
done:
    PyBuffer_Release(&mapping);
    return result;
}

/* sync_range(mapping, start, length) -> None
 * fdatasync of [start, start + length) of a shared file mapping only: msync(MS_SYNC), which Linux
 * runs as a ranged fdatasync (the range's dirty pages written and waited for, then the journal
 * commit the file's metadata needs), with the GIL released. The CommitLog's flush takes this
 * instead of fdatasync of the whole segment, which also wrote back the zero pages the warmer had
 * populated ahead of the writer, and write-protected them, so the appender faulted on them
 * again. Raises OSError with the errno (EIO, ENOSPC). */
PyObject *sync_range(PyObject *self, PyObject *args) {
    Py_buffer mapping;
    Py_ssize_t start, length;
    if (!PyArg_ParseTuple(args, "w*nn", &mapping, &start, &length)) return NULL;
    PyObject *result = NULL;
    if (start < 0 || length < 0 || start > mapping.len || length > mapping.len - start) {
        PyErr_SetString(PyExc_ValueError, "range outside the mapping");
        goto done;
    }
    long page = sysconf(_SC_PAGESIZE);
    if ((uintptr_t)mapping.buf % (uintptr_t)page != 0) {
        PyErr_SetString(PyExc_ValueError, "the buffer is not a page-aligned mapping");
        goto done;
    }
    uintptr_t from = ((uintptr_t)mapping.buf + (uintptr_t)start) & ~(uintptr_t)(page - 1);
    uintptr_t to = (uintptr_t)mapping.buf + (uintptr_t)(start + length);
    int rc = 0, err = 0;
    if (to > from) {
        Py_BEGIN_ALLOW_THREADS
        rc = msync((void *)from, to - from, MS_SYNC);
        err = errno;
        Py_END_ALLOW_THREADS
    }
    if (rc != 0) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
    } else {
        result = Py_None;
        Py_INCREF(result);
    }
done:
    PyBuffer_Release(&mapping);
    return result;
}
