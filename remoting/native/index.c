/* IndexFile entries (broker/store/index_file.py IndexFile._put_entries_python). */
#include "speedups.h"

/* index_put_entries(mm, slots, entries_at, max_entries, count, time_diff, entries)
 *   -> (written, new_count, slots_taken)
 * entries: (key hash, phy offset) pairs. The file layout: 40-byte header, `slots` int32 slots,
 * then 20-byte entries (key hash, phy offset, time diff, previous entry). */
PyObject *index_put_entries(PyObject *self, PyObject *args) {
    Py_buffer mm;
    long long slots, entries_at, max_entries, count, time_diff;
    PyObject *entries;
    if (!PyArg_ParseTuple(args, "w*LLLLLO", &mm, &slots, &entries_at, &max_entries, &count,
                          &time_diff, &entries))
        return NULL;
    PyObject *result = NULL;
    PyObject *seq = PySequence_Fast(entries, "entries must be a sequence");
    if (seq == NULL) goto done;
    if (slots <= 0 || entries_at < 40 + slots * 4 || entries_at + max_entries * 20 > mm.len) {
        PyErr_SetString(PyExc_ValueError, "index geometry does not fit the buffer");
        goto done;
    }
    unsigned char *base = (unsigned char *)mm.buf;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), written = 0;
    long long taken = 0;
    for (; written < n && count < max_entries; written++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, written);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "an entry is a (key hash, phy offset) tuple");
            goto done;
        }
        long long key_hash = PyLong_AsLongLong(PyTuple_GET_ITEM(pair, 0));
        long long phy = PyLong_AsLongLong(PyTuple_GET_ITEM(pair, 1));
        if (PyErr_Occurred()) goto done;
        key_hash = key_hash == INT32_MIN ? 0 : (key_hash < 0 ? -key_hash : key_hash);
        unsigned char *slot = base + 40 + (key_hash % slots) * 4;
        int32_t previous = get_i32(slot);
        if (previous <= 0 || previous > count) {
            previous = 0;
            taken++;
        }
        unsigned char *e = base + entries_at + count * 20;
        put_i32(e, (int32_t)key_hash);
        put_i64(e + 4, phy);
        put_i32(e + 12, (int32_t)time_diff);
        put_i32(e + 16, previous);
        put_i32(slot, (int32_t)count);
        count++;
    }
    result = Py_BuildValue("nLL", written, count, taken);
done:
    Py_XDECREF(seq);
    PyBuffer_Release(&mm);
    return result;
}
