"""A lock-step client's lone requests served sleep after sleep in one C call
(remoting/native/codec/lone_loop.c serve_lone) against its Python twin
(remoting/lone_loop.py serve_lone_reference, the selector's own loop as pure mode runs it), and
LoneLooks in C against its twin.

The loop is driven by a script over real socket pairs and an epoll, with a fake Trio runner:
each served request's handler sets up what the next sleep finds (another plain request on
either of two plain connections; a request whose handler replies with something else, raises
or closes its connection; bytes that are not a whole request, a closed peer; a socket of a
connection that is not plain, or of none; several sockets at once; Trio busy, its epoll awake,
a deadline due). Several plain sockets at once are a round for a fake round handler, which
replies, answers with something else, raises, or leaves a connection to be looked at (its
in-flight table full, its sender's queue over the mark); a round of which some socket is not
plain, unknown, or brings anything but one whole request is handed back after the reads.
Both must make the same sleeps and flushes, the same handler, round handler and sender calls
in the same order, leave the same LoneLooks, books and bytes, and return the same thing."""

from __future__ import annotations

import heapq
import math
import select
import socket
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remoting.command import EncodedReply
from remoting.frame import Frame, FrameDecoder, encode_frame
from remoting.lone_loop import LoneLooksReference, serve_lone_reference
from tests.kits.nativekit import needs_codec
from tests.unit.remoting.test_answer_lone import (
    HIGH_WATER,
    Connection,
    Log,
    Sender,
    Stop,
    ThreadLike,
)
from tests.unit.remoting.test_answer_lone import _view as _answer_view
from tests.unit.remoting.test_idle_wait import NOW, Clock, Deadlines, Scope
from tests.unit.remoting.test_split_commands import HEADERS, _decoded

pytestmark = [
    pytest.mark.skipif(not hasattr(select, "epoll"), reason="needs select.epoll"),
    needs_codec,
]

REQUEST = encode_frame(0, HEADERS[0], b"b")
# Sockets 0, 1 and 4: plain connections; 2: a connection without a round entry; 3: no
# connection; 5: Trio's epoll.
PLAIN, OTHER, UNKNOWN, THIRD = (0, 1), 2, 3, 4
CONNECTION_SPEC: dict[str, Any] = {
    "closed": False,
    "full": False,
    "handler": "reply",
    "writes": "thread",
    "writes_closed": False,
    "send": 10,
    "paused": False,
}


class Runner:
    def __init__(self) -> None:
        self.runq: list[object] = []
        self.waiting_for_idle: dict[int, object] = {}
        self.clock_autojump_threshold = math.inf
        self.tasks: set[object] = set()
        self.clock = Clock()


class Scripted(Connection):
    """A plain connection whose handler answers as the script's current step says and sets up
    what the next sleep finds."""

    def __init__(self, log: Log, script: Script) -> None:
        super().__init__(CONNECTION_SPEC, log)
        self.script = script

    def _handle(self, connection: Any, command: Any) -> Any:
        outcome = self.script.current_outcome()
        self.log.note("step", self.script.index_of(self), outcome)
        self.script.advance()
        if outcome == "over":  # the sender's queue past the high-water mark: paused
            self._writes._sender._send = HIGH_WATER + 1
            return EncodedReply(0, [b"r"])
        self._writes._sender._send = 10
        self._answer = "reply" if outcome == "reply" else outcome
        return super()._handle(connection, command)


class RoundSender(Sender):
    """The sender every plain connection's writes share, as the server's does."""

    def __init__(self, log: Log) -> None:
        super().__init__(log, 10)
        self.each: list[Any] = []

    def send_each(self, handles: list[int], frames: list[bytes]) -> list[Any]:
        self.log.note("send_each", list(handles), list(frames))
        return [self.each.pop(0) if self.each else 10 for _ in handles]


class Script:
    def __init__(self, steps: list[tuple[Any, ...]]) -> None:
        self.steps, self.at = steps, -1
        self.log = Log()
        self.pairs = [socket.socketpair() for _ in range(6)]  # the last: Trio's epoll
        self.epoll = select.epoll()
        for ours, _ in self.pairs:
            ours.setblocking(False)
            self.epoll.register(ours.fileno(), select.EPOLLIN)
        self.runner = Runner()
        self.deadlines = Deadlines([(NOW + 0.05, 0, Scope(NOW + 0.05))])
        self.connections: dict[int, Any] = {}
        self.plain: dict[int, Any] = {}
        self.sender = RoundSender(self.log)
        for i in (*PLAIN, OTHER, THIRD):
            fd = self.pairs[i][0].fileno()
            connection = self.connections[fd] = Scripted(self.log, self)
            connection._writes._handle = i
            if i != OTHER:
                connection._writes._sender = self.sender
                self.plain[fd] = (connection, FrameDecoder(), 16 << 20)

    def round_handler(self, owners: list[Any], staged: list[Any]) -> Any:
        """The server's round handler as the script's current step says, setting up what the
        next sleep finds."""
        outcome = self.steps[self.at][2] if self.steps[self.at][0] == "round" else "reply"
        self.log.note("round", [self.index_of(c) for c in owners], [_decoded(r) for r in staged])
        self.advance()
        if outcome == "raise":
            raise ValueError("round handler failed")
        if outcome == "stop":
            raise Stop()
        if outcome == "empties":  # a handler that takes the round's lists (a bug)
            owners.clear()
            staged.clear()
            return []
        if outcome == "command":
            return [b"r"] * (len(owners) - 1) + [None]
        if outcome == "full":
            owners[-1]._in_flight.full = True
        elif outcome == "over":
            self.sender.each = [10, HIGH_WATER + 1]
        return [b"reply %d" % i for i in range(len(owners))]

    def index_of(self, connection: Any) -> int:
        return next(i for i, (ours, _) in enumerate(self.pairs)
                    if self.connections.get(ours.fileno()) is connection)  # fmt: skip

    def current_outcome(self) -> str:
        return self.steps[self.at][2] if self.steps[self.at][0] == "one" else "reply"

    def advance(self) -> None:
        """What the next sleep finds."""
        self.at += 1
        if self.at >= len(self.steps):
            self.runner.runq.append(object())  # the script's end: Trio busy
            return
        step = self.steps[self.at]
        if step[0] == "one":
            self._feed(step[1], step[2])
        elif step[0] == "several":
            for i in step[1]:
                self._feed(i, "reply")
        elif step[0] == "round":
            *others, last = step[1]
            for i in others:
                self._feed(i, "reply")
            self._feed(last, step[2] if step[2] in _READS else "reply")
        elif step[1] == "runq":
            self.runner.runq.append(object())
        elif step[1] == "trio":
            self.pairs[-1][1].send(b"x")
        else:  # a deadline due
            heapq.heappush(self.deadlines._heap, (NOW - 1.0, 1, Scope(NOW - 1.0)))

    def _feed(self, i: int, outcome: str) -> None:
        theirs = self.pairs[i][1]
        if outcome == "eof":
            theirs.shutdown(socket.SHUT_WR)
        elif outcome == "garbage":
            theirs.send(b"\x00\x00\x00\x02zz")
        elif outcome == "partial":
            theirs.send(REQUEST[:7])
        else:
            theirs.send(REQUEST)

    def flush(self) -> None:
        self.log.note("flush")

    def close(self) -> None:
        self.epoll.close()
        for ours, theirs in self.pairs:
            ours.close()
            theirs.close()

    def view(self, got: Any) -> Any:
        fds = [ours.fileno() for ours, _ in self.pairs]
        if got is None or type(got) is bool or got is ...:
            return got
        if type(got) is list:
            return ("several", sorted(fds.index(fd) for fd, _ in got))
        if len(got) == 1:
            return ("fd", fds.index(got[0]))
        if len(got) == 4:
            return self._round_view(got)
        which = self.index_of(got[0])
        if len(got) == 3:
            return ("raised", which, got[1], type(got[2]).__name__, str(got[2]))
        return ("answer", which, _answer_view(got[1]))

    def _round_view(self, got: Any) -> Any:
        step, owners, staged, what = got
        if step == 0:
            what = [(self.index_of(c), _value_view(read)) for c, read in what]
        elif step == 1:
            what = [_value_view(result) for result in what]
        else:
            what = [(i, _value_view(answer)) for i, answer in what]
        owned = [self.index_of(c) for c in owners]
        return ("round", step, owned, [_decoded(r) for r in staged], what)

    def left(self) -> list[Any]:
        out = []
        for ours, _ in self.pairs:
            try:
                out.append(ours.recv(1 << 16))
            except BlockingIOError:
                out.append("nothing")
        return out


# A round's outcomes that are what its last socket's read brings (the rest of the round's
# reads are whole requests).
_READS = ("eof", "garbage", "partial")


def _value_view(value: Any) -> Any:
    if isinstance(value, BaseException):
        return (type(value).__name__, str(value))
    if value is ... or value is None or type(value) in (bytes, int):
        return value
    return _decoded(value)


def _run(serve: Any, looks: Any, spec: dict[str, Any]) -> Any:
    script = Script(spec["steps"])
    try:
        looks.share, looks.since_probe = spec["share"], spec["since_probe"]
        state = (script.runner, script.deadlines, None, script.epoll, script.epoll.fileno(),
                 script.pairs[-1][0].fileno(), None)  # fmt: skip
        flush = script.flush if spec["flush"] else None
        kinds = (Frame, EncodedReply, ThreadLike, HIGH_WATER)
        script.advance()
        try:
            handler = script.round_handler if spec["rounds"] else None
            got = script.view(serve(looks, state, script.connections, script.plain, kinds,
                                    flush, spec["resumed"], spec["lone_look"], handler))  # fmt: skip
        except Stop:
            got = "Stop raised"
        books = [
            (c._ios, c._in_read_batch, c.closed, c._writes.queued, c._writes.paused)
            for c in script.connections.values()
        ]
        heap = [(d, i) for d, i, _ in script.deadlines._heap]
        return got, list(script.log), (looks.share, looks.since_probe), books, heap, script.left()
    finally:
        script.close()


# Rounds of plain connections only, each with one whole request.
ROUNDS = [(0, 1), (1, 0), (0, 4), (0, 1, 4), (4, 1)]
served = st.one_of(
    st.tuples(st.just("one"), st.sampled_from(PLAIN), st.just("reply")),
    st.tuples(st.just("round"), st.sampled_from(ROUNDS), st.just("reply")),
)
ending = st.one_of(
    st.tuples(
        st.just("one"),
        st.sampled_from(PLAIN),
        st.sampled_from(
            ["command", "nothing", "raise", "close", "stop", "over", "eof", "garbage", "partial"]
        ),
    ),
    st.tuples(st.just("one"), st.sampled_from([OTHER, UNKNOWN]), st.just("reply")),
    st.tuples(st.just("several"), st.sampled_from([(0, 1), (0, 2), (1, 3), (0, 1, 2), (3, 4)])),
    st.tuples(
        st.just("round"),
        st.sampled_from(ROUNDS),
        st.sampled_from(["raise", "stop", "command", "full", "over", "empties", *_READS]),
    ),
    st.tuples(st.just("decline"), st.sampled_from(["runq", "trio", "deadline"])),
)
specs = st.fixed_dictionaries(
    {
        "steps": st.tuples(st.lists(served, max_size=40), ending).map(lambda t: [*t[0], t[1]]),
        "share": st.sampled_from([1024, 512, 40, 32, 31, 8, 0]),
        "since_probe": st.integers(0, 15),
        "resumed": st.booleans(),
        "lone_look": st.booleans(),
        "flush": st.booleans(),
        "rounds": st.sampled_from([True, True, True, False]),
    }
)


@given(spec=specs)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_serve_lone_matches_its_twin(spec: dict[str, Any]) -> None:
    from remoting.codec_native import native

    assert native is not None
    ours = _run(native.serve_lone, native.LoneLooks(), spec)
    twin = _run(serve_lone_reference, LoneLooksReference(), spec)
    assert ours == twin


def test_serve_lone_serves_a_run_of_lone_requests_then_hands_back() -> None:
    """The case it is for: plain requests one after another, each answered through the sender,
    without coming back; then Trio wanting the loop: True (look again) or False."""
    from remoting.codec_native import native

    assert native is not None
    steps = [("one", 0, "reply"), ("one", 1, "reply"), ("one", 0, "reply"), ("decline", "runq")]
    spec = {"steps": steps, "share": 0, "since_probe": 0, "resumed": True, "lone_look": False,
            "flush": True, "rounds": True}  # fmt: skip
    got, log, looks, books, _, left = _run(native.serve_lone, native.LoneLooks(), spec)
    assert got is False  # looks do not pay: no look after the last lone read
    assert [entry[0] for entry in log].count("handler") == 3
    assert [entry[0] for entry in log].count("flush") == 3  # before each sleep that waited
    assert looks == (0, 3)
    assert books[0][0] == 2 and books[1][0] == 1
    assert left == ["nothing"] * 6


def test_serve_lone_serves_rounds_of_plain_connections_then_hands_back() -> None:
    """A sleep naming several plain connections, each with one whole request: one call to the
    round handler with them all, one to the sender with their replies, and on to the next
    sleep; a lone request after it; then Trio wanting the loop."""
    from remoting.codec_native import native

    assert native is not None
    steps = [("round", (0, 1, 4), "reply"), ("one", 0, "reply"), ("round", (1, 4), "reply"),
             ("decline", "runq")]  # fmt: skip
    spec = {"steps": steps, "share": 0, "since_probe": 0, "resumed": True, "lone_look": True,
            "flush": True, "rounds": True}  # fmt: skip
    got, log, looks, books, _, left = _run(native.serve_lone, native.LoneLooks(), spec)
    assert got is ...  # a round last: the selector looks again, not as after a lone read
    kinds = [entry[0] for entry in log]
    assert kinds.count("round") == 2 and kinds.count("send_each") == 2
    assert kinds.count("handler") == 1
    assert [entry[1] for entry in log if entry[0] == "send_each"] == [[0, 1, 4], [1, 4]]
    assert looks == (0, 1)  # one look counted, after the lone request only
    assert [b[0] for b in books] == [2, 2, 0, 2]
    assert left == ["nothing"] * 6


@pytest.mark.parametrize(
    "args",
    [
        (),
        (object(), None, {}, {}, (), None, False, False, None),
        ("looks", None, {}, {}, (), None, False, False, None),
        (None, None, [], {}, (), None, False, False, None),
        (None, None, {}, [], (), None, False, False, None),
        (None, None, {}, {}, [], None, False, False, None),
        (None, None, {}, {}, (Frame,), None, False, False, None),
        (None, None, {}, {}, (), None, False, False),
    ],
)
def test_serve_lone_refuses_bad_arguments_before_sleeping(args: tuple[Any, ...]) -> None:
    from remoting.codec_native import native

    assert native is not None
    if len(args) >= 8 and args[0] is None:
        args = (native.LoneLooks(), *args[1:])
    with pytest.raises(TypeError):
        native.serve_lone(*args)


looks_steps = st.lists(st.one_of(st.just("again"), st.just("paying"), st.booleans()), max_size=80)


@given(steps=looks_steps, share=st.integers(-2000, 2000), since=st.integers(-5, 40))
@settings(max_examples=300, deadline=None)
def test_lone_looks_match_their_twin(steps: list[Any], share: int, since: int) -> None:
    from remoting.codec_native import native

    assert native is not None
    answers = []
    for looks in (native.LoneLooks(), LoneLooksReference()):
        looks.share, looks.since_probe = share, since
        seen = []
        for step in steps:
            if step == "again":
                seen.append(looks.look_again())
            elif step == "paying":
                seen.append(looks.paying())
            else:
                seen.append(looks.looked(step))
        answers.append((seen, looks.share, looks.since_probe))
    assert answers[0] == answers[1]
    assert native.LoneLooks.PROBE_EVERY == LoneLooksReference.PROBE_EVERY
    assert (native.LoneLooks().share, native.LoneLooks().since_probe) == (1024, 0)
