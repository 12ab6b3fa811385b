"""Property: a plain SEND_BATCH_MESSAGE's single pass (broker/processor/send_batch_plain.py,
through ``SendMessageProcessor.handle`` for a lone request and ``handle_group`` for a read's
batches) and the reference (``reference_group``) give the same replies, byte for byte, and leave
the same CommitLog, ConsumeQueue and IndexFile bytes, for batches with hostile header values,
header properties and bodies (damaged, oversized, empty).

Two brokers built in this process with the same store clock take the same requests, one through
each path. Small segments make batches cross a segment's end, which the pass leaves to the
reference."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.controller import BrokerController
from broker.processor import send_batch_plain
from remoting import command
from remoting import message as codec
from remoting.codec_native import native
from remoting.codes import RequestCode
from remoting.command import (
    EncodedReply,
    RemotingCommand,
    ScannedCommand,
    decode_command,
    encode_command_bytes,
)
from remoting.errors import RequestError
from remoting.frame import FrameDecoder
from tests.kits.brokerkit import send_request
from tests.unit.broker import test_send_plain as singles
from tests.unit.broker.test_send_plain import FIELDS, Peer, close, prop_values, properties

pytestmark = pytest.mark.skipif(native is None, reason="the plain pass needs the native codec")

entry_props = st.lists(
    st.tuples(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "X", "WAIT"]), prop_values),
    max_size=3,
).map(lambda pairs: "".join(f"{k}\x01{v}\x02" for k, v in pairs).rstrip("\x02"))
entries = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 1500) | st.integers(0, 2600), entry_props),
    min_size=0,
    max_size=6,
)
# A body's damage: none (most draws), cut short, a byte changed, bytes after the last entry
damage = st.one_of(
    st.just(None),
    st.just(None),
    st.just(None),
    st.tuples(st.just("cut"), st.integers(1, 40)),
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255)),
    st.tuples(st.just("tail"), st.binary(min_size=1, max_size=20)),
)
header_fields = st.dictionaries(
    st.sampled_from([*sorted(FIELDS), "m"]),
    st.deferred(lambda: st.one_of(*(FIELDS[k] for k in FIELDS), st.sampled_from(["false", "1"]))),
    max_size=2,
)
# (queue id, entries, damage, header properties beside the usual, header fields)
batches = st.tuples(
    st.integers(0, 3) | st.integers(0, 3) | st.integers(-1, 4),
    entries,
    damage,
    st.just("") | st.just("") | properties,
    st.one_of(st.just({}), st.just({}), header_fields),
)


def broker(root: Path, **overrides: str) -> BrokerController:
    """test_send_plain's broker, with IndexFiles small enough to roll and to read back often."""
    return singles.broker(root, maxHashSlotNum="64", maxIndexNum="256", **overrides)


def damaged(body: bytes, how: Any) -> bytes:
    if how is None or not body:
        return body
    if how[0] == "cut":
        return body[: max(0, len(body) - how[1])]
    if how[0] == "flip":
        at = how[1] % len(body)
        return body[:at] + bytes([body[at] ^ how[2]]) + body[at + 1 :]
    return body + how[1]


def build(
    queue_id: int, drawn: list[Any], how: Any, header_props: str, fields: dict[str, str], n: int
) -> RemotingCommand:
    body = codec.encode_batch_body(
        [
            (flag, bytes([(n + i) % 251]) * size, props)
            for i, (flag, size, props) in enumerate(drawn)
        ]
    )
    extra = dict(pair.split("\x01", 1) for pair in header_props.split("\x02") if "\x01" in pair)
    request = send_request(
        "T", damaged(body, how), queue_id=queue_id, code=RequestCode.SEND_BATCH_MESSAGE,
        batch=True, properties=extra,
    )  # fmt: skip
    request.ext_fields.update(fields)
    decoder = FrameDecoder()  # as the server reads it: the header through the JSON decoder
    decoder.receive_data(encode_command_bytes(request))
    return decode_command(decoder.next_frame())


def frame(request: RemotingCommand, result: Any) -> bytes:
    """A reply as the connection writes it (an error as its response)."""
    if isinstance(result, RequestError):
        result = request.error_response(result.code, result.remark)
    if type(result) is EncodedReply:
        return b"".join(result.buffers)
    if type(result) is RemotingCommand:
        return encode_command_bytes(result)
    assert type(result) is bytes, result
    return result


def files(root: Path) -> list[tuple[str, bytes]]:
    """CommitLog and ConsumeQueue files by name; IndexFiles in order (named by wall time)."""
    named = [
        (str(p.relative_to(root)), p.read_bytes())
        for sub in ("commitlog", "consumequeue")
        for p in sorted((root / sub).rglob("*"))
        if p.is_file()
    ]
    index = [("index", p.read_bytes()) for p in sorted((root / "index").glob("*")) if p.is_file()]
    return named + index


def assert_same(
    plain: BrokerController,
    reference: BrokerController,
    requests: list[RemotingCommand],
    root: Path,
) -> None:
    peer = Peer()
    random.seed(7)  # a negative queue id picks a random queue: the same one on both
    if len(requests) == 1:
        try:
            got = [plain.send.handle(peer, requests[0])]
        except RequestError as exc:  # answered as the connection answers a handler's raise
            got = [exc]
    else:
        got = plain.send.handle_group(peer, requests)
    random.seed(7)
    want = [
        frame(request, result)
        for request, result in zip(
            requests, reference.send.reference_group(peer, requests), strict=True
        )
    ]
    assert [frame(r, g) for r, g in zip(requests, got, strict=True)] == want
    assert files(root / "plain") == files(root / "reference")


def test_the_batch_pass_leaves_what_the_reference_leaves(tmp_path: Path) -> None:
    plain, reference = broker(tmp_path / "plain"), broker(tmp_path / "reference")
    counter = iter(range(10**9))
    took = []
    passes = send_batch_plain.plain_batch

    def counted(*args: Any) -> Any:
        result = passes(*args)
        took.append(result is not None)
        return result

    @settings(
        max_examples=400,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.lists(batches, min_size=1, max_size=3))
    def check(drawn: list[tuple[Any, ...]]) -> None:
        requests = [build(*batch, next(counter)) for batch in drawn]
        assert_same(plain, reference, requests, tmp_path)

    send_batch_plain.plain_batch = counted
    try:
        check()
    finally:
        send_batch_plain.plain_batch = passes
        close(plain, reference)
    assert took.count(True) > 20 and not all(took)  # the draws reach both outcomes


# One of each batch the pass must leave to the reference, after a plain one
ODD = [
    *(({name: value}, {}) for name in ["DELAY", "TRAN_MSG", "TIMER_DELAY_SEC"] for value in ["3", "true"]),
    *(({}, {"e": queue_id}) for queue_id in ["-1", "4"]),
    *(({}, {"b": topic}) for topic in ["RO", "%RETRY%G", "SCHEDULE_TOPIC_XXXX", "Unknown"]),
    *(({}, {"f": sys_flag}) for sys_flag in ["4", "8", "12"]),
    ({}, {"m": "false"}),
]  # fmt: skip


@pytest.mark.parametrize(("extra", "fields"), ODD)
def test_an_odd_batch_is_answered_as_the_reference_answers_it(
    tmp_path: Path, extra: dict[str, str], fields: dict[str, str]
) -> None:
    plain, reference = broker(tmp_path / "plain"), broker(tmp_path / "reference")
    header_props = "".join(f"{k}\x01{v}\x02" for k, v in extra.items())
    try:
        for n, (props, f) in enumerate([("", {}), ("", {}), (header_props, fields)]):
            request = build(
                n % 3, [(0, 100, "TAGS\x01a"), (1, 50, "KEYS\x01k1 k2")], None, props, f, n
            )
            assert_same(plain, reference, [request], tmp_path)
    finally:
        close(plain, reference)


def test_a_plain_batch_is_stored_and_answered_in_one_pass(tmp_path: Path) -> None:
    """The common case: once the first segment exists, a plain batch is the pass's alone."""
    controller = broker(tmp_path)
    peer = Peer()
    entry = [(0, 100, "TAGS\x01a\x02KEYS\x01k1"), (0, 200, "TAGS\x01b")]
    controller.send.reference_group(peer, [build(0, entry, None, "", {}, 0)])  # first segment
    request = build(1, entry * 3, None, "", {}, 1)
    assert type(request) is ScannedCommand  # the header scanned from its bytes (send_scan.c)
    reply = send_batch_plain.plain_batch(controller.send, peer, request)
    assert type(reply) is bytes
    assert command._get_ext(request) is command._LAZY  # the pass made no extFields dict
    response = decode_command(_frame_of(reply))
    assert response.code == 0 and response.ext_fields["queueId"] == "1"
    assert response.ext_fields["queueOffset"] == "0"
    assert len(response.ext_fields["msgId"].split(",")) == 6
    end = controller.store.commit_log.max_phys_offset
    stored = codec.decode_messages(bytes(controller.store.commit_log.queue.files[-1].mmap[:end]))
    assert [(m.queue_id, m.queue_offset) for m in stored[2:]] == [(1, n) for n in range(6)]
    assert all(m.properties["CLUSTER"] == controller.config.broker_cluster_name for m in stored)
    close(controller)


def _frame_of(data: bytes) -> Any:
    decoder = FrameDecoder()
    decoder.receive_data(data)
    return decoder.next_frame()


@pytest.mark.parametrize("slack", [0, 4, 7, 8, 9, 40])
def test_a_batch_that_leaves_no_room_for_the_end_filler_goes_to_the_reference(
    tmp_path: Path, slack: int
) -> None:
    """A batch that fits the segment but leaves fewer than the 8 bytes of its BLANK filler:
    the reference pads the segment and writes it at the start of the next."""
    plain, reference = broker(tmp_path / "plain"), broker(tmp_path / "reference")
    log = reference.store.commit_log
    n = iter(range(10**6))

    def put(*sizes: int) -> None:
        entry = [(0, size, "TAGS\x01a") for size in sizes]
        assert_same(plain, reference, [build(0, entry, None, "", {}, next(n))], tmp_path)

    try:
        put(100)
        before = log.queue.files[-1].wrote_position
        put(100)
        size = log.queue.files[-1].wrote_position - before  # a batch of one 100-byte entry
        fixed = size - 100
        while True:
            left = log.queue.files[-1].file_size - log.queue.files[-1].wrote_position
            gap = left - size - slack - fixed  # the body of one filler entry to leave `slack`
            if gap <= 2000:
                break
            put(2000)
        put(gap)
        assert log.queue.files[-1].file_size - log.queue.files[-1].wrote_position == size + slack
        put(100)
        assert len(log.queue.files) == (2 if slack < 8 else 1)
    finally:
        close(plain, reference)


def test_a_batch_over_the_whole_batch_limit_is_refused_as_the_reference_refuses_it(
    tmp_path: Path,
) -> None:
    """Each entry within maxMessageSize, the batch over maxMessageSize + 64 KiB an entry."""
    plain, reference = (
        broker(tmp_path / name, maxMessageSize="200000", mappedFileSizeCommitLog=str(1 << 20))
        for name in ("plain", "reference")
    )
    try:
        first = build(0, [(0, 100, "")], None, "", {}, 0)
        assert_same(plain, reference, [first], tmp_path)
        big = build(1, [(0, 190_000, "")] * 3, None, "", {}, 1)
        assert_same(plain, reference, [big], tmp_path)
        assert b"too large" in frame(big, reference.send.reference_group(Peer(), [big])[0])
    finally:
        close(plain, reference)


def test_a_rounds_batches_from_several_connections_each_keep_their_born_host(
    tmp_path: Path,
) -> None:
    """A selector round's group spans connections (``connections[i]`` sent ``requests[i]``):
    every batch is stored with its own connection's address, not the first one's."""
    controller = broker(tmp_path)
    entry = [(0, 100, "TAGS\x01a"), (0, 50, "")]
    controller.send.reference_group(Peer(), [build(0, entry, None, "", {}, 0)])  # first segment
    peers = [Peer() for _ in range(3)]
    for port, peer in enumerate(peers, 40001):
        peer.peer = f"127.0.0.1:{port}"
    requests = [build(n, entry, None, "", {}, n + 1) for n in range(3)]
    results = controller.send.handle_group(peers[0], requests, connections=peers)
    assert all(type(result) is bytes for result in results)
    end = controller.store.commit_log.max_phys_offset
    stored = codec.decode_messages(bytes(controller.store.commit_log.queue.files[-1].mmap[:end]))
    assert [m.born_host for m in stored[2:]] == [
        f"127.0.0.1:{port}" for port in (40001, 40001, 40002, 40002, 40003, 40003)
    ]
    close(controller)


def test_the_kept_batch_properties_are_bounded_and_the_same_bytes() -> None:
    """The pass keeps a batch's encoded properties by string: what it keeps is what the parse
    gives, and an abusive client's many or long strings do not grow it past its bound."""
    kept = send_batch_plain._encoded
    kept.clear()
    for n in range(300):
        text = f"WAIT\x01true\x02X\x01{n}" + ("y" * 600 if n % 2 else "")
        want = {**codec.string_to_properties(text), "CLUSTER": "C"}
        got = send_batch_plain.kept_property_bytes(text, "C")
        assert got == codec.properties_to_string(want).encode()
    assert send_batch_plain.kept_property_bytes("DELAY\x013", "C") is send_batch_plain._REFUSED
    assert len(kept) <= send_batch_plain._ENCODED_MAX
    assert kept and all(text is None or len(text) <= 512 for text, _ in kept)
