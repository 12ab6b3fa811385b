/* What a run of plain single puts hands dispatch, packed as put_rows (plain_rows.c) appends
 * them (broker/store/plain_dispatch.py python_plain_dispatch, the reference, says what and
 * why): per run of consecutive queue offsets of one queue its ConsumeQueue units and its
 * wake-ups, the index entries in chunks of one store timestamp, the last store timestamp.
 *
 * Each record is added as the values the cursor's put packed (plain_rows.c; plain_dispatch, for
 * the tests, takes DispatchRequests), and a wake-up keeps the objects the arrival listener is
 * handed, so nothing is built per record but the bytes. A queue's newest run is found through
 * a small open-addressing table keyed by (topic, queue id); a run's wake-ups through a short
 * scan, then a dict once a run has more than PLAIN_WAKE_SCAN tags codes: a hostile read of
 * many queues or tags stays linear. Everything is bounded by the rows of one call. */
#include "store.h"

#define PLAIN_WAKE_SCAN 8

/* The newest record of a run carrying a tags code: the arrival listener's arguments. */
typedef struct {
    long long tags, queue_offset;
    PyObject *topic, *queue_id, *tags_obj, *store_ts, *properties;
} Wake;

static void clear_wake(Wake *w) {
    Py_CLEAR(w->topic);
    Py_CLEAR(w->queue_id);
    Py_CLEAR(w->tags_obj);
    Py_CLEAR(w->store_ts);
    Py_CLEAR(w->properties);
}

static void set_wake(Wake *w, const PlainRecord *r) {
    clear_wake(w);
    w->tags = r->tags_code;
    w->queue_offset = r->queue_offset;
    w->topic = Py_NewRef(r->topic);
    w->queue_id = Py_NewRef(r->queue_id);
    w->tags_obj = Py_XNewRef(r->tags); /* NULL: made from w->tags when it is handed on */
    w->store_ts = Py_NewRef(r->store_ts);
    w->properties = Py_NewRef(r->properties);
}

/* A run's first units are kept in the run itself: a lone send's one unit was a bytes object
 * made and freed a pass only for plain_pass to read back (bytes only for plain_pack_finish). */
#define INLINE_UNITS 2

typedef struct {
    PyObject *topic, *queue_id; /* of the run's first record */
    long long queue, first, next; /* queue id, first and next queue offsets */
    unsigned char *heap; /* the units once past `space` (grown by doubling), else NULL */
    Py_ssize_t used, room; /* bytes of units; room: the heap's */
    Wake *wakes;
    Py_ssize_t wake_count, wake_room;
    PyObject *wake_index; /* tags code -> index in wakes, once past PLAIN_WAKE_SCAN */
    Py_ssize_t later;     /* the next run of the same queue, or -1 */
    int first_of_queue;
    unsigned char space[INLINE_UNITS * CQ_UNIT_SIZE]; /* last: not zeroed when a run starts */
} Run;

static unsigned char *run_units(const Run *r) {
    return r->heap != NULL ? r->heap : (unsigned char *)r->space;
}

/* A lone send or a round to a queue or two fits the pack's own arrays (INLINE_RUNS runs,
 * twice as many slots); a pack past them moves to the heap. Each was a malloc and a free a
 * pass. */
#define INLINE_RUNS 2

/* PyMem_Malloc serves up to 512 bytes from CPython's own pools; past that it is the system's
 * malloc, slower (a pack of 616 bytes undid most of what its inline arrays saved) */
struct PlainPack {
    Run *runs;
    Py_ssize_t count, room;
    Py_ssize_t *slots; /* the newest run of each queue, -1 empty; a power of two in size */
    Py_ssize_t slot_mask;
    Py_ssize_t last; /* the run the previous record went to */
    PyObject *chunks; /* [(store timestamp, entries)], made when the first chunk closes */
    int keys_open;    /* a chunk of index entries is open: keys_used bytes of them */
    unsigned char *keys_heap; /* its entries once past key_space (grown by doubling), or NULL */
    Py_ssize_t keys_used, keys_room; /* keys_room: the heap's */
    long long keys_ts, last_ts;
    /* what follows is not zeroed by plain_pack_new */
    Run inline_runs[INLINE_RUNS];
    Py_ssize_t inline_slots[2 * INLINE_RUNS];
    /* the open chunk's first entries (BATCH_KEY_SIZE each): bytes only for plain_pack_finish */
    unsigned char key_space[4 * BATCH_KEY_SIZE];
};

_Static_assert(sizeof(PlainPack) <= 512, "a pack fits CPython's small-object allocator");

static unsigned char *chunk_keys(const PlainPack *p) {
    return p->keys_heap != NULL ? p->keys_heap : (unsigned char *)p->key_space;
}

PlainPack *plain_pack_new(void) {
    /* only the header zeroed: a run is cleared as it is taken (run_of), the slots as the
     * table is set up (grow); zeroing the inline arrays too was most of a pass's allocation */
    PlainPack *p = PyMem_Malloc(sizeof *p);
    if (p == NULL) return (PlainPack *)PyErr_NoMemory();
    memset(p, 0, offsetof(PlainPack, inline_runs));
    p->last = -1;
    return p;
}

void plain_pack_free(PlainPack *p) {
    if (p == NULL) return;
    for (Py_ssize_t i = 0; i < p->count; i++) {
        Run *r = &p->runs[i];
        Py_XDECREF(r->topic);
        Py_XDECREF(r->queue_id);
        PyMem_Free(r->heap);
        for (Py_ssize_t w = 0; w < r->wake_count; w++) clear_wake(&r->wakes[w]);
        PyMem_Free(r->wakes);
        Py_XDECREF(r->wake_index);
    }
    if (p->runs != p->inline_runs) PyMem_Free(p->runs);
    if (p->slots != p->inline_slots) PyMem_Free(p->slots);
    Py_XDECREF(p->chunks);
    PyMem_Free(p->keys_heap);
    PyMem_Free(p);
}

static Py_hash_t queue_hash(PyObject *topic, long long queue) {
    Py_hash_t h = PyObject_Hash(topic); /* a str caches it */
    return h == -1 ? -1 : (Py_hash_t)((Py_uhash_t)h * 1000003u ^ (Py_uhash_t)queue);
}

/* 1 when run `r` is of (topic, queue), 0 when not, -1 on an error. */
static int same_queue(const Run *r, PyObject *topic, long long queue) {
    if (r->queue != queue) return 0;
    if (r->topic == topic) return 1;
    return PyUnicode_Compare(r->topic, topic) == 0 ? 1 : (PyErr_Occurred() ? -1 : 0);
}

/* The slot of (topic, queue): holding its newest run, or empty. -1 on an error. */
static Py_ssize_t find_slot(const PlainPack *p, PyObject *topic, long long queue,
                            Py_hash_t hash) {
    for (Py_ssize_t s = (Py_ssize_t)((Py_uhash_t)hash & (Py_uhash_t)p->slot_mask);;
         s = (s + 1) & p->slot_mask) {
        Py_ssize_t run = p->slots[s];
        if (run < 0) return s;
        int same = same_queue(&p->runs[run], topic, queue);
        if (same != 0) return same < 0 ? -1 : s;
    }
}

/* Room for one more run, the table at most half full. */
static int grow(PlainPack *p) {
    if (p->count < p->room) return 0;
    Py_ssize_t room = p->room == 0 ? INLINE_RUNS : p->room == INLINE_RUNS ? 8 : p->room * 2;
    Run *runs = p->inline_runs;
    Py_ssize_t *slots = p->inline_slots;
    if (p->room > 0) {
        runs = PyMem_Malloc((size_t)room * sizeof *runs);
        if (runs == NULL) return PyErr_NoMemory(), -1;
        memcpy(runs, p->runs, (size_t)p->count * sizeof *runs);
        if (p->runs != p->inline_runs) PyMem_Free(p->runs);
        slots = PyMem_Malloc((size_t)room * 2 * sizeof *slots);
    }
    p->runs = runs;
    p->room = room;
    if (slots == NULL) return PyErr_NoMemory(), -1;
    if (p->slots != p->inline_slots) PyMem_Free(p->slots);
    p->slots = slots;
    p->slot_mask = room * 2 - 1;
    for (Py_ssize_t s = 0; s <= p->slot_mask; s++) slots[s] = -1;
    for (Py_ssize_t i = 0; i < p->count; i++) { /* each queue's newest run */
        Run *r = &runs[i];
        if (r->later >= 0) continue;
        Py_hash_t h = queue_hash(r->topic, r->queue);
        Py_ssize_t s = h == -1 ? -1 : find_slot(p, r->topic, r->queue, h);
        if (s < 0) return -1;
        slots[s] = i;
    }
    return 0;
}

/* The run a queued record of (topic, queue) at `queue_offset` goes to: the queue's newest run
 * when the record follows it, else a new one (queue_runs' rule). -1 on an error. */
static Py_ssize_t run_of(PlainPack *p, const PlainRecord *record) {
    PyObject *topic = record->topic;
    long long queue = record->queue, offset = record->queue_offset;
    if (p->last >= 0) {
        Run *r = &p->runs[p->last];
        int same = r->next == offset ? same_queue(r, topic, queue) : 0;
        if (same != 0) return same < 0 ? -1 : p->last;
    }
    if (grow(p) < 0) return -1;
    Py_hash_t h = queue_hash(topic, queue);
    Py_ssize_t s = h == -1 ? -1 : find_slot(p, topic, queue, h);
    if (s < 0) return -1;
    Py_ssize_t newest = p->slots[s];
    if (newest >= 0 && p->runs[newest].next == offset) return p->last = newest;
    Py_ssize_t i = p->count;
    Run *r = &p->runs[i];
    memset(r, 0, offsetof(Run, space));
    r->topic = Py_NewRef(topic);
    r->queue_id = Py_NewRef(record->queue_id);
    r->queue = queue;
    r->first = r->next = offset;
    r->later = -1;
    r->first_of_queue = newest < 0;
    p->count++;
    if (newest >= 0) p->runs[newest].later = i;
    p->slots[s] = i;
    return p->last = i;
}

/* Room for `more` bytes after `used` in an inline array that moves to the heap past it (grown
 * by doubling; *heap NULL while inline): 0, or -1 with MemoryError. */
static int room_for(unsigned char **heap, Py_ssize_t *room, const unsigned char *space,
                    Py_ssize_t space_size, Py_ssize_t used, Py_ssize_t more) {
    Py_ssize_t have = *heap != NULL ? *room : space_size;
    if (used + more <= have) return 0;
    if (have > PY_SSIZE_T_MAX / 2) return PyErr_NoMemory(), -1;
    unsigned char *grown = PyMem_Realloc(*heap, (size_t)have * 2);
    if (grown == NULL) return PyErr_NoMemory(), -1;
    if (*heap == NULL) memcpy(grown, space, (size_t)used);
    *heap = grown;
    *room = have * 2;
    return 0;
}

/* The record's unit onto its run's units. */
static int add_unit(Run *r, long long phys, long long size, long long tags) {
    if (room_for(&r->heap, &r->room, r->space, sizeof r->space, r->used, CQ_UNIT_SIZE) < 0)
        return -1;
    unsigned char *unit = run_units(r) + r->used;
    put_i64(unit, phys);
    put_i32(unit + 8, (int32_t)size);
    put_i64(unit + 12, tags);
    r->used += CQ_UNIT_SIZE;
    r->next = (long long)((unsigned long long)r->next + 1); /* compared only: may wrap */
    return 0;
}

/* A tags code as the int handed on: the record's own, else made (a new reference). */
static PyObject *tags_object(PyObject *tags, long long code) {
    return tags != NULL ? Py_NewRef(tags) : PyLong_FromLongLong(code);
}

/* wake_index[tags] = at; -1 with an error. */
static int index_wake(Run *r, PyObject *tags, long long code, Py_ssize_t at) {
    PyObject *key = tags_object(tags, code), *value = key == NULL ? NULL : PyLong_FromSsize_t(at);
    int set = value == NULL ? -1 : PyDict_SetItem(r->wake_index, key, value);
    Py_XDECREF(key);
    Py_XDECREF(value);
    return set;
}

/* The record as its tags code's newest in its run: the code's place kept, its record moved on. */
static int add_wake(Run *r, const PlainRecord *record) {
    Py_ssize_t found = -1;
    if (r->wake_index == NULL) {
        for (Py_ssize_t w = 0; w < r->wake_count && found < 0; w++)
            if (r->wakes[w].tags == record->tags_code) found = w;
    } else {
        PyObject *code = tags_object(record->tags, record->tags_code);
        PyObject *at = code == NULL ? NULL : PyDict_GetItemWithError(r->wake_index, code);
        Py_XDECREF(code);
        if (at == NULL && PyErr_Occurred()) return -1;
        if (at != NULL) found = PyLong_AsSsize_t(at);
    }
    if (found >= 0) {
        set_wake(&r->wakes[found], record);
        return 0;
    }
    if (r->wake_count == r->wake_room) {
        Py_ssize_t room = r->wake_room ? r->wake_room * 2 : 2;
        Wake *wakes = PyMem_Realloc(r->wakes, (size_t)room * sizeof *wakes);
        if (wakes == NULL) return PyErr_NoMemory(), -1;
        r->wakes = wakes;
        r->wake_room = room;
    }
    if (r->wake_count == PLAIN_WAKE_SCAN) { /* many tags in one run: look them up from here */
        if ((r->wake_index = PyDict_New()) == NULL) return -1;
        for (Py_ssize_t w = 0; w < r->wake_count; w++)
            if (index_wake(r, r->wakes[w].tags_obj, r->wakes[w].tags, w) < 0) return -1;
    }
    if (r->wake_index != NULL &&
        index_wake(r, record->tags, record->tags_code, r->wake_count) < 0)
        return -1;
    Wake *w = &r->wakes[r->wake_count++];
    memset(w, 0, sizeof *w);
    set_wake(w, record);
    return 0;
}

/* Close the open chunk of index entries onto the chunk list. */
static int close_chunk(PlainPack *p) {
    if (!p->keys_open) return 0;
    PyObject *keys = PyBytes_FromStringAndSize((const char *)chunk_keys(p), p->keys_used);
    PyObject *chunk = keys == NULL ? NULL : Py_BuildValue("(LN)", p->keys_ts, keys);
    p->keys_open = 0;
    if (chunk != NULL && p->chunks == NULL && (p->chunks = PyList_New(0)) == NULL) Py_CLEAR(chunk);
    int appended = chunk == NULL ? -1 : PyList_Append(p->chunks, chunk);
    Py_XDECREF(chunk);
    return appended;
}

typedef struct {
    PlainPack *p;
    long long phys, ts;
} KeySink;

static int add_key(void *ctx, uint32_t hash) {
    KeySink *k = ctx;
    PlainPack *p = k->p;
    if (p->keys_open && p->keys_ts != k->ts && close_chunk(p) < 0) return -1;
    if (!p->keys_open) {
        p->keys_open = 1;
        p->keys_used = 0;
        p->keys_ts = k->ts;
    }
    if (room_for(&p->keys_heap, &p->keys_room, p->key_space, sizeof p->key_space, p->keys_used,
                 BATCH_KEY_SIZE) < 0)
        return -1;
    unsigned char *entry = chunk_keys(p) + p->keys_used;
    put_i32(entry, (int32_t)hash);
    put_i64(entry + 4, k->phys);
    p->keys_used += BATCH_KEY_SIZE;
    return 0;
}

int plain_pack_add(PlainPack *p, const PlainRecord *record) {
    if (!(record->sys_flag & TRANSACTION_NOT_QUEUED_BIT)) {
        Py_ssize_t i = run_of(p, record);
        if (i < 0 || add_unit(&p->runs[i], record->phys, record->size, record->tags_code) < 0 ||
            add_wake(&p->runs[i], record) < 0)
            return -1;
    }
    p->last_ts = record->ts;
    if ((record->sys_flag & TRANSACTION_ROLLBACK_TYPE) == TRANSACTION_ROLLBACK_TYPE) return 0;
    KeySink sink = {p, record->phys, record->ts};
    uint32_t base = 31u * unsigned_java_hash(record->topic) + '#';
    if (record->keys == NULL)
        return each_ascii_key_hash(base, record->key_span, record->uniq_span, add_key, &sink);
    return each_key_hash(base, record->keys, record->uniq, add_key, &sink);
}

/* A DispatchRequest as the packer takes it; -1 with TypeError when it is not one. */
static int record_of(PyObject *request, PlainRecord *r) {
    if (!PyTuple_Check(request) || PyTuple_GET_SIZE(request) != DR_FIELDS ||
        !PyUnicode_Check(PyTuple_GET_ITEM(request, DR_TOPIC)) ||
        !PyUnicode_Check(PyTuple_GET_ITEM(request, DR_KEYS)) ||
        !PyUnicode_Check(PyTuple_GET_ITEM(request, DR_UNIQ_KEY))) {
        PyErr_SetString(PyExc_TypeError, "a request is a DispatchRequest");
        return -1;
    }
    static const int fields[7] = {DR_QUEUE_ID, DR_PHYS_OFFSET, DR_SIZE, DR_TAGS_CODE,
                                  DR_STORE_TIMESTAMP, DR_QUEUE_OFFSET, DR_SYS_FLAG};
    long long *values[7] = {&r->queue, &r->phys, &r->size, &r->tags_code,
                            &r->ts, &r->queue_offset, &r->sys_flag};
    for (int i = 0; i < 7; i++)
        if ((*values[i] = as_long_long(PyTuple_GET_ITEM(request, fields[i]))) == -1 &&
            PyErr_Occurred())
            return -1;
    r->topic = PyTuple_GET_ITEM(request, DR_TOPIC);
    r->queue_id = PyTuple_GET_ITEM(request, DR_QUEUE_ID);
    r->tags = PyTuple_GET_ITEM(request, DR_TAGS_CODE);
    r->store_ts = PyTuple_GET_ITEM(request, DR_STORE_TIMESTAMP);
    r->keys = PyTuple_GET_ITEM(request, DR_KEYS);
    r->uniq = PyTuple_GET_ITEM(request, DR_UNIQ_KEY);
    r->properties = PyTuple_GET_ITEM(request, DR_PROPERTIES);
    return 0;
}

/* A run's wake-ups: the arrival listener's arguments, once per tags code. */
static PyObject *wake_list(const Run *r) {
    PyObject *list = PyList_New(r->wake_count);
    for (Py_ssize_t i = 0; list != NULL && i < r->wake_count; i++) {
        const Wake *w = &r->wakes[i];
        /* the next queue offset as Python's int: 2**63 after the last int64 one */
        PyObject *next = w->queue_offset == LLONG_MAX
                             ? PyLong_FromUnsignedLongLong((unsigned long long)LLONG_MAX + 1)
                             : PyLong_FromLongLong(w->queue_offset + 1);
        PyObject *tags = next == NULL ? NULL : tags_object(w->tags_obj, w->tags);
        PyObject *wake = tags == NULL ? NULL
                                      : PyTuple_Pack(6, w->topic, w->queue_id, next, tags,
                                                     w->store_ts, w->properties);
        Py_XDECREF(next);
        Py_XDECREF(tags);
        if (wake == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, wake);
    }
    return list;
}

static PyObject *run_tuple(Run *r) {
    PyObject *units = PyBytes_FromStringAndSize((const char *)run_units(r), r->used);
    PyObject *wakes = units == NULL ? NULL : wake_list(r);
    if (wakes == NULL) {
        Py_XDECREF(units);
        return NULL;
    }
    return Py_BuildValue("(OOLNN)", r->topic, r->queue_id, r->first, units, wakes);
}

PyObject *plain_pack_finish(PlainPack *p) {
    if (close_chunk(p) < 0) return NULL;
    PyObject *runs = PyList_New(0);
    if (runs == NULL) return NULL;
    for (Py_ssize_t i = 0; i < p->count; i++) { /* each queue as it first appears, its runs */
        if (!p->runs[i].first_of_queue) continue;
        for (Py_ssize_t j = i; j >= 0; j = p->runs[j].later) {
            PyObject *run = run_tuple(&p->runs[j]);
            int appended = run == NULL ? -1 : PyList_Append(runs, run);
            Py_XDECREF(run);
            if (appended < 0) {
                Py_DECREF(runs);
                return NULL;
            }
        }
    }
    if (p->chunks == NULL && (p->chunks = PyList_New(0)) == NULL) {
        Py_DECREF(runs);
        return NULL;
    }
    return Py_BuildValue("(NOL)", runs, p->chunks, p->last_ts);
}

Py_ssize_t plain_pack_runs(const PlainPack *p, PackRun *out, Py_ssize_t room) {
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < p->count; i++) { /* plain_pack_finish's order */
        if (!p->runs[i].first_of_queue) continue;
        for (Py_ssize_t j = i; j >= 0; j = p->runs[j].later) {
            const Run *r = &p->runs[j];
            if (n == room) return -1;
            out[n++] = (PackRun){r->topic, r->queue_id, r->first,
                                 run_units(r), r->used};
        }
    }
    return n;
}

int plain_pack_keys(const PlainPack *p, long long *ts, const unsigned char **keys,
                    Py_ssize_t *used) {
    /* closed chunks are only made when a key of another timestamp follows */
    if (p->chunks != NULL && PyList_GET_SIZE(p->chunks) > 0) return 2;
    if (!p->keys_open) return 0;
    *ts = p->keys_ts;
    *keys = chunk_keys(p);
    *used = p->keys_used;
    return 1;
}

long long plain_pack_last_ts(const PlainPack *p) { return p->last_ts; }

/* plain_dispatch(requests) -> (runs, index entry chunks, last store timestamp): the twin of
 * plain_dispatch.py python_plain_dispatch, for the tests (put_rows packs as it appends). */
PyObject *plain_dispatch(PyObject *self, PyObject *requests) {
    if (!PyList_CheckExact(requests)) {
        PyErr_SetString(PyExc_TypeError, "plain_dispatch(requests list)");
        return NULL;
    }
    PlainPack *p = plain_pack_new();
    PyObject *result = NULL;
    if (p == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(requests); i++) {
        PyObject *request = Py_NewRef(PyList_GET_ITEM(requests, i));
        PlainRecord record;
        int added = record_of(request, &record) < 0 ? -1 : plain_pack_add(p, &record);
        Py_DECREF(request);
        if (added < 0) goto done;
    }
    result = plain_pack_finish(p);
done:
    plain_pack_free(p);
    return result;
}
