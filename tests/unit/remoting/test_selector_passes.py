"""How the ReadSelector (remoting/selector.py) paces its passes, over socketpairs with stand-in
connections: a lone request (a lock-step client) costs the one look that finds it, once looks
after lone reads have stopped finding work; a connection that is always readable still lets
the loop's other tasks run (the pass's bound); each connection's bytes are read in order."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from remoting.selector import ROUNDS_PER_PASS, LoneLooks, ReadSelector
from tests.kits.selectorkit import CountingEpoll, Echo

pytestmark = pytest.mark.skipif(not ReadSelector.available(), reason="needs select.epoll")


class AlwaysReady:
    """A connection whose socket stays readable: it never takes what is there."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.reads = 0

    def fileno(self) -> int:
        return self._sock.fileno()

    def on_readable(self) -> bool:
        self.reads += 1
        return True


def _selector() -> tuple[ReadSelector, CountingEpoll]:
    selector = ReadSelector()
    counting = CountingEpoll(selector._epoll)
    selector._epoll = counting  # type: ignore[assignment]
    return selector, counting


def test_lone_looks_go_on_while_some_find_work() -> None:
    looks = LoneLooks()
    for _ in range(100):  # one in ten found the next request: worth looking every time
        for found in (True,) + (False,) * 9:
            assert looks.look_again()
            looks.looked(found)


def test_lone_looks_stop_when_they_find_nothing_and_probe_now_and_then() -> None:
    looks = LoneLooks()
    for _ in range(40):
        if looks.look_again():
            looks.looked(False)
    pattern = [looks.look_again() for _ in range(3 * LoneLooks.PROBE_EVERY)]
    probes = [i for i, look in enumerate(pattern) if look]
    assert len(probes) == 3
    assert probes[1] - probes[0] == probes[2] - probes[1] == LoneLooks.PROBE_EVERY
    for _ in range(8):  # probes that find the next request bring the looks back
        looks.looked(True)
    assert all(looks.look_again() for _ in range(LoneLooks.PROBE_EVERY + 1))


async def test_a_lone_request_costs_one_look_once_looks_after_lone_reads_find_nothing() -> None:
    selector, epoll = _selector()
    server_side, client_side = socket.socketpair()
    server_side.setblocking(False)
    client = trio.socket.from_stdlib_socket(client_side)
    echo = Echo(server_side)
    requests = 100
    async with trio.open_nursery() as nursery:
        await nursery.start(selector.run)
        selector.add(echo)
        for i in range(requests):
            # A client that works between requests: the next is not in before the selector
            # has settled to wait (every task blocked).
            await trio.testing.wait_all_tasks_blocked()
            await client.send(bytes([i]))
            assert await client.recv(16) == bytes([i])
        nursery.cancel_scope.cancel()
    # Each request: the look that finds it. Until the share of looks after a lone read that
    # find work has fallen under 1/32 (26 misses: this client's next request is never in
    # before the selector has settled), two more: one right after its answer and one after a
    # checkpoint; then the selector waits for readiness at once, but for a probe look every
    # PROBE_EVERY requests.
    assert epoll.looks <= requests + 2 * 26 + requests // LoneLooks.PROBE_EVERY + 1
    assert b"".join(echo.read) == bytes(range(requests))
    server_side.close()
    client.close()


async def test_an_always_ready_connection_does_not_starve_the_loop() -> None:
    selector = ReadSelector()
    server_side, client_side = socket.socketpair()
    client_side.send(b"x")
    busy = AlwaysReady(server_side)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(selector.run)
            selector.add(busy)
            for _ in range(20):  # each of these needs the selector to yield
                await trio.lowlevel.checkpoint()
            nursery.cancel_scope.cancel()
    # The selector read it between our checkpoints, never more than a pass's rounds at a time.
    assert busy.reads >= 20
    assert busy.reads <= 21 * ROUNDS_PER_PASS
    server_side.close()
    client_side.close()
