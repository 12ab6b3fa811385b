/* AppendCursor: the CommitLog's append bookkeeping, owned here (broker/store/append_cursor.py
 * PythonAppendCursor, the reference).
 *
 * The cursor owns what an append moves on besides the segment's bytes: the next queue offset
 * of every (topic, queue id), the last put's store timestamp, and what every record and message
 * id carries of this broker (its host and port, the id prefix). CommitLog holds one and shows
 * its table to Python read-only. Everything else comes in as values: the segment's buffer, its
 * write position and start offset, the store timestamp, maxMessageSize and the message's
 * fields. The record's size (or the ids and dispatch requests) come out, and the caller moves
 * the segment's write position. Nothing is read from a Python object by attribute name and
 * nothing in Python is called.
 *
 * An append changes the cursor only once everything it returns is built: a record that does
 * not fit, a refused message or any error leaves the cursor as it was (the bytes it may have
 * written lie past the write position, where the next append overwrites them). */
#include "store.h"

#define KEY_CACHE 16 /* a power of two */

typedef struct {
    PyObject_HEAD
    PyObject *prefix;        /* str: the hex of the store host's address and port */
    PyObject *store_address; /* bytes: 4 or 16 */
    int32_t store_port;
    PyTypeObject *request_type;
    PyObject *queue_offsets; /* dict: (topic, queue id) -> next queue offset */
    PyObject *queue_offsets_view;
    long long last_put_timestamp;
    /* recent (topic, queue id) keys: a put passes the table the very object it holds as the
     * key, so the lookup and the store of the next offset match by identity instead of
     * comparing a fresh tuple twice (~8% of a plain pass's user CPU in perf) */
    PyObject *key_cache[KEY_CACHE];
    /* and each cached key's next queue offset as the table holds it, when known: the table is
     * the cursor's alone (Python sees it read-only), so every change to it goes through the
     * functions below, which keep these or forget them all (forget_next) */
    long long key_next[KEY_CACHE];
    unsigned char key_known[KEY_CACHE];
} AppendCursor;

static void forget_next(AppendCursor *c) { memset(c->key_known, 0, sizeof c->key_known); }

/* RecordRefused(status name, remark): a message the CommitLog does not take. */
static void refuse(const char *status, PyObject *remark) {
    if (remark == NULL) return;
    PyObject *args = Py_BuildValue("(sN)", status, remark);
    if (args == NULL) return;
    PyErr_SetObject(RecordRefused, args);
    Py_DECREF(args);
}

static int as_ll(PyObject *o, long long *out) {
    *out = as_long_long(o);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int as_ssize(PyObject *o, Py_ssize_t *out) {
    *out = PyLong_AsSsize_t(o);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *queue_key(PyObject *topic, PyObject *queue_id) {
    if (!PyUnicode_Check(topic) || !PyLong_Check(queue_id)) {
        PyErr_SetString(PyExc_TypeError, "a queue is a (topic str, queue id int)");
        return NULL;
    }
    return PyTuple_Pack(2, topic, queue_id);
}

/* queue_key through the cursor's cache of recent keys (exact str and int only: anything else
 * is made afresh). The key is equal either way; only which object it is may differ. */
static PyObject *cached_queue_key(AppendCursor *c, PyObject *topic, PyObject *queue_id,
                                  Py_ssize_t *at) {
    *at = -1;
    if (!PyUnicode_CheckExact(topic) || !PyLong_CheckExact(queue_id))
        return queue_key(topic, queue_id);
    Py_hash_t h = PyObject_Hash(topic); /* a str caches it */
    if (h == -1) return NULL;
    int overflow; /* a queue id past a long long only picks another slot */
    long long q = PyLong_AsLongLongAndOverflow(queue_id, &overflow);
    if (q == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t slot = (Py_ssize_t)(((Py_uhash_t)h ^ (Py_uhash_t)q) & (KEY_CACHE - 1));
    PyObject *cached = c->key_cache[slot];
    if (cached != NULL) {
        PyObject *t = PyTuple_GET_ITEM(cached, 0);
        int same = t == topic || PyUnicode_Compare(t, topic) == 0
                       ? PyObject_RichCompareBool(PyTuple_GET_ITEM(cached, 1), queue_id, Py_EQ)
                       : 0;
        if (same < 0) return NULL;
        if (same) {
            *at = slot;
            return Py_NewRef(cached);
        }
    }
    PyObject *key = queue_key(topic, queue_id);
    if (key != NULL) {
        Py_XSETREF(c->key_cache[slot], Py_NewRef(key));
        c->key_known[slot] = 0;
        *at = slot;
    }
    return key;
}

/* The next queue offset of `key`: 0 for a queue not in the table. */
static int next_queue_offset(AppendCursor *c, PyObject *key, long long *out) {
    PyObject *next = PyDict_GetItemWithError(c->queue_offsets, key); /* borrowed */
    if (next == NULL) {
        *out = 0;
        return PyErr_Occurred() ? -1 : 0;
    }
    return as_ll(next, out);
}

static int set_next(AppendCursor *c, PyObject *key, long long queue_offset) {
    PyObject *o = PyLong_FromLongLong(queue_offset);
    if (o == NULL) return -1;
    int r = PyDict_SetItem(c->queue_offsets, key, o);
    Py_DECREF(o);
    return r;
}

/* A read-only view of `o`: an exact bytes object's own contents (immutable, and the caller's
 * arguments keep it alive), `view->obj` left NULL so that nothing is released; anything else
 * through the buffer protocol. Two protocol calls and releases a put were ~0.1k instructions. */
static int read_view(PyObject *o, Py_buffer *view) {
    if (PyBytes_CheckExact(o)) {
        view->buf = PyBytes_AS_STRING(o);
        view->len = PyBytes_GET_SIZE(o);
        view->obj = NULL;
        return 0;
    }
    return PyObject_GetBuffer(o, view, PyBUF_SIMPLE);
}

/* The born host of a message: an (address bytes of 4 or 16, port) tuple. */
static int born_host_of(PyObject *host, Py_buffer *address, long long *port) {
    if (!PyTuple_Check(host) || PyTuple_GET_SIZE(host) != 2) {
        PyErr_SetString(PyExc_TypeError, "born_host is an (address, port) tuple");
        return -1;
    }
    if (as_ll(PyTuple_GET_ITEM(host, 1), port) < 0) return -1;
    return read_view(PyTuple_GET_ITEM(host, 0), address);
}

/* ------------------------------------------------------------------ one message */

enum {
    P_MM, P_POSITION, P_START, P_STORE_TS, P_MAX_BODY, P_TOPIC, P_QUEUE_ID, P_SYS_FLAG,
    P_PROPERTIES, P_BODY, P_FLAG, P_BORN_TS, P_BORN_HOST, P_RECONSUME, P_PREPARED, P_ARGS,
};

typedef struct {
    Py_buffer mm, body, born;
    PyObject *fields; /* (encoded properties, tags code, KEYS, UNIQ_KEY), or NULL: spans */
    PyObject *key;    /* (topic, queue id) */
    Py_ssize_t slot;  /* the key's place in the cursor's cache, or -1 */
    const char *props; /* the record's encoded properties (the fields' or the argument's) */
    Py_ssize_t props_len;
    long tags_code;                /* when fields is NULL: dispatch_spans' */
    const char *keys[2], *uniq[2]; /* the same */
} PutInputs;

static void release_inputs(PutInputs *in) {
    if (in->mm.obj != NULL) PyBuffer_Release(&in->mm);
    if (in->body.obj != NULL) PyBuffer_Release(&in->body);
    if (in->born.obj != NULL) PyBuffer_Release(&in->born);
    Py_XDECREF(in->fields);
    Py_XDECREF(in->key);
}

/* A record just packed: where it is and which queue offset it took. */
typedef struct {
    long long phys, queue_offset, store_ts;
    Py_ssize_t size;
    int queued;
} Packed;

/* The cursor moved on past a record packed: its queue's next offset, the last put's time. */
static int commit(AppendCursor *c, PutInputs *in, const Packed *p) {
    /* known again once set; a key not in the cache (a str subclass's) may be equal to one
     * that is: all forgotten */
    if (p->queued && in->slot >= 0) c->key_known[in->slot] = 0;
    if (p->queued && in->slot < 0) forget_next(c);
    if (p->queued && p->queue_offset == LLONG_MAX) {
        /* the next one is 2**63, as Python's int says (the twin's next put refuses it); a
         * long long would wrap to a negative offset */
        PyObject *next = PyLong_FromUnsignedLongLong((unsigned long long)LLONG_MAX + 1);
        int r = next == NULL ? -1 : PyDict_SetItem(c->queue_offsets, in->key, next);
        Py_XDECREF(next);
        if (r < 0) return -1;
    } else if (p->queued) {
        if (set_next(c, in->key, p->queue_offset + 1) < 0) return -1;
        if (in->slot >= 0) {
            c->key_next[in->slot] = p->queue_offset + 1;
            c->key_known[in->slot] = 1;
        }
    }
    c->last_put_timestamp = p->store_ts;
    return 0;
}

/* The message id and dispatch request of a record just packed; the cursor moved on once
 * they are built. */
static PyObject *put_outcome(AppendCursor *c, PyObject *const *args, PutInputs *in,
                             const Packed *p) {
    PyObject *msg_id = message_id(c->prefix, p->phys);
    if (msg_id == NULL) return NULL;
    PyObject *items[DR_FIELDS] = {
        Py_NewRef(args[P_TOPIC]),
        Py_NewRef(args[P_QUEUE_ID]),
        PyLong_FromLongLong(p->phys),
        PyLong_FromSsize_t(p->size),
        Py_NewRef(PyTuple_GET_ITEM(in->fields, 1)),
        Py_NewRef(args[P_STORE_TS]),
        PyLong_FromLongLong(p->queue_offset),
        Py_NewRef(PyTuple_GET_ITEM(in->fields, 2)),
        Py_NewRef(PyTuple_GET_ITEM(in->fields, 3)),
        Py_NewRef(args[P_SYS_FLAG]),
        Py_NewRef(args[P_PROPERTIES]),
    };
    PyObject *request = new_request(c->request_type, items);
    PyObject *result = request == NULL ? NULL : PyTuple_Pack(2, msg_id, request);
    Py_DECREF(msg_id);
    Py_XDECREF(request);
    if (result != NULL && commit(c, in, p) < 0) Py_CLEAR(result);
    return result;
}

static int put_numbers(PyObject *const *args, PutNumbers *n) {
    return as_ssize(args[P_POSITION], &n->position) < 0 || as_ll(args[P_START], &n->start) < 0 ||
                   as_ll(args[P_STORE_TS], &n->store_ts) < 0 ||
                   as_ssize(args[P_MAX_BODY], &n->max_body) < 0 ||
                   as_ll(args[P_QUEUE_ID], &n->queue_id) < 0 ||
                   as_ll(args[P_SYS_FLAG], &n->sys_flag) < 0 || as_ll(args[P_FLAG], &n->flag) < 0 ||
                   as_ll(args[P_BORN_TS], &n->born_ts) < 0 ||
                   as_ll(args[P_RECONSUME], &n->reconsume) < 0 ||
                   as_ll(args[P_PREPARED], &n->prepared) < 0
               ? -1
               : 0;
}

/* The CommitLog's limits on one record, in Java's order: -1 with RecordRefused set when the
 * message is over one (append_cursor.py record_problem). */
static int check_limits(Py_ssize_t topic_len, Py_ssize_t props_len, Py_ssize_t body_len,
                        Py_ssize_t max_body) {
    if (topic_len > MAX_TOPIC_BYTES) {
        refuse("MESSAGE_ILLEGAL",
               PyUnicode_FromFormat("topic is %zd bytes, max %d", topic_len, MAX_TOPIC_BYTES));
        return -1;
    }
    if (props_len > MAX_PROPERTIES_BYTES) {
        refuse("PROPERTIES_SIZE_EXCEEDED",
               PyUnicode_FromFormat("properties are %zd bytes, max %d", props_len,
                                    MAX_PROPERTIES_BYTES));
        return -1;
    }
    if (body_len > max_body) {
        refuse("MESSAGE_ILLEGAL",
               PyUnicode_FromFormat("body is %zd bytes, max %zd", body_len, max_body));
        return -1;
    }
    return 0;
}

/* The record of a message that fits, packed at n->position of in->mm. */
static void pack_one(AppendCursor *c, PutInputs *in, const PutNumbers *n, long long born_port,
                     const char *topic, Py_ssize_t topic_len, Py_ssize_t size,
                     long long queue_offset) {
    Py_ssize_t store_len = PyBytes_GET_SIZE(c->store_address);
    int32_t sys_flag = (int32_t)n->sys_flag;
    if (in->born.len == 16) sys_flag |= BORNHOST_V6_FLAG;
    if (store_len == 16) sys_flag |= STOREHOSTADDRESS_V6_FLAG;
    unsigned long crc = body_crc(in->body.buf, (size_t)in->body.len);
    RecordFields f = {
        .size = (int32_t)size, .crc = (int32_t)(crc & 0x7FFFFFFFul),
        .queue_id = (int32_t)n->queue_id, .flag = (int32_t)n->flag, .sys_flag = sys_flag,
        .born_port = (int32_t)born_port, .store_port = c->store_port,
        .reconsume_times = (int32_t)n->reconsume, .queue_offset = queue_offset,
        .phys_offset = n->start + n->position, .born_ts = n->born_ts, .store_ts = n->store_ts,
        .prepared = n->prepared, .born = in->born.buf, .born_len = in->born.len,
        .store = (const unsigned char *)PyBytes_AS_STRING(c->store_address),
        .store_len = store_len, .body = in->body.buf, .body_len = in->body.len,
        .topic = (const unsigned char *)topic, .topic_len = topic_len,
        .props = (const unsigned char *)in->props, .props_len = in->props_len,
    };
    write_record((unsigned char *)in->mm.buf + n->position, &f);
}

/* What dispatch reads of the properties into `in`: for `spans` and property bytes whose values
 * are ASCII, dispatch_spans' values into the bytes (no objects); else message_fields_of's
 * tuple, which fails as dispatch_spans would (a TAGS value that is not UTF-8) or judges the
 * rest. 0, or -1 with the error. */
static int properties_of(PyObject *properties, int spans, PutInputs *in) {
    if (spans && PyBytes_CheckExact(properties)) {
        in->props = PyBytes_AS_STRING(properties);
        in->props_len = PyBytes_GET_SIZE(properties);
        int ascii = dispatch_spans(in->props, in->props_len, &in->tags_code, in->keys, in->uniq);
        if (ascii != 0) return ascii;
    }
    if ((in->fields = message_fields_of(properties)) == NULL) return -1;
    PyObject *encoded = PyTuple_GET_ITEM(in->fields, 0);
    in->props = PyBytes_AS_STRING(encoded);
    in->props_len = PyBytes_GET_SIZE(encoded);
    return 0;
}

/* One message's record packed at its position, the cursor not moved yet: 1 packed (`p` says
 * where), 0 it does not fit with the 8-byte BLANK filler (p->size), -1 with RecordRefused for
 * a message over the CommitLog's limits (checked in Java's order) or another error set. `in`
 * holds what the caller releases; `spans`: see properties_of. */
static int pack_message(AppendCursor *c, PyObject *const *args, const PutNumbers *numbers,
                        PutInputs *in, Packed *p, int spans) {
    const PutNumbers n = *numbers;
    Py_ssize_t topic_len;
    long long born_port;
    if (!PyUnicode_Check(args[P_TOPIC])) {
        PyErr_SetString(PyExc_TypeError, "the topic is a str");
        return -1;
    }
    const char *topic = PyUnicode_AsUTF8AndSize(args[P_TOPIC], &topic_len);
    if (topic == NULL || properties_of(args[P_PROPERTIES], spans, in) < 0 ||
        read_view(args[P_BODY], &in->body) < 0)
        return -1;
    Py_ssize_t props_len = in->props_len;
    if (check_limits(topic_len, props_len, in->body.len, n.max_body) < 0 ||
        born_host_of(args[P_BORN_HOST], &in->born, &born_port) < 0)
        return -1;
    if (in->born.len != 4 && in->born.len != 16) {
        PyErr_SetString(PyExc_ValueError, "host addresses are 4 or 16 bytes");
        return -1;
    }
    if (PyObject_GetBuffer(args[P_MM], &in->mm, PyBUF_WRITABLE) < 0) return -1;
    p->size = record_size(in->body.len, topic_len, props_len, in->born.len,
                          PyBytes_GET_SIZE(c->store_address));
    if (n.position < 0 || n.position > in->mm.len) {
        PyErr_Format(PyExc_IndexError, "position %zd outside a %zd-byte segment", n.position,
                     in->mm.len);
        return -1;
    }
    if (p->size + END_FILE_MIN_BLANK_LENGTH > in->mm.len - n.position) return 0;
    p->queued = !(n.sys_flag & TRANSACTION_NOT_QUEUED_BIT);
    p->queue_offset = 0;
    if ((in->key = cached_queue_key(c, args[P_TOPIC], args[P_QUEUE_ID], &in->slot)) == NULL)
        return -1;
    if (p->queued) {
        if (in->slot >= 0 && c->key_known[in->slot]) {
            p->queue_offset = c->key_next[in->slot];
        } else if (next_queue_offset(c, in->key, &p->queue_offset) < 0) {
            return -1;
        } else if (in->slot >= 0) {
            c->key_next[in->slot] = p->queue_offset;
            c->key_known[in->slot] = 1;
        }
    }
    pack_one(c, in, &n, born_port, topic, topic_len, p->size, p->queue_offset);
    p->phys = n.start + n.position;
    p->store_ts = n.store_ts;
    return 1;
}

/* put(mm, position, start_offset, store_timestamp, max_body, topic, queue_id, sys_flag,
 *     properties, body, flag, born_timestamp, born_host, reconsume_times,
 *     prepared_transaction_offset) -> (msg_id, DispatchRequest) | int
 * The message's record packed at `position` of `mm` (the segment starting at `start_offset`)
 * with the queue's next offset (none for a prepared or rolled-back half). The record's size
 * alone, nothing changed, when it does not fit with the 8-byte BLANK filler; RecordRefused for
 * a message over the CommitLog's limits, checked in Java's order. */
static PyObject *AppendCursor_put(AppendCursor *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != P_ARGS) {
        PyErr_Format(PyExc_TypeError, "put takes %d arguments", P_ARGS);
        return NULL;
    }
    PutInputs in = {0};
    Packed p;
    PutNumbers n;
    PyObject *result = NULL;
    if (put_numbers(args, &n) < 0) return NULL;
    int packed = pack_message(c, args, &n, &in, &p, 0);
    if (packed == 0) result = PyLong_FromSsize_t(p.size);
    else if (packed == 1) result = put_outcome(c, args, &in, &p);
    release_inputs(&in);
    return result;
}

int append_cursor_put_values(PyObject *cursor, PyObject *const *args, const PutNumbers *n,
                             PutValues *out) {
    AppendCursor *c = (AppendCursor *)cursor;
    PutInputs in = {0};
    Packed p;
    int packed = pack_message(c, args, n, &in, &p, 1);
    if (packed == 1 && commit(c, &in, &p) < 0) packed = -1;
    if (packed == 1) {
        out->phys = p.phys;
        out->queue_offset = p.queue_offset;
        out->size = p.size;
        out->fields = Py_XNewRef(in.fields);
        out->tags_code = in.tags_code;
        memcpy(out->keys, in.keys, sizeof out->keys);
        memcpy(out->uniq, in.uniq, sizeof out->uniq);
        out->msg_prefix = c->prefix;
    }
    release_inputs(&in);
    return packed;
}

/* ------------------------------------------------------------------ a batch */

enum {
    B_MM, B_POSITION, B_START, B_STORE_TS, B_RECORDS, B_TOPIC, B_QUEUE_ID, B_SYS_FLAG,
    B_BORN_TS, B_BORN_HOST, B_RECONSUME, B_ARGS,
};

/* put_batch_dispatch(mm, position, start_offset, store_timestamp, records, topic, queue_id,
 *                    sys_flag, born_timestamp, born_host, reconsume_times)
 *   -> (msg ids joined by commas, units, index entries, wakes)
 * records: the (view, batch properties, plan) batch_plan made (batch.c), packed straight from
 * the request's body back to back from `position`, with consecutive queue offsets from the
 * queue's next one; what dispatch needs comes back packed instead of a DispatchRequest per
 * record (batch_dispatch.c; PythonAppendCursor.put_batch_dispatch is the reference). The
 * caller made room for all of them. */
static PyObject *AppendCursor_put_batch_dispatch(AppendCursor *c, PyObject *const *args,
                                                 Py_ssize_t nargs) {
    if (nargs != B_ARGS) {
        PyErr_Format(PyExc_TypeError, "put_batch_dispatch takes %d arguments", B_ARGS);
        return NULL;
    }
    Py_ssize_t position, topic_len;
    long long start, store_ts, queue_id, sys_flag, born_ts, reconsume, born_port, queue_offset;
    if (as_ssize(args[B_POSITION], &position) < 0 || as_ll(args[B_START], &start) < 0 ||
        as_ll(args[B_STORE_TS], &store_ts) < 0 || as_ll(args[B_QUEUE_ID], &queue_id) < 0 ||
        as_ll(args[B_SYS_FLAG], &sys_flag) < 0 || as_ll(args[B_BORN_TS], &born_ts) < 0 ||
        as_ll(args[B_RECONSUME], &reconsume) < 0)
        return NULL;
    if (!PyTuple_Check(args[B_RECORDS]) || !PyUnicode_Check(args[B_TOPIC])) {
        PyErr_SetString(PyExc_TypeError, "records are a batch plan and the topic a str");
        return NULL;
    }
    const char *topic = PyUnicode_AsUTF8AndSize(args[B_TOPIC], &topic_len);
    if (topic == NULL) return NULL;
    if (topic_len > MAX_TOPIC_LENGTH) {
        PyErr_SetString(PyExc_ValueError, "topic longer than 255 bytes");
        return NULL;
    }
    PyObject *result = NULL, *key = NULL;
    PyObject *seq = args[B_RECORDS];
    Py_buffer mm = {0}, born = {0};
    if (born_host_of(args[B_BORN_HOST], &born, &born_port) < 0) goto done;
    if (born.len != 4 && born.len != 16) {
        PyErr_SetString(PyExc_ValueError, "host addresses are 4 or 16 bytes");
        goto done;
    }
    if ((key = queue_key(args[B_TOPIC], args[B_QUEUE_ID])) == NULL) goto done;
    if (next_queue_offset(c, key, &queue_offset) < 0) goto done;
    if (PyObject_GetBuffer(args[B_MM], &mm, PyBUF_WRITABLE) < 0) goto done;
    Py_ssize_t store_len = PyBytes_GET_SIZE(c->store_address);
    int32_t record_sys_flag = (int32_t)sys_flag;
    if (born.len == 16) record_sys_flag |= BORNHOST_V6_FLAG;
    if (store_len == 16) record_sys_flag |= STOREHOSTADDRESS_V6_FLAG;
    RecordFields f = {
        .queue_id = (int32_t)queue_id, .sys_flag = record_sys_flag,
        .born_port = (int32_t)born_port, .store_port = c->store_port,
        .reconsume_times = (int32_t)reconsume, .queue_offset = queue_offset,
        .phys_offset = start + position, .born_ts = born_ts, .store_ts = store_ts,
        .prepared = 0, .born = born.buf, .born_len = born.len,
        .store = (const unsigned char *)PyBytes_AS_STRING(c->store_address),
        .store_len = store_len, .topic = (const unsigned char *)topic, .topic_len = topic_len,
    };
    BatchPlan plan;
    if (pack_plan(&mm, position, seq, &f, &plan) < 0) goto done;
    Py_ssize_t count = plan.count;
    PyObject *outcome =
        batch_dispatch(c->prefix, args[B_TOPIC], (unsigned char *)mm.buf + position,
                       plan.entries, count, plan.batch_props_length, start + position, queue_offset);
    forget_next(c); /* its key is not the cache's: the cache's may be this queue's */
    if (outcome == NULL || set_next(c, key, queue_offset + count) < 0) {
        Py_XDECREF(outcome);
        goto done;
    }
    c->last_put_timestamp = store_ts;
    result = outcome;
done:
    if (mm.obj != NULL) PyBuffer_Release(&mm);
    if (born.obj != NULL) PyBuffer_Release(&born);
    Py_XDECREF(key);
    return result;
}

/* ------------------------------------------------------------------ the table */

static PyObject *AppendCursor_queue_offset(AppendCursor *c, PyObject *const *args,
                                           Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "queue_offset(topic, queue_id)");
        return NULL;
    }
    PyObject *key = queue_key(args[0], args[1]);
    if (key == NULL) return NULL;
    long long next;
    int got = next_queue_offset(c, key, &next);
    Py_DECREF(key);
    return got < 0 ? NULL : PyLong_FromLongLong(next);
}

static PyObject *AppendCursor_set_queue_offset(AppendCursor *c, PyObject *const *args,
                                               Py_ssize_t nargs) {
    long long next;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "set_queue_offset(topic, queue_id, queue_offset)");
        return NULL;
    }
    if (as_ll(args[2], &next) < 0) return NULL;
    if (next < 0) {
        PyErr_Format(PyExc_ValueError, "a queue offset is >= 0, not %lld", next);
        return NULL;
    }
    PyObject *key = queue_key(args[0], args[1]);
    if (key == NULL) return NULL;
    forget_next(c);
    int set = set_next(c, key, next);
    Py_DECREF(key);
    return set < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *AppendCursor_remove_queue(AppendCursor *c, PyObject *const *args,
                                           Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "remove_queue(topic, queue_id)");
        return NULL;
    }
    PyObject *key = queue_key(args[0], args[1]);
    if (key == NULL) return NULL;
    forget_next(c);
    int deleted = PyDict_DelItem(c->queue_offsets, key);
    Py_DECREF(key);
    if (deleted < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) return NULL;
        PyErr_Clear(); /* not in the table: nothing to forget */
    }
    Py_RETURN_NONE;
}

static PyObject *AppendCursor_clear_queue_offsets(AppendCursor *c, PyObject *unused) {
    forget_next(c);
    PyDict_Clear(c->queue_offsets);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ the type */

static PyObject *AppendCursor_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"msg_id_prefix", "store_address", "store_port", "request_type",
                               NULL};
    PyObject *prefix, *address, *request_type;
    int port;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "UO!iO!:AppendCursor", keywords, &prefix,
                                     &PyBytes_Type, &address, &port, &PyType_Type,
                                     &request_type))
        return NULL;
    if (!PyUnicode_IS_ASCII(prefix)) {
        PyErr_SetString(PyExc_ValueError, "a message id prefix is hex digits");
        return NULL;
    }
    if (PyBytes_GET_SIZE(address) != 4 && PyBytes_GET_SIZE(address) != 16) {
        PyErr_SetString(PyExc_ValueError, "host addresses are 4 or 16 bytes");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)request_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "the dispatch request type is a tuple subclass");
        return NULL;
    }
    AppendCursor *c = (AppendCursor *)type->tp_alloc(type, 0);
    if (c == NULL) return NULL;
    c->prefix = Py_NewRef(prefix);
    c->store_address = Py_NewRef(address);
    c->store_port = port;
    c->request_type = (PyTypeObject *)Py_NewRef(request_type);
    c->queue_offsets = PyDict_New();
    c->queue_offsets_view = c->queue_offsets ? PyDictProxy_New(c->queue_offsets) : NULL;
    if (c->queue_offsets_view == NULL) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static void AppendCursor_dealloc(AppendCursor *c) {
    Py_XDECREF(c->prefix);
    Py_XDECREF(c->store_address);
    Py_XDECREF(c->request_type);
    Py_XDECREF(c->queue_offsets);
    Py_XDECREF(c->queue_offsets_view);
    for (int i = 0; i < KEY_CACHE; i++) Py_XDECREF(c->key_cache[i]);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *get_prefix(AppendCursor *c, void *unused) { return Py_NewRef(c->prefix); }
static PyObject *get_address(AppendCursor *c, void *unused) {
    return Py_NewRef(c->store_address);
}
static PyObject *get_port(AppendCursor *c, void *unused) {
    return PyLong_FromLong(c->store_port);
}
static PyObject *get_table(AppendCursor *c, void *unused) {
    return Py_NewRef(c->queue_offsets_view);
}
static PyObject *get_last_put(AppendCursor *c, void *unused) {
    return PyLong_FromLongLong(c->last_put_timestamp);
}

static PyGetSetDef AppendCursor_getset[] = {
    {"msg_id_prefix", (getter)get_prefix, NULL, "The hex of the store host and port.", NULL},
    {"store_address", (getter)get_address, NULL, "The store host's address bytes.", NULL},
    {"store_port", (getter)get_port, NULL, "The store host's port.", NULL},
    {"queue_offsets", (getter)get_table, NULL,
     "(topic, queue id) -> next queue offset, read-only.", NULL},
    {"last_put_timestamp", (getter)get_last_put, NULL, "The last put's store timestamp.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef AppendCursor_methods[] = {
    {"put", (PyCFunction)(void (*)(void))AppendCursor_put, METH_FASTCALL,
     "Pack one message's record; (msg id, DispatchRequest), or its size when it does not fit."},
    {"put_batch_dispatch", (PyCFunction)(void (*)(void))AppendCursor_put_batch_dispatch,
     METH_FASTCALL,
     "Pack a batch's records; (msg ids joined, CQ units, index entries, wake-ups)."},
    {"queue_offset", (PyCFunction)(void (*)(void))AppendCursor_queue_offset, METH_FASTCALL,
     "The next queue offset of (topic, queue id): 0 for a queue not in the table."},
    {"set_queue_offset", (PyCFunction)(void (*)(void))AppendCursor_set_queue_offset,
     METH_FASTCALL, "Set the next queue offset of (topic, queue id) (recovery)."},
    {"remove_queue", (PyCFunction)(void (*)(void))AppendCursor_remove_queue, METH_FASTCALL,
     "Forget (topic, queue id) (its topic was deleted)."},
    {"clear_queue_offsets", (PyCFunction)AppendCursor_clear_queue_offsets, METH_NOARGS,
     "Forget every queue (recovery rebuilds the table)."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject AppendCursorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "broker.store._native.AppendCursor",
    .tp_basicsize = sizeof(AppendCursor),
    .tp_dealloc = (destructor)AppendCursor_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The CommitLog's append bookkeeping (broker/store/append_cursor.py).",
    .tp_methods = AppendCursor_methods,
    .tp_getset = AppendCursor_getset,
    .tp_new = AppendCursor_new,
};
