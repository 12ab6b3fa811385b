"""The lone-send front (lone_send.c) keeps two objects it made only for C to read back, the
one-request list it hands the rows and its reply, for the next send: what a caller holds of
them is never changed by a later send, a send inside a send gets its own, and a reply type
whose objects can be seen from outside (a __dict__, weak references) is never kept.

Each test builds the front as send_plain.lone_front does, with one argument swapped for a
test's own (a rows function that keeps what it is given, a reply subclass), and holds its
replies to the chain's (handle_request on a second broker) for the same requests."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import pytest

from broker.processor import send_plain
from broker.processor.send import SendMessageProcessor
from remoting.command import EncodedReply, RemotingCommand
from tests.kits.nativekit import needs_codec, needs_store_native
from tests.unit.broker.test_lone_send import V1, V2, Side, pair, seen
from tests.unit.broker.test_send_plain import build, close, files

pytestmark = [needs_codec, needs_store_native]


def front_of(side: Side, *, plain_rows: Any = None, reply_type: type = EncodedReply) -> Any:
    """The server's front as lone_front makes it, with the rows function or reply type given."""
    from broker.store.store_native import native as store_native

    return store_native.LoneSend(
        side.server, side.controller.send, SendMessageProcessor.handle,
        plain_rows or send_plain.plain_rows, send_plain.valid_topics, send_plain._SPECIAL,
        send_plain.REPLY_PIECES, send_plain.ALWAYS_HEARD, reply_type, send_plain.lone_rest,
        (V1, V2), send_plain._PERM_WRITE,
    )  # fmt: skip


def chain_answer(chain: Side, request: RemotingCommand) -> Any:
    return seen(chain.handler(chain.peer, request), request)


def test_a_held_reply_is_not_changed_by_later_sends(tmp_path: Path) -> None:
    front, chain = pair(tmp_path)
    try:
        handler = front_of(front)
        held = []
        for n in range(1, 5):
            request = build(V2, 0, 10, [], {}, n)
            got = handler(front.peer, request)
            assert type(got) is EncodedReply
            held.append((got, seen(got, request)))
            assert held[-1][1] == chain_answer(chain, request)
        assert len({id(got) for got, _ in held}) == 4
        for got, first_seen in held:  # each as it was answered
            assert ("encoded", {"buffers": got.buffers, "code": got.code}) == first_seen
        del held, got
        for n in range(5, 9):  # not held: the front may answer in what it kept
            request = build(V2, 0, 10, [], {}, n)
            assert seen(handler(front.peer, request), request) == chain_answer(chain, request)
        assert files(tmp_path / "plain") == files(tmp_path / "reference")
        assert front.fell_back == 1 == chain.fell_back + 1  # pair()'s first send
    finally:
        close(front.controller, chain.controller)


class NotedReply(EncodedReply):
    """A reply type whose objects carry a __dict__ and weak references."""


def test_a_reply_type_with_a_dict_or_weak_references_is_never_kept(tmp_path: Path) -> None:
    front, chain = pair(tmp_path)
    try:
        handler = front_of(front, reply_type=NotedReply)
        request = build(V2, 0, 10, [], {}, 1)
        first = handler(front.peer, request)
        assert type(first) is NotedReply
        assert first.buffers == chain_answer(chain, request)[1]["buffers"]
        first.note = "the first reply"
        gone = weakref.ref(first)
        del first
        assert gone() is None  # nothing kept it
        request = build(V2, 0, 10, [], {}, 2)
        second = handler(front.peer, request)
        assert not hasattr(second, "note")
        assert second.code == 0 and second.buffers == chain_answer(chain, request)[1]["buffers"]
    finally:
        close(front.controller, chain.controller)


def test_a_request_list_the_rows_kept_is_never_changed(tmp_path: Path) -> None:
    front, chain = pair(tmp_path)
    try:
        given: list[list[Any]] = []

        def keeping_rows(requests: list[Any], *rest: Any) -> Any:
            given.append(requests)
            return send_plain.plain_rows(requests, *rest)

        handler = front_of(front, plain_rows=keeping_rows)
        requests = [build(V2, 0, 10, [], {}, n) for n in range(1, 4)]
        for request in requests:
            assert seen(handler(front.peer, request), request) == chain_answer(chain, request)
        assert [list(each) for each in given] == [[r] for r in requests]
        assert len({id(each) for each in given}) == 3
    finally:
        close(front.controller, chain.controller)


def test_a_send_inside_a_send_gets_its_own_list_and_reply(tmp_path: Path) -> None:
    """The rows function answers another send through the same front before its own rows are
    made (as a Python fallback could), the front holding a kept list from an earlier send:
    each send's rows are its own request's, and both are answered by the front."""
    front, chain = pair(tmp_path)
    try:
        warm_request = build(V2, 0, 10, [], {}, 1)
        inner_request = build(V2, 0, 10, [], {}, 2)
        outer_request = build(V2, 0, 10, [], {}, 3)
        inner: list[Any] = []
        seen_by_rows: list[list[Any]] = []
        nest = [False]

        def nesting_rows(requests: list[Any], *rest: Any) -> Any:
            seen_by_rows.append(list(requests))
            if nest[0]:
                nest[0] = False
                inner.append(seen(handler(front.peer, inner_request), inner_request))
                seen_by_rows.append(list(requests))  # the outer list after the inner send
            return send_plain.plain_rows(requests, *rest)

        handler = front_of(front, plain_rows=nesting_rows)
        warm = seen(handler(front.peer, warm_request), warm_request)  # a list kept after it
        assert warm == chain_answer(chain, warm_request)
        fell_back = front.fell_back
        nest[0] = True
        outer = seen(handler(front.peer, outer_request), outer_request)
        assert seen_by_rows[1:] == [[outer_request], [inner_request], [outer_request]]
        assert front.fell_back == fell_back  # both answered by the front
        assert inner == [chain_answer(chain, inner_request)]
        assert outer == chain_answer(chain, outer_request)
        assert files(tmp_path / "plain") == files(tmp_path / "reference")
        for n in range(4, 7):  # and the front goes on as before
            request = build(V2, 0, 10, [], {}, n)
            assert seen(handler(front.peer, request), request) == chain_answer(chain, request)
    finally:
        close(front.controller, chain.controller)


@pytest.mark.parametrize("code", [V1, V2])
def test_held_replies_of_both_codes_stay_as_answered(tmp_path: Path, code: int) -> None:
    front, chain = pair(tmp_path)
    try:
        handler = front_of(front)
        request = build(code, 0, 10, [], {}, 1)
        first = handler(front.peer, request)
        first_buffers = [bytes(b) for b in first.buffers]
        later = build(code, 0, 10, [], {}, 2)
        handler(front.peer, later)
        assert [bytes(b) for b in first.buffers] == first_buffers
        assert seen(first, request) == chain_answer(chain, request)
    finally:
        close(front.controller, chain.controller)


def test_a_rebuilt_processor_table_is_read_as_it_is_now(tmp_path: Path) -> None:
    """The front looks the code up with the table's own key object, found once: a table
    rebuilt with other key objects is still read, and an entry replaced there is seen at the
    next send (the request goes the chain's way)."""
    front, chain = pair(tmp_path)
    try:
        server = front.server

        def fresh_keys(table: dict[int, Any]) -> dict[int, Any]:
            return {int(str(code)): entry for code, entry in table.items()}

        for n in range(1, 3):
            request = build(V2, 0, 10, [], {}, n)
            assert seen(front.handler(front.peer, request), request) == chain_answer(chain, request)
        server.processors = fresh_keys(server.processors)
        request = build(V2, 0, 10, [], {}, 3)
        assert seen(front.handler(front.peer, request), request) == chain_answer(chain, request)
        assert front.fell_back == 1  # pair()'s first send only
        table = fresh_keys(server.processors)
        table[V2] = lambda connection, request: chain.handler(connection, request)
        server.processors = table
        request = build(V2, 0, 10, [], {}, 4)
        before = front.fell_back
        front.handler(front.peer, request)  # answered by the replaced entry, through the chain
        assert front.fell_back == before + 1
    finally:
        close(front.controller, chain.controller)
