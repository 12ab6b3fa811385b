/* IndexFile entries (broker/store/index_file.py python_index_put_entries and
 * python_index_requests).
 *
 * The file: a 40-byte header (begin timestamp, end timestamp, begin phy offset, end phy offset,
 * hash slot count, index count), `slots` int32 slots (each the newest entry number for its
 * hash), then 20-byte entries (key hash, phy offset, time diff in seconds, previous entry). The
 * header in the mapping is the file's state: each call reads it, adds entries and writes it
 * back, so the caller keeps no copy to update. */
#include "store.h"

int writer_open(IndexWriter *w, Py_buffer *mm, long long slots, long long max_entries) {
    w->base = (unsigned char *)mm->buf;
    w->slots = slots;
    w->max_entries = max_entries;
    w->entries_at = INDEX_HEADER_SIZE + slots * INDEX_SLOT_SIZE;
    if (slots <= 0 || max_entries <= 0 || w->entries_at + max_entries * INDEX_ENTRY_SIZE > mm->len) {
        PyErr_SetString(PyExc_ValueError, "index geometry does not fit the buffer");
        return -1;
    }
    w->begin_ts = get_i64(w->base);
    w->end_ts = get_i64(w->base + 8);
    w->begin_phy = get_i64(w->base + 16);
    w->end_phy = get_i64(w->base + 24);
    w->slot_count = get_i32(w->base + 32);
    w->count = get_i32(w->base + 36);
    if (w->count < 1) w->count = 1; /* entry numbers start at 1 */
    w->written = 0;
    return 0;
}

/* 0 when the file is full. The time diff is from the file's begin timestamp as it stands
 * before the entry, which the file's first entry then sets (Java's IndexFile.putKey). */
int writer_add(IndexWriter *w, long long key_hash, long long phy, long long store_ts) {
    if (w->count >= w->max_entries) return 0;
    long long diff = w->begin_ts <= 0 ? 0 : (store_ts - w->begin_ts) / 1000;
    int32_t time_diff = diff < 0 ? 0 : (diff > INT32_MAX ? INT32_MAX : (int32_t)diff);
    key_hash = key_hash == INT32_MIN ? 0 : (key_hash < 0 ? -key_hash : key_hash);
    unsigned char *slot = w->base + INDEX_HEADER_SIZE + (key_hash % w->slots) * INDEX_SLOT_SIZE;
    int32_t previous = get_i32(slot);
    if (previous <= 0 || previous > w->count) {
        previous = 0;
        w->slot_count++;
    }
    unsigned char *e = w->base + w->entries_at + (long long)w->count * INDEX_ENTRY_SIZE;
    put_i32(e, (int32_t)key_hash);
    put_i64(e + 4, phy);
    put_i32(e + 12, time_diff);
    put_i32(e + 16, previous);
    put_i32(slot, w->count);
    if (w->count <= 1) {
        w->begin_phy = phy;
        w->begin_ts = store_ts;
    }
    w->count++;
    w->end_phy = phy;
    w->end_ts = store_ts;
    w->written++;
    return 1;
}

void writer_close(IndexWriter *w) {
    if (!w->written) return;
    put_i64(w->base, w->begin_ts);
    put_i64(w->base + 8, w->end_ts);
    put_i64(w->base + 16, w->begin_phy);
    put_i64(w->base + 24, w->end_phy);
    put_i32(w->base + 32, w->slot_count);
    put_i32(w->base + 36, w->count);
}

/* index_put_entries(mm, slots, max_entries, entries) -> written
 * entries: (key hash, phy offset, store timestamp) tuples, written in order until the file is
 * full. */
PyObject *index_put_entries(PyObject *self, PyObject *args) {
    Py_buffer mm;
    long long slots, max_entries;
    PyObject *entries;
    if (!PyArg_ParseTuple(args, "w*LLO", &mm, &slots, &max_entries, &entries)) return NULL;
    PyObject *result = NULL;
    IndexWriter w;
    PyObject *seq = PySequence_Fast(entries, "entries must be a sequence");
    if (seq == NULL || writer_open(&w, &mm, slots, max_entries) < 0) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *entry = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3) {
            PyErr_SetString(PyExc_TypeError,
                            "an entry is a (key hash, phy offset, store timestamp) tuple");
            break;
        }
        long long key_hash = as_long_long(PyTuple_GET_ITEM(entry, 0));
        long long phy = as_long_long(PyTuple_GET_ITEM(entry, 1));
        long long store_ts = as_long_long(PyTuple_GET_ITEM(entry, 2));
        if (PyErr_Occurred() || !writer_add(&w, key_hash, phy, store_ts)) break;
    }
    writer_close(&w); /* what went in before an error stays in, as in the Python twin */
    if (!PyErr_Occurred()) result = PyLong_FromSsize_t(w.written);
done:
    Py_XDECREF(seq);
    PyBuffer_Release(&mm);
    return result;
}

int each_key_hash(uint32_t base, PyObject *keys, PyObject *uniq, KeyHashSink sink, void *ctx) {
    Py_ssize_t uniq_length = PyUnicode_GET_LENGTH(uniq);
    if (uniq_length && sink(ctx, java_hash_range(base, uniq, 0, uniq_length)) < 0) return -1;
    Py_ssize_t length = PyUnicode_GET_LENGTH(keys), start = 0;
    int kind = PyUnicode_KIND(keys);
    const void *data = PyUnicode_DATA(keys);
    for (Py_ssize_t at = 0; at <= length; at++) {
        if (at < length && PyUnicode_READ(kind, data, at) != ' ') continue;
        if (at > start && sink(ctx, java_hash_range(base, keys, start, at)) < 0) return -1;
        start = at + 1;
    }
    return 0;
}

static uint32_t ascii_hash(uint32_t base, const char *start, const char *end) {
    uint32_t h = base;
    for (const unsigned char *p = (const unsigned char *)start; p < (const unsigned char *)end; p++)
        h = 31u * h + *p;
    return h;
}

/* Bytes below 0x80 are their str's UTF-16 units: the same hashes, in the same order, with no
 * str made for KEYS and UNIQ_KEY (two a plain send; a batch's records alike). */
int each_ascii_key_hash(uint32_t base, const char *const keys[2], const char *const uniq[2],
                        KeyHashSink sink, void *ctx) {
    if (uniq[0] != NULL && uniq[1] > uniq[0] && sink(ctx, ascii_hash(base, uniq[0], uniq[1])) < 0)
        return -1;
    if (keys[0] == NULL) return 0;
    const char *start = keys[0];
    for (const char *at = keys[0]; at <= keys[1]; at++) {
        if (at < keys[1] && *at != ' ') continue;
        if (at > start && sink(ctx, ascii_hash(base, start, at)) < 0) return -1;
        start = at + 1;
    }
    return 0;
}

typedef struct {
    IndexWriter *w;
    PyObject *left, *request;
} Spill;

/* Into the file while it has room, then onto `left`. */
static int add_hash(void *ctx, uint32_t h) {
    IndexWriter *w = ((Spill *)ctx)->w;
    PyObject *left = ((Spill *)ctx)->left, *request = ((Spill *)ctx)->request;
    long long key_hash = (long long)(int32_t)h;
    PyObject *phy = PyTuple_GET_ITEM(request, DR_PHYS_OFFSET);
    PyObject *ts = PyTuple_GET_ITEM(request, DR_STORE_TIMESTAMP);
    if (PyList_GET_SIZE(left) == 0 &&
        writer_add(w, key_hash, as_long_long(phy), as_long_long(ts)))
        return 0;
    PyObject *entry = Py_BuildValue("(LOO)", key_hash, phy, ts);
    if (entry == NULL) return -1;
    int appended = PyList_Append(left, entry);
    Py_DECREF(entry);
    return appended;
}

/* 0, or -1 with TypeError (OverflowError) set when `request` is not a DispatchRequest whose
 * phy offset and store timestamp are int64 and KEYS and UNIQ_KEY str. */
static int check_request(PyObject *request) {
    if (!PyTuple_Check(request) || PyTuple_GET_SIZE(request) != DR_FIELDS ||
        !PyLong_Check(PyTuple_GET_ITEM(request, DR_PHYS_OFFSET)) ||
        !PyLong_Check(PyTuple_GET_ITEM(request, DR_STORE_TIMESTAMP)) ||
        !PyUnicode_Check(PyTuple_GET_ITEM(request, DR_KEYS)) ||
        !PyUnicode_Check(PyTuple_GET_ITEM(request, DR_UNIQ_KEY))) {
        PyErr_SetString(PyExc_TypeError, "a request is a DispatchRequest");
        return -1;
    }
    if (as_long_long(PyTuple_GET_ITEM(request, DR_PHYS_OFFSET)) == -1 && PyErr_Occurred())
        return -1;
    if (as_long_long(PyTuple_GET_ITEM(request, DR_STORE_TIMESTAMP)) == -1 &&
        PyErr_Occurred())
        return -1;
    return 0;
}

/* index_requests(mm, slots, max_entries, requests, prefix)
 *   -> [(key hash, phy offset, store timestamp)]
 * requests: DispatchRequests in log order. Per request past what the file already indexes (its end phy offset,
 * once it has entries): the Java hash of prefix + UNIQ_KEY, then of prefix + each non-empty
 * space-separated key, added to the file. Returns what did not fit (the file is full), for the
 * next file. The requests are all checked first: a malformed one writes nothing. */
PyObject *index_requests(PyObject *self, PyObject *args) {
    Py_buffer mm;
    long long slots, max_entries;
    PyObject *requests, *prefix;
    if (!PyArg_ParseTuple(args, "w*LLOU", &mm, &slots, &max_entries, &requests, &prefix))
        return NULL;
    IndexWriter w;
    PyObject *left = NULL;
    PyObject *seq = PySequence_Fast(requests, "requests must be a sequence");
    if (seq == NULL || writer_open(&w, &mm, slots, max_entries) < 0) goto fail;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++)
        if (check_request(PySequence_Fast_GET_ITEM(seq, i)) < 0) goto fail;
    long long done = w.count > 1 ? w.end_phy : -1; /* re-dispatch after recovery: skip */
    left = PyList_New(0);
    if (left == NULL) goto fail;
    uint32_t base = unsigned_java_hash(prefix);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *request = PySequence_Fast_GET_ITEM(seq, i);
        if (as_long_long(PyTuple_GET_ITEM(request, DR_PHYS_OFFSET)) <= done) continue;
        Spill spill = {&w, left, request};
        if (each_key_hash(base, PyTuple_GET_ITEM(request, DR_KEYS),
                          PyTuple_GET_ITEM(request, DR_UNIQ_KEY), add_hash, &spill) < 0)
            goto fail_written;
    }
    writer_close(&w);
    Py_DECREF(seq);
    PyBuffer_Release(&mm);
    return left;
fail_written:
    writer_close(&w); /* out of memory midway: what went in stays in */
fail:
    Py_XDECREF(seq);
    Py_XDECREF(left);
    PyBuffer_Release(&mm);
    return NULL;
}

typedef struct {
    uint32_t hashes[INDEX_REQUEST_MAX_KEYS];
    int count;
} Hashes;

static int collect(void *ctx, uint32_t h) {
    Hashes *k = ctx;
    if (k->count == INDEX_REQUEST_MAX_KEYS) return -1;
    k->hashes[k->count++] = h;
    return 0;
}

/* index_request(mm, slots, max_entries, request) -> bool
 * One record's entries (its UNIQ_KEY, then each KEYS entry) all in the file, or none: False,
 * nothing written, when the file lacks room for all of them or the record has more than
 * INDEX_REQUEST_MAX_KEYS keys (the general path goes on in the next file). True also when the
 * file already indexes the record (recovery re-dispatches). */
PyObject *index_request(PyObject *self, PyObject *args) {
    Py_buffer mm;
    long long slots, max_entries;
    PyObject *request;
    if (!PyArg_ParseTuple(args, "w*LLO", &mm, &slots, &max_entries, &request)) return NULL;
    PyObject *result = NULL;
    IndexWriter w;
    if (check_request(request) < 0 || !PyUnicode_Check(PyTuple_GET_ITEM(request, DR_TOPIC))) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a request is a DispatchRequest");
        goto done;
    }
    if (writer_open(&w, &mm, slots, max_entries) < 0) goto done;
    long long phys = as_long_long(PyTuple_GET_ITEM(request, DR_PHYS_OFFSET));
    long long store_ts = as_long_long(PyTuple_GET_ITEM(request, DR_STORE_TIMESTAMP));
    if (w.count > 1 && phys <= w.end_phy) { /* indexed before a crash */
        result = Py_NewRef(Py_True);
        goto done;
    }
    Hashes found = {.count = 0};
    uint32_t base = 31u * unsigned_java_hash(PyTuple_GET_ITEM(request, DR_TOPIC)) + '#';
    if (each_key_hash(base, PyTuple_GET_ITEM(request, DR_KEYS),
                      PyTuple_GET_ITEM(request, DR_UNIQ_KEY), collect, &found) < 0 ||
        w.count + found.count > w.max_entries) {
        result = Py_NewRef(Py_False);
        goto done;
    }
    for (int i = 0; i < found.count; i++)
        writer_add(&w, (long long)(int32_t)found.hashes[i], phys, store_ts);
    writer_close(&w);
    result = Py_NewRef(Py_True);
done:
    PyBuffer_Release(&mm);
    return result;
}

/* index_put_keys(mm, slots, max_entries, keys, store_timestamp)
 *   -> [(key hash, phy offset, store timestamp)]
 * keys: a batch put's packed index entries (BATCH_KEY_SIZE each: key hash int32, phy offset
 * int64, big-endian; batch_dispatch.c), added in order as index_requests adds a batch's:
 * entries of records the file already indexes skipped, the rest into the file while it has
 * room. Returns what did not fit, for the next file. */
PyObject *index_put_keys(PyObject *self, PyObject *args) {
    Py_buffer mm, keys;
    long long slots, max_entries, store_ts;
    if (!PyArg_ParseTuple(args, "w*LLy*L", &mm, &slots, &max_entries, &keys, &store_ts))
        return NULL;
    IndexWriter w;
    PyObject *left = NULL;
    if (keys.len % BATCH_KEY_SIZE) {
        PyErr_SetString(PyExc_ValueError, "packed index entries are 12 bytes each");
        goto done;
    }
    if (writer_open(&w, &mm, slots, max_entries) < 0 || (left = PyList_New(0)) == NULL)
        goto done;
    long long indexed = w.count > 1 ? w.end_phy : -1; /* re-dispatch after recovery: skip */
    const unsigned char *p = keys.buf, *end = p + keys.len;
    for (; p < end; p += BATCH_KEY_SIZE) {
        long long key_hash = get_i32(p), phy = get_i64(p + 4);
        if (phy <= indexed) continue;
        if (PyList_GET_SIZE(left) == 0 && writer_add(&w, key_hash, phy, store_ts)) continue;
        PyObject *entry = Py_BuildValue("(LLL)", key_hash, phy, store_ts);
        if (entry == NULL || PyList_Append(left, entry) < 0) {
            Py_XDECREF(entry);
            Py_CLEAR(left);
            break;
        }
        Py_DECREF(entry);
    }
    writer_close(&w); /* out of memory midway: what went in stays in */
done:
    PyBuffer_Release(&keys);
    PyBuffer_Release(&mm);
    return left;
}
