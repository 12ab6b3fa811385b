"""IndexService: the index directory (docs/spec/store-format.md §5). It builds entries from
dispatch into the newest IndexFile, rolls to a new file when that one is full, answers key
queries newest file first, and cuts and expires files with the CommitLog.

A file or entries the disk will not give degrade to keys not indexed (health area ``index``,
a warning, ``indexKeysNotIndexed`` in runtime info), never to a failed dispatch; the service
tries again after RETRY_S.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from broker.store.health import INDEX, RETRY_S, StoreHealth
from broker.store.index_file import (
    IndexFile,
    index_put_keys,
    index_request,
    index_requests,
    key_count,
    packed_entries,
    python_index_hashes,
)
from broker.store.layout import BATCH_KEY
from broker.store.mapped_file import DiskError, MappedFile
from broker.store.slotted import Slotted
from broker.store.types import DispatchRequest
from remoting import message as codec
from remoting.java_hash import java_string_hash

log = logging.getLogger(__name__)

_ROLLBACK = codec.TRANSACTION_ROLLBACK_TYPE  # a rolled-back half has no index entries


class IndexService(Slotted):
    """Owns the index directory: builds entries from dispatch, answers key queries."""

    # read by plain_pass.c from their slots (broker/store/slotted.py)
    __slots__ = ("files",)

    def __init__(
        self,
        directory: Path,
        slots: int,
        entries: int,
        health: StoreHealth | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = directory
        self.slots, self.entries = slots, entries
        self.files: list[IndexFile] = []
        self.on_file_full: Callable[[IndexFile], None] | None = None  # checkpoint + flush
        self.health = health or StoreHealth()
        self.clock = clock
        self._retry_at = 0.0  # while the disk refuses: no new try before this (monotonic s)

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

    def _roll(self) -> IndexFile:
        """A new file after the last (full) one, starting where it ended. DiskError when
        the disk refuses it."""
        last = self.files[-1] if self.files else None
        begin = (last.header.end_phy_offset, last.header.end_timestamp) if last else (0, 0)
        name = (
            time.strftime("%Y%m%d%H%M%S", time.localtime())
            + f"{time.time_ns() // 1_000_000 % 1000:03d}"
        )
        path = self.directory / name
        while path.exists() or (last is not None and path.name <= last.path.name):
            path = self.directory / str(int(path.name) + 1)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            index = IndexFile(path, self.slots, self.entries, create=True, begin=begin)
        except OSError as exc:  # mkdir, or a mapping the system refuses
            raise DiskError(path, "create", exc) from exc
        self.files.append(index)
        if last is not None and self.on_file_full is not None:
            self.on_file_full(last)
        return index

    def build_index(self, request: DispatchRequest) -> None:
        """Index one record's keys (IndexService.buildIndex): in one call when they all fit in
        the newest file, else the general way (the next file, the disk's refusals)."""
        files = self.files
        if files and request.sys_flag & _ROLLBACK != _ROLLBACK:
            index = files[-1]
            if index_request(index.file.mmap, index.slots, index.max_entries, request):
                return
        self.build_index_batch((request,))

    def build_index_batch(self, requests: Sequence[DispatchRequest]) -> None:
        """Index the keys of records of one topic and transaction type, in log order (one
        message, a batch's entries, or a run read back from the log), written in one pass.
        Records the file already indexes (before a crash: recovery re-dispatches) are skipped;
        Java compares with <, which indexes the last record twice after every crash."""
        first = requests[0]
        if first.sys_flag & _ROLLBACK == _ROLLBACK:
            return
        prefix = first.topic + "#"
        index = self.files[-1] if self.files else None
        if index is not None:
            left = index_requests(index.file.mmap, index.slots, index.max_entries, requests, prefix)
        elif self.clock() < self._retry_at:  # no file, and the disk refused one just now
            self.health.keys_not_indexed += key_count(requests)
            return
        else:
            left = python_index_hashes(requests, prefix, -1)
        if left:
            self._spill(index, left)

    def build_index_keys(self, sys_flag: int, store_timestamp: int, keys: bytes) -> None:
        """``build_index_batch`` for a batch put's packed keys (AppendCursor.put_batch_dispatch:
        each entry's key hash and phy offset, in the order build_index_batch adds them)."""
        if sys_flag & _ROLLBACK == _ROLLBACK or not keys:
            return
        index = self.files[-1] if self.files else None
        if index is not None:
            left = index_put_keys(
                index.file.mmap, index.slots, index.max_entries, keys, store_timestamp
            )
        elif self.clock() < self._retry_at:  # no file, and the disk refused one just now
            self.health.keys_not_indexed += len(keys) // BATCH_KEY.size
            return
        else:
            left = packed_entries(keys, store_timestamp, -1)
        if left:  # a lone send's keys fit: no call per send
            self._spill(index, left)

    def _spill(self, index: IndexFile | None, left: list[tuple[int, int, int]]) -> None:
        """Entries that did not fit in ``index`` (or found no file) into the next files."""
        while left:
            index = self._room(index, len(left))
            if index is None:
                self.health.keys_not_indexed += len(left)
                return
            written = index.put_entries(left)
            if not written:
                log.error(
                    "index file %s takes no entries: %d keys not indexed", index.path, len(left)
                )
                return
            del left[:written]

    def _room(self, index: IndexFile | None, wanted: int) -> IndexFile | None:
        """The file the next ``wanted`` entries go in: ``index`` grown, or a new file when it
        is full (or there is none). None while the disk refuses (tried again after RETRY_S)."""
        if self.clock() < self._retry_at:
            return None
        try:
            if index is None or index.is_full:
                index = self._roll()
            else:
                index.grow(wanted)
        except DiskError as exc:
            self._retry_at = self.clock() + RETRY_S
            self.health.failed(INDEX, exc)
            return None
        if INDEX in self.health.problems:
            self.health.recovered(INDEX)
        return index

    def build_index_runs(self, requests: Sequence[DispatchRequest]) -> None:
        """Index records of any topics in log order (read back from the log), one pass per
        run of one topic and one sys flag, so one transaction type (what
        ``build_index_batch`` takes)."""
        start, count = 0, len(requests)
        while start < count:
            first = requests[start]
            end = start + 1
            while end < count:
                other = requests[end]
                if other.topic != first.topic or other.sys_flag != first.sys_flag:
                    break
                end += 1
            self.build_index_batch(requests[start:end])
            start = end

    def query(
        self, topic: str, key: str, max_num: int, begin: int, end: int
    ) -> tuple[list[int], int, int]:
        """(offsets, last update timestamp, last update phy offset), newest file first."""
        offsets: list[int] = []
        key_hash = java_string_hash(f"{topic}#{key}")
        last_ts = last_phy = 0
        for index in reversed(self.files):
            header = index.header
            if not last_ts:
                last_ts, last_phy = header.end_timestamp, header.end_phy_offset
            index.select(key_hash, max_num, begin, end, offsets)
            if len(offsets) >= max_num or header.begin_timestamp < begin:
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
            and self.files[-1].header.end_phy_offset >= phys_offset
            and self.files[-1].header.index_count > 1
        ):
            index = self.files.pop()
            rebuild_from = index.header.begin_phy_offset
            index.destroy()
        return rebuild_from

    def delete_expired(self, commit_log_min: int) -> int:
        deleted = 0
        while len(self.files) > 1 and self.files[0].header.end_phy_offset < commit_log_min:
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
