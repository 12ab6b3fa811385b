/* Attribute names interned once, and a call site's cache of a __slots__ member's offset:
 * shared by the C modules that read Python objects' attributes on a hot path (the store's
 * and the codec's), so that each reads them the one way. */
#ifndef ROCKETMQ_TRIO_SLOTS_H
#define ROCKETMQ_TRIO_SLOTS_H

#include "record_layout.h"

#include <structmember.h>

/* A C file's attribute names, interned once: names[i] spelled spelled[i], the last one set
 * only when all are (what the callers test). 0, or -1 with the error. */
static inline int intern_table(PyObject **names, const char *const *spelled, int count) {
    if (names[count - 1] != NULL) return 0;
    for (int i = 0; i < count; i++)
        if (names[i] == NULL && (names[i] = PyUnicode_InternFromString(spelled[i])) == NULL)
            return -1;
    return 0;
}

/* o.<name> as PyObject_GetAttr gives it (a new reference, or NULL with the error), read at
 * its slot's offset when the type's own lookup (CPython's method cache) names a __slots__
 * member there, as the generic path would then read (broker/store/slotted.py says which of
 * the store's objects are slotted and why). Anything else in that place (a property, a
 * descriptor of another kind, an instance attribute, an own __getattribute__) or an empty
 * slot goes the generic way, so it is never read other than as Python reads it. */
static inline PyMemberDef *slot_member(PyTypeObject *type, PyObject *name) {
    PyObject *descr = _PyType_Lookup(type, name); /* borrowed */
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) return NULL;
    PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
    return m->type == T_OBJECT_EX && !(m->flags & (READONLY | PY_AUDIT_READ)) ? m : NULL;
}

/* Where a call site last found (type, name)'s slot, as the interpreter's own attribute caches
 * keep it: valid while the type's version tag is the one it was found under. CPython gives a
 * type a new tag whenever anything in its MRO changes (a class attribute set, a base's, its
 * __getattribute__ or __setattr__), and never reuses one, so a hit is what the lookup would
 * find. Two entries: a site may see two types (a name read on two kinds of object). */
typedef struct {
    PyTypeObject *type; /* compared only, never dereferenced from here */
    PyObject *name;     /* the same */
    unsigned int version;
    Py_ssize_t offset; /* 0: not a slot there, the generic path */
} SlotEntry;
typedef struct {
    SlotEntry entries[2];
    int next;
} SlotCache;

static inline Py_ssize_t slot_offset(PyObject *o, PyObject *name, SlotCache *c, int setting) {
    PyTypeObject *type = Py_TYPE(o);
    for (int i = 0; i < 2; i++) {
        SlotEntry *e = &c->entries[i];
        /* PyType_Modified zeroes the tag with the valid-tag flag, so the tag alone says */
        if (e->type == type && e->name == name && e->version != 0 &&
            type->tp_version_tag == e->version)
            return e->offset;
    }
    int generic = setting ? type->tp_setattro == PyObject_GenericSetAttr
                          : type->tp_getattro == PyObject_GenericGetAttr;
    PyMemberDef *m = generic ? slot_member(type, name) : NULL; /* the lookup tags the type */
    SlotEntry *e = &c->entries[c->next];
    c->next ^= 1;
    e->type = type;
    e->name = name;
    e->version = type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG ? type->tp_version_tag : 0;
    e->offset = m == NULL ? 0 : m->offset;
    return e->offset;
}

static inline PyObject *slot_get(PyObject *o, PyObject *name, SlotCache *c) {
    Py_ssize_t offset = slot_offset(o, name, c, 0);
    PyObject *v = offset == 0 ? NULL : *(PyObject **)((char *)o + offset);
    return v != NULL ? Py_NewRef(v) : PyObject_GetAttr(o, name);
}

/* o.<name> = v as PyObject_SetAttr does it, into the slot as slot_get reads it. */
static inline int slot_set(PyObject *o, PyObject *name, PyObject *v, SlotCache *c) {
    Py_ssize_t offset = slot_offset(o, name, c, 1);
    if (offset == 0) return PyObject_SetAttr(o, name, v);
    PyObject **at = (PyObject **)((char *)o + offset), *was = *at;
    *at = Py_NewRef(v);
    Py_XDECREF(was);
    return 0;
}

#endif
