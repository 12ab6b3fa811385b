/* A single stored message's dispatch, in one call: its ConsumeQueue unit and its IndexFile
 * entries, when each goes where the queue and the file already are (the reference:
 * broker/store/dispatch.py python_dispatch_single). Anything else (a new queue file, a unit
 * out of order, a full index file) is left to the Python code that handles it. */
#include "speedups.h"

#define CQ_UNIT 20
#define UNIT_DONE 1
#define INDEX_DONE 2
#define MAX_KEYS 64 /* more keys than this on one message: the Python code indexes it */

enum { QUEUE, FILES, MAX_PHYS, MMAP, WROTE, FILE_SIZE, START, INDEX_MAP, SLOTS, MAX_ENTRIES, N_NAMES };
static const char *names[N_NAMES] = {
    "queue", "files", "max_phys_offset", "mmap", "wrote_position", "file_size", "start_offset",
    "file", "slots", "max_entries",
};
static PyObject *keys[N_NAMES];

static int get_ll(PyObject *owner, int name, long long *out) {
    return get_attr_ll(owner, keys[name], out);
}

static int set_ll(PyObject *owner, int name, long long value) {
    return set_attr_ll(owner, keys[name], value);
}

/* ConsumeQueue.put_next: UNIT_DONE when the unit is in (or was already: a re-dispatch), 0
 * when Python must put it, -1 on error. */
static int put_unit(PyObject *consume_queue, long long phys, long long size, long long tags,
                    long long queue_offset) {
    long long max_phys, wrote, file_size, start;
    if (get_ll(consume_queue, MAX_PHYS, &max_phys) < 0) return -1;
    if (phys + size <= max_phys) return UNIT_DONE;
    PyObject *queue = PyObject_GetAttr(consume_queue, keys[QUEUE]);
    PyObject *files = queue == NULL ? NULL : PyObject_GetAttr(queue, keys[FILES]);
    Py_XDECREF(queue);
    if (files == NULL) return -1;
    int done = 0;
    Py_buffer mm = {0};
    if (!PyList_Check(files) || PyList_GET_SIZE(files) == 0) goto out;
    PyObject *mapped = PyList_GET_ITEM(files, PyList_GET_SIZE(files) - 1);
    if (get_ll(mapped, WROTE, &wrote) < 0 || get_ll(mapped, FILE_SIZE, &file_size) < 0 ||
        get_ll(mapped, START, &start) < 0)
        goto fail;
    if (wrote >= file_size || start + wrote != queue_offset * CQ_UNIT) goto out;
    PyObject *mmap_o = PyObject_GetAttr(mapped, keys[MMAP]);
    if (mmap_o == NULL) goto fail;
    int got = PyObject_GetBuffer(mmap_o, &mm, PyBUF_WRITABLE);
    Py_DECREF(mmap_o);
    if (got < 0) goto fail;
    if (wrote + CQ_UNIT > mm.len) {
        PyErr_SetString(PyExc_ValueError, "consume queue file shorter than its size");
        goto fail;
    }
    unsigned char *p = (unsigned char *)mm.buf + wrote;
    put_i64(p, phys);
    put_i32(p + 8, (int32_t)size);
    put_i64(p + 12, tags);
    if (set_ll(mapped, WROTE, wrote + CQ_UNIT) < 0 ||
        set_ll(consume_queue, MAX_PHYS, phys + size) < 0)
        goto fail;
    done = UNIT_DONE;
out:
    if (mm.obj != NULL) PyBuffer_Release(&mm);
    Py_DECREF(files);
    return done;
fail:
    if (mm.obj != NULL) PyBuffer_Release(&mm);
    Py_DECREF(files);
    return -1;
}

typedef struct {
    uint32_t hashes[MAX_KEYS];
    int count;
} Hashes;

static int collect(void *ctx, uint32_t h) {
    Hashes *k = ctx;
    if (k->count == MAX_KEYS) return -1;
    k->hashes[k->count++] = h;
    return 0;
}

/* IndexFile.put_request_whole: INDEX_DONE when every entry is in (or none was due), 0 when
 * Python must index the message (the file lacks room for all of them, or it has too many
 * keys), -1 on error. */
static int put_index(PyObject *index_file, PyObject *topic, long long phys, long long ts,
                     PyObject *keys_text, PyObject *uniq) {
    long long slots, max_entries;
    if (get_ll(index_file, SLOTS, &slots) < 0 || get_ll(index_file, MAX_ENTRIES, &max_entries) < 0)
        return -1;
    PyObject *file = PyObject_GetAttr(index_file, keys[INDEX_MAP]);
    PyObject *mmap_o = file == NULL ? NULL : PyObject_GetAttr(file, keys[MMAP]);
    Py_XDECREF(file);
    if (mmap_o == NULL) return -1;
    Py_buffer mm;
    int got = PyObject_GetBuffer(mmap_o, &mm, PyBUF_WRITABLE);
    Py_DECREF(mmap_o);
    if (got < 0) return -1;
    int result = -1;
    IndexWriter w;
    if (writer_open(&w, &mm, slots, max_entries) < 0) goto done;
    result = INDEX_DONE;
    if (w.count > 1 && phys <= w.end_phy) goto done; /* indexed before a crash */
    Hashes found = {.count = 0};
    uint32_t base = 31u * unsigned_java_hash(topic) + '#';
    if (each_key_hash(base, keys_text, uniq, collect, &found) < 0 ||
        w.count + found.count > w.max_entries) {
        result = 0;
        goto done;
    }
    for (int i = 0; i < found.count; i++)
        writer_add(&w, (long long)(int32_t)found.hashes[i], phys, ts);
    writer_close(&w);
done:
    PyBuffer_Release(&mm);
    return result;
}

/* dispatch_single(consume_queue | None, index_file | None, request) -> done bits
 * request: a DispatchRequest. 1: its unit is in consume_queue; 2: its keys are in index_file
 * (a rolled-back half has none). What is not done, the caller does the general way. */
PyObject *dispatch_single(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "dispatch_single takes 3 arguments");
        return NULL;
    }
    for (int i = 0; i < N_NAMES; i++)
        if (keys[i] == NULL && (keys[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return NULL;
    PyObject *consume_queue = args[0], *index_file = args[1], *request = args[2];
    if (!PyTuple_Check(request) || PyTuple_GET_SIZE(request) < 10 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(request, 0)) ||
        !PyUnicode_Check(PyTuple_GET_ITEM(request, 7)) ||
        !PyUnicode_Check(PyTuple_GET_ITEM(request, 8))) {
        PyErr_SetString(PyExc_TypeError, "a request is a DispatchRequest");
        return NULL;
    }
    long long n[5]; /* phys offset, size, tags code, store timestamp, queue offset */
    static const int at[5] = {2, 3, 4, 5, 6};
    for (int i = 0; i < 5; i++)
        if ((n[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(request, at[i]))) == -1 && PyErr_Occurred())
            return NULL;
    long long sys_flag = PyLong_AsLongLong(PyTuple_GET_ITEM(request, 9));
    if (sys_flag == -1 && PyErr_Occurred()) return NULL;
    int done = 0, part;
    if (consume_queue != Py_None) {
        if ((part = put_unit(consume_queue, n[0], n[1], n[2], n[4])) < 0) return NULL;
        done |= part;
    }
    if (index_file != Py_None) {
        if ((sys_flag & 0xC) == 0xC) { /* a rolled-back half is not indexed */
            done |= INDEX_DONE;
        } else {
            part = put_index(index_file, PyTuple_GET_ITEM(request, 0), n[0], n[3],
                             PyTuple_GET_ITEM(request, 7), PyTuple_GET_ITEM(request, 8));
            if (part < 0) return NULL;
            done |= part;
        }
    }
    return PyLong_FromLong(done);
}
