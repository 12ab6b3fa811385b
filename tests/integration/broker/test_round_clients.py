"""Lock-step senders on many connections, stepping together so that the broker's idle sleeps
name several of them ready at once (the rounds served inside the selector's C loop,
remoting/lone_loop.py serve_round_reference), against a real NameServer and broker, beside a
pipelining client, a consumer long-polling, a connection closed in the middle of a request
and one sending garbage. Every lock-step send is answered in its connection's order with its
own offset, the pulls see the queue in order, and every message is stored once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from remoting.command import encode_command_bytes
from remoting.frame import FrameDecoder
from tests.integration.broker.test_lone_clients import (
    PIPELINED,
    TIMEOUT_S,
    TOPIC,
    _broken,
    _connect,
    _pipelined,
    _puller,
    check_stored,
)
from tests.kits.brokerkit import read_replies, send_request, start_cluster

SENDERS, CONNECTIONS_EACH, STEPS = 6, 2, 60


def _stepping(addr: str, index: int, steps: threading.Barrier) -> list[list[tuple[bytes, int]]]:
    """One send in flight per connection, the connections taken in turn, every sender's step
    begun together: (body, queueOffset) of each send, per connection, in the order sent."""
    socks = [_connect(addr) for _ in range(CONNECTIONS_EACH)]
    decoders = [FrameDecoder() for _ in socks]
    out: list[list[tuple[bytes, int]]] = [[] for _ in socks]
    try:
        for n in range(STEPS):
            which = n % CONNECTIONS_EACH
            body = f"round-{index}-{n}".encode()
            request = send_request(TOPIC, body, queue_id=0)
            steps.wait(TIMEOUT_S)
            socks[which].sendall(encode_command_bytes(request))
            (reply,) = read_replies(socks[which], decoders[which], 1)
            assert (reply.opaque, reply.code) == (request.opaque, 0), reply.remark
            out[which].append((body, int(reply.ext("queueOffset"))))
    finally:
        for sock in socks:
            sock.close()
    return out


async def test_lock_step_senders_stepping_together_beside_other_clients(
    processes, tmp_path
) -> None:
    _, broker = start_cluster(processes, tmp_path, autoCreateTopicEnable="true")
    addr = broker.addr
    first = _pipelined(addr, "first")  # the topic exists before the clients race
    want = SENDERS * STEPS + 2 * PIPELINED
    steps = threading.Barrier(SENDERS)
    with ThreadPoolExecutor(SENDERS + 3) as pool:
        pulled = pool.submit(_puller, addr, want)
        senders = [pool.submit(_stepping, addr, i, steps) for i in range(SENDERS)]
        piped = pool.submit(_pipelined, addr, "piped")
        broken = pool.submit(_broken, addr)
        per_connection = [mine for f in senders for mine in f.result(TIMEOUT_S)]
        piped_result = piped.result(TIMEOUT_S)
        broken_bodies = broken.result(TIMEOUT_S)
        pulled_offsets = pulled.result(TIMEOUT_S)
    everyone = (first, *per_connection, piped_result)
    await check_stored(addr, pulled_offsets, everyone, broken_bodies, want)
