"""GetMessage for PULL_MESSAGE: Java's DefaultMessageStore.getMessage rules
(docs/spec/store-format.md §4, docs/spec/ha.md §7), returning memoryview slices of the log."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.store.consume_queue import CQ_UNIT, UNIT
from broker.store.types import GetMessageResult, GetMessageStatus

if TYPE_CHECKING:
    from broker.store.message_store import DefaultMessageStore

_FILLER_SIZE = 0x7FFFFFFF


def _correct(store: DefaultMessageStore, old: int, new: int) -> int:
    """A slave keeps the consumer's offset unless offsetCheckInSlave (nextOffsetCorrection)."""
    if store.is_slave and not store.config.offset_check_in_slave:
        return old
    return new


def get_message(
    store: DefaultMessageStore,
    topic: str,
    queue_id: int,
    offset: int,
    max_msgs: int,
    message_filter: object | None,
) -> GetMessageResult:
    consume_queue = store.find_consume_queue(topic, queue_id)
    if consume_queue is None:
        return GetMessageResult(
            status=GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
            next_begin_offset=_correct(store, offset, 0),
        )
    min_offset, max_offset = consume_queue.min_offset, consume_queue.max_offset
    result = GetMessageResult(
        status=GetMessageStatus.NO_MESSAGE_IN_QUEUE, min_offset=min_offset, max_offset=max_offset
    )
    if max_offset == 0:
        result.next_begin_offset = _correct(store, offset, 0)
    elif offset < min_offset:
        result.status, result.next_begin_offset = (
            GetMessageStatus.OFFSET_TOO_SMALL,
            _correct(store, offset, min_offset),
        )
    elif offset == max_offset:
        result.status, result.next_begin_offset = (
            GetMessageStatus.OFFSET_OVERFLOW_ONE,
            _correct(store, offset, offset),
        )
    elif offset > max_offset:
        result.status = GetMessageStatus.OFFSET_OVERFLOW_BADLY
        result.next_begin_offset = _correct(
            store, offset, min_offset if min_offset == 0 else max_offset
        )
    else:
        _scan(store, consume_queue, offset, max_msgs, message_filter, result)
    return result


def _scan(
    store: DefaultMessageStore,
    consume_queue: object,
    offset: int,
    max_msgs: int,
    message_filter: object | None,
    result: GetMessageResult,
) -> None:
    config = store.config
    units = consume_queue.units(offset, max(16000, max_msgs * UNIT) // UNIT)
    if units is None:
        result.status = GetMessageStatus.OFFSET_FOUND_NULL
        result.next_begin_offset = _correct(store, offset, consume_queue.roll_next_file(offset))
        return
    commit_log = store.commit_log
    max_phys = commit_log.max_offset
    matched = by_record = None
    if message_filter is not None:
        matched = message_filter.is_matched_by_consume_queue
        by_record = message_filter.is_matched_by_commit_log
    result.status = GetMessageStatus.NO_MATCHED_MESSAGE
    buffers, total_bytes = result.buffers, 0
    next_phy_file_start = -1
    max_phys_pulling = 0
    scanned = 0
    # Limits and the current segment are hoisted out of the loop: this runs per message.
    memory_threshold = store.memory_threshold
    disk_bytes = config.max_transfer_bytes_on_message_in_disk
    disk_count = config.max_transfer_count_on_message_in_disk
    memory_bytes = config.max_transfer_bytes_on_message_in_memory
    memory_count = config.max_transfer_count_on_message_in_memory
    segment_view, segment_start, segment_end = None, 0, 0
    count = 0
    for phys_offset, size, tags_code in CQ_UNIT.iter_unpack(units):
        scanned += 1
        if size == _FILLER_SIZE:
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
        result.status = GetMessageStatus.FOUND
        next_phy_file_start = -1
    result.buffer_total_size = total_bytes
    result.next_begin_offset = offset + scanned
    result.suggest_pulling_from_slave = max_phys - max_phys_pulling > store.memory_threshold
