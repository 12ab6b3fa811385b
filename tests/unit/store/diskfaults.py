"""A disk that fills up or fails on demand, through the store's I/O seam
(``broker.store.mapped_file.fallocate`` / ``fdatasync`` / ``sync_range``): allocations or flushes of files
whose path contains a given part fail with ENOSPC or EIO until the disk is freed or fixed."""

from __future__ import annotations

import errno
import os

import pytest

from broker.store import mapped_file


def _path_of(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


class FaultyDisk:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full_for: str | None = None  # allocations of paths containing this fail
        self.failing_for: str | None = None  # flushes of paths containing this fail
        self.allocations_refused = 0
        self.flushes_failed = 0
        monkeypatch.setattr(mapped_file, "fallocate", self._fallocate)
        monkeypatch.setattr(mapped_file, "fdatasync", self._fdatasync)
        monkeypatch.setattr(mapped_file, "sync_range", self._sync_range)

    def fill(self, where: str = "") -> None:
        self.full_for = where

    def free(self) -> None:
        self.full_for = None

    def break_flush(self, where: str = "") -> None:
        self.failing_for = where

    def fix(self) -> None:
        self.failing_for = None

    def _fallocate(self, fd: int, offset: int, length: int) -> None:
        if self.full_for is not None and self.full_for in _path_of(fd):
            self.allocations_refused += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.posix_fallocate(fd, offset, length)

    def _fdatasync(self, fd: int) -> None:
        if self.failing_for is not None and self.failing_for in _path_of(fd):
            self.flushes_failed += 1
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        os.fdatasync(fd)

    def _sync_range(self, fd: int, mapping, start: int, length: int) -> None:
        if self.failing_for is not None and self.failing_for in _path_of(fd):
            self.flushes_failed += 1
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        if mapped_file.native is None:
            os.fdatasync(fd)
        else:
            mapped_file.native.sync_range(mapping, start, length)
