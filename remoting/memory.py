"""Freed buffers go back to the operating system (glibc malloc tuning; a no-op elsewhere).

glibc serves an allocation above ``M_MMAP_THRESHOLD`` (128 KiB at start) with a mapping of its
own and unmaps it when freed. The threshold is dynamic, though: each time such a block is freed
it rises to that block's size, up to 32 MiB. After one big frame, partial-frame buffers and
bodies up to that size come from the heap, between small long-lived objects, and once freed
they stay in the process. Measured against mqnamesrv (three rounds of 200 connections, each
holding 90% of a 1 MB frame, then closing): +35 MB kept with the dynamic threshold, +7 MB with
it pinned, +3 MB with a ``malloc_trim`` after the big frees.

``mallopt(M_MMAP_THRESHOLD, ...)`` pins it (and turns off the trim threshold's matching drift),
so every buffer above it is its own mapping, unmapped on free. The hot paths stay below it:
reads are 64 KiB, and stored messages are read from the store's own mappings.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's starting value


@functools.cache
def pin_mmap_threshold(threshold_bytes: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Pin glibc's mmap threshold (once per process). False where malloc is not glibc's."""
    mallopt = _libc_function("mallopt", ctypes.c_int, ctypes.c_int)
    return mallopt is not None and mallopt(M_MMAP_THRESHOLD, threshold_bytes) == 1


def trim() -> None:
    """Hand free heap pages back to the OS (``malloc_trim``), after large frees."""
    malloc_trim = _libc_function("malloc_trim", ctypes.c_size_t)
    if malloc_trim is not None:
        malloc_trim(0)


@functools.cache
def _libc_function(name: str, *argtypes: Any) -> Any:
    try:
        function = getattr(ctypes.CDLL(ctypes.util.find_library("c")), name)
    except (OSError, AttributeError, TypeError):
        return None
    function.argtypes = argtypes
    function.restype = ctypes.c_int
    return function
