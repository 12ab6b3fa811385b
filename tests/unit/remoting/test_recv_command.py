"""The selector's read of a ready connection in one C call (remoting/native/codec/frames.c
recv_command) against its Python twin (remoting/receive.py recv_command_reference, what pure
mode runs): one recv, then for a decoder holding nothing a read of exactly one frame judged as
``FrameDecoder.whole_command`` judges it. Over socket pairs, for hostile reads of any shape:
the same command (or the same refusal when decoded), the same bytes, the same b"" for nothing
there, None for a closed peer, the same OSError for a dead socket."""

from __future__ import annotations

import gc
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from remoting import frame as frame_module
from remoting.frame import Frame, encode_frame
from remoting.receive import READ_CHUNK, recv_command_reference
from tests.kits.nativekit import needs_codec
from tests.unit.remoting.test_split_commands import HEADERS, _decoded, frames, streams

pytestmark = needs_codec


def _native_recv(*args: Any) -> Any:
    native = frame_module.native
    assert native is not None
    return native.recv_command(*args)


@pytest.fixture
def pairs() -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    """Two socket pairs, one per side, reading ends non-blocking as the connections' are."""
    made = [socket.socketpair() for _ in range(2)]
    for reader, _ in made:
        reader.setblocking(False)
    yield made
    for reader, writer in made:
        reader.close()
        writer.close()


def _both(pairs: list[tuple[socket.socket, socket.socket]], *args: Any) -> tuple[Any, Any]:
    (c_reader, _), (py_reader, _) = pairs
    return (
        _native_recv(c_reader, Frame, *args),
        recv_command_reference(py_reader, Frame, *args),
    )


def _judged(got: Any) -> Any:
    if type(got) is bytes or got is None:
        return ("read", got)
    return ("whole", _decoded(got))


@given(
    data=st.one_of(streams, frames),
    max_frame=st.sampled_from([16 << 20, 512, 64]),
    whole=st.booleans(),
)
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@example(data=encode_frame(0, HEADERS[0], b"b"), max_frame=16 << 20, whole=True)
@example(data=encode_frame(0, HEADERS[0], b"b"), max_frame=16 << 20, whole=False)
@example(data=encode_frame(0, b"{", b"b"), max_frame=16 << 20, whole=True)
@example(data=encode_frame(0, HEADERS[0], b"b") * 2, max_frame=16 << 20, whole=True)
def test_a_read_is_judged_as_the_python_judges_it(
    pairs: list[tuple[socket.socket, socket.socket]], data: bytes, max_frame: int, whole: bool
) -> None:
    for _, writer in pairs:
        writer.sendall(data)
    got, want = _both(pairs, max_frame, whole)
    assert _judged(got) == _judged(want)
    if data and not whole:
        assert got == data
    if whole and type(want) is Frame and want.serialize_type == 0 and want.header in HEADERS:
        assert type(got).__name__ == "ScannedCommand"  # the scan took it in the same call
    assert _both(pairs, max_frame, whole) == (b"", b"")  # the read took everything


def test_a_read_takes_at_most_a_chunk(pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    data = encode_frame(0, HEADERS[0], bytes(READ_CHUNK))  # a frame longer than one read
    for _, writer in pairs:
        writer.setblocking(False)
        writer.send(data)
    got, want = _both(pairs, 16 << 20, True)
    assert got == want == data[:READ_CHUNK]


def test_nothing_there_a_closed_peer_and_a_dead_socket(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    assert _both(pairs, 16 << 20, True) == (b"", b"")
    for _, writer in pairs:
        writer.close()
    assert _both(pairs, 16 << 20, True) == (None, None)
    for reader, _ in pairs:
        reader.close()
    for recv in (_native_recv, recv_command_reference):
        with pytest.raises(OSError) as raised:
            recv(pairs[0][0], Frame, 16 << 20, True)
        assert type(raised.value) is OSError


def test_a_reset_raises_the_sockets_error() -> None:
    errors = []
    for recv in (_native_recv, recv_command_reference):
        listener = socket.create_server(("127.0.0.1", 0))
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
        server.setblocking(False)
        # SO_LINGER 0: the close sends a RST, which the next recv reports.
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        client.close()
        with pytest.raises(OSError) as raised:
            for _ in range(1000):  # until the RST is in (loopback: at once)
                recv(server, Frame, 16 << 20, True)
        errors.append((type(raised.value), raised.value.errno))
        server.close()
        listener.close()
    assert errors[0] == errors[1] == (ConnectionResetError, 104)


def test_the_c_read_refuses_what_it_cannot_take() -> None:
    sock, other = socket.socketpair()
    with sock, other:
        for args in [(sock, dict, 64, True), (sock, Frame, 64), ("x", Frame, 64, True)]:
            with pytest.raises(TypeError):
                _native_recv(*args)


def test_a_read_inside_a_read_takes_its_own_buffer(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    """The C reads into one buffer of its module; a read that starts while another read's bytes
    are still being judged (here a gc callback that a collection during the judgement's
    allocations runs) takes one of its own: both reads are judged on their own bytes, as the
    twin judges them."""
    (outer_reader, outer_writer), (inner_reader, inner_writer) = pairs
    outer_frame = encode_frame(0, HEADERS[0], b"outer body")
    inner_frame = encode_frame(0, HEADERS[1], b"the inner read's body, longer than the outer")
    outer_writer.sendall(outer_frame)
    inner_writer.sendall(inner_frame)
    state = {"done": False}
    inner: list[Any] = []

    def during_the_outer_read(phase: str, info: dict[str, Any]) -> None:
        if inner or state["done"]:
            return
        try:
            outer_reader.recv(1, socket.MSG_PEEK)
        except BlockingIOError:  # the outer read has taken its bytes and is judging them
            inner.append(_native_recv(inner_reader, Frame, 16 << 20, True))

    native = frame_module.native
    assert native is not None
    read, threshold = native.recv_command, gc.get_threshold()
    gc.callbacks.append(during_the_outer_read)
    gc.collect()  # then a collection at the next allocation the collector counts: the read's
    gc.set_threshold(1)
    try:
        outer = read(outer_reader, Frame, 16 << 20, True)
        state["done"] = True
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(during_the_outer_read)
    assert len(inner) == 1, "no collection ran during the outer read's judgement"
    for got, sent in ((outer, outer_frame), (inner[0], inner_frame)):
        reader, writer = socket.socketpair()
        with reader, writer:
            writer.sendall(sent)
            assert _judged(got) == _judged(recv_command_reference(reader, Frame, 16 << 20, True))
