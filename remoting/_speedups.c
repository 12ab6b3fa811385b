/* Native versions of the store's per-message inner loops.
 *
 * Every function here has a pure-Python twin (remoting/java_hash.py, remoting/record.py,
 * remoting/message.py, broker/store/index_file.py) that is the reference: the tests run both
 * on the same inputs and require the same bytes and results. The Python modules pick these up
 * when the extension was built and fall back to their own code otherwise (or when
 * ROCKETMQ_TRIO_PURE=1).
 *
 * They run with the GIL held: each call is a few microseconds, less than a thread hop.
 * Every write is bounds-checked against the buffer before anything is written.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* ---------------------------------------------------------------- big-endian stores/loads */

static inline void put_i16(unsigned char *p, int16_t v) {
    uint16_t u = (uint16_t)v;
    p[0] = (unsigned char)(u >> 8);
    p[1] = (unsigned char)u;
}

static inline void put_i32(unsigned char *p, int32_t v) {
    uint32_t u = (uint32_t)v;
    p[0] = (unsigned char)(u >> 24);
    p[1] = (unsigned char)(u >> 16);
    p[2] = (unsigned char)(u >> 8);
    p[3] = (unsigned char)u;
}

static inline void put_i64(unsigned char *p, int64_t v) {
    uint64_t u = (uint64_t)v;
    for (int i = 7; i >= 0; i--) {
        p[i] = (unsigned char)u;
        u >>= 8;
    }
}

static inline int32_t get_i32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) |
                     (uint32_t)p[3]);
}

static inline int16_t get_i16(const unsigned char *p) {
    return (int16_t)(((uint16_t)p[0] << 8) | (uint16_t)p[1]);
}

/* ---------------------------------------------------------------- Java's String.hashCode */

/* Over UTF-16 code units, as Java sees the string; mod 2^32. */
static uint32_t unsigned_java_hash(PyObject *text) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    uint32_t h = 0;
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *s = (const Py_UCS1 *)data;
        for (Py_ssize_t i = 0; i < n; i++) h = 31u * h + s[i];
    } else if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *s = (const Py_UCS2 *)data;
        for (Py_ssize_t i = 0; i < n; i++) h = 31u * h + s[i];
    } else {
        const Py_UCS4 *s = (const Py_UCS4 *)data;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = s[i];
            if (c > 0xFFFF) { /* a surrogate pair in UTF-16 */
                c -= 0x10000;
                h = 31u * h + (0xD800u + (c >> 10));
                h = 31u * h + (0xDC00u + (c & 0x3FF));
            } else {
                h = 31u * h + c;
            }
        }
    }
    return h;
}

static PyObject *java_hash(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "java_hash takes a str, not %.100s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    return PyLong_FromLong((long)(int32_t)unsigned_java_hash(arg));
}

/* ---------------------------------------------------------------- CommitLog records */

/* Fixed part of a record with IPv4 hosts: 88 bytes; each IPv6 host adds 12. Field order as
 * remoting/record.py HEADERS. */
#define BORNHOST_V6_FLAG 0x10
#define STOREHOSTADDRESS_V6_FLAG 0x20
#define MESSAGE_MAGIC_CODE ((int32_t)0xDAA320A7)

static PyObject *pack_records_into(PyObject *self, PyObject *args) {
    Py_buffer out, topic, born, store;
    Py_ssize_t pos;
    PyObject *records;
    int queue_id, sys_flag, born_port, store_port, reconsume_times;
    long long queue_offset, phys_offset, born_ts, store_ts, prepared;
    if (!PyArg_ParseTuple(args, "w*nOy*iLLiLy*iLy*iiL", &out, &pos, &records, &topic, &queue_id,
                          &queue_offset, &phys_offset, &sys_flag, &born_ts, &born, &born_port,
                          &store_ts, &store, &store_port, &reconsume_times, &prepared))
        return NULL;
    PyObject *result = NULL;
    PyObject *seq = NULL;
    Py_buffer body = {0};
    if ((born.len != 4 && born.len != 16) || (store.len != 4 && store.len != 16)) {
        PyErr_SetString(PyExc_ValueError, "host addresses are 4 or 16 bytes");
        goto done;
    }
    if (topic.len > 255) {
        PyErr_SetString(PyExc_ValueError, "topic longer than 255 bytes");
        goto done;
    }
    if (born.len == 16) sys_flag |= BORNHOST_V6_FLAG;
    if (store.len == 16) sys_flag |= STOREHOSTADDRESS_V6_FLAG;
    seq = PySequence_Fast(records, "records must be a sequence");
    if (seq == NULL) goto done;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    Py_ssize_t header_size = 88 + (born.len == 16 ? 12 : 0) + (store.len == 16 ? 12 : 0);
    unsigned char *base = (unsigned char *)out.buf;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *record = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *flag_o, *body_o, *props_o, *size_o, *crc_o;
        if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) != 5) {
            PyErr_SetString(PyExc_TypeError,
                            "a record is a (flag, body, properties, size, crc) tuple");
            goto done;
        }
        flag_o = PyTuple_GET_ITEM(record, 0);
        body_o = PyTuple_GET_ITEM(record, 1);
        props_o = PyTuple_GET_ITEM(record, 2);
        size_o = PyTuple_GET_ITEM(record, 3);
        crc_o = PyTuple_GET_ITEM(record, 4);
        long flag = PyLong_AsLong(flag_o);
        long size = PyLong_AsLong(size_o);
        long crc = PyLong_AsLong(crc_o);
        if (PyErr_Occurred()) goto done;
        if (!PyBytes_Check(props_o)) {
            PyErr_SetString(PyExc_TypeError, "properties must be bytes");
            goto done;
        }
        Py_ssize_t props_len = PyBytes_GET_SIZE(props_o);
        if (PyObject_GetBuffer(body_o, &body, PyBUF_SIMPLE) < 0) goto done;
        Py_ssize_t expected = header_size + body.len + 1 + topic.len + 2 + props_len;
        if (expected != size) {
            PyErr_Format(PyExc_AssertionError, "record size %zd != declared %ld", expected, size);
            goto done;
        }
        if (pos < 0 || pos > out.len || size > out.len - pos) {
            PyErr_Format(PyExc_IndexError, "a %ld-byte record at %zd does not fit in %zd bytes",
                         size, pos, out.len);
            goto done;
        }
        if (props_len > 32767 || body.len > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "properties or body too long for the layout");
            goto done;
        }
        unsigned char *p = base + pos;
        put_i32(p, (int32_t)size);
        put_i32(p + 4, 0); /* the magic code goes in last: the record's commit marker */
        put_i32(p + 8, (int32_t)crc);
        put_i32(p + 12, queue_id);
        put_i32(p + 16, (int32_t)flag);
        put_i64(p + 20, queue_offset);
        put_i64(p + 28, phys_offset);
        put_i32(p + 36, sys_flag);
        put_i64(p + 40, born_ts);
        unsigned char *q = p + 48;
        memcpy(q, born.buf, born.len);
        q += born.len;
        put_i32(q, born_port);
        q += 4;
        put_i64(q, store_ts);
        q += 8;
        memcpy(q, store.buf, store.len);
        q += store.len;
        put_i32(q, store_port);
        q += 4;
        put_i32(q, reconsume_times);
        q += 4;
        put_i64(q, prepared);
        q += 8;
        put_i32(q, (int32_t)body.len);
        q += 4;
        memcpy(q, body.buf, body.len);
        q += body.len;
        *q++ = (unsigned char)topic.len;
        memcpy(q, topic.buf, topic.len);
        q += topic.len;
        put_i16(q, (int16_t)props_len);
        q += 2;
        memcpy(q, PyBytes_AS_STRING(props_o), props_len);
        PyBuffer_Release(&body);
        body.obj = NULL;
        /* Everything else must be in memory before the marker, even if the process dies here. */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        put_i32(p + 4, MESSAGE_MAGIC_CODE);
        pos += size;
        phys_offset += size;
        queue_offset += 1;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    if (body.obj != NULL) PyBuffer_Release(&body);
    Py_XDECREF(seq);
    PyBuffer_Release(&out);
    PyBuffer_Release(&topic);
    PyBuffer_Release(&born);
    PyBuffer_Release(&store);
    return result;
}

/* ---------------------------------------------------------------- scanning records */

/* Set once by remoting/record.py: the RecordScan type, the four RecordKind members and
 * zlib.crc32 (the body CRC is zlib's; no need to link zlib here for one call per record). */
static PyObject *scan_type, *kind_message, *kind_blank, *kind_end, *kind_corrupt, *crc32_func;

static PyObject *configure_scan(PyObject *self, PyObject *args) {
    PyObject *t, *m, *b, *e, *c, *f;
    if (!PyArg_ParseTuple(args, "O!OOOOO", &PyType_Type, &t, &m, &b, &e, &c, &f)) return NULL;
    PyObject *olds[6] = {scan_type, kind_message, kind_blank, kind_end, kind_corrupt, crc32_func};
    Py_INCREF(t), Py_INCREF(m), Py_INCREF(b), Py_INCREF(e), Py_INCREF(c), Py_INCREF(f);
    scan_type = t, kind_message = m, kind_blank = b, kind_end = e, kind_corrupt = c;
    crc32_func = f;
    for (int i = 0; i < 6; i++) Py_XDECREF(olds[i]);
    Py_RETURN_NONE;
}

/* RecordScan(kind, size, topic, queue_id, queue_offset, phys_offset, sys_flag,
 * store_timestamp, properties, reason); steals topic, properties and reason. */
static PyObject *new_scan(PyObject *kind, long long size, PyObject *topic, long queue_id,
                          long long queue_offset, long long phys_offset, long sys_flag,
                          long long store_ts, PyObject *properties, PyObject *reason) {
    PyObject *empty = NULL;
    if (topic == NULL || properties == NULL || reason == NULL) {
        empty = PyUnicode_New(0, 0);
        if (empty == NULL) goto fail;
        if (topic == NULL) topic = (Py_INCREF(empty), empty);
        if (properties == NULL) properties = (Py_INCREF(empty), empty);
        if (reason == NULL) reason = (Py_INCREF(empty), empty);
        Py_DECREF(empty);
    }
    PyTypeObject *type = (PyTypeObject *)scan_type;
    PyObject *scan = type->tp_alloc(type, 10);
    if (scan == NULL) goto fail;
    PyObject *items[10] = {
        (Py_INCREF(kind), kind),       PyLong_FromLongLong(size),     topic,
        PyLong_FromLong(queue_id),     PyLong_FromLongLong(queue_offset),
        PyLong_FromLongLong(phys_offset), PyLong_FromLong(sys_flag),
        PyLong_FromLongLong(store_ts), properties,                    reason,
    };
    int ok = 1;
    for (int i = 0; i < 10; i++) {
        if (items[i] == NULL) ok = 0;
        PyTuple_SET_ITEM(scan, i, items[i]);
    }
    if (!ok) {
        Py_DECREF(scan);
        return NULL;
    }
    return scan;
fail:
    Py_XDECREF(topic);
    Py_XDECREF(properties);
    Py_XDECREF(reason);
    return NULL;
}

static PyObject *corrupt(const char *format, ...) {
    va_list args;
    va_start(args, format);
    PyObject *reason = PyUnicode_FromFormatV(format, args);
    va_end(args);
    if (reason == NULL) return NULL;
    return new_scan(kind_corrupt, 0, NULL, 0, 0, 0, 0, 0, NULL, reason);
}

/* scan_record(view, pos, check_crc) -> RecordScan: remoting/record.py python_scan_record. */
static PyObject *scan_record(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"view", "pos", "check_crc", NULL};
    PyObject *view;
    Py_ssize_t pos;
    int check_crc = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "On|$p", keywords, &view, &pos, &check_crc))
        return NULL;
    if (scan_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure_scan was not called");
        return NULL;
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(view, &buf, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *data = (const unsigned char *)buf.buf;
    PyObject *result = NULL;
    Py_ssize_t available = buf.len - pos;
    if (pos < 0) {
        PyErr_SetString(PyExc_ValueError, "negative position");
        goto done;
    }
    if (available < 8) {
        result = new_scan(kind_end, 0, NULL, 0, 0, 0, 0, 0, NULL,
                          PyUnicode_FromString("segment ends"));
        goto done;
    }
    const unsigned char *p = data + pos;
    int32_t total = get_i32(p), magic = get_i32(p + 4);
    if (magic == (int32_t)0xCBD43194) {
        result = new_scan(kind_blank, total, NULL, 0, 0, 0, 0, 0, NULL, NULL);
        goto done;
    }
    if (magic != MESSAGE_MAGIC_CODE) {
        if (total == 0 && magic == 0)
            result = new_scan(kind_end, 0, NULL, 0, 0, 0, 0, 0, NULL,
                              PyUnicode_FromString("zeros"));
        else
            result = corrupt("bad magic code 0x%x", (unsigned int)magic);
        goto done;
    }
    if (total < 91 || total > available) {
        result = corrupt("size %d does not fit (%zd bytes left)", (int)total, available);
        goto done;
    }
    int32_t sys_flag = get_i32(p + 36);
    Py_ssize_t born = (sys_flag & BORNHOST_V6_FLAG) ? 16 : 4;
    Py_ssize_t store = (sys_flag & STOREHOSTADDRESS_V6_FLAG) ? 16 : 4;
    Py_ssize_t header = 80 + born + store;
    if (total < header + 3) {
        result = corrupt("size %d does not fit its header", (int)total);
        goto done;
    }
    int32_t crc = get_i32(p + 8), queue_id = get_i32(p + 12);
    int64_t queue_offset = (int64_t)(((uint64_t)(uint32_t)get_i32(p + 20) << 32) |
                                     (uint32_t)get_i32(p + 24));
    int64_t phys_offset = (int64_t)(((uint64_t)(uint32_t)get_i32(p + 28) << 32) |
                                    (uint32_t)get_i32(p + 32));
    const unsigned char *ts = p + 52 + born;
    int64_t store_ts =
        (int64_t)(((uint64_t)(uint32_t)get_i32(ts) << 32) | (uint32_t)get_i32(ts + 4));
    int32_t body_length = get_i32(p + 76 + born + store);
    Py_ssize_t at = header + (Py_ssize_t)body_length; /* relative to the record */
    if (body_length < 0 || at >= total) {
        result = corrupt("body length %d does not fit", (int)body_length);
        goto done;
    }
    Py_ssize_t topic_length = p[at];
    Py_ssize_t props_at = at + 1 + topic_length;
    if (props_at + 2 > total) {
        result = corrupt("topic runs past the record");
        goto done;
    }
    Py_ssize_t props_length = get_i16(p + props_at);
    if (header + 3 + body_length + topic_length + props_length != total) {
        result = corrupt("fields do not add up to TOTALSIZE %d", (int)total);
        goto done;
    }
    if (check_crc) {
        PyObject *body = PySequence_GetSlice(view, pos + header, pos + header + body_length);
        if (body == NULL) goto done;
        PyObject *computed = PyObject_CallOneArg(crc32_func, body);
        Py_DECREF(body);
        if (computed == NULL) goto done;
        unsigned long value = PyLong_AsUnsignedLongMask(computed);
        Py_DECREF(computed);
        if ((long)crc != (long)(value & 0x7FFFFFFFul)) {
            result = corrupt("body CRC mismatch");
            goto done;
        }
    }
    PyObject *topic = PyUnicode_DecodeUTF8((const char *)p + at + 1, topic_length, NULL);
    PyObject *properties =
        topic == NULL ? NULL
                      : PyUnicode_DecodeUTF8((const char *)p + props_at + 2, props_length, NULL);
    if (properties == NULL) {
        Py_XDECREF(topic);
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) goto done;
        PyErr_Clear();
        result = corrupt("topic or properties not UTF-8");
        goto done;
    }
    result = new_scan(kind_message, total, topic, queue_id, queue_offset, phys_offset, sys_flag,
                      store_ts, properties, NULL);
done:
    PyBuffer_Release(&buf);
    return result;
}

/* ---------------------------------------------------------------- batch bodies */

/* decode_batch_body(view, entry_type, error_type) -> [entry_type(flag, body view, props str)]
 * view: a memoryview of the SEND_BATCH_MESSAGE body. Entries are (TOTALSIZE, MAGIC, BODYCRC,
 * FLAG, BODYLENGTH, body, PROPERTIESLENGTH int16, properties). */
static PyObject *decode_batch_body(PyObject *self, PyObject *args) {
    PyObject *view, *entry_type, *error_type;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyMemoryView_Type, &view, &PyType_Type, &entry_type,
                          &error_type))
        return NULL;
    Py_buffer *buf = PyMemoryView_GET_BUFFER(view);
    if (!PyBuffer_IsContiguous(buf, 'C') || buf->itemsize != 1) {
        PyErr_SetString(PyExc_ValueError, "a contiguous byte view is needed");
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)buf->buf;
    Py_ssize_t len = buf->len, pos = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    PyTypeObject *type = (PyTypeObject *)entry_type;
    while (pos < len) {
        if (len - pos < 22) {
            PyErr_Format(error_type, "truncated batch entry at %zd", pos);
            goto fail;
        }
        int32_t total = get_i32(data + pos);
        int32_t flag = get_i32(data + pos + 12);
        int32_t body_length = get_i32(data + pos + 16);
        Py_ssize_t at = pos + 20;
        if (body_length < 0 || at + (Py_ssize_t)body_length + 2 > len) {
            PyErr_Format(error_type, "batch entry at %zd: body length %d does not fit", pos,
                         (int)body_length);
            goto fail;
        }
        Py_ssize_t body_at = at;
        at += body_length;
        int16_t props_length = get_i16(data + at);
        at += 2;
        if (props_length < 0 || at + props_length > len) {
            PyErr_Format(error_type, "batch entry at %zd: properties length %d does not fit", pos,
                         (int)props_length);
            goto fail;
        }
        PyObject *props = PyUnicode_DecodeUTF8((const char *)data + at, props_length, NULL);
        if (props == NULL) {
            PyErr_Clear();
            PyErr_Format(error_type, "batch entry at %zd: properties not UTF-8", pos);
            goto fail;
        }
        at += props_length;
        if (total != at - pos) {
            Py_DECREF(props);
            PyErr_Format(error_type, "batch entry at %zd: TOTALSIZE %d != %zd", pos, (int)total,
                         at - pos);
            goto fail;
        }
        PyObject *body = PySequence_GetSlice(view, body_at, body_at + body_length);
        PyObject *flag_o = PyLong_FromLong(flag);
        PyObject *entry = type->tp_alloc(type, 3);
        if (body == NULL || flag_o == NULL || entry == NULL) {
            Py_XDECREF(body);
            Py_XDECREF(flag_o);
            Py_XDECREF(entry);
            Py_DECREF(props);
            goto fail;
        }
        PyTuple_SET_ITEM(entry, 0, flag_o);
        PyTuple_SET_ITEM(entry, 1, body);
        PyTuple_SET_ITEM(entry, 2, props);
        int appended = PyList_Append(out, entry);
        Py_DECREF(entry);
        if (appended < 0) goto fail;
        pos = at;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* ---------------------------------------------------------------- IndexFile entries */

/* index_put_entries(mm, slots, entries_at, max_entries, count, time_diff, entries)
 *   -> (written, new_count, slots_taken)
 * entries: (key hash, phy offset) pairs. The file layout: 40-byte header, `slots` int32 slots,
 * then 20-byte entries (key hash, phy offset, time diff, previous entry). */
static PyObject *index_put_entries(PyObject *self, PyObject *args) {
    Py_buffer mm;
    long long slots, entries_at, max_entries, count, time_diff;
    PyObject *entries;
    if (!PyArg_ParseTuple(args, "w*LLLLLO", &mm, &slots, &entries_at, &max_entries, &count,
                          &time_diff, &entries))
        return NULL;
    PyObject *result = NULL;
    PyObject *seq = PySequence_Fast(entries, "entries must be a sequence");
    if (seq == NULL) goto done;
    if (slots <= 0 || entries_at < 40 + slots * 4 || entries_at + max_entries * 20 > mm.len) {
        PyErr_SetString(PyExc_ValueError, "index geometry does not fit the buffer");
        goto done;
    }
    unsigned char *base = (unsigned char *)mm.buf;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), written = 0;
    long long taken = 0;
    for (; written < n && count < max_entries; written++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, written);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "an entry is a (key hash, phy offset) tuple");
            goto done;
        }
        long long key_hash = PyLong_AsLongLong(PyTuple_GET_ITEM(pair, 0));
        long long phy = PyLong_AsLongLong(PyTuple_GET_ITEM(pair, 1));
        if (PyErr_Occurred()) goto done;
        key_hash = key_hash == INT32_MIN ? 0 : (key_hash < 0 ? -key_hash : key_hash);
        unsigned char *slot = base + 40 + (key_hash % slots) * 4;
        int32_t previous = get_i32(slot);
        if (previous <= 0 || previous > count) {
            previous = 0;
            taken++;
        }
        unsigned char *e = base + entries_at + count * 20;
        put_i32(e, (int32_t)key_hash);
        put_i64(e + 4, phy);
        put_i32(e + 12, (int32_t)time_diff);
        put_i32(e + 16, previous);
        put_i32(slot, (int32_t)count);
        count++;
    }
    result = Py_BuildValue("nLL", written, count, taken);
done:
    Py_XDECREF(seq);
    PyBuffer_Release(&mm);
    return result;
}

/* ---------------------------------------------------------------- dispatch properties */

/* dispatch_fields(properties text) -> (tags code, KEYS, UNIQ_KEY, DELAY or None)
 * What dispatch needs of an encoded properties string (NAME \x01 VALUE, \x02-separated), read
 * as Java's string2messageProperties leaves it: a name runs to the first \x01 of its segment,
 * empty values count as absent, a later duplicate wins. The tags code is the TAGS value's
 * String.hashCode (0 without one). The reference: broker/store/commit_log.py
 * python_dispatch_fields. */
static PyObject *dispatch_fields(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "dispatch_fields takes a str");
        return NULL;
    }
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(arg, &len);
    if (text == NULL) return NULL;
    /* [start, end) of the last non-empty value of each name */
    const char *found[4][2] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    static const char *names[4] = {"TAGS", "KEYS", "UNIQ_KEY", "DELAY"};
    static const Py_ssize_t name_lengths[4] = {4, 4, 8, 5};
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *segment_end = memchr(p, '\x02', end - p);
        if (segment_end == NULL) segment_end = end;
        const char *sep = memchr(p, '\x01', segment_end - p);
        if (sep != NULL && sep + 1 < segment_end) {
            Py_ssize_t name_length = sep - p;
            for (int i = 0; i < 4; i++) {
                if (name_length == name_lengths[i] && memcmp(p, names[i], name_length) == 0) {
                    found[i][0] = sep + 1;
                    found[i][1] = segment_end;
                    break;
                }
            }
        }
        p = segment_end + 1;
    }
    PyObject *values[4] = {NULL, NULL, NULL, NULL};
    long tags_code = 0;
    for (int i = 0; i < 4; i++) {
        if (found[i][0] != NULL) {
            values[i] = PyUnicode_DecodeUTF8(found[i][0], found[i][1] - found[i][0], NULL);
        } else if (i == 1 || i == 2) {
            values[i] = PyUnicode_New(0, 0);
        } else {
            values[i] = Py_None;
            Py_INCREF(Py_None);
        }
        if (values[i] == NULL) {
            for (int j = 0; j < i; j++) Py_DECREF(values[j]);
            return NULL;
        }
    }
    if (values[0] != Py_None) tags_code = (long)(int32_t)unsigned_java_hash(values[0]);
    PyObject *result = Py_BuildValue("lNNN", tags_code, values[1], values[2], values[3]);
    Py_DECREF(values[0]);
    return result;
}

/* ---------------------------------------------------------------- page warming */

/* populate_write(mapping, start, length) -> bool
 * Fault in the pages of [start, start + length) of a writable shared mapping, ready for writing,
 * without changing a byte (MADV_POPULATE_WRITE), with the GIL released: about 1 us a page in
 * bulk against ~14 us when an append faults them in one by one. False when the kernel does not
 * know the advice (before 5.14). */
static PyObject *populate_write(PyObject *self, PyObject *args) {
    Py_buffer mapping;
    Py_ssize_t start, length;
    if (!PyArg_ParseTuple(args, "w*nn", &mapping, &start, &length)) return NULL;
    PyObject *result = NULL;
    if (start < 0 || length < 0 || start > mapping.len || length > mapping.len - start) {
        PyErr_SetString(PyExc_ValueError, "range outside the mapping");
        goto done;
    }
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)mapping.buf + (uintptr_t)start) & ~(uintptr_t)(page - 1);
    uintptr_t to = (uintptr_t)mapping.buf + (uintptr_t)(start + length);
    if ((uintptr_t)mapping.buf % (uintptr_t)page != 0) {
        PyErr_SetString(PyExc_ValueError, "the buffer is not a page-aligned mapping");
        goto done;
    }
    int rc = 0, err = 0;
    if (to > from) {
        Py_BEGIN_ALLOW_THREADS
        rc = madvise((void *)from, to - from, MADV_POPULATE_WRITE);
        err = errno;
        Py_END_ALLOW_THREADS
    }
    if (rc != 0 && err == EINVAL) {
        result = Py_False;
        Py_INCREF(result);
    } else if (rc != 0) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
    } else {
        result = Py_True;
        Py_INCREF(result);
    }
done:
    PyBuffer_Release(&mapping);
    return result;
}

static PyMethodDef methods[] = {
    {"java_hash", java_hash, METH_O, "Java's String.hashCode as a signed 32-bit int."},
    {"pack_records_into", pack_records_into, METH_VARARGS,
     "Write CommitLog records back to back (remoting.record.pack_records_into)."},
    {"decode_batch_body", decode_batch_body, METH_VARARGS,
     "The entries of a SEND_BATCH_MESSAGE body (remoting.message.decode_batch_body)."},
    {"index_put_entries", index_put_entries, METH_VARARGS,
     "IndexFile.put_entries' loop over (key hash, phy offset) pairs."},
    {"configure_scan", configure_scan, METH_VARARGS,
     "RecordScan, the RecordKind members and zlib.crc32, for scan_record."},
    {"scan_record", (PyCFunction)(void (*)(void))scan_record, METH_VARARGS | METH_KEYWORDS,
     "What dispatch and recovery need from the record at a position (remoting.record)."},
    {"dispatch_fields", dispatch_fields, METH_O,
     "(tags code, KEYS, UNIQ_KEY, DELAY) of an encoded properties string."},
    {"populate_write", populate_write, METH_VARARGS,
     "Fault in a mapping's pages for writing, without the GIL (MADV_POPULATE_WRITE)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "remoting._speedups", "Native twins of the store's inner loops.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
