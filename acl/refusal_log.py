"""The ACL's refusal lines: one per reason per window, then a count. A client retrying with a
wrong key must not flood the log, and one flooding client must not hide another's refusal for
a different reason (an operator looking for "No acl config for <key>" must find it). The reason
text can carry a client's access key, so the reasons tracked at once are bounded; beyond that,
new reasons share one window."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger("acl.hook")

LOG_WINDOW_S = 10.0
MAX_REASONS = 32
_OTHERS = ""  # the shared window of reasons past MAX_REASONS


class RefusalLog:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._started: dict[str, float] = {}  # reason -> its window's start
        self._quiet: dict[str, int] = {}  # reason -> refusals not logged in its window

    def __call__(self, peer: str, code: int, access_key: str | None, reason: str) -> None:
        now = self.clock()
        key = self._key(reason, now)
        started = self._started.get(key)
        if started is not None and now - started < LOG_WINDOW_S:
            self._quiet[key] = self._quiet.get(key, 0) + 1
            return
        self._say_quiet(key, self._quiet.pop(key, 0))
        self._started[key] = now
        log.warning(
            "ACL refused: peer=%s code=%d accessKey=%s reason=%s", peer, code, access_key, reason
        )

    def _key(self, reason: str, now: float) -> str:
        if reason in self._started or len(self._started) < MAX_REASONS:
            return reason
        for old, started in list(self._started.items()):  # make room: windows over
            if now - started >= LOG_WINDOW_S:
                del self._started[old]
                self._say_quiet(old, self._quiet.pop(old, 0))
        return reason if len(self._started) < MAX_REASONS else _OTHERS

    def _say_quiet(self, key: str, quiet: int) -> None:
        if quiet:
            about = f"reason={key}" if key else "other reasons"
            log.warning("ACL: %d more refusals in the last %.0f s (%s)", quiet, LOG_WINDOW_S, about)
