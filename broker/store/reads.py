"""GetMessage for PULL_MESSAGE: Java's DefaultMessageStore.getMessage rules
(spec/store-format.md §4, spec/ha.md §7), returning memoryview slices of the log."""

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


def _batch_full(
    config: object, size: int, max_msgs: int, total_bytes: int, count: int, in_disk: bool
) -> bool:
    if count == 0:
        return False
    if count >= max_msgs:
        return True
    if in_disk:
        return (
            total_bytes + size > config.max_transfer_bytes_on_message_in_disk
            or count > config.max_transfer_count_on_message_in_disk - 1
        )
    return (
        total_bytes + size > config.max_transfer_bytes_on_message_in_memory
        or count > config.max_transfer_count_on_message_in_memory - 1
    )


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
    matched = message_filter.is_matched_by_consume_queue if message_filter is not None else None
    result.status = GetMessageStatus.NO_MATCHED_MESSAGE
    buffers, total_bytes = result.buffers, 0
    next_phy_file_start = -1
    max_phys_pulling = 0
    scanned = 0
    for phys_offset, size, tags_code in CQ_UNIT.iter_unpack(units):
        scanned += 1
        if size == _FILLER_SIZE:
            continue
        max_phys_pulling = phys_offset
        if next_phy_file_start >= 0 and phys_offset < next_phy_file_start:
            continue
        in_disk = max_phys - phys_offset > store.memory_threshold
        if _batch_full(config, size, max_msgs, total_bytes, len(buffers), in_disk):
            scanned -= 1
            break
        if matched is not None and not matched(tags_code):
            continue
        record = commit_log.get_message(phys_offset, size)
        if record is None:
            if not buffers:
                result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
            next_phy_file_start = commit_log.roll_next_file(phys_offset)
            continue
        buffers.append(record)
        total_bytes += size
        result.status = GetMessageStatus.FOUND
        next_phy_file_start = -1
    result.buffer_total_size = total_bytes
    result.next_begin_offset = offset + scanned
    result.suggest_pulling_from_slave = max_phys - max_phys_pulling > store.memory_threshold
