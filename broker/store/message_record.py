"""A single message's CommitLog record: its properties encoded, the CommitLog's checks, its
size, and the record packed at the segment's write position, in one step; and ``put_single``,
that step with the CommitLog's bookkeeping around it (offsets, ids, results).

Both run for every message sent one at a time, so each is one native call when
remoting._speedups is built; the ``python_`` functions here are the reference the tests hold
the native ones to.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from zlib import crc32 as zlib_crc32

from broker.store.mapped_file import MappedFile
from broker.store.types import (
    AppendMessageResult,
    DispatchRequest,
    MessageExtBrokerInner,
    PutMessageResult,
    PutMessageStatus,
)
from remoting import message as codec
from remoting.java_hash import tags_code
from remoting.message import MessageConst
from remoting.record import END_FILE_MIN_BLANK_LENGTH, python_pack_records_into, record_size
from remoting.speedups import native

if TYPE_CHECKING:
    from broker.store.commit_log import CommitLog

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


def python_put_single(
    commit_log: CommitLog, mapped: MappedFile, msg: MessageExtBrokerInner
) -> tuple[PutMessageResult, DispatchRequest] | int:
    """Append ``msg`` at ``mapped``'s write position: its queue offset (none for a prepared or
    rolled-back half) and store timestamp taken, the record packed, the segment's write
    position, the queue's next offset and the log's last put time moved on; its result and
    dispatch request back (tags code from TAGS). A record that does not fit comes back as
    its size, nothing changed; a refused message raises RecordRefused. The reference of
    remoting/native/put.c's put_single."""
    topic = msg.topic
    key = (topic, msg.queue_id)
    queued = not msg.sys_flag & codec.TRANSACTION_NOT_QUEUED_BIT
    table = commit_log.topic_queue_table
    queue_offset = table.get(key, 0) if queued else 0
    store_ts = commit_log.clock()
    position = mapped.wrote_position
    appended = append_message(
        mapped.mmap,
        position,
        mapped.start_offset,
        msg,
        topic.encode("utf-8"),
        queue_offset,
        store_ts,
        commit_log.store_address,
        commit_log.store_port,
        commit_log.config.max_message_size,
        RecordRefused,
        zlib_crc32,
    )
    if type(appended) is int:
        return appended
    size, tags, keys, uniq_key = appended
    mapped.wrote_position = position + size
    if queued:
        table[key] = queue_offset + 1
    commit_log.last_put_timestamp = store_ts
    phys_offset = mapped.start_offset + position
    msg_id = f"{commit_log.msg_id_prefix}{phys_offset:016X}"
    # wrote_offset, wrote_bytes, msg_id, msg_ids, store_timestamp, queue_offset
    append = AppendMessageResult(phys_offset, size, msg_id, [msg_id], store_ts, queue_offset)
    request = DispatchRequest(
        topic,
        msg.queue_id,
        phys_offset,
        size,
        tags,
        store_ts,
        queue_offset,
        keys,
        uniq_key,
        msg.sys_flag,
        msg.properties,
    )
    return PutMessageResult(PutMessageStatus.PUT_OK, append), request


def _native_put_single() -> Callable[..., Any] | None:
    if native is None:
        return None
    native.configure_put(
        RecordRefused,
        zlib_crc32,
        DispatchRequest,
        AppendMessageResult,
        PutMessageResult,
        PutMessageStatus.PUT_OK,
    )
    return native.put_single


put_single = _native_put_single() or python_put_single
