/* A batch put's plan (broker/store/batch_records.py python_batch_plan, the reference): each
 * entry of a SEND_BATCH_MESSAGE body checked, its record's size (its properties followed by
 * the batch's) and body CRC, for AppendCursor.put_batch_dispatch to pack. */
#include "store.h"
#include "batch_body.h"

/* batch_plan(view, batch properties bytes, fixed size, max body, max properties, error_type)
 *   -> ((view, batch properties, plan), count, total, refused, first body length,
 *       refused entry's properties or None, refused entry's body length)
 * plan: a PlanEntry per entry, up to the first whose body or properties (its own followed by
 * the batch's, a \x02 between when both are non-empty and its own does not end with one) are
 * over the limit (`refused`, else -1), for AppendCursor.put_batch_dispatch to pack straight
 * from the request's body: no Python object per entry. The whole body is checked either way;
 * a malformed one raises error_type (MessageDecodeError), as python_batch_plan does. */
PyObject *batch_plan(PyObject *self, PyObject *args) {
    PyObject *view, *error_type, *batch_props;
    Py_ssize_t fixed_size, max_body, max_props;
    if (!PyArg_ParseTuple(args, "O!O!nnnO", &PyMemoryView_Type, &view, &PyBytes_Type,
                          &batch_props, &fixed_size, &max_body, &max_props, &error_type))
        return NULL;
    const Py_buffer *buf = byte_view(view);
    if (buf == NULL) return NULL;
    const unsigned char *data = (const unsigned char *)buf->buf;
    Py_ssize_t batch_len = PyBytes_GET_SIZE(batch_props);
    const char *batch_text = PyBytes_AS_STRING(batch_props);
    /* an entry is at least BATCH_ENTRY_FIXED_BYTES: this bounds the plan */
    Py_ssize_t room = buf->len / BATCH_ENTRY_FIXED_BYTES + 1;
    PyObject *plan = PyBytes_FromStringAndSize(NULL, room * (Py_ssize_t)sizeof(PlanEntry));
    if (plan == NULL) return NULL;
    PlanEntry *out = (PlanEntry *)PyBytes_AS_STRING(plan);
    Py_ssize_t pos = 0, total = 0, refused = -1, count = 0, first_body = 0;
    PyObject *refused_props = NULL, *result = NULL;
    while (pos < buf->len) {
        BatchEntry e;
        if (parse_batch_entry(data, buf->len, pos, error_type, &e, NULL) < 0) goto done;
        pos = e.next;
        if (refused >= 0) continue; /* the rest is only checked, as the reference decodes it */
        int separate = e.props_length > 0 && batch_len > 0 &&
                       data[e.props_at + e.props_length - 1] != '\x02';
        Py_ssize_t props_length = e.props_length + separate + batch_len;
        Py_ssize_t size = fixed_size + e.body_length + props_length;
        PlanEntry *p = &out[count++];
        *p = (PlanEntry){
            .body_at = e.body_at, .body_length = e.body_length, .props_at = e.props_at,
            .props_length = e.props_length, .separate = separate, .flag = e.flag,
            .size = size,
            .crc = body_crc(data + e.body_at, (size_t)e.body_length) & 0x7FFFFFFFu,
        };
        if (count == 1) first_body = e.body_length;
        total += size;
        if (props_length > max_props || e.body_length > max_body) {
            refused = count - 1;
            refused_props = PyBytes_FromStringAndSize(NULL, props_length);
            if (refused_props == NULL) goto done;
            char *q = PyBytes_AS_STRING(refused_props);
            memcpy(q, data + e.props_at, e.props_length);
            if (separate) q[e.props_length] = '\x02';
            memcpy(q + e.props_length + separate, batch_text, batch_len);
        }
    }
    Py_ssize_t refused_body = refused >= 0 ? out[refused].body_length : 0;
    if (_PyBytes_Resize(&plan, count * (Py_ssize_t)sizeof(PlanEntry)) < 0) goto done;
    result = Py_BuildValue("((OOO)nnnnOn)", view, batch_props, plan, count, total, refused,
                           first_body, refused_props ? refused_props : Py_None, refused_body);
done:
    Py_XDECREF(plan);
    Py_XDECREF(refused_props);
    return result;
}
