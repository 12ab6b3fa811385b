"""Property: a broker's round processor in C (the store module's RoundSend, round_send.c, built
by broker/processor/send_plain.py ``round_front``) and its ``serve``, which the server hands
its selector in place of ``handle_round``, answer every selector round exactly as
``handle_round`` asking ``plain_round``, the Python they stand in for, and hand it every round
they do not take whole (an ACL hook, another round processor, a gate closed, a connection
without a kept born host or of another kind).

Two brokers (controllers built in this process, same store clock) take the same rounds from
the same kinds of connections with the same gates: one through a RoundSend's ``serve``, one
through its server's ``handle_round`` with ``plain_round`` bound to its send processor as
the round processor. After every round the results (slot by slot), CommitLog, ConsumeQueue and IndexFile
bytes, the broker's stats items, the store's put counters and dispatch's position must be
equal, and the C must have handed the round to ``plain_round`` exactly when a gate was closed."""

from __future__ import annotations

import functools
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.processor import send_plain
from broker.processor.send_reply import REPLY_PIECES
from broker.store.dispatch import ALWAYS_HEARD
from broker.store.store_native import native as store_native
from remoting.codec_native import native as codec_native
from remoting.codes import RequestCode
from remoting.command import EncodedReply, RemotingCommand, encode_command_bytes
from remoting.constants import PERM_WRITE
from remoting.names import valid_topics
from tests.kits.nativekit import needs_codec, needs_store_native
from tests.unit.broker.test_lone_send import BrokerSide
from tests.unit.broker.test_send_plain import (
    ODD,
    Peer,
    broker,
    build,
    close,
    files,
    odd_sends,
    plain_sends,
)

V1, V2 = int(RequestCode.SEND_MESSAGE), int(RequestCode.SEND_MESSAGE_V2)
# Gates the C reads itself: any closed sends the round to plain_round.
SEND_GATES = frozenset({"plain_mode", "read_only", "fenced", "in_sync", "in_sync_short"})
# handle_round's own: the ACL hook (no round processor is asked then), and the round
# processor replaced by an equivalent: serve hands the round to handle_round.
SERVER_GATES = frozenset({"acl", "acl_refuses", "round_processor"})
# A connection's born host dropped (the first peer's: a round with it goes to plain_round),
# and the store's own gates (the pass declines: round_rest's path).
GATES = (*sorted(SEND_GATES | SERVER_GATES), "born_host", "disk_full", "slave")
PEERS = 4


class HostPeer(Peer):
    born_host = None  # as Connection's: kept by send_plain.born_host

    def __init__(self, port: int) -> None:
        super().__init__()
        self.peer = f"10.0.0.{port % 250}:{port}"


class Side(BrokerSide):
    """A broker, its peers, and its server's round processor (RoundSend, or plain_round)."""

    def __init__(self, root: Path, front: bool) -> None:
        super().__init__(root)
        controller, server = self.controller, self.server
        self.peers = [HostPeer(4001 + n) for n in range(PEERS)]
        # the RoundSend's hand-overs to plain_round, to round_rest, and its serve's to the
        # server's handle_round
        self.fell_back = self.rests = self.handed = 0
        if front:
            assert type(server.round_processor).__name__ == "RoundSend"
            assert server.round_handler == server.round_processor.serve
            made = round_send(server, controller.send, self)
            server.register_round(made, made.serve)
            chain = server.handle_round

            def handle_round(*args: Any, **kwargs: Any) -> Any:
                self.handed += 1
                return chain(*args, **kwargs)

            server.handle_round = handle_round  # serve looks it up on the server each call
            self.handler = made.serve
        else:
            server.register_round(functools.partial(send_plain.plain_round, controller.send))
            self.handler = server.handle_round
        self.round_processor = server.round_processor

    def close_gates(self, closed: frozenset[str]) -> None:
        super().close_gates(closed)
        controller, server, store = self.controller, self.server, self.controller.store
        server.round_processor = self.round_processor
        if "round_processor" in closed:  # one that does what it does, but is not it
            server.round_processor = functools.partial(send_plain.plain_round, controller.send)
        store.clean.disk_full = "disk_full" in closed
        store.is_slave = "slave" in closed
        if "born_host" in closed:  # as on a connection's first send: born_host() makes it
            self.peers[0].born_host = None
            self.peers[0].attributes.pop("born_host", None)

    def answer(self, sent: list[tuple[int, RemotingCommand]]) -> list[Any]:
        random.seed(7)  # a negative queue id picks a random queue: the same one on both
        connections = [self.peers[n] for n, _ in sent]
        requests = [request for _, request in sent]
        return [seen(r) for r in self.handler(connections, requests)]


def round_send(server: Any, processor: Any, side: Side) -> Any:
    """A RoundSend as round_front makes it, but counting its hand-overs to plain_round and
    to round_rest."""

    def plain_round(*args: Any, **kwargs: Any) -> Any:
        side.fell_back += 1
        return send_plain.plain_round(*args, **kwargs)

    def round_rest(*args: Any) -> Any:
        side.rests += 1
        return send_plain.round_rest(*args)

    return store_native.RoundSend(
        server, processor, send_plain.plain_rows, valid_topics, send_plain._SPECIAL, REPLY_PIECES,
        ALWAYS_HEARD, plain_round, round_rest, PERM_WRITE,
    )  # fmt: skip


def seen(result: Any) -> Any:
    """A result as the connection would write it: an EncodedReply slot by slot, an error as
    its kind and text."""
    if type(result) is EncodedReply:
        return ("encoded", {name: getattr(result, name) for name in EncodedReply.__slots__})
    if type(result) is RemotingCommand:
        return encode_command_bytes(result)
    if isinstance(result, Exception):
        return (type(result).__name__, str(result))
    return result


def pair(root: Path) -> tuple[Side, Side]:
    """Both sides with a first round stored (the first segment made, every born host kept)."""
    front, chain = Side(root / "plain", True), Side(root / "reference", False)
    first = [(n, build(V2, 0, 10, [], {}, n)) for n in range(PEERS)]
    assert step(front, chain, first, root) == 1  # the born hosts made by plain_round
    for side in (front, chain):
        side.warm()
    return front, chain


def step(front: Side, chain: Side, sent: list[tuple[int, RemotingCommand]], root: Path) -> int:
    """One round to both sides; how many times the C handed it to plain_round (-1: serve
    handed it to handle_round)."""
    before, handed = front.fell_back, front.handed
    assert front.answer(sent) == chain.answer(sent)
    assert front.state() == chain.state()
    assert files(root / "plain") == files(root / "reference")
    assert [p.born_host for p in front.peers] == [p.born_host for p in chain.peers]
    if front.handed != handed:
        assert front.handed == handed + 1 and front.fell_back == before
        return -1
    return front.fell_back - before


rounds = st.lists(
    st.tuples(st.integers(0, PEERS - 1), st.one_of(plain_sends, plain_sends, odd_sends)),
    min_size=1,
    max_size=5,
)


@needs_codec
@needs_store_native
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.frozensets(st.sampled_from(GATES), max_size=2) | st.just(frozenset()), rounds),
        min_size=1,
        max_size=10,
    )
)
def test_the_round_in_c_answers_as_plain_round_and_hands_it_over_when_a_gate_closes(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[frozenset[str], Any]]
) -> None:
    root = tmp_path_factory.mktemp("round")
    front, chain = pair(root)
    n = 100
    try:
        for closed, drawn in steps:
            sent = []
            for peer, send in drawn:
                sent.append((peer, build(*send, n)))
                n += 1
            for side in (front, chain):
                side.close_gates(closed)
            kept = all(front.peers[peer].born_host is not None for peer, _ in sent)
            fell_back = step(front, chain, sent, root)
            if closed & SERVER_GATES:
                assert fell_back == -1  # handle_round's; the RoundSend is not asked
            elif closed & SEND_GATES or not kept:
                assert fell_back == 1, closed
            else:
                assert fell_back == 0
    finally:
        close(front.controller, chain.controller)


@needs_codec
@needs_store_native
@pytest.mark.parametrize("gate", GATES)
def test_each_gate_alone_closed_then_opened(tmp_path: Path, gate: str) -> None:
    front, chain = pair(tmp_path)
    try:
        sent = [(n, build(V2, n % 3, 40, [], {}, 10 + n)) for n in range(3)]
        assert step(front, chain, sent, tmp_path) == 0
        for side in (front, chain):
            side.close_gates(frozenset({gate}))
        sent = [(n, build(V1, n % 3, 40, [], {}, 20 + n)) for n in (2, 0, 1)]
        want = -1 if gate in SERVER_GATES else int(gate in SEND_GATES or gate == "born_host")
        assert step(front, chain, sent, tmp_path) == want
        for side in (front, chain):
            side.close_gates(frozenset())
        sent = [(n, build(V2, 1, 40, [], {}, 30 + n)) for n in (3, 3, 1)]
        assert step(front, chain, sent, tmp_path) == 0
    finally:
        close(front.controller, chain.controller)


@needs_codec
@needs_store_native
@pytest.mark.parametrize(("extra", "fields"), ODD)
def test_an_odd_send_in_the_middle_leaves_the_round_to_the_general_path(
    tmp_path: Path, extra: list[tuple[str, str]], fields: dict[str, str]
) -> None:
    """plain_send_rows' None: the C returns None as plain_round does, with nothing stored, and
    the server's general path answers the round as the reference."""
    front, chain = pair(tmp_path)
    try:
        sent = [(0, build(V2, 1, 10, [], {}, 1)), (1, build(V2, 0, 50, extra, fields, 2)),
                (2, build(V1, 2, 10, [], {}, 3))]  # fmt: skip
        rests = front.rests
        assert step(front, chain, sent, tmp_path) == 0
        assert front.rests == rests  # not even a pass: the rows declined
    finally:
        close(front.controller, chain.controller)


@needs_codec
@needs_store_native
def test_the_common_round_runs_no_python_and_the_rest_ends_in_round_rest(tmp_path: Path) -> None:
    """A new queue (the pass stops after its append) and the disk full (the pass declines)
    go through round_rest; a round to queues that exist is the C's alone."""
    front, chain = pair(tmp_path)
    try:
        sent = [(0, build(V2, 3, 10, [], {}, 1)), (1, build(V2, 3, 10, [], {}, 2))]  # queue 3 new
        assert step(front, chain, sent, tmp_path) == 0 and front.rests == 1
        sent = [(2, build(V2, 3, 10, [], {}, 3)), (3, build(V2, 0, 10, [], {}, 4))]
        assert step(front, chain, sent, tmp_path) == 0 and front.rests == 1
        for side in (front, chain):
            side.close_gates(frozenset({"disk_full"}))
        assert step(front, chain, sent, tmp_path) == 0 and front.rests == 2
    finally:
        close(front.controller, chain.controller)


@needs_codec
@needs_store_native
def test_a_round_that_crosses_a_segment_end_is_finished_by_the_reference(tmp_path: Path) -> None:
    """``done < len(requests)``: the sends the pass did not take go to reference_group, in
    order, through round_rest, as in plain_round."""
    front, chain = pair(tmp_path)
    try:
        for n in range(40):  # 64 KiB segments: rounds of ~8 KiB roll one within a few rounds
            sent = [(peer, build(V2, peer % 3, 2000, [], {}, 10 * n + peer)) for peer in range(4)]
            assert step(front, chain, sent, tmp_path) == 0
        assert front.rests > 0
        assert len(front.controller.store.commit_log.queue.files) > 1
    finally:
        close(front.controller, chain.controller)


@needs_codec
@needs_store_native
def test_connections_of_another_kind_and_odd_calls_go_to_plain_round(tmp_path: Path) -> None:
    """A connection with no born_host attribute (plain_round's AttributeError path), lists of
    different lengths, an empty round, keywords, a third argument: plain_round's answers."""
    front, chain = pair(tmp_path)
    try:
        for side in (front, chain):
            side.peers[1] = Peer()  # no born_host at all
            side.peers[1].peer = "10.0.0.9:4009"
        sent = [(0, build(V2, 0, 10, [], {}, 1)), (1, build(V2, 1, 10, [], {}, 2))]
        assert step(front, chain, sent, tmp_path) == 1
        processor = front.server.round_processor
        requests = [build(V2, 0, 10, [], {}, 3)]
        before = front.fell_back
        with pytest.raises(TypeError):  # plain_send_rows: one born host per request
            processor(front.peers[:2], requests)
        assert front.fell_back == before + 1
        with pytest.raises(TypeError):
            send_plain.plain_round(chain.controller.send, chain.peers[:2], requests)
        assert processor([], []) == send_plain.plain_round(chain.controller.send, [], [])
        got = processor(connections=front.peers[:1], requests=requests)
        want = send_plain.plain_round(chain.controller.send, chain.peers[:1], requests)
        assert [seen(r) for r in got] == [seen(r) for r in want]
        got = processor(front.peers[:1], requests, front.peers[0].born_host)
        want = send_plain.plain_round(
            chain.controller.send, chain.peers[:1], requests, chain.peers[0].born_host
        )
        assert [seen(r) for r in got] == [seen(r) for r in want]
        assert front.fell_back == before + 4
        handed = front.handed
        sent = [(0, build(V2, 0, 10, [], {}, 7)), (2, build(V2, 2, 10, [], {}, 8))]
        connections = [front.peers[n] for n, _ in sent]
        got = front.handler(connections=connections, requests=[r for _, r in sent])
        want = chain.handler([chain.peers[n] for n, _ in sent], [r for _, r in sent])
        assert [seen(r) for r in got] == [seen(r) for r in want]
        assert front.handed == handed + 1  # serve with keywords: handle_round's
        assert files(tmp_path / "plain") == files(tmp_path / "reference")
    finally:
        close(front.controller, chain.controller)


@needs_codec
@needs_store_native
def test_a_failing_gate_read_goes_to_plain_round(tmp_path: Path) -> None:
    """A gate whose read raises: plain_round meets the same read and raises, and the server
    answers every request of the round with it."""
    front, chain = pair(tmp_path)
    try:
        for side in (front, chain):
            del side.controller.registrar.fenced
        sent = [(0, build(V2, 1, 10, [], {}, 1)), (1, build(V2, 1, 10, [], {}, 2))]
        assert step(front, chain, sent, tmp_path) == 1
        got = front.answer(sent)
        assert got[0][0] == "AttributeError" and got[0] == got[1]
    finally:
        close(front.controller, chain.controller)


@needs_store_native
def test_bad_arguments_are_refused() -> None:
    good = (object(), object(), len, set(), frozenset(), (), set(), len, len, 2)
    store_native.RoundSend(*good)
    for index, bad in [(2, 1), (3, frozenset()), (4, set()), (5, []), (6, {}), (7, None),
                       (8, "x"), (9, 0), (9, "2")]:  # fmt: skip
        args = list(good)
        args[index] = bad
        with pytest.raises(TypeError):
            store_native.RoundSend(*args)
    with pytest.raises(TypeError):
        store_native.RoundSend(*good[:-1])
    with pytest.raises(TypeError):
        store_native.RoundSend(*good, extra=1)


def test_the_round_processor_is_the_c_only_where_plain_round_would_call_the_same_c(
    tmp_path: Path,
) -> None:
    """Native: a RoundSend, registered by the send processor; pure modes, or a Python twin of
    the rows or the pass switched on: plain_round bound to the processor, the reference."""
    controller = broker(tmp_path)
    try:
        send = controller.send
        server = controller.server
        registered = server.round_processor
        built = store_native is not None and codec_native is not None
        if built:
            assert type(registered) is store_native.RoundSend
            assert server.round_handler == registered.serve  # the selector's, at start
        else:
            assert registered.func is send_plain.plain_round and registered.args == (send,)
            assert server.round_handler is None  # the selector calls handle_round
        for name, twin in (("plain_pass", lambda *a: None), ("plain_rows", len)):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(send_plain, name, twin)
                made, handler = send_plain.round_front(server, send)
                assert type(made) is functools.partial and made.func is send_plain.plain_round
                assert handler is None
    finally:
        close(controller)


@needs_codec
@needs_store_native
def test_a_round_that_raises_is_answered_with_its_exception_by_every_request(
    tmp_path: Path,
) -> None:
    """As handle_round answers a round processor that raised: the exception, once a request."""
    front, chain = pair(tmp_path)
    try:
        boom = ValueError("a test's")

        def rest(*args: Any) -> Any:
            raise boom

        server = front.server
        made = store_native.RoundSend(
            server, front.controller.send, send_plain.plain_rows, valid_topics,
            send_plain._SPECIAL, REPLY_PIECES, ALWAYS_HEARD, send_plain.plain_round, rest,
            PERM_WRITE,
        )  # fmt: skip
        server.register_round(made, made.serve)
        requests = [build(V2, 3, 10, [], {}, n) for n in (1, 2)]  # queue 3 new: round_rest
        got = made.serve(front.peers[:2], requests)
        assert got == [boom, boom] and boom.__traceback__ is not None
        front.controller.store.clean.disk_full = True  # the pass declines: round_rest
        with pytest.raises(ValueError):
            made(front.peers[:1], [build(V2, 3, 10, [], {}, 3)])  # the processor itself raises
    finally:
        close(front.controller, chain.controller)


class Shrinking(HostPeer):
    """A connection of another kind whose born host, once read, empties the round's list."""

    def __init__(self, port: int, connections: list[Any]) -> None:
        super().__init__(port)
        self.connections = connections

    @property  # type: ignore[override]
    def born_host(self) -> Any:
        self.connections.clear()
        return (b"\x0a\x00\x00\x01", 4001)


@needs_codec
@needs_store_native
def test_a_round_whose_list_changes_under_a_read_goes_to_plain_round(tmp_path: Path) -> None:
    front, chain = pair(tmp_path)
    try:
        processor = front.server.round_processor
        connections: list[Any] = []
        connections += [Shrinking(4001, connections), front.peers[1], front.peers[2]]
        requests = [build(V2, 0, 10, [], {}, n) for n in range(3)]
        before = front.fell_back
        with pytest.raises(TypeError):  # plain_round's map over the emptied list: no hosts
            processor(connections, requests)
        assert front.fell_back == before + 1
    finally:
        close(front.controller, chain.controller)
