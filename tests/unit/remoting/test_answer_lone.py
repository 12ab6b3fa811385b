"""A lone request's read, handler call and reply in one C call (remoting/native/codec/lone.c
answer_lone) against its Python twin (remoting/receive.py answer_lone_reference, what pure
mode runs). Over socket pairs carrying any stream the split tests use (plain sends and pulls
the scan takes, their mutations, responses, oneway requests, several frames, a partial one,
garbage, nothing, a closed peer), connections open or closed, decoders empty or holding bytes,
handlers returning an encoded reply, a command, nothing, raising, or closing the connection,
and writes of the sender's kind (sending, paused, over the high-water mark, failing,
closed) or another: the same answer, the same calls on the connection, its writes and the
sender, and the same bytes left on the socket."""

from __future__ import annotations

import os
import socket
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from remoting import receive
from remoting.command import EncodedReply, RemotingCommand
from remoting.frame import Frame, FrameDecoder, encode_frame
from tests.kits.nativekit import needs_codec
from tests.unit.remoting.test_split_commands import HEADERS, _decoded, frames, streams

pytestmark = needs_codec

HIGH_WATER = 1000


class Stop(BaseException):
    """A handler's error that is not an Exception (as KeyboardInterrupt is)."""


class Log(list[Any]):
    def note(self, *what: Any) -> None:
        self.append(what)


class Sender:
    def __init__(self, log: Log, send: Any) -> None:
        self.log, self._send = log, send

    def send(self, handle: int, buffers: Any) -> int:
        self.log.note("send", handle, list(buffers))
        if isinstance(self._send, BaseException):
            raise self._send
        return self._send  # type: ignore[no-any-return]

    def write_now(self, handle: int) -> bool:
        self.log.note("write_now", handle)
        return True


class ThreadLike:
    """What answer_lone reads and calls on the sender's writes (kinds' writes type)."""

    def __init__(self, log: Log, spec: dict[str, Any]) -> None:
        self.log = log
        self._closed = spec["writes_closed"]
        self._sender = Sender(log, spec["send"])
        self._handle = 7
        self.queued = 0
        self.paused = spec["paused"]

    def _pause(self) -> None:
        self.log.note("pause")
        self.paused = True

    def _sent(self, exc: Exception) -> None:
        self.log.note("sent", type(exc).__name__)

    def answer(self, buffers: Any) -> bool:
        self.log.note("answer", list(buffers))
        return True

    def flush(self) -> bool:
        self.log.note("flush")
        return True


class LoopLike(ThreadLike):
    """Writes of another kind: only ``answer``."""


class InFlight:
    def __init__(self, full: bool) -> None:
        self.full = full


class Connection:
    def __init__(self, spec: dict[str, Any], log: Log) -> None:
        self.closed = spec["closed"]
        self._ios = 0
        self._in_read_batch = False
        self._in_flight = InFlight(spec["full"])
        kind = ThreadLike if spec["writes"] == "thread" else LoopLike
        self._writes = kind(log, spec)
        self.log = log
        self.request_handler = None if spec["handler"] == "none" else self._handle
        self._answer = spec["handler"]

    def _handle(self, connection: Any, command: Any) -> Any:
        self.log.note("handler", _decoded(command), connection is self)
        answer = self._answer
        if answer == "reply":
            return EncodedReply(0, [b"head", b"body"])
        if answer == "close":
            self.closed = True
            return EncodedReply(0, [b"head"])
        if answer == "command":
            return RemotingCommand(code=0)
        if answer == "raise":
            raise ValueError("handler failed")
        if answer == "stop":
            raise Stop()
        return None

    def _keep_reading(self) -> bool:
        self.log.note("keep_reading")
        return False


# Whole requests the scan takes, as a lone client sends them (each the common case once
# scanned), with any body.
plain = st.builds(
    lambda h, b: encode_frame(0, h, b), st.sampled_from(HEADERS), st.binary(max_size=40)
)
rarely = st.sampled_from([False] * 7 + [True])
specs = st.fixed_dictionaries(
    {
        "data": st.sampled_from([plain] * 7 + [st.just(b""), streams, frames]).flatmap(
            lambda strategy: strategy
        ),
        "eof": rarely,
        "closed": rarely,
        "holding": rarely,
        "max_frame": st.sampled_from([16 << 20, 16 << 20, 512, 64]),
        "handler": st.sampled_from(
            ["reply", "reply", "reply", "close", "command", "nothing", "raise", "stop", "none"]
        ),
        "writes": st.sampled_from(["thread", "thread", "thread", "loop"]),
        "writes_closed": st.sampled_from([False, False, False, True]),
        "send": st.sampled_from(
            [
                10,
                10,
                10,
                HIGH_WATER + 1,
                OSError(32, "pipe"),
                RuntimeError("stopped"),
                ValueError("bug"),
            ]
        ),
        "paused": st.sampled_from([False, False, False, True]),
        "full": st.sampled_from([False, False, False, True]),
    }
)


def _view(answer: Any) -> Any:
    if answer is True or answer is False or answer is ...:
        return answer
    if len(answer) == 1:
        got = answer[0]
        if isinstance(got, BaseException):
            return ("read raised", type(got).__name__, getattr(got, "errno", None))
        return ("read", got if type(got) is bytes or got is None else _decoded(got))
    command, result, exc = answer
    return (
        "answered",
        _decoded(command),
        type(result).__name__,
        None if exc is None else (type(exc).__name__, str(exc)),
    )


def _run(wait: Any, spec: dict[str, Any]) -> Any:
    reader, writer = socket.socketpair()
    with reader, writer:
        return _run_on(wait, spec, reader, writer)


def _run_on(wait: Any, spec: dict[str, Any], reader: socket.socket, writer: socket.socket) -> Any:
    reader.setblocking(False)
    if spec["data"]:
        writer.sendall(spec["data"])
    if spec["eof"]:
        writer.shutdown(socket.SHUT_WR)
    log = Log()
    connection = Connection(spec, log)
    decoder = FrameDecoder(spec["max_frame"])
    if spec["holding"]:
        decoder.receive_data(b"\x00\x00")
    entry = (connection, decoder, spec["max_frame"])
    kinds = (Frame, EncodedReply, ThreadLike, HIGH_WATER)
    try:
        answer = _view(wait(entry, reader.fileno(), kinds))
    except (Stop, ValueError) as exc:
        answer = ("raised", type(exc).__name__, str(exc))
    try:
        left = reader.recv(1 << 17)
    except BlockingIOError:
        left = "nothing"
    writes = connection._writes
    state = (connection._ios, connection._in_read_batch, connection.closed)
    return answer, list(log), state, (writes.queued, writes.paused), left


# The case it is for: one scanned request whose handler replies, a thread sender taking it.
PLAIN_REQUEST: dict[str, Any] = {
    "data": encode_frame(0, HEADERS[0], b"b"),
    "eof": False,
    "closed": False,
    "holding": False,
    "max_frame": 16 << 20,
    "handler": "reply",
    "writes": "thread",
    "writes_closed": False,
    "send": 10,
    "paused": False,
    "full": False,
}


@given(spec=specs)
@settings(
    max_examples=int(os.environ.get("ANSWER_LONE_EXAMPLES", "400")),
    suppress_health_check=[HealthCheck.too_slow],
    deadline=None,
)
@example(spec=PLAIN_REQUEST)
def test_answer_lone_matches_its_twin(spec: dict[str, Any]) -> None:
    native = receive.native
    assert native is not None
    assert _run(native.answer_lone, spec) == _run(receive.answer_lone_reference, spec)


def test_a_plain_request_is_answered_through_the_sender() -> None:
    """The case it is for: a scanned request, its handler's encoded reply handed to the
    sender and written, the read batch ended, True."""
    native = receive.native
    assert native is not None
    answer, log, state, books, left = _run(native.answer_lone, PLAIN_REQUEST)
    assert answer is True
    assert [entry[0] for entry in log] == ["handler", "send", "write_now"]
    assert log[1] == ("send", 7, [b"head", b"body"])
    assert state == (1, False, False) and books == (10, False) and left == "nothing"


@pytest.mark.parametrize(
    "args",
    [
        (),
        ((None, None, 1), 3),
        ([None, None, 1], 3, (Frame, EncodedReply, object, 1)),
        ((None, None), 3, (Frame, EncodedReply, object, 1)),
        ((None, None, 1), "3", (Frame, EncodedReply, object, 1)),
        ((None, None, 1), 3, (Frame, EncodedReply, object)),
        ((None, None, 1), 3, (bytes, EncodedReply, object, 1)),
        ((None, None, 1), 3, (Frame, None, object, 1)),
        ((None, None, 1), 3, (Frame, EncodedReply, object, 1.0)),
        ((None, None, 1), -1, (Frame, EncodedReply, object, 1)),
        ((None, None, 1), 2**40, (Frame, EncodedReply, object, 1)),
        ((None, None, -1), 3, (Frame, EncodedReply, object, 1)),
        ((None, None, 2**70), 3, (Frame, EncodedReply, object, 1)),
        ((None, None, "1"), 3, (Frame, EncodedReply, object, 1)),
    ],
)
def test_answer_lone_refuses_bad_arguments_before_reading(args: tuple[Any, ...]) -> None:
    native = receive.native
    assert native is not None
    with pytest.raises((TypeError, ValueError, OverflowError)):
        native.answer_lone(*args)
