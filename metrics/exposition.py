"""The Prometheus text format (0.0.4) for families whose series grow with topics and groups.

prometheus_client renders a sample in ~14 us (it sorts, escapes and formats every label of
every sample on every scrape): 12,000 series took 170 ms on our machine, longer than a scrape
should hold the event loop. Here a series' label text is rendered once and kept while the
series exists, so a scrape formats only numbers (~1 us a series). The fixed families (process,
broker-wide figures) still go through prometheus_client (metrics/process.py, metrics/exporter.py); both halves are
checked by the same parser in the tests. Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

COUNTER, GAUGE = "counter", "gauge"


def escape_label_value(value: str) -> str:
    return value.replace("\\", r"\\").replace('"', r"\"").replace("\n", r"\n")


def render_labels(names: tuple[str, ...], values: Iterable[str]) -> str:
    inner = ",".join(
        f'{name}="{escape_label_value(value)}"' for name, value in zip(names, values, strict=True)
    )
    return "{" + inner + "}" if inner else ""


def number(value: float) -> str:
    """Go's formatting of a sample value, as Prometheus reads it."""
    if type(value) is int:
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


class Family:
    """One metric family; ``add`` takes the values of ``label_names`` in order. The label text
    of a series is cached across scrapes; series not added in a scrape leave the cache."""

    __slots__ = ("_cache", "_const", "_lines", "_seen", "help", "kind", "label_names", "name")

    def __init__(
        self,
        name: str,
        kind: str,
        help_text: str,
        label_names: tuple[str, ...],
        const_labels: Mapping[str, str] | None = None,
    ) -> None:
        assert kind in (COUNTER, GAUGE)
        assert kind != COUNTER or name.endswith("_total"), name
        self.name = name
        self.kind = kind
        self.help = help_text
        const = dict(const_labels or {})
        self.label_names = (*const, *label_names)
        self._const = tuple(const.values())
        self._cache: dict[tuple[str, ...], str] = {}
        self._seen: dict[tuple[str, ...], str] = {}
        self._lines: list[str] = []

    def add(self, values: tuple[str, ...], value: float) -> None:
        prefix = self._seen.get(values)
        if prefix is None:
            prefix = self._cache.get(values)
            if prefix is None:
                prefix = self.name + render_labels(self.label_names, self._const + values) + " "
            self._seen[values] = prefix
        self._lines.append(prefix + (str(value) if type(value) is int else number(value)) + "\n")

    def __len__(self) -> int:
        return len(self._lines)

    def take(self) -> str:
        """The family's text, and a fresh start for the next scrape."""
        head = f"# HELP {self.name} {self.help}\n# TYPE {self.name} {self.kind}\n"
        text = head + "".join(self._lines)
        self._lines = []
        self._cache, self._seen = self._seen, {}
        return text
