/* scan_send_command: a SEND_MESSAGE(_V2) or SEND_BATCH_MESSAGE request's JSON command header read
 * straight from its bytes into the command's values and SendMessageRequestHeader's, building no
 * dict (issue 27). A batch's header is the V2 one (Java's broker decodes code 320 as V2 only).
 *
 * A fast path, not a second decoder: the reference is remoting/command.py's orjson path
 * (orjson, plain_command, the Python checks) followed by decode_send_header (send_header.c) on
 * the extFields that path builds. The scan takes only the strict form real clients write and
 * returns None for anything else, so the reference judges it:
 * - one JSON object; whitespace (space, tab, CR, LF) between tokens as JSON allows it;
 * - top-level keys code, opaque, flag, version (integers in [0, 2^31), no sign, no leading
 *   zero, no fraction or exponent), language (a string), remark (a string or null),
 *   serializeTypeCurrentRPC (a string, ignored as the reference ignores it), extFields (an
 *   object); each at most once, code and extFields present, no other key; code 10, 310 or 320;
 * - every string printable ASCII, escapes only \" \\ \/ \b \f \n \r \t and \u00XX below 0x80
 *   (what orjson decodes to the same one byte); a key with no escape at all;
 * - extFields' values strings, integers of at most 18 digits (C++ writes numbers; the
 *   reference turns them into their decimal strings) or true/false; no key of the send
 *   header twice; the header's required fields present and each value in the form
 *   decode_send_header takes (numbers within their Java type, no escape in a number, a
 *   boolean or a topic), any other key skipped as the send header skips it.
 * Topics are not checked against the valid-topic set here: plain_send_rows does that as
 * decode_send_header does. tests/unit/remoting/test_send_scan.py holds the scan to the reference
 * on real clients' frames and their mutations. */
#include "json_scan.h"
#include <structmember.h> /* T_OBJECT_EX */
#include <limits.h>
#include <string.h>

#define SEND_MESSAGE 10
#define SEND_MESSAGE_V2 310
#define SEND_BATCH_MESSAGE 320
#define SEND_FIELDS 14
#define MAX_EXT_DIGITS 18 /* any such integer is exact in orjson and in a long long */

typedef enum { F_STR, F_TOPIC, F_INT, F_SYSFLAG, F_LONG, F_BOOL } FieldType;
/* SendMessageRequestHeader's fields in its order (send_header.c send_fields, held equal by the
 * tests through decode_send_header's results). */
static const struct {
    const char *v1, *v2;
    FieldType type;
    int required;
} fields[SEND_FIELDS] = {
    {"producerGroup", "a", F_STR, 1},  {"topic", "b", F_TOPIC, 1},
    {"defaultTopic", "c", F_TOPIC, 1}, {"defaultTopicQueueNums", "d", F_INT, 1},
    {"queueId", "e", F_INT, 1},        {"sysFlag", "f", F_SYSFLAG, 1},
    {"bornTimestamp", "g", F_LONG, 1}, {"flag", "h", F_INT, 1},
    {"properties", "i", F_STR, 0},     {"reconsumeTimes", "j", F_INT, 0},
    {"unitMode", "k", F_BOOL, 0},      {"batch", "m", F_BOOL, 0},
    {"maxReconsumeTimes", "l", F_INT, 0}, {"bname", "n", F_STR, 0},
};

/* The send header's index of an extFields key in SEND_MESSAGE (table 0) or SEND_MESSAGE_V2 and
 * SEND_BATCH_MESSAGE (table 1) naming, -1 for a key of neither. V2's names are single letters a..n. */
static int field_index(const Span *key, int *table) {
    if (key->len == 1) {
        for (int i = 0; i < SEND_FIELDS; i++)
            if (key->at[0] == (unsigned char)fields[i].v2[0]) {
                *table = 1;
                return i;
            }
        return -1;
    }
    for (int i = 0; i < SEND_FIELDS; i++) {
        if (key_is(key, fields[i].v1)) {
            *table = 0;
            return i;
        }
    }
    return -1;
}

/* extFields' object at the cursor (on '{') into the send header's two tables of spans and the
 * members' list; 0 when not plain. */
static int scan_ext(Cursor *c, Span ext[2][SEND_FIELDS], Members *members) {
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 1;
    }
    for (;;) {
        Span key, value;
        if (!scan_key(c, &key) || !scan_value(c, &value, MAX_EXT_DIGITS)) return 0;
        if (value.kind == J_NULL) return 0; /* the reference drops the key: left to it */
        if (members->count < MAX_MEMBERS) {
            members->keys[members->count] = key;
            members->values[members->count++] = value;
        } else {
            members->overflow = 1;
        }
        int table, i = field_index(&key, &table);
        if (i >= 0) {
            if (ext[table][i].kind != J_NONE) return 0; /* a duplicate: the last one wins */
            ext[table][i] = value;
        }
        int next = member_end(c);
        if (next == 0) return 0;
        if (next == 2) return 1;
    }
}

static Kept kept_language, kept_fields[SEND_FIELDS];
static PyObject *java; /* the language when absent */

/* The value of a send header field from its span (the reference's result for it), NOT_PLAIN
 * (a new reference) when the reference would not take it plainly, NULL on error. */
static PyObject *field_value(int i, const Span *s) {
    FieldType type = fields[i].type;
    if (s->kind == J_NONE) {
        if (fields[i].required) return Py_NewRef(NOT_PLAIN);
        return Py_NewRef(type == F_BOOL ? Py_False : Py_None);
    }
    int plain_text = s->kind == J_STR && !s->escaped; /* the bytes are the reference's str */
    switch (type) {
    case F_STR:
        if (s->kind != J_STR) return Py_NewRef(NOT_PLAIN); /* a number's string: rare, left to Python */
        return i == 8 ? span_str(s) : kept_str(&kept_fields[i], s); /* properties differ */
    case F_TOPIC:
        if (!plain_text) return Py_NewRef(NOT_PLAIN);
        return kept_str(&kept_fields[i], s);
    case F_BOOL: {
        /* Boolean.parseBoolean of the string; a number's string is never "true" */
        if (s->kind == J_STR && s->escaped) return Py_NewRef(NOT_PLAIN);
        int truth = s->kind == J_TRUE ||
                    (plain_text && s->len == 4 && (s->at[0] | 0x20) == 't' &&
                     (s->at[1] | 0x20) == 'r' && (s->at[2] | 0x20) == 'u' &&
                     (s->at[3] | 0x20) == 'e');
        return Py_NewRef(truth ? Py_True : Py_False);
    }
    default: { /* F_INT, F_SYSFLAG, F_LONG: a plain string or an integer's digits */
        if (!plain_text && s->kind != J_INT) return Py_NewRef(NOT_PLAIN);
        long long low = type == F_LONG ? LLONG_MIN : INT32_MIN;
        long long high = type == F_LONG ? LLONG_MAX : INT32_MAX, number;
        if (!plain_integer_bytes((const char *)s->at, s->len, low, high, &number))
            return Py_NewRef(NOT_PLAIN);
        if (type == F_SYSFLAG) number &= SEND_SYS_FLAG_MASK;
        return PyLong_FromLongLong(number);
    }
    }
}

/* The send header's 14 values (decode_send_header's tuple), Py_None when one is not plain. */
static PyObject *send_values(Span ext[SEND_FIELDS]) {
    PyObject *out = PyTuple_New(SEND_FIELDS);
    if (out == NULL) return NULL;
    for (int i = 0; i < SEND_FIELDS; i++) {
        PyObject *v = field_value(i, &ext[i]);
        if (v == NULL || v == NOT_PLAIN) {
            Py_DECREF(out);
            if (v == NULL) return NULL;
            Py_DECREF(v);
            Py_RETURN_NONE;
        }
        PyTuple_SET_ITEM(out, i, v);
    }
    return out;
}

enum { T_CODE, T_OPAQUE, T_FLAG, T_VERSION, T_LANGUAGE, T_REMARK, T_SERIALIZE, T_EXT, T_KEYS };
static const char *const top_names[T_KEYS] = {
    "code", "opaque", "flag", "version", "language", "remark", "serializeTypeCurrentRPC",
    "extFields",
};

/* One top-level member's value at the cursor; 0 when not plain. */
static int scan_top_value(Cursor *c, int which, Span *s, Span ext[2][SEND_FIELDS],
                          Members *members) {
    if (c->p >= c->end) return 0;
    switch (which) {
    case T_CODE:
    case T_OPAQUE:
    case T_FLAG:
    case T_VERSION:
        return scan_integer(c, s, 0, 10);
    case T_LANGUAGE:
    case T_SERIALIZE:
        return *c->p == '"' && scan_string(c, s);
    case T_REMARK:
        return *c->p == '"' ? scan_string(c, s) : scan_literal(c, "null", J_NULL, s);
    default: /* T_EXT */
        s->kind = J_STR; /* seen */
        return *c->p == '{' && scan_ext(c, ext, members);
    }
}

/* The codes whose extFields are SendMessageRequestHeader's. */
static int is_send(long code) {
    return code == SEND_MESSAGE || code == SEND_MESSAGE_V2 || code == SEND_BATCH_MESSAGE;
}

/* A top-level integer span (digits only, at most 10) as a Java int, -1 past one. */
static long top_int(const Span *s) {
    if (s->kind == J_NONE) return 0;
    long long n = 0;
    for (Py_ssize_t i = 0; i < s->len; i++) n = n * 10 + (s->at[i] - '0');
    return n > INT32_MAX ? -1 : (long)n;
}

/* The command the scan makes: an instance of remoting/command.py ScannedCommand, whose slots
 * configure_send_scan was handed once as member descriptors (the attrs class's own), filled
 * here as its __init__ would fill them. */
enum { S_CODE, S_LANGUAGE, S_VERSION, S_OPAQUE, S_FLAG, S_REMARK, S_EXT, S_BODY, S_SERIALIZE,
       S_HEADER, S_VALUES, S_SLOTS };
static PyTypeObject *command_type;
static Py_ssize_t command_offset[S_SLOTS];
static PyObject *lazy_ext; /* the extFields slot's value until they are asked for */

/* configure_send_scan(ScannedCommand, (descriptor, ...), lazy): the slots in S_ order. */
PyObject *configure_send_scan(PyObject *self, PyObject *args) {
    PyObject *type, *descriptors, *lazy;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyType_Type, &type, &PyTuple_Type, &descriptors, &lazy))
        return NULL;
    if (PyTuple_GET_SIZE(descriptors) != S_SLOTS || ((PyTypeObject *)type)->tp_itemsize != 0) {
        PyErr_SetString(PyExc_TypeError, "configure_send_scan: a slotted class, 11 slots");
        return NULL;
    }
    Py_ssize_t offsets[S_SLOTS];
    for (int i = 0; i < S_SLOTS; i++) {
        PyObject *d = PyTuple_GET_ITEM(descriptors, i);
        if (!Py_IS_TYPE(d, &PyMemberDescr_Type) ||
            !PyType_IsSubtype((PyTypeObject *)type, PyDescr_TYPE(d)) ||
            ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            PyErr_SetString(PyExc_TypeError, "configure_send_scan: slots of the class only");
            return NULL;
        }
        offsets[i] = ((PyMemberDescrObject *)d)->d_member->offset;
    }
    memcpy(command_offset, offsets, sizeof offsets);
    Py_XSETREF(lazy_ext, Py_NewRef(lazy));
    Py_XSETREF(command_type, (PyTypeObject *)Py_NewRef(type));
    Py_RETURN_NONE;
}

/* The command from the scanned spans, Py_None when one is not plain. */
static PyObject *scanned_command(Span top[T_KEYS], Span ext[2][SEND_FIELDS],
                                 const Members *members, const ScanInput *in) {
    long code = top_int(&top[T_CODE]), opaque = top_int(&top[T_OPAQUE]);
    long flag = top_int(&top[T_FLAG]), version = top_int(&top[T_VERSION]);
    int send = is_send(code), at = header_scan_index(code);
    if (top[T_CODE].kind == J_NONE || top[T_EXT].kind == J_NONE || opaque < 0 || flag < 0 ||
        version < 0 || (!send && at < 0))
        Py_RETURN_NONE;
    PyObject *values = send ? send_values(ext[code != SEND_MESSAGE]) : header_scan_values(at, members);
    if (values == NULL || values == Py_None) return values;
    PyObject *items[S_SLOTS] = {
        [S_CODE] = PyLong_FromLong(code),
        [S_LANGUAGE] = top[T_LANGUAGE].kind == J_NONE ? Py_NewRef(java)
                                                      : kept_str(&kept_language, &top[T_LANGUAGE]),
        [S_VERSION] = PyLong_FromLong(version),
        [S_OPAQUE] = PyLong_FromLong(opaque),
        [S_FLAG] = PyLong_FromLong(flag),
        [S_REMARK] = top[T_REMARK].kind == J_STR ? span_str(&top[T_REMARK]) : Py_NewRef(Py_None),
        [S_EXT] = Py_NewRef(lazy_ext),
        [S_BODY] = in->body != NULL ? Py_NewRef(in->body)
                                    : PyBytes_FromStringAndSize((const char *)in->body_at,
                                                                in->body_len),
        [S_SERIALIZE] = PyLong_FromLong(0), /* SerializeType.JSON */
        [S_HEADER] = in->header != NULL ? Py_NewRef(in->header)
                                        : PyBytes_FromStringAndSize((const char *)in->at,
                                                                    in->len),
        [S_VALUES] = values,
    };
    PyObject *command = command_type->tp_alloc(command_type, 0);
    int ok = command != NULL;
    for (int i = 0; i < S_SLOTS; i++) {
        if (items[i] == NULL) ok = 0;
        if (command != NULL) /* the new object's slots are NULL: set, nothing to release */
            *(PyObject **)((char *)command + command_offset[i]) = items[i];
        else
            Py_XDECREF(items[i]);
    }
    if (!ok) {
        Py_XDECREF(command);
        return NULL;
    }
    return command;
}

/* The scan of a JSON header's bytes (in->at, in->len): the command, Py_None when not plain,
 * NULL on error. The header's and body's bytes objects are made only for a command, from
 * their spans, where the caller has none (split_commands: a read's frames). */
PyObject *scan_command_at(const ScanInput *in) {
    if (command_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure_send_scan was not called");
        return NULL;
    }
    if (java == NULL && (java = PyUnicode_InternFromString("JAVA")) == NULL) return NULL;
    Cursor c = {in->at, in->at + in->len};
    Span top[T_KEYS], ext[2][SEND_FIELDS];
    Members members;
    memset(top, 0, sizeof top);
    memset(ext, 0, sizeof ext);
    members.count = members.overflow = 0;
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{') Py_RETURN_NONE;
    c.p++;
    for (;;) {
        Span key;
        if (!scan_key(&c, &key)) Py_RETURN_NONE;
        int which = 0;
        while (which < T_KEYS && !key_is(&key, top_names[which])) which++;
        if (which == T_KEYS || top[which].kind != J_NONE) Py_RETURN_NONE;
        if (!scan_top_value(&c, which, &top[which], ext, &members)) Py_RETURN_NONE;
        if (which == T_CODE) { /* every other request leaves here (Java writes code first) */
            long code = top_int(&top[T_CODE]);
            if (!is_send(code) && header_scan_index(code) < 0)
                Py_RETURN_NONE;
        }
        int next = member_end(&c);
        if (next == 0) Py_RETURN_NONE;
        if (next == 2) break;
    }
    skip_ws(&c);
    if (c.p != c.end) Py_RETURN_NONE;
    return scanned_command(top, ext, &members, in);
}

/* scan_send_command(header: bytes, body) -> ScannedCommand | None */
PyObject *scan_send_command(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "scan_send_command(header, body)");
        return NULL;
    }
    PyObject *header = args[0];
    if (command_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure_send_scan was not called");
        return NULL;
    }
    if (!PyBytes_CheckExact(header)) Py_RETURN_NONE;
    ScanInput in = {(const unsigned char *)PyBytes_AS_STRING(header), PyBytes_GET_SIZE(header),
                    header, NULL, 0, args[1]};
    return scan_command_at(&in);
}
