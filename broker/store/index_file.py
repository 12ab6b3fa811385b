"""IndexFile and IndexService: a hash index from ``topic#key`` to CommitLog offsets
(docs/spec/store-format.md §5).

File: a 40-byte header, ``maxHashSlotNum`` int32 slots (each the newest entry number for its
hash), then ``maxIndexNum`` 20-byte entries ``(keyHash, phyOffset, timeDiffSeconds, prevIndex)``
chained newest to oldest. Entry numbers start at 1. Files are named by creation time
(yyyyMMddHHmmssSSS, local time) and a new one starts when the last is full.

A file is created sparse at its full size (420 MB by default, as RocketMQ's, whose mapping is
sparse too), with its header and slots allocated and its entries allocated ``GROW_BYTES`` at a
time as they fill, so a broker starts and indexes on a disk with far less room than that. Its
``max_entries`` is how many entries are allocated now (what the index writes may fill),
``capacity`` how many the file holds. Every byte written through the mapping is allocated
first: a write into a hole on a full disk would be a SIGBUS. A file or entries the disk will
not give degrade to keys not indexed (broker/store/index_service.py).
"""

from __future__ import annotations

import logging
import mmap
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from broker.store.layout import BATCH_KEY, INDEX_REQUEST_MAX_KEYS
from broker.store.layout import INDEX_ENTRY as ENTRY
from broker.store.layout import INDEX_HEADER as HEADER
from broker.store.layout import INDEX_SLOT as SLOT
from broker.store.mapped_file import MappedFile
from broker.store.slotted import Slotted
from broker.store.store_native import native
from broker.store.types import DispatchRequest
from remoting.java_hash import java_hash

log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1
GROW_BYTES = 1 << 20  # entries are allocated this many bytes at a time
GROW_ENTRIES = GROW_BYTES // ENTRY.size


def index_key_hash(key_hash: int) -> int:
    """abs(hashCode), with Integer.MIN_VALUE mapped to 0 (Java's indexKeyHashMethod)."""
    return 0 if key_hash == -(2**31) else abs(key_hash)


def index_file_size(slots: int, entries: int) -> int:
    return HEADER.size + slots * SLOT.size + entries * ENTRY.size


class IndexHeader(NamedTuple):
    """The file's first 40 bytes, its state: each add reads and rewrites it in the mapping."""

    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int
    hash_slot_count: int
    index_count: int  # the next entry number (entry numbers start at 1)


def read_header(mm: mmap.mmap | memoryview | bytearray) -> IndexHeader:
    header = IndexHeader._make(HEADER.unpack_from(mm, 0))
    return header if header.index_count >= 1 else header._replace(index_count=1)


def python_index_hashes(
    requests: Sequence[DispatchRequest], prefix: str, done: int
) -> list[tuple[int, int, int]]:
    """(Java hash of prefix + key, phy offset, store timestamp) for the UNIQ_KEY and each
    space-separated KEYS entry of the requests past ``done``."""
    entries: list[tuple[int, int, int]] = []
    for request in requests:
        phy_offset = request.commit_log_offset
        if phy_offset <= done:
            continue
        stored = request.store_timestamp
        if request.uniq_key:
            entries.append((java_hash(prefix + request.uniq_key), phy_offset, stored))
        if request.keys:
            for key in request.keys.split(" "):
                if key:
                    entries.append((java_hash(prefix + key), phy_offset, stored))
    return entries


def python_index_put_entries(
    mm: mmap.mmap | memoryview | bytearray,
    slots: int,
    max_entries: int,
    entries: Sequence[tuple[int, int, int]],
) -> int:
    """Add (key hash, phy offset, store timestamp) entries, in order, while the file has room;
    returns how many went in. Each entry's time diff is from the file's begin timestamp as it
    stands before it, which the file's first entry then sets (Java's IndexFile.putKey). The
    reference of broker/store/native/index.c's index_put_entries."""
    entries_at = HEADER.size + slots * SLOT.size
    if slots <= 0 or max_entries <= 0 or entries_at + max_entries * ENTRY.size > len(mm):
        raise ValueError("index geometry does not fit the buffer")
    begin_ts, end_ts, begin_phy, end_phy, slot_count, count = read_header(mm)
    written = 0
    try:
        for key_hash, phy_offset, stored in entries:
            if count >= max_entries:
                break
            time_diff = 0
            if begin_ts > 0:
                time_diff = min(max((stored - begin_ts) // 1000, 0), INT_MAX)
            key_hash = index_key_hash(key_hash)
            slot_at = HEADER.size + (key_hash % slots) * SLOT.size
            (previous,) = SLOT.unpack_from(mm, slot_at)
            if previous <= 0 or previous > count:
                previous = 0
                slot_count += 1
            ENTRY.pack_into(
                mm, entries_at + count * ENTRY.size, key_hash, phy_offset, time_diff, previous
            )
            SLOT.pack_into(mm, slot_at, count)
            if count <= 1:
                begin_phy, begin_ts = phy_offset, stored
            count += 1
            end_phy, end_ts = phy_offset, stored
            written += 1
    finally:  # what went in before an error stays in, header included
        if written:
            HEADER.pack_into(mm, 0, begin_ts, end_ts, begin_phy, end_phy, slot_count, count)
    return written


def python_index_requests(
    mm: mmap.mmap | memoryview | bytearray,
    slots: int,
    max_entries: int,
    requests: Sequence[DispatchRequest],
    prefix: str,
) -> list[tuple[int, int, int]]:
    """Index the keys of records of one topic in log order: each UNIQ_KEY and space-separated
    KEYS entry as the Java hash of ``prefix`` + key, skipping records the file already indexes
    (recovery re-dispatches). Returns the entries that did not fit, for the next file. The
    reference of broker/store/native/index.c's index_requests."""
    header = read_header(mm)
    done = header.end_phy_offset if header.index_count > 1 else -1
    entries = python_index_hashes(requests, prefix, done)
    written = python_index_put_entries(mm, slots, max_entries, entries)
    return entries[written:]


def packed_entries(keys: bytes, store_timestamp: int, done: int) -> list[tuple[int, int, int]]:
    """The (key hash, phy offset, store timestamp) entries of a batch put's packed keys
    (AppendCursor.put_batch_dispatch) past ``done``."""
    if len(keys) % BATCH_KEY.size:
        raise ValueError("packed index entries are 12 bytes each")
    return [(h, phy, store_timestamp) for h, phy in BATCH_KEY.iter_unpack(keys) if phy > done]


def python_index_put_keys(
    mm: mmap.mmap | memoryview | bytearray,
    slots: int,
    max_entries: int,
    keys: bytes,
    store_timestamp: int,
) -> list[tuple[int, int, int]]:
    """``python_index_requests`` for a batch put's packed keys: the entries of records the file
    already indexes skipped, the rest added while the file has room; returns what did not fit.
    The reference of broker/store/native/index.c's index_put_keys."""
    if len(keys) % BATCH_KEY.size:
        raise ValueError("packed index entries are 12 bytes each")
    header = read_header(mm)
    done = header.end_phy_offset if header.index_count > 1 else -1
    entries = packed_entries(keys, store_timestamp, done)
    written = python_index_put_entries(mm, slots, max_entries, entries)
    return entries[written:]


def python_index_request(
    mm: mmap.mmap | memoryview | bytearray, slots: int, max_entries: int, request: DispatchRequest
) -> bool:
    """All of one record's entries (its UNIQ_KEY, then each KEYS entry), or none when the file
    lacks room for all of them or the record has more than INDEX_REQUEST_MAX_KEYS keys: False,
    nothing written, for the general path that goes on in the next file. True also when the file
    already indexes the record. The reference of broker/store/native/index.c's index_request."""
    header = read_header(mm)
    if header.index_count > 1 and request.commit_log_offset <= header.end_phy_offset:
        return True
    entries = python_index_hashes((request,), request.topic + "#", -1)
    if len(entries) > INDEX_REQUEST_MAX_KEYS or header.index_count + len(entries) > max_entries:
        return False
    python_index_put_entries(mm, slots, max_entries, entries)
    return True


if native is not None:
    index_put_entries, index_requests = native.index_put_entries, native.index_requests
    index_request, index_put_keys = native.index_request, native.index_put_keys
else:
    index_put_entries, index_requests = python_index_put_entries, python_index_requests
    index_request, index_put_keys = python_index_request, python_index_put_keys


def key_count(requests: Sequence[DispatchRequest]) -> int:
    """How many entries ``requests`` would add (what python_index_hashes counts, unhashed)."""
    return sum(bool(r.uniq_key) + sum(1 for key in r.keys.split(" ") if key) for r in requests)


class IndexFile(Slotted):
    # read by plain_pass.c from their slots (broker/store/slotted.py)
    __slots__ = ("file", "max_entries", "slots")

    def __init__(
        self, path: Path, slots: int, entries: int, *, create: bool, begin: tuple[int, int] = (0, 0)
    ) -> None:
        size = index_file_size(slots, entries)
        self.slots, self.capacity = slots, entries
        self._entries_at = HEADER.size + slots * SLOT.size
        # A loaded file (perhaps RocketMQ's, sparse anywhere) has nothing known to be allocated:
        # its first write allocates from the start of the file.
        self.max_entries = min(entries, GROW_ENTRIES) if create else 1
        self._allocated_to = self._entries_at + self.max_entries * ENTRY.size if create else 0
        # MappedFile wants a numeric name; index files are named by time, which is numeric too.
        self.file = MappedFile(path, size, create=create, preallocate=self._allocated_to)
        if create:
            end_phy, end_ts = begin
            HEADER.pack_into(self.file.mmap, 0, end_ts, end_ts, end_phy, end_phy, 0, 1)

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def header(self) -> IndexHeader:
        return read_header(self.file.mmap)

    @property
    def is_full(self) -> bool:
        return read_header(self.file.mmap).index_count >= self.capacity

    def grow(self, wanted: int) -> None:
        """Allocate entries so that ``wanted`` more fit (and GROW_ENTRIES beyond, up to the
        capacity). DiskError when the disk refuses; nothing changes then."""
        target = min(self.capacity, read_header(self.file.mmap).index_count + wanted + GROW_ENTRIES)
        end = self._entries_at + target * ENTRY.size
        if end > self._allocated_to:
            self.file.allocate_range(self._allocated_to, end - self._allocated_to)
            self._allocated_to = end
        self.max_entries = max(self.max_entries, target)

    def put_entries(self, entries: Sequence[tuple[int, int, int]]) -> int:
        """Add (key hash, phy offset, store timestamp) entries; returns how many fit."""
        return index_put_entries(self.file.mmap, self.slots, self.max_entries, entries)

    def select(self, key_hash: int, max_num: int, begin: int, end: int, out: list[int]) -> None:
        """Append to ``out`` the offsets of entries with this hash stored in [begin, end]."""
        key_hash = index_key_hash(key_hash)
        mm = self.file.mmap
        header = self.header
        if begin > header.end_timestamp or end < header.begin_timestamp:
            return
        index_count = header.index_count
        (current,) = SLOT.unpack_from(mm, HEADER.size + (key_hash % self.slots) * SLOT.size)
        if current <= 0 or current > index_count or index_count <= 1:
            return
        seen = 0
        while len(out) < max_num and seen < index_count:
            seen += 1
            entry_hash, phy_offset, time_diff, previous = ENTRY.unpack_from(
                mm, self._entries_at + current * ENTRY.size
            )
            if time_diff < 0:
                break
            stored_at = header.begin_timestamp + time_diff * 1000
            if entry_hash == key_hash and begin <= stored_at <= end:
                out.append(phy_offset)
            if previous <= 0 or previous > index_count or previous == current or stored_at < begin:
                break
            current = previous

    def close(self) -> None:
        self.file.close()

    def destroy(self) -> None:
        self.file.destroy()
