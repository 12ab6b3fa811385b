"""Delay levels (``messageDelayLevel``, docs/spec/store-format.md §10): level i waits the i-th span."""

from __future__ import annotations

_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(text: str) -> list[int]:
    """``"1s 5s 10s 30s 1m ..."`` -> [1000, 5000, ...] (level 1 first). Raises ValueError naming
    the bad entry."""
    levels = []
    for entry in text.split():
        unit = entry[-1:]
        if unit not in _UNITS_MS or not entry[:-1].isdigit():
            raise ValueError(
                f"bad messageDelayLevel entry {entry!r}: expected a number and one of s/m/h/d"
            )
        levels.append(int(entry[:-1]) * _UNITS_MS[unit])
    if not levels:
        raise ValueError("messageDelayLevel has no levels")
    return levels


def deliver_timestamp(levels_ms: list[int], level: int, store_timestamp: int) -> int:
    """The ConsumeQueue tags code of a message parked in SCHEDULE_TOPIC_XXXX."""
    level = min(max(level, 1), len(levels_ms))
    return store_timestamp + levels_ms[level - 1]
