/* The CommitLog record layout in C (docs/spec/message-format.md §1-§4): byte order, the magic
 * codes and the sys flag bits that change the layout, record sizes, packing one record, and
 * Java's String.hashCode. One definition for both extensions that write records: the record
 * codec (remoting/native/codec/, module remoting._codec) and the store's own C
 * (broker/store/native/, module broker.store._native). The Python side of each checks the
 * constants it exports against remoting/record.py when it loads (remoting/extension.py).
 *
 * Everything here is static inline: each extension gets its own copy, so either one can be
 * built, stale or absent without the other. */
#ifndef ROCKETMQ_TRIO_RECORD_LAYOUT_H
#define ROCKETMQ_TRIO_RECORD_LAYOUT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MESSAGE_MAGIC_CODE ((int32_t)0xDAA320A7)
#define BLANK_MAGIC_CODE ((int32_t)0xCBD43194)
#define END_FILE_MIN_BLANK_LENGTH 8
/* MessageSysFlag bits that change the layout: a 16-byte born or store host address. */
#define BORNHOST_V6_FLAG 0x10
#define STOREHOSTADDRESS_V6_FLAG 0x20
/* TOTALSIZE of a record with IPv4 hosts and no body, topic or properties; an IPv6 host adds
 * IPV6_EXTRA_BYTES. */
#define RECORD_FIXED_BYTES 91
#define IPV6_EXTRA_BYTES 12
#define MAX_PROPERTIES_LENGTH 32767 /* PROPERTIESLENGTH is an int16 */
#define MAX_TOPIC_LENGTH 255        /* TOPICLENGTH is one byte */

/* Big-endian stores and loads: every field of RocketMQ's layouts is big-endian. One unaligned
 * move and a byte swap each (a byte-at-a-time loop was 8% of a batch put's time). */
#if defined(__GNUC__) || defined(__clang__)
#define BE16(v) __builtin_bswap16(v)
#define BE32(v) __builtin_bswap32(v)
#define BE64(v) __builtin_bswap64(v)
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#undef BE16
#undef BE32
#undef BE64
#define BE16(v) (v)
#define BE32(v) (v)
#define BE64(v) (v)
#endif
#else
static inline uint16_t BE16(uint16_t v) { return (uint16_t)((v >> 8) | (v << 8)); }
static inline uint32_t BE32(uint32_t v) {
    return (v >> 24) | ((v >> 8) & 0xFF00u) | ((v << 8) & 0xFF0000u) | (v << 24);
}
static inline uint64_t BE64(uint64_t v) {
    return ((uint64_t)BE32((uint32_t)v) << 32) | BE32((uint32_t)(v >> 32));
}
#endif

static inline void put_i16(unsigned char *p, int16_t v) {
    uint16_t u = BE16((uint16_t)v);
    memcpy(p, &u, 2);
}

static inline void put_i32(unsigned char *p, int32_t v) {
    uint32_t u = BE32((uint32_t)v);
    memcpy(p, &u, 4);
}

static inline void put_i64(unsigned char *p, int64_t v) {
    uint64_t u = BE64((uint64_t)v);
    memcpy(p, &u, 8);
}

static inline int16_t get_i16(const unsigned char *p) {
    uint16_t u;
    memcpy(&u, p, 2);
    return (int16_t)BE16(u);
}

static inline int32_t get_i32(const unsigned char *p) {
    uint32_t u;
    memcpy(&u, p, 4);
    return (int32_t)BE32(u);
}

static inline int64_t get_i64(const unsigned char *p) {
    uint64_t u;
    memcpy(&u, p, 8);
    return (int64_t)BE64(u);
}

/* TOTALSIZE of a record (remoting/record.py record_size). */
static inline Py_ssize_t record_size(Py_ssize_t body, Py_ssize_t topic, Py_ssize_t props,
                                     Py_ssize_t born_len, Py_ssize_t store_len) {
    return RECORD_FIXED_BYTES + body + topic + props + (born_len == 16 ? IPV6_EXTRA_BYTES : 0) +
           (store_len == 16 ? IPV6_EXTRA_BYTES : 0);
}

/* A CommitLog record's fields. */
typedef struct {
    int32_t size, crc, queue_id, flag, sys_flag, born_port, store_port, reconsume_times;
    int64_t queue_offset, phys_offset, born_ts, store_ts, prepared;
    const unsigned char *born, *store, *body, *topic, *props;
    Py_ssize_t born_len, store_len, body_len, topic_len, props_len;
} RecordFields;

/* One record at p, fields in the order of remoting/record.py HEADERS; the caller checked the
 * size against the room left. The magic code goes in last: the record's commit marker. */
static inline void write_record(unsigned char *p, const RecordFields *f) {
    put_i32(p, f->size);
    put_i32(p + 4, 0);
    put_i32(p + 8, f->crc);
    put_i32(p + 12, f->queue_id);
    put_i32(p + 16, f->flag);
    put_i64(p + 20, f->queue_offset);
    put_i64(p + 28, f->phys_offset);
    put_i32(p + 36, f->sys_flag);
    put_i64(p + 40, f->born_ts);
    unsigned char *q = p + 48;
    memcpy(q, f->born, f->born_len);
    q += f->born_len;
    put_i32(q, f->born_port);
    q += 4;
    put_i64(q, f->store_ts);
    q += 8;
    memcpy(q, f->store, f->store_len);
    q += f->store_len;
    put_i32(q, f->store_port);
    q += 4;
    put_i32(q, f->reconsume_times);
    q += 4;
    put_i64(q, f->prepared);
    q += 8;
    put_i32(q, (int32_t)f->body_len);
    q += 4;
    memcpy(q, f->body, f->body_len);
    q += f->body_len;
    *q++ = (unsigned char)f->topic_len;
    memcpy(q, f->topic, f->topic_len);
    q += f->topic_len;
    put_i16(q, (int16_t)f->props_len);
    q += 2;
    memcpy(q, f->props, f->props_len);
    /* Everything else must be in memory before the marker, even if the process dies here. */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    put_i32(p + 4, MESSAGE_MAGIC_CODE);
}

/* Java's String.hashCode over the UTF-16 code units of a str, mod 2^32, continuing `h` over
 * the code points [start, end) of `text`, so a concatenation needs no new string. */
static inline uint32_t java_hash_range(uint32_t h, PyObject *text, Py_ssize_t start,
                                       Py_ssize_t end) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *s = (const Py_UCS1 *)data;
        for (Py_ssize_t i = start; i < end; i++) h = 31u * h + s[i];
    } else if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *s = (const Py_UCS2 *)data;
        for (Py_ssize_t i = start; i < end; i++) h = 31u * h + s[i];
    } else {
        const Py_UCS4 *s = (const Py_UCS4 *)data;
        for (Py_ssize_t i = start; i < end; i++) {
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

static inline uint32_t unsigned_java_hash(PyObject *text) {
    return java_hash_range(0, text, 0, PyUnicode_GET_LENGTH(text));
}

/* A module attribute `name`: the field names of a tuple type this module fills by position,
 * which the Python side checks against its own type at import. */
static inline int add_field_names(PyObject *m, const char *name, const char *const *fields,
                                  int count) {
    PyObject *names = PyTuple_New(count);
    if (names == NULL) return -1;
    for (int i = 0; i < count; i++) {
        PyObject *field = PyUnicode_FromString(fields[i]);
        if (field == NULL) {
            Py_DECREF(names);
            return -1;
        }
        PyTuple_SET_ITEM(names, i, field);
    }
    int added = PyModule_AddObjectRef(m, name, names);
    Py_DECREF(names);
    return added;
}

/* The layout's constants as module attributes, for the import-time check. */
static inline int add_layout_constants(PyObject *m) {
    return PyModule_AddIntConstant(m, "MESSAGE_MAGIC_CODE", MESSAGE_MAGIC_CODE) < 0 ||
                   PyModule_AddIntConstant(m, "BLANK_MAGIC_CODE", BLANK_MAGIC_CODE) < 0 ||
                   PyModule_AddIntConstant(m, "END_FILE_MIN_BLANK_LENGTH",
                                           END_FILE_MIN_BLANK_LENGTH) < 0 ||
                   PyModule_AddIntConstant(m, "BORNHOST_V6_FLAG", BORNHOST_V6_FLAG) < 0 ||
                   PyModule_AddIntConstant(m, "STOREHOSTADDRESS_V6_FLAG",
                                           STOREHOSTADDRESS_V6_FLAG) < 0 ||
                   PyModule_AddIntConstant(m, "RECORD_FIXED_BYTES", RECORD_FIXED_BYTES) < 0 ||
                   PyModule_AddIntConstant(m, "IPV6_EXTRA_BYTES", IPV6_EXTRA_BYTES) < 0
               ? -1
               : 0;
}

#endif
