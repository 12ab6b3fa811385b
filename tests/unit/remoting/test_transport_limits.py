"""The transport's bounds on memory, over real loopback sockets and each of the server's ways
of doing I/O: requests in flight per connection (by count and by bytes) pause reading instead
of refusing work a handler already did, and the partial frames of all connections stay under
one limit by closing the stalest holder."""

from __future__ import annotations

import socket
import struct

import trio
import trio.testing

from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand, decode_command, encode_command_bytes
from remoting.connection import Connection
from remoting.frame import FrameDecoder
from remoting.server import RemotingServer
from tests.unit.remoting.test_transport import ECHO, make_server, server_io  # noqa: F401

GATED = 1101
KIB = 1024


class Gate:
    """A handler that answers only once let through, recording which requests started."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.changed = trio.Event()
        self.open = trio.Event()

    async def handle(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        self.started.append(request.ext("v") or "")
        self.changed.set()
        self.changed = trio.Event()
        await self.open.wait()
        return request.make_response(ext_fields={"v": request.ext("v") or ""})

    async def wait_started(self, count: int) -> None:
        with trio.fail_after(5):
            while len(self.started) < count:
                await self.changed.wait()


async def serve(nursery: trio.Nursery, gate: Gate, **kwargs: object) -> tuple[RemotingServer, str]:
    server = make_server(**kwargs)
    server.register(GATED, gate.handle)
    port = await nursery.start(server.run)
    return server, f"127.0.0.1:{port}"


async def test_a_handlers_late_answer_is_never_replaced_by_a_refusal(nursery) -> None:
    # A SYNC_FLUSH send stores its message, then waits: refusing it once it returned its
    # awaitable answered SYSTEM_BUSY for a stored message, and the producer's retry stored it
    # twice. Past the bound, the connection is not read until a handler finishes instead.
    gate = Gate()
    _, addr = await serve(nursery, gate, max_handler_tasks=1)
    async with RemotingClient.open() as client:
        responses: list[RemotingCommand] = []

        async def call(v: str) -> None:
            request = RemotingCommand.request(GATED, {"v": v})
            responses.append(await client.invoke(addr, request, 10))

        async with trio.open_nursery() as calls:
            for v in "abc":
                calls.start_soon(call, v)
            await gate.wait_started(1)
            gate.open.set()
    assert [r.code for r in responses] == [ResponseCode.SUCCESS] * 3
    assert sorted(r.ext("v") or "" for r in responses) == ["a", "b", "c"]


async def test_request_bytes_in_flight_past_the_bound_pause_reading(nursery) -> None:
    gate = Gate()
    _, addr = await serve(nursery, gate, max_in_flight_bytes=100 * KIB)
    async with RemotingClient.open() as client:
        done: list[str] = []

        async def call(v: str, body_bytes: int) -> None:
            request = RemotingCommand.request(GATED, {"v": v}, bytes(body_bytes))
            done.append((await client.invoke(addr, request, 10)).ext("v") or "")

        async with trio.open_nursery() as calls:
            calls.start_soon(call, "big", 150 * KIB)
            await gate.wait_started(1)
            calls.start_soon(call, "next", 10)
            # Anything else on that connection now waits in the socket, not in the server.
            await trio.testing.wait_all_tasks_blocked(cushion=0.1)
            assert gate.started == ["big"]
            gate.open.set()
    assert sorted(done) == ["big", "next"]
    assert gate.started == ["big", "next"]


def partial_frame(frame_bytes: int, send_bytes: int) -> bytes:
    return struct.pack(">iI", frame_bytes, 0) + bytes(send_bytes - 8)


async def test_over_the_partial_frames_limit_the_stalest_holder_is_closed(nursery) -> None:
    server = make_server(max_partial_frames_bytes=1024 * KIB)
    port = await nursery.start(server.run)
    stale = socket.create_connection(("127.0.0.1", port))
    fresh = socket.create_connection(("127.0.0.1", port))
    with stale, fresh:
        stale.sendall(partial_frame(2048 * KIB, 600 * KIB))
        await held_at_least(server, 600 * KIB)
        # The fresh client's frame pushes the total over: the stale one is dropped for it.
        request = RemotingCommand.request(ECHO, {"v": "fresh"}, bytes(900 * KIB))
        frame = encode_command_bytes(request)
        fresh.sendall(frame[: 600 * KIB])
        stale.settimeout(5)
        assert await trio.to_thread.run_sync(stale.recv, 1) == b""  # closed by the server
        fresh.sendall(frame[600 * KIB :])
        reply = await trio.to_thread.run_sync(read_command, fresh)
    assert reply.opaque == request.opaque and reply.ext("echo") == "fresh"
    assert server.budget.total == 0


async def test_under_the_limit_a_big_frame_waits_and_small_requests_are_served(nursery) -> None:
    server = make_server(max_partial_frames_bytes=1024 * KIB)
    port = await nursery.start(server.run)
    big = socket.create_connection(("127.0.0.1", port))
    with big:
        big.sendall(partial_frame(4096 * KIB, 1000 * KIB))
        await held_at_least(server, 1000 * KIB)
        async with RemotingClient.open() as client:
            for n in range(50):
                request = RemotingCommand.request(ECHO, {"v": str(n)}, bytes(1000))
                response = await client.invoke(f"127.0.0.1:{port}", request, 5)
                assert response.ext("echo") == str(n)
        assert server.budget.total >= 1000 * KIB  # the big frame was not dropped either


async def held_at_least(server: RemotingServer, size: int) -> None:
    with trio.fail_after(5):
        while server.budget.total < size:
            await trio.sleep(0.01)


def read_command(sock: socket.socket) -> RemotingCommand:
    sock.settimeout(5)
    decoder = FrameDecoder()
    while (frame := decoder.next_frame()) is None:
        data = sock.recv(1 << 20)
        assert data, "closed by the server"
        decoder.receive_data(data)
    return decode_command(frame)
