"""MappedFile: one pre-allocated segment mapped into memory (spec/store-format.md §2, §3).

The segment's bytes are written with ``pack_into``/slice assignment straight into ``mmap``.
Files are pre-allocated with ``posix_fallocate`` so a full disk shows up as an error at creation,
never as a SIGBUS when a page of a sparse file is first written. ``flush()`` is
``fdatasync``, which releases the GIL (``mmap.flush`` does not) and writes back the pages dirtied
through the mapping; callers run it in a worker thread.

Readers get memoryview slices. A segment that is deleted while such a slice is still being sent
stays mapped until the slice is released: Python's buffer protocol counts the exports for us.
"""

from __future__ import annotations

import logging
import mmap
import os
from pathlib import Path

log = logging.getLogger(__name__)

OS_PAGE_SIZE = 4096


class StoreError(Exception):
    """The store cannot do what was asked: bad files on disk, a full disk, a second owner."""


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
        "wrote_position",
    )

    def __init__(self, path: Path, file_size: int, *, create: bool) -> None:
        self.path = path
        self.file_size = file_size
        self.start_offset = int(path.name)
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        self._fd = os.open(path, flags, 0o644)
        try:
            actual = os.fstat(self._fd).st_size
            if create and actual == 0:
                try:
                    os.posix_fallocate(self._fd, 0, file_size)
                except OSError as exc:
                    raise StoreError(
                        f"cannot allocate {file_size} bytes for {path}: {exc}"
                    ) from exc
            elif actual != file_size:
                raise StoreError(
                    f"{path} has {actual} bytes, expected {file_size} (mappedFileSize)"
                )
            self.mmap = mmap.mmap(
                self._fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE
            )
        except BaseException:
            os.close(self._fd)
            if create:
                path.unlink(missing_ok=True)
            raise
        self.view = memoryview(self.mmap)
        self.wrote_position = 0
        self.flushed_position = 0

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
        os.fdatasync(self._fd)

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
        self.view.release()
        try:
            self.mmap.close()
        except BufferError:
            # A reader still holds a slice (a pull being written out). The mapping goes away
            # when the last slice does.
            log.debug("segment still referenced, unmapped later: %s", self.path)
        try:
            os.close(self._fd)
        except OSError:
            pass

    def destroy(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
