"""GetMessage for PULL_MESSAGE: Java's DefaultMessageStore.getMessage rules
(docs/spec/store-format.md §4, docs/spec/ha.md §7), returning memoryview slices of the log."""

from __future__ import annotations

import psutil

from broker.store.commit_log import CommitLog
from broker.store.config import BrokerRole, MessageStoreConfig
from broker.store.consume_queue import ConsumeQueue
from broker.store.consume_queue_table import ConsumeQueueTable
from broker.store.layout import CQ_FILLER_SIZE, CQ_UNIT
from broker.store.reads_plain import plain_get
from broker.store.store_native import native
from broker.store.types import GetMessageResult, GetMessageStatus, TagsFilter

UNIT = CQ_UNIT.size
_ELSEWHERE = 2  # native.scan_units stopped at a record outside its segment
# Bound once: an Enum member read from its class costs ~80 ns, and these are read per pull.
_FOUND = GetMessageStatus.FOUND
_NO_MATCHED_MESSAGE = GetMessageStatus.NO_MATCHED_MESSAGE
_NO_MESSAGE_IN_QUEUE = GetMessageStatus.NO_MESSAGE_IN_QUEUE


def memory_threshold(config: MessageStoreConfig, total_physical_ram: int | None = None) -> int:
    """Bytes behind the log's end past which a message counts as on disk:
    accessMessageInMemoryMaxRatio percent of the machine's memory."""
    total = total_physical_ram or psutil.virtual_memory().total
    return total * config.access_message_in_memory_max_ratio // 100


class MessageReader:
    def __init__(
        self,
        consume_queues: ConsumeQueueTable,
        commit_log: CommitLog,
        config: MessageStoreConfig,
        memory_threshold: int,
    ) -> None:
        """``memory_threshold``: bytes behind the log's end past which a message is "on
        disk" (accessMessageInMemoryMaxRatio of the machine's memory)."""
        self.consume_queues = consume_queues
        self.commit_log = commit_log
        self.config = config  # the transfer limits and offsetCheckInSlave, live
        self.memory_threshold = memory_threshold
        self.is_slave = config.broker_role is BrokerRole.SLAVE

    def _correct(self, old: int, new: int) -> int:
        """A slave keeps the consumer's offset unless offsetCheckInSlave
        (nextOffsetCorrection)."""
        if self.is_slave and not self.config.offset_check_in_slave:
            return old
        return new

    def get_message(
        self,
        topic: str,
        queue_id: int,
        queue_offset: int,
        max_msgs: int,
        message_filter: object | None,
        runs: bool = False,
    ) -> GetMessageResult:
        """``runs``: adjacent records may share one slice of ``buffers`` (a pull's reply body,
        written as it is); ``message_count`` counts the records either way."""
        consume_queue = self.consume_queues.find(topic, queue_id)
        if consume_queue is not None and native is not None:
            if message_filter is None:
                found = plain_get(self, consume_queue, queue_offset, max_msgs, None, runs)
            elif type(message_filter) is TagsFilter:
                codes = message_filter.codes
                found = plain_get(self, consume_queue, queue_offset, max_msgs, codes, runs)
            else:
                found = None
            if found is not None:
                return found
        return self.general_get(consume_queue, queue_offset, max_msgs, message_filter, runs)

    def general_get(
        self,
        consume_queue: ConsumeQueue | None,
        queue_offset: int,
        max_msgs: int,
        message_filter: object | None,
        runs: bool = False,
    ) -> GetMessageResult:
        """Every case, step by step: the reference of reads_plain.plain_get."""
        if consume_queue is None:
            return GetMessageResult(
                status=GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
                next_begin_offset=self._correct(queue_offset, 0),
            )
        low, high = consume_queue.min_queue_offset, consume_queue.max_queue_offset
        result = GetMessageResult(
            status=_NO_MESSAGE_IN_QUEUE,
            min_queue_offset=low,
            max_queue_offset=high,
        )
        if high == 0:
            result.next_begin_offset = self._correct(queue_offset, 0)
        elif queue_offset < low:
            result.status = GetMessageStatus.OFFSET_TOO_SMALL
            result.next_begin_offset = self._correct(queue_offset, low)
        elif queue_offset == high:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_ONE
            result.next_begin_offset = self._correct(queue_offset, queue_offset)
        elif queue_offset > high:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_BADLY
            result.next_begin_offset = self._correct(queue_offset, low if low == 0 else high)
        else:
            self._scan(consume_queue, queue_offset, max_msgs, message_filter, result, runs)
        return result

    def _scan(
        self,
        consume_queue: ConsumeQueue,
        queue_offset: int,
        max_msgs: int,
        message_filter: object | None,
        result: GetMessageResult,
        runs: bool,
    ) -> None:
        # Java reads at least 16,000 bytes of units (not max(): this runs per pull)
        units = consume_queue.units(
            queue_offset, (max_msgs * UNIT if max_msgs * UNIT > 16000 else 16000) // UNIT
        )
        if units is None:
            result.status = GetMessageStatus.OFFSET_FOUND_NULL
            result.next_begin_offset = self._correct(
                queue_offset, consume_queue.roll_next_file(queue_offset)
            )
            return
        scanned = _scan_units(
            units, self.commit_log, self.config, self.memory_threshold, max_msgs,
            message_filter, result, runs,
        )  # fmt: skip
        result.next_begin_offset = queue_offset + scanned


def _scan_units(
    units: memoryview,
    commit_log: CommitLog,
    config: MessageStoreConfig,
    memory_threshold: int,
    max_msgs: int,
    message_filter: object | None,
    result: GetMessageResult,
    runs: bool = False,
) -> int:
    """The messages of ``units`` the filter and transfer limits let through, into ``result``;
    returns how many units were scanned. ``runs``: the C loop may join adjacent records into
    one slice (this loop, the reference, never does: the bytes are the same)."""
    max_phys = commit_log.max_phys_offset
    matched = by_record = None
    if message_filter is not None:
        matched = message_filter.is_matched_by_consume_queue
        by_record = message_filter.is_matched_by_commit_log
    result.status = _NO_MATCHED_MESSAGE
    buffers, total_bytes = result.buffers, 0
    next_phy_file_start = -1
    max_phys_pulling = 0
    scanned = 0
    # Limits and the current segment are hoisted out of the loop: this runs per message.
    disk_bytes = config.max_transfer_bytes_on_message_in_disk
    disk_count = config.max_transfer_count_on_message_in_disk
    memory_bytes = config.max_transfer_bytes_on_message_in_memory
    memory_count = config.max_transfer_count_on_message_in_memory
    segment_view, segment_start, segment_end = None, 0, 0
    count = 0
    rest = units
    if native is not None and (message_filter is None or type(message_filter) is TagsFilter):
        # C runs the loop below while the records stay in one segment; what it leaves (a
        # record elsewhere, a corrupt unit) goes on here from the unit it stopped at
        first = CQ_UNIT.unpack_from(units)[0] if len(units) >= UNIT else None
        segment = None if first is None else commit_log.queue.find(first)
        if segment is not None:
            segment_view, segment_start = segment.view, segment.start_offset
            segment_end = segment_start + segment.wrote_position
            codes = None if message_filter is None else message_filter.codes
            scan = native.scan_runs if runs else native.scan_units
            scanned, count, total_bytes, max_phys_pulling, stop = scan(
                units, segment_view, segment_start, segment_end, codes, max_phys,
                memory_threshold, max_msgs, disk_bytes, disk_count, memory_bytes,
                memory_count, buffers,
            )  # fmt: skip
            if count:
                result.status = _FOUND
            rest = units[scanned * UNIT :] if stop == _ELSEWHERE else b""
    for phys_offset, size, tags_code in CQ_UNIT.iter_unpack(rest):
        scanned += 1
        if size == CQ_FILLER_SIZE or size <= 0:  # a corrupt unit is skipped like a filler
            continue
        max_phys_pulling = phys_offset
        if next_phy_file_start >= 0 and phys_offset < next_phy_file_start:
            continue
        if count:
            if count >= max_msgs:
                scanned -= 1
                break
            if max_phys - phys_offset > memory_threshold:
                full = total_bytes + size > disk_bytes or count >= disk_count
            else:
                full = total_bytes + size > memory_bytes or count >= memory_count
            if full:
                scanned -= 1
                break
        if matched is not None and not matched(tags_code):
            continue
        if segment_start <= phys_offset and phys_offset + size <= segment_end:
            position = phys_offset - segment_start
            record = segment_view[position : position + size]
        else:
            record = commit_log.get_message(phys_offset, size)
            if record is None:
                if not buffers:
                    result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
                next_phy_file_start = commit_log.roll_next_file(phys_offset)
                continue
            segment = commit_log.queue.find(phys_offset)
            segment_view, segment_start = segment.view, segment.start_offset
            segment_end = segment_start + segment.wrote_position
        if by_record is not None and not by_record(record):
            continue
        buffers.append(record)
        count += 1
        total_bytes += size
        result.status = _FOUND
        next_phy_file_start = -1
    result.buffer_total_size = total_bytes
    result.record_count = count
    result.suggest_pulling_from_slave = max_phys - max_phys_pulling > memory_threshold
    return scanned
