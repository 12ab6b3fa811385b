"""Malformed frames against a real ``mqnamesrv`` and ``mqbroker``: each closes its connection
with one WARNING line naming the peer and the reason, a peer repeating them gets a few lines a
minute, and no traceback is logged (those are for our own bugs)."""

from __future__ import annotations

import struct

import pytest
import trio

from remoting.client import RemotingClient
from remoting.frame import encode_frame
from tests.harness import ServerProcess
from tests.kits.brokerkit import broker_conf, call, route_request, start_broker
from tests.kits.brokerkit import start_namesrv as start_namesrv_process

DEEP = 50_000
MALFORMED = {
    "deep-arrays": encode_frame(0, b'{"code":105,"extFields":' + b"[" * DEEP + b"]" * DEEP + b"}"),
    "deep-objects": encode_frame(
        0, b'{"code":105,"x":' + b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"}"
    ),
    "int-past-64-bits": encode_frame(0, b'{"code":123456789012345678901234567890,"opaque":1}'),
    "int-past-4300-digits": encode_frame(0, b'{"code":1' + b"0" * 5000 + b"}"),
    "infinity": encode_frame(0, b'{"code":Infinity,"opaque":1}'),
    "nan": encode_frame(0, b'{"code":105,"opaque":NaN}'),
    "float-overflow": encode_frame(0, b'{"code":1e400}'),
    "bad-utf-8": encode_frame(0, b'{"code":105,"remark":"\xff\xfe"}'),
    "lone-surrogate": encode_frame(0, b'{"code":105,"extFields":{"topic":"\\ud800"},0:1}'),
    "header-past-frame": struct.pack(">iI", 12, 100) + b"\x00" * 8,
    "bad-serialize-type": encode_frame(9, b"{}"),
    "rocketmq-header-truncated": encode_frame(1, b"\x00\x69\x00"),
}
ROUNDS = 5  # each kind this many times: 60 bad connections from one host


def start(kind: str, processes, tmp_path) -> ServerProcess:
    if kind == "namesrv":
        return start_namesrv_process(processes, tmp_path)
    return start_broker(processes, broker_conf(tmp_path))


async def send_and_wait_for_close(addr: str, data: bytes) -> None:
    host, port = addr.split(":")
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(data)
        with trio.fail_after(10):
            while await stream.receive_some(65536):
                pass  # closed by the server: EOF


@pytest.mark.parametrize("kind", ["namesrv", "broker"])
async def test_each_malformed_frame_is_one_rate_limited_warning_and_no_traceback(
    processes, tmp_path, kind: str
) -> None:
    server = start(kind, processes, tmp_path)
    for _ in range(ROUNDS):
        for data in MALFORMED.values():
            await send_and_wait_for_close(server.addr, data)
    async with RemotingClient.open() as client:  # still serving
        assert (await call(client, server.addr, route_request("T"))).is_response
    log = server.log_path.read_text(errors="replace")
    assert "Traceback" not in log
    warnings = [line for line in log.splitlines() if "protocol error, closing" in line]
    assert 1 <= len(warnings) <= 5, "\n".join(warnings)  # the first few from 127.0.0.1
    assert all("WARNING" in line and "peer=127.0.0.1:" in line for line in warnings)
