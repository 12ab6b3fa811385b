"""A single message's CommitLog record: its properties encoded, the CommitLog's checks, its
size, and the record packed at the segment's write position, in one step.

``append_message`` runs for every message sent one at a time, so it is one native call when
remoting._speedups is built; the ``python_`` functions here are the reference the tests hold
the native one to.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from typing import Any

from broker.store.types import MessageExtBrokerInner
from remoting import message as codec
from remoting.java_hash import tags_code
from remoting.message import MessageConst
from remoting.record import END_FILE_MIN_BLANK_LENGTH, python_pack_records_into, record_size
from remoting.speedups import native

MAX_TOPIC_BYTES = 127
MAX_PROPERTIES_BYTES = 32767


class RecordRefused(Exception):
    """A message the CommitLog does not take: the PutMessageStatus name and why."""

    def __init__(self, status: str, remark: str) -> None:
        super().__init__(status, remark)
        self.status, self.remark = status, remark


def python_message_fields(properties: dict[str, str]) -> tuple[bytes, int, str, str]:
    """(encoded properties, tags code, KEYS, UNIQ_KEY) of a single message's properties: what
    its record stores (None values left out) and what its dispatch needs."""
    return (
        codec.properties_to_string(properties).encode("utf-8"),
        tags_code(properties.get(MessageConst.TAGS)),
        properties.get(MessageConst.KEYS) or "",
        properties.get(MessageConst.UNIQ_KEY) or "",
    )


def record_problem(
    topic: bytes, properties: bytes, body_length: int, max_body: int
) -> tuple[str, str] | None:
    """Why the CommitLog does not take a record (the PutMessageStatus name and a remark), or
    None: its limits on topic, properties and body, checked in Java's order."""
    if len(topic) > MAX_TOPIC_BYTES:
        return "MESSAGE_ILLEGAL", f"topic is {len(topic)} bytes, max {MAX_TOPIC_BYTES}"
    if len(properties) > MAX_PROPERTIES_BYTES:
        return (
            "PROPERTIES_SIZE_EXCEEDED",
            f"properties are {len(properties)} bytes, max {MAX_PROPERTIES_BYTES}",
        )
    if body_length > max_body:
        return "MESSAGE_ILLEGAL", f"body is {body_length} bytes, max {max_body}"
    return None


def python_append_message(
    mm: mmap.mmap | bytearray,
    position: int,
    start_offset: int,
    msg: MessageExtBrokerInner,
    topic: bytes,
    queue_offset: int,
    store_timestamp: int,
    store_address: bytes,
    store_port: int,
    max_body: int,
    refused_type: type[Exception],
    crc32: Callable[[Any], int],
) -> tuple[int, int, str, str] | int:
    """Pack ``msg``'s record at ``position`` of the segment starting at ``start_offset``:
    (size, tags code, KEYS, UNIQ_KEY). When the record (with the 8-byte BLANK filler) does not
    fit in what is left, nothing is written and its size alone comes back. A message the log
    does not take raises ``refused_type(status, remark)``. The reference of
    remoting/native/single.c's append_message."""
    properties, tags, keys, uniq_key = python_message_fields(msg.properties)
    body = msg.body
    problem = record_problem(topic, properties, len(body), max_body)
    if problem is not None:
        raise refused_type(*problem)
    born_address, born_port = msg.born_host
    if len(born_address) not in (4, 16) or len(store_address) not in (4, 16):
        raise ValueError("host addresses are 4 or 16 bytes")
    size = record_size(
        len(body),
        len(topic),
        len(properties),
        born_v6=len(born_address) == 16,
        store_v6=len(store_address) == 16,
    )
    if not 0 <= position <= len(mm):
        raise IndexError(f"position {position} outside a {len(mm)}-byte segment")
    if size + END_FILE_MIN_BLANK_LENGTH > len(mm) - position:
        return size
    python_pack_records_into(
        mm,
        position,
        [(msg.flag, body, properties, size, crc32(body) & 0x7FFFFFFF)],
        topic,
        msg.queue_id,
        queue_offset,
        start_offset + position,
        msg.sys_flag,
        msg.born_timestamp,
        born_address,
        born_port,
        store_timestamp,
        store_address,
        store_port,
        msg.reconsume_times,
        msg.prepared_transaction_offset,
    )
    return size, tags, keys, uniq_key


append_message = native.append_message if native is not None else python_append_message
