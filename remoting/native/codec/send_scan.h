/* send_scan.c's scan state, and the send header's values made from it (send_values.c). */
#ifndef ROCKETMQ_TRIO_SEND_SCAN_H
#define ROCKETMQ_TRIO_SEND_SCAN_H

#include "json_scan.h"

#define SEND_FIELDS 14

/* What one header's scan found: the top-level members, the send header's spans in its two
 * namings (extFields' values; an integer's value beside its span), and extFields' members as
 * they came when another header class may read them. Presence is a bit a member, so nothing
 * is cleared before a scan. */
enum { T_CODE, T_OPAQUE, T_FLAG, T_VERSION, T_LANGUAGE, T_REMARK, T_SERIALIZE, T_EXT, T_KEYS };
typedef struct {
    Span top[T_KEYS];
    long long top_int[T_LANGUAGE]; /* code, opaque, flag, version: a Java int, -1 past one */
    unsigned top_seen;
    Span ext[2][SEND_FIELDS];
    long long ext_int[2][SEND_FIELDS];
    unsigned ext_seen[2];
    int keep_members; /* the code is not known to be a send's: another class may read them */
    Members members;
} Scan;

/* The send header's 14 values from the scan's spans in one of its namings (0: SEND_MESSAGE's,
 * 1: SEND_MESSAGE_V2's), decode_send_header's tuple; Py_None when one is not plain. */
PyObject *send_values(const Scan *st, int table);
/* The small ints send_values hands out, made once: -1 on an error. */
int send_values_init(void);

/* ints below SMALL made once: the usual queue ids, flags, counts and sysFlag */
#define SMALL 16
extern PyObject *small_ints[SMALL];

static inline PyObject *int_object(long long n) {
    if (n >= 0 && n < SMALL && small_ints[n] != NULL) return Py_NewRef(small_ints[n]);
    return PyLong_FromLongLong(n);
}

#endif
