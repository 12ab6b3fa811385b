/* Shared by the native twins of the store's inner loops (the C files of remoting/native, built as the
 * extension module remoting._speedups). */
#ifndef ROCKETMQ_TRIO_SPEEDUPS_H
#define ROCKETMQ_TRIO_SPEEDUPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define BORNHOST_V6_FLAG 0x10
#define STOREHOSTADDRESS_V6_FLAG 0x20
#define MESSAGE_MAGIC_CODE ((int32_t)0xDAA320A7)
#define BLANK_MAGIC_CODE ((int32_t)0xCBD43194)

/* Big-endian stores and loads: every field of RocketMQ's layouts is big-endian. */

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

static inline int64_t get_i64(const unsigned char *p) {
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u = (u << 8) | p[i];
    return (int64_t)u;
}

static inline int16_t get_i16(const unsigned char *p) {
    return (int16_t)(((uint16_t)p[0] << 8) | (uint16_t)p[1]);
}

/* An int attribute read and written (the store's objects keep their positions as ints). */
static inline int get_attr_ll(PyObject *owner, PyObject *name, long long *out) {
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL) return -1;
    *out = PyLong_AsLongLong(value);
    Py_DECREF(value);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static inline int set_attr_ll(PyObject *owner, PyObject *name, long long value) {
    PyObject *o = PyLong_FromLongLong(value);
    if (o == NULL) return -1;
    int r = PyObject_SetAttr(owner, name, o);
    Py_DECREF(o);
    return r;
}

/* A CommitLog record's fields (records.c write_record). */
typedef struct {
    int32_t size, crc, queue_id, flag, sys_flag, born_port, store_port, reconsume_times;
    int64_t queue_offset, phys_offset, born_ts, store_ts, prepared;
    const Py_buffer *born, *store, *body, *topic;
    const char *props;
    Py_ssize_t props_len;
} RecordFields;

void write_record(unsigned char *p, const RecordFields *f);

/* TOTALSIZE of a record: 91 bytes with IPv4 hosts (each IPv6 host adds 12), plus its body,
 * topic and properties (remoting/record.py record_size). */
static inline Py_ssize_t record_size(Py_ssize_t body, Py_ssize_t topic, Py_ssize_t props,
                                     Py_ssize_t born_len, Py_ssize_t store_len) {
    return 91 + body + topic + props + (born_len == 16 ? 12 : 0) + (store_len == 16 ? 12 : 0);
}

/* A single message's record packed at `position` (single.c): its size, or minus its size when
 * it does not fit, or 0 with an exception set. */
Py_ssize_t pack_message(Py_buffer *mm, Py_ssize_t position, long long start, PyObject *msg,
                        const Py_buffer *topic, long long queue_offset, long long store_ts,
                        const Py_buffer *store, long long store_port, Py_ssize_t max_body,
                        PyObject *refused_type, PyObject *crc32, PyObject **fields_out);

/* An IndexFile being written (index.c): its header is read by writer_open, entries added by
 * writer_add (0 once the file is full) and the header written back by writer_close. */
typedef struct {
    unsigned char *base;
    long long slots, entries_at, max_entries;
    int64_t begin_ts, end_ts, begin_phy, end_phy;
    int32_t slot_count, count;
    Py_ssize_t written;
} IndexWriter;

int writer_open(IndexWriter *w, Py_buffer *mm, long long slots, long long max_entries);
int writer_add(IndexWriter *w, long long key_hash, long long phy, long long store_ts);
void writer_close(IndexWriter *w);

/* The Java hashes of base's prefix + UNIQ_KEY (when not empty), then + each non-empty
 * space-separated KEYS entry, handed to sink in that order; -1 as soon as sink says -1. */
typedef int (*KeyHashSink)(void *ctx, uint32_t hash);
int each_key_hash(uint32_t base, PyObject *keys, PyObject *uniq, KeyHashSink sink, void *ctx);

/* message_fields of a properties dict (hashing.c). */
PyObject *message_fields_of(PyObject *properties);

/* Java's String.hashCode over the UTF-16 code units of a str, mod 2^32 (hashing.c). */
uint32_t unsigned_java_hash(PyObject *text);
uint32_t java_hash_range(uint32_t h, PyObject *text, Py_ssize_t start, Py_ssize_t end);

/* dispatch_fields over UTF-8 bytes (hashing.c). */
PyObject *dispatch_fields_of(const char *text, Py_ssize_t len);

PyObject *java_hash(PyObject *self, PyObject *arg);
PyObject *dispatch_fields(PyObject *self, PyObject *arg);
PyObject *append_message(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *configure_put(PyObject *self, PyObject *args);
PyObject *put_single(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *dispatch_single(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *pack_records_into(PyObject *self, PyObject *args);
PyObject *pack_cq_units(PyObject *self, PyObject *args);
PyObject *configure_scan(PyObject *self, PyObject *args);
PyObject *scan_record(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *decode_batch_body(PyObject *self, PyObject *args);
PyObject *batch_records(PyObject *self, PyObject *args);
PyObject *batch_requests(PyObject *self, PyObject *args);
PyObject *index_requests(PyObject *self, PyObject *args);
PyObject *index_put_entries(PyObject *self, PyObject *args);
PyObject *populate_write(PyObject *self, PyObject *args);
int add_sender_type(PyObject *module); /* sender.c: the Sender type */

#endif
