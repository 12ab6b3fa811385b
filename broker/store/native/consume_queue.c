/* ConsumeQueue units (broker/store/consume_queue.py python_pack_cq_units). */
#include "store.h"

/* pack_cq_units(buffer, position, requests) -> None
 * The units (phys offset int64, size int32, tags code int64) of DispatchRequests, back to back
 * from `position`; nothing written unless all fit. */
PyObject *pack_cq_units(PyObject *self, PyObject *args) {
    Py_buffer out;
    Py_ssize_t pos;
    PyObject *requests;
    if (!PyArg_ParseTuple(args, "w*nO", &out, &pos, &requests)) return NULL;
    PyObject *result = NULL;
    PyObject *seq = PySequence_Fast(requests, "requests must be a sequence");
    if (seq == NULL) goto done;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    if (pos < 0 || pos > out.len || count > (out.len - pos) / CQ_UNIT_SIZE) {
        PyErr_Format(PyExc_IndexError, "%zd units at %zd do not fit in %zd bytes", count, pos,
                     out.len);
        goto done;
    }
    /* Two passes: every unit is checked before the first byte is written (the Python twin
     * packs all of them in one struct call, which writes nothing when one is out of range). */
    for (int writing = 0; writing < 2; writing++) {
        unsigned char *p = (unsigned char *)out.buf + pos;
        for (Py_ssize_t i = 0; i < count; i++, p += CQ_UNIT_SIZE) {
            PyObject *request = PySequence_Fast_GET_ITEM(seq, i);
            if (!PyTuple_Check(request) || PyTuple_GET_SIZE(request) != DR_FIELDS) {
                PyErr_SetString(PyExc_TypeError, "a request is a DispatchRequest");
                goto done;
            }
            long long phys = as_long_long(PyTuple_GET_ITEM(request, DR_PHYS_OFFSET));
            long long size = as_long_long(PyTuple_GET_ITEM(request, DR_SIZE));
            long long tags = as_long_long(PyTuple_GET_ITEM(request, DR_TAGS_CODE));
            if (PyErr_Occurred()) goto done;
            if (size < INT32_MIN || size > INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "a unit's size is an int32");
                goto done;
            }
            if (writing) {
                put_i64(p, phys);
                put_i32(p + 8, (int32_t)size);
                put_i64(p + 12, tags);
            }
        }
    }
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(seq);
    PyBuffer_Release(&out);
    return result;
}

/* The attribute names put_cq_runs reads and sets, interned once. */
static PyObject *name_queue, *name_files, *name_wrote, *name_file_size, *name_start, *name_mmap,
    *name_max_phys;

static int intern_names(void) {
    if (name_max_phys != NULL) return 0;
    static const char *const spelled[] = {"queue",        "files", "wrote_position",
                                          "file_size",    "start_offset", "mmap",
                                          "max_phys_offset"};
    PyObject **slots[] = {&name_queue, &name_files, &name_wrote, &name_file_size,
                          &name_start, &name_mmap,  &name_max_phys};
    for (size_t i = 0; i < sizeof slots / sizeof *slots; i++) {
        if (*slots[i] != NULL) continue;
        *slots[i] = PyUnicode_InternFromString(spelled[i]);
        if (*slots[i] == NULL) return -1;
    }
    return 0;
}

/* The call sites' slot caches (store.h slot_get, slot_set). */
static SlotCache sites[9];

/* An attribute that must be an int64: 0 and `*value` set, 1 it is missing or not such an int
 * (no error left: the Python twin decides), -1 another error (out of memory). */
static int int_attr(PyObject *o, PyObject *name, long long *value, SlotCache *site) {
    PyObject *v = slot_get(o, name, site);
    if (v == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        return 1;
    }
    int taken = PyLong_CheckExact(v);
    if (taken) {
        *value = as_long_long(v);
        if (*value == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            taken = 0;
        }
    }
    Py_DECREF(v);
    return taken ? 0 : 1;
}

/* What cq_run_check found for a run it takes (store.h CqTarget). */
void cq_target_release(CqTarget *t) {
    if (t->out.obj != NULL) PyBuffer_Release(&t->out);
    Py_CLEAR(t->mapped);
    Py_CLEAR(t->consume_queue);
}

/* Whether a run goes into its queue the common way (see put_cq_runs): 1 it does, `t` holding
 * the queue, its last file, that file's buffer and the new ends (cq_run_write or
 * cq_target_release then); 0 left to the Python twin (nothing held, no error); -1 an error. */
int cq_run_check(PyObject *table, PyObject *run, CqTarget *t) {
    memset(t, 0, sizeof *t);
    if (!PyTuple_CheckExact(run) || PyTuple_GET_SIZE(run) != 5) return 0;
    PyObject *first = PyTuple_GET_ITEM(run, 2), *units = PyTuple_GET_ITEM(run, 3);
    if (!PyLong_CheckExact(first) || !PyBytes_CheckExact(units)) return 0;
    long long queue_offset = as_long_long(first);
    if (queue_offset == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return cq_run_check_values(table, PyTuple_GET_ITEM(run, 0), PyTuple_GET_ITEM(run, 1),
                               queue_offset, (const unsigned char *)PyBytes_AS_STRING(units),
                               PyBytes_GET_SIZE(units), t);
}

/* table[topic][queue_id] of recent runs' queues, kept with both dicts' versions (store.h
 * dict_version): while both are the same, the table still maps the topic to that dict and it
 * the queue id to that ConsumeQueue, so the two probes are skipped (a new queue or topic
 * changes a version). Each entry holds its topic, so the identity compared first is never
 * another str's; the queue id (an exact int) is kept as its value. */
#define QUEUE_CACHE 16 /* a power of two */
typedef struct {
    PyObject *table, *queues; /* compared only, and the table's while its version is this */
    uint64_t table_version, queues_version;
    PyObject *topic;
    long long queue_id;
    PyObject *consume_queue; /* borrowed: the queues dict's while its version is this one */
} QueueEntry;
static QueueEntry queue_cache[QUEUE_CACHE];

static QueueEntry *queue_entry(PyObject *topic, long long queue_id) {
    Py_hash_t h = PyObject_Hash(topic); /* an exact str: cached, never -1 after the first */
    if (h == -1) return NULL;
    return &queue_cache[((Py_uhash_t)h ^ (Py_uhash_t)queue_id) & (QUEUE_CACHE - 1)];
}

/* table[topic][queue_id] (exact str and int), borrowed: NULL if absent (or not a dict in
 * between), or with an error set. */
static PyObject *table_queue(PyObject *table, PyObject *topic, PyObject *queue_id) {
    uint64_t table_version = dict_version(table);
    long long id = as_long_long(queue_id);
    if (id == -1 && PyErr_Occurred()) { /* past int64: looked up, not kept */
        PyErr_Clear();
        table_version = 0;
    }
    QueueEntry *e = table_version == 0 ? NULL : queue_entry(topic, id);
    if (e != NULL && e->table == table && e->table_version == table_version &&
        e->queue_id == id && same_text(e->topic, topic) &&
        e->queues_version == dict_version(e->queues))
        return e->consume_queue;
    if (e == NULL && PyErr_Occurred()) return NULL;
    PyObject *queues = PyDict_GetItemWithError(table, topic); /* borrowed */
    if (queues == NULL || !PyDict_CheckExact(queues)) return NULL;
    uint64_t queues_version = dict_version(queues);
    PyObject *consume_queue = PyDict_GetItemWithError(queues, queue_id); /* borrowed */
    /* kept only if the probes changed nothing (int and str keys run no Python, others might) */
    if (consume_queue != NULL && e != NULL && dict_version(table) == table_version &&
        dict_version(queues) == queues_version) {
        *e = (QueueEntry){table, queues, table_version, queues_version, e->topic, id,
                          consume_queue};
        Py_XSETREF(e->topic, Py_NewRef(topic));
    }
    return consume_queue;
}

int cq_run_check_values(PyObject *table, PyObject *topic, PyObject *queue_id,
                        long long queue_offset, const unsigned char *src, Py_ssize_t length,
                        CqTarget *t) {
    memset(t, 0, sizeof *t);
    if (intern_names() < 0) return -1;
    if (!PyUnicode_CheckExact(topic) || !PyLong_CheckExact(queue_id)) return 0;
    if (length == 0 || length % CQ_UNIT_SIZE != 0) return 0;
    PyObject *consume_queue = table_queue(table, topic, queue_id); /* borrowed */
    if (consume_queue == NULL) return PyErr_Occurred() ? -1 : 0;
    t->consume_queue = Py_NewRef(consume_queue);
    t->units = src;
    t->length = length;
    int status = 0;
    PyObject *mapped_queue = NULL, *files = NULL, *mm = NULL;
    const unsigned char *last;
    long long count = length / CQ_UNIT_SIZE, max_phys, file_size, start, end_phys, expected,
              at;
    int got;
    if ((got = int_attr(consume_queue, name_max_phys, &max_phys, &sites[0])) != 0) goto leave;
    mapped_queue = slot_get(consume_queue, name_queue, &sites[1]);
    if (mapped_queue == NULL) goto missing;
    files = slot_get(mapped_queue, name_files, &sites[2]);
    if (files == NULL) goto missing;
    if (!PyList_CheckExact(files) || PyList_GET_SIZE(files) == 0) goto done;
    t->mapped = Py_NewRef(PyList_GET_ITEM(files, PyList_GET_SIZE(files) - 1));
    if ((got = int_attr(t->mapped, name_wrote, &t->position, &sites[3])) != 0 ||
        (got = int_attr(t->mapped, name_file_size, &file_size, &sites[4])) != 0 ||
        (got = int_attr(t->mapped, name_start, &start, &sites[5])) != 0)
        goto leave;
    /* What put_units' slice takes: past its first unit's end, at the queue's end, in the file.
     * Any sum that overflows int64 is not that case (Python's ints would not overflow). */
    if (__builtin_add_overflow(get_i64(src), (long long)get_i32(src + 8), &end_phys) ||
        end_phys <= max_phys)
        goto done;
    if (__builtin_mul_overflow(queue_offset, (long long)CQ_UNIT_SIZE, &expected) ||
        __builtin_add_overflow(start, t->position, &at) || at != expected || t->position < 0 ||
        __builtin_add_overflow(t->position, (long long)length, &t->end) || t->end > file_size)
        goto done;
    mm = slot_get(t->mapped, name_mmap, &sites[6]);
    if (mm == NULL) goto missing;
    if (PyObject_GetBuffer(mm, &t->out, PyBUF_WRITABLE) < 0) { /* closed: the twin says so */
        PyErr_Clear();
        t->out.obj = NULL;
        goto done;
    }
    if (t->end > t->out.len) goto done;
    last = src + length - CQ_UNIT_SIZE;
    t->last_end = end_phys;
    if (count > 1 &&
        __builtin_add_overflow(get_i64(last), (long long)get_i32(last + 8), &t->last_end))
        goto done;
    status = 1;
    goto done;
missing:
    got = PyErr_ExceptionMatches(PyExc_AttributeError) ? 1 : -1;
    if (got == 1) PyErr_Clear();
leave:
    status = got < 0 ? -1 : 0;
done:
    Py_XDECREF(mm);
    Py_XDECREF(files);
    Py_XDECREF(mapped_queue);
    if (status != 1) cq_target_release(t);
    return status;
}

/* The run cq_run_check took, written: the queue marked dirty, the units copied, the file's
 * and the queue's ends moved on; `t` released. 0, or -1 with an error set. */
int cq_run_write(PyObject *dirty, CqTarget *t) {
    int status = -1;
    PyObject *new_end = PyLong_FromLongLong(t->end);
    PyObject *new_max = new_end == NULL ? NULL : PyLong_FromLongLong(t->last_end);
    /* dirty first, as put_runs marks a queue before writing it */
    if (new_max != NULL && PySet_Add(dirty, t->consume_queue) == 0) {
        memcpy((unsigned char *)t->out.buf + t->position, t->units, (size_t)t->length);
        if (slot_set(t->mapped, name_wrote, new_end, &sites[7]) == 0 &&
            slot_set(t->consume_queue, name_max_phys, new_max, &sites[8]) == 0)
            status = 0;
    }
    Py_XDECREF(new_end);
    Py_XDECREF(new_max);
    cq_target_release(t);
    return status;
}

/* One run into its queue when it is the common case (see put_cq_runs): 1 written, 0 left to
 * the Python twin (nothing changed, no error), -1 an error set. */
static int put_cq_run(PyObject *table, PyObject *dirty, PyObject *run) {
    CqTarget t;
    int status = cq_run_check(table, run, &t);
    if (status <= 0) return status;
    return cq_run_write(dirty, &t) < 0 ? -1 : 1;
}

/* put_cq_runs(table, dirty, runs) -> int
 * A plain pass's ConsumeQueue units (consume_queue_table.py python_put_cq_runs, the reference):
 * each run (topic, queue id, first queue offset, units, wake-ups) copied into its queue's last
 * file when the queue is in `table` ({topic: {queue id: ConsumeQueue}}), the units follow the
 * queue's end and fit in that file, and they point past what the queue holds; the queue added
 * to `dirty`. Stops at the first run that is anything else and returns how many it wrote: the
 * rest go through the Python path in order (a new queue or file, a re-dispatch).
 *
 * The one function here that reads and sets attributes of Python objects (ConsumeQueue's
 * queue and max_phys_offset, MappedFileQueue's files, MappedFile's wrote_position, file_size,
 * start_offset and mmap: plain instance attributes and slots, so no Python runs): the per-queue
 * lookups in Python are what it saves. Values of another type, or missing, leave the run to
 * Python; nothing is written unless it all checks. */
PyObject *put_cq_runs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "put_cq_runs(table, dirty, runs)");
        return NULL;
    }
    PyObject *table = args[0], *dirty = args[1], *runs = args[2];
    if (!PyDict_CheckExact(table) || !PySet_CheckExact(dirty) || !PyList_CheckExact(runs)) {
        PyErr_SetString(PyExc_TypeError, "put_cq_runs takes a dict, a set and a list");
        return NULL;
    }
    Py_ssize_t taken = 0;
    for (; taken < PyList_GET_SIZE(runs); taken++) {
        PyObject *run = Py_NewRef(PyList_GET_ITEM(runs, taken));
        int status = put_cq_run(table, dirty, run);
        Py_DECREF(run);
        if (status < 0) return NULL;
        if (status == 0) break;
    }
    return PyLong_FromSsize_t(taken);
}
