"""The HA byte protocol (docs/spec/ha.md §3), sans-IO: no sockets here, only bytes in and out.

Slave -> master: a stream of big-endian int64 offsets (the newest one counts).
Master -> slave: chunks ``[int64 masterPhyOffset][int32 bodySize][body]``.

Ours, controller mode only (docs/spec/ha.md §3.6): a slave first sends a *hello*,
``[int64 HELLO_MARK][int32 epoch][int64 memberId]``, so the master counts distinct SyncStateSet
members of its own epoch, not connections, toward minInSyncReplicas. The mark is negative, an
offset no 4.x slave sends (a master not in controller mode refuses it as a bad offset).
"""

from __future__ import annotations

import struct

import attrs

REPORT = struct.Struct(">q")
CHUNK_HEADER = struct.Struct(">qi")
REPORT_SIZE = REPORT.size  # 8
HELLO = struct.Struct(">qiq")
HELLO_MARK = -0x524D_5148_454C_4C4F  # "RMQHELLO", negated
CHUNK_HEADER_SIZE = CHUNK_HEADER.size  # 12


class ProtocolError(Exception):
    """The peer sent something the protocol does not allow; the connection must close."""


def encode_report(offset: int) -> bytes:
    return REPORT.pack(offset)


@attrs.frozen
class Hello:
    epoch: int
    member_id: int


def encode_hello(epoch: int, member_id: int) -> bytes:
    return HELLO.pack(HELLO_MARK, epoch, member_id)


def encode_chunk_header(offset: int, size: int) -> bytes:
    return CHUNK_HEADER.pack(offset, size)


class ReportDecoder:
    """Master side: the slave's reports arrive as a byte stream cut anywhere; ``feed`` returns
    every complete offset in order (callers usually only keep the last)."""

    def __init__(self) -> None:
        self._pending = b""
        self._at_start = True
        self.hello: Hello | None = None

    def feed(self, data: bytes) -> list[int]:
        buffer = self._pending + data if self._pending else data
        if self._at_start:
            if len(buffer) < REPORT_SIZE:
                self._pending = bytes(buffer)
                return []
            if REPORT.unpack_from(buffer)[0] == HELLO_MARK:
                if len(buffer) < HELLO.size:
                    self._pending = bytes(buffer)
                    return []
                _, epoch, member_id = HELLO.unpack_from(buffer)
                if not epoch > 0 or not member_id > 0:
                    raise ProtocolError(f"bad hello: epoch={epoch} memberId={member_id}")
                self.hello = Hello(epoch, member_id)
                buffer = buffer[HELLO.size :]
            self._at_start = False
        whole = len(buffer) - len(buffer) % REPORT_SIZE
        self._pending = bytes(buffer[whole:])
        offsets = [value for (value,) in REPORT.iter_unpack(buffer[:whole])]
        for value in offsets:
            if value < 0:
                raise ProtocolError(f"negative offset reported: {value}")
        return offsets


@attrs.frozen
class Chunk:
    offset: int
    body: bytes


class ChunkDecoder:
    """Slave side: reassembles chunks from a byte stream cut anywhere. A body larger than
    ``max_body`` is a protocol error: a confused or hostile peer must not make us buffer
    without bound."""

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Chunk]:
        buffer = self._buffer
        buffer += data
        chunks: list[Chunk] = []
        position = 0
        while len(buffer) - position >= CHUNK_HEADER_SIZE:
            offset, size = CHUNK_HEADER.unpack_from(buffer, position)
            if offset < 0 or size < 0 or size > self.max_body:
                raise ProtocolError(f"bad chunk header: offset={offset} size={size}")
            end = position + CHUNK_HEADER_SIZE + size
            if end > len(buffer):
                break
            chunks.append(Chunk(offset, bytes(buffer[position + CHUNK_HEADER_SIZE : end])))
            position = end
        if position:
            del buffer[:position]
        return chunks
