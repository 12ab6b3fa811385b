/* The fields dispatch reads from a message's properties: encoded (a record read back) or as a
 * dict (a message being put). */
#include "store.h"

/* dispatch_fields(properties text) -> (tags code, KEYS, UNIQ_KEY, DELAY or None)
 * What dispatch needs of an encoded properties string (NAME \x01 VALUE, \x02-separated), read
 * as Java's string2messageProperties leaves it: a name runs to the first \x01 of its segment,
 * empty values count as absent, a later duplicate wins. The tags code is the TAGS value's
 * String.hashCode (0 without one). The reference: broker/store/batch_records.py
 * python_dispatch_fields. */
PyObject *dispatch_fields(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "dispatch_fields takes a str");
        return NULL;
    }
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(arg, &len);
    if (text == NULL) return NULL;
    return dispatch_fields_of(text, len);
}

/* [start, end) of the last non-empty value of TAGS, KEYS, UNIQ_KEY and DELAY (NULL: none) in
 * a properties string's UTF-8 bytes. */
static void scan_dispatch_fields(const char *text, Py_ssize_t len, const char *found[4][2]) {
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
}

/* The TAGS value's String.hashCode (0 without one) into *code; -1 when it is not UTF-8. An
 * ASCII value (the usual tag) is hashed from its bytes, which are its UTF-16 units, with no
 * str made for it (one per plain send otherwise). */
static int tags_code_of(const char *start, const char *end, long *code) {
    *code = 0;
    if (start == NULL) return 0;
    uint32_t h = 0;
    const unsigned char *p = (const unsigned char *)start;
    for (; p < (const unsigned char *)end; p++) {
        if (*p >= 0x80) break;
        h = 31u * h + *p;
    }
    if (p == (const unsigned char *)end) {
        *code = (long)(int32_t)h;
        return 0;
    }
    PyObject *tags = PyUnicode_DecodeUTF8(start, end - start, NULL);
    if (tags == NULL) return -1;
    *code = (long)(int32_t)unsigned_java_hash(tags);
    Py_DECREF(tags);
    return 0;
}

static int ascii_span(const char *const found[2]) {
    for (const char *p = found[0]; p != NULL && p < found[1]; p++)
        if ((unsigned char)*p >= 0x80) return 0;
    return 1;
}

/* dispatch_fields_of without its objects, for a batch's records (batch_dispatch.c): the tags
 * code into *tags_code and the KEYS and UNIQ_KEY values' [start, end) into keys and uniq
 * (NULL: absent), when each value dispatch_fields_of would decode (KEYS, UNIQ_KEY, DELAY) is
 * ASCII, so its bytes are its str's UTF-16 units: 1. 0 when one is not (the caller takes
 * dispatch_fields_of, which decodes and judges it); -1 with its error when TAGS is not UTF-8,
 * as dispatch_fields_of fails first on it. */
int dispatch_spans(const char *text, Py_ssize_t len, long *tags_code, const char *keys[2],
                   const char *uniq[2]) {
    const char *found[4][2] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    scan_dispatch_fields(text, len, found);
    if (tags_code_of(found[0][0], found[0][1], tags_code) < 0) return -1;
    if (!ascii_span(found[1]) || !ascii_span(found[2]) || !ascii_span(found[3])) return 0;
    keys[0] = found[1][0];
    keys[1] = found[1][1];
    uniq[0] = found[2][0];
    uniq[1] = found[2][1];
    return 1;
}

/* A found value as a str: "" (the shared empty str) when absent. */
static PyObject *value_or_empty(const char *const found[2]) {
    if (found[0] == NULL) return PyUnicode_New(0, 0);
    return PyUnicode_DecodeUTF8(found[0], found[1] - found[0], NULL);
}

/* What both readers below take from a properties string: the tags code, KEYS and UNIQ_KEY as
 * strs (new references), and found[3] the DELAY value's span. -1 with nothing held on error. */
static int key_fields(const char *text, Py_ssize_t len, const char *found[4][2],
                      long *tags_code, PyObject **keys, PyObject **uniq) {
    scan_dispatch_fields(text, len, found);
    if (tags_code_of(found[0][0], found[0][1], tags_code) < 0) return -1;
    *keys = value_or_empty(found[1]);
    if (*keys == NULL) return -1;
    *uniq = value_or_empty(found[2]);
    if (*uniq == NULL) {
        Py_CLEAR(*keys);
        return -1;
    }
    return 0;
}

/* dispatch_fields over the UTF-8 bytes of a properties string. */
PyObject *dispatch_fields_of(const char *text, Py_ssize_t len) {
    const char *found[4][2] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    long tags_code;
    PyObject *keys, *uniq;
    if (key_fields(text, len, found, &tags_code, &keys, &uniq) < 0) return NULL;
    PyObject *delay = found[3][0] == NULL
                          ? Py_NewRef(Py_None)
                          : PyUnicode_DecodeUTF8(found[3][0], found[3][1] - found[3][0], NULL);
    if (delay == NULL) {
        Py_DECREF(keys);
        Py_DECREF(uniq);
        return NULL;
    }
    return Py_BuildValue("lNNN", tags_code, keys, uniq, delay);
}

/* The UTF-8 of a key or value as f"{x}" formats it: a str as it is, anything else by str(). */
static PyObject *as_text(PyObject *item, const char **utf8, Py_ssize_t *length) {
    PyObject *text = PyUnicode_Check(item) ? Py_NewRef(item) : PyObject_Str(item);
    if (text == NULL) return NULL;
    *utf8 = PyUnicode_AsUTF8AndSize(text, length);
    if (*utf8 == NULL) {
        Py_DECREF(text);
        return NULL;
    }
    return text;
}

/* (encoded, tags code, keys, uniq), stealing keys and uniq (on failure too): what
 * Py_BuildValue("OlNN") makes, without parsing its format at every plain send. */
static PyObject *fields_tuple(PyObject *encoded, long tags_code, PyObject *keys, PyObject *uniq) {
    PyObject *code = PyLong_FromLong(tags_code), *out = code == NULL ? NULL : PyTuple_New(4);
    if (out == NULL) {
        Py_XDECREF(code);
        Py_DECREF(keys);
        Py_DECREF(uniq);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, Py_NewRef(encoded));
    PyTuple_SET_ITEM(out, 1, code);
    PyTuple_SET_ITEM(out, 2, keys);
    PyTuple_SET_ITEM(out, 3, uniq);
    return out;
}

/* message_fields_of for a record's property bytes already encoded (a plain send's, made from
 * its sent string: remoting/native/codec/plain_send.c): the bytes as they are, what dispatch
 * needs read from them as a record read back is read. */
static PyObject *encoded_fields_of(PyObject *encoded) {
    /* dispatch_fields_of's values straight into the result (no tuple between), DELAY only
     * checked to be UTF-8 as there (a plain send carries none) */
    const char *found[4][2] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    long tags_code;
    PyObject *keys, *uniq;
    if (key_fields(PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded), found, &tags_code,
                   &keys, &uniq) < 0)
        return NULL;
    if (found[3][0] != NULL) {
        PyObject *delay = PyUnicode_DecodeUTF8(found[3][0], found[3][1] - found[3][0], NULL);
        if (delay == NULL) {
            Py_DECREF(keys);
            Py_DECREF(uniq);
            return NULL;
        }
        Py_DECREF(delay);
    }
    return fields_tuple(encoded, tags_code, keys, uniq);
}

/* message_fields_of(properties) -> (encoded properties, tags code, KEYS, UNIQ_KEY)
 * A single message's properties dict as its record stores it (name \x01 value, \x02-separated,
 * None values left out), with what dispatch needs of it: the TAGS value's String.hashCode (0
 * without one), KEYS and UNIQ_KEY ("" without). Bytes are taken as the record's encoded
 * properties (encoded_fields_of). The reference: broker/store/append_cursor.py message_fields. */
PyObject *message_fields_of(PyObject *arg) {
    if (PyBytes_CheckExact(arg)) return encoded_fields_of(arg);
    if (!PyDict_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "message_fields takes a dict");
        return NULL;
    }
    Py_ssize_t capacity = 2 * PyDict_GET_SIZE(arg) + 2;
    PyObject **texts = PyMem_Calloc(capacity, sizeof(PyObject *));
    const char **utf8 = PyMem_Calloc(capacity, sizeof(char *));
    Py_ssize_t *lengths = PyMem_Calloc(capacity, sizeof(Py_ssize_t));
    PyObject *result = NULL, *encoded = NULL, *tags = NULL, *keys = NULL, *uniq = NULL;
    Py_ssize_t count = 0, total = 0, position = 0;
    PyObject *key, *value;
    if (texts == NULL || utf8 == NULL || lengths == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    while (PyDict_Next(arg, &position, &key, &value)) {
        if (PyUnicode_Check(key)) {
            if (PyUnicode_CompareWithASCIIString(key, "TAGS") == 0) tags = value;
            else if (PyUnicode_CompareWithASCIIString(key, "KEYS") == 0) keys = value;
            else if (PyUnicode_CompareWithASCIIString(key, "UNIQ_KEY") == 0) uniq = value;
        }
        if (value == Py_None) continue;
        if (count + 2 > capacity) {
            PyErr_SetString(PyExc_RuntimeError, "properties changed size during encoding");
            goto done;
        }
        texts[count] = as_text(key, &utf8[count], &lengths[count]);
        if (texts[count] == NULL) goto done;
        count++;
        texts[count] = as_text(value, &utf8[count], &lengths[count]);
        if (texts[count] == NULL) goto done;
        total += lengths[count - 1] + 1 + lengths[count] + (count > 1 ? 1 : 0);
        count++;
    }
    encoded = PyBytes_FromStringAndSize(NULL, total);
    if (encoded == NULL) goto done;
    char *out = PyBytes_AS_STRING(encoded);
    for (Py_ssize_t i = 0; i < count; i += 2) {
        if (i > 0) *out++ = '\x02';
        memcpy(out, utf8[i], lengths[i]);
        out += lengths[i];
        *out++ = '\x01';
        memcpy(out, utf8[i + 1], lengths[i + 1]);
        out += lengths[i + 1];
    }
    /* as `value or ""` reads them: an absent, None or empty value counts as none */
    int has_tags = tags == NULL ? 0 : PyObject_IsTrue(tags);
    int has_keys = keys == NULL ? 0 : PyObject_IsTrue(keys);
    int has_uniq = uniq == NULL ? 0 : PyObject_IsTrue(uniq);
    if (has_tags < 0 || has_keys < 0 || has_uniq < 0) goto done;
    long tags_code = 0;
    if (has_tags) {
        if (!PyUnicode_Check(tags)) {
            PyErr_SetString(PyExc_TypeError, "the TAGS property must be a str");
            goto done;
        }
        tags_code = (long)(int32_t)unsigned_java_hash(tags);
    }
    PyObject *empty = PyUnicode_New(0, 0);
    if (empty == NULL) goto done;
    result = Py_BuildValue("OlOO", encoded, tags_code, has_keys ? keys : empty,
                           has_uniq ? uniq : empty);
    Py_DECREF(empty);
done:
    if (texts != NULL)
        for (Py_ssize_t i = 0; i < count; i++) Py_XDECREF(texts[i]);
    PyMem_Free(texts);
    PyMem_Free(utf8);
    PyMem_Free(lengths);
    Py_XDECREF(encoded);
    return result;
}
