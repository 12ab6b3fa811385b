"""Pipelined sends against a real ``mqbroker``: many requests in one write are stored as a group
(issue 27), yet each is answered as if it came alone, in request order; a bad one in the middle
gets its own error and the rest are stored in the order they were sent. Under SYNC_FLUSH each
answer still waits for its flush (and answers may then overtake each other, matched by opaque
as every client does)."""

from __future__ import annotations

import socket

import pytest
import trio

from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand, decode_command, encode_command_bytes
from remoting.frame import FrameDecoder
from tests.kits.brokerkit import broker_conf, pull_all, send_request, start_broker


async def _pipelined(addr: str, requests: list[RemotingCommand]) -> list[RemotingCommand]:
    """Every request in one write; the answers as they arrive."""
    host, port = addr.rsplit(":", 1)
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    await sock.connect((host, int(port)))
    with sock:
        await sock.send(b"".join(encode_command_bytes(r) for r in requests))
        decoder, answers = FrameDecoder(), []
        with trio.fail_after(30):
            while len(answers) < len(requests):
                data = await sock.recv(65536)
                assert data, "the broker closed the connection"
                decoder.receive_data(data)
                answers += [decode_command(f) for f in decoder.frames()]
        return answers


@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])
async def test_pipelined_sends_are_answered_one_by_one_and_stored_in_request_order(
    processes, tmp_path, flush: str
) -> None:
    broker = start_broker(processes, broker_conf(tmp_path, flushDiskType=flush))
    batch_body = codec.encode_batch_body(
        [(0, f"batch{i}".encode(), f"UNIQ_KEY\x01U{i}") for i in range(3)]
    )
    requests = [
        send_request("Pipe", b"m0"),
        send_request("Pipe", b"m1", code=RequestCode.SEND_MESSAGE),
        send_request("Pipe", b"bad", queue_id=99),  # past the topic's queues
        send_request("Pipe", b"m2"),
        send_request("Pipe", batch_body, code=RequestCode.SEND_BATCH_MESSAGE, batch=True),
        RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO),
        send_request("Pipe", b"m3", properties={"DELAY": "x"}),  # not a Java int
        send_request("Pipe", b"m4"),
        *(send_request("Pipe", f"n{i}".encode()) for i in range(40)),
    ]
    arrived = await _pipelined(broker.addr, requests)
    if flush == "ASYNC_FLUSH":  # answered at once, in order; SYNC_FLUSH's once flushed
        assert [a.opaque for a in arrived] == [r.opaque for r in requests]
    by_opaque = {a.opaque: a for a in arrived}
    answers = [by_opaque[r.opaque] for r in requests]
    codes = [a.code for a in answers]
    assert codes[:8] == [0, 0, ResponseCode.SYSTEM_ERROR, 0, 0, 0, ResponseCode.SYSTEM_ERROR, 0]
    assert "queueId[99] is illegal" in answers[2].remark
    assert codes[8:] == [0] * 40
    stored = [i for i, r in enumerate(requests) if r.code != 28 and answers[i].code == 0]
    offsets = [int(answers[i].ext("queueOffset")) for i in stored]
    assert offsets == [0, 1, 2, 3, 6, *range(7, 47)]  # the batch took 3..5
    async with RemotingClient.open() as client:
        bodies = [bytes(m.body) for m in await pull_all(client, broker.addr, "Pipe", 0)]
    assert bodies == [
        b"m0", b"m1", b"m2", b"batch0", b"batch1", b"batch2", b"m4",
        *(f"n{i}".encode() for i in range(40)),
    ]  # fmt: skip
