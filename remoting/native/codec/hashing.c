/* Java's String.hashCode (remoting/java_hash.py python_java_hash). */
#include "codec.h"

PyObject *java_hash(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "java_hash takes a str, not %.100s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    return PyLong_FromLong((long)(int32_t)unsigned_java_hash(arg));
}
