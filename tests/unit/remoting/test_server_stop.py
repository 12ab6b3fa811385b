"""A server cancelled while connections are arriving stops cleanly: a handler that had not run
yet still finds the sender thread and the selector open (they stop after every connection)."""

from __future__ import annotations

import random

import trio

from remoting.server import RemotingServer


async def serve_and_cancel_amid_connects(seed: int) -> None:
    server = RemotingServer("127.0.0.1", 0)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.run)

        async def connect_and_close() -> None:
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                return  # the listener already closed
            await stream.aclose()

        for _ in range(30):
            nursery.start_soon(connect_and_close)
        for _ in range(random.Random(seed).randint(0, 40)):
            await trio.lowlevel.checkpoint()
        nursery.cancel_scope.cancel()


async def test_cancelling_a_server_while_connections_arrive_raises_nothing() -> None:
    # Trio runs a batch of ready tasks in random order: many rounds, many interleavings (on
    # the code before, more than half the rounds raised "the sender is closed" or "I/O
    # operation on closed epoll object").
    for seed in range(60):
        await serve_and_cancel_amid_connects(seed)
