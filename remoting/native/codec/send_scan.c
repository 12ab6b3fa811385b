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
 * decode_send_header does. The values are made in send_values.c, the command's bytes objects in
 * reused_bytes.c. tests/unit/remoting/test_send_scan.py holds the scan to the reference on real
 * clients' frames and their mutations, test_scan_lexer.py at the lexer's word steps. */
#include "send_scan.h"
#include <structmember.h> /* T_OBJECT_EX */
#include <limits.h>
#include <string.h>

#define SEND_MESSAGE 10
#define SEND_MESSAGE_V2 310
#define SEND_BATCH_MESSAGE 320
#define MAX_EXT_DIGITS 18 /* any such integer is exact in orjson and in a long long */

/* A V2 letter's field index + 1, 0 for any other byte: a..n, in the fields' order but for l
 * and m (maxReconsumeTimes, batch). */
static const unsigned char v2_field[256] = {
    ['a'] = 1, ['b'] = 2, ['c'] = 3, ['d'] = 4, ['e'] = 5, ['f'] = 6, ['g'] = 7,
    ['h'] = 8, ['i'] = 9, ['j'] = 10, ['k'] = 11, ['l'] = 13, ['m'] = 12, ['n'] = 14,
};

/* The send header's index of an extFields key in SEND_MESSAGE (table 0) or SEND_MESSAGE_V2 and
 * SEND_BATCH_MESSAGE (table 1) naming, -1 for a key of neither. V2's names are single letters a..n. */
static int field_index(const Span *key, int *table) {
    if (key->len == 1) {
        *table = 1;
        return v2_field[key->at[0]] - 1;
    }
    /* SendMessageRequestHeader's fields by their SEND_MESSAGE names, in its order (send_header.c
     * send_fields, held equal by the tests through decode_send_header's results): by length,
     * then one fixed-length compare */
    const unsigned char *k = key->at;
    int i = -1;
#define IS(name, index)                                                                      \
    if (memcmp(k, name, sizeof name - 1) == 0) i = index
    switch (key->len) {
    case 4: IS("flag", 7); break;
    case 5: IS("topic", 1); else IS("batch", 11); else IS("bname", 13); break;
    case 7: IS("queueId", 4); else IS("sysFlag", 5); break;
    case 8: IS("unitMode", 10); break;
    case 10: IS("properties", 8); break;
    case 12: IS("defaultTopic", 2); break;
    case 13: IS("producerGroup", 0); else IS("bornTimestamp", 6); break;
    case 14: IS("reconsumeTimes", 9); break;
    case 17: IS("maxReconsumeTimes", 12); break;
    case 21: IS("defaultTopicQueueNums", 3); break;
    }
#undef IS
    *table = 0;
    return i;
}

/* The codes whose extFields are SendMessageRequestHeader's. */
static int is_send(long long code) {
    return code == SEND_MESSAGE || code == SEND_MESSAGE_V2 || code == SEND_BATCH_MESSAGE;
}

/* A member as it came, kept for a header class other than the send's. */
static inline void keep_member(Scan *st, const Span *key, const Span *value) {
    Members *m = &st->members;
    if (m->count < MAX_MEMBERS) {
        m->keys[m->count] = *key;
        m->values[m->count++] = *value;
    } else {
        m->overflow = 1;
    }
}

/* A send header field's value into its place; 0 for a duplicate (the last one wins in the
 * reference: left to it). */
static inline int keep_field(Scan *st, int table, int i, const Span *value, long long number) {
    unsigned bit = 1u << i;
    if (st->ext_seen[table] & bit) return 0;
    st->ext_seen[table] |= bit;
    st->ext[table][i] = *value;
    st->ext_int[table][i] = number;
    return 1;
}

/* One extFields member of any plain form at the cursor (on its key) into the scan; 0 when
 * not plain. */
static int scan_any_member(Cursor *c, Scan *st) {
    Span key, value;
    long long number = 0;
    if (!scan_key(c, &key) || !scan_value(c, &value, MAX_EXT_DIGITS, &number)) return 0;
    if (value.kind == J_NULL) return 0; /* the reference drops the key: left to it */
    int table, i = field_index(&key, &table);
    if (i >= 0 && !keep_field(st, table, i, &value, number)) return 0;
    if (st->keep_members) keep_member(st, &key, &value);
    return 1;
}

/* p[0..4] as `"?":"` (a one-byte key, a string right after its colon: V2's usual member),
 * p[1] a string's plain byte; five bytes known to be there. */
static inline int short_member(const unsigned char *p) {
    uint32_t head, want, keep; /* p[0..3] with p[1] masked out, in the CPU's order */
    const unsigned char quoted[4] = {'"', 0, '"', ':'}, mask[4] = {0xFF, 0, 0xFF, 0xFF};
    memcpy(&head, p, 4);
    memcpy(&want, quoted, 4);
    memcpy(&keep, mask, 4);
    return (head & keep) == want && p[4] == '"' && json_plain_byte[p[1]];
}

/* One extFields member at the cursor into the scan; 0 when not plain. The usual V2 member is
 * read here in place, any other by scan_any_member: the same spans either way. */
static inline int scan_member(Cursor *c, Scan *st) {
    const unsigned char *p = c->p, *end = c->end;
    if (end - p < 5 || !short_member(p)) return scan_any_member(c, st);
    int escaped;
    const unsigned char *close = string_end(p + 5, end, &escaped);
    if (close == NULL) return 0;
    Span value = {p + 5, close - (p + 5), J_STR, escaped};
    int i = v2_field[p[1]] - 1; /* a one-byte key: V2's naming or none */
    if (i >= 0 && !keep_field(st, 1, i, &value, 0)) return 0;
    if (st->keep_members) keep_member(st, &(Span){p + 1, 1, J_STR, 0}, &value);
    c->p = close + 1;
    return 1;
}

/* extFields' object at the cursor (on '{') into the scan; 0 when not plain. */
static int scan_ext(Cursor *c, Scan *st) {
    c->p = ws_end(c->p + 1, c->end);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 1;
    }
    for (;;) {
        if (!scan_member(c, st)) return 0;
        if (c->p < c->end && *c->p == ',') { /* the compact form's next member */
            c->p++;
            continue;
        }
        int next = member_end(c);
        if (next != 1) return next == 2;
    }
}

static Kept kept_language;
static PyObject *java; /* the language when absent */

/* A top-level key's T_ index, T_KEYS for another key. */
static inline int top_index(const Span *key) {
    const unsigned char *k = key->at;
    switch (key->len) {
    case 4:
        return memcmp(k, "code", 4) == 0 ? T_CODE : memcmp(k, "flag", 4) == 0 ? T_FLAG : T_KEYS;
    case 6:
        return memcmp(k, "opaque", 6) == 0 ? T_OPAQUE
               : memcmp(k, "remark", 6) == 0 ? T_REMARK : T_KEYS;
    case 7: return memcmp(k, "version", 7) == 0 ? T_VERSION : T_KEYS;
    case 8: return memcmp(k, "language", 8) == 0 ? T_LANGUAGE : T_KEYS;
    case 9: return memcmp(k, "extFields", 9) == 0 ? T_EXT : T_KEYS;
    case 23: return memcmp(k, "serializeTypeCurrentRPC", 23) == 0 ? T_SERIALIZE : T_KEYS;
    default: return T_KEYS;
    }
}

/* A top-level key written `"name":` at the cursor, as every client writes them: its T_ index,
 * the cursor after the colon and any whitespace; -1 (the cursor unmoved) for anything else,
 * which scan_key and top_index then read (the same key for the same bytes). */
static inline int quoted_top_key(Cursor *c) {
    const unsigned char *p = c->p, *end = c->end;
    if (end - p < 2 || p[0] != '"') return -1;
    Py_ssize_t n;
    int which;
#define NAME(quoted, index)                                                                  \
    n = sizeof quoted - 1;                                                                   \
    which = index;                                                                           \
    if (end - p < n || memcmp(p, quoted, sizeof quoted - 1) != 0) return -1;                 \
    break
    switch (p[1]) {
    case 'c': NAME("\"code\":", T_CODE);
    case 'e': NAME("\"extFields\":", T_EXT);
    case 'f': NAME("\"flag\":", T_FLAG);
    case 'l': NAME("\"language\":", T_LANGUAGE);
    case 'o': NAME("\"opaque\":", T_OPAQUE);
    case 'r': NAME("\"remark\":", T_REMARK);
    case 's': NAME("\"serializeTypeCurrentRPC\":", T_SERIALIZE);
    case 'v': NAME("\"version\":", T_VERSION);
    default: return -1;
    }
#undef NAME
    p += n;
    c->p = p < end && *p <= ' ' ? ws_end(p, end) : p;
    return which;
}

/* One top-level member's value at the cursor; 0 when not plain. */
static int scan_top_value(Cursor *c, int which, Scan *st) {
    Span *s = &st->top[which];
    if (c->p >= c->end) return 0;
    switch (which) {
    case T_CODE:
    case T_OPAQUE:
    case T_FLAG:
    case T_VERSION: {
        long long n;
        if (!scan_integer(c, s, 0, 10, &n)) return 0;
        st->top_int[which] = n > INT32_MAX ? -1 : n;
        return 1;
    }
    case T_LANGUAGE:
    case T_SERIALIZE:
        return *c->p == '"' && scan_string(c, s);
    case T_REMARK:
        return *c->p == '"' ? scan_string(c, s) : scan_literal(c, "null", 4, J_NULL, s);
    default: /* T_EXT */
        return *c->p == '{' && scan_ext(c, st);
    }
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
    if (send_values_init() < 0) return NULL;
    memcpy(command_offset, offsets, sizeof offsets);
    Py_XSETREF(lazy_ext, Py_NewRef(lazy));
    Py_XSETREF(command_type, (PyTypeObject *)Py_NewRef(type));
    Py_RETURN_NONE;
}

/* An int of the value, the one made last time when it is the same: a client's code and
 * version repeat from request to request (ints are immutable: sharing one changes nothing). */
typedef struct {
    PyObject *obj;
    long value;
} KeptLong;

static PyObject *kept_long(KeptLong *kept, long value) {
    if (kept->obj != NULL && kept->value == value) return Py_NewRef(kept->obj);
    PyObject *out = PyLong_FromLong(value);
    if (out != NULL) {
        Py_XSETREF(kept->obj, Py_NewRef(out));
        kept->value = value;
    }
    return out;
}

static KeptLong kept_code, kept_version;
/* the bytes objects of the commands made from a read's spans, taken again once free */
static BytesPool bodies, headers;

/* The command from the scan, Py_None when one of its values is not plain. */
static PyObject *scanned_command(const Scan *st, const ScanInput *in) {
    long code = (long)st->top_int[T_CODE], opaque = (long)st->top_int[T_OPAQUE];
    long flag = (long)st->top_int[T_FLAG], version = (long)st->top_int[T_VERSION];
    int send = is_send(code), at = send ? -1 : header_scan_index(code);
    if (!(st->top_seen & (1u << T_CODE)) || !(st->top_seen & (1u << T_EXT)) || opaque < 0 ||
        flag < 0 || version < 0 || (!send && at < 0))
        Py_RETURN_NONE;
    PyObject *values = send ? send_values(st, code != SEND_MESSAGE)
                            : header_scan_values(at, &st->members);
    if (values == NULL || values == Py_None) return values;
    const Span *remark = &st->top[T_REMARK];
    int has_remark = (st->top_seen & (1u << T_REMARK)) && remark->kind == J_STR;
    PyObject *items[S_SLOTS] = {
        [S_CODE] = kept_long(&kept_code, code),
        [S_LANGUAGE] = !(st->top_seen & (1u << T_LANGUAGE))
                           ? Py_NewRef(java)
                           : kept_str(&kept_language, &st->top[T_LANGUAGE]),
        [S_VERSION] = kept_long(&kept_version, version),
        [S_OPAQUE] = PyLong_FromLong(opaque),
        [S_FLAG] = int_object(flag),
        [S_REMARK] = has_remark ? span_str(remark) : Py_NewRef(Py_None),
        [S_EXT] = Py_NewRef(lazy_ext),
        [S_BODY] = in->body != NULL ? Py_NewRef(in->body)
                                    : reused_bytes(&bodies, in->body_at, in->body_len),
        [S_SERIALIZE] = int_object(0), /* SerializeType.JSON */
        [S_HEADER] = in->header != NULL ? Py_NewRef(in->header)
                                        : reused_bytes(&headers, in->at, in->len),
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

/* The top-level members of the header's object into the scan; 0 when not plain (or the code
 * is one no scan takes: every other request leaves at its code, which Java writes first). */
static int scan_top(Cursor *c, Scan *st) {
    for (;;) {
        int which = quoted_top_key(c);
        if (which < 0) { /* any other spelling of a key: spaces, or not one of ours */
            Span key;
            if (!scan_key(c, &key)) return 0;
            which = top_index(&key);
        }
        if (which == T_KEYS || (st->top_seen & (1u << which))) return 0;
        st->top_seen |= 1u << which;
        if (!scan_top_value(c, which, st)) return 0;
        if (which == T_CODE) {
            long long code = st->top_int[T_CODE];
            if (is_send(code))
                st->keep_members = 0; /* only the send header's fields are read */
            else if (header_scan_index((long)code) < 0)
                return 0;
        }
        if (c->p < c->end && *c->p == ',') { /* the compact form's next member */
            c->p++;
            continue;
        }
        int next = member_end(c);
        if (next != 1) return next == 2;
    }
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
    Scan st;
    st.top_int[T_CODE] = st.top_int[T_OPAQUE] = st.top_int[T_FLAG] = st.top_int[T_VERSION] = 0;
    st.top_seen = st.ext_seen[0] = st.ext_seen[1] = 0;
    st.keep_members = 1;
    st.members.count = st.members.overflow = 0;
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{') Py_RETURN_NONE;
    c.p++;
    if (!scan_top(&c, &st)) Py_RETURN_NONE;
    skip_ws(&c);
    if (c.p != c.end) Py_RETURN_NONE;
    return scanned_command(&st, in);
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
