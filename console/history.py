"""History: the last hour of sampled figures (put and get TPS per broker, lag per group), what
the console's charts draw. Pure: the sampler adds values with their time, pages read series.

Bounded twice: each series keeps the points of one window (older ones drop as new arrive),
and at most ``max_series`` series are kept per kind (a new one past that is not started, and
``dropped`` counts them, so a page can say the chart is partial).
"""

from __future__ import annotations

from collections import deque

WINDOW_MS = 3_600_000
Point = tuple[int, float]


class History:
    def __init__(self, *, window_ms: int = WINDOW_MS, max_series: int = 1000) -> None:
        assert window_ms > 0 and max_series > 0
        self.window_ms = window_ms
        self.max_series = max_series
        self._series: dict[str, dict[str, deque[Point]]] = {}
        self.dropped: dict[str, int] = {}

    def add(self, kind: str, name: str, now_ms: int, value: float) -> None:
        table = self._series.setdefault(kind, {})
        points = table.get(name)
        if points is None:
            if len(table) >= self.max_series:
                self.dropped[kind] = self.dropped.get(kind, 0) + 1
                return
            points = table[name] = deque()
        points.append((now_ms, value))
        while points and points[0][0] < now_ms - self.window_ms:
            points.popleft()

    def forget_older_than(self, now_ms: int) -> None:
        """Drop points out of the window and the series left empty (a group deleted)."""
        for table in self._series.values():
            for name in list(table):
                points = table[name]
                while points and points[0][0] < now_ms - self.window_ms:
                    points.popleft()
                if not points:
                    del table[name]

    def series(self, kind: str, names: list[str] | None = None) -> dict[str, list[Point]]:
        table = self._series.get(kind, {})
        chosen = sorted(table) if names is None else [n for n in names if n in table]
        return {name: list(table[name]) for name in chosen}

    def latest(self, kind: str, name: str) -> float | None:
        points = self._series.get(kind, {}).get(name)
        return points[-1][1] if points else None

    def top(self, kind: str, count: int) -> dict[str, list[Point]]:
        """The ``count`` series of ``kind`` with the highest latest value."""
        table = self._series.get(kind, {})
        ranked = sorted(table, key=lambda n: (-table[n][-1][1], n))[:count]
        return {name: list(table[name]) for name in ranked}
