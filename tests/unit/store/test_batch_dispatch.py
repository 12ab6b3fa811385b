"""A batch put's dispatch, packed by the append (AppendCursor.put_batch_dispatch) instead of a
DispatchRequest per entry: the native cursor and index writer against their Python references
(same record bytes, message ids, units, index entries and wake-ups), and a store's ConsumeQueue
and IndexFile bytes after batch puts equal to those a crash recovery rebuilds from the log
alone (what reput and the re-dispatch write from DispatchRequests)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.store.append_cursor import PythonAppendCursor, python_batch_dispatch
from broker.store.batch_records import python_batch_plan
from broker.store.index_file import index_file_size, python_index_put_entries, python_index_put_keys
from broker.store.layout import BATCH_KEY
from broker.store.store_native import native
from broker.store.types import DispatchRequest, MessageExtBrokerInner
from broker.timer.transform import TIMER_TOPIC
from remoting import message as codec
from remoting.record import record_size
from tests.kits.nativekit import needs_store_native
from tests.unit.store.conftest import StoreFactory, crash

PREFIX = "0A00000700002A9F"
STORE = b"\x0a\x00\x00\x07"
START = 1 << 30
TAGS = [f"T{i}" for i in range(12)]  # more than the native table's 8 distinct tags

_PROPERTY = st.one_of(
    st.sampled_from(TAGS).map(lambda t: f"TAGS\x01{t}"),
    st.sampled_from(["KEYS\x01k é", "KEYS\x01 a  b ", "UNIQ_KEY\x01U😀", "UNIQ_KEY\x01", "X\x01"]),
    # ASCII values, hashed from the record's bytes; a non-ASCII DELAY sends the entry the
    # str way (batch_dispatch.c dispatch_spans)
    st.sampled_from(
        ["KEYS\x01k1", "KEYS\x01a b  c", "KEYS\x01 ", "UNIQ_KEY\x01AB12", "UNIQ_KEY\x01 x"]
    ),
    st.sampled_from(["DELAY\x013", "DELAY\x01é", "TAGS\x01é", "KEYS\x01\x7f~"]),
)
entries_strategy = st.lists(
    st.tuples(
        st.integers(-(2**31), 2**31 - 1),
        st.binary(max_size=40),
        st.lists(_PROPERTY, max_size=4).map("\x02".join),
    ),
    min_size=1,
    max_size=40,
)


def _plans(entries, topic: str, born: bytes, store: bytes, max_body: int = 100):
    """(native plan, Python plan) of a batch body: each cursor takes its own twin's records."""
    fixed = record_size(
        0, len(topic.encode()), 0, born_v6=len(born) == 16, store_v6=len(store) == 16
    )
    body = codec.encode_batch_body(entries)
    args = (body, b"WAIT\x01true", fixed, max_body, 1000)
    return native.batch_plan(memoryview(body), *args[1:], codec.MessageDecodeError), (
        python_batch_plan(*args)
    )


@needs_store_native
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=entries_strategy,
    topic=st.sampled_from(["B", "é" * 40, "😀"]),
    born=st.sampled_from([b"\x7f\x00\x00\x01", bytes(range(16))]),
    first=st.integers(0, 2**40),
)
def test_put_batch_dispatch_alike(entries, topic, born, first) -> None:
    plans = _plans(entries, topic, born, STORE)
    assert plans[0][1:] == plans[1][1:]  # count, total, refused and what put_messages checks
    total = plans[1][2]
    outcomes, buffers = [], []
    for kind, plan in zip((native.AppendCursor, PythonAppendCursor), plans, strict=True):
        cursor, buffer = kind(PREFIX, STORE, 10911, DispatchRequest), bytearray(8 + total)
        cursor.set_queue_offset(topic, 1, first)
        outcomes.append(
            cursor.put_batch_dispatch(
                buffer, 8, START, 1_700_000_000_123, plan[0], topic, 1, 0, 7, (born, 9), 0
            )
        )
        buffers.append((bytes(buffer), dict(cursor.queue_offsets)))
    assert outcomes[0] == outcomes[1] and buffers[0] == buffers[1]
    msg_id, units, keys, wakes = outcomes[0]
    ids = msg_id.split(",")
    assert len(ids) == len(entries) and ids[0] == f"{PREFIX}{START + 8:016X}"
    assert len(units) == 20 * len(entries) and len(keys) % BATCH_KEY.size == 0
    assert len({tags for tags, _ in wakes}) == len(wakes)
    assert max(q for _, q in wakes) == first + len(entries) - 1
    assert buffers[0][1] == {(topic, 1): first + len(entries)}


def _plan_facts(make, body: bytes, max_body: int):
    try:
        return make(body)[1:]
    except codec.MessageDecodeError as exc:
        return str(exc)


@needs_store_native
@settings(max_examples=300)
@given(entries=entries_strategy, max_body=st.integers(0, 50), data=st.data())
def test_batch_plans_alike_on_damaged_and_oversized_bodies(entries, max_body, data) -> None:
    """The facts put_messages checks (count, total, refused entry, first and refused bodies,
    the refused properties) and the decode errors, native and reference, on bodies cut short
    or with a flipped byte anywhere."""
    body = bytearray(codec.encode_batch_body(entries))
    cut = data.draw(st.integers(0, len(body)))
    if data.draw(st.booleans()):
        body = body[:cut]
    elif cut < len(body):
        body[cut] ^= data.draw(st.integers(1, 255))
    body = bytes(body)
    batch = b"WAIT\x01true"
    native_facts = _plan_facts(
        lambda b: native.batch_plan(
            memoryview(b), batch, 91, max_body, 60, codec.MessageDecodeError
        ),
        body,
        max_body,
    )
    reference = _plan_facts(lambda b: python_batch_plan(b, batch, 91, max_body, 60), body, max_body)
    assert native_facts == reference


@needs_store_native
def test_a_plan_that_does_not_hold_together_is_refused_before_anything_is_written() -> None:
    """put_batch_dispatch checks every plan entry against the body it points into."""
    entries = [(0, b"abc", "TAGS\x01A"), (0, b"defg", "")]
    (view, batch, plan), *_ = _plans(entries, "B", STORE, STORE)[0]
    cursor, buffer = native.AppendCursor(PREFIX, STORE, 10911, DispatchRequest), bytearray(4096)
    short = memoryview(bytes(view)[:10])
    for records in ((short, batch, plan), (view, batch, plan[:-1]), (view, b"x" * 40000, plan)):
        with pytest.raises((ValueError, TypeError)):
            cursor.put_batch_dispatch(buffer, 0, START, 5, records, "B", 0, 0, 1, (STORE, 1), 0)
    assert bytes(buffer) == bytes(4096) and dict(cursor.queue_offsets) == {}


def test_python_batch_dispatch_of_nothing_is_empty() -> None:
    assert python_batch_dispatch([], []) == ("", b"", b"", [])


def _index(slots: int, capacity: int, prefill: list[tuple[int, int, int]]) -> bytearray:
    mm = bytearray(index_file_size(slots, capacity))
    python_index_put_entries(mm, slots, capacity, prefill)
    return mm


@needs_store_native
@settings(max_examples=300)
@given(
    slots=st.integers(1, 7),
    capacity=st.integers(1, 12),
    prefill=st.lists(st.integers(0, 50), max_size=8),
    keys=st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), st.integers(0, 80)), max_size=16),
    store_timestamp=st.integers(0, 2**41),
)
def test_index_put_keys_alike(slots, capacity, prefill, keys, store_timestamp) -> None:
    """Entries of records the file already has are skipped, the rest go in while there is
    room, and what did not fit comes back for the next file: byte for byte as the reference."""
    prefilled = [(p * 7, p, 1_700_000_000_000 + p) for p in sorted(prefill)]
    packed = b"".join(BATCH_KEY.pack(h, phy) for h, phy in sorted(keys, key=lambda k: k[1]))
    results = []
    for put_keys in (native.index_put_keys, python_index_put_keys):
        mm = _index(slots, capacity, prefilled)
        left = put_keys(mm, slots, capacity, packed, store_timestamp)
        results.append((bytes(mm), left))
    assert results[0] == results[1]


def _batch(topic: str, queue_id: int, start: int, count: int) -> MessageExtBrokerInner:
    entries = [
        (
            0,
            b"m" * (i % 50),
            f"TAGS\x01{TAGS[(start + i) % 3]}\x02KEYS\x01k{i} x{start}\x02UNIQ_KEY\x01U{start}-{i}",
        )
        for i in range(count)
    ]
    return MessageExtBrokerInner(
        topic, queue_id, codec.encode_batch_body(entries), {"WAIT": "true"}, 0, 0,
        1_700_000_000_000, (b"\x7f\x00\x00\x01", 40000), 0,
    )  # fmt: skip


def _files(directory: Path) -> list[tuple[str, bytes]]:
    return sorted(
        (str(p.relative_to(directory)), p.read_bytes()) for p in directory.rglob("*") if p.is_file()
    )


def _index_contents(directory: Path) -> list[bytes]:
    """The index files' bytes in name order (their names are the time they were created)."""
    return [p.read_bytes() for p in sorted(directory.iterdir())]


def test_batch_puts_write_what_recovery_rebuilds_from_the_log(stores: StoreFactory) -> None:
    """Batches over two topics and queues, through ConsumeQueue file boundaries (64 units a
    file) and IndexFile rolls (256 entries a file): the units and index entries the put path
    wrote from the packed dispatch are byte for byte what a crash recovery writes when only
    the CommitLog is left (re-dispatch from DispatchRequests read back from the log)."""
    store = stores.open(mapped_file_size_commit_log=64 * 1024)
    arrivals: list[tuple] = []
    store.dispatcher.arrival_listener = lambda *args: arrivals.append(args)
    for n in range(40):
        result = store.put_messages(_batch(f"Topic{n % 2}", n % 3, n, 1 + n % 11))
        assert result.ok, result
    assert len(store.index_service.files) > 1
    expected_arrivals = len(arrivals)
    config = store.config
    crash(store)
    stores.opened.remove(store)
    written_cq, written_index = _files(config.consume_queue_dir), _index_contents(config.index_dir)
    shutil.rmtree(config.consume_queue_dir)
    shutil.rmtree(config.index_dir)
    config.checkpoint_path.unlink()
    rebuilt = stores.open(mapped_file_size_commit_log=64 * 1024)
    assert rebuilt.recovery_report.mode == "abnormal"
    rebuilt.shutdown()
    stores.opened.remove(rebuilt)
    assert _files(config.consume_queue_dir) == written_cq
    assert _index_contents(config.index_dir) == written_index
    assert expected_arrivals >= 40  # every batch woke its queue's long polling


def test_a_batch_nobody_waits_on_calls_the_listener_for_the_timers_topic_only(
    stores: StoreFactory,
) -> None:
    """arrivals_wanted False (no pull held, no pop waiting): a batch's dispatch puts its units
    but calls the arrival listener only for a topic the broker's services follow (the timer's);
    True: once per tags code, as always."""
    store = stores.open()
    arrivals: list[str] = []
    wanted = [False]
    store.dispatcher.arrival_listener = lambda *args: arrivals.append(args[0])
    store.dispatcher.arrivals_wanted = lambda: wanted[0]
    for topic in ("T", TIMER_TOPIC):
        assert store.put_messages(_batch(topic, 0, 1, 3)).ok
    assert arrivals == [TIMER_TOPIC] * len(arrivals) and arrivals
    assert store.get_max_offset_in_queue("T", 0) == 3
    wanted[0] = True
    del arrivals[:]
    assert store.put_messages(_batch("T", 0, 2, 3)).ok
    assert arrivals and set(arrivals) == {"T"}
