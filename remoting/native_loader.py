"""Loading the native extensions: each optional, each checked, each switched off on its own.

setup.py builds three extension modules. Two hold C twins of hot loops, whose pure-Python
versions stay the reference the tests hold them to; the third is a thread with no twin:

====================  ==================================  =====================================
module                loaded by                           off with (or ROCKETMQ_TRIO_PURE=1)
====================  ==================================  =====================================
remoting._codec       remoting/codec_native.py            ROCKETMQ_TRIO_PURE_CODEC=1
broker.store._native  broker/store/store_native.py        ROCKETMQ_TRIO_PURE_STORE=1
remoting._sender      remoting/sender.py                  ROCKETMQ_TRIO_NO_SENDER=1
====================  ==================================  =====================================

A module is used only when it imports, its ABI_VERSION is the one its Python side was written
for, it has every name that side calls, and every constant it exports equals the Python
definition (layout sizes, flag bits, the field order of the tuples it fills by position).
Otherwise that side runs its Python code and one log line per process says why: a WARNING when
the module is missing or stale (``make install`` builds it again), DEBUG when it was switched off
on purpose (a server's stderr carries nothing it did not ask for). One module's trouble never
turns another off.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Iterable, Mapping
from types import ModuleType

log = logging.getLogger(__name__)

PURE_ALL = "ROCKETMQ_TRIO_PURE"


def switched_off(switch: str) -> bool:
    """Whether the environment asks for the Python code instead of this module."""
    return os.environ.get(PURE_ALL) == "1" or os.environ.get(switch) == "1"


def stale(
    module: object, abi_version: int, names: Iterable[str], constants: Mapping[str, object]
) -> str | None:
    """Why ``module`` does not match its Python side, or None when it does."""
    built = getattr(module, "ABI_VERSION", None)
    if built != abi_version:
        return f"ABI_VERSION {built}, expected {abi_version}"
    missing = sorted(name for name in names if not hasattr(module, name))
    if missing:
        return f"no {', '.join(missing)}"
    for name, expected in constants.items():
        value = getattr(module, name, None)
        if value != expected:
            return f"{name} is {value!r} there, {expected!r} here"
    return None


def load(
    name: str,
    *,
    abi_version: int,
    switch: str,
    names: Iterable[str] = (),
    constants: Mapping[str, object] | None = None,
) -> ModuleType | None:
    """The extension module ``name`` when it is built, current and not switched off; else
    None, with the reason logged."""
    if switched_off(switch):
        log.debug("%s switched off (%s or %s=1): using the Python code", name, PURE_ALL, switch)
        return None
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        log.warning(
            "%s is not built (%s): using the Python code, several times slower; "
            "`make install` builds it (it needs a C compiler and zlib's header)",
            name,
            exc,
        )
        return None
    problem = stale(module, abi_version, names, constants or {})
    if problem is not None:
        log.warning(
            "%s is out of date (%s): using the Python code; `make install` rebuilds it",
            name,
            problem,
        )
        return None
    return module
