/* plain_send_rows: the append values of a read's plain SEND_MESSAGE(_V2) requests in one call
 * (issue 27; the Python twin is broker/processor/send_plain.py python_plain_rows, which
 * tests/unit/broker/test_send_plain.py holds this to on hostile requests).
 *
 * Per request: the header through decode_send_header (send_header.c: the plain form only),
 * then what the caller decides handed in as values: the queue ids each topic may name
 * (bound_of, asked once per topic of the call), the property names that need the reference
 * (specials), the CLUSTER value to add. The property string is not parsed into a dict: one
 * scan of its UTF-8 (property_bytes) finds a special name and writes the record's property
 * bytes, WAIT dropped as the reference drops it from a single message and CLUSTER set, which
 * the row carries; the store reads TAGS, KEYS and UNIQ_KEY from them (properties.c). An odd
 * string (a duplicate name, ...) takes the dict path instead: string_to_properties, the row
 * carrying the dict, the same record either way. The first request that is not
 * plain (another code, a ROCKETMQ-serialized header, a header the decoder leaves to Python, a
 * queue id out of bounds, a transaction type in sysFlag, a special property) makes the whole
 * answer None, so the reference takes the group. */
#include "codec.h"

/* RequestCode.SEND_MESSAGE, SEND_MESSAGE_V2 and SerializeType.JSON (remoting/codes.py) */
#define SEND_MESSAGE 10
#define SEND_MESSAGE_V2 310
#define SERIALIZE_JSON 0
#define TRANSACTION_TYPE_BITS 0xC /* MessageSysFlag TRANSACTION_ROLLBACK_TYPE: both type bits */
#define ROW_FIELDS 10
/* property_bytes' bounds: past them (never in practice) the dict path takes the row */
#define PLAIN_MAX_SEGMENTS 32
#define PLAIN_MAX_SPECIALS 8

enum { A_CODE, A_SERIALIZE, A_EXT, A_BODY, A_OPAQUE, A_CLUSTER, A_WAIT, A_SCANNED, A_NAMES };
static const char *const attr_names[A_NAMES] = {
    "code", "serialize_type", "ext_fields", "body", "opaque", "CLUSTER", "WAIT", "header_values",
};
static PyObject *names[A_NAMES];
/* the request's attributes are RemotingCommand's and ScannedCommand's __slots__: read at their
 * offsets (slots.h), as Python reads them */
static SlotCache request_sites[A_NAMES];

static int make_names(void) {
    if (names[0] != NULL) return 0;
    for (int i = 0; i < A_NAMES; i++)
        if ((names[i] = PyUnicode_InternFromString(attr_names[i])) == NULL) return -1;
    return 0;
}

static PyObject *request_attr(PyObject *request, int name) {
    return slot_get(request, names[name], &request_sites[name]);
}

/* An attribute that must be an exact int within a C long; 0 with *ok = 0 when it is not. */
static long int_attr(PyObject *o, int name, int *ok) {
    PyObject *v = request_attr(o, name);
    if (v == NULL) return -1;
    int overflow = 0; /* an int past a C long is simply not plain */
    long out = PyLong_CheckExact(v) ? PyLong_AsLongAndOverflow(v, &overflow) : 0;
    *ok = PyLong_CheckExact(v) && !overflow;
    Py_DECREF(v);
    return out;
}

/* The bound a (table, kept, fallback) bound_of keeps for `topic` (send_plain.QueueBounds'
 * lookup): kept[topic] is (config, bound), good while table[topic] is that very config. A new
 * reference; NULL without an error when it keeps none (the fallback is asked). */
static PyObject *kept_bound(PyObject *lookup, PyObject *topic) {
    PyObject *table = PyTuple_GET_ITEM(lookup, 0), *kept = PyTuple_GET_ITEM(lookup, 1);
    if (!PyDict_CheckExact(table) || !PyDict_CheckExact(kept)) return NULL;
    PyObject *config = PyDict_GetItemWithError(table, topic); /* borrowed */
    PyObject *entry = config == NULL ? NULL : PyDict_GetItemWithError(kept, topic);
    if (entry == NULL || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2 ||
        PyTuple_GET_ITEM(entry, 0) != config)
        return NULL;
    return Py_NewRef(PyTuple_GET_ITEM(entry, 1));
}

/* bound_of(topic): a callable, or (table, kept, fallback) whose kept bound is read without a
 * call (a Python frame per topic of a round, QueueBounds.__call__), else fallback(topic). */
static PyObject *ask_bound(PyObject *bound_of, PyObject *topic) {
    if (!PyTuple_CheckExact(bound_of) || PyTuple_GET_SIZE(bound_of) != 3)
        return PyObject_CallOneArg(bound_of, topic);
    PyObject *bound = kept_bound(bound_of, topic);
    if (bound != NULL || PyErr_Occurred()) return bound;
    return PyObject_CallOneArg(PyTuple_GET_ITEM(bound_of, 2), topic);
}

/* The bounds a call has asked for: its first KNOWN_BOUNDS topics (exact str) in an array, the
 * rest in a dict made when one is needed. A lone send or a round names a topic or a few; a
 * dict made, filled and freed at each call was ~0.4k of a lone send's ~4.2k (callgrind). */
#define KNOWN_BOUNDS 8
typedef struct {
    PyObject *topics[KNOWN_BOUNDS]; /* strong references */
    long bounds[KNOWN_BOUNDS];
    int count;
    PyObject *more; /* topic -> bound, or NULL */
} Bounds;

static void bounds_release(Bounds *b) {
    for (int i = 0; i < b->count; i++) Py_DECREF(b->topics[i]);
    b->count = 0;
    Py_CLEAR(b->more);
}

/* The bound kept for `topic`: 1 and *out, 0 none kept yet, -1 an error. */
static int known_bound(Bounds *b, PyObject *topic, long *out) {
    if (PyUnicode_CheckExact(topic)) {
        for (int i = 0; i < b->count; i++)
            if (b->topics[i] == topic || PyUnicode_Compare(b->topics[i], topic) == 0) {
                *out = b->bounds[i];
                return 1;
            }
    }
    if (b->more == NULL) return 0;
    PyObject *bound = PyDict_GetItemWithError(b->more, topic); /* borrowed */
    if (bound == NULL) return PyErr_Occurred() ? -1 : 0;
    *out = PyLong_AsLong(bound);
    return *out == -1 && PyErr_Occurred() ? -1 : 1;
}

/* The queue ids `topic` may name: kept per call in `b`, else asked of bound_of. */
static long topic_bound(Bounds *b, PyObject *bound_of, PyObject *topic) {
    long out;
    int known = known_bound(b, topic, &out);
    if (known != 0) return known < 0 ? -1 : out;
    PyObject *bound = ask_bound(bound_of, topic);
    if (bound == NULL) return -1;
    out = PyLong_AsLong(bound);
    int failed = out == -1 && PyErr_Occurred();
    if (!failed && PyUnicode_CheckExact(topic) && b->count < KNOWN_BOUNDS) {
        b->topics[b->count] = Py_NewRef(topic);
        b->bounds[b->count++] = out;
    } else if (!failed) {
        failed = (b->more == NULL && (b->more = PyDict_New()) == NULL) ||
                 PyDict_SetItem(b->more, topic, bound) < 0;
    }
    Py_DECREF(bound);
    return failed ? -1 : out;
}

/* The properties of a plain message: parsed, CLUSTER set, WAIT dropped; Py_None (a new
 * reference) when one is special. The dict path: property_bytes leaves to it what it does not
 * take. */
static PyObject *plain_properties(PyObject *text, PyObject *specials, PyObject *cluster) {
    PyObject *props = string_to_properties(NULL, text);
    if (props == NULL) return NULL;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(props, &pos, &key, &value)) {
        int special = PySet_Contains(specials, key);
        if (special != 0) {
            Py_DECREF(props);
            if (special < 0) return NULL;
            Py_RETURN_NONE;
        }
    }
    if (PyDict_SetItem(props, names[A_CLUSTER], cluster) < 0 ||
        (PyDict_Contains(props, names[A_WAIT]) == 1 && PyDict_DelItem(props, names[A_WAIT]) < 0)) {
        Py_DECREF(props);
        return NULL;
    }
    if (PyErr_Occurred()) { /* PyDict_Contains failed */
        Py_DECREF(props);
        return NULL;
    }
    return props;
}

typedef struct {
    const char *at;
    Py_ssize_t len;
} Span;

typedef struct {
    PyObject *topics, *bound_of, *specials, *cluster, *host;
    Bounds bounds;
    /* for property_bytes: the specials' and the cluster's UTF-8; special_count -1 when the
     * dict path takes every row (a special not a str, more than PLAIN_MAX_SPECIALS, a cluster
     * name that is not UTF-8) */
    PyObject *special_refs[PLAIN_MAX_SPECIALS];
    Span special_names[PLAIN_MAX_SPECIALS], cluster_utf8;
    int special_count, ref_count; /* ref_count: how many of special_refs are held */
} PlainContext;

static void release_names(PlainContext *ctx) {
    for (int i = 0; i < ctx->ref_count; i++) Py_CLEAR(ctx->special_refs[i]);
    ctx->ref_count = 0;
}

/* The names of the last frozenset of specials seen, as context_names makes them: a frozenset
 * cannot change, and the one held here keeps its str (and so their UTF-8) alive, so the
 * callers' constant set is listed once rather than at every call. */
static struct {
    PyObject *specials; /* a strong reference */
    Span names[PLAIN_MAX_SPECIALS];
    int count;
} kept_specials;

/* The specials' names as UTF-8, each held by the context (bound_of may run Python and change
 * a set handed in). -1 on an error. */
static int context_names(PlainContext *ctx) {
    ctx->special_count = -1;
    ctx->cluster_utf8.at = PyUnicode_AsUTF8AndSize(ctx->cluster, &ctx->cluster_utf8.len);
    if (ctx->cluster_utf8.at == NULL) {
        PyErr_Clear(); /* the dict path meets it, as before */
        return 0;
    }
    if (ctx->specials == kept_specials.specials) {
        /* copied: a call from bound_of's Python may keep another set meanwhile */
        memcpy(ctx->special_names, kept_specials.names,
               sizeof(Span) * (size_t)kept_specials.count);
        ctx->special_count = kept_specials.count;
        return 0;
    }
    if (PySet_GET_SIZE(ctx->specials) > PLAIN_MAX_SPECIALS) return 0;
    PyObject *items = PySequence_List(ctx->specials);
    if (items == NULL) return -1;
    int count = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items) && i < PLAIN_MAX_SPECIALS; i++) {
        PyObject *name = PyList_GET_ITEM(items, i);
        Span *span = &ctx->special_names[count];
        if (!PyUnicode_CheckExact(name) ||
            (span->at = PyUnicode_AsUTF8AndSize(name, &span->len)) == NULL) {
            PyErr_Clear();
            count = -1;
            break;
        }
        ctx->special_refs[count++] = Py_NewRef(name);
        ctx->ref_count = count;
    }
    Py_DECREF(items);
    if (count < 0) {
        release_names(ctx);
        return 0;
    }
    ctx->special_count = count;
    if (PyFrozenSet_CheckExact(ctx->specials)) {
        Py_XSETREF(kept_specials.specials, Py_NewRef(ctx->specials));
        memcpy(kept_specials.names, ctx->special_names, sizeof kept_specials.names);
        kept_specials.count = count;
    }
    return 0;
}


static int same_name(Span a, const char *b, Py_ssize_t b_len) {
    return a.len == b_len && memcmp(a.at, b, (size_t)b_len) == 0;
}

/* The record's property bytes straight from the sent string, what the dict path writes: the
 * segments string_to_properties keeps (a name up to the segment's first \x01, neither name nor
 * value empty), in their order, WAIT's left out, CLUSTER's value the cluster's (CLUSTER last
 * when not sent), joined by \x02 with none at the end. A new bytes object; Py_None (new) when a
 * name is special; NULL without an error for a row the dict path takes: a duplicate name (the
 * dict keeps the first place and the last value), more than PLAIN_MAX_SEGMENTS, a string that
 * is not UTF-8. \x01 and \x02 are never inside a multibyte UTF-8 sequence, so splitting the
 * bytes splits the string. The twin: send_plain.py python_property_bytes. */
static PyObject *property_bytes(PlainContext *ctx, PyObject *text) {
    if (ctx->special_count < 0) return NULL;
    Py_ssize_t n = 0;
    const char *s = "";
    if (text != Py_None) {
        if (!PyUnicode_Check(text)) return NULL;
        if ((s = PyUnicode_AsUTF8AndSize(text, &n)) == NULL) {
            PyErr_Clear();
            return NULL;
        }
    }
    Span kept[PLAIN_MAX_SEGMENTS];
    Py_ssize_t names_len[PLAIN_MAX_SEGMENTS];
    int count = 0, cluster_at = -1;
    const char *p = s, *end = s + n;
    while (p < end) {
        const char *segment_end = memchr(p, '\x02', (size_t)(end - p));
        if (segment_end == NULL) segment_end = end;
        const char *sep = memchr(p, '\x01', (size_t)(segment_end - p));
        if (sep != NULL && sep > p && sep + 1 < segment_end) {
            Py_ssize_t name_len = sep - p;
            for (int i = 0; i < ctx->special_count; i++)
                if (same_name(ctx->special_names[i], p, name_len)) Py_RETURN_NONE;
            for (int i = 0; i < count; i++)
                if (names_len[i] == name_len && memcmp(kept[i].at, p, (size_t)name_len) == 0)
                    return NULL;
            if (count == PLAIN_MAX_SEGMENTS) return NULL;
            if (name_len == 7 && memcmp(p, "CLUSTER", 7) == 0) cluster_at = count;
            names_len[count] = name_len;
            kept[count++] = (Span){p, segment_end - p};
        }
        p = segment_end + 1;
    }
    Span cluster = ctx->cluster_utf8;
    Py_ssize_t total = cluster_at < 0 ? 8 + cluster.len : 0; /* "CLUSTER\x01" + the name */
    int parts = cluster_at < 0;
    for (int i = 0; i < count; i++) {
        if (names_len[i] == 4 && memcmp(kept[i].at, "WAIT", 4) == 0) continue;
        total += i == cluster_at ? 8 + cluster.len : kept[i].len;
        parts++;
    }
    total += parts > 1 ? parts - 1 : 0;
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL) return NULL;
    char *w = PyBytes_AS_STRING(out);
    for (int i = 0; i <= count; i++) {
        if (i < count && names_len[i] == 4 && memcmp(kept[i].at, "WAIT", 4) == 0) continue;
        if (i == count && cluster_at >= 0) break;
        if (w != PyBytes_AS_STRING(out)) *w++ = '\x02';
        if (i == cluster_at || i == count) {
            memcpy(w, "CLUSTER\x01", 8);
            memcpy(w + 8, cluster.at, (size_t)cluster.len);
            w += 8 + cluster.len;
        } else {
            memcpy(w, kept[i].at, (size_t)kept[i].len);
            w += kept[i].len;
        }
    }
    return out;
}

/* The row's properties: the record's bytes (property_bytes), else the dict path's dict;
 * Py_None (new) when a name is special, NULL on an error. */
static PyObject *row_properties(PlainContext *ctx, PyObject *text) {
    PyObject *encoded = property_bytes(ctx, text);
    if (encoded != NULL || PyErr_Occurred()) return encoded;
    return plain_properties(text, ctx->specials, ctx->cluster);
}

/* A scanned request's send header values (remoting/command.py ScannedCommand, send_scan.c)
 * into *values: a new reference to them, Py_None (new) when a topic is not known valid (what
 * decode_send_header answers then), NULL when the request was not scanned. -1 on error. */
static int scanned_values(PyObject *request, PyObject *topics, PyObject **values) {
    PyObject *v = request_attr(request, A_SCANNED);
    if (v == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear(); /* a command-like object of a test's or a caller's own */
        *values = NULL;
        return 0;
    }
    if (!PyTuple_CheckExact(v) || PyTuple_GET_SIZE(v) != 14) {
        Py_DECREF(v);
        *values = NULL;
        return 0;
    }
    for (int i = 1; i <= 2; i++) { /* topic, defaultTopic */
        int known = PySet_Contains(topics, PyTuple_GET_ITEM(v, i));
        if (known <= 0) {
            Py_DECREF(v);
            if (known < 0) return -1;
            *values = Py_NewRef(Py_None);
            return 0;
        }
    }
    *values = v;
    return 0;
}

/* One request's row; Py_None (new reference) when it is not plain, NULL on error. */
static PyObject *plain_row(PlainContext *ctx, PyObject *request) {
    int ok_code, ok_serialize;
    long code = int_attr(request, A_CODE, &ok_code);
    long serialize = int_attr(request, A_SERIALIZE, &ok_serialize);
    if (PyErr_Occurred()) return NULL;
    if (!ok_code || !ok_serialize || serialize != SERIALIZE_JSON ||
        (code != SEND_MESSAGE && code != SEND_MESSAGE_V2))
        Py_RETURN_NONE;
    PyObject *values = NULL, *props = NULL, *row = NULL;
    if (scanned_values(request, ctx->topics, &values) < 0) return NULL;
    if (values == NULL) { /* not scanned: the extFields dict, as decode_send_header reads it */
        PyObject *ext = request_attr(request, A_EXT);
        if (ext == NULL) return NULL;
        if (PyDict_CheckExact(ext)) {
            PyObject *decode_args[3] = {ext, code == SEND_MESSAGE_V2 ? Py_True : Py_False,
                                        ctx->topics};
            values = decode_send_header(NULL, decode_args, 3);
        } else {
            values = Py_NewRef(Py_None);
        }
        Py_DECREF(ext);
        if (values == NULL) return NULL;
    }
    if (values == Py_None) goto not_plain;
    /* SendMessageRequestHeader's order: producer_group, topic, default_topic,
     * default_topic_queue_nums, queue_id, sys_flag, born_timestamp, flag, properties,
     * reconsume_times, ... (send_header.c send_fields) */
    PyObject *topic = PyTuple_GET_ITEM(values, 1), *queue_id = PyTuple_GET_ITEM(values, 4);
    PyObject *sys_flag = PyTuple_GET_ITEM(values, 5), *reconsume = PyTuple_GET_ITEM(values, 9);
    long bound = topic_bound(&ctx->bounds, ctx->bound_of, topic);
    if (bound == -1 && PyErr_Occurred()) goto done;
    long q = PyLong_AsLong(queue_id), flags = PyLong_AsLong(sys_flag);
    if (PyErr_Occurred()) goto done;
    if (q < 0 || q >= bound || (flags & TRANSACTION_TYPE_BITS)) goto not_plain;
    props = row_properties(ctx, PyTuple_GET_ITEM(values, 8));
    if (props == NULL) goto done;
    if (props == Py_None) goto not_plain;
    PyObject *body = request_attr(request, A_BODY);
    PyObject *opaque = body == NULL ? NULL : request_attr(request, A_OPAQUE);
    if (opaque == NULL) {
        Py_XDECREF(body);
        goto done;
    }
    PyObject *zero = reconsume == Py_None ? PyLong_FromLong(0) : Py_NewRef(reconsume);
    if (zero == NULL) {
        Py_DECREF(body);
        Py_DECREF(opaque);
        goto done;
    }
    row = PyTuple_New(ROW_FIELDS);
    if (row == NULL) {
        Py_DECREF(body);
        Py_DECREF(opaque);
        Py_DECREF(zero);
        goto done;
    }
    /* topic, queue id, sys flag, properties, body, flag, born ts, born host, reconsume, opaque */
    PyObject *items[ROW_FIELDS] = {
        Py_NewRef(topic), Py_NewRef(queue_id), Py_NewRef(sys_flag), props, body,
        Py_NewRef(PyTuple_GET_ITEM(values, 7)), Py_NewRef(PyTuple_GET_ITEM(values, 6)),
        Py_NewRef(ctx->host), zero, opaque,
    };
    props = NULL; /* the row owns it */
    for (int i = 0; i < ROW_FIELDS; i++) PyTuple_SET_ITEM(row, i, items[i]);
    goto done;
not_plain:
    row = Py_NewRef(Py_None);
done:
    Py_XDECREF(values);
    Py_XDECREF(props);
    return row;
}

/* plain_send_rows(requests, valid_topics, bound_of, specials, cluster, born_host)
 *   -> [row, ...] | None
 * bound_of: topic -> the queue ids it may name, a callable or (table, kept, fallback)
 * (ask_bound);
 * born_host: one host for every request, or a list of each request's (a selector round's
 * group spans connections), as long as requests. */
PyObject *plain_send_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyList_CheckExact(args[0]) || !PyAnySet_Check(args[1]) ||
        !PyAnySet_Check(args[3]) || !PyUnicode_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "plain_send_rows(list, set, callable, set, str, host)");
        return NULL;
    }
    if (make_names() < 0) return NULL;
    /* set field by field: zeroing the whole context (its name and bound arrays, ~0.4 KiB) was
     * ~60 instructions a call */
    PlainContext ctx;
    ctx.topics = args[1], ctx.bound_of = args[2], ctx.specials = args[3];
    ctx.cluster = args[4], ctx.host = args[5];
    ctx.bounds.count = 0, ctx.bounds.more = NULL;
    ctx.special_count = -1, ctx.ref_count = 0;
    PyObject *requests = args[0], *hosts = PyList_CheckExact(args[5]) ? args[5] : NULL;
    if (hosts != NULL && PyList_GET_SIZE(hosts) != PyList_GET_SIZE(requests)) {
        PyErr_SetString(PyExc_TypeError, "plain_send_rows: one born host per request");
        return NULL;
    }
    PyObject *rows = NULL;
    if (context_names(&ctx) < 0 || (rows = PyList_New(0)) == NULL) goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(requests); i++) {
        /* bound_of may run Python: both lists are checked again before each read */
        if (hosts != NULL && i >= PyList_GET_SIZE(hosts)) {
            PyErr_SetString(PyExc_TypeError, "plain_send_rows: one born host per request");
            goto fail;
        }
        PyObject *request = Py_NewRef(PyList_GET_ITEM(requests, i));
        PyObject *host = hosts == NULL ? NULL : Py_NewRef(PyList_GET_ITEM(hosts, i));
        if (host != NULL) ctx.host = host;
        PyObject *row = plain_row(&ctx, request);
        Py_DECREF(request);
        Py_XDECREF(host);
        if (row == NULL) goto fail;
        if (row == Py_None) {
            Py_SETREF(rows, row);
            break;
        }
        int r = PyList_Append(rows, row);
        Py_DECREF(row);
        if (r < 0) goto fail;
    }
    bounds_release(&ctx.bounds);
    release_names(&ctx);
    return rows;
fail:
    Py_XDECREF(rows);
    bounds_release(&ctx.bounds);
    release_names(&ctx);
    return NULL;
}
