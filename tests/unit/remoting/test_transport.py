"""The Trio transport over real loopback sockets: dispatch, pipelining, errors, server pushes,
backpressure. Each test runs with the server's three ways of doing I/O: a reader task per
connection writing replies itself (as clients do), the selector reading every connection
(remoting/selector.py), and the selector with the native sender thread writing replies
(remoting/sender.py), which is what servers use when remoting._sender is built."""

from __future__ import annotations

import socket
import struct

import pytest
import trio

from remoting import writes as writes_module
from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand, decode_command, encode_command_bytes
from remoting.connection import Connection
from remoting.errors import RemotingConnectError, RemotingTimeoutError, RequestError
from remoting.frame import FrameDecoder, encode_frame
from remoting.server import RemotingServer, no_reply
from tests.kits.nativekit import needs_sender

ECHO, SLOW, FAIL, REJECT, PUSH, SILENT, BIG = 1001, 1002, 1003, 1004, 1005, 1006, 1007
SERVER_IO: dict[str, bool] = {}


@pytest.fixture(
    autouse=True,
    params=[
        "reader-tasks",
        "selector",
        pytest.param("selector-sender-thread", marks=needs_sender),
    ],
)
def server_io(request: pytest.FixtureRequest) -> str:
    SERVER_IO["read_selector"] = request.param != "reader-tasks"
    SERVER_IO["native_sender"] = request.param == "selector-sender-thread"
    return request.param


def echo(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    return request.make_response(ext_fields={"echo": request.ext("v", "")}, body=request.body)


async def slow(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    await trio.sleep(float(request.ext("delay", "0")))
    return request.make_response(ext_fields={"v": request.ext("v", "")})


def fail(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    raise ZeroDivisionError("handler bug")


def reject(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    raise RequestError(ResponseCode.TOPIC_NOT_EXIST, "no such topic")


async def push_back(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    # A server-initiated request over the client's own connection, as a broker does.
    answer = await connection.invoke(RemotingCommand.request(ECHO, {"v": "from-server"}), 5)
    return request.make_response(ext_fields={"client_said": answer.ext("echo", "")})


def make_server(**kwargs: object) -> RemotingServer:
    processors = {ECHO: echo, SLOW: slow, FAIL: fail, REJECT: reject, PUSH: push_back}
    kwargs = {**SERVER_IO, **kwargs}
    return RemotingServer("127.0.0.1", 0, processors=processors, **kwargs)  # type: ignore[arg-type]


async def test_request_response_round_trip_with_body(nursery: trio.Nursery) -> None:
    port = await nursery.start(make_server().run)
    async with RemotingClient.open() as client:
        request = RemotingCommand.request(ECHO, {"v": "hello"}, b"\x00\x01body")
        response = await client.invoke(f"127.0.0.1:{port}", request, 5)
    assert response.is_response and response.opaque == request.opaque
    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields == {"echo": "hello"} and bytes(response.body) == b"\x00\x01body"


async def test_pipelined_requests_are_served_concurrently_and_matched_by_opaque(
    nursery: trio.Nursery,
) -> None:
    port = await nursery.start(make_server().run)
    results: dict[str, str] = {}
    async with RemotingClient.open() as client:
        addr = f"127.0.0.1:{port}"
        # The first request is slowest: its answer must not hold back the others.
        first_done = trio.Event()

        async def call(value: str, delay: float) -> None:
            request = RemotingCommand.request(SLOW, {"v": value, "delay": str(delay)})
            response = await client.invoke(addr, request, 10)
            results[value] = response.ext("v")
            if value == "first":
                first_done.set()

        async with trio.open_nursery() as calls:
            calls.start_soon(call, "first", 0.5)
            for i in range(20):
                calls.start_soon(call, f"v{i}", 0)
            with trio.fail_after(5):
                while len(results) < 20:
                    await trio.sleep(0.01)
            assert not first_done.is_set()
    assert results == {"first": "first", **{f"v{i}": f"v{i}" for i in range(20)}}


async def test_handler_errors_answer_and_keep_the_connection(nursery: trio.Nursery) -> None:
    port = await nursery.start(make_server().run)
    async with RemotingClient.open() as client:
        addr = f"127.0.0.1:{port}"
        broken = await client.invoke(addr, RemotingCommand.request(FAIL), 5)
        assert broken.code == ResponseCode.SYSTEM_ERROR and "handler bug" in broken.remark
        refused = await client.invoke(addr, RemotingCommand.request(REJECT), 5)
        assert (refused.code, refused.remark) == (ResponseCode.TOPIC_NOT_EXIST, "no such topic")
        unknown = await client.invoke(addr, RemotingCommand.request(4242), 5)
        assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert unknown.remark == " request type 4242 not supported"
        still = await client.invoke(addr, RemotingCommand.request(ECHO, {"v": "x"}), 5)
        assert still.ext("echo") == "x"


async def test_oneway_requests_get_no_reply(nursery: trio.Nursery) -> None:
    seen = trio.Event()

    def record(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        seen.set()
        return request.make_response()

    server = make_server()
    server.register(SILENT, record)
    port = await nursery.start(server.run)
    with socket.create_connection(("127.0.0.1", port)) as raw:
        request = RemotingCommand.request(SILENT, oneway=True)
        raw.sendall(encode_command_bytes(request))
        with trio.fail_after(5):
            await seen.wait()
        # Then an ordinary request: the first thing coming back must be its reply.
        ping = RemotingCommand.request(ECHO, {"v": "after"})
        raw.sendall(encode_command_bytes(ping))
        raw.settimeout(5)
        length = struct.unpack(
            ">i", await trio.to_thread.run_sync(raw.recv, 4, socket.MSG_WAITALL)
        )[0]
        data = await trio.to_thread.run_sync(raw.recv, length, socket.MSG_WAITALL)
    assert f'"opaque":{ping.opaque}'.encode() in data


async def test_namesrv_style_default_sends_nothing(nursery: trio.Nursery) -> None:
    server = RemotingServer("127.0.0.1", 0, default_processor=no_reply, **SERVER_IO)
    port = await nursery.start(server.run)
    async with RemotingClient.open() as client:
        with pytest.raises(RemotingTimeoutError):
            await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(4242), 0.3)


async def test_server_can_call_the_client_over_its_connection(nursery: trio.Nursery) -> None:
    port = await nursery.start(make_server().run)
    async with RemotingClient.open(processors={ECHO: echo}) as client:
        response = await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(PUSH), 5)
    assert response.ext("client_said") == "from-server"


async def test_pending_calls_fail_when_the_connection_drops(nursery: trio.Nursery) -> None:
    hold = trio.Event()

    async def never(connection: Connection, request: RemotingCommand) -> None:
        await hold.wait()

    server = make_server()
    server.register(SILENT, never)
    port = await nursery.start(server.run)
    async with RemotingClient.open() as client:
        addr = f"127.0.0.1:{port}"
        connection = await client.connection(addr)

        async def drop_soon() -> None:
            await trio.sleep(0.1)
            for server_side in list(server.connections):
                await server_side.aclose()

        nursery.start_soon(drop_soon)
        with pytest.raises(RemotingConnectError):
            await client.invoke(addr, RemotingCommand.request(SILENT), 10)
        assert connection.closed
        # The next call reconnects.
        response = await client.invoke(addr, RemotingCommand.request(ECHO, {"v": "again"}), 5)
        assert response.ext("echo") == "again"
    hold.set()


async def test_idle_connections_are_closed(nursery: trio.Nursery) -> None:
    port = await nursery.start(make_server(idle_timeout_s=0.2).run)
    async with RemotingClient.open() as client:
        connection = await client.connection(f"127.0.0.1:{port}")
        with trio.fail_after(5):
            while not connection.closed:
                await trio.sleep(0.05)


@pytest.mark.parametrize(
    "garbage",
    [
        struct.pack(">i", 2**31 - 1) + b"xxxx",  # length far beyond the frame limit
        struct.pack(">iI", 12, 64) + b"{}{}{}{}",  # header length larger than the frame
        encode_frame(0, b"{not json"),
        encode_frame(0, b"[1,2,3]"),
        encode_frame(7, b"{}"),  # unknown serialize type
    ],
    ids=["huge-length", "header-past-frame", "invalid-json", "json-not-object", "bad-type"],
)
async def test_bad_frames_close_only_their_connection(
    nursery: trio.Nursery, garbage: bytes
) -> None:
    port = await nursery.start(make_server().run)
    with socket.create_connection(("127.0.0.1", port)) as raw:
        raw.sendall(garbage)
        raw.settimeout(5)
        assert await trio.to_thread.run_sync(raw.recv, 1) == b""  # closed by the server
    async with RemotingClient.open() as client:
        response = await client.invoke(
            f"127.0.0.1:{port}", RemotingCommand.request(ECHO, {"v": "ok"}), 5
        )
    assert response.ext("echo") == "ok"


async def test_a_peer_that_stops_reading_is_not_read_until_its_replies_drain(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writes_module, "WRITE_HIGH_WATER", 1 << 20)
    handled: list[int] = []
    arrived = [trio.Event()]

    def big(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        handled.append(request.opaque)
        arrived[0].set()
        return request.make_response(body=bytes(512 * 1024))

    server = make_server()
    server.register(BIG, big)
    port = await nursery.start(server.run)
    sock = trio.socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    await sock.connect(("127.0.0.1", port))
    with sock:
        sent: list[int] = []
        with trio.fail_after(60):
            # One request at a time, reading nothing back, until one is not served.
            while True:
                request = RemotingCommand.request(BIG)
                sent.append(request.opaque)
                arrived[0] = trio.Event()
                await sock.send(encode_command_bytes(request))
                with trio.move_on_after(1):
                    await arrived[0].wait()
                    continue
                break
            assert handled == sent[:-1] and len(handled) >= 2
            # Reading the replies lets the server read again: the last one is answered too.
            decoder, opaques = FrameDecoder(), []
            while len(opaques) < len(sent):
                data = await sock.recv(1 << 20)
                assert data, "closed by the server"
                decoder.receive_data(data)
                while (frame := decoder.next_frame()) is not None:
                    opaques.append(decode_command(frame).opaque)
    assert opaques == sent


async def test_a_connection_reset_right_after_connect_is_a_connect_error(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A peer that resets between connect and getpeername (ENOTCONN) is the caller's connect
    failure, not a raw OSError out of the client."""
    import errno

    import remoting.client as client_module

    def reset(*args: object, **kwargs: object) -> Connection:
        raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")

    port = await nursery.start(make_server().run)
    monkeypatch.setattr(client_module, "Connection", reset)
    async with RemotingClient.open() as client:
        with pytest.raises(RemotingConnectError, match=r"ENOTCONN|not connected"):
            await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(ECHO, {}), 5)
