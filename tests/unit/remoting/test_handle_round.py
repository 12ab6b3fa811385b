"""RemotingServer.handle_round: a selector round's requests (``requests[i]`` from
``connections[i]``) go to the group processor of their code in runs, each run told who sent
each request when its connections differ, anything else to its own processor, in order; a
round of one group processor's requests only is handed over whole."""

from __future__ import annotations

from typing import Any

from remoting.command import RemotingCommand
from remoting.server import RemotingServer

SEND, OTHER = 310, 11


class Conn:
    def __init__(self, name: str) -> None:
        self.name = name


def server(calls: list[tuple[Any, ...]], authorize: Any = None) -> RemotingServer:
    def group(connection: Conn, requests: list[RemotingCommand], connections: Any = None) -> list:
        names = None if connections is None else [c.name for c in connections]
        calls.append(("group", connection.name, [r.opaque for r in requests], names))
        return [f"g{r.opaque}" for r in requests]

    def single(connection: Conn, request: RemotingCommand) -> str:
        calls.append(("single", connection.name, request.opaque))
        return f"s{request.opaque}"

    remoting = RemotingServer("127.0.0.1", 0, authorize=authorize)
    remoting.register_group(SEND, group)
    remoting.register(OTHER, single)
    return remoting


def command(code: int, opaque: int) -> RemotingCommand:
    return RemotingCommand(code=code, opaque=opaque)


def test_a_round_of_sends_is_handed_over_whole_with_its_senders_when_they_differ() -> None:
    a, b = Conn("a"), Conn("b")
    calls: list[tuple[Any, ...]] = []
    remoting = server(calls)
    assert remoting.handle_round([a, b, a], [command(SEND, n) for n in (1, 2, 3)]) == [
        "g1", "g2", "g3"
    ]  # fmt: skip
    assert remoting.handle_round([b, b], [command(SEND, n) for n in (4, 5)]) == ["g4", "g5"]
    assert calls == [("group", "a", [1, 2, 3], ["a", "b", "a"]), ("group", "b", [4, 5], None)]


def test_another_request_splits_the_round_into_runs_in_order() -> None:
    a, b = Conn("a"), Conn("b")
    calls: list[tuple[Any, ...]] = []
    remoting = server(calls)
    codes = (SEND, SEND, OTHER, SEND)
    got = remoting.handle_round([a, a, b, b], [command(c, n) for n, c in enumerate(codes)])
    assert got == ["g0", "g1", "s2", "g3"]
    assert calls == [
        ("group", "a", [0, 1], None),
        ("single", "b", 2),
        ("group", "b", [3], None),
    ]


def test_a_refusal_answers_its_own_request_and_the_rest_run_around_it() -> None:
    """With ACL each request is asked first: a refused one is answered by its refusal."""
    a, b = Conn("a"), Conn("b")
    calls: list[tuple[Any, ...]] = []
    remoting = server(calls, authorize=lambda c, r: "denied" if c.name == "b" else None)
    got = remoting.handle_round([a, b, a], [command(SEND, n) for n in (1, 2, 3)])
    assert got == ["g1", "denied", "g3"]
    assert calls == [("group", "a", [1], None), ("group", "a", [3], None)]
