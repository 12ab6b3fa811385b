/* A found pull in one call (broker/store/reads_found.py python_pull_found, the reference): the
 * ConsumeQueue lookup and its units, the CommitLog segment, the unit scan (scan_loop), the
 * reply frame's prefix and JSON header (broker/processor/pull_reply.py found_reply's bytes)
 * and the store's and the broker's stats of a found pull.
 *
 * pull_found(store, topic, queue_id, queue_offset, max_msgs, codes, opaque, suggest,
 *            slow_suggest, items) -> list | None
 * The list is the reply's buffers: the frame's prefix and header in one bytes, then the record
 * runs as slices of the mapped segment (no copy). None, with nothing counted and nothing
 * changed, for every case it does not take: the queue or its file missing, the offset outside
 * what the queue holds, the records in another segment, nothing that passes the filter, a
 * frame past int32. The caller then runs the general path, which decides every status.
 *
 * Like put_cq_runs, it reads attributes of the store's Python objects (the store's reader and
 * stats, the reader's tables, files, config and memory threshold; slots read at their offsets
 * and plain instance attributes, so no Python runs) and sets the counters of the stats objects: the Python lookups
 * and additions are what it saves. `items` is the (messages, bytes, broker messages) StatsItem
 * triple of BrokerStatsManager.on_get. */
#include <time.h>

#include "store.h"

#define MIN_UNITS (16000 / CQ_UNIT_SIZE) /* Java reads at least 16,000 bytes of units */
#define REPLY_HEADER_MAX 384

enum {
    N_READER, N_STATS, N_CONSUME_QUEUES, N_BY_TOPIC, N_QUEUE, N_FILES, N_FILE_SIZE, N_START,
    N_WROTE, N_VIEW, N_MIN_LOGIC, N_COMMIT_LOG, N_CONFIG, N_THRESHOLD, N_DISK_BYTES,
    N_DISK_COUNT, N_MEMORY_BYTES, N_MEMORY_COUNT, N_TIME_MAX, N_FOUND, N_TRANSFERRED, N_VALUE,
    N_TIMES, N_NAMES,
};
static const char *const spelled[N_NAMES] = {
    "reader", "stats", "consume_queues", "by_topic", "queue", "files", "file_size",
    "start_offset", "wrote_position", "view", "min_logic_offset", "commit_log", "config",
    "memory_threshold", "max_transfer_bytes_on_message_in_disk",
    "max_transfer_count_on_message_in_disk", "max_transfer_bytes_on_message_in_memory",
    "max_transfer_count_on_message_in_memory", "get_time_max_ns",
    "get_message_times_total_found", "get_message_transferred_msg_count", "value", "times",
};
static PyObject *names[N_NAMES];

static int intern_names(void) { return intern_table(names, spelled, N_NAMES); }

/* The reads and writes of those attributes, at their slots' offsets where the store's objects
 * keep them in __slots__ (store.h slot_get/slot_set, broker/store/slotted.py), generic
 * otherwise: one cache per name, as plain_pass.c keeps them. */
static SlotCache get_sites[N_NAMES], set_sites[N_NAMES];
static PyObject *get(PyObject *o, int name) { return slot_get(o, names[name], &get_sites[name]); }
static int set(PyObject *o, int name, PyObject *v) {
    return slot_set(o, names[name], v, &set_sites[name]);
}

static int int_attr(PyObject *o, int name, long long *value) {
    PyObject *v = get(o, name);
    if (v == NULL) return -1;
    *value = as_long_long(v);
    Py_DECREF(v);
    return *value == -1 && PyErr_Occurred() ? -1 : 0;
}

/* Python's floor division (b != 0). */
static long long floordiv(long long a, long long b) {
    long long q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The file of `queue` (a MappedFileQueue) holding `offset`, as MappedFileQueue.find: a new
 * reference, NULL and no error when none, NULL and an error on failure. */
static PyObject *find_file(PyObject *queue, PyObject *files, long long offset) {
    Py_ssize_t n = PyList_GET_SIZE(files);
    long long file_size, first_start, start, size;
    if (n == 0) return NULL;
    if (int_attr(queue, N_FILE_SIZE, &file_size) < 0 ||
        int_attr(PyList_GET_ITEM(files, 0), N_START, &first_start) < 0)
        return NULL;
    if (file_size == 0) {
        PyErr_SetString(PyExc_ZeroDivisionError, "a queue's file size is 0");
        return NULL;
    }
    long long index = floordiv(offset - first_start, file_size);
    for (Py_ssize_t i = -1; i < n; i++) { /* the computed index first, then every file */
        if (i == -1 && !(0 <= index && index < n)) continue;
        PyObject *mapped = PyList_GET_ITEM(files, i == -1 ? (Py_ssize_t)index : i);
        if (int_attr(mapped, N_START, &start) < 0 || int_attr(mapped, N_FILE_SIZE, &size) < 0)
            return NULL;
        if (start <= offset && offset < start + size) return Py_NewRef(mapped);
    }
    return NULL;
}

/* A list attribute, a new reference (a TypeError when it is something else). */
static PyObject *list_attr(PyObject *o, int name) {
    PyObject *v = get(o, name);
    if (v != NULL && !PyList_CheckExact(v)) {
        PyErr_Format(PyExc_TypeError, "%s is not a list", spelled[name]);
        Py_CLEAR(v);
    }
    return v;
}

/* o.<name> += add (an int attribute). */
static int add_to(PyObject *o, int name, long long add) {
    long long v;
    if (int_attr(o, name, &v) < 0) return -1;
    PyObject *sum = PyLong_FromLongLong(v + add);
    if (sum == NULL) return -1;
    int failed = set(o, name, sum);
    Py_DECREF(sum);
    return failed;
}

/* The store's stats (StoreStats.on_get of a found read) and the broker's (on_get's items). */
static int count_found(PyObject *store, PyObject *items, long long count, long long size,
                       long long elapsed_ns) {
    long long max_ns;
    PyObject *stats = get(store, N_STATS);
    if (stats == NULL) return -1;
    int failed = int_attr(stats, N_TIME_MAX, &max_ns) < 0;
    if (!failed && elapsed_ns > max_ns) {
        PyObject *v = PyLong_FromLongLong(elapsed_ns);
        failed = v == NULL || set(stats, N_TIME_MAX, v) < 0;
        Py_XDECREF(v);
    }
    failed = failed || add_to(stats, N_FOUND, 1) < 0 || add_to(stats, N_TRANSFERRED, count) < 0;
    Py_DECREF(stats);
    const long long values[3] = {count, size, count};
    for (int i = 0; i < 3 && !failed; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        failed = add_to(item, N_VALUE, values[i]) < 0 || add_to(item, N_TIMES, 1) < 0;
    }
    return failed ? -1 : 0;
}

/* What the read found, for the reply and the stats. */
typedef struct {
    long long low, high, next_begin, max_phys, threshold;
    ScanOutcome scan;
} Found;

/* The units from `queue_offset` in `cq`'s file (python_pull_found's _units): 1 and `units`
 * held (its buffer, `*at` and `*count` the units' place in it), 0 not this path, -1 an
 * error. Sets f->low and f->high. */
static int cq_units(PyObject *cq, long long queue_offset, long long max_msgs, Py_buffer *units,
                    Py_ssize_t *at, Py_ssize_t *count, Found *f) {
    PyObject *queue = NULL, *files = NULL, *mapped = NULL, *view = NULL;
    long long start_offset, wrote, min_logic;
    int status = -1;
    if ((queue = get(cq, N_QUEUE)) == NULL ||
        (files = list_attr(queue, N_FILES)) == NULL)
        goto done;
    status = 0;
    if (PyList_GET_SIZE(files) == 0) goto done;
    mapped = Py_NewRef(PyList_GET_ITEM(files, PyList_GET_SIZE(files) - 1));
    status = -1;
    if (int_attr(mapped, N_START, &start_offset) < 0 || int_attr(mapped, N_WROTE, &wrote) < 0 ||
        int_attr(cq, N_MIN_LOGIC, &min_logic) < 0)
        goto done;
    f->high = floordiv(start_offset + wrote, CQ_UNIT_SIZE);
    f->low = floordiv(min_logic, CQ_UNIT_SIZE);
    status = 0;
    if (queue_offset < f->low || queue_offset >= f->high) goto done;
    long long byte_offset = queue_offset * CQ_UNIT_SIZE; /* below high: no overflow */
    if (byte_offset < start_offset) {
        Py_SETREF(mapped, find_file(queue, files, byte_offset));
        status = -1;
        if (mapped == NULL || int_attr(mapped, N_START, &start_offset) < 0 ||
            int_attr(mapped, N_WROTE, &wrote) < 0) {
            if (!PyErr_Occurred()) status = 0;
            goto done;
        }
    }
    long long start = byte_offset - start_offset, end = wrote;
    long long wanted = max_msgs > MIN_UNITS ? max_msgs : MIN_UNITS;
    if (wanted < (1LL << 40) && start + wanted * CQ_UNIT_SIZE < end)
        end = start + wanted * CQ_UNIT_SIZE;
    status = -1;
    if ((view = get(mapped, N_VIEW)) == NULL ||
        PyObject_GetBuffer(view, units, PyBUF_SIMPLE) < 0)
        goto done;
    if (end > units->len) end = units->len; /* a slice past the view's end stops at it */
    status = end - start >= CQ_UNIT_SIZE;
    if (status) {
        *at = (Py_ssize_t)start;
        *count = (Py_ssize_t)((end - start) / CQ_UNIT_SIZE);
    } else {
        PyBuffer_Release(units);
    }
done:
    Py_XDECREF(view);
    Py_XDECREF(mapped);
    Py_XDECREF(files);
    Py_XDECREF(queue);
    return status;
}

/* The CommitLog segment holding `first` (the last one tried first) and the log's end: a new
 * reference, NULL and no error when none, NULL and an error on failure. */
static PyObject *log_segment(PyObject *reader, long long first, long long *max_phys) {
    PyObject *log = NULL, *queue = NULL, *files = NULL, *segment = NULL;
    long long last_start, last_size, last_wrote;
    if ((log = get(reader, N_COMMIT_LOG)) == NULL ||
        (queue = get(log, N_QUEUE)) == NULL ||
        (files = list_attr(queue, N_FILES)) == NULL || PyList_GET_SIZE(files) == 0)
        goto done;
    PyObject *last = PyList_GET_ITEM(files, PyList_GET_SIZE(files) - 1);
    if (int_attr(last, N_START, &last_start) < 0 || int_attr(last, N_FILE_SIZE, &last_size) < 0 ||
        int_attr(last, N_WROTE, &last_wrote) < 0)
        goto done;
    *max_phys = last_start + last_wrote;
    if (last_start <= first && first < last_start + last_size)
        segment = Py_NewRef(last);
    else
        segment = find_file(queue, files, first);
done:
    Py_XDECREF(files);
    Py_XDECREF(queue);
    Py_XDECREF(log);
    return segment;
}

/* The transfer limits and memory threshold of `reader` (its config, live). */
static int limits_of(PyObject *reader, ScanLimits *l) {
    PyObject *config = get(reader, N_CONFIG);
    int failed = config == NULL || int_attr(reader, N_THRESHOLD, &l->threshold) < 0 ||
                 int_attr(config, N_DISK_BYTES, &l->disk_bytes) < 0 ||
                 int_attr(config, N_DISK_COUNT, &l->disk_count) < 0 ||
                 int_attr(config, N_MEMORY_BYTES, &l->memory_bytes) < 0 ||
                 int_attr(config, N_MEMORY_COUNT, &l->memory_count) < 0;
    Py_XDECREF(config);
    return failed ? -1 : 0;
}

/* The units' records in one CommitLog segment, into `buffers` (python_pull_found's read): 1
 * found, 0 not this path, -1 an error. */
static int read_found(PyObject *reader, PyObject *cq, long long queue_offset, long long max_msgs,
                      PyObject *codes, PyObject *buffers, Found *f) {
    Py_buffer units = {0};
    Py_ssize_t at = 0, count = 0;
    int status = cq_units(cq, queue_offset, max_msgs, &units, &at, &count, f);
    if (status <= 0) return status;
    const unsigned char *unit = (const unsigned char *)units.buf + at;
    ScanLimits l;
    PyObject *view = NULL, *segment = log_segment(reader, get_i64(unit), &l.max_phys);
    long long seg_start, seg_wrote;
    status = -1;
    if (segment == NULL) {
        if (!PyErr_Occurred()) status = 0;
        goto done;
    }
    if (int_attr(segment, N_START, &seg_start) < 0 || int_attr(segment, N_WROTE, &seg_wrote) < 0 ||
        (view = get(segment, N_VIEW)) == NULL || limits_of(reader, &l) < 0)
        goto done;
    if (!PyMemoryView_Check(view)) {
        PyErr_SetString(PyExc_TypeError, "a segment's view is a memoryview");
        goto done;
    }
    l.start = seg_start;
    l.end = seg_start + seg_wrote;
    l.max_msgs = max_msgs;
    if (scan_loop(unit, count, view, codes, buffers, 1, &l, &f->scan) < 0) goto done;
    f->next_begin = queue_offset + f->scan.scanned;
    f->max_phys = l.max_phys;
    f->threshold = l.threshold;
    status = f->scan.stop != 2 && f->scan.count > 0;
done:
    PyBuffer_Release(&units);
    Py_XDECREF(view);
    Py_XDECREF(segment);
    return status;
}

/* The frame's prefix and JSON header (pull_reply.py _HEADER), NULL and no error when the
 * frame would pass int32. */
static PyObject *reply_head(long long opaque, long long suggest, const Found *f) {
    char text[8 + REPLY_HEADER_MAX];
    int length = snprintf(
        text + 8, REPLY_HEADER_MAX,
        "{\"code\":0,\"extFields\":{\"suggestWhichBrokerId\":\"%lld\",\"nextBeginOffset\":"
        "\"%lld\",\"minOffset\":\"%lld\",\"maxOffset\":\"%lld\"},\"flag\":1,\"language\":"
        "\"JAVA\",\"opaque\":%lld,\"remark\":\"FOUND\",\"serializeTypeCurrentRPC\":\"JSON\","
        "\"version\":%d}",
        suggest, f->next_begin, f->low, f->high, opaque, REMOTING_VERSION);
    if (length < 0 || length >= REPLY_HEADER_MAX) {
        PyErr_SetString(PyExc_SystemError, "a found pull's header did not fit");
        return NULL;
    }
    long long frame = 4LL + length + f->scan.total_bytes;
    if (frame > INT32_MAX) return NULL;
    put_i32((unsigned char *)text, (int32_t)frame);
    put_i32((unsigned char *)text + 4, (int32_t)length); /* JSON: serialize type 0 */
    return PyBytes_FromStringAndSize(text, 8 + length);
}

PyObject *pull_found(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 10 || !PyUnicode_CheckExact(args[1]) || !PyLong_CheckExact(args[2]) ||
        (args[5] != Py_None && !PyAnySet_Check(args[5])) || !PyTuple_CheckExact(args[9]) ||
        PyTuple_GET_SIZE(args[9]) != 3) {
        PyErr_SetString(PyExc_TypeError, "pull_found(store, topic, queue_id, queue_offset, "
                                         "max_msgs, codes, opaque, suggest, slow_suggest, items)");
        return NULL;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    static const int at[5] = {3, 4, 6, 7, 8}; /* queue_offset, max_msgs, opaque, suggests */
    long long n[5];
    for (int i = 0; i < 5; i++) {
        n[i] = as_long_long(args[at[i]]);
        if (n[i] == -1 && PyErr_Occurred()) return NULL;
    }
    if (intern_names() < 0) return NULL;
    PyObject *store = args[0], *reader = NULL, *cq_table = NULL, *table = NULL;
    PyObject *buffers = NULL, *result = NULL;
    if ((reader = get(store, N_READER)) == NULL ||
        (cq_table = get(reader, N_CONSUME_QUEUES)) == NULL ||
        (table = get(cq_table, N_BY_TOPIC)) == NULL)
        goto done;
    if (!PyDict_CheckExact(table)) {
        PyErr_SetString(PyExc_TypeError, "by_topic is a dict");
        goto done;
    }
    PyObject *queues = PyDict_GetItemWithError(table, args[1]); /* borrowed */
    PyObject *cq = NULL;
    if (queues != NULL) {
        if (!PyDict_CheckExact(queues)) {
            PyErr_SetString(PyExc_TypeError, "a topic's queues are a dict");
            goto done;
        }
        cq = PyDict_GetItemWithError(queues, args[2]);
    }
    if (cq == NULL) {
        if (!PyErr_Occurred()) result = Py_NewRef(Py_None);
        goto done;
    }
    Py_INCREF(cq); /* the attribute reads below run no Python, but hold it anyway */
    Found f;
    buffers = PyList_New(1);
    int got = buffers == NULL ? -1 : read_found(reader, cq, n[0], n[1], args[5], buffers, &f);
    Py_DECREF(cq);
    if (got <= 0) {
        if (got == 0) result = Py_NewRef(Py_None);
        goto done;
    }
    long long suggest = f.max_phys - f.scan.max_phys_pulling > f.threshold ? n[4] : n[3];
    PyObject *head = reply_head(n[2], suggest, &f);
    if (head == NULL) {
        if (!PyErr_Occurred()) result = Py_NewRef(Py_None);
        goto done;
    }
    PyList_SET_ITEM(buffers, 0, head);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long elapsed = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    if (count_found(store, args[9], f.scan.count, f.scan.total_bytes, elapsed) < 0) goto done;
    result = Py_NewRef(buffers);
done:
    Py_XDECREF(buffers);
    Py_XDECREF(table);
    Py_XDECREF(cq_table);
    Py_XDECREF(reader);
    return result;
}
