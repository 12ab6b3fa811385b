"""What every process reports about itself: prometheus_client's standard ``process_*`` family
(RSS, open and max fds, CPU seconds, start time; read from /proc) and the event loop's lag.

EventLoopLag sleeps a fixed tick and measures how late it wakes: anything holding the Trio loop
(a long render, a blocking call that slipped in) shows as lateness. The gauge is the worst
lateness since the previous scrape, so a stall between scrapes is not missed.
"""

from __future__ import annotations

import time

import trio
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector, CollectorRegistry

TICK_S = 0.25


class EventLoopLag:
    name = "event-loop-lag"

    def __init__(self, clock=time.monotonic) -> None:  # type: ignore[no-untyped-def]
        self.clock = clock
        self.worst_s = 0.0
        self.last_s = 0.0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            before = self.clock()
            await trio.sleep(TICK_S)
            late = max(0.0, self.clock() - before - TICK_S)
            self.last_s = late
            self.worst_s = max(self.worst_s, late)

    def take_worst(self) -> float:
        worst, self.worst_s = self.worst_s, self.last_s
        return worst


class _LoopLagCollector(Collector):
    def __init__(self, lag: EventLoopLag) -> None:
        self.lag = lag

    def collect(self):  # type: ignore[no-untyped-def]
        yield GaugeMetricFamily(
            "rocketmq_event_loop_lag_seconds",
            "How late the Trio event loop ran a timer at worst since the previous scrape",
            value=self.lag.take_worst(),
        )


def process_registry() -> CollectorRegistry:
    """prometheus_client's process_* alone: it counts open fds by listing /proc/self/fd, which
    takes ~90 ms in a broker holding 16,000 files (8,000 ConsumeQueues), so it is rendered in a
    worker thread, off the event loop (listdir lets go of the GIL)."""
    registry = CollectorRegistry(auto_describe=False)
    ProcessCollector(registry=registry)
    return registry


def fixed_registry(lag: EventLoopLag, *collectors: Collector) -> CollectorRegistry:
    """The fixed families rendered on the loop: the loop's lag and ``collectors``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_LoopLagCollector(lag))
    for collector in collectors:
        registry.register(collector)
    return registry
