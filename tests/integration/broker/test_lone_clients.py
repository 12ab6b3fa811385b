"""Lock-step clients against a real NameServer and broker, each with one request in flight
(the selector's lone requests, served between idle sleeps by one call: remoting/lone_loop.py):
senders, and a consumer whose long-polling pulls are held until messages come, while other
connections pipeline, close in the middle of a request or send garbage. Every lock-step
request is answered in order with its own offset, the pulls see the queue in order, the
pipelined sends are answered in their order, the broken connections are dropped alone, and
every message is stored once."""

from __future__ import annotations

import socket
import struct
from concurrent.futures import ThreadPoolExecutor

from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from remoting.command import encode_command_bytes
from remoting.frame import FrameDecoder
from tests.kits.brokerkit import pull_all, pull_request, read_replies, send_request, start_cluster

LOCK_STEP, SENDS, PIPELINED = 4, 150, 40
TOPIC = "LoneClients"
TIMEOUT_S = 60


def _connect(addr: str) -> socket.socket:
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=TIMEOUT_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _lock_step(addr: str, index: int) -> list[tuple[bytes, int]]:
    """One send in flight at a time: (body, queueOffset) of each, in the order sent."""
    out = []
    with _connect(addr) as sock:
        decoder = FrameDecoder()
        for n in range(SENDS):
            body = f"lone-{index}-{n}".encode()
            request = send_request(TOPIC, body, queue_id=0)
            sock.sendall(encode_command_bytes(request))
            (reply,) = read_replies(sock, decoder, 1)
            assert (reply.opaque, reply.code) == (request.opaque, 0), reply.remark
            out.append((body, int(reply.ext("queueOffset"))))
    return out


def _puller(addr: str, want: int) -> list[int]:
    """Lock-step long-polling pulls of queue 0 from its start until ``want`` messages were
    seen: their queue offsets, in the order pulled."""
    seen: list[int] = []
    offset = 0
    with _connect(addr) as sock:
        decoder = FrameDecoder()
        while len(seen) < want:
            request = pull_request(TOPIC, 0, offset, suspend_ms=20_000)
            sock.sendall(encode_command_bytes(request))
            (reply,) = read_replies(sock, decoder, 1)
            assert reply.opaque == request.opaque
            assert reply.code in (0, ResponseCode.PULL_NOT_FOUND), (reply.code, reply.remark)
            if reply.code == 0:
                seen += [m.queue_offset for m in codec.decode_messages(reply.body)]
            offset = int(reply.ext("nextBeginOffset"))
    return seen


def _pipelined(addr: str, tag: str) -> list[tuple[bytes, int]]:
    with _connect(addr) as sock:
        requests = [send_request(TOPIC, f"{tag}-{n}".encode()) for n in range(PIPELINED)]
        sock.sendall(b"".join(encode_command_bytes(r) for r in requests))
        replies = read_replies(sock, FrameDecoder(), PIPELINED)
    assert [r.opaque for r in replies] == [r.opaque for r in requests]
    assert all(r.code == 0 for r in replies), [(r.code, r.remark) for r in replies]
    return [(r.body, int(p.ext("queueOffset"))) for r, p in zip(requests, replies, strict=True)]


def _broken(addr: str) -> list[bytes]:
    """A connection closed halfway through a frame, one closed before its reply, one sending
    garbage (a length out of range): each dropped alone. The whole request's send is stored
    (the broker answers into a closed socket)."""
    whole = send_request(TOPIC, b"closed-before-reply")
    half = encode_command_bytes(send_request(TOPIC, b"never-whole"))
    with _connect(addr) as sock:
        sock.sendall(half[: len(half) // 2])
    with _connect(addr) as sock:
        sock.sendall(encode_command_bytes(whole))
    with _connect(addr) as sock:
        sock.sendall(struct.pack(">i", 2**31 - 1) + b"\x00" * 16)
        while sock.recv(65536):  # until the broker closes it
            pass
    return [whole.body]


async def test_lock_step_clients_beside_pipelined_closed_and_garbage_ones(
    processes, tmp_path
) -> None:
    _, broker = start_cluster(processes, tmp_path, autoCreateTopicEnable="true")
    addr = broker.addr
    # The topic exists before the clients race: its first sends create it.
    first = _pipelined(addr, "first")
    want = LOCK_STEP * SENDS + 2 * PIPELINED
    with ThreadPoolExecutor(LOCK_STEP + 3) as pool:
        pulled = pool.submit(_puller, addr, want)
        lone = [pool.submit(_lock_step, addr, i) for i in range(LOCK_STEP)]
        piped = pool.submit(_pipelined, addr, "piped")
        broken = pool.submit(_broken, addr)
        results = [f.result(TIMEOUT_S) for f in lone]
        piped_result = piped.result(TIMEOUT_S)
        broken_bodies = broken.result(TIMEOUT_S)
        pulled_offsets = pulled.result(TIMEOUT_S)
    everyone = (first, *results, piped_result)
    await check_stored(addr, pulled_offsets, everyone, broken_bodies, want)


async def check_stored(
    addr: str,
    pulled_offsets: list[int],
    everyone: tuple[list[tuple[bytes, int]], ...],
    broken_bodies: list[bytes],
    want: int,
) -> None:
    """What the broker stored after the clients above (and test_round_clients'): the puller
    saw the queue in order, each connection's sends in its own order at the offsets it was
    answered, nothing twice, nothing of a frame that never came whole, and the broker still
    answers a lock-step send."""
    assert pulled_offsets == list(range(len(pulled_offsets)))
    for mine in everyone:
        offsets = [offset for _, offset in mine]
        assert offsets == sorted(offsets)  # each connection stored in its own order
    async with RemotingClient.open() as client:
        stored: list[codec.MessageExt] = await pull_all(client, addr, TOPIC, 0)
        # The broker still serves a lock-step client after all that.
        again = await client.invoke(addr, send_request(TOPIC, b"after"), TIMEOUT_S)
    assert again.code == 0
    bodies = [m.body for m in stored]
    assert len(bodies) == len(set(bodies))  # nothing stored twice
    by_body = {m.body: m.queue_offset for m in stored}
    for body, offset in (pair for mine in everyone for pair in mine):
        assert by_body[body] == offset
    assert b"never-whole" not in by_body
    # The send whose connection closed before its reply: stored at most once (its read may
    # have met the close first).
    assert bodies.count(broken_bodies[0]) <= 1
    assert len(stored) >= want + 1
