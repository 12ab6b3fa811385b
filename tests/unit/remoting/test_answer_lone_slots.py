"""answer_lone on the real objects it reads (remoting/native/codec/lone.c): a Connection, its
ThreadWrites and the server's OutboundSender keep what it reads in ``__slots__``, read at their
offsets while the type's own lookup names the slot (remoting/native/slots.h). Against its twin
(remoting/receive.py answer_lone_reference) on the same requests: the plain case, and every
way the generic path must be taken instead, a subclass putting a property where a slot was
(before or after the C cached the slot's place), a sender or its ``send`` replaced, writes of
a subclass. The same answer, the same calls, the same books and the same bytes at the peer.
A round's reads and finish (round.c, finish.c) read the same slots: finish_plain_round on real
connections against its twin too."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
import trio

from remoting import receive
from remoting.command import EncodedReply
from remoting.connection import Connection
from remoting.frame import encode_frame
from remoting.selector import _LONE_KINDS
from remoting.sender import OutboundSender
from remoting.writes import ThreadWrites
from tests.kits.nativekit import needs_codec, needs_sender
from tests.unit.remoting.test_split_commands import HEADERS

REQUEST = encode_frame(0, HEADERS[0], b"body")
REPLY = [b"reply-head", b"reply-body"]


class Counted(Connection):
    """``closed`` and ``request_handler`` as properties over the slots, counting reads."""

    reads = 0

    @property  # type: ignore[override]
    def closed(self) -> bool:
        Counted.reads += 1
        return Connection.closed.__get__(self)  # type: ignore[attr-defined,no-any-return]

    @closed.setter
    def closed(self, value: bool) -> None:
        Connection.closed.__set__(self, value)  # type: ignore[attr-defined]


class Plain(Connection):
    """A subclass that changes nothing (the slots' places are found through it)."""


class OwnWrites(ThreadWrites):
    """Writes of a subclass: not the kinds' ThreadWrites, so ``answer`` is called."""


class Recording:
    """A sender in the OutboundSender's place: what answer_lone calls on it, in order."""

    def __init__(self, log: list[Any], real: OutboundSender) -> None:
        self.log, self.real = log, real

    def send(self, handle: int, buffers: Any) -> int:
        self.log.append(("send", list(buffers)))
        return self.real.send(handle, buffers)  # type: ignore[no-any-return]

    def write_now(self, handle: int) -> bool:
        self.log.append(("write_now",))
        return self.real.write_now(handle)  # type: ignore[no-any-return]


Setup = Callable[[Connection, list[Any]], None]


def _replace_sender(connection: Connection, log: list[Any]) -> None:
    writes = connection._writes
    writes._sender = Recording(log, writes._sender)  # type: ignore[union-attr]


def _replace_send(connection: Connection, log: list[Any]) -> None:
    sender = connection._writes._sender  # type: ignore[union-attr]
    real = sender.send

    def send(handle: int, buffers: Any) -> int:
        log.append(("send", list(buffers)))
        return real(handle, buffers)  # type: ignore[no-any-return]

    sender.send = send


def _own_writes(connection: Connection, log: list[Any]) -> None:
    writes = connection._writes
    own = OwnWrites.__new__(OwnWrites)
    for name in ("_closed", "_handle", "_sender", "paused", "queued"):
        setattr(own, name, getattr(writes, name))
    own.__dict__.update(writes.__dict__)
    connection._writes = own


def _high_water(connection: Connection, log: list[Any]) -> None:
    connection._writes.queued = 0  # type: ignore[union-attr]
    connection._in_flight.full = True


def _closing_handler(connection: Connection, log: list[Any]) -> None:
    def handler(conn: Connection, command: Any) -> EncodedReply:
        log.append(("handler",))
        conn.closed = True
        return EncodedReply(0, list(REPLY))

    connection.request_handler = handler


async def _answer(
    function: Any, cls: type[Connection], setup: Setup | None, sender: OutboundSender
) -> tuple[Any, ...]:
    ours, peer = socket.socketpair()
    with peer:
        connection = cls(trio.SocketStream(trio.socket.from_stdlib_socket(ours)), sender=sender)
        log: list[Any] = []

        def handler(conn: Connection, command: Any) -> EncodedReply:
            log.append(("handler", conn is connection, command.code))
            return EncodedReply(0, list(REPLY))

        def keep() -> bool:  # the connection's own waits for its nursery: not run here
            log.append(("keep_reading",))
            return False

        connection.request_handler = handler
        connection._keep_reading = keep  # type: ignore[method-assign]
        send = sender.send
        if setup is not None:
            setup(connection, log)
        peer.sendall(REQUEST)
        entry = (connection, connection._decoder, 16 << 20)
        answer = function(entry, connection.fileno(), _LONE_KINDS)
        sender.kick()
        writes = connection._writes
        books = (connection._ios, connection._in_read_batch, connection.closed)
        books += (writes.queued, writes.paused, type(writes).__name__)
        writes._sender = sender  # type: ignore[union-attr]
        sender.send = send
        connection._writes = writes
        await connection.aclose()  # the sender's thread writes what is queued, then closes
        return _view(answer), log, books, _until_closed(peer)


def _view(answer: Any) -> Any:
    if type(answer) is tuple and len(answer) == 3:
        command, result, exc = answer
        return command.code, type(result).__name__, exc
    return answer


def _until_closed(peer: socket.socket) -> bytes:
    peer.settimeout(30)  # a guard against a hang, not a timing: the close always comes
    back = b""
    try:
        while chunk := peer.recv(1 << 16):
            back += chunk
    except ConnectionResetError:  # closed with the request unread: the kernel resets
        pass
    return back


CASES: list[tuple[type[Connection], Setup | None]] = [
    (Connection, None),
    (Plain, None),
    (Counted, None),
    (Connection, _replace_sender),
    (Connection, _replace_send),
    (Connection, _own_writes),
    (Connection, _high_water),
    (Connection, _closing_handler),
]


@needs_codec
@needs_sender
@pytest.mark.parametrize(("cls", "setup"), CASES)
async def test_answer_lone_reads_the_real_objects_as_its_twin(
    cls: type[Connection], setup: Setup | None
) -> None:
    native = receive.native
    assert native is not None
    sender = OutboundSender()
    try:
        for _ in range(3):  # the slots' places cached by the first call
            Counted.reads = 0
            got = await _answer(native.answer_lone, cls, setup, sender)
            native_reads = Counted.reads
            Counted.reads = 0
            want = await _answer(receive.answer_lone_reference, cls, setup, sender)
            assert got == want
            assert native_reads == Counted.reads
    finally:
        sender._native.close()


@needs_codec
@needs_sender
async def test_a_property_put_where_a_slot_was_found_is_read() -> None:
    """The slot's place cached through a class, then a property set on that class: the next
    call reads the property (the type's version tag moved), as Python would."""
    native = receive.native
    assert native is not None

    class Late(Connection):
        pass

    sender = OutboundSender()
    try:
        answer, _log, books, back = await _answer(native.answer_lone, Late, None, sender)
        assert answer is True and back.endswith(b"reply-body") and books[:3] == (1, False, False)
        Late.closed = property(lambda self: True, lambda self, value: None)  # type: ignore
        got = await _answer(native.answer_lone, Late, None, sender)
        assert got == await _answer(receive.answer_lone_reference, Late, None, sender)
        assert got[0] is ... and got[1] == [] and got[3] == b""
    finally:
        sender._native.close()


async def test_answer_lone_on_a_real_connection() -> None:
    """Whatever answer_lone is, the C or in pure mode its twin, on a Connection whose attributes
    are slots: the C answers and the reply reaches the peer; the twin, whose pure read does not
    scan, hands the frame back for lone_rest with nothing begun."""
    ours, peer = socket.socketpair()
    with peer:
        connection = Connection(trio.SocketStream(trio.socket.from_stdlib_socket(ours)))
        assert connection.born_host is None
        connection.request_handler = lambda conn, command: EncodedReply(0, list(REPLY))
        peer.sendall(REQUEST)
        entry = (connection, connection._decoder, 16 << 20)
        answer = receive.answer_lone(entry, connection.fileno(), _LONE_KINDS)
        if receive.native is None:
            assert type(answer) is tuple and len(answer) == 1
            assert (connection._ios, connection._in_read_batch) == (0, False)
            want = b""
        else:
            assert answer is True  # the read and the loop's write each counted
            assert (connection._ios, connection._in_read_batch) == (2, False)
            want = b"".join(REPLY)
        await connection.aclose()
        assert _until_closed(peer) == want


async def _finish(function: Any, kinds: list[type[Connection]], sender: OutboundSender) -> Any:
    """finish_plain_round over real connections of these classes (round.c's and finish.c's
    reads, the same slots): its tail, the books and the bytes each peer got."""
    native = receive.native
    assert native is not None
    pairs = [socket.socketpair() for _ in kinds]
    owners = [
        cls(trio.SocketStream(trio.socket.from_stdlib_socket(ours)), sender=sender)
        for cls, (ours, _) in zip(kinds, pairs, strict=True)
    ]
    for connection in owners:
        connection._in_read_batch = True
    staged = [native.scan_send_command(HEADERS[0], b"body") for _ in owners]
    frames = [b"frame %d" % i for i in range(len(owners))]
    tail = function(owners, staged, frames, ThreadWrites, sender, 1 << 20)
    books = [(c._in_read_batch, c._writes.queued) for c in owners]  # type: ignore[union-attr]
    back = []
    for connection, (_, peer) in zip(owners, pairs, strict=True):
        await connection.aclose()
        with peer:
            back.append(_until_closed(peer))
    return tail, books, back


@needs_codec
@needs_sender
@pytest.mark.parametrize(
    "kinds", [[Connection, Connection], [Plain, Connection, Plain], [Connection, Counted]]
)
async def test_a_rounds_finish_reads_the_real_objects_as_its_twin(
    kinds: list[type[Connection]],
) -> None:
    from remoting.round_finish import finish_plain_round, finish_plain_round_reference

    sender = OutboundSender()
    try:
        for _ in range(3):
            Counted.reads = 0
            got = await _finish(finish_plain_round, kinds, sender)
            native_reads = Counted.reads
            Counted.reads = 0
            assert got == await _finish(finish_plain_round_reference, kinds, sender)
            assert native_reads == Counted.reads
            assert got[2] == [b"frame %d" % i for i in range(len(kinds))]
    finally:
        sender._native.close()
