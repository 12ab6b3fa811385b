"""Bad input against a running ``mqnamesrv``: each bad connection is closed, no descriptor is
left behind, and every other client is served at once, a slow one included."""

from __future__ import annotations

import random
import struct

import psutil
import pytest
import trio

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand, encode_command_bytes
from remoting.frame import encode_frame
from tests.kits.brokerkit import call, start_namesrv


def route_request(topic: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})


BAD_INPUTS = {
    "random bytes": b"\xff" + random.Random(5).randbytes(4095),
    "a length of 2^31-1": struct.pack(">i", 2**31 - 1) + b"\x00" * 16,
    "a truncated header": encode_frame(0, b'{"code":105,"extFi'),
    "invalid JSON": encode_frame(0, b"{not json at all}"),
    "a header longer than its frame": struct.pack(">iI", 12, 100) + b"\x00" * 8,
}


async def open_stream(addr: str) -> trio.SocketStream:
    host, port = addr.split(":")
    return await trio.open_tcp_stream(host, int(port))


async def closed_by_peer(stream: trio.SocketStream) -> bool:
    with trio.fail_after(10):
        while True:
            data = await stream.receive_some(65536)
            if not data:
                return True


async def wait_for_fds(pid: int, at_most: int) -> None:
    """Descriptors are released when the server finishes closing; poll, bounded."""
    process = psutil.Process(pid)
    with trio.fail_after(10):
        while process.num_fds() > at_most:
            await trio.sleep(0.02)


@pytest.mark.parametrize("name", list(BAD_INPUTS))
async def test_bad_input_closes_only_its_connection(processes, tmp_path, name: str) -> None:
    ns = start_namesrv(processes, tmp_path)
    async with RemotingClient.open() as client:
        assert (await call(client, ns.addr, route_request("T"))).code == (
            ResponseCode.TOPIC_NOT_EXIST
        )
        baseline = psutil.Process(ns.pid).num_fds()
        bad = await open_stream(ns.addr)
        await bad.send_all(BAD_INPUTS[name])
        assert await closed_by_peer(bad)
        await bad.aclose()
        with trio.fail_after(2):  # the established client is served at once
            response = await call(client, ns.addr, route_request("T"))
        assert response.code == ResponseCode.TOPIC_NOT_EXIST
        await wait_for_fds(ns.pid, baseline)


async def test_a_slow_client_neither_blocks_others_nor_is_dropped(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    frame = encode_command_bytes(route_request("Slow"))
    slow = await open_stream(ns.addr)
    head, last = frame[:-1], frame[-1:]
    async with RemotingClient.open() as client:
        for at in range(0, len(head), 7):  # a few bytes at a time, others served in between
            await slow.send_all(head[at : at + 7])
            with trio.fail_after(2):
                response = await call(client, ns.addr, route_request("T"))
            assert response.code == ResponseCode.TOPIC_NOT_EXIST
        await slow.send_all(last)
        with trio.fail_after(5):
            reply = b""
            while len(reply) < 4 or len(reply) < 4 + int.from_bytes(reply[:4], "big"):
                chunk = await slow.receive_some(65536)
                assert chunk, "the slow client's connection was closed"
                reply += chunk
    assert b'"code":17' in reply  # TOPIC_NOT_EXIST, answered on the slow connection
    await slow.aclose()
