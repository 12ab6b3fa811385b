/* ConsumeQueue units (broker/store/consume_queue.py python_pack_cq_units). */
#include "store.h"

/* pack_cq_units(buffer, position, requests) -> None
 * The units (phys offset int64, size int32, tags code int64) of DispatchRequests, back to back
 * from `position`; nothing written unless all fit. */
PyObject *pack_cq_units(PyObject *self, PyObject *args) {
    Py_buffer out;
    Py_ssize_t pos;
    PyObject *requests;
    if (!PyArg_ParseTuple(args, "w*nO", &out, &pos, &requests)) return NULL;
    PyObject *result = NULL;
    PyObject *seq = PySequence_Fast(requests, "requests must be a sequence");
    if (seq == NULL) goto done;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    if (pos < 0 || pos > out.len || count > (out.len - pos) / CQ_UNIT_SIZE) {
        PyErr_Format(PyExc_IndexError, "%zd units at %zd do not fit in %zd bytes", count, pos,
                     out.len);
        goto done;
    }
    /* Two passes: every unit is checked before the first byte is written (the Python twin
     * packs all of them in one struct call, which writes nothing when one is out of range). */
    for (int writing = 0; writing < 2; writing++) {
        unsigned char *p = (unsigned char *)out.buf + pos;
        for (Py_ssize_t i = 0; i < count; i++, p += CQ_UNIT_SIZE) {
            PyObject *request = PySequence_Fast_GET_ITEM(seq, i);
            if (!PyTuple_Check(request) || PyTuple_GET_SIZE(request) != DR_FIELDS) {
                PyErr_SetString(PyExc_TypeError, "a request is a DispatchRequest");
                goto done;
            }
            long long phys = as_long_long(PyTuple_GET_ITEM(request, DR_PHYS_OFFSET));
            long long size = as_long_long(PyTuple_GET_ITEM(request, DR_SIZE));
            long long tags = as_long_long(PyTuple_GET_ITEM(request, DR_TAGS_CODE));
            if (PyErr_Occurred()) goto done;
            if (size < INT32_MIN || size > INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "a unit's size is an int32");
                goto done;
            }
            if (writing) {
                put_i64(p, phys);
                put_i32(p + 8, (int32_t)size);
                put_i64(p + 12, tags);
            }
        }
    }
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(seq);
    PyBuffer_Release(&out);
    return result;
}
