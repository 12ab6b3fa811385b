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
 * a builtin in the broker) and sets the positions named below: those the store's objects
 * keep in __slots__ at their offsets (store.h slot_get and slot_set, broker/store/slotted.py),
 * the rest through the generic lookup. It counts in the store's PutCounters and the topics'
 * StatsCounters (counters.c) in place. */
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
    N_LAST_DISPATCHED, N_STATS, N_NAMES,
};
static const char *const spelled[N_NAMES] = {
    "is_slave", "shutting_down", "loaded", "clean", "disk_full", "health", "writable",
    "commit_log", "queue", "files", "wrote_position", "file_size", "start_offset", "mmap",
    "warmed_position", "cursor", "clock", "config", "max_message_size", "warmer", "ahead",
    "reput", "reput_from_offset", "dispatcher", "put_listener", "plain_idle",
    "arrival_listener", "arrivals_wanted", "consume_queues", "by_topic", "dirty",
    "index_service", "message_index_enable", "file", "slots", "max_entries",
    "last_dispatched_timestamp", "stats",
};
static PyObject *names[N_NAMES];

static int intern_names(void) { return intern_table(names, spelled, N_NAMES); }

/* A failed read in a check: 0 (declined, the error cleared) unless it is out of memory or not
 * an Exception (-1, left set): the Python path meets the same values and says what they are. */
static int declined(void) {
    if (PyErr_ExceptionMatches(PyExc_MemoryError) || !PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyErr_Clear();
    return 0;
}

static SlotCache get_sites[N_NAMES], set_sites[N_NAMES], counter_sites[4];

static PyObject *get(PyObject *o, int name) { return slot_get(o, names[name], &get_sites[name]); }

static int set(PyObject *o, int name, PyObject *v) {
    return slot_set(o, names[name], v, &set_sites[name]);
}

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

static long long monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t); /* time.perf_counter_ns's clock on Linux */
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* A topic's items of on_puts and what the pass adds to them. */
typedef struct {
    PyObject *tuple; /* (messages, bytes, broker messages), a new reference */
    StatsCounter *items[3];
    long long n, size;
} TopicCount;

/* What the pass holds between its steps. The arrays come last: only what is before them is
 * zeroed per call (the arrays' first n_targets and n_topics entries are all that is read). */
typedef struct {
    PyObject *store, *log, *mapped, *reput, *dispatcher, *dirty; /* new references but store */
    long long wrote_from, start, started_ns, position;
    Py_ssize_t n_targets;
    Py_buffer index_mm;
    IndexWriter writer;
    const unsigned char *keys; /* the pack's: the one chunk's packed entries */
    Py_ssize_t keys_len;
    long long keys_ts;
    PyObject *stats; /* the store's PutCounters, a new reference */
    Py_ssize_t n_topics;
    PutRowsOut rows; /* what put_rows made, held to the end */
    CqTarget targets[MAX_RUNS];
    TopicCount topics[MAX_RUNS];
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
    Py_CLEAR(p->stats);
    for (Py_ssize_t i = 0; i < p->n_topics; i++) Py_CLEAR(p->topics[i].tuple);
    p->n_topics = 0;
    put_rows_release(&p->rows); /* last: the targets and the index keys point into its pack */
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
        PyObject *o = PyTuple_GET_ITEM(pair, 0), *name = PyTuple_GET_ITEM(pair, 1);
        PyObject *v = i < 4 ? slot_get(o, name, &counter_sites[i]) : PyObject_GetAttr(o, name);
        if (v == NULL) return declined();
        int zero = PyLong_CheckExact(v) && Py_SIZE(v) == 0; /* CPython's 0 has no digits */
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
static int check_runs(Pass *p, PyObject *heard) {
    PackRun runs[MAX_RUNS];
    Py_ssize_t n = plain_pack_runs(p->rows.pack, runs, MAX_RUNS);
    PyObject *cq = get(p->dispatcher, N_CONSUME_QUEUES);
    PyObject *table = cq == NULL ? NULL : get(cq, N_BY_TOPIC);
    p->dirty = table == NULL ? NULL : get(cq, N_DIRTY);
    Py_XDECREF(cq);
    if (p->dirty == NULL) {
        Py_XDECREF(table);
        return declined();
    }
    int ok = PyDict_CheckExact(table) && PySet_CheckExact(p->dirty) && n >= 0;
    for (Py_ssize_t i = 0; ok > 0 && i < n; i++) {
        ok = PySet_Contains(heard, runs[i].topic);
        ok = ok < 0 ? declined() : !ok;
        if (ok > 0)
            ok = cq_run_check_values(table, runs[i].topic, runs[i].queue_id, runs[i].first,
                                     runs[i].units, runs[i].length, &p->targets[p->n_targets]);
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
static int open_index(Pass *p, const unsigned char *keys, Py_ssize_t keys_len) {
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
    for (Py_ssize_t at = 0; at < keys_len; at += BATCH_KEY_SIZE)
        adding += get_i64(keys + at + 4) > indexed;
    if (p->writer.count + adding > p->writer.max_entries) return 0;
    p->keys = keys;
    p->keys_len = keys_len;
    return 1;
}

/* The index keys of the pass, when messageIndexEnable: one chunk (one store timestamp) that
 * fits the newest file, or none. Read in the pack in place (no chunk tuple made). */
static int check_index(Pass *p) {
    PyObject *config = get(p->dispatcher, N_CONFIG);
    PyObject *enable = config == NULL ? NULL : get(config, N_INDEX_ENABLE);
    Py_XDECREF(config);
    if (enable == NULL) return declined();
    Py_DECREF(enable); /* a bool: only its identity is read */
    if (!PyBool_Check(enable)) return 0;
    if (enable == Py_False) return 1;
    const unsigned char *keys;
    Py_ssize_t used;
    int chunks = plain_pack_keys(p->rows.pack, &p->keys_ts, &keys, &used);
    if (chunks != 1) return chunks == 0;
    return used == 0 ? 1 : open_index(p, keys, used);
}

/* The on_puts items put_items[(topic, cluster)] of recent passes' topics (exact str), kept with
 * the dict's version (store.h dict_version): while it is the same, the dict still holds those
 * items under that key, so the tuple key, its hash and the probe are skipped. Each entry holds
 * its topic and cluster, so that the identities compared first are never another str's. */
#define ITEMS_CACHE 4 /* a power of two */
typedef struct {
    PyObject *dict; /* compared only */
    uint64_t version;
    PyObject *topic, *cluster;
    PyObject *items; /* borrowed: the dict's, alive while its version is this one */
} ItemsEntry;
static ItemsEntry items_cache[ITEMS_CACHE];

/* put_items[(topic, cluster)], borrowed; NULL if absent, or with an error set. */
static PyObject *topic_items(PyObject *put_items, PyObject *topic, PyObject *cluster) {
    uint64_t version = dict_version(put_items);
    int keep = version != 0 && PyUnicode_CheckExact(topic) && PyUnicode_CheckExact(cluster);
    ItemsEntry *e = NULL;
    if (keep) {
        Py_hash_t h = PyObject_Hash(topic); /* a str caches it */
        if (h == -1) return NULL;
        e = &items_cache[(Py_uhash_t)h & (ITEMS_CACHE - 1)];
        if (e->dict == put_items && e->version == version && same_text(e->topic, topic) &&
            same_text(e->cluster, cluster))
            return e->items;
    }
    PyObject *key = PyTuple_Pack(2, topic, cluster);
    PyObject *items = key == NULL ? NULL : PyDict_GetItemWithError(put_items, key);
    Py_XDECREF(key);
    /* kept only if the probe changed nothing (str keys run no Python, but other keys might) */
    if (items != NULL && keep && dict_version(put_items) == version) {
        e->dict = put_items;
        e->version = version;
        Py_XSETREF(e->topic, Py_NewRef(topic));
        Py_XSETREF(e->cluster, Py_NewRef(cluster));
        e->items = items;
    }
    return items;
}

/* The stats counters the pass adds to: the store's PutCounters, and each topic's items of
 * on_puts as StatsCounters (a topic's first put makes them in Python), kept for the write
 * phase. No item may pass int64 with all of the pass's additions (topics share the broker's
 * item): checked against their sum, as the twin does. */
static int check_stats(Pass *p, PyObject *put_items, PyObject *cluster) {
    if ((p->stats = get(p->store, N_STATS)) == NULL) return declined();
    if (!PyObject_TypeCheck(p->stats, &PutCountersType) ||
        put_rows_topic_count(&p->rows) > MAX_RUNS)
        return 0;
    long long all_n = 0, all_added = 0, sum;
    Py_ssize_t at = 0;
    PyObject *topic;
    long long count, bytes;
    int more;
    while ((more = put_rows_topic(&p->rows, &at, &topic, &count, &bytes)) > 0) {
        TopicCount *t = &p->topics[p->n_topics]; /* at most MAX_RUNS topics: checked above */
        t->n = count;
        t->size = bytes;
        PyObject *items = topic_items(put_items, topic, cluster);
        if (items == NULL) return PyErr_Occurred() ? -1 : 0;
        if (!PyTuple_CheckExact(items) || PyTuple_GET_SIZE(items) != 3) return 0;
        if (t->n < 0 || t->size < 0 || __builtin_add_overflow(all_n, t->n, &all_n) ||
            __builtin_add_overflow(all_added, t->n, &all_added) ||
            __builtin_add_overflow(all_added, t->size, &all_added))
            return 0;
        for (int i = 0; i < 3; i++) {
            PyObject *item = PyTuple_GET_ITEM(items, i);
            if (!PyObject_TypeCheck(item, &StatsCounterType)) return 0;
            t->items[i] = (StatsCounter *)item;
        }
        t->tuple = Py_NewRef(items); /* keeps the three alive to the write phase */
        p->n_topics++;
    }
    if (more < 0) return declined();
    for (Py_ssize_t i = 0; i < p->n_topics; i++)
        for (int k = 0; k < 3; k++)
            if (__builtin_add_overflow(p->topics[i].items[k]->value, all_added, &sum) ||
                __builtin_add_overflow(p->topics[i].items[k]->times, all_n, &sum))
                return 0;
    return 1;
}

/* What the write phase needs after the append: no page-warmer call due, every run, the index
 * keys and the stats the common case. */
static int pass_check(Pass *p, PyObject *put_items, PyObject *cluster, PyObject *heard) {
    long long ahead, warmed, edge;
    PyObject *warmer = get(p->log, N_WARMER);
    if (warmer == NULL) return declined();
    int ok = int_of(warmer, N_AHEAD, &ahead);
    Py_DECREF(warmer);
    if (ok > 0) ok = int_of(p->mapped, N_WARMED, &warmed);
    if (ok <= 0) return ok;
    if (__builtin_add_overflow(p->position, ahead, &edge) || edge > warmed) return 0;
    if ((ok = check_runs(p, heard)) <= 0) return ok;
    if ((ok = check_index(p)) <= 0) return ok;
    return check_stats(p, put_items, cluster);
}

/* StoreStats.on_put_run's and BrokerStatsManager.on_puts' counting, in the counters' structs
 * (checked: only the time's sum, which is not known before, can pass int64). */
static int count_stats(Pass *p, Py_ssize_t count) {
    long long elapsed = (monotonic_ns() - p->started_ns) / count;
    PutCounts *c = &((PutCounters *)p->stats)->n, was = *c;
    if (put_counters_add(c, count, p->position - p->wrote_from) < 0 ||
        put_counters_times(c, elapsed, count) < 0) {
        *c = was;
        return -1;
    }
    for (Py_ssize_t i = 0; i < p->n_topics; i++) {
        TopicCount *t = &p->topics[i];
        long long adds[3] = {t->n, t->size, t->n};
        for (int k = 0; k < 3; k++) {
            t->items[k]->value += adds[k];
            t->items[k]->times += t->n;
        }
    }
    return 0;
}

/* The write phase: everything was checked, so only an out-of-memory error stops it. */
static int pass_write(Pass *p, PyObject *replies) {
    PyObject *end = PyLong_FromLongLong(p->position);
    PyObject *reput_to = PyLong_FromLongLong(p->start + p->position);
    PyObject *last_ts = PyLong_FromLongLong(plain_pack_last_ts(p->rows.pack));
    int failed = end == NULL || reput_to == NULL || last_ts == NULL ||
                 set(p->mapped, N_WROTE, end) < 0;
    for (Py_ssize_t i = 0; i < p->n_targets; i++) /* each released as it goes */
        if (failed ? (cq_target_release(&p->targets[i]), 0)
                   : cq_run_write(p->dirty, &p->targets[i]) < 0)
            failed = 1;
    p->n_targets = 0;
    if (p->keys != NULL) {
        long long indexed = p->writer.count > 1 ? p->writer.end_phy : -1;
        const unsigned char *k = p->keys;
        for (Py_ssize_t at = 0; !failed && at < p->keys_len; at += BATCH_KEY_SIZE)
            if (get_i64(k + at + 4) > indexed)
                writer_add(&p->writer, get_i32(k + at), get_i64(k + at + 4), p->keys_ts);
        writer_close(&p->writer);
    }
    failed = failed || set(p->dispatcher, N_LAST_DISPATCHED, last_ts) < 0 ||
             set(p->reput, N_REPUT_FROM, reput_to) < 0 ||
             count_stats(p, PyList_GET_SIZE(replies)) < 0;
    Py_XDECREF(end);
    Py_XDECREF(reput_to);
    Py_XDECREF(last_ts);
    return failed ? -1 : 0;
}

/* The CommitLog's clock read: this module's now_ms (the broker's) called as C, skipping the
 * call protocol; anything else called as Python calls it. */
static PyObject *read_clock(PyObject *clock) {
    if (PyCFunction_CheckExact(clock) && PyCFunction_GET_FUNCTION(clock) == now_ms &&
        PyCFunction_GET_FLAGS(clock) == METH_NOARGS)
        return now_ms(PyCFunction_GET_SELF(clock), NULL);
    return PyObject_CallNoArgs(clock);
}

/* The rows through put_rows at the segment's write position, with one store timestamp from the
 * CommitLog's clock, into p->rows (its pack left unfinished: the common pass reads it in
 * place, and only a pass that stops after the append makes it put_rows' Python objects).
 * 0, or -1 with an error. */
static int append(Pass *p, PyObject *rows, PyObject *pieces) {
    int result = -1;
    PyObject *cursor = get(p->log, N_CURSOR), *clock = get(p->log, N_CLOCK);
    PyObject *config = get(p->log, N_CONFIG);
    PyObject *max_size = config == NULL ? NULL : get(config, N_MAX_SIZE);
    PyObject *mm = get(p->mapped, N_MMAP), *ts = NULL;
    if (cursor != NULL && clock != NULL && max_size != NULL && mm != NULL &&
        (ts = read_clock(clock)) != NULL) {
        if (!PyLong_CheckExact(ts)) { /* not a timestamp: the Python path says so */
            PyErr_SetString(PyExc_TypeError, "the CommitLog's clock gave no int");
        } else {
            /* the positions as values (put_rows' Python entry unboxes its own); maxMessageSize
             * as put read it from its object: not a Py_ssize_t, and put refuses every row */
            PutRowsIn in = {cursor, mm, ts, rows, pieces, (Py_ssize_t)p->wrote_from, 0, p->start};
            in.max_body = PyLong_AsSsize_t(max_size);
            if (in.max_body == -1 && PyErr_Occurred()) {
                in.unfit = PyErr_ExceptionMatches(PyExc_Exception);
                if (in.unfit) PyErr_Clear();
            }
            if (!PyErr_Occurred()) result = put_rows_run(&in, &p->rows);
        }
    }
    Py_XDECREF(cursor);
    Py_XDECREF(clock);
    Py_XDECREF(config);
    Py_XDECREF(max_size);
    Py_XDECREF(mm);
    Py_XDECREF(ts);
    return result;
}

static PyObject *pass_run(Pass *p, PyObject *const *args) {
    PyObject *rows = args[1], *pieces = args[2];
    int open = pass_open(p);
    if (open <= 0) return open < 0 ? NULL : Py_NewRef(Py_None);
    p->started_ns = monotonic_ns();
    if (append(p, rows, pieces) < 0) return NULL;
    p->position = p->rows.position;
    PyObject *replies = p->rows.replies, *totals, *appended;
    if (PyList_GET_SIZE(replies) == 0) /* nothing taken: the reference takes every row */
        return Py_NewRef(replies);
    int common = pass_check(p, args[3], args[4], args[5]);
    if (common > 0) return pass_write(p, replies) == 0 ? Py_NewRef(replies) : NULL;
    if (common < 0 || (appended = plain_pack_finish(p->rows.pack)) == NULL) return NULL;
    if ((totals = put_rows_totals(&p->rows)) == NULL) {
        Py_DECREF(appended);
        return NULL;
    }
    return Py_BuildValue("(ONNLLL)", replies, totals, appended, p->position, p->wrote_from,
                         p->started_ns);
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
    memset(&p, 0, offsetof(Pass, targets));
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
