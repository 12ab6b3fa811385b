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

static int add_hash(PyObject *out, uint32_t h, PyObject *phy) {
    PyObject *pair = Py_BuildValue("(lO)", (long)(int32_t)h, phy);
    if (pair == NULL) return -1;
    int appended = PyList_Append(out, pair);
    Py_DECREF(pair);
    return appended;
}

/* index_hashes(requests, prefix, done) -> [(key hash, phy offset)]
 * requests: DispatchRequest tuples (phy offset at 2, KEYS at 7, UNIQ_KEY at 8). Per request past
 * `done`: the Java hash of prefix + UNIQ_KEY, then of prefix + each non-empty space-separated
 * key. The reference: broker/store/index_file.py python_index_hashes. */
PyObject *index_hashes(PyObject *self, PyObject *args) {
    PyObject *requests, *prefix;
    long long done;
    if (!PyArg_ParseTuple(args, "OUL", &requests, &prefix, &done)) return NULL;
    PyObject *seq = PySequence_Fast(requests, "requests must be a sequence");
    if (seq == NULL) return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL) goto fail;
    uint32_t base = unsigned_java_hash(prefix);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *request = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(request) || PyTuple_GET_SIZE(request) < 9) {
            PyErr_SetString(PyExc_TypeError, "a request is a DispatchRequest");
            goto fail;
        }
        PyObject *phy = PyTuple_GET_ITEM(request, 2);
        long long phy_value = PyLong_AsLongLong(phy);
        if (phy_value == -1 && PyErr_Occurred()) goto fail;
        if (phy_value <= done) continue;
        PyObject *keys = PyTuple_GET_ITEM(request, 7), *uniq = PyTuple_GET_ITEM(request, 8);
        if (!PyUnicode_Check(keys) || !PyUnicode_Check(uniq)) {
            PyErr_SetString(PyExc_TypeError, "KEYS and UNIQ_KEY are str");
            goto fail;
        }
        Py_ssize_t uniq_length = PyUnicode_GET_LENGTH(uniq);
        if (uniq_length && add_hash(out, java_hash_range(base, uniq, 0, uniq_length), phy) < 0)
            goto fail;
        Py_ssize_t length = PyUnicode_GET_LENGTH(keys), start = 0;
        int kind = PyUnicode_KIND(keys);
        const void *data = PyUnicode_DATA(keys);
        for (Py_ssize_t at = 0; at <= length; at++) {
            if (at < length && PyUnicode_READ(kind, data, at) != ' ') continue;
            if (at > start && add_hash(out, java_hash_range(base, keys, start, at), phy) < 0)
                goto fail;
            start = at + 1;
        }
    }
    Py_DECREF(seq);
    return out;
fail:
    Py_DECREF(seq);
    Py_XDECREF(out);
    return NULL;
}
