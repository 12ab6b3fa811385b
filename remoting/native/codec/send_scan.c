/* scan_send_command: a SEND_MESSAGE(_V2) request's JSON command header read straight from its
 * bytes into the command's values and SendMessageRequestHeader's, building no dict (issue 27).
 *
 * A fast path, not a second decoder: the reference is remoting/command.py's orjson path
 * (orjson, plain_command, the Python checks) followed by decode_send_header (send_header.c) on
 * the extFields that path builds. The scan takes only the strict form real clients write and
 * returns None for anything else, so the reference judges it:
 * - one JSON object; whitespace (space, tab, CR, LF) between tokens as JSON allows it;
 * - top-level keys code, opaque, flag, version (integers in [0, 2^31), no sign, no leading
 *   zero, no fraction or exponent), language (a string), remark (a string or null),
 *   serializeTypeCurrentRPC (a string, ignored as the reference ignores it), extFields (an
 *   object); each at most once, code and extFields present, no other key; code 10 or 310;
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
#include "codec.h"
#include <limits.h>
#include <string.h>

#define SEND_MESSAGE 10
#define SEND_MESSAGE_V2 310
#define SEND_FIELDS 14
#define MAX_EXT_DIGITS 18 /* any such integer is exact in orjson and in a long long */

typedef enum { F_STR, F_TOPIC, F_INT, F_SYSFLAG, F_LONG, F_BOOL } FieldType;
typedef enum { J_NONE, J_STR, J_INT, J_TRUE, J_FALSE, J_NULL } JsonKind;

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

/* A scanned value: a string's bytes between its quotes, or an integer's digits. */
typedef struct {
    const unsigned char *at;
    Py_ssize_t len;
    JsonKind kind;
    int escaped;
} Span;

typedef struct {
    const unsigned char *p, *end;
} Cursor;

static void skip_ws(Cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
        c->p++;
}

static int hex_value(unsigned char h) {
    if (h >= '0' && h <= '9') return h - '0';
    if (h >= 'a' && h <= 'f') return h - 'a' + 10;
    if (h >= 'A' && h <= 'F') return h - 'A' + 10;
    return -1;
}

/* The \uXXXX at p (p[0] == 'u', 4 bytes checked present) as one ASCII byte, else -1. */
static int ascii_escape(const unsigned char *p) {
    int a = hex_value(p[1]), b = hex_value(p[2]), x = hex_value(p[3]), y = hex_value(p[4]);
    if (a != 0 || b != 0 || x < 0 || x > 7 || y < 0) return -1;
    return x * 16 + y;
}

static int simple_escape(unsigned char e) {
    switch (e) {
    case '"': return '"';
    case '\\': return '\\';
    case '/': return '/';
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    default: return -1;
    }
}

/* A string at the cursor (on its opening quote) into *s; 0 when not in the strict form. */
static int scan_string(Cursor *c, Span *s) {
    const unsigned char *p = c->p + 1, *end = c->end;
    s->at = p;
    s->kind = J_STR;
    s->escaped = 0;
    while (p < end) {
        unsigned char ch = *p;
        if (ch == '"') {
            s->len = p - s->at;
            c->p = p + 1;
            return 1;
        }
        if (ch < 0x20 || ch > 0x7E) return 0;
        if (ch == '\\') {
            if (end - p < 2) return 0;
            s->escaped = 1;
            if (p[1] == 'u') {
                if (end - p < 6 || ascii_escape(p + 1) < 0) return 0;
                p += 6;
            } else {
                if (simple_escape(p[1]) < 0) return 0;
                p += 2;
            }
            continue;
        }
        p++;
    }
    return 0;
}

/* An integer at the cursor: -?(0|[1-9][0-9]*) of at most max_digits digits, followed by
 * neither a fraction nor an exponent; 0 when not one. */
static int scan_integer(Cursor *c, Span *s, int allow_sign, int max_digits) {
    const unsigned char *p = c->p, *end = c->end;
    s->at = p;
    s->kind = J_INT;
    s->escaped = 0;
    if (p < end && *p == '-') {
        if (!allow_sign) return 0;
        p++;
    }
    const unsigned char *digits = p;
    while (p < end && *p >= '0' && *p <= '9') p++;
    Py_ssize_t n = p - digits;
    if (n == 0 || n > max_digits || (n > 1 && digits[0] == '0')) return 0;
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return 0;
    s->len = p - s->at;
    c->p = p;
    return 1;
}

static int scan_literal(Cursor *c, const char *word, JsonKind kind, Span *s) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
    s->at = c->p;
    s->len = (Py_ssize_t)n;
    s->kind = kind;
    s->escaped = 0;
    c->p += n;
    return 1;
}

/* A value of the kinds the scan knows (string, integer, true, false, null). */
static int scan_value(Cursor *c, Span *s, int max_digits) {
    if (c->p >= c->end) return 0;
    switch (*c->p) {
    case '"': return scan_string(c, s);
    case 't': return scan_literal(c, "true", J_TRUE, s);
    case 'f': return scan_literal(c, "false", J_FALSE, s);
    case 'n': return scan_literal(c, "null", J_NULL, s);
    default: return scan_integer(c, s, 1, max_digits);
    }
}

/* `"key" :` at the cursor, the key unescaped; 0 when not one. */
static int scan_key(Cursor *c, Span *key) {
    skip_ws(c);
    if (c->p >= c->end || *c->p != '"' || !scan_string(c, key) || key->escaped) return 0;
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':') return 0;
    c->p++;
    skip_ws(c);
    return 1;
}

/* After a member: 1 at ',' (consumed), 2 at '}' (consumed), 0 otherwise. */
static int member_end(Cursor *c) {
    skip_ws(c);
    if (c->p >= c->end) return 0;
    unsigned char ch = *c->p++;
    return ch == ',' ? 1 : ch == '}' ? 2 : 0;
}

static int key_is(const Span *key, const char *name) {
    /* the first byte first: names differ there mostly, and a name ends at its NUL */
    return key->len > 0 && key->at[0] == (unsigned char)name[0] &&
           strncmp((const char *)key->at, name, (size_t)key->len) == 0 && name[key->len] == 0;
}

/* The send header's index of an extFields key in SEND_MESSAGE (table 0) or SEND_MESSAGE_V2
 * (table 1) naming, -1 for a key of neither. V2's names are single letters a..n. */
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

/* extFields' object at the cursor (on '{') into the two tables of spans; 0 when not plain. */
static int scan_ext(Cursor *c, Span ext[2][SEND_FIELDS]) {
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

/* A new ASCII str of a string span, its escapes decoded. */
static PyObject *span_str(const Span *s) {
    if (!s->escaped) {
        PyObject *out = PyUnicode_New(s->len, 127);
        if (out != NULL) memcpy(PyUnicode_1BYTE_DATA(out), s->at, (size_t)s->len);
        return out;
    }
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < s->len; i++, n++)
        if (s->at[i] == '\\') i += s->at[i + 1] == 'u' ? 5 : 1;
    PyObject *out = PyUnicode_New(n, 127);
    if (out == NULL) return NULL;
    Py_UCS1 *w = PyUnicode_1BYTE_DATA(out);
    for (Py_ssize_t i = 0; i < s->len; i++) {
        const unsigned char *p = s->at + i;
        if (*p != '\\') {
            *w++ = *p;
        } else if (p[1] == 'u') {
            *w++ = (Py_UCS1)ascii_escape(p + 1);
            i += 5;
        } else {
            *w++ = (Py_UCS1)simple_escape(p[1]);
            i += 1;
        }
    }
    return out;
}

/* The last few strings made for one field, kept: a producer group, topic or language repeats
 * from request to request, and a kept str is not allocated again and keeps its hash (the
 * valid-topic set and the topic table look it up). */
#define KEPT 4
typedef struct {
    PyObject *strs[KEPT];
    int next;
} Kept;

static PyObject *kept_str(Kept *kept, const Span *s) {
    if (s->escaped) return span_str(s);
    for (int i = 0; i < KEPT; i++) {
        PyObject *k = kept->strs[i];
        if (k != NULL && PyUnicode_GET_LENGTH(k) == s->len &&
            memcmp(PyUnicode_1BYTE_DATA(k), s->at, (size_t)s->len) == 0)
            return Py_NewRef(k);
    }
    PyObject *out = span_str(s);
    if (out == NULL) return NULL;
    Py_XSETREF(kept->strs[kept->next], Py_NewRef(out));
    kept->next = (kept->next + 1) % KEPT;
    return out;
}

static Kept kept_language, kept_fields[SEND_FIELDS];
static PyObject *java; /* the language when absent */

/* What field_value gives for a value the reference must judge (None is a value). */
#define NOT_PLAIN Py_NotImplemented

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
static int scan_top_value(Cursor *c, int which, Span *s, Span ext[2][SEND_FIELDS]) {
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
        return *c->p == '{' && scan_ext(c, ext);
    }
}

/* A top-level integer span (digits only, at most 10) as a Java int, -1 past one. */
static long top_int(const Span *s) {
    if (s->kind == J_NONE) return 0;
    long long n = 0;
    for (Py_ssize_t i = 0; i < s->len; i++) n = n * 10 + (s->at[i] - '0');
    return n > INT32_MAX ? -1 : (long)n;
}

/* The command's values from the scanned spans, Py_None when one is not plain. */
static PyObject *command_values(Span top[T_KEYS], Span ext[2][SEND_FIELDS]) {
    long code = top_int(&top[T_CODE]), opaque = top_int(&top[T_OPAQUE]);
    long flag = top_int(&top[T_FLAG]), version = top_int(&top[T_VERSION]);
    if (top[T_CODE].kind == J_NONE || top[T_EXT].kind == J_NONE || opaque < 0 || flag < 0 ||
        version < 0 || (code != SEND_MESSAGE && code != SEND_MESSAGE_V2))
        Py_RETURN_NONE;
    PyObject *values = send_values(ext[code == SEND_MESSAGE_V2]);
    if (values == NULL || values == Py_None) return values;
    PyObject *language = top[T_LANGUAGE].kind == J_NONE
                             ? Py_NewRef(java)
                             : kept_str(&kept_language, &top[T_LANGUAGE]);
    PyObject *remark = top[T_REMARK].kind == J_STR ? span_str(&top[T_REMARK])
                                                   : Py_NewRef(Py_None);
    PyObject *out = PyTuple_New(7);
    PyObject *items[7] = {
        PyLong_FromLong(code), language, PyLong_FromLong(version), PyLong_FromLong(opaque),
        PyLong_FromLong(flag), remark, values,
    };
    int ok = out != NULL;
    for (int i = 0; i < 7; i++) {
        if (items[i] == NULL) ok = 0;
        if (out != NULL) PyTuple_SET_ITEM(out, i, items[i]);
        else Py_XDECREF(items[i]);
    }
    if (!ok) {
        Py_XDECREF(out);
        return NULL;
    }
    return out;
}

/* scan_send_command(header: bytes) -> (code, language, version, opaque, flag, remark,
 * send_values) | None */
PyObject *scan_send_command(PyObject *self, PyObject *header) {
    if (!PyBytes_CheckExact(header)) Py_RETURN_NONE;
    if (java == NULL && (java = PyUnicode_InternFromString("JAVA")) == NULL) return NULL;
    Cursor c = {(const unsigned char *)PyBytes_AS_STRING(header), NULL};
    c.end = c.p + PyBytes_GET_SIZE(header);
    Span top[T_KEYS], ext[2][SEND_FIELDS];
    memset(top, 0, sizeof top);
    memset(ext, 0, sizeof ext);
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{') Py_RETURN_NONE;
    c.p++;
    for (;;) {
        Span key;
        if (!scan_key(&c, &key)) Py_RETURN_NONE;
        int which = 0;
        while (which < T_KEYS && !key_is(&key, top_names[which])) which++;
        if (which == T_KEYS || top[which].kind != J_NONE) Py_RETURN_NONE;
        if (!scan_top_value(&c, which, &top[which], ext)) Py_RETURN_NONE;
        if (which == T_CODE) { /* every other request leaves here (Java writes code first) */
            long code = top_int(&top[T_CODE]);
            if (code != SEND_MESSAGE && code != SEND_MESSAGE_V2) Py_RETURN_NONE;
        }
        int next = member_end(&c);
        if (next == 0) Py_RETURN_NONE;
        if (next == 2) break;
    }
    skip_ws(&c);
    if (c.p != c.end) Py_RETURN_NONE;
    return command_values(top, ext);
}
