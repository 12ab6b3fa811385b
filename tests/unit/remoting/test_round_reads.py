"""Rounds of sync senders on many connections whose requests the C read stages itself
(remoting/receive.py recv_round: plain sends, scanned in the read) beside connections whose
reads take their own path: several requests in one read, a frame split across reads (the
decoder holds its head), a oneway request, a peer that closes, a peer that stops reading.
Each connection is answered in its own order, whatever its neighbours in the round do; the
replies go out through the server's sender in one call per round (remoting/writes.py
reply_round) or the loop's writes."""

from __future__ import annotations

import json
import random
import socket
from typing import Any

import pytest
import trio

from remoting import round_reads as round_reads_module
from remoting import writes as writes_module
from remoting.command import RemotingCommand, encode_command_bytes
from remoting.connection import Connection, HandlerResult
from remoting.receive import native as codec_native
from remoting.receive import recv_round
from remoting.server import RemotingServer
from tests.kits.nativekit import needs_sender
from tests.unit.remoting.test_request_groups import _read_answers
from tests.unit.remoting.test_send_scan import BASES

SEND_V2 = 310
EXT = json.loads(BASES[0])["extFields"]


def _send(tag: str, oneway: bool = False) -> RemotingCommand:
    return RemotingCommand.request(SEND_V2, dict(EXT), tag.encode(), oneway=oneway)


def _answer(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    return request.make_response(ext_fields={"v": request.body.decode()})


class Rounds:
    """A group processor answering with reply frames it encoded (as the broker's plain sends
    do), recording how many requests each run held."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def group(
        self,
        connection: Connection,
        requests: list[RemotingCommand],
        connections: list[Connection] | None = None,
    ) -> list[HandlerResult | bytes | Exception]:
        self.sizes.append(len(requests))
        return [encode_command_bytes(_answer(connection, r)) for r in requests]


async def _server(nursery: trio.Nursery, native_sender: bool) -> tuple[RemotingServer, Rounds]:
    rounds = Rounds()
    server = RemotingServer("127.0.0.1", 0, read_selector=True, native_sender=native_sender)
    server.register(SEND_V2, _answer)
    server.register_group(SEND_V2, rounds.group)
    return server, rounds


async def _clients(port: int, count: int) -> list[socket.socket]:
    """Blocking client sockets, each answered once (so the server has it in its selector)."""
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.settimeout(10)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(encode_command_bytes(_send("probe")))
        socks.append(sock)
    for sock in socks:
        await trio.to_thread.run_sync(_read_answers, sock, 1)
    return socks


@pytest.mark.parametrize(
    "native_sender", [False, pytest.param(True, marks=needs_sender)], ids=["loop", "thread"]
)
async def test_each_connection_is_answered_in_order_whatever_its_neighbours_read(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch, native_sender: bool
) -> None:
    staged_by_the_read: list[int] = []

    def counting(*args: Any) -> Any:
        got = recv_round(*args)
        staged_by_the_read.append(len(got[0]))
        return got

    monkeypatch.setattr(round_reads_module, "recv_round", counting)
    server, rounds = await _server(nursery, native_sender)
    port = await nursery.start(server.run)
    socks = await _clients(port, 5)
    rng = random.Random(27)
    held = [b""] * len(socks)  # the tail of a frame split across steps
    try:
        for step in range(40):
            expected: list[list[RemotingCommand]] = []
            for index, sock in enumerate(socks):
                mode = "lone" if index < 2 else rng.choice(["lone", "two", "split", "oneway"])
                tags = [f"c{index}-{step}-{n}" for n in range(2 if mode == "two" else 1)]
                requests = [_send(tag, oneway=mode == "oneway") for tag in tags]
                data = held[index] + b"".join(encode_command_bytes(r) for r in requests)
                held[index] = b""
                if mode == "split":  # half now, the rest with the next step's bytes
                    cut = len(data) - 7
                    data, held[index] = data[:cut], data[cut:]
                sock.sendall(data)
                expected.append([r for r in requests if not r.is_oneway])
            for index, sock in enumerate(socks):
                if held[index]:  # its request completes next step: its answer comes then
                    sock.sendall(held[index])
                    held[index] = b""
                want = expected[index]
                answers = await trio.to_thread.run_sync(_read_answers, sock, len(want))
                assert [(a.opaque, a.ext("v")) for a in answers] == [
                    (r.opaque, r.body.decode()) for r in want
                ]
    finally:
        for sock in socks:
            sock.close()
    assert any(size > 1 for size in rounds.sizes), rounds.sizes  # rounds of several
    if codec_native is not None:  # the C scans plain sends in the read: it stages them
        assert any(staged > 1 for staged in staged_by_the_read), staged_by_the_read
    else:  # the twin hands each Frame to its connection's path, which stages it
        assert not any(staged_by_the_read)


@pytest.mark.parametrize(
    "native_sender", [False, pytest.param(True, marks=needs_sender)], ids=["loop", "thread"]
)
async def test_a_peer_that_closes_in_a_round_goes_alone(
    nursery: trio.Nursery, native_sender: bool
) -> None:
    server, _ = await _server(nursery, native_sender)
    port = await nursery.start(server.run)
    socks = await _clients(port, 4)
    try:
        for step in range(10):
            requests = [_send(f"c{i}-{step}") for i in range(len(socks))]
            if step == 5:
                socks[1].sendall(encode_command_bytes(requests[1])[:-3])
                socks[1].close()  # EOF with half a frame held: that connection goes
            for index, sock in enumerate(socks):
                if index != 1 or step < 5:
                    sock.sendall(encode_command_bytes(requests[index]))
            for index, sock in enumerate(socks):
                if index == 1 and step >= 5:
                    continue
                (answer,) = await trio.to_thread.run_sync(_read_answers, sock, 1)
                assert (answer.opaque, answer.ext("v")) == (
                    requests[index].opaque,
                    f"c{index}-{step}",
                )
        with trio.fail_after(10):
            while len(server.connections) != len(socks) - 1:
                await trio.sleep(0.001)
    finally:
        for sock in socks:
            sock.close()


@needs_sender
async def test_in_a_round_a_peer_that_stops_reading_pauses_alone(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replies handed to the sender in one call still pause the one connection whose
    queued bytes pass the high-water mark, and only it, until its peer reads them."""
    monkeypatch.setattr(writes_module, "WRITE_HIGH_WATER", 4096)
    server, _ = await _server(nursery, True)
    port = await nursery.start(server.run)
    socks = await _clients(port, 3)
    slow = socks[0]
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    (slow_connection,) = [
        c for c in server.connections if c.peer.endswith(f":{slow.getsockname()[1]}")
    ]
    sent_slow: list[RemotingCommand] = []
    try:
        # Until its replies pass the mark (a few steps: its peer's window is 4 KiB), so the
        # server's window for its requests never fills meanwhile.
        for step in range(40):
            request = _send(f"{'x' * 16_000}{step}")
            slow.sendall(encode_command_bytes(request))
            sent_slow.append(request)
            for index, sock in enumerate(socks[1:], start=1):
                small = _send(f"c{index}-{step}")
                sock.sendall(encode_command_bytes(small))
                (answer,) = await trio.to_thread.run_sync(_read_answers, sock, 1)
                assert answer.opaque == small.opaque
            if slow_connection._writes.paused:
                break
        assert not slow_connection._writes.drained.is_set()  # paused, the others went on
        assert slow_connection._writes.paused
        answers = await trio.to_thread.run_sync(_read_answers, slow, len(sent_slow))
        assert [a.opaque for a in answers] == [r.opaque for r in sent_slow]
    finally:
        for sock in socks:
            sock.close()
