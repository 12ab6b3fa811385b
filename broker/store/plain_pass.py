"""A round of plain sends' whole store pass in one call (issue 27): ``python_plain_pass`` is the
reference of broker/store/native/plain_pass.c, which the broker calls once a selector round
(broker/processor/send_plain.py) instead of ``put_plain_run``, ``dispatch_rows``, the index
keys and the two stats tables' calls in Python (~125 bytecodes a sync send on 8 connections).

It does the common pass whole, or declines with nothing done, or stops after the append:

- None: the pass is not the common one before anything is written (a store gate closed, no
  room in the segment, reput behind, a put or arrival listener with something to do, objects
  of other types than the store's own); the caller runs ``put_plain_run``, which decides.
- a list: the reply frames; the rows ``put_rows`` took were appended, their ConsumeQueue units
  and index keys written, reput's and the dispatcher's positions and both stats tables moved
  on, exactly as ``put_plain_run`` and ``BrokerStatsManager.on_puts`` would have.
- a tuple ``(replies, totals, appended, position, wrote_from, started_ns)``: appended, nothing
  after (a queue or CQ file to create, an index file to grow or roll, the page warmer due, a
  topic's first stats items, a topic the broker's services hear): ``finish_plain_run`` does
  the rest as ``put_plain_run`` does after its ``put_rows``.

The listeners: ``store.plain_idle`` is (put listener, arrival listener, arrivals_wanted,
((object, attribute name), ...)), set by the broker: while each named counter reads 0 the
listeners it names have nothing to do for a user topic (no slave connection waiting for data,
no pull held, no pop waiting), so the pass skips them. Any other listener declines the pass.
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

from broker.store.append_cursor import PythonAppendCursor
from broker.store.consume_queue_table import _takes, _writable_length
from broker.store.counters import PutCounters, StatsCounter
from broker.store.group_put import put_rows
from broker.store.index_file import python_index_put_keys, read_header
from broker.store.layout import BATCH_KEY, CQ_UNIT, INDEX_ENTRY, INDEX_HEADER, INDEX_SLOT
from broker.store.store_native import native

if TYPE_CHECKING:
    from collections.abc import Collection

    from broker.store.message_store import DefaultMessageStore

MAX_RUNS = 64  # a pass touching more queues is left to Python (plain_pass.c's MAX_RUNS)


def python_plain_pass(
    store: DefaultMessageStore,
    rows: list[tuple[Any, ...]],
    pieces: tuple[bytes, ...],
    put_items: dict[tuple[str, str], tuple[Any, Any, Any]],
    cluster: str,
    heard: Collection[str],
) -> list[bytes] | tuple[Any, ...] | None:
    """The pass (see the module's docstring); ``put_items`` BrokerStatsManager's items of
    on_puts, ``heard`` the topics whose arrivals the broker's services follow."""
    if type(rows) is not list or type(pieces) is not tuple or type(put_items) is not dict:
        raise TypeError("plain_pass(store, rows list, pieces tuple, put_items dict, ...)")
    opened = _declining(_open, store)
    if opened is None:
        return None
    log, mapped, wrote_from, start = opened
    started = perf_counter_ns()
    stamp = log.clock()
    if type(stamp) is not int:
        raise TypeError("the CommitLog's clock gave no int")
    position, appended, replies, totals = put_rows(
        log.cursor, mapped.mmap, wrote_from, start, stamp, log.config.max_message_size, rows,
        pieces,
    )  # fmt: skip
    if not replies:
        return replies
    checked = _declining(
        _check, store, log, mapped, position, appended, totals, put_items, cluster, heard
    )
    if checked is None:
        return replies, totals, appended, position, wrote_from, started
    _write(store, mapped, start, position, appended, checked)
    _count(checked[2], len(replies), position - wrote_from, started, checked[3])
    return replies


def _declining(check: Any, *args: Any) -> Any:
    """``check(*args)``, None when a read in it fails: plain_pass.c declines on any Exception
    but running out of memory (the Python path then meets the same values and says what they
    are)."""
    try:
        return check(*args)
    except MemoryError:
        raise
    except Exception:
        return None


def _open(store: Any) -> tuple[Any, Any, int, int] | None:
    """plain_pass.c's pass_open: (log, the last segment, its written end, its start), when the
    gates are open, the listeners idle, the segment has room and reput is caught up."""
    if not (
        store.is_slave is False
        and store.shutting_down is False
        and store.loaded is True
        and store.clean.disk_full is False
        and store.health.writable is True
        and _listeners_idle(store, store.dispatcher)
    ):
        return None
    log = store.commit_log
    files = log.queue.files
    cursor = log.cursor
    if type(files) is not list or not files or not isinstance(cursor, _CURSOR):
        return None
    mapped = files[-1]
    wrote, size, start = mapped.wrote_position, mapped.file_size, mapped.start_offset
    reput_from = store.reput.reput_from_offset
    if not all(_int64(v) for v in (wrote, size, start, reput_from)):
        return None
    if not 0 <= wrote < size or not _int64(start + wrote) or start + wrote != reput_from:
        return None
    return log, mapped, wrote, start


def _listeners_idle(store: Any, dispatcher: Any) -> bool:
    put, arrival = store.put_listener, dispatcher.arrival_listener
    wanted, idle = dispatcher.arrivals_wanted, store.plain_idle
    if idle is None:
        return put is None and arrival is None
    if type(idle) is not tuple or len(idle) != 4:
        return False
    if not (put is None or put is idle[0]) or not (
        arrival is None or (arrival is idle[1] and wanted is idle[2])
    ):
        return False
    counters = idle[3]
    if type(counters) is not tuple:
        return False
    for pair in counters:
        if type(pair) is not tuple or len(pair) != 2 or type(pair[1]) is not str:
            return False
        value = getattr(pair[0], pair[1])
        if type(value) is not int or value != 0:
            return False
    return True


def _check(
    store: Any,
    log: Any,
    mapped: Any,
    position: int,
    appended: Any,
    totals: dict[str, list[int]],
    put_items: dict[tuple[str, str], Any],
    cluster: str,
    heard: Collection[str],
) -> tuple[list[Any], Any] | None:
    """plain_pass.c's pass_check: (the queues of the runs, the index file and keys or None,
    the store's PutCounters, each topic's (items, messages, bytes)), or None when the rest is
    not the common case."""
    ahead, warmed = log.warmer.ahead, mapped.warmed_position
    if not (_int64(ahead) and _int64(warmed) and _int64(position + ahead)):
        return None
    if position + ahead > warmed:
        return None
    runs, chunks, _ = appended
    table = store.dispatcher.consume_queues
    if type(table.dirty) is not set:
        return None
    queues = _check_runs(table.by_topic, runs, heard)
    if queues is None:
        return None
    index = _check_index(store.dispatcher, chunks)
    if index is False:
        return None
    stats = store.stats
    counted = _check_stats(stats, totals, put_items, cluster)
    if counted is None:
        return None
    return queues, index, stats, counted


def _check_runs(table: Any, runs: Any, heard: Collection[str]) -> list[Any] | None:
    if type(table) is not dict or type(runs) is not list or len(runs) > MAX_RUNS:
        return None
    queues: list[Any] = []
    for run in runs:
        if type(run) is not tuple or len(run) != 5:
            return None
        topic, queue_id, queue_offset, units, _ = run
        if type(topic) is not str or topic in heard:
            return None
        if not (
            type(queue_id) is int
            and type(queue_id) is int
            and type(queue_offset) is int
            and type(units) is bytes
            and units
            and not len(units) % CQ_UNIT.size
            and _int64(queue_offset)
        ):
            return None
        found = table.get(topic)
        consume_queue = found.get(queue_id) if type(found) is dict else None
        if consume_queue is None or not _takes(consume_queue, units, queue_offset):
            return None
        if any(q is consume_queue for q in queues):
            return None
        queues.append(consume_queue)
    return queues


def _check_index(dispatcher: Any, chunks: Any) -> Any:
    """None: nothing to index; (index file, store timestamp, keys) when they all fit in the
    newest file; False otherwise."""
    enable = dispatcher.config.message_index_enable
    if type(enable) is not bool:
        return False
    if enable is False:
        return None
    if type(chunks) is not list:
        return False
    if not chunks:
        return None
    chunk = chunks[0]
    if len(chunks) > 1 or type(chunk) is not tuple or len(chunk) != 2:
        return False
    stamp, keys = chunk
    if type(stamp) is not int or type(keys) is not bytes or len(keys) % BATCH_KEY.size:
        return False
    if not _int64(stamp):
        return False
    if not keys:
        return None
    files = dispatcher.index_service.files
    if type(files) is not list or not files:
        return False
    index = files[-1]
    slots, max_entries = index.slots, index.max_entries
    if not (_int64(slots) and _int64(max_entries)) or slots <= 0 or max_entries <= 0:
        return False
    mm = index.file.mmap
    if _writable_length(mm) < INDEX_HEADER.size + slots * INDEX_SLOT.size + max_entries * (
        INDEX_ENTRY.size
    ):
        return False
    header = read_header(mm)
    count = max(header.index_count, 1)
    done = header.end_phy_offset if header.index_count > 1 else -1
    adding = sum(1 for _, phy in BATCH_KEY.iter_unpack(keys) if phy > done)
    if count + adding > max_entries:
        return False
    return index, stamp, keys


def _check_stats(
    stats: Any, totals: dict[str, list[int]], put_items: Any, cluster: str
) -> list[tuple[Any, int, int]] | None:
    """plain_pass.c's check_stats: each topic's (items, messages, bytes), when the store's
    counters are PutCounters, each topic's items StatsCounters, and none of them passes int64
    with the pass's additions (their sum: topics share the broker's item); else None."""
    if not isinstance(stats, PutCounters) or len(totals) > MAX_RUNS:
        return None
    counted = []
    all_n = all_added = 0
    for topic, pair in totals.items():
        items = put_items.get((topic, cluster))
        if type(items) is not tuple or len(items) != 3 or type(pair) is not list or len(pair) != 2:
            return None
        messages, nbytes = pair
        if not (_int64(messages) and _int64(nbytes)) or messages < 0 or nbytes < 0:
            return None
        all_n += messages
        all_added += messages + nbytes
        if not (_int64(all_n) and _int64(all_added)):
            return None
        if not all(isinstance(item, StatsCounter) for item in items):
            return None
        counted.append((items, messages, nbytes))
    for items, _, _ in counted:
        for item in items:
            if not (_int64(item.value + all_added) and _int64(item.times + all_n)):
                return None
    return counted


def _write(store: Any, mapped: Any, start: int, position: int, appended: Any, checked: Any) -> None:
    """The write phase: the segment's end, the units, the keys, the positions."""
    queues, index, _, _ = checked
    runs, _, last_timestamp = appended
    mapped.wrote_position = position
    dirty = store.dispatcher.consume_queues.dirty
    for consume_queue, (_, _, _, units, _) in zip(queues, runs, strict=True):
        dirty.add(consume_queue)
        last = consume_queue.queue.files[-1]
        at = last.wrote_position
        last.mmap[at : at + len(units)] = units
        last.wrote_position = at + len(units)
        phys, size, _ = CQ_UNIT.unpack_from(units, len(units) - CQ_UNIT.size)
        consume_queue.max_phys_offset = phys + size
    if index is not None:
        index_file, stamp, keys = index
        left = python_index_put_keys(
            index_file.file.mmap, index_file.slots, index_file.max_entries, keys, stamp
        )
        assert not left, "checked: every key fits"
    store.dispatcher.last_dispatched_timestamp = last_timestamp
    store.reput.reput_from_offset = start + position


def _count(
    stats: Any, count: int, size: int, started: int, counted: list[tuple[Any, int, int]]
) -> None:
    """StoreStats.on_put_run's and BrokerStatsManager.on_puts' counting, in place."""
    stats.on_put_run(count, size, (perf_counter_ns() - started) // count, count)
    for (nums, sizes, broker_nums), messages, nbytes in counted:
        nums.value += messages
        nums.times += messages
        sizes.value += nbytes
        sizes.times += messages
        broker_nums.value += messages
        broker_nums.times += messages


_INT64 = 1 << 63


def _int64(value: object) -> bool:
    return type(value) is int and -_INT64 <= value < _INT64  # type: ignore[operator]


_CURSOR = PythonAppendCursor if native is None else native.AppendCursor
plain_pass = python_plain_pass if native is None else native.plain_pass
