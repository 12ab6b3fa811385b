"""The checkpoint, abort and lock files (spec/store-format.md §1, §6, §7).

* ``checkpoint``: 4096 bytes; physicMsgTimestamp, logicsMsgTimestamp, indexMsgTimestamp.
* ``abort``: exists while a broker runs; present at start-up means the last run crashed.
* ``lock``: an exclusive ``flock`` held while running, so a second broker on the same store
  directory is refused instead of corrupting it.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
from pathlib import Path

from broker.store.mapped_file import StoreError

_CHECKPOINT = struct.Struct(">qqq")
CHECKPOINT_SIZE = 4096


class StoreCheckpoint:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(self._fd).st_size != CHECKPOINT_SIZE:
            os.ftruncate(self._fd, CHECKPOINT_SIZE)
        self._mmap = mmap.mmap(self._fd, CHECKPOINT_SIZE)
        self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp = (
            _CHECKPOINT.unpack_from(self._mmap, 0)
        )

    def min_timestamp(self, *, index_safe: bool = False) -> int:
        """The safe recovery point: min(physic, logics) - 3 s, as Java's getMinTimestamp."""
        low = min(self.physic_msg_timestamp, self.logics_msg_timestamp)
        if index_safe:
            low = min(low, self.index_msg_timestamp)
        return max(low - 3000, 0)

    def write(self) -> None:
        _CHECKPOINT.pack_into(
            self._mmap,
            0,
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
        )

    def flush(self) -> None:
        """Blocking: call from a worker thread."""
        self.write()
        os.fdatasync(self._fd)

    def close(self) -> None:
        self.write()
        self._mmap.close()
        os.close(self._fd)


class StoreLock:
    """``flock`` on ``<store>/lock``: refuses a second broker on the same directory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            os.close(fd)
            raise StoreError(
                f"store directory {self.path.parent} is in use by another broker ({holder or 'unknown pid'}): "
                "give each broker its own storePathRootDir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"lock pid={os.getpid()}\n".encode(), 0)
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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.fsync(fd)
        os.close(fd)

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
