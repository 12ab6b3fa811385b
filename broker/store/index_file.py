"""IndexFile and IndexService: a hash index from ``topic#key`` to CommitLog offsets
(spec/store-format.md §5).

File: a 40-byte header, ``maxHashSlotNum`` int32 slots (each the newest entry number for its
hash), then ``maxIndexNum`` 20-byte entries ``(keyHash, phyOffset, timeDiffSeconds, prevIndex)``
chained newest to oldest. Entry numbers start at 1. Files are named by creation time
(yyyyMMddHHmmssSSS, local time) and a new one starts when the last is full.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from broker.store.mapped_file import MappedFile
from broker.store.types import DispatchRequest
from remoting import message as codec
from remoting.java_hash import java_hash, java_string_hash
from remoting.speedups import native

log = logging.getLogger(__name__)

HEADER = struct.Struct(">qqqqii")  # begin ts, end ts, begin phy, end phy, slot count, index count
assert HEADER.size == 40
ENTRY = struct.Struct(">iqii")  # key hash, phy offset, time diff (s), previous entry
assert ENTRY.size == 20
SLOT = struct.Struct(">i")
INT_MAX = 2**31 - 1
_INT_MIN = -(2**31)


def index_key_hash(key_hash: int) -> int:
    """abs(hashCode), with Integer.MIN_VALUE mapped to 0 (Java's indexKeyHashMethod)."""
    return 0 if key_hash == -(2**31) else abs(key_hash)


def index_file_size(slots: int, entries: int) -> int:
    return HEADER.size + slots * SLOT.size + entries * ENTRY.size


def python_index_hashes(
    requests: Sequence[DispatchRequest], prefix: str, done: int
) -> list[tuple[int, int]]:
    """(Java hash of prefix + key, phy offset) for the UNIQ_KEY and each space-separated KEYS
    entry of the requests past ``done``: the reference of remoting/native/index.c's
    index_hashes."""
    entries: list[tuple[int, int]] = []
    for request in requests:
        phy_offset = request.commit_log_offset
        if phy_offset <= done:
            continue
        if request.uniq_key:
            entries.append((java_hash(prefix + request.uniq_key), phy_offset))
        if request.keys:
            for key in request.keys.split(" "):
                if key:
                    entries.append((java_hash(prefix + key), phy_offset))
    return entries


index_hashes = native.index_hashes if native is not None else python_index_hashes


class IndexFile:
    def __init__(
        self, path: Path, slots: int, entries: int, *, create: bool, begin: tuple[int, int] = (0, 0)
    ) -> None:
        size = index_file_size(slots, entries)
        # MappedFile wants a numeric name; index files are named by time, which is numeric too.
        self.file = MappedFile(path, size, create=create)
        self.slots, self.max_entries = slots, entries
        self._entries_at = HEADER.size + slots * SLOT.size
        if create:
            end_phy, end_ts = begin
            HEADER.pack_into(self.file.mmap, 0, end_ts, end_ts, end_phy, end_phy, 0, 1)
        (
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        ) = HEADER.unpack_from(self.file.mmap, 0)
        self.index_count = max(self.index_count, 1)

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def is_full(self) -> bool:
        return self.index_count >= self.max_entries

    def _write_header(self) -> None:
        HEADER.pack_into(
            self.file.mmap,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        )

    def put_entries(self, entries: Sequence[tuple[int, int]], store_timestamp: int) -> int:
        """Add (key hash, phy offset) entries stored at one time (one message's keys, or a
        batch's); returns how many fit (the file may fill). The header is written once at the
        end: this runs for every key of every message."""
        mm = self.file.mmap
        slots, entries_at, max_entries = self.slots, self._entries_at, self.max_entries
        count = self.index_count
        if self.begin_timestamp <= 0:
            time_diff = 0
        else:
            time_diff = min(max((store_timestamp - self.begin_timestamp) // 1000, 0), INT_MAX)
        if native is not None:
            written, count, taken = native.index_put_entries(
                mm, slots, entries_at, max_entries, count, time_diff, entries
            )
            self.hash_slot_count += taken
            if written and self.index_count <= 1:
                self.begin_phy_offset, self.begin_timestamp = entries[0][1], store_timestamp
        else:
            written, count = self._put_entries_python(entries, count, time_diff, store_timestamp)
        if written:
            self.index_count = count
            self.end_phy_offset = entries[written - 1][1]
            self.end_timestamp = store_timestamp
            self._write_header()
        return written

    def _put_entries_python(
        self, entries: Sequence[tuple[int, int]], count: int, time_diff: int, store_timestamp: int
    ) -> tuple[int, int]:
        """The reference of remoting/native/index.c's index_put_entries: (written, new count)."""
        mm = self.file.mmap
        slots, entries_at, max_entries = self.slots, self._entries_at, self.max_entries
        unpack_slot, pack_slot, pack_entry = SLOT.unpack_from, SLOT.pack_into, ENTRY.pack_into
        written = 0
        for key_hash, phy_offset in entries:
            if count >= max_entries:
                break
            key_hash = 0 if key_hash == _INT_MIN else abs(key_hash)
            slot_at = HEADER.size + (key_hash % slots) * SLOT.size
            (previous,) = unpack_slot(mm, slot_at)
            if previous <= 0 or previous > count:
                previous = 0
                self.hash_slot_count += 1
            pack_entry(
                mm, entries_at + count * ENTRY.size, key_hash, phy_offset, time_diff, previous
            )
            pack_slot(mm, slot_at, count)
            if count <= 1:
                self.begin_phy_offset, self.begin_timestamp = phy_offset, store_timestamp
            count += 1
            written += 1
        return written, count

    def overlaps(self, begin: int, end: int) -> bool:
        return begin <= self.end_timestamp and end >= self.begin_timestamp

    def select(self, key_hash: int, max_num: int, begin: int, end: int, out: list[int]) -> None:
        """Append to ``out`` the offsets of entries with this hash stored in [begin, end]."""
        key_hash = index_key_hash(key_hash)
        mm = self.file.mmap
        (current,) = SLOT.unpack_from(mm, HEADER.size + (key_hash % self.slots) * SLOT.size)
        if current <= 0 or current > self.index_count or self.index_count <= 1:
            return
        seen = 0
        while len(out) < max_num and seen < self.index_count:
            seen += 1
            entry_hash, phy_offset, time_diff, previous = ENTRY.unpack_from(
                mm, self._entries_at + current * ENTRY.size
            )
            if time_diff < 0:
                break
            stored_at = self.begin_timestamp + time_diff * 1000
            if entry_hash == key_hash and begin <= stored_at <= end:
                out.append(phy_offset)
            if (
                previous <= 0
                or previous > self.index_count
                or previous == current
                or stored_at < begin
            ):
                break
            current = previous

    def close(self) -> None:
        self.file.close()

    def destroy(self) -> None:
        self.file.destroy()


class IndexService:
    """Owns the index directory: builds entries from dispatch, answers key queries."""

    def __init__(self, directory: Path, slots: int, entries: int) -> None:
        self.directory = directory
        self.slots, self.entries = slots, entries
        self.files: list[IndexFile] = []
        self.on_file_full: Callable[[IndexFile], None] | None = None  # checkpoint + flush

    def load(self) -> None:
        if not self.directory.is_dir():
            return
        for path in sorted(p for p in self.directory.iterdir() if p.name.isdigit()):
            try:
                index = IndexFile(path, self.slots, self.entries, create=False)
            except Exception as exc:
                log.warning("index file unusable, removed: path=%s error=%s", path, exc)
                path.unlink(missing_ok=True)
                continue
            self.files.append(index)

    def _writable(self) -> IndexFile:
        last = self.files[-1] if self.files else None
        if last is not None and not last.is_full:
            return last
        begin = (last.end_phy_offset, last.end_timestamp) if last else (0, 0)
        name = (
            time.strftime("%Y%m%d%H%M%S", time.localtime())
            + f"{time.time_ns() // 1_000_000 % 1000:03d}"
        )
        path = self.directory / name
        while path.exists() or (last is not None and path.name <= last.path.name):
            path = self.directory / str(int(path.name) + 1)
        self.directory.mkdir(parents=True, exist_ok=True)
        index = IndexFile(path, self.slots, self.entries, create=True, begin=begin)
        self.files.append(index)
        if last is not None and self.on_file_full is not None:
            self.on_file_full(last)
        return index

    def build_index(self, request: DispatchRequest) -> None:
        self.build_index_batch((request,))

    def build_index_batch(self, requests: Sequence[DispatchRequest]) -> None:
        """Index the keys of consecutive records stored together (one message, or the entries
        of one batch: one topic, one store time), written in one pass."""
        first = requests[0]
        if codec.transaction_type(first.sys_flag) == codec.TRANSACTION_ROLLBACK_TYPE:
            return
        index = self._writable()
        # Indexed before the crash: recovery re-dispatches idempotently. (Java compares with
        # <, which indexes the last record twice after every crash.)
        done = index.end_phy_offset if index.index_count > 1 else -1
        entries = index_hashes(requests, first.topic + "#", done)
        timestamp = requests[-1].store_timestamp
        while entries:
            written = index.put_entries(entries, timestamp)
            del entries[:written]
            if entries:
                index = self._writable()

    def query(
        self, topic: str, key: str, max_num: int, begin: int, end: int
    ) -> tuple[list[int], int, int]:
        """(offsets, last update timestamp, last update phy offset), newest file first."""
        offsets: list[int] = []
        key_hash = java_string_hash(f"{topic}#{key}")
        last_ts = last_phy = 0
        for index in reversed(self.files):
            if not last_ts:
                last_ts, last_phy = index.end_timestamp, index.end_phy_offset
            if index.overlaps(begin, end):
                index.select(key_hash, max_num, begin, end, offsets)
            if len(offsets) >= max_num or index.begin_timestamp < begin:
                break
        return offsets, last_ts, last_phy

    def truncate_from(self, phys_offset: int) -> int | None:
        """Destroy the newest files holding entries at or past a CommitLog cut point and return
        the offset to rebuild them from (their first entry), or None when nothing was cut.

        Java instead deletes every file newer than the checkpoint's index timestamp after a
        crash, which usually loses the whole current index; this keeps everything below the cut
        and rebuilds only what the cut touched."""
        rebuild_from = None
        while (
            self.files
            and self.files[-1].end_phy_offset >= phys_offset
            and self.files[-1].index_count > 1
        ):
            index = self.files.pop()
            rebuild_from = index.begin_phy_offset
            index.destroy()
        return rebuild_from

    def delete_expired(self, commit_log_min: int) -> int:
        deleted = 0
        while len(self.files) > 1 and self.files[0].end_phy_offset < commit_log_min:
            self.files.pop(0).destroy()
            deleted += 1
        return deleted

    def flush_targets(self) -> list[MappedFile]:
        return [index.file for index in self.files[-2:]]

    def close(self) -> None:
        for index in self.files:
            index.close()

    def destroy(self) -> None:
        for index in self.files:
            index.destroy()
        self.files = []
