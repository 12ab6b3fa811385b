"""Property: the plain sends' single pass (broker/processor/send_plain.py, through
``SendMessageProcessor.handle_group``) and the reference (``reference_group``) leave the same
CommitLog, ConsumeQueue and IndexFile bytes, make the same arrival-listener calls, leave
dispatch at the same place and give the same replies, byte for byte, for groups of pipelined
sends with hostile header values and properties.

Two brokers (controllers built in this process, stores loaded, same injected store clock) take
the same groups of the same request objects, one through each path; after every group their
reply frames, CommitLog files and ConsumeQueue files must be equal. Small CommitLog segments
make groups cross a segment's end, which the single pass hands to the reference mid-group."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.config import load_broker_config
from broker.controller import BrokerController
from broker.processor import send, send_plain
from remoting import message as codec
from remoting.body import TopicConfig
from remoting.codec_native import native
from remoting.codes import RequestCode
from remoting.command import EncodedReply, RemotingCommand, decode_command, encode_command_bytes
from remoting.constants import PERM_READ
from remoting.errors import RequestError
from remoting.frame import FrameDecoder
from remoting.names import topic_problem, valid_topics
from tests.conftest import INTEROP_FRAMES
from tests.kits.brokerkit import send_request

pytestmark = pytest.mark.skipif(native is None, reason="the plain pass needs the native codec")

V1_NAME = dict(
    a="producerGroup", b="topic", c="defaultTopic", d="defaultTopicQueueNums", e="queueId",
    f="sysFlag", g="bornTimestamp", h="flag", i="properties", j="reconsumeTimes", k="unitMode",
)  # fmt: skip
numbers = st.one_of(
    st.integers(-3, 9).map(str),
    st.sampled_from(["2147483648", "-2147483649", " 1", "0x1", "+2", "4", "8", "12", "1_0"]),
)
prop_names = st.sampled_from(
    ["TAGS", "KEYS", "WAIT", "DELAY", "TRAN_MSG", "TIMER_DELAY_SEC", "CLUSTER", "X", "UNIQ_KEY"]
)
special_names = st.sampled_from(
    ["DELAY", "TRAN_MSG", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_DELIVER_MS", "WAIT"]
)
prop_values = st.sampled_from(["true", "true", "3", "a", "b c", "false", "-1", "1;2", "\u00e9"])
properties = st.lists(st.tuples(prop_names, prop_values), max_size=4).map(
    lambda pairs: "".join(f"{k}\x01{v}\x02" for k, v in pairs)
)
FIELDS = {
    "b": st.sampled_from(["T", "T", "RO", "Unknown", "%RETRY%G", "SCHEDULE_TOPIC_XXXX", "a b"]),
    "e": numbers,
    "f": numbers,
    "g": numbers,
    "h": numbers,
    "i": properties,
    "j": numbers,
}
hostile = st.lists(
    st.sampled_from(sorted(FIELDS)).flatmap(lambda k: st.tuples(st.just(k), FIELDS[k])),
    min_size=1,
    max_size=2,
).map(dict)
codes = st.sampled_from([RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_MESSAGE])
# Property strings as no well-behaved client writes them, none special: names repeated (the
# dict keeps the first place, the last value), WAIT and CLUSTER or not, separators at the ends
# and doubled, empty names and values, a \x01 inside a value, non-ASCII.
_pieces = st.sampled_from(
    ["\x01", "\x02", "\x02", "WAIT", "CLUSTER", "TAGS", "KEYS", "UNIQ_KEY", "a", "b c", "\u00e9",
     "\u4e2d", "\U0001f600", "X"]
)  # fmt: skip
_pair_names = st.sampled_from(["WAIT", "CLUSTER", "TAGS", "KEYS", "UNIQ_KEY", "X", "\u00e9", ""])
_pair_values = st.sampled_from(["", "true", "a", "a b", "\u4e2d", "x\x01y", "U1"])
odd_strings = st.one_of(
    st.lists(_pieces, max_size=12).map("".join),
    st.tuples(
        st.sampled_from(["", "\x02"]),
        st.lists(st.tuples(_pair_names, _pair_values), max_size=6),
        st.sampled_from(["", "\x02", "\x02\x02"]),
    ).map(lambda t: t[0] + "\x02".join(f"{k}\x01{v}" for k, v in t[1]) + t[2]),
)
# (code, queue id, body size, properties beside UNIQ_KEY, WAIT and TAGS, header values)
plain_sends = st.one_of(
    st.tuples(
        codes,
        st.integers(0, 3),
        st.integers(0, 3000),
        st.lists(st.tuples(st.sampled_from(["KEYS", "X", "TAGS"]), prop_values), max_size=2),
        st.just({}),
    ),
    # the whole property string sent as drawn
    st.tuples(
        codes,
        st.integers(0, 3),
        st.integers(0, 200),
        st.just([]),
        odd_strings.map(lambda text: {"i": text}),
    ),
)
special_sends = st.tuples(
    codes,
    st.integers(0, 3),
    st.integers(0, 100),
    st.lists(st.tuples(special_names, st.sampled_from(["true", "true", "3", "a"])), min_size=1),
    st.just({}),
)
odd_sends = st.one_of(
    special_sends,
    special_sends,
    st.tuples(codes, st.integers(0, 3), st.integers(0, 100), st.just([]), hostile),
    # a transaction type in sysFlag (prepared, commit, rollback)
    st.tuples(
        codes,
        st.integers(0, 3),
        st.just(10),
        st.just([]),
        st.sampled_from(["4", "8", "12", "20"]).map(lambda flag: {"f": flag}),
    ),
    # a queue id the topic lacks, or a topic in the table a send may not name
    st.tuples(codes, st.sampled_from([-1, 4, 5]), st.just(10), st.just([]), st.just({})),
    st.tuples(
        codes,
        st.integers(0, 1),
        st.just(10),
        st.just([]),
        st.sampled_from(["%RETRY%G", "SCHEDULE_TOPIC_XXXX", "RO", "Unknown"]).map(
            lambda topic: {"b": topic}
        ),
    ),
)


@st.composite
def groups(draw: Any) -> list[tuple[Any, ...]]:
    """Plain sends, often with one odd send (special properties, hostile values) among them:
    the whole group is then the reference's."""
    group = draw(st.lists(plain_sends, min_size=1, max_size=10))
    odd = draw(st.none() | odd_sends | odd_sends)
    if odd is not None:
        group.insert(draw(st.integers(0, len(group))), odd)
    return group


STORE_TS = 1_700_000_000_123


class Peer:
    """What the send processor reads of a connection."""

    def __init__(self) -> None:
        self.peer = "127.0.0.1:40404"
        self.attributes: dict[str, Any] = {}


def broker(root: Path, **overrides: str) -> BrokerController:
    config, store_config = load_broker_config(
        {
            "storePathRootDir": str(root),
            "brokerIP1": "127.0.0.1",
            "listenPort": "20911",
            "mappedFileSizeCommitLog": str(64 * 1024),
            "autoCreateTopicEnable": "false",
            "maxMessageSize": "2500",  # some bodies drawn are refused
            "mappedFileSizeConsumeQueue": str(20 * 1000),
            "maxHashSlotNum": "16",  # index files that roll
            "maxIndexNum": "64",
            **overrides,
        }
    )
    controller = BrokerController(config, store_config)
    controller.store.load()
    controller.store.commit_log.clock = lambda: STORE_TS
    # A timer send's due time is rounded to the second from its clock: both brokers on one
    # clock, or a pair run across a second's edge stored different TIMER_OUT_MS (a rare flake).
    controller.timer.clock = lambda: STORE_TS
    controller.store.dispatcher.arrival_listener = Arrivals()
    controller.store.dispatcher.arrivals_wanted = None  # every arrival heard, on both paths
    controller.topics.update(TopicConfig(topic_name="T", read_queue_nums=4, write_queue_nums=3))
    controller.topics.update(
        TopicConfig(topic_name="RO", read_queue_nums=4, write_queue_nums=4, perm=PERM_READ)
    )
    for name in ("T", "RO", "%RETRY%G", "SCHEDULE_TOPIC_XXXX", "TBW102"):
        topic_problem(name)  # known valid, as after a first send: the native decoder takes it
    return controller


class Arrivals(dict):
    """What the arrival listener was told: the newest offset per (topic, queue id, tags code).
    The calls themselves differ (a wake-up per tags code per dispatch, and the plain pass
    dispatches apart what it hands the reference), but a held pull must learn the same."""

    def __call__(self, topic: str, queue_id: int, next_offset: int, tags: int, *_: Any) -> None:
        key = (topic, queue_id, tags)
        self[key] = max(self.get(key, 0), next_offset)


def build(
    code: int,
    queue_id: int,
    size: int,
    extra: list[tuple[str, str]],
    fields: dict[str, str],
    n: int,
) -> RemotingCommand:
    body = bytes([n % 251]) * size
    request = send_request(
        "T", body, queue_id=queue_id, code=code, tags="t", properties=dict(extra)
    )
    v1 = code == RequestCode.SEND_MESSAGE
    request.ext_fields.update({V1_NAME[k] if v1 else k: v for k, v in fields.items()})
    # as the server reads it: the header through the JSON decoder
    decoder = FrameDecoder()
    decoder.receive_data(encode_command_bytes(request))
    return decode_command(decoder.next_frame())


def frames(results: list[Any], requests: list[RemotingCommand]) -> list[Any]:
    """Each reply as what the connection would write (an error as its code and remark)."""
    out = []
    for request, result in zip(requests, results, strict=True):
        if isinstance(result, RequestError):
            result = request.error_response(result.code, result.remark)
        if type(result) is RemotingCommand:
            result = encode_command_bytes(result)
        assert type(result) is bytes, result
        out.append(result)
    return out


def files(root: Path) -> dict[str, bytes]:
    """The CommitLog and ConsumeQueue files by name, the IndexFiles in order (they are named
    by the wall clock)."""
    found = {
        str(p.relative_to(root)): p.read_bytes()
        for sub in ("commitlog", "consumequeue")
        for p in sorted((root / sub).rglob("*"))
        if p.is_file()
    }
    index = sorted((root / "index").glob("*"))
    return found | {f"index {n}": p.read_bytes() for n, p in enumerate(index)}


def assert_same(
    plain: BrokerController,
    reference: BrokerController,
    requests: list[RemotingCommand],
    root: Path,
) -> None:
    """The group through handle_group on one, reference_group on the other: same replies,
    same CommitLog and ConsumeQueue files."""
    peer = Peer()
    random.seed(7)  # a negative queue id picks a random queue: the same one on both
    got = frames(plain.send.handle_group(peer, requests), requests)
    random.seed(7)
    want = frames(reference.send.reference_group(peer, requests), requests)
    assert got == want
    assert files(root / "plain") == files(root / "reference")
    assert plain.store.dispatcher.arrival_listener == reference.store.dispatcher.arrival_listener
    for dispatched in (lambda c: c.store.dispatcher.last_dispatched_timestamp,
                       lambda c: c.store.reput.reput_from_offset):  # fmt: skip
        assert dispatched(plain) == dispatched(reference)


def close(*controllers: BrokerController) -> None:
    """The store shut down as a broker's stop does it: every mapped file closed with the lock.
    A hypothesis test makes two brokers an example, and closing only the checkpoint and the
    lock left ~3,900 descriptors open after tests/unit/broker, past select()'s 1,024 for the
    tests a process runs next."""
    for controller in controllers:
        controller.store.shutdown()


# One of each odd send in the middle of plain ones: the draws above find them only by chance.
ODD = [
    *(([(name, value)], {}) for name in ["DELAY", "TRAN_MSG", "TIMER_DELAY_SEC", "TIMER_DELAY_MS",
    "TIMER_DELIVER_MS"] for value in ["3", "true"]),
    *(([], {"e": queue_id}) for queue_id in ["-1", "4"]),
    *(([], {"b": topic}) for topic in ["RO", "%RETRY%G", "SCHEDULE_TOPIC_XXXX", "Unknown"]),
    *(([], {"f": sys_flag}) for sys_flag in ["4", "8", "12"]),
]  # fmt: skip


@pytest.mark.parametrize(("extra", "fields"), ODD)
def test_one_odd_send_sends_its_group_to_the_reference(
    tmp_path: Path, extra: list[tuple[str, str]], fields: dict[str, str]
) -> None:
    plain, reference = broker(tmp_path / "plain"), broker(tmp_path / "reference")
    try:
        first = [build(RequestCode.SEND_MESSAGE_V2, 0, 10, [], {}, 0)]
        assert_same(plain, reference, first, tmp_path)  # the first segment
        group = [build(RequestCode.SEND_MESSAGE_V2, n % 3, 50, [], {}, n) for n in (1, 2, 3)]
        group.insert(1, build(RequestCode.SEND_MESSAGE_V2, 0, 50, extra, fields, 4))
        assert_same(plain, reference, group, tmp_path)
    finally:
        close(plain, reference)


def test_the_plain_pass_leaves_what_the_reference_leaves(tmp_path: Path) -> None:
    plain, reference = broker(tmp_path / "plain"), broker(tmp_path / "reference")
    counter = iter(range(10**9))
    took_plain = []
    passes = send.plain_sends

    def counted(*args: Any) -> Any:
        result = passes(*args)
        took_plain.append(result is not None)
        return result

    @settings(
        max_examples=200,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(groups())
    def check(drawn: list[tuple[Any, ...]]) -> None:
        requests = [build(*send, next(counter)) for send in drawn]
        assert_same(plain, reference, requests, tmp_path)

    send.plain_sends = counted
    try:
        check()
    finally:
        send.plain_sends = passes
        close(plain, reference)
    # the draws reach both outcomes of the plain test
    assert any(took_plain) and not all(took_plain)


def test_a_plain_group_is_stored_and_answered_in_one_pass(tmp_path: Path) -> None:
    """The common case the property above must not miss: every request plain, stored by the
    single pass alone (once the first segment exists), replies in order."""
    controller = broker(tmp_path)
    peer = Peer()
    first = build(RequestCode.SEND_MESSAGE_V2, 0, 10, [], {}, 0)
    controller.send.reference_group(peer, [first])  # makes the first segment
    requests = [build(RequestCode.SEND_MESSAGE_V2, n % 4, 100, [], {}, n) for n in range(1, 9)]
    rows = send_plain.plain_rows(
        requests, valid_topics, controller.send.queue_bounds, send_plain._SPECIAL,
        controller.config.broker_cluster_name, send_plain.born_host(peer),
    )  # fmt: skip
    assert rows is not None
    results = send_plain.plain_sends(controller.send, peer, requests)
    assert all(type(r) is bytes for r in results)
    end = controller.store.commit_log.max_phys_offset
    stored = codec.decode_messages(bytes(controller.store.commit_log.queue.files[-1].mmap[:end]))
    # queue 0 holds the first message already
    assert [(m.queue_id, m.queue_offset) for m in stored[1:9]] == [
        (1, 0), (2, 0), (3, 0), (0, 1), (1, 1), (2, 1), (3, 1), (0, 2),
    ]  # fmt: skip
    assert all(m.properties["CLUSTER"] == controller.config.broker_cluster_name for m in stored)
    assert all("WAIT" not in m.properties for m in stored)
    close(controller)


def test_a_round_to_queues_that_exist_is_stored_by_one_store_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broker names its listeners' idle counters to the store (plain_idle); a round to
    queues and topics already made, with nobody waiting, is stored by plain_pass whole (no
    Python path after it), and one with a pull held takes the Python path, which wakes it."""
    controller = broker(tmp_path)
    store = controller.store
    # the broker's own listeners back (broker() records arrivals instead)
    store.dispatcher.arrival_listener = controller._on_arrival
    store.dispatcher.arrivals_wanted = controller._arrivals_wanted
    controller._declare_plain_idle()
    assert store.plain_idle is not None and store.plain_idle[0] is store.put_listener
    peer = Peer()
    controller.send.reference_group(peer, [build(RequestCode.SEND_MESSAGE_V2, 0, 10, [], {}, 0)])
    store.commit_log.warmer.ahead = 0  # the warmer has nothing to ask for this pass
    rest: list[object] = []
    real_rest = send_plain._store_rest
    monkeypatch.setattr(send_plain, "_store_rest", lambda *a: rest.append(a) or real_rest(*a))
    requests = [build(RequestCode.SEND_MESSAGE_V2, n % 4, 100, [], {}, n) for n in range(1, 9)]
    first = send_plain.plain_round(controller.send, [peer] * 8, requests)
    assert len(rest) == 1 and all(type(r) is bytes for r in first)  # queues 1-3 were new
    store.commit_log.queue.files[-1].warmed_position = 1 << 40
    again = send_plain.plain_round(controller.send, [peer] * 8, requests)
    assert len(rest) == 1 and len(again) == 8
    assert store.get_max_offset_in_queue("T", 0) == 5
    assert controller.stats.get("TOPIC_PUT_NUMS", "T").value == 17
    assert store.stats.put_message_times_total == 17
    controller.pull_hold.held += 1  # as a held pull counts itself
    try:
        send_plain.plain_round(controller.send, [peer], requests[:1])
    finally:
        controller.pull_hold.held -= 1
    assert len(rest) == 2
    close(controller)


def lone_reference(controller: BrokerController, peer: Peer, request: RemotingCommand) -> Any:
    """What ``handle`` answered a lone send before the plain pass took it: Java's checks and
    one ``put_message``."""
    try:
        return controller.send._store_one(request, *controller.send.prepare(peer, request))
    except RequestError as exc:
        return exc


def test_a_lone_plain_send_takes_the_pass_and_answers_as_before(tmp_path: Path) -> None:
    """A sync send arrives alone in its read: ``handle`` stores a plain one by the single pass
    (its reply a frame), any other as before, with the same replies and files either way."""
    plain, reference = broker(tmp_path / "plain"), broker(tmp_path / "reference")
    peer = Peer()
    try:
        sends = [build(RequestCode.SEND_MESSAGE_V2, 0, 10, [], {}, 0)]
        for n, (extra, fields) in enumerate(ODD, start=1):
            sends += [build(RequestCode.SEND_MESSAGE_V2, n % 4, 60, [], {}, n),
                      build(RequestCode.SEND_MESSAGE, 1, 30, [], {}, n),
                      build(RequestCode.SEND_MESSAGE_V2, 0, 40, extra, fields, n)]  # fmt: skip
        took_pass = []
        for request in sends:
            random.seed(7)  # a negative queue id picks a random queue: the same one on both
            try:
                got = plain.send.handle(peer, request)
            except RequestError as exc:  # answered as before: the connection sends its code
                got = exc
            took_pass.append(type(got) is EncodedReply)
            if type(got) is EncodedReply:
                got = b"".join(got.buffers)
            random.seed(7)
            assert frames([got], [request]) == frames(
                [lone_reference(reference, peer, request)], [request]
            )
        assert files(tmp_path / "plain") == files(tmp_path / "reference")
        # every plain send after the first segment, and none of the odd ones
        assert took_pass == [False] + [True, True, False] * len(ODD)
    finally:
        close(plain, reference)


BOUNDS = {"T": 4, "RO": 0, "%RETRY%G": 0}


@settings(max_examples=300, deadline=None)
@given(groups(), st.booleans())
def test_native_rows_are_the_reference_rows(drawn: list[tuple[Any, ...]], odd_code) -> None:
    requests = [build(*send, n) for n, send in enumerate(drawn)]
    if odd_code:  # a request of another code, or one not serialized as JSON
        requests[len(requests) // 2].code = RequestCode.SEND_BATCH_MESSAGE
    topics = {"T", "RO", "%RETRY%G", "TBW102"}
    args = (topics, lambda topic: BOUNDS.get(topic, 0), send_plain._SPECIAL, "C1", HOST)
    assert native.plain_send_rows(requests, *args) == send_plain.python_plain_rows(requests, *args)


HOST = (b"\x7f\x00\x00\x01", 40404)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 13), min_size=1, max_size=30), st.integers(1, 5))
def test_each_topic_of_a_group_is_bounded_once(picks: list[int], bound: int) -> None:
    """bound_of is asked once per distinct topic of a call, the C and the twin alike, however
    many topics a group names (the C keeps its first few apart from the rest), equal topics
    being the same topic whichever str object names them."""
    names = [f"T{k}" for k in range(14)]
    requests = [
        build(RequestCode.SEND_MESSAGE_V2, n % 6, 10, [], {"b": names[k]}, n)
        for n, k in enumerate(picks)
    ]
    topics = {*names, "TBW102"}
    asked: dict[Any, list[str]] = {native.plain_send_rows: [], send_plain.python_plain_rows: []}
    for plain_rows, seen in asked.items():

        def bound_of(topic: str, seen: list[str] = seen) -> int:
            seen.append(topic)
            return bound

        rows = plain_rows(requests, topics, bound_of, send_plain._SPECIAL, "C1", HOST)
        assert rows == send_plain.python_plain_rows(
            requests, topics, lambda topic: bound, send_plain._SPECIAL, "C1", HOST
        )
    assert asked[native.plain_send_rows] == asked[send_plain.python_plain_rows]
    assert len(set(asked[native.plain_send_rows])) == len(asked[native.plain_send_rows])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(special_names, max_size=4), st.booleans(), st.lists(special_names)),
        min_size=1,
        max_size=6,
    )
)
def test_rows_follow_the_specials_each_call_is_given(steps) -> None:
    """The C keeps the names of the last frozenset of specials it was given: a call with
    another set (frozen or not, equal or not) is judged by that set's names, as the twin is."""
    for names, frozen, sent in steps:
        specials = frozenset(names) if frozen else set(names)
        extra = [(name, "1") for name in sent]
        request = build(RequestCode.SEND_MESSAGE_V2, 1, 10, extra, {}, 0)
        args = ({"T", "TBW102"}, lambda topic: 4, specials, "C1", HOST)
        rows = native.plain_send_rows([request], *args)
        assert rows == send_plain.python_plain_rows([request], *args)
        sent_names = codec.string_to_properties(request.header_values[8])
        assert (rows is None) == bool(specials & sent_names.keys())


def test_specials_the_c_cannot_read_leave_every_row_to_the_dict_path() -> None:
    """A special that is not a str, or more than the C reads, sends every row down the dict
    path, as the twin's rows say; the names the C held meanwhile are all let go."""
    names = ["".join(("A", str(n))) for n in range(4)]  # objects of this test's own
    for specials in ({*names, 5}, {*names, b"A1"}, frozenset({*names, 7}),
                     {*names, *(f"S{n}" for n in range(6))}):  # fmt: skip
        before = [sys.getrefcount(name) for name in names]
        for sent in ([], [("A1", "1")], [("K", "v")]):
            request = build(RequestCode.SEND_MESSAGE_V2, 1, 10, sent, {}, 0)
            args = ({"T", "TBW102"}, lambda topic: 4, specials, "C1", HOST)
            rows = native.plain_send_rows([request], *args)
            assert rows == send_plain.python_plain_rows([request], *args)
        assert [sys.getrefcount(name) for name in names] == before


@settings(max_examples=100, deadline=None)
@given(groups())
def test_a_round_across_connections_gives_each_row_its_own_born_host(drawn) -> None:
    """A selector round's group names each request's connection: its row carries that born
    host, in the C and its twin alike; a host list of the wrong length is refused."""
    requests = [build(*send, n) for n, send in enumerate(drawn)]
    hosts = [(b"\x7f\x00\x00\x01", 40000 + n) for n in range(len(requests))]
    topics = {"T", "RO", "%RETRY%G", "TBW102"}
    args = (topics, lambda topic: BOUNDS.get(topic, 0), send_plain._SPECIAL, "C1")
    rows = native.plain_send_rows(requests, *args, hosts)
    assert rows == send_plain.python_plain_rows(requests, *args, hosts)
    if rows is not None:
        assert [row[7] for row in rows] == hosts
    for plain_rows in (native.plain_send_rows, send_plain.python_plain_rows):
        with pytest.raises(TypeError):
            plain_rows(requests, *args, [*hosts, HOST])


def _captured_sends() -> list[RemotingCommand]:
    """The sends the official C++ client really sent (tests/conftest.py INTEROP_FRAMES)."""
    sends = []
    for path in sorted(INTEROP_FRAMES.glob("cpp/*/*-in-*.bin")):
        decoder = FrameDecoder()
        decoder.receive_data(path.read_bytes())
        command = decode_command(decoder.next_frame())
        if command.code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
            sends.append(command)
    return sends


def test_what_a_real_client_sends_is_plain() -> None:
    sends = _captured_sends()
    assert sends, f"expected the C++ captures under {INTEROP_FRAMES}"
    topics = set()
    for request in sends:
        fields = request.ext_fields
        topics |= {
            fields.get("topic", fields.get("b")),
            fields.get("defaultTopic", fields.get("c")),
        }
    for topic in topics:
        assert topic_problem(topic) is None  # known valid, as after its first send
    args = (valid_topics, lambda topic: 8, send_plain._SPECIAL, "C1", HOST)
    rows = native.plain_send_rows(sends, *args)
    assert rows is not None and len(rows) == len(sends)
    assert rows == send_plain.python_plain_rows(sends, *args)


def dict_path(text: Any, cluster: str) -> dict[str, str] | None:
    """What the row held before the string path: the string parsed into a dict, CLUSTER set,
    WAIT dropped (None: a special name)."""
    properties = codec.string_to_properties(text)
    if not send_plain._SPECIAL.isdisjoint(properties):
        return None
    properties["CLUSTER"] = cluster
    properties.pop("WAIT", None)
    return properties


def with_properties(request: RemotingCommand, text: Any) -> RemotingCommand:
    """``request`` (a V2 send) with ``text`` as its sent property string, however decoded."""
    values = getattr(request, "header_values", None)
    if values is not None:
        request.header_values = (*values[:8], text, *values[9:])
    else:
        request.ext_fields["i"] = text
    return request


texts = st.one_of(
    odd_strings,
    odd_strings.map(lambda text: text + "\x02DELAY\x013"),  # special behind a duplicate
    st.text(alphabet="\x01\x02WAITCLUSTERKYS\u00e9\ud800", max_size=16),  # not UTF-8 too
    st.none(),
)


@settings(max_examples=500, deadline=None)
@given(texts, st.sampled_from(["C1", "", "\u00e9\x02", "c\ud800"]))
def test_a_row_carries_the_bytes_the_dict_path_writes(text, cluster) -> None:
    """The row's properties (C and twin alike): the record's bytes, exactly what the dict path
    encodes, or the dict path's own dict for what the string path leaves to it; no row when a
    name is special."""
    request = with_properties(build(RequestCode.SEND_MESSAGE_V2, 1, 10, [], {}, 0), text)
    args = ({"T", "TBW102"}, lambda topic: 4, send_plain._SPECIAL, cluster, HOST)
    rows = native.plain_send_rows([request], *args)
    assert rows == send_plain.python_plain_rows([request], *args)
    want = dict_path(text, cluster)
    if want is None:
        assert rows is None
        return
    properties = rows[0][3]
    if type(properties) is not dict:  # the string path: only for what encodes
        assert properties == codec.properties_to_string(want).encode()
    else:
        assert properties == want
        assert list(properties) == list(want)  # the same order


def test_a_topics_queue_bound_follows_its_config() -> None:
    """The plain pass's kept bound is the one the topic's current config gives: an update
    (a new frozen config) or a delete is seen by the next send, and only topics the table
    has are kept."""
    table = {"T": TopicConfig(topic_name="T", read_queue_nums=4, write_queue_nums=3)}
    bounds = send_plain.QueueBounds(table)
    assert bounds("T") == bounds("T") == 4
    table["T"] = TopicConfig(topic_name="T", read_queue_nums=2, write_queue_nums=2)
    assert bounds("T") == 2
    table["T"] = TopicConfig(topic_name="T", perm=PERM_READ)
    assert bounds("T") == 0
    del table["T"]
    assert bounds("T") == 0 and bounds("Nobody") == 0
    assert not bounds._bounds


_configs = st.one_of(
    st.none(),  # deleted
    st.just("kept"),  # the same config object as the round before
    st.just("kept"),
    st.builds(
        lambda read, write, perm: TopicConfig(
            topic_name="T", read_queue_nums=read, write_queue_nums=write, perm=perm
        ),
        st.integers(0, 5),
        st.integers(0, 5),
        st.sampled_from([PERM_READ, 6]),
    ),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_configs, groups()), min_size=1, max_size=6))
def test_the_kept_bounds_lookup_gives_the_callables_rows(steps) -> None:
    """plain_rows given QueueBounds.lookup (the C reads a kept bound without calling Python)
    gives the rows the callable gives, in the C and the twin, as T's config is replaced by a
    new one, deleted or made again between rounds."""
    table: dict[str, TopicConfig] = {"T": TopicConfig(topic_name="T", read_queue_nums=4)}
    bounds = send_plain.QueueBounds(table)
    topics = {"T", "RO", "%RETRY%G", "TBW102"}
    for config, drawn in steps:
        if config is None:
            table.pop("T", None)
        elif config != "kept":
            table["T"] = config
        requests = [build(*send, n) for n, send in enumerate(drawn)]
        fresh = send_plain.QueueBounds(dict(table))  # nothing kept: asks the config each time
        args = (send_plain._SPECIAL, "C1", HOST)
        want = send_plain.python_plain_rows(requests, topics, fresh, *args)
        assert native.plain_send_rows(requests, topics, bounds.lookup, *args) == want
        assert send_plain.python_plain_rows(requests, topics, bounds.lookup, *args) == want


@pytest.mark.parametrize("long_polling", [True, False])
def test_a_plain_send_wakes_a_held_pull_when_the_broker_wants_arrivals(
    tmp_path: Path, long_polling: bool
) -> None:
    """The store asks the broker once per plain pass whether any arrival is wanted
    (``_arrivals_wanted``: long polling on and a pull held or a pop waiting) instead of calling
    the listener per queue: a held pull on a queue the pass touched is still woken, and none is
    under longPollingEnable=false (held until its check, as in 5.x)."""
    controller = broker(tmp_path, longPollingEnable=str(long_polling).lower())
    dispatcher = controller.store.dispatcher
    dispatcher.arrival_listener = controller._on_arrival  # the broker's own, not the test's
    dispatcher.arrivals_wanted = controller._arrivals_wanted
    peer = Peer()
    controller.send.reference_group(peer, [build(RequestCode.SEND_MESSAGE_V2, 0, 10, [], {}, 0)])
    woken: list[str] = []

    async def hold_and_send() -> bool:
        """A pull held on T queue 1, then a plain pass to queues 2 and 1; whether the broker
        wanted arrivals while the pull was held."""
        assert not controller._arrivals_wanted()  # nobody waits
        deadline = trio.current_time() + 60
        controller.pull_hold.suspend("T", 1, 0, None, deadline, lambda: woken.append("T1"))
        wanted = controller._arrivals_wanted()
        sends = [build(RequestCode.SEND_MESSAGE_V2, n, 10, [], {}, n) for n in (2, 1)]
        results = send_plain.plain_sends(controller.send, peer, sends)
        assert all(type(r) is bytes for r in results)  # the plain pass stored both
        return wanted

    try:
        assert trio.run(hold_and_send) is long_polling
        if long_polling:
            assert woken == ["T1"] and controller.pull_hold.held == 0
        else:
            assert woken == [] and controller.pull_hold.held == 1  # left to its check
    finally:
        close(controller)


def _refused_by(controller: BrokerController, gate: str) -> None:
    """Make the broker (or its store) refuse plain sends for ``gate``'s reason."""
    import attrs

    if gate == "read_only":
        controller.config = attrs.evolve(controller.config, broker_permission=PERM_READ)
    elif gate == "fenced":
        controller.registrar.fenced = "FENCED: a test"
    elif gate == "in_sync":
        controller.min_in_sync_slaves = 1
        controller.enough_in_sync_slaves = lambda: False  # type: ignore[method-assign]
    elif gate == "slave":
        controller.store.is_slave = True
    elif gate == "shutting_down":
        controller.store.shutting_down = True
    elif gate == "disk_full":
        controller.store.clean.disk_full = True
    elif gate == "unhealthy":
        controller.store.health.writable = False
    elif gate == "plain_mode":
        controller.send.plain_mode = False


GATES = ["read_only", "fenced", "in_sync", "slave", "shutting_down", "disk_full", "unhealthy",
         "plain_mode"]  # fmt: skip


@pytest.mark.parametrize("gate", GATES)
def test_a_round_is_declined_untouched_when_the_broker_does_not_take_plain_sends(
    tmp_path: Path, gate: str
) -> None:
    """plain_round asks broker_takes_plain and makes the store's _refuse tests inline: each one
    that fails leaves the round to the server's general path with nothing stored, and that
    path answers it as the reference does (the refusal, or the stored replies)."""
    plain, reference = broker(tmp_path / "plain"), broker(tmp_path / "reference")
    try:
        first = [build(RequestCode.SEND_MESSAGE_V2, 0, 10, [], {}, 0)]
        assert_same(plain, reference, first, tmp_path)
        peers = [Peer(), Peer()]
        requests = [build(RequestCode.SEND_MESSAGE_V2, n % 3, 50, [], {}, n) for n in (1, 2)]
        taken = send_plain.plain_round(plain.send, peers, requests)  # open: taken
        assert taken is not None
        assert frames(taken, requests) == frames(
            reference.send.reference_group(peers[0], requests, peers), requests
        )
        assert files(tmp_path / "plain") == files(tmp_path / "reference")
        for controller in (plain, reference):
            _refused_by(controller, gate)
        before = files(tmp_path / "plain")
        assert send_plain.plain_round(plain.send, peers, requests) is None
        # a lone send declines too
        assert send_plain.plain_send_reply(plain.send, peers[0], requests[0]) is None
        assert files(tmp_path / "plain") == before
        # the gate that declined is the one the test closed
        if gate in ("slave", "shutting_down", "disk_full", "unhealthy"):
            assert plain.store._refuse() is not None
        else:
            assert not send_plain.broker_takes_plain(plain.send)
        assert_same(plain, reference, requests, tmp_path)
    finally:
        close(plain, reference)


def test_an_acl_server_never_hands_a_round_to_its_round_processor() -> None:
    """With an ACL (``authorize``) every request is checked one by one: the round processor,
    which checks none, is not asked."""
    from remoting.server import RemotingServer

    asked: list[Any] = []
    server = RemotingServer("127.0.0.1", 0, authorize=lambda connection, request: None)
    server.register_round(lambda connections, requests: asked.append(requests) or ["taken"])
    server.register(RequestCode.SEND_MESSAGE_V2, lambda connection, request: "general")
    request = build(RequestCode.SEND_MESSAGE_V2, 0, 10, [], {}, 0)
    assert server.handle_round([Peer()], [request]) == ["general"]
    assert asked == []
    server.authorize = None
    assert server.handle_round([Peer()], [request]) == ["taken"]


class HostPeer(Peer):
    born_host = None  # as Connection's: kept by born_host, read by plain_round's map

    def __init__(self, port: int) -> None:
        super().__init__()
        self.peer = f"10.0.0.{port % 250}:{port}"


def test_a_round_reads_each_connections_kept_born_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first round of a connection makes its born host (born_host keeps it as an
    attribute); later rounds read the kept ones in one map: every row its sender's."""
    controller = broker(tmp_path)
    seen: list[Any] = []
    rows = send_plain.plain_rows
    monkeypatch.setattr(send_plain, "plain_rows", lambda *a: seen.append(a[-1]) or rows(*a))
    peers = [HostPeer(4001), HostPeer(4002), HostPeer(4003)]
    first = build(RequestCode.SEND_MESSAGE_V2, 0, 10, [], {}, 0)
    controller.send.reference_group(peers[0], [first])  # makes the first segment
    for _ in range(2):
        requests = [build(RequestCode.SEND_MESSAGE_V2, n % 3, 50, [], {}, n) for n in range(3)]
        assert send_plain.plain_round(controller.send, peers, requests) is not None
    want = [send_plain.born_host(p) for p in peers]
    assert seen == [want, want]
    assert [p.born_host for p in peers] == want
    assert want[1] == (bytes([10, 0, 0, 4002 % 250]), 4002)
    close(controller)
