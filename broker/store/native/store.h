/* broker.store._native: the store's per-message work in C, beside the Python twins it mirrors
 * (the modules of broker/store/). Shared by its C files; the record layout itself is
 * remoting/native/record_layout.h, the one definition both extensions compile in. */
#ifndef ROCKETMQ_TRIO_STORE_H
#define ROCKETMQ_TRIO_STORE_H

#include "record_layout.h"
#include "slots.h"

#include <structmember.h>

/* What broker/store/store_native.py expects: bumped whenever a function's or the cursor's
 * arguments or results change. */
#define STORE_ABI_VERSION 12

/* broker/store/layout.py and remoting/message.py define these too; store_native.py checks
 * that the values exported from here (module.c) equal them before it uses this module. */
#define CQ_UNIT_SIZE 20
#define CQ_FILLER_SIZE 0x7FFFFFFF /* the size field of a filler unit */
/* remoting/codes.py CURRENT_VERSION: the version field of a found pull's reply (pull_found.c) */
#define REMOTING_VERSION 409
#define INDEX_HEADER_SIZE 40
#define INDEX_SLOT_SIZE 4
#define INDEX_ENTRY_SIZE 20
#define MAX_TOPIC_BYTES 127
#define MAX_PROPERTIES_BYTES 32767
/* The sys flag bit of the two transaction types that take no queue offset: a prepared half
 * (0x4) and a rolled-back one (0xC). */
#define TRANSACTION_NOT_QUEUED_BIT 0x4
/* The sys flag bits of a rolled-back half, which has no index entries either. */
#define TRANSACTION_ROLLBACK_TYPE 0xC
/* An index entry of a batch put's packed dispatch: key hash int32, phys offset int64. */
#define BATCH_KEY_SIZE 12
/* The distinct tags a batch's wake-ups are collected for in a fixed table (then a dict). */
#define BATCH_WAKE_TAGS 8
/* A record with more keys than this is indexed the general way, not by index_request. */
#define INDEX_REQUEST_MAX_KEYS 64

/* broker/store/types.py DispatchRequest, a NamedTuple this module fills by position: its
 * fields must be DISPATCH_REQUEST_FIELDS (module.c), in this order. */
enum {
    DR_TOPIC, DR_QUEUE_ID, DR_PHYS_OFFSET, DR_SIZE, DR_TAGS_CODE, DR_STORE_TIMESTAMP,
    DR_QUEUE_OFFSET, DR_KEYS, DR_UNIQ_KEY, DR_SYS_FLAG, DR_PROPERTIES, DR_FIELDS,
};
extern const char *const dispatch_request_fields[DR_FIELDS];

/* A message body's CRC32 (zlib's: the record's BODYCRC before its top bit is cleared). With
 * libdeflate (setup.py links it when its header is installed, as make install does) it runs
 * with PCLMUL, about 4x zlib's table-driven loop on these machines; zlib's otherwise. The
 * tests hold both to Python's zlib.crc32. */
#ifdef HAVE_LIBDEFLATE
#include <libdeflate.h>
static inline uint32_t body_crc(const void *data, size_t length) {
    return libdeflate_crc32(0, data, length);
}
#else
#include <zlib.h>
static inline uint32_t body_crc(const void *data, size_t length) {
    return (uint32_t)crc32_z(0L, data, length);
}
#endif

/* PyLong_AsLongLong without its slow path: CPython 3.11 converts an int of more than one
 * 30-bit digit through _PyLong_AsByteArray, a byte at a time, and phys offsets, timestamps,
 * CRCs and tags codes mostly are such ints. The same value, and OverflowError past int64. */
static inline long long as_long_long(PyObject *o) {
#if PY_VERSION_HEX < 0x030C0000
    /* An int of at most two 30-bit digits (|value| < 2**60: queue ids, offsets, timestamps) read
     * from its digits in place, as PyLong_AsLongLongAndOverflow would: the call, its type
     * checks and its loop were ~20 instructions an int, ~25 ints a plain pass (callgrind).
     * 3.12 changed the layout: there the API does it. */
    if (PyLong_Check(o) && PyLong_SHIFT == 30) {
        const digit *d = ((PyLongObject *)o)->ob_digit;
        switch (Py_SIZE(o)) {
        case 0: return 0;
        case 1: return (long long)d[0];
        case -1: return -(long long)d[0];
        case 2: return (long long)d[0] | (long long)d[1] << PyLong_SHIFT;
        case -2: return -((long long)d[0] | (long long)d[1] << PyLong_SHIFT);
        default: break;
        }
    }
#endif
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
        PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to C long long");
        return -1;
    }
    return value;
}


/* A dict's version (PEP 509): CPython 3.11 gives each dict a tag, unique in the process, that
 * changes at every change of its contents (an item added, replaced by another object, deleted,
 * the dict cleared), and a new dict a tag never used before. So a (dict, tag) pair seen again
 * means the dict still maps each key to what it mapped then: what a pass looked up in a live
 * table (a topic's stats items, its ConsumeQueues) can be kept between passes and checked with
 * one compare. 0 where the tag is not kept (3.12 deprecated it): callers then look up. */
static inline uint64_t dict_version(PyObject *d) {
#if PY_VERSION_HEX < 0x030C0000
    return ((PyDictObject *)d)->ma_version_tag;
#else
    (void)d;
    return 0;
#endif
}

/* Whether two exact str are equal, as a dict compares such keys. */
static inline int same_text(PyObject *a, PyObject *b) {
    return a == b || (PyUnicode_GET_LENGTH(a) == PyUnicode_GET_LENGTH(b) &&
                      PyUnicode_Compare(a, b) == 0);
}

/* A new `type` tuple of DR_FIELDS items, stealing each (NULL items: out of memory; the tuple's
 * dealloc takes what was made and NULL comes back). */
PyObject *new_request(PyTypeObject *type, PyObject *items[DR_FIELDS]);

/* "<prefix>%016X" of a message id: the store host's hex prefix and the phys offset. */
PyObject *message_id(PyObject *prefix, long long phys_offset);

/* The exception a message the CommitLog does not take raises: RecordRefused(status, remark). */
extern PyObject *RecordRefused;
extern PyTypeObject AppendCursorType;
/* What AppendCursor.put returns of a record, as values: no msg id string, no DispatchRequest. */
typedef struct {
    long long phys, queue_offset;
    Py_ssize_t size;
    /* new: (encoded properties, tags code, KEYS, UNIQ_KEY); NULL when the properties were bytes
     * whose values dispatch reads are ASCII (dispatch_spans): then tags_code, and keys and uniq
     * spans ([start, end), NULL absent) into those bytes, which the caller's row holds */
    PyObject *fields;
    long tags_code;
    const char *keys[2], *uniq[2];
    PyObject *msg_prefix; /* borrowed: the cursor's msg id prefix */
} PutValues;
/* The numbers among put's arguments, as C values. */
typedef struct {
    Py_ssize_t position, max_body;
    long long start, store_ts, queue_id, sys_flag, flag, born_ts, reconsume, prepared;
} PutNumbers;
/* AppendCursor.put for plain_rows.c (`cursor` must be an AppendCursor, `args` put's, its
 * numbers already read into `n`: what put's objects say of them is not read again): 1 the
 * record is packed and the cursor moved on (`out` filled), 0 it does not fit (nothing
 * changed), -1 with an error set (RecordRefused or another; nothing changed). */
int append_cursor_put_values(PyObject *cursor, PyObject *const *args, const PutNumbers *n,
                             PutValues *out);

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
/* each_key_hash over ASCII values' bytes ([start, end), NULL absent: dispatch_spans'). */
int each_ascii_key_hash(uint32_t base, const char *const keys[2], const char *const uniq[2],
                        KeyHashSink sink, void *ctx);

/* (encoded properties, tags code, KEYS, UNIQ_KEY) of a properties dict (properties.c). */
PyObject *message_fields_of(PyObject *properties);
/* (tags code, KEYS, UNIQ_KEY, DELAY) of encoded properties in UTF-8 (properties.c). */
PyObject *dispatch_fields_of(const char *text, Py_ssize_t len);
int dispatch_spans(const char *text, Py_ssize_t len, long *tags_code, const char *keys[2],
                   const char *uniq[2]);

/* One entry of a batch plan (batch.c batch_plan): where its body and properties are in the
 * request's body, whether a \x02 goes between its properties and the batch's, its record's
 * size and body CRC. */
typedef struct {
    Py_ssize_t body_at, body_length, props_at, props_length, size;
    int32_t flag, separate;
    uint32_t crc;
} PlanEntry;

/* A batch plan as put_batch_dispatch takes it: (view, batch properties, plan bytes). */
typedef struct {
    const PlanEntry *entries;
    Py_ssize_t count, batch_props_length;
} BatchPlan;

/* The records of a batch plan packed back to back from `position` of `mm`, `f` holding the
 * batch's common fields (its phys and queue offsets those of the first record); -1 with an
 * error set when the plan does not hold together or does not fit (batch_dispatch.c). */
int pack_plan(Py_buffer *mm, Py_ssize_t position, PyObject *records, const RecordFields *f,
              BatchPlan *plan);

/* (msg ids joined by commas, ConsumeQueue units, index entries, [(tags code, queue offset)])
 * of the `n` records AppendCursor packed back to back at `records` (the first at `phys`, with
 * `queue_offset`), `props_length[i]` the length of record i's properties, its last field
 * (batch_dispatch.c). */
PyObject *batch_dispatch(PyObject *prefix, PyObject *topic, const unsigned char *records,
                         const PlanEntry *plan, Py_ssize_t n, Py_ssize_t batch_props_length,
                         long long phys, long long queue_offset);
PyObject *batch_plan(PyObject *self, PyObject *args);

PyObject *dispatch_fields(PyObject *self, PyObject *arg);
PyObject *pack_cq_units(PyObject *self, PyObject *args);
PyObject *put_cq_runs(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* A plain pass's run that goes into its queue's last file (consume_queue.c): what
 * cq_run_check found, for cq_run_write. */
typedef struct {
    PyObject *consume_queue, *mapped; /* new references */
    const unsigned char *units;       /* the run's, borrowed: alive to cq_run_write */
    Py_ssize_t length;
    Py_buffer out; /* the file's mapping, held */
    long long position, end, last_end;
} CqTarget;
int cq_run_check(PyObject *table, PyObject *run, CqTarget *t);
/* cq_run_check of a run given as its values (topic, queue id, first queue offset, units). */
int cq_run_check_values(PyObject *table, PyObject *topic, PyObject *queue_id,
                        long long queue_offset, const unsigned char *units, Py_ssize_t length,
                        CqTarget *t);
int cq_run_write(PyObject *dirty, CqTarget *t);
void cq_target_release(CqTarget *t);
PyObject *index_requests(PyObject *self, PyObject *args);
PyObject *index_put_keys(PyObject *self, PyObject *args);
PyObject *index_put_entries(PyObject *self, PyObject *args);
PyObject *index_request(PyObject *self, PyObject *args);
PyObject *populate_write(PyObject *self, PyObject *args);
PyObject *sync_range(PyObject *self, PyObject *args);
/* The unit loop of scan_units (scan_units.c): `total` units from `p`, slices of `view` (the
 * segment mapped from log offset l->start, written up to l->end) appended to `buffers`; -1
 * with an error set. */
typedef struct {
    long long start, end, max_phys, threshold, max_msgs, disk_bytes, disk_count, memory_bytes,
        memory_count;
} ScanLimits;
typedef struct {
    Py_ssize_t scanned;
    long long count, total_bytes, max_phys_pulling;
    int stop;
} ScanOutcome;
int scan_loop(const unsigned char *p, Py_ssize_t total, PyObject *view, PyObject *codes,
              PyObject *buffers, int runs, const ScanLimits *l, ScanOutcome *o);
PyObject *pull_found(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *scan_units(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *scan_runs(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *put_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *plain_pass(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *now_ms(PyObject *self, PyObject *unused);
/* Java's putMessageDistributeTime bucket bounds (ms), broker/store/stats.py's; the last bucket
 * is open-ended. */
#define PUT_BUCKETS 12
extern const long long put_bucket_bounds_ms[PUT_BUCKETS];

/* StoreStats' put counters and a StatsItem's, as int64s (counters.c): the types plain_pass
 * adds to once it has checked them, and Python reads through member descriptors. */
typedef struct {
    long long times_total, size_total, time_sum_ns, time_max_ns;
    long long distribution[PUT_BUCKETS + 1];
} PutCounts;
typedef struct {
    PyObject_HEAD
    PutCounts n;
} PutCounters;
typedef struct {
    PyObject_HEAD
    long long value, times;
} StatsCounter;
extern PyTypeObject PutCountersType, StatsCounterType;
/* A server's request handler for lone plain sends (lone_send.c), and the round processor for
 * a selector round of them (round_send.c). */
extern PyTypeObject LoneSendType, RoundSendType;
/* What a taken plain send needs, read at the gates (new references, or NULL). */
typedef struct {
    PyObject *config, *cluster, *host, *lookup, *store, *put_items;
} SendTaken;
void send_taken_release(SendTaken *t);
/* broker_takes_plain's gates and what _store_plain reads (lone_send.c): 1 open with `t`
 * filled (the connection's born host too when one is given), 0 closed, -1 an error. */
int send_gates(PyObject *processor, long perm_write, PyObject *connection, SendTaken *t);
/* After a gate's failed read: 0 (closed, cleared) for an Exception, else -1 (left set). */
int send_closed_by_error(void);
int put_bucket(long long elapsed_ns);
/* Additions to the counts, -1 with OverflowError (nothing added) past int64. */
int put_counters_add(PutCounts *c, long long messages, long long size);
int put_counters_times(PutCounts *c, long long elapsed_ns, long long puts);

/* What put_rows' records hand dispatch, packed as they are added (plain_dispatch.c). */
typedef struct PlainPack PlainPack;
/* One record as the packer takes it: the objects a wake-up passes on (borrowed), the numbers. */
typedef struct {
    PyObject *topic, *queue_id, *tags, *store_ts, *keys, *uniq, *properties;
    long long queue, phys, size, tags_code, ts, queue_offset, sys_flag;
    /* keys and uniq NULL (and tags NULL: made from tags_code when a wake-up needs it): the
     * ASCII values' spans, as PutValues' */
    const char *key_span[2], *uniq_span[2];
} PlainRecord;
PlainPack *plain_pack_new(void);
/* Add a record (log order): its topic, KEYS and UNIQ_KEY str; -1 with an error set. */
int plain_pack_add(PlainPack *p, const PlainRecord *record);
/* (runs, index entry chunks, last store timestamp): plain_dispatch.py AppendedRows. */
PyObject *plain_pack_finish(PlainPack *p);
/* A run of a pack as plain_pass reads it in place (its units are the pack's own memory,
 * valid while the pack lives and no record is added). */
typedef struct {
    PyObject *topic, *queue_id; /* borrowed from the pack */
    long long first;            /* the queue offset of its first unit */
    const unsigned char *units;
    Py_ssize_t length;
} PackRun;
/* The pack's runs in plain_pack_finish's order into `out`: their count, -1 past `room`. */
Py_ssize_t plain_pack_runs(const PlainPack *p, PackRun *out, Py_ssize_t room);
/* The pack's index entries read in place, before plain_pack_finish: how many chunks of one
 * store timestamp they make (0, 1, or 2 for more than one), and for one its timestamp, its
 * entries (the pack's memory) and how many bytes of them there are. */
int plain_pack_keys(const PlainPack *p, long long *ts, const unsigned char **keys,
                    Py_ssize_t *used);
long long plain_pack_last_ts(const PlainPack *p);
/* put_rows' work, its results as they are made: the position, the replies, the totals and
 * the pack not yet finished (plain_pass reads it in place). 0, or -1 with an error and nothing
 * held. put_rows_release drops what is left. */
#define TOPIC_TOTALS 4
typedef struct {
    PyObject *topic; /* a new reference */
    long long count, bytes;
} TopicTotal;
/* The per-topic totals are C values for the first TOPIC_TOTALS topics (exact str), moved
 * into the {topic: [count, bytes]} dict only past them or for another kind of topic (`totals`
 * then holds every topic); put_rows_totals makes the dict Python is handed. */
typedef struct {
    Py_ssize_t position;
    PyObject *replies, *totals; /* new references; totals NULL while the C values hold them */
    TopicTotal topics[TOPIC_TOTALS];
    int n_topics;
    PlainPack *pack;
} PutRowsOut;
/* {topic: [count, bytes]} of the rows stored, in the order the topics came (a new
 * reference); NULL with an error. */
PyObject *put_rows_totals(PutRowsOut *out);
/* The totals one at a time from *at (0 first): 1 with the topic (borrowed) and its numbers,
 * 0 past the last, -1 with an error. */
int put_rows_topic(const PutRowsOut *out, Py_ssize_t *at, PyObject **topic, long long *count,
                   long long *bytes);
Py_ssize_t put_rows_topic_count(const PutRowsOut *out);
/* put_rows' arguments (borrowed), its numbers as C values: what plain_pass has as numbers is
 * not boxed to be read back. `unfit`: start or max_body was not a number put takes, so every
 * row's put would refuse it (the run stops at its first row, as put_rows' put did). */
typedef struct {
    PyObject *cursor, *mm, *clock, *rows, *pieces;
    Py_ssize_t position, max_body;
    long long start;
    int unfit;
} PutRowsIn;
int put_rows_run(const PutRowsIn *in, PutRowsOut *out);
void put_rows_release(PutRowsOut *out);
void plain_pack_free(PlainPack *p);
PyObject *plain_dispatch(PyObject *self, PyObject *requests);

#endif
