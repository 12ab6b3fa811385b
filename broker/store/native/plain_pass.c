/* plain_pass: a round of plain sends' whole store pass in one call (issue 27; the Python twin
 * is broker/store/plain_pass.py python_plain_pass, which tests/unit/store/test_plain_pass.py
 * holds this to: same returns, store bytes, positions, stats and dirty queues).
 *
 * plain_pass(store, rows, pieces, put_items, cluster, heard) -> list | tuple | None
 * What group_put.put_plain_run and BrokerStatsManager.on_puts do for the rows, when the pass
 * is the common one: the append (put_rows), the ConsumeQueue units (each run's queue exists and
 * its last file takes the run in one slice, cq_run_check), the index keys (they all fit in the
 * newest IndexFile), reput's and the dispatcher's positions, and the store's and the broker's
 * stats counters. Returns
 *   - the reply frames (a list) when all of it is done;
 *   - None, with nothing done, when the pass is not the common one before the append: a store
 *     gate closed (slave, shutting down, not loaded, disk full, not writable), no room in the
 *     segment, reput behind, a listener with something to do (store.plain_idle says when they
 *     have nothing to), other types than the store's own. The caller runs put_plain_run;
 *   - (replies, totals, appended, position, wrote_from, started_ns) when the rows were
 *     appended but the rest is not the common case (a new queue or CQ file, an index file to
 *     grow or roll, a page-warmer call, a topic's first stats, a topic the broker's services
 *     hear): nothing past the append was done, and group_put.finish_plain_run does it as
 *     put_plain_run would have after its put_rows.
 * So the write phase starts only once everything it writes has been checked.
 *
 * Like put_cq_runs and pull_found it reads attributes of the store's Python objects (plain
 * instance attributes and slots, so no Python runs; only the CommitLog's clock is called,
 * a builtin in the broker) and sets the counters and positions named below. */
#include <time.h>

#include "store.h"

#define MAX_RUNS 64 /* a pass touching more queues is left to Python */

const long long put_bucket_bounds_ms[PUT_BUCKETS] = {0,    10,   50,   100,  200,  500,
                                                     1000, 2000, 3000, 4000, 5000, 10000};

enum {
    N_IS_SLAVE, N_SHUTTING_DOWN, N_LOADED, N_CLEAN, N_DISK_FULL, N_HEALTH, N_WRITABLE,
    N_COMMIT_LOG, N_QUEUE, N_FILES, N_WROTE, N_FILE_SIZE, N_START, N_MMAP, N_WARMED, N_CURSOR,
    N_CLOCK, N_CONFIG, N_MAX_SIZE, N_WARMER, N_AHEAD, N_REPUT, N_REPUT_FROM, N_DISPATCHER,
    N_PUT_LISTENER, N_PLAIN_IDLE, N_ARRIVAL_LISTENER, N_ARRIVALS_WANTED, N_CONSUME_QUEUES,
    N_BY_TOPIC, N_DIRTY, N_INDEX_SERVICE, N_INDEX_ENABLE, N_FILE, N_SLOTS, N_MAX_ENTRIES,
    N_LAST_DISPATCHED, N_STATS, N_TIMES_TOTAL, N_SIZE_TOTAL, N_TIME_SUM, N_TIME_MAX,
    N_DISTRIBUTION, N_VALUE, N_TIMES, N_NAMES,
};
static const char *const spelled[N_NAMES] = {
    "is_slave", "shutting_down", "loaded", "clean", "disk_full", "health", "writable",
    "commit_log", "queue", "files", "wrote_position", "file_size", "start_offset", "mmap",
    "warmed_position", "cursor", "clock", "config", "max_message_size", "warmer", "ahead",
    "reput", "reput_from_offset", "dispatcher", "put_listener", "plain_idle",
    "arrival_listener", "arrivals_wanted", "consume_queues", "by_topic", "dirty",
    "index_service", "message_index_enable", "file", "slots", "max_entries",
    "last_dispatched_timestamp", "stats", "put_message_times_total", "put_message_size_total",
    "put_time_sum_ns", "put_time_max_ns", "put_distribution", "value", "times",
};
static PyObject *names[N_NAMES];

static int intern_names(void) {
    if (names[N_NAMES - 1] != NULL) return 0;
    for (int i = 0; i < N_NAMES; i++)
        if (names[i] == NULL && (names[i] = PyUnicode_InternFromString(spelled[i])) == NULL)
            return -1;
    return 0;
}

/* A failed read in a check: 0 (declined, the error cleared) unless it is out of memory or not
 * an Exception (-1, left set): the Python path meets the same values and says what they are. */
static int declined(void) {
    if (PyErr_ExceptionMatches(PyExc_MemoryError) || !PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyErr_Clear();
    return 0;
}

static PyObject *get(PyObject *o, int name) { return PyObject_GetAttr(o, names[name]); }

/* o.<name> as an int64: 1 and *value, 0 declined (missing, not an exact int64), -1 error. */
static int int_of(PyObject *o, int name, long long *value) {
    PyObject *v = get(o, name);
    if (v == NULL) return declined();
    int ok = PyLong_CheckExact(v);
    if (ok) {
        *value = as_long_long(v);
        if (*value == -1 && PyErr_Occurred()) ok = declined();
    }
    Py_DECREF(v);
    return ok;
}

/* Whether o.<name> is `expected` (an identity): 1, 0 (not, or missing), -1 error. */
static int is(PyObject *o, int name, PyObject *expected) {
    PyObject *v = get(o, name);
    if (v == NULL) return declined();
    Py_DECREF(v);
    return v == expected;
}

/* o.<name> += add, in Python ints (a total never overflows, as in the twin); -1 error. */
static int add_to(PyObject *o, int name, PyObject *add) {
    PyObject *was = get(o, name);
    PyObject *sum = was == NULL ? NULL : PyNumber_Add(was, add);
    int failed = sum == NULL || PyObject_SetAttr(o, names[name], sum) < 0;
    Py_XDECREF(was);
    Py_XDECREF(sum);
    return failed ? -1 : 0;
}

static long long monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t); /* time.perf_counter_ns's clock on Linux */
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* What the pass holds between its steps. */
typedef struct {
    PyObject *store, *log, *mapped, *reput, *dispatcher, *dirty; /* new references but store */
    long long wrote_from, start, started_ns, position;
    CqTarget targets[MAX_RUNS];
    Py_ssize_t n_targets;
    Py_buffer index_mm;
    IndexWriter writer;
    PyObject *keys; /* borrowed from the appended pack: the one chunk's packed entries */
    long long keys_ts;
} Pass;

static void pass_release(Pass *p) {
    for (Py_ssize_t i = 0; i < p->n_targets; i++) cq_target_release(&p->targets[i]);
    p->n_targets = 0;
    if (p->index_mm.obj != NULL) PyBuffer_Release(&p->index_mm);
    Py_CLEAR(p->log);
    Py_CLEAR(p->mapped);
    Py_CLEAR(p->reput);
    Py_CLEAR(p->dispatcher);
    Py_CLEAR(p->dirty);
}

/* _refuse()'s tests: each gate holds the value an open, writable master store has (an
 * identity: anything else is the Python path's to judge). */
static int gates_open(PyObject *store) {
    int ok;
    if ((ok = is(store, N_IS_SLAVE, Py_False)) <= 0 ||
        (ok = is(store, N_SHUTTING_DOWN, Py_False)) <= 0 || (ok = is(store, N_LOADED, Py_True)) <= 0)
        return ok;
    PyObject *clean = get(store, N_CLEAN), *health = clean == NULL ? NULL : get(store, N_HEALTH);
    if (health == NULL) {
        Py_XDECREF(clean);
        return declined();
    }
    ok = is(clean, N_DISK_FULL, Py_False);
    if (ok > 0) ok = is(health, N_WRITABLE, Py_True);
    Py_DECREF(clean);
    Py_DECREF(health);
    return ok;
}

/* Whether every (object, attribute name) of `counters` reads the int 0. */
static int counters_zero(PyObject *counters) {
    if (!PyTuple_CheckExact(counters)) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(counters); i++) {
        PyObject *pair = PyTuple_GET_ITEM(counters, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyUnicode_CheckExact(PyTuple_GET_ITEM(pair, 1)))
            return 0;
        PyObject *v = PyObject_GetAttr(PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1));
        if (v == NULL) return declined();
        int overflow, zero = PyLong_CheckExact(v) && PyLong_AsLongLongAndOverflow(v, &overflow) == 0 &&
                             !overflow;
        Py_DECREF(v);
        if (!zero) return 0;
    }
    return 1;
}

/* Whether the put listener and the arrival listener have nothing to do for this pass:
 * none is set, or those set are the ones store.plain_idle (put listener, arrival listener,
 * arrivals_wanted, counters) names and its counters all read 0. */
static int listeners_idle(PyObject *store, PyObject *dispatcher) {
    PyObject *put = get(store, N_PUT_LISTENER), *arrival = NULL, *wanted = NULL, *idle = NULL;
    int ok = 0;
    if (put == NULL || (arrival = get(dispatcher, N_ARRIVAL_LISTENER)) == NULL ||
        (wanted = get(dispatcher, N_ARRIVALS_WANTED)) == NULL ||
        (idle = get(store, N_PLAIN_IDLE)) == NULL) {
        ok = declined();
    } else if (idle == Py_None) {
        ok = put == Py_None && arrival == Py_None;
    } else if (PyTuple_CheckExact(idle) && PyTuple_GET_SIZE(idle) == 4) {
        ok = (put == Py_None || put == PyTuple_GET_ITEM(idle, 0)) &&
             (arrival == Py_None ||
              (arrival == PyTuple_GET_ITEM(idle, 1) && wanted == PyTuple_GET_ITEM(idle, 2)));
        if (ok) ok = counters_zero(PyTuple_GET_ITEM(idle, 3));
    }
    Py_XDECREF(put);
    Py_XDECREF(arrival);
    Py_XDECREF(wanted);
    Py_XDECREF(idle);
    return ok;
}

/* The store's objects the pass uses, its gates and its segment: 1 the pass is the common one
 * so far (room in the segment, reput caught up, the listeners idle), 0 declined, -1 error. */
static int pass_open(Pass *p) {
    long long size, reput_from, end;
    int ok = gates_open(p->store);
    if (ok <= 0) return ok;
    if ((p->dispatcher = get(p->store, N_DISPATCHER)) == NULL ||
        (p->log = get(p->store, N_COMMIT_LOG)) == NULL || (p->reput = get(p->store, N_REPUT)) == NULL)
        return declined();
    if ((ok = listeners_idle(p->store, p->dispatcher)) <= 0) return ok;
    PyObject *queue = get(p->log, N_QUEUE), *files = queue == NULL ? NULL : get(queue, N_FILES);
    PyObject *cursor = files == NULL ? NULL : get(p->log, N_CURSOR);
    Py_XDECREF(queue);
    if (cursor == NULL) {
        Py_XDECREF(files);
        return declined();
    }
    if (PyList_CheckExact(files) && PyList_GET_SIZE(files) > 0 &&
        PyObject_TypeCheck(cursor, &AppendCursorType))
        p->mapped = Py_NewRef(PyList_GET_ITEM(files, PyList_GET_SIZE(files) - 1));
    Py_DECREF(files);
    Py_DECREF(cursor);
    if (p->mapped == NULL) return 0;
    if ((ok = int_of(p->mapped, N_WROTE, &p->wrote_from)) <= 0 ||
        (ok = int_of(p->mapped, N_FILE_SIZE, &size)) <= 0 ||
        (ok = int_of(p->mapped, N_START, &p->start)) <= 0 ||
        (ok = int_of(p->reput, N_REPUT_FROM, &reput_from)) <= 0)
        return ok;
    /* room in the segment, and reput caught up: its position is this segment's written end */
    return p->wrote_from >= 0 && p->wrote_from < size &&
           !__builtin_add_overflow(p->start, p->wrote_from, &end) && end == reput_from;
}

/* Each run goes into its queue's last file in one slice (cq_run_check), no two into one queue,
 * none of a topic the broker's services hear (their wake-ups are Python's). */
static int check_runs(Pass *p, PyObject *runs, PyObject *heard) {
    PyObject *cq = get(p->dispatcher, N_CONSUME_QUEUES);
    PyObject *table = cq == NULL ? NULL : get(cq, N_BY_TOPIC);
    p->dirty = table == NULL ? NULL : get(cq, N_DIRTY);
    Py_XDECREF(cq);
    if (p->dirty == NULL) {
        Py_XDECREF(table);
        return declined();
    }
    int ok = PyDict_CheckExact(table) && PySet_CheckExact(p->dirty) && PyList_CheckExact(runs) &&
             PyList_GET_SIZE(runs) <= MAX_RUNS;
    for (Py_ssize_t i = 0; ok > 0 && i < PyList_GET_SIZE(runs); i++) {
        PyObject *run = PyList_GET_ITEM(runs, i);
        if (!PyTuple_CheckExact(run) || PyTuple_GET_SIZE(run) != 5) {
            ok = 0;
            break;
        }
        ok = PySet_Contains(heard, PyTuple_GET_ITEM(run, 0));
        ok = ok < 0 ? declined() : !ok;
        if (ok > 0) ok = cq_run_check(table, run, &p->targets[p->n_targets]);
        if (ok <= 0) break;
        CqTarget *t = &p->targets[p->n_targets++];
        for (Py_ssize_t j = 0; j + 1 < p->n_targets; j++)
            if (p->targets[j].consume_queue == t->consume_queue) ok = 0;
    }
    Py_DECREF(table);
    return ok;
}

/* The newest IndexFile's writer opened on its mapping, when the pass's one chunk of keys all
 * fit in it (build_index_keys' one-call case); 1 with nothing to index too. */
static int open_index(Pass *p, PyObject *keys) {
    long long slots, max_entries;
    PyObject *service = get(p->dispatcher, N_INDEX_SERVICE);
    PyObject *files = service == NULL ? NULL : get(service, N_FILES);
    Py_XDECREF(service);
    if (files == NULL) return declined();
    PyObject *index = PyList_CheckExact(files) && PyList_GET_SIZE(files) > 0
                          ? Py_NewRef(PyList_GET_ITEM(files, PyList_GET_SIZE(files) - 1))
                          : NULL;
    Py_DECREF(files);
    if (index == NULL) return 0;
    PyObject *file = get(index, N_FILE), *mm = file == NULL ? NULL : get(file, N_MMAP);
    int ok = mm == NULL ? declined() : int_of(index, N_SLOTS, &slots);
    if (ok > 0) ok = int_of(index, N_MAX_ENTRIES, &max_entries);
    if (ok > 0 && PyObject_GetBuffer(mm, &p->index_mm, PyBUF_WRITABLE) < 0) {
        p->index_mm.obj = NULL;
        ok = declined();
    }
    if (ok > 0 && writer_open(&p->writer, &p->index_mm, slots, max_entries) < 0) ok = declined();
    Py_DECREF(index);
    Py_XDECREF(file);
    Py_XDECREF(mm);
    if (ok <= 0) return ok;
    long long indexed = p->writer.count > 1 ? p->writer.end_phy : -1, adding = 0;
    const unsigned char *k = (const unsigned char *)PyBytes_AS_STRING(keys);
    for (Py_ssize_t at = 0; at < PyBytes_GET_SIZE(keys); at += BATCH_KEY_SIZE)
        adding += get_i64(k + at + 4) > indexed;
    if (p->writer.count + adding > p->writer.max_entries) return 0;
    p->keys = keys;
    return 1;
}

/* The index keys of the pass, when messageIndexEnable: one chunk (one store timestamp) that
 * fits the newest file, or none. */
static int check_index(Pass *p, PyObject *chunks) {
    PyObject *config = get(p->dispatcher, N_CONFIG);
    PyObject *enable = config == NULL ? NULL : get(config, N_INDEX_ENABLE);
    Py_XDECREF(config);
    if (enable == NULL) return declined();
    Py_DECREF(enable); /* a bool: only its identity is read */
    if (!PyBool_Check(enable)) return 0;
    if (enable == Py_False || !PyList_CheckExact(chunks) || PyList_GET_SIZE(chunks) == 0)
        return enable == Py_False || PyList_CheckExact(chunks);
    PyObject *chunk = PyList_GET_ITEM(chunks, 0);
    if (PyList_GET_SIZE(chunks) > 1 || !PyTuple_CheckExact(chunk) || PyTuple_GET_SIZE(chunk) != 2)
        return 0;
    PyObject *ts = PyTuple_GET_ITEM(chunk, 0), *keys = PyTuple_GET_ITEM(chunk, 1);
    if (!PyLong_CheckExact(ts) || !PyBytes_CheckExact(keys) ||
        PyBytes_GET_SIZE(keys) % BATCH_KEY_SIZE)
        return 0;
    p->keys_ts = as_long_long(ts);
    if (p->keys_ts == -1 && PyErr_Occurred()) return declined();
    return PyBytes_GET_SIZE(keys) == 0 ? 1 : open_index(p, keys);
}

/* Whether o.<name> reads an exact int (the counters the pass adds to). */
static int int_attr_is_int(PyObject *o, int name) {
    PyObject *v = get(o, name);
    if (v == NULL) return declined();
    int ok = PyLong_CheckExact(v);
    Py_DECREF(v);
    return ok;
}

/* The stats counters the pass adds to are there: the store's, and each topic's items of
 * on_puts (a topic's first put makes them in Python). */
static int check_stats(Pass *p, PyObject *totals, PyObject *put_items, PyObject *cluster) {
    static const int counters[] = {N_TIMES_TOTAL, N_SIZE_TOTAL, N_TIME_SUM, N_TIME_MAX};
    PyObject *stats = get(p->store, N_STATS);
    if (stats == NULL) return declined();
    int ok = 1;
    for (size_t i = 0; ok > 0 && i < sizeof counters / sizeof *counters; i++)
        ok = int_attr_is_int(stats, counters[i]);
    PyObject *distribution = ok > 0 ? get(stats, N_DISTRIBUTION) : NULL;
    if (ok > 0 && distribution == NULL) ok = declined();
    if (ok > 0) ok = PyList_CheckExact(distribution) && PyList_GET_SIZE(distribution) == PUT_BUCKETS + 1;
    for (Py_ssize_t i = 0; ok > 0 && i <= PUT_BUCKETS; i++)
        ok = PyLong_CheckExact(PyList_GET_ITEM(distribution, i));
    Py_XDECREF(distribution);
    Py_DECREF(stats);
    Py_ssize_t at = 0;
    PyObject *topic, *pair;
    while (ok > 0 && PyDict_Next(totals, &at, &topic, &pair)) {
        PyObject *key = PyTuple_Pack(2, topic, cluster);
        PyObject *items = key == NULL ? NULL : PyDict_GetItemWithError(put_items, key);
        Py_XDECREF(key);
        if (items == NULL) {
            ok = PyErr_Occurred() ? -1 : 0;
            break;
        }
        ok = PyTuple_CheckExact(items) && PyTuple_GET_SIZE(items) == 3;
        for (Py_ssize_t i = 0; ok > 0 && i < 3; i++) {
            ok = int_attr_is_int(PyTuple_GET_ITEM(items, i), N_VALUE);
            if (ok > 0) ok = int_attr_is_int(PyTuple_GET_ITEM(items, i), N_TIMES);
        }
    }
    return ok;
}

/* What the write phase needs after the append: no page-warmer call due, every run, the index
 * keys and the stats the common case. */
static int pass_check(Pass *p, PyObject *appended, PyObject *totals, PyObject *put_items,
                      PyObject *cluster, PyObject *heard) {
    long long ahead, warmed, edge;
    PyObject *warmer = get(p->log, N_WARMER);
    if (warmer == NULL) return declined();
    int ok = int_of(warmer, N_AHEAD, &ahead);
    Py_DECREF(warmer);
    if (ok > 0) ok = int_of(p->mapped, N_WARMED, &warmed);
    if (ok <= 0) return ok;
    if (__builtin_add_overflow(p->position, ahead, &edge) || edge > warmed) return 0;
    if ((ok = check_runs(p, PyTuple_GET_ITEM(appended, 0), heard)) <= 0) return ok;
    if ((ok = check_index(p, PyTuple_GET_ITEM(appended, 1))) <= 0) return ok;
    return check_stats(p, totals, put_items, cluster);
}

/* The index of a put's elapsed time in StoreStats.put_distribution (on_put_times'). */
static int put_bucket(long long elapsed_ns) {
    if (elapsed_ns < 1000000) return 0;
    long long ms = elapsed_ns / 1000000;
    int i = 0;
    while (i < PUT_BUCKETS && put_bucket_bounds_ms[i] < ms) i++; /* bisect_left */
    return i;
}

/* o.<name> += n for a C count. */
static int add_count(PyObject *o, int name, long long n) {
    PyObject *add = PyLong_FromLongLong(n);
    int failed = add == NULL || add_to(o, name, add) < 0;
    Py_XDECREF(add);
    return failed ? -1 : 0;
}

/* StoreStats.on_put_run's and BrokerStatsManager.on_puts' counting, in place. */
static int count_stats(Pass *p, Py_ssize_t count, PyObject *totals, PyObject *put_items,
                       PyObject *cluster) {
    long long elapsed = (monotonic_ns() - p->started_ns) / count, max_ns;
    PyObject *stats = get(p->store, N_STATS);
    PyObject *distribution = stats == NULL ? NULL : get(stats, N_DISTRIBUTION);
    int failed = distribution == NULL || add_count(stats, N_TIMES_TOTAL, count) < 0 ||
                 add_count(stats, N_SIZE_TOTAL, p->position - p->wrote_from) < 0 ||
                 add_count(stats, N_TIME_SUM, elapsed * count) < 0 ||
                 int_of(stats, N_TIME_MAX, &max_ns) <= 0;
    if (!failed) {
        int bucket = put_bucket(elapsed);
        PyObject *add = PyLong_FromSsize_t(count);
        PyObject *sum = add == NULL ? NULL : PyNumber_Add(PyList_GET_ITEM(distribution, bucket), add);
        failed = sum == NULL || PyList_SetItem(distribution, bucket, sum) < 0; /* steals sum */
        Py_XDECREF(add);
    }
    if (!failed && elapsed > max_ns) failed = add_count(stats, N_TIME_MAX, elapsed - max_ns) < 0;
    Py_XDECREF(distribution);
    Py_XDECREF(stats);
    Py_ssize_t at = 0;
    PyObject *topic, *pair;
    while (!failed && PyDict_Next(totals, &at, &topic, &pair)) {
        PyObject *key = PyTuple_Pack(2, topic, cluster);
        PyObject *items = key == NULL ? NULL : PyDict_GetItemWithError(put_items, key);
        Py_XDECREF(key);
        if (items == NULL) return -1;
        PyObject *n = PyList_GET_ITEM(pair, 0), *size = PyList_GET_ITEM(pair, 1);
        PyObject *nums = PyTuple_GET_ITEM(items, 0), *sizes = PyTuple_GET_ITEM(items, 1);
        PyObject *broker = PyTuple_GET_ITEM(items, 2);
        failed = add_to(nums, N_VALUE, n) < 0 || add_to(nums, N_TIMES, n) < 0 ||
                 add_to(sizes, N_VALUE, size) < 0 || add_to(sizes, N_TIMES, n) < 0 ||
                 add_to(broker, N_VALUE, n) < 0 || add_to(broker, N_TIMES, n) < 0;
    }
    return failed ? -1 : 0;
}

/* The write phase: everything was checked, so only an out-of-memory error stops it. */
static int pass_write(Pass *p, PyObject *replies, PyObject *totals, PyObject *appended,
                      PyObject *put_items, PyObject *cluster) {
    PyObject *end = PyLong_FromLongLong(p->position);
    PyObject *reput_to = PyLong_FromLongLong(p->start + p->position);
    int failed = end == NULL || reput_to == NULL ||
                 PyObject_SetAttr(p->mapped, names[N_WROTE], end) < 0;
    for (Py_ssize_t i = 0; i < p->n_targets; i++) /* each released as it goes */
        if (failed ? (cq_target_release(&p->targets[i]), 0)
                   : cq_run_write(p->dirty, &p->targets[i]) < 0)
            failed = 1;
    p->n_targets = 0;
    if (p->keys != NULL) {
        long long indexed = p->writer.count > 1 ? p->writer.end_phy : -1;
        const unsigned char *k = (const unsigned char *)PyBytes_AS_STRING(p->keys);
        for (Py_ssize_t at = 0; !failed && at < PyBytes_GET_SIZE(p->keys); at += BATCH_KEY_SIZE)
            if (get_i64(k + at + 4) > indexed)
                writer_add(&p->writer, get_i32(k + at), get_i64(k + at + 4), p->keys_ts);
        writer_close(&p->writer);
    }
    failed = failed || PyObject_SetAttr(p->dispatcher, names[N_LAST_DISPATCHED],
                                        PyTuple_GET_ITEM(appended, 2)) < 0 ||
             PyObject_SetAttr(p->reput, names[N_REPUT_FROM], reput_to) < 0 ||
             count_stats(p, PyList_GET_SIZE(replies), totals, put_items, cluster) < 0;
    Py_XDECREF(end);
    Py_XDECREF(reput_to);
    return failed ? -1 : 0;
}

/* The rows through put_rows at the segment's write position, with one store timestamp from the
 * CommitLog's clock: put_rows' (position, appended, replies, totals), or NULL. */
static PyObject *append(Pass *p, PyObject *rows, PyObject *pieces) {
    PyObject *cursor = get(p->log, N_CURSOR), *clock = get(p->log, N_CLOCK);
    PyObject *config = get(p->log, N_CONFIG);
    PyObject *max_size = config == NULL ? NULL : get(config, N_MAX_SIZE);
    PyObject *mm = get(p->mapped, N_MMAP), *ts = NULL, *result = NULL;
    PyObject *position = PyLong_FromLongLong(p->wrote_from);
    PyObject *start = PyLong_FromLongLong(p->start);
    if (cursor != NULL && clock != NULL && max_size != NULL && mm != NULL && position != NULL &&
        start != NULL && (ts = PyObject_CallNoArgs(clock)) != NULL) {
        if (!PyLong_CheckExact(ts)) { /* not a timestamp: the Python path says so */
            PyErr_SetString(PyExc_TypeError, "the CommitLog's clock gave no int");
        } else {
            PyObject *args[8] = {cursor, mm, position, start, ts, max_size, rows, pieces};
            result = put_rows(NULL, args, 8);
        }
    }
    Py_XDECREF(cursor);
    Py_XDECREF(clock);
    Py_XDECREF(config);
    Py_XDECREF(max_size);
    Py_XDECREF(mm);
    Py_XDECREF(ts);
    Py_XDECREF(position);
    Py_XDECREF(start);
    return result;
}

static PyObject *pass_run(Pass *p, PyObject *const *args) {
    PyObject *rows = args[1], *pieces = args[2];
    int open = pass_open(p);
    if (open <= 0) return open < 0 ? NULL : Py_NewRef(Py_None);
    p->started_ns = monotonic_ns();
    PyObject *done = append(p, rows, pieces);
    if (done == NULL) return NULL;
    p->position = PyLong_AsLongLong(PyTuple_GET_ITEM(done, 0));
    PyObject *appended = PyTuple_GET_ITEM(done, 1), *replies = PyTuple_GET_ITEM(done, 2);
    PyObject *totals = PyTuple_GET_ITEM(done, 3), *result = NULL;
    if (PyList_GET_SIZE(replies) == 0) { /* nothing taken: the reference takes every row */
        result = Py_NewRef(replies);
    } else {
        int common = pass_check(p, appended, totals, args[3], args[4], args[5]);
        if (common > 0 && pass_write(p, replies, totals, appended, args[3], args[4]) == 0)
            result = Py_NewRef(replies);
        else if (common == 0)
            result = Py_BuildValue("(OOOLLL)", replies, totals, appended, p->position,
                                   p->wrote_from, p->started_ns);
    }
    Py_DECREF(done);
    return result;
}

PyObject *plain_pass(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyList_CheckExact(args[1]) || !PyTuple_CheckExact(args[2]) ||
        !PyDict_CheckExact(args[3]) || !PyUnicode_CheckExact(args[4]) ||
        !PyAnySet_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "plain_pass(store, rows list, pieces tuple, put_items "
                                         "dict, cluster str, heard set)");
        return NULL;
    }
    if (intern_names() < 0) return NULL;
    Pass p;
    memset(&p, 0, sizeof p);
    p.store = args[0];
    PyObject *result = pass_run(&p, args);
    pass_release(&p);
    return result;
}

/* now_ms() -> int: the wall clock in ms (mapped_file_queue.python_now_ms's time.time_ns() //
 * 1_000_000), a builtin so that the CommitLog's clock runs no Python frame. */
PyObject *now_ms(PyObject *self, PyObject *unused) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t); /* time.time_ns's clock */
    long long ns = (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
    return PyLong_FromLongLong(ns >= 0 ? ns / 1000000 : -((-ns + 999999) / 1000000));
}
