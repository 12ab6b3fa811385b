"""Which SDK clients are still there (Trio side): a client is seen when it heartbeats or syncs
its settings; one silent for ``grpcClientIdleTimeMills`` (120 s; the SDKs heartbeat every
10 s) is gone, as RocketMQ's Proxy expires an idle channel: its renewed messages are given back
and its consumer group, when it was the last member, unregistered from the brokers."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

import trio

log = logging.getLogger(__name__)

MAX_CLIENTS = 100_000
SCAN_S = 5.0

Leave = Callable[[str], Awaitable[None]]


class ClientLiveness:
    def __init__(
        self,
        idle_ms: int,
        on_leave: list[Leave],
        clock: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.idle_ms = idle_ms
        self.on_leave = on_leave
        self.clock = clock
        self._seen: dict[str, int] = {}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await trio.sleep(SCAN_S)
            await self.expire()

    async def seen(self, client: str) -> None:
        self._seen.pop(client, None)
        self._seen[client] = self.clock()  # most recent last
        while len(self._seen) > MAX_CLIENTS:
            await self.left(next(iter(self._seen)))

    async def left(self, client: str) -> None:
        self._seen.pop(client, None)
        for leave in self.on_leave:
            try:
                await leave(client)
            except Exception as exc:  # a broker unreachable now: the next scan is not retried
                log.info("clearing client %s: %r", client, exc)

    async def expire(self) -> None:
        cutoff = self.clock() - self.idle_ms
        idle = [client for client, at in self._seen.items() if at <= cutoff]
        for client in idle:
            log.info("client %s silent for %d ms: gone", client, self.idle_ms)
            await self.left(client)
