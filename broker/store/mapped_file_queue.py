"""MappedFileQueue: a directory of equal-size segments named by start offset
(docs/spec/store-format.md §2, §3, §12).

Offsets here are byte offsets into the queue's address space (a CommitLog's are phys offsets, a
ConsumeQueue's are queue offsets times 20). Segments are contiguous: segment i starts at
``first.start_offset + i * file_size``, so a lookup by byte offset is arithmetic. New segments come from an ``allocator`` (the store's pre-allocation
service hands over a file it created in a worker thread; without one they are created here).
Mutations are plain ``def``s called from the event loop; only ``flush_plan`` output is used by a
worker thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from broker.store.mapped_file import (
    OS_PAGE_SIZE,
    DiskError,
    MappedFile,
    remove_stale_allocations,
    segment_name,
)
from broker.store.slotted import Slotted
from broker.store.store_native import native

log = logging.getLogger(__name__)

Allocator = Callable[[Path, int], MappedFile]


def create_mapped_file(path: Path, file_size: int) -> MappedFile:
    return MappedFile(path, file_size, create=True)


class MappedFileQueue(Slotted):
    # read by plain_pass.c from their slots (broker/store/slotted.py)
    __slots__ = ("files",)

    def __init__(self, directory: Path, file_size: int, allocator: Allocator | None = None) -> None:
        self.directory = directory
        self.file_size = file_size
        self.files: list[MappedFile] = []
        self.allocator: Allocator = allocator or create_mapped_file
        self.flushed_where = 0  # byte offset up to which data is durable

    # ------------------------------------------------------------------ loading

    def load(self) -> None:
        """Open every segment on disk (names not 20 digits are ignored). A segment of the wrong
        size stops the start-up, as in RocketMQ."""
        if not self.directory.is_dir():
            return
        for stale in remove_stale_allocations(self.directory):
            log.warning("removed an allocation interrupted by a crash: %s", stale)
        names = sorted(
            p.name for p in self.directory.iterdir() if p.name.isdigit() and len(p.name) == 20
        )
        for name in names:
            mapped = MappedFile(self.directory / name, self.file_size, create=False)
            mapped.wrote_position = mapped.flushed_position = self.file_size  # recovery corrects
            self.files.append(mapped)
        for previous, current in zip(self.files, self.files[1:], strict=False):
            if current.start_offset != previous.start_offset + self.file_size:
                log.warning(
                    "segments not contiguous: dir=%s previous=%s next=%s",
                    self.directory,
                    previous.path.name,
                    current.path.name,
                )

    # ------------------------------------------------------------------ lookups

    @property
    def min_byte_offset(self) -> int:
        return self.files[0].start_offset if self.files else 0

    @property
    def max_byte_offset(self) -> int:
        """Exclusive end of written data."""
        if not self.files:
            return 0
        last = self.files[-1]
        return last.start_offset + last.wrote_position

    @property
    def last(self) -> MappedFile | None:
        return self.files[-1] if self.files else None

    def find(self, byte_offset: int) -> MappedFile | None:
        """The segment holding ``byte_offset``, or None."""
        files = self.files
        if not files:
            return None
        index = (byte_offset - files[0].start_offset) // self.file_size
        if 0 <= index < len(files):
            mapped = files[index]
            if mapped.start_offset <= byte_offset < mapped.end_offset:
                return mapped
        for mapped in files:  # not contiguous (logged at load): fall back to a scan
            if mapped.start_offset <= byte_offset < mapped.end_offset:
                return mapped
        return None

    # ------------------------------------------------------------------ appending

    def next_segment(self, start_offset: int | None = None) -> MappedFile:
        """Open the segment that follows the last one (or the one holding ``start_offset`` when
        the queue is empty). Raises DiskError when it cannot be created; nothing changes."""
        last = self.last
        if last is not None:
            start = last.end_offset
        else:
            start = 0 if start_offset is None else start_offset - start_offset % self.file_size
        path = self.directory / segment_name(start)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            mapped = self.allocator(path, self.file_size)
        except OSError as exc:  # mkdir, or an mmap the system refuses
            raise DiskError(path, "create", exc) from exc
        self.files.append(mapped)
        return mapped

    def writable(self, start_offset: int | None = None) -> MappedFile:
        files = self.files  # every append asks: no property lookups here
        if files:
            last = files[-1]
            if last.wrote_position < last.file_size:
                return last
        return self.next_segment(start_offset)

    # ------------------------------------------------------------------ truncation

    def truncate_dirty(self, byte_offset: int) -> None:
        """Drop everything at or after ``byte_offset`` (RocketMQ's truncateDirtyFiles): segments
        that start after it are deleted, the one holding it now ends there, its stale tail
        zeroed."""
        keep: list[MappedFile] = []
        for mapped in self.files:
            if mapped.end_offset <= byte_offset:
                keep.append(mapped)
            elif mapped.start_offset <= byte_offset:
                position = byte_offset - mapped.start_offset
                mapped.zero_from(position)
                mapped.wrote_position = mapped.flushed_position = position
                keep.append(mapped)
            else:
                mapped.destroy()
        self.files = keep
        self.flushed_where = min(self.flushed_where, byte_offset)

    # ------------------------------------------------------------------ flushing

    def dirty_bytes(self) -> int:
        return self.max_byte_offset - self.flushed_where

    def flush_plan(self, least_pages: int) -> list[tuple[MappedFile, int]]:
        """The segments to fdatasync and the write position each is flushed to; empty when
        fewer than ``least_pages`` pages are dirty. Built on the loop, run in a thread, then
        ``flush_done``."""
        if not self.files or (least_pages > 0 and self.dirty_bytes() < least_pages * OS_PAGE_SIZE):
            return []
        plan = []
        for mapped in self.files:
            if mapped.end_offset <= self.flushed_where:
                continue
            if mapped.flushed_position < mapped.wrote_position:
                plan.append((mapped, mapped.wrote_position))
        return plan

    def flush_done(self, plan: list[tuple[MappedFile, int]]) -> None:
        for mapped, position in plan:
            mapped.flushed_position = max(mapped.flushed_position, position)
        if plan:
            last, position = plan[-1]
            self.flushed_where = max(self.flushed_where, last.start_offset + position)
        # Full segments with nothing to flush count as flushed too.
        for mapped in self.files:
            if mapped.flushed_position >= mapped.wrote_position:
                self.flushed_where = max(
                    self.flushed_where, mapped.start_offset + mapped.flushed_position
                )
            else:
                break

    # ------------------------------------------------------------------ expiry

    def delete_expired_by_time(
        self, expired_ms: int, *, force: bool, max_files: int, now_ms: int
    ) -> list[MappedFile]:
        """Delete segments (oldest first, never the last) last modified before
        ``now - expired_ms``, or any when ``force``; stop at the first one that must stay."""
        deleted = []
        for mapped in list(self.files[:-1]):
            if len(deleted) >= max_files:
                break
            try:
                mtime_ms = int(mapped.path.stat().st_mtime * 1000)
            except FileNotFoundError:
                mtime_ms = 0
            if not force and mtime_ms + expired_ms > now_ms:
                break
            mapped.destroy()
            self.files.remove(mapped)
            deleted.append(mapped)
        return deleted

    def delete_below(
        self, keep_from: Callable[[MappedFile], bool], max_files: int
    ) -> list[MappedFile]:
        """Delete leading segments (never the last) until ``keep_from(segment)`` is true."""
        deleted = []
        for mapped in list(self.files[:-1]):
            if len(deleted) >= max_files or keep_from(mapped):
                break
            mapped.destroy()
            self.files.remove(mapped)
            deleted.append(mapped)
        return deleted

    def close(self) -> None:
        for mapped in self.files:
            mapped.close()

    def destroy(self) -> None:
        for mapped in self.files:
            mapped.destroy()
        self.files = []
        self.flushed_where = 0


def python_now_ms() -> int:
    """The wall clock in ms: the store's clock, and the broker's."""
    return time.time_ns() // 1_000_000


# A builtin in the broker: the CommitLog's clock, read once a pass by plain_pass.c, then runs no
# Python frame
now_ms = python_now_ms if native is None else native.now_ms
