"""put_rows (broker/store/native/plain_rows.c) against its reference, group_put.python_put_rows
with the pure-Python cursor: rows of hostile values appended into a small buffer give the same
bytes, next position, dispatch requests, reply frames, per-topic totals and cursor state, and
stop at the same row (one that does not fit, is refused or is not a valid message). The reply
frames the pieces make are the send processor's own (send_reply.stored_reply_frame)."""

from __future__ import annotations

import functools
import itertools

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from broker.processor.send_reply import REPLY_PIECES, stored_reply_frame
from broker.store.append_cursor import PythonAppendCursor
from broker.store.group_put import put_plain_run, python_put_rows, reply_frame
from broker.store.plain_dispatch import python_plain_dispatch
from broker.store.store_native import native
from broker.store.types import DispatchRequest
from broker.timer.transform import TIMER_TOPIC
from tests.kits.nativekit import needs_store_native
from tests.unit.store.conftest import StoreFactory, message

PREFIX = "0A00000700002A9F"
STORE = b"\x0a\x00\x00\x07"
START = 1 << 30

_VALUES = st.text(alphabet="ab \x01é", max_size=6)
properties = st.one_of(
    st.dictionaries(
        st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "", "é"]),
        st.one_of(_VALUES, st.integers(-3, 3)),
        max_size=4,
    ),
    # a plain send's record properties, already encoded (send_plain.py): the names dispatch
    # reads repeated or empty, separators anywhere, bytes that are not UTF-8
    st.lists(
        st.sampled_from(
            [
                b"TAGS",
                b"KEYS",
                b"UNIQ_KEY",
                b"DELAY",
                b"\x01",
                b"\x02",
                b"a",
                b" ",
                b"\xc3\xa9",
                b"\xff",
                b"\xed\xa0\x80",
            ]
        ),
        max_size=12,
    ).map(b"".join),
    st.lists(
        st.tuples(
            st.sampled_from([b"TAGS", b"KEYS", b"UNIQ_KEY", b"DELAY", b"X", b""]),
            # a long ASCII tag: its hash (from the bytes, no str) wraps
            st.sampled_from(
                [b"", b"a", b"a b", b"\xc3\xa9 k", b"\xff", b"x\x01y", b"TagA-0123456789~"]
            ),
        ),
        max_size=5,
    ).map(lambda pairs: b"\x02".join(name + b"\x01" + value for name, value in pairs)),
)
rows = st.lists(
    st.tuples(
        st.sampled_from(["T", "T", "T", "U", "é", "x" * 130, 7]),  # topic (too long, not a str)
        st.integers(-2, 3),  # queue id
        st.sampled_from([0, 4, 8, 12, 0x10]),  # sys flag
        properties,
        st.binary(max_size=44),  # body (max 40)
        st.integers(-(2**31), 2**31 - 1),  # flag
        st.integers(-(2**63), 2**63 - 1),  # born timestamp
        st.sampled_from([(b"\x7f\x00\x00\x01", 40000)] * 4 + [(bytes(range(16)), 1), (b"x", 1)]),
        st.integers(0, 16),  # reconsume times
        st.integers(-(2**31), 2**31 - 1),  # opaque (a Java int)
    ),
    max_size=8,
)


def _both_puts():
    """The C put_rows with its cursor, then the twin with its: what each test holds equal."""
    return ((native.put_rows, native.AppendCursor), (python_put_rows, PythonAppendCursor))


def _cursor(kind):
    return kind(PREFIX, STORE, 10911, DispatchRequest)


def _run(put_rows, cursor, buffer, drawn, position: int, one_timestamp: bool):
    """The rows put with a clock read per row, or with the pass's one store timestamp."""
    clock = itertools.count(1_700_000_000_000)
    stamp = 1_700_000_000_000 if one_timestamp else clock.__next__
    return put_rows(cursor, buffer, position, START, stamp, 40, list(drawn), REPLY_PIECES)


@needs_store_native
@settings(max_examples=400, deadline=None)
@given(rows, st.integers(0, 1500), st.integers(0, 64), st.booleans())
def test_native_put_rows_is_the_reference(drawn, size: int, position: int, one: bool) -> None:
    position = min(position, size)
    results = []
    for put_rows, kind in _both_puts():
        cursor = _cursor(kind)
        cursor.set_queue_offset("T", 1, 5)
        buffer = bytearray(size)
        got = _run(put_rows, cursor, buffer, drawn, position, one)
        results.append((got, bytes(buffer), dict(cursor.queue_offsets), cursor.last_put_timestamp))
    assert results[0] == results[1]


@needs_store_native
@pytest.mark.parametrize("keys", [b"k", b"\xc3\xa9"])  # ASCII values read in place, or not
def test_a_run_of_many_tags_packs_its_wake_ups_as_the_reference(keys: bytes) -> None:
    """Twelve tags in one queue's run (past the eight the C scans before it keeps them in a
    dict), their codes made as ints only for the wake-ups handed on."""
    drawn = [
        (
            "T",
            0,
            0,
            b"TAGS\x01t%d\x02KEYS\x01%s %d\x02UNIQ_KEY\x01U%d" % (i % 12, keys, i, i),
            b"b",
            0,
            1,
            (b"\x7f\x00\x00\x01", 1),
            0,
            i,
        )
        for i in range(30)
    ]
    results = []
    for put_rows, kind in _both_puts():
        cursor = _cursor(kind)
        buffer = bytearray(8192)
        got = _run(put_rows, cursor, buffer, drawn, 0, True)
        results.append((got, bytes(buffer), dict(cursor.queue_offsets)))
    assert len(results[0][0][2]) == 30
    assert results[0] == results[1]


@needs_store_native
@pytest.mark.parametrize(
    "queue_offset", [0, 9, 10, 99, 100, 12345, 10**9 - 1, 10**9, 10**17, 2**62, 2**63 - 2]
)
def test_reply_numbers_of_every_width_are_the_references(queue_offset: int) -> None:
    """The replies' decimal queue offsets and opaques (from Java's int range) as the twin
    writes them; past int64 the queue's next offset stops the run (a C long long wrapped it
    to a negative offset)."""
    drawn = [
        ("T", 0, 0, b"", b"b", 0, 1, (b"\x7f\x00\x00\x01", 1), 0, opaque)
        for opaque in (0, 7, -1, 10, -99, 100, 2**31 - 1, -(2**31))
    ]
    results = []
    for put_rows, kind in _both_puts():
        cursor = _cursor(kind)
        cursor.set_queue_offset("T", 0, queue_offset)
        buffer = bytearray(4096)
        results.append((_run(put_rows, cursor, buffer, drawn, 0, True), bytes(buffer)))
    assert len(results[0][0][2]) == min(8, 2**63 - queue_offset)
    assert results[0] == results[1]


class Topic(str):
    """A topic that is a str but not exactly one: the C's totals take it by the dict."""


many_topics = st.lists(
    st.tuples(
        st.sampled_from(["A", "B", "C", "D", "E", "F", Topic("A"), Topic("G")]),
        st.integers(0, 2),
    ),
    max_size=12,
)


@needs_store_native
@settings(max_examples=200, deadline=None)
@given(many_topics)
def test_the_totals_of_many_topics_are_the_references(drawn) -> None:
    """Rows of up to eight topics (a str subclass among them): the per-topic totals, in the
    order the topics came, equal the twin's, past the C's few kept as values too."""
    rows_drawn = [
        (topic, queue_id, 0, b"a\x01b", b"body", 0, 1, (b"\x7f\x00\x00\x01", 40000), 0, n)
        for n, (topic, queue_id) in enumerate(drawn)
    ]
    results = []
    for put_rows, kind in _both_puts():
        cursor = _cursor(kind)
        got = _run(put_rows, cursor, bytearray(4000), rows_drawn, 0, True)
        results.append((got, list(got[3].items())))
    assert results[0] == results[1]


@needs_store_native
@pytest.mark.parametrize(
    "tags",
    [b"TagA", b"TagA-0123456789~", b"\x7f" * 9, "é-tag".encode(), "\U0001f600".encode(), b"\xff"],
)
def test_a_sent_tags_code_is_javas_hash_of_the_tag(tags: bytes) -> None:
    """A plain send's TAGS (its record's property bytes) gets the String.hashCode the
    reference gives it, in its ConsumeQueue unit and wake-up: an ASCII tag hashed from its
    bytes (long enough to wrap), the others through their str (a surrogate pair), a tag that
    is not UTF-8 stopping the run as there."""
    row = ("T", 0, 0, b"KEYS\x01k\x02TAGS\x01" + tags, b"x", 0, 0, (b"\x7f\0\0\x01", 1), 0, 1)
    results = []
    for put_rows, kind in _both_puts():
        cursor = _cursor(kind)
        results.append(_run(put_rows, cursor, bytearray(1500), [row], 0, False))
    assert results[0] == results[1]
    assert len(results[0][2]) == (0 if tags == b"\xff" else 1)


@given(
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**63 - 1),
    st.integers(0, 2**40),
)
def test_the_pieces_make_the_send_reply(opaque, queue_id, queue_offset, phys) -> None:
    msg_id = f"7F00000100002A9F{phys:016X}"
    want = stored_reply_frame(opaque, msg_id, queue_id, queue_offset)
    assert reply_frame(REPLY_PIECES, msg_id, queue_id, queue_offset, opaque) == want


def _outcome(call):
    try:
        return call()
    except Exception as exc:  # the same kind of error from both
        return type(exc)


@needs_store_native
@pytest.mark.parametrize(
    ("start", "max_body", "stamp"),
    [
        ("x", 40, 1_700_000_000_000),
        (2**70, 40, 1_700_000_000_000),
        (START, "40", 1_700_000_000_000),
        (START, None, 1_700_000_000_000),
        (True, 40, 1_700_000_000_000),
        (START, 40, lambda: "x"),
        (START, 40, lambda: 2**70),
    ],
)
def test_numbers_put_does_not_take_stop_the_run_as_the_reference(start, max_body, stamp) -> None:
    """C reads put's fixed numbers once a run where put read them at each row: a start offset,
    maxMessageSize or store timestamp put does not take stops the run at its first row (the
    reference puts it again and says why), in the C and the twin alike."""
    drawn = [("T", 1, 0, b"a\x01b", b"body", 0, 1, (b"\x7f\x00\x00\x01", 40000), 0, 7)] * 2
    results = []
    for put_rows, kind in _both_puts():
        cursor = _cursor(kind)
        buffer = bytearray(1000)
        args = (cursor, buffer, 0, start, stamp, max_body, list(drawn), REPLY_PIECES)
        got = _outcome(functools.partial(put_rows, *args))
        results.append((got, bytes(buffer), dict(cursor.queue_offsets)))
    assert results[0] == results[1]


@needs_store_native
def test_bad_arguments_are_refused() -> None:
    cursor = native.AppendCursor(PREFIX, STORE, 10911, DispatchRequest)
    buffer = bytearray(1000)
    clock = itertools.count().__next__
    with pytest.raises(TypeError):
        native.put_rows(cursor, buffer, 0, START, clock, 40, [("T",)], REPLY_PIECES)
    with pytest.raises(TypeError):
        native.put_rows(cursor, buffer, 0, START, clock, 40, [], REPLY_PIECES[:4])
    with pytest.raises(TypeError):
        native.put_rows(object(), buffer, 0, START, clock, 40, [], REPLY_PIECES)
    assert bytes(buffer) == bytes(1000)


# ---------------------------------------------------------------- the packed dispatch

TOPICS = ["T", "U", "é"]
# (topic, queue id, tags code, KEYS, UNIQ_KEY, sys flag, store timestamp step, restart the
# queue at offset 0: a topic deleted and created again)
records = st.lists(
    st.tuples(
        st.sampled_from(TOPICS),
        st.integers(0, 2),
        st.sampled_from([0, 0, 7, -(2**40), 2**62]),
        st.sampled_from(["", "", "a", "a b", " a  b ", "é k"]),
        st.sampled_from(["", "U1", "U2"]),
        st.sampled_from([0, 0, 0, 4, 8, 12]),
        st.sampled_from([0, 0, 1, 1500]),
        st.sampled_from([False] * 7 + [True]),
    ),
    max_size=24,
)


class Requests:
    """DispatchRequests as a log would hold them, across draws: phys offsets back to back,
    each queue's offsets following on (unless a draw restarts it), store timestamps rising."""

    def __init__(self) -> None:
        self.phys, self.store_ts = START, 1_700_000_000_000
        self.next: dict[tuple[str, int], int] = {}

    def make(self, drawn) -> list[DispatchRequest]:
        out = []
        for n, (topic, queue_id, tags, keys, uniq, sys_flag, step, restart) in enumerate(drawn):
            key = (topic, queue_id)
            if restart:
                self.next[key] = 0
            queued = not sys_flag & 4
            queue_offset = self.next.get(key, 0) if queued else 0
            if queued:
                self.next[key] = queue_offset + 1
            size = 90 + n % 7
            self.store_ts += step
            properties = {"KEYS": keys, "n": str(n)}
            out.append(
                DispatchRequest(
                    topic, queue_id, self.phys, size, tags, self.store_ts, queue_offset, keys,
                    uniq, sys_flag, properties,
                )
            )  # fmt: skip
            self.phys += size
        return out


@needs_store_native
@settings(max_examples=200, deadline=None)
@given(records)
def test_native_plain_dispatch_is_the_reference(drawn) -> None:
    requests = Requests().make(drawn)
    assert native.plain_dispatch(requests) == python_plain_dispatch(requests)


def test_the_packed_dispatch_leaves_what_dispatch_many_leaves(tmp_path) -> None:
    """dispatch_rows of the packed form against dispatch_many of the requests, on two stores
    fed the same draws in turn: the same ConsumeQueue and IndexFile bytes (small index files
    that roll), the same arrival-listener calls in the same order, the same last dispatched
    timestamp. Queues restarted at 0 (a topic deleted and created again) are the gap rule."""
    pack = python_plain_dispatch if native is None else native.plain_dispatch
    calls: dict[str, list[tuple]] = {"many": [], "rows": []}
    opened = {}
    for name in calls:
        store = StoreFactory(tmp_path / name).open(max_hash_slot_num=8, max_index_num=24)
        store.dispatcher.arrival_listener = lambda *args, name=name: calls[name].append(args)
        opened[name] = store
    log = Requests()

    @settings(
        max_examples=80,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(records)
    def check(drawn) -> None:
        requests = log.make(drawn)
        if not requests:
            return
        opened["many"].dispatcher.dispatch_many(requests)
        opened["rows"].dispatcher.dispatch_rows(pack(requests))
        assert calls["rows"] == calls["many"]
        many, rows = (opened[n] for n in ("many", "rows"))
        assert (
            rows.dispatcher.last_dispatched_timestamp == many.dispatcher.last_dispatched_timestamp
        )
        assert _queue_files(tmp_path / "rows") == _queue_files(tmp_path / "many")
        assert [bytes(f.file.mmap) for f in rows.index_service.files] == [
            bytes(f.file.mmap) for f in many.index_service.files
        ]

    try:
        check()
        assert len(opened["rows"].index_service.files) > 2  # the index rolled
    finally:
        for store in opened.values():
            store.shutdown()


def _queue_files(root) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted((root / "consumequeue").rglob("*"))
        if p.is_file()
    }


def test_a_run_put_while_reput_is_behind_is_left_to_reput(stores: StoreFactory) -> None:
    """put_plain_run dispatches its own records only when reput was caught up before it; when
    not, the packed dispatch is dropped and reput, woken, builds the same queues and index from
    the log as the caught-up store's dispatch_rows did."""
    host = (b"\x7f\x00\x00\x01", 40000)
    rows = [
        ("T" if n % 3 else "U", n % 4, 0, {"UNIQ_KEY": f"U{n}", "TAGS": f"t{n % 2}", "KEYS": "k"},
         b"b" * n, 0, 1_700_000_000_000, host, 0, n)
        for n in range(40)
    ]  # fmt: skip
    opened = {}
    for name in ("behind", "caught up"):
        store = StoreFactory(stores.root / name).open()
        store.commit_log.clock = itertools.count(1_700_000_000_000, 400).__next__
        assert store.put_message(message("T", 0, b"first")).ok  # the first segment
        store.commit_log.put_message(message("U", 1, b"undispatched"))  # reput behind
        opened[name] = store
    behind, caught_up = opened["behind"], opened["caught up"]
    caught_up.reput.do_reput(100)
    for store in opened.values():
        replies, _ = put_plain_run(store, rows, REPLY_PIECES)
        assert len(replies) == len(rows)
    assert caught_up.reput.caught_up() and not behind.reput.caught_up()
    assert behind.find_consume_queue("T", 1) is None  # nothing of the run dispatched
    behind.reput.do_reput(100)
    assert behind.reput.reput_from_offset == caught_up.reput.reput_from_offset
    assert _queue_files(stores.root / "behind") == _queue_files(stores.root / "caught up")
    assert [bytes(f.file.mmap) for f in behind.index_service.files] == [
        bytes(f.file.mmap) for f in caught_up.index_service.files
    ]
    for store in opened.values():
        store.shutdown()


@needs_store_native
@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["put", "put", "put", "remove", "set", "clear"]),
            # a str subclass and True: keys equal to cached ones that the cache does not hold
            st.sampled_from(["T", "U", "é", "T" + "x" * 3, Topic("T")]),
            # ids 16 apart share a slot of the cache whatever the topic's hash
            st.sampled_from([0, 1, 2, 16, 17, 18, 33, 49, -1, -17, True]),
        ),
        max_size=60,
    )
)
@example([("put", "T", 0), ("put", Topic("T"), 0), ("put", "T", 0)])
@example([("put", "U", 1), ("put", "U", True), ("put", "U", 1)])
def test_the_cursor_keeps_each_queue_offset_across_many_queues(steps) -> None:
    """The native cursor's cache of recent queue keys and their next offsets (more queues
    than it holds, queues removed, set and cleared between puts, equal keys it does not
    cache) leaves every queue's offsets as the reference's."""
    states = []
    for kind in (native.AppendCursor, PythonAppendCursor):
        cursor = _cursor(kind)
        buffer = bytearray(64 * 1024)
        position, offsets = 0, []
        for step, topic, queue_id in steps:
            if step == "put":
                put = cursor.put(
                    buffer, position, START, 1, 40, topic, queue_id, 0, {}, b"b", 0, 0,
                    (b"\x7f\x00\x00\x01", 1), 0, 0,
                )  # fmt: skip
                position += put[1].msg_size
                offsets.append(put[1].consume_queue_offset)
            elif step == "remove":
                cursor.remove_queue(topic, queue_id)
            elif step == "set":
                cursor.set_queue_offset(topic, queue_id, 7)
            else:
                cursor.clear_queue_offsets()
        states.append((offsets, dict(cursor.queue_offsets), bytes(buffer)))
    assert states[0] == states[1]


def test_a_pass_nobody_waits_on_calls_the_listener_for_the_services_topics_only(tmp_path) -> None:
    """arrivals_wanted False (no pull held, no pop waiting): dispatch_rows puts every unit and
    marks each queue dirty for the flush, but calls the arrival listener only for the
    schedule's and the timer's topics (their services follow them); True: each wake-up."""
    pack = python_plain_dispatch if native is None else native.plain_dispatch
    store = StoreFactory(tmp_path).open()
    calls: list[tuple] = []
    wanted = [False]
    store.dispatcher.arrival_listener = lambda *args: calls.append(args[:3])
    store.dispatcher.arrivals_wanted = lambda: wanted[0]
    log = Requests()
    drawn = [(topic, 0, 0, "", "", 0, 0, False) for topic in ("T", TIMER_TOPIC, "U")]
    store.dispatcher.dispatch_rows(pack(log.make(drawn)))
    assert calls == [(TIMER_TOPIC, 0, 1)]
    assert {(q.topic, q.queue_id) for q in store.consume_queues.take_dirty()} == {
        ("T", 0),
        (TIMER_TOPIC, 0),
        ("U", 0),
    }
    wanted[0] = True
    store.dispatcher.dispatch_rows(pack(log.make(drawn)))
    assert calls[1:] == [("T", 0, 2), (TIMER_TOPIC, 0, 2), ("U", 0, 2)]
    assert len(store.consume_queues.take_dirty()) == 3  # queues that existed: dirty again
    assert [store.get_max_offset_in_queue(t, 0) for t in ("T", TIMER_TOPIC, "U")] == [2, 2, 2]
    store.shutdown()


def test_a_pass_given_its_topics_skips_the_wake_up_loop_only_when_none_is_heard(tmp_path) -> None:
    """``topics`` (put_plain_run passes put_rows' totals): with nobody waiting and none of them
    the schedule's or the timer's, no listener call and the units all the same; with the
    timer's among them, its wake-up as without ``topics``."""
    pack = python_plain_dispatch if native is None else native.plain_dispatch
    store = StoreFactory(tmp_path).open()
    calls: list[tuple] = []
    store.dispatcher.arrival_listener = lambda *args: calls.append(args[:3])
    store.dispatcher.arrivals_wanted = lambda: False
    log = Requests()
    users = [(topic, 0, 0, "", "", 0, 0, False) for topic in ("T", "U")]
    store.dispatcher.dispatch_rows(pack(log.make(users)), topics={"T": [1, 0], "U": [1, 0]})
    assert calls == []
    assert [store.get_max_offset_in_queue(t, 0) for t in ("T", "U")] == [1, 1]
    mixed = [(topic, 0, 0, "", "", 0, 0, False) for topic in ("T", TIMER_TOPIC)]
    store.dispatcher.dispatch_rows(pack(log.make(mixed)), topics=("T", TIMER_TOPIC))
    assert calls == [(TIMER_TOPIC, 0, 1)]
    store.shutdown()
