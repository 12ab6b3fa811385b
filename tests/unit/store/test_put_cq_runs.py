"""put_cq_runs (broker/store/native/consume_queue.c) against its reference python_put_cq_runs
(consume_queue_table.py): a plain pass's ConsumeQueue units written into their queues' last
files. Two tables fed the same runs in turn, each run's leftovers through ``put_runs``, must
hold the same files byte for byte, the same positions, ends and dirty queues."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.store.consume_queue_table import ConsumeQueueTable, python_put_cq_runs
from broker.store.layout import CQ_UNIT
from broker.store.store_native import native
from tests.kits.nativekit import needs_store_native

FILE_UNITS = 6  # a file fills every few runs: the roll goes to Python
TOPICS = ("T", "U", "a/b")  # a/b cannot be a directory: no queue
INT64 = 1 << 63

# (topic, queue id, where the run starts, units, phys step, first unit's phys back ("at the
# end": its record ends where the queue's last one does), tags)
drawn_run = st.tuples(
    st.sampled_from(TOPICS),
    st.integers(0, 2),
    st.one_of(
        st.just("end"),
        st.integers(-2, 2),  # near the queue's end: a gap, a re-dispatch
        st.sampled_from([-INT64 - 1, INT64, 2**70, INT64 // 20 + 1]),
    ),
    st.integers(1, 4),
    st.integers(1, 400),
    st.sampled_from([0, 0, 0, 1, 10_000, INT64 - 1, "at the end"]),
    st.integers(-(2**63), 2**63 - 1),
)
hostile = st.sampled_from(
    [
        ("T", 0, 0, b"\x00" * 19, []),  # not whole units
        ("T", 0, 0, b"", []),
        ("T", 0, 0, bytearray(20), []),
        ("T", "0", 0, b"\x00" * 20, []),
        (b"T", 0, 0, b"\x00" * 20, []),
        ("T", 0, 0.0, b"\x00" * 20, []),
        ("T", 0, 0, b"\x00" * 20),
        ["T", 0, 0, b"\x00" * 20, []],
        None,
    ]
)
step = st.lists(st.one_of(drawn_run, drawn_run, drawn_run, hostile), min_size=1, max_size=6)


class Feed:
    """Turns draws into runs against one table's state (the next queue offset, the phys
    offset each queue reached), the same for both tables as long as they agree."""

    def __init__(self) -> None:
        self.phys = 1000

    def runs(self, table: ConsumeQueueTable, drawn: list) -> list:
        out = []
        for item in drawn:
            if type(item) is not tuple or len(item) != 7:
                out.append(item)
                continue
            topic, queue_id, where, count, step_size, back, tags = item
            queue = table.find(topic, queue_id)
            end = 0 if queue is None else queue.max_queue_offset
            first = end if where == "end" else (where if abs(where) > 2 else end + where)
            units = b""
            for n in range(count):
                if n:
                    phys = self.phys
                elif back == "at the end":
                    phys = max(0, (0 if queue is None else queue.max_phys_offset) - step_size)
                else:
                    phys = max(0, self.phys - back)
                units += CQ_UNIT.pack(phys, step_size, tags)
                self.phys += step_size
            out.append((topic, queue_id, first, units, []))
        return out


def _state(root: Path, table: ConsumeQueueTable) -> tuple:
    files = {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }
    queues = {
        (q.topic, q.queue_id): (q.max_phys_offset, [f.wrote_position for f in q.queue.files])
        for q in table
    }
    dirty = sorted((q.topic, q.queue_id) for q in table.dirty)
    return files, queues, dirty


def _well_formed(run: object) -> bool:
    return (
        type(run) is tuple
        and len(run) == 5
        and type(run[0]) is str
        and type(run[1]) is int
        and type(run[2]) is int
        and type(run[3]) is bytes
        and len(run[3]) % 20 == 0
    )


@needs_store_native
def test_native_put_cq_runs_is_the_reference(tmp_path: Path) -> None:
    roots = {name: tmp_path / name for name in ("native", "python")}
    tables = {
        name: ConsumeQueueTable(root, FILE_UNITS * CQ_UNIT.size) for name, root in roots.items()
    }
    puts = {"native": native.put_cq_runs, "python": python_put_cq_runs}
    feed = Feed()
    seen = {"taken": 0, "left": 0}

    @settings(
        max_examples=200,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(step)
    def check(drawn: list) -> None:
        runs = feed.runs(tables["python"], drawn)
        taken = {}
        for name, table in tables.items():
            taken[name] = puts[name](table.by_topic, table.dirty, runs)
            # what the pass leaves goes through put_runs (the hostile ones are dropped:
            # put_plain_run never makes them)
            table.put_runs([r for r in runs[taken[name] :] if _well_formed(r)])
        assert taken["native"] == taken["python"]
        seen["taken"] += taken["native"]
        seen["left"] += len(runs) - taken["native"]
        assert _state(roots["native"], tables["native"]) == _state(
            roots["python"], tables["python"]
        )

    try:
        check()
    finally:
        for table in tables.values():
            table.close()
    assert seen["taken"] and seen["left"]  # both ways were taken


@pytest.mark.parametrize(
    "put",
    [
        python_put_cq_runs,
        pytest.param(getattr(native, "put_cq_runs", None), marks=needs_store_native, id="native"),
    ],
)
def test_a_closed_file_or_a_new_queue_is_left_to_put_runs(tmp_path: Path, put) -> None:
    """The common run is written and its queue marked dirty; a queue not yet in the table, and
    one whose file's mapping is closed, stop the call there (put_runs says what happens)."""
    table = ConsumeQueueTable(tmp_path, FILE_UNITS * CQ_UNIT.size)
    queue = table.find_or_create("T", 0)
    queue.put(100, 10, 7, 0)  # its first file
    table.take_dirty()
    unit = CQ_UNIT.pack(110, 10, 8)
    runs = [("T", 0, 1, unit, []), ("T", 1, 0, unit, []), ("T", 0, 2, unit, [])]
    assert put(table.by_topic, table.dirty, runs) == 1
    assert queue.unit(1) == (110, 10, 8) and queue.max_phys_offset == 120
    assert table.dirty == {queue}
    mapped = queue.queue.files[-1]
    mapped.close()  # a queue deleted meanwhile
    assert put(table.by_topic, table.dirty, [("T", 0, 2, CQ_UNIT.pack(120, 10, 9), [])]) == 0
    assert mapped.wrote_position == 2 * CQ_UNIT.size


@needs_store_native
def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        native.put_cq_runs({}, set())
    with pytest.raises(TypeError):
        native.put_cq_runs({}, [], [])
    with pytest.raises(TypeError):
        native.put_cq_runs({}, set(), ())
