"""The HA byte protocol (docs/spec/ha.md §3), sans-IO: no sockets here, only bytes in and out.

Slave -> master: a stream of big-endian int64 offsets (the newest one counts).
Master -> slave: chunks ``[int64 masterPhyOffset][int32 bodySize][body]``.
"""

from __future__ import annotations

import struct

import attrs

REPORT = struct.Struct(">q")
CHUNK_HEADER = struct.Struct(">qi")
REPORT_SIZE = REPORT.size  # 8
CHUNK_HEADER_SIZE = CHUNK_HEADER.size  # 12


class ProtocolError(Exception):
    """The peer sent something the protocol does not allow; the connection must close."""


def encode_report(offset: int) -> bytes:
    return REPORT.pack(offset)


def encode_chunk_header(offset: int, size: int) -> bytes:
    return CHUNK_HEADER.pack(offset, size)


class ReportDecoder:
    """Master side: the slave's reports arrive as a byte stream cut anywhere; ``feed`` returns
    every complete offset in order (callers usually only keep the last)."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> list[int]:
        buffer = self._pending + data if self._pending else data
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
