"""CommitLog: the append-only log every message goes through (docs/spec/store-format.md §2,
docs/spec/message-format.md §1, §6).

``put_message`` / ``put_messages`` are the store's one serialization point: plain ``def``s (so
Trio cannot interleave two appends) that take the store timestamp and hand the message to the
AppendCursor (broker/store/append_cursor.py), which assigns the queue offset and packs the
record straight into the mapped segment; the CommitLog then moves the segment's write position
and builds the results. A record that does not fit in what is left of a segment (keeping 8
bytes for the BLANK filler) goes to the next segment, so every segment starts at a record
boundary. Each put also returns what dispatch needs, so the master never parses its own records
back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from broker.store.append_cursor import AppendCursor, RecordRefused, record_problem
from broker.store.batch_records import batch_plan, dispatch_fields
from broker.store.config import MessageStoreConfig
from broker.store.delay_level import parse_delay_levels
from broker.store.layout import MAX_PROPERTIES_BYTES
from broker.store.mapped_file import DiskError, MappedFile, StoreError
from broker.store.mapped_file_queue import Allocator, MappedFileQueue
from broker.store.slotted import Slotted
from broker.store.types import (
    AppendedBatch,
    AppendMessageResult,
    DispatchRequest,
    MessageExtBrokerInner,
    PutMessageResult,
    PutMessageStatus,
)
from broker.store.warm import PageWarmer
from remoting import message as codec
from remoting.constants import SCHEDULE_TOPIC
from remoting.message import MessageConst
from remoting.record import (
    END_FILE_MIN_BLANK_LENGTH,
    RecordKind,
    RecordScan,
    pack_blank_into,
    record_size,
    scan_record,
)

log = logging.getLogger(__name__)

_new_request = tuple.__new__  # a DispatchRequest per message: skip NamedTuple's Python __new__


def _refusal(exc: DiskError) -> PutMessageResult:
    log.warning("cannot append: %s", exc)
    status = PutMessageStatus.DISK_FULL if exc.disk_full else PutMessageStatus.SERVICE_NOT_AVAILABLE
    return PutMessageResult(status=status, remark=str(exc))


class CommitLog(Slotted):
    # read by plain_pass.c from their slots (broker/store/slotted.py)
    __slots__ = ("clock", "config", "cursor", "queue", "warmer")

    def __init__(
        self,
        config: MessageStoreConfig,
        *,
        store_host: tuple[bytes, int],
        clock: Callable[[], int],
        allocator: Allocator | None = None,
    ) -> None:
        self.config = config
        self.queue = MappedFileQueue(
            config.commit_log_dir, config.mapped_file_size_commit_log, allocator
        )
        address, port = store_host
        self.cursor = AppendCursor(
            codec.offset_msg_id_prefix(address, port), address, port, DispatchRequest
        )
        self.clock = clock
        self.delay_levels_ms = parse_delay_levels(config.message_delay_level)
        self.on_segment_rolled: Callable[[MappedFile], None] | None = None
        # A segment the disk would not give: the store records it and answers the refusal.
        self.on_disk_error: Callable[[DiskError], PutMessageResult] = _refusal
        self.warmer = PageWarmer()

    @property
    def topic_queue_table(self) -> Mapping[tuple[str, int], int]:
        """(topic, queue id) -> the next queue offset, read-only: the AppendCursor owns it."""
        return self.cursor.queue_offsets

    @property
    def last_put_timestamp(self) -> int:
        return self.cursor.last_put_timestamp

    @property
    def max_phys_offset(self) -> int:
        """The end of what is written: the next record's phys offset."""
        return self.queue.max_byte_offset

    @property
    def min_phys_offset(self) -> int:
        return self.queue.min_byte_offset

    def roll_next_file(self, phys_offset: int) -> int:
        """The start of the segment after the one holding ``phys_offset``."""
        size = self.config.mapped_file_size_commit_log
        return phys_offset + size - phys_offset % size

    # --------------------------------------------------------------------- reading

    def get_message(self, phys_offset: int, size: int) -> memoryview | None:
        mapped = self.queue.find(phys_offset)
        if mapped is None:
            return None
        position = phys_offset - mapped.start_offset
        if position + size > mapped.wrote_position:
            return None
        return mapped.view[position : position + size]

    def get_data(self, phys_offset: int) -> memoryview | None:
        """From ``phys_offset`` to the end of what is written in its segment (HA, recovery)."""
        mapped = self.queue.find(phys_offset)
        if mapped is None:
            return None
        position = phys_offset - mapped.start_offset
        if position > mapped.wrote_position:
            return None
        return mapped.view[position : mapped.wrote_position]

    # --------------------------------------------------------------------- appending

    def _prepare(self, msg: MessageExtBrokerInner) -> None:
        """Java's CommitLog.putMessage: a delayed message waits in SCHEDULE_TOPIC_XXXX."""
        if codec.transaction_type(msg.sys_flag) in (
            codec.TRANSACTION_NOT_TYPE,
            codec.TRANSACTION_COMMIT_TYPE,
        ):
            delay = msg.properties.get(MessageConst.DELAY)
            if delay and delay.lstrip("-").isdigit() and int(delay) > 0:
                # Java's checkMessage sees the real topic, before it is parked: one that no
                # record can hold (a %RETRY% topic past 127 bytes) would never be delivered.
                problem = record_problem(msg.topic.encode("utf-8"), b"", 0, 0)
                if problem is not None:
                    raise RecordRefused(*problem)
                level = min(int(delay), len(self.delay_levels_ms))
                msg.properties[MessageConst.DELAY] = str(level)
                msg.properties[MessageConst.REAL_TOPIC] = msg.topic
                msg.properties[MessageConst.REAL_QID] = str(msg.queue_id)
                msg.topic, msg.queue_id = SCHEDULE_TOPIC, level - 1

    def _check(self, topic: bytes, properties: bytes, body_length: int) -> PutMessageResult | None:
        problem = record_problem(topic, properties, body_length, self.config.max_message_size)
        if problem is None:
            return None
        status, remark = problem
        return PutMessageResult(status=PutMessageStatus[status], remark=remark)

    def _segment_for(self, size: int) -> MappedFile:
        """The segment the next ``size`` bytes go into, padding the current one with a BLANK
        when they (plus the 8-byte filler) do not fit."""
        mapped = self.queue.writable()
        if size + END_FILE_MIN_BLANK_LENGTH > mapped.remaining:
            if size + END_FILE_MIN_BLANK_LENGTH > mapped.file_size:
                raise StoreError(
                    f"a record of {size} bytes cannot fit in a {mapped.file_size}-byte segment"
                )
            pack_blank_into(mapped.mmap, mapped.wrote_position, mapped.remaining)
            mapped.wrote_position = mapped.file_size
            mapped = self.queue.next_segment()
            if self.on_segment_rolled is not None:
                self.on_segment_rolled(mapped)
        return mapped

    def put_message(
        self, msg: MessageExtBrokerInner
    ) -> tuple[PutMessageResult, DispatchRequest | None]:
        """Append one message: its result, and its dispatch request (None when refused)."""
        try:
            if MessageConst.DELAY in msg.properties:
                self._prepare(msg)
            store_timestamp = self.clock()
            mapped = self.queue.writable()
            while True:  # twice at most: a record that does not fit goes to the next segment
                position = mapped.wrote_position
                put = self.cursor.put(
                    mapped.mmap, position, mapped.start_offset, store_timestamp,
                    self.config.max_message_size, msg.topic, msg.queue_id, msg.sys_flag,
                    msg.properties, msg.body, msg.flag, msg.born_timestamp, msg.born_host,
                    msg.reconsume_times, msg.prepared_transaction_offset,
                )  # fmt: skip
                if type(put) is not int:
                    break
                mapped = self._segment_for(put)
        except RecordRefused as refused:
            status, remark = refused.args
            return PutMessageResult(status=PutMessageStatus[status], remark=remark), None
        except DiskError as exc:
            return self.on_disk_error(exc), None
        except StoreError as exc:
            log.error("cannot append: %s", exc)
            return PutMessageResult(
                status=PutMessageStatus.CREATE_MAPPED_FILE_FAILED, remark=str(exc)
            ), None
        msg_id, request = put
        size = request.msg_size
        mapped.wrote_position = position + size
        self.warmer.wrote(mapped)
        # wrote_offset, wrote_bytes, msg_id, msg_ids, store_timestamp, queue_offset
        append = AppendMessageResult(
            request.commit_log_offset, size, msg_id, [msg_id], store_timestamp,
            request.consume_queue_offset,
        )  # fmt: skip
        if msg.tags_code is not None or msg.topic == SCHEDULE_TOPIC:
            request = self._retagged(request, msg)
        return PutMessageResult(PutMessageStatus.PUT_OK, append), request

    def _retagged(self, request: DispatchRequest, msg: MessageExtBrokerInner) -> DispatchRequest:
        """The tags code a message's unit gets instead of its TAGS hash: the one it was given
        (a transaction's half put back), or, in SCHEDULE_TOPIC_XXXX, its due time."""
        tags = request.tags_code if msg.tags_code is None else msg.tags_code
        if msg.topic == SCHEDULE_TOPIC:
            delay = msg.properties.get(MessageConst.DELAY)
            tags = self._delivery_time(tags, delay, request.store_timestamp)
        return request._replace(tags_code=tags)

    def put_messages(
        self, msg: MessageExtBrokerInner
    ) -> tuple[PutMessageResult, AppendedBatch | None]:
        """A batch: ``msg.body`` is the MessageBatch encoding, ``msg.properties`` the batch-level
        properties appended to each entry's own. All entries go into one segment."""
        refused = _batch_refusal(msg)
        if refused is not None:
            return PutMessageResult(status=PutMessageStatus.MESSAGE_ILLEGAL, remark=refused), None
        topic = msg.topic.encode("utf-8")
        batch_properties = codec.properties_to_string(msg.properties).encode("utf-8")
        born6, store6 = len(msg.born_host[0]) == 16, len(self.cursor.store_address) == 16
        fixed_size = record_size(0, len(topic), 0, born_v6=born6, store_v6=store6)
        try:
            records, count, total, refused, first_body, refused_props, refused_body = batch_plan(
                msg.body,
                batch_properties,
                fixed_size,
                self.config.max_message_size,
                MAX_PROPERTIES_BYTES,
            )
        except codec.MessageDecodeError as exc:
            return PutMessageResult(
                status=PutMessageStatus.MESSAGE_ILLEGAL, remark=f"bad batch body: {exc}"
            ), None
        if not count:
            return PutMessageResult(
                status=PutMessageStatus.MESSAGE_ILLEGAL, remark="empty batch"
            ), None
        problem = self._check(topic, b"", first_body)
        if problem is None and refused_props is not None:
            problem = self._check(topic, refused_props, refused_body)
        if problem is not None:
            return problem, None
        if total > self.config.max_message_size + 64 * 1024 * count:
            return PutMessageResult(
                status=PutMessageStatus.MESSAGE_ILLEGAL,
                remark=f"batch of {total} bytes is too large",
            ), None
        try:
            mapped = self._segment_for(total)
        except DiskError as exc:
            return self.on_disk_error(exc), None
        except StoreError as exc:
            log.error("cannot append a batch: %s", exc)
            return PutMessageResult(
                status=PutMessageStatus.CREATE_MAPPED_FILE_FAILED, remark=str(exc)
            ), None
        return self._append_batch(msg, mapped, records, count, total)

    def _append_batch(
        self, msg: MessageExtBrokerInner, mapped: MappedFile, records: Any, count: int, total: int
    ) -> tuple[PutMessageResult, AppendedBatch]:
        """Write a batch's records back to back; what dispatch needs of them, packed."""
        store_timestamp = self.clock()
        position = mapped.wrote_position
        queue_offset = self.cursor.queue_offset(msg.topic, msg.queue_id)
        msg_id, units, keys, wakes = self.cursor.put_batch_dispatch(
            mapped.mmap, position, mapped.start_offset, store_timestamp, records, msg.topic,
            msg.queue_id, msg.sys_flag, msg.born_timestamp, msg.born_host, msg.reconsume_times,
        )  # fmt: skip
        mapped.wrote_position = position + total
        self.warmer.wrote(mapped)
        # wrote_offset, wrote_bytes, msg_id, msg_ids, store_timestamp, queue_offset, msg_num
        append = AppendMessageResult(
            mapped.start_offset + position, total, msg_id, msg_id.split(","), store_timestamp,
            queue_offset, count,
        )  # fmt: skip
        appended = AppendedBatch(
            msg.topic, msg.queue_id, msg.sys_flag, store_timestamp, queue_offset, units, keys,
            wakes,
        )  # fmt: skip
        return PutMessageResult(PutMessageStatus.PUT_OK, append), appended

    def _delivery_time(self, tags_code: int, delay: str | None, store_ts: int) -> int:
        """The tags code of a SCHEDULE_TOPIC unit: when the message is due, as Java stores it."""
        if delay and delay.isdigit() and int(delay) > 0:
            level = min(int(delay), len(self.delay_levels_ms))
            return store_ts + self.delay_levels_ms[level - 1]
        return tags_code

    def dispatch_request(self, scan: RecordScan) -> DispatchRequest:
        """What dispatch needs from a record read back from the log (reput, recovery, slaves)."""
        tags, keys, uniq_key, delay = dispatch_fields(scan.properties)
        if scan.topic == SCHEDULE_TOPIC:
            tags = self._delivery_time(tags, delay, scan.store_timestamp)
        return _new_request(
            DispatchRequest,
            (
                scan.topic,
                scan.queue_id,
                scan.phys_offset,
                scan.size,
                tags,
                scan.store_timestamp,
                scan.queue_offset,
                keys,
                uniq_key,
                scan.sys_flag,
                {},
            ),
        )

    # --------------------------------------------------------------------- replication

    def append_data(self, phys_offset: int, data: bytes | memoryview) -> None:
        """A slave's append of raw bytes at exactly ``phys_offset``: the log's end, or for an
        empty log a segment boundary (a new slave starts at the master's current segment).
        Chunks never cross a segment boundary on the wire (docs/spec/ha.md §3.3)."""
        if self.queue.files:
            if phys_offset != self.max_phys_offset:
                raise StoreError(
                    f"append at {phys_offset} but the log ends at {self.max_phys_offset}"
                )
            mapped = self.queue.writable()
        else:
            if phys_offset % self.config.mapped_file_size_commit_log:
                raise StoreError(
                    f"an empty log can only start at a segment boundary, not {phys_offset}"
                )
            mapped = self.queue.next_segment(phys_offset)
        if len(data) > mapped.remaining:
            raise StoreError(
                f"chunk of {len(data)} bytes at {phys_offset} crosses a segment boundary"
            )
        position = mapped.wrote_position
        mapped.mmap[position : position + len(data)] = data
        mapped.wrote_position = position + len(data)
        self.warmer.wrote(mapped)

    def store_timestamp_at(self, phys_offset: int) -> int:
        """STORETIMESTAMP of the record at ``phys_offset`` (-1 if unreadable)."""
        mapped = self.queue.find(phys_offset)
        if mapped is None:
            return -1
        scan = scan_record(mapped.view, phys_offset - mapped.start_offset)
        return scan.store_timestamp if scan.kind is RecordKind.MESSAGE else -1


def _batch_refusal(msg: MessageExtBrokerInner) -> str | None:
    """Java's putMessages refuses a batch that is a transaction part or delayed as a whole: its
    entries would carry queue offsets that their queue never holds (a half or rolled-back
    message is not dispatched), and the next messages of the queue would be served in their
    place."""
    if codec.transaction_type(msg.sys_flag) != codec.TRANSACTION_NOT_TYPE:
        return f"a batch cannot be a transaction message (sysFlag {msg.sys_flag})"
    delay = msg.properties.get(MessageConst.DELAY, "")
    if delay.lstrip("-").isdigit() and int(delay) > 0:
        return "a batch cannot be delayed (DELAY property)"
    return None
