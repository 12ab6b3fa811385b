"""The remoting layer's Python per request, in one process: what a server Connection spends
between the socket and its handler and back, as CPU time (the machine is shared: wall time
moves with the other jobs, CPU time much less). The request is written into a real socket pair
before each read (the read is one C call with its recv now, remoting/reading.py recv_command,
so it cannot be faked); ``sendmsg`` takes everything, faked. The write and read alone are
printed first: the figures below include them.

* lone: the selector's ``on_readable`` for one request (a sync send, a pull): read, split,
  decode, the handler (a response object), the reply's encoding and queue, the batch's end;
* round: ``ReadSelector._read_events`` for a round of four connections with one request each
  (sync senders on many connections), the round handler answering with encoded reply frames
  as the broker's plain sends do; per connection. The requests are plain sends whose JSON
  header the C read scans (every field a client sends), the connections added to the selector
  as a server adds them;
* round, sender thread: the same with the replies written by a server's native sender (the
  broker's way: ``kick`` after the round, the peer's bytes read back), when it is built; its
  thread's CPU is counted too.

``python -m bench.bench_request_path`` here, and the same file run with another tree's
interpreter from that tree (``cd /work/wt/base && .venv/bin/python /path/to/this/file``), give
two trees' figures; only remoting APIs both have are used.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import Any

import trio

from remoting.command import RemotingCommand, encode_command
from remoting.connection import Connection
from remoting.selector import ReadSelector
from remoting.sender import OutboundSender

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "30000"))
CONNECTIONS = 4


def _handler(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    return request.make_response(0, None, {"msgId": "0A0B0C0D00002A9F0000000000000001"})


_REPLY = b"".join(encode_command(RemotingCommand(0, flag=1, ext_fields={"msgId": "0" * 32})))


def _frames(connections: list[Connection], requests: list[RemotingCommand]) -> list[Any]:
    return [_REPLY] * len(requests)


def _group(connection: Connection, requests: list[RemotingCommand]) -> list[Any]:
    return [_REPLY] * len(requests)


def _request_frame() -> bytes:
    # A SEND_MESSAGE_V2 header as the peers' harness and Java clients write it (a..n)
    ext = {
        "a": "PG-bench", "b": "BenchTopic", "c": "TBW102", "d": "4", "e": "1", "f": "0",
        "g": "1700000000000", "h": "0", "i": "UNIQ_KEY\x01AB12\x02", "j": "0", "k": "false",
        "m": "false", "l": "16", "n": "broker-a",
    }  # fmt: skip
    return b"".join(encode_command(RemotingCommand.request(310, ext, b"x" * 1024)))


class _FakeSocket:
    def sendmsg(self, views: list[memoryview]) -> int:
        return sum(len(v) for v in views)


def _connection(
    keep: list[Any], feeds: list[socket.socket], sender: OutboundSender | None = None
) -> Connection:
    ours, theirs = socket.socketpair()
    connection = Connection(
        trio.SocketStream(trio.socket.from_stdlib_socket(ours)),
        _handler,
        group_handler=_group,
        sender=sender,
    )
    keep += [theirs, connection._sock]
    feeds.append(theirs)
    if sender is None:
        connection._writes._sock = _FakeSocket()  # type: ignore[assignment,union-attr]
    return connection


def _cpu_us(call: Callable[[], object], per: int) -> float:
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        for _ in range(ROUNDS):
            call()
        best = min(best, (time.process_time() - started) / ROUNDS / per * 1e6)
    return best


def _round_setup(
    keep: list[Any], sender: OutboundSender | None
) -> tuple[ReadSelector, list[tuple[int, int]], list[socket.socket]]:
    feeds: list[socket.socket] = []
    selector = ReadSelector(_frames)
    events = []
    for _ in range(CONNECTIONS):
        connection = _connection(keep, feeds, sender)
        selector.add(connection)
        events.append((connection.fileno(), 1))
    return selector, events, feeds


async def _main() -> None:
    keep: list[Any] = []
    frame = _request_frame()
    feeds: list[socket.socket] = []
    lone = _connection(keep, feeds)
    (lone_feed,) = feeds
    selector, events, round_feeds = _round_setup(keep, None)
    pair = socket.socketpair()
    keep += pair

    def write_and_read() -> None:
        pair[0].send(frame)
        pair[1].recv(65536)

    def lone_request() -> None:
        lone_feed.send(frame)
        lone.on_readable()

    def round_of_requests() -> None:
        for sock in round_feeds:
            sock.send(frame)
        selector._read_events(events)

    print(f"write and read alone: {_cpu_us(write_and_read, 1):.2f} us CPU")
    print(f"lone request: {_cpu_us(lone_request, 1):.2f} us CPU")
    round_us = _cpu_us(round_of_requests, CONNECTIONS)
    print(f"round of {CONNECTIONS}: {round_us:.2f} us CPU per connection")
    if OutboundSender.available():
        sender = OutboundSender()
        threaded, threaded_events, threaded_feeds = _round_setup(keep, sender)

        def round_with_the_sender() -> None:
            for sock in threaded_feeds:
                sock.send(frame)
            threaded._read_events(threaded_events)
            sender.kick()
            for sock in threaded_feeds:
                sock.recv(65536)  # the reply, written by the kick (or the thread)

        round_us = _cpu_us(round_with_the_sender, CONNECTIONS)
        print(f"round of {CONNECTIONS}, sender thread: {round_us:.2f} us CPU per connection")
    for sock in keep:
        sock.close()


if __name__ == "__main__":
    trio.run(_main)
