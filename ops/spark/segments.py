"""CommitLog backups as ranges, and a streaming record reader (pure: no Spark here, so the same
code runs in tests, in the apply step and inside Spark tasks).

A backup is a folder of segment files named by their 20-digit start offset. The driver lists
(path, file start, range start, range end) ranges, one per segment or per aligned sub-range; a
task reads its range through a bounded buffer and never holds a whole segment. A task that
starts inside a file re-synchronises on the first record whose magic matches and whose
PHYSICALOFFSET field equals its own position (a body containing the magic bytes cannot fool
that), and finishes the last record that crosses its end.
"""

from __future__ import annotations

import itertools
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from remoting import message as codec
from remoting.message import RecordKind

BUFFER_BYTES = 8 << 20
MAX_RECORD_GUESS = 64 << 10  # below this many buffered bytes, refill before scanning
NAME_DIGITS = 20
_HEAD = struct.Struct(">ii")
_PHYS = struct.Struct(">q")


class BackupError(ValueError):
    """The backup cannot be read as one CommitLog; the message says where and why."""


class Segment(NamedTuple):
    path: str
    start: int  # the offset its name says
    size: int  # bytes in the file


class Range(NamedTuple):
    path: str
    file_start: int
    start: int  # absolute offsets [start, end)
    end: int


class Row(NamedTuple):
    """One record of the per-message index."""

    phys_offset: int
    size: int
    kind: str  # MESSAGE | BLANK | CORRUPT
    topic: str
    queue_id: int
    queue_offset: int
    store_timestamp: int
    keys: str
    uniq_key: str
    crc_ok: bool
    digest: int  # crc32 of the whole record: equal digests and sizes = equal bytes
    store_host: str


def list_segments(folder: Path | str) -> list[Segment]:
    """The segments of a CommitLog folder, in order, checked for gaps and overlaps."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BackupError(f"{folder}: not a directory")
    segments = []
    for path in sorted(folder.iterdir()):
        if not path.is_file() or path.name.startswith("."):
            continue
        if len(path.name) != NAME_DIGITS or not path.name.isdigit():
            raise BackupError(f"{path}: not a CommitLog segment (name must be a 20-digit offset)")
        segments.append(Segment(str(path), int(path.name), path.stat().st_size))
    for previous, current in itertools.pairwise(segments):
        expected = previous.start + previous.size
        if current.start > expected:
            raise BackupError(
                f"missing segment: {Path(previous.path).name} ends at {expected} but the next "
                f"file starts at {current.start} ({current.start - expected} bytes absent)"
            )
        if current.start < expected:
            raise BackupError(
                f"overlapping segments: {Path(previous.path).name} runs to {expected}, "
                f"past {Path(current.path).name}"
            )
    return segments


def ranges(segments: list[Segment], split_bytes: int | None = None) -> list[Range]:
    out = []
    for seg in segments:
        step = split_bytes or max(seg.size, 1)
        for start in range(0, max(seg.size, 1), step):
            out.append(
                Range(
                    seg.path, seg.start, seg.start + start, seg.start + min(seg.size, start + step)
                )
            )
    return out


def _resync(buffer: memoryview, base: int, limit: int) -> int:
    """Position of the first plausible record at or after 0 whose PHYSICALOFFSET field equals
    its own absolute offset; -1 if none in the buffer."""
    magic = struct.pack(">i", codec.MESSAGE_MAGIC_CODE)
    data = buffer.obj if isinstance(buffer.obj, bytes | bytearray) else bytes(buffer)
    at = 4
    while True:
        at = data.find(magic, at, limit)
        if at < 0:
            return -1
        pos = at - 4
        if pos + codec.PHYS_OFFSET_POS + 8 <= len(data):
            (phys,) = _PHYS.unpack_from(data, pos + codec.PHYS_OFFSET_POS)
            if phys == base + pos:
                return pos
        at += 1


class _Window:
    """A sliding window over one file: ``buffer[0]`` is at absolute offset ``base``."""

    def __init__(self, handle, base: int, file_end: int, chunk: int) -> None:
        self.handle, self.base, self.file_end, self.chunk = handle, base, file_end, chunk
        self.buffer = handle.read(min(chunk, file_end - base))

    @property
    def eof(self) -> bool:
        return self.base + len(self.buffer) >= self.file_end

    def ensure(self, position: int, needed: int) -> int:
        """Make ``needed`` bytes from ``position`` available when the file has them; returns
        the (possibly moved) position."""
        if len(self.buffer) - position >= needed or self.eof:
            return position
        self.buffer = self.buffer[position:] + self.handle.read(max(self.chunk, needed))
        self.base += position
        return 0


def read_range(rng: Range, *, buffer_bytes: int = BUFFER_BYTES) -> Iterator[Row]:
    """The records that start in ``rng``: streamed, bounded memory, CRC checked. A corrupt
    record ends the range (past it nothing is trustworthy, as in recovery)."""
    with open(rng.path, "rb") as handle:
        handle.seek(rng.start - rng.file_start)
        file_end = rng.file_start + os.fstat(handle.fileno()).st_size
        window = _Window(handle, rng.start, file_end, buffer_bytes)
        position = 0
        if rng.start != rng.file_start:
            position = _resync(memoryview(window.buffer), window.base, len(window.buffer))
            while position < 0 and not window.eof and window.base + len(window.buffer) < rng.end:
                keep = len(window.buffer) - 8
                window.ensure(keep, 8 + buffer_bytes)
                position = _resync(memoryview(window.buffer), window.base, len(window.buffer))
            if position < 0:
                return
        while window.base + position < min(rng.end, file_end):
            if len(window.buffer) - position < MAX_RECORD_GUESS:
                position = window.ensure(position, 8)
                position = window.ensure(position, max(_record_size(window.buffer, position), 8))
            view = memoryview(window.buffer)
            scan = codec.scan_record(view, position, check_crc=True)
            if scan.kind is not RecordKind.MESSAGE and not window.eof:
                needed = max(_record_size(window.buffer, position), 8)
                if len(window.buffer) - position < needed:  # cut by the window, not corrupt
                    del view
                    position = window.ensure(position, needed)
                    continue
            absolute = window.base + position
            if scan.kind is RecordKind.MESSAGE:
                yield _row(view, position, absolute, scan)
                position += scan.size
                continue
            if scan.kind is RecordKind.BLANK:
                yield Row(absolute, scan.size, "BLANK", "", -1, -1, 0, "", "", True, 0, "")
            elif scan.kind is RecordKind.CORRUPT:
                size = _record_size(window.buffer, position)
                yield Row(absolute, size, "CORRUPT", scan.reason, -1, -1, 0, "", "", False, 0, "")
            return


def _record_size(buffer: bytes | memoryview, position: int) -> int:
    if len(buffer) - position < 8:
        return 0
    total, magic = _HEAD.unpack_from(buffer, position)
    return total if magic == codec.MESSAGE_MAGIC_CODE and total > 0 else 0


_HOSTS: dict[bytes, str] = {}


def _store_host(view: memoryview, position: int, sys_flag: int) -> str:
    at = position + 48 + (20 if sys_flag & codec.BORNHOST_V6_FLAG else 8) + 8
    width = 16 if sys_flag & codec.STOREHOSTADDRESS_V6_FLAG else 4
    raw = bytes(view[at : at + width + 4])
    host = _HOSTS.get(raw)
    if host is None:
        (port,) = struct.unpack_from(">i", raw, width)
        host = _HOSTS[raw] = codec.host_string(raw[:width], port)
    return host


def _property(text: str, name: str) -> str:
    """One property's value without parsing them all (keys and UNIQ_KEY per record)."""
    at = text.find(name + "\x01")
    while at > 0 and text[at - 1] != "\x02":
        at = text.find(name + "\x01", at + 1)
    if at < 0:
        return ""
    start = at + len(name) + 1
    end = text.find("\x02", start)
    return text[start:] if end < 0 else text[start:end]


def _row(view: memoryview, position: int, absolute: int, scan: codec.RecordScan) -> Row:
    props = scan.properties
    return Row(
        absolute,
        scan.size,
        "MESSAGE",
        scan.topic,
        scan.queue_id,
        scan.queue_offset,
        scan.store_timestamp,
        _property(props, codec.MessageConst.KEYS),
        _property(props, codec.MessageConst.UNIQ_KEY),
        True,
        zlib.crc32(view[position : position + scan.size]),
        _store_host(view, position, scan.sys_flag),
    )
