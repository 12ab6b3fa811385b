"""A streaming record reader over one range of a CommitLog backup (pure: no Spark here, so the
same code runs in tests, in the apply step and inside Spark tasks).

A task reads its range through a bounded buffer and never holds a whole segment. A task that
starts inside a file re-synchronises on the first record whose magic matches and whose
PHYSICALOFFSET field equals its own position (a body containing the magic bytes cannot fool
that), and finishes the last record that crosses its end.

Records with IPv4 hosts that are whole in the buffer take a fused path (one header unpack, the
checks of ``scan_record`` inline, topic and host strings cached): this runs per record
and is most of a task's time. Anything else (IPv6 hosts, BLANK, a suspect record, a record cut
by the window) goes through ``scan_record``, which decides.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from typing import NamedTuple

from ops.spark.segments import Range
from remoting import message as codec
from remoting.record import (
    HEADER_V4,
    MESSAGE_MAGIC_CODE,
    PHYS_OFFSET_POS,
    RecordKind,
    RecordScan,
    scan_record,
)

BUFFER_BYTES = 8 << 20
MAX_RECORD_GUESS = 64 << 10  # below this many buffered bytes, refill before scanning
_HEAD = struct.Struct(">ii")
_PHYS = struct.Struct(">q")
_V4 = HEADER_V4
_V6_FLAGS = codec.BORNHOST_V6_FLAG | codec.STOREHOSTADDRESS_V6_FLAG
_MIN_RECORD = _V4.size + 3  # header, topic length byte, properties length
_KEYS = codec.MessageConst.KEYS
_UNIQ_KEY = codec.MessageConst.UNIQ_KEY


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


def _resync(buffer: memoryview, base: int, limit: int) -> int:
    """Position of the first plausible record at or after 0 whose PHYSICALOFFSET field equals
    its own absolute offset; -1 if none in the buffer."""
    magic = struct.pack(">i", MESSAGE_MAGIC_CODE)
    data = buffer.obj if isinstance(buffer.obj, bytes | bytearray) else bytes(buffer)
    at = 4
    while True:
        at = data.find(magic, at, limit)
        if at < 0:
            return -1
        pos = at - 4
        if pos + PHYS_OFFSET_POS + 8 <= len(data):
            (phys,) = _PHYS.unpack_from(data, pos + PHYS_OFFSET_POS)
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
    """The records that start in ``rng``: streamed,
    bounded memory, CRC checked. A corrupt record ends the range (past it nothing is
    trustworthy, as in recovery)."""
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
        limit = min(rng.end, file_end)
        topics: dict[bytes, str] = {}
        hosts: dict[tuple[bytes, int], str] = {}
        unpack, crc32, magic_code = _V4.unpack_from, zlib.crc32, MESSAGE_MAGIC_CODE
        new_row = tuple.__new__  # a Row without NamedTuple's Python-level __new__
        buffer = window.buffer
        view = memoryview(buffer)
        while window.base + position < limit:
            if len(buffer) - position < MAX_RECORD_GUESS:
                position = window.ensure(position, 8)
                position = window.ensure(position, max(_record_size(window.buffer, position), 8))
                if window.buffer is not buffer:
                    buffer = window.buffer
                    view = memoryview(buffer)
            available = len(buffer) - position
            if available >= _MIN_RECORD:
                fields = unpack(buffer, position)
                total, body_length = fields[0], fields[16]
                end = position + total
                body_at = position + _V4.size
                at = body_at + body_length
                if (
                    fields[1] == magic_code
                    and not fields[7] & _V6_FLAGS
                    and _MIN_RECORD <= total <= available
                    and body_length >= 0
                    and at < end
                    and at + 3 + buffer[at] <= end
                ):
                    props_at = at + 1 + buffer[at]
                    props_length = buffer[props_at] << 8 | buffer[props_at + 1]
                    if (
                        _MIN_RECORD + body_length + buffer[at] + props_length == total
                        and fields[2] == crc32(view[body_at:at]) & 0x7FFFFFFF
                    ):
                        raw_topic = buffer[at + 1 : props_at]
                        topic = topics.get(raw_topic)
                        try:
                            if topic is None:
                                topic = topics[raw_topic] = raw_topic.decode("utf-8")
                            props = buffer[props_at + 2 : end].decode("utf-8")
                        except UnicodeDecodeError:
                            pass  # scan_record reports it
                        else:
                            host = hosts.get((fields[12], fields[13]))
                            if host is None:
                                host = hosts[(fields[12], fields[13])] = codec.host_string(
                                    fields[12], fields[13]
                                )
                            yield new_row(
                                Row,
                                (
                                    window.base + position,
                                    total,
                                    "MESSAGE",
                                    topic,
                                    fields[3],
                                    fields[5],
                                    fields[11],
                                    _property(props, _KEYS),
                                    _property(props, _UNIQ_KEY),
                                    True,
                                    crc32(view[position:end]),
                                    host,
                                ),
                            )
                            position = end
                            continue
            scan = scan_record(view, position, check_crc=True)
            if scan.kind is not RecordKind.MESSAGE and not window.eof:
                needed = max(_record_size(buffer, position), 8)
                if len(buffer) - position < needed:  # cut by the window, not corrupt
                    position = window.ensure(position, needed)
                    buffer = window.buffer
                    view = memoryview(buffer)
                    continue
            absolute = window.base + position
            if scan.kind is RecordKind.MESSAGE:
                yield _row(view, position, absolute, scan)
                position += scan.size
                continue
            if scan.kind is RecordKind.BLANK:
                yield Row(absolute, scan.size, "BLANK", "", -1, -1, 0, "", "", True, 0, "")
            elif scan.kind is RecordKind.CORRUPT:
                size = _record_size(buffer, position)
                yield Row(absolute, size, "CORRUPT", scan.reason, -1, -1, 0, "", "", False, 0, "")
            return


def _record_size(buffer: bytes | memoryview, position: int) -> int:
    if len(buffer) - position < 8:
        return 0
    total, magic = _HEAD.unpack_from(buffer, position)
    return total if magic == MESSAGE_MAGIC_CODE and total > 0 else 0


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
    """One property's value without parsing them all (keys and UNIQ_KEY per record), as Java's
    string2messageProperties leaves it: the last non-empty value of that name."""
    key = name + "\x01"
    at = len(text)
    while (at := text.rfind(key, 0, at)) >= 0:
        if at == 0 or text[at - 1] == "\x02":
            start = at + len(key)
            end = text.find("\x02", start)
            value = text[start:] if end < 0 else text[start:end]
            if value:
                return value
    return ""


def _row(view: memoryview, position: int, absolute: int, scan: RecordScan) -> Row:
    props = scan.properties
    return Row(
        absolute,
        scan.size,
        "MESSAGE",
        scan.topic,
        scan.queue_id,
        scan.queue_offset,
        scan.store_timestamp,
        _property(props, _KEYS),
        _property(props, _UNIQ_KEY),
        True,
        zlib.crc32(view[position : position + scan.size]),
        _store_host(view, position, scan.sys_flag),
    )
