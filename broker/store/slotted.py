"""Slotted: a base for the store's objects whose attributes plain_pass reads in C.

A subclass lists those attributes in ``__slots__``; the rest stay ordinary instance attributes
(this base gives the subclass its ``__dict__`` and weak references). Python reads and sets a
slot as fast as a dict attribute, and broker/store/native/store.h's ``slot_get``/``slot_set``
read it at its offset once the type's own attribute lookup names that slot's descriptor,
where ``PyObject_GetAttr`` took a generic lookup per read (~70 a plain pass, issue 27,
passstate round). The lookup runs on every read, so a subclass or a later change that puts
a property or anything else in the slot's place is read as Python would read it.
"""

from __future__ import annotations


class Slotted:
    """See the module's docstring. No ``__slots__`` here: that keeps ``__dict__``."""
