/* put_rows: the plain sends of a read appended and answered in one call (issue 27; the Python
 * twin is broker/store/group_put.py python_put_rows, which tests/unit/store/test_put_rows.py
 * holds this to: same bytes, results, cursor state and stopping point).
 *
 * Each row goes through the cursor's own put (append.c, as values: no msg id string and no
 * DispatchRequest), so a record, its refusals and the cursor's bookkeeping are exactly a lone
 * put's. What this adds is the loop without a Python frame per message: the store timestamp
 * from the CommitLog's clock, the write position moved on, what dispatch needs packed
 * (plain_dispatch.c), per-topic totals for the stats, and each message's reply frame (its msg
 * id written in place) filled into the template its caller owns
 * (broker/processor/send_reply.py REPLY_PIECES), so this file knows no JSON. The run stops at the first row the put does not take (it does
 * not fit the segment, or it is refused, or anything raised): the caller hands that row and
 * the rest to the reference, which answers each as a lone put would. */
#include "store.h"

#define ROW_FIELDS 10 /* topic, queue id, sys flag, properties, body, flag, born ts, born host,
                         reconsume times, opaque */
#define PUT_ARGS 15
#define REPLY_PIECES 5
/* a reply's numbers: queue id and opaque are Java ints, the queue offset a long */
#define NUMBER_CHARS 24

/* `value` in decimal ("%lld") into `out` (NUMBER_CHARS): its length. snprintf's format
 * parsing was ~4% of a plain pass (perf, bench_send_group), three numbers a reply. */
static int decimal(char *out, long long value) {
    /* two digits a division, from the end of a scratch buffer; then one copy */
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930"
                                   "31323334353637383940414243444546474849505152535455565758596061"
                                   "62636465666768697071727374757677787980818283848586878889909192"
                                   "93949596979899";
    char digits[NUMBER_CHARS];
    unsigned long long u = value < 0 ? 0ull - (unsigned long long)value : (unsigned long long)value;
    char *at = digits + NUMBER_CHARS;
    while (u >= 100) {
        unsigned i = (unsigned)(u % 100) * 2;
        u /= 100;
        *--at = pairs[i + 1];
        *--at = pairs[i];
    }
    if (u >= 10) {
        *--at = pairs[u * 2 + 1];
        *--at = pairs[u * 2];
    } else {
        *--at = (char)('0' + u);
    }
    if (value < 0) *--at = '-';
    int length = (int)(digits + NUMBER_CHARS - at);
    memcpy(out, at, (size_t)length);
    return length;
}

/* One reply frame: the 8-byte frame prefix, then pieces[0] msg_id pieces[1] queue_id
 * pieces[2] queue_offset pieces[3] opaque pieces[4]. */
static PyObject *reply_frame(PyObject *const *pieces, PyObject *msg_prefix, long long phys,
                             long long queue_id, long long queue_offset, long long opaque) {
    char numbers[3][NUMBER_CHARS];
    int lengths[3] = {
        decimal(numbers[0], queue_id),
        decimal(numbers[1], queue_offset),
        decimal(numbers[2], opaque),
    };
    /* the msg id: the cursor's prefix, then the phys offset in 16 hex digits (message_id) */
    static const char hex[] = "0123456789ABCDEF";
    Py_ssize_t prefix_len;
    const char *prefix = PyUnicode_AsUTF8AndSize(msg_prefix, &prefix_len);
    if (prefix == NULL) return NULL;
    if (prefix_len > 64) {
        PyErr_SetString(PyExc_ValueError, "a msg id prefix is at most 64 characters");
        return NULL;
    }
    char id[64 + 16];
    Py_ssize_t id_len = prefix_len + 16;
    memcpy(id, prefix, (size_t)prefix_len);
    unsigned long long u = (unsigned long long)phys;
    for (int d = 15; d >= 0; d--, u >>= 4) id[prefix_len + d] = hex[u & 0xF];
    Py_ssize_t header = id_len + lengths[0] + lengths[1] + lengths[2];
    for (int i = 0; i < REPLY_PIECES; i++) header += PyBytes_GET_SIZE(pieces[i]);
    if (header > INT32_MAX - 4) {
        PyErr_SetString(PyExc_OverflowError, "reply header too long");
        return NULL;
    }
    PyObject *frame = PyBytes_FromStringAndSize(NULL, 8 + header);
    if (frame == NULL) return NULL;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(frame);
    uint32_t total = (uint32_t)(4 + header), length = (uint32_t)header;
    for (int i = 0; i < 4; i++) {
        out[i] = (unsigned char)(total >> (24 - 8 * i));
        out[4 + i] = (unsigned char)(length >> (24 - 8 * i));
    }
    out += 8;
    const char *parts[2 * REPLY_PIECES - 1];
    Py_ssize_t sizes[2 * REPLY_PIECES - 1];
    for (int i = 0; i < REPLY_PIECES; i++) {
        parts[2 * i] = PyBytes_AS_STRING(pieces[i]);
        sizes[2 * i] = PyBytes_GET_SIZE(pieces[i]);
    }
    parts[1] = id, sizes[1] = id_len;
    for (int i = 0; i < 3; i++) parts[3 + 2 * i] = numbers[i], sizes[3 + 2 * i] = lengths[i];
    for (int i = 0; i < 2 * REPLY_PIECES - 1; i++) {
        memcpy(out, parts[i], (size_t)sizes[i]);
        out += sizes[i];
    }
    return frame;
}

/* [count, bytes], made directly (Py_BuildValue's format parsing cost ~0.45k instructions a
 * lone send, callgrind). */
static PyObject *total_pair(long long count, long long bytes) {
    PyObject *n = PyLong_FromLongLong(count), *b = PyLong_FromLongLong(bytes);
    PyObject *pair = n == NULL || b == NULL ? NULL : PyList_New(2);
    if (pair == NULL) {
        Py_XDECREF(n);
        Py_XDECREF(b);
        return NULL;
    }
    PyList_SET_ITEM(pair, 0, n);
    PyList_SET_ITEM(pair, 1, b);
    return pair;
}

/* The C values' totals as a new {topic: [count, bytes]} dict, in their order. */
static PyObject *totals_dict(const PutRowsOut *out) {
    PyObject *totals = PyDict_New();
    for (int i = 0; totals != NULL && i < out->n_topics; i++) {
        const TopicTotal *t = &out->topics[i];
        PyObject *pair = total_pair(t->count, t->bytes);
        if (pair == NULL || PyDict_SetItem(totals, t->topic, pair) < 0) Py_CLEAR(totals);
        Py_XDECREF(pair);
    }
    return totals;
}

static void release_topics(PutRowsOut *out) {
    for (int i = 0; i < out->n_topics; i++) Py_CLEAR(out->topics[i].topic);
    out->n_topics = 0;
}

PyObject *put_rows_totals(PutRowsOut *out) {
    return out->totals != NULL ? Py_NewRef(out->totals) : totals_dict(out);
}

Py_ssize_t put_rows_topic_count(const PutRowsOut *out) {
    return out->totals != NULL ? PyDict_GET_SIZE(out->totals) : out->n_topics;
}

int put_rows_topic(const PutRowsOut *out, Py_ssize_t *at, PyObject **topic, long long *count,
                   long long *bytes) {
    if (out->totals == NULL) {
        if (*at >= out->n_topics) return 0;
        const TopicTotal *t = &out->topics[(*at)++];
        *topic = t->topic, *count = t->count, *bytes = t->bytes;
        return 1;
    }
    PyObject *pair;
    if (!PyDict_Next(out->totals, at, topic, &pair)) return 0;
    *count = as_long_long(PyList_GET_ITEM(pair, 0)); /* pairs of total_pair's making */
    *bytes = *count == -1 && PyErr_Occurred() ? -1 : as_long_long(PyList_GET_ITEM(pair, 1));
    return *bytes == -1 && PyErr_Occurred() ? -1 : 1;
}

/* Add one stored message to its topic's totals: the C values while they hold every topic,
 * else the dict (which takes them over, in their order, when it is first needed). */
static int count_topic(PutRowsOut *out, PyObject *topic, Py_ssize_t size) {
    if (out->totals == NULL && PyUnicode_CheckExact(topic)) {
        for (int i = 0; i < out->n_topics; i++) {
            TopicTotal *t = &out->topics[i];
            if (t->topic == topic || PyUnicode_Compare(t->topic, topic) == 0) {
                t->count += 1;
                t->bytes += size;
                return 0;
            }
        }
        if (out->n_topics < TOPIC_TOTALS) {
            out->topics[out->n_topics++] = (TopicTotal){Py_NewRef(topic), 1, size};
            return 0;
        }
    }
    if (out->totals == NULL) {
        if ((out->totals = totals_dict(out)) == NULL) return -1;
        release_topics(out);
    }
    PyObject *pair = PyDict_GetItemWithError(out->totals, topic); /* borrowed */
    if (pair == NULL) {
        if (PyErr_Occurred() || (pair = total_pair(1, size)) == NULL) return -1;
        int r = PyDict_SetItem(out->totals, topic, pair);
        Py_DECREF(pair);
        return r;
    }
    for (int i = 0; i < 2; i++) {
        Py_ssize_t was = PyLong_AsSsize_t(PyList_GET_ITEM(pair, i));
        if (was == -1 && PyErr_Occurred()) return -1;
        PyObject *now = PyLong_FromSsize_t(was + (i == 0 ? 1 : size));
        if (now == NULL) return -1;
        PyList_SetItem(pair, i, now); /* steals now */
    }
    return 0;
}

/* 1 when the KEYS and UNIQ_KEY the packed dispatch hashes are str (or absent), as the wire
 * gives them; 0 stops the run at the row (the reference decides); -1 on an error. A row whose
 * properties are not a dict is left to the put, which refuses it. */
static int index_keys_are_text(PyObject *properties) {
    static PyObject *names[2];
    if (names[0] == NULL) {
        names[0] = PyUnicode_InternFromString("KEYS");
        names[1] = PyUnicode_InternFromString("UNIQ_KEY");
        if (names[0] == NULL || names[1] == NULL) {
            Py_CLEAR(names[0]);
            Py_CLEAR(names[1]);
            return -1;
        }
    }
    if (!PyDict_CheckExact(properties)) return 1;
    for (int i = 0; i < 2; i++) {
        PyObject *value = PyDict_GetItemWithError(properties, names[i]); /* borrowed */
        if (value == NULL && PyErr_Occurred()) return -1;
        if (value != NULL && !PyUnicode_Check(value)) return 0;
    }
    return 1;
}

/* The row's numbers put reads, into `n` (its fixed ones already there): 0, or -1 with the
 * error put_numbers would raise. */
static int row_numbers(PyObject *row, PyObject *ts, PutNumbers *n) {
    PyObject *const *f = &PyTuple_GET_ITEM(row, 0);
    long long *to[6] = {&n->store_ts, &n->queue_id, &n->sys_flag, &n->flag, &n->born_ts,
                        &n->reconsume};
    /* put_numbers' order: the store timestamp, then the row's queue id, sys flag, flag, born
     * timestamp and reconsume times */
    PyObject *from[6] = {ts, f[1], f[2], f[5], f[6], f[8]};
    for (int i = 0; i < 6; i++)
        if ((*to[i] = as_long_long(from[i])) == -1 && PyErr_Occurred()) return -1;
    return 0;
}

/* The row's put: 1 stored (`put` and `n` filled, `*store_ts` the clock's time, a new
 * reference), 0 the run stops at this row (nothing raised), -1 an error. */
static int put_row(const PutRowsIn *in, PyObject *row, PutNumbers *n, PutValues *put,
                   PyObject **store_ts) {
    PyObject *args[PUT_ARGS];
    int text = index_keys_are_text(PyTuple_GET_ITEM(row, 3));
    if (text <= 0) return text;
    /* an int: the pass's one store timestamp (read once by the caller); else a clock read per
     * row */
    PyObject *clock = in->clock;
    PyObject *ts = PyLong_CheckExact(clock) ? Py_NewRef(clock) : PyObject_CallNoArgs(clock);
    if (ts == NULL) return -1;
    /* mm, position, start_offset, store_timestamp, max_body (read as n's), then the row's
     * first nine (topic .. reconsume times), prepared_transaction_offset 0 */
    args[0] = in->mm, args[1] = args[2] = args[4] = args[PUT_ARGS - 1] = NULL, args[3] = ts;
    for (int i = 0; i < ROW_FIELDS - 1; i++) args[5 + i] = PyTuple_GET_ITEM(row, i);
    int packed = in->unfit ? 0 : row_numbers(row, ts, n);
    if (packed == 0 && !in->unfit) packed = append_cursor_put_values(in->cursor, args, n, put);
    if (packed == 1) {
        *store_ts = ts;
        return 1;
    }
    Py_DECREF(ts);
    /* as the twin's `except Exception`: the reference puts it again and says why; 0: it does
     * not fit this segment */
    if (packed < 0 && PyErr_ExceptionMatches(PyExc_Exception)) PyErr_Clear();
    return PyErr_Occurred() ? -1 : 0;
}

/* One stored row: packed for dispatch, its reply appended, its topic counted; -1 on an error. */
static int stored(const PutValues *put, const PutNumbers *n, PyObject *store_ts, PyObject *row,
                  PyObject *const *pieces, PutRowsOut *out) {
    PlainRecord record = {
        .topic = PyTuple_GET_ITEM(row, 0), .queue_id = PyTuple_GET_ITEM(row, 1),
        .store_ts = store_ts, .properties = PyTuple_GET_ITEM(row, 3), .phys = put->phys,
        .size = put->size, .queue_offset = put->queue_offset, .tags_code = put->tags_code,
        .key_span = {put->keys[0], put->keys[1]}, .uniq_span = {put->uniq[0], put->uniq[1]},
        /* as put read them */
        .queue = n->queue_id, .sys_flag = n->sys_flag, .ts = n->store_ts,
    };
    long long opaque = PyLong_AsLongLong(PyTuple_GET_ITEM(row, ROW_FIELDS - 1));
    if (put->fields != NULL) { /* not spans: the put's objects */
        record.tags = PyTuple_GET_ITEM(put->fields, 1);
        record.keys = PyTuple_GET_ITEM(put->fields, 2);
        record.uniq = PyTuple_GET_ITEM(put->fields, 3);
        record.tags_code = as_long_long(record.tags);
        /* the put took KEYS and UNIQ_KEY as they are: index_keys_are_text saw they are str */
        if (!PyErr_Occurred() && (!PyUnicode_Check(record.keys) || !PyUnicode_Check(record.uniq)))
            PyErr_SetString(PyExc_TypeError, "KEYS and UNIQ_KEY are str");
    }
    if (PyErr_Occurred()) return -1;
    if (plain_pack_add(out->pack, &record) < 0 || count_topic(out, record.topic, put->size) < 0)
        return -1;
    PyObject *reply = reply_frame(pieces, put->msg_prefix, put->phys, record.queue,
                                  put->queue_offset, opaque);
    if (reply == NULL) return -1;
    int r = PyList_Append(out->replies, reply);
    Py_DECREF(reply);
    return r;
}

/* put_rows(cursor, mm, position, start_offset, clock, max_body, rows, pieces)
 *   -> (position, what dispatch needs packed, reply frames, {topic: [count, bytes]})
 * clock: the store timestamp every row gets (an int), or a callable read per row;
 * rows: tuples of ROW_FIELDS; pieces: the REPLY_PIECES bytes of the reply's header around its
 * four values. The position is where the next record goes; fewer replies than rows: the run
 * stopped at that row. The packed dispatch is plain_dispatch.py's AppendedRows. An error is
 * raised only for bad arguments or no memory, and then the records packed so far stay past the
 * write position the caller still holds. */
/* put_rows' objects of the kinds it takes: 0, or -1 with TypeError. */
static int rows_in_checked(PyObject *cursor, PyObject *rows, PyObject *pieces) {
    if (!PyObject_TypeCheck(cursor, &AppendCursorType) || !PyList_CheckExact(rows) ||
        !PyTuple_CheckExact(pieces) || PyTuple_GET_SIZE(pieces) != REPLY_PIECES) {
        PyErr_SetString(PyExc_TypeError, "put_rows(cursor, mm, position, start_offset, clock, "
                                         "max_body, rows list, pieces tuple)");
        return -1;
    }
    for (int i = 0; i < REPLY_PIECES; i++)
        if (!PyBytes_CheckExact(PyTuple_GET_ITEM(pieces, i))) {
            PyErr_SetString(PyExc_TypeError, "the reply's pieces are bytes");
            return -1;
        }
    return 0;
}

int put_rows_run(const PutRowsIn *in, PutRowsOut *out) {
    memset(out, 0, sizeof *out);
    if (rows_in_checked(in->cursor, in->rows, in->pieces) < 0) return -1;
    PyObject *const *pieces = &PyTuple_GET_ITEM(in->pieces, 0);
    Py_ssize_t position = in->position;
    PutNumbers n = {.start = in->start, .max_body = in->max_body, .prepared = 0};
    PyObject *rows = in->rows;
    out->pack = plain_pack_new();
    out->replies = PyList_New(0);
    if (out->pack == NULL || out->replies == NULL) goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows); i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyTuple_CheckExact(row) || PyTuple_GET_SIZE(row) != ROW_FIELDS) {
            PyErr_SetString(PyExc_TypeError, "a row is a tuple of 10");
            goto fail;
        }
        Py_INCREF(row); /* the put may run Python (the clock): keep the row alive */
        PutValues put;
        PyObject *store_ts = NULL;
        n.position = position;
        int took = put_row(in, row, &n, &put, &store_ts);
        if (took <= 0) {
            Py_DECREF(row);
            if (took < 0) goto fail;
            break;
        }
        int done = stored(&put, &n, store_ts, row, pieces, out);
        Py_XDECREF(put.fields);
        Py_DECREF(store_ts);
        Py_DECREF(row);
        if (done < 0) goto fail;
        position += put.size;
    }
    out->position = position;
    return 0;
fail:
    put_rows_release(out);
    return -1;
}

void put_rows_release(PutRowsOut *out) {
    Py_CLEAR(out->replies);
    Py_CLEAR(out->totals);
    release_topics(out);
    plain_pack_free(out->pack);
    out->pack = NULL;
}

/* After put_rows' read of a number put reads (as put reads it): 1 read, 0 not one put takes
 * (the error cleared, as put's refusal of each row is), -1 an error that is not an
 * Exception. */
static int fit_number(int failed) {
    if (!failed) return 1;
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return -1;
    PyErr_Clear();
    return 0;
}

PyObject *put_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PutRowsOut out;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "put_rows(cursor, mm, position, start_offset, clock, "
                                         "max_body, rows list, pieces tuple)");
        return NULL;
    }
    if (rows_in_checked(args[0], args[6], args[7]) < 0) return NULL;
    PutRowsIn in = {args[0], args[1], args[4], args[6], args[7]};
    if ((in.position = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred()) return NULL;
    in.start = as_long_long(args[3]);
    int fit = fit_number(in.start == -1 && PyErr_Occurred());
    if (fit > 0) {
        in.max_body = PyLong_AsSsize_t(args[5]);
        fit = fit_number(in.max_body == -1 && PyErr_Occurred());
    }
    if (fit < 0) return NULL;
    in.unfit = !fit;
    if (put_rows_run(&in, &out) < 0) return NULL;
    PyObject *appended = plain_pack_finish(out.pack);
    PyObject *totals = appended == NULL ? NULL : put_rows_totals(&out);
    PyObject *result = totals == NULL ? NULL
                                      : Py_BuildValue("(nNON)", out.position, appended,
                                                      out.replies, totals);
    if (totals == NULL) Py_XDECREF(appended);
    put_rows_release(&out);
    return result;
}
