"""A selector round's reads in one C call (remoting/native/codec/round.c recv_round) against
its Python twin (remoting/receive.py recv_round_reference, what pure mode runs). Over socket
pairs, rounds of connections in any state (a lone plain request, a response, several frames,
a partial one, garbage, nothing there, a closed peer, a closed or paused connection, a decoder
holding a partial frame, a connection the selector does not list as plain or lists wrongly, a
dead descriptor): the same requests staged with the same bookkeeping, the same connections
handed to their own path with the same reads, in the same order, and the same refusal of
hostile arguments with nothing read."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from remoting import receive
from remoting.command import RemotingCommand, encode_command_bytes
from remoting.frame import Frame, FrameDecoder, encode_frame
from tests.kits.nativekit import needs_codec
from tests.unit.remoting.test_split_commands import HEADERS, _decoded, frames, snapshot, streams

pytestmark = needs_codec

RESPONSE = RemotingCommand.request(310, {"a": "G", "b": "T"}, b"x")
RESPONSE.flag = 1


class FakeConnection:
    """What recv_round reads and sets on a connection."""

    def __init__(self, closed: bool) -> None:
        self.closed = closed
        self._ios = 0
        self._in_read_batch = False


class Exploding:
    """A connection whose ``closed`` cannot be read: it goes to its own path, unread."""

    @property
    def closed(self) -> bool:
        raise RuntimeError("no")


def _native_round(*args: Any) -> Any:
    native = receive.native
    assert native is not None
    return native.recv_round(*args)


# A connection of a round: what its peer wrote, whether the peer then closed, whether the
# connection is closed, whether its decoder holds a partial frame, how the selector lists it.
conn_states = st.fixed_dictionaries(
    {
        "data": st.one_of(st.just(b""), streams, frames),
        "eof": st.booleans(),
        "closed": st.booleans(),
        "holding": st.booleans(),
        "listing": st.sampled_from(["plain", "plain", "plain", "absent", "other", "shape", "max"]),
        "max_frame": st.sampled_from([16 << 20, 512, 64]),
    }
)


@pytest.fixture
def made() -> Iterator[list[Any]]:
    items: list[Any] = []
    yield items
    for item in items:
        item.close()


def _setup(states: list[dict[str, Any]], made: list[Any]) -> tuple[list[Any], ...]:
    """One side of the comparison: the round's events, connections, plain entries and fakes."""
    events, connections, plain, fakes = [], {}, {}, []
    for state in states:
        reader, writer = socket.socketpair()
        made += [reader, writer]
        reader.setblocking(False)
        if state["data"]:
            writer.sendall(state["data"])
        if state["eof"]:
            writer.shutdown(socket.SHUT_WR)
        fake = FakeConnection(state["closed"])
        decoder = FrameDecoder(state["max_frame"])
        if state["holding"]:
            decoder.receive_data(b"\x00\x00")
        fd = reader.fileno()
        connections[fd] = fake
        listing = state["listing"]
        if listing == "plain":
            plain[fd] = (fake, decoder, state["max_frame"])
        elif listing == "other":
            plain[fd] = (FakeConnection(False), decoder, state["max_frame"])
        elif listing == "shape":
            plain[fd] = [fake, decoder, state["max_frame"]]
        elif listing == "max":
            plain[fd] = (fake, decoder, 2**70)
        events.append((fd, 1))
        fakes.append((fake, reader))
    return events, connections, plain, fakes


def _view(got: Any) -> Any:
    if got is ...:
        return "unread"
    if isinstance(got, BaseException):
        return ("raised", type(got).__name__, getattr(got, "errno", None))
    if type(got) is bytes or got is None:
        return ("read", got)
    return ("whole", _decoded(got))


def _outcome(result: Any, fakes: list[Any]) -> Any:
    """Per connection, in the events' order: what its read came to, and its I/O count and
    read-batch mark once its own path (``stage_got``) has taken a whole frame the round left
    to it. The C scans a JSON header in the read (its command) where the Python has the Frame
    to decode (remoting/receive.py recv_command_reference): both come to the same command, the
    C's staged at once when it is a request, the Python's staged by ``stage_got``."""
    owners, staged, rest = result
    index = {id(fake): i for i, (fake, _) in enumerate(fakes)}
    views: dict[int, Any] = {}
    books = [[fake._ios, fake._in_read_batch] for fake, _ in fakes]
    for connection, request in zip(owners, staged, strict=True):
        assert not request.flag & 1
        views[index[id(connection)]] = ("staged", ("whole", snapshot(request)))
    for connection, got in rest:
        i = index[id(connection)]
        assert i not in views
        view = _view(got)
        if view[0] == "whole":
            books[i] = [books[i][0] + 1, True]  # stage_got's, for a whole frame
            decoded = view[1]
            if isinstance(decoded, tuple) and decoded[0] != "refused" and not decoded[5] & 1:
                view = ("staged", view)  # the request stage_got returns for the round
        views[i] = view
    leftovers = []
    for _, reader in fakes:
        try:
            leftovers.append(reader.recv(1 << 20))
        except BlockingIOError:
            leftovers.append(b"")
    return [views.get(i, "skipped") for i in range(len(fakes))], books, leftovers


@given(states=st.lists(conn_states, min_size=1, max_size=5))
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@example(states=[{"data": encode_frame(0, HEADERS[0], b"b"), "eof": False, "closed": False,
                  "holding": False, "listing": "plain", "max_frame": 16 << 20}] * 3)  # fmt: skip
@example(states=[{"data": encode_command_bytes(RESPONSE), "eof": False, "closed": False,
                  "holding": False, "listing": "plain", "max_frame": 16 << 20}])  # fmt: skip
@example(states=[{"data": b"", "eof": True, "closed": False,
                  "holding": False, "listing": "plain", "max_frame": 16 << 20}])  # fmt: skip
def test_a_round_is_read_as_the_python_reads_it(
    made: list[Any], states: list[dict[str, Any]]
) -> None:
    c_side = _setup(states, made)
    py_side = _setup(states, made)
    c_result = _native_round(*c_side[:3], Frame)
    got = _outcome(c_result, c_side[3])
    want = _outcome(receive.recv_round_reference(*py_side[:3], Frame), py_side[3])
    assert got == want
    # The C staged only open plain connections' lone requests (scanned in the same call)
    for connection in c_result[0]:
        i = [fake for fake, _ in c_side[3]].index(connection)
        state = states[i]
        assert state["listing"] == "plain" and not state["closed"] and not state["holding"]
        assert (connection._ios, connection._in_read_batch) == (1, True)
    assert all(type(r).__name__ == "ScannedCommand" for r in c_result[1])
    for connection, got_read in c_result[2]:
        if got_read is ... or not isinstance(got_read, (Frame, RemotingCommand)):
            assert (connection._ios, connection._in_read_batch) == (0, False)


def test_dead_descriptors_and_connections_that_raise_go_to_their_own_path(
    made: list[Any],
) -> None:
    read_end, write_end = os.pipe()
    made += [_Fd(read_end), _Fd(write_end)]
    os.write(write_end, encode_frame(0, HEADERS[0], b"b"))
    exploding, fake, missing = Exploding(), FakeConnection(False), FakeConnection(False)
    decoder = FrameDecoder()
    unopened = 1 << 20  # above any descriptor this process holds
    for run in (_native_round, receive.recv_round_reference):
        events = [(read_end, 1), (unopened, 1), (7_000_000, 1), (unopened - 1, 1)]
        connections = {read_end: fake, unopened: fake, unopened - 1: exploding}
        plain = {
            read_end: (fake, decoder, 1 << 20),
            unopened: (fake, decoder, 1 << 20),
            unopened - 1: (exploding, decoder, 1 << 20),
        }
        owners, staged, rest = run(events, connections, plain, Frame)
        assert (owners, staged) == ([], [])
        assert [(c, _view(g)) for c, g in rest] == [
            (fake, ("raised", "OSError", 88)),  # ENOTSOCK: a pipe
            (fake, ("raised", "OSError", 9)),  # EBADF
            (exploding, "unread"),
        ]
    assert missing._ios == 0


class Meddling(FakeConnection):
    """A connection whose ``closed`` empties the round's lists and tables when read."""

    def __init__(self, round_args: tuple[Any, ...]) -> None:
        super().__init__(False)
        self.round_args = round_args

    @property  # type: ignore[override]
    def closed(self) -> bool:
        events, connections, plain = self.round_args
        events.clear()
        connections.clear()
        plain.clear()
        return False

    @closed.setter
    def closed(self, value: bool) -> None:
        pass


def test_a_connection_that_changes_the_round_under_it_changes_only_what_is_left(
    made: list[Any],
) -> None:
    """Code a connection runs while the round is read (its attributes) may empty the events
    and the tables: the events are walked as they were, the connections looked up as the
    tables are now (the others, gone, are skipped), and nothing breaks."""
    outcomes: list[Any] = []
    for run in (_native_round, receive.recv_round_reference):
        socks = [socket.socketpair() for _ in range(3)]
        for reader, writer in socks:
            made += [reader, writer]
            reader.setblocking(False)
            writer.sendall(encode_frame(0, HEADERS[0], b"b"))
        events: list[Any] = [(reader.fileno(), 1) for reader, _ in socks]
        connections: dict[int, Any] = {}
        plain: dict[int, Any] = {}
        meddling = Meddling((events, connections, plain))
        for index, (reader, _) in enumerate(socks):
            fake = meddling if index == 0 else FakeConnection(False)
            connections[reader.fileno()] = fake
            plain[reader.fileno()] = (fake, FrameDecoder(), 1 << 20)
        owners, _, rest = run(events, connections, plain, Frame)
        outcomes.append((owners == [meddling], [(c is meddling, _view(g)) for c, g in rest]))
    # The C staged the scanned request; the twin, which has no scan, handed its Frame back for
    # stage_got. Either way only that connection was read: the others were gone.
    assert outcomes[0] == (True, [])
    assert outcomes[1][0] is False
    assert [(mine, view[0]) for mine, view in outcomes[1][1]] == [(True, "whole")]


class _Fd:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def close(self) -> None:
        os.close(self.fd)


@pytest.mark.parametrize(
    "args",
    [
        ("not a list", {}, {}, Frame),
        ([(0, 1)], [], {}, Frame),
        ([(0, 1)], {}, None, Frame),
        ([(0, 1)], {}, {}, dict),
        ([(0, 1)], {}, {}, "Frame"),
        ([[0, 1]], {}, {}, Frame),
        ([()], {}, {}, Frame),
        ([("0", 1)], {}, {}, Frame),
        ([(2**31, 1)], {}, {}, Frame),
        ([(-2, 1)], {}, {}, Frame),
        ([(2**80, 1)], {}, {}, Frame),
    ],
)
def test_hostile_arguments_are_refused_alike_and_nothing_is_read(
    made: list[Any], args: tuple[Any, ...]
) -> None:
    reader, writer = socket.socketpair()
    made += [reader, writer]
    reader.setblocking(False)
    writer.sendall(encode_frame(0, HEADERS[0], b"b"))
    fake = FakeConnection(False)
    fd = reader.fileno()
    events, connections, plain, frame_type = args
    if isinstance(events, list) and events and events[0] == (0, 1):
        events = [(fd, 1), *events]  # a good event first: still nothing is read
    if isinstance(connections, dict):
        connections = {fd: fake}
    if isinstance(plain, dict):
        plain = {fd: (fake, FrameDecoder(), 1 << 20)}
    errors = []
    for run in (_native_round, receive.recv_round_reference):
        with pytest.raises((TypeError, ValueError)) as caught:
            run(events, connections, plain, frame_type)
        errors.append(caught.type)
    assert errors[0] is errors[1]
    assert fake._ios == 0
    assert reader.recv(1 << 16) == encode_frame(0, HEADERS[0], b"b")
