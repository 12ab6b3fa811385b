/* A pull's ConsumeQueue units to record slices (broker/store/reads.py python_scan_run, the
 * reference): the per-message loop of GetMessage while the records stay in one mapped segment.
 *
 * scan_units(units, view, start, end, codes, max_phys, memory_threshold, max_msgs, disk_bytes,
 *            disk_count, memory_bytes, memory_count, buffers)
 *   -> (scanned, count, total_bytes, max_phys_pulling, stop)
 * appends to ``buffers`` a slice of ``view`` (the segment mapped from log offset ``start``,
 * written up to ``end``) for each record that passes the tag codes (None: every tag) and the
 * transfer limits. stop: 0 the units ran out, 1 the limits were reached (the unit that would
 * pass them is not scanned), 2 the next record is not in this segment (not scanned: the caller
 * goes on from there).
 *
 * scan_runs(the same arguments) -> the same tuple, but a record that starts where the last one
 * taken ends joins its slice: ``buffers`` holds runs of adjacent records (a pull's reply body,
 * written as it is; a slice costs more than the record's share of the write). count still
 * counts records. */
#include "store.h"

/* Append view[pos:pos + len] to buffers; -1 with an exception set on failure. */
static int append_slice(PyObject *view, PyObject *buffers, long long pos, long long len) {
    if (len == 0) return 0;
    PyObject *record = PySequence_GetSlice(view, (Py_ssize_t)pos, (Py_ssize_t)(pos + len));
    if (record == NULL) return -1;
    int appended = PyList_Append(buffers, record);
    Py_DECREF(record);
    return appended;
}

int scan_loop(const unsigned char *p, Py_ssize_t total, PyObject *view, PyObject *codes,
              PyObject *buffers, int runs, const ScanLimits *l, ScanOutcome *o) {
    const long long start = l->start, end = l->end, max_phys = l->max_phys;
    Py_ssize_t scanned = 0;
    long long count = 0, total_bytes = 0, max_phys_pulling = 0;
    int stop = 0;
    long long run_pos = 0, run_len = 0; /* the slice not appended yet, relative to start */
    for (; scanned < total; scanned++) {
        const unsigned char *u = p + scanned * CQ_UNIT_SIZE;
        long long phys = get_i64(u), tags = get_i64(u + 12);
        int32_t size = get_i32(u + 8);
        if (size == CQ_FILLER_SIZE || size <= 0) continue; /* corrupt units too, as in Python */
        if (phys < start || phys > end) { /* not in this segment */
            stop = 2;
            break;
        }
        max_phys_pulling = phys; /* also for the unit that stops the scan, as in Python */
        if (count) {
            int full;
            if (count >= l->max_msgs)
                full = 1;
            else if (max_phys - phys > l->threshold)
                full = total_bytes + size > l->disk_bytes || count >= l->disk_count;
            else
                full = total_bytes + size > l->memory_bytes || count >= l->memory_count;
            if (full) {
                stop = 1;
                break;
            }
        }
        if (codes != Py_None) {
            PyObject *code = PyLong_FromLongLong(tags);
            int matched = code == NULL ? -1 : PySet_Contains(codes, code);
            Py_XDECREF(code);
            if (matched < 0) return -1;
            if (!matched) continue;
        }
        if (size > end - phys) {
            stop = 2;
            break;
        }
        /* phys and phys + size lie within [start, end]: no position below overflows */
        if (runs && run_len && phys - start == run_pos + run_len) {
            run_len += size;
        } else {
            if (append_slice(view, buffers, run_pos, run_len) < 0) return -1;
            run_pos = phys - start;
            run_len = size;
        }
        count++;
        total_bytes += size;
    }
    if (append_slice(view, buffers, run_pos, run_len) < 0) return -1;
    o->scanned = scanned;
    o->count = count;
    o->total_bytes = total_bytes;
    o->max_phys_pulling = max_phys_pulling;
    o->stop = stop;
    return 0;
}

static PyObject *scan(PyObject *const *args, Py_ssize_t nargs, int runs) {
    if (nargs != 13 || !PyMemoryView_Check(args[1]) || !PyList_CheckExact(args[12]) ||
        (args[4] != Py_None && !PyAnySet_Check(args[4]))) {
        PyErr_SetString(PyExc_TypeError, "scan_units(units, view, start, end, codes, max_phys, "
                                         "memory_threshold, max_msgs, 4 limits, buffers)");
        return NULL;
    }
    /* start, end, max_phys, memory_threshold, max_msgs, disk bytes/count, memory bytes/count */
    static const int at[9] = {2, 3, 5, 6, 7, 8, 9, 10, 11};
    long long n[9];
    for (int i = 0; i < 9; i++) {
        n[i] = PyLong_AsLongLong(args[at[i]]);
        if (n[i] == -1 && PyErr_Occurred()) return NULL;
    }
    const ScanLimits limits = {n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8]};
    ScanOutcome o;
    Py_buffer units;
    if (PyObject_GetBuffer(args[0], &units, PyBUF_SIMPLE) < 0) return NULL;
    int failed = scan_loop((const unsigned char *)units.buf, units.len / CQ_UNIT_SIZE, args[1],
                           args[4], args[12], runs, &limits, &o);
    PyBuffer_Release(&units);
    if (failed) return NULL;
    return Py_BuildValue("(nLLLi)", o.scanned, o.count, o.total_bytes, o.max_phys_pulling,
                         o.stop);
}

PyObject *scan_units(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return scan(args, nargs, 0);
}

PyObject *scan_runs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return scan(args, nargs, 1);
}
