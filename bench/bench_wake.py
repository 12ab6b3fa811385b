"""What a woken lone request costs a server's loop beyond its own work, in one process without
a broker: a client process sends one byte, waits for the echo, then works THINK_US (as the
peers' Python consumer walks its reply) before the next, so the server sleeps and wakes once
per request. Server CPU (getrusage: user + system) per request, for:

  bare      a plain loop: epoll_wait(-1), recv, send (the floor: sleep, wake-up, the I/O)
  trio      a Trio task: await wait_readable(socket), recv, send (Trio's wait cycle per wake)
  selector  remoting.selector.ReadSelector with an echo connection (its looks and passes)
  sender    the same with the server's OutboundSender running (its kick before each I/O wait)

Variants run in turn, ROUNDS times, so a shared machine's swings hit all alike; the figures are
for comparing variants (and trees) within one run. docs/scaling.md ("A lone request's wake-up,
second look") has a run.

usage: .venv/bin/python -m bench.bench_wake [variant ...]   (env N, THINK_US, ROUNDS)"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import resource
import select
import socket
import statistics
import sys
import time
from collections.abc import Callable

import trio

from remoting.selector import ReadSelector

N = int(os.environ.get("N", "20000"))
THINK_US = float(os.environ.get("THINK_US", "60"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
WARM = 1000


def _client(sock: socket.socket, requests: int, think_s: float) -> None:
    for _ in range(requests):
        sock.send(b"x")
        if not sock.recv(16):
            return
        until = time.perf_counter() + think_s
        while time.perf_counter() < until:  # the client's own work, not a sleep: it stays on a core
            pass


def _bare(sock: socket.socket, requests: int) -> None:
    epoll = select.epoll()
    epoll.register(sock.fileno(), select.EPOLLIN)
    for _ in range(requests):
        epoll.poll(-1)
        sock.send(sock.recv(4096))
    epoll.close()


def _trio(sock: socket.socket, requests: int) -> None:
    async def main() -> None:
        for _ in range(requests):
            await trio.lowlevel.wait_readable(sock)
            sock.send(sock.recv(4096))

    trio.run(main)


class _Echo:
    def __init__(self, sock: socket.socket, requests: int, done: trio.Event) -> None:
        self._sock, self._left, self._done = sock, requests, done

    def fileno(self) -> int:
        return self._sock.fileno()

    def on_readable(self) -> bool:
        data = self._sock.recv(4096)
        self._sock.send(data)
        self._left -= len(data)
        if self._left <= 0:
            self._done.set()
        return bool(data)


def _selector(sock: socket.socket, requests: int, *, sender: bool = False) -> None:
    async def main() -> None:
        done = trio.Event()
        selector = ReadSelector()
        async with trio.open_nursery() as nursery:
            if sender:
                from remoting.sender import OutboundSender

                if OutboundSender.available():
                    await nursery.start(OutboundSender().run)
            await nursery.start(selector.run)
            selector.add(_Echo(sock, requests, done))
            await done.wait()
            nursery.cancel_scope.cancel()

    trio.run(main)


VARIANTS: dict[str, Callable[[socket.socket, int], None]] = {
    "bare": _bare,
    "trio": _trio,
    "selector": _selector,
    "sender": lambda sock, requests: _selector(sock, requests, sender=True),
}


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _one(variant: str) -> float:
    """Server CPU µs per request of one run of the variant, in a fresh process."""
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    # Requests the server reads until the client stops: a few more than it answers, so the
    # server never waits for one that will not come (a read may take two at once).
    client = multiprocessing.Process(
        target=_client, args=(theirs, WARM + N + 100, THINK_US / 1e6), daemon=True
    )
    client.start()
    serve = VARIANTS[variant]
    serve(ours, WARM)
    before = _cpu_s()
    serve(ours, N)
    spent = _cpu_s() - before
    client.terminate()
    client.join()
    ours.close()
    theirs.close()
    return spent / N * 1e6


def _run_child(variant: str, out: multiprocessing.connection.Connection) -> None:
    out.send(_one(variant))


def main() -> None:
    variants = sys.argv[1:] or list(VARIANTS)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        sys.exit(f"unknown variant(s) {unknown}; choose from {list(VARIANTS)}")
    figures: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(ROUNDS):
        for variant in variants:
            receive, send = multiprocessing.Pipe(duplex=False)
            child = multiprocessing.Process(target=_run_child, args=(variant, send))
            child.start()
            figures[variant].append(receive.recv())
            child.join()
    print(
        f"{N} lock-step requests a run, client thinking {THINK_US:.0f} µs; server CPU per request"
    )
    for variant, values in figures.items():
        runs = " ".join(f"{v:.1f}" for v in values)
        print(f"{variant:9s} median {statistics.median(values):6.2f} µs  (runs {runs})")


if __name__ == "__main__":
    main()
