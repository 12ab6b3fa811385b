"""Closing connections beside many held pulls: µs per closed connection's ``drop`` when
``CONNS`` consumer connections hold ``PER_CONN`` pulls each (caught-up consumers long polling)
and all of them close (a consumer fleet restarting). ``python -m bench.bench_hold_drop
[CONNS [PER_CONN]]``. Process CPU, in process, no sockets."""

from __future__ import annotations

import sys
import time

import trio

from broker.long_polling import PullRequestHoldService


async def one_round(conns: int, per_conn: int) -> float:
    service = PullRequestHoldService(lambda topic, queue_id: 0)
    owners = [object() for _ in range(conns)]
    deadline = trio.current_time() + 30.0
    for n, owner in enumerate(owners):
        for q in range(per_conn):
            service.suspend(f"T{n % 64}", q, 0, None, deadline, lambda: None, owner)
    start = time.process_time()
    for owner in owners:
        service.drop(owner)
    spent = time.process_time() - start
    assert service.held == 0
    return spent / conns * 1e6


def main() -> None:
    conns = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000
    per_conn = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    best = min(trio.run(one_round, conns, per_conn) for _ in range(3))
    print(
        f"drop: {best:8.1f} us per closed connection ({conns} connections x {per_conn} held pulls)"
    )


if __name__ == "__main__":
    main()
