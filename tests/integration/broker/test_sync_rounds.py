"""Sync senders on several connections, each written before the broker reads any of them, so
one selector round finds them ready together and their sends are stored in one group pass
(remoting/selector.py, ``RemotingServer.handle_round``). Each connection is answered in its
own order, the queue's offsets are each given once, and every stored message keeps the born
host of the connection that sent it, not of the round's first."""

from __future__ import annotations

import socket

from remoting import message as codec
from remoting.client import RemotingClient
from remoting.command import encode_command_bytes
from remoting.frame import FrameDecoder
from tests.kits.brokerkit import broker_conf, pull_all, read_replies, send_request, start_broker

CONNECTIONS, ROUNDS = 6, 12
TOPIC = "SyncRounds"


async def test_sends_read_in_one_round_are_stored_for_their_own_connection(
    processes, tmp_path
) -> None:
    addr = start_broker(processes, broker_conf(tmp_path, autoCreateTopicEnable="true")).addr
    host, port = addr.rsplit(":", 1)
    socks = []
    for _ in range(CONNECTIONS):
        sock = socket.create_connection((host, int(port)), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(sock)
    decoders = [FrameDecoder() for _ in socks]
    sent: dict[bytes, int] = {}  # body -> the sending socket's index
    offsets: list[list[int]] = [[] for _ in socks]
    try:
        for round_no in range(ROUNDS):
            batches = []
            for index in range(CONNECTIONS):
                # Some connections bring two sends in a read: a run mixes both kinds.
                count = 2 if (round_no + index) % 3 == 0 else 1
                requests = []
                for n in range(count):
                    body = f"r{round_no}-c{index}-{n}".encode()
                    sent[body] = index
                    requests.append(send_request(TOPIC, body, queue_id=0))
                batches.append(requests)
            for sock, requests in zip(socks, batches, strict=True):
                sock.sendall(b"".join(encode_command_bytes(r) for r in requests))
            for index, (sock, requests) in enumerate(zip(socks, batches, strict=True)):
                replies = read_replies(sock, decoders[index], len(requests))
                assert [r.opaque for r in replies] == [r.opaque for r in requests]
                assert all(r.code == 0 for r in replies), [(r.code, r.remark) for r in replies]
                offsets[index] += [int(r.ext("queueOffset")) for r in replies]
        local_ports = [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    # Each connection's sends were stored in the order it sent them, and no offset twice.
    for mine in offsets:
        assert mine == sorted(mine)
    every = [o for mine in offsets for o in mine]
    assert sorted(every) == list(range(len(sent)))
    async with RemotingClient.open() as client:
        stored: list[codec.MessageExt] = await pull_all(client, addr, TOPIC, 0)
    assert len(stored) == len(sent)
    for msg in stored:
        sender = sent[msg.body]
        assert msg.born_host == f"127.0.0.1:{local_ports[sender]}", msg.body
        assert msg.queue_offset in offsets[sender]
