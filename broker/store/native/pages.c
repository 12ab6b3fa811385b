/* Faulting in mapped pages ahead of the writer (broker/store/warm.py). */
#include "store.h"
#include <errno.h>
#include <limits.h>
#include <sys/mman.h>
#include <unistd.h>

/* The size of each write of zero_ahead: the page cache takes a folio of at most this size for
 * a write that covers it. */
#define ZERO_PIECE (256 * 1024)
static const char zeros[ZERO_PIECE];
/* How much zero_ahead writes between the points where it offers the GIL to a waiting thread. */
#define ZERO_STEP (1024 * 1024)

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

static int long_attr(PyObject *obj, const char *name, long long *out) {
    PyObject *value = PyObject_GetAttrString(obj, name);
    if (value == NULL) return -1;
    *out = PyLong_AsLongLong(value);
    Py_DECREF(value);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* zero_ahead(mapped, start, length) -> int
 * Write zeros with pwrite over the whole pages of [start, start + length) of a CommitLog
 * segment's file that lie past its writer, and return how many bytes were written. Those bytes
 * are zeros already (a segment is zeros past its write position: allocated so, and recovery
 * zeroes a torn tail), so no byte changes; what changes is how the page cache gets them. The
 * warmer's MADV_POPULATE_WRITE alone reads them in through readahead, in folios of up to 2 MiB;
 * a write of ZERO_PIECE takes folios of that size at most and needs no zero-fill of its own.
 * On a VM whose balloon reports free memory to its host, large folios come from the large free
 * blocks the host has taken back (each page then faults on the host as it is zeroed, 5-10 us),
 * small ones first from the fragments of free memory that are too small to be reported
 * (docs/scaling.md, "What a new CommitLog page costs the broker (issue 27, pagecost round)").
 *
 * The GIL is held on purpose: every write into a segment (appends, HA appends, recovery) runs
 * with it, so within one step the writer cannot move between the reading of its position and
 * the last zero written, and no record it appends is ever overwritten. The file descriptor is
 * read under the same hold (MappedFile.close sets it to -1 before closing it). Between steps of
 * ZERO_STEP bytes the GIL is offered to a waiting thread, so a cold step stalls the event loop
 * no longer than any Python thread does; both are read again after. Where the GIL does not
 * serialise threads (a free-threaded build) nothing is written.
 * Reads mapped.wrote_position, mapped.file_size and mapped._fd (plain slots: no Python runs).
 * Raises OSError with the errno (ENOSPC, EIO), ValueError for a range outside the segment. */
PyObject *zero_ahead(PyObject *self, PyObject *args) {
    PyObject *mapped;
    Py_ssize_t start, length;
    if (!PyArg_ParseTuple(args, "Onn", &mapped, &start, &length)) return NULL;
    long long wrote, file_size, fd;
    if (long_attr(mapped, "file_size", &file_size) < 0) return NULL;
    if (start < 0 || length < 0 || start > file_size || length > file_size - start) {
        PyErr_SetString(PyExc_ValueError, "range outside the segment");
        return NULL;
    }
    long long page = sysconf(_SC_PAGESIZE);
    long long at = start + (page - start % page) % page;
    long long to = (start + length) - (start + length) % page;
    long long written = 0;
#ifndef Py_GIL_DISABLED
    while (at < to) {
        if (written > 0) {  /* a waiting thread may take the GIL here: its appends move wrote */
            Py_BEGIN_ALLOW_THREADS
            Py_END_ALLOW_THREADS
        }
        if (long_attr(mapped, "wrote_position", &wrote) < 0 || long_attr(mapped, "_fd", &fd) < 0)
            return NULL;
        if (fd < 0 || fd > INT_MAX) break;  /* closed: the segment is going away */
        long long past = wrote < 0 ? 0 : wrote + (page - wrote % page) % page;
        if (at < past) at = past;
        long long step_end = at + ZERO_STEP < to ? at + ZERO_STEP : to;
        while (at < step_end) {
            size_t piece = (size_t)(step_end - at < ZERO_PIECE ? step_end - at : ZERO_PIECE);
            ssize_t done = pwrite((int)fd, zeros, piece, (off_t)at);
            if (done < 0 && errno == EINTR) continue;
            if (done < 0) return PyErr_SetFromErrno(PyExc_OSError);
            if (done == 0) return PyLong_FromLongLong(written);  /* the populate does the rest */
            at += done;
            written += done;
        }
    }
#endif
    return PyLong_FromLongLong(written);
}
