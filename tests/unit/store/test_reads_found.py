"""A found pull in one call (broker/store/reads_found.py): the C ``pull_found`` against its
Python twin (the same buffers, None and stats on hostile queues: offsets below, at and past
the queue, ConsumeQueue files missing at the front, fillers and corrupt units, records in
another CommitLog segment or past what is written, tag filters, every transfer limit, suggest
ids and opaques at the int64 edges), and the twin against the general read
(MessageReader.general_get) and pull_reply.found_reply: whenever it answers, the reply is the
one the general path's FOUND read gives, counted as StoreStats.on_get and
BrokerStatsManager.on_get count it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from broker.processor.pull_reply import found_reply
from broker.store import reads_found
from broker.store.reads_found import python_pull_found
from broker.store.store_native import native
from broker.store.types import GetMessageStatus
from tests.kits.nativekit import needs_store_native
from tests.unit.store.test_reads_plain import QUEUE_AND_LOG, Cq, Log, adjacent_units, reader
from tests.unit.store.test_scan_twin import FILE_SIZE, units

ids = st.one_of(st.integers(-3, 9), st.sampled_from([2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]))


class Stats:
    def __init__(self) -> None:
        self.get_time_max_ns = 0
        self.get_message_times_total_found = 0
        self.get_message_transferred_msg_count = 0


def store_of(cq: Cq, log: Log, limits: dict[str, int], threshold: int) -> Any:
    log.queue.file_size = FILE_SIZE  # MappedFileQueue's, which the C's find computes with
    cq.queue.file_size = cq.file_size
    get = reader(log, limits, threshold)
    get.consume_queues = SimpleNamespace(by_topic={"T": {0: cq}, "E": {}})
    return SimpleNamespace(reader=get, stats=Stats())


def items_of() -> tuple[Any, Any, Any]:
    return tuple(SimpleNamespace(value=5, times=2) for _ in range(3))  # type: ignore[return-value]


def outcome(function: Any, store: Any, *args: Any) -> tuple[Any, ...]:
    items = items_of()
    try:
        buffers = function(store, *args, items)
    except OverflowError:
        return ("overflow",)
    stats = store.stats
    counted = (stats.get_message_times_total_found, stats.get_message_transferred_msg_count,
               [(i.value, i.times) for i in items], stats.get_time_max_ns > 0)  # fmt: skip
    if buffers is None:
        return (None, counted)
    return (bytes(buffers[0]), [bytes(b) for b in buffers[1:]], counted)


def _same_both_ways(
    cq_units: Any,
    dropped: int,
    min_offset: int,
    wrote: list[int],
    threshold: int,
    limit_values: dict[str, int],
    args: tuple[Any, ...],
) -> Any:
    made = [
        store_of(Cq(cq_units, dropped, min_offset), Log(wrote), limit_values, threshold)
        for _ in range(2)
    ]
    twin = outcome(python_pull_found, made[0], *args)
    c = outcome(native.pull_found, made[1], *args)
    if twin[0] not in (None, "overflow"):  # the elapsed times differ
        twin = (*twin[:2], twin[2][:3])
        c = (*c[:2], c[2][:3])
    assert c == twin
    return twin


@needs_store_native
@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cq=st.one_of(units, adjacent_units, adjacent_units, adjacent_units),
    queue_offset=st.one_of(
        st.integers(0, 12),
        st.integers(0, 12),
        st.integers(-2, 45),
        st.sampled_from([2**63, 2**63 - 1, -(2**63)]),
    ),
    max_msgs=st.one_of(st.integers(1, 40), st.sampled_from([0, -1, 801, 2**31 - 1, 2**62])),
    **QUEUE_AND_LOG,
    topic=st.sampled_from(["T", "T", "T", "E", "U"]),
    queue_id=st.sampled_from([0, 0, 0, 1]),
    opaque=ids,
    suggest=ids,
    slow=ids,
)
@example(cq=[(0, 10, 1), (10, 10, 2), (20, 10, 1)], dropped=0, min_offset=0, queue_offset=0,
         wrote=[1000], threshold=3000, max_msgs=32, limits={
         "max_transfer_bytes_on_message_in_disk": 3000, "max_transfer_count_on_message_in_disk":
         40, "max_transfer_bytes_on_message_in_memory": 3000,
         "max_transfer_count_on_message_in_memory": 40}, message_filter=None, topic="T",
         queue_id=0, opaque=7, suggest=0, slow=1)  # fmt: skip
def test_c_answers_as_its_twin(cq, dropped, min_offset, queue_offset, wrote, threshold,
                               max_msgs, limits, message_filter, topic, queue_id, opaque,
                               suggest, slow) -> None:  # fmt: skip
    codes = None if message_filter is None else message_filter.codes
    args = (topic, queue_id, queue_offset, max_msgs, codes, opaque, suggest, slow)
    _same_both_ways(cq, dropped, min_offset, wrote, threshold, limits, args)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cq=st.one_of(units, adjacent_units, adjacent_units),
    queue_offset=st.one_of(st.integers(0, 12), st.integers(-2, 45)),
    max_msgs=st.one_of(st.integers(1, 40), st.sampled_from([0, -1, 801, 2**31 - 1])),
    **QUEUE_AND_LOG,
    suggest=ids,
    slow=ids,
)
def test_the_twin_answers_as_the_general_read(cq, dropped, min_offset, queue_offset, wrote,
                                              threshold, max_msgs, limits, message_filter,
                                              suggest, slow) -> None:  # fmt: skip
    """A FOUND read's reply and stats, or None; and the common case taken."""
    store = store_of(Cq(cq, dropped, min_offset), Log(wrote), limits, threshold)
    consume_queue = store.reader.consume_queues.by_topic["T"][0]
    codes = None if message_filter is None else message_filter.codes
    items = items_of()
    buffers = python_pull_found(store, "T", 0, queue_offset, max_msgs, codes, 7, suggest, slow,
                                items)  # fmt: skip
    result = store.reader.general_get(consume_queue, queue_offset, max_msgs, message_filter, True)
    if buffers is None:
        assert store.stats.get_message_times_total_found == 0
        assert [(i.value, i.times) for i in items] == [(5, 2)] * 3
        return
    assert result.status is GetMessageStatus.FOUND
    expected = found_reply(
        7, slow if result.suggest_pulling_from_slave else suggest, result.next_begin_offset,
        result.min_queue_offset, result.max_queue_offset, result.buffers,
        result.buffer_total_size,
    )  # fmt: skip
    assert b"".join(map(bytes, buffers)) == b"".join(map(bytes, expected.buffers))
    count, size = result.message_count, result.buffer_total_size
    assert store.stats.get_message_times_total_found == 1
    assert store.stats.get_message_transferred_msg_count == count
    assert [(i.value, i.times) for i in items] == [(5 + count, 3), (5 + size, 3), (5 + count, 3)]


@pytest.mark.parametrize("function", ["python", pytest.param("c", marks=needs_store_native)])
def test_a_plain_pull_is_found_in_one_call(function) -> None:
    """The common case (records adjacent in one segment) answered, one slice for the run."""
    pull_found = python_pull_found if function == "python" else native.pull_found
    store = store_of(Cq([(i * 10, 10, 1) for i in range(20)], 0, 0), Log([FILE_SIZE]),
                     {"max_transfer_bytes_on_message_in_disk": 10**6,
                      "max_transfer_count_on_message_in_disk": 32,
                      "max_transfer_bytes_on_message_in_memory": 10**6,
                      "max_transfer_count_on_message_in_memory": 32}, 10**9)  # fmt: skip
    items = items_of()
    buffers = pull_found(store, "T", 0, 3, 5, frozenset({1}), 9, 0, 1, items)
    assert buffers is not None and len(buffers) == 2
    assert bytes(buffers[1]) == bytes(store.reader.commit_log.queue.files[0].view[30:80])
    assert b'"nextBeginOffset":"8","minOffset":"0","maxOffset":"20"' in buffers[0]
    assert [(i.value, i.times) for i in items] == [(10, 3), (55, 3), (10, 3)]
    # outside the queue, or no such queue: the general path's, nothing counted
    assert pull_found(store, "T", 0, 20, 5, None, 9, 0, 1, items) is None
    assert pull_found(store, "T", 1, 0, 5, None, 9, 0, 1, items) is None
    assert store.stats.get_message_times_total_found == 1


def test_the_broker_takes_the_c_one_when_it_is_there() -> None:
    assert reads_found.pull_found is (python_pull_found if native is None else native.pull_found)
