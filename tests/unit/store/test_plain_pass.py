"""plain_pass (broker/store/native/plain_pass.c) against its reference python_plain_pass, and
both against the path they replace (put_plain_run, then BrokerStatsManager.on_puts): stores
fed the same passes and events (segments, ConsumeQueue files and index files small enough to
roll, reput left behind, listeners with something to do, the disk full, topics the broker's
services hear, first puts of a topic) answer the same replies and leave the same CommitLog,
ConsumeQueue and index bytes, positions, listener calls, dirty queues and stats. Where the
pass declines or stops after its append, the caller's Python path (send_plain._store_rest)
finishes it, as the broker does."""

from __future__ import annotations

import itertools
import tempfile
import time
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.processor.send_reply import REPLY_PIECES
from broker.stats import BrokerStatsManager
from broker.store import mapped_file_queue
from broker.store.dispatch import ALWAYS_HEARD
from broker.store.group_put import finish_plain_run, put_plain_run
from broker.store.plain_pass import python_plain_pass
from broker.store.store_native import native
from broker.timer.transform import TIMER_TOPIC
from tests.kits.nativekit import needs_store_native
from tests.unit.store.conftest import StoreFactory, message

CLUSTER = "C"
HOST = (b"\x7f\x00\x00\x01", 40000)
SIZES = dict(
    mapped_file_size_commit_log=16 * 1024,
    mapped_file_size_consume_queue=20 * 12,
    max_hash_slot_num=8,
    max_index_num=40,
)

_properties = st.one_of(
    st.lists(
        st.tuples(
            st.sampled_from([b"TAGS", b"KEYS", b"UNIQ_KEY", b"X"]),
            st.sampled_from([b"a", b"a b", b"k", b"\xc3\xa9 k", b"TagA"]),
        ),
        max_size=4,
    ).map(lambda pairs: b"\x02".join(name + b"\x01" + value for name, value in pairs)),
    st.dictionaries(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY"]), st.sampled_from(["a", "b c"])),
)
_rows = st.lists(
    st.tuples(
        # up to six topics a pass: past the four the C keeps its totals for as values
        st.sampled_from(["T"] * 6 + ["U"] * 3 + ["é"] * 2 + ["V", "W", TIMER_TOPIC]),
        st.sampled_from([0, 0, 1, 2]),
        st.sampled_from([0, 0, 0, 4]),
        _properties,
        st.binary(max_size=700),
    ),
    min_size=1,
    max_size=8,
)
# events between passes; the common ones drawn more often
_EVENTS = ["hold", "release", "release", "behind", "catch up", "catch up", "cold", "full", "full"]
_steps = st.lists(
    st.one_of(st.tuples(st.just("pass"), _rows), st.tuples(st.sampled_from([*_EVENTS, "flushed"]))),
    max_size=30,
)


class Side:
    """One store and the broker's stats beside it, its passes made one way: "native",
    "twin" (plain_pass then _store_rest's Python), or "reference" (put_plain_run, on_puts)."""

    def __init__(self, root: Path, way: str) -> None:
        self.way = way
        self.store = store = StoreFactory(root).open(**SIZES)
        store.commit_log.clock = itertools.count(1_700_000_000_000, 333).__next__
        self.stats = BrokerStatsManager(lambda: 0)
        self.calls: list[object] = []
        self.waiting = types.SimpleNamespace(count=0)
        self.warm = True  # the page warmer's edge past the segment: no warmer call due
        store.commit_log.warmer.ahead = 0
        # No warmer thread: it moves warmed_position whenever it gets the GIL, so one side's
        # pass found the warmer due and another's did not (a flake of the deciding check).
        store.commit_log.warmer.enabled = False

        def put() -> None:  # does something only while someone waits, as HA's
            if self.waiting.count:
                self.calls.append("put")

        def arrive(*args: object) -> None:
            self.calls.append(args[:4])

        def wanted() -> bool:
            return self.waiting.count > 0

        store.put_listener = put
        store.dispatcher.arrival_listener = arrive
        store.dispatcher.arrivals_wanted = wanted
        store.plain_idle = (put, arrive, wanted, ((self.waiting, "count"),))
        assert store.put_message(message("T", 0, b"first")).ok  # the first segment
        for topic in ("T", "U"):  # most passes find their queues and stats items made
            for queue_id in (0, 1):
                assert store.put_message(message(topic, queue_id, b"seed")).ok
                self.stats.on_put(topic, CLUSTER, 1, 4)

    def send(self, rows: list[tuple]) -> tuple[str, list[bytes] | None]:
        if self.warm:
            self.store.commit_log.queue.files[-1].warmed_position = 1 << 40
        if self.way == "reference":
            stored = put_plain_run(self.store, rows, REPLY_PIECES)
            if stored is None:
                return "", None
            if stored[1]:
                self.stats.on_puts(stored[1], CLUSTER)
            return "", stored[0]
        run = native.plain_pass if self.way == "native" else python_plain_pass
        got = run(self.store, rows, REPLY_PIECES, self.stats.put_items, CLUSTER, ALWAYS_HEARD)
        kind = type(got).__name__
        if type(got) is list:
            return kind, got
        if got is None:
            stored = put_plain_run(self.store, rows, REPLY_PIECES)
            if stored is None:
                return kind, None
        else:
            stored = finish_plain_run(self.store, got)
        if stored[1]:
            self.stats.on_puts(stored[1], CLUSTER)
        return kind, stored[0]

    def event(self, name: str) -> None:
        store = self.store
        if name in ("hold", "release"):
            self.waiting.count = 1 if name == "hold" else 0
        elif name == "behind":
            store.commit_log.put_message(message("U", 1, b"undispatched"))
        elif name == "catch up":
            store.reput.do_reput(1000)
        elif name == "cold":  # the warmer's edge near the writer: its call is due
            self.warm = False
            store.commit_log.queue.files[-1].warmed_position = 0
        elif name == "full":
            store.clean.disk_full = not store.clean.disk_full
        elif name == "swap items":  # T's stats items rebound: the next pass counts in these
            # (the old tuple kept alive: a stale borrowed pointer to it would still read it)
            self.old_items = nums, sizes, broker = self.stats.put_items["T", CLUSTER]
            self.stats.put_items["T", CLUSTER] = (sizes, nums, broker)
        elif name == "delete T":  # T's ConsumeQueues gone: the next pass to T makes new ones
            store.delete_topics({"T"})
        else:
            store.consume_queues.take_dirty()

    def rest(self, rows: list[tuple], stored: int) -> None:
        """The rows the pass left, put as the reference would (it rolls the segment)."""
        for topic, queue_id, _, _, body, *_ in rows[stored:]:
            self.store.put_message(message(topic, queue_id, body))

    def state(self) -> dict[str, object]:
        store = self.store
        root = store.config.store_path_root_dir
        stats = store.stats
        return {
            "files": {
                str(p.relative_to(root)): p.read_bytes()
                for p in sorted([*root.glob("commitlog/*"), *root.glob("consumequeue/*/*/*")])
            },
            # index files are named by the time they were made: their bytes, in order
            "index": [bytes(f.file.mmap) for f in store.index_service.files],
            "reput": store.reput.reput_from_offset,
            "dispatched": store.dispatcher.last_dispatched_timestamp,
            "wrote": [f.wrote_position for f in store.commit_log.queue.files],
            "calls": list(self.calls),
            "dirty": sorted((q.topic, q.queue_id) for q in store.consume_queues.dirty),
            "store stats": (
                stats.put_message_times_total,
                stats.put_message_size_total,
                sum(stats.put_distribution),
            ),
            "broker stats": {k: (i.value, i.times) for k, i in self.stats.items.items()},
        }


def _rows_of(drawn: list[tuple]) -> list[tuple]:
    return [
        (topic, queue_id, sys_flag, properties, body, 0, 1_700_000_000_000, HOST, 0, n)
        for n, (topic, queue_id, sys_flag, properties, body) in enumerate(drawn)
    ]


def _ways() -> list[str]:
    return ["twin", "reference"] if native is None else ["native", "twin", "reference"]


@settings(max_examples=60, deadline=None)
@given(_steps)
def test_the_pass_leaves_what_put_plain_run_leaves(steps) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        sides = [Side(Path(scratch) / way, way) for way in _ways()]
        try:
            for step in steps:
                answers = []
                for side in sides:
                    if step[0] == "pass":
                        rows = _rows_of(step[1])
                        kind, replies = side.send(rows)
                        side.rest(rows, len(replies or ()))
                        answers.append((kind if side.way != "reference" else "", replies))
                    else:
                        side.event(step[0])
                kinds = {kind for kind, _ in answers if kind}
                assert len(kinds) <= 1, answers  # the C and the twin decide alike
                assert len({repr(replies) for _, replies in answers}) <= 1
                states = [side.state() for side in sides]
                for side, state in zip(sides[1:], states[1:], strict=True):
                    for key, value in states[0].items():
                        assert state[key] == value, (side.way, key)
        finally:
            for side in sides:
                side.store.shutdown()


def test_passes_over_many_topics_leave_what_put_plain_run_leaves() -> None:
    """Passes of six topics (past the totals the C keeps as values), the first making their
    queues and the next ones common: the same decisions, replies and state every way."""
    six = [(topic, 0, 0, b"TAGS\x01a", b"x" * 40) for topic in ["T", "U", "é", "V", "W", "T"]]
    steps = [("pass", six), ("catch up",), ("pass", six), ("pass", six[::-1])]
    test_the_pass_leaves_what_put_plain_run_leaves.hypothesis.inner_test(steps)


def test_tables_changed_between_passes_are_read_anew() -> None:
    """The C keeps the stats items and ConsumeQueues a pass found while their dicts are
    unchanged (store.h dict_version): T's items rebound, or T deleted and its queues made
    again, or a new queue of T, the next passes count and write where the reference does."""
    t0 = [("T", 0, 0, b"TAGS\x01a", b"x" * 30)]
    both = [*t0, ("T", 1, 0, b"", b"y" * 20), ("U", 0, 0, b"", b"u")]
    # t0 alone around each change: U's entry may share T's place in the C's keeping
    steps = [("pass", both), ("pass", t0), ("swap items",), ("pass", t0), ("pass", both)]
    steps += [("delete T",), ("pass", t0), ("catch up",), ("pass", both), ("pass", t0)]
    steps += [("pass", [("T", 2, 0, b"", b"z")]), ("catch up",), ("pass", both), ("swap items",)]
    steps += [("pass", t0), ("delete T",), ("pass", t0), ("catch up",), ("pass", t0)]
    test_the_pass_leaves_what_put_plain_run_leaves.hypothesis.inner_test(steps)


@pytest.mark.parametrize("way", _ways()[:-1])
def test_a_common_pass_is_done_whole(tmp_path: Path, way: str) -> None:
    """The first pass to a queue leaves the rest to Python (the queue is new), the next one is
    done whole in the call; with a pull held, or a topic's stats not made yet, or reput behind,
    it is not."""
    side = Side(tmp_path, way)
    sends = [("é", 0, 0, b"KEYS\x01k", b"x" * 10)]
    assert side.send(_rows_of(sends))[0] == "tuple"  # é's queue 0 and its stats are new
    kind, replies = side.send(_rows_of(sends * 3))
    assert kind == "list" and len(replies) == 3
    assert side.stats.get("TOPIC_PUT_NUMS", "é").value == 4
    assert side.store.stats.put_message_times_total == 9  # the first put's and the seeds' too
    assert side.store.get_max_offset_in_queue("é", 0) == 4
    side.event("hold")
    assert side.send(_rows_of(sends))[0] == "NoneType"
    side.event("release")
    assert side.send(_rows_of([("U", 3, 0, b"", b"u")]))[0] == "tuple"  # a new queue
    assert side.send(_rows_of([(TIMER_TOPIC, 0, 0, b"", b"t")]))[0] == "tuple"  # heard
    side.event("behind")
    assert side.send(_rows_of(sends))[0] == "NoneType"
    side.store.shutdown()


@needs_store_native
def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    side = Side(tmp_path, "native")
    for args in (
        (side.store, (), REPLY_PIECES, {}, CLUSTER, ALWAYS_HEARD),
        (side.store, [], list(REPLY_PIECES), {}, CLUSTER, ALWAYS_HEARD),
        (side.store, [], REPLY_PIECES, [], CLUSTER, ALWAYS_HEARD),
        (side.store, [], REPLY_PIECES, {}, b"C", ALWAYS_HEARD),
        (side.store, [], REPLY_PIECES, {}, CLUSTER, list(ALWAYS_HEARD)),
        (side.store, [], REPLY_PIECES, {}, CLUSTER),
    ):
        with pytest.raises(TypeError):
            native.plain_pass(*args)
    # not a store: declined, nothing done
    assert native.plain_pass(object(), [], REPLY_PIECES, {}, CLUSTER, ALWAYS_HEARD) is None
    assert python_plain_pass(object(), [], REPLY_PIECES, {}, CLUSTER, ALWAYS_HEARD) is None
    side.store.shutdown()


@needs_store_native
def test_the_native_clock_is_the_wall_clock_in_ms() -> None:
    before = time.time_ns() // 1_000_000
    now = native.now_ms()
    assert before <= now <= mapped_file_queue.python_now_ms()


@pytest.mark.parametrize("way", _ways()[:-1])
def test_counters_it_cannot_add_to_leave_the_rest_to_python(tmp_path: Path, way: str) -> None:
    """The pass counts in the store's PutCounters and the topics' StatsCounters only: other
    counters, or an addition that would pass int64 (the broker's item, which every topic
    shares), stop it after the append; the stats it counts read back as on_puts' would."""
    side = Side(tmp_path, way)
    sends = _rows_of([("T", 0, 0, b"", b"x" * 10), ("U", 1, 0, b"", b"y" * 5)])
    kind, replies = side.send(sends)
    assert kind == "list" and len(replies) == 2
    nums, _, broker = side.stats.put_items["T", CLUSTER]
    assert (nums.value, nums.times, broker.value, broker.times) == (3, 3, 6, 6)  # seeds: 2, 4
    assert side.stats.put_items["U", CLUSTER][1].value > 4 + 4 + 5  # the record's bytes
    assert side.store.stats.runtime_info()["putMessageTimesTotal"] == "7"
    top = (1 << 63) - 1
    broker.value = top - 150  # checked against all the pass's additions, messages and bytes
    assert side.send(sends[:1])[0] == "list"  # one record's fit
    assert side.send(sends)[0] == "tuple"  # two records' may not: on_puts counts them
    assert broker.value == top - 150 + 3
    if native is not None:  # the twin StatsCounter is plain slots (broker/store/counters.py)
        broker.value = top
        with pytest.raises(OverflowError):  # Java's long: the Python path's member refuses
            side.send(sends[:1])
    broker.value = 0
    stats = side.store.stats
    side.store.stats = types.SimpleNamespace(
        **{  # not PutCounters
            name: getattr(stats, name) for name in ("put_message_times_total", "on_put_run")
        }
    )
    assert side.send(sends[:1])[0] == "tuple"
    side.store.stats = stats
    assert side.send(sends[:1])[0] == "list"
    side.store.shutdown()


@pytest.mark.parametrize("way", _ways()[:-1])
def test_gates_flipping_between_passes_are_read_each_pass(tmp_path: Path, way: str) -> None:
    """The store's gates and listeners' counters, kept in slots that the C reads at their
    offsets (broker/store/slotted.py), are read anew by every pass: a gate closed between two
    passes declines the next, opened again it is taken."""
    side = Side(tmp_path, way)
    sends = _rows_of([("T", 0, 0, b"", b"x")])
    assert side.send(sends)[0] == "list"
    store = side.store
    gates = (
        (store, "is_slave", True, False),
        (store, "shutting_down", True, False),
        (store, "loaded", False, True),
        (store.clean, "disk_full", True, False),
        (store.health, "writable", False, True),
        (side.waiting, "count", 1, 0),
    )
    for target, name, closed, opened in gates:
        setattr(target, name, closed)
        assert side.send(sends)[0] == "NoneType", name
        setattr(target, name, opened)
        assert side.send(sends)[0] == "list", name
    store.shutdown()


@pytest.mark.parametrize("way", _ways()[:-1])
def test_a_slot_shadowed_later_is_read_as_python_reads_it(tmp_path: Path, way: str) -> None:
    """A class that puts a property where a slot was (a subclass, or the class changed after
    passes ran) is read through it: nothing the C found before is taken as still true."""
    side = Side(tmp_path, way)
    sends = _rows_of([("T", 0, 0, b"", b"x")])
    assert side.send(sends)[0] == "list"
    store, health = side.store, side.store.health

    class Fenced(type(health)):  # type: ignore[misc]
        writable = property(lambda self: False)

    health.__class__ = Fenced
    assert side.send(sends)[0] == "NoneType"
    health.__class__ = Fenced.__mro__[1]
    assert side.send(sends)[0] == "list"
    Fenced.writable = property(lambda self: True)  # the subclass changed: a new version
    health.__class__ = Fenced
    assert side.send(sends)[0] == "list"
    Fenced.writable = property(lambda self: False)
    assert side.send(sends)[0] == "NoneType"
    health.__class__ = Fenced.__mro__[1]
    store.shutdown()
