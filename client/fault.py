"""MQFaultStrategy (pure, injected clock): after a slow or failed send a broker is avoided for
a while, longer the slower it was. Off by default, as in RocketMQ (sendLatencyFaultEnable)."""

from __future__ import annotations

import time
from collections.abc import Callable

LATENCY_MAX_MS = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_MS = (0, 0, 30000, 60000, 120000, 180000, 600000)
ISOLATION_MS = 30000


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class LatencyFaultTolerance:
    def __init__(self, clock: Callable[[], int] = now_ms) -> None:
        self.clock = clock
        self._available_from: dict[str, int] = {}

    @staticmethod
    def not_available_for(latency_ms: int) -> int:
        for limit, duration in zip(
            reversed(LATENCY_MAX_MS), reversed(NOT_AVAILABLE_MS), strict=True
        ):
            if latency_ms >= limit:
                return duration
        return 0

    def update(self, broker: str, latency_ms: int, *, isolation: bool = False) -> None:
        duration = ISOLATION_MS if isolation else self.not_available_for(latency_ms)
        self._available_from[broker] = self.clock() + duration

    def is_available(self, broker: str) -> bool:
        return self.clock() >= self._available_from.get(broker, 0)
