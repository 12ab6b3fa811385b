"""The selector's sleep between a lock-step client's requests outside Trio's wait cycle
(remoting/idle_sleep.py): such a client is answered without a Trio I/O wait per request, and
while the selector sleeps so, the loop's other tasks are still woken by their own descriptors,
by threads and by their timers."""

from __future__ import annotations

import select
import socket
import threading
import time

import pytest
import trio

from remoting.idle_sleep import IdleSleep
from remoting.selector import ReadSelector

pytestmark = pytest.mark.skipif(not ReadSelector.available(), reason="needs select.epoll")


class Echo:
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def fileno(self) -> int:
        return self._sock.fileno()

    def on_readable(self) -> bool:
        data = self._sock.recv(4096)
        self._sock.send(data)
        return bool(data)


class IOWaits(trio.abc.Instrument):
    def __init__(self) -> None:
        self.count = 0

    def before_io_wait(self, timeout: float) -> None:
        self.count += 1


async def test_idle_sleep_knows_this_trio() -> None:
    inner = select.epoll()
    sleeper = IdleSleep.for_current_run(inner.fileno())
    assert sleeper is not None  # else the selector silently waits through Trio always
    sleeper.close()
    inner.close()


async def test_a_lone_client_is_answered_outside_trios_wait_and_other_tasks_still_wake() -> None:
    selector = ReadSelector()
    ours, client = socket.socketpair()
    ours.setblocking(False)
    other_ours, other_theirs = socket.socketpair()
    other = trio.socket.from_stdlib_socket(other_ours)
    requests = 200

    def lock_step_client() -> None:
        for i in range(requests):
            client.send(bytes([i % 256]))
            assert client.recv(16) == bytes([i % 256])
            time.sleep(0.0002)  # the client's own work before its next request
        # The selector now sleeps for the next request: these must still reach their tasks.
        other_theirs.send(b"y")

    io_waits = IOWaits()
    trio.lowlevel.add_instrument(io_waits)
    with trio.fail_after(5):  # what a selector deaf to Trio's descriptors would hit
        async with trio.open_nursery() as nursery:
            await nursery.start(selector.run)
            selector.add(Echo(ours))
            # The thread's end reaches Trio through its wake-up socket (run_sync_soon).
            await trio.to_thread.run_sync(lock_step_client)
            assert await other.recv(1) == b"y"
            nursery.cancel_scope.cancel()
    trio.lowlevel.remove_instrument(io_waits)
    # Through Trio's wait: the first requests, while looks after lone reads still paid (26
    # misses), and a probe every 16; the rest slept in the selector's own epoll. Waiting
    # through Trio takes at least one such wait per request (244 for these 200); this code
    # took 81 alone (also beside three busy loops) and 102 once in the full suite, so the
    # bound is one per request.
    assert io_waits.count < requests
    for sock in (ours, client, other_theirs):
        sock.close()
    other.close()


async def test_a_timer_still_fires_while_the_selector_sleeps_for_a_lone_client() -> None:
    selector = ReadSelector()
    ours, client = socket.socketpair()
    ours.setblocking(False)
    fired = threading.Event()

    def lock_step_client_then_wait() -> bool:
        for i in range(100):
            client.send(bytes([i]))
            assert client.recv(16) == bytes([i])
            time.sleep(0.0002)  # the client's own work before its next request
        # No more requests: the selector sleeps for the next one until Trio's next deadline.
        return fired.wait(5)

    async def timer() -> None:
        await trio.sleep(0.3)
        fired.set()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(selector.run)
            selector.add(Echo(ours))
            nursery.start_soon(timer)
            assert await trio.to_thread.run_sync(lock_step_client_then_wait)
            nursery.cancel_scope.cancel()
    ours.close()
    client.close()
