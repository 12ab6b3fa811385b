/* broker.store._native: the store's per-message work in C, beside the Python twins it mirrors
 * (the modules of broker/store/). Shared by its C files; the record layout itself is
 * remoting/native/record_layout.h, the one definition both extensions compile in. */
#ifndef ROCKETMQ_TRIO_STORE_H
#define ROCKETMQ_TRIO_STORE_H

#include "record_layout.h"

/* What broker/store/store_native.py expects: bumped whenever a function's or the cursor's
 * arguments or results change. */
#define STORE_ABI_VERSION 5

/* broker/store/layout.py and remoting/message.py define these too; store_native.py checks
 * that the values exported from here (module.c) equal them before it uses this module. */
#define CQ_UNIT_SIZE 20
#define CQ_FILLER_SIZE 0x7FFFFFFF /* the size field of a filler unit */
#define INDEX_HEADER_SIZE 40
#define INDEX_SLOT_SIZE 4
#define INDEX_ENTRY_SIZE 20
#define MAX_TOPIC_BYTES 127
#define MAX_PROPERTIES_BYTES 32767
/* The sys flag bit of the two transaction types that take no queue offset: a prepared half
 * (0x4) and a rolled-back one (0xC). */
#define TRANSACTION_NOT_QUEUED_BIT 0x4
/* A record with more keys than this is indexed the general way, not by index_request. */
#define INDEX_REQUEST_MAX_KEYS 64

/* broker/store/types.py DispatchRequest, a NamedTuple this module fills by position: its
 * fields must be DISPATCH_REQUEST_FIELDS (module.c), in this order. */
enum {
    DR_TOPIC, DR_QUEUE_ID, DR_PHYS_OFFSET, DR_SIZE, DR_TAGS_CODE, DR_STORE_TIMESTAMP,
    DR_QUEUE_OFFSET, DR_KEYS, DR_UNIQ_KEY, DR_SYS_FLAG, DR_PROPERTIES, DR_FIELDS,
};
extern const char *const dispatch_request_fields[DR_FIELDS];

/* A new `type` tuple of DR_FIELDS items, stealing each (NULL items: out of memory; the tuple's
 * dealloc takes what was made and NULL comes back). */
PyObject *new_request(PyTypeObject *type, PyObject *items[DR_FIELDS]);

/* "<prefix>%016X" of a message id: the store host's hex prefix and the phys offset. */
PyObject *message_id(PyObject *prefix, long long phys_offset);

/* The exception a message the CommitLog does not take raises: RecordRefused(status, remark). */
extern PyObject *RecordRefused;
extern PyTypeObject AppendCursorType;
/* AppendCursor.put for the other C files: `cursor` must be an AppendCursor. */
PyObject *append_cursor_put(PyObject *cursor, PyObject *const *args, Py_ssize_t nargs);

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

/* (encoded properties, tags code, KEYS, UNIQ_KEY) of a properties dict (properties.c). */
PyObject *message_fields_of(PyObject *properties);
/* (tags code, KEYS, UNIQ_KEY, DELAY) of encoded properties in UTF-8 (properties.c). */
PyObject *dispatch_fields_of(const char *text, Py_ssize_t len);

PyObject *dispatch_fields(PyObject *self, PyObject *arg);
PyObject *batch_records(PyObject *self, PyObject *args);
PyObject *pack_cq_units(PyObject *self, PyObject *args);
PyObject *index_requests(PyObject *self, PyObject *args);
PyObject *index_put_entries(PyObject *self, PyObject *args);
PyObject *index_request(PyObject *self, PyObject *args);
PyObject *populate_write(PyObject *self, PyObject *args);
PyObject *sync_range(PyObject *self, PyObject *args);
PyObject *scan_units(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *put_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif
