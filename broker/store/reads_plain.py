"""GetMessage's common case in as few Python steps as possible: the offset inside the queue,
its units in one ConsumeQueue file, no filter or a tag filter, the first record in one
CommitLog segment and the C scan ending there. Anything else answers None and
MessageReader's general path (the reference; it decides every status) runs from the start.
tests/unit/store/test_reads_plain.py holds the two to the same result on hostile queues."""

from __future__ import annotations

from typing import Any

from broker.store.layout import CQ_UNIT
from broker.store.store_native import native
from broker.store.types import GetMessageResult, GetMessageStatus, scanned_result

UNIT = CQ_UNIT.size
_MIN_UNITS = 16000 // UNIT  # Java reads at least 16,000 bytes of units
_ELSEWHERE = 2  # the scan stopped at a record outside its segment
_FOUND = GetMessageStatus.FOUND
_NO_MATCHED_MESSAGE = GetMessageStatus.NO_MATCHED_MESSAGE
_first_phys = CQ_UNIT.unpack_from


def read_window(
    reader: Any, consume_queue: Any, queue_offset: int, max_msgs: int
) -> tuple[memoryview, int, int, Any, int] | None:
    """What a read from ``queue_offset`` scans: (the units, as a view of their one ConsumeQueue
    file; the queue's low and high offsets; the CommitLog segment of the first unit's record;
    the CommitLog's end), or None when the general path must decide (no file, the offset
    outside the queue, the units or the record not where one file or segment has them). The
    window's size is Java's: at least 16,000 bytes of units. ``plain_get`` and reads_found's
    reference both read through it."""
    cq_files = consume_queue.queue.files
    if not cq_files:
        return None
    mapped = cq_files[-1]
    high = (mapped.start_offset + mapped.wrote_position) // UNIT
    low = consume_queue.min_logic_offset // UNIT
    if queue_offset < low or queue_offset >= high:
        return None  # empty, too small, overflow: the general path's statuses
    byte_offset = queue_offset * UNIT
    if byte_offset < mapped.start_offset:
        mapped = consume_queue.queue.find(byte_offset)
        if mapped is None:
            return None
    start = byte_offset - mapped.start_offset
    end = mapped.wrote_position
    wanted = max_msgs if max_msgs > _MIN_UNITS else _MIN_UNITS
    if wanted < 1 << 40 and start + wanted * UNIT < end:  # (the C's int64 never overflows)
        end = start + wanted * UNIT
    if end - start < UNIT:
        return None
    units = mapped.view[start:end]
    first = _first_phys(units)[0]
    log_files = reader.commit_log.queue.files
    if not log_files:
        return None
    last = log_files[-1]
    segment = last
    if not last.start_offset <= first < last.start_offset + last.file_size:
        segment = reader.commit_log.queue.find(first)
        if segment is None:
            return None
    return units, low, high, segment, last.start_offset + last.wrote_position


def plain_get(
    reader: Any,
    consume_queue: Any,
    queue_offset: int,
    max_msgs: int,
    codes: frozenset[int] | None,
    runs: bool,
) -> GetMessageResult | None:
    """``reader`` is the MessageReader (its log, limits and memory threshold); ``codes`` the
    tag filter's hash codes (None: every tag). None when the general path must decide."""
    window = read_window(reader, consume_queue, queue_offset, max_msgs)
    if window is None:
        return None
    units, low, high, segment, max_phys = window
    segment_start = segment.start_offset
    config = reader.config
    buffers: list[memoryview] = []
    scanned, count, total_bytes, max_phys_pulling, stop = (
        native.scan_runs if runs else native.scan_units
    )(
        units, segment.view, segment_start, segment_start + segment.wrote_position, codes,
        max_phys, reader.memory_threshold, max_msgs,
        config.max_transfer_bytes_on_message_in_disk,
        config.max_transfer_count_on_message_in_disk,
        config.max_transfer_bytes_on_message_in_memory,
        config.max_transfer_count_on_message_in_memory,
        buffers,
    )  # fmt: skip
    if stop == _ELSEWHERE:
        return None  # the rest of the units point into another segment
    return scanned_result(
        _FOUND if count else _NO_MATCHED_MESSAGE,
        queue_offset + scanned,
        low,
        high,
        buffers,
        total_bytes,
        max_phys - max_phys_pulling > reader.memory_threshold,
        count,
    )
