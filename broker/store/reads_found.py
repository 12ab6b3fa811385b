"""A found pull in one call (issue 27): the store's read of reads_plain.plain_get, the reply's
frame head of broker/processor/pull_reply.found_reply and the stats of a found read
(StoreStats.on_get, BrokerStatsManager.on_get's items), for the plain pull pass
(broker/processor/pull_plain.py). ``pull_found`` is the C one (broker/store/native/pull_found.c)
or, without it, ``python_pull_found``, its reference: tests/unit/store/test_reads_found.py holds
the two to the same buffers, stats and None on hostile queues.

None, with nothing counted, for every case it does not take (no queue or file, the offset
outside the queue, records in another segment, nothing that passes the filter, a frame past
int32): the caller runs the general path (MessageStore.get_message), which decides every
status. What it answers is what that path answers for a FOUND read (the pull tests hold the
reply bytes equal).
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import Any

from broker.store.layout import CQ_FILLER_SIZE, CQ_UNIT
from broker.store.reads_plain import read_window
from broker.store.store_native import native
from remoting.codes import CURRENT_VERSION
from remoting.frame import PREFIX

UNIT = CQ_UNIT.size
_INT32_MAX = 2**31 - 1
_INT64 = range(-(2**63), 2**63)
# pull_reply._HEADER's bytes (the tests hold the two equal)
_HEADER = (
    b'{"code":0,"extFields":{"suggestWhichBrokerId":"%d","nextBeginOffset":"%d",'
    b'"minOffset":"%d","maxOffset":"%d"},"flag":1,"language":"JAVA","opaque":%d,'
    b'"remark":"FOUND","serializeTypeCurrentRPC":"JSON","version":' + b"%d}" % CURRENT_VERSION
)


def python_pull_found(
    store: Any,
    topic: str,
    queue_id: int,
    queue_offset: int,
    max_msgs: int,
    codes: frozenset[int] | None,
    opaque: int,
    suggest: int,
    slow_suggest: int,
    items: tuple[Any, Any, Any],
) -> list[Any] | None:
    """The found reply's buffers (its frame head, then the record runs as slices of the
    mapped CommitLog), the stats counted; None when the general path must decide.
    ``suggest``/``slow_suggest``: the broker id to name when the records are in memory / past
    the memory threshold; ``items``: the pull's (messages, bytes, broker messages) StatsItems."""
    started = perf_counter_ns()
    for value in (queue_offset, max_msgs, opaque, suggest, slow_suggest):
        if value not in _INT64:
            raise OverflowError("Python int too large to convert to C long long")
    reader = store.reader
    queues = reader.consume_queues.by_topic.get(topic)
    consume_queue = None if queues is None else queues.get(queue_id)
    if consume_queue is None:
        return None
    buffers: list[Any] = [b""]
    found = _read(reader, consume_queue, queue_offset, max_msgs, codes, buffers)
    if found is None:
        return None
    low, high, scanned, count, total_bytes, from_disk = found
    header = _HEADER % (
        slow_suggest if from_disk else suggest, queue_offset + scanned, low, high, opaque
    )  # fmt: skip
    if 4 + len(header) + total_bytes > _INT32_MAX:
        return None
    buffers[0] = PREFIX.pack(4 + len(header) + total_bytes, len(header)) + header
    _count(store.stats, items, count, total_bytes, perf_counter_ns() - started)
    return buffers


def _read(
    reader: Any,
    consume_queue: Any,
    queue_offset: int,
    max_msgs: int,
    codes: frozenset[int] | None,
    buffers: list[Any],
) -> tuple[int, int, int, int, int, bool] | None:
    """plain_get's read, the records appended to ``buffers``: (low, high, units scanned,
    records, bytes, the last record scanned is past the memory threshold), or None."""
    window = read_window(reader, consume_queue, queue_offset, max_msgs)
    if window is None:
        return None
    units, low, high, segment, max_phys = window
    config = reader.config
    threshold = reader.memory_threshold
    scanned, count, total_bytes, max_phys_pulling, stop = python_scan_runs(
        units, segment.view, segment.start_offset,
        segment.start_offset + segment.wrote_position, codes, max_phys, threshold, max_msgs,
        (config.max_transfer_bytes_on_message_in_disk,
         config.max_transfer_count_on_message_in_disk,
         config.max_transfer_bytes_on_message_in_memory,
         config.max_transfer_count_on_message_in_memory),
        buffers,
    )  # fmt: skip
    if stop == 2 or not count:
        return None
    return low, high, scanned, count, total_bytes, max_phys - max_phys_pulling > threshold


def python_scan_runs(
    units: memoryview,
    view: memoryview,
    start: int,
    end: int,
    codes: frozenset[int] | None,
    max_phys: int,
    threshold: int,
    max_msgs: int,
    limits: tuple[int, int, int, int],
    buffers: list[Any],
) -> tuple[int, int, int, int, int]:
    """native.scan_runs's loop (scan_units.c): (scanned, records, bytes, max phys pulling,
    stop: 0 units ran out, 1 a limit, 2 a record outside this segment)."""
    disk_bytes, disk_count, memory_bytes, memory_count = limits
    scanned = count = total_bytes = max_phys_pulling = stop = 0
    run_pos = run_len = 0
    for phys, size, tags in CQ_UNIT.iter_unpack(units[: len(units) // UNIT * UNIT]):
        if size == CQ_FILLER_SIZE or size <= 0:
            scanned += 1
            continue
        if phys < start or phys > end:
            stop = 2
            break
        max_phys_pulling = phys
        if count:
            if count >= max_msgs:
                full = True
            elif max_phys - phys > threshold:
                full = total_bytes + size > disk_bytes or count >= disk_count
            else:
                full = total_bytes + size > memory_bytes or count >= memory_count
            if full:
                stop = 1
                break
        scanned += 1
        if codes is not None and tags not in codes:
            continue
        if size > end - phys:
            scanned -= 1
            stop = 2
            break
        if run_len and phys - start == run_pos + run_len:
            run_len += size
        else:
            if run_len:
                buffers.append(view[run_pos : run_pos + run_len])
            run_pos, run_len = phys - start, size
        count += 1
        total_bytes += size
    if run_len:
        buffers.append(view[run_pos : run_pos + run_len])
    return scanned, count, total_bytes, max_phys_pulling, stop


def _count(stats: Any, items: tuple[Any, Any, Any], count: int, size: int, elapsed: int) -> None:
    """StoreStats.on_get of a found read, and BrokerStatsManager.on_get's counting."""
    if elapsed > stats.get_time_max_ns:
        stats.get_time_max_ns = elapsed
    stats.get_message_times_total_found += 1
    stats.get_message_transferred_msg_count += count
    nums, sizes, broker_nums = items
    nums.value += count
    nums.times += 1
    sizes.value += size
    sizes.times += 1
    broker_nums.value += count
    broker_nums.times += 1


pull_found = python_pull_found if native is None else native.pull_found
