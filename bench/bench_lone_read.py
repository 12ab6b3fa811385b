"""The remoting layer's cost of one lone request, in one process: a server Connection on a
socketpair (with the native sender when built, as a broker's), a handler that answers at once,
and the selector's call (``on_readable``) per request; the client side writes each request and
reads its reply. µs per request, best of interleaved rounds. The handler's own work is a
response object, so the figure is the read, split, decode, dispatch, reply queue and write,
and the read batch's bookkeeping.

``python -m bench.bench_lone_read`` in two trees (e.g. alternating with /work/wt/base) compares
their per-request Python; only remoting APIs both have are used.
"""

from __future__ import annotations

import socket
import sys
import time

import trio

from remoting.command import RemotingCommand, encode_command
from remoting.connection import Connection
from remoting.sender import OutboundSender

ROUNDS = 20_000


def _handler(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    return request.make_response(0, None, {"msgId": "0A0B0C0D00002A9F0000000000000001"})


def _request_frame() -> bytes:
    ext = {"a": "PG-bench", "b": "BenchTopic", "c": "TBW102", "d": "4", "e": "1", "f": "0"}
    command = RemotingCommand.request(310, ext, b"x" * 1024)
    return b"".join(encode_command(command))


async def _main(rounds: int, repeats: int) -> list[float]:
    client, server = socket.socketpair()
    frame = _request_frame()
    async with trio.open_nursery() as nursery:
        sender = None
        if OutboundSender.available():
            sender = OutboundSender()
            await nursery.start(sender.run)
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(server))
        connection = Connection(stream, _handler, sender=sender)
        connection._nursery = nursery
        on_readable, send, recv = connection.on_readable, client.sendall, client.recv
        best = []
        for _ in range(repeats):
            started = time.perf_counter()
            for _ in range(rounds):
                send(frame)
                on_readable()
                recv(65536)
            best.append((time.perf_counter() - started) / rounds * 1e6)
        nursery.cancel_scope.cancel()
    client.close()
    return best


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS
    figures = trio.run(_main, rounds, 5)
    print(f"lone request: {min(figures):.2f} us (rounds {', '.join(f'{f:.2f}' for f in figures)})")


if __name__ == "__main__":
    main()
