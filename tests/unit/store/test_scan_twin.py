"""A pull's unit scan (broker/store/reads.py _scan_units): with the C loop
(broker/store/native/scan_units.c) and without it, the same records, statuses, offsets and
transfer-limit stops on hostile ConsumeQueue units: fillers, records in another segment or past
what is written, negative and huge sizes and offsets, tag filters, every limit."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from broker.store import reads
from broker.store.layout import CQ_FILLER_SIZE, CQ_UNIT
from broker.store.store_native import native
from broker.store.types import GetMessageResult, GetMessageStatus, TagsFilter
from tests.kits.nativekit import needs_store_native

FILE_SIZE = 1000


class Segment:
    def __init__(self, start: int, wrote: int) -> None:
        self.start_offset, self.wrote_position = start, wrote
        self.end_offset = start + FILE_SIZE
        self.view = memoryview(bytes((start // FILE_SIZE * 7 + i) % 251 for i in range(FILE_SIZE)))


class Queue:
    def __init__(self, segments: list[Segment]) -> None:
        self.files = segments

    def find(self, offset: int) -> Segment | None:
        return next((s for s in self.files if s.start_offset <= offset < s.end_offset), None)


class Log:
    """What _scan_units asks of a CommitLog, with CommitLog.get_message's rule."""

    def __init__(self, wrote: list[int], max_phys: int) -> None:
        self.queue = Queue([Segment(i * FILE_SIZE, w) for i, w in enumerate(wrote)])
        self.max_phys_offset = max_phys

    def get_message(self, phys: int, size: int) -> memoryview | None:
        segment = self.queue.find(phys)
        if segment is None:
            return None
        position = phys - segment.start_offset
        if position + size > segment.wrote_position:
            return None
        return segment.view[position : position + size]

    def roll_next_file(self, offset: int) -> int:
        return offset + FILE_SIZE - offset % FILE_SIZE


junk_units = st.lists(
    st.tuples(
        st.one_of(st.integers(-50, 3200), st.sampled_from([2**63 - 1, -(2**63)])),
        st.one_of(st.integers(1, 300), st.sampled_from([CQ_FILLER_SIZE, 0, -1, -(2**31)])),
        st.sampled_from([1, 2, 3, -(2**63)]),
    ),
    max_size=40,
)
# What a queue holds: records one after another, now and then a filler or a hole
plausible_units = st.lists(
    st.tuples(st.integers(0, 120), st.integers(1, 100), st.sampled_from([1, 2, 3])),
    max_size=40,
).map(
    lambda steps: [
        (sum(gap + size for gap, size, _ in steps[:i]) + gap, size, tag)
        for i, (gap, size, tag) in enumerate(steps)
    ]
)
units = st.one_of(junk_units, plausible_units)
limits = st.fixed_dictionaries(
    {
        "max_transfer_bytes_on_message_in_disk": st.integers(0, 3000),
        "max_transfer_count_on_message_in_disk": st.integers(0, 12),
        "max_transfer_bytes_on_message_in_memory": st.integers(0, 3000),
        "max_transfer_count_on_message_in_memory": st.integers(0, 12),
    }
)
filters = st.sampled_from(
    [None, TagsFilter(None), TagsFilter(frozenset({1, 3})), TagsFilter(frozenset())]
)


def scan(
    use_native: bool, cq: list[tuple[int, int, int]], log: Log, runs: bool = False, **kw: Any
) -> Any:
    """What a scan gave; with ``runs`` the body's bytes and the record count, not the slices
    (the C joins adjacent records into one, the reference never does)."""
    result = GetMessageResult(status=GetMessageStatus.NO_MESSAGE_IN_QUEUE)
    with pytest.MonkeyPatch.context() as patch:
        if not use_native:
            patch.setattr(reads, "native", None)
        scanned = reads._scan_units(
            memoryview(b"".join(CQ_UNIT.pack(*u) for u in cq)),
            log,
            SimpleNamespace(**kw["limits"]),
            kw["threshold"],
            kw["max_msgs"],
            kw["message_filter"],
            result,
            runs,
        )
    buffers = [bytes(b) for b in result.buffers]
    if runs:
        assert sum(map(len, buffers)) == result.buffer_total_size
        buffers = [b"".join(buffers), result.message_count]  # type: ignore[list-item]
    return (scanned, result.status, buffers, result.buffer_total_size,
            result.suggest_pulling_from_slave)  # fmt: skip


@needs_store_native
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cq=units,
    wrote=st.lists(st.sampled_from([FILE_SIZE, FILE_SIZE, 0, 500, 999]), max_size=4),
    max_phys=st.integers(0, 3000),
    threshold=st.integers(0, 3000),
    max_msgs=st.integers(1, 40),
    limits=limits,
    message_filter=filters,
)
@example(cq=[(0, 10, 1), (10, 10, 2), (1000, 10, 1)], wrote=[1000, 1000], max_phys=3000,
         threshold=3000, max_msgs=32, limits={"max_transfer_bytes_on_message_in_disk": 3000,
         "max_transfer_count_on_message_in_disk": 40, "max_transfer_bytes_on_message_in_memory":
         3000, "max_transfer_count_on_message_in_memory": 40}, message_filter=None)  # fmt: skip
def test_native_scan_equals_the_reference(cq, wrote, max_phys, threshold, max_msgs, limits,
                                          message_filter) -> None:  # fmt: skip
    log = Log(wrote, max_phys)
    kw = dict(limits=limits, threshold=threshold, max_msgs=max_msgs, message_filter=message_filter)
    reference = scan(False, cq, log, **kw)
    assert scan(True, cq, log, **kw) == reference
    # A pull's body: the same bytes and record count, the same offsets, stops and statuses
    # (the reference with runs asked for is the reference: it never joins)
    assert scan(True, cq, log, runs=True, **kw) == scan(False, cq, log, runs=True, **kw)
    assert scan(False, cq, log, runs=True, **kw)[2] == [b"".join(reference[2]), len(reference[2])]


@needs_store_native
def test_native_scan_takes_a_plain_pull_itself() -> None:
    log = Log([FILE_SIZE], FILE_SIZE)
    cq = b"".join(CQ_UNIT.pack(i * 10, 10, 1) for i in range(5))
    buffers: list[memoryview] = []
    segment = log.queue.files[0]
    got = native.scan_units(cq, segment.view, 0, FILE_SIZE, None, FILE_SIZE, 10**9, 3,
                            10**6, 32, 10**6, 32, buffers)  # fmt: skip
    assert got == (3, 3, 30, 30, 1)  # the fourth unit is where the count limit stopped it
    assert [bytes(b) for b in buffers] == [
        bytes(segment.view[i * 10 : i * 10 + 10]) for i in range(3)
    ]


@needs_store_native
def test_native_runs_join_adjacent_records_only() -> None:
    """A pull's body as few slices as the records allow: adjacent records share one, a gap (a
    record the tag filter refused, or bytes between) starts the next; count is still records."""
    log = Log([FILE_SIZE], FILE_SIZE)
    segment = log.queue.files[0].view
    units = [(0, 10, 1), (10, 10, 1), (20, 10, 2), (30, 10, 1), (40, 5, 1), (50, 10, 1)]
    cq = b"".join(CQ_UNIT.pack(*u) for u in units)
    buffers: list[memoryview] = []
    got = native.scan_runs(cq, segment, 0, FILE_SIZE, {1}, FILE_SIZE, 10**9, 32,
                           10**6, 32, 10**6, 32, buffers)  # fmt: skip
    assert got == (6, 5, 45, 50, 0)
    assert [bytes(b) for b in buffers] == [
        bytes(segment[0:20]),
        bytes(segment[30:45]),
        bytes(segment[50:60]),
    ]


@pytest.mark.parametrize("use_native", [False, pytest.param(True, marks=needs_store_native)])
def test_a_corrupt_unit_is_skipped_not_sent(use_native: bool) -> None:
    """A unit of size 0 or below (a damaged ConsumeQueue) is skipped like a filler: it raised
    TypeError before any segment was found, and a negative size made the reply's length wrong."""
    log = Log([FILE_SIZE], FILE_SIZE)
    kw = dict(
        limits=dict.fromkeys(
            ["max_transfer_bytes_on_message_in_disk", "max_transfer_bytes_on_message_in_memory"],
            10**6,
        )
        | dict.fromkeys(
            ["max_transfer_count_on_message_in_disk", "max_transfer_count_on_message_in_memory"],
            32,
        ),
        threshold=10**9,
        max_msgs=32,
        message_filter=None,
    )
    scanned, status, buffers, total, _ = scan(
        use_native, [(0, 0, 1), (5, -3, 1), (10, 10, 1)], log, **kw
    )
    segment = log.queue.files[0].view
    assert (scanned, status, buffers, total) == (
        3,
        GetMessageStatus.FOUND,
        [bytes(segment[10:20])],
        10,
    )
