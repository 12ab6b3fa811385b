"""AppendCursor: the CommitLog's append bookkeeping (docs/spec/store-format.md §2).

The cursor owns what an append moves on besides the segment's bytes: the next queue offset of
every (topic, queue id) (Java's topicQueueTable), the last put's store timestamp, and what every
record and message id carries of this broker (its host, port and id prefix). ``put`` packs one
message's record, ``put_batch`` a batch's records; both take the segment's buffer, write
position and start offset, the store timestamp and the message's fields as values, and give
back the message ids and dispatch requests. The caller (CommitLog) then moves the segment's
write position. A record that does not fit comes back as its size, and a refused message or an
error changes nothing: the cursor moves on only once everything it returns is built.

Both run for every message stored, so the cursor is native (broker/store/native/append.c) when
broker.store._native is built; PythonAppendCursor here is the reference the tests hold it to
(tests/unit/store/test_append_cursor.py): same bytes, results, state and refusals.
"""

from __future__ import annotations

import mmap
import zlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from broker.store.batch_records import Record, python_dispatch_fields
from broker.store.index_file import python_index_hashes
from broker.store.layout import BATCH_KEY, CQ_UNIT, MAX_PROPERTIES_BYTES, MAX_TOPIC_BYTES
from broker.store.store_native import native
from broker.store.types import DispatchRequest
from remoting import message as codec
from remoting.java_hash import tags_code
from remoting.message import TRANSACTION_NOT_QUEUED_BIT, MessageConst
from remoting.record import END_FILE_MIN_BLANK_LENGTH, pack_records_at, record_size

Buffer = mmap.mmap | bytearray | memoryview
_new_tuple = tuple.__new__  # a DispatchRequest without NamedTuple's Python-level __new__


class PythonRecordRefused(Exception):
    """A message the CommitLog does not take: args are (PutMessageStatus name, remark)."""


RecordRefused: type[Exception] = native.RecordRefused if native is not None else PythonRecordRefused


def message_fields(properties: dict[str, str] | bytes) -> tuple[bytes, int, str, str]:
    """(encoded properties, tags code, KEYS, UNIQ_KEY) of a single message's properties: what
    its record stores (None values left out) and what its dispatch needs. Bytes are the
    record's properties already encoded (a plain send's, broker/processor/send_plain.py), read
    as a record read back is. The reference of broker/store/native/properties.c's
    message_fields_of."""
    if type(properties) is bytes:
        return _encoded_fields(properties)
    tags = properties.get(MessageConst.TAGS)
    if tags and not isinstance(tags, str):
        raise TypeError("the TAGS property must be a str")
    return (
        codec.properties_to_string(properties).encode("utf-8"),
        tags_code(tags),
        properties.get(MessageConst.KEYS) or "",
        properties.get(MessageConst.UNIQ_KEY) or "",
    )


_DISPATCH_NAMES = (b"TAGS", b"KEYS", b"UNIQ_KEY", b"DELAY")


def _encoded_fields(encoded: bytes) -> tuple[bytes, int, str, str]:
    """``message_fields`` of encoded properties, read as dispatch_fields reads a record's (the
    last non-empty value of a name wins; only the values it reads are decoded)."""
    found: dict[bytes, bytes] = {}
    for segment in encoded.split(b"\x02"):
        name, separator, value = segment.partition(b"\x01")
        if separator and value and name in _DISPATCH_NAMES:
            found[name] = value
    tags, keys, uniq_key, _ = (found.get(name, b"").decode() for name in _DISPATCH_NAMES)
    return encoded, tags_code(tags), keys, uniq_key


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


def _born_host(host: tuple[bytes, int]) -> tuple[bytes, int]:
    if type(host) is not tuple or len(host) != 2:
        raise TypeError("born_host is an (address, port) tuple")
    address, port = host
    if len(address) not in (4, 16):
        raise ValueError("host addresses are 4 or 16 bytes")
    return address, port


class PythonAppendCursor:
    """The reference of broker/store/native/append.c's AppendCursor."""

    def __init__(
        self,
        msg_id_prefix: str,
        store_address: bytes,
        store_port: int,
        request_type: type[DispatchRequest] = DispatchRequest,
    ) -> None:
        if not msg_id_prefix.isascii():
            raise ValueError("a message id prefix is hex digits")
        if len(store_address) not in (4, 16):
            raise ValueError("host addresses are 4 or 16 bytes")
        if not issubclass(request_type, tuple):
            raise TypeError("the dispatch request type is a tuple subclass")
        self.msg_id_prefix, self.store_address, self.store_port = (
            msg_id_prefix,
            bytes(store_address),
            store_port,
        )
        self._request_type = request_type
        self._queue_offsets: dict[tuple[str, int], int] = {}
        self._view = MappingProxyType(self._queue_offsets)
        self._last_put_timestamp = 0

    @property
    def queue_offsets(self) -> Mapping[tuple[str, int], int]:
        """(topic, queue id) -> next queue offset, read-only."""
        return self._view

    @property
    def last_put_timestamp(self) -> int:
        return self._last_put_timestamp

    def queue_offset(self, topic: str, queue_id: int) -> int:
        return self._queue_offsets.get(_queue_key(topic, queue_id), 0)

    def set_queue_offset(self, topic: str, queue_id: int, queue_offset: int) -> None:
        if queue_offset < 0:
            raise ValueError(f"a queue offset is >= 0, not {queue_offset}")
        self._queue_offsets[_queue_key(topic, queue_id)] = queue_offset

    def remove_queue(self, topic: str, queue_id: int) -> None:
        self._queue_offsets.pop(_queue_key(topic, queue_id), None)

    def clear_queue_offsets(self) -> None:
        self._queue_offsets.clear()

    def put(
        self,
        mm: Buffer,
        position: int,
        start_offset: int,
        store_timestamp: int,
        max_body: int,
        topic: str,
        queue_id: int,
        sys_flag: int,
        properties: dict[str, str],
        body: bytes | bytearray | memoryview,
        flag: int,
        born_timestamp: int,
        born_host: tuple[bytes, int],
        reconsume_times: int,
        prepared_transaction_offset: int,
    ) -> tuple[str, DispatchRequest] | int:
        """One message's record at ``position`` of ``mm`` (the segment starting at
        ``start_offset``), with the queue's next offset (none for a prepared or rolled-back
        half): (msg id, DispatchRequest). Its size alone, nothing changed, when it does not
        fit with the 8-byte BLANK filler; RecordRefused over the CommitLog's limits."""
        if not isinstance(topic, str):
            raise TypeError("the topic is a str")
        topic_bytes = topic.encode("utf-8")
        encoded, tags, keys, uniq_key = message_fields(properties)
        problem = record_problem(topic_bytes, encoded, len(body), max_body)
        if problem is not None:
            raise RecordRefused(*problem)
        born_address, born_port = _born_host(born_host)
        size = record_size(
            len(body),
            len(topic_bytes),
            len(encoded),
            born_v6=len(born_address) == 16,
            store_v6=len(self.store_address) == 16,
        )
        if not 0 <= position <= len(mm):
            raise IndexError(f"position {position} outside a {len(mm)}-byte segment")
        if size + END_FILE_MIN_BLANK_LENGTH > len(mm) - position:
            return size
        key = _queue_key(topic, queue_id)
        queued = not sys_flag & TRANSACTION_NOT_QUEUED_BIT
        queue_offset = self._queue_offsets.get(key, 0) if queued else 0
        phys_offset = start_offset + position
        record = (flag, body, encoded, size, zlib.crc32(body) & 0x7FFFFFFF)
        pack_records_at(
            mm, position, [record], topic_bytes, queue_id, queue_offset, phys_offset, sys_flag,
            born_timestamp, born_address, born_port, store_timestamp, self.store_address,
            self.store_port, reconsume_times, prepared_transaction_offset,
        )  # fmt: skip
        fields = (
            topic, queue_id, phys_offset, size, tags, store_timestamp, queue_offset, keys,
            uniq_key, sys_flag, properties,
        )  # fmt: skip
        outcome = f"{self.msg_id_prefix}{phys_offset:016X}", _new_tuple(self._request_type, fields)
        if queued:
            self._queue_offsets[key] = queue_offset + 1
        self._last_put_timestamp = store_timestamp
        return outcome

    def put_batch(
        self,
        mm: Buffer,
        position: int,
        start_offset: int,
        store_timestamp: int,
        records: list[Record],
        topic: str,
        queue_id: int,
        sys_flag: int,
        born_timestamp: int,
        born_host: tuple[bytes, int],
        reconsume_times: int,
    ) -> tuple[list[str], list[DispatchRequest]]:
        """A batch's records (as batch_records makes them) back to back from ``position``, with
        consecutive queue offsets from the queue's next one: (msg ids, DispatchRequests). The
        caller made room for all of them."""
        if not isinstance(records, list) or not isinstance(topic, str):
            raise TypeError("records are a list and the topic a str")
        topic_bytes = topic.encode("utf-8")
        if len(topic_bytes) > 255:
            raise ValueError("topic longer than 255 bytes")
        born_address, born_port = _born_host(born_host)
        key = _queue_key(topic, queue_id)
        first_queue_offset = self._queue_offsets.get(key, 0)
        first_phys = start_offset + position
        pack_records_at(
            mm, position, records, topic_bytes, queue_id, first_queue_offset, first_phys,
            sys_flag, born_timestamp, born_address, born_port, store_timestamp,
            self.store_address, self.store_port, reconsume_times, 0,
        )  # fmt: skip
        ids, requests = self._batch_outcome(
            records, topic, queue_id, first_phys, first_queue_offset, store_timestamp, sys_flag
        )
        self._queue_offsets[key] = first_queue_offset + len(records)
        self._last_put_timestamp = store_timestamp
        return ids, requests

    def put_batch_dispatch(
        self,
        mm: Buffer,
        position: int,
        start_offset: int,
        store_timestamp: int,
        records: list[Record],
        topic: str,
        queue_id: int,
        sys_flag: int,
        born_timestamp: int,
        born_host: tuple[bytes, int],
        reconsume_times: int,
    ) -> tuple[str, bytes, bytes, list[tuple[int, int]]]:
        """``put_batch`` with what dispatch needs packed instead of a DispatchRequest per
        record: (msg ids joined by commas, ConsumeQueue units, index entries, wake-ups), as
        python_batch_dispatch makes them from put_batch's."""
        ids, requests = self.put_batch(
            mm, position, start_offset, store_timestamp, records, topic, queue_id, sys_flag,
            born_timestamp, born_host, reconsume_times,
        )  # fmt: skip
        return python_batch_dispatch(ids, requests)

    def _batch_outcome(
        self,
        records: list[Record],
        topic: str,
        queue_id: int,
        phys_offset: int,
        queue_offset: int,
        store_timestamp: int,
        sys_flag: int,
    ) -> tuple[list[str], list[Any]]:
        ids, requests = [], []
        new_request, request_type = _new_tuple, self._request_type
        for record in records:
            size = record[3]
            ids.append(f"{self.msg_id_prefix}{phys_offset:016X}")
            tags, keys, uniq_key, _ = python_dispatch_fields(record[2].decode("utf-8"))
            fields = (
                topic, queue_id, phys_offset, size, tags, store_timestamp, queue_offset, keys,
                uniq_key, sys_flag, {},
            )  # fmt: skip
            requests.append(new_request(request_type, fields))
            phys_offset += size
            queue_offset += 1
        return ids, requests


def python_batch_dispatch(
    ids: list[str], requests: list[DispatchRequest]
) -> tuple[str, bytes, bytes, list[tuple[int, int]]]:
    """What a batch put hands dispatch, packed (the reference of
    broker/store/native/batch_dispatch.c): the message ids joined by commas (the reply's
    msgId); the ConsumeQueue units of the records, back to back; their index entries
    (BATCH_KEY: the Java hash of ``topic#`` + key and the phy offset, for the UNIQ_KEY and
    then each space-separated KEYS entry of each record, the order IndexService adds them);
    and the long-polling wake-ups, (tags code, queue offset) once per tags code with the newest
    offset carrying it, in the order each code first appears (dispatch.py _notify_newest)."""
    units = b"".join(CQ_UNIT.pack(r.commit_log_offset, r.msg_size, r.tags_code) for r in requests)
    prefix = requests[0].topic + "#" if requests else ""
    keys = b"".join(
        BATCH_KEY.pack(key_hash, phy_offset)
        for key_hash, phy_offset, _ in python_index_hashes(requests, prefix, -1)
    )
    newest: dict[int, int] = {}
    for r in requests:
        newest[r.tags_code] = r.consume_queue_offset
    return ",".join(ids), units, keys, list(newest.items())


def _queue_key(topic: str, queue_id: int) -> tuple[str, int]:
    if not isinstance(topic, str) or not isinstance(queue_id, int):
        raise TypeError("a queue is a (topic str, queue id int)")
    return topic, queue_id


AppendCursor: type[PythonAppendCursor] = (
    native.AppendCursor if native is not None else PythonAppendCursor
)
