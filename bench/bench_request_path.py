"""The remoting layer's Python per request, in one process: what a server Connection spends
between the socket and its handler and back, with the socket calls faked (``recv`` returns the
request frame, ``sendmsg`` takes everything) so only the interpreter's work is counted, as CPU
time (the machine is shared: wall time moves with the other jobs, CPU time much less).

* lone: the selector's ``on_readable`` for one request (a sync send, a pull): read, split,
  decode, the handler (a response object), the reply's encoding and queue, the batch's end;
* round: ``ReadSelector._read_events`` for a round of four connections with one request each
  (sync senders on many connections), the round handler answering with encoded reply frames
  as the broker's plain sends do; per connection.

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
    ext = {"a": "PG-bench", "b": "BenchTopic", "c": "TBW102", "d": "4", "e": "1", "f": "0"}
    return b"".join(encode_command(RemotingCommand.request(310, ext, b"x" * 1024)))


class _FakeSocket:
    def __init__(self, frame: bytes, fd: int) -> None:
        self._frame, self._fd = frame, fd

    def recv(self, size: int) -> bytes:
        return self._frame

    def sendmsg(self, views: list[memoryview]) -> int:
        return sum(len(v) for v in views)

    def fileno(self) -> int:
        return self._fd


def _connection(keep: list[Any], fd: int) -> Connection:
    ours, theirs = socket.socketpair()
    connection = Connection(
        trio.SocketStream(trio.socket.from_stdlib_socket(ours)), _handler, group_handler=_group
    )
    keep += [theirs, connection._sock]  # closed at the end, not by the fake's garbage
    connection._sock = connection._writes._sock = _FakeSocket(_request_frame(), fd)  # type: ignore[assignment,union-attr]
    return connection


def _cpu_us(call: Callable[[], object], per: int) -> float:
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        for _ in range(ROUNDS):
            call()
        best = min(best, (time.process_time() - started) / ROUNDS / per * 1e6)
    return best


async def _main() -> None:
    keep: list[Any] = []
    lone = _connection(keep, 999)
    selector = ReadSelector(_frames)
    events = []
    for index in range(CONNECTIONS):
        selector._connections[1000 + index] = _connection(keep, 1000 + index)
        events.append((1000 + index, 1))
    print(f"lone request: {_cpu_us(lone.on_readable, 1):.2f} us CPU")
    round_us = _cpu_us(lambda: selector._read_events(events), CONNECTIONS)
    print(f"round of {CONNECTIONS}: {round_us:.2f} us CPU per connection")
    for sock in keep:
        sock.close()


if __name__ == "__main__":
    trio.run(_main)
