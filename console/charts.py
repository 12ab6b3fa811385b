"""Line charts as inline SVG, drawn on the server: no charting library, nothing for the
browser to fetch or run. Pure: series and the clock in, markup out. Every name that reaches
the markup is escaped here (topic and group names come from the cluster)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

WIDTH, HEIGHT = 640, 200
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 26, 24
COLORS = ("#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563")
MAX_LINES = len(COLORS)


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above ``value`` (1 for nothing)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return float(step * power)
    return 10.0 * power


def _number(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if value >= 1_000:
        return f"{value / 1_000:g}k"
    return f"{value:g}"


def line_chart(
    title: str,
    series: Mapping[str, Sequence[tuple[int, float]]],
    *,
    now_ms: int,
    window_ms: int,
    unit: str = "",
    empty_note: str = "no samples yet",
) -> str:
    """One SVG chart of up to MAX_LINES series over the ``window_ms`` before ``now_ms``."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    start = now_ms - window_ms
    lines = list(series.items())[:MAX_LINES]
    values = [v for _, points in lines for t, v in points if t >= start]
    top = nice_ceiling(max(values, default=0.0))
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<text x="{LEFT}" y="14" class="chart-title">{escape(title)}</text>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - fraction)
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" class="grid"/>'
        )
        label = _number(top * fraction) + (f" {unit}" if unit and fraction == 1.0 else "")
        parts.append(
            f'<text x="{LEFT - 4}" y="{y + 4:.1f}" class="axis" text-anchor="end">'
            f"{escape(label)}</text>"
        )
    minutes = window_ms // 60_000
    for i in range(5):
        x = LEFT + plot_w * i / 4
        ago = minutes - minutes * i // 4
        label = "now" if i == 4 else f"-{ago} min"
        parts.append(
            f'<text x="{x:.1f}" y="{HEIGHT - 6}" class="axis" text-anchor="middle">{label}</text>'
        )
    if not values:
        parts.append(
            f'<text x="{LEFT + plot_w / 2:.1f}" y="{TOP + plot_h / 2:.1f}" class="empty" '
            f'text-anchor="middle">{escape(empty_note)}</text>'
        )
    legend_x = LEFT + 8 + 7.5 * len(title)
    for index, (name, points) in enumerate(lines):
        color = COLORS[index]
        shown = [(t, v) for t, v in points if t >= start]
        coords = [
            (LEFT + plot_w * (t - start) / window_ms, TOP + plot_h * (1 - min(v, top) / top))
            for t, v in shown
        ]
        if len(coords) == 1:
            x, y = coords[0]
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"/>')
        elif coords:
            joined = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
            parts.append(f'<polyline points="{joined}" fill="none" stroke="{color}"/>')
        latest = f" {_number(round(shown[-1][1], 2))}" if shown else ""
        parts.append(
            f'<text x="{legend_x:.1f}" y="14" fill="{color}" class="legend">'
            f"{escape(name)}{latest}</text>"
        )
        legend_x += 7 * (len(name) + len(latest)) + 16
    parts.append("</svg>")
    return "".join(parts)
