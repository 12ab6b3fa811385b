"""MappedFile: one pre-allocated segment mapped into memory (docs/spec/store-format.md §2, §3).

The segment's bytes are written with ``pack_into``/slice assignment straight into ``mmap``.
Files are pre-allocated with ``posix_fallocate`` (under a temporary name, then linked into place)
so a full disk shows up as an error at creation, never as a SIGBUS when a page of a sparse file
is first written, and a crash never leaves a short segment. A file may be allocated only up to
``preallocate`` bytes (the index grows its entries that way): every byte written through the
mapping must lie in an allocated range (``allocate_range``). ``flush()`` is
``fdatasync``, which releases the GIL (``mmap.flush`` does not) and writes back the pages dirtied
through the mapping; callers run it in a worker thread.

Readers get memoryview slices. A segment that is deleted while such a slice is still being sent
stays mapped until the slice is released: Python's buffer protocol counts the exports for us.
"""

from __future__ import annotations

import errno
import logging
import mmap
import os
import threading
from pathlib import Path

from broker.store.store_native import native

log = logging.getLogger(__name__)

OS_PAGE_SIZE = 4096

# The store's two system calls that a full or failing disk makes fail (ENOSPC, EIO). Every
# allocation and every flush of the store goes through these names, so a test swaps them to
# make the disk fail on demand (tests/unit/store/diskfaults.py).
fallocate = os.posix_fallocate
fdatasync = os.fdatasync


def _sync_range(fd: int, mapping: mmap.mmap, start: int, length: int) -> None:
    """fdatasync of ``[start, start + length)`` of ``fd`` through its mapping; the whole file
    where the store's C is not built (Python's mmap.flush holds the GIL while it waits)."""
    if native is None:
        fdatasync(fd)
    else:
        native.sync_range(mapping, start, length)


sync_range = _sync_range

_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class StoreError(Exception):
    """The store cannot do what was asked: bad files on disk, a full disk, a second owner."""


class DiskError(StoreError):
    """A store file could not be created, grown or flushed: the disk is full or failing. The
    store's services report it (broker/store/health.py) and go on; they never die of it."""

    def __init__(self, path: Path, action: str, error: OSError) -> None:
        self.path = path
        self.errno = error.errno
        self.strerror = error.strerror or str(error)
        super().__init__(f"cannot {action} {path}: [Errno {self.errno}] {self.strerror}")

    @property
    def disk_full(self) -> bool:
        return self.errno in _FULL


ALLOCATING_SUFFIX = ".allocating"


def _allocate(path: Path, file_size: int, preallocate: int) -> None:
    """Create a segment of ``file_size`` bytes, the first ``preallocate`` of them allocated,
    atomically: under a private name, then linked into place. A crash mid-allocation leaves only
    a ``.allocating`` file (removed at the next load), never a short segment; of two concurrent
    creators the second finds it there."""
    temporary = path.with_name(
        f"{path.name}.{os.getpid()}.{threading.get_ident()}{ALLOCATING_SUFFIX}"
    )
    try:
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as exc:
        raise DiskError(path, "create", exc) from exc
    try:
        if preallocate < file_size:
            os.ftruncate(fd, file_size)  # sparse beyond what is allocated
        fallocate(fd, 0, preallocate)
    except OSError as exc:
        os.close(fd)
        temporary.unlink(missing_ok=True)
        raise DiskError(path, f"allocate {preallocate} bytes for", exc) from exc
    os.close(fd)
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass
    except OSError as exc:
        raise DiskError(path, "create", exc) from exc
    finally:
        temporary.unlink(missing_ok=True)


def remove_stale_allocations(directory: Path) -> list[Path]:
    stale = [p for p in directory.glob(f"*{ALLOCATING_SUFFIX}")] if directory.is_dir() else []
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def segment_name(start_offset: int) -> str:
    """Segments are named by their start offset, 20 digits, zero padded."""
    return f"{start_offset:020d}"


class MappedFile:
    __slots__ = (
        "_fd",
        "file_size",
        "flushed_position",
        "mmap",
        "path",
        "start_offset",
        "view",
        "warmed_position",
        "wrote_position",
    )

    def __init__(
        self, path: Path, file_size: int, *, create: bool, preallocate: int | None = None
    ) -> None:
        self.path = path
        self.file_size = file_size
        self.start_offset = int(path.name)
        if create and not path.exists():
            _allocate(path, file_size, file_size if preallocate is None else preallocate)
        try:
            self._fd = os.open(path, os.O_RDWR)
        except OSError as exc:
            if not create:
                raise
            raise DiskError(path, "open", exc) from exc
        try:
            actual = os.fstat(self._fd).st_size
            if actual != file_size:
                raise StoreError(
                    f"{path} has {actual} bytes, expected {file_size} (mappedFileSize)"
                )
            self.mmap = mmap.mmap(
                self._fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE
            )
        except BaseException:
            os.close(self._fd)
            raise
        self.view = memoryview(self.mmap)
        self.wrote_position = 0
        self.flushed_position = 0
        self.warmed_position = 0  # pages below are faulted in (broker/store/warm.py)

    def __repr__(self) -> str:
        return f"<MappedFile {self.path.name} wrote={self.wrote_position} flushed={self.flushed_position}>"

    @property
    def end_offset(self) -> int:
        return self.start_offset + self.file_size

    @property
    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    @property
    def remaining(self) -> int:
        return self.file_size - self.wrote_position

    def slice(self, position: int, size: int) -> memoryview:
        return self.view[position : position + size]

    def flush(self) -> None:
        """Make everything written so far durable. Blocking: call from a worker thread."""
        fd = self._fd
        if fd < 0:
            return  # closed (deleted by cleanup): nothing left to make durable
        try:
            fdatasync(fd)
        except OSError as exc:
            if exc.errno == errno.EBADF and self._fd < 0:
                return  # closed while this flush ran
            raise DiskError(self.path, "flush", exc) from exc

    def flush_range(self, start: int, end: int) -> None:
        """Make ``[start, end)`` durable, and no more of the file: the pages the warmer
        populated past ``end`` are dirty zeros, which a whole-file fdatasync wrote to disk
        (40-70% more bytes written than stored at 1 KiB messages) and write-protected again, so
        the appender faulted on them once more. Blocking: call from a worker thread."""
        fd = self._fd
        if fd < 0 or end <= start:
            return
        aligned = start - start % OS_PAGE_SIZE
        try:
            sync_range(fd, self.mmap, aligned, min(end, self.file_size) - aligned)
        except ValueError:
            if self.mmap.closed:
                return  # unmapped (deleted by cleanup): nothing left to make durable
            raise
        except OSError as exc:
            raise DiskError(self.path, "flush", exc) from exc

    def allocate_range(self, position: int, length: int) -> None:
        """Back ``[position, position + length)`` of the file with disk blocks, so writing it
        through the mapping cannot fault for want of space. Raises DiskError."""
        try:
            fallocate(self._fd, position, length)
        except OSError as exc:
            raise DiskError(self.path, f"allocate {length} bytes at {position} in", exc) from exc

    def redirty(self, start: int, end: int) -> None:
        """Write one byte of each page of ``[start, end)`` back as it is. After a failed flush
        the kernel may have marked those pages clean with their data never written (Linux
        reports a writeback error once): dirty again, the next flush writes them for real or
        fails again, instead of succeeding over data that is not on disk."""
        mm = self.mmap
        if mm.closed:
            return
        for position in range(start - start % OS_PAGE_SIZE, min(end, self.file_size), OS_PAGE_SIZE):
            mm[position] = mm[position]

    def zero_from(self, position: int) -> int:
        """Zero stale bytes after a cut point, up to the first page-aligned page that is already
        all zeros (appends are sequential: beyond such a page nothing was written). Without this,
        after a later crash recovery could read old, cut-off records as valid ones.
        Returns the number of bytes zeroed."""
        end = position
        while end < self.file_size:
            page_end = min(self.file_size, (end // OS_PAGE_SIZE + 1) * OS_PAGE_SIZE)
            chunk = self.mmap[end:page_end]
            if chunk.count(0) == len(chunk):
                if end % OS_PAGE_SIZE == 0:
                    break
            else:
                self.mmap[end:page_end] = bytes(page_end - end)
            end = page_end
        return end - position

    def close(self) -> None:
        try:
            self.view.release()
            self.mmap.close()
        except BufferError:
            # A reader still holds a slice (a pull being written out). The mapping goes away
            # when the last slice does.
            log.debug("segment still referenced, unmapped later: %s", self.path)
        fd, self._fd = self._fd, -1
        if fd < 0:
            return
        try:
            os.close(fd)
        except OSError:
            pass

    def destroy(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
