/* What a batch put hands dispatch, packed (broker/store/append_cursor.py python_batch_dispatch,
 * the reference): instead of a DispatchRequest per entry (a tuple, a dict, two ints and the
 * KEYS and UNIQ_KEY strings kept alive until dispatch reads them back), one bytes object of
 * ConsumeQueue units, one of index entries and the few long-polling wake-ups.
 *
 * Called by AppendCursor.put_batch_dispatch (append.c) right after it packed the records from
 * a batch plan (batch.c), which it checked: the records are read back from the segment. */
#include "store.h"
#include "batch_body.h"

int pack_plan(Py_buffer *mm, Py_ssize_t position, PyObject *records, const RecordFields *common,
              BatchPlan *plan) {
    RecordFields record = *common, *f = &record; /* its props point at this frame's buffer */
    if (PyTuple_GET_SIZE(records) != 3 || !PyMemoryView_Check(PyTuple_GET_ITEM(records, 0)) ||
        !PyBytes_Check(PyTuple_GET_ITEM(records, 1)) ||
        !PyBytes_Check(PyTuple_GET_ITEM(records, 2)) ||
        PyBytes_GET_SIZE(PyTuple_GET_ITEM(records, 2)) % (Py_ssize_t)sizeof(PlanEntry)) {
        PyErr_SetString(PyExc_TypeError, "a batch plan is (view, batch properties, plan)");
        return -1;
    }
    const Py_buffer *body = byte_view(PyTuple_GET_ITEM(records, 0));
    if (body == NULL) return -1;
    PyObject *batch_props = PyTuple_GET_ITEM(records, 1), *entries = PyTuple_GET_ITEM(records, 2);
    plan->entries = (const PlanEntry *)PyBytes_AS_STRING(entries);
    plan->count = PyBytes_GET_SIZE(entries) / (Py_ssize_t)sizeof(PlanEntry);
    plan->batch_props_length = PyBytes_GET_SIZE(batch_props);
    const unsigned char *data = body->buf;
    unsigned char props[MAX_PROPERTIES_LENGTH];
    f->props = props;
    for (Py_ssize_t i = 0; i < plan->count; i++) {
        const PlanEntry *e = &plan->entries[i];
        Py_ssize_t props_length = e->props_length + (e->separate != 0) + plan->batch_props_length;
        int inside = e->body_at >= 0 && e->body_length >= 0 && e->props_at >= 0 &&
                     e->props_length >= 0 && e->body_length <= body->len - e->body_at &&
                     e->props_length <= body->len - e->props_at &&
                     props_length <= MAX_PROPERTIES_LENGTH;
        if (!inside || e->size != record_size(e->body_length, f->topic_len, props_length,
                                              f->born_len, f->store_len)) {
            PyErr_SetString(PyExc_ValueError, "a batch plan entry does not hold together");
            return -1;
        }
        if (position < 0 || position > mm->len || e->size > mm->len - position) {
            PyErr_Format(PyExc_IndexError, "a %zd-byte record at %zd does not fit in %zd bytes",
                         e->size, position, mm->len);
            return -1;
        }
        memcpy(props, data + e->props_at, e->props_length);
        if (e->separate) props[e->props_length] = '\x02';
        memcpy(props + e->props_length + (e->separate != 0), PyBytes_AS_STRING(batch_props),
               plan->batch_props_length);
        f->size = (int32_t)e->size;
        f->crc = (int32_t)e->crc;
        f->flag = e->flag;
        f->body = data + e->body_at;
        f->body_len = e->body_length;
        f->props_len = props_length;
        write_record((unsigned char *)mm->buf + position, f);
        position += e->size;
        f->phys_offset += e->size;
        f->queue_offset += 1;
    }
    return 0;
}

/* The index entries being collected: (key hash int32, phys offset int64) big-endian, in a bytes
 * object grown by doubling and cut to length at the end. */
typedef struct {
    PyObject *bytes;
    Py_ssize_t used;
    long long phys;
} Entries;

static int add_entry(void *ctx, uint32_t hash) {
    Entries *e = ctx;
    Py_ssize_t size = PyBytes_GET_SIZE(e->bytes);
    if (e->used + BATCH_KEY_SIZE > size && _PyBytes_Resize(&e->bytes, size * 2) < 0) return -1;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(e->bytes) + e->used;
    put_i32(p, (int32_t)hash);
    put_i64(p + 4, e->phys);
    e->used += BATCH_KEY_SIZE;
    return 0;
}

/* The wake-ups of a batch: once per tags code, with the newest queue offset carrying it, in
 * the order each code first appears (dispatch.py _notify_newest). A batch almost always has
 * one tag; past BATCH_WAKE_TAGS distinct ones they move to a dict (insertion-ordered, an update
 * keeps the first position), so a hostile batch of all-different tags stays linear. */
typedef struct {
    long long tags[BATCH_WAKE_TAGS], queue_offset[BATCH_WAKE_TAGS];
    int count;
    PyObject *more; /* dict tags -> queue offset, once the table is full */
} Wakes;

static int add_wake(Wakes *w, long long tags, long long queue_offset) {
    if (w->more == NULL) {
        for (int i = 0; i < w->count; i++)
            if (w->tags[i] == tags) {
                w->queue_offset[i] = queue_offset;
                return 0;
            }
        if (w->count < BATCH_WAKE_TAGS) {
            w->tags[w->count] = tags;
            w->queue_offset[w->count++] = queue_offset;
            return 0;
        }
        if ((w->more = PyDict_New()) == NULL) return -1;
        for (int i = 0; i < w->count; i++)
            if (add_wake(w, w->tags[i], w->queue_offset[i]) < 0) return -1;
    }
    PyObject *key = PyLong_FromLongLong(tags), *value = PyLong_FromLongLong(queue_offset);
    int set = key == NULL || value == NULL ? -1 : PyDict_SetItem(w->more, key, value);
    Py_XDECREF(key);
    Py_XDECREF(value);
    return set;
}

/* [(tags code, queue offset)] in first-appearance order. */
static PyObject *wake_list(const Wakes *w) {
    if (w->more != NULL) return PyDict_Items(w->more); /* a list of (tags, offset) pairs */
    PyObject *list = PyList_New(w->count);
    for (int i = 0; list != NULL && i < w->count; i++) {
        PyObject *pair = Py_BuildValue("(LL)", w->tags[i], w->queue_offset[i]);
        if (pair == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, pair);
    }
    return list;
}

/* The comma-joined message ids of the plan's records from `phys`. */
static PyObject *joined_ids(PyObject *prefix, const PlanEntry *plan, Py_ssize_t n,
                            long long phys) {
    Py_ssize_t plen = PyUnicode_GET_LENGTH(prefix);
    if (n == 0) return PyUnicode_New(0, 127);
    static const char hex[] = "0123456789ABCDEF";
    PyObject *ids = PyUnicode_New(n * (plen + 17) - 1, 127);
    if (ids == NULL) return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(ids);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i) *out++ = ',';
        memcpy(out, PyUnicode_1BYTE_DATA(prefix), plen);
        unsigned long long u = (unsigned long long)phys;
        for (int d = 15; d >= 0; d--, u >>= 4) out[plen + d] = hex[u & 0xF];
        out += plen + 16;
        phys += plan[i].size;
    }
    return ids;
}

PyObject *batch_dispatch(PyObject *prefix, PyObject *topic, const unsigned char *records,
                         const PlanEntry *plan, Py_ssize_t n, Py_ssize_t batch_props_length,
                         long long phys, long long queue_offset) {
    if (!PyUnicode_IS_ASCII(prefix) || n > PY_SSIZE_T_MAX / (CQ_UNIT_SIZE + 2 * BATCH_KEY_SIZE)) {
        PyErr_SetString(PyExc_ValueError, "a batch too large or a message id prefix not hex");
        return NULL;
    }
    PyObject *units = PyBytes_FromStringAndSize(NULL, n * CQ_UNIT_SIZE);
    Entries entries = {PyBytes_FromStringAndSize(NULL, (n ? n : 1) * 2 * BATCH_KEY_SIZE), 0, 0};
    PyObject *ids = joined_ids(prefix, plan, n, phys), *wakes = NULL, *result = NULL;
    Wakes w = {.count = 0, .more = NULL};
    if (units == NULL || entries.bytes == NULL || ids == NULL) goto done;
    uint32_t base = 31u * unsigned_java_hash(topic) + '#';
    unsigned char *unit = (unsigned char *)PyBytes_AS_STRING(units);
    for (Py_ssize_t i = 0; i < n; i++, unit += CQ_UNIT_SIZE) {
        Py_ssize_t size = plan[i].size;
        Py_ssize_t props_length = plan[i].props_length + plan[i].separate + batch_props_length;
        /* a record's properties are its last field */
        const char *props = (const char *)records + size - props_length;
        /* ASCII KEYS and UNIQ_KEY (what producers send) are hashed from the record's bytes;
         * any other value through its str, as before */
        const char *keys[2], *uniq[2];
        long tags_code;
        int ascii = dispatch_spans(props, props_length, &tags_code, keys, uniq), hashed;
        if (ascii < 0) goto done;
        entries.phys = phys;
        long long tags = tags_code;
        if (ascii) {
            hashed = each_ascii_key_hash(base, keys, uniq, add_entry, &entries);
        } else {
            PyObject *fields = dispatch_fields_of(props, props_length);
            if (fields == NULL) goto done;
            tags = as_long_long(PyTuple_GET_ITEM(fields, 0));
            hashed = each_key_hash(base, PyTuple_GET_ITEM(fields, 1), PyTuple_GET_ITEM(fields, 2),
                                   add_entry, &entries);
            Py_DECREF(fields);
        }
        put_i64(unit, phys);
        put_i32(unit + 8, (int32_t)size);
        put_i64(unit + 12, tags);
        if (hashed < 0 || add_wake(&w, tags, queue_offset) < 0) goto done;
        records += size;
        phys += size;
        queue_offset += 1;
    }
    if (_PyBytes_Resize(&entries.bytes, entries.used) < 0) goto done;
    wakes = wake_list(&w);
    if (wakes != NULL) result = PyTuple_Pack(4, ids, units, entries.bytes, wakes);
done:
    Py_XDECREF(units);
    Py_XDECREF(entries.bytes);
    Py_XDECREF(ids);
    Py_XDECREF(wakes);
    Py_XDECREF(w.more);
    return result;
}
