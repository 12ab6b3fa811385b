"""LogLimiter: at most a few lines per key (a peer's host, a request code) and overall per
period, so a peer that sends garbage in a loop cannot fill the disk with log lines (docs/STYLE.md
§8). The limiter is pure (the caller passes the clock); ``log_limited`` logs through one.

The first lines of a period pass; the rest are counted, and the next line that passes says how
many were held back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable
from typing import Any

PERIOD_S = 60.0
PER_KEY = 5
OVERALL = 50
MAX_KEYS = 4096


class _Window:
    __slots__ = ("count", "held_back", "start")

    def __init__(self, start: float) -> None:
        self.start, self.count, self.held_back = start, 0, 0


class LogLimiter:
    def __init__(
        self,
        *,
        per_key: int = PER_KEY,
        overall: int = OVERALL,
        period_s: float = PERIOD_S,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.per_key, self.overall, self.period_s, self.max_keys = (
            per_key,
            overall,
            period_s,
            max_keys,
        )
        self._keys: dict[Hashable, _Window] = {}
        self._all: _Window | None = None

    def admit(self, key: Hashable, now: float) -> int | None:
        """None: drop this line. Else log it, saying how many lines of ``key`` were held back
        since the last one that passed (0: none)."""
        everyone = self._all = self._fresh(self._all, now)
        window = self._keys.get(key)
        if window is None and len(self._keys) >= self.max_keys:
            self._keys.clear()  # forget old peers rather than grow without bound
        window = self._keys[key] = self._fresh(window, now)
        if window.count >= self.per_key or everyone.count >= self.overall:
            window.held_back += 1
            everyone.held_back += 1
            return None
        window.count += 1
        everyone.count += 1
        held_back, window.held_back = window.held_back, 0
        return held_back

    def forget(self) -> None:
        """Start over, as a new process would (tests: each test's warnings are its own)."""
        self._keys.clear()
        self._all = None

    def _fresh(self, window: _Window | None, now: float) -> _Window:
        if window is None:
            return _Window(now)
        if now - window.start >= self.period_s:
            window.start, window.count = now, 0
        return window


def log_limited(
    logger: logging.Logger,
    limiter: LogLimiter,
    key: Hashable,
    level: int,
    message: str,
    *args: Any,
    exc_info: bool | BaseException = False,
) -> None:
    """``logger.log(level, message, *args)`` unless ``limiter`` holds it back for ``key``."""
    held_back = limiter.admit(key, time.monotonic())
    if held_back is None:
        return
    if held_back:
        message += " (%d similar lines held back)"
        args = (*args, held_back)
    logger.log(level, message, *args, exc_info=exc_info)


# A peer's broken frames and dropped connections, per host: one line per event, a few a minute.
peer_warnings = LogLimiter()
# Tracebacks of our own bugs that a peer can trigger again and again (a request code whose
# processor fails): the first few of each kind in a minute.
bug_tracebacks = LogLimiter(per_key=3, overall=30)
