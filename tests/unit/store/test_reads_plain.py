"""GetMessage's short path (broker/store/reads_plain.py plain_get) against the general one
(MessageReader.general_get, the reference): whenever the short path answers, every field of
its GetMessageResult equals the reference's, on hostile queues: offsets below, at and past
the queue, ConsumeQueue files missing at the front, fillers and corrupt units, records in
another CommitLog segment or past what is written, tag filters and every transfer limit."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from broker.store import reads
from broker.store.config import BrokerRole
from broker.store.consume_queue import ConsumeQueue
from broker.store.layout import CQ_UNIT
from broker.store.reads_plain import plain_get
from broker.store.types import GetMessageResult, GetMessageStatus, TagsFilter, scanned_result
from remoting.java_hash import tags_code
from tests.kits.nativekit import needs_store_native
from tests.unit.store.conftest import StoreFactory, message
from tests.unit.store.test_scan_twin import FILE_SIZE, Queue, Segment, filters, limits, units

UNIT = CQ_UNIT.size
CQ_FILE_UNITS = 8
# The short path's own case, most of the time: records one after another (a few bytes apart
# now and then), a log written through, the queue whole
adjacent_units = st.lists(
    st.tuples(st.sampled_from([0, 0, 0, 3]), st.integers(1, 50), st.sampled_from([1, 2, 3])),
    min_size=12,
    max_size=40,
).map(
    lambda steps: [
        (sum(gap + size for gap, size, _ in steps[:i]) + gap, size, tag)
        for i, (gap, size, tag) in enumerate(steps)
    ]
)


# What the read tests here and in test_reads_found.py draw besides the queue's units, the
# offset and the count: ConsumeQueue files dropped at the front, the queue's low offset, the
# CommitLog's segments, the memory threshold, the transfer limits and the tag filter.
QUEUE_AND_LOG = {
    "dropped": st.one_of(st.just(0), st.integers(0, 2)),
    "min_offset": st.one_of(st.just(0), st.integers(0, 20)),
    "wrote": st.one_of(
        st.just([FILE_SIZE, FILE_SIZE, 999]),
        st.lists(st.sampled_from([FILE_SIZE, FILE_SIZE, 0, 500, 999]), max_size=4),
    ),
    "threshold": st.integers(0, 3000),
    "limits": limits,
    "message_filter": filters,
}


class Log:
    """The CommitLog's files (each with its file_size, as MappedFile has) and its end."""

    def __init__(self, wrote: list[int]) -> None:
        self.queue = Queue([Segment(i * FILE_SIZE, w) for i, w in enumerate(wrote)])
        for segment in self.queue.files:
            segment.file_size = FILE_SIZE

    @property
    def max_phys_offset(self) -> int:
        last = self.queue.files[-1] if self.queue.files else None
        return 0 if last is None else last.start_offset + last.wrote_position

    def get_message(self, phys: int, size: int) -> memoryview | None:
        segment = self.queue.find(phys)
        if segment is None or phys - segment.start_offset + size > segment.wrote_position:
            return None
        return segment.view[phys - segment.start_offset : phys - segment.start_offset + size]

    def roll_next_file(self, offset: int) -> int:
        return offset + FILE_SIZE - offset % FILE_SIZE


class CqFile:
    def __init__(self, start: int, data: bytes) -> None:
        self.start_offset, self.wrote_position = start, len(data)
        self.file_size = CQ_FILE_UNITS * UNIT
        self.end_offset = start + self.file_size
        self.view = memoryview(data.ljust(self.file_size, b"\0"))


class Cq:
    """What GetMessage asks of a ConsumeQueue: its files, first unit and unit reads."""

    units = ConsumeQueue.units
    roll_next_file = ConsumeQueue.roll_next_file

    def __init__(self, cq: list[tuple[int, int, int]], dropped: int, min_offset: int) -> None:
        data = b"".join(CQ_UNIT.pack(*u) for u in cq)
        per_file = CQ_FILE_UNITS * UNIT
        self.file_size = per_file
        starts = range(dropped * per_file, len(data), per_file)
        self.queue = Queue([CqFile(s, data[s : s + per_file]) for s in starts])
        self.min_logic_offset = min_offset * UNIT

    # ConsumeQueue's, over MappedFileQueue.max_byte_offset
    min_queue_offset = ConsumeQueue.min_queue_offset

    @property
    def max_queue_offset(self) -> int:
        last = self.queue.files[-1] if self.queue.files else None
        return 0 if last is None else (last.start_offset + last.wrote_position) // UNIT


def reader(log: Log, limits: dict[str, int], threshold: int) -> reads.MessageReader:
    config = SimpleNamespace(broker_role=BrokerRole.ASYNC_MASTER, offset_check_in_slave=False,
                             **limits)  # fmt: skip
    return reads.MessageReader(None, log, config, threshold)  # type: ignore[arg-type]


def fields(result: GetMessageResult) -> tuple[Any, ...]:
    return (result.status, result.next_begin_offset, result.min_queue_offset,
            result.max_queue_offset, b"".join(result.buffers), result.buffer_total_size,
            result.suggest_pulling_from_slave, result.message_count)  # fmt: skip


@needs_store_native
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cq=st.one_of(units, adjacent_units, adjacent_units),
    queue_offset=st.one_of(st.integers(0, 12), st.integers(-2, 45)),
    max_msgs=st.one_of(st.integers(1, 40), st.sampled_from([0, -1, 801, 2**31 - 1])),
    **QUEUE_AND_LOG,
    runs=st.booleans(),
)
@example(cq=[(0, 10, 1), (10, 10, 2), (20, 10, 1)], dropped=0, min_offset=0, queue_offset=0,
         wrote=[1000], threshold=3000, max_msgs=32, limits={
         "max_transfer_bytes_on_message_in_disk": 3000, "max_transfer_count_on_message_in_disk":
         40, "max_transfer_bytes_on_message_in_memory": 3000,
         "max_transfer_count_on_message_in_memory": 40}, message_filter=None, runs=True)  # fmt: skip
def test_short_path_equals_the_general_path(cq, dropped, min_offset, queue_offset, wrote,
                                            threshold, max_msgs, limits, message_filter,
                                            runs) -> None:  # fmt: skip
    log = Log(wrote)
    consume_queue = Cq(cq, dropped, min_offset)
    get = reader(log, limits, threshold)
    codes = None if message_filter is None else message_filter.codes
    short = plain_get(get, consume_queue, queue_offset, max_msgs, codes, runs)
    reference = get.general_get(consume_queue, queue_offset, max_msgs, message_filter, runs)
    if short is not None:
        assert fields(short) == fields(reference)


def test_scanned_result_is_the_constructors_object() -> None:
    """Every field set (a slot left empty raises on read), each where the constructor puts it."""
    values = dict(status=GetMessageStatus.NO_MATCHED_MESSAGE, next_begin_offset=7,
                  min_queue_offset=2, max_queue_offset=9, buffers=[memoryview(b"ab")],
                  buffer_total_size=2, suggest_pulling_from_slave=True, record_count=1)  # fmt: skip
    built = scanned_result(*values.values())
    assert built == GetMessageResult(**values)
    assert [getattr(built, f.name) for f in attrs.fields(GetMessageResult)] == list(values.values())


@needs_store_native
def test_a_plain_pull_takes_the_short_path() -> None:
    """The common case answers without the general path: records adjacent in one segment."""
    log = Log([FILE_SIZE])
    consume_queue = Cq([(i * 10, 10, 1) for i in range(20)], 0, 0)
    get = reader(log, {"max_transfer_bytes_on_message_in_disk": 10**6,
                       "max_transfer_count_on_message_in_disk": 32,
                       "max_transfer_bytes_on_message_in_memory": 10**6,
                       "max_transfer_count_on_message_in_memory": 32}, 10**9)  # fmt: skip
    short = plain_get(get, consume_queue, 3, 5, frozenset({1}), True)
    assert short is not None
    assert fields(short) == (GetMessageStatus.FOUND, 8, 0, 20, bytes(log.queue.files[0].view[30:80]),
                             50, False, 5)  # fmt: skip
    assert len(short.buffers) == 1
    # offsets outside the queue are the general path's to answer
    assert plain_get(get, consume_queue, 20, 5, None, True) is None
    assert plain_get(get, consume_queue, -1, 5, None, True) is None


@pytest.mark.parametrize("message_filter", [None, TagsFilter(frozenset({1}))])
def test_the_reader_answers_the_same_with_or_without_c(message_filter, monkeypatch) -> None:
    log = Log([FILE_SIZE, 500])
    consume_queue = Cq([(i * 100, 100, 1) for i in range(14)], 0, 2)
    get = reader(log, {"max_transfer_bytes_on_message_in_disk": 10**6,
                       "max_transfer_count_on_message_in_disk": 32,
                       "max_transfer_bytes_on_message_in_memory": 10**6,
                       "max_transfer_count_on_message_in_memory": 32}, 10**9)  # fmt: skip
    get.consume_queues = SimpleNamespace(find=lambda topic, queue_id: consume_queue)
    answers = [fields(get.get_message("T", 0, offset, 4, message_filter, True))
               for offset in range(0, 16)]  # fmt: skip
    monkeypatch.setattr(reads, "native", None)
    assert [fields(get.get_message("T", 0, offset, 4, message_filter, True))
            for offset in range(0, 16)] == answers  # fmt: skip


@needs_store_native
def test_a_real_store_answers_the_same_both_ways(stores: StoreFactory) -> None:
    """Over a real store (several CommitLog segments and ConsumeQueue files): every offset,
    with and without a tag filter, the same result as the general path, and the short path
    answering the plain reads itself (the fakes above have the real files' attributes)."""
    store = stores.open()
    for i in range(150):
        assert store.put_message(message(body=bytes([65 + i % 26]) * 150, TAGS="AB"[i % 2])).ok
    cq = store.find_consume_queue("T", 0)
    assert len(store.commit_log.queue.files) > 2 and len(cq.queue.files) > 2
    get, answered = store.reader, 0
    for message_filter in (None, TagsFilter(frozenset({tags_code("A")}))):
        codes = None if message_filter is None else message_filter.codes
        for offset in range(-1, 153):
            for max_msgs, runs in ((32, True), (4, False)):
                reference = get.general_get(cq, offset, max_msgs, message_filter, runs)
                got = get.get_message("T", 0, offset, max_msgs, message_filter, runs)
                assert fields(got) == fields(reference), offset
                answered += plain_get(get, cq, offset, max_msgs, codes, runs) is not None
    assert answered > 400  # of 616 reads, 600 inside the queue
