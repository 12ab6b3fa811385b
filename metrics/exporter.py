"""PrometheusExporter: the endpoint, the event-loop lag monitor and the render that joins the
fixed families (prometheus_client's registry) and the large ones (metrics/exposition.py)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from metrics.exposition import Family
from metrics.http import MetricsHttpServer
from metrics.process import EventLoopLag, fixed_registry, process_registry

log = logging.getLogger(__name__)

LargeFamilies = Callable[[], Awaitable[list[Family]]]


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
        self.registry = fixed_registry(self.loop_lag, *collectors)
        self.large = large
        self.server = MetricsHttpServer(host, port, self.render)

    async def render(self) -> bytes:
        process_text = b""

        async def render_process() -> None:
            nonlocal process_text
            process_text = await trio.to_thread.run_sync(generate_latest, self.process)

        parts = []
        async with trio.open_nursery() as nursery:
            # the process families' thread runs while the loop renders the others
            nursery.start_soon(render_process)
            parts.append(generate_latest(self.registry))
            if self.large is not None:
                for family in await self.large():
                    parts.append(family.take().encode())
        return process_text + b"".join(parts)

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self.loop_lag.run)
            port = await nursery.start(self.server.run)
            task_status.started(port)
