"""BrokerMetrics: what ``metricsExporterType=PROM`` starts in a broker, wired in one place (the
controller makes one call). The endpoint listens on metricsPromExporterHost (empty: brokerIP1,
as Java) and metricsPromExporterPort."""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from broker.metrics.broker_families import BrokerFamilies
from broker.metrics.client_probe import BroadcastProbe
from broker.metrics.queue_families import QueueFamilies
from metrics.exporter import PrometheusExporter

if TYPE_CHECKING:
    from broker.controller import BrokerController


class BrokerMetrics:
    name = "metrics"

    def __init__(self, broker: BrokerController) -> None:
        config = broker.config
        self.broker = broker
        self.probe = BroadcastProbe(broker)
        self.queues = QueueFamilies(broker, self.probe)
        self.exporter = PrometheusExporter(
            config.metrics_prom_exporter_host or config.broker_ip1,
            config.metrics_prom_exporter_port,
            BrokerFamilies(broker),
            large=lambda: self.queues.collect(broker.clock()),
        )

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self.probe.run)
            port = await nursery.start(self.exporter.run)
            task_status.started(port)


async def start_metrics(broker: BrokerController, nursery: trio.Nursery) -> int | None:
    """The controller's one call: the metrics port, or None when metrics are off."""
    if not broker.config.metrics_enabled:
        return None
    return await nursery.start(BrokerMetrics(broker).run)
