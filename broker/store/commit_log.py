"""CommitLog: the append-only log every message goes through (spec/store-format.md §2,
spec/message-format.md §1, §6).

``put_message`` / ``put_messages`` are the store's one serialization point: plain ``def``s (so
Trio cannot interleave two appends) that assign the physical offset, queue offset and store
timestamp and pack the record straight into the mapped segment. A record that does not fit in
what is left of a segment (keeping 8 bytes for the BLANK filler) goes to the next segment, so
every segment starts at a record boundary. Each put also returns what dispatch needs, so the
master never parses its own records back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from broker.store.batch_records import Record, batch_records, batch_requests, dispatch_fields
from broker.store.config import MessageStoreConfig
from broker.store.delay_level import parse_delay_levels
from broker.store.mapped_file import DiskError, MappedFile, StoreError
from broker.store.mapped_file_queue import Allocator, MappedFileQueue
from broker.store.message_record import (
    MAX_PROPERTIES_BYTES,
    RecordRefused,
    put_single,
    record_problem,
)
from broker.store.types import (
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
    pack_records_at,
    record_size,
    scan_record,
)

log = logging.getLogger(__name__)

_new_request = tuple.__new__  # a DispatchRequest per message: skip NamedTuple's Python __new__


def _refusal(exc: DiskError) -> PutMessageResult:
    log.warning("cannot append: %s", exc)
    status = PutMessageStatus.DISK_FULL if exc.disk_full else PutMessageStatus.SERVICE_NOT_AVAILABLE
    return PutMessageResult(status=status, remark=str(exc))


class CommitLog:
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
        self.store_address, self.store_port = store_host
        self.msg_id_prefix = codec.offset_msg_id_prefix(self.store_address, self.store_port)
        self.clock = clock
        self.topic_queue_table: dict[tuple[str, int], int] = {}
        self.delay_levels_ms = parse_delay_levels(config.message_delay_level)
        self.on_segment_rolled: Callable[[MappedFile], None] | None = None
        # A segment the disk would not give: the store records it and answers the refusal.
        self.on_disk_error: Callable[[DiskError], PutMessageResult] = _refusal
        self.last_put_timestamp = 0
        self.warmer = PageWarmer()

    @property
    def max_offset(self) -> int:
        return self.queue.max_offset

    @property
    def min_offset(self) -> int:
        return self.queue.min_offset

    def roll_next_file(self, offset: int) -> int:
        size = self.config.mapped_file_size_commit_log
        return offset + size - offset % size

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

    def _write_records(
        self,
        mapped: MappedFile,
        records: list[tuple[int, Any, bytes, int, int]],
        msg: MessageExtBrokerInner,
        topic: bytes,
        queue_offset: int,
        store_ts: int,
        prepared_transaction_offset: int,
    ) -> None:
        """Pack records (flag, body, properties, size, body CRC) at the segment's write
        position; the caller moves the position once they are all in."""
        position = mapped.wrote_position
        pack_records_at(
            mapped.mmap,
            position,
            records,
            topic,
            msg.queue_id,
            queue_offset,
            mapped.start_offset + position,
            msg.sys_flag,
            msg.born_timestamp,
            msg.born_host[0],
            msg.born_host[1],
            store_ts,
            self.store_address,
            self.store_port,
            msg.reconsume_times,
            prepared_transaction_offset,
        )

    def put_message(
        self, msg: MessageExtBrokerInner
    ) -> tuple[PutMessageResult, DispatchRequest | None]:
        """Append one message: its result, and its dispatch request (None when refused)."""
        try:
            if MessageConst.DELAY in msg.properties:
                self._prepare(msg)
            mapped = self.queue.writable()
            while True:  # twice at most: a record that does not fit goes to the next segment
                put = put_single(self, mapped, msg)
                if type(put) is not int:
                    break
                mapped = self._segment_for(put)
        except RecordRefused as refused:
            return PutMessageResult(
                status=PutMessageStatus[refused.status], remark=refused.remark
            ), None
        except DiskError as exc:
            return self.on_disk_error(exc), None
        except StoreError as exc:
            log.error("cannot append: %s", exc)
            return PutMessageResult(
                status=PutMessageStatus.CREATE_MAPPED_FILE_FAILED, remark=str(exc)
            ), None
        self.warmer.wrote(mapped)
        if msg.tags_code is not None or msg.topic == SCHEDULE_TOPIC:
            return put[0], self._retagged(put[1], msg)
        return put

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
    ) -> tuple[PutMessageResult, list[DispatchRequest]]:
        """A batch: ``msg.body`` is the MessageBatch encoding, ``msg.properties`` the batch-level
        properties appended to each entry's own. All entries go into one segment."""
        topic = msg.topic.encode("utf-8")
        batch_properties = codec.properties_to_string(msg.properties).encode("utf-8")
        born6, store6 = len(msg.born_host[0]) == 16, len(self.store_address) == 16
        fixed_size = record_size(0, len(topic), 0, born_v6=born6, store_v6=store6)
        try:
            records, total, refused = batch_records(
                msg.body,
                batch_properties,
                fixed_size,
                self.config.max_message_size,
                MAX_PROPERTIES_BYTES,
            )
        except codec.MessageDecodeError as exc:
            return PutMessageResult(
                status=PutMessageStatus.MESSAGE_ILLEGAL, remark=f"bad batch body: {exc}"
            ), []
        if not records:
            return PutMessageResult(
                status=PutMessageStatus.MESSAGE_ILLEGAL, remark="empty batch"
            ), []
        problem = self._check(topic, b"", len(records[0][1]))
        if problem is None and refused >= 0:
            problem = self._check(topic, records[refused][2], len(records[refused][1]))
        if problem is not None:
            return problem, []
        if total > self.config.max_message_size + 64 * 1024 * len(records):
            return PutMessageResult(
                status=PutMessageStatus.MESSAGE_ILLEGAL,
                remark=f"batch of {total} bytes is too large",
            ), []
        try:
            mapped = self._segment_for(total)
        except DiskError as exc:
            return self.on_disk_error(exc), []
        except StoreError as exc:
            log.error("cannot append a batch: %s", exc)
            return PutMessageResult(
                status=PutMessageStatus.CREATE_MAPPED_FILE_FAILED, remark=str(exc)
            ), []
        return self._append_batch(msg, mapped, topic, records, total)

    def _append_batch(
        self,
        msg: MessageExtBrokerInner,
        mapped: MappedFile,
        topic: bytes,
        records: list[Record],
        total: int,
    ) -> tuple[PutMessageResult, list[DispatchRequest]]:
        """Write a batch's records back to back; dispatch requests for each."""
        key = (msg.topic, msg.queue_id)
        queue_offset = self.topic_queue_table.get(key, 0)
        store_ts = self.clock()
        position = mapped.wrote_position
        first_phys = mapped.start_offset + position
        self._write_records(mapped, records, msg, topic, queue_offset, store_ts, 0)
        msg_ids, requests = batch_requests(
            records,
            self.msg_id_prefix,
            msg.topic,
            msg.queue_id,
            first_phys,
            queue_offset,
            store_ts,
            msg.sys_flag,
            DispatchRequest,
        )
        mapped.wrote_position = position + total
        self.warmer.wrote(mapped)
        self.topic_queue_table[key] = queue_offset + len(records)
        self.last_put_timestamp = store_ts
        append = AppendMessageResult(
            wrote_offset=first_phys,
            wrote_bytes=total,
            msg_id=",".join(msg_ids),
            msg_ids=msg_ids,
            store_timestamp=store_ts,
            queue_offset=queue_offset,
            msg_num=len(msg_ids),
        )
        return PutMessageResult(status=PutMessageStatus.PUT_OK, append=append), requests

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
        Chunks never cross a segment boundary on the wire (spec/ha.md §3.3)."""
        if self.queue.files:
            if phys_offset != self.max_offset:
                raise StoreError(f"append at {phys_offset} but the log ends at {self.max_offset}")
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
