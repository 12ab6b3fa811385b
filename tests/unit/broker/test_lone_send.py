"""Property: a server's lone-send front (the store module's LoneSend, lone_send.c, built by
broker/processor/send_plain.py ``lone_front``) answers every request exactly as the server's
``handle_request`` chain does, and hands every request it does not take (a gate closed, a
send that is not plain, another code) to that chain.

Two brokers (controllers built in this process, same store clock) take the same requests with
the same gates: one through its server's front, one through its server's ``handle_request``.
After every request the replies, CommitLog, ConsumeQueue and IndexFile bytes, the broker's
stats items and the store's put counters must be equal, and the front must have called the
chain exactly when a gate was closed."""

from __future__ import annotations

import functools
import random
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.processor import send_plain
from broker.processor.send import SendMessageProcessor
from remoting.codes import RequestCode, ResponseCode
from remoting.command import EncodedReply, RemotingCommand, encode_command_bytes
from remoting.constants import PERM_READ
from remoting.errors import RequestError
from tests.kits.nativekit import needs_codec, needs_store_native
from tests.unit.broker.test_send_plain import (
    ODD,
    broker,
    build,
    close,
    files,
    odd_sends,
    plain_sends,
)

pytestmark = [needs_codec, needs_store_native]

V1, V2 = int(RequestCode.SEND_MESSAGE), int(RequestCode.SEND_MESSAGE_V2)
GATES = ("acl", "acl_refuses", "processor", "plain_mode", "read_only", "fenced", "in_sync",
         "in_sync_short", "born_host")  # fmt: skip


class Peer:
    """What the send processor reads of a connection (Connection keeps ``born_host``)."""

    born_host = None

    def __init__(self) -> None:
        self.peer = "127.0.0.1:40404"
        self.attributes: dict[str, Any] = {}


class BrokerSide:
    """A broker built in this process whose plain pass can be the common one, the gates the
    C fronts read (closed or opened by name), and the state both sides of a test compare.
    test_round_send's sides are ones too."""

    def __init__(self, root: Path) -> None:
        self.controller = controller = broker(root)
        store = controller.store
        # the broker's own listeners, named idle to the store: its plain pass can be the
        # common one, which the fronts answer without Python
        store.dispatcher.arrival_listener = controller._on_arrival
        store.dispatcher.arrivals_wanted = controller._arrivals_wanted
        controller._declare_plain_idle()
        store.commit_log.warmer.ahead = 0
        self.server = controller.server

    def warm(self) -> None:
        """The first segment counted as warmed: no pass stops to call the page warmer."""
        self.controller.store.commit_log.queue.files[-1].warmed_position = 1 << 40

    def close_gates(self, closed: frozenset[str]) -> None:
        """The ACL hook and the broker-wide gates of the plain pass, each closed when named."""
        controller, server = self.controller, self.server
        server.authorize = None
        if "acl_refuses" in closed:
            server.authorize = lambda connection, request: request.error_response(
                ResponseCode.NO_PERMISSION, "refused by a test"
            )
        elif "acl" in closed:
            server.authorize = lambda connection, request: None
        controller.send.plain_mode = "plain_mode" not in closed
        controller.config = attrs.evolve(
            controller.config, broker_permission=PERM_READ if "read_only" in closed else 6
        )
        controller.registrar.fenced = "FENCED: a test" if "fenced" in closed else None
        short = "in_sync_short" in closed
        controller.min_in_sync_slaves = 1 if short or "in_sync" in closed else 0
        controller.enough_in_sync_slaves = lambda: not short  # type: ignore[method-assign]

    def state(self) -> tuple[Any, ...]:
        store = self.controller.store
        items = {k: (v.value, v.times) for k, v in self.controller.stats.items.items()}
        return (
            items,
            store.stats.put_message_times_total,
            store.stats.put_message_size_total,
            store.reput.reput_from_offset,
            store.dispatcher.last_dispatched_timestamp,
        )


class Side(BrokerSide):
    """A broker, its peer, and its server's request handler (the front, or handle_request)."""

    def __init__(self, root: Path, front: bool) -> None:
        super().__init__(root)
        server = self.server
        self.peer = Peer()
        self.entries = {code: server.processors[code] for code in (V1, V2)}
        self.fell_back = 0
        chain = server.handle_request
        if front:
            assert type(server.front).__name__ == "LoneSend"

            def counted(connection: Any, request: RemotingCommand) -> Any:
                self.fell_back += 1
                return chain(connection, request)

            server.handle_request = counted  # the front looks it up on the server each call
            self.handler = server.front
        else:
            self.handler = chain

    def close_gates(self, closed: frozenset[str]) -> None:
        super().close_gates(closed)
        for code, entry in self.entries.items():
            # a processor that does what the send processor's handle does, but is not it
            self.server.processors[code] = (
                functools.partial(entry.__func__, entry.__self__)
                if "processor" in closed
                else entry
            )
        if "born_host" in closed:  # as on a connection's first send: born_host() makes it
            self.peer.born_host = None
            self.peer.attributes.pop("born_host", None)

    def answer(self, request: RemotingCommand) -> Any:
        random.seed(7)  # a negative queue id picks a random queue: the same one on both
        try:
            return seen(self.handler(self.peer, request), request)
        except RequestError as exc:  # the connection answers its code and remark
            return seen(request.error_response(exc.code, exc.remark), request)


def seen(result: Any, request: RemotingCommand) -> Any:
    """A handler's answer as the connection would write it: an EncodedReply slot by slot."""
    if type(result) is EncodedReply:
        return ("encoded", {name: getattr(result, name) for name in EncodedReply.__slots__})
    if type(result) is RemotingCommand:
        return encode_command_bytes(result)
    return result


def pair(root: Path) -> tuple[Side, Side]:
    """Both sides with a first send stored (the first segment made, warmed)."""
    front, chain = Side(root / "plain", True), Side(root / "reference", False)
    assert step(front, chain, build(V2, 0, 10, [], {}, 0), root) == 1  # born host made
    for side in (front, chain):
        side.warm()
    return front, chain


def step(front: Side, chain: Side, request: RemotingCommand, root: Path) -> int:
    """One request to both sides; how many times the front fell back to the chain."""
    before = front.fell_back
    got = front.answer(request)
    assert got == chain.answer(request)
    assert front.state() == chain.state()
    assert files(root / "plain") == files(root / "reference")
    return front.fell_back - before


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.frozensets(st.sampled_from(GATES), max_size=2) | st.just(frozenset()),
            st.one_of(plain_sends, plain_sends, odd_sends),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_the_front_answers_as_the_chain_and_falls_back_when_a_gate_closes(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[frozenset[str], Any]]
) -> None:
    root = tmp_path_factory.mktemp("lone")
    front, chain = pair(root)
    try:
        for n, (closed, drawn) in enumerate(steps, start=1):
            request = build(*drawn, n)
            for side in (front, chain):
                side.close_gates(closed)
            kept = front.peer.born_host is not None  # made by the chain's first plain send
            fell_back = step(front, chain, request, root)
            if closed:
                assert fell_back == 1, closed
            elif plain_sends_seen(drawn) and kept:
                assert fell_back == 0
    finally:
        close(front.controller, chain.controller)


def plain_sends_seen(drawn: tuple[Any, ...]) -> bool:
    """Whether it is a plain send to queues the topic has (the front takes it): the odd draws may or may not be plain (a hostile number can be a valid one)."""
    _, queue_id, _, extra, fields = drawn
    specials = ("DELAY", "TRAN_MSG", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_DELIVER_MS")
    named = " ".join(name for name, _ in extra) + str(fields.get("i", ""))
    plain = 0 <= queue_id < 4 and not fields.keys() - {"i"}
    plain = plain and not any(special in named for special in specials)
    return plain


@pytest.mark.parametrize(("extra", "fields"), ODD)
def test_an_odd_send_goes_the_python_way(
    tmp_path: Path, extra: list[tuple[str, str]], fields: dict[str, str]
) -> None:
    """A DELAY or transaction property, a queue id the topic lacks, a read-only, retry, system
    or unknown topic, a transaction type: the chain answers it (its refusal, or its store)."""
    front, chain = pair(tmp_path)
    try:
        assert step(front, chain, build(V2, 1, 10, [], {}, 1), tmp_path) == 0
        assert step(front, chain, build(V2, 0, 50, extra, fields, 2), tmp_path) == 1
        assert step(front, chain, build(V1, 2, 10, [], {}, 3), tmp_path) == 0
    finally:
        close(front.controller, chain.controller)


@pytest.mark.parametrize("gate", GATES)
def test_each_gate_sends_the_next_request_the_python_way(tmp_path: Path, gate: str) -> None:
    """Each gate closed between two sends: the next one goes through the chain (and is
    answered as the chain answers it); opened again, the one after is the front's."""
    front, chain = pair(tmp_path)
    try:
        assert step(front, chain, build(V2, 1, 10, [], {}, 1), tmp_path) == 0
        for side in (front, chain):
            side.close_gates(frozenset({gate}))
        assert step(front, chain, build(V2, 2, 10, [], {}, 2), tmp_path) == 1
        for side in (front, chain):
            side.close_gates(frozenset())
        assert step(front, chain, build(V1, 0, 10, [], {}, 3), tmp_path) == 0
    finally:
        close(front.controller, chain.controller)


def test_other_codes_and_call_shapes_go_to_the_chain(tmp_path: Path) -> None:
    """A batch, a request of another code, a call with keywords: handle_request's answers."""
    front, chain = pair(tmp_path)
    try:
        for code in (int(RequestCode.GET_MAX_OFFSET), 99999):  # a header missing, not supported
            other = RemotingCommand.request(code)
            assert step(front, chain, other, tmp_path) == 1
        batch = build(V2, 0, 10, [], {}, 1)
        batch.code = int(RequestCode.SEND_BATCH_MESSAGE)
        assert step(front, chain, batch, tmp_path) == 1
        request = build(V2, 1, 10, [], {}, 2)
        got = front.server.front(connection=front.peer, request=request)
        assert seen(got, request) == chain.answer(request)
    finally:
        close(front.controller, chain.controller)


def test_a_pass_that_is_not_the_common_one_ends_in_the_chains_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """plain_pass stops after the append (a new queue) or declines (reput behind): lone_rest
    does what the chain does after it, with the same rows and cluster."""
    rest: list[Any] = []
    real_rest = send_plain.lone_rest
    front, chain = pair(tmp_path)
    try:
        # the front was made with the real lone_rest: count through the store's calls instead
        monkeypatch.setattr(send_plain, "_store_rest", _counting(send_plain._store_rest, rest))
        assert step(front, chain, build(V2, 3, 10, [], {}, 1), tmp_path) == 0  # queue 3 is new
        assert len(rest) == 2  # once on each side
        assert step(front, chain, build(V2, 3, 10, [], {}, 2), tmp_path) == 0
        assert len(rest) == 2  # the queue is there now: the common pass
    finally:
        close(front.controller, chain.controller)
    assert real_rest is send_plain.lone_rest


def _counting(function: Any, calls: list[Any]) -> Any:
    def counted(*args: Any) -> Any:
        calls.append(args)
        return function(*args)

    return counted


def test_the_reply_is_the_chains_slot_by_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The common pass: the reply made in C, nothing of the Python tail called."""
    front, chain = pair(tmp_path)
    try:
        step(front, chain, build(V2, 1, 10, [], {}, 1), tmp_path)  # queue 1 made
        rest: list[Any] = []
        monkeypatch.setattr(send_plain, "_store_rest", _counting(send_plain._store_rest, rest))
        monkeypatch.setattr(send_plain, "EncodedReply", None)  # the chain's own: not called
        request = build(V2, 1, 10, [], {}, 2)
        got = front.server.front(front.peer, request)
        assert rest == [] and front.fell_back == 1
        monkeypatch.undo()
        want = chain.server.handle_request(chain.peer, request)
        assert type(got) is type(want) is EncodedReply
        assert got.code == want.code == 0 and type(got.code) is int
        assert got.buffers == want.buffers and type(got.buffers) is list
    finally:
        close(front.controller, chain.controller)


def test_the_front_is_made_only_of_the_functions_the_chain_calls(tmp_path: Path) -> None:
    """Where the chain would call the Python rows or pass (a twin switched on), no front."""
    controller = broker(tmp_path)
    try:
        send = controller.send
        assert send_plain.lone_front(controller.server, send, SendMessageProcessor.handle)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(send_plain, "plain_pass", lambda *a: None)
            assert (
                send_plain.lone_front(controller.server, send, SendMessageProcessor.handle) is None
            )
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(send_plain, "plain_rows", send_plain.python_plain_rows)
            assert (
                send_plain.lone_front(controller.server, send, SendMessageProcessor.handle) is None
            )
    finally:
        close(controller)


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    from broker.store.store_native import native as store_native

    good = (object(), object(), SendMessageProcessor.handle, len, set(), frozenset(), (), set(),
            EncodedReply, len, (V1, V2), 2)  # fmt: skip
    store_native.LoneSend(*good)
    for index, bad in [(2, len), (4, frozenset()), (5, set()), (6, []), (8, object()), (8, int),
                       (10, (V1,)), (10, ("a", "b")), (11, 0), (11, "2")]:  # fmt: skip
        args = list(good)
        args[index] = bad
        with pytest.raises(TypeError):
            store_native.LoneSend(*args)
    with pytest.raises(TypeError):
        store_native.LoneSend(*good[:-1])
    with pytest.raises(TypeError):
        store_native.LoneSend(*good, extra=1)


def test_a_failing_gate_read_goes_to_the_chain(tmp_path: Path) -> None:
    """A gate whose read raises (a processor without the attribute): the chain's answer, which
    meets the same read and raises."""
    front, chain = pair(tmp_path)
    try:
        for side in (front, chain):
            del side.controller.registrar.fenced
        request = build(V2, 1, 10, [], {}, 1)
        with pytest.raises(AttributeError):
            front.handler(front.peer, request)
        assert front.fell_back == 2
        with pytest.raises(AttributeError):
            chain.handler(chain.peer, request)
    finally:
        close(front.controller, chain.controller)
