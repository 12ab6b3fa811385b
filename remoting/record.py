"""CommitLog records (docs/spec/message-format.md §1-§4): packing one record or a batch's
records straight into a mapped buffer, and scanning records back for dispatch and recovery
without decoding bodies. Pure: no Trio, no logging, no clock. The layout itself (sizes,
positions, magic codes, RecordScan) is remoting/record_layout.py, re-exported here.

Message-level reading (MessageExt, properties, message ids, batch bodies) is remoting.message.

``pack_records_into`` and ``scan_record`` run the native twins (remoting/native/codec/, module
remoting._codec) when built; ``python_pack_records_into`` and ``python_scan_record`` here are
their reference, held to the same bytes and results by tests/unit/remoting/test_codec_twins.py.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from remoting.codec_native import native
from remoting.record_layout import (
    BLANK_MAGIC_CODE,
    BORN_HOST_POS,
    BORN_TIMESTAMP_POS,
    BORNHOST_V6_FLAG,
    END_FILE_MIN_BLANK_LENGTH,
    HEADER_V4,
    HEADERS,
    MESSAGE_MAGIC_CODE,
    PHYS_OFFSET_POS,
    QUEUE_OFFSET_POS,
    RECORD_FIXED_BYTES,
    STOREHOSTADDRESS_V6_FLAG,
    SYS_FLAG_POS,
    RecordKind,
    RecordScan,
    record_size,
)

__all__ = [
    "BLANK_MAGIC_CODE",
    "BORNHOST_V6_FLAG",
    "BORN_HOST_POS",
    "BORN_TIMESTAMP_POS",
    "END_FILE_MIN_BLANK_LENGTH",
    "HEADERS",
    "HEADER_V4",
    "MESSAGE_MAGIC_CODE",
    "PHYS_OFFSET_POS",
    "QUEUE_OFFSET_POS",
    "STOREHOSTADDRESS_V6_FLAG",
    "SYS_FLAG_POS",
    "RecordKind",
    "RecordScan",
    "iter_records",
    "pack_blank_into",
    "pack_record_into",
    "pack_records_at",
    "pack_records_into",
    "python_pack_records_into",
    "python_scan_record",
    "record_size",
    "scan_record",
]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_BLANK = struct.Struct(">ii")


# ------------------------------------------------------------------- encoding


def pack_record_into(
    buffer: bytearray | memoryview,
    pos: int,
    *,
    total_size: int,
    body_crc: int,
    queue_id: int,
    flag: int,
    queue_offset: int,
    phys_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_address: bytes,
    born_port: int,
    store_timestamp: int,
    store_address: bytes,
    store_port: int,
    reconsume_times: int,
    prepared_transaction_offset: int,
    body: bytes | bytearray | memoryview,
    topic: bytes,
    properties: bytes,
) -> int:
    """Write one record at ``pos``; returns its size. ``total_size`` must equal ``record_size``
    (the caller computed it to decide where the record goes)."""
    pack_records_into(
        buffer,
        pos,
        [(flag, body, properties, total_size, body_crc)],
        topic,
        queue_id=queue_id,
        queue_offset=queue_offset,
        phys_offset=phys_offset,
        sys_flag=sys_flag,
        born_timestamp=born_timestamp,
        born_address=born_address,
        born_port=born_port,
        store_timestamp=store_timestamp,
        store_address=store_address,
        store_port=store_port,
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared_transaction_offset,
    )
    return total_size


def python_pack_records_into(
    buffer: bytearray | memoryview,
    pos: int,
    records: list[tuple[int, bytes | bytearray | memoryview, bytes, int, int]],
    topic: bytes,
    queue_id: int,
    queue_offset: int,
    phys_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_address: bytes,
    born_port: int,
    store_timestamp: int,
    store_address: bytes,
    store_port: int,
    reconsume_times: int,
    prepared_transaction_offset: int = 0,
) -> None:
    """Write records back to back from ``pos``: ``records`` are (flag, body, properties, total
    size, body CRC) and share everything else, with consecutive queue offsets (one message, or
    the entries of a batch: one call per batch, not per message).

    Each record's magic code is written last, as a commit marker: a process killed halfway
    through leaves a record without it, which recovery stops at. (RocketMQ's CRC covers only the
    body, so a record torn inside its properties would otherwise look valid.)"""
    header = HEADERS[(len(born_address) == 16, len(store_address) == 16)]
    header_size, pack_header, pack_i16 = header.size, header.pack_into, _I16.pack_into
    if len(born_address) == 16:
        sys_flag |= BORNHOST_V6_FLAG
    if len(store_address) == 16:
        sys_flag |= STOREHOSTADDRESS_V6_FLAG
    topic_length = len(topic)
    for flag, body, properties, size, body_crc in records:
        body_length = len(body)
        pack_header(
            buffer,
            pos,
            size,
            0,  # the magic code goes in last
            body_crc,
            queue_id,
            flag,
            queue_offset,
            phys_offset,
            sys_flag,
            born_timestamp,
            born_address,
            born_port,
            store_timestamp,
            store_address,
            store_port,
            reconsume_times,
            prepared_transaction_offset,
            body_length,
        )
        at = pos + header_size
        end = at + body_length
        buffer[at:end] = body
        buffer[end] = topic_length
        at = end + 1
        end = at + topic_length
        buffer[at:end] = topic
        pack_i16(buffer, end, len(properties))
        at = end + 2
        end = at + len(properties)
        buffer[at:end] = properties
        if end - pos != size:
            raise AssertionError(f"record size {end - pos} != declared {size}")
        _I32.pack_into(buffer, pos + 4, MESSAGE_MAGIC_CODE)
        pos = end
        phys_offset += size
        queue_offset += 1


# Every argument positional, in ``python_pack_records_into``'s order: the append path's call
# (keyword arguments cost ~0.7 us a call there).
pack_records_at = native.pack_records_into if native is not None else python_pack_records_into


def pack_records_into(
    buffer: bytearray | memoryview,
    pos: int,
    records: list[tuple[int, bytes | bytearray | memoryview, bytes, int, int]],
    topic: bytes,
    *,
    queue_id: int,
    queue_offset: int,
    phys_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_address: bytes,
    born_port: int,
    store_timestamp: int,
    store_address: bytes,
    store_port: int,
    reconsume_times: int,
    prepared_transaction_offset: int = 0,
) -> None:
    """``python_pack_records_into`` by keyword, natively when remoting._codec is built."""
    pack_records_at(
        buffer, pos, records, topic, queue_id, queue_offset, phys_offset, sys_flag,
        born_timestamp, born_address, born_port, store_timestamp, store_address, store_port,
        reconsume_times, prepared_transaction_offset,
    )  # fmt: skip


def pack_blank_into(buffer: bytearray | memoryview, pos: int, remaining: int) -> None:
    """The end-of-file filler: only 8 bytes are written, TOTALSIZE claims the rest of the file."""
    _BLANK.pack_into(buffer, pos, remaining, BLANK_MAGIC_CODE)


# ------------------------------------------------------------------- scanning (dispatch, recovery)


def python_scan_record(view: memoryview, pos: int, *, check_crc: bool = False) -> RecordScan:
    """What dispatch and recovery need from the record at ``pos``, without the body.

    A record is accepted only if its magic, its TOTALSIZE (against the sum of its fields and the
    bytes available) and, with ``check_crc``, its body CRC all hold: Java's
    checkMessageAndReturnSize.
    """
    available = len(view) - pos
    if available < 8:
        return RecordScan(RecordKind.END, 0, reason="segment ends")
    total, magic = _BLANK.unpack_from(view, pos)
    if magic == BLANK_MAGIC_CODE:
        return RecordScan(RecordKind.BLANK, total)
    if magic != MESSAGE_MAGIC_CODE:
        if total == 0 and magic == 0:
            return RecordScan(RecordKind.END, 0, reason="zeros")
        return RecordScan(RecordKind.CORRUPT, 0, reason=f"bad magic code {magic & 0xFFFFFFFF:#x}")
    if total < RECORD_FIXED_BYTES or total > available:
        return RecordScan(
            RecordKind.CORRUPT, 0, reason=f"size {total} does not fit ({available} bytes left)"
        )
    (sys_flag,) = _I32.unpack_from(view, pos + SYS_FLAG_POS)
    born6, store6 = bool(sys_flag & BORNHOST_V6_FLAG), bool(sys_flag & STOREHOSTADDRESS_V6_FLAG)
    header = HEADERS[(born6, store6)]
    if total < header.size + 3:
        return RecordScan(RecordKind.CORRUPT, 0, reason=f"size {total} does not fit its header")
    fields = header.unpack_from(view, pos)
    crc, queue_id, body_length = fields[2], fields[3], fields[16]
    store_ts = fields[11]
    at = pos + header.size + body_length
    if body_length < 0 or at >= pos + total:
        return RecordScan(RecordKind.CORRUPT, 0, reason=f"body length {body_length} does not fit")
    topic_length = view[at]
    props_at = at + 1 + topic_length
    if props_at + 2 > pos + total:
        return RecordScan(RecordKind.CORRUPT, 0, reason="topic runs past the record")
    (props_length,) = _I16.unpack_from(view, props_at)
    if (
        record_size(body_length, topic_length, props_length, born_v6=born6, store_v6=store6)
        != total
    ):
        return RecordScan(
            RecordKind.CORRUPT, 0, reason=f"fields do not add up to TOTALSIZE {total}"
        )
    if check_crc:
        body_at = pos + header.size
        if crc != zlib.crc32(view[body_at : body_at + body_length]) & 0x7FFFFFFF:
            return RecordScan(RecordKind.CORRUPT, 0, reason="body CRC mismatch")
    try:
        topic = bytes(view[at + 1 : props_at]).decode("utf-8")
        properties = bytes(view[props_at + 2 : props_at + 2 + props_length]).decode("utf-8")
    except UnicodeDecodeError:
        return RecordScan(RecordKind.CORRUPT, 0, reason="topic or properties not UTF-8")
    return RecordScan(
        RecordKind.MESSAGE,
        total,
        topic,
        queue_id,
        fields[5],
        fields[6],
        sys_flag,
        store_ts,
        properties,
    )


scan_record = native.scan_record if native is not None else python_scan_record


def iter_records(view: memoryview, pos: int = 0) -> Iterator[tuple[int, RecordScan]]:
    """(position, scan) for every MESSAGE record until the first BLANK, END or CORRUPT one."""
    while pos < len(view):
        scan = scan_record(view, pos)
        if scan.kind is not RecordKind.MESSAGE:
            return
        yield pos, scan
        pos += scan.size
