"""Snapshotter: the costly part of a scrape computed off the scrape path.

What grows with the broker (per topic, per group and topic, per queue lag; the process families,
which list /proc/self/fd) is produced by a background task, not by the scrape: a scrape serves
the last finished snapshot at once and asks for the next one, so snapshots are refreshed once
per scrape interval and a broker nobody scrapes does no work. The first scrape waits for the
first snapshot (there is nothing older to serve). The snapshot's age and the time it took are
gauges the scrape renders fresh (metrics/exporter.py).

The snapshot is gzipped once, in a worker thread, when it is made: Prometheus asks for gzip,
and a gzip stream may hold several members, so a scrape sends the fresh part's member followed
by the snapshot's without compressing 30 MiB again.
"""

from __future__ import annotations

import gzip
import logging
import time
from collections.abc import Awaitable, Callable

import attrs
import trio

log = logging.getLogger(__name__)

Produce = Callable[[], Awaitable[bytes]]


@attrs.frozen
class Snapshot:
    text: bytes
    gzipped: bytes
    finished_s: float  # on the snapshotter's clock
    took_s: float


class Snapshotter:
    name = "metrics-snapshot"

    def __init__(self, produce: Produce, clock: Callable[[], float] = time.monotonic) -> None:
        self.produce = produce
        self.clock = clock
        self.last: Snapshot | None = None
        self.failed: BaseException | None = None
        self.made = 0
        self._wanted = trio.Event()
        self._made_one = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            await self._make()

    async def _make(self) -> None:
        started = self.clock()
        try:
            text = await self.produce()
            gzipped = await trio.to_thread.run_sync(gzip.compress, text, 1)
        except Exception as exc:
            # the previous snapshot stays served; a broker without one answers 500
            log.exception("metrics snapshot failed")
            self.failed = exc
        else:
            now = self.clock()
            self.last, self.failed = Snapshot(text, gzipped, now, now - started), None
            self.made += 1
        self._made_one.set()

    async def current(self) -> Snapshot:
        """The last finished snapshot (the first one is waited for); asks for the next."""
        self._wanted.set()
        if self.last is None:
            await self._made_one.wait()
            if self.last is None:
                raise RuntimeError("no metrics snapshot yet") from self.failed
        return self.last

    def age_s(self) -> float:
        return self.clock() - self.last.finished_s if self.last is not None else 0.0
