"""The checkpoint, abort and lock files (docs/spec/store-format.md §1, §6, §7).

* ``checkpoint``: 4096 bytes; physicMsgTimestamp, logicsMsgTimestamp, indexMsgTimestamp.
* ``abort``: exists while a broker runs; present at start-up means the last run crashed.
* ``lock``: an exclusive ``flock`` held while running, so a second broker on the same store
  directory is refused instead of corrupting it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import struct
from pathlib import Path

from broker.store import mapped_file
from broker.store.mapped_file import DiskError, StoreError

log = logging.getLogger(__name__)

_CHECKPOINT = struct.Struct(">qqq")
CHECKPOINT_SIZE = 4096


class StoreCheckpoint:
    """Read with ``pread``, written with ``pwrite`` (RocketMQ maps it): on a full disk a
    write into a file whose page has no block yet fails with ENOSPC, where a store through a
    mapping would kill the process with SIGBUS."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1  # until load(): the store's lock is taken first
        self.physic_msg_timestamp = self.logics_msg_timestamp = self.index_msg_timestamp = 0

    def load(self) -> None:
        """Open (or create) the file and read its three timestamps."""
        path = self.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise DiskError(path, "open", exc) from exc
        try:
            if os.fstat(self._fd).st_size != CHECKPOINT_SIZE:
                os.ftruncate(self._fd, CHECKPOINT_SIZE)  # no block needed: a full disk starts
            stamps = _CHECKPOINT.unpack(os.pread(self._fd, _CHECKPOINT.size, 0))
        except OSError as exc:
            os.close(self._fd)
            self._fd = -1
            raise DiskError(path, "read", exc) from exc
        self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp = stamps

    def min_timestamp(self, *, index_safe: bool = False) -> int:
        """The safe recovery point: min(physic, logics) - 3 s, as Java's getMinTimestamp."""
        low = min(self.physic_msg_timestamp, self.logics_msg_timestamp)
        if index_safe:
            low = min(low, self.index_msg_timestamp)
        return max(low - 3000, 0)

    def write(self) -> None:
        packed = _CHECKPOINT.pack(
            self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp
        )
        try:
            os.pwrite(self._fd, packed, 0)
        except OSError as exc:
            raise DiskError(self.path, "write", exc) from exc

    def flush(self) -> None:
        """Write and make durable; DiskError when the disk refuses. Blocking: call from a
        worker thread."""
        self.write()
        try:
            mapped_file.fdatasync(self._fd)
        except OSError as exc:
            raise DiskError(self.path, "flush", exc) from exc

    def close(self) -> None:
        if self._fd < 0:
            return
        try:
            self.write()
        except DiskError as exc:
            log.warning("checkpoint not written at close: %s", exc)
        os.close(self._fd)
        self._fd = -1


class StoreLock:
    """``flock`` on ``<store>/lock``: refuses a second broker on the same directory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise DiskError(self.path, "open", exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            os.close(fd)
            raise StoreError(
                f"store directory {self.path.parent} is in use by another broker ({holder or 'unknown pid'}): "
                "give each broker its own storePathRootDir"
            ) from None
        try:  # who holds it, for the message above; a full disk may not take it
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"lock pid={os.getpid()}\n".encode(), 0)
        except OSError as exc:
            log.warning("lock file %s: pid not written: %s", self.path, exc)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class AbortFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def exists(self) -> bool:
        return self.path.exists()

    def create(self) -> None:
        """An empty file: it takes no block, so a full disk still starts."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        except OSError as exc:
            raise DiskError(self.path, "create", exc) from exc
        try:
            os.fsync(fd)
        except OSError as exc:
            raise DiskError(self.path, "flush", exc) from exc
        finally:
            os.close(fd)

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
