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

static inline int16_t get_i16(const unsigned char *p) {
    uint16_t u;
    memcpy(&u, p, 2);
    return (int16_t)BE16(u);
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
