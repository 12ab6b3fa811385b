"""A connection's idle close (serverChannelMaxIdleTimeSeconds, 120 s by default) on trio's
MockClock: two minutes of silence pass in virtual time, over a real loopback socket."""

from __future__ import annotations

import socket

import pytest
import trio

from remoting.command import RemotingCommand, encode_command_bytes
from remoting.connection import IDLE_TIMEOUT_S, Connection
from remoting.frame import FrameDecoder
from remoting.selector import ReadSelector

ECHO = 1001


def echo(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    return request.make_response()


def socket_pair() -> tuple[trio.SocketStream, trio.socket.SocketType]:
    """A connected TCP pair on 127.0.0.1, made before the test's clock matters."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        peer = socket.create_connection(listener.getsockname())
        served, _ = listener.accept()
    served.setblocking(False)
    peer.setblocking(False)
    return trio.SocketStream(trio.socket.from_stdlib_socket(served)), (
        trio.socket.from_stdlib_socket(peer)
    )


async def serve(connection: Connection, closed_at: list[float]) -> None:
    await connection.run()
    closed_at.append(trio.current_time())


async def test_a_silent_connection_is_closed_after_the_idle_timeout(autojump_clock) -> None:
    stream, peer = socket_pair()
    connection = Connection(stream, echo)
    closed_at: list[float] = []
    start = trio.current_time()
    with peer:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve, connection, closed_at)
            await trio.sleep(IDLE_TIMEOUT_S - 1)
            assert not connection.closed
        assert await peer.recv(1) == b""  # the peer sees the close
    assert connection.close_reason == f"idle for {IDLE_TIMEOUT_S:g} s"
    # checked every timeout / 8: closed within one check after the timeout
    assert IDLE_TIMEOUT_S < closed_at[0] - start <= IDLE_TIMEOUT_S * 9 / 8


async def start_reading(nursery: trio.Nursery, reader: str) -> dict[str, object]:
    """The Connection's keywords for ``reader``: its own task, or a server's selector (whose
    lone requests take the one-frame path, which counts its reads instead of timing them)."""
    if reader == "task":
        return {}
    selector = ReadSelector()
    await nursery.start(selector.run)
    return {"selector": selector}


@pytest.mark.parametrize("reader", ["task", "selector"])
@pytest.mark.parametrize("every_s", [30.0, IDLE_TIMEOUT_S - 20])
async def test_requests_keep_a_connection_open_and_silence_after_them_closes_it(
    autojump_clock, every_s: float, reader: str
) -> None:
    stream, peer = socket_pair()
    closed_at: list[float] = []
    decoder = FrameDecoder(1 << 20)
    with peer:
        async with trio.open_nursery() as transport, trio.open_nursery() as nursery:
            reading = await start_reading(transport, reader)
            connection = Connection(stream, echo, **reading)  # type: ignore[arg-type]
            nursery.start_soon(serve, connection, closed_at)
            for _ in range(6):  # well past the idle timeout in all
                await trio.sleep(every_s)
                await peer.send(encode_command_bytes(RemotingCommand.request(ECHO)))
                with trio.fail_after(1):  # the answer: the connection still serves
                    while decoder.next_frame() is None:
                        data = await peer.recv(4096)
                        assert data, f"closed while in use: {connection.close_reason}"
                        decoder.receive_data(data)
            assert not connection.closed
            last_byte = trio.current_time()
            await connection._finished.wait()
            transport.cancel_scope.cancel()
    assert connection.close_reason == f"idle for {IDLE_TIMEOUT_S:g} s"
    assert IDLE_TIMEOUT_S < closed_at[0] - last_byte <= IDLE_TIMEOUT_S * 9 / 8
