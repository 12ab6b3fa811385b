"""PrometheusExporter: the endpoint, the event-loop lag monitor and the render that joins the
fixed families (prometheus_client's registry, rendered fresh on every scrape) and the snapshot
(metrics/snapshot.py: the large families and process_*, made in the background)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from metrics.exposition import Family
from metrics.http import Body, MetricsHttpServer
from metrics.process import EventLoopLag, fixed_registry, process_registry
from metrics.snapshot import Snapshotter

log = logging.getLogger(__name__)

LargeFamilies = Callable[[], Awaitable[list[Family]]]


class _SnapshotCollector(Collector):
    def __init__(self, snapshots: Snapshotter) -> None:
        self.snapshots = snapshots

    def collect(self):  # type: ignore[no-untyped-def]
        yield GaugeMetricFamily(
            "rocketmq_metrics_snapshot_age_seconds",
            "Age of the snapshot of the per-topic, per-group and process figures served",
            value=self.snapshots.age_s(),
        )
        last = self.snapshots.last
        yield GaugeMetricFamily(
            "rocketmq_metrics_snapshot_duration_seconds",
            "How long making the snapshot served took (in slices, between other work)",
            value=last.took_s if last is not None else 0.0,
        )


class PrometheusExporter:
    name = "metrics"

    def __init__(
        self,
        host: str,
        port: int,
        *collectors: Collector,
        large: LargeFamilies | None = None,
    ) -> None:
        self.loop_lag = EventLoopLag()
        self.process = process_registry()
        self.large = large
        self.snapshots = Snapshotter(self.make_snapshot)
        self.registry = fixed_registry(
            self.loop_lag, _SnapshotCollector(self.snapshots), *collectors
        )
        self.server = MetricsHttpServer(host, port, self.render)

    async def make_snapshot(self) -> bytes:
        process_text = b""

        async def render_process() -> None:
            nonlocal process_text
            process_text = await trio.to_thread.run_sync(generate_latest, self.process)

        parts = []
        async with trio.open_nursery() as nursery:
            # the process families' thread runs while the loop walks the tables
            nursery.start_soon(render_process)
            if self.large is not None:
                for family in await self.large():
                    parts.append(family.take().encode())
                    await trio.lowlevel.checkpoint()  # a family of 50,000 series: ~5 ms
        return process_text + b"".join(parts)

    async def render(self) -> Body:
        snapshot = await self.snapshots.current()
        return Body(generate_latest(self.registry), snapshot.text, snapshot.gzipped)

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self.loop_lag.run)
            await nursery.start(self.snapshots.run)
            port = await nursery.start(self.server.run)
            task_status.started(port)
